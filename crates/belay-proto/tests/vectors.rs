//! Runs the conformance vectors in `spec/vectors/`, the JSON files that the
//! TypeScript client runs too, so the two implementations cannot drift.
//!
//! One test per vector file (`heartbeat.json`, `backoff.json`, and the
//! session traces in `session/*.json`); the format is described in
//! `spec/vectors/README.md`. Every case runs even if an earlier one fails, and
//! the failure message names the file, the case or trace, and the step index.

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::time::Duration;

use belay_proto::backoff::{Backoff, BackoffPolicy, PacingSlots, RetryWindow};
use belay_proto::heartbeat::{decide, Heartbeat, HeartbeatAction};
use belay_proto::rng::{RandomSource, RecordedDraws, SplitMix64};
use belay_proto::testing::invariants::{ClientChecks, ClientInvariants};
use belay_proto::{
    Call, CloseInfo, Config, Failure, Input, Instant, Output, RequestError, Session, Stopped,
    SubscribeError, TokenError, TransportId,
};
use serde_json::{json, Map, Value};

type Check = Result<(), String>;

// ----- loading and failure reporting -----

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors")
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Panic with every failure at once, or say how many cases passed.
fn report(file: &str, cases: usize, failures: &[String]) {
    assert!(cases > 0, "{file}: no cases found");
    assert!(
        failures.is_empty(),
        "{file}: {} of {cases} cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

fn field<'a>(object: &'a Value, key: &str) -> Result<&'a Value, String> {
    object
        .get(key)
        .ok_or_else(|| format!("missing field {key:?} in {object}"))
}

fn u64_field(object: &Value, key: &str) -> Result<u64, String> {
    let value = field(object, key)?;
    value
        .as_u64()
        .ok_or_else(|| format!("{key:?} must be a non-negative integer, got {value}"))
}

fn str_field<'a>(object: &'a Value, key: &str) -> Result<&'a str, String> {
    let value = field(object, key)?;
    value
        .as_str()
        .ok_or_else(|| format!("{key:?} must be a string, got {value}"))
}

fn array_field<'a>(object: &'a Value, key: &str) -> Result<&'a Vec<Value>, String> {
    let value = field(object, key)?;
    value
        .as_array()
        .ok_or_else(|| format!("{key:?} must be an array, got {value}"))
}

/// `null` or an integer number of milliseconds.
fn opt_ms(value: &Value, what: &str) -> Result<Option<u64>, String> {
    match value {
        Value::Null => Ok(None),
        other => other
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("{what} must be null or integer ms, got {other}")),
    }
}

fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// An instant as whole milliseconds; vectors never produce sub-ms instants.
fn whole_ms(instant: Instant) -> Result<u64, String> {
    let micros = instant.as_micros();
    if micros % 1000 == 0 {
        Ok(micros / 1000)
    } else {
        Err(format!("instant {instant:?} is not a whole millisecond"))
    }
}

fn expect_eq<T: PartialEq + Display>(what: &str, expected: T, actual: T) -> Check {
    if expected == actual {
        Ok(())
    } else {
        Err(format!("{what}: expected {expected}, got {actual}"))
    }
}

fn show(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("core types serialize")
}

// ----- the subset matcher -----

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
        (Value::Object(want), Some(Value::Object(have))) => {
            for (key, value) in want {
                subset(value, have.get(key), &format!("{path}.{key}"))?;
            }
            Ok(())
        }
        (Value::Array(want), Some(Value::Array(have))) if want.len() == have.len() => want
            .iter()
            .zip(have)
            .enumerate()
            .try_for_each(|(i, (w, h))| subset(w, Some(h), &format!("{path}[{i}]"))),
        (Value::Number(want), Some(Value::Number(have))) => {
            let same = match (want.as_u64(), have.as_u64()) {
                (Some(w), Some(h)) => w == h,
                _ => want.as_f64() == have.as_f64(),
            };
            if same {
                Ok(())
            } else {
                mismatch()
            }
        }
        (want, Some(have)) if want == have => Ok(()),
        _ => mismatch(),
    }
}

// ----- heartbeat.json -----

#[test]
fn heartbeat_vectors() {
    let file = load(&vectors_dir().join("heartbeat.json"));
    let mut failures = Vec::new();
    let mut cases = 0;
    for (i, case) in array_field(&file, "decide").unwrap().iter().enumerate() {
        cases += 1;
        if let Err(e) = run_decide_case(case) {
            failures.push(format!("decide[{i}] {}: {e}", case["name"]));
        }
    }
    for (i, case) in array_field(&file, "sequences").unwrap().iter().enumerate() {
        cases += 1;
        if let Err(e) = run_heartbeat_sequence(case) {
            failures.push(format!("sequences[{i}] {}: {e}", case["name"]));
        }
    }
    report("heartbeat.json", cases, &failures);
}

fn run_decide_case(case: &Value) -> Check {
    let action = decide(
        at(u64_field(case, "last_received_at")?),
        opt_ms(field(case, "pending_probe_at")?, "pending_probe_at")?.map(at),
        at(u64_field(case, "now")?),
        ms(u64_field(case, "interval_ms")?),
        ms(u64_field(case, "timeout_ms")?),
    );
    subset(field(case, "expect")?, Some(&to_json(&action)), "decide")
}

fn run_heartbeat_sequence(case: &Value) -> Check {
    let mut heartbeat = Heartbeat::new(
        at(u64_field(case, "start")?),
        ms(u64_field(case, "interval_ms")?),
        ms(u64_field(case, "timeout_ms")?),
    );
    if let Some(server) = case.get("server_ping_interval_ms") {
        heartbeat.set_server_ping_interval(opt_ms(server, "server_ping_interval_ms")?.map(ms));
    }
    for (i, step) in array_field(case, "steps")?.iter().enumerate() {
        run_heartbeat_step(&mut heartbeat, step).map_err(|e| format!("step {i} {step}: {e}"))?;
    }
    Ok(())
}

fn run_heartbeat_step(heartbeat: &mut Heartbeat, step: &Value) -> Check {
    if let Some(frame) = step.get("frame") {
        let now = frame.as_u64().ok_or("\"frame\" must be integer ms")?;
        heartbeat.handle_frame(at(now));
    } else {
        let now = u64_field(step, "tick")?;
        let (action, cause) = match heartbeat.handle_timeout(at(now)) {
            Ok(action) => (to_json(&action), Value::Null),
            Err(cause) => (to_json(&HeartbeatAction::Close), to_json(&cause)),
        };
        subset(field(step, "expect")?, Some(&action), "action")?;
        if let Some(want) = step.get("cause") {
            subset(want, Some(&cause), "cause")?;
        }
    }
    if let Some(want) = step.get("next_timeout_ms") {
        let got = whole_ms(heartbeat.poll_timeout())?;
        subset(want, Some(&json!(got)), "next_timeout_ms")?;
    }
    if let Some(want) = step.get("probes_sent") {
        subset(want, Some(&json!(heartbeat.probes_sent())), "probes_sent")?;
    }
    if let Some(want) = step.get("pending_probe_at") {
        let got = heartbeat.pending_probe_at().map(whole_ms).transpose()?;
        let got = got.map_or(Value::Null, |v| json!(v));
        // Exact: a null here means "no probe pending", not "any".
        if *want != got {
            return Err(format!("pending_probe_at: expected {want}, got {got}"));
        }
    }
    if let Some(want) = step.get("last_received_at") {
        let got = whole_ms(heartbeat.last_received_at())?;
        subset(want, Some(&json!(got)), "last_received_at")?;
    }
    Ok(())
}

// ----- backoff.json -----

#[test]
fn backoff_vectors() {
    let file = load(&vectors_dir().join("backoff.json"));
    let mut failures = Vec::new();
    let mut cases = 0;
    for (i, case) in array_field(&file, "cases").unwrap().iter().enumerate() {
        cases += 1;
        if let Err(e) = run_backoff_case(case) {
            failures.push(format!("cases[{i}] {}: {e}", case["name"]));
        }
    }
    report("backoff.json", cases, &failures);
}

#[test]
fn splitmix64_vectors() {
    let file = load(&vectors_dir().join("backoff.json"));
    let mut failures = Vec::new();
    let mut cases = 0;
    for (i, case) in array_field(&file, "splitmix64").unwrap().iter().enumerate() {
        cases += 1;
        if let Err(e) = run_splitmix_case(case) {
            failures.push(format!("splitmix64[{i}] seed {}: {e}", case["seed"]));
        }
    }
    report("backoff.json (splitmix64)", cases, &failures);
}

fn run_splitmix_case(case: &Value) -> Check {
    let seed = parse_u64(str_field(case, "seed")?)?;
    let mut rng = SplitMix64::new(seed);
    for (i, want) in array_field(case, "u64")?.iter().enumerate() {
        let want = parse_u64(want.as_str().ok_or("u64 outputs are decimal strings")?)?;
        expect_eq(&format!("u64[{i}]"), want, rng.next_u64())?;
    }
    let mut rng = SplitMix64::new(seed);
    for (i, want) in array_field(case, "unit_numerators")?.iter().enumerate() {
        let numerator = want.as_u64().ok_or("numerators are integers")?;
        let want = numerator as f64 / (1u64 << 53) as f64;
        expect_eq(&format!("unit[{i}]"), want, rng.next_unit())?;
    }
    Ok(())
}

fn parse_u64(text: &str) -> Result<u64, String> {
    text.parse()
        .map_err(|e| format!("{text:?} is not a decimal u64: {e}"))
}

fn parse_policy(value: &Value) -> Result<BackoffPolicy, String> {
    let policy: BackoffPolicy = serde_json::from_value(value.clone())
        .map_err(|e| format!("policy {value} does not deserialize: {e}"))?;
    // The vectors spell policies exactly as BackoffPolicy serializes them.
    subset(value, Some(&to_json(&policy)), "policy round trip")?;
    subset(&to_json(&policy), Some(value), "policy round trip")?;
    Ok(policy)
}

fn run_backoff_case(case: &Value) -> Check {
    let mut backoff = Backoff::new(parse_policy(field(case, "policy")?)?);
    let draws = array_field(case, "draws")?
        .iter()
        .map(|d| {
            d.as_f64()
                .ok_or_else(|| format!("draw {d} is not a number"))
        })
        .collect::<Result<Vec<f64>, String>>()?;
    let mut rng = RecordedDraws::new(draws);
    if let Some(delays) = case.get("delays_ms") {
        let delays = delays.as_array().ok_or("\"delays_ms\" must be an array")?;
        for (i, want) in delays.iter().enumerate() {
            let delay = backoff.next_delay(Instant::ZERO, &mut rng);
            subset(want, Some(&delay_json(delay)?), &format!("delays_ms[{i}]"))?;
        }
    }
    if let Some(steps) = case.get("steps") {
        let steps = steps.as_array().ok_or("\"steps\" must be an array")?;
        for (i, step) in steps.iter().enumerate() {
            run_backoff_step(&mut backoff, &mut rng, step)
                .map_err(|e| format!("step {i} {step}: {e}"))?;
        }
    }
    expect_eq(
        "draws_taken",
        u64_field(case, "draws_taken")?,
        rng.taken() as u64,
    )?;
    expect_eq(
        "attempt",
        u64_field(case, "attempt")?,
        u64::from(backoff.attempt()),
    )
}

fn run_backoff_step(backoff: &mut Backoff, rng: &mut RecordedDraws, step: &Value) -> Check {
    if let Some(now) = step.get("now") {
        let now = now.as_u64().ok_or("\"now\" must be integer ms")?;
        let delay = backoff.next_delay(at(now), rng);
        subset(
            field(step, "delay_ms")?,
            Some(&delay_json(delay)?),
            "delay_ms",
        )
    } else if step.get("reset").is_some() {
        backoff.reset();
        Ok(())
    } else if let Some(slots) = step.get("slots") {
        let slots = match slots {
            Value::Null => None,
            slots => Some(PacingSlots::new(
                ms(u64_field(slots, "period_ms")?),
                ms(u64_field(slots, "phase_ms")?),
                at(u64_field(slots, "anchor")?),
            )),
        };
        backoff.set_slots(slots);
        Ok(())
    } else if let Some(advice) = step.get("advise") {
        backoff.advise(RetryWindow::from_advice(
            at(u64_field(advice, "at")?),
            ms(u64_field(advice, "min_delay_ms")?),
            ms(u64_field(advice, "max_delay_ms")?),
        ));
        Ok(())
    } else {
        Err("unknown backoff step".into())
    }
}

/// A delay as integer ms; the vectors only produce whole milliseconds.
fn delay_json(delay: Duration) -> Result<Value, String> {
    if delay.subsec_nanos() % 1_000_000 == 0 {
        Ok(json!(delay.as_millis() as u64))
    } else {
        Err(format!("delay {delay:?} is not a whole millisecond"))
    }
}

// ----- session/*.json -----

#[test]
fn session_traces() {
    let dir = vectors_dir().join("session");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    let mut failures = Vec::new();
    for path in &paths {
        let trace = load(path);
        let file = path.file_name().unwrap_or_default().to_string_lossy();
        if let Err(e) = run_trace(&trace) {
            failures.push(format!("session/{file} (trace {}): {e}", trace["name"]));
        }
    }
    report("session/*.json", paths.len(), &failures);
}

// ----- fallback.json: the switch back, session traces -----

/// The `switch` traces of `fallback.json` (its `choice` and `send_retry`
/// cases are run by `fallback_vectors.rs`).
#[test]
fn fallback_switch_traces() {
    let vectors = load(&vectors_dir().join("fallback.json"));
    let traces = array_field(&vectors, "switch").expect("fallback.json has \"switch\"");
    let failures: Vec<String> = traces
        .iter()
        .filter_map(|trace| {
            run_trace(trace)
                .err()
                .map(|e| format!("fallback.json switch {}: {e}", trace["name"]))
        })
        .collect();
    report("fallback.json (switch)", traces.len(), &failures);
}

fn run_trace(trace: &Value) -> Check {
    let config = config_from_json(field(trace, "config")?)?;
    // Every batch also goes through the core's one invariant checker
    // (requests learned from the wire; no advice reported, so no delay bound).
    let mut checks = ClientChecks::all();
    checks.delays = false;
    let mut invariants = ClientInvariants::new(&config, checks);
    let mut session = Session::new(config, Instant::ZERO, u64_field(trace, "seed")?);
    let mut last = 0;
    for (i, step) in array_field(trace, "steps")?.iter().enumerate() {
        let driven = (&mut session, &mut invariants);
        run_session_step(driven, step, &mut last).map_err(|e| {
            format!(
                "step {i} (at {} ms) failed: {e}\n    step: {}",
                step["at"],
                show(step)
            )
        })?;
    }
    Ok(())
}

/// Config::default() with the fields the trace changes, durations in ms.
fn config_from_json(value: &Value) -> Result<Config, String> {
    let mut config = Config::default();
    let fields = value.as_object().ok_or("\"config\" must be an object")?;
    for (key, value) in fields {
        let duration = || {
            value
                .as_u64()
                .map(ms)
                .ok_or_else(|| format!("config {key:?} must be integer ms"))
        };
        match key.as_str() {
            "backoff" => config.set_backoff(parse_policy(value)?),
            "resubscribe_backoff" => config.set_resubscribe_backoff(parse_policy(value)?),
            "unreachable_retry" => config.set_unreachable_retry(parse_policy(value)?),
            "max_attempts" => config.set_max_attempts(match value {
                Value::Null => None,
                v => Some(
                    v.as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or("config \"max_attempts\" must be null or a u32")?,
                ),
            }),
            "reset_after_ms" => config.set_reset_after(duration()?),
            "connect_timeout_ms" => config.set_connect_timeout(duration()?),
            "probe_interval_ms" => config.set_probe_interval(duration()?),
            "probe_timeout_ms" => config.set_probe_timeout(duration()?),
            "request_timeout_ms" => config.set_request_timeout(duration()?),
            "subscribe_timeout_ms" => config.set_subscribe_timeout(duration()?),
            "online_delay_ms" => config.set_online_delay(duration()?),
            "token" => config.set_token(value.as_str().map(str::to_owned)),
            "token_provider" => config.set_token_provider(
                value
                    .as_bool()
                    .ok_or("config \"token_provider\" must be a bool")?,
            ),
            other => return Err(format!("unknown config field {other:?}")),
        };
    }
    Ok(config)
}

const ACTIONS: [&str; 14] = [
    "set_token",
    "refresh_subscription_token",
    "start",
    "refresh_token",
    "token_failed",
    "stop",
    "reconnect_now",
    "check_liveness",
    "subscribe",
    "unsubscribe",
    "request",
    "timeout",
    "input",
    "replace_transport_when_quiet",
];
const STEP_CHECKS: [&str; 8] = [
    "at",
    "expect",
    "result",
    "state",
    "ready",
    "readiness",
    "next_timeout_ms",
    "attempt",
];

fn run_session_step(
    (session, invariants): (&mut Session, &mut ClientInvariants),
    step: &Value,
    last: &mut u64,
) -> Check {
    let object = step.as_object().ok_or("a step must be an object")?;
    let action = step_action(object)?;
    let now = u64_field(step, "at")?;
    if now < *last {
        return Err(format!("time goes backwards: {now} ms after {last} ms"));
    }
    *last = now;
    if action != "timeout" {
        // A driver runs every timer that is due before it feeds a later
        // input; a trace that skips one would test something no driver does.
        if let Some(due) = session.poll_timeout() {
            if due < at(now) {
                return Err(format!(
                    "invalid trace: a timeout is due at {due:?}, before this step; add a timeout step"
                ));
            }
        }
    }

    if action == "input" {
        let input = input_from_json(&step[action])?;
        if let Input::TransportFailed(id, _) | Input::TransportClosed(id, _) = input {
            if session.current_transport() == Some(id) {
                invariants.transport_ended(id);
            }
        }
    }
    let result = perform(session, action, &step[action], at(now))?;
    match step.get("result") {
        Some(want) => subset(want, Some(&result), "result")?,
        None if result.is_string() && result != "ok" => {
            return Err(format!("the command failed with {result}"))
        }
        None => {}
    }

    let raw: Vec<Output> = std::iter::from_fn(|| session.poll_output()).collect();
    invariants
        .batch(at(now), session, &raw)
        .map_err(|v| v.to_string())?;
    if action == "timeout" {
        let checked = invariants.after_timeout(at(now), session);
        checked.map_err(|v| v.to_string())?;
    }
    let outputs: Vec<Value> = raw.iter().map(to_json).collect();
    let expected = array_field(step, "expect")?;
    let same = expected.len() == outputs.len()
        && expected
            .iter()
            .zip(&outputs)
            .enumerate()
            .all(|(i, (w, h))| subset(w, Some(h), &format!("expect[{i}]")).is_ok());
    if !same {
        let detail = if expected.len() == outputs.len() {
            expected
                .iter()
                .zip(&outputs)
                .enumerate()
                .find_map(|(i, (w, h))| subset(w, Some(h), &format!("expect[{i}]")).err())
                .unwrap_or_default()
        } else {
            format!("expected {} outputs, got {}", expected.len(), outputs.len())
        };
        return Err(format!(
            "outputs differ ({detail})\n    expected: {}\n    actual:   {}",
            show(&Value::Array(expected.clone())),
            show(&Value::Array(outputs))
        ));
    }

    if let Some(want) = step.get("state") {
        subset(want, Some(&to_json(&session.state())), "state")?;
    }
    if let Some(want) = step.get("ready") {
        subset(want, Some(&json!(session.is_ready())), "ready")?;
    }
    if let Some(want) = step.get("readiness") {
        subset(want, Some(&to_json(&session.readiness())), "readiness")?;
    }
    if let Some(want) = step.get("next_timeout_ms") {
        let got = session.poll_timeout().map(whole_ms).transpose()?;
        let got = got.map_or(Value::Null, |v| json!(v));
        // Exact: null means "nothing scheduled".
        if *want != got {
            return Err(format!("next_timeout_ms: expected {want}, got {got}"));
        }
    }
    if let Some(want) = step.get("attempt") {
        subset(want, Some(&json!(session.attempt())), "attempt")?;
    }
    Ok(())
}

/// The one action key of a step; anything else must be a known check.
fn step_action(object: &Map<String, Value>) -> Result<&'static str, String> {
    let mut found = None;
    for key in object.keys() {
        if let Some(action) = ACTIONS.iter().find(|a| **a == key) {
            if found.replace(*action).is_some() {
                return Err("a step has exactly one action".into());
            }
        } else if !STEP_CHECKS.contains(&key.as_str()) {
            return Err(format!("unknown step field {key:?}"));
        }
    }
    found.ok_or_else(|| format!("a step needs one action of {ACTIONS:?}"))
}

/// Run one action; the command's result as JSON: "ok", a request id, or an error name.
fn perform(
    session: &mut Session,
    action: &str,
    arg: &Value,
    now: Instant,
) -> Result<Value, String> {
    let ok = || json!("ok");
    let stopped = |_: Stopped| json!("stopped");
    let channel = || {
        arg.as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("{action:?} takes a channel name"))
    };
    Ok(match action {
        "start" => session.start(now).map_or_else(stopped, |()| ok()),
        "reconnect_now" => session.reconnect_now(now).map_or_else(stopped, |()| ok()),
        "check_liveness" => {
            session.check_liveness(now);
            ok()
        }
        "stop" => {
            session.stop(now);
            ok()
        }
        "timeout" => {
            session.handle_timeout(now);
            ok()
        }
        "subscribe" => match arg.get("token") {
            // `{"channel": C, "token": T}`: with a subscription token.
            Some(token) => session.subscribe_with_token(
                now,
                str_field(arg, "channel")?,
                token.as_str().map(str::to_owned),
            ),
            None => session.subscribe(now, &channel()?),
        }
        .map_or_else(|e| subscribe_error(&e), |()| ok()),
        "refresh_subscription_token" => session
            .refresh_subscription_token(
                now,
                str_field(arg, "channel")?,
                str_field(arg, "token")?.to_owned(),
            )
            .map_or_else(|e| subscribe_error(&e), |()| ok()),
        "unsubscribe" => session
            .unsubscribe(now, &channel()?)
            .map_or_else(|e| subscribe_error(&e), |()| ok()),
        "request" => session
            .request(now, call_from_json(arg)?)
            .map_or_else(|e| request_error(&e), |id| json!(id.0)),
        "input" => {
            session.handle_input(now, input_from_json(arg)?);
            ok()
        }
        "replace_transport_when_quiet" => {
            let by = at(u64_field(arg, "by")?);
            session
                .replace_transport_when_quiet(now, by)
                .map_or_else(stopped, |()| ok())
        }
        "refresh_token" => {
            let token = arg.as_str().ok_or("\"refresh_token\" takes a token")?;
            session.refresh_token(now, token.to_owned());
            ok()
        }
        "set_token" => {
            session.set_token(arg.as_str().map(str::to_owned));
            ok()
        }
        "token_failed" => {
            let error = match arg.as_str() {
                Some("unavailable") => TokenError::Unavailable,
                Some("unauthorized") => TokenError::Unauthorized,
                _ => {
                    return Err("\"token_failed\" takes \"unavailable\" or \"unauthorized\"".into())
                }
            };
            session.token_failed(now, error);
            ok()
        }
        other => return Err(format!("unknown action {other:?}")),
    })
}

fn subscribe_error(error: &SubscribeError) -> Value {
    json!(match error {
        SubscribeError::AlreadySubscribed(_) => "already_subscribed",
        SubscribeError::NotSubscribed(_) => "not_subscribed",
        SubscribeError::Stopped => "stopped",
        other => return json!(format!("{other:?}")),
    })
}

fn request_error(error: &RequestError) -> Value {
    json!(match error {
        RequestError::NotReady => "not_ready",
        RequestError::Stopped => "stopped",
        RequestError::TooLarge { .. } => "too_large",
        other => return json!(format!("{other:?}")),
    })
}

fn call_from_json(arg: &Value) -> Result<Call, String> {
    let method = str_field(arg, "method")?;
    // `params_repeat: {"text": T, "times": N}` stands for the string T
    // repeated N times (frames near the 1 MiB limit, without a 1 MiB vector).
    let params = match arg.get("params_repeat") {
        Some(repeat) => {
            let times = usize::try_from(u64_field(repeat, "times")?).map_err(|e| e.to_string())?;
            Value::String(str_field(repeat, "text")?.repeat(times))
        }
        None => arg.get("params").cloned().unwrap_or(Value::Null),
    };
    let mut call = Call::new(method, params);
    if let Some(timeout) = opt_ms(arg.get("timeout_ms").unwrap_or(&Value::Null), "timeout_ms")? {
        call = call.with_timeout(ms(timeout));
    }
    if let Some(idem) = arg.get("idem").and_then(Value::as_str) {
        call = call.with_idempotency_key(idem);
    }
    Ok(call)
}

/// `{"opened": id}`, `{"failed": id, "failure": ..}`, `{"closed": id, "code": .., "reason": ..}`,
/// `{"frame": id, "text": ..}` or `{"network": bool}`.
fn input_from_json(arg: &Value) -> Result<Input, String> {
    let id = |key: &str| u64_field(arg, key).map(TransportId);
    if arg.get("opened").is_some() {
        Ok(Input::TransportOpened(id("opened")?))
    } else if arg.get("failed").is_some() {
        let failure: Failure = serde_json::from_value(field(arg, "failure")?.clone())
            .map_err(|e| format!("bad failure: {e}"))?;
        Ok(Input::TransportFailed(id("failed")?, failure))
    } else if arg.get("closed").is_some() {
        let close = json!({
            "code": arg.get("code").cloned().unwrap_or(Value::Null),
            "reason": arg.get("reason").cloned().unwrap_or(json!("")),
        });
        let close: CloseInfo =
            serde_json::from_value(close).map_err(|e| format!("bad close: {e}"))?;
        Ok(Input::TransportClosed(id("closed")?, close))
    } else if arg.get("frame").is_some() {
        Ok(Input::Frame(
            id("frame")?,
            str_field(arg, "text")?.to_owned(),
        ))
    } else if let Some(online) = arg.get("network") {
        let online = online.as_bool().ok_or("\"network\" must be a boolean")?;
        Ok(Input::Network { online })
    } else {
        Err(format!("unknown input {arg}"))
    }
}
