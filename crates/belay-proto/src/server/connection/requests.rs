//! Requests: authorization, the in-flight bound, and exactly one `response`
//! per request.

use std::collections::HashMap;

use crate::message::{ErrorBody, Reply, Request};
use crate::time::Instant;

use super::{Connection, Event, Output, Stage, Ticket};

/// The requests a connection asked about and has not answered.
#[derive(Debug, Default)]
pub(super) struct Requests {
    /// Waiting for the authorizer.
    authorizing: HashMap<Ticket, Request>,
    /// Called: the id each answer goes to.
    running: HashMap<Ticket, u64>,
}

impl Requests {
    pub(super) fn running(&self) -> usize {
        self.running.len()
    }

    pub(super) fn len(&self) -> usize {
        self.running.len() + self.authorizing.len()
    }

    pub(super) fn clear(&mut self) {
        self.authorizing.clear();
        self.running.clear();
    }
}

impl<F> Connection<F> {
    pub(super) fn on_request(&mut self, request: Request) {
        // Requests waiting for the authorizer are bounded like those running.
        if let Err(violation) = self.limits.check_in_flight(self.requests.authorizing.len()) {
            self.event(Event::RequestRefused("rate_limited"));
            return self.respond(request.id, violation.refusal());
        }
        let ticket = self.ticket();
        let method = request.method.clone();
        self.requests.authorizing.insert(ticket, request);
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
        let Some(request) = self.requests.authorizing.remove(&ticket) else {
            return;
        };
        if let Err(denied) = verdict {
            self.event(Event::RequestRefused("denied"));
            return self.respond(request.id, Reply::Error(denied));
        }
        if let Err(violation) = self.limits.check_in_flight(self.requests.running()) {
            self.event(Event::RequestRefused("rate_limited"));
            return self.respond(request.id, violation.refusal());
        }
        self.requests.running.insert(ticket, request.id);
        self.out.push_back(Output::Call { ticket, request });
    }

    /// A called request's outcome ([`Output::Call`]): its one `response`.
    /// A second answer for the same ticket, or one after the connection
    /// closed, is ignored. A drain waiting for this answer closes 1012 once
    /// it was the last.
    pub fn handle_reply(&mut self, now: Instant, ticket: Ticket, reply: Reply) {
        let _ = now;
        let Some(id) = self.requests.running.remove(&ticket) else {
            return;
        };
        self.respond(id, reply);
        if matches!(self.stage, Stage::Draining { .. }) && self.requests.running() == 0 {
            self.finish_drain();
        }
    }

    /// Whether the connection still waits for an answer to `ticket`'s
    /// request (an idempotent execution may still be worth finishing when
    /// it does not).
    pub fn awaits_reply(&self, ticket: Ticket) -> bool {
        self.requests.running.contains_key(&ticket)
    }
}
