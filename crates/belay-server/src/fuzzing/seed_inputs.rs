//! Writing `connection` inputs back to bytes (the seed corpora).

use belay_proto::fuzzing::unparse::{variant, Unparse};

use super::input::*;

/// The input bytes that [`decode_frames`] turns into `frames`: the inverse
/// of the derived `Arbitrary` decoding, for writing seed inputs. Strings and
/// byte strings longer than 65,535 bytes are cut.
pub fn encode_frames(frames: &[FuzzFrame]) -> Vec<u8> {
    let mut out = Vec::new();
    for frame in frames {
        out.push(1); // "another element follows"
        frame.unparse(&mut out);
    }
    out
}

impl Unparse for FuzzBytes {
    fn unparse(&self, out: &mut Vec<u8>) {
        let len = self.0.len().min(usize::from(u16::MAX));
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.extend_from_slice(&self.0[..len]);
    }
}

impl Unparse for FuzzStr {
    fn unparse(&self, out: &mut Vec<u8>) {
        let mut end = self.0.len().min(usize::from(u16::MAX));
        while !self.0.is_char_boundary(end) {
            end -= 1;
        }
        FuzzBytes(self.0.as_bytes()[..end].to_vec()).unparse(out);
    }
}

impl Unparse for FuzzMethod {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            FuzzMethod::Echo => variant(out, 0, 4),
            FuzzMethod::OrderCreate => variant(out, 1, 4),
            FuzzMethod::Slow => variant(out, 2, 4),
            FuzzMethod::Other(name) => {
                variant(out, 3, 4);
                name.unparse(out);
            }
        }
    }
}

impl Unparse for FuzzParams {
    fn unparse(&self, out: &mut Vec<u8>) {
        const N: u64 = 7;
        match self {
            FuzzParams::Null => variant(out, 0, N),
            FuzzParams::Bool(b) => {
                variant(out, 1, N);
                b.unparse(out);
            }
            FuzzParams::Int(n) => {
                variant(out, 2, N);
                n.unparse(out);
            }
            FuzzParams::Millis(ms) => {
                variant(out, 3, N);
                ms.unparse(out);
            }
            FuzzParams::Str(s) => {
                variant(out, 4, N);
                s.unparse(out);
            }
            FuzzParams::Object(item, n) => {
                variant(out, 5, N);
                item.unparse(out);
                n.unparse(out);
            }
            FuzzParams::Json(text) => {
                variant(out, 6, N);
                text.unparse(out);
            }
        }
    }
}

impl Unparse for FuzzChannel {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            FuzzChannel::News => variant(out, 0, 3),
            FuzzChannel::Feed => variant(out, 1, 3),
            FuzzChannel::Other(name) => {
                variant(out, 2, 3);
                name.unparse(out);
            }
        }
    }
}

impl Unparse for FuzzEpoch {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            FuzzEpoch::Current => variant(out, 0, 2),
            FuzzEpoch::Other(epoch) => {
                variant(out, 1, 2);
                epoch.unparse(out);
            }
        }
    }
}

impl Unparse for FuzzKey {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            FuzzKey::K1 => variant(out, 0, 3),
            FuzzKey::K2 => variant(out, 1, 3),
            FuzzKey::Other(key) => {
                variant(out, 2, 3);
                key.unparse(out);
            }
        }
    }
}

impl Unparse for FuzzFrame {
    fn unparse(&self, out: &mut Vec<u8>) {
        const N: u64 = 16;
        match self {
            FuzzFrame::Text(s) => {
                variant(out, 0, N);
                s.unparse(out);
            }
            FuzzFrame::Connect {
                protocol,
                token,
                session,
            } => {
                variant(out, 1, N);
                protocol.unparse(out);
                token.unparse(out);
                session.unparse(out);
            }
            FuzzFrame::Request {
                id,
                method,
                params,
                idem,
                timeout_ms,
            } => {
                variant(out, 2, N);
                id.unparse(out);
                method.unparse(out);
                params.unparse(out);
                idem.unparse(out);
                timeout_ms.unparse(out);
            }
            FuzzFrame::Subscribe { channel, since } => {
                variant(out, 3, N);
                channel.unparse(out);
                since.unparse(out);
            }
            FuzzFrame::Unsubscribe(channel) => {
                variant(out, 4, N);
                channel.unparse(out);
            }
            FuzzFrame::Ping => variant(out, 5, N),
            FuzzFrame::Pong => variant(out, 6, N),
            FuzzFrame::Padded(len) => {
                variant(out, 7, N);
                len.unparse(out);
            }
            FuzzFrame::Fragmented { text, pieces, ping } => {
                variant(out, 8, N);
                text.unparse(out);
                pieces.unparse(out);
                ping.unparse(out);
            }
            FuzzFrame::Binary(bytes) => {
                variant(out, 9, N);
                bytes.unparse(out);
            }
            FuzzFrame::WsPing(bytes) => {
                variant(out, 10, N);
                bytes.unparse(out);
            }
            FuzzFrame::WsPong(bytes) => {
                variant(out, 11, N);
                bytes.unparse(out);
            }
            FuzzFrame::Close { code, reason } => {
                variant(out, 12, N);
                code.unparse(out);
                reason.unparse(out);
            }
            FuzzFrame::Raw(bytes) => {
                variant(out, 13, N);
                bytes.unparse(out);
            }
            FuzzFrame::Publish(channel, data) => {
                variant(out, 14, N);
                channel.unparse(out);
                data.unparse(out);
            }
            FuzzFrame::Yield => variant(out, 15, N),
        }
    }
}
