//! Control messages as they travel on PUB/SUB: one JSON object each, `t`
//! naming the kind (`q` a request, `a` its answer, `n` a notice that wants
//! no answer).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest control message a node sends or reads; longer ones are refused
/// on sending and dropped (with a warning) on arrival.
pub const MAX_CONTROL_MESSAGE: usize = 64 * 1024;

/// One control message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t")]
pub(crate) enum Wire {
    /// A request to one node; answered on the sender's own channel.
    #[serde(rename = "q")]
    Ask {
        from: String,
        id: u64,
        method: String,
        body: Value,
    },
    /// The answer to request `id`.
    #[serde(rename = "a")]
    Answer {
        id: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ok: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        err: Option<String>,
    },
    /// A message to every node, without answers.
    #[serde(rename = "n")]
    Notice {
        from: String,
        method: String,
        body: Value,
    },
}

impl Wire {
    pub(crate) fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<Wire> {
        if bytes.len() > MAX_CONTROL_MESSAGE {
            return None;
        }
        serde_json::from_slice(bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_reads_back_as_written() {
        let messages = [
            Wire::Ask {
                from: "a".into(),
                id: 7,
                method: "node.info".into(),
                body: json!(null),
            },
            Wire::Answer {
                id: 7,
                ok: Some(json!({"connections": 3})),
                err: None,
            },
            Wire::Answer {
                id: 8,
                ok: None,
                err: Some("no such method".into()),
            },
            Wire::Notice {
                from: "b".into(),
                method: "hello".into(),
                body: json!([1]),
            },
        ];
        for message in messages {
            assert_eq!(Wire::decode(message.encode().as_bytes()), Some(message));
        }
    }

    #[test]
    fn garbage_and_oversized_messages_are_not_control_messages() {
        assert_eq!(Wire::decode(b"not json"), None);
        assert_eq!(Wire::decode(br#"{"t":"x"}"#), None);
        let huge = format!(
            r#"{{"t":"n","from":"a","method":"m","body":"{}"}}"#,
            "x".repeat(MAX_CONTROL_MESSAGE)
        );
        assert_eq!(Wire::decode(huge.as_bytes()), None);
    }
}
