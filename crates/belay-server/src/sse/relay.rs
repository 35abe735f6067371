//! Sends and closes that reach a node not holding their stream (in a
//! cluster without sticky sessions, any node may get them). The id's prefix
//! names the node that holds the stream; the node that got the POST hands
//! it there through an [`SseRelay`] (belay-standalone's rides the
//! cluster's node-to-node messages on Redis) and answers what that node
//! answered.

use bytes::Bytes;

use super::{streams, Answer, BadBody};
use crate::shared::{Server, Shared};
use crate::sse_relay::{RelayAnswer, RelayedSend, SseRelay};

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
