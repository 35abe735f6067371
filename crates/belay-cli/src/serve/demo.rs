//! What `belay serve --demo` changes so the demo shows what Belay is about
//! on one machine, unless the flag was given: the server pings every
//! second and reaps a silent client after one more (so the page's Freeze is
//! noticed in about 2 s at both ends), and, unless a drain schedule is
//! given, a drain has no balancer to wait for, so Ctrl-C drains in under a
//! second.

use std::time::Duration;

use belay_server::ServerConfig;

/// The demo's ping interval and pong timeout.
const PING: Duration = Duration::from_secs(1);
/// How long the demo's drain spreads the reconnects over.
const SPREAD: Duration = Duration::from_millis(300);
/// The demo's drain: advice, then the close 1012 this much later.
const LINGER: Duration = Duration::from_millis(100);
/// Whatever is left is closed 1001 by then.
const DEADLINE: Duration = Duration::from_millis(900);

/// Apply the demo's settings to `config`, except those named in
/// `explicit` (the flags given on the command line).
pub(crate) fn liveness_and_drain(config: &mut ServerConfig, explicit: &[String]) {
    let given = |flag: &str| explicit.iter().any(|e| e == flag);
    if !given("ping_interval_ms") {
        config.limits.set_ping_interval(PING);
    }
    if !given("pong_timeout_ms") {
        config.limits.set_pong_timeout(PING);
    }
    // The drain as a whole: a schedule given on the command line keeps the
    // production linger and deadline that fit it.
    if !given("lb_delay_secs") && !given("drain_spread_ms") {
        config
            .drain
            .set_lb_delay(Duration::ZERO)
            .set_reconnect_spread(SPREAD)
            .set_linger(LINGER)
            .set_deadline(DEADLINE);
    }
}
