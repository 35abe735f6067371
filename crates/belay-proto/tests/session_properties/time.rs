//! Time: `handle_timeout` leaves nothing due in the past, a busy loop at one
//! instant ends, timeout-to-timeout jumps make progress and end quiet; and
//! the reproducer of the zero-subscribe-timeout livelock.

use std::time::Duration;

use belay_proto::message::{ServerMessage, Welcome, PROTOCOL_VERSION};
use belay_proto::{Config, Input, Instant, Output, Session, TransportId};
use proptest::prelude::*;

use crate::support::{check, ops, run, setup, Checks, Op};

/// Jumps to `poll_timeout` in the final phase of the time property.
const MAX_JUMPS: usize = 10_000;

/// Jumps without `max_attempts`, where dialing legitimately never ends.
const UNBOUNDED_JUMPS: usize = 300;

/// `handle_timeout(now)` leaves nothing due before `now`, a busy loop at one
/// instant ends quickly, and timeout-to-timeout jumps keep moving: with
/// `max_attempts` they end in a quiet session.
#[test]
fn time_never_goes_backwards_in_timeouts() {
    check((setup(), ops()), |(setup, ops)| {
        let checks = Checks {
            time: true,
            ..Checks::default()
        };
        let mut driver = run(&setup, &ops, checks)?;
        // An unconfirmed subscribe legitimately repeats every
        // `subscribe_timeout` (1 ms here at worst) for as long as the
        // connection lives; drop the channels so the count of jumps measures
        // the reconnect machinery.
        for channel in 0..3 {
            driver.apply(&Op::Unsubscribe(channel))?;
        }
        if setup.max_attempts.is_some() {
            prop_assert!(
                driver.jump(MAX_JUMPS)?,
                "not quiet after {} jumps",
                MAX_JUMPS
            );
        } else {
            driver.jump(UNBOUNDED_JUMPS)?;
            driver.stop()?;
            prop_assert!(driver.jump(1)?, "poll_timeout after stop");
        }
        Ok(())
    });
}

/// Reproducer (found by widening the generated timeouts to include zero):
/// with `subscribe_timeout = 0` an unconfirmed subscribe is due again at the
/// very instant it was sent, so `handle_timeout(now)` never catches up with
/// `poll_timeout()` and every call sends another `subscribe`: a driver that
/// runs its timer until nothing is due spins forever and floods the server.
/// The other timeouts at zero do not livelock. The core now raises the
/// confirmation timeout to a floor (`subscriptions::MIN_CONFIRM_TIMEOUT`).
#[test]
fn zero_subscribe_timeout_does_not_livelock_handle_timeout() {
    let mut config = Config::default();
    config.set_subscribe_timeout(Duration::ZERO);
    let now = Instant::from_millis(1_000);
    let mut session = Session::new(config, Instant::ZERO, 0);
    session.subscribe(now, "a").unwrap();
    session.start(now).unwrap();
    let id = TransportId(1);
    session.handle_input(now, Input::TransportOpened(id));
    let welcome = Welcome {
        session: "s-1".into(),
        protocol: PROTOCOL_VERSION,
        ping_interval_ms: None,
        pacing: None,
        expires_in_ms: None,
    };
    session.handle_input(now, Input::Message(id, ServerMessage::Welcome(welcome)));
    while session.poll_output().is_some() {}

    let mut calls = 0;
    let mut subscribes = 0;
    while session.poll_timeout().is_some_and(|due| due <= now) && calls < 100 {
        session.handle_timeout(now);
        calls += 1;
        while let Some(output) = session.poll_output() {
            if let Output::Transmit {
                message: belay_proto::message::ClientMessage::Subscribe(_),
                ..
            } = output
            {
                subscribes += 1;
            }
        }
    }
    assert!(
        calls < 100,
        "after {calls} handle_timeout({now:?}) calls poll_timeout is still {:?}; {subscribes} subscribes sent",
        session.poll_timeout()
    );
}
