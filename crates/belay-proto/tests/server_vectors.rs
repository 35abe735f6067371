//! Runs the server conformance traces in `spec/vectors/server/`: whole
//! connections driven through `belay_proto::server::Connection`, and the
//! upgrade-time `UpgradeDecision`, so a second server implementation can be
//! held to the same decisions.
//!
//! One test per file; the format is described in `spec/vectors/README.md`
//! ("Server traces"). Every trace runs even if an earlier one fails, and a
//! failure names the file, the trace and the step index. A trace marked
//! `known_deviation` must fail (the machine disagrees with PROTOCOL.md and
//! the vector keeps the specification's expectation); one that passes is a
//! failure too, so a fix shows up and the mark is removed.
//!
//! Tickets are opaque (`Ticket` has no public constructor): the traces name
//! them by the order the machine asked (`auth#1`, `sub#2`, …) and this
//! runner maps each name to the ticket it saw.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use belay_proto::message::{
    decode_client, encode_server, ClientMessage, ErrorBody, Pacing, RawJson, ReconnectAdvice,
    Reply, Subscribed,
};
use belay_proto::server::{
    AuthVerdict, Connection, Event, Frame, Input, JoinAnswer, Limits, Output, Phase, Ticket,
    TransportError, UpgradeDecision, UpgradeVerdict, Violation,
};
use belay_proto::testing::invariants::ServerInvariants;
use belay_proto::{CloseCode, Instant};
use serde_json::{json, Map, Value};

type Check = Result<(), String>;
/// The driver's frame type: a publication the "broker" encoded, as text.
type Conn = Connection<String>;

// ----- loading and reporting -----

fn server_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors/server")
}

fn load(name: &str) -> Value {
    let path = server_dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name} is not JSON: {e}"))
}

/// The files this runner has a test for (`every_file_has_a_test` keeps it
/// in step with the folder).
const FILES: [&str; 7] = [
    "handshake.json",
    "frames.json",
    "requests.json",
    "subscriptions.json",
    "heartbeat.json",
    "drain.json",
    "upgrade.json",
];

/// Run every trace (and, for `upgrade.json`, every case) of `name`; panic
/// with every failure at once.
fn run_file(name: &str) {
    let file = load(name);
    let mut failures = Vec::new();
    let mut expected_failures = Vec::new();
    let mut runs = 0;
    let base = file.get("limits").cloned().unwrap_or_else(|| json!({}));
    if let Some(cases) = file.get("cases") {
        for (i, case) in cases
            .as_array()
            .expect("cases is an array")
            .iter()
            .enumerate()
        {
            runs += 1;
            let outcome = run_upgrade_case(&base, case).map_err(Failure::from);
            judge(
                name,
                &format!("cases[{i}]"),
                case,
                outcome,
                &mut failures,
                &mut expected_failures,
            );
        }
    }
    if let Some(traces) = file.get("traces") {
        for (i, trace) in traces
            .as_array()
            .expect("traces is an array")
            .iter()
            .enumerate()
        {
            runs += 1;
            let outcome = run_trace(&base, trace);
            judge(
                name,
                &format!("traces[{i}]"),
                trace,
                outcome,
                &mut failures,
                &mut expected_failures,
            );
        }
    }
    for note in &expected_failures {
        eprintln!("{note}");
    }
    assert!(runs > 0, "{name}: no traces or cases found");
    assert!(
        failures.is_empty(),
        "{name}: {} of {runs} failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// How a trace or case failed: at which step (if a step), and why.
struct Failure {
    step: Option<usize>,
    message: String,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure {
            step: None,
            message,
        }
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Failure::from(message.to_owned())
    }
}

/// Sort one run's outcome into failures and expected failures. A
/// `known_deviation` trace must fail at a step marked `"deviation": true`
/// (where the machine and the specification part): failing anywhere else,
/// or not at all, is a failure.
fn judge(
    file: &str,
    at: &str,
    vector: &Value,
    outcome: Result<(), Failure>,
    failures: &mut Vec<String>,
    expected_failures: &mut Vec<String>,
) {
    let title = format!("{file} {at} {}", vector["name"]);
    let marked = |step: Option<usize>| {
        step.and_then(|i| vector["steps"].get(i))
            .is_some_and(|s| s.get("deviation") == Some(&Value::Bool(true)))
    };
    match (vector.get("known_deviation"), outcome) {
        (None, Ok(())) => {}
        (None, Err(e)) => failures.push(format!("{title}: {}", e.message)),
        (Some(why), Err(e)) if marked(e.step) => expected_failures.push(format!(
            "expected failure: {title}: {why}\n  (got: {})",
            e.message
        )),
        (Some(_), Err(e)) => failures.push(format!(
            "{title}: marked known_deviation, but fails where no step is marked \"deviation\": {}",
            e.message
        )),
        (Some(why), Ok(())) => failures.push(format!(
            "{title}: passes although it is marked known_deviation ({why}); remove the mark"
        )),
    }
}

// ----- small JSON helpers -----

fn field<'a>(object: &'a Value, key: &str) -> Result<&'a Value, String> {
    object
        .get(key)
        .ok_or_else(|| format!("missing field {key:?} in {object}"))
}

fn u64_of(value: &Value, what: &str) -> Result<u64, String> {
    value
        .as_u64()
        .ok_or_else(|| format!("{what} must be a non-negative integer, got {value}"))
}

fn u64_field(object: &Value, key: &str) -> Result<u64, String> {
    u64_of(field(object, key)?, key)
}

fn str_field<'a>(object: &'a Value, key: &str) -> Result<&'a str, String> {
    let value = field(object, key)?;
    value
        .as_str()
        .ok_or_else(|| format!("{key:?} must be a string, got {value}"))
}

fn opt_u64(value: Option<&Value>, what: &str) -> Result<Option<u64>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => u64_of(v, what).map(Some),
    }
}

fn parse<T: serde::de::DeserializeOwned>(value: &Value, what: &str) -> Result<T, String> {
    serde_json::from_value(value.clone()).map_err(|e| format!("{what}: {e} in {value}"))
}

fn show(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

/// An instant as whole milliseconds; the traces never produce sub-ms ones.
fn whole_ms(instant: Instant) -> Result<u64, String> {
    let micros = instant.as_micros();
    if micros % 1000 == 0 {
        Ok(micros / 1000)
    } else {
        Err(format!("instant {instant:?} is not a whole millisecond"))
    }
}

/// A text written as a string or as pieces (`"s"` or `{"repeat": s, "times": n}`).
fn text_of(value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Array(pieces) => pieces.iter().try_fold(String::new(), |mut text, piece| {
            match piece {
                Value::String(s) => text.push_str(s),
                Value::Object(_) => {
                    let times = usize::try_from(u64_field(piece, "times")?).unwrap_or(usize::MAX);
                    text.push_str(&str_field(piece, "repeat")?.repeat(times));
                }
                other => {
                    return Err(format!(
                        "a text piece must be a string or a repeat, got {other}"
                    ))
                }
            }
            Ok(text)
        }),
        other => Err(format!(
            "a text must be a string or a list of pieces, got {other}"
        )),
    }
}

/// `expected` must be a subset of `actual`: every key of an expected object
/// is present in the actual one with a matching value (recursively), arrays
/// match element by element with the same length, scalars are equal, and an
/// expected `null` also matches an absent key.
fn subset(expected: &Value, actual: Option<&Value>, path: &str) -> Check {
    let mismatch = || {
        let got = actual.map_or_else(|| "nothing".to_owned(), show);
        Err(format!("at {path}: expected {}, got {got}", show(expected)))
    };
    match (expected, actual) {
        (Value::Null, None | Some(Value::Null)) => Ok(()),
        (Value::Object(want), Some(Value::Object(have))) => want
            .iter()
            .try_for_each(|(key, value)| subset(value, have.get(key), &format!("{path}.{key}"))),
        (Value::Array(want), Some(Value::Array(have))) if want.len() == have.len() => want
            .iter()
            .zip(have)
            .enumerate()
            .try_for_each(|(i, (w, h))| subset(w, Some(h), &format!("{path}[{i}]"))),
        (want, Some(have)) if want == have => Ok(()),
        _ => mismatch(),
    }
}

// ----- limits -----

/// The file's `limits` with the trace's own on top; every field is a
/// setter of `Limits`, durations in ms.
fn limits_of(base: &Value, own: Option<&Value>) -> Result<Limits, String> {
    let mut merged = base.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(own)) = own {
        merged.extend(own.clone());
    }
    let mut limits = Limits::default();
    for (key, value) in &merged {
        let n = || u64_of(value, key);
        let count = || n().map(|v| usize::try_from(v).unwrap_or(usize::MAX));
        let small = || n().map(|v| u32::try_from(v).unwrap_or(u32::MAX));
        let rate = || {
            value
                .as_f64()
                .ok_or_else(|| format!("{key} must be a number, got {value}"))
        };
        let ms = || n().map(Duration::from_millis);
        match key.as_str() {
            "max_frame_len" => limits.set_max_frame_len(count()?),
            "messages_per_sec" => limits.set_messages_per_sec(rate()?),
            "burst" => limits.set_burst(small()?),
            "handshake_timeout_ms" => limits.set_handshake_timeout(ms()?),
            "max_connections_per_ip" => limits.set_max_connections_per_ip(small()?),
            "outbound_queue" => limits.set_outbound_queue(count()?),
            "ping_interval_ms" => limits.set_ping_interval(ms()?),
            "pong_timeout_ms" => limits.set_pong_timeout(ms()?),
            "allowed_origins" => limits.set_allowed_origins(parse(value, key)?),
            "max_subscriptions" => limits.set_max_subscriptions(count()?),
            "max_channel_len" => limits.set_max_channel_len(count()?),
            "outbound_bytes" => limits.set_outbound_bytes(count()?),
            "max_in_flight" => limits.set_max_in_flight(count()?),
            "liveness_per_sec" => limits.set_liveness_per_sec(rate()?),
            "liveness_burst" => limits.set_liveness_burst(small()?),
            other => return Err(format!("unknown limit {other:?}")),
        };
    }
    Ok(limits)
}

// ----- tickets -----

/// Names the machine's tickets by kind and order of asking.
#[derive(Default)]
struct Tickets {
    by_name: HashMap<String, Ticket>,
    asked: HashMap<&'static str, u32>,
}

impl Tickets {
    /// The name of a ticket the machine just asked with (a kind's first is `#1`).
    fn name(&mut self, kind: &'static str, ticket: Ticket) -> String {
        let count = self.asked.entry(kind).or_insert(0);
        *count += 1;
        let name = format!("{kind}#{count}");
        self.by_name.insert(name.clone(), ticket);
        name
    }

    fn get(&self, answer: &Value) -> Result<Ticket, String> {
        let name = str_field(answer, "ticket")?;
        self.by_name
            .get(name)
            .copied()
            .ok_or_else(|| format!("ticket {name:?} was never asked"))
    }
}

// ----- outputs and events as JSON -----

fn output_json(
    output: Output<String>,
    tickets: &mut Tickets,
    events: &mut Vec<Value>,
) -> Option<Value> {
    Some(match output {
        Output::Send(message) => json!({"send": encode_server(&message)}),
        Output::SendEncoded(frame) => json!({"send": frame}),
        Output::Pong(payload) => json!({"pong": String::from_utf8_lossy(&payload)}),
        Output::Authenticate { ticket, token } => {
            json!({"authenticate": tickets.name("auth", ticket), "token": token})
        }
        Output::AuthorizeSubscribe {
            ticket, channel, ..
        } => {
            json!({"authorize_subscribe": tickets.name("sub", ticket), "channel": channel})
        }
        Output::Join {
            ticket,
            channel,
            since,
        } => json!({"join": tickets.name("join", ticket), "channel": channel, "since": since}),
        Output::Leave {
            channel,
            subscription,
        } => json!({"leave": channel, "subscription": subscription}),
        Output::AuthorizeRequest { ticket, method } => {
            json!({"authorize_request": tickets.name("req", ticket), "method": method})
        }
        Output::Call { ticket, request } => {
            json!({"call": tickets.name("call", ticket), "request": request})
        }
        Output::Close {
            code,
            reason,
            discard_unsent,
        } => json!({"close": code.0, "reason": reason, "discard_unsent": discard_unsent}),
        Output::PeerGone { code } => json!({"peer_gone": code}),
        Output::Event(event) => {
            events.push(event_json(&event));
            return None;
        }
        other => json!({"unknown_output": format!("{other:?}")}),
    })
}

fn event_json(event: &Event) -> Value {
    match event {
        Event::Connected { session } => json!({"event": "connected", "session": &**session}),
        Event::Violation(violation) => json!({"event": "violation", "violation": violation.name()}),
        Event::BadFrame => json!({"event": "bad_frame"}),
        Event::RequestRefused(code) => json!({"event": "request_refused", "code": code}),
        Event::SubscribeRefused => json!({"event": "subscribe_refused"}),
        Event::Resumed { recovered } => json!({"event": "resumed", "recovered": recovered}),
        Event::PingSent => json!({"event": "ping_sent"}),
        Event::Reaped => json!({"event": "reaped"}),
        other => json!({"event": "unknown", "debug": format!("{other:?}")}),
    }
}

/// One expected output against the actual one (see the README's rules).
fn match_output(expected: &Value, actual: &Value, path: &str) -> Check {
    let fail = || {
        Err(format!(
            "at {path}: expected {}, got {}",
            show(expected),
            show(actual)
        ))
    };
    let Some(want) = expected.as_object() else {
        return Err(format!(
            "at {path}: an expected output must be an object, got {expected}"
        ));
    };
    if let Some(send) = want.get("send") {
        let Some(text) = actual.get("send").and_then(Value::as_str) else {
            return fail();
        };
        return match send {
            Value::String(exact) if exact == text => Ok(()),
            Value::String(_) => fail(),
            Value::Object(_) => {
                let sent: Value = serde_json::from_str(text)
                    .map_err(|e| format!("at {path}: sent text is not JSON ({e}): {text}"))?;
                subset(send, Some(&sent), &format!("{path}.send"))
                    .map_err(|e| format!("{e} (sent {text})"))
            }
            other => Err(format!(
                "at {path}: send must be a text or an object, got {other}"
            )),
        };
    }
    if want.contains_key("close") {
        let mut want = want.clone();
        want.entry("discard_unsent").or_insert(Value::Bool(false));
        let mut have = actual.as_object().cloned().unwrap_or_default();
        if !want.contains_key("reason") {
            // No reason in the vector: the specification leaves it open.
            have.remove("reason");
        }
        return if Value::Object(want) == Value::Object(have) {
            Ok(())
        } else {
            fail()
        };
    }
    if expected == actual {
        Ok(())
    } else {
        fail()
    }
}

fn match_list(
    what: &str,
    expected: &[Value],
    actual: &[Value],
    matcher: fn(&Value, &Value, &str) -> Check,
) -> Check {
    let whole = || {
        format!(
            "\n  expected {what}: {}\n  actual {what}:   {}",
            show(&Value::from(expected.to_vec())),
            show(&Value::from(actual.to_vec()))
        )
    };
    if expected.len() != actual.len() {
        return Err(format!(
            "{} {what} expected, {} produced{}",
            expected.len(),
            actual.len(),
            whole()
        ));
    }
    for (i, (want, have)) in expected.iter().zip(actual).enumerate() {
        matcher(want, have, &format!("{what}[{i}]")).map_err(|e| format!("{e}{}", whole()))?;
    }
    Ok(())
}

fn match_event(expected: &Value, actual: &Value, path: &str) -> Check {
    subset(expected, Some(actual), path)
}

// ----- traces -----

const STEP_KEYS: [&str; 9] = [
    "at",
    "deviation",
    "expect",
    "events",
    "poll_timeout",
    "phase",
    "requests_in_flight",
    "subscriptions",
    "times",
];

const ACTIONS: [&str; 22] = [
    "text",
    "binary",
    "ws_ping",
    "ws_pong",
    "peer_close",
    "transport_error",
    "timeout",
    "auth",
    "subscribe_authorized",
    "request_authorized",
    "join_answer",
    "reply",
    "live",
    "lagged",
    "subscription_ended",
    "unsubscribe_all",
    "set_upgrade_token",
    "advise",
    "close_connection",
    "drain",
    "refuse_overload",
    "queue_full",
];

fn run_trace(base: &Value, trace: &Value) -> Result<(), Failure> {
    let limits = limits_of(base, trace.get("limits"))?;
    let accepted_at = opt_u64(trace.get("accepted_at"), "accepted_at")?.unwrap_or(0);
    let seed = opt_u64(trace.get("seed"), "seed")?.unwrap_or(1);
    let mut invariants = ServerInvariants::new(&limits);
    let mut conn = Conn::new(limits, at(accepted_at), seed);
    let mut tickets = Tickets::default();
    let mut last = accepted_at;
    let steps = field(trace, "steps")?
        .as_array()
        .ok_or("steps must be an array")?;
    for (i, step) in steps.iter().enumerate() {
        let state = (&mut conn, &mut tickets, &mut invariants);
        run_step(state, &mut last, step).map_err(|e| Failure {
            step: Some(i),
            message: format!("step {i}: {e}"),
        })?;
    }
    Ok(())
}

/// What a trace runs: the connection, the tickets it issued, and the one
/// invariant checker every output goes through.
type TraceState<'a> = (&'a mut Conn, &'a mut Tickets, &'a mut ServerInvariants);

fn run_step((conn, tickets, invariants): TraceState<'_>, last: &mut u64, step: &Value) -> Check {
    let object = step.as_object().ok_or("a step must be an object")?;
    let now = u64_field(step, "at")?;
    if now < *last {
        return Err(format!(
            "invalid trace: at {now} is before the previous step's {last}"
        ));
    }
    *last = now;
    let actions: Vec<&str> = object
        .keys()
        .map(String::as_str)
        .filter(|key| !STEP_KEYS.contains(key))
        .collect();
    let [action] = actions[..] else {
        return Err(format!("a step needs exactly one action, has {actions:?}"));
    };
    if !ACTIONS.contains(&action) {
        return Err(format!("unknown action {action:?}"));
    }
    // Driver rule: only a `timeout` step may lie after a due timer.
    if action != "timeout" {
        if let Some(due) = conn.poll_timeout() {
            let due = whole_ms(due)?;
            if due < now {
                return Err(format!(
                    "invalid trace: a timer is due at {due}, before this {action} at {now}; add a timeout step"
                ));
            }
        }
    }
    let times = opt_u64(step.get("times"), "times")?.unwrap_or(1);
    let mut outputs = Vec::new();
    let mut events = Vec::new();
    for _ in 0..times {
        report(invariants, action, &step[action]);
        act(conn, tickets, at(now), action, &step[action])?;
        while let Some(output) = conn.poll_output() {
            invariants.output(&output).map_err(|v| v.to_string())?;
            outputs.extend(output_json(output, tickets, &mut events));
        }
        invariants.after_batch(conn).map_err(|v| v.to_string())?;
        if action == "timeout" {
            let checked = invariants.after_timeout(at(now), conn);
            checked.map_err(|v| v.to_string())?;
        }
    }
    let expect = field(step, "expect")?
        .as_array()
        .ok_or("expect must be an array")?;
    match_list("outputs", expect, &outputs, match_output)?;
    if let Some(want) = step.get("events") {
        let want = want.as_array().ok_or("events must be an array")?;
        match_list("events", want, &events, match_event)?;
    }
    checks(conn, step)
}

/// Tell the checker what the trace's driver does: a frame that may carry a
/// request, an accepted credential, a granted join.
fn report(invariants: &mut ServerInvariants, action: &str, arg: &Value) {
    match action {
        "text" => match text_of(arg).map(|text| decode_client(&text)) {
            Ok(Ok(ClientMessage::Request(request))) => invariants.request_sent(Some(request.id)),
            Ok(Ok(_)) => {}
            // Whatever does not decode may still be answered for an id.
            _ => invariants.request_sent(None),
        },
        "auth" => invariants.auth_answered(arg.get("verdict") == Some(&json!("accepted"))),
        "join_answer" => {
            let channel = arg
                .pointer("/joined/subscribed/channel")
                .and_then(Value::as_str);
            if let Some(channel) = channel {
                invariants.join_granted(channel);
            }
        }
        _ => {}
    }
}

fn checks(conn: &Conn, step: &Value) -> Check {
    if let Some(want) = step.get("poll_timeout") {
        let want = opt_u64(Some(want), "poll_timeout")?;
        let have = conn.poll_timeout().map(whole_ms).transpose()?;
        if want != have {
            return Err(format!("poll_timeout: expected {want:?}, got {have:?}"));
        }
    }
    if let Some(want) = step.get("phase") {
        let have = match conn.phase() {
            Phase::Handshake => "handshake",
            Phase::Authenticating => "authenticating",
            Phase::Open => "open",
            Phase::Draining => "draining",
            Phase::Closed => "closed",
            _ => "unknown",
        };
        if want.as_str() != Some(have) {
            return Err(format!("phase: expected {want}, got {have:?}"));
        }
    }
    if let Some(want) = step.get("requests_in_flight") {
        let have = conn.requests_in_flight() as u64;
        if u64_of(want, "requests_in_flight")? != have {
            return Err(format!("requests_in_flight: expected {want}, got {have}"));
        }
    }
    if let Some(want) = step.get("subscriptions") {
        let have = conn.subscription_count() as u64;
        if u64_of(want, "subscriptions")? != have {
            return Err(format!("subscriptions: expected {want}, got {have}"));
        }
    }
    Ok(())
}

fn error_of(value: &Value) -> Result<ErrorBody, String> {
    parse(value, "error")
}

/// `Ok(())`, or `Err(error)` when the answer carries one.
fn verdict_of(answer: &Value) -> Result<Result<(), ErrorBody>, String> {
    match answer.get("error") {
        None | Some(Value::Null) => Ok(Ok(())),
        Some(error) => Ok(Err(error_of(error)?)),
    }
}

fn act(conn: &mut Conn, tickets: &Tickets, now: Instant, action: &str, arg: &Value) -> Check {
    match action {
        "text" => {
            let text = text_of(arg)?;
            conn.handle_input(now, Input::Frame(Frame::Text(&text)));
        }
        "binary" => conn.handle_input(now, Input::Frame(Frame::Binary(b"\x00\x01"))),
        "ws_ping" => {
            let payload = arg
                .as_str()
                .ok_or("ws_ping takes its payload as a string")?;
            conn.handle_input(now, Input::Frame(Frame::Ping(payload.as_bytes())));
        }
        "ws_pong" => conn.handle_input(now, Input::Frame(Frame::Pong)),
        "peer_close" => {
            let code = opt_u64(Some(arg), "peer_close")?
                .map(|c| u16::try_from(c).map_err(|_| format!("close code {c} is not a u16")))
                .transpose()?;
            conn.handle_input(now, Input::Frame(Frame::Close(code)));
        }
        "transport_error" => {
            let error = match arg.as_str() {
                Some("too_large") => TransportError::TooLarge,
                Some("invalid_utf8") => TransportError::InvalidUtf8,
                Some("protocol") => TransportError::Protocol,
                Some("gone") => TransportError::Gone,
                _ => return Err(format!("unknown transport error {arg}")),
            };
            conn.handle_input(now, Input::TransportError(error));
        }
        "timeout" => conn.handle_timeout(now),
        "auth" => {
            let ticket = tickets.get(arg)?;
            let verdict = match str_field(arg, "verdict")? {
                "accepted" => AuthVerdict::Accepted {
                    expires_at: opt_u64(arg.get("expires_at"), "expires_at")?.map(at),
                    pacing: match arg.get("pacing") {
                        None | Some(Value::Null) => None,
                        Some(pacing) => Some(parse::<Pacing>(pacing, "pacing")?),
                    },
                },
                "refused" => AuthVerdict::Refused,
                other => return Err(format!("unknown verdict {other:?}")),
            };
            conn.handle_input(now, Input::Auth { ticket, verdict });
        }
        "subscribe_authorized" => conn.handle_input(
            now,
            Input::SubscribeAuthorized {
                ticket: tickets.get(arg)?,
                verdict: verdict_of(arg)?.map(|()| None),
            },
        ),
        "request_authorized" => conn.handle_input(
            now,
            Input::RequestAuthorized {
                ticket: tickets.get(arg)?,
                verdict: verdict_of(arg)?,
            },
        ),
        "join_answer" => {
            let ticket = tickets.get(arg)?;
            let answer = if let Some(joined) = arg.get("joined") {
                let replay = match joined.get("replay") {
                    None => Vec::new(),
                    Some(replay) => replay
                        .as_array()
                        .ok_or("replay must be a list of [offset, frame]")?
                        .iter()
                        .map(|item| match item.as_array().map(Vec::as_slice) {
                            Some([offset, frame]) => {
                                Ok((u64_of(offset, "offset")?, text_of(frame)?))
                            }
                            _ => Err(format!("a replay item is [offset, frame], got {item}")),
                        })
                        .collect::<Result<_, String>>()?,
                };
                JoinAnswer::Joined {
                    subscribed: parse::<Subscribed>(field(joined, "subscribed")?, "subscribed")?,
                    subscription: u64_field(joined, "subscription")?,
                    replay,
                }
            } else if arg.get("no_room").is_some() {
                JoinAnswer::NoRoom
            } else if let Some(error) = arg.get("unavailable") {
                JoinAnswer::Unavailable(error_of(error)?)
            } else {
                return Err(format!(
                    "join_answer needs joined, no_room or unavailable: {arg}"
                ));
            };
            conn.handle_input(
                now,
                Input::Joined {
                    ticket,
                    answer,
                    room: None,
                },
            );
        }
        "reply" => {
            let ticket = tickets.get(arg)?;
            let reply = match (arg.get("result"), arg.get("error")) {
                (Some(result), None) => Reply::Result(RawJson::from_value(result)),
                (None, Some(error)) => Reply::Error(error_of(error)?),
                _ => {
                    return Err(format!(
                        "a reply has exactly one of result and error: {arg}"
                    ))
                }
            };
            conn.handle_input(now, Input::Reply { ticket, reply });
        }
        "live" => conn.handle_input(
            now,
            Input::Live {
                channel: str_field(arg, "channel")?,
                subscription: u64_field(arg, "subscription")?,
                offset: u64_field(arg, "offset")?,
                frame: text_of(field(arg, "frame")?)?,
            },
        ),
        "lagged" => conn.handle_input(
            now,
            Input::Lagged {
                channel: str_field(arg, "channel")?,
                subscription: u64_field(arg, "subscription")?,
            },
        ),
        "subscription_ended" => conn.handle_input(
            now,
            Input::SubscriptionEnded {
                channel: str_field(arg, "channel")?,
                subscription: u64_field(arg, "subscription")?,
                error: &error_of(field(arg, "error")?)?,
            },
        ),
        "unsubscribe_all" => conn.unsubscribe_all(&error_of(arg)?),
        "set_upgrade_token" => conn.set_upgrade_token(arg.as_str().map(str::to_owned)),
        "advise" => conn.advise(parse::<ReconnectAdvice>(arg, "advise")?),
        "close_connection" => {
            let code =
                u16::try_from(u64_field(arg, "code")?).map_err(|_| "close code is not a u16")?;
            conn.close(CloseCode(code), str_field(arg, "reason")?);
        }
        "drain" => conn.drain(now, at(u64_field(arg, "until")?)),
        "refuse_overload" => {
            conn.refuse_overload(Duration::from_millis(u64_field(arg, "retry_after_ms")?))
        }
        "queue_full" => conn.handle_input(now, Input::QueueFull),
        other => return Err(format!("unknown action {other:?}")),
    }
    Ok(())
}

// ----- upgrade cases -----

fn run_upgrade_case(base: &Value, case: &Value) -> Check {
    let limits = limits_of(base, case.get("limits"))?;
    let origin = match field(case, "origin")? {
        Value::Null => None,
        Value::String(origin) => Some(origin.as_str()),
        other => return Err(format!("origin must be a string or null, got {other}")),
    };
    let draining = field(case, "draining")?
        .as_bool()
        .ok_or("draining must be a boolean")?;
    let counted: Result<(), Violation> = match field(case, "source")? {
        Value::String(ok) if ok == "ok" => Ok(()),
        refused => match str_field(refused, "violation")? {
            "too_many_connections_from_ip" => Err(Violation::TooManyConnectionsFromIp {
                retry_after: Duration::from_millis(u64_field(refused, "retry_after_ms")?),
            }),
            "too_many_pending_upgrades" => Err(Violation::TooManyPendingUpgrades),
            other => return Err(format!("unknown source violation {other:?}")),
        },
    };
    let admission: Result<(), Duration> = match field(case, "admission")? {
        Value::String(ok) if ok == "ok" => Ok(()),
        wait => Err(Duration::from_millis(u64_field(wait, "wait_ms")?)),
    };
    let (decided_at, verdict) = match UpgradeDecision::new(&limits, origin, draining) {
        Err(verdict) => ("new", verdict),
        Ok(decision) => match decision.source_counted(counted) {
            Err(verdict) => ("source_counted", verdict),
            Ok((decision, ())) => ("admitted", decision.admitted(admission)),
        },
    };
    let verdict = match verdict {
        UpgradeVerdict::Upgrade => json!({"verdict": "upgrade"}),
        UpgradeVerdict::UpgradeThenRefuse { retry_after } => json!({
            "verdict": "upgrade_then_refuse",
            "retry_after_ms": u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX),
        }),
        UpgradeVerdict::Refuse {
            status,
            retry_after_secs,
            reason,
        } => json!({
            "verdict": "refuse",
            "status": status,
            "retry_after_secs": retry_after_secs,
            "reason": reason,
        }),
        other => json!({"verdict": "unknown", "debug": format!("{other:?}")}),
    };
    let mut want: Map<String, Value> = parse(field(case, "expect")?, "expect")?;
    if let Some(step) = want.remove("decided_at") {
        if step.as_str() != Some(decided_at) {
            return Err(format!("decided at {decided_at:?}, expected {step}"));
        }
    }
    let want = Value::Object(want);
    // Every field of the verdict is compared; `null` is an absent header.
    if want != verdict {
        return Err(format!("expected {}, got {}", show(&want), show(&verdict)));
    }
    Ok(())
}

// ----- one test per file -----

#[test]
fn handshake_traces() {
    run_file("handshake.json");
}

#[test]
fn frame_traces() {
    run_file("frames.json");
}

#[test]
fn request_traces() {
    run_file("requests.json");
}

#[test]
fn subscription_traces() {
    run_file("subscriptions.json");
}

#[test]
fn heartbeat_traces() {
    run_file("heartbeat.json");
}

#[test]
fn drain_traces() {
    run_file("drain.json");
}

#[test]
fn upgrade_cases_and_traces() {
    run_file("upgrade.json");
}

#[test]
fn every_file_has_a_test() {
    let mut found: Vec<String> = std::fs::read_dir(server_dir())
        .expect("spec/vectors/server exists")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".json"))
        .collect();
    found.sort();
    let mut known: Vec<String> = FILES.iter().map(|f| (*f).to_owned()).collect();
    known.sort();
    assert_eq!(
        found, known,
        "spec/vectors/server/*.json and the tests here must match"
    );
}
