//! Refreshing credentials on the open session: the server says when they
//! expire (`welcome` and `refreshed` carry `expires_in_ms`), the session
//! asks the application for a new token ahead of that ([`Event::TokenWanted`])
//! and sends it in-band with `refresh`, without reconnecting.
//!
//! The ask comes after a fraction of the lifetime drawn uniformly from
//! [`REFRESH_FROM`, `REFRESH_FROM + REFRESH_SPREAD`) (75–90 %), so a fleet
//! that connected together does not refresh together, and a token provider
//! that takes a while still answers before the expiry.

use std::time::Duration;

use super::{Output, Phase, Session};
use crate::client::event::Event;
use crate::message::{ClientMessage, Refresh};
use crate::rng::RandomSource;
use crate::time::Instant;

/// The earliest fraction of the lifetime at which a new token is asked for.
pub(crate) const REFRESH_FROM: f64 = 0.75;
/// The width of the window the ask is drawn from.
pub(crate) const REFRESH_SPREAD: f64 = 0.15;

/// When to ask for a new token, and when the current one expires.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Credentials {
    pub(crate) ask_at: Option<Instant>,
    pub(crate) expires_at: Option<Instant>,
}

impl Session {
    /// The server said the credentials expire `expires_in_ms` from `now`
    /// (`None`: they do not): schedule the ask.
    pub(super) fn credentials_expire_in(&mut self, now: Instant, expires_in_ms: Option<u64>) {
        self.credentials = match expires_in_ms {
            None => Credentials::default(),
            Some(ms) => {
                let fraction = REFRESH_FROM + REFRESH_SPREAD * self.rng.next_unit();
                let ask = (ms as f64 * fraction).floor() as u64;
                Credentials {
                    ask_at: Some(now + Duration::from_millis(ask)),
                    expires_at: Some(now + Duration::from_millis(ms)),
                }
            }
        };
    }

    /// At the ask time, on the open session: tell the application.
    pub(super) fn ask_for_token_if_due(&mut self, now: Instant) {
        if !matches!(self.phase, Phase::Open { .. }) {
            return;
        }
        if !self.credentials.ask_at.is_some_and(|at| at <= now) {
            return;
        }
        self.credentials.ask_at = None;
        let expires_in = self
            .credentials
            .expires_at
            .map_or(Duration::ZERO, |e| e.saturating_duration_since(now));
        self.emit(Event::TokenWanted { expires_in });
    }

    /// Use `token` from now on: sent with `refresh` on the open session
    /// (the server confirms with `refreshed`, or closes 4001 if it refuses
    /// it), and in `connect` on every later transport. Answers
    /// [`Event::TokenWanted`]; may be called at any time.
    pub fn refresh_token(&mut self, now: Instant, token: String) {
        let _ = self.advance(now);
        self.config.set_token(Some(token.clone()));
        if let Phase::Open { id, .. } = self.phase {
            self.push(Output::Transmit {
                id,
                message: ClientMessage::Refresh(Refresh { token }),
            });
        }
    }
}
