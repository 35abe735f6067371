//! The one checker of the protocol's invariants, used by [`Pair`](super::Pair),
//! the session property tests and the fuzz targets (the `fuzzing` feature
//! enables `testing`).
//!
//! A driver feeds the checker what it did and what came out, and gets the
//! first [`Violation`]: [`ClientInvariants`] for a client `Session`,
//! [`ServerInvariants`] for a server `Connection` (or, at the wire, the
//! messages a server sent). Which groups run is the driver's choice
//! ([`ClientChecks`]); a property that tests one behaviour turns on one.

use std::fmt;

mod client;
mod requests;
mod server;
mod state;
mod streams;

pub use client::ClientInvariants;
pub use server::{close_code_may_be_sent, ServerInvariants};

/// Which of the client's invariants a [`ClientInvariants`] checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientChecks {
    /// [`Invariant::OneTransport`].
    pub transports: bool,
    /// [`Invariant::SettleOnce`].
    pub requests: bool,
    /// [`Invariant::Streams`].
    pub streams: bool,
    /// [`Invariant::Time`].
    pub time: bool,
    /// [`Invariant::NothingAfterStop`].
    pub stop: bool,
    /// [`Invariant::Readiness`].
    pub readiness: bool,
    /// [`Invariant::Delays`] (needs the driver to report advice with
    /// [`ClientInvariants::advice_fed`]).
    pub delays: bool,
}

impl ClientChecks {
    /// Every check.
    pub fn all() -> Self {
        ClientChecks {
            transports: true,
            requests: true,
            streams: true,
            time: true,
            stop: true,
            readiness: true,
            delays: true,
        }
    }

    /// None (turn on the ones a test is about).
    pub fn none() -> Self {
        ClientChecks::default()
    }
}

/// An invariant, numbered per side as the fuzz targets report them
/// (docs/FUZZING.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Invariant {
    /// Client 1: at most one live transport.
    OneTransport,
    /// Client 2: every request settles exactly once.
    SettleOnce,
    /// Client 3: no publication delivered twice or skipped without an
    /// announcement.
    Streams,
    /// Client 4: no busy loop, `poll_timeout` never in the past.
    Time,
    /// Client 5: nothing after `Stopped`.
    NothingAfterStop,
    /// Client 6: readiness is consistent.
    Readiness,
    /// Client 7: reconnect delays are bounded.
    Delays,
    /// Server 1: nothing after the end.
    ServerEnded,
    /// Server 2: `welcome` first and once.
    WelcomeFirst,
    /// Server 3: one response per request.
    OneResponse,
    /// Server 4: bounded.
    Bounded,
    /// Server 5: no busy loop, `poll_timeout` never in the past.
    ServerTime,
    /// Server 6: only close codes a server may send.
    CloseCode,
}

impl Invariant {
    /// Its number on its side.
    pub fn number(self) -> u8 {
        match self {
            Invariant::OneTransport | Invariant::ServerEnded => 1,
            Invariant::SettleOnce | Invariant::WelcomeFirst => 2,
            Invariant::Streams | Invariant::OneResponse => 3,
            Invariant::Time | Invariant::Bounded => 4,
            Invariant::NothingAfterStop | Invariant::ServerTime => 5,
            Invariant::Readiness | Invariant::CloseCode => 6,
            Invariant::Delays => 7,
        }
    }

    /// What it says.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::OneTransport => "at most one live transport",
            Invariant::SettleOnce => "every request settles exactly once",
            Invariant::Streams => {
                "no publication delivered twice or skipped without an announcement"
            }
            Invariant::Time | Invariant::ServerTime => {
                "no busy loop, poll_timeout never in the past"
            }
            Invariant::NothingAfterStop => "nothing after Stopped",
            Invariant::Readiness => "readiness is consistent",
            Invariant::Delays => "reconnect delays are bounded",
            Invariant::ServerEnded => "nothing after the end",
            Invariant::WelcomeFirst => "welcome first and once",
            Invariant::OneResponse => "one response per request",
            Invariant::Bounded => "bounded",
            Invariant::CloseCode => "only close codes a server may send",
        }
    }
}

/// A broken invariant, with what broke it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Violation {
    /// Which.
    pub invariant: Invariant,
    /// What happened.
    pub detail: String,
}

impl Violation {
    pub(crate) fn new(invariant: Invariant, detail: impl Into<String>) -> Self {
        Violation {
            invariant,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Violation { invariant, detail } = self;
        let (n, name) = (invariant.number(), invariant.name());
        write!(f, "invariant {n} ({name}) violated: {detail}")
    }
}

impl std::error::Error for Violation {}

#[cfg(test)]
mod tests;
