//! Reading a fuzz input as a sequence of choices.

/// Reads choices from the front of the input; 0 (or nothing) once it runs
/// out, so any input decodes.
pub(crate) struct Choices<'a> {
    bytes: &'a [u8],
}

impl<'a> Choices<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Choices { bytes }
    }

    /// The next byte, or 0.
    pub(crate) fn next(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((first, rest)) => {
                self.bytes = rest;
                *first
            }
            None => 0,
        }
    }

    /// The next `len` bytes, or as many as are left.
    pub(crate) fn take(&mut self, len: usize) -> &'a [u8] {
        let (taken, rest) = self.bytes.split_at(len.min(self.bytes.len()));
        self.bytes = rest;
        taken
    }

    /// What is left.
    pub(crate) fn rest(self) -> &'a [u8] {
        self.bytes
    }
}
