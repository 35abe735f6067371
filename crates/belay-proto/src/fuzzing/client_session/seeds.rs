//! The `client_session` seed inputs: sessions against an honest server and
//! a hostile one, written as [`SessionInput`]s. The seed writer
//! (`fuzz/examples/client_session_seeds.rs`) encodes them with
//! [`encode_session`](super::encode_session) into
//! `fuzz/seeds/client_session/`.

use super::{
    Advance, Chan, Epoch, Fact, FuzzClose, FuzzFailure, FuzzText, PingInterval, ReqRef,
    ServerFrame, SessionInput, Setup, Stale, Step,
};

/// Index of `code` in [`CLOSE_CODES`](super::CLOSE_CODES).
fn close(code: u16) -> Step {
    let index = super::CLOSE_CODES
        .iter()
        .position(|&c| c == code)
        .expect("a listed close code");
    Step::Closed(FuzzClose::Listed(index as u8))
}

fn frame(frame: ServerFrame) -> Step {
    Step::Frame(frame)
}

fn welcome(ping_seconds: u8) -> Step {
    frame(ServerFrame::Welcome {
        ping: PingInterval::Seconds(ping_seconds),
        pacing: None,
    })
}

fn secs(s: u8) -> Step {
    Step::Advance(Advance::Seconds(s))
}

fn millis(ms: u16) -> Step {
    Step::Advance(Advance::Millis(ms))
}

const TO_DEADLINE: Step = Step::Advance(Advance::ToDeadline);

fn request(params: u8, timeout_ms: Option<u16>, idem: bool) -> Step {
    Step::Request {
        params,
        timeout_ms,
        idem,
    }
}

fn answer(to: ReqRef, error: bool) -> Step {
    frame(ServerFrame::Response { to, error })
}

fn resumed(chan: Chan) -> Step {
    frame(ServerFrame::Resumed(chan))
}

fn next(chan: Chan) -> Step {
    frame(ServerFrame::NextPublication(chan))
}

fn subscribed(channel: Chan, epoch: Epoch, offset: u8, recovered: bool) -> Step {
    frame(ServerFrame::Subscribed {
        channel,
        epoch,
        offset,
        recovered,
    })
}

fn publication(channel: Chan, epoch: Epoch, offset: u8) -> Step {
    frame(ServerFrame::Publication {
        channel,
        epoch,
        offset,
    })
}

fn unsubscribed(channel: Chan, code: &str) -> Step {
    let index = super::UNSUB_CODES
        .iter()
        .position(|&c| c == code)
        .expect("a listed unsubscribed code");
    frame(ServerFrame::Unsubscribed {
        channel,
        code: index as u8,
    })
}

fn input(setup: Setup, seed: u64, steps: Vec<Step>) -> SessionInput {
    SessionInput { setup, seed, steps }
}

/// Every seed, with a name for the writer's log.
pub fn seeds() -> Vec<(&'static str, SessionInput)> {
    use Chan::{Feed, News};
    use Epoch::{A, B};
    vec![
        (
            "requests: answered, failed, timed out, closed; liveness check",
            input(
                Setup::Default,
                1,
                vec![
                    Step::Start,
                    Step::Opened,
                    welcome(25),
                    request(1, None, false),
                    answer(ReqRef::InFlight(0), false),
                    request(2, Some(500), true),
                    secs(1),
                    request(3, None, false),
                    answer(ReqRef::Latest, true),
                    answer(ReqRef::Latest, false),
                    answer(ReqRef::Any(99), false),
                    frame(ServerFrame::Ping),
                    frame(ServerFrame::Pong),
                    frame(ServerFrame::UnknownType),
                    request(4, Some(60_000), false),
                    Step::CheckLiveness,
                    secs(3),
                    TO_DEADLINE,
                    Step::Opened,
                    welcome(25),
                    request(5, None, true),
                    Step::Stop,
                    request(6, None, false),
                ],
            ),
        ),
        (
            "subscriptions: delivery, loss, honest resume, gap, unsubscribe",
            input(
                Setup::Default,
                2,
                vec![
                    Step::Start,
                    Step::Subscribe(News),
                    Step::Opened,
                    welcome(25),
                    resumed(News),
                    next(News),
                    next(News),
                    next(News),
                    Step::Subscribe(Feed),
                    resumed(Feed),
                    next(Feed),
                    Step::Closed(FuzzClose::Abnormal),
                    TO_DEADLINE,
                    Step::Opened,
                    welcome(25),
                    resumed(News),
                    resumed(Feed),
                    next(News),
                    next(Feed),
                    publication(News, A, 9),
                    resumed(News),
                    next(News),
                    publication(News, A, 1),
                    Step::Unsubscribe(Feed),
                    next(Feed),
                    Step::Subscribe(Feed),
                    resumed(Feed),
                    next(Feed),
                    Step::Stop,
                ],
            ),
        ),
        (
            "a lying server: resumes claimed recovered at a higher offset, in another epoch, at a lower offset",
            input(
                Setup::Default,
                3,
                vec![
                    Step::Start,
                    Step::Subscribe(News),
                    Step::Opened,
                    welcome(0),
                    resumed(News),
                    next(News),
                    next(News),
                    close(1012),
                    TO_DEADLINE,
                    Step::Opened,
                    welcome(0),
                    subscribed(News, A, 5, true),
                    next(News),
                    Step::Closed(FuzzClose::Abnormal),
                    TO_DEADLINE,
                    Step::Opened,
                    welcome(0),
                    subscribed(News, B, 0, true),
                    next(News),
                    Step::Closed(FuzzClose::Abnormal),
                    TO_DEADLINE,
                    Step::Opened,
                    welcome(0),
                    subscribed(News, B, 0, true),
                    publication(News, B, 1),
                    publication(News, B, 2),
                    next(News),
                    publication(News, A, 1),
                    subscribed(News, A, 0, false),
                    next(News),
                ],
            ),
        ),
        (
            "failures: network, unreachable, 503, 503 with Retry-After, 401, wrong protocol, malformed, too large, bad config, 1000, 4001",
            input(
                Setup::MaxAttempts(3),
                4,
                vec![
                    Step::Start,
                    Step::Failed(FuzzFailure::Network),
                    TO_DEADLINE,
                    Step::Failed(FuzzFailure::Unreachable),
                    TO_DEADLINE,
                    Step::Failed(FuzzFailure::Rejected(3)),
                    TO_DEADLINE,
                    Step::Failed(FuzzFailure::RejectedRetryAfter(3, 5_000)),
                    TO_DEADLINE,
                    Step::Failed(FuzzFailure::Rejected(0)),
                    Step::Start,
                    Step::Opened,
                    frame(ServerFrame::WelcomeProtocol(2)),
                    Step::ReconnectNow,
                    Step::Opened,
                    frame(ServerFrame::Malformed(1)),
                    TO_DEADLINE,
                    Step::Opened,
                    frame(ServerFrame::TooLarge),
                    TO_DEADLINE,
                    Step::Failed(FuzzFailure::InvalidConfig),
                    Step::Start,
                    close(1000),
                    Step::Start,
                    Step::Opened,
                    welcome(25),
                    close(4001),
                    Step::ReconnectNow,
                    Step::Failed(FuzzFailure::RejectedAny(418)),
                    TO_DEADLINE,
                    TO_DEADLINE,
                ],
            ),
        ),
        (
            "network off and on, stale transports, server-ping watchdog",
            input(
                Setup::Default,
                5,
                vec![
                    Step::Start,
                    Step::Opened,
                    Step::Network(false),
                    Step::Network(true),
                    TO_DEADLINE,
                    Step::Opened,
                    Step::Stale(Stale::Previous, Fact::Closed(FuzzClose::Abnormal)),
                    Step::Stale(Stale::Never, Fact::Frame(ServerFrame::Ping)),
                    Step::Stale(Stale::Previous, Fact::Opened),
                    welcome(1),
                    Step::Network(false),
                    secs(3),
                    Step::Network(true),
                    TO_DEADLINE,
                    Step::Opened,
                    Step::Stale(
                        Stale::Previous,
                        Fact::Failed(FuzzFailure::Network),
                    ),
                    welcome(25),
                    request(7, None, false),
                    Step::Stale(
                        Stale::Previous,
                        Fact::Frame(ServerFrame::Response {
                            to: ReqRef::InFlight(0),
                            error: false,
                        }),
                    ),
                    Step::Stop,
                    request(8, None, false),
                    Step::Subscribe(Chan::News),
                    Step::Stale(Stale::Previous, Fact::Opened),
                ],
            ),
        ),
        (
            "reconnect advice and pacing, service losing and refusing a channel",
            input(
                Setup::Default,
                6,
                vec![
                    Step::Start,
                    Step::Opened,
                    frame(ServerFrame::Welcome {
                        ping: PingInterval::Seconds(25),
                        pacing: Some((20_000, 7_350)),
                    }),
                    frame(ServerFrame::Reconnect {
                        reason: 0,
                        min_delay_ms: 2_000,
                        max_delay_ms: 12_000,
                    }),
                    close(1012),
                    Step::ReconnectNow,
                    Step::Opened,
                    welcome(25),
                    secs(6),
                    Step::Subscribe(News),
                    unsubscribed(News, "unavailable"),
                    TO_DEADLINE,
                    resumed(News),
                    next(News),
                    unsubscribed(News, "lagged"),
                    TO_DEADLINE,
                    resumed(News),
                    unsubscribed(News, "forbidden"),
                    frame(ServerFrame::Error(1)),
                    close(4029),
                    TO_DEADLINE,
                    Step::Failed(FuzzFailure::Network),
                    TO_DEADLINE,
                    Step::Opened,
                    welcome(25),
                    resumed(News),
                    close(1000),
                    Step::Start,
                    Step::Opened,
                    welcome(25),
                    resumed(News),
                    next(News),
                ],
            ),
        ),
        (
            "zero timers and a server that claims to ping every 2^64 ms",
            input(
                Setup::ZeroTimers,
                7,
                vec![
                    Step::Start,
                    Step::Opened,
                    frame(ServerFrame::Welcome {
                        ping: PingInterval::Any(u64::MAX),
                        pacing: Some((0, u32::MAX)),
                    }),
                    Step::Subscribe(Chan::News),
                    request(9, None, false),
                    millis(250),
                    resumed(Chan::News),
                    next(Chan::News),
                    secs(2),
                    TO_DEADLINE,
                    Step::Opened,
                    welcome(0),
                    Step::CheckLiveness,
                    TO_DEADLINE,
                ],
            ),
        ),
        (
            "short timers: repeated subscribes, probes, garbage",
            input(
                Setup::ShortTimers,
                8,
                vec![
                    Step::Start,
                    Step::Opened,
                    frame(ServerFrame::Welcome {
                        ping: PingInterval::Millis(10),
                        pacing: None,
                    }),
                    Step::Subscribe(Chan::News),
                    Step::Subscribe(Chan::Feed),
                    millis(150),
                    resumed(Chan::News),
                    next(Chan::News),
                    request(10, None, false),
                    Step::Advance(Advance::Micros(500)),
                    frame(ServerFrame::Garbage(FuzzText("{\"type\":\"pong\"}".into()))),
                    secs(3),
                    TO_DEADLINE,
                    Step::Opened,
                    frame(ServerFrame::Garbage(FuzzText("\u{fffd}not json".into()))),
                    TO_DEADLINE,
                ],
            ),
        ),
    ]
}
