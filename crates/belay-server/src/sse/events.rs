//! The events of an SSE stream (spec/PROTOCOL.md §1.7): `open` with the
//! stream's id, one unnamed event per message, `close` with a code and
//! reason.

/// `event: open` naming the stream.
pub(crate) fn open(stream: &str) -> Vec<u8> {
    let data = serde_json::json!({ "stream": stream });
    format!("event: open\ndata: {data}\n\n").into_bytes()
}

/// One message. Its JSON is put on one `data:` line: a raw line break can
/// only be whitespace between JSON tokens (inside a string it is escaped),
/// so it becomes a space and the message means the same.
pub(crate) fn message(json: &[u8]) -> Vec<u8> {
    let mut event = Vec::with_capacity(json.len() + 8);
    event.extend_from_slice(b"data: ");
    event.extend(
        json.iter()
            .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b }),
    );
    event.extend_from_slice(b"\n\n");
    event
}

/// `event: close` with the close code and reason.
pub(crate) fn close(code: u16, reason: &str) -> Vec<u8> {
    let data = serde_json::json!({ "code": code, "reason": reason });
    format!("event: close\ndata: {data}\n\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_one_data_line_even_with_line_breaks_between_tokens() {
        assert_eq!(
            message(b"{\"a\":\n1,\r\n\"b\":\"x\\ny\"}"),
            b"data: {\"a\": 1,  \"b\":\"x\\ny\"}\n\n".to_vec()
        );
    }

    #[test]
    fn open_and_close_are_named_events_with_json_data() {
        assert_eq!(
            open("n1.abc"),
            b"event: open\ndata: {\"stream\":\"n1.abc\"}\n\n".to_vec()
        );
        assert_eq!(
            close(1012, "server restarting"),
            b"event: close\ndata: {\"code\":1012,\"reason\":\"server restarting\"}\n\n".to_vec()
        );
    }
}
