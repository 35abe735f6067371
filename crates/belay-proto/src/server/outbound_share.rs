//! The server-wide outbound budget, shared fairly: the bytes queued for
//! writing over all connections are bounded, but a connection whose
//! client reads keeps a short queue, so another client's backlog never
//! gets it refused. Each connection may always hold [`FAIR_SHARE`] bytes;
//! past that it may grow only while the server-wide total is within the
//! budget. A refusal is a slow consumer (close 4009), as a full queue of
//! its own ([`Limits::check_outbound`](super::Limits::check_outbound)).

/// Bytes a connection may always queue, whatever the server-wide total.
pub const FAIR_SHARE: usize = 64 * 1024;

/// May a connection holding `queued_bytes` queue `len` more, while every
/// connection together holds `total` bytes of the server-wide `budget`?
pub fn fair_share_admits(queued_bytes: usize, len: usize, total: usize, budget: usize) -> bool {
    queued_bytes.saturating_add(len) <= FAIR_SHARE || total.saturating_add(len) <= budget
}

/// The bytes a connection holding `queued_bytes` may still queue under the
/// server-wide `budget` (of which `total` is held): its fair share's rest,
/// or the budget's rest, whichever is more.
pub fn fair_share_room(queued_bytes: usize, total: usize, budget: usize) -> usize {
    FAIR_SHARE
        .saturating_sub(queued_bytes)
        .max(budget.saturating_sub(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_its_fair_share_a_connection_is_admitted_whatever_the_total() {
        assert!(fair_share_admits(0, FAIR_SHARE, usize::MAX, 0));
        assert!(!fair_share_admits(1, FAIR_SHARE, usize::MAX, 0));
    }

    #[test]
    fn past_its_fair_share_a_connection_grows_only_within_the_budget() {
        let budget = 4 * FAIR_SHARE;
        assert!(fair_share_admits(FAIR_SHARE, 100, budget - 100, budget));
        assert!(!fair_share_admits(FAIR_SHARE, 100, budget - 99, budget));
    }

    #[test]
    fn the_room_is_the_larger_of_the_two_rests() {
        assert_eq!(fair_share_room(1_000, 0, 10), FAIR_SHARE - 1_000);
        assert_eq!(fair_share_room(FAIR_SHARE, 0, 1 << 20), 1 << 20);
        assert_eq!(fair_share_room(FAIR_SHARE * 2, 1 << 21, 1 << 20), 0);
    }
}
