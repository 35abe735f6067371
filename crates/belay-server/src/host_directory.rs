//! [`HostDirectory`]: how relays sharing a broker share their resident
//! hosts (docs/HOSTS.md, "Across nodes"). A leaf naming the types: the
//! server's shared state holds a directory without importing the relay;
//! `hosts::across_nodes` drives it.
//!
//! Each node tells the others, for three [`periods`](HostDirectory::period)
//! at a time, which hosts a session of its own holds and which hosts it
//! needs (subscribers, calls, grace), and records every heartbeat it gets.
//! A node reads that back ([`SharedHost`]) on a heartbeat, before a call to
//! a host no session of its own holds, and every period for the hosts its
//! calls wait on or were delivered to. A call is still delivered by
//! publishing it on `$host-calls:ID`, which the broker carries to the node
//! holding the host's session; the host's `$answer` there is handed back to
//! the calling node ([`forward_answer`](HostDirectory::forward_answer)).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::Reply;

pub use belay_proto::host::SharedHost;

/// A directory operation on its way, bounded in time by the directory (the
/// broker's command timeout); `Err` says why it could not be done (the
/// broker unreachable): the node then goes on with what it knows.
pub type DirectoryFuture<T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'static>>;

/// Where the relays of a cluster share their hosts. Set with
/// [`Server::set_host_directory`](crate::Server::set_host_directory)
/// (belay-redis's `RedisBroker::serve_hosts` does).
pub trait HostDirectory: Send + Sync + 'static {
    /// How often the node renews what it told and reads again the hosts it
    /// waits on. What it tells lasts three periods, so a node that dies is
    /// forgotten within three periods of its last renewal.
    fn period(&self) -> Duration;

    /// `host` called this node's heartbeat endpoint: record it (any node
    /// then knows when it last beat), and say what the other nodes say of
    /// it.
    fn beat(&self, host: &str) -> DirectoryFuture<SharedHost>;

    /// What the other nodes say of `host`.
    fn look_up(&self, host: &str) -> DirectoryFuture<SharedHost>;

    /// Tell the others, for three periods, that sessions on this node hold
    /// `held` and that this node needs `needed`; `dropped` are hosts it
    /// told of before and now neither holds nor needs.
    fn renew(
        &self,
        held: Vec<Arc<str>>,
        needed: Vec<Arc<str>>,
        dropped: Vec<Arc<str>>,
    ) -> DirectoryFuture<()>;

    /// A session of `host` on this node answered `call`, which no call of
    /// this node's is: hand the answer to the node that made it (its
    /// [`Server::take_host_answer`](crate::Server::take_host_answer));
    /// whether a node took it.
    fn forward_answer(&self, host: &str, call: u64, reply: Reply) -> DirectoryFuture<bool>;
}
