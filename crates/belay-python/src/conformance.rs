//! The core's pure parts, bound so that the Python tests run the shared
//! conformance vectors (spec/vectors/: the codec, the heartbeat, the
//! generator, the backoff policies) through this very extension, as crates/belay-proto/tests run
//! them in Rust: a wheel carrying a core that disagreed would fail them.
//! Instants are whole milliseconds on the vectors' clock; one that is not
//! raises, as the Rust runner fails.

use std::time::Duration;

use belay_proto::backoff::{Backoff, BackoffPolicy, PacingSlots, RetryWindow};
use belay_proto::heartbeat::{decide, Heartbeat, HeartbeatAction, LivenessFailure};
use belay_proto::message::{self, ClientMessage, DecodeError, Reply, Response, ServerMessage};
use belay_proto::rng::{RandomSource, RecordedDraws, SplitMix64};
use belay_proto::Instant;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

fn json_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A decode failure: `ValueError` whose message is the error's serde form.
fn decode_error(error: &DecodeError) -> PyErr {
    PyValueError::new_err(serde_json::to_string(error).unwrap_or_else(|e| e.to_string()))
}

fn without(value: &mut serde_json::Value, key: &str) -> PyResult<serde_json::Value> {
    value
        .as_object_mut()
        .and_then(|object| object.remove(key))
        .ok_or_else(|| PyValueError::new_err(format!("the decoded message has no {key:?}")))
}

/// `decode_server(frame)`: the message as the vectors write it (its serde
/// form, JSON text) and its payload's text (a publication's `data`, a
/// result), or `ValueError` with the `DecodeError`.
#[pyfunction]
pub(crate) fn decode_server(frame: &str) -> PyResult<(String, Option<String>)> {
    let mut decoded = message::decode_server(frame).map_err(|e| decode_error(&e))?;
    let (key, payload) = match &mut decoded {
        ServerMessage::Publication(publication) => {
            ("data", Some(std::mem::take(&mut publication.data)))
        }
        ServerMessage::Response(Response {
            reply: Reply::Result(result),
            ..
        }) => ("result", Some(std::mem::take(result))),
        _ => ("", None),
    };
    let mut value = serde_json::to_value(&decoded).map_err(json_error)?;
    if payload.is_some() {
        without(&mut value, key)?;
    }
    Ok((value.to_string(), payload.map(|raw| raw.get().to_owned())))
}

/// `decode_client(frame)`: the message's serde form and a request's
/// `params` (both JSON text), or `ValueError` with the `DecodeError`.
#[pyfunction]
pub(crate) fn decode_client(frame: &str) -> PyResult<(String, Option<String>)> {
    let decoded = message::decode_client(frame).map_err(|e| decode_error(&e))?;
    let mut value = serde_json::to_value(&decoded).map_err(json_error)?;
    let params = match decoded {
        ClientMessage::Request(_) => Some(without(&mut value, "params")?.to_string()),
        _ => None,
    };
    Ok((value.to_string(), params))
}

/// `encode_client(message)`: the frame the core writes for a client
/// message (given as its serde form), and its `encoded_len`.
#[pyfunction]
pub(crate) fn encode_client(message: &str) -> PyResult<(String, usize)> {
    let message: ClientMessage = serde_json::from_str(message).map_err(json_error)?;
    Ok((
        message::encode_client(&message),
        message::encoded_len(&message),
    ))
}

fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

fn whole_ms(instant: Instant) -> PyResult<u64> {
    let micros = instant.as_micros();
    if micros % 1000 == 0 {
        Ok(micros / 1000)
    } else {
        Err(PyValueError::new_err(format!(
            "instant {instant:?} is not a whole millisecond"
        )))
    }
}

fn action_name(action: HeartbeatAction) -> PyResult<String> {
    let value = serde_json::to_value(action).map_err(json_error)?;
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| PyValueError::new_err(format!("{action:?} has no name")))
}

/// The pure probe policy `decide`: `"wait"`, `"probe"` or `"close"`.
#[pyfunction]
#[pyo3(signature = (last_received_at, pending_probe_at, now, interval_ms, timeout_ms))]
pub(crate) fn heartbeat_decide(
    last_received_at: u64,
    pending_probe_at: Option<u64>,
    now: u64,
    interval_ms: u64,
    timeout_ms: u64,
) -> PyResult<String> {
    action_name(decide(
        at(last_received_at),
        pending_probe_at.map(at),
        at(now),
        Duration::from_millis(interval_ms),
        Duration::from_millis(timeout_ms),
    ))
}

/// The core's `Heartbeat` (probe policy and server-ping watchdog).
#[pyclass(module = "belay._native")]
pub(crate) struct VectorHeartbeat {
    inner: Heartbeat,
}

#[pymethods]
impl VectorHeartbeat {
    #[new]
    fn new(start: u64, interval_ms: u64, timeout_ms: u64) -> Self {
        VectorHeartbeat {
            inner: Heartbeat::new(
                at(start),
                Duration::from_millis(interval_ms),
                Duration::from_millis(timeout_ms),
            ),
        }
    }

    fn set_server_ping_interval(&mut self, interval_ms: Option<u64>) {
        self.inner
            .set_server_ping_interval(interval_ms.map(Duration::from_millis));
    }

    fn handle_frame(&mut self, now: u64) {
        self.inner.handle_frame(at(now));
    }

    /// `(action, cause)`: the cause (`probe_unanswered`,
    /// `server_pings_missing`) only with `close`.
    fn handle_timeout(&mut self, now: u64) -> PyResult<(String, Option<String>)> {
        match self.inner.handle_timeout(at(now)) {
            Ok(action) => Ok((action_name(action)?, None)),
            Err(cause) => Ok((
                action_name(HeartbeatAction::Close)?,
                Some(failure_name(cause)?),
            )),
        }
    }

    fn poll_timeout(&self) -> PyResult<u64> {
        whole_ms(self.inner.poll_timeout())
    }

    fn probes_sent(&self) -> u64 {
        self.inner.probes_sent()
    }

    fn pending_probe_at(&self) -> PyResult<Option<u64>> {
        self.inner.pending_probe_at().map(whole_ms).transpose()
    }

    fn last_received_at(&self) -> PyResult<u64> {
        whole_ms(self.inner.last_received_at())
    }
}

fn failure_name(cause: LivenessFailure) -> PyResult<String> {
    let value = serde_json::to_value(cause).map_err(json_error)?;
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| PyValueError::new_err(format!("{cause:?} has no name")))
}

/// SplitMix64 from `seed` (decimal): its first `count` outputs (decimal
/// strings), and the first `count` unit draws of a second generator as
/// numerators of 2^-53.
#[pyfunction]
pub(crate) fn splitmix64(seed: &str, count: usize) -> PyResult<(Vec<String>, Vec<u64>)> {
    let seed: u64 = seed
        .parse()
        .map_err(|e| PyValueError::new_err(format!("seed {seed:?}: {e}")))?;
    let mut outputs = SplitMix64::new(seed);
    let mut units = SplitMix64::new(seed);
    let values = (0..count).map(|_| outputs.next_u64().to_string()).collect();
    // Exact: a unit draw is a 53-bit numerator times 2^-53.
    let numerators = (0..count)
        .map(|_| (units.next_unit() * (1u64 << 53) as f64) as u64)
        .collect();
    Ok((values, numerators))
}

/// The core's `Backoff` for a policy (its serde form, JSON text), drawing
/// from recorded draws (the last repeated once they are used up).
#[pyclass(module = "belay._native")]
pub(crate) struct VectorBackoff {
    backoff: Backoff,
    draws: RecordedDraws,
    policy: String,
}

#[pymethods]
impl VectorBackoff {
    #[new]
    fn new(policy: &str, draws: Vec<f64>) -> PyResult<Self> {
        let parsed: BackoffPolicy = serde_json::from_str(policy).map_err(json_error)?;
        Ok(VectorBackoff {
            policy: serde_json::to_string(&parsed).map_err(json_error)?,
            backoff: Backoff::new(parsed),
            draws: RecordedDraws::new(draws),
        })
    }

    /// The policy as the core serializes it again (JSON text).
    fn policy(&self) -> String {
        self.policy.clone()
    }

    /// `next_delay(now)` in whole milliseconds.
    fn next_delay(&mut self, now: u64) -> PyResult<u64> {
        let delay = self.backoff.next_delay(at(now), &mut self.draws);
        if delay.subsec_nanos() % 1_000_000 == 0 {
            Ok(delay.as_millis() as u64)
        } else {
            Err(PyValueError::new_err(format!(
                "delay {delay:?} is not a whole millisecond"
            )))
        }
    }

    fn reset(&mut self) {
        self.backoff.reset();
    }

    /// Pacing slots `(period_ms, phase_ms, anchor)`, or none.
    fn set_slots(&mut self, slots: Option<(u64, u64, u64)>) {
        self.backoff.set_slots(slots.map(|(period, phase, anchor)| {
            PacingSlots::new(
                Duration::from_millis(period),
                Duration::from_millis(phase),
                at(anchor),
            )
        }));
    }

    /// Retry advice received at `at`: `[at + min, at + max)`.
    fn advise(&mut self, at_ms: u64, min_delay_ms: u64, max_delay_ms: u64) {
        self.backoff.advise(RetryWindow::from_advice(
            at(at_ms),
            Duration::from_millis(min_delay_ms),
            Duration::from_millis(max_delay_ms),
        ));
    }

    fn draws_taken(&self) -> usize {
        self.draws.taken()
    }

    fn attempt(&self) -> u32 {
        self.backoff.attempt()
    }
}
