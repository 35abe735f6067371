//! The client session's state against itself and against the checker's
//! record, after every batch of outputs.

use std::collections::BTreeSet;

use crate::time::Instant;
use crate::transport::TransportId;
use crate::{ConnectionState, Readiness, Session};

use super::{Invariant, Violation};

/// The live transport is the session's own; the session owns one only when
/// connecting, handshaking or open, and always when handshaking or open
/// (connecting may be the wait for the token provider, before the dial).
pub(super) fn transports(
    live: &BTreeSet<TransportId>,
    state: ConnectionState,
    current: Option<TransportId>,
) -> Result<(), Violation> {
    let fail = |what: String| Err(Violation::new(Invariant::OneTransport, what));
    let expected: BTreeSet<TransportId> = current.into_iter().collect();
    if *live != expected {
        return fail(format!(
            "the session owns {current:?} but the live transports are {live:?}"
        ));
    }
    let may_own = matches!(
        state,
        ConnectionState::Connecting | ConnectionState::Handshaking | ConnectionState::Open
    );
    let must_own = matches!(state, ConnectionState::Handshaking | ConnectionState::Open);
    if (current.is_some() && !may_own) || (must_own && current.is_none()) {
        return fail(format!(
            "state {state:?} with current transport {current:?}"
        ));
    }
    Ok(())
}

/// The unsettled requests (id, deadline if known) are the session's in
/// flight; `poll_timeout` comes no later than the earliest deadline; none
/// after stop.
pub(super) fn requests(
    unsettled: &[(u64, Option<Instant>)],
    session: &Session,
    stopped: bool,
) -> Result<(), Violation> {
    let fail = |what: String| Err(Violation::new(Invariant::SettleOnce, what));
    if unsettled.len() != session.requests_in_flight() {
        return fail(format!(
            "{} requests unsettled, the session has {} in flight",
            unsettled.len(),
            session.requests_in_flight()
        ));
    }
    if let Some(earliest) = unsettled.iter().filter_map(|(_, d)| *d).min() {
        let poll = session.poll_timeout();
        if !poll.is_some_and(|p| p <= earliest) {
            return fail(format!(
                "poll_timeout {poll:?} is after the earliest request deadline {earliest:?}"
            ));
        }
    }
    if stopped && !unsettled.is_empty() {
        return fail(format!("unsettled after stop: {unsettled:?}"));
    }
    Ok(())
}

/// The levels nest, the aggregate is theirs, the events announced
/// `readiness()`, and the levels follow the connection state.
pub(super) fn readiness(announced: Readiness, session: &Session) -> Result<(), Violation> {
    let fail = |what: String| Err(Violation::new(Invariant::Readiness, what));
    let r = session.readiness();
    let state = session.state();
    if session.is_ready() != (r.transport && r.protocol && r.service) {
        return fail(format!("is_ready {} for {r:?}", session.is_ready()));
    }
    if r.protocol && !r.transport {
        return fail(format!("protocol without transport: {r:?}"));
    }
    if r.service && !r.protocol {
        return fail(format!("service without protocol: {r:?}"));
    }
    if announced != r {
        return fail(format!(
            "readiness() is {r:?}, the events announced {announced:?}"
        ));
    }
    if r.protocol != (state == ConnectionState::Open && !session.is_leaving()) {
        return fail(format!(
            "protocol level {} in state {state:?} (leaving: {})",
            r.protocol,
            session.is_leaving()
        ));
    }
    let transport = matches!(state, ConnectionState::Handshaking | ConnectionState::Open);
    if r.transport != transport {
        return fail(format!(
            "transport level {} in state {state:?}",
            r.transport
        ));
    }
    Ok(())
}

/// `Stopped` was emitted exactly when the state is stopped, and a stopped
/// session holds no timer, transport, readiness or request.
pub(super) fn stopped(stopped: bool, session: &Session) -> Result<(), Violation> {
    let fail = |what: String| Err(Violation::new(Invariant::NothingAfterStop, what));
    let state = session.state();
    if stopped != (state == ConnectionState::Stopped) {
        return fail(format!("state {state:?} but Stopped emitted: {stopped}"));
    }
    if !stopped {
        return Ok(());
    }
    if let Some(poll) = session.poll_timeout() {
        return fail(format!("poll_timeout {poll:?} after stop"));
    }
    if let Some(current) = session.current_transport() {
        return fail(format!("transport {current:?} after stop"));
    }
    if session.readiness() != Readiness::default() {
        return fail(format!("readiness {:?} after stop", session.readiness()));
    }
    if session.requests_in_flight() != 0 {
        return fail("requests in flight after stop".to_owned());
    }
    Ok(())
}
