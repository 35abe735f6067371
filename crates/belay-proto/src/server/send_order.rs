//! [`SendOrder`]: which of an SSE stream's numbered sends the server reads
//! (spec/PROTOCOL.md §1.7). The client numbers its sends from 1 and keeps
//! one in flight; a number already taken is a retry of a send the server
//! read (answered as taken, its body ignored), a number past the next means
//! a send went missing (the stream closes 1002), and the next number is
//! read, and counted only once it was.

/// What to do with a send numbered `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendVerdict {
    /// The next number: read its body, then [`SendOrder::taken`].
    Read,
    /// A number already taken (a retry): answer 204, ignore the body.
    Repeat,
    /// A number past the next: a send went missing. Answer 409 and close
    /// the stream 1002 `protocol error`.
    Gap,
}

/// The numbering of one stream's sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendOrder {
    next: u64,
}

impl Default for SendOrder {
    fn default() -> Self {
        SendOrder { next: 1 }
    }
}

impl SendOrder {
    /// The number the next send must carry.
    pub fn next(&self) -> u64 {
        self.next
    }

    /// A send numbered `seq` arrived.
    pub fn handle_send(&self, seq: u64) -> SendVerdict {
        match seq.cmp(&self.next) {
            std::cmp::Ordering::Less => SendVerdict::Repeat,
            std::cmp::Ordering::Equal => SendVerdict::Read,
            std::cmp::Ordering::Greater => SendVerdict::Gap,
        }
    }

    /// The send [`SendVerdict::Read`] named was read whole: the next
    /// number follows it. A body refused (too large, not UTF-8) is not
    /// taken: the stream closes instead.
    pub fn taken(&mut self) {
        self.next = self.next.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_are_read_in_number_order_from_one() {
        let mut order = SendOrder::default();
        assert_eq!(order.handle_send(1), SendVerdict::Read);
        order.taken();
        assert_eq!(order.next(), 2);
        assert_eq!(order.handle_send(2), SendVerdict::Read);
    }

    #[test]
    fn a_number_already_taken_is_a_retry_and_one_past_the_next_a_gap() {
        let mut order = SendOrder::default();
        order.taken();
        order.taken();
        assert_eq!(order.handle_send(1), SendVerdict::Repeat);
        assert_eq!(order.handle_send(2), SendVerdict::Repeat);
        assert_eq!(order.handle_send(4), SendVerdict::Gap);
        assert_eq!(order.handle_send(3), SendVerdict::Read);
    }

    #[test]
    fn a_send_not_yet_taken_is_read_again() {
        // Its body was refused or never arrived: the same number is still the next.
        let order = SendOrder::default();
        assert_eq!(order.handle_send(1), SendVerdict::Read);
        assert_eq!(order.handle_send(1), SendVerdict::Read);
    }
}
