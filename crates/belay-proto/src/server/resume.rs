//! [`can_resume`]: the recovery rule for a history held somewhere else (a
//! store shared by several nodes), stated on what such a store reports.

use crate::message::StreamPosition;

/// What a store reports about a channel's history when a client resumes
/// from a position: the channel's epoch, its top offset, and the offset of
/// the oldest publication it still holds after that position (`None` when
/// it holds none after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeldHistory<'a> {
    /// The channel's current epoch.
    pub epoch: &'a str,
    /// Offset of its newest publication (0: none yet in this epoch).
    pub top: u64,
    /// Offset of the oldest publication held after the resume position.
    pub first_after: Option<u64>,
}

impl<'a> HeldHistory<'a> {
    /// A report: `epoch`, `top`, and the oldest held offset after the
    /// position asked about.
    pub fn new(epoch: &'a str, top: u64, first_after: Option<u64>) -> Self {
        HeldHistory {
            epoch,
            top,
            first_after,
        }
    }
}

/// Whether a client at `since` can be given every publication after it:
/// the same epoch, a position not past the top, and either nothing
/// published since or the very next offset still held (the held offsets
/// after it are then contiguous up to the top, as a store appends them).
/// Otherwise the subscription is granted at the top with `recovered:
/// false`: never a partial replay.
pub fn can_resume(since: &StreamPosition, held: HeldHistory<'_>) -> bool {
    if since.epoch != held.epoch || since.offset > held.top {
        return false;
    }
    since.offset == held.top || held.first_after == since.offset.checked_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(epoch: &str, offset: u64) -> StreamPosition {
        StreamPosition {
            epoch: epoch.into(),
            offset,
        }
    }

    #[test]
    fn a_position_at_the_top_resumes_with_nothing_to_replay() {
        assert!(can_resume(&at("e", 5), HeldHistory::new("e", 5, None)));
    }

    #[test]
    fn the_next_offset_held_resumes() {
        assert!(can_resume(&at("e", 2), HeldHistory::new("e", 5, Some(3))));
    }

    #[test]
    fn a_trimmed_history_does_not_resume() {
        assert!(!can_resume(&at("e", 2), HeldHistory::new("e", 5, Some(4))));
        assert!(!can_resume(&at("e", 2), HeldHistory::new("e", 5, None)));
    }

    #[test]
    fn another_epoch_or_a_position_past_the_top_does_not_resume() {
        assert!(!can_resume(
            &at("old", 2),
            HeldHistory::new("e", 5, Some(3))
        ));
        assert!(!can_resume(&at("e", 9), HeldHistory::new("e", 5, None)));
    }
}
