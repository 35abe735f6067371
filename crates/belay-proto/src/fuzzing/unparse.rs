//! The inverse of the derived `Arbitrary` decoding, for writing fuzz seed
//! inputs: shared by the client_session harness and belay-server's targets.

/// Writes a value the way its `Arbitrary` implementation reads it.
pub trait Unparse {
    /// Append the bytes that decode to `self`.
    fn unparse(&self, out: &mut Vec<u8>);
}

/// The `u32` the derived `Arbitrary` maps to variant `index` of `count`
/// (it takes `(u32 * count) >> 32`).
pub fn variant(out: &mut Vec<u8>, index: u64, count: u64) {
    let tag = (index << 32).div_ceil(count);
    out.extend_from_slice(&(tag as u32).to_le_bytes());
}

macro_rules! unparse_int {
    ($($ty:ty),*) => {$(
        impl Unparse for $ty {
            fn unparse(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
unparse_int!(u8, u16, u32, u64, i64);

impl Unparse for bool {
    fn unparse(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
}

impl<T: Unparse> Unparse for Option<T> {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(0),
            Some(value) => {
                out.push(1);
                value.unparse(out);
            }
        }
    }
}

impl<A: Unparse, B: Unparse> Unparse for (A, B) {
    fn unparse(&self, out: &mut Vec<u8>) {
        self.0.unparse(out);
        self.1.unparse(out);
    }
}
