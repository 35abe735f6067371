//! From frames to messages: fragment assembly (continuations continue
//! something, data frames do not interrupt a fragmented message), UTF-8 of
//! text checked fragment by fragment, and the close payload's rules
//! (no one-byte payload, a code valid to receive, a UTF-8 reason). Pure.

use bytes::BytesMut;

use super::frame::{Frame, OP_BINARY, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT};
use super::{Message, WsError};

/// Turns a peer's frames into its messages. Holds nothing (one empty
/// `Option<Box<_>>`) unless a fragmented message is arriving.
#[derive(Debug, Default)]
pub(super) struct Assembler {
    partial: Option<Box<Partial>>,
}

/// A message arriving in fragments.
#[derive(Debug)]
struct Partial {
    binary: bool,
    payload: BytesMut,
    /// Bytes of `payload` known to be valid UTF-8 (text only).
    valid_up_to: usize,
}

impl Assembler {
    /// Bytes of the fragmented message arriving (0 when none is).
    pub(super) fn assembled(&self) -> usize {
        self.partial.as_ref().map_or(0, |p| p.payload.len())
    }

    /// Forget the message arriving, if any.
    pub(super) fn clear(&mut self) {
        self.partial = None;
    }

    /// Take one frame: the message it completes, if any, or why the peer
    /// broke the rules. A close frame comes out as [`Message::Close`]
    /// (answering it is the socket's part).
    pub(super) fn handle_frame(&mut self, frame: Frame) -> Result<Option<Message>, WsError> {
        match frame.opcode {
            OP_TEXT | OP_BINARY => {
                if self.partial.is_some() {
                    return Err(WsError::Protocol("message inside a fragmented message"));
                }
                let mut partial = Partial {
                    binary: frame.opcode == OP_BINARY,
                    payload: frame.payload,
                    valid_up_to: 0,
                };
                partial.check_utf8()?;
                if frame.fin {
                    return partial.finish().map(Some);
                }
                self.partial = Some(Box::new(partial));
                Ok(None)
            }
            OP_CONTINUATION => {
                let Some(partial) = self.partial.as_mut() else {
                    return Err(WsError::Protocol("continuation of nothing"));
                };
                partial.payload.extend_from_slice(&frame.payload);
                partial.check_utf8()?;
                if frame.fin {
                    let partial = self.partial.take().map(|b| *b);
                    return partial.map(Partial::finish).transpose();
                }
                Ok(None)
            }
            OP_PING => Ok(Some(Message::Ping(frame.payload.freeze()))),
            OP_PONG => Ok(Some(Message::Pong)),
            // OP_CLOSE: the frame parser lets no other opcode through.
            _ => parse_close(&frame.payload).map(|code| Some(Message::Close(code))),
        }
    }
}

impl Partial {
    /// Check the UTF-8 of what arrived since the last check: an invalid
    /// sequence fails now; an incomplete one at the end may still complete.
    fn check_utf8(&mut self) -> Result<(), WsError> {
        if self.binary {
            return Ok(());
        }
        match std::str::from_utf8(&self.payload[self.valid_up_to..]) {
            Ok(_) => self.valid_up_to = self.payload.len(),
            Err(e) if e.error_len().is_some() => return Err(WsError::InvalidUtf8),
            Err(e) => self.valid_up_to += e.valid_up_to(),
        }
        Ok(())
    }

    /// The complete message, once its last fragment arrived.
    fn finish(self) -> Result<Message, WsError> {
        if self.binary {
            return Ok(Message::Binary(self.payload.freeze()));
        }
        if self.valid_up_to != self.payload.len() {
            // Ends inside a UTF-8 sequence.
            return Err(WsError::InvalidUtf8);
        }
        Ok(Message::Text(self.payload.freeze()))
    }
}

/// The code of a close frame's payload (`None`: an empty payload).
pub(super) fn parse_close(payload: &[u8]) -> Result<Option<u16>, WsError> {
    match payload {
        [] => Ok(None),
        [_] => Err(WsError::Protocol("close payload of one byte")),
        [hi, lo, reason @ ..] => {
            let code = u16::from_be_bytes([*hi, *lo]);
            if !receivable_close_code(code) {
                return Err(WsError::Protocol("invalid close code"));
            }
            if std::str::from_utf8(reason).is_err() {
                return Err(WsError::InvalidUtf8);
            }
            Ok(Some(code))
        }
    }
}

/// Codes a peer may send (RFC 6455 §7.4): 1000–1015 except the ones that
/// must never be on the wire, and the registered/private range 3000–4999.
fn receivable_close_code(code: u16) -> bool {
    matches!(code, 1000..=1015 | 3000..=4999) && !matches!(code, 1004 | 1005 | 1006 | 1015)
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::ws::frame::{OP_CLOSE, OP_PING};

    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Frame {
        Frame {
            fin,
            opcode,
            payload: BytesMut::from(payload),
        }
    }

    fn code(result: Result<Option<Message>, WsError>) -> Option<u16> {
        result.expect_err("a broken message").close_code()
    }

    #[test]
    fn fragments_with_a_ping_between_make_one_text() {
        let mut asm = Assembler::default();
        let (one, two) = "héllo wörld".as_bytes().split_at(2); // inside the é
        assert_eq!(asm.handle_frame(frame(false, OP_TEXT, one)).unwrap(), None);
        assert_eq!(asm.assembled(), 2);
        let ping = asm.handle_frame(frame(true, OP_PING, b"p")).unwrap();
        assert_eq!(ping, Some(Message::Ping(Bytes::from_static(b"p"))));
        let text = asm.handle_frame(frame(true, OP_CONTINUATION, two)).unwrap();
        assert_eq!(text, Some(Message::Text(Bytes::from("héllo wörld"))));
        assert_eq!(asm.assembled(), 0);
    }

    #[test]
    fn fragmentation_rules() {
        let mut asm = Assembler::default();
        assert_eq!(
            code(asm.handle_frame(frame(true, OP_CONTINUATION, b"x"))),
            Some(1002)
        );
        asm.handle_frame(frame(false, OP_BINARY, b"x")).unwrap();
        assert_eq!(
            code(asm.handle_frame(frame(true, OP_TEXT, b"y"))),
            Some(1002)
        );
        asm.clear();
        assert_eq!(asm.assembled(), 0);
    }

    #[test]
    fn utf8_fails_at_the_first_fragment_that_shows_it() {
        let mut asm = Assembler::default();
        assert_eq!(
            code(asm.handle_frame(frame(true, OP_TEXT, &[0xff]))),
            Some(1007)
        );
        let mut asm = Assembler::default();
        let bad = frame(false, OP_TEXT, &[0xce, 0xba, 0xff]);
        assert_eq!(code(asm.handle_frame(bad)), Some(1007));
        // A message ending inside a sequence fails at its end.
        let mut asm = Assembler::default();
        assert_eq!(
            asm.handle_frame(frame(false, OP_TEXT, &[0xce])).unwrap(),
            None
        );
        let end = frame(true, OP_CONTINUATION, b"");
        assert_eq!(code(asm.handle_frame(end)), Some(1007));
        // Binary is not checked.
        let mut asm = Assembler::default();
        let binary = asm.handle_frame(frame(true, OP_BINARY, &[0xff])).unwrap();
        assert_eq!(binary, Some(Message::Binary(Bytes::from_static(&[0xff]))));
    }

    #[test]
    fn close_payloads() {
        assert_eq!(parse_close(&[]).unwrap(), None);
        assert_eq!(parse_close(&[0x03, 0xe8, b'o', b'k']).unwrap(), Some(1000));
        assert_eq!(parse_close(&[0x0f, 0xa0]).unwrap(), Some(4000));
        assert_eq!(parse_close(&[0x03]).unwrap_err().close_code(), Some(1002));
        for code in [999u16, 1004, 1005, 1006, 1015, 1016, 2999, 5000] {
            let error = parse_close(&code.to_be_bytes()).unwrap_err();
            assert_eq!(error.close_code(), Some(1002), "code {code}");
        }
        let bad_reason = parse_close(&[0x03, 0xe8, 0xff]).unwrap_err();
        assert_eq!(bad_reason.close_code(), Some(1007));
        let mut asm = Assembler::default();
        let close = asm.handle_frame(frame(true, OP_CLOSE, &[0x03, 0xe8]));
        assert_eq!(close.unwrap(), Some(Message::Close(Some(1000))));
    }
}
