//! Requests: authorization, the in-flight bound, and exactly one `response`
//! per request.

use crate::message::{ErrorBody, Reply, Request};
use crate::time::Instant;

use super::{Connection, Event, Output, Stage, Ticket};

/// The requests a connection asked about and has not answered. Both lists
/// are bounded by `max_in_flight` (64 by default) and usually hold one
/// entry or none, so they are plain vectors: an idle connection holds no
/// allocation and no hasher.
#[derive(Debug, Default)]
pub(super) struct Requests {
    /// Waiting for the authorizer.
    authorizing: Vec<(Ticket, Request)>,
    /// Called: the id each answer goes to.
    running: Vec<(Ticket, u64)>,
}

/// Remove the entry for `ticket`, if any (order does not matter).
fn take<T>(list: &mut Vec<(Ticket, T)>, ticket: Ticket) -> Option<T> {
    let index = list.iter().position(|(t, _)| *t == ticket)?;
    let (_, value) = list.swap_remove(index);
    if list.is_empty() {
        *list = Vec::new();
    }
    Some(value)
}

impl Requests {
    pub(super) fn running(&self) -> usize {
        self.running.len()
    }
}

impl<F> Connection<F> {
    pub(super) fn on_request(&mut self, request: Request) {
        // Requests waiting for the authorizer are bounded like those running.
        let authorizing = self.activity().requests.authorizing.len();
        if let Err(violation) = self.limits.check_in_flight(authorizing) {
            self.event(Event::RequestRefused("rate_limited"));
            return self.respond(request.id, violation.refusal());
        }
        let ticket = self.ticket();
        let method = request.method.clone();
        self.activity().requests.authorizing.push((ticket, request));
        self.out
            .push_back(Output::AuthorizeRequest { ticket, method });
    }

    /// The authorizer's answer for [`Output::AuthorizeRequest`]: allowed,
    /// or refused with the error the client gets. An allowed request within
    /// the in-flight bound is called ([`Output::Call`]).
    pub fn handle_request_authorized(
        &mut self,
        now: Instant,
        ticket: Ticket,
        verdict: Result<(), ErrorBody>,
    ) {
        let _ = now;
        let Some(request) = take(&mut self.activity().requests.authorizing, ticket) else {
            return;
        };
        if let Err(denied) = verdict {
            self.event(Event::RequestRefused("denied"));
            return self.respond(request.id, Reply::Error(denied));
        }
        if let Err(violation) = self.limits.check_in_flight(self.requests_in_flight()) {
            self.event(Event::RequestRefused("rate_limited"));
            return self.respond(request.id, violation.refusal());
        }
        self.activity().requests.running.push((ticket, request.id));
        self.out.push_back(Output::Call { ticket, request });
    }

    /// A called request's outcome ([`Output::Call`]): its one `response`.
    /// A second answer for the same ticket, or one after the connection
    /// closed, is ignored. A drain waiting for this answer closes 1012 once
    /// it was the last.
    pub fn handle_reply(&mut self, now: Instant, ticket: Ticket, reply: Reply) {
        let _ = now;
        let Some(id) = take(&mut self.activity().requests.running, ticket) else {
            return;
        };
        self.respond(id, reply);
        if matches!(self.stage, Stage::Draining { .. }) && self.requests_in_flight() == 0 {
            self.finish_drain();
        }
    }

    /// Whether the connection still waits for an answer to `ticket`'s
    /// request (an idempotent execution may still be worth finishing when
    /// it does not).
    pub fn awaits_reply(&self, ticket: Ticket) -> bool {
        self.activity
            .as_ref()
            .is_some_and(|a| a.requests.running.iter().any(|(t, _)| *t == ticket))
    }
}
