//! Client frames as a test writes them: masked, with the length in the
//! header's three sizes (tests only).

/// The mask of every test frame.
pub(super) const MASK: [u8; 4] = [0x12, 0x34, 0x56, 0x78];

/// A masked client frame whose first byte is `first`.
pub(super) fn masked(first: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![first];
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= 0xffff {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&MASK);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
    out
}
