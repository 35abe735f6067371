//! What a connection tells the host registry (docs/HOSTS.md): a host's
//! session attaching to (and leaving) its calls channel, and clients
//! subscribing to (and leaving) a host's channel, which makes the host
//! needed.

use belay_proto::host::HostChannel;

use super::Driver;

impl Driver {
    /// A subscription to `channel` was granted.
    pub(super) fn hosts_joined(&self, channel: &str) {
        self.host_subscription(channel, true);
    }

    /// A subscription to `channel` ended.
    pub(super) fn hosts_left(&self, channel: &str) {
        self.host_subscription(channel, false);
    }

    fn host_subscription(&self, channel: &str, up: bool) {
        let hosts = &self.shared.hosts;
        match HostChannel::parse(channel) {
            // Only the host itself is let in (crate::access).
            Some(HostChannel::Calls(host)) if up => hosts.attached(&self.shared, host),
            Some(HostChannel::Calls(host)) => hosts.detached(&self.shared, host),
            // The host watching its own channel does not make it needed.
            Some(HostChannel::Data(host)) if !self.principal.is_host(host) => {
                hosts.subscribers(&self.shared, host, up);
            }
            _ => {}
        }
    }
}
