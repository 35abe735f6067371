//! The SSE streams this node holds, by id: where a send or a close for a
//! stream finds its connection. A stream is registered when `POST /sse`
//! opens it and forgotten when its connection ends (the transport's guard),
//! so the table holds exactly the node's live streams, each of which is a
//! connection bounded like any other.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use belay_proto::server::SendOrder;
use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use crate::metrics::lock;
use crate::ws::WsError;

/// What a send or a close hands to a stream's connection.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// A send's body, checked (UTF-8, within the size limit); `taken`
    /// fires once the connection has read every message of it.
    Body {
        body: Bytes,
        taken: oneshot::Sender<()>,
    },
    /// The client broke the mapping's rules: close with this error's code.
    Fail(WsError),
    /// The client closed, with this code if it sent one.
    Close(Option<u16>),
}

/// One stream, as the endpoints see it.
#[derive(Debug)]
pub(crate) struct StreamEntry {
    pub(crate) inbound: mpsc::Sender<Inbound>,
    /// Which send is read next (belay-proto decides); held for the whole
    /// of a send, so sends are one at a time.
    pub(crate) order: tokio::sync::Mutex<SendOrder>,
}

/// Every stream of this node.
#[derive(Debug, Default)]
pub(crate) struct Streams {
    map: Mutex<HashMap<Arc<str>, Arc<StreamEntry>>>,
}

impl Streams {
    /// Register a new stream under a fresh id (`node.` first in a
    /// cluster); its connection's end of the channel, and the guard that
    /// forgets it.
    pub(crate) fn open(
        self: &Arc<Self>,
        node: Option<&str>,
    ) -> (Arc<str>, mpsc::Receiver<Inbound>, StreamGuard) {
        // One body at a time is read; one more may wait (a send holds the
        // stream's lock while it waits, so never more).
        let (inbound, receiver) = mpsc::channel(1);
        let entry = Arc::new(StreamEntry {
            inbound,
            order: tokio::sync::Mutex::new(SendOrder::default()),
        });
        let mut map = lock(&self.map);
        let id = loop {
            let id: Arc<str> = Arc::from(new_id(node));
            if !map.contains_key(&id) {
                break id;
            }
        };
        map.insert(Arc::clone(&id), entry);
        let guard = StreamGuard {
            streams: Arc::clone(self),
            id: Arc::clone(&id),
        };
        (id, receiver, guard)
    }

    /// The stream `id`, if this node holds it.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<StreamEntry>> {
        lock(&self.map).get(id).cloned()
    }

    /// Streams held now.
    pub(crate) fn len(&self) -> usize {
        lock(&self.map).len()
    }
}

/// Forgets its stream when dropped (the connection ended).
#[derive(Debug)]
pub(crate) struct StreamGuard {
    streams: Arc<Streams>,
    id: Arc<str>,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let mut map = lock(&self.streams.map);
        map.remove(&self.id);
        if map.capacity() > 64 && map.len() < map.capacity() / 4 {
            map.shrink_to_fit();
        }
    }
}

/// 128 random bits in base64url (22 characters), after `node.` if given.
fn new_id(node: Option<&str>) -> String {
    let mut bytes = [0u8; 16];
    // The operating system's generator; if it fails the process has no
    // randomness left to give anyone, and a guessable id is worse than
    // none.
    getrandom::getrandom(&mut bytes).expect("the operating system's random generator");
    let random = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    match node {
        Some(node) => format!("{node}.{random}"),
        None => random,
    }
}

/// The node an id names (the part before the first dot), if any.
pub(crate) fn owner(id: &str) -> Option<&str> {
    id.split_once('.').map(|(node, _)| node)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_found_by_its_id_until_its_guard_drops() {
        let streams = Arc::new(Streams::default());
        let (id, _inbound, guard) = streams.open(None);
        assert_eq!(id.len(), 22);
        assert!(streams.get(&id).is_some());
        drop(guard);
        assert!(streams.get(&id).is_none());
        assert_eq!(streams.len(), 0);
    }

    #[test]
    fn in_a_cluster_the_id_names_its_node() {
        let streams = Arc::new(Streams::default());
        let (id, _inbound, _guard) = streams.open(Some("n7"));
        assert_eq!(owner(&id), Some("n7"));
        let (other, _inbound, _guard) = streams.open(None);
        assert_eq!(owner(&other), None);
        assert_ne!(id, other);
    }
}
