//! Criterion benchmarks of the belay-proto core.
//!
//! Every group has a `baseline_*` bench measured in the same run, so the
//! figures in `docs/BENCHMARKS.md` can be read as ratios against something
//! familiar rather than as absolute nanoseconds on one machine.
//!
//! Run with `cargo bench -p belay-proto --bench core`; add `-- --test` to run
//! every bench once (what the test script does).
//!
//! The timed closures contain no assertions. The session fixture is checked
//! once while it is built (outside any measurement): if the session cannot
//! be established or a step does not settle its request, the numbers would
//! be meaningless, so building the fixture fails loudly instead.

use std::collections::HashMap;
use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::json;

use belay_proto::backoff::{Backoff, BackoffPolicy};
use belay_proto::heartbeat::{decide, HeartbeatAction};
use belay_proto::message::{
    ClientMessage, RawJson, Reply, Response, ServerMessage, Welcome, PROTOCOL_VERSION,
};
use belay_proto::registry::RequestRegistry;
use belay_proto::rng::{RandomSource, SplitMix64};
use belay_proto::{
    Call, Config, Event, Input, Instant, Output, RequestOutcome, Session, TransportId,
};

// ----- heartbeat -----

const INTERVAL: Duration = Duration::from_secs(10);
const TIMEOUT: Duration = Duration::from_secs(25);

/// `(last_received_at, pending_probe_at, now)` covering every branch of `decide`.
fn heartbeat_cases() -> [(Instant, Option<Instant>, Instant); 8] {
    let ms = Instant::from_millis;
    [
        (ms(0), None, ms(5_000)),                 // quiet < interval: wait
        (ms(1_000), None, ms(10_999)),            // just short of the interval: wait
        (ms(0), None, ms(10_000)),                // exactly the interval: probe
        (ms(0), None, ms(60_000)),                // long quiet: probe
        (ms(30_000), None, ms(20_000)),           // frame "from the future": wait
        (ms(0), Some(ms(10_000)), ms(20_000)),    // probe pending: wait
        (ms(0), Some(ms(10_000)), ms(35_000)),    // probe unanswered: close
        (ms(0), Some(ms(10_000)), ms(3_600_000)), // after a suspend: close
    ]
}

fn action_code(action: HeartbeatAction) -> u64 {
    match action {
        HeartbeatAction::Wait => 1,
        HeartbeatAction::Probe => 2,
        HeartbeatAction::Close => 3,
        // The enum is non-exhaustive; an action added later counts as 0.
        _ => 0,
    }
}

fn bench_heartbeat(c: &mut Criterion) {
    let cases = heartbeat_cases();
    let mut group = c.benchmark_group("heartbeat");
    group.bench_function("decide", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for &(last, pending, now) in black_box(&cases) {
                let action = decide(last, pending, now, black_box(INTERVAL), black_box(TIMEOUT));
                acc = acc.wrapping_mul(4).wrapping_add(action_code(action));
            }
            acc
        })
    });
    group.bench_function("baseline_instant_compare", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for &(last, pending, now) in black_box(&cases) {
                // The two comparisons the decision boils down to, unconditionally.
                let quiet = now.saturating_duration_since(last) >= black_box(INTERVAL);
                let expired =
                    now.saturating_duration_since(pending.unwrap_or(last)) >= black_box(TIMEOUT);
                acc = acc
                    .wrapping_mul(4)
                    .wrapping_add(u64::from(quiet) + 2 * u64::from(expired));
            }
            acc
        })
    });
    group.finish();
}

// ----- backoff -----

/// Calls between resets, so the exponent stays where real reconnects put it.
const BACKOFF_RESET_EVERY: u32 = 32;

fn bench_backoff(c: &mut Criterion) {
    let now = Instant::from_millis(1_000);
    let mut group = c.benchmark_group("backoff");
    for policy in BackoffPolicy::all_reference() {
        let name = policy.name();
        group.bench_function(BenchmarkId::new("next_delay", name), |b| {
            let mut backoff = Backoff::new(policy.clone());
            let mut rng = SplitMix64::new(0x5EED);
            let mut calls = 0u32;
            b.iter(|| {
                if calls == BACKOFF_RESET_EVERY {
                    backoff.reset();
                    calls = 0;
                }
                calls += 1;
                backoff.next_delay(black_box(now), &mut rng)
            })
        });
    }
    group.bench_function("baseline_splitmix_draw", |b| {
        let mut rng = SplitMix64::new(0x5EED);
        b.iter(|| rng.next_unit())
    });
    group.finish();
}

// ----- registry -----

/// Requests in flight besides the one being measured.
const IN_FLIGHT: u64 = 1_000;

/// A registry with `IN_FLIGHT` requests whose deadlines are far in the future,
/// so a timeout sweep at an early instant only finds the request under test.
fn busy_registry() -> RequestRegistry {
    let mut registry = RequestRegistry::new();
    let far = Instant::from_millis(1_000_000_000);
    for i in 0..IN_FLIGHT {
        registry.insert(far + Duration::from_millis(i));
    }
    registry
}

fn bench_registry(c: &mut Criterion) {
    let mut group = c.benchmark_group("registry");
    group.bench_function("insert_settle", |b| {
        let mut registry = busy_registry();
        // Deadlines keep growing, as with a fixed request timeout: the new
        // entry lands after every other one.
        let mut deadline = Instant::from_millis(2_000_000_000);
        b.iter(|| {
            deadline = deadline + Duration::from_micros(1);
            let id = registry.insert(black_box(deadline));
            let response = Response {
                id: id.0,
                reply: Reply::Result(RawJson::null()),
            };
            registry.handle_response(black_box(response))
        })
    });
    group.bench_function("insert_timeout", |b| {
        let mut registry = busy_registry();
        let mut settled = Vec::with_capacity(4);
        // Always earlier than every other deadline, so exactly one settles.
        let mut deadline = Instant::from_millis(1);
        b.iter(|| {
            deadline = deadline + Duration::from_micros(1);
            settled.clear();
            registry.insert(black_box(deadline));
            registry.handle_timeout(black_box(deadline), &mut settled);
            black_box(settled.last());
            settled.len()
        })
    });
    group.bench_function("baseline_hashmap_insert_remove", |b| {
        let mut map: HashMap<u64, u64> = (0..IN_FLIGHT).map(|i| (i, i)).collect();
        let mut key = IN_FLIGHT;
        b.iter(|| {
            key += 1;
            map.insert(black_box(key), key);
            map.remove(black_box(&key))
        })
    });
    group.finish();
}

// ----- session -----

/// The result `{"n":42}` as a decoder hands it over (built once; each
/// iteration clones it, as the old `Value` payload was built per iteration).
fn response_payload() -> RawJson {
    static PAYLOAD: std::sync::OnceLock<RawJson> = std::sync::OnceLock::new();
    PAYLOAD.get_or_init(|| json!({ "n": 42 }).into()).clone()
}

/// The response frame exactly as a server would send it for request `id`.
fn response_frame(id: u64) -> String {
    format!(r#"{{"type":"response","id":{id},"result":{{"n":42}}}}"#)
}

/// Drain every output, consuming each; returns how many there were.
fn drain(session: &mut Session) -> usize {
    let mut n = 0;
    while let Some(output) = session.poll_output() {
        black_box(output);
        n += 1;
    }
    n
}

/// Drain every output; returns how many requests settled with `Ok`.
fn drain_count_ok(session: &mut Session) -> usize {
    let mut ok = 0;
    while let Some(output) = session.poll_output() {
        if let Output::Event(Event::Response {
            outcome: RequestOutcome::Ok { .. },
            ..
        }) = &output
        {
            ok += 1;
        }
        black_box(output);
    }
    ok
}

/// A session driven through start → TransportOpened → welcome with the run
/// loop of the crate docs, against a toy server that answers at once.
fn established_session() -> (Session, TransportId, Instant) {
    let mut now = Instant::ZERO;
    let mut session = Session::new(Config::default(), now, 42);
    let mut inbox: Vec<Input> = Vec::new();
    let started = session.start(now).is_ok();
    for _ in 0..100 {
        if !started || session.is_ready() {
            break;
        }
        while let Some(output) = session.poll_output() {
            match output {
                Output::OpenTransport { id, .. } => inbox.push(Input::TransportOpened(id)),
                Output::Transmit {
                    id,
                    message: ClientMessage::Connect(_),
                } => {
                    let welcome = Welcome {
                        session: "bench".into(),
                        protocol: PROTOCOL_VERSION,
                        ping_interval_ms: Some(25_000),
                        pacing: None,
                        expires_in_ms: None,
                    };
                    inbox.push(Input::Message(id, ServerMessage::Welcome(welcome)));
                }
                _ => {}
            }
        }
        if session.is_ready() {
            break;
        }
        if let Some(input) = inbox.pop() {
            session.handle_input(now, input);
        } else if let Some(deadline) = session.poll_timeout() {
            now = deadline;
            session.handle_timeout(now);
        }
    }
    drain(&mut session);
    let transport = session.current_transport();
    match transport {
        Some(id) if session.is_ready() => (session, id, now),
        _ => panic!("bench fixture: the session did not become ready"),
    }
}

/// One request/response round trip with the response as a decoded message.
fn step_message(session: &mut Session, transport: TransportId, now: Instant, call: &Call) -> usize {
    let Ok(request) = session.request(now, call.clone()) else {
        return 0;
    };
    let sent = drain(session);
    let response = ServerMessage::Response(Response {
        id: request.0,
        reply: Reply::Result(response_payload()),
    });
    session.handle_input(now, Input::Message(transport, response));
    sent + drain_count_ok(session)
}

/// One request/response round trip with the response as a JSON text frame.
fn step_frame(session: &mut Session, transport: TransportId, now: Instant, call: &Call) -> usize {
    let Ok(request) = session.request(now, call.clone()) else {
        return 0;
    };
    let sent = drain(session);
    session.handle_input(now, Input::Frame(transport, response_frame(request.0)));
    sent + drain_count_ok(session)
}

const PING_FRAME: &str = r#"{"type":"ping"}"#;

/// Feed a server ping frame; returns how many pongs came out.
fn step_ping(session: &mut Session, transport: TransportId, now: Instant) -> usize {
    session.handle_input(now, Input::Frame(transport, PING_FRAME.to_owned()));
    let mut pongs = 0;
    while let Some(output) = session.poll_output() {
        if let Output::Transmit {
            message: ClientMessage::Pong,
            ..
        } = &output
        {
            pongs += 1;
        }
        black_box(output);
    }
    pongs
}

/// A session plus a check, outside any measurement, that each kind of step
/// really settles its request (or answers the ping): one transmit plus one
/// `Ok` response per round trip.
fn checked_session() -> (Session, TransportId, Instant, Call) {
    let (mut session, transport, now) = established_session();
    let call = Call::new("echo", json!({ "n": 42 }));
    let message = step_message(&mut session, transport, now, &call);
    let frame = step_frame(&mut session, transport, now, &call);
    let ping = step_ping(&mut session, transport, now);
    if (message, frame, ping) != (2, 2, 1) || session.requests_in_flight() != 0 {
        panic!(
            "bench fixture: steps misbehave (message {message}, frame {frame}, ping {ping}, \
             in flight {})",
            session.requests_in_flight()
        );
    }
    (session, transport, now, call)
}

fn bench_session(c: &mut Criterion) {
    let mut group = c.benchmark_group("session");
    group.bench_function("step", |b| {
        let (mut session, transport, now, call) = checked_session();
        b.iter(|| step_message(&mut session, transport, now, &call))
    });
    group.bench_function("frame_decode_step", |b| {
        let (mut session, transport, now, call) = checked_session();
        b.iter(|| step_frame(&mut session, transport, now, &call))
    });
    group.bench_function("ping_pong", |b| {
        let (mut session, transport, now, _) = checked_session();
        b.iter(|| step_ping(&mut session, transport, now))
    });
    group.bench_function("baseline_json_roundtrip", |b| {
        let message = ServerMessage::Response(Response {
            id: 1_000,
            reply: Reply::Result(response_payload()),
        });
        b.iter(|| {
            let text = serde_json::to_string(black_box(&message)).unwrap_or_default();
            // The message's own struct: plain serde, no dispatch on `type`.
            serde_json::from_str::<Response>(black_box(&text)).ok()
        })
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_heartbeat, bench_backoff, bench_registry, bench_session
}
criterion_main!(benches);
