//! Carrying out what the core decided: writing frames, asking the
//! authenticator and the broker, starting requests, and counting events.

use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::{encode_server_binary, Codec, ErrorBody};
use belay_proto::server::{AuthVerdict, Event, Input, JoinAnswer, OutboundRoom, Output, Ticket};
use belay_proto::Instant;
use bytes::Bytes;

use super::{Driver, End, Transport, Unhandled};
use crate::auth::{AuthError, Principal, Verdict};
use crate::broker::{Joining, LiveInbox, SubscribeError, SubscriberId, Subscription};
use crate::logs;
use crate::mailbox::{Checked, Control};
use crate::metrics::{lock, Metrics};
use crate::requests::{self, Admit, RequestTask};
use crate::ws::HIGH_WATER;

impl Driver {
    /// Carry out every output the core has, in order; how the connection
    /// ends, if the core decided that.
    pub(super) fn carry_out<T>(&mut self, ws: &mut T) -> Option<End>
    where
        T: Transport,
    {
        self.carry_out_at_most(ws, usize::MAX).0
    }

    /// Like [`carry_out`](Self::carry_out), at most `max` outputs; and
    /// whether more wait (a closing connection leaves its subscriptions in
    /// batches, yielding between them).
    pub(super) fn carry_out_at_most<T>(&mut self, ws: &mut T, max: usize) -> (Option<End>, bool)
    where
        T: Transport,
    {
        let mut end = None;
        let mut done = 0;
        while let Some(output) = (done < max).then(|| self.core.poll_output()).flatten() {
            done += 1;
            if let Err(unhandled) = self.carry_out_one(ws, output, &mut end) {
                unhandled.report();
            }
        }
        (end, done == max)
    }

    /// Carry out one output of the core; `end` takes how the connection
    /// ends if the output decides that. An output this driver does not
    /// know comes back as [`Unhandled`] (a core newer than its driver:
    /// the test `every_core_output_is_carried_out` fails first).
    pub(super) fn carry_out_one<T>(
        &mut self,
        ws: &mut T,
        output: Output<Bytes>,
        end: &mut Option<End>,
    ) -> Result<(), Unhandled>
    where
        T: Transport,
    {
        {
            match output {
                Output::Send(message) => {
                    let frame = match self.core.codec() {
                        Codec::Binary => encode_server_binary(&message),
                        _ => belay_proto::message::encode_server(&message).into_bytes(),
                    };
                    self.send(ws, Bytes::from(frame));
                }
                Output::SendEncoded(frame) => self.send(ws, frame),
                Output::Pong(payload) => ws.queue_pong(&payload),
                Output::Authenticate { ticket, token } => {
                    match self.shared.auth.check_connect(token.as_deref()) {
                        Verdict::Now(verdict) => self.authenticated(ticket, verdict),
                        Verdict::Later(decision) => self.check_later(ticket, async move {
                            Checked::Connect(Box::new(decision.await))
                        }),
                    }
                }
                Output::Reauthenticate { ticket, token } => {
                    match self.shared.auth.check_refresh(&token) {
                        Verdict::Now(verdict) => self.reauthenticated(ticket, verdict),
                        Verdict::Later(decision) => self.check_later(ticket, async move {
                            Checked::Refresh(Box::new(decision.await))
                        }),
                    }
                }
                Output::AuthorizeSubscribe {
                    ticket,
                    channel,
                    token,
                } => self.judge_subscription(ticket, &channel, token.as_deref(), false),
                Output::CheckSubscriptionToken {
                    ticket,
                    channel,
                    token,
                } => self.judge_subscription(ticket, &channel, Some(&token), true),
                Output::Join {
                    ticket,
                    channel,
                    since,
                } => {
                    if let Some(answer) = self.join(ticket, &channel, since.as_ref()) {
                        let room = self.outbound_room();
                        self.core.handle_input(
                            self.now(),
                            Input::Joined {
                                ticket,
                                answer,
                                room: Some(room),
                            },
                        );
                    }
                }
                Output::Leave {
                    channel,
                    subscription,
                } => {
                    let subscriber = SubscriberId::from_raw(subscription);
                    self.shared.broker.unsubscribe(&channel, subscriber);
                    self.presence_left(&channel, subscriber);
                    self.hosts_left(&channel);
                }
                Output::AuthorizeRequest { ticket, method } => {
                    let now = self.now();
                    // The channel reads check the channel's permission when they run.
                    let verdict = if is_channel_read(&method) {
                        Ok(())
                    } else {
                        self.shared
                            .auth
                            .authorize_request(&self.principal, &method)
                            .map_err(|denied| refusal(&denied))
                    };
                    self.core
                        .handle_input(now, Input::RequestAuthorized { ticket, verdict });
                }
                Output::Call { ticket, request } => self.call(self.now(), ticket, request),
                Output::Close {
                    code,
                    reason,
                    discard_unsent,
                } => {
                    end.get_or_insert(End::Close {
                        code,
                        reason,
                        urgent: discard_unsent,
                    });
                }
                Output::PeerGone { code } => {
                    end.get_or_insert(End::PeerGone(code));
                }
                Output::Event(event) => self.count(event, T::KIND)?,
                other => return Err(Unhandled::new("connection output", &other)),
            }
        }
        Ok(())
    }

    /// Send an encoded frame: straight into the socket's write buffer when
    /// nothing waits before it and there is room, else into the bounded
    /// queue; a full queue is the core's to judge (4009).
    fn send<T>(&mut self, ws: &mut T, frame: Bytes)
    where
        T: Transport,
    {
        if self.out.is_empty() && ws.buffered() < HIGH_WATER {
            ws.queue_message(&frame);
            return;
        }
        let shared = &self.shared;
        if self
            .out
            .try_send(frame, &shared.limits, shared.config.max_outbound_bytes)
            .is_err()
        {
            let now = self.now();
            self.core.handle_input(now, Input::QueueFull);
        }
    }

    /// Wait for a later verdict on its own task (the connection serves
    /// its other messages meanwhile); it comes back through the mailbox.
    /// The task ends with the connection.
    fn check_later(
        &mut self,
        ticket: Ticket,
        decision: impl std::future::Future<Output = Checked> + Send + 'static,
    ) {
        let control = self.control.clone();
        let task = tokio::spawn(async move {
            let _ = control.send(Control::Checked(ticket, decision.await));
        });
        self.requests.push(task.abort_handle(), false);
    }

    /// A later verdict, as if it had come at once.
    pub(super) fn checked(&mut self, ticket: Ticket, checked: Checked) {
        match checked {
            Checked::Connect(verdict) => self.authenticated(ticket, *verdict),
            Checked::Refresh(verdict) => self.reauthenticated(ticket, *verdict),
            Checked::Subscribe(verdict) => self.subscribe_checked(ticket, verdict),
            Checked::SubRefresh(verdict) => self.sub_refresh_checked(ticket, verdict),
        }
    }

    /// May this principal subscribe to `channel` with `token`, and for how
    /// long: a subscribe's question, or a `sub_refresh`'s (`refresh`).
    fn judge_subscription(
        &mut self,
        ticket: Ticket,
        channel: &str,
        token: Option<&str>,
        refresh: bool,
    ) {
        match crate::access::subscribe_for(&self.shared, &self.principal, channel, token) {
            Verdict::Now(verdict) if refresh => self.sub_refresh_checked(ticket, verdict),
            Verdict::Now(verdict) => self.subscribe_checked(ticket, verdict),
            Verdict::Later(decision) => self.check_later(ticket, async move {
                let verdict = decision.await;
                if refresh {
                    Checked::SubRefresh(verdict)
                } else {
                    Checked::Subscribe(verdict)
                }
            }),
        }
    }

    fn subscribe_checked(&mut self, ticket: Ticket, verdict: Result<Option<Duration>, AuthError>) {
        let now = self.now();
        let verdict = verdict.map_err(|denied| refusal(&denied));
        self.core
            .handle_input(now, Input::SubscribeAuthorized { ticket, verdict });
    }

    fn sub_refresh_checked(
        &mut self,
        ticket: Ticket,
        verdict: Result<Option<Duration>, AuthError>,
    ) {
        let now = self.now();
        let verdict = verdict.map_err(|denied| refusal(&denied));
        self.core
            .handle_input(now, Input::SubRefreshChecked { ticket, verdict });
    }

    /// The verdict on `connect`'s credentials.
    fn authenticated(&mut self, ticket: Ticket, verdict: Result<Principal, AuthError>) {
        let now = self.now();
        let verdict = match verdict {
            Ok(principal) => {
                let expires_at = principal
                    .expires_at
                    .map(|at| self.shared.clock.core_instant(at));
                self.shared.identify(self.id, &principal.user);
                *self.principal = principal;
                let pacing = self.shared.config.pacing.then(|| {
                    let connections = self.shared.metrics.open_connections().max(1) as usize;
                    lock(&self.shared.node)
                        .pacing_mut()
                        .assign(now, connections)
                });
                AuthVerdict::Accepted { expires_at, pacing }
            }
            Err(error) => core_refusal(error),
        };
        self.core.handle_input(now, Input::Auth { ticket, verdict });
    }

    /// Ask the broker for a subscription: its answer, or `None` when it
    /// comes later through the inbox (kept under `ticket` until then).
    fn join(
        &mut self,
        ticket: Ticket,
        channel: &str,
        since: Option<&belay_proto::message::StreamPosition>,
    ) -> Option<JoinAnswer<Bytes>> {
        let history = &self.shared.config.history;
        let live = self
            .inbox
            .get_or_insert_with(|| {
                LiveInbox::new(
                    history.live_buffer,
                    history.live_buffer_bytes,
                    self.core.codec(),
                )
            })
            .sender(Arc::from(channel));
        let subscriber = live.id();
        match self.shared.broker.subscribe(channel, since, live) {
            Joining::Now(answer) => {
                if answer.is_ok() {
                    self.presence_joined(channel, subscriber);
                    self.hosts_joined(channel);
                }
                Some(join_answer(subscriber, answer, self.core.codec()))
            }
            Joining::Later => {
                self.joining.push((subscriber, ticket));
                None
            }
        }
    }

    /// A broker's later answer for `subscriber` ([`Joining::Later`]).
    pub(super) fn joined(
        &mut self,
        subscriber: SubscriberId,
        answer: Result<Subscription, SubscribeError>,
    ) {
        let Some(at) = self.joining.iter().position(|(id, _)| *id == subscriber) else {
            return;
        };
        let (_, ticket) = self.joining.swap_remove(at);
        if self.joining.is_empty() {
            // Joins are rare once a connection is set up: hold no list.
            self.joining = Vec::new();
        }
        if let Ok(granted) = &answer {
            let channel = granted.subscribed.channel.clone();
            self.presence_joined(&channel, subscriber);
            self.hosts_joined(&channel);
        }
        let (now, codec, room) = (self.now(), self.core.codec(), self.outbound_room());
        let answer = join_answer(subscriber, answer, codec);
        self.core.handle_input(
            now,
            Input::Joined {
                ticket,
                answer,
                room: Some(room),
            },
        );
    }

    /// What the outbound queue can still take, for the core's measure of a
    /// replay.
    fn outbound_room(&self) -> OutboundRoom {
        let shared = &self.shared;
        self.out
            .room(&shared.limits, shared.config.max_outbound_bytes)
    }

    /// Start a request the core called: a stored outcome (or a refusal of
    /// its idempotency key) answers at once; otherwise a task runs it and
    /// reports back through the mailbox.
    fn call(&mut self, now: Instant, ticket: Ticket, request: belay_proto::message::Request) {
        match request.method.as_str() {
            super::presence::PRESENCE_METHOD | super::presence::PRESENCE_STATS_METHOD => {
                self.presence_query(ticket, &request);
                return;
            }
            super::history::HISTORY_METHOD => {
                self.history_query(ticket, &request);
                return;
            }
            _ => {}
        }
        let start = requests::admit(&self.shared, &self.principal, &request);
        if let Admit::Answer(reply) = start {
            self.core.handle_input(now, Input::Reply { ticket, reply });
            return;
        }
        let keyed = matches!(start, Admit::Run(Some(_)));
        let task = RequestTask {
            shared: Arc::clone(&self.shared),
            control: self.control.clone(),
            ticket,
            principal: (*self.principal).clone(),
            session: Arc::clone(&self.session),
            request,
        };
        let handle = tokio::spawn(requests::run(task, start)).abort_handle();
        self.requests.push(handle, keyed);
    }

    /// Metrics and the server's event feed.
    pub(super) fn count(&mut self, event: Event, transport: &str) -> Result<(), Unhandled> {
        let metrics = &self.shared.metrics;
        match event {
            Event::Connected { session } => {
                Metrics::add(&metrics.connects);
                self.shared
                    .emit("connect", format!("{} session {session}", self.peer));
                logs::welcomed(
                    self.peer,
                    &self.principal.user,
                    &session,
                    transport,
                    self.core.codec(),
                );
                self.session = session;
            }
            Event::Violation(violation) => {
                logs::limit_hit(self.peer, violation.name());
                metrics.count_violation(violation.name());
            }
            Event::BadFrame => Metrics::add(&metrics.bad_frames),
            Event::RequestRefused(kind) => metrics.count_request(kind),
            Event::SubscribeRefused => Metrics::add(&metrics.subscribe_refusals),
            Event::Resumed { recovered } => Metrics::add(if recovered {
                &metrics.recoveries
            } else {
                &metrics.recovery_misses
            }),
            Event::PingSent => Metrics::add(&metrics.pings_sent),
            Event::Reaped => {
                Metrics::add(&metrics.zombies_reaped);
                self.shared
                    .emit("reap", "no answer within the heartbeat timeout".into());
            }
            other => return Err(Unhandled::new("connection event", &other)),
        }
        Ok(())
    }
}

/// The core's form of a broker's answer.
fn join_answer(
    subscriber: SubscriberId,
    answer: Result<Subscription, SubscribeError>,
    codec: Codec,
) -> JoinAnswer<Bytes> {
    match answer {
        Ok(granted) => JoinAnswer::Joined {
            subscribed: granted.subscribed,
            subscription: subscriber.get(),
            replay: granted
                .replay
                .into_iter()
                .map(|delivery| (delivery.offset, delivery.frame_in(codec).clone()))
                .collect(),
        },
        Err(SubscribeError::TooManyChannels) => JoinAnswer::NoRoom,
        Err(SubscribeError::Unavailable(reason)) => {
            JoinAnswer::Unavailable(ErrorBody::new("unavailable", reason))
        }
    }
}

/// The core's form of a refused credential.
pub(super) fn core_refusal(error: AuthError) -> AuthVerdict {
    match error {
        AuthError::Unavailable(reason) => AuthVerdict::Unavailable { reason },
        AuthError::Unauthorized(reason) | AuthError::Forbidden(reason) => {
            AuthVerdict::RefusedFor { reason }
        }
    }
}

/// The error a denied subscribe or request gets.
fn refusal(denied: &crate::auth::AuthError) -> ErrorBody {
    ErrorBody::new(denied.code(), denied.to_string())
}

/// The reserved requests that read a channel (`$presence`,
/// `$presence_stats`, `$history`): authorized as a subscribe to the
/// channel when they run, not by the method grant.
fn is_channel_read(method: &str) -> bool {
    matches!(
        method,
        super::presence::PRESENCE_METHOD
            | super::presence::PRESENCE_STATS_METHOD
            | super::history::HISTORY_METHOD
    )
}
