//! The servers a client dials: the builder's URL first, then each
//! [`failover_url`](crate::ClientBuilder::failover_url) in turn. A dial
//! that follows a loss or a failed dial (the core's `attempt` above 0)
//! goes to the next one; a first dial, or one after the backoff reset,
//! stays where the last session was.

use std::sync::Arc;

use crate::transport::Target;

/// The URLs, parsed, and the one in use.
#[derive(Debug)]
pub(crate) struct Endpoints {
    targets: Vec<Arc<Target>>,
    current: usize,
}

impl Endpoints {
    /// `first`, then `others` in order.
    pub(crate) fn new(first: Target, others: Vec<Target>) -> Self {
        let targets = std::iter::once(first).chain(others).map(Arc::new).collect();
        Endpoints {
            targets,
            current: 0,
        }
    }

    /// Where the dial numbered `attempt` by the core goes.
    pub(crate) fn for_dial(&mut self, attempt: u32) -> Arc<Target> {
        if attempt > 0 {
            self.current = (self.current + 1) % self.targets.len();
        }
        self.current()
    }

    /// The server dialed last.
    pub(crate) fn current(&self) -> Arc<Target> {
        Arc::clone(&self.targets[self.current])
    }

    /// How many there are.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.targets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(port: u16) -> Target {
        let tls = crate::TlsSettings::default()
            .client_config()
            .expect("default trust");
        Target::parse(&format!("ws://127.0.0.1:{port}/ws"), tls).expect("a usable URL")
    }

    #[test]
    fn redials_go_round_the_list_and_first_dials_stay() {
        let mut endpoints = Endpoints::new(target(1), vec![target(2), target(3)]);
        assert_eq!(endpoints.len(), 3);
        let port = |t: Arc<Target>| t.port;
        assert_eq!(port(endpoints.for_dial(0)), 1, "the first dial: the URL");
        assert_eq!(port(endpoints.for_dial(1)), 2, "a redial: the next one");
        assert_eq!(port(endpoints.for_dial(2)), 3);
        assert_eq!(
            port(endpoints.for_dial(0)),
            3,
            "after a reset: where it was"
        );
        assert_eq!(port(endpoints.for_dial(1)), 1, "round the list");
    }

    #[test]
    fn one_url_is_always_dialed() {
        let mut endpoints = Endpoints::new(target(7), Vec::new());
        for attempt in 0..4 {
            assert_eq!(endpoints.for_dial(attempt).port, 7);
        }
    }
}
