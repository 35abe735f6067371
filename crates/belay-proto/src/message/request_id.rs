//! The id of a JSON `request` frame that does not decode whole, read
//! without parsing the rest of it, so the server can still answer that
//! request once (`bad_request`, spec/PROTOCOL.md §8.2) instead of leaving
//! the caller to its own timeout.
//!
//! The frame's top-level keys are read in order; `type` and `id` are
//! decoded, every other value is skipped by serde_json's scanner. As soon
//! as both are known the pass stops (by failing on purpose), so params
//! after the id are never looked at: whatever made the frame undecodable
//! (nesting past any parser's recursion limit, a number out of range, a
//! lone surrogate escape) cannot hide the id written before it.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::decode::Key;

/// The id of the `request` that `text` means to be, if its `type` is
/// `"request"` and its `id` is a `u64` that can be read before anything
/// the parser rejects.
pub fn peek_json_request_id(text: &str) -> Option<u64> {
    let mut seen = Seen::default();
    let mut de = serde_json::Deserializer::from_str(text);
    // The pass's own result does not matter: it fails on purpose once both
    // fields are known, and for real on a frame that is not JSON after
    // them. What it saw before either is the answer.
    let _ = de.deserialize_map(Peek(&mut seen));
    match seen {
        Seen {
            request: true,
            id: Some(id),
        } => Some(id),
        _ => None,
    }
}

/// What the pass has read of the top-level object so far.
#[derive(Default)]
struct Seen {
    /// `type` was `"request"`.
    request: bool,
    id: Option<u64>,
}

/// Reads the top-level object's keys into a [`Seen`].
struct Peek<'s>(&'s mut Seen);

impl<'de> Visitor<'de> for Peek<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let seen = self.0;
        let mut typed = false;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match &*key {
                "type" if !typed => {
                    typed = true;
                    let ty = map.next_value::<std::borrow::Cow<'de, str>>()?;
                    if ty != "request" {
                        return Err(de::Error::custom("not a request"));
                    }
                    seen.request = true;
                }
                "id" if seen.id.is_none() => seen.id = Some(map.next_value::<u64>()?),
                // A second `type` or `id` before the pass could stop: the
                // frame is ambiguous. (One after it stops is not seen; the
                // request is refused under the first id.)
                "type" | "id" => {
                    seen.id = None;
                    return Err(de::Error::custom("duplicate field"));
                }
                _ => {
                    map.next_value_seed(IgnoredSeed)?;
                }
            }
            if seen.request && seen.id.is_some() {
                return Err(de::Error::custom("id read"));
            }
        }
        Ok(())
    }
}

/// Skip one value.
struct IgnoredSeed;

impl<'de> DeserializeSeed<'de> for IgnoredSeed {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_ignored_any(IgnoredAny).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::peek_json_request_id;

    #[test]
    fn the_id_before_unparsable_params_is_read() {
        let deep = format!("{}{}", "[".repeat(30_000), "]".repeat(30_000));
        for params in [deep.as_str(), "1e999999", r#""\ud800""#, "[1,"] {
            let frame = format!(r#"{{"type":"request","id":7,"method":"m","params":{params}}}"#);
            assert_eq!(peek_json_request_id(&frame), Some(7), "{params}");
        }
    }

    #[test]
    fn the_id_after_params_the_scanner_skips_is_read() {
        assert_eq!(
            peek_json_request_id(r#"{"type":"request","params":1e999999,"id":7}"#),
            Some(7)
        );
    }

    #[test]
    fn the_id_may_come_before_the_type() {
        assert_eq!(
            peek_json_request_id(r#"{"id":3,"method":"m","type":"request"}"#),
            Some(3)
        );
    }

    #[test]
    fn no_id_is_read_from_what_is_not_a_request_with_one_readable_id() {
        for frame in [
            r#"{"type":"subscribe","id":7}"#,
            r#"{"type":"request","id":-1}"#,
            r#"{"type":"request","id":"7"}"#,
            r#"{"type":"request","method":"m"}"#,
            r#"{"type":"request","params":[1,],"id":7}"#,
            r#"{"id":7,"id":8,"type":"request"}"#,
            r#"{"type":"request","type":"request","id":7}"#,
            r#"[{"type":"request","id":7}]"#,
            "not json",
        ] {
            assert_eq!(peek_json_request_id(frame), None, "{frame}");
        }
    }
}
