//! The handshake: `connect` first and once, the protocol version, the
//! authenticator's verdict (and the credential's expiry), the session id
//! and `welcome`.

use std::collections::VecDeque;

use crate::close::CloseCode;
use crate::heartbeat::Beat;
use crate::message::{ClientMessage, DecodeError, ServerMessage, Welcome, PROTOCOL_VERSION};
use crate::time::Instant;

use super::super::Violation;
use super::{AuthVerdict, Connection, Event, Open, Output, Pipelined, Stage, Ticket};

/// Whole milliseconds from `now` to `at` (0 once passed).
pub(super) fn millis_until(now: Instant, at: Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(now).as_millis()).unwrap_or(u64::MAX)
}

impl<F> Connection<F> {
    /// The first data frame, decoded: it must be a `connect` in our version.
    pub(super) fn on_handshake_frame(
        &mut self,
        now: Instant,
        decoded: Result<ClientMessage, DecodeError>,
    ) {
        let _ = now;
        let Stage::Handshake {
            deadline,
            upgrade_token,
        } = &mut self.stage
        else {
            return;
        };
        let (deadline, upgrade_token) = (*deadline, upgrade_token.take());
        let connect = match decoded {
            Ok(ClientMessage::Connect(connect)) => connect,
            Ok(_) | Err(_) => return self.violate(Violation::NotConnectFirst),
        };
        if connect.protocol != PROTOCOL_VERSION {
            return self.violate(Violation::UnsupportedProtocol);
        }
        let ticket = self.ticket();
        let token = connect.token.or(upgrade_token);
        self.stage = Stage::Authenticating {
            deadline,
            ticket,
            backlog: VecDeque::new(),
        };
        self.out.push_back(Output::Authenticate { ticket, token });
    }

    /// The authenticator's verdict on the credential of `connect`
    /// ([`Output::Authenticate`]), at `now`. Accepted and not yet expired:
    /// `welcome`, then the messages that followed `connect`. Nobody could
    /// judge it ([`AuthVerdict::Unavailable`]): close 1013. Otherwise
    /// close 4001.
    pub(super) fn handle_auth(&mut self, now: Instant, ticket: Ticket, verdict: AuthVerdict) {
        let Stage::Authenticating {
            ticket: asked,
            backlog,
            ..
        } = &mut self.stage
        else {
            return;
        };
        if *asked != ticket {
            return;
        }
        let backlog = std::mem::take(backlog);
        let (expires_at, pacing) = match verdict {
            AuthVerdict::Accepted { expires_at, pacing }
                if !expires_at.is_some_and(|at| now >= at) =>
            {
                (expires_at, pacing)
            }
            AuthVerdict::RefusedFor { reason } => {
                return self.close_with(CloseCode::UNAUTHORIZED, &format!("unauthorized: {reason}"))
            }
            AuthVerdict::Unavailable { reason } => {
                return self.close_with(
                    CloseCode::TRY_AGAIN_LATER,
                    &format!("unavailable: {reason}"),
                )
            }
            _ => return self.close_with(CloseCode::UNAUTHORIZED, "unauthorized"),
        };
        let session: std::sync::Arc<str> = format!("s{:016x}", self.rng.next_u64()).into();
        self.send(ServerMessage::Welcome(Welcome {
            session: session.to_string(),
            protocol: PROTOCOL_VERSION,
            ping_interval_ms: Some(self.limits.ping_interval_ms()),
            pacing,
            expires_in_ms: expires_at.map(|at| millis_until(now, at)),
        }));
        self.event(Event::Connected {
            session: std::sync::Arc::clone(&session),
        });
        // An idle client is pinged on its beat (spec §3.4): its last frame
        // before a silent death is then one of those pings, and the fleet
        // notices the death spread evenly over the ping interval, or, for
        // a fleet the interval does not spread, before each client's slot.
        let mut heartbeat = self.limits.heartbeat(now);
        heartbeat
            .set_beat(pacing.and_then(|p| Beat::for_pings(&p, self.limits.ping_interval(), now)));
        self.stage = Stage::Open(Open {
            session,
            expires_at,
            heartbeat,
            refreshing: None,
        });
        for held in backlog {
            match held {
                Pipelined::Message(ClientMessage::Ping) => self.send(ServerMessage::Pong),
                Pipelined::Message(message) => self.on_message(now, message),
                Pipelined::RateLimited {
                    request,
                    retry_after,
                } => self.refuse_rate_limited(request, retry_after),
            }
            if self.is_closed() {
                break;
            }
        }
    }
}
