//! Injected CPU costs, for benchmarks that need a server whose handshakes
//! are not free (`belay serve --handshake-cost-us N --session-cost-us M`).
//!
//! A real server pays for every new connection before it can decide
//! anything about it: a TLS handshake (about a millisecond of CPU for an
//! RSA-2048 key), reading the request, authentication. A refused attempt
//! pays it too. Belay's own upgrade path is cheap, so a benchmark of a
//! reconnecting fleet on loopback would show no cost for refusals at all.
//! [`InjectedCost`] puts one back, from outside the server, as a router
//! layer (the extension point the demo's restart fault uses too):
//!
//! ```text
//!   TCP accept ─▶ HTTP request /ws or POST /sse ─▶ burn handshake cost ─▶ upgrade + admission
//!                                                                          │ admitted (101 / 2xx)
//!                                                                          ▼
//!                                                                   burn session cost
//! ```
//!
//! The cost is CPU, not waiting: the handling task spins on its worker
//! thread until that thread has used the given CPU time (the thread's own
//! CPU clock, so time the thread spends preempted does not count), which
//! holds the worker exactly as a TLS handshake computed on it would. Other
//! routes (`/metrics`, `/healthz`, …) pay nothing. Connections refused at
//! the TCP accept by the per-source or pending-upgrade limits never reach
//! the router and pay nothing either.
//!
//! ```
//! use std::time::Duration;
//! use belay_demo::cost::InjectedCost;
//!
//! let server = belay_server::Server::builder().build();
//! let cost = InjectedCost::new(Duration::from_micros(500), Duration::ZERO);
//! let router = cost.layer(server.router());
//! # drop(router);
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use rustix::time::{clock_gettime, ClockId};

/// Where [`InjectedCost::layer`] serves its counters (Prometheus text).
pub const COST_METRICS_PATH: &str = "/metrics/injected-cost";

/// The CPU a server burns per session-opening request and per admitted
/// session, and what it has burnt so far.
#[derive(Debug, Clone, Default)]
pub struct InjectedCost {
    handshake: Duration,
    session: Duration,
    counters: Arc<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    handshakes: AtomicU64,
    sessions: AtomicU64,
    burnt_us: AtomicU64,
}

impl InjectedCost {
    /// Burn `handshake` of CPU for every WebSocket upgrade request and
    /// every `POST /sse`, before the server looks at it, and `session` more
    /// for each one the server admits.
    pub fn new(handshake: Duration, session: Duration) -> InjectedCost {
        InjectedCost {
            handshake,
            session,
            counters: Arc::default(),
        }
    }

    /// Whether there is nothing to burn.
    pub fn is_zero(&self) -> bool {
        self.handshake.is_zero() && self.session.is_zero()
    }

    /// Session-opening requests that paid the handshake cost so far.
    pub fn handshakes(&self) -> u64 {
        self.counters.handshakes.load(Ordering::Relaxed)
    }

    /// Admitted sessions that paid the session cost so far.
    pub fn sessions(&self) -> u64 {
        self.counters.sessions.load(Ordering::Relaxed)
    }

    /// `router` with the costs in front of it, plus `GET` [`COST_METRICS_PATH`]
    /// (the counters above and the CPU burnt, as Prometheus counters).
    /// Apply it last, so that it covers every route. With nothing to burn,
    /// `router` is returned as it is.
    pub fn layer(&self, router: Router) -> Router {
        if self.is_zero() {
            return router;
        }
        let metrics = Router::new()
            .route(COST_METRICS_PATH, get(render))
            .with_state(self.clone());
        router
            .layer(middleware::from_fn_with_state(self.clone(), charge))
            .merge(metrics)
    }

    fn render(&self) -> String {
        let c = &self.counters;
        let lines = [
            (
                "belay_injected_handshakes_total",
                "Session-opening requests that paid the injected handshake cost.",
                c.handshakes.load(Ordering::Relaxed),
            ),
            (
                "belay_injected_sessions_total",
                "Admitted sessions that paid the injected session cost.",
                c.sessions.load(Ordering::Relaxed),
            ),
            (
                "belay_injected_cpu_microseconds_total",
                "CPU time burnt by injected costs.",
                c.burnt_us.load(Ordering::Relaxed),
            ),
        ];
        lines
            .iter()
            .map(|(name, help, value)| {
                format!("# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n")
            })
            .collect()
    }
}

async fn render(State(cost): State<InjectedCost>) -> impl IntoResponse {
    (
        [("content-type", "text/plain; version=0.0.4")],
        cost.render(),
    )
}

/// Whether `request` asks for a new session: a WebSocket upgrade on `/ws`
/// or a fallback stream (`POST /sse`).
fn opens_session(request: &Request) -> bool {
    match request.uri().path() {
        "/ws" => true,
        "/sse" => request.method() == Method::POST,
        _ => false,
    }
}

async fn charge(State(cost): State<InjectedCost>, request: Request, next: Next) -> Response {
    if !opens_session(&request) {
        return next.run(request).await;
    }
    let counters = &cost.counters;
    counters.handshakes.fetch_add(1, Ordering::Relaxed);
    burn(cost.handshake, counters);
    let response = next.run(request).await;
    let status = response.status();
    if status == StatusCode::SWITCHING_PROTOCOLS || status.is_success() {
        counters.sessions.fetch_add(1, Ordering::Relaxed);
        burn(cost.session, counters);
    }
    response
}

fn burn(cost: Duration, counters: &Counters) {
    if cost.is_zero() {
        return;
    }
    let spent = burn_cpu(cost);
    let micros = u64::try_from(spent.as_micros()).unwrap_or(u64::MAX);
    counters.burnt_us.fetch_add(micros, Ordering::Relaxed);
}

/// Spin on this thread until it has used `cost` of CPU time (its own CPU
/// clock, `CLOCK_THREAD_CPUTIME_ID`); returns the CPU time it used.
pub fn burn_cpu(cost: Duration) -> Duration {
    let start = thread_cpu();
    loop {
        let spent = thread_cpu().saturating_sub(start);
        if spent >= cost {
            return spent;
        }
        std::hint::spin_loop();
    }
}

fn thread_cpu() -> Duration {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burning_uses_at_least_the_cost_in_cpu_time() {
        let before = thread_cpu();
        let spent = burn_cpu(Duration::from_millis(3));
        let used = thread_cpu() - before;
        assert!(spent >= Duration::from_millis(3), "{spent:?}");
        assert!(used >= spent, "{used:?} < {spent:?}");
    }

    #[test]
    fn only_session_opening_requests_pay() {
        let request = |method: Method, path: &str| {
            Request::builder()
                .method(method)
                .uri(path)
                .body(axum::body::Body::empty())
                .unwrap()
        };
        assert!(opens_session(&request(Method::GET, "/ws")));
        assert!(opens_session(&request(Method::POST, "/sse")));
        assert!(!opens_session(&request(Method::POST, "/sse/send")));
        assert!(!opens_session(&request(Method::GET, "/metrics")));
        assert!(!opens_session(&request(Method::GET, COST_METRICS_PATH)));
    }

    #[test]
    fn the_counters_render_as_prometheus_text() {
        let cost = InjectedCost::new(Duration::from_micros(10), Duration::ZERO);
        burn(cost.handshake, &cost.counters);
        cost.counters.handshakes.fetch_add(1, Ordering::Relaxed);
        let text = cost.render();
        assert!(
            text.contains("belay_injected_handshakes_total 1\n"),
            "{text}"
        );
        assert!(text.contains("belay_injected_sessions_total 0\n"), "{text}");
        assert!(!text.contains("belay_injected_cpu_microseconds_total 0\n"));
    }
}
