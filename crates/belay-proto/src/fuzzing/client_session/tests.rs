//! The harness itself: the seed encoding inverts `Arbitrary`, and the seeds
//! reach the session's logic. (The checks themselves are tested with the
//! checker, `testing::invariants`.)

use super::*;

fn every_variant() -> Vec<Step> {
    let frames = vec![
        ServerFrame::Welcome {
            ping: PingInterval::Absent,
            pacing: None,
        },
        ServerFrame::Welcome {
            ping: PingInterval::Zero,
            pacing: Some((1, 2)),
        },
        ServerFrame::Welcome {
            ping: PingInterval::Millis(9),
            pacing: None,
        },
        ServerFrame::Welcome {
            ping: PingInterval::Seconds(25),
            pacing: None,
        },
        ServerFrame::Welcome {
            ping: PingInterval::Any(u64::MAX),
            pacing: None,
        },
        ServerFrame::WelcomeProtocol(7),
        ServerFrame::Ping,
        ServerFrame::Pong,
        ServerFrame::Response {
            to: ReqRef::InFlight(3),
            error: true,
        },
        ServerFrame::Response {
            to: ReqRef::Latest,
            error: false,
        },
        ServerFrame::Response {
            to: ReqRef::Any(u64::MAX),
            error: false,
        },
        ServerFrame::Subscribed {
            channel: Chan::Other,
            epoch: Epoch::B,
            offset: 255,
            recovered: true,
        },
        ServerFrame::Resumed(Chan::Feed),
        ServerFrame::Publication {
            channel: Chan::News,
            epoch: Epoch::A,
            offset: 4,
        },
        ServerFrame::NextPublication(Chan::Other),
        ServerFrame::Unsubscribed {
            channel: Chan::News,
            code: 6,
        },
        ServerFrame::Reconnect {
            reason: 1,
            min_delay_ms: 5,
            max_delay_ms: u32::MAX,
        },
        ServerFrame::Error(2),
        ServerFrame::UnknownType,
        ServerFrame::Malformed(11),
        ServerFrame::Garbage(FuzzText("é{".into())),
        ServerFrame::TooLarge,
    ];
    let mut steps: Vec<Step> = frames.iter().cloned().map(Step::Frame).collect();
    steps.extend(
        frames
            .into_iter()
            .map(|f| Step::Stale(Stale::Never, Fact::Frame(f))),
    );
    steps.extend([
        Step::Opened,
        Step::Failed(FuzzFailure::Network),
        Step::Failed(FuzzFailure::Unreachable),
        Step::Failed(FuzzFailure::Rejected(1)),
        Step::Failed(FuzzFailure::RejectedAny(101)),
        Step::Failed(FuzzFailure::InvalidConfig),
        Step::Failed(FuzzFailure::RejectedRetryAfter(0, u32::MAX)),
        Step::Closed(FuzzClose::Abnormal),
        Step::Closed(FuzzClose::Listed(18)),
        Step::Closed(FuzzClose::Any(0)),
        Step::Stale(Stale::Previous, Fact::Opened),
        Step::Stale(Stale::Previous, Fact::Failed(FuzzFailure::Network)),
        Step::Stale(Stale::Never, Fact::Closed(FuzzClose::Abnormal)),
        Step::Network(false),
        Step::Network(true),
        Step::Advance(Advance::Micros(1)),
        Step::Advance(Advance::Millis(2)),
        Step::Advance(Advance::Seconds(3)),
        Step::Advance(Advance::ToDeadline),
        Step::Start,
        Step::Stop,
        Step::Request {
            params: 1,
            timeout_ms: None,
            idem: false,
        },
        Step::Request {
            params: 2,
            timeout_ms: Some(65_535),
            idem: true,
        },
        Step::Subscribe(Chan::News),
        Step::Unsubscribe(Chan::Feed),
        Step::ReconnectNow,
        Step::CheckLiveness,
    ]);
    steps
}

#[test]
fn the_seed_encoding_inverts_arbitrary() {
    let setups = [
        Setup::Default,
        Setup::MaxAttempts(3),
        Setup::ShortTimers,
        Setup::ZeroTimers,
    ];
    for (i, setup) in setups.into_iter().enumerate() {
        let input = SessionInput {
            setup,
            seed: u64::MAX - i as u64,
            steps: every_variant(),
        };
        assert_eq!(decode_session(&encode_session(&input)), Some(input.clone()));
        // And each step alone, so no variant hides behind another.
        for step in input.steps {
            let one = SessionInput {
                setup,
                seed: 0,
                steps: vec![step],
            };
            assert_eq!(decode_session(&encode_session(&one)), Some(one));
        }
    }
    for (name, input) in seeds::seeds() {
        assert_eq!(
            decode_session(&encode_session(&input)),
            Some(input),
            "{name}"
        );
    }
}

#[test]
fn every_variant_runs() {
    for setup in [Setup::Default, Setup::ZeroTimers] {
        run(&SessionInput {
            setup,
            seed: 9,
            steps: every_variant(),
        });
    }
    // Empty and truncated inputs decode to something that runs.
    for len in 0..16 {
        let bytes = encode_session(&seeds::seeds()[1].1);
        client_session(&bytes[..len.min(bytes.len())]);
    }
}

/// The seeds reach what the invariants are about: sessions established,
/// requests settled every way, publications delivered, resumes recovered
/// and refuted.
#[test]
fn the_seeds_reach_the_sessions_logic() {
    let mut total = SessionOutcome::default();
    for (name, input) in seeds::seeds() {
        let outcome = run(&input);
        assert_eq!(outcome.steps, input.steps.len(), "{name}");
        total.transports += outcome.transports;
        total.connected += outcome.connected;
        total.requests += outcome.requests;
        total.answered += outcome.answered;
        total.timed_out += outcome.timed_out;
        total.connection_closed += outcome.connection_closed;
        total.subscribed += outcome.subscribed;
        total.recovered += outcome.recovered;
        total.recovery_failed += outcome.recovery_failed;
        total.publications += outcome.publications;
        total.stopped |= outcome.stopped;
    }
    assert!(total.connected >= 10, "{total:?}");
    assert!(total.answered >= 2, "{total:?}");
    assert!(total.timed_out >= 1, "{total:?}");
    assert!(total.connection_closed >= 1, "{total:?}");
    assert!(total.recovered >= 3, "{total:?}");
    assert!(total.recovery_failed >= 3, "{total:?}");
    assert!(total.publications >= 10, "{total:?}");
    assert!(total.stopped, "{total:?}");
    assert_eq!(
        total.requests,
        total.answered + total.timed_out + total.connection_closed,
        "{total:?}"
    );
}

/// A server that goes from epoch `a` to `b` and back to `a` (both times
/// with `RecoveryFailed`) may deliver `a`'s offsets again: the client cannot
/// tell that `a` is not a new history (a fuzzer input that the first
/// version of the check rejected).
#[test]
fn an_epoch_name_seen_before_starts_a_new_record_after_another_epoch() {
    let steps = vec![
        Step::Start,
        Step::Subscribe(Chan::News),
        Step::Opened,
        Step::Frame(ServerFrame::Welcome {
            ping: PingInterval::Zero,
            pacing: None,
        }),
        Step::Frame(ServerFrame::Resumed(Chan::News)),
        Step::Frame(ServerFrame::NextPublication(Chan::News)),
        Step::Frame(ServerFrame::Publication {
            channel: Chan::News,
            epoch: Epoch::B,
            offset: 1,
        }),
        Step::Frame(ServerFrame::Subscribed {
            channel: Chan::News,
            epoch: Epoch::B,
            offset: 0,
            recovered: false,
        }),
        Step::Frame(ServerFrame::Publication {
            channel: Chan::News,
            epoch: Epoch::A,
            offset: 1,
        }),
        Step::Frame(ServerFrame::Subscribed {
            channel: Chan::News,
            epoch: Epoch::A,
            offset: 0,
            recovered: false,
        }),
        Step::Frame(ServerFrame::NextPublication(Chan::News)),
    ];
    let outcome = run(&SessionInput {
        setup: Setup::Default,
        seed: 0,
        steps,
    });
    assert_eq!(outcome.recovery_failed, 2, "{outcome:?}");
    assert_eq!(outcome.publications, 2, "{outcome:?}");
}
