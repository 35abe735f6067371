//! [`ServerInvariants`]: a server connection's invariants, on the core's
//! outputs or on the messages a server wrote.

use std::collections::{BTreeMap, BTreeSet};

use crate::message::ServerMessage;
use crate::server::{Connection, Limits, Output};
use crate::time::Instant;

use super::{Invariant, Violation};

/// Whether a server may send close `code` (RFC 6455 §7.4: not 1004–1006,
/// 1015 or anything outside the defined and registered ranges).
pub fn close_code_may_be_sent(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

/// A server connection's invariants: the driver reports the client's
/// requests and the answers it gave, and hands over every output (or, at
/// the wire, every message) and the connection after each call.
///
/// 1. Nothing after the end: after `Close` or `PeerGone` only `Leave`.
/// 2. `welcome` first and once: before it only `reconnect` advice; at most
///    one, and only after an `Authenticate` answered accepted.
/// 3. One response per request: never more responses for an id than
///    request frames that could carry it, nor more in total.
/// 4. Bounded: calls running ≤ `max_in_flight`, subscriptions ≤
///    `max_subscriptions`; `subscribed` only for a join answered `Joined`.
/// 5. `poll_timeout` never in the past after `handle_timeout`.
/// 6. Only close codes a server may send (at the wire, [`close`](Self::close):
///    a driver's `close` command may name any code).
#[derive(Debug)]
pub struct ServerInvariants {
    /// `None` at the wire: the bounds and the answers are not seen.
    core: Option<CoreView>,
    ended: bool,
    welcomed: bool,
    /// Request frames by id; `None`: frames that may carry any request.
    requests_sent: BTreeMap<u64, usize>,
    any_requests: usize,
    /// Requests cannot be counted (raw bytes were sent).
    uncounted: bool,
    responses: BTreeMap<u64, usize>,
}

#[derive(Debug)]
struct CoreView {
    max_in_flight: usize,
    max_subscriptions: usize,
    auth_accepted: bool,
    joins_granted: BTreeSet<String>,
}

impl ServerInvariants {
    /// For a driver of a [`Connection`] under `limits`, which reports the
    /// answers it gives.
    pub fn new(limits: &Limits) -> Self {
        let core = CoreView {
            max_in_flight: limits.max_in_flight(),
            max_subscriptions: limits.max_subscriptions(),
            auth_accepted: false,
            joins_granted: BTreeSet::new(),
        };
        ServerInvariants {
            core: Some(core),
            ..ServerInvariants::at_the_wire()
        }
    }

    /// For a client of a whole server, which sees only the messages.
    pub fn at_the_wire() -> Self {
        ServerInvariants {
            core: None,
            ended: false,
            welcomed: false,
            requests_sent: BTreeMap::new(),
            any_requests: 0,
            uncounted: false,
            responses: BTreeMap::new(),
        }
    }

    // ----- what the driver did -----

    /// The client sent a frame with request `id` (`None`: a frame that may
    /// carry any request).
    pub fn request_sent(&mut self, id: Option<u64>) {
        match id {
            Some(id) => *self.requests_sent.entry(id).or_default() += 1,
            None => self.any_requests += 1,
        }
    }

    /// The client sent bytes whose requests cannot be counted: responses
    /// are no longer counted.
    pub fn requests_uncounted(&mut self) {
        self.uncounted = true;
    }

    /// The driver answered `Authenticate`.
    pub fn auth_answered(&mut self, accepted: bool) {
        if let Some(core) = &mut self.core {
            core.auth_accepted |= accepted;
        }
    }

    /// The driver answered a `Join` for `channel` with `Joined`.
    pub fn join_granted(&mut self, channel: &str) {
        if let Some(core) = &mut self.core {
            core.joins_granted.insert(channel.to_owned());
        }
    }

    /// The outputs of every join answered so far were checked: a grant the
    /// connection did not confirm (it no longer wanted the channel) no
    /// longer counts.
    pub fn joins_settled(&mut self) {
        if let Some(core) = &mut self.core {
            core.joins_granted.clear();
        }
    }

    /// Responses sent so far.
    pub fn responses(&self) -> usize {
        self.responses.values().sum()
    }

    // ----- checks -----

    /// One output of the connection, in order.
    pub fn output<F>(&mut self, output: &Output<F>) -> Result<(), Violation> {
        if self.ended && !matches!(output, Output::Leave { .. }) {
            let what = format!("{:?} after the end", OutputKind(output));
            return Err(Violation::new(Invariant::ServerEnded, what));
        }
        match output {
            Output::Send(message) => self.message(message),
            // The code may be the driver's (its `close` command takes any):
            // checked at the wire, with `close`.
            Output::Close { .. } => {
                self.ended = true;
                Ok(())
            }
            Output::PeerGone { .. } => {
                self.ended = true;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// One message the server sent, in order.
    pub fn message(&mut self, message: &ServerMessage) -> Result<(), Violation> {
        if self.ended {
            let what = format!("{message:?} after the close");
            return Err(Violation::new(Invariant::ServerEnded, what));
        }
        let welcome = |what: String| Err(Violation::new(Invariant::WelcomeFirst, what));
        match message {
            ServerMessage::Welcome(_) => {
                let accepted = self.core.as_ref().map_or(true, |c| c.auth_accepted);
                if self.welcomed || !accepted {
                    return welcome(format!("a second welcome or one before auth: {message:?}"));
                }
                self.welcomed = true;
            }
            ServerMessage::Reconnect(_) => {}
            _ if !self.welcomed => return welcome(format!("{message:?} before welcome")),
            ServerMessage::Response(response) => return self.response(response.id),
            ServerMessage::Subscribed(subscribed) => {
                if let Some(core) = &mut self.core {
                    if !core.joins_granted.remove(&subscribed.channel) {
                        let what = format!("subscribed {:?} without a join", subscribed.channel);
                        return Err(Violation::new(Invariant::Bounded, what));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The server's close, with `code`.
    pub fn close(&mut self, code: u16) -> Result<(), Violation> {
        self.ended = true;
        match close_code_may_be_sent(code) {
            true => Ok(()),
            false => Err(Violation::new(
                Invariant::CloseCode,
                format!("the server closed with code {code}, which must not be sent"),
            )),
        }
    }

    /// The connection after a call: within its bounds.
    pub fn after_batch<F>(&self, conn: &Connection<F>) -> Result<(), Violation> {
        let Some(core) = &self.core else {
            return Ok(());
        };
        let running = conn.requests_in_flight();
        let held = conn.subscription_count();
        if running > core.max_in_flight || held > core.max_subscriptions {
            let what = format!("{running} requests in flight, {held} subscriptions held");
            return Err(Violation::new(Invariant::Bounded, what));
        }
        Ok(())
    }

    /// After `handle_timeout(at)`: the next deadline is not in the past.
    pub fn after_timeout<F>(&self, at: Instant, conn: &Connection<F>) -> Result<(), Violation> {
        match conn.poll_timeout() {
            Some(next) if next < at => Err(Violation::new(
                Invariant::ServerTime,
                format!("after handle_timeout({at:?}) poll_timeout is {next:?}, in the past"),
            )),
            _ => Ok(()),
        }
    }

    fn response(&mut self, id: u64) -> Result<(), Violation> {
        let count = self.responses.entry(id).or_default();
        *count += 1;
        if self.uncounted {
            return Ok(());
        }
        let count = *count;
        let asked = self.requests_sent.get(&id).copied().unwrap_or(0) + self.any_requests;
        let total: usize = self.responses.values().sum();
        let frames: usize = self.requests_sent.values().sum::<usize>() + self.any_requests;
        if count > asked || total > frames {
            let what = format!(
                "response {count} to request {id} for {asked} frames ({total} responses, {frames} request frames)"
            );
            return Err(Violation::new(Invariant::OneResponse, what));
        }
        Ok(())
    }
}

/// An output without its frame type's `Debug` (the driver's `F` may have
/// none).
struct OutputKind<'a, F>(&'a Output<F>);

impl<F> std::fmt::Debug for OutputKind<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Output::Send(message) => write!(f, "Send({message:?})"),
            Output::SendEncoded(_) => write!(f, "SendEncoded(..)"),
            Output::Close { code, reason, .. } => write!(f, "Close({}, {reason:?})", code.0),
            Output::PeerGone { code } => write!(f, "PeerGone({code:?})"),
            _ => write!(f, "another output"),
        }
    }
}
