//! Runs `spec/vectors/fallback.json`'s `choice` sequences against
//! [`TransportChoice`] and its `send_retry` cases against [`SendRetry`]
//! (its `switch` traces go through the session trace runner in
//! `vectors.rs`). The TypeScript client runs the same file
//! (`clients/js/test/fallback_vectors.test.ts`); the format is in
//! `spec/vectors/README.md`.

use std::path::Path;
use std::time::Duration;

use belay_proto::{
    DialOutcome, Failure, FallbackConfig, Instant, SendOutcome, SendRetry, SendRetryPolicy,
    SendStep, TransportChoice, TransportKind,
};
use serde_json::{json, Value};

type Check = Result<(), String>;

fn vectors() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors/fallback.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("fallback.json is not JSON: {e}"))
}

fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

fn ms_of(instant: Instant) -> Result<u64, String> {
    let micros = instant.elapsed_since_origin().as_micros();
    if micros % 1000 != 0 {
        return Err(format!("{instant:?} is not a whole millisecond"));
    }
    u64::try_from(micros / 1000).map_err(|e| e.to_string())
}

fn u64_of(value: &Value, key: &str) -> Result<u64, String> {
    value[key]
        .as_u64()
        .ok_or_else(|| format!("{key:?} must be an integer"))
}

/// Every expected key present in `actual` with the same value (PROTOCOL's
/// vectors README, "subset matching"; `null` also matches an absent key).
fn subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(want), Value::Object(have)) => want
            .iter()
            .all(|(k, w)| subset(w, have.get(k).unwrap_or(&Value::Null))),
        (Value::Null, Value::Null) => true,
        (w, h) => w == h,
    }
}

/// Run every case, then fail with all the failures at once.
fn run_all(section: &str, run: impl Fn(&Value) -> Check) {
    let vectors = vectors();
    let cases = vectors[section]
        .as_array()
        .unwrap_or_else(|| panic!("fallback.json has no {section:?}"));
    assert!(!cases.is_empty(), "fallback.json {section}: no cases");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            run(case)
                .err()
                .map(|e| format!("{section} {}: {e}", case["name"]))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "fallback.json: {} of {} {section} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

// ----- choice -----

#[test]
fn choice_sequences() {
    run_all("choice", run_choice);
}

fn config_of(value: &Value) -> Result<FallbackConfig, String> {
    let mut config = FallbackConfig::default();
    let fields = value.as_object().ok_or("\"config\" must be an object")?;
    for (key, _) in fields {
        match key.as_str() {
            "after_failures" => {
                let n = u32::try_from(u64_of(value, key)?).map_err(|e| e.to_string())?;
                config.set_after_failures(n)
            }
            "retry_websocket_every_ms" => {
                config.set_retry_websocket_every(Duration::from_millis(u64_of(value, key)?))
            }
            "switch_within_ms" => {
                config.set_switch_within(Duration::from_millis(u64_of(value, key)?))
            }
            other => return Err(format!("unknown config field {other:?}")),
        };
    }
    Ok(config)
}

fn kind_of(value: &Value) -> Result<TransportKind, String> {
    match value.as_str() {
        Some("websocket") => Ok(TransportKind::WebSocket),
        Some("sse") => Ok(TransportKind::Sse),
        _ => Err(format!("unknown transport kind {value}")),
    }
}

fn kind_name(kind: TransportKind) -> &'static str {
    match kind {
        TransportKind::Sse => "sse",
        _ => "websocket",
    }
}

fn run_choice(case: &Value) -> Check {
    let mut choice = TransportChoice::new(config_of(&case["config"])?);
    let steps = case["steps"]
        .as_array()
        .ok_or("\"steps\" must be an array")?;
    for (i, step) in steps.iter().enumerate() {
        choice_step(&mut choice, step).map_err(|e| format!("step {i}: {e}\n    step: {step}"))?;
    }
    Ok(())
}

fn choice_step(choice: &mut TransportChoice, step: &Value) -> Check {
    let now = at(u64_of(step, "at")?);
    if let Some(kind) = step.get("dial") {
        let kind = kind_of(kind)?;
        match &step["outcome"] {
            Value::String(s) if s == "opened" => {
                choice.handle_dial(now, kind, &DialOutcome::Opened);
            }
            Value::Object(o) if o.contains_key("failed") => {
                let failure: Failure = serde_json::from_value(o["failed"].clone())
                    .map_err(|e| format!("bad failure: {e}"))?;
                choice.handle_dial(now, kind, &DialOutcome::Failed(failure.clone()));
                let told = serde_json::to_value(choice.failure_for_session(kind, failure))
                    .map_err(|e| e.to_string())?;
                if let Some(want) = step.get("told") {
                    if !subset(want, &told) {
                        return Err(format!("told: expected {want}, got {told}"));
                    }
                }
            }
            other => return Err(format!("unknown outcome {other}")),
        }
    } else if let Some(want) = step.get("poll_probe") {
        let got = choice.poll_probe(now);
        if Some(got) != want.as_bool() {
            return Err(format!("poll_probe: expected {want}, got {got}"));
        }
    } else if let Some(probe) = step.get("probe") {
        let opened = match probe.as_str() {
            Some("opened") => true,
            Some("failed") => false,
            _ => return Err(format!("unknown probe end {probe}")),
        };
        choice.handle_probe(now, opened);
    } else if let Some(want) = step.get("poll_switch") {
        let got = choice.poll_switch().map(ms_of).transpose()?;
        if *want != got.map_or(Value::Null, |ms| json!(ms)) {
            return Err(format!("poll_switch: expected {want}, got {got:?}"));
        }
    } else {
        return Err("a step needs one of dial, poll_probe, probe, poll_switch".into());
    }
    if let Some(want) = step.get("next") {
        let got = kind_name(choice.next());
        if want != got {
            return Err(format!("next: expected {want}, got {got}"));
        }
    }
    if let Some(want) = step.get("on_fallback") {
        if *want != json!(choice.on_fallback()) {
            return Err(format!("on_fallback: expected {want}"));
        }
    }
    if let Some(want) = step.get("switching") {
        if *want != json!(choice.is_switching()) {
            return Err(format!("switching: expected {want}"));
        }
    }
    if let Some(want) = step.get("poll_timeout") {
        let got = choice.poll_timeout().map(ms_of).transpose()?;
        if *want != got.map_or(Value::Null, |ms| json!(ms)) {
            return Err(format!("poll_timeout: expected {want}, got {got:?}"));
        }
    }
    Ok(())
}

// ----- send_retry -----

#[test]
fn send_retry_cases() {
    run_all("send_retry", run_send_retry);
}

fn run_send_retry(case: &Value) -> Check {
    let mut retry = SendRetry::new(SendRetryPolicy::default(), at(u64_of(case, "start")?));
    let deadline = ms_of(retry.deadline())?;
    if deadline != u64_of(case, "deadline")? {
        return Err(format!(
            "deadline: expected {}, got {deadline}",
            case["deadline"]
        ));
    }
    let steps = case["steps"]
        .as_array()
        .ok_or("\"steps\" must be an array")?;
    for (i, step) in steps.iter().enumerate() {
        let outcome = match &step["outcome"] {
            Value::String(s) if s == "no_answer" => SendOutcome::NoAnswer,
            Value::String(s) if s == "timed_out" => SendOutcome::TimedOut,
            Value::Object(o) => SendOutcome::Answered {
                status: u16::try_from(u64_of(&step["outcome"], "status")?)
                    .map_err(|e| e.to_string())?,
                retry_after_ms: o.get("retry_after_ms").and_then(Value::as_u64),
            },
            other => return Err(format!("step {i}: unknown outcome {other}")),
        };
        let got = match retry.handle_outcome(at(u64_of(step, "at")?), outcome) {
            SendStep::Sent => json!("sent"),
            SendStep::RetryAt(when) => json!({ "retry_at": ms_of(when)? }),
            SendStep::GiveUp(Failure::Network { .. }) => json!("give_up"),
            other => {
                return Err(format!(
                    "step {i}: gave up with {other:?}, not a network failure"
                ))
            }
        };
        if got != step["step"] {
            return Err(format!("step {i}: expected {}, got {got}", step["step"]));
        }
    }
    Ok(())
}
