//! Application data as the JSON text it arrived in.
//!
//! The client core never needs to understand a publication's `data` or a
//! response's `result`, so it does not parse them: the decoder only checks
//! that they are well-formed JSON (an iterative scan, with no depth limit
//! and no number conversion) and keeps their text. A payload nested 200
//! deep or holding `1e400` is therefore delivered like any other, and the
//! application parses it with whatever it likes ([`RawJson::parse`]).

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// JSON text, checked to be one well-formed value, kept as it was received.
#[derive(Clone)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// `null`.
    pub fn null() -> Self {
        RawJson(RawValue::NULL.to_owned())
    }

    /// The JSON text of `value`.
    pub fn from_value(value: &serde_json::Value) -> Self {
        // A `Value` always serializes (its map keys are strings).
        let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
        RawJson::from_json(text).unwrap_or_else(|_| RawJson::null())
    }

    /// The JSON text of a typed `value` (a reserved method's result).
    pub fn encode<T: serde::Serialize>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_string(value).and_then(RawJson::from_json)
    }

    /// Check that `text` is one JSON value and keep it.
    pub fn from_json(text: String) -> Result<Self, serde_json::Error> {
        RawValue::from_string(text).map(RawJson)
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// Parse the text as `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.get())
    }

    /// Parse the text as a [`serde_json::Value`]. Fails where `Value`
    /// cannot hold the data (nesting past serde_json's depth limit of 128,
    /// a number out of the `f64` range).
    pub fn to_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        self.parse()
    }
}

impl Default for RawJson {
    fn default() -> Self {
        RawJson::null()
    }
}

impl From<serde_json::Value> for RawJson {
    fn from(value: serde_json::Value) -> Self {
        RawJson::from_value(&value)
    }
}

impl From<&serde_json::Value> for RawJson {
    fn from(value: &serde_json::Value) -> Self {
        RawJson::from_value(value)
    }
}

/// Equal when the texts are equal.
impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for RawJson {}

/// Equal when the text parses to `other`.
impl PartialEq<serde_json::Value> for RawJson {
    fn eq(&self, other: &serde_json::Value) -> bool {
        self.to_value().is_ok_and(|value| value == *other)
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(RawJson)
    }
}
