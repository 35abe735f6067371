//! Tests of `limits`.

use super::*;
use crate::heartbeat::HeartbeatAction;
use crate::heartbeat::LivenessFailure;
use crate::server::RateDecision;

fn ms(v: u64) -> Instant {
    Instant::from_millis(v)
}

#[test]
fn defaults_match_the_documented_values() {
    let limits = Limits::default();
    assert_eq!(limits.max_frame_len(), 65_536);
    assert_eq!(limits.messages_per_sec(), 100.0);
    assert_eq!(limits.burst(), 200);
    assert_eq!(limits.handshake_timeout(), Duration::from_secs(10));
    assert_eq!(limits.max_connections_per_ip(), 1_000);
    assert_eq!(limits.outbound_queue(), 1_024);
    assert_eq!(limits.ping_interval(), Duration::from_secs(8));
    assert_eq!(limits.pong_timeout(), Duration::from_secs(8));
    assert!(limits.allowed_origins().is_empty());
    assert_eq!(limits.max_subscriptions(), 1_000);
    assert_eq!(limits.max_channel_len(), 255);
    assert_eq!(limits.outbound_bytes(), 1 << 20);
    assert_eq!(limits.max_in_flight(), 64);
    assert_eq!(limits.liveness_per_sec(), 10.0);
    assert_eq!(limits.liveness_burst(), 50);
    assert!(limits.check_subscriptions(999).is_ok());
    assert_eq!(
        limits.check_subscriptions(1_000),
        Err(Violation::TooManySubscriptions)
    );
    assert_eq!(limits.ping_interval_ms(), 8_000);
}

#[test]
fn the_frame_limit_never_exceeds_the_protocol_maximum() {
    let mut limits = Limits::default();
    limits.set_max_frame_len(usize::MAX);
    assert_eq!(limits.max_frame_len(), MAX_FRAME_LEN);
}

#[test]
fn a_frame_of_exactly_the_limit_is_accepted_and_one_byte_more_is_not() {
    let limits = Limits::default();
    assert_eq!(limits.check_frame_len(65_536), Ok(()));
    assert_eq!(
        limits.check_frame_len(65_537),
        Err(Violation::FrameTooLarge)
    );
}

#[test]
fn any_origin_is_allowed_when_the_list_is_empty() {
    let limits = Limits::default();
    assert_eq!(
        limits.check_origin(Some("https://anything.example")),
        Ok(())
    );
    assert_eq!(limits.check_origin(None), Ok(()));
}

#[test]
fn a_listed_origin_matches_ignoring_ascii_case_and_others_are_refused() {
    let mut limits = Limits::default();
    limits.set_allowed_origins(vec!["https://App.example.com".into()]);
    assert_eq!(limits.check_origin(Some("https://app.EXAMPLE.com")), Ok(()));
    assert_eq!(
        limits.check_origin(Some("https://app.example.com.evil")),
        Err(Violation::BadOrigin)
    );
    assert_eq!(limits.check_origin(Some("null")), Err(Violation::BadOrigin));
}

#[test]
fn a_missing_origin_is_allowed_because_only_browsers_send_one() {
    let mut limits = Limits::default();
    limits.set_allowed_origins(vec!["https://app.example.com".into()]);
    assert_eq!(limits.check_origin(None), Ok(()));
}

#[test]
fn a_leaked_connection_is_reaped_within_ping_interval_plus_pong_timeout() {
    assert_eq!(Limits::default().reap_bound(), Duration::from_secs(16));
}

#[test]
fn a_full_outbound_queue_is_a_slow_consumer() {
    let limits = Limits::default();
    assert_eq!(limits.check_outbound(1_023, 0, 10), Ok(()));
    assert_eq!(
        limits.check_outbound(1_024, 0, 10),
        Err(Violation::SlowConsumer)
    );
}

#[test]
fn the_outbound_queue_is_bounded_in_bytes_but_one_frame_always_fits() {
    let limits = Limits::default();
    assert_eq!(limits.check_outbound(0, 0, 10 << 20), Ok(()));
    assert_eq!(limits.check_outbound(1, 1 << 19, 1 << 19), Ok(()));
    assert_eq!(
        limits.check_outbound(1, 1 << 19, (1 << 19) + 1),
        Err(Violation::SlowConsumer)
    );
}

#[test]
fn in_flight_requests_and_channel_names_are_bounded() {
    let limits = Limits::default();
    assert_eq!(limits.check_in_flight(63), Ok(()));
    assert_eq!(limits.check_in_flight(64), Err(Violation::TooManyInFlight));
    assert!(limits.check_channel(&"c".repeat(255)).is_ok());
    assert!(matches!(
        limits.check_channel(&"c".repeat(256)),
        Err(Violation::InvalidChannel(_))
    ));
}

#[test]
fn the_handshake_deadline_is_the_timeout_after_accepting() {
    let limits = Limits::default();
    assert_eq!(limits.handshake_deadline(ms(5_000)), ms(15_000));
}

#[test]
fn the_rate_limiter_uses_the_rate_and_the_burst() {
    let mut limits = Limits::default();
    limits.set_messages_per_sec(2.0).set_burst(3);
    let mut limiter = limits.rate_limiter(ms(0));
    for _ in 0..3 {
        assert_eq!(limiter.check(ms(0)), RateDecision::Allow);
    }
    assert_eq!(
        limiter.check(ms(0)),
        RateDecision::Refuse {
            retry_after: Duration::from_millis(500)
        }
    );
}

#[test]
fn silly_rates_are_stored_as_zero() {
    let mut limits = Limits::default();
    limits.set_messages_per_sec(f64::NAN);
    assert_eq!(limits.messages_per_sec(), 0.0);
    limits.set_messages_per_sec(-3.0);
    assert_eq!(limits.messages_per_sec(), 0.0);
}

#[test]
fn ping_interval_and_pong_timeout_have_floors() {
    let mut limits = Limits::default();
    limits
        .set_ping_interval(Duration::ZERO)
        .set_pong_timeout(Duration::ZERO);
    assert_eq!(limits.ping_interval(), MIN_PING_INTERVAL);
    assert_eq!(limits.pong_timeout(), MIN_PONG_TIMEOUT);
    assert_eq!(limits.ping_interval_ms(), 1_000);
}

#[test]
fn a_silent_client_is_reaped_ping_interval_plus_pong_timeout_after_its_last_frame() {
    let limits = Limits::default();
    let mut heartbeat = limits.heartbeat(ms(0));
    heartbeat.handle_frame(ms(1_000));
    assert_eq!(heartbeat.poll_timeout(), ms(9_000));
    assert_eq!(
        heartbeat.handle_timeout(ms(9_000)),
        Ok(HeartbeatAction::Probe)
    );
    assert_eq!(
        heartbeat.handle_timeout(ms(16_999)),
        Ok(HeartbeatAction::Wait)
    );
    assert_eq!(
        heartbeat.handle_timeout(ms(17_000)),
        Err(LivenessFailure::ProbeUnanswered)
    );
}

#[test]
fn a_client_answering_pings_is_never_reaped() {
    let limits = Limits::default();
    let mut heartbeat = limits.heartbeat(ms(0));
    // A ping every interval, each answered 50 ms later.
    let every = limits.ping_interval_ms();
    for k in 1..100u64 {
        let pong = ms(k * every + 50);
        assert!(heartbeat.handle_timeout(pong).is_ok());
        heartbeat.handle_frame(pong);
    }
}
