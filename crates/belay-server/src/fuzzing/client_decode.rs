//! The `client_decode` target: any bytes through the protocol decoders,
//! both codecs.

use belay_proto::message::{
    decode_client, decode_client_binary, decode_server, decode_server_binary, encode_client,
    encode_client_binary, encode_server, encode_server_binary,
};

/// Fuzz target `client_decode`: `data` through the binary decoders
/// (`decode_client_binary`, `decode_server_binary`), and, if UTF-8, through
/// `decode_client` and `decode_server`. None panics; whatever decodes
/// encodes to a frame that decodes to an equal message, and re-encoding
/// that gives the same frame again; a message from a binary frame is the
/// same message after a trip through JSON. Floats included: serde_json's
/// `float_roundtrip` feature reads every decimal number to the nearest
/// double (docs/FUZZING.md, finding 2).
pub fn client_decode(data: &[u8]) {
    binary(data);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(message) = decode_client(text) {
        let encoded = encode_client(&message);
        let again = decode_client(&encoded)
            .unwrap_or_else(|e| panic!("{encoded:?}, encoded from {text:?}, fails: {e}"));
        assert_same(&again, &message, text);
        let stable = encode_client(&again);
        let third = decode_client(&stable).expect("a re-encoded message decodes");
        assert_same(&third, &again, &encoded);
    }
    if let Ok(message) = decode_server(text) {
        let encoded = encode_server(&message);
        let again = decode_server(&encoded)
            .unwrap_or_else(|e| panic!("{encoded:?}, encoded from {text:?}, fails: {e}"));
        assert_same(&again, &message, text);
        let stable = encode_server(&again);
        let third = decode_server(&stable).expect("a re-encoded message decodes");
        assert_same(&third, &again, &encoded);
    }
}

/// The binary codec: the same fixed point, and the same message in JSON.
fn binary(data: &[u8]) {
    binary_fixed_point(data, decode_client_binary, encode_client_binary, |m| {
        decode_client(&encode_client(m)).ok()
    });
    binary_fixed_point(data, decode_server_binary, encode_server_binary, |m| {
        decode_server(&encode_server(m)).ok()
    });
}

/// One direction of [`binary`]: `via_json` is the message after a trip
/// through the JSON codec.
fn binary_fixed_point<M: PartialEq + std::fmt::Debug, E: std::fmt::Display>(
    data: &[u8],
    decode: impl Fn(&[u8]) -> Result<M, E>,
    encode: impl Fn(&M) -> Vec<u8>,
    via_json: impl Fn(&M) -> Option<M>,
) {
    let Ok(message) = decode(data) else {
        return;
    };
    let shown = format!("{data:02x?}");
    let encoded = encode(&message);
    let again = decode(&encoded)
        .unwrap_or_else(|e| panic!("{encoded:02x?}, encoded from {shown}, fails: {e}"));
    assert_same(&again, &message, &shown);
    assert_eq!(encode(&again), encoded, "not stable: {shown}");
    let json = via_json(&message).expect("the JSON form decodes");
    assert_same(&json, &message, &shown);
}

/// `again` (decoded from the encoding of `first`) equals `first`.
fn assert_same<T: PartialEq + std::fmt::Debug>(again: &T, first: &T, text: &str) {
    assert!(
        again == first,
        "{text:?} does not survive encoding: {again:?} != {first:?}"
    );
}
