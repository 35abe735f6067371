//! An independent whole-stream WebSocket parser written from RFC 6455 and
//! the rules in `ws/`, which the `ws_frames` target holds the server's
//! codec to, and a parser of what the server writes (its frames unmasked).

use super::ws_frames::WsEvent;

pub(super) const OP_CONTINUATION: u8 = 0x0;
pub(super) const OP_TEXT: u8 = 0x1;
pub(super) const OP_BINARY: u8 = 0x2;
pub(super) const OP_CLOSE: u8 = 0x8;
pub(super) const OP_PING: u8 = 0x9;
pub(super) const OP_PONG: u8 = 0xA;

/// A message being reassembled by the reference parser.
struct RefPartial {
    binary: bool,
    payload: Vec<u8>,
}

/// Whether `bytes` is UTF-8 or a prefix of some UTF-8 text.
fn utf8_prefix(bytes: &[u8]) -> bool {
    match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

/// The reference: parse the whole stream at once, straight from RFC 6455
/// and the codec's documented rules, and return the events the codec must
/// produce and the bytes it must write (a pong per ping, a close echo).
///
/// Where two rules apply to one frame, the first check in the frame's order
/// wins: header bits, opcode, mask, length encoding, control-frame limits,
/// then the message size (counting a fragmented message already buffered,
/// even when this frame is a new data frame that is itself an error), then
/// the payload.
pub(super) fn reference_parse(stream: &[u8], max_payload: usize) -> (Vec<WsEvent>, Vec<u8>) {
    let mut events = Vec::new();
    let mut output = Vec::new();
    let mut partial: Option<RefPartial> = None;
    let mut rest = stream;
    let protocol = |events: &mut Vec<WsEvent>, code| events.push(WsEvent::Error(Some(code)));
    loop {
        if rest.len() < 2 {
            events.push(WsEvent::End);
            break;
        }
        let (b0, b1) = (rest[0], rest[1]);
        let fin = b0 >> 7 == 1;
        let opcode = b0 & 0x0f;
        if (b0 >> 4) & 0x7 != 0
            || !matches!(
                opcode,
                OP_CONTINUATION | OP_TEXT | OP_BINARY | OP_CLOSE | OP_PING | OP_PONG
            )
            || b1 >> 7 != 1
        {
            protocol(&mut events, 1002);
            break;
        }
        let (len, header) = match b1 & 0x7f {
            126 if rest.len() >= 4 => (u64::from(u16::from_be_bytes([rest[2], rest[3]])), 4),
            127 if rest.len() >= 10 => {
                let mut be = [0u8; 8];
                be.copy_from_slice(&rest[2..10]);
                (u64::from_be_bytes(be), 10)
            }
            126 | 127 => {
                events.push(WsEvent::End);
                break;
            }
            n => (u64::from(n), 2),
        };
        if len > i64::MAX as u64 {
            protocol(&mut events, 1002);
            break;
        }
        let control = opcode >= OP_CLOSE;
        if control && (!fin || len > 125) {
            protocol(&mut events, 1002);
            break;
        }
        let buffered = partial.as_ref().map_or(0, |p| p.payload.len() as u64);
        if !control && buffered + len > max_payload as u64 {
            events.push(WsEvent::Error(Some(1009)));
            break;
        }
        let len = len as usize;
        if rest.len() < header + 4 + len {
            events.push(WsEvent::End);
            break;
        }
        let mask = &rest[header..header + 4];
        let payload: Vec<u8> = rest[header + 4..header + 4 + len]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect();
        rest = &rest[header + 4 + len..];
        match opcode {
            OP_TEXT | OP_BINARY | OP_CONTINUATION => {
                let mut message = match (opcode, partial.take()) {
                    (OP_CONTINUATION, None) | (OP_TEXT | OP_BINARY, Some(_)) => {
                        protocol(&mut events, 1002);
                        break;
                    }
                    (_, Some(mut p)) => {
                        p.payload.extend_from_slice(&payload);
                        p
                    }
                    (_, None) => RefPartial {
                        binary: opcode == OP_BINARY,
                        payload,
                    },
                };
                if !message.binary && !utf8_prefix(&message.payload) {
                    events.push(WsEvent::Error(Some(1007)));
                    break;
                }
                if !fin {
                    partial = Some(message);
                    continue;
                }
                if message.binary {
                    events.push(WsEvent::Binary(std::mem::take(&mut message.payload)));
                } else if std::str::from_utf8(&message.payload).is_ok() {
                    events.push(WsEvent::Text(std::mem::take(&mut message.payload)));
                } else {
                    events.push(WsEvent::Error(Some(1007)));
                    break;
                }
            }
            OP_PING => {
                output.push(0x80 | OP_PONG);
                output.push(payload.len() as u8);
                output.extend_from_slice(&payload);
                events.push(WsEvent::Ping(payload));
            }
            OP_PONG => events.push(WsEvent::Pong),
            _ => {
                let code = match payload.len() {
                    0 => None,
                    1 => {
                        protocol(&mut events, 1002);
                        break;
                    }
                    _ => {
                        let code = u16::from_be_bytes([payload[0], payload[1]]);
                        let valid = matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999);
                        if !valid {
                            protocol(&mut events, 1002);
                            break;
                        }
                        if std::str::from_utf8(&payload[2..]).is_err() {
                            events.push(WsEvent::Error(Some(1007)));
                            break;
                        }
                        Some(code)
                    }
                };
                output.push(0x80 | OP_CLOSE);
                match code {
                    Some(code) => {
                        output.push(2);
                        output.extend_from_slice(&code.to_be_bytes());
                    }
                    None => output.push(0),
                }
                events.push(WsEvent::Close(code));
                events.push(WsEvent::End);
                break;
            }
        }
    }
    (events, output)
}

/// Parse what a server wrote: complete, final, unmasked frames without RSV
/// bits, lengths in their shortest encoding; returns `(opcode, payload)`.
pub(super) fn parse_server_frames(mut bytes: &[u8]) -> Result<Vec<(u8, Vec<u8>)>, String> {
    let mut frames = Vec::new();
    while !bytes.is_empty() {
        if bytes.len() < 2 {
            return Err(format!("a truncated frame header {bytes:x?}"));
        }
        let (b0, b1) = (bytes[0], bytes[1]);
        if b0 & 0xf0 != 0x80 {
            return Err(format!("first byte {b0:#x}: not final, or RSV bits set"));
        }
        if b1 & 0x80 != 0 {
            return Err("a masked server frame".into());
        }
        let (len, header) = match b1 & 0x7f {
            126 => {
                let b = bytes.get(2..4).ok_or("truncated 16-bit length")?;
                let len = usize::from(u16::from_be_bytes([b[0], b[1]]));
                if len < 126 {
                    return Err(format!("length {len} not in its shortest form"));
                }
                (len, 4)
            }
            127 => {
                let b = bytes.get(2..10).ok_or("truncated 64-bit length")?;
                let mut be = [0u8; 8];
                be.copy_from_slice(b);
                let len = u64::from_be_bytes(be);
                if len <= 0xffff || len >> 63 != 0 {
                    return Err(format!("length {len} not in its shortest form"));
                }
                (
                    usize::try_from(len).map_err(|_| "length beyond memory")?,
                    10,
                )
            }
            n => (usize::from(n), 2),
        };
        let payload = bytes
            .get(header..header + len)
            .ok_or_else(|| format!("a truncated payload: {len} bytes announced"))?;
        frames.push((b0 & 0x0f, payload.to_vec()));
        bytes = &bytes[header + len..];
    }
    Ok(frames)
}
