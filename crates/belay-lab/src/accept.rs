//! The accept loop: admit each new connection, or turn it away (a reset's
//! refusal window, `refuse`, `accept_rate`); an admitted one may have its
//! first request looked at (`refuse_upgrades`).

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use crate::plan::{chosen, Conn};
use crate::state::{Shared, State};
use crate::toxic::{RefuseWith, ToxicKind};

/// What happens to a new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Admission {
    /// Join it to the upstream; `true`: refuse it if its first request is
    /// an upgrade.
    Admit(bool),
    Refuse(RefuseWith),
    RateLimited,
}

/// Recent admissions per `accept_rate` toxic (by id).
#[derive(Debug, Default)]
struct RateWindows {
    admitted: HashMap<u64, VecDeque<Instant>>,
}

impl RateWindows {
    /// Decide on a connection drawn with `seed`, arriving `now`.
    fn admit(&mut self, state: &State, seed: u64, now: Instant) -> Admission {
        if state.refusing(now) {
            return Admission::Refuse(RefuseWith::Reset);
        }
        self.admitted
            .retain(|id, _| state.toxics.iter().any(|a| a.id == *id));
        let mut limited = Vec::new();
        let mut upgrades = false;
        for active in state.toxics.iter().filter(|a| chosen(seed, a)) {
            match active.toxic.kind {
                ToxicKind::Refuse { with } => return Admission::Refuse(with),
                ToxicKind::RefuseUpgrades => upgrades = true,
                ToxicKind::AcceptRate { max, window_ms } => {
                    let window = self.admitted.entry(active.id).or_default();
                    let horizon = Duration::from_millis(window_ms);
                    while window.front().is_some_and(|t| now - *t >= horizon) {
                        window.pop_front();
                    }
                    if window.len() >= max as usize {
                        return Admission::RateLimited;
                    }
                    limited.push(active.id);
                }
                _ => {}
            }
        }
        for id in limited {
            self.admitted.entry(id).or_default().push_back(now);
        }
        Admission::Admit(upgrades)
    }
}

/// Accept forever, joining admitted clients to `upstream`.
pub(crate) async fn accept_loop(listener: TcpListener, upstream: SocketAddr, shared: Arc<Shared>) {
    let mut windows = RateWindows::default();
    loop {
        let client = match listener.accept().await {
            Ok((client, _)) => client,
            Err(e) => {
                // Out of descriptors and the like: back off briefly, keep serving.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        shared.counters.accepted();
        let state = shared.state.borrow().clone();
        let now = Instant::now();
        let seed = shared.next_seed();
        match windows.admit(&state, seed, now) {
            Admission::Admit(refuse_upgrades) => {
                let conn = Conn { seed, started: now };
                let shared = Arc::clone(&shared);
                tokio::spawn(crate::pair::run(
                    client,
                    upstream,
                    conn,
                    state.resets,
                    refuse_upgrades,
                    shared,
                ));
            }
            Admission::Refuse(RefuseWith::Reset) => {
                shared.counters.refused();
                reset(client);
            }
            Admission::Refuse(RefuseWith::Close) => {
                shared.counters.dropped_new();
                drop(client);
            }
            Admission::RateLimited => {
                shared.counters.rate_limited();
                reset(client);
            }
        }
    }
}

/// Close `stream` with an RST.
fn reset(stream: TcpStream) {
    let _ = stream.set_zero_linger();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toxic::Toxic;

    #[test]
    fn accept_rate_admits_max_per_sliding_window() {
        let mut state = State::default();
        let start = Instant::now();
        let rate = ToxicKind::AcceptRate {
            max: 2,
            window_ms: 1000,
        };
        state.add(Toxic::new(rate), start).unwrap();
        let mut windows = RateWindows::default();
        let at = |ms| start + Duration::from_millis(ms);
        assert_eq!(windows.admit(&state, 1, at(0)), Admission::Admit(false));
        assert_eq!(windows.admit(&state, 2, at(10)), Admission::Admit(false));
        assert_eq!(windows.admit(&state, 3, at(20)), Admission::RateLimited);
        assert_eq!(windows.admit(&state, 4, at(999)), Admission::RateLimited);
        assert_eq!(windows.admit(&state, 5, at(1000)), Admission::Admit(false));
        assert_eq!(windows.admit(&state, 6, at(1005)), Admission::RateLimited);
        assert_eq!(windows.admit(&state, 7, at(1010)), Admission::Admit(false));
    }
}
