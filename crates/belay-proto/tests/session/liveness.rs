//! An explicit liveness check (`check_liveness`, as after a resume): one
//! ping with a short deadline, answered by any frame, and nothing outside
//! Open.

use belay_proto::heartbeat::LivenessFailure;
use belay_proto::message::ClientMessage;
use belay_proto::{CloseCode, CloseInfo, ConnectionState, DisconnectReason, Event, Input, Instant};

use crate::common::{closes, events, sent, welcome, Driver};

#[test]
fn liveness_check_on_resume_detects_a_dead_server_in_two_seconds_not_fifty() {
    // A server that pings every 25 s: left alone, the client would wait up to
    // 2 × 25 s after the last frame. After a resume it checks at once.
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.input(Input::TransportOpened(id));
    let mut w = welcome("s-1");
    w.ping_interval_ms = Some(25_000);
    d.welcome(id, w);
    assert_eq!(d.session.poll_timeout(), Some(Instant::from_millis(37_500)));

    // The page comes back at 5 s and checks: one ping, a 2 s deadline.
    let out = d.at(5_000).check();
    assert_eq!(sent(&out), vec![ClientMessage::Ping]);
    assert_eq!(d.session.poll_timeout(), Some(Instant::from_millis(7_000)));
    // Checking again neither sends a second ping nor extends the deadline.
    assert!(d.at(6_000).check().is_empty());
    assert_eq!(d.session.poll_timeout(), Some(Instant::from_millis(7_000)));
    assert_eq!(d.session.stats().probes_sent, 1);

    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(7_000));
    assert_eq!(closes(&out), vec![(id, CloseCode::HEARTBEAT_TIMEOUT)]);
    assert!(events(&out).iter().any(|e| matches!(
        e,
        Event::Disconnected {
            reason: DisconnectReason::HeartbeatTimeout {
                cause: LivenessFailure::ProbeUnanswered
            },
            ..
        }
    )));
    assert_eq!(d.session.state(), ConnectionState::Waiting);
}

#[test]
fn liveness_check_answered_by_any_frame_keeps_the_connection() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.at(1_000).check();
    // Not a pong: any frame is proof of life.
    d.at(1_500)
        .input(Input::Frame(id, r#"{"type":"hologram"}"#.into()));
    assert_eq!(d.session.poll_timeout(), Some(Instant::from_millis(11_500)));
    assert!(d.at(3_000).tick().is_empty());
    assert!(d.session.is_ready());
    // Outside Open a check does nothing.
    d.at(4_000).input(Input::TransportClosed(
        id,
        CloseInfo::new(CloseCode::ABNORMAL, ""),
    ));
    assert!(d.check().is_empty());
    assert_eq!(d.session.state(), ConnectionState::Waiting);
}
