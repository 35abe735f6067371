//! Turning an op's target and fact into the input the session is fed.

use belay_proto::message::{
    encode_server, ErrorBody, Pacing, Publication, ReconnectAdvice, Reply, Response, ServerMessage,
    Subscribed, Unsubscribed, Welcome, MAX_FRAME_LEN, PROTOCOL_VERSION,
};
use belay_proto::{CloseCode, CloseInfo, Failure, Input, TransportId};
use serde_json::json;

use super::driver::Driver;
use super::ops::{
    Fact, FailureKind, Msg, ReqRef, Target, ADVICE_REASONS, CHANNELS, EPOCHS, MALFORMED,
    UNSUB_CODES,
};

impl Driver {
    pub(crate) fn resolve(&self, target: Target) -> TransportId {
        let current = self.session.current_transport();
        match target {
            Target::Current => current
                .or_else(|| self.invariants.opened().last().copied())
                .unwrap_or(TransportId(1)),
            Target::Old(k) => {
                let old: Vec<TransportId> = self
                    .invariants
                    .opened()
                    .iter()
                    .copied()
                    .filter(|id| Some(*id) != current)
                    .collect();
                if old.is_empty() {
                    TransportId(0)
                } else {
                    old[k % old.len()]
                }
            }
            Target::Future(0) => TransportId(u64::MAX),
            Target::Future(k) => {
                let last = self.invariants.opened().last().map_or(0, |id| id.0);
                TransportId(last + u64::from(k))
            }
        }
    }

    pub(crate) fn message(&self, msg: &Msg) -> ServerMessage {
        match msg {
            Msg::Welcome {
                mismatch,
                ping_interval_ms,
                pacing,
                expires_in_ms,
            } => ServerMessage::Welcome(Welcome {
                session: format!("s-{}", self.step),
                protocol: if *mismatch {
                    PROTOCOL_VERSION + 1
                } else {
                    PROTOCOL_VERSION
                },
                ping_interval_ms: *ping_interval_ms,
                pacing: pacing.map(|(period_ms, phase_ms, origin_ms)| Pacing {
                    period_ms,
                    phase_ms,
                    origin_ms,
                }),
                expires_in_ms: *expires_in_ms,
            }),
            Msg::Ping => ServerMessage::Ping,
            Msg::Pong => ServerMessage::Pong,
            Msg::Response { request, ok } => {
                let pick = |ids: Vec<u64>, k: usize| match ids.len() {
                    0 => 1,
                    n => ids[k % n],
                };
                let id = match request {
                    ReqRef::InFlight(k) => pick(
                        self.invariants.unsettled().iter().map(|id| id.0).collect(),
                        *k,
                    ),
                    ReqRef::Issued(k) => pick(self.requests.iter().copied().collect(), *k),
                    ReqRef::Bogus(id) => *id,
                };
                let reply = if *ok {
                    Reply::Result(json!({ "echo": id }).into())
                } else {
                    Reply::Error(ErrorBody::new("boom", "it broke"))
                };
                ServerMessage::Response(Response { id, reply })
            }
            Msg::Subscribed {
                channel,
                epoch,
                offset,
                recovered,
            } => ServerMessage::Subscribed(Subscribed {
                channel: CHANNELS[*channel].into(),
                epoch: EPOCHS[*epoch].into(),
                offset: *offset,
                recovered: *recovered,
            }),
            Msg::Unsubscribed { channel, code } => ServerMessage::Unsubscribed(Unsubscribed {
                channel: CHANNELS[*channel].into(),
                code: UNSUB_CODES[*code].into(),
                reason: String::new(),
            }),
            Msg::Publication {
                channel,
                other_epoch,
                step,
            } => {
                let name = CHANNELS[*channel];
                let (mut epoch, base) = match self.session.subscriptions().position(name) {
                    Some(position) => (position.epoch.clone(), position.offset),
                    None => (EPOCHS[0].to_owned(), 0),
                };
                if *other_epoch {
                    epoch = if epoch == EPOCHS[0] {
                        EPOCHS[1]
                    } else {
                        EPOCHS[0]
                    }
                    .to_owned();
                }
                let offset = base.saturating_add_signed(i64::from(*step));
                ServerMessage::Publication(Publication {
                    channel: name.into(),
                    epoch,
                    offset,
                    data: json!(offset).into(),
                })
            }
            Msg::Reconnect {
                reason,
                min_ms,
                max_ms,
            } => ServerMessage::Reconnect(ReconnectAdvice {
                reason: ADVICE_REASONS[*reason].into(),
                min_delay_ms: *min_ms,
                max_delay_ms: *max_ms,
                message: None,
            }),
            Msg::Error => ServerMessage::Error(ErrorBody::new("oops", "not tied to a request")),
        }
    }

    pub(crate) fn build(&self, id: TransportId, fact: &Fact) -> Input {
        match fact {
            Fact::Opened => Input::TransportOpened(id),
            Fact::Failed(kind) => Input::TransportFailed(
                id,
                match kind {
                    FailureKind::Network => Failure::network("reset"),
                    FailureKind::Rejected(status) => Failure::rejected(*status),
                    FailureKind::InvalidConfig => Failure::InvalidConfig {
                        detail: "bad url".into(),
                    },
                },
            ),
            Fact::Closed(code) => Input::TransportClosed(
                id,
                match code {
                    Some(code) => CloseInfo::new(CloseCode(*code), "bye"),
                    None => CloseInfo::abnormal(),
                },
            ),
            Fact::Message(msg) => Input::Message(id, self.message(msg)),
            Fact::Frame(msg) => Input::Frame(id, encode_server(&self.message(msg))),
            Fact::Malformed(k) => Input::Frame(
                id,
                MALFORMED
                    .get(*k)
                    .map_or_else(|| "x".repeat(MAX_FRAME_LEN + 1), |s| (*s).to_owned()),
            ),
            Fact::UnknownType => Input::Frame(id, r#"{"type":"hologram","x":1}"#.into()),
        }
    }
}
