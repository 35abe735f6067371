//! The relay between nodes for the SSE fallback's sends and closes: the
//! [`SseRelay`] a cluster provides, and what it carries. The routing and
//! the handling are `sse`'s; this leaf names the types only, so the
//! server's shared state can hold a relay without importing the handlers.

use std::future::Future;
use std::pin::Pin;

use belay_proto::server::{BadBody, SseAnswer as Answer};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Carries a send or a close to the node holding its stream.
pub trait SseRelay: Send + Sync + 'static {
    /// This node's id: the prefix of the ids of the streams it opens. No
    /// dots (the prefix ends at the first).
    fn node(&self) -> &str;

    /// Hand `send` to `node` and return what it answered (from
    /// [`Server::take_relayed`](crate::Server::take_relayed) there); `None` if it did not answer in
    /// time.
    fn forward(
        &self,
        node: &str,
        send: RelayedSend,
    ) -> Pin<Box<dyn Future<Output = Option<RelayAnswer>> + Send + 'static>>;
}

/// A send or a close on its way to the node holding its stream. The relay
/// carries it as it is (it serializes to JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayedSend {
    pub(crate) stream: String,
    /// The send's number; none for a close.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) body: Option<String>,
    /// Why the body was refused where it arrived (`too_large`, `not_utf8`,
    /// `timed_out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refused: Option<String>,
    /// A close's code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) code: Option<u16>,
}

/// What the node holding the stream answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayAnswer {
    pub(crate) answer: String,
}

impl RelayedSend {
    pub(crate) fn send(stream: &str, seq: u64, body: Result<Bytes, BadBody>) -> Self {
        let (body, refused) = match body {
            // Checked as UTF-8 when read.
            Ok(body) => (Some(String::from_utf8_lossy(&body).into_owned()), None),
            Err(bad) => (None, Answer::BadBody(bad).name().map(str::to_owned)),
        };
        RelayedSend {
            stream: stream.to_owned(),
            seq: Some(seq),
            body,
            refused,
            code: None,
        }
    }

    pub(crate) fn close(stream: &str, code: Option<u16>) -> Self {
        RelayedSend {
            stream: stream.to_owned(),
            seq: None,
            body: None,
            refused: None,
            code,
        }
    }
}

impl From<Answer> for RelayAnswer {
    fn from(answer: Answer) -> Self {
        RelayAnswer {
            answer: answer.name().unwrap_or("owner_unreachable").to_owned(),
        }
    }
}

impl From<&RelayAnswer> for Answer {
    fn from(answer: &RelayAnswer) -> Self {
        Answer::from_name(&answer.answer)
    }
}
