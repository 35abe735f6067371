//! The heartbeat's tests: the probe policy, the watchdog, and the beat.

use super::*;

const I: Duration = Duration::from_secs(10);
const T: Duration = Duration::from_secs(25);

fn ms(v: u64) -> Instant {
    Instant::from_millis(v)
}

#[test]
fn probe_sent_at_20s_closes_at_exactly_45s_and_not_before() {
    let received = ms(1);
    assert_eq!(
        decide(received, None, ms(10_000), I, T),
        HeartbeatAction::Wait
    );
    assert_eq!(
        decide(received, None, ms(20_000), I, T),
        HeartbeatAction::Probe
    );
    let probe = Some(ms(20_000));
    for now in [30_000, 40_000, 44_999] {
        assert_eq!(
            decide(received, probe, ms(now), I, T),
            HeartbeatAction::Wait
        );
    }
    let just_before = ms(45_000) - Duration::from_micros(1);
    assert_eq!(
        decide(received, probe, just_before, I, T),
        HeartbeatAction::Wait
    );
    assert_eq!(
        decide(received, probe, ms(45_000), I, T),
        HeartbeatAction::Close
    );
}

#[test]
fn quiet_for_exactly_the_interval_probes() {
    assert_eq!(
        decide(ms(0), None, ms(10_000), I, T),
        HeartbeatAction::Probe
    );
    assert_eq!(decide(ms(0), None, ms(9_999), I, T), HeartbeatAction::Wait);
}

#[test]
fn frames_faster_than_the_interval_produce_zero_probes() {
    let mut hb = Heartbeat::new(ms(0), I, T);
    let mut now = 0;
    while now < 600_000 {
        now += 9_000;
        assert_eq!(hb.handle_timeout(ms(now)), Ok(HeartbeatAction::Wait));
        hb.handle_frame(ms(now));
    }
    assert_eq!(hb.probes_sent(), 0);
}

#[test]
fn late_pong_after_the_deadline_but_before_the_next_tick_saves_the_connection() {
    let received = ms(1);
    let probe = Some(ms(20_000));
    // The pong arrives at 46 s, after the 45 s deadline; the next tick is at 50 s.
    let received_after_pong = ms(46_000);
    let pending_after_pong = None;
    assert_eq!(
        decide(received, probe, ms(45_000), I, T),
        HeartbeatAction::Close
    );
    assert_eq!(
        decide(received_after_pong, pending_after_pong, ms(50_000), I, T),
        HeartbeatAction::Wait
    );

    let mut hb = Heartbeat::new(ms(0), I, T);
    assert_eq!(hb.handle_timeout(ms(20_000)), Ok(HeartbeatAction::Probe));
    hb.handle_frame(ms(46_000));
    assert_eq!(hb.handle_timeout(ms(50_000)), Ok(HeartbeatAction::Wait));
    assert_eq!(hb.pending_probe_at(), None);
}

#[test]
fn tick_after_a_long_suspend_closes_at_once() {
    let mut hb = Heartbeat::new(ms(0), I, T);
    assert_eq!(hb.handle_timeout(ms(10_000)), Ok(HeartbeatAction::Probe));
    // The device slept for an hour; the first tick after resume finds the old probe.
    assert_eq!(
        hb.handle_timeout(ms(3_610_000)),
        Err(LivenessFailure::ProbeUnanswered)
    );
}

#[test]
fn later_ticks_never_extend_a_pending_probe_or_send_a_second() {
    let mut hb = Heartbeat::new(ms(0), I, T);
    assert_eq!(hb.handle_timeout(ms(10_000)), Ok(HeartbeatAction::Probe));
    for now in [20_000, 30_000, 34_999] {
        assert_eq!(hb.handle_timeout(ms(now)), Ok(HeartbeatAction::Wait));
    }
    assert_eq!(hb.probes_sent(), 1);
    assert_eq!(hb.poll_timeout(), ms(35_000));
    assert_eq!(
        hb.handle_timeout(ms(35_000)),
        Err(LivenessFailure::ProbeUnanswered)
    );
}

#[test]
fn exact_deadline_evaluation_closes_within_interval_plus_timeout() {
    let mut hb = Heartbeat::new(ms(0), I, T);
    hb.handle_frame(ms(1));
    let mut now = hb.poll_timeout();
    assert_eq!(now, ms(10_001));
    assert_eq!(hb.handle_timeout(now), Ok(HeartbeatAction::Probe));
    now = hb.poll_timeout();
    assert_eq!(now, ms(35_001));
    assert_eq!(
        hb.handle_timeout(now),
        Err(LivenessFailure::ProbeUnanswered)
    );
}

#[test]
fn server_ping_watchdog_closes_after_two_intervals_of_silence() {
    let mut hb = Heartbeat::new(ms(0), Duration::from_secs(60), Duration::from_secs(60));
    hb.set_server_ping_interval(Some(Duration::from_secs(25)));
    hb.handle_frame(ms(25_000));
    assert_eq!(hb.poll_timeout(), ms(75_000));
    assert_eq!(hb.handle_timeout(ms(74_999)), Ok(HeartbeatAction::Wait));
    assert_eq!(
        hb.handle_timeout(ms(75_000)),
        Err(LivenessFailure::ServerPingsMissing)
    );
}

#[test]
fn a_frame_from_the_past_never_moves_the_quiet_timer_backwards() {
    let mut hb = Heartbeat::new(ms(5_000), I, T);
    hb.handle_frame(ms(1_000));
    assert_eq!(hb.last_received_at(), ms(5_000));
}

/// A heartbeat (10 s interval, 5 s timeout) started by a `welcome` at
/// 1 s whose pacing puts this client at place 0.5 of a plan that began
/// at -2 s: beats at 3 s + k × 10 s.
fn on_a_beat_at_3s() -> Heartbeat {
    use crate::message::Pacing;
    let pacing = Pacing {
        period_ms: 20_000,
        phase_ms: 7_000,
        origin_ms: Some(3_000),
    };
    let mut hb = Heartbeat::new(ms(1_000), I, Duration::from_secs(5));
    hb.set_beat(Beat::from_pacing(&pacing, I, ms(1_000)));
    hb
}

#[test]
fn an_idle_connection_probes_on_the_beat_and_a_busy_one_after_the_interval() {
    let mut hb = on_a_beat_at_3s();
    assert_eq!(hb.poll_timeout(), ms(3_000));
    assert_eq!(hb.handle_timeout(ms(3_000)), Ok(HeartbeatAction::Probe));
    hb.handle_pong(ms(3_200));
    assert_eq!(hb.poll_timeout(), ms(13_000));
    hb.handle_frame(ms(4_000));
    assert_eq!(hb.poll_timeout(), ms(14_000));
}

#[test]
fn only_the_servers_beat_ping_makes_a_loss_noticed_on_the_beat() {
    // Our own probe on the beat, unanswered: a plain silent loss.
    let mut hb = on_a_beat_at_3s();
    assert_eq!(hb.handle_timeout(ms(3_000)), Ok(HeartbeatAction::Probe));
    assert_eq!(
        hb.handle_timeout(ms(8_000)),
        Err(LivenessFailure::ProbeUnanswered)
    );
    assert_eq!(hb.noticed_on_beat(ms(8_000)), None);

    // The server pings on its beat every 20 s: its ping the last frame.
    let mut pinged = Heartbeat::new(ms(1_000), Duration::from_secs(30), T);
    pinged.set_server_ping_interval(Some(Duration::from_secs(20)));
    pinged.set_server_beat(true);
    pinged.handle_ping(ms(8_000));
    assert_eq!(pinged.noticed_on_beat(ms(47_999)), None);
    assert_eq!(
        pinged.handle_timeout(ms(48_000)),
        Err(LivenessFailure::ServerPingsMissing)
    );
    assert_eq!(
        pinged.noticed_on_beat(ms(48_000)),
        Some(Duration::from_secs(20))
    );
}

#[test]
fn the_heartbeat_is_no_larger_than_before_the_beat() {
    assert!(std::mem::size_of::<Heartbeat>() <= 80);
}

#[test]
fn whenever_the_death_falls_an_idle_client_on_its_beat_notices_before_its_slot() {
    use crate::backoff::PacingSlots;
    let timeout = Duration::from_secs(5);
    let margin = Duration::from_millis(250);
    let anchor = ms(50_000);
    let cases = [
        (20_000, 10),
        (21_053, 15),
        (21_053, 7),
        (60_000, 25),
        (20_000, 20),
        (21_053, 25),
        (20_000, 45),
    ];
    for (period_ms, interval_s) in cases {
        let interval = Duration::from_secs(interval_s);
        let phase = Duration::from_millis(7_000);
        let slots = PacingSlots::new(Duration::from_millis(period_ms), phase, anchor);
        let beat = Beat::for_probes(&slots, interval, timeout);
        let mut death = 60_000_u64;
        while death < 60_000 + 3 * period_ms {
            // Idle: its last probe before the death was answered at once.
            let mut hb = Heartbeat::new(anchor, interval, timeout);
            hb.set_beat(beat);
            hb.handle_pong(beat.unwrap().last_at_or_before(ms(death)));
            let noticed = hb.probe_due_at().saturating_add(timeout);
            let next = slots.next_slot_after(noticed);
            let what = format!("P {period_ms}, I {interval_s} s, death {death}: {noticed:?}");
            if interval_s * 1_000 < period_ms {
                // Before its first slot after the death, except those
                // under the margin after the earliest possible notice,
                // which no client can reach.
                assert_eq!(
                    next,
                    slots.next_slot_after(ms(death) + timeout + margin),
                    "{what}"
                );
            } else {
                // On a beat before one of its slots.
                assert_eq!(next, noticed + margin, "{what}");
            }
            death += 137;
        }
    }
}
