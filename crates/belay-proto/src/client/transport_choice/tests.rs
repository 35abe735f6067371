use std::time::Duration;

use super::*;

const EVERY: Duration = Duration::from_secs(60);

fn at(secs: u64) -> Instant {
    Instant::from_micros(secs * 1_000_000)
}

fn blocked() -> DialOutcome {
    DialOutcome::Failed(Failure::rejected(400))
}

fn choice() -> TransportChoice {
    TransportChoice::new(FallbackConfig::default())
}

#[test]
fn a_websocket_that_opens_keeps_every_dial_on_websocket() {
    let mut c = choice();
    assert_eq!(c.next(), TransportKind::WebSocket);
    c.handle_dial(at(0), TransportKind::WebSocket, &DialOutcome::Opened);
    assert_eq!(c.next(), TransportKind::WebSocket);
    assert!(!c.on_fallback());
    assert_eq!(c.poll_timeout(), None);
}

#[test]
fn a_blocked_upgrade_sends_the_next_dial_to_the_fallback_and_it_stays_there() {
    let mut c = choice();
    c.handle_dial(at(0), TransportKind::WebSocket, &blocked());
    assert_eq!(c.next(), TransportKind::Sse);
    c.handle_dial(at(1), TransportKind::Sse, &DialOutcome::Opened);
    assert!(c.on_fallback());
    // A lost stream redials the fallback.
    assert_eq!(c.next(), TransportKind::Sse);
    assert_eq!(c.poll_timeout(), Some(at(61)));
}

#[test]
fn a_reset_connection_counts_as_a_blocked_upgrade() {
    let mut c = choice();
    let reset = DialOutcome::Failed(Failure::network("connection reset by peer"));
    c.handle_dial(at(0), TransportKind::WebSocket, &reset);
    assert_eq!(c.next(), TransportKind::Sse);
}

#[test]
fn the_servers_own_refusals_do_not_fall_back() {
    for status in [429, 503, 401] {
        let mut c = choice();
        let refused = DialOutcome::Failed(Failure::rejected(status));
        c.handle_dial(at(0), TransportKind::WebSocket, &refused);
        assert_eq!(c.next(), TransportKind::WebSocket, "{status}");
    }
    let mut c = choice();
    let offline = DialOutcome::Failed(Failure::unreachable("no route"));
    c.handle_dial(at(0), TransportKind::WebSocket, &offline);
    assert_eq!(c.next(), TransportKind::WebSocket);
}

#[test]
fn with_a_higher_threshold_it_takes_that_many_failures_in_a_row() {
    let mut config = FallbackConfig::default();
    config.set_after_failures(3);
    let mut c = TransportChoice::new(config);
    for _ in 0..2 {
        c.handle_dial(at(0), TransportKind::WebSocket, &blocked());
        assert_eq!(c.next(), TransportKind::WebSocket);
    }
    c.handle_dial(at(0), TransportKind::WebSocket, &blocked());
    assert_eq!(c.next(), TransportKind::Sse);
}

#[test]
fn when_both_fail_the_dials_alternate() {
    let mut c = choice();
    c.handle_dial(at(0), TransportKind::WebSocket, &blocked());
    let down = DialOutcome::Failed(Failure::network("refused"));
    c.handle_dial(at(1), TransportKind::Sse, &down);
    assert_eq!(c.next(), TransportKind::WebSocket);
    c.handle_dial(at(2), TransportKind::WebSocket, &down);
    assert_eq!(c.next(), TransportKind::Sse);
}

#[test]
fn on_the_fallback_a_probe_is_due_every_interval_and_one_at_a_time() {
    let mut c = choice();
    c.handle_dial(at(0), TransportKind::WebSocket, &blocked());
    c.handle_dial(at(0), TransportKind::Sse, &DialOutcome::Opened);
    assert!(!c.poll_probe(at(59)));
    assert!(c.poll_probe(at(60)));
    assert!(!c.poll_probe(at(61)), "one probe at a time");
    assert_eq!(c.poll_timeout(), None);
    c.handle_probe(at(62), false);
    assert_eq!(c.poll_timeout(), Some(at(62) + EVERY));
    assert_eq!(c.poll_switch(), None);
}

#[test]
fn a_probe_that_opens_hands_the_switch_and_its_bound_over_once() {
    let mut c = choice();
    c.handle_dial(at(0), TransportKind::WebSocket, &blocked());
    c.handle_dial(at(0), TransportKind::Sse, &DialOutcome::Opened);
    assert!(c.poll_probe(at(60)));
    c.handle_probe(at(60), true);
    assert!(c.is_switching());
    assert_eq!(c.next(), TransportKind::WebSocket);
    assert_eq!(c.poll_switch(), Some(at(90)), "switch_within: 30 s");
    assert_eq!(c.poll_switch(), None, "once");
    assert_eq!(c.poll_timeout(), None, "no probe while switching");
    c.handle_dial(at(61), TransportKind::WebSocket, &DialOutcome::Opened);
    assert!(!c.on_fallback());
    assert!(!c.is_switching());
    assert_eq!(c.poll_timeout(), None);
}

#[test]
fn a_stream_that_opens_while_switching_keeps_the_next_dial_on_websocket() {
    let mut c = choice();
    c.handle_dial(at(0), TransportKind::WebSocket, &blocked());
    c.handle_dial(at(0), TransportKind::Sse, &DialOutcome::Opened);
    assert!(c.poll_probe(at(60)));
    c.handle_probe(at(60), true);
    // The stream dropped and was redialed before the switch: still SSE.
    c.handle_dial(at(61), TransportKind::Sse, &DialOutcome::Opened);
    assert_eq!(c.next(), TransportKind::WebSocket);
}

#[test]
fn a_switch_whose_websocket_fails_goes_back_to_the_fallback() {
    let mut c = choice();
    c.handle_dial(at(0), TransportKind::WebSocket, &blocked());
    c.handle_dial(at(0), TransportKind::Sse, &DialOutcome::Opened);
    assert!(c.poll_probe(at(60)));
    c.handle_probe(at(60), true);
    assert!(c.poll_switch().is_some());
    c.handle_dial(at(61), TransportKind::WebSocket, &blocked());
    assert!(!c.is_switching());
    assert_eq!(c.next(), TransportKind::Sse);
    c.handle_dial(at(62), TransportKind::Sse, &DialOutcome::Opened);
    assert!(c.on_fallback());
    assert_eq!(c.poll_timeout(), Some(at(122)));
}

/// A dial on `kind` failed with `failure`: what the session is told.
fn dial_failed(
    c: &mut TransportChoice,
    secs: u64,
    kind: TransportKind,
    failure: &Failure,
) -> Failure {
    c.handle_dial(at(secs), kind, &DialOutcome::Failed(failure.clone()));
    c.failure_for_session(kind, failure.clone())
}

fn is_network(failure: &Failure) -> bool {
    matches!(failure, Failure::Network { .. })
}

#[test]
fn a_403_to_the_upgrade_is_the_paths_once_the_fallback_opens() {
    let mut c = choice();
    let told = dial_failed(&mut c, 0, TransportKind::WebSocket, &Failure::rejected(403));
    assert!(is_network(&told), "{told:?}");
    assert_eq!(c.next(), TransportKind::Sse);
    c.handle_dial(at(1), TransportKind::Sse, &DialOutcome::Opened);
    assert!(c.on_fallback());
}

#[test]
fn a_403_stands_when_the_fallbacks_dial_fails_too() {
    for sse_failure in [
        Failure::rejected(403),
        Failure::network("connection refused"),
    ] {
        let mut c = choice();
        let _ = dial_failed(&mut c, 0, TransportKind::WebSocket, &Failure::rejected(403));
        let told = dial_failed(&mut c, 1, TransportKind::Sse, &sse_failure);
        assert_eq!(told, Failure::rejected(403), "after {sse_failure:?}");
    }
}

#[test]
fn a_busy_server_behind_the_403_is_retried() {
    let mut c = choice();
    let _ = dial_failed(&mut c, 0, TransportKind::WebSocket, &Failure::rejected(403));
    let busy = Failure::rejected(503);
    assert_eq!(dial_failed(&mut c, 1, TransportKind::Sse, &busy), busy);
}

#[test]
fn on_the_fallback_a_403_to_a_websocket_never_halts() {
    let mut c = choice();
    let _ = dial_failed(&mut c, 0, TransportKind::WebSocket, &Failure::rejected(403));
    c.handle_dial(at(1), TransportKind::Sse, &DialOutcome::Opened);
    // A restart: the stream's dial fails, the WebSocket is refused 403, again.
    let down = Failure::network("refused");
    for secs in [2, 4] {
        assert_eq!(dial_failed(&mut c, secs, TransportKind::Sse, &down), down);
        let told = dial_failed(
            &mut c,
            secs + 1,
            TransportKind::WebSocket,
            &Failure::rejected(403),
        );
        assert!(is_network(&told), "{told:?}");
    }
}

#[test]
fn other_failures_are_told_as_they_are() {
    let mut c = choice();
    let busy = Failure::rejected(503);
    assert_eq!(
        dial_failed(&mut c, 0, TransportKind::WebSocket, &busy),
        busy
    );
    let down = Failure::network("refused");
    assert_eq!(dial_failed(&mut c, 1, TransportKind::Sse, &down), down);
}
