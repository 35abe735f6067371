//! Writing a binary frame's body: the four field forms and the flags.

use crate::message::MessageKind;

pub(super) struct Writer {
    out: Vec<u8>,
}

impl Writer {
    /// A frame of `kind`: its code first.
    pub(super) fn new(kind: MessageKind) -> Writer {
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(&kind.code().to_be_bytes());
        Writer { out }
    }

    pub(super) fn finish(self) -> Vec<u8> {
        self.out
    }

    pub(super) fn byte(&mut self, b: u8) {
        self.out.push(b);
    }

    /// Unsigned LEB128, shortest form.
    pub(super) fn uint(&mut self, mut value: u64) {
        loop {
            let low = (value & 0x7F) as u8;
            value >>= 7;
            if value == 0 {
                self.out.push(low);
                return;
            }
            self.out.push(low | 0x80);
        }
    }

    pub(super) fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    /// A JSON payload, as the text it already is.
    pub(super) fn json(&mut self, text: &str) {
        self.bytes(text.as_bytes());
    }

    pub(super) fn bool(&mut self, b: bool) {
        self.out.push(u8::from(b));
    }

    /// The flags uint: bit `i` for the `i`-th optional field present.
    pub(super) fn flags(&mut self, present: &[bool]) {
        let bits = present
            .iter()
            .enumerate()
            .fold(0u64, |bits, (i, &p)| bits | (u64::from(p) << i));
        self.uint(bits);
    }

    pub(super) fn opt_str(&mut self, s: Option<&str>) {
        if let Some(s) = s {
            self.str(s);
        }
    }

    pub(super) fn opt_uint(&mut self, value: Option<u64>) {
        if let Some(value) = value {
            self.uint(value);
        }
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.uint(bytes.len() as u64);
        self.out.extend_from_slice(bytes);
    }
}
