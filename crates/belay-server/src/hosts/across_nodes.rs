//! Resident hosts across the nodes of a cluster: the server's side of a
//! [`HostDirectory`] (docs/HOSTS.md, "Across nodes"). What the other nodes
//! say of a host goes into the core as
//! [`HostCalls::handle_shared`](belay_proto::server::HostCalls::handle_shared),
//! which decides (deliver the waiting calls, settle the delivered ones
//! `host_lost` once no node holds the host); this file reads the directory
//! at the moments that need it and renews what this node tells.
//!
//! * a heartbeat: recorded for every node, answered with what they say too
//!   (a host another node needs is told so wherever it beats);
//! * a call to a host no session here holds: read first (a host that beats
//!   and connects elsewhere is known and reachable here);
//! * every period: what this node holds and needs is renewed, and the
//!   hosts its calls wait on or were delivered to are read again. A node
//!   that dies stops renewing: its sessions are forgotten three periods
//!   after its last renewal, and the calls delivered to them settle
//!   `host_lost` on the calling nodes at their next read, within four
//!   periods and a command timeout of the death;
//! * a host's `$answer` to a call of another node: handed to that node.

use std::collections::BTreeSet;
use std::sync::{Arc, Weak};

use belay_proto::message::Reply;
use belay_proto::server::CallId;

use crate::host_directory::{HostDirectory, SharedHost};
use crate::metrics::lock;
use crate::shared::{Server, Shared};

impl Server {
    /// Share this node's resident hosts with the other nodes through
    /// `directory` (once; a second directory is ignored, `false`), and
    /// start renewing what this node tells every
    /// [`period`](HostDirectory::period). Needs a Tokio runtime.
    pub fn set_host_directory(&self, directory: Arc<dyn HostDirectory>) -> bool {
        if self.shared.hosts.directory.set(directory).is_err() {
            return false;
        }
        tokio::spawn(renew_every_period(Arc::downgrade(&self.shared)));
        true
    }

    /// Another node's session of `host` answered `call` of this node:
    /// settle it as if answered here. `false` when no such call waits here.
    pub fn take_host_answer(&self, host: &str, call: u64, reply: Reply) -> bool {
        let shared = &self.shared;
        shared
            .hosts
            .answer(shared, host, CallId::from_u64(call), reply)
    }
}

impl super::HostRegistry {
    fn directory(&self) -> Option<Arc<dyn HostDirectory>> {
        self.directory.get().cloned()
    }

    /// Record a heartbeat of `host` with the other nodes and take in what
    /// they say of it (before the local beat answers). Nothing without a
    /// directory, or when it cannot be reached.
    pub(crate) async fn share_beat(&self, shared: &Arc<Shared>, host: &str) {
        let Some(directory) = self.directory() else {
            return;
        };
        match directory.beat(host).await {
            Ok(view) => self.take_in(shared, host, view),
            Err(error) => tracing::debug!(%host, %error, "host heartbeat not shared"),
        }
    }

    /// Before a call to `host`: when no session here holds it, read what
    /// the other nodes say of it.
    pub(crate) async fn look_up_unless_held(&self, shared: &Arc<Shared>, host: &str) {
        let Some(directory) = self.directory() else {
            return;
        };
        if lock(&shared.node).host_calls().is_attached_here(host) {
            return;
        }
        match directory.look_up(host).await {
            Ok(view) => self.take_in(shared, host, view),
            Err(error) => tracing::debug!(%host, %error, "host not looked up"),
        }
    }

    /// A host's answer that no call here waits for: hand it to the node
    /// whose call it is; whether one took it.
    pub(crate) async fn forward_answer(&self, host: &str, call: CallId, reply: Reply) -> bool {
        let Some(directory) = self.directory() else {
            return false;
        };
        match directory.forward_answer(host, call.as_u64(), reply).await {
            Ok(taken) => taken,
            Err(error) => {
                tracing::debug!(%host, call = call.as_u64(), %error, "answer not forwarded");
                false
            }
        }
    }

    fn take_in(&self, shared: &Arc<Shared>, host: &str, view: SharedHost) {
        let registered = self.drive(shared, |calls, now| calls.handle_shared(now, host, view));
        if registered.is_err() {
            tracing::debug!(%host, "host registry full: what other nodes say of it is not kept");
        }
    }
}

/// Every period while the server lives: renew what this node tells, then
/// read again the hosts its calls wait on or were delivered to.
async fn renew_every_period(shared: Weak<Shared>) {
    let mut told: BTreeSet<Arc<str>> = BTreeSet::new();
    loop {
        let Some(period) = shared
            .upgrade()
            .and_then(|s| s.hosts.directory().map(|d| d.period()))
        else {
            return;
        };
        tokio::time::sleep(period).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let Some(directory) = shared.hosts.directory() else {
            return;
        };
        let (held, needed, look_up) = {
            let node = lock(&shared.node);
            let calls = node.host_calls();
            let (held, needed) = calls.hosts_held_and_needed(shared.clock.now());
            (held, needed, calls.hosts_to_look_up())
        };
        let telling: BTreeSet<Arc<str>> = held.iter().chain(&needed).cloned().collect();
        let dropped: Vec<Arc<str>> = told.difference(&telling).cloned().collect();
        match directory.renew(held, needed, dropped).await {
            Ok(()) => told = telling,
            Err(error) => tracing::warn!(%error, "hosts not renewed with the other nodes"),
        }
        for host in look_up {
            match directory.look_up(&host).await {
                Ok(view) => shared.hosts.take_in(&shared, &host, view),
                Err(error) => tracing::debug!(%host, %error, "host not looked up"),
            }
        }
    }
}
