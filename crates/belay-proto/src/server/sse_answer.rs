//! The SSE fallback's HTTP answers (spec/PROTOCOL.md §1.7) as one table:
//! what each outcome of an open, a send or a close is answered — status,
//! text, `Retry-After`, and whether the HTTP connection must close. The
//! driver writes the answer; a cluster relays it between nodes by its
//! [`name`](SseAnswer::name).

use std::time::Duration;

/// Why a POST body was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
// Exhaustive on purpose: each driver maps every refusal to the close of
// its stream, and a new one must break the drivers' build until it does.
#[allow(clippy::exhaustive_enums)]
pub enum BadBody {
    /// Longer than the frame limit (413; the stream closes 1009).
    TooLarge,
    /// Not UTF-8 (400; the stream closes 1007).
    NotUtf8,
    /// Not in full within the body timeout (408; the HTTP connection
    /// closes, a send's stream ends).
    TimedOut,
}

/// The outcome of an SSE request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SseAnswer {
    /// The send or close was taken (204).
    Taken,
    /// No such stream (404).
    UnknownStream,
    /// No or a malformed `Belay-Seq` (400).
    BadSeq,
    /// A number past the next (409; the stream closes 1002).
    OutOfOrder,
    /// The body was refused.
    BadBody(BadBody),
    /// The connection did not read the send in time (503, retry after 1 s;
    /// the stream ends).
    NotReadInTime,
    /// The node holding the stream did not answer (503, retry after 1 s).
    OwnerUnreachable,
    /// An open over the admission budget (503, retry after this, rounded
    /// up to whole seconds, at least 1).
    Overloaded {
        /// When to come back.
        retry_after: Duration,
    },
}

/// What to write for an [`SseAnswer`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpAnswer {
    /// The status code.
    pub status: u16,
    /// The body's text (empty for 204).
    pub text: String,
    /// `Retry-After`, in whole seconds.
    pub retry_after_secs: Option<u64>,
    /// `Connection: close`: the rest of the request may still come.
    pub close_connection: bool,
}

/// The relay names of the answers a node relays for another (a cluster).
const NAMES: [(SseAnswer, &str); 9] = [
    (SseAnswer::Taken, "taken"),
    (SseAnswer::UnknownStream, "unknown_stream"),
    (SseAnswer::BadSeq, "bad_seq"),
    (SseAnswer::OutOfOrder, "out_of_order"),
    (SseAnswer::BadBody(BadBody::TooLarge), "too_large"),
    (SseAnswer::BadBody(BadBody::NotUtf8), "not_utf8"),
    (SseAnswer::BadBody(BadBody::TimedOut), "timed_out"),
    (SseAnswer::NotReadInTime, "not_read_in_time"),
    (SseAnswer::OwnerUnreachable, "owner_unreachable"),
];

impl SseAnswer {
    /// The HTTP answer.
    pub fn http(&self) -> HttpAnswer {
        let plain = |status: u16, text: &str| HttpAnswer {
            status,
            text: text.to_owned(),
            retry_after_secs: None,
            close_connection: false,
        };
        let retry = |text: String, secs: u64| HttpAnswer {
            status: 503,
            text,
            retry_after_secs: Some(secs),
            close_connection: false,
        };
        match self {
            SseAnswer::Taken => plain(204, ""),
            SseAnswer::UnknownStream => plain(404, "unknown stream"),
            SseAnswer::BadSeq => plain(400, "Belay-Seq missing or not a number"),
            SseAnswer::OutOfOrder => plain(409, "out of order"),
            SseAnswer::BadBody(BadBody::TooLarge) => plain(413, "message too big"),
            SseAnswer::BadBody(BadBody::NotUtf8) => plain(400, "invalid utf-8"),
            SseAnswer::BadBody(BadBody::TimedOut) => HttpAnswer {
                close_connection: true,
                ..plain(408, "body not received in time")
            },
            SseAnswer::NotReadInTime => retry("send not read in time".into(), 1),
            SseAnswer::OwnerUnreachable => {
                retry("the node holding the stream did not answer".into(), 1)
            }
            SseAnswer::Overloaded { retry_after } => retry(
                format!("over capacity; retry after {} ms", retry_after.as_millis()),
                super::violation::ceil_secs(*retry_after),
            ),
        }
    }

    /// The name a node relays this answer by; `None` for an answer that is
    /// never relayed (an open's).
    pub fn name(&self) -> Option<&'static str> {
        NAMES.iter().find(|(a, _)| a == self).map(|(_, name)| *name)
    }

    /// The answer a relayed `name` stands for; an unknown name is the
    /// owner's failure to answer (`unreachable` is an older name of it).
    pub fn from_name(name: &str) -> SseAnswer {
        NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map_or(SseAnswer::OwnerUnreachable, |(a, _)| *a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_rounded_up_as_the_upgrades_is() {
        let at = |ms| {
            SseAnswer::Overloaded {
                retry_after: Duration::from_millis(ms),
            }
            .http()
        };
        assert_eq!(at(1).retry_after_secs, Some(1));
        assert_eq!(at(1_000).retry_after_secs, Some(1));
        assert_eq!(at(1_001).retry_after_secs, Some(2));
        assert_eq!(at(0).retry_after_secs, Some(1), "never `Retry-After: 0`");
        assert_eq!(at(1_500).text, "over capacity; retry after 1500 ms");
    }

    #[test]
    fn every_relayed_answer_keeps_its_name_and_an_unknown_name_is_unreachable() {
        for (answer, name) in NAMES {
            assert_eq!(answer.name(), Some(name));
            assert_eq!(SseAnswer::from_name(name), answer);
        }
        assert_eq!(
            SseAnswer::from_name("unreachable"),
            SseAnswer::OwnerUnreachable
        );
        assert_eq!(SseAnswer::from_name("what"), SseAnswer::OwnerUnreachable);
    }

    #[test]
    fn a_timed_out_body_closes_the_http_connection() {
        let answer = SseAnswer::BadBody(BadBody::TimedOut).http();
        assert_eq!((answer.status, answer.close_connection), (408, true));
        assert_eq!(SseAnswer::Taken.http().status, 204);
        assert_eq!(SseAnswer::OutOfOrder.http().status, 409);
    }
}
