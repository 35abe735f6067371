//! Sends and closes that reach a node not holding their stream (in a
//! cluster without sticky sessions, any node may get them). The id's prefix
//! names the node that holds the stream; the node that got the POST hands
//! it there through an [`SseRelay`] (belay-standalone's rides the
//! cluster's node-to-node messages on Redis) and answers what that node
//! answered.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{streams, Answer, BadBody};
use crate::shared::{Server, Shared};

/// Carries a send or a close to the node holding its stream.
pub trait SseRelay: Send + Sync + 'static {
    /// This node's id: the prefix of the ids of the streams it opens. No
    /// dots (the prefix ends at the first).
    fn node(&self) -> &str;

    /// Hand `send` to `node` and return what it answered (from
    /// [`Server::take_relayed`] there); `None` if it did not answer in
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
    stream: String,
    /// The send's number; none for a close.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    body: Option<String>,
    /// Why the body was refused where it arrived (`too_large`, `not_utf8`,
    /// `timed_out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refused: Option<String>,
    /// A close's code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    code: Option<u16>,
}

/// What the node holding the stream answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayAnswer {
    answer: String,
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

/// The relay and the node for stream `id`, if it names another node.
pub(crate) fn route<'a>(shared: &'a Shared, id: &'a str) -> Option<(&'a dyn SseRelay, &'a str)> {
    let relay = shared.sse_relay.as_deref()?;
    let node = streams::owner(id)?;
    (node != relay.node()).then_some((relay, node))
}

/// Relay `send` to `node`.
pub(crate) async fn forward(relay: &dyn SseRelay, node: &str, send: RelayedSend) -> Answer {
    match relay.forward(node, send).await {
        Some(answer) => Answer::from(&answer),
        None => Answer::OwnerUnreachable,
    }
}

impl Server {
    /// A send or a close another node relayed here ([`SseRelay::forward`]
    /// on that node): handled as if it had arrived here.
    pub async fn take_relayed(&self, relayed: RelayedSend) -> RelayAnswer {
        let Some(entry) = self.shared.sse.get(&relayed.stream) else {
            return Answer::UnknownStream.into();
        };
        let answer = match relayed.seq {
            None => super::take_close(&entry, relayed.code).await,
            Some(seq) => {
                let body = match (relayed.body, relayed.refused.as_deref()) {
                    (_, Some("too_large")) => Err(BadBody::TooLarge),
                    (_, Some("timed_out")) => Err(BadBody::TimedOut),
                    (_, Some(_)) => Err(BadBody::NotUtf8),
                    (Some(body), None) => Ok(Bytes::from(body)),
                    (None, None) => Ok(Bytes::new()),
                };
                super::take_send(&entry, seq, std::future::ready(body)).await
            }
        };
        answer.into()
    }
}
