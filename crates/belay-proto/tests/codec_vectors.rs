//! Runs `spec/vectors/codec.json`, the JSON text codec's vectors, which the
//! TypeScript client runs too (`clients/js/test/codec_vectors.test.ts`).
//!
//! One test per section: `decode_server` (frames a client receives),
//! `decode_client` (frames a server receives), `encode_client` and
//! `encode_server` (the exact text of encoded messages). The format is
//! described in `spec/vectors/README.md`. Every vector runs even if an
//! earlier one fails, and a failure names the section and the vector.

use belay_proto::message::{
    decode_client, decode_server, encode_client, encode_server, encoded_len, ClientMessage,
    DecodeError, ErrorBody, Pacing, Publication, RawJson, ReconnectAdvice, Refreshed, Reply,
    Response, ServerMessage, SubExpiring, Subscribed, Unsubscribed, Welcome,
};
use serde_json::{Map, Value};

mod vector_file;

use vector_file::Check;

// ----- loading, text pieces, reporting -----

/// Run `check` on every vector of `section` of codec.json.
fn run(section: &str, check: impl Fn(&Value) -> Check) {
    vector_file::run("codec.json", section, check);
}

fn field<'a>(object: &'a Value, key: &str) -> Result<&'a Value, String> {
    object
        .get(key)
        .ok_or_else(|| format!("missing field {key:?} in {}", short(&object.to_string())))
}

/// A text written as a string, or as a list of pieces: strings, and
/// `{"repeat": s, "times": n}` for `s` repeated `n` times.
fn text_of(value: &Value) -> Result<String, String> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Array(pieces) => pieces.iter().try_fold(String::new(), |mut text, piece| {
            match piece {
                Value::String(s) => text.push_str(s),
                Value::Object(_) => {
                    let s = field(piece, "repeat")?
                        .as_str()
                        .ok_or("\"repeat\" must be a string")?;
                    let times = field(piece, "times")?
                        .as_u64()
                        .ok_or("\"times\" must be an integer")?;
                    text.push_str(&s.repeat(usize::try_from(times).map_err(|e| e.to_string())?));
                }
                other => {
                    return Err(format!(
                        "a text piece must be a string or object, got {other}"
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

/// At most 300 characters of `text`, for failure messages about 1 MiB frames.
fn short(text: &str) -> String {
    match text.char_indices().nth(300) {
        Some((end, _)) => format!("{}… ({} bytes)", &text[..end], text.len()),
        None => text.to_owned(),
    }
}

/// The README's subset match, for expected errors: every expected key is
/// present in `actual` with an equal value.
fn subset(expected: &Value, actual: &Value) -> Check {
    let want = expected.as_object().ok_or("\"error\" must be an object")?;
    if want.contains_key("detail") {
        return Err("a vector must not match \"detail\" (it is implementation-specific)".into());
    }
    for (key, value) in want {
        if actual.get(key) != Some(value) {
            return Err(format!("expected error {expected}, got {actual}"));
        }
    }
    Ok(())
}

/// The outcome of decoding one frame, checked against `message` (and
/// `payload`) or `error`. `canonical` turns a decoded message into its JSON
/// object without the payload field, and the payload's check.
fn check_decoded<M: std::fmt::Debug>(
    case: &Value,
    decoded: Result<M, DecodeError>,
    canonical: impl Fn(&M) -> Result<(Value, Option<Payload>), String>,
) -> Check {
    let frame = || short(&text_of(&case["frame"]).unwrap_or_default());
    match (case.get("message"), case.get("error")) {
        (Some(want), None) => {
            let message = decoded.map_err(|e| {
                let got = serde_json::to_value(&e).unwrap_or_default();
                format!("frame {} should decode to {want}, got error {got}", frame())
            })?;
            let (got, payload) = canonical(&message)?;
            if got != *want {
                return Err(format!(
                    "frame {}: expected {want}, got {}",
                    frame(),
                    short(&got.to_string())
                ));
            }
            match (case.get("payload"), payload) {
                (None, None) => Ok(()),
                (Some(want), Some(got)) => got.check(&text_of(want)?),
                (None, Some(got)) => Err(format!("unexpected payload {}", got.show())),
                (Some(_), None) => Err("expected a payload, the message has none".into()),
            }
        }
        (None, Some(want)) => match decoded {
            Ok(message) => Err(format!(
                "frame {} should fail with {want}, got {}",
                frame(),
                short(&format!("{message:?}"))
            )),
            Err(error) => subset(
                want,
                &serde_json::to_value(&error).map_err(|e| e.to_string())?,
            ),
        },
        _ => Err("a decode vector has exactly one of \"message\" and \"error\"".into()),
    }
}

/// A decoded payload (`data`, `result`, `params`).
enum Payload {
    /// Kept as text (server messages): must be exactly the expected text.
    Text(String),
    /// Parsed (client `params`): must equal the expected text's value.
    Value(Value),
}

impl Payload {
    fn check(&self, want: &str) -> Check {
        match self {
            Payload::Text(text) if text == want => Ok(()),
            Payload::Value(value) => {
                let expected: Value = serde_json::from_str(want)
                    .map_err(|e| format!("the payload {} is not JSON here: {e}", short(want)))?;
                if *value == expected {
                    Ok(())
                } else {
                    Err(format!(
                        "payload: expected {}, got {}",
                        short(want),
                        self.show()
                    ))
                }
            }
            Payload::Text(_) => Err(format!(
                "payload: expected the text {}, got {}",
                short(want),
                self.show()
            )),
        }
    }

    fn show(&self) -> String {
        match self {
            Payload::Text(text) => short(text),
            Payload::Value(value) => short(&value.to_string()),
        }
    }
}

// ----- decoding -----

/// A server message as the vectors write it: its serde form, minus the
/// payload (`data`, or a response's `result`), which is returned as text.
fn canonical_server(message: &ServerMessage) -> Result<(Value, Option<Payload>), String> {
    let mut message = message.clone();
    let (key, payload) = match &mut message {
        ServerMessage::Publication(publication) => {
            ("data", Some(std::mem::take(&mut publication.data)))
        }
        ServerMessage::Response(Response {
            reply: Reply::Result(result),
            ..
        }) => ("result", Some(std::mem::take(result))),
        _ => ("", None),
    };
    let mut value = serde_json::to_value(&message).map_err(|e| e.to_string())?;
    if payload.is_some() {
        remove(&mut value, key)?;
    }
    Ok((
        value,
        payload.map(|raw| Payload::Text(raw.get().to_owned())),
    ))
}

/// A client message as the vectors write it: its serde form, minus a
/// request's `params`.
fn canonical_client(message: &ClientMessage) -> Result<(Value, Option<Payload>), String> {
    let mut value = serde_json::to_value(message).map_err(|e| e.to_string())?;
    let payload = match message {
        ClientMessage::Request(_) => Some(Payload::Value(remove(&mut value, "params")?)),
        _ => None,
    };
    Ok((value, payload))
}

fn remove(value: &mut Value, key: &str) -> Result<Value, String> {
    value
        .as_object_mut()
        .and_then(|object| object.remove(key))
        .ok_or_else(|| format!("the decoded message has no {key:?}"))
}

#[test]
fn decode_server_vectors() {
    run("decode_server", |case| {
        let frame = text_of(field(case, "frame")?)?;
        check_decoded(case, decode_server(&frame), canonical_server)
    });
}

#[test]
fn decode_client_vectors() {
    run("decode_client", |case| {
        let frame = text_of(field(case, "frame")?)?;
        check_decoded(case, decode_client(&frame), canonical_client)
    });
}

// ----- encoding -----

/// The vector's `text` must be JSON for its `message` (a check of the vector).
fn encode_vector(case: &Value) -> Result<(&Value, &str), String> {
    let message = field(case, "message")?;
    let text = field(case, "text")?
        .as_str()
        .ok_or("\"text\" must be a string")?;
    let parsed: Value =
        serde_json::from_str(text).map_err(|e| format!("invalid vector: text is not JSON: {e}"))?;
    if parsed != *message {
        return Err(format!(
            "invalid vector: text {text} is not the message {message}"
        ));
    }
    Ok((message, text))
}

fn expect_text(encoded: &str, text: &str) -> Check {
    if encoded == text {
        Ok(())
    } else {
        Err(format!("expected the text\n  {text}\ngot\n  {encoded}"))
    }
}

#[test]
fn encode_client_vectors() {
    run("encode_client", |case| {
        let (message, text) = encode_vector(case)?;
        let message: ClientMessage = serde_json::from_value(message.clone())
            .map_err(|e| format!("not a client message: {e}"))?;
        expect_text(&encode_client(&message), text)?;
        // The request size check (PROTOCOL.md §4.3) counts the same bytes.
        let len = encoded_len(&message);
        if len == text.len() {
            Ok(())
        } else {
            Err(format!(
                "encoded_len is {len}, the text has {} bytes",
                text.len()
            ))
        }
    });
}

#[test]
fn encode_server_vectors() {
    run("encode_server", |case| {
        let (message, text) = encode_vector(case)?;
        expect_text(&encode_server(&server_message(message)?), text)
    });
}

/// Build a server message from its JSON fields, field by field (not with
/// the decoder under test). Every field of the object must be used.
fn server_message(value: &Value) -> Result<ServerMessage, String> {
    let fields = Fields::new(value)?;
    let message = match fields.str("type")?.as_str() {
        "welcome" => ServerMessage::Welcome(Welcome {
            session: fields.str("session")?,
            protocol: u32::try_from(fields.int("protocol")?).map_err(|e| e.to_string())?,
            ping_interval_ms: fields.opt_int("ping_interval_ms")?,
            pacing: match fields.opt("pacing") {
                Some(pacing) => {
                    let pacing = Fields::new(pacing)?;
                    let built = Pacing {
                        period_ms: pacing.int("period_ms")?,
                        phase_ms: pacing.int("phase_ms")?,
                        origin_ms: pacing.opt_int("origin_ms")?,
                    };
                    pacing.all_used()?;
                    Some(built)
                }
                None => None,
            },
            expires_in_ms: fields.opt_int("expires_in_ms")?,
        }),
        "refreshed" => ServerMessage::Refreshed(Refreshed {
            expires_in_ms: fields.opt_int("expires_in_ms")?,
        }),
        "ping" => ServerMessage::Ping,
        "pong" => ServerMessage::Pong,
        "response" => ServerMessage::Response(Response {
            id: fields.int("id")?,
            reply: match fields.opt("result") {
                Some(result) => Reply::Result(RawJson::from_value(result)),
                None => Reply::Error(error_body(fields.get("error")?)?),
            },
        }),
        "subscribed" => ServerMessage::Subscribed(Subscribed {
            channel: fields.str("channel")?,
            epoch: fields.str("epoch")?,
            offset: fields.int("offset")?,
            recovered: fields.get("recovered")?.as_bool().ok_or("recovered")?,
        }),
        "unsubscribed" => ServerMessage::Unsubscribed(Unsubscribed {
            channel: fields.str("channel")?,
            code: fields.str("code")?,
            reason: fields.str("reason")?,
        }),
        "sub_expiring" => ServerMessage::SubExpiring(SubExpiring {
            channel: fields.str("channel")?,
            expires_in_ms: fields.int("expires_in_ms")?,
        }),
        "publication" => ServerMessage::Publication(Publication {
            channel: fields.str("channel")?,
            epoch: fields.str("epoch")?,
            offset: fields.int("offset")?,
            data: RawJson::from_value(fields.get("data")?),
        }),
        "reconnect" => ServerMessage::Reconnect(ReconnectAdvice {
            reason: fields.str("reason")?,
            min_delay_ms: fields.int("min_delay_ms")?,
            max_delay_ms: fields.int("max_delay_ms")?,
            message: fields.opt_str("message")?,
        }),
        "error" => ServerMessage::Error(error_body(value)?),
        other => return Err(format!("not a server message type: {other:?}")),
    };
    if !matches!(message, ServerMessage::Error(_)) {
        fields.all_used()?;
    }
    Ok(message)
}

fn error_body(value: &Value) -> Result<ErrorBody, String> {
    let fields = Fields::new(value)?;
    fields.opt("type"); // the `error` message's own tag
    let body = ErrorBody {
        code: fields.str("code")?,
        message: fields.str("message")?,
        retry_after_ms: fields.opt_int("retry_after_ms")?,
    };
    fields.all_used()?;
    Ok(body)
}

/// An object's fields, remembering which were read.
struct Fields<'a> {
    object: &'a Map<String, Value>,
    used: std::cell::RefCell<Vec<&'a str>>,
}

impl<'a> Fields<'a> {
    fn new(value: &'a Value) -> Result<Self, String> {
        let object = value
            .as_object()
            .ok_or_else(|| format!("expected an object, got {value}"))?;
        Ok(Fields {
            object,
            used: Default::default(),
        })
    }

    fn opt(&self, key: &str) -> Option<&'a Value> {
        let (key, value) = self.object.get_key_value(key)?;
        self.used.borrow_mut().push(key);
        Some(value)
    }

    fn get(&self, key: &str) -> Result<&'a Value, String> {
        self.opt(key)
            .ok_or_else(|| format!("missing field {key:?}"))
    }

    fn str(&self, key: &str) -> Result<String, String> {
        self.get(key)?
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("{key:?} must be a string"))
    }

    fn int(&self, key: &str) -> Result<u64, String> {
        self.get(key)?
            .as_u64()
            .ok_or_else(|| format!("{key:?} must be a non-negative integer"))
    }

    fn opt_int(&self, key: &str) -> Result<Option<u64>, String> {
        self.opt(key).map(|_| self.int(key)).transpose()
    }

    fn opt_str(&self, key: &str) -> Result<Option<String>, String> {
        self.opt(key).map(|_| self.str(key)).transpose()
    }

    fn all_used(&self) -> Check {
        let used = self.used.borrow();
        match self.object.keys().find(|key| !used.contains(&key.as_str())) {
            Some(key) => Err(format!("invalid vector: unexpected field {key:?}")),
            None => Ok(()),
        }
    }
}
