//! The reserved `$history` request (spec/PROTOCOL.md §4.8): a channel's
//! retained publications read by a client, allowed exactly when it may
//! subscribe to the channel.
//!
//! Params `{channel, since?: {epoch, offset}, limit?, reverse?, token?}`
//! (no other field); result `{"publications": [{offset, data}], "epoch",
//! "offset", "truncated"}`. Bounds, so a peer cannot make the server read
//! or send without limit:
//!
//! * `limit` is capped at the channel's history size (its namespace's
//!   `history_size`, else [`DEFAULT_HISTORY_CAP`], the embedded broker's
//!   default); absent, it is that cap;
//! * the data of one answer is at most a quarter of the connection's
//!   outbound queue in bytes (`Limits::outbound_bytes`, 1 MiB by default:
//!   256 KiB), and never more than [`MAX_ANSWER_DATA`] (half the protocol's
//!   frame limit, so the `response` frame always fits): an answer never
//!   fills the queue that other frames need. The first publication always
//!   goes in (each is bounded by `max_publication_len`) and `truncated`
//!   says the bytes ended the page.
//!
//! Refusals: `bad_request` for params that are not the above, `forbidden`
//! / `unauthorized` as a subscribe would be refused, `not_found` for a
//! `since` that is no position of the channel now (another epoch, beyond
//! the top: read again without it), `unavailable` when the broker cannot
//! answer now, `unknown_method` with a broker that does not read history.

use belay_proto::message::{ErrorBody, RawJson, Reply, Request, StreamPosition, MAX_FRAME_LEN};
use belay_proto::server::{Input, Ticket, MAX_OFFSET};
use serde_json::{Map, Value};

use super::Driver;
use crate::auth::Verdict;
use crate::broker::{HistoryError, HistoryPage, HistoryQuery};
use crate::mailbox::Control;

/// The reserved method that reads a channel's history.
pub(crate) const HISTORY_METHOD: &str = "$history";

/// The most publications one `$history` answer holds for a channel whose
/// namespace sets no `history_size` (the embedded broker keeps 1 000).
pub(crate) const DEFAULT_HISTORY_CAP: usize = 1_000;

/// The most bytes of publication data in one `$history` answer.
pub(crate) const MAX_ANSWER_DATA: usize = MAX_FRAME_LEN / 2;

/// The longest epoch a `since` may name.
const MAX_EPOCH_LEN: usize = 255;

/// A checked `$history` request.
#[derive(Debug)]
struct HistoryAsk {
    channel: String,
    token: Option<String>,
    query: HistoryQuery,
}

impl Driver {
    /// The `$history` request: checked, authorized as a subscribe, read
    /// from the broker on a task of its own.
    pub(super) fn history_query(&mut self, ticket: Ticket, request: &Request) {
        let max_bytes = answer_bytes(self.shared.limits.outbound_bytes());
        let ask = match parse(&request.params, max_bytes, |channel| {
            self.shared
                .config
                .namespaces
                .options_for(channel)
                .history_size
                .unwrap_or(DEFAULT_HISTORY_CAP)
        }) {
            Ok(ask) => ask,
            Err(message) => {
                let now = self.now();
                let error = ErrorBody::new("bad_request", message);
                self.core.handle_input(
                    now,
                    Input::Reply {
                        ticket,
                        reply: Reply::Error(error),
                    },
                );
                return;
            }
        };
        let allowed: Verdict<()> = crate::access::subscribe(
            &self.shared,
            &self.principal,
            &ask.channel,
            ask.token.as_deref(),
        );
        let broker = std::sync::Arc::clone(&self.shared.broker);
        let control = self.control.clone();
        tokio::spawn(async move {
            let reply = match crate::access::settle(allowed).await {
                Err(denied) => Reply::Error(ErrorBody::new(denied.code(), denied.to_string())),
                Ok(()) => match broker.history(&ask.channel, ask.query).await {
                    Ok(page) => Reply::Result(page_json(&page)),
                    Err(error) => Reply::Error(history_error(&error)),
                },
            };
            let _ = control.send(Control::Reply(ticket, reply));
        });
    }
}

/// The most bytes of data in one answer on a connection whose outbound
/// queue holds `outbound_bytes`.
fn answer_bytes(outbound_bytes: usize) -> usize {
    (outbound_bytes / 4).clamp(1, MAX_ANSWER_DATA)
}

/// The params, each field checked; `cap(channel)` is the channel's
/// history size, `max_bytes` the data one answer holds. A message naming
/// the bad field otherwise.
fn parse(
    params: &Value,
    max_bytes: usize,
    cap: impl Fn(&str) -> usize,
) -> Result<HistoryAsk, String> {
    let Value::Object(fields) = params else {
        return Err("params must be an object {channel, since?, limit?, reverse?, token?}".into());
    };
    if let Some(unknown) = fields
        .keys()
        .find(|k| !["channel", "since", "limit", "reverse", "token"].contains(&k.as_str()))
    {
        return Err(format!("unknown field {:?}", truncate(unknown)));
    }
    let channel = match fields.get("channel") {
        Some(Value::String(c)) => c.clone(),
        Some(_) => return Err("channel: a string".into()),
        None => return Err("missing field `channel`".into()),
    };
    let cap = cap(&channel);
    let limit = match fields.get("limit") {
        None => cap,
        Some(v) => match v.as_u64() {
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX).min(cap),
            None => return Err("limit: a non-negative integer".into()),
        },
    };
    let reverse = match fields.get("reverse") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("reverse: true or false".into()),
    };
    let token = match fields.get("token") {
        None => None,
        Some(Value::String(t)) => Some(t.clone()),
        Some(_) => return Err("token: a string".into()),
    };
    let mut query = HistoryQuery::new(limit)
        .reverse(reverse)
        .max_bytes(max_bytes);
    match fields.get("since") {
        None => {}
        Some(Value::Object(since)) => query = query.since(position(since)?),
        Some(_) => return Err("since: an object {epoch, offset}".into()),
    }
    Ok(HistoryAsk {
        channel,
        token,
        query,
    })
}

fn position(since: &Map<String, Value>) -> Result<StreamPosition, String> {
    if since.keys().any(|k| k != "epoch" && k != "offset") {
        return Err("since: only {epoch, offset}".into());
    }
    let offset = match since.get("offset").map(Value::as_u64) {
        Some(Some(n)) if n <= MAX_OFFSET => n,
        Some(_) => return Err(format!("since.offset: an integer from 0 to {MAX_OFFSET}")),
        None => return Err("missing field `since.offset`".into()),
    };
    let epoch = match since.get("epoch") {
        Some(Value::String(e)) if e.len() <= MAX_EPOCH_LEN => e.clone(),
        Some(_) => {
            return Err(format!(
                "since.epoch: a string of at most {MAX_EPOCH_LEN} bytes"
            ))
        }
        None => return Err("missing field `since.epoch`".into()),
    };
    Ok(StreamPosition { epoch, offset })
}

/// At most 64 bytes of a peer's text in a message (on a char boundary).
fn truncate(text: &str) -> &str {
    let mut end = text.len().min(64);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn page_json(page: &HistoryPage) -> RawJson {
    // Serializing held JSON texts and plain numbers cannot fail.
    serde_json::to_string(page)
        .ok()
        .and_then(|text| RawJson::from_json(text).ok())
        .unwrap_or_else(RawJson::null)
}

/// The error a failed history read answers.
fn history_error(error: &HistoryError) -> ErrorBody {
    let code = match error {
        HistoryError::EpochChanged { .. } | HistoryError::BeyondTop { .. } => "not_found",
        HistoryError::Unsupported => "unknown_method",
        _ => "unavailable",
    };
    ErrorBody::new(code, error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cap(_: &str) -> usize {
        5
    }

    fn parse_capped(params: &Value, cap: fn(&str) -> usize) -> Result<HistoryAsk, String> {
        parse(params, MAX_ANSWER_DATA, cap)
    }

    #[test]
    fn an_answer_takes_a_quarter_of_the_outbound_queue_at_most_half_a_frame() {
        assert_eq!(answer_bytes(1 << 20), 256 << 10);
        assert_eq!(answer_bytes(64 << 20), MAX_ANSWER_DATA);
        assert_eq!(answer_bytes(0), 1);
    }

    #[test]
    fn the_limit_defaults_to_and_is_capped_by_the_history_size() {
        let ask = parse_capped(&json!({"channel": "c"}), cap).unwrap();
        assert_eq!(ask.query.limit, 5);
        let ask = parse_capped(&json!({"channel": "c", "limit": 3}), cap).unwrap();
        assert_eq!(ask.query.limit, 3);
        let ask = parse_capped(&json!({"channel": "c", "limit": 1_000_000}), cap).unwrap();
        assert_eq!(ask.query.limit, 5);
        assert_eq!(ask.query.max_bytes, MAX_ANSWER_DATA);
    }

    #[test]
    fn since_reverse_and_token_are_read() {
        let ask = parse_capped(
            &json!({"channel": "c", "since": {"epoch": "e", "offset": 7}, "reverse": true, "token": "t"}),
            cap,
        )
        .unwrap();
        assert_eq!(ask.channel, "c");
        assert_eq!(ask.token.as_deref(), Some("t"));
        assert!(ask.query.reverse);
        assert_eq!(
            ask.query.since,
            Some(StreamPosition {
                epoch: "e".into(),
                offset: 7
            })
        );
    }

    #[test]
    fn bad_params_are_refused_naming_the_field() {
        for (params, names) in [
            (json!(null), "params"),
            (json!({}), "channel"),
            (json!({"channel": 1}), "channel"),
            (json!({"channel": "c", "limit": -1}), "limit"),
            (json!({"channel": "c", "limit": 1.5}), "limit"),
            (json!({"channel": "c", "reverse": "yes"}), "reverse"),
            (json!({"channel": "c", "since": 3}), "since"),
            (
                json!({"channel": "c", "since": {"offset": 1}}),
                "since.epoch",
            ),
            (
                json!({"channel": "c", "since": {"epoch": "e"}}),
                "since.offset",
            ),
            (
                json!({"channel": "c", "since": {"epoch": "e", "offset": 1, "x": 1}}),
                "since",
            ),
            (json!({"channel": "c", "token": 5}), "token"),
            (json!({"channel": "c", "extra": 1}), "extra"),
        ] {
            assert!(
                parse_capped(&params, cap).is_err(),
                "{names}: {params} accepted"
            );
        }
    }

    #[test]
    fn a_lost_position_is_not_found_and_a_store_down_unavailable() {
        let at = StreamPosition {
            epoch: "e".into(),
            offset: 3,
        };
        let lost = history_error(&HistoryError::EpochChanged {
            current: at.clone(),
        });
        assert_eq!(lost.code, "not_found");
        assert_eq!(
            history_error(&HistoryError::BeyondTop { current: at }).code,
            "not_found"
        );
        assert_eq!(
            history_error(&HistoryError::Unavailable("x".into())).code,
            "unavailable"
        );
        assert_eq!(
            history_error(&HistoryError::Unsupported).code,
            "unknown_method"
        );
    }
}
