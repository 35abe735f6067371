//! The node's own subscribers, per channel: who gets a live publication
//! arriving from Redis, and what a subscription still reading its history
//! has missed meanwhile.
//!
//! A member joins *before* the node subscribes to the channel's PUB/SUB
//! name and reads its history, so every publication after the history read
//! reaches it: until it is granted, those are buffered; the grant merges the
//! buffer behind the replay by offset and makes it live under the hub's
//! lock, so no frame slips between the two. A live publication that does
//! not follow the member's last offset (one lost between Redis and this
//! node), or comes from another epoch (Redis lost the history), ends the
//! member with `unavailable`: its client resubscribes from its position and
//! the history replays what it missed, or says it cannot. Never a silent gap.
//!
//! A publication lost on PUB/SUB with none after it shows no gap, so the
//! position check ([`crate::position_check`]) compares each channel's
//! members with Redis now and then and hands what they lack to
//! [`Hub::catch_up`], in order.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use belay_proto::message::ErrorBody;
use belay_proto::server::{Inconsistent, LiveFollow, Offer};
use belay_server::broker::{
    ChannelTally, Delivered, Delivery, LiveSender, SubscribeError, SubscriberId,
};

/// Why a joining member cannot be granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JoinFailure {
    /// It left (or its connection went) while joining.
    Left,
    /// Too many publications arrived while it read its history.
    Overflowed,
    /// The publications buffered do not follow the history read (a gap, or
    /// another epoch): read again.
    Inconsistent,
}

#[derive(Debug)]
struct Member {
    live: LiveSender,
    state: MemberState,
}

#[derive(Debug)]
enum MemberState {
    /// Reading its history; what arrived meanwhile, with its epoch.
    Joining(Vec<(Arc<str>, Delivery)>),
    /// Buffered more than allowed.
    Overflowed,
    /// Live, in step with the channel (belay-proto's rule).
    Live(LiveFollow),
}

/// What a leave means for the PUB/SUB connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Interest {
    /// Others still listen here.
    Same,
    /// Its last member left: unsubscribe.
    Unsubscribe,
}

/// Every member of every channel on this node.
#[derive(Debug)]
pub(crate) struct Hub {
    channels: Mutex<HashMap<Arc<str>, Vec<Member>>>,
    join_buffer: usize,
}

impl Hub {
    pub(crate) fn new(join_buffer: usize) -> Self {
        Hub {
            channels: Mutex::new(HashMap::new()),
            join_buffer,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Arc<str>, Vec<Member>>> {
        self.channels.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Channels with at least one member.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Add `live` as a joining member, unless its channel would be one
    /// more than `max_channels` (then `None`, and `then` does not run).
    /// `then` runs under the hub's lock (it asks the PUB/SUB connection to
    /// subscribe), so subscribes and unsubscribes reach that connection in
    /// the order they were decided.
    pub(crate) fn join<T>(
        &self,
        live: LiveSender,
        max_channels: usize,
        then: impl FnOnce() -> T,
    ) -> Option<T> {
        let mut channels = self.lock();
        if !channels.contains_key(live.channel().as_ref()) && channels.len() >= max_channels {
            return None;
        }
        let members = channels.entry(Arc::clone(live.channel())).or_default();
        // Members whose connection is gone are dropped when the list would
        // grow (and by every dispatch): sweeping at every join made a
        // channel's n joins cost n² under the hub's lock.
        if members.len() == members.capacity() {
            members.retain(|m| !m.live.is_gone());
        }
        members.push(Member {
            live,
            state: MemberState::Joining(Vec::new()),
        });
        Some(then())
    }

    /// Remove `subscriber` from `channel`; `then` runs under the hub's lock
    /// with what the PUB/SUB connection must do.
    pub(crate) fn leave(
        &self,
        channel: &str,
        subscriber: SubscriberId,
        then: impl FnOnce(Interest),
    ) {
        let mut channels = self.lock();
        let Some(members) = channels.get_mut(channel) else {
            return then(Interest::Same);
        };
        // Order among members does not matter (each gets every delivery).
        // Members whose connection is gone leave by themselves (a closing
        // connection leaves every subscription) or at the next dispatch;
        // sweeping them here made n leaves cost n².
        if let Some(at) = members.iter().rposition(|m| m.live.id() == subscriber) {
            members.swap_remove(at);
        }
        if members.is_empty() {
            channels.remove(channel);
            if channels.capacity() > 64 && channels.len() < channels.capacity() / 4 {
                channels.shrink_to_fit();
            }
            return then(Interest::Unsubscribe);
        }
        then(Interest::Same)
    }

    /// Grant the joining `subscriber`: `replay` (offsets after `after`, in
    /// order, in `epoch`), then whatever was buffered past it, then live.
    /// Granted under the lock, through [`LiveSender::grant`], by `grant`.
    pub(crate) fn grant(
        &self,
        channel: &str,
        subscriber: SubscriberId,
        epoch: &str,
        mut after: u64,
        mut replay: Vec<Delivery>,
        grant: impl FnOnce(&LiveSender, Vec<Delivery>),
    ) -> Result<(), JoinFailure> {
        let mut channels = self.lock();
        let members = channels.get_mut(channel).ok_or(JoinFailure::Left)?;
        // The channel's members share one copy of the epoch's name: look
        // at a few (not all: n grants would cost n²).
        let epoch: Arc<str> = members
            .iter()
            .take(4)
            .find_map(|m| match &m.state {
                MemberState::Live(follow) if follow.epoch() == epoch => {
                    Some(Arc::clone(follow.shared_epoch()))
                }
                _ => None,
            })
            .unwrap_or_else(|| Arc::from(epoch));
        let member = members
            .iter_mut()
            // From the end: the member joined a moment ago.
            .rev()
            .find(|m| m.live.id() == subscriber)
            .ok_or(JoinFailure::Left)?;
        if let Some(last) = replay.last() {
            after = last.offset;
        }
        let buffered = match std::mem::replace(&mut member.state, MemberState::Overflowed) {
            MemberState::Joining(buffered) => buffered,
            MemberState::Overflowed => return Err(JoinFailure::Overflowed),
            MemberState::Live(_) => return Err(JoinFailure::Inconsistent),
        };
        let (follow, take) =
            LiveFollow::merge_behind(epoch, after, buffered.iter().map(|(e, d)| (&**e, d.offset)))
                .map_err(|_: Inconsistent| JoinFailure::Inconsistent)?;
        let mut buffered: Vec<Option<Delivery>> =
            buffered.into_iter().map(|(_, d)| Some(d)).collect();
        replay.extend(take.into_iter().filter_map(|i| buffered[i].take()));
        member.state = MemberState::Live(follow);
        grant(&member.live, replay);
        Ok(())
    }

    /// A publication arrived from Redis: hand it to every live member,
    /// buffer it for the joining ones, end the members it does not follow.
    /// Returns whether the channel is left without members (ended or gone):
    /// it is forgotten, and the caller unsubscribes its name.
    pub(crate) fn dispatch(&self, channel: &str, epoch: &str, delivery: &Delivery) -> bool {
        let mut channels = self.lock();
        let Some(members) = channels.get_mut(channel) else {
            return false;
        };
        let epoch: Arc<str> = Arc::from(epoch);
        members.retain_mut(|member| offer(member, &epoch, delivery, self.join_buffer));
        let empty = members.is_empty();
        if empty {
            channels.remove(channel);
        }
        empty
    }

    /// Offer each channel's live members (granted, connection still
    /// there) to `tally`: this node's subscriptions, for a channel list.
    pub(crate) fn tally(&self, tally: &mut ChannelTally<'_>) {
        let channels = self.lock();
        for (channel, members) in channels.iter() {
            let live = members
                .iter()
                .filter(|m| matches!(m.state, MemberState::Live(_)) && !m.live.is_gone())
                .count();
            tally.offer(channel, live);
        }
    }

    /// Where each channel's live members are: the channel and the lowest
    /// offset they have (in the first live member's epoch), for the
    /// position check.
    pub(crate) fn positions(&self) -> Vec<(Arc<str>, u64)> {
        let channels = self.lock();
        channels
            .iter()
            .filter_map(|(channel, members)| {
                let mut live = members.iter().filter_map(|m| match &m.state {
                    MemberState::Live(follow) => Some((follow.epoch(), follow.after())),
                    _ => None,
                });
                let (epoch, first) = live.next()?;
                let lowest = live
                    .filter(|(e, _)| *e == epoch)
                    .fold(first, |low, (_, a)| low.min(a));
                Some((Arc::clone(channel), lowest))
            })
            .collect()
    }

    /// The position check read `channel` in Redis: its `epoch`, its `top`
    /// offset and the publications after the members' lowest offset
    /// (`missed`, in order). Deliver those the members lack, then end every
    /// live member still behind `top` or on another epoch (the missing
    /// publications are not held: its client resubscribes and is told).
    /// `then` runs under the hub's lock with what the PUB/SUB connection
    /// must do (as for a leave).
    pub(crate) fn catch_up(
        &self,
        channel: &str,
        epoch: &str,
        top: u64,
        missed: &[Delivery],
        then: impl FnOnce(Interest),
    ) {
        let mut channels = self.lock();
        let Some(members) = channels.get_mut(channel) else {
            return then(Interest::Same);
        };
        let epoch: Arc<str> = Arc::from(epoch);
        for delivery in missed {
            members.retain_mut(|member| offer(member, &epoch, delivery, self.join_buffer));
        }
        members.retain_mut(|member| match &member.state {
            MemberState::Live(follow) => match follow.behind(&epoch, top) {
                Some(lost) => {
                    member
                        .live
                        .end(ErrorBody::new("unavailable", lost.reason()));
                    false
                }
                None => true,
            },
            _ => true,
        });
        if members.is_empty() {
            channels.remove(channel);
            return then(Interest::Unsubscribe);
        }
        then(Interest::Same)
    }

    /// The connection to Redis was lost: end every live member (its client
    /// resubscribes from its position), refuse every joining one, and
    /// forget them all.
    pub(crate) fn end_all(&self, reason: &str) {
        let ended = std::mem::take(&mut *self.lock());
        end_members(ended.into_values().flatten(), reason);
    }

    /// End every member of `channel` with `unavailable` (its live name
    /// stopped being heard: a Redis Cluster moved its slot).
    pub(crate) fn end_channel(&self, channel: &str, reason: &str) {
        let ended = self.lock().remove(channel);
        end_members(ended.into_iter().flatten(), reason);
    }
}

/// Live members end, joining ones are refused, all `unavailable`.
fn end_members(members: impl Iterator<Item = Member>, reason: &str) {
    for member in members {
        match member.state {
            MemberState::Live(_) => member.live.end(ErrorBody::new("unavailable", reason)),
            _ => member
                .live
                .refuse(SubscribeError::Unavailable(reason.into())),
        }
    }
}

/// Offer `delivery` (of `epoch`) to `member`: delivered, buffered, already
/// had, or the member ends. Returns whether it stays.
fn offer(member: &mut Member, epoch: &Arc<str>, delivery: &Delivery, join_buffer: usize) -> bool {
    match &mut member.state {
        MemberState::Joining(buffered) => {
            if buffered.len() >= join_buffer {
                member.state = MemberState::Overflowed;
            } else {
                buffered.push((Arc::clone(epoch), delivery.clone()));
            }
            true
        }
        MemberState::Overflowed => true,
        MemberState::Live(follow) => match follow.offer(epoch, delivery.offset) {
            Offer::Deliver => member.live.deliver(delivery) != Delivered::Gone,
            Offer::AlreadyHad => true,
            Offer::Lost(lost) => {
                member
                    .live
                    .end(ErrorBody::new("unavailable", lost.reason()));
                false
            }
            _ => true,
        },
    }
}
