//! The classic one-at-a-time faults: each [`Fault`] is a shorthand for a set
//! of toxics (or, for [`Fault::Reset`], a one-off action).

use serde::{Deserialize, Serialize};

use crate::toxic::{RefuseWith, Stream, Toxic, ToxicKind, MAX_MS};

/// One direction of a proxied connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Bytes the client sends to the upstream server.
    ClientToServer,
    /// Bytes the upstream server sends to the client.
    ServerToClient,
}

/// A whole-proxy fault; switch it at run time with
/// [`Proxy::set`](crate::Proxy::set) or `POST /faults`. Setting a fault
/// replaces all the proxy's toxics with the fault's ([`Fault::toxics`]).
///
/// On the wire (JSON) the variant is the `"mode"` field, e.g.
/// `{"mode":"latency","ms":200}` or `{"mode":"half_open","drop":"server_to_client"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Fault {
    /// Forward everything as it comes (the default).
    #[default]
    Pass,
    /// A frozen path: both sockets stay open, nothing moves either way.
    ///
    /// Data is **held, not dropped**: the proxy stops reading, so bytes wait
    /// in the proxy's bounded buffers and the kernels' socket buffers (the
    /// senders' writes block once those fill, as over a dead route where TCP
    /// keeps retransmitting). Switching back to [`Fault::Pass`] delivers all
    /// held bytes in order, FINs included. New connections are accepted and
    /// joined to the upstream, but carry nothing either.
    Blackhole,
    /// Delay every byte by `ms` milliseconds in each direction (a round
    /// trip gains `2 × ms`). Buffering stays bounded, so throughput is capped
    /// at roughly the buffer size per `ms`.
    Latency {
        /// Added one-way delay in milliseconds.
        ms: u64,
    },
    /// Cap each direction of each connection at `bytes_per_sec`.
    Bandwidth {
        /// Bytes per second per direction (at least 1).
        bytes_per_sec: u64,
    },
    /// Close every proxied connection with an RST (`SO_LINGER` 0), then
    /// reset new connections at once for `refuse_ms` milliseconds
    /// (0: none), then return to [`Fault::Pass`].
    ///
    /// A refused connection is accepted by the kernel and then reset, so the
    /// client sees its connect succeed and its first read fail with
    /// "connection reset" (not `ECONNREFUSED`).
    Reset {
        /// How long new connections are reset on arrival, in milliseconds.
        #[serde(default)]
        refuse_ms: u64,
    },
    /// Forward one direction and silently discard the other: the proxy keeps
    /// reading the dropped direction (so its sender never blocks) and throws
    /// the bytes away. Both sockets stay open; an EOF (FIN) in the dropped
    /// direction is withheld until the fault is lifted.
    HalfOpen {
        /// The direction whose bytes are discarded.
        drop: Direction,
    },
    /// Accept each new connection and close it at once (a FIN, no data);
    /// connections already open are untouched.
    DropNew,
    /// Reported by [`Proxy::fault`](crate::Proxy::fault) when the toxics in
    /// force were edited through the toxic API or a timeline since the last
    /// fault was set (see [`Proxy::toxics`](crate::Proxy::toxics)); it
    /// cannot be set.
    Toxics,
}

impl Fault {
    /// The toxics this fault stands for (none for [`Fault::Pass`] and the
    /// one-off [`Fault::Reset`]).
    pub fn toxics(&self) -> Vec<Toxic> {
        let kind = match *self {
            Fault::Blackhole => ToxicKind::Blackhole,
            Fault::Latency { ms } => ToxicKind::Latency {
                latency_ms: ms,
                jitter_ms: 0,
            },
            Fault::Bandwidth { bytes_per_sec } => ToxicKind::Bandwidth { bytes_per_sec },
            Fault::HalfOpen { drop } => {
                return vec![Toxic::new(ToxicKind::Discard).on(Stream::of(drop))];
            }
            Fault::DropNew => ToxicKind::Refuse {
                with: RefuseWith::Close,
            },
            Fault::Pass | Fault::Reset { .. } | Fault::Toxics => return Vec::new(),
        };
        vec![Toxic::new(kind)]
    }

    /// Check the parameters; the message says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Fault::Toxics => {
                Err("toxics: this mode is only reported; add toxics through the toxic API".into())
            }
            Fault::Bandwidth { bytes_per_sec: 0 } => {
                Err("bandwidth: bytes_per_sec must be at least 1".into())
            }
            Fault::Latency { ms } if *ms > MAX_MS => {
                Err(format!("latency: ms must be at most {MAX_MS}"))
            }
            Fault::Reset { refuse_ms } if *refuse_ms > MAX_MS => {
                Err(format!("reset: refuse_ms must be at most {MAX_MS}"))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shapes() {
        let cases = [
            (r#"{"mode":"pass"}"#, Fault::Pass),
            (r#"{"mode":"blackhole"}"#, Fault::Blackhole),
            (r#"{"mode":"latency","ms":200}"#, Fault::Latency { ms: 200 }),
            (
                r#"{"mode":"bandwidth","bytes_per_sec":1000}"#,
                Fault::Bandwidth {
                    bytes_per_sec: 1000,
                },
            ),
            (r#"{"mode":"reset"}"#, Fault::Reset { refuse_ms: 0 }),
            (
                r#"{"mode":"half_open","drop":"server_to_client"}"#,
                Fault::HalfOpen {
                    drop: Direction::ServerToClient,
                },
            ),
            (r#"{"mode":"drop_new"}"#, Fault::DropNew),
        ];
        for (json, fault) in cases {
            assert_eq!(
                serde_json::from_str::<Fault>(json).unwrap(),
                fault,
                "{json}"
            );
        }
        assert!(serde_json::from_str::<Fault>(r#"{"mode":"latency"}"#).is_err());
        assert!(serde_json::from_str::<Fault>(r#"{"mode":"latency","ms":1,"x":1}"#).is_err());
    }

    #[test]
    fn validation() {
        assert!(Fault::Bandwidth { bytes_per_sec: 0 }.validate().is_err());
        assert!(Fault::Latency { ms: 10 }.validate().is_ok());
        assert!(Fault::Latency { ms: MAX_MS + 1 }.validate().is_err());
        assert!(Fault::Toxics.validate().is_err());
    }

    #[test]
    fn faults_map_to_toxics() {
        assert!(Fault::Pass.toxics().is_empty());
        let half = Fault::HalfOpen {
            drop: Direction::ClientToServer,
        }
        .toxics();
        assert_eq!(half.len(), 1);
        assert_eq!(half[0].stream(), Stream::Upstream);
        assert_eq!(*half[0].kind(), ToxicKind::Discard);
        assert_eq!(Fault::Blackhole.toxics()[0].stream(), Stream::Both);
    }
}
