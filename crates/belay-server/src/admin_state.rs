//! What the admin routes keep in the server's shared state: the web UI's
//! logins and its live feed (the ring of samples, and the hub once a
//! console connected), whatever the server handle's type.
//!
//! The shared state cannot name the admin module's types directly: the
//! admin routes hold the `Server`, which holds the shared state, so the two
//! modules would import each other. This module imports none of the
//! server's parts; [`crate::admin`] fills it in.

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use belay_proto::Instant;
use serde::Serialize;

use crate::metrics::lock;

/// Logins held at most; a new one beyond pushes out the oldest.
pub const MAX_LOGINS: usize = 32;
/// How long a login holds.
pub const LOGIN_LIFETIME: Duration = Duration::from_secs(12 * 3_600);
/// Samples kept for a console that opens (five minutes at one a second).
pub(crate) const KEPT: usize = 300;

/// The admin routes' state, for a server handle of type `S`.
pub(crate) struct AdminState<S> {
    pub(crate) logins: Logins,
    pub(crate) live: OnceLock<Live<S>>,
}

impl<S> Default for AdminState<S> {
    fn default() -> Self {
        AdminState {
            logins: Logins::default(),
            live: OnceLock::new(),
        }
    }
}

/// The live feed: the hub (built when a console first connects) and the
/// ring of samples.
pub(crate) struct Live<S> {
    pub(crate) hub: OnceLock<S>,
    recent: Mutex<VecDeque<Sample>>,
}

impl<S> Default for Live<S> {
    fn default() -> Self {
        Live {
            hub: OnceLock::new(),
            recent: Mutex::new(VecDeque::with_capacity(KEPT)),
        }
    }
}

impl<S> Live<S> {
    /// Keep `sample`, dropping the oldest beyond [`KEPT`].
    pub(crate) fn keep(&self, sample: Sample) {
        let mut recent = lock(&self.recent);
        if recent.len() == KEPT {
            recent.pop_front();
        }
        recent.push_back(sample);
    }

    /// The samples kept, oldest first.
    pub(crate) fn recent(&self) -> Vec<Sample> {
        lock(&self.recent).iter().copied().collect()
    }
}

/// One second of the node.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Sample {
    /// Milliseconds since the server started.
    pub(crate) at_ms: u64,
    pub(crate) connections: i64,
    pub(crate) deliveries_per_s: u64,
    pub(crate) publications_per_s: u64,
    pub(crate) refusals_per_s: u64,
    /// 1 while serving, 0 once a drain started.
    pub(crate) ready: u8,
}

/// The web UI's logins held now: random ids, each until its expiry.
#[derive(Debug, Default)]
pub(crate) struct Logins {
    held: Mutex<Vec<(String, Instant)>>,
}

impl Logins {
    /// A new login at `now`: its id (256 random bits in hex).
    pub(crate) fn open(&self, now: Instant) -> String {
        let mut bytes = [0u8; 32];
        getrandom::getrandom(&mut bytes).expect("the operating system's random generator");
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut held = lock(&self.held);
        held.retain(|(_, until)| *until > now);
        if held.len() >= MAX_LOGINS {
            held.remove(0);
        }
        held.push((id.clone(), now.saturating_add(LOGIN_LIFETIME)));
        id
    }

    /// Whether `id` names a login that holds at `now`.
    pub(crate) fn holds(&self, id: &str, now: Instant) -> bool {
        lock(&self.held)
            .iter()
            .any(|(held, until)| *until > now && same_secret(held.as_bytes(), id.as_bytes()))
    }

    /// Forget the login `id`.
    pub(crate) fn close(&self, id: &str) {
        lock(&self.held).retain(|(held, _)| held != id);
    }
}

/// Compare secrets in time independent of where they differ.
pub(crate) fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_holds_until_its_lifetime_and_the_oldest_goes_first() {
        let logins = Logins::default();
        let first = logins.open(Instant::ZERO);
        assert!(logins.holds(
            &first,
            Instant::ZERO.saturating_add(Duration::from_secs(60))
        ));
        assert!(!logins.holds(&first, Instant::ZERO.saturating_add(LOGIN_LIFETIME)));
        assert!(!logins.holds("not-a-login", Instant::ZERO));
        let later: Vec<String> = (0..MAX_LOGINS)
            .map(|_| logins.open(Instant::ZERO))
            .collect();
        assert!(!logins.holds(&first, Instant::ZERO));
        assert!(later.iter().all(|id| logins.holds(id, Instant::ZERO)));
        logins.close(&later[0]);
        assert!(!logins.holds(&later[0], Instant::ZERO));
    }

    #[test]
    fn the_ring_keeps_the_last_samples_oldest_first() {
        let live: Live<()> = Live::default();
        for at_ms in 0..(KEPT as u64 + 5) {
            live.keep(Sample {
                at_ms,
                connections: 0,
                deliveries_per_s: 0,
                publications_per_s: 0,
                refusals_per_s: 0,
                ready: 1,
            });
        }
        let recent = live.recent();
        assert_eq!(recent.len(), KEPT);
        assert_eq!(recent[0].at_ms, 5);
        assert_eq!(recent[KEPT - 1].at_ms, KEPT as u64 + 4);
    }
}
