//! The callers waiting for a host call's verdict: the relay's side of the
//! node's [`HostCalls`](belay_proto::server::HostCalls), whose methods are
//! `hosts`'s. A leaf, so the server's shared state holds it without
//! importing the relay.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use belay_proto::message::Reply;
use belay_proto::server::CallId;
use tokio::sync::oneshot;

/// Each started call's caller, waiting for its reply. Lock order: the
/// node, then this. And where the hosts of other nodes are, in a cluster.
#[derive(Default)]
pub(crate) struct HostRegistry {
    pub(crate) waiting: Mutex<HashMap<CallId, oneshot::Sender<Reply>>>,
    pub(crate) directory: OnceLock<Arc<dyn crate::host_directory::HostDirectory>>,
}
