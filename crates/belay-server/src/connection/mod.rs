//! One connection: one task that owns the session's state, reads the socket
//! and writes what the bounded outbound queue holds, plus tasks for
//! requests; live publications arrive in the connection's inbox.
//!
//! Nothing a peer sends can make the server panic or grow without bound:
//! frames are limited by the WebSocket layer; every data frame (known,
//! unknown, malformed or binary) takes a token from the message budget and
//! every liveness frame (JSON or WebSocket ping/pong) from its own budget,
//! each closing a flood with 4029; requests in flight are bounded; the
//! outbound queue is bounded in frames and bytes (a reader that falls
//! behind is closed with 4009; frames move from the queue to the socket
//! only while less than `ws::HIGH_WATER` bytes wait to be written); and
//! liveness by the core's `Heartbeat` (a connection that answers nothing is
//! reaped with 4000).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use belay_proto::heartbeat::{Heartbeat, HeartbeatAction};
use belay_proto::message::{
    encode_server, ClientMessage, DecodeError, ErrorBody, ReconnectAdvice, Reply, Request,
    Response, ServerMessage, Unsubscribed, Welcome, PROTOCOL_VERSION,
};
use belay_proto::server::{RateLimiter, Violation, ViolationResponse};
use belay_proto::{CloseCode, Instant};
use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

use crate::auth::Principal;
use crate::broker::{LiveInbox, SubscriberId};
use crate::faults::Faults;
use crate::mailbox::{mailbox, ControlReceiver, ControlSender};
use crate::metrics::Metrics;
use crate::requests::{self, Admit, InFlight, RequestSet, RequestTask};
use crate::server::Shared;
use crate::ws::{Event, Message, WebSocket, WsError, HIGH_WATER};

mod frames;
mod subscriptions;

use subscriptions::next_live;

/// How long a closing connection may take to flush and finish the close
/// handshake before the socket is dropped.
const CLOSE_LINGER: Duration = Duration::from_secs(2);

/// Whether the upgrade passed admission control.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Admission {
    Admitted,
    /// Over the accept rate: a browser gets the hint in-band, then 1013.
    Refused {
        retry_after: Duration,
    },
}

/// What the upgrade learnt about the connection.
#[derive(Debug)]
pub(crate) struct ConnectionMeta {
    pub(crate) peer: SocketAddr,
    pub(crate) header_token: Option<String>,
    pub(crate) admission: Admission,
    /// Held for the connection's life: what counts it against its source
    /// address (released when the connection ends).
    pub(crate) _peer_slot: Option<crate::peer_limits::PeerSlot>,
}

/// Orders from the rest of the server to one connection.
#[derive(Debug)]
pub(crate) enum Control {
    /// Send reconnect advice (a drain).
    Advise(ReconnectAdvice),
    /// Close with this code and reason.
    Close(CloseCode, String),
    /// Drop the socket without a close frame (a restart fault).
    Drop,
    /// A task could not queue a frame: the reader is too slow.
    SlowConsumer,
}

pub(crate) use crate::outbound::Outbound;
use crate::outbound::{outbound, OutboundReceiver};

/// Queue `message` for the peer; `false` if the queue is full.
pub(crate) fn queue(out: &Outbound, message: &ServerMessage) -> bool {
    out.try_send(Bytes::from(encode_server(message))).is_ok()
}

enum Stage {
    Handshake {
        deadline: Instant,
    },
    Open {
        principal: Principal,
        session: Arc<str>,
        heartbeat: Heartbeat,
        flap_at: Option<Instant>,
    },
}

/// How the read loop ended.
enum End {
    /// We close with this code and reason.
    Close(CloseCode, String),
    /// The peer closed (with this code, if it sent one) or vanished.
    PeerGone(Option<u16>),
    /// Drop without a close frame.
    Abrupt,
}

/// One subscription of this connection.
#[derive(Debug, Clone, Copy)]
struct Held {
    /// Which subscription (a replacing `subscribe` gets a new one).
    id: SubscriberId,
    /// The last offset sent (confirmation, replay or live).
    after: u64,
}

struct Connection {
    shared: Arc<Shared>,
    out: Outbound,
    control: ControlSender,
    faults: watch::Receiver<Faults>,
    stage: Stage,
    rate: RateLimiter,
    liveness: RateLimiter,
    subscriptions: HashMap<Arc<str>, Held>,
    /// Made at the first subscribe (an idle connection holds none).
    inbox: Option<LiveInbox>,
    in_flight: Arc<AtomicUsize>,
    requests: RequestSet,
    id: u64,
}

pub(crate) async fn run<S>(shared: Arc<Shared>, mut ws: WebSocket<S>, meta: ConnectionMeta)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = &shared.config.limits;
    let (out, mut out_rx) = outbound(
        &shared.limits,
        Arc::clone(&shared.outbound_total),
        shared.config.max_outbound_bytes,
    );
    let (control, control_rx) = mailbox();
    let id = shared.register(control.clone());
    shared
        .metrics
        .open_connections
        .fetch_add(1, Ordering::Relaxed);
    let now = shared.clock.now();
    let mut connection = Connection {
        rate: limits.rate_limiter(now),
        liveness: limits.liveness_limiter(now),
        stage: Stage::Handshake {
            deadline: limits.handshake_deadline(now),
        },
        faults: shared.faults.subscribe(),
        shared: Arc::clone(&shared),
        out,
        control,
        subscriptions: HashMap::new(),
        inbox: None,
        in_flight: Arc::new(AtomicUsize::new(0)),
        requests: RequestSet::default(),
        id,
    };
    let meta_peer = meta.peer;
    let end = match meta.admission {
        Admission::Admitted => {
            connection
                .read_loop(&mut ws, &mut out_rx, control_rx, meta)
                .await
        }
        Admission::Refused { retry_after } => connection.refuse(retry_after),
    };
    connection.stop_subscriptions();
    if matches!(&end, End::Close(code, _) if *code == CloseCode::SERVICE_RESTART) {
        // A drain: requests in flight are answered before the close (within
        // the drain's deadline, after which the server exits anyway).
        let deadline = tokio::time::Instant::now() + shared.config.drain.deadline();
        while connection.in_flight.load(Ordering::Acquire) > 0
            && tokio::time::Instant::now() < deadline
        {
            pump(&mut ws, &mut out_rx, usize::MAX);
            let tick = Duration::from_millis(10);
            if tokio::time::timeout(tick, ws.flush()).await.is_ok() {
                tokio::time::sleep(tick).await;
            }
        }
    }
    // Nobody will read the answers of what is still running (keyed
    // executions finish, so a retry gets their outcome).
    connection.requests.abandon();
    drop(connection);
    let code = match end {
        End::Close(code, reason) => {
            // The peer is gone or not reading: do not wait behind the queue,
            // and put the close frame right after what is already going out.
            let urgent = matches!(
                code,
                CloseCode::SLOW_CONSUMER | CloseCode::HEARTBEAT_TIMEOUT
            );
            if urgent {
                ws.discard_unsent();
            } else {
                pump(&mut ws, &mut out_rx, usize::MAX);
            }
            ws.close(Some(code.0), &reason, CLOSE_LINGER).await;
            code.0
        }
        End::PeerGone(code) => {
            // The codec has answered the peer's close (if it sent one).
            ws.close(None, "", CLOSE_LINGER).await;
            code.unwrap_or(CloseCode::ABNORMAL.0)
        }
        End::Abrupt => CloseCode::ABNORMAL.0,
    };
    drop(ws);
    shared.unregister(id);
    shared
        .metrics
        .open_connections
        .fetch_sub(1, Ordering::Relaxed);
    shared.metrics.count_close(code);
    shared.emit("disconnect", format!("{} closed with {code}", meta_peer));
}

/// Move queued frames into the socket's write buffer while it holds less
/// than `limit` bytes (at most 64 frames when limited, so one flush batches
/// them without starving the rest of the loop).
fn pump<S>(ws: &mut WebSocket<S>, out: &mut OutboundReceiver, limit: usize)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut moved = 0;
    while ws.buffered() < limit && (limit == usize::MAX || moved < 64) {
        let Some(frame) = out.try_recv() else { break };
        ws.queue_text(&frame);
        moved += 1;
    }
}

impl Connection {
    fn now(&self) -> Instant {
        self.shared.clock.now()
    }

    /// Admission refused a browser: say when to come back, in-band.
    fn refuse(&mut self, retry_after: Duration) -> End {
        let ms = u64::try_from(retry_after.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        self.send(&ServerMessage::Reconnect(ReconnectAdvice {
            reason: "overload".into(),
            min_delay_ms: ms,
            max_delay_ms: ms.saturating_mul(2),
            message: Some("The server is busy; reconnecting shortly.".into()),
        }));
        End::Close(
            CloseCode::TRY_AGAIN_LATER,
            format!("over capacity; retry after {ms} ms"),
        )
    }

    async fn read_loop<S>(
        &mut self,
        ws: &mut WebSocket<S>,
        out: &mut OutboundReceiver,
        mut control: ControlReceiver,
        meta: ConnectionMeta,
    ) -> End
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let timer = tokio::time::sleep_until(self.shared.clock.to_std(self.next_deadline()).into());
        tokio::pin!(timer);
        loop {
            if self.faults.borrow().freeze {
                // Frozen: nothing read, nothing written, no timers. Only a
                // change of faults or a restart/drain order wakes us.
                tokio::select! {
                    changed = self.faults.changed() => if changed.is_err() { return End::Abrupt },
                    order = control.recv() => if matches!(order, Control::Drop) {
                        return End::Abrupt;
                    },
                }
                continue;
            }
            let deadline =
                tokio::time::Instant::from_std(self.shared.clock.to_std(self.next_deadline()));
            if timer.deadline() != deadline {
                timer.as_mut().reset(deadline);
            }
            let room = ws.buffered() < HIGH_WATER;
            // Biased: a fault change (a freeze must stop the very next frame)
            // and orders come first, then a due timer (so a peer that keeps
            // sending cannot postpone it), then the peer's frames (reading
            // also writes what is buffered), then queued frames to send.
            tokio::select! {
                biased;
                changed = self.faults.changed() => {
                    if changed.is_err() {
                        return End::Abrupt;
                    }
                    if self.faults.borrow().service_down {
                        self.drop_subscriptions("unavailable", "service down");
                    }
                    self.follow_flapping();
                }
                order = control.recv() => {
                    if let Some(end) = self.on_control(order) {
                        return end;
                    }
                }
                () = timer.as_mut() => {
                    // The timer can fire a little late or early: the core
                    // re-checks `now >= deadline` itself.
                    if let Some(end) = self.on_timeout() {
                        return end;
                    }
                }
                event = ws.next_event() => {
                    let end = match event {
                        // The write buffer has room again: the loop
                        // re-enables the queue branch below.
                        Event::Room => None,
                        Event::End => Some(End::PeerGone(None)),
                        Event::Error(error) => Some(protocol_failure(&error)),
                        Event::Message(Message::Ping(payload)) => {
                            match self.on_liveness_frame() {
                                Ok(true) => {
                                    ws.queue_pong(&payload);
                                    None
                                }
                                Ok(false) => None,
                                Err(end) => Some(end),
                            }
                        }
                        Event::Message(message) => self.on_frame(message, &meta),
                    };
                    if let Some(end) = end {
                        return end;
                    }
                }
                item = next_live(&mut self.inbox), if self.inbox.is_some() => {
                    if let Some(end) = self.on_live(ws, out, item) {
                        return end;
                    }
                    // Batch what is already there into one write.
                    for _ in 0..64 {
                        let Some(item) = self.inbox.as_mut().and_then(LiveInbox::try_next) else { break };
                        if let Some(end) = self.on_live(ws, out, item) {
                            return end;
                        }
                    }
                }
                frame = out.recv(), if room => {
                    // A freeze stops the next frame, not the one after it:
                    // the loop re-checks faults before anything is written.
                    ws.queue_text(&frame);
                    pump(ws, out, HIGH_WATER);
                }
            }
        }
    }

    fn next_deadline(&self) -> Instant {
        match &self.stage {
            Stage::Handshake { deadline } => *deadline,
            Stage::Open {
                heartbeat, flap_at, ..
            } => flap_at.map_or(heartbeat.poll_timeout(), |f| {
                f.min(heartbeat.poll_timeout())
            }),
        }
    }

    fn on_timeout(&mut self) -> Option<End> {
        let now = self.now();
        match &mut self.stage {
            Stage::Handshake { deadline } => {
                if now >= *deadline {
                    return self.violate(Violation::HandshakeTimeout);
                }
                None
            }
            Stage::Open {
                heartbeat, flap_at, ..
            } => {
                if flap_at.is_some_and(|at| now >= at) {
                    return Some(End::Abrupt);
                }
                match heartbeat.handle_timeout(now) {
                    Ok(HeartbeatAction::Probe) => {
                        Metrics::add(&self.shared.metrics.pings_sent);
                        self.send(&ServerMessage::Ping);
                        None
                    }
                    Ok(_) => None,
                    Err(_) => {
                        Metrics::add(&self.shared.metrics.zombies_reaped);
                        self.shared
                            .emit("reap", "no answer within the heartbeat timeout".into());
                        Some(End::Close(
                            CloseCode::HEARTBEAT_TIMEOUT,
                            "heartbeat timeout".into(),
                        ))
                    }
                }
            }
        }
    }

    fn on_control(&mut self, order: Control) -> Option<End> {
        match order {
            Control::Advise(advice) => {
                self.send(&ServerMessage::Reconnect(advice));
                None
            }
            Control::Close(code, reason) => Some(End::Close(code, reason)),
            Control::Drop => Some(End::Abrupt),
            Control::SlowConsumer => self.violate(Violation::SlowConsumer),
        }
    }

    fn respond(&self, id: u64, reply: Reply) {
        self.send(&ServerMessage::Response(Response { id, reply }));
    }

    fn on_handshake(
        &mut self,
        now: Instant,
        decoded: Result<ClientMessage, DecodeError>,
        meta: &ConnectionMeta,
    ) -> Option<End> {
        let connect = match decoded {
            Ok(ClientMessage::Connect(connect)) => connect,
            Ok(_) | Err(_) => return self.violate(Violation::NotConnectFirst),
        };
        if connect.protocol != PROTOCOL_VERSION {
            return self.violate(Violation::UnsupportedProtocol);
        }
        let token = connect.token.as_deref().or(meta.header_token.as_deref());
        let principal = match self.shared.auth.authenticate(token) {
            Ok(p) if !p.expired(std::time::Instant::now()) => p,
            Ok(_) | Err(_) => {
                return Some(End::Close(CloseCode::UNAUTHORIZED, "unauthorized".into()))
            }
        };
        let session: Arc<str> = Arc::from(format!("s{:x}-{:x}", self.id, now.as_micros()));
        let limits = &self.shared.config.limits;
        let pacing = self.shared.config.pacing.then(|| {
            let connections = self.shared.metrics.open_connections().max(1) as usize;
            crate::metrics::lock(&self.shared.pacing).assign(now, connections)
        });
        self.send(&ServerMessage::Welcome(Welcome {
            session: session.to_string(),
            protocol: PROTOCOL_VERSION,
            ping_interval_ms: Some(limits.ping_interval_ms()),
            pacing,
        }));
        Metrics::add(&self.shared.metrics.connects);
        self.shared
            .emit("connect", format!("{} session {session}", meta.peer));
        let flap_at = self.faults.borrow().flapping.map(|after| now + after);
        self.stage = Stage::Open {
            principal,
            session,
            heartbeat: limits.heartbeat(now),
            flap_at,
        };
        None
    }

    fn on_message(&mut self, message: ClientMessage) -> Option<End> {
        let Stage::Open {
            principal, session, ..
        } = &self.stage
        else {
            return None;
        };
        if principal.expired(std::time::Instant::now()) {
            return Some(End::Close(
                CloseCode::UNAUTHORIZED,
                "credentials expired".into(),
            ));
        }
        let (principal, session) = (principal.clone(), Arc::clone(session));
        match message {
            ClientMessage::Connect(_) => self.violate(Violation::DuplicateConnect),
            ClientMessage::Request(request) => {
                self.on_request(principal, session, request);
                None
            }
            ClientMessage::Subscribe(subscribe) => {
                self.on_subscribe(&principal, subscribe);
                None
            }
            ClientMessage::Unsubscribe(unsubscribe) => {
                self.end_subscription(&unsubscribe.channel);
                None
            }
            _ => self.violate(Violation::UnknownType),
        }
    }

    fn on_request(&mut self, principal: Principal, session: Arc<str>, request: Request) {
        if let Err(denied) = self
            .shared
            .auth
            .authorize_request(&principal, &request.method)
        {
            self.shared.metrics.count_request("denied");
            self.respond(
                request.id,
                Reply::Error(ErrorBody::new(denied.code(), denied.to_string())),
            );
            return;
        }
        if self.faults.borrow().service_down {
            // The service is down: the request is never answered, as a hung
            // backend would; the client's deadline settles it.
            self.shared.metrics.count_request("unanswered");
            return;
        }
        let limits = &self.shared.config.limits;
        if let Err(violation) = limits.check_in_flight(self.in_flight.load(Ordering::Acquire)) {
            self.shared.metrics.count_request("rate_limited");
            self.respond(request.id, requests::refusal(violation));
            return;
        }
        let start = requests::admit(&self.shared, &principal, &request);
        if let Admit::Answer(reply) = start {
            self.respond(request.id, reply);
            return;
        }
        let keyed = matches!(start, Admit::Run(Some(_)));
        let task = RequestTask {
            shared: Arc::clone(&self.shared),
            out: self.out.clone(),
            control: self.control.clone(),
            _in_flight: InFlight::enter(&self.in_flight),
            delay: self.faults.borrow().slow_replies,
            principal,
            session,
            request,
        };
        let handle = tokio::spawn(requests::run(task, start)).abort_handle();
        self.requests.push(handle, keyed);
    }

    /// Flapping switched on drops this session too, `after` from now;
    /// switched off, it spares it.
    fn follow_flapping(&mut self) {
        let now = self.now();
        let flapping = self.faults.borrow().flapping;
        if let Stage::Open { flap_at, .. } = &mut self.stage {
            *flap_at = match (flapping, *flap_at) {
                (Some(_), Some(at)) => Some(at),
                (Some(after), None) => Some(now + after),
                (None, _) => None,
            };
        }
    }

    /// Apply the documented response to a violation (belay-proto's table).
    fn violate(&mut self, violation: Violation) -> Option<End> {
        self.shared.metrics.count_violation(violation.name());
        match violation.response() {
            ViolationResponse::Reply(error) => {
                self.send(&ServerMessage::Error(error));
                None
            }
            ViolationResponse::Close {
                code,
                reason,
                advice,
            } => {
                if let Some(advice) = advice {
                    self.send(&ServerMessage::Reconnect(advice));
                }
                Some(End::Close(code, reason.into()))
            }
            // Upgrade rejections happen before a connection exists.
            _ => None,
        }
    }

    /// Queue a message; a full queue closes the connection as a slow consumer.
    fn send(&self, message: &ServerMessage) -> bool {
        let queued = queue(&self.out, message);
        if !queued {
            let _ = self.control.send(Control::SlowConsumer);
        }
        queued
    }
}

pub(crate) fn unsubscribed(channel: &str, code: &str, reason: &str) -> ServerMessage {
    ServerMessage::Unsubscribed(Unsubscribed {
        channel: channel.to_owned(),
        code: code.to_owned(),
        reason: reason.to_owned(),
    })
}

/// A frame the WebSocket layer rejected: its documented close.
fn protocol_failure(error: &WsError) -> End {
    let violation = match error {
        WsError::TooBig => Violation::FrameTooLarge,
        WsError::InvalidUtf8 => Violation::InvalidUtf8,
        WsError::Protocol(_) => {
            return End::Close(CloseCode::PROTOCOL_ERROR, "protocol error".into())
        }
        WsError::Io(_) => return End::PeerGone(None),
    };
    match violation.response() {
        ViolationResponse::Close { code, reason, .. } => End::Close(code, reason.into()),
        _ => End::PeerGone(None),
    }
}
