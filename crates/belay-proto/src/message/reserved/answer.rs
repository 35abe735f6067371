//! `$answer` (spec/PROTOCOL.md §10.3): a host's outcome of a call the
//! relay delivered. Params `{"call": N, "result": <json>}` or `{"call": N,
//! "error": {"code": ..., "message": ..., "retry_after_ms"?: N}}`, exactly
//! one of `result` and `error`; a `result` of `null` is a result (serde
//! would read a plain `Option` as absent, hence the wire struct below).
//! Unknown fields are refused; the `error` object is read as any
//! [`ErrorBody`] (its own unknown fields ignored, `message` optional).
//! Result `{}`.

use serde::{Deserialize, Deserializer, Serialize};

use crate::message::{ErrorBody, Payload, RawJson, Reply};

/// `$answer` params: the host's outcome of call `call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "AnswerWire", into = "AnswerWire")]
#[non_exhaustive]
pub struct AnswerParams {
    /// The id of the call answered, as its delivery named it.
    pub call: u64,
    /// What the caller gets.
    pub outcome: AnswerOutcome,
}

impl AnswerParams {
    /// Answer `call` with `outcome`.
    pub fn new(call: u64, outcome: AnswerOutcome) -> Self {
        AnswerParams { call, outcome }
    }
}

/// A host's outcome of a call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AnswerOutcome {
    /// The method's result (`null` included).
    Result(Payload),
    /// The method's error, passed to the caller as it is.
    Error(ErrorBody),
}

impl AnswerOutcome {
    /// The reply its caller gets.
    pub fn into_reply(self) -> Reply {
        match self {
            AnswerOutcome::Result(result) => Reply::Result(RawJson::from_value(&result)),
            AnswerOutcome::Error(error) => Reply::Error(error),
        }
    }
}

/// `$answer` result: `{}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AnswerResult {}

impl AnswerResult {
    /// `{}`.
    pub fn new() -> Self {
        AnswerResult {}
    }
}

/// `$answer` params as they are on the wire.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerWire {
    call: u64,
    /// `Some(Null)` for `"result": null`; `None` only when absent.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    result: Option<Payload>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ErrorBody>,
}

/// A field that is there, whatever its value (`null` too).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Payload>, D::Error> {
    Payload::deserialize(deserializer).map(Some)
}

impl TryFrom<AnswerWire> for AnswerParams {
    type Error = &'static str;

    fn try_from(wire: AnswerWire) -> Result<Self, Self::Error> {
        let outcome = match (wire.result, wire.error) {
            (Some(result), None) => AnswerOutcome::Result(result),
            (None, Some(error)) => AnswerOutcome::Error(error),
            _ => return Err("exactly one of `result` and `error` is required"),
        };
        Ok(AnswerParams::new(wire.call, outcome))
    }
}

impl From<AnswerParams> for AnswerWire {
    fn from(params: AnswerParams) -> Self {
        let (result, error) = match params.outcome {
            AnswerOutcome::Result(result) => (Some(result), None),
            AnswerOutcome::Error(error) => (None, Some(error)),
        };
        AnswerWire {
            call: params.call,
            result,
            error,
        }
    }
}
