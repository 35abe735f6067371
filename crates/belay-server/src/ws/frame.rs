//! Parsing one client frame off the bytes received (RFC 6455 §5.2): the
//! header rules (RSV bits, known opcodes, masking, length encoding), the
//! control-frame rules (final, at most 125 bytes) and the message size
//! limit, then unmasking. Pure: bytes in, a frame or a typed error out.

use bytes::{Buf, BytesMut};

use super::WsError;

/// Longest control frame payload (RFC 6455 §5.5).
pub(super) const MAX_CONTROL: usize = 125;

pub(super) const OP_CONTINUATION: u8 = 0x0;
pub(super) const OP_TEXT: u8 = 0x1;
pub(super) const OP_BINARY: u8 = 0x2;
pub(super) const OP_CLOSE: u8 = 0x8;
pub(super) const OP_PING: u8 = 0x9;
pub(super) const OP_PONG: u8 = 0xA;

/// One parsed (unmasked) frame.
#[derive(Debug)]
pub(super) struct Frame {
    pub(super) fin: bool,
    pub(super) opcode: u8,
    pub(super) payload: BytesMut,
}

/// Take one complete frame off the front of `read`, if there is one
/// (`Ok(None)`: more bytes are needed, and room for the rest of the frame
/// is reserved). `assembled` bytes of a fragmented message already arrived:
/// a data frame may bring the message to `max_payload` bytes, no more.
/// When `read` is left empty its allocation is dropped.
pub(super) fn parse_frame(
    read: &mut BytesMut,
    assembled: usize,
    max_payload: usize,
) -> Result<Option<Frame>, WsError> {
    let buf = &read[..];
    if buf.len() < 2 {
        return Ok(None);
    }
    let (b0, b1) = (buf[0], buf[1]);
    let fin = b0 & 0x80 != 0;
    if b0 & 0x70 != 0 {
        return Err(WsError::Protocol("reserved bits set"));
    }
    let opcode = b0 & 0x0f;
    let control = match opcode {
        OP_CONTINUATION | OP_TEXT | OP_BINARY => false,
        OP_CLOSE | OP_PING | OP_PONG => true,
        _ => return Err(WsError::Protocol("unknown opcode")),
    };
    if b1 & 0x80 == 0 {
        return Err(WsError::Protocol("unmasked client frame"));
    }
    let (len, at) = match b1 & 0x7f {
        126 => {
            let Some(b) = buf.get(2..4) else {
                return Ok(None);
            };
            (u64::from(u16::from_be_bytes([b[0], b[1]])), 4)
        }
        127 => {
            let Some(b) = buf.get(2..10) else {
                return Ok(None);
            };
            let mut be = [0; 8];
            be.copy_from_slice(b);
            let len = u64::from_be_bytes(be);
            if len >> 63 != 0 {
                return Err(WsError::Protocol("frame length out of range"));
            }
            (len, 10)
        }
        n => (u64::from(n), 2),
    };
    if control {
        if !fin {
            return Err(WsError::Protocol("fragmented control frame"));
        }
        if len > MAX_CONTROL as u64 {
            return Err(WsError::Protocol("control frame too long"));
        }
    } else if (assembled as u64).saturating_add(len) > max_payload as u64 {
        return Err(WsError::TooBig);
    }
    // Bounded by `max_payload` (or 125) above.
    let len = len as usize;
    let total = at + 4 + len;
    if buf.len() < total {
        read.reserve(total - read.len());
        return Ok(None);
    }
    let mask = [buf[at], buf[at + 1], buf[at + 2], buf[at + 3]];
    read.advance(at + 4);
    let mut payload = read.split_to(len);
    if read.is_empty() {
        // Idle again: drop our share of the allocation.
        *read = BytesMut::new();
    }
    unmask(&mut payload, mask);
    Ok(Some(Frame {
        fin,
        opcode,
        payload,
    }))
}

/// XOR `payload` with the 4-byte `mask`, eight bytes at a time.
pub(super) fn unmask(payload: &mut [u8], mask: [u8; 4]) {
    let wide = u64::from_ne_bytes([
        mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3],
    ]);
    let mut chunks = payload.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        chunk.copy_from_slice(&(u64::from_ne_bytes(word) ^ wide).to_ne_bytes());
    }
    // The remainder starts at a multiple of 8, so the mask phase is 0.
    for (i, byte) in chunks.into_remainder().iter_mut().enumerate() {
        *byte ^= mask[i & 3];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::masked::{masked, MASK};

    fn parse(bytes: &[u8], max: usize) -> (Result<Option<Frame>, WsError>, BytesMut) {
        let mut read = BytesMut::from(bytes);
        (parse_frame(&mut read, 0, max), read)
    }

    fn code(bytes: &[u8], max: usize) -> Option<u16> {
        parse(bytes, max)
            .0
            .expect_err("a broken frame")
            .close_code()
    }

    #[test]
    fn a_frame_is_unmasked_and_taken_off_the_buffer() {
        let mut bytes = masked(0x81, b"hello, world");
        bytes.extend(masked(0x8A, b""));
        let (frame, rest) = parse(&bytes, 1024);
        let frame = frame.unwrap().unwrap();
        assert!(frame.fin);
        assert_eq!(frame.opcode, OP_TEXT);
        assert_eq!(&frame.payload[..], b"hello, world");
        assert_eq!(&rest[..], &masked(0x8A, b"")[..]);
    }

    #[test]
    fn a_frame_cut_anywhere_waits_for_more_and_reserves_room() {
        let bytes = masked(0x82, &[7; 300]);
        for cut in 0..bytes.len() {
            let (frame, rest) = parse(&bytes[..cut], 1024);
            assert!(frame.unwrap().is_none(), "cut at {cut}");
            assert_eq!(rest.len(), cut);
            if cut >= 4 {
                assert!(rest.capacity() >= bytes.len(), "cut at {cut}");
            }
        }
    }

    #[test]
    fn the_buffer_is_released_once_empty() {
        let (frame, rest) = parse(&masked(0x82, &[1; 70_000]), 1 << 20);
        assert_eq!(frame.unwrap().unwrap().payload.len(), 70_000);
        assert_eq!(rest.capacity(), 0);
    }

    #[test]
    fn header_rules_are_protocol_errors() {
        assert_eq!(code(&[0x81, 0x00], 1024), Some(1002)); // unmasked
        assert_eq!(code(&masked(0xC1, b"x"), 1024), Some(1002)); // RSV1
        assert_eq!(code(&masked(0x83, b"x"), 1024), Some(1002)); // reserved opcode
        assert_eq!(code(&masked(0x09, b"x"), 1024), Some(1002)); // fragmented ping
        assert_eq!(code(&masked(0x89, &[0; 126]), 1024), Some(1002)); // long control
        let mut huge = vec![0x82, 0xFF];
        huge.extend_from_slice(&(1u64 << 63).to_be_bytes());
        assert_eq!(code(&huge, 1024), Some(1002)); // length out of range
    }

    #[test]
    fn the_limit_counts_the_fragments_already_assembled() {
        assert_eq!(code(&masked(0x82, &[0; 101]), 100), Some(1009));
        let mut read = BytesMut::from(&masked(0x80, &[0; 60])[..]);
        let error = parse_frame(&mut read, 60, 100).unwrap_err();
        assert_eq!(error.close_code(), Some(1009));
        // The limit is known from the header: nothing of the payload needed.
        assert_eq!(code(&masked(0x82, &[0; 2000])[..4], 1024), Some(1009));
        // Control frames are bounded by their own rule, not the limit.
        assert!(parse(&masked(0x89, b"ping"), 0).0.unwrap().is_some());
    }

    #[test]
    fn unmasking_is_an_involution_at_every_length() {
        for len in 0..40 {
            let original: Vec<u8> = (0..len as u8).collect();
            let mut bytes = original.clone();
            unmask(&mut bytes, MASK);
            let expected: Vec<u8> = original
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ MASK[i % 4])
                .collect();
            assert_eq!(bytes, expected);
            unmask(&mut bytes, MASK);
            assert_eq!(bytes, original);
        }
    }
}
