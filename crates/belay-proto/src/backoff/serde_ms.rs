//! Serde helper: a [`Duration`] as an integer number of milliseconds.
//!
//! Used as `#[serde(rename = "base_ms", with = "...::serde_ms")]` so the JSON
//! form of a policy is plain integers (`{"base_ms": 500}`), which the
//! TypeScript client and the conformance vectors read without a duration
//! parser. Serializing truncates to whole milliseconds (the policies only use
//! whole milliseconds anyway) and saturates at `u64::MAX`.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

use super::formula::whole_ms;

/// Write `duration` as whole milliseconds.
pub(crate) fn serialize<S: Serializer>(
    duration: &Duration,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(whole_ms(*duration))
}

/// Read a non-negative integer number of milliseconds.
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Duration, D::Error> {
    u64::deserialize(deserializer).map(Duration::from_millis)
}
