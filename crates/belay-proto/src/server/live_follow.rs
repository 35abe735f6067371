//! [`LiveFollow`]: how a node that receives a channel's publications from a
//! store shared by several nodes (Redis PUB/SUB) keeps one subscriber in
//! step with the channel: a replay read from the history, what arrived
//! live while it was read, then each live publication in turn.
//!
//! A live stream between two processes can drop a message or restart the
//! channel (a new epoch when the store lost it); the subscriber must never
//! see a gap it is not told about. So every publication is checked against
//! the subscriber's position, and anything that does not follow ends the
//! subscription ([`Lost`]): the client resubscribes from its position and
//! the history replays what it missed, or says it cannot.
//!
//! ```text
//!  joining: buffer live publications ──▶ grant: replay + merge_behind(buffer) ──▶ live
//!  live:    offer(epoch, offset) ──▶ Deliver | AlreadyHad | Lost
//!  check:   behind(epoch, top)   ──▶ None | Some(Lost)    (a lost last publication)
//! ```

use std::sync::Arc;

/// Why a subscriber can no longer be kept in step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lost {
    /// The channel has another epoch now: its history was lost.
    Epoch,
    /// A publication between the subscriber's position and this one never
    /// arrived.
    Gap,
}

impl Lost {
    /// The reason the client is told (with `unavailable`).
    pub fn reason(self) -> &'static str {
        match self {
            Lost::Epoch => "the channel's history was lost: resubscribe",
            Lost::Gap => "a publication was lost on the way to this node: resubscribe",
        }
    }
}

/// What to do with one live publication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Offer {
    /// The next one: deliver it (the position moved to it).
    Deliver,
    /// The subscriber has it already (replayed, or delivered twice by the
    /// stream): skip it.
    AlreadyHad,
    /// It does not follow: end the subscription.
    Lost(Lost),
}

/// A buffer that does not continue the replay (a gap or another epoch):
/// the join must be tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Inconsistent;

/// One live subscriber's position: its epoch and the last offset it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveFollow {
    /// Shared: a channel's subscribers may hold the same name.
    epoch: Arc<str>,
    after: u64,
}

impl LiveFollow {
    /// A subscriber granted at `after` in `epoch` (after its replay).
    pub fn new(epoch: impl Into<Arc<str>>, after: u64) -> Self {
        LiveFollow {
            epoch: epoch.into(),
            after,
        }
    }

    /// Grant a joining subscriber: `replay_end` is the last offset of its
    /// replay (its granted offset if the replay is empty) in `epoch`, and
    /// `buffered` the (epoch, offset) of what arrived live meanwhile, in
    /// arrival order. Returns the position and which buffered entries to
    /// deliver behind the replay, in order (those past the replay's end;
    /// earlier ones are in the replay already).
    pub fn merge_behind<'a>(
        epoch: impl Into<Arc<str>>,
        replay_end: u64,
        buffered: impl IntoIterator<Item = (&'a str, u64)>,
    ) -> Result<(LiveFollow, Vec<usize>), Inconsistent> {
        let mut follow = LiveFollow::new(epoch, replay_end);
        let mut take = Vec::new();
        for (index, (their_epoch, offset)) in buffered.into_iter().enumerate() {
            match follow.offer(their_epoch, offset) {
                Offer::Deliver => take.push(index),
                Offer::AlreadyHad => {}
                Offer::Lost(_) => return Err(Inconsistent),
            }
        }
        Ok((follow, take))
    }

    /// The epoch followed.
    pub fn epoch(&self) -> &str {
        &self.epoch
    }

    /// The epoch followed, to share with another subscriber's position.
    pub fn shared_epoch(&self) -> &Arc<str> {
        &self.epoch
    }

    /// The last offset the subscriber has.
    pub fn after(&self) -> u64 {
        self.after
    }

    /// A live publication at `offset` in `epoch` arrived.
    pub fn offer(&mut self, epoch: &str, offset: u64) -> Offer {
        if epoch != &*self.epoch {
            return Offer::Lost(Lost::Epoch);
        }
        if offset <= self.after {
            return Offer::AlreadyHad;
        }
        if offset != self.after.saturating_add(1) {
            return Offer::Lost(Lost::Gap);
        }
        self.after = offset;
        Offer::Deliver
    }

    /// The store reports the channel at `top` in `epoch` (after what it
    /// holds was offered): a subscriber still behind, or on another epoch,
    /// missed a publication nobody can give it now.
    pub fn behind(&self, epoch: &str, top: u64) -> Option<Lost> {
        if epoch != &*self.epoch {
            Some(Lost::Epoch)
        } else if self.after < top {
            Some(Lost::Gap)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_offset_is_delivered_and_moves_the_position() {
        let mut follow = LiveFollow::new("e", 4);
        assert_eq!(follow.offer("e", 5), Offer::Deliver);
        assert_eq!(follow.after(), 5);
    }

    #[test]
    fn an_offset_already_had_is_skipped() {
        let mut follow = LiveFollow::new("e", 4);
        assert_eq!(follow.offer("e", 4), Offer::AlreadyHad);
        assert_eq!(follow.offer("e", 1), Offer::AlreadyHad);
        assert_eq!(follow.after(), 4);
    }

    #[test]
    fn a_gap_or_another_epoch_is_lost() {
        let mut follow = LiveFollow::new("e", 4);
        assert_eq!(follow.offer("e", 6), Offer::Lost(Lost::Gap));
        assert_eq!(follow.offer("f", 5), Offer::Lost(Lost::Epoch));
        assert_eq!(follow.after(), 4, "a lost offer does not move it");
    }

    #[test]
    fn the_buffer_behind_a_replay_keeps_only_what_follows_it() {
        // Replay 3..=5; live 4, 5, 6, 7 arrived while it was read.
        let buffered = [("e", 4), ("e", 5), ("e", 6), ("e", 7)];
        let (follow, take) = LiveFollow::merge_behind("e", 5, buffered).expect("consistent");
        assert_eq!(take, [2, 3]);
        assert_eq!(follow.after(), 7);
    }

    #[test]
    fn a_buffer_with_a_gap_or_another_epoch_is_inconsistent() {
        assert_eq!(
            LiveFollow::merge_behind("e", 5, [("e", 7)]),
            Err(Inconsistent)
        );
        assert_eq!(
            LiveFollow::merge_behind("e", 5, [("f", 6)]),
            Err(Inconsistent)
        );
    }

    #[test]
    fn a_subscriber_behind_the_top_or_on_an_old_epoch_is_lost() {
        let follow = LiveFollow::new("e", 5);
        assert_eq!(follow.behind("e", 5), None);
        assert_eq!(follow.behind("e", 6), Some(Lost::Gap));
        assert_eq!(follow.behind("f", 5), Some(Lost::Epoch));
    }
}
