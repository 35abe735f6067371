//! How much a resume may replay: the rule that keeps a replay from
//! overflowing the driver's outbound queue (which the core would have to
//! close 4009 as a slow consumer, spec/PROTOCOL.md §5.7).

use super::super::Limits;

/// What the driver's outbound queue can still take when a join is
/// answered, in frames and bytes: the limits less what waits in it (and,
/// where a server-wide budget applies, less what that budget no longer
/// allows). [`OutboundRoom::whole`] is an empty queue's room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutboundRoom {
    /// Frames the queue can still take.
    pub frames: usize,
    /// Bytes the queue can still take.
    pub bytes: usize,
}

impl OutboundRoom {
    /// Room for `frames` more frames and `bytes` more bytes.
    pub fn new(frames: usize, bytes: usize) -> Self {
        OutboundRoom { frames, bytes }
    }

    /// The room of an empty queue under `limits`.
    pub fn whole(limits: &Limits) -> Self {
        OutboundRoom::new(limits.outbound_queue(), limits.outbound_bytes())
    }

    /// Whether `replay` may go out whole: within half the room, in frames
    /// and in bytes. The replay is handed to the driver at once; the other
    /// half is for the live frames that arrive while it drains and for
    /// whatever else the connection sends meanwhile. Past it the resume is
    /// answered `recovered: false`, as one whose history no longer reaches
    /// back is: the client carries on from the top instead of retrying a
    /// resume that could never fit.
    pub fn takes_replay<F: AsRef<[u8]>>(&self, replay: &[(u64, F)]) -> bool {
        let bytes = replay.iter().fold(0usize, |sum, (_, frame)| {
            sum.saturating_add(frame.as_ref().len())
        });
        replay.len() <= self.frames / 2 && bytes <= self.bytes / 2
    }
}

#[cfg(test)]
mod tests {
    use super::OutboundRoom;

    #[test]
    fn a_replay_within_half_the_room_is_taken_and_one_past_it_is_not() {
        let room = OutboundRoom::new(4, 100);
        assert!(room.takes_replay(&[(1, vec![0u8; 25]), (2, vec![0u8; 25])]));
        assert!(!room.takes_replay(&[(1, vec![0u8; 26]), (2, vec![0u8; 25])]));
        assert!(!room.takes_replay(&[(1, vec![0u8; 1]), (2, vec![0u8; 1]), (3, vec![0u8; 1])]));
        assert!(OutboundRoom::new(0, 0).takes_replay::<&[u8]>(&[]));
    }
}
