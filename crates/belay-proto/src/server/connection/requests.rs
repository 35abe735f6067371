//! Requests: authorization, the in-flight bound, and exactly one `response`
//! per request.

use crate::message::{
    encoded_server_len, ErrorBody, Reply, Request, Response, ServerMessage, MAX_FRAME_LEN,
};

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
    /// Requests received and not yet answered: waiting for the authorizer
    /// or called. A drain waits for all of them.
    pub(super) fn unanswered(&self) -> usize {
        self.authorizing.len() + self.running.len()
    }
}

impl<F> Connection<F> {
    pub(super) fn on_request(&mut self, request: Request) {
        // In flight: waiting for the authorizer or called.
        let unanswered = self.activity().requests.unanswered();
        if let Err(violation) = self.limits.check_in_flight(unanswered) {
            self.event(Event::RequestRefused("rate_limited"));
            return self.respond(request.id, violation.refusal());
        }
        let ticket = self.ticket();
        let method = request.method.clone();
        self.activity().requests.authorizing.push((ticket, request));
        self.out
            .push_back(Output::AuthorizeRequest { ticket, method });
    }

    /// The authorizer's answer for [`Output::AuthorizeRequest`]: allowed
    /// (the request is called, [`Output::Call`]), or refused with the error
    /// the client gets.
    pub(super) fn handle_request_authorized(
        &mut self,
        ticket: Ticket,
        verdict: Result<(), ErrorBody>,
    ) {
        let Some(request) = take(&mut self.activity().requests.authorizing, ticket) else {
            return;
        };
        if let Err(denied) = verdict {
            self.event(Event::RequestRefused("denied"));
            self.respond(request.id, Reply::Error(denied));
            return self.settle_drain();
        }
        self.activity().requests.running.push((ticket, request.id));
        self.out.push_back(Output::Call { ticket, request });
    }

    /// A called request's outcome ([`Output::Call`]): its one `response`
    /// (`too_large` instead, if that frame would pass [`MAX_FRAME_LEN`]).
    /// A second answer for the same ticket, or one after the connection
    /// closed, is ignored. A drain waiting for this answer closes 1012 once
    /// it was the last.
    pub(super) fn handle_reply(&mut self, ticket: Ticket, reply: Reply) {
        let Some(id) = take(&mut self.activity().requests.running, ticket) else {
            return;
        };
        let message = ServerMessage::Response(Response { id, reply });
        match oversized(&message) {
            Some(len) => self.respond(id, too_large(len)),
            None => self.send(message),
        }
        self.settle_drain();
    }

    /// A draining connection closes 1012 once its last request is answered.
    fn settle_drain(&mut self) {
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

/// Bytes of a `response` frame beyond its result or its error's strings
/// (type, id up to 20 digits, field names), with room to spare.
const RESPONSE_ENVELOPE: usize = 128;

/// The length of `message`'s frame if it would pass [`MAX_FRAME_LEN`]
/// (no peer may be sent such a frame, spec/PROTOCOL.md §1.4). Measured in
/// JSON text, which bounds the binary form too. The frame is only counted
/// when a cheap bound says it might be too long.
fn oversized(message: &ServerMessage) -> Option<usize> {
    let bound = match message {
        ServerMessage::Response(Response {
            reply: Reply::Result(raw),
            ..
        }) => raw.get().len(),
        // Every byte of a string may become a 6-byte escape.
        ServerMessage::Response(Response {
            reply: Reply::Error(e),
            ..
        }) => e
            .code
            .len()
            .saturating_add(e.message.len())
            .saturating_mul(6),
        _ => 0,
    }
    .saturating_add(RESPONSE_ENVELOPE);
    if bound <= MAX_FRAME_LEN {
        return None;
    }
    let len = encoded_server_len(message);
    (len > MAX_FRAME_LEN).then_some(len)
}

/// What a request whose answer would take a frame of `len` bytes gets
/// instead: it ran, but its outcome cannot be sent.
fn too_large(len: usize) -> Reply {
    Reply::Error(ErrorBody::new(
        "too_large",
        format!(
            "the answer's frame of {len} bytes is over the {MAX_FRAME_LEN}-byte frame limit (the method ran)"
        ),
    ))
}
