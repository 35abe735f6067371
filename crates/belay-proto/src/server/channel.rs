//! Rules for channel names and published payloads.
//!
//! A channel name is client input (`subscribe.channel`) and a server-side
//! key held for as long as the channel lives, so its length is bounded. A
//! published payload must be something every client can take: no frame
//! longer than it accepts and no nesting deeper than its parser allows
//! (serde_json stops at 128 levels, and the `publication` envelope adds
//! one), so the server refuses such payloads at publish time instead of
//! sending a frame that would make every subscriber drop its connection.

use crate::message::Payload;

/// Default longest channel name, in bytes (as Centrifugo's `channel_max_length`).
pub const DEFAULT_MAX_CHANNEL_LEN: usize = 255;

/// Deepest nesting of arrays and objects a published payload may have.
pub const MAX_PAYLOAD_DEPTH: usize = 64;

/// The first character of the server's own channels (`$presence:…`,
/// `$host:…`, `$host-calls:…`, `$host-state:…`, and any it adds): the
/// server alone writes them (a host writes its own `$host:ID`), never an
/// application through the HTTP API nor a client's publish grant.
pub const RESERVED_CHANNEL_PREFIX: char = '$';

/// Whether `name` is one of the server's own channels
/// ([`RESERVED_CHANNEL_PREFIX`]).
///
/// ```
/// use belay_proto::server::is_reserved_channel;
///
/// assert!(is_reserved_channel("$host-calls:pc-1"));
/// assert!(!is_reserved_channel("news$"));
/// ```
pub fn is_reserved_channel(name: &str) -> bool {
    name.starts_with(RESERVED_CHANNEL_PREFIX)
}

/// Why a channel name is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum ChannelNameError {
    /// The name is empty.
    #[error("the channel name is empty")]
    Empty,
    /// The name is longer than the limit.
    #[error("the channel name is {len} bytes long, at most {max} allowed")]
    TooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
}

/// Check a channel name against `max_len` bytes.
///
/// ```
/// use belay_proto::server::{check_channel_name, ChannelNameError};
///
/// assert!(check_channel_name("news", 255).is_ok());
/// assert_eq!(check_channel_name("", 255), Err(ChannelNameError::Empty));
/// assert_eq!(
///     check_channel_name("abcdef", 4),
///     Err(ChannelNameError::TooLong { len: 6, max: 4 })
/// );
/// ```
pub fn check_channel_name(name: &str, max_len: usize) -> Result<(), ChannelNameError> {
    if name.is_empty() {
        return Err(ChannelNameError::Empty);
    }
    if name.len() > max_len {
        return Err(ChannelNameError::TooLong {
            len: name.len(),
            max: max_len,
        });
    }
    Ok(())
}

/// How deeply `value` nests arrays and objects (a scalar is 0, `[]` is 1,
/// `[[1]]` is 2). Iterative, so a deep value cannot exhaust the stack.
pub fn payload_depth(value: &Payload) -> usize {
    let mut deepest = 0;
    let mut stack: Vec<(&Payload, usize)> = vec![(value, 0)];
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Payload>> = match value {
            Payload::Array(items) => Box::new(items.iter()),
            Payload::Object(fields) => Box::new(fields.values()),
            _ => continue,
        };
        deepest = deepest.max(depth + 1);
        stack.extend(children.map(|child| (child, depth + 1)));
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalars_are_flat_and_containers_count_their_levels() {
        assert_eq!(payload_depth(&json!(1)), 0);
        assert_eq!(payload_depth(&json!([])), 1);
        assert_eq!(payload_depth(&json!({"a": [1, {"b": []}]})), 4);
    }

    #[test]
    fn a_very_deep_payload_is_measured_without_recursion() {
        let mut value = json!(0);
        for _ in 0..10_000 {
            value = json!([value]);
        }
        assert_eq!(payload_depth(&value), 10_000);
        // serde_json's own drop of such a value recurses; leak-free
        // iterative teardown keeps this test from overflowing the stack.
        while let Payload::Array(mut items) = value {
            value = items.pop().unwrap_or(Payload::Null);
        }
    }

    #[test]
    fn a_name_at_the_limit_passes_and_one_byte_more_does_not() {
        let name = "x".repeat(DEFAULT_MAX_CHANNEL_LEN);
        assert!(check_channel_name(&name, DEFAULT_MAX_CHANNEL_LEN).is_ok());
        assert!(check_channel_name(&format!("{name}x"), DEFAULT_MAX_CHANNEL_LEN).is_err());
    }
}
