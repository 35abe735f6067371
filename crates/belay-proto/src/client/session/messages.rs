//! What the session does with each message from the server, and with a
//! frame it cannot decode.

use std::time::Duration;

use super::{Output, Phase, Session, MAX_SERVER_PING_MS, MIN_SERVER_PING_MS};
use crate::backoff::PacingSlots;
use crate::client::event::{DisconnectReason, Event, HaltReason};
use crate::client::transport::TransportId;
use crate::close::CloseCode;
use crate::heartbeat::{Beat, Heartbeat};
use crate::message::{
    ClientMessage, DecodeError, MessageKind, ServerMessage, Welcome, PROTOCOL_VERSION,
};
use crate::time::Instant;

impl Session {
    pub(super) fn on_protocol_violation(
        &mut self,
        now: Instant,
        id: TransportId,
        error: DecodeError,
    ) {
        let (code, reason) = match error {
            DecodeError::TooLarge { .. } => (CloseCode::TOO_BIG, "frame too large"),
            _ => (CloseCode::PROTOCOL_ERROR, "malformed frame"),
        };
        self.push(Output::CloseTransport {
            id,
            code,
            reason: reason.into(),
        });
        self.lose_transport(now, DisconnectReason::ProtocolViolation { error }, None);
    }

    /// A frame arrived: proof of life. A `pong` answers our probe, so the
    /// connection is idle (its heartbeat probes on the fleet's beat); a
    /// `ping` is the server's, on its beat if it pings on one.
    pub(super) fn note_frame(&mut self, now: Instant, message: Option<&ServerMessage>) {
        if let Phase::Open {
            heartbeat, check, ..
        } = &mut self.phase
        {
            match message {
                Some(ServerMessage::Pong) => heartbeat.handle_pong(now),
                Some(ServerMessage::Ping) => heartbeat.handle_ping(now),
                _ => heartbeat.handle_frame(now),
            }
            *check = None;
        }
    }

    pub(super) fn on_message(&mut self, now: Instant, id: TransportId, message: ServerMessage) {
        if matches!(self.phase, Phase::Connecting { .. }) {
            // Frames before the open event: the driver reordered; treat the
            // transport as open first so nothing is lost.
            self.on_opened(now, id);
        }
        self.note_frame(now, Some(&message));
        match message {
            ServerMessage::Welcome(welcome) => self.on_welcome(now, id, welcome),
            ServerMessage::Ping => self.push(Output::Transmit {
                id,
                message: ClientMessage::Pong,
            }),
            ServerMessage::Pong => {}
            ServerMessage::Response(response) => {
                if let Some((request, outcome)) = self.registry.handle_response(response) {
                    self.emit(Event::Response {
                        id: request,
                        outcome,
                    });
                }
                self.leave_if_idle(now);
            }
            ServerMessage::Subscribed(msg) => {
                let mut out = Vec::new();
                self.subscriptions.handle_subscribed(msg, &mut out);
                self.apply_subscription_outputs(out);
                self.refresh_readiness(now);
            }
            ServerMessage::Unsubscribed(msg) => {
                let mut out = Vec::new();
                self.subscriptions
                    .handle_unsubscribed(now, msg, &mut self.rng, &mut out);
                self.apply_subscription_outputs(out);
                self.refresh_readiness(now);
            }
            ServerMessage::Publication(publication) => {
                let mut out = Vec::new();
                self.subscriptions
                    .handle_publication(now, publication, &mut out);
                self.apply_subscription_outputs(out);
                self.refresh_readiness(now);
            }
            ServerMessage::SubExpiring(expiring) => {
                self.subscriptions
                    .handle_sub_expiring(now, &expiring, &mut self.rng);
            }
            ServerMessage::Refreshed(refreshed) => {
                self.credentials_accepted(now, refreshed.expires_in_ms);
            }
            ServerMessage::Reconnect(advice) => {
                self.advice = Some(advice);
                if matches!(self.phase, Phase::Open { .. }) {
                    // The server will close this transport: send nothing
                    // new on it, and leave as soon as nothing is in flight
                    // (a request sent as its close frame left could not be
                    // answered).
                    self.leaving = true;
                    self.refresh_readiness(now);
                    self.leave_if_idle(now);
                }
            }
            ServerMessage::Error(body) => self.emit(Event::ServerError(body)),
        }
    }

    /// Leave the transport the server advised leaving, once no request on
    /// it waits for its answer: close it (1000) and reconnect within the
    /// advice's window, as when the server closes.
    pub(super) fn leave_if_idle(&mut self, now: Instant) {
        // A pending switch goes first (`switch.rs`).
        self.switch_if_quiet(now);
        let Phase::Open { id, .. } = self.phase else {
            return;
        };
        if !self.leaving || !self.registry.is_empty() {
            return;
        }
        self.push(Output::CloseTransport {
            id,
            code: CloseCode::NORMAL,
            reason: "advised".into(),
        });
        self.lose_transport(now, DisconnectReason::Advised, None);
    }

    fn on_welcome(&mut self, now: Instant, id: TransportId, welcome: Welcome) {
        if !matches!(self.phase, Phase::Handshaking { .. }) {
            return;
        }
        if welcome.protocol != PROTOCOL_VERSION {
            // Retrying cannot help: the server will speak the same version next time.
            self.push(Output::CloseTransport {
                id,
                code: CloseCode::PROTOCOL_ERROR,
                reason: "unsupported protocol version".into(),
            });
            let error = DecodeError::Invalid {
                kind: MessageKind::Welcome,
                detail: format!("protocol {} is not {PROTOCOL_VERSION}", welcome.protocol),
            };
            let halt = HaltReason::ProtocolMismatch {
                server: welcome.protocol,
            };
            self.lose_transport(
                now,
                DisconnectReason::ProtocolViolation { error },
                Some(halt),
            );
            return;
        }
        // A server that pings keeps a healthy connection from ever being quiet
        // for long; probe only if it has been quiet for 1.5 of its intervals,
        // so a server-pinged connection sends no probes of its own.
        let server_ping = welcome
            .ping_interval_ms
            .filter(|&ms| ms > 0)
            .map(|ms| Duration::from_millis(ms.clamp(MIN_SERVER_PING_MS, MAX_SERVER_PING_MS)));
        let probe_interval = match server_ping {
            Some(ping) => self.config.probe_interval().max(ping.saturating_mul(3) / 2),
            None => self.config.probe_interval(),
        };
        let slots = welcome.pacing.map(|p| {
            PacingSlots::new(
                Duration::from_millis(p.period_ms),
                Duration::from_millis(p.phase_ms),
                now,
            )
        });
        let mut heartbeat = Heartbeat::new(now, probe_interval, self.config.probe_timeout());
        heartbeat.set_server_ping_interval(server_ping);
        // With its plan's origin the server says it runs a plan: a server
        // that pings pings idle connections on their beat; otherwise our own
        // probes keep the connection alive, on a beat set on our slots while
        // idle.
        let origin = welcome.pacing.and_then(|p| p.origin_ms).is_some();
        match (server_ping, slots.filter(|_| origin)) {
            (Some(_), _) => heartbeat.set_server_beat(origin),
            (None, Some(slots)) => heartbeat.set_beat(Beat::for_probes(
                &slots,
                probe_interval,
                self.config.probe_timeout(),
            )),
            (None, None) => {}
        }
        self.phase = Phase::Open {
            id,
            heartbeat,
            check: None,
        };
        self.backoff.set_slots(slots);
        self.session_id = Some(welcome.session.clone());
        self.credentials_accepted(now, welcome.expires_in_ms);
        self.emit(Event::Connected {
            session: welcome.session,
        });
        let mut out = Vec::new();
        self.subscriptions.handle_protocol_up(now, &mut out);
        self.apply_subscription_outputs(out);
        self.refresh_readiness(now);
    }
}
