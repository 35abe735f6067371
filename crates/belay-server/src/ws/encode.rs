//! Encoding server frames (unmasked, final) into the write buffer, the
//! close frame's payload, and following frame boundaries through a buffer
//! of encoded frames so a partly written frame is never cut. Pure.

use bytes::{BufMut, BytesMut};

use super::frame::MAX_CONTROL;

/// Append one final, unmasked frame of `opcode` carrying `payload`.
pub(super) fn encode_frame(out: &mut BytesMut, opcode: u8, payload: &[u8]) {
    let len = payload.len();
    out.reserve(10 + len);
    out.put_u8(0x80 | opcode);
    if len < 126 {
        out.put_u8(len as u8);
    } else if let Ok(len) = u16::try_from(len) {
        out.put_u8(126);
        out.put_u16(len);
    } else {
        out.put_u8(127);
        out.put_u64(len as u64);
    }
    out.extend_from_slice(payload);
}

/// The payload of a close frame: empty without a code, else the code and
/// as much of `reason` as fits in a control frame (cut on a char boundary).
pub(super) fn close_payload(code: Option<u16>, reason: &str) -> Vec<u8> {
    let Some(code) = code else {
        return Vec::new();
    };
    let reason = truncate(reason, MAX_CONTROL - 2);
    let mut payload = Vec::with_capacity(2 + reason.len());
    payload.extend_from_slice(&code.to_be_bytes());
    payload.extend_from_slice(reason.as_bytes());
    payload
}

/// The longest prefix of `text` of at most `max` bytes that ends on a char
/// boundary.
pub(super) fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Length of the server frame (header and payload) at the start of `buf`,
/// which holds frames this codec encoded (unmasked, well formed).
fn frame_len_at(buf: &[u8]) -> usize {
    match buf.get(1).map(|b| b & 0x7f) {
        Some(126) => {
            4 + buf
                .get(2..4)
                .map_or(0, |b| usize::from(u16::from_be_bytes([b[0], b[1]])))
        }
        Some(127) => {
            let len = buf.get(2..10).map_or(0, |b| {
                let mut be = [0; 8];
                be.copy_from_slice(b);
                u64::from_be_bytes(be)
            });
            10usize.saturating_add(usize::try_from(len).unwrap_or(usize::MAX))
        }
        Some(n) => 2 + usize::from(n),
        None => buf.len(),
    }
}

/// Bytes of the frame at the front of `buf` still to be written once
/// `written` bytes of `buf` (whose head frame had `head_left` bytes left,
/// 0 when `buf` starts at a frame boundary) have gone out.
pub(super) fn head_left_after(buf: &[u8], head_left: usize, written: usize) -> usize {
    if written < head_left {
        return head_left - written;
    }
    let mut at = head_left;
    while at < written {
        let end = at.saturating_add(frame_len_at(&buf[at..]));
        if end > written {
            return end - written;
        }
        at = end;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ws::frame::{OP_CLOSE, OP_TEXT};

    fn encoded(opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = BytesMut::new();
        encode_frame(&mut out, opcode, payload);
        out.to_vec()
    }

    #[test]
    fn the_three_length_encodings() {
        assert_eq!(encoded(OP_TEXT, b"hi"), [0x81, 2, b'h', b'i']);
        let medium = encoded(OP_TEXT, &[0; 126]);
        assert_eq!(medium[..4], [0x81, 126, 0, 126]);
        assert_eq!(medium.len(), 4 + 126);
        let large = encoded(OP_TEXT, &[0; 65_536]);
        assert_eq!(large[..2], [0x81, 127]);
        assert_eq!(u64::from_be_bytes(large[2..10].try_into().unwrap()), 65_536);
        for frame in [&medium, &large] {
            assert_eq!(frame_len_at(frame), frame.len());
        }
    }

    #[test]
    fn close_payloads_fit_a_control_frame() {
        assert!(close_payload(None, "ignored").is_empty());
        assert_eq!(close_payload(Some(1000), "ok"), [0x03, 0xe8, b'o', b'k']);
        let long = close_payload(Some(1000), &"é".repeat(100));
        assert_eq!(long.len(), 2 + 122);
        assert!(std::str::from_utf8(&long[2..]).is_ok());
        assert_eq!(encoded(OP_CLOSE, &long).len(), 2 + MAX_CONTROL - 1);
    }

    #[test]
    fn frame_boundaries_are_followed_across_partial_writes() {
        let mut buf = BytesMut::new();
        encode_frame(&mut buf, OP_TEXT, &[b'a'; 3]); // 5 bytes
        encode_frame(&mut buf, OP_TEXT, &[b'b'; 200]); // 4 + 200 bytes
        encode_frame(&mut buf, OP_TEXT, &[b'c'; 1]); // 3 bytes
        assert_eq!(head_left_after(&buf, 0, 2), 3);
        assert_eq!(head_left_after(&buf, 0, 5), 0);
        assert_eq!(head_left_after(&buf, 0, 6), 203);
        // Two bytes of the first frame are out: three of it are left.
        let rest = &buf[2..];
        assert_eq!(head_left_after(rest, 3, 2), 1);
        assert_eq!(head_left_after(rest, 3, 3 + 204), 0);
        assert_eq!(head_left_after(rest, 3, 3 + 204 + 1), 2);
    }

    #[test]
    fn truncation_keeps_utf8() {
        assert_eq!(truncate("ééé", 3), "é");
        assert_eq!(truncate("abc", 5), "abc");
    }
}
