//! Reading a binary frame's body: every field checked against the frame's
//! end and its form, never a panic.

use crate::message::{DecodeError, MessageKind, RawJson};

/// The flags of a body: which optional fields follow.
#[derive(Clone, Copy)]
pub(super) struct Flags(u64);

impl Flags {
    pub(super) fn has(self, bit: u32) -> bool {
        self.0 & (1 << bit) != 0
    }
}

pub(super) struct Reader<'a> {
    kind: MessageKind,
    body: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(kind: MessageKind, body: &'a [u8]) -> Reader<'a> {
        Reader { kind, body, at: 0 }
    }

    pub(super) fn invalid(&self, detail: String) -> DecodeError {
        DecodeError::Invalid {
            kind: self.kind,
            detail,
        }
    }

    pub(super) fn byte(&mut self) -> Result<u8, DecodeError> {
        let b = *self
            .body
            .get(self.at)
            .ok_or_else(|| self.invalid(format!("the frame ends at byte {}", self.at + 2)))?;
        self.at += 1;
        Ok(b)
    }

    /// Unsigned LEB128: at most 10 bytes, the shortest form, within u64.
    pub(super) fn uint(&mut self) -> Result<u64, DecodeError> {
        let start = self.at;
        let mut value: u64 = 0;
        for i in 0..10u32 {
            let b = self.byte()?;
            let part = u64::from(b & 0x7F);
            if i == 9 && part > 1 {
                return Err(self.invalid(format!("a uint at byte {} is past 2^64", start + 2)));
            }
            value |= part << (7 * i);
            if b & 0x80 == 0 {
                if i > 0 && part == 0 {
                    return Err(self.invalid(format!(
                        "a uint at byte {} is not in its shortest form",
                        start + 2
                    )));
                }
                return Ok(value);
            }
        }
        Err(self.invalid(format!(
            "a uint at byte {} is longer than 10 bytes",
            start + 2
        )))
    }

    pub(super) fn uint32(&mut self) -> Result<u32, DecodeError> {
        let value = self.uint()?;
        u32::try_from(value).map_err(|_| self.invalid(format!("{value} does not fit 32 bits")))
    }

    pub(super) fn bool(&mut self) -> Result<bool, DecodeError> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(self.invalid(format!("a bool is 0 or 1, not {other}"))),
        }
    }

    pub(super) fn flags(&mut self) -> Result<Flags, DecodeError> {
        self.uint().map(Flags)
    }

    /// A length and that many bytes, checked against the frame's end
    /// before anything is taken.
    fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = self.uint()?;
        let left = self.body.len() - self.at;
        if len > left as u64 {
            return Err(self.invalid(format!(
                "a length of {len} bytes with {left} left in the frame"
            )));
        }
        let bytes = &self.body[self.at..self.at + len as usize];
        self.at += len as usize;
        Ok(bytes)
    }

    pub(super) fn string(&mut self) -> Result<String, DecodeError> {
        let bytes = self.bytes()?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|e| self.invalid(format!("a string is not UTF-8: {e}")))
    }

    /// A JSON payload: its syntax checked, its text kept as it came.
    pub(super) fn json(&mut self) -> Result<RawJson, DecodeError> {
        let text = self.string()?;
        RawJson::from_json(text).map_err(|e| self.invalid(format!("a payload is not JSON: {e}")))
    }

    pub(super) fn opt_uint(&mut self, flags: Flags, bit: u32) -> Result<Option<u64>, DecodeError> {
        if flags.has(bit) {
            self.uint().map(Some)
        } else {
            Ok(None)
        }
    }

    pub(super) fn opt_string(
        &mut self,
        flags: Flags,
        bit: u32,
    ) -> Result<Option<String>, DecodeError> {
        if flags.has(bit) {
            self.string().map(Some)
        } else {
            Ok(None)
        }
    }
}
