//! The request registry: every request settles.
//!
//! Ids are allocated monotonically for the whole life of a session and never
//! reset on reconnect, so a late response to a request of an earlier
//! connection finds no entry and is ignored (and counted). Each entry has a
//! deadline; when the transport it was sent on goes away, every entry settles
//! at once with [`RequestOutcome::ConnectionClosed`].

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use crate::message::{ErrorBody, RawJson, Reply, Response};
use crate::time::Instant;

/// Identifies a request within its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
// A value: the u64 is the whole id, the one the request carries on the wire.
#[allow(clippy::exhaustive_structs)]
pub struct RequestId(pub u64);

/// How a request ended. A caller that got `Timeout` or `ConnectionClosed`
/// cannot know whether the server acted: retry only if the request is
/// idempotent (or carries an idempotency key).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RequestOutcome {
    /// The server answered with a result.
    Ok {
        /// The result, as the server sent it.
        result: RawJson,
    },
    /// The server answered with an error.
    ServerError {
        /// The error.
        error: ErrorBody,
    },
    /// No answer before the deadline: fate unknown.
    Timeout,
    /// The connection was lost before an answer: fate unknown.
    ConnectionClosed,
}

impl RequestOutcome {
    /// Whether the request is known not to have been executed, or executed
    /// with an error. `Timeout` and `ConnectionClosed` say "unknown".
    pub fn fate_known(&self) -> bool {
        matches!(
            self,
            RequestOutcome::Ok { .. } | RequestOutcome::ServerError { .. }
        )
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    deadline: Instant,
}

/// In-flight requests with their deadlines.
#[derive(Debug, Default, Clone)]
pub struct RequestRegistry {
    last_id: u64,
    entries: HashMap<u64, Entry>,
    by_deadline: BTreeSet<(Instant, u64)>,
    late_responses: u64,
}

impl RequestRegistry {
    /// An empty registry; the first id is 1.
    pub fn new() -> Self {
        RequestRegistry::default()
    }

    /// The id the next [`insert`](Self::insert) returns.
    pub fn next_id(&self) -> RequestId {
        RequestId(self.last_id.saturating_add(1))
    }

    /// Register a request sent now that must settle by `deadline`, returning its id.
    pub fn insert(&mut self, deadline: Instant) -> RequestId {
        // u64 ids do not wrap in practice; saturate rather than reuse.
        self.last_id = self.last_id.saturating_add(1);
        let id = self.last_id;
        self.entries.insert(id, Entry { deadline });
        self.by_deadline.insert((deadline, id));
        RequestId(id)
    }

    /// A response arrived. Returns the settled request, or `None` (and counts
    /// a late response) if no request with that id is in flight.
    pub fn handle_response(&mut self, response: Response) -> Option<(RequestId, RequestOutcome)> {
        let Some(entry) = self.entries.remove(&response.id) else {
            self.late_responses = self.late_responses.saturating_add(1);
            return None;
        };
        self.by_deadline.remove(&(entry.deadline, response.id));
        let outcome = match response.reply {
            Reply::Result(result) => RequestOutcome::Ok { result },
            Reply::Error(error) => RequestOutcome::ServerError { error },
        };
        Some((RequestId(response.id), outcome))
    }

    /// Settle every request whose deadline is at or before `now` with `Timeout`.
    pub fn handle_timeout(&mut self, now: Instant, settled: &mut Vec<(RequestId, RequestOutcome)>) {
        while let Some(&(deadline, id)) = self.by_deadline.first() {
            if deadline > now {
                break;
            }
            self.by_deadline.pop_first();
            self.entries.remove(&id);
            settled.push((RequestId(id), RequestOutcome::Timeout));
        }
    }

    /// The connection is gone: settle everything with `ConnectionClosed`, in id order.
    pub fn settle_all(&mut self, settled: &mut Vec<(RequestId, RequestOutcome)>) {
        let mut ids: Vec<u64> = self.entries.drain().map(|(id, _)| id).collect();
        ids.sort_unstable();
        self.by_deadline.clear();
        settled.extend(
            ids.into_iter()
                .map(|id| (RequestId(id), RequestOutcome::ConnectionClosed)),
        );
    }

    /// The earliest deadline of a request in flight.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.by_deadline.first().map(|&(deadline, _)| deadline)
    }

    /// Requests in flight.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `id` is in flight.
    pub fn contains(&self, id: RequestId) -> bool {
        self.entries.contains_key(&id.0)
    }

    /// Responses that matched no request in flight (late, duplicate or bogus).
    pub fn late_responses(&self) -> u64 {
        self.late_responses
    }

    /// The most recently allocated id (0 before the first request).
    pub fn last_id(&self) -> RequestId {
        RequestId(self.last_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    fn ok(id: u64) -> Response {
        Response {
            id,
            reply: Reply::Result(json!(id).into()),
        }
    }

    #[test]
    fn ids_grow_monotonically_and_survive_settling_everything() {
        let mut reg = RequestRegistry::new();
        let a = reg.insert(ms(100));
        let b = reg.insert(ms(100));
        let mut settled = Vec::new();
        reg.settle_all(&mut settled);
        let c = reg.insert(ms(200));
        assert!(a < b && b < c);
        assert_eq!(a, RequestId(1));
    }

    #[test]
    fn a_response_settles_its_request_with_the_result() {
        let mut reg = RequestRegistry::new();
        let id = reg.insert(ms(100));
        let (settled_id, outcome) = reg.handle_response(ok(id.0)).unwrap();
        assert_eq!(settled_id, id);
        assert_eq!(
            outcome,
            RequestOutcome::Ok {
                result: json!(1).into()
            }
        );
        assert!(reg.is_empty());
        assert_eq!(reg.poll_timeout(), None);
    }

    #[test]
    fn late_responses_to_unknown_ids_are_ignored_and_counted() {
        let mut reg = RequestRegistry::new();
        let id = reg.insert(ms(100));
        let mut settled = Vec::new();
        reg.handle_timeout(ms(100), &mut settled);
        assert_eq!(settled, vec![(id, RequestOutcome::Timeout)]);
        assert_eq!(reg.handle_response(ok(id.0)), None);
        assert_eq!(reg.handle_response(ok(999)), None);
        assert_eq!(reg.late_responses(), 2);
    }

    #[test]
    fn deadlines_settle_at_exactly_the_deadline_in_deadline_order() {
        let mut reg = RequestRegistry::new();
        let slow = reg.insert(ms(300));
        let fast = reg.insert(ms(100));
        assert_eq!(reg.poll_timeout(), Some(ms(100)));
        let mut settled = Vec::new();
        reg.handle_timeout(ms(99), &mut settled);
        assert!(settled.is_empty());
        reg.handle_timeout(ms(300), &mut settled);
        assert_eq!(
            settled,
            vec![
                (fast, RequestOutcome::Timeout),
                (slow, RequestOutcome::Timeout)
            ]
        );
    }

    #[test]
    fn closing_the_connection_settles_every_request_in_flight() {
        let mut reg = RequestRegistry::new();
        let ids: Vec<_> = (0..5).map(|i| reg.insert(ms(1_000 + i))).collect();
        let mut settled = Vec::new();
        reg.settle_all(&mut settled);
        assert_eq!(settled.len(), 5);
        assert!(settled
            .iter()
            .zip(&ids)
            .all(|((got, outcome), want)| got == want
                && *outcome == RequestOutcome::ConnectionClosed));
        assert!(reg.is_empty());
        assert_eq!(reg.poll_timeout(), None);
    }

    #[test]
    fn server_errors_are_typed_and_their_fate_is_known() {
        let mut reg = RequestRegistry::new();
        let id = reg.insert(ms(100));
        let (_, outcome) = reg
            .handle_response(Response {
                id: id.0,
                reply: Reply::Error(ErrorBody::new("unavailable", "down")),
            })
            .unwrap();
        assert!(outcome.fate_known());
        assert!(!RequestOutcome::Timeout.fate_known());
        assert!(!RequestOutcome::ConnectionClosed.fate_known());
    }
}
