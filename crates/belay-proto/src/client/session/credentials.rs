//! The token lifecycle (spec/PROTOCOL.md §2.8): when the session asks the
//! application's token provider, what it does with the answer, and which
//! refusals end the session.
//!
//! ```text
//!   dial due ── provider, and the token is absent, refused or due ──▶ Authorizing
//!      │                                                          (TokenWanted)
//!      │ otherwise                            token ──▶ dial │ unavailable/no answer
//!      ▼                                                     │  ──▶ backoff, ask again
//!   Connecting ─▶ … ─▶ Open ── 75–90 % of the lifetime ──▶ TokenWanted ── token ──▶ refresh
//!                        │                                     └ unavailable: ask again
//!                        │                                       after the backoff
//!   refused (4001, HTTP 401/403): a token the provider just gave ──▶ Halted (AuthFailed)
//!                                 any other token, with a provider ──▶ ask, then dial
//!   the provider answers Unauthorized ──▶ Halted (AuthFailed)
//! ```
//!
//! The ask on the open session comes after a fraction of the lifetime drawn
//! uniformly from [`REFRESH_FROM`, `REFRESH_FROM + REFRESH_SPREAD`) (75–90 %),
//! so a fleet that connected together does not refresh together; the same
//! instant is the margin before a dial: a token past it is renewed first.

use std::time::Duration;

use super::{Output, Phase, Session};
use crate::backoff::Backoff;
use crate::client::event::{DisconnectReason, Event, HaltReason};
use crate::close::CloseCode;
use crate::message::{ClientMessage, Refresh};
use crate::rng::RandomSource;
use crate::time::Instant;

/// The earliest fraction of the lifetime at which a new token is asked for.
pub(crate) const REFRESH_FROM: f64 = 0.75;
/// The width of the window the ask is drawn from.
pub(crate) const REFRESH_SPREAD: f64 = 0.15;

/// Why the application's token provider gave no token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TokenError {
    /// It could not get one now (the backend is down, the device offline,
    /// a timeout): the session asks again after its backoff and never
    /// halts for this.
    Unavailable,
    /// The backend said this user is not authorized any more: the session
    /// halts with [`HaltReason::AuthFailed`].
    Unauthorized,
}

/// What the session knows of its credentials.
#[derive(Debug, Clone)]
pub(crate) struct Credentials {
    /// When to ask for a new token on the open session.
    pub(crate) ask_at: Option<Instant>,
    /// When the current token expires, as the server last said.
    pub(crate) expires_at: Option<Instant>,
    /// From when a dial asks for a new token first (the drawn ask point).
    renew_at: Option<Instant>,
    /// The server refused the current token: a dial asks first.
    refused: bool,
    /// The refusal just handled: the session asks at once (no backoff).
    pub(crate) ask_now: bool,
    /// The current token came from the provider and the server has not
    /// accepted it yet: a refusal of it halts.
    fresh: bool,
    /// Pacing of asks on the open session after the provider failed.
    retries: Backoff,
}

impl Credentials {
    pub(crate) fn new(retries: Backoff) -> Self {
        Credentials {
            ask_at: None,
            expires_at: None,
            renew_at: None,
            refused: false,
            ask_now: false,
            fresh: false,
            retries,
        }
    }
}

impl Session {
    /// The server accepted the credentials (`welcome`, `refreshed`) and
    /// said they expire `expires_in_ms` from `now` (`None`: they do not):
    /// schedule the ask.
    pub(super) fn credentials_accepted(&mut self, now: Instant, expires_in_ms: Option<u64>) {
        let c = &mut self.credentials;
        c.fresh = false;
        c.refused = false;
        c.retries.reset();
        match expires_in_ms {
            None => {
                c.ask_at = None;
                c.expires_at = None;
                c.renew_at = None;
            }
            Some(ms) => {
                let fraction = REFRESH_FROM + REFRESH_SPREAD * self.rng.next_unit();
                let ask = now + Duration::from_millis((ms as f64 * fraction).floor() as u64);
                c.ask_at = Some(ask);
                c.renew_at = Some(ask);
                c.expires_at = Some(now + Duration::from_millis(ms));
            }
        }
    }

    /// The application set a token of its own: not refused, not fresh from
    /// the provider, its expiry unknown.
    pub(super) fn credentials_replaced(&mut self) {
        let c = &mut self.credentials;
        c.refused = false;
        c.fresh = false;
        c.renew_at = None;
    }

    /// Time left on the current token, as far as the session knows.
    fn expires_in(&self, now: Instant) -> Duration {
        self.credentials
            .expires_at
            .map_or(Duration::ZERO, |e| e.saturating_duration_since(now))
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
        let expires_in = self.expires_in(now);
        self.emit(Event::TokenWanted { expires_in });
    }

    /// A dial is due: with a token provider and a token that is absent,
    /// refused or past its renewal point, ask for one first (the dial
    /// follows the answer); otherwise dial.
    pub(super) fn dial_or_ask(&mut self, now: Instant) {
        let c = &self.credentials;
        let wanted = self.config.token_provider()
            && (self.config.token().is_none()
                || c.refused
                || c.renew_at.is_some_and(|at| at <= now));
        if !wanted {
            self.dial(now);
            return;
        }
        self.not_before = None;
        self.phase = Phase::Authorizing {
            deadline: now + self.config.connect_timeout(),
        };
        let expires_in = self.expires_in(now);
        self.emit(Event::TokenWanted { expires_in });
    }

    /// The server refused the credentials (4001, HTTP 401/403): the next
    /// dial with a provider asks for a new token. A token that did not
    /// come fresh from the provider is replaced at once (`true`); without a
    /// provider, or with a fresh token, the session halts (`false`).
    pub(super) fn token_refused(&mut self) -> bool {
        let c = &mut self.credentials;
        c.refused = true;
        if !self.config.token_provider() || c.fresh {
            return false;
        }
        c.ask_now = true;
        true
    }

    /// The provider did not answer within the connect timeout.
    pub(super) fn token_ask_timed_out(&mut self, now: Instant) {
        self.token_failed(now, TokenError::Unavailable);
    }

    /// Use `token` from now on: sent with `refresh` on the open session
    /// (the server confirms with `refreshed`, or closes 4001 if it refuses
    /// it), and in `connect` on every later transport; a session waiting
    /// for it ([`Event::TokenWanted`] before a dial) dials now. Answers
    /// [`Event::TokenWanted`]; may be called at any time.
    pub fn refresh_token(&mut self, now: Instant, token: String) {
        let now = self.advance(now);
        if matches!(self.phase, Phase::Stopped) {
            return;
        }
        self.config.set_token(Some(token.clone()));
        let c = &mut self.credentials;
        c.fresh = true;
        c.refused = false;
        c.renew_at = None;
        match self.phase {
            Phase::Open { id, .. } => {
                self.credentials.ask_at = None;
                self.push(Output::Transmit {
                    id,
                    message: ClientMessage::Refresh(Refresh { token }),
                });
            }
            Phase::Authorizing { .. } => self.dial(now),
            _ => {}
        }
    }

    /// The token provider gave no token ([`Event::TokenWanted`]'s answer
    /// when it fails). [`TokenError::Unavailable`] is asked again after
    /// the backoff (before a dial: the attempt fails with
    /// [`DisconnectReason::TokenUnavailable`] and is retried like any
    /// other; on the open session: the ask is repeated while the token
    /// lasts). [`TokenError::Unauthorized`] halts with
    /// [`HaltReason::AuthFailed`], closing the open transport with 1000.
    pub fn token_failed(&mut self, now: Instant, error: TokenError) {
        let now = self.advance(now);
        match (&self.phase, error) {
            (Phase::Authorizing { .. }, TokenError::Unavailable) => {
                self.phase = Phase::Idle;
                self.lose_transport(now, DisconnectReason::TokenUnavailable, None);
            }
            (Phase::Authorizing { .. }, TokenError::Unauthorized) => {
                self.phase = Phase::Idle;
                self.lose_transport(
                    now,
                    DisconnectReason::Unauthorized,
                    Some(HaltReason::AuthFailed),
                );
            }
            (Phase::Open { .. }, TokenError::Unavailable) => {
                let delay = self.credentials.retries.next_delay(now, &mut self.rng);
                self.credentials.ask_at = Some(now + delay);
            }
            (Phase::Open { id, .. }, TokenError::Unauthorized) => {
                let id = *id;
                self.push(Output::CloseTransport {
                    id,
                    code: CloseCode::NORMAL,
                    reason: "unauthorized".into(),
                });
                self.lose_transport(
                    now,
                    DisconnectReason::Unauthorized,
                    Some(HaltReason::AuthFailed),
                );
            }
            // No ask is outstanding: an answer to an older one.
            _ => {}
        }
    }
}
