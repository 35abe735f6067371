//! Runs `spec/vectors/binary.json`, the binary codec's vectors (derived
//! from spec/PROTOCOL.md §1.8 by `spec/vectors/tools/binary_vectors.py`, an
//! implementation independent of this one).
//!
//! * `messages`: the binary frame (hex) and the JSON frame decode to the
//!   same message, and the message encodes to exactly that binary frame.
//! * `decode_errors`: the binary frame does not decode, for the reason
//!   given (`DecodeError` in its serde form; `invalid` names the kind).
//! * `decode_ok_extensions`: what a newer peer may add (trailing bytes,
//!   flag bits) is ignored.
//!
//! Every vector runs even if an earlier one fails; a failure names it.

use std::path::Path;

use belay_proto::message::{
    decode_client, decode_client_binary, decode_server, decode_server_binary, encode_client_binary,
    encode_server_binary, DecodeError,
};
use serde_json::Value;

fn vectors() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors/binary.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn run(section: &str, check: impl Fn(&Value) -> Result<(), String>) {
    let doc = vectors();
    let cases = doc[section]
        .as_array()
        .unwrap_or_else(|| panic!("binary.json has no array {section:?}"));
    assert!(!cases.is_empty(), "binary.json: {section} has no vectors");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let name = case["name"].as_str().unwrap_or("<unnamed>");
            check(case).err().map(|e| format!("{section}/{name}: {e}"))
        })
        .collect();
    assert!(failures.is_empty(), "binary.json: {}", failures.join("\n"));
}

fn hex(case: &Value) -> Result<Vec<u8>, String> {
    let text = case["hex"].as_str().ok_or("no hex")?;
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("bad hex at {i}"))
        })
        .collect()
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text<'a>(case: &'a Value, key: &str) -> Result<&'a str, String> {
    case[key].as_str().ok_or_else(|| format!("no {key}"))
}

/// The binary and JSON frames decode to the same message; it encodes back
/// to the binary frame when `exact`.
fn same_message(case: &Value, exact: bool) -> Result<(), String> {
    let frame = hex(case)?;
    let json = text(case, "json")?;
    match text(case, "direction")? {
        "client" => same_in_both(
            &frame,
            json,
            exact,
            decode_client_binary,
            decode_client,
            encode_client_binary,
        ),
        "server" => same_in_both(
            &frame,
            json,
            exact,
            decode_server_binary,
            decode_server,
            encode_server_binary,
        ),
        other => Err(format!("direction {other:?}")),
    }
}

fn same_in_both<M: PartialEq + std::fmt::Debug>(
    frame: &[u8],
    json: &str,
    exact: bool,
    decode_binary: impl Fn(&[u8]) -> Result<M, DecodeError>,
    decode_json: impl Fn(&str) -> Result<M, DecodeError>,
    encode_binary: impl Fn(&M) -> Vec<u8>,
) -> Result<(), String> {
    let binary = decode_binary(frame).map_err(|e| format!("binary: {e}"))?;
    let from_json = decode_json(json).map_err(|e| format!("json: {e}"))?;
    if binary != from_json {
        return Err(format!("binary {binary:?} != json {from_json:?}"));
    }
    let encoded = encode_binary(&binary);
    if exact && encoded != frame {
        return Err(format!("encodes to {}", to_hex(&encoded)));
    }
    Ok(())
}

#[test]
fn every_message_is_the_same_in_both_codecs_and_encodes_exactly() {
    run("messages", |case| same_message(case, true));
}

#[test]
fn what_a_newer_peer_adds_is_ignored() {
    run("decode_ok_extensions", |case| same_message(case, false));
}

#[test]
fn bad_frames_are_refused_for_the_stated_reason() {
    run("decode_errors", |case| {
        let frame = hex(case)?;
        let error = match text(case, "direction")? {
            "client" => decode_client_binary(&frame).err(),
            _ => decode_server_binary(&frame).err(),
        }
        .ok_or("decoded")?;
        let got = serde_json::to_value(&error).map_err(|e| e.to_string())?;
        let want = &case["error"];
        // `invalid` vectors name the kind; the detail is for people.
        let matches = want
            .as_object()
            .is_some_and(|w| w.iter().all(|(k, v)| got.get(k) == Some(v)));
        if matches {
            Ok(())
        } else {
            Err(format!("got {got}, want {want}"))
        }
    });
}
