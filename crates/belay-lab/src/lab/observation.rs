//! What a client under test reports, one fact at a time: the lab agent line
//! protocol (docs/LAB.md). Rust agents send [`Observation`]s over a channel;
//! the browser agent prints the same facts as JSON lines on stdout.

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

/// How a request ended, as the application saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Outcome {
    /// The server answered with a result.
    Ok,
    /// No answer before the deadline.
    Timeout,
    /// Refused before sending: the client knew it was not ready.
    NotReady,
    /// The connection was lost before an answer.
    Closed,
    /// The server answered with an error.
    Error,
    /// The server answered `host_lost`: the resident host called went
    /// away with the call (its session, or its node, died).
    HostLost,
}

/// One fact reported by a client under test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Observation {
    /// The agent is up and its client exists.
    Started,
    /// A connection attempt began (a socket was created).
    Dial,
    /// The client now considers itself ready.
    Ready,
    /// The transport the client became ready over: `websocket` or `sse`
    /// (clients that can fall back; reported after [`Observation::Ready`]).
    Via {
        /// Its name.
        transport: String,
    },
    /// The codec of the connection the client became ready on: `binary`
    /// or `json` (clients asked for the binary codec; reported after
    /// [`Observation::Ready`] and any [`Observation::Via`]).
    Codec {
        /// Its name.
        codec: String,
    },
    /// The client now considers itself not ready.
    Lost {
        /// The client's own words for why.
        #[serde(default)]
        why: String,
    },
    /// A publication of the watched channel reached the application.
    Pub {
        /// The channel epoch.
        epoch: String,
        /// Its offset within the epoch.
        offset: u64,
    },
    /// The client told the application that history was lost.
    Resync,
    /// The application issued request `id`.
    Sent {
        /// The request's number within the run.
        id: u64,
    },
    /// Request `id` settled.
    Settled {
        /// The request's number within the run.
        id: u64,
        /// How it ended.
        outcome: Outcome,
    },
}

impl Observation {
    /// Parse one line of the agent protocol; `None` for anything else
    /// (a foreign line is ignored, never fatal).
    pub fn parse_line(line: &str) -> Option<Observation> {
        serde_json::from_str(line.trim()).ok()
    }

    /// The line the agent protocol uses for this fact.
    pub fn to_line(&self) -> String {
        // Serialising a plain enum of strings and integers cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// An observation with the moment the lab received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamped {
    /// When the lab received it.
    pub at: Instant,
    /// What happened.
    pub what: Observation,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip() {
        let facts = [
            Observation::Started,
            Observation::Dial,
            Observation::Ready,
            Observation::Lost {
                why: "heartbeat".into(),
            },
            Observation::Pub {
                epoch: "e1".into(),
                offset: 7,
            },
            Observation::Resync,
            Observation::Via {
                transport: "sse".into(),
            },
            Observation::Codec {
                codec: "binary".into(),
            },
            Observation::Sent { id: 3 },
            Observation::Settled {
                id: 3,
                outcome: Outcome::NotReady,
            },
            Observation::Settled {
                id: 5,
                outcome: Outcome::HostLost,
            },
        ];
        for fact in facts {
            assert_eq!(Observation::parse_line(&fact.to_line()), Some(fact));
        }
    }

    #[test]
    fn browser_lines_parse() {
        assert_eq!(
            Observation::parse_line(r#"{"ev":"settled","id":4,"outcome":"timeout"}"#),
            Some(Observation::Settled {
                id: 4,
                outcome: Outcome::Timeout
            })
        );
        assert_eq!(
            Observation::parse_line(r#"{"ev":"lost"}"#),
            Some(Observation::Lost { why: String::new() })
        );
        assert_eq!(
            Observation::parse_line(r#"{"ev":"pub","offset":2,"epoch":"x"}"#),
            Some(Observation::Pub {
                epoch: "x".into(),
                offset: 2
            })
        );
    }

    #[test]
    fn foreign_lines_are_ignored() {
        assert_eq!(Observation::parse_line("DevTools listening on ws://"), None);
        assert_eq!(Observation::parse_line(r#"{"ev":"unknown"}"#), None);
    }
}
