//! The `client_decode` target: any text through the protocol decoders.

use belay_proto::message::{decode_client, decode_server, encode_client, encode_server};

/// Fuzz target `client_decode`: `data` (if UTF-8) through `decode_client`
/// and `decode_server`. Neither panics; whatever decodes encodes to a frame
/// that decodes to an equal message, and re-encoding that gives the same
/// text again. Floats included: serde_json's `float_roundtrip` feature reads
/// every decimal number to the nearest double (docs/FUZZING.md, finding 2).
pub fn client_decode(data: &[u8]) {
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

/// `again` (decoded from the encoding of `first`) equals `first`.
fn assert_same<T: PartialEq + std::fmt::Debug>(again: &T, first: &T, text: &str) {
    assert!(
        again == first,
        "{text:?} does not survive encoding: {again:?} != {first:?}"
    );
}
