//! One connection's driver: a task that feeds the core's
//! [`belay_proto::server::Connection`] with its transport's frames (a
//! WebSocket or an SSE stream: [`Transport`]), the clock,
//! the authenticator's and the broker's answers and the outcomes of
//! requests, and carries out what it decides. Every close code and error
//! the server sends to a connected client is the core's decision; this
//! module only moves bytes and calls the server's parts.
//!
//! Bounds that need the I/O layer stay here: frames are limited by the
//! WebSocket layer, the outbound queue is bounded in frames and bytes
//! (when it is full the core closes 4009), and frames move from the queue
//! to the socket only while less than `ws::HIGH_WATER` bytes wait to be
//! written. The source's share of the work
//! ([`SourceTable::pace_work`](belay_proto::server::SourceTable::pace_work))
//! is taken here too: after a frame past it, the driver reads nothing more
//! until the share allows (it still writes, and still serves the server's
//! orders and the broker).

use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use belay_proto::message::Codec;
use belay_proto::server::{work_units, Connection, Frame, Input, TransportError};
use belay_proto::{CloseCode, Instant};

use crate::broker::{LiveInbox, LiveItem};
use crate::logs::{self, ClosedBy};
use crate::mailbox::{mailbox, Control, ControlReceiver};
use crate::metrics::lock;
use crate::outbound::Outbound;
use crate::peer_limits::PeerSlot;
use crate::shared::Shared;
use crate::unhandled::Unhandled;
use crate::ws::{Event, Message, WsError, HIGH_WATER};
use driver::Driver;

mod driver;
#[cfg(test)]
mod every_output;
mod history;
mod hosts;
mod orders;
mod outputs;
mod presence;
mod refresh;
mod transport;

pub(crate) use transport::Transport;

/// How long a closing connection may take to flush and finish the close
/// handshake before the socket is dropped.
const CLOSE_LINGER: Duration = Duration::from_secs(2);

/// Outputs a connection carries out between two yields: a close that
/// leaves a thousand subscriptions (or any other burst of the core's
/// outputs) does not hold a worker thread while other connections wait.
const OUTPUT_BATCH: usize = 16;

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
    /// The codec the upgrade chose (SSE: JSON).
    pub(crate) codec: Codec,
    /// Held for the connection's life: what counts it against its source
    /// address (released when the connection ends).
    pub(crate) _peer_slot: Option<PeerSlot>,
}

impl ConnectionMeta {
    /// The address the connection is counted against (the client's,
    /// behind a trusted proxy); `None`: not counted.
    pub(crate) fn source(&self) -> Option<std::net::IpAddr> {
        self._peer_slot
            .as_ref()
            .and_then(PeerSlot::key)
            .map(|key| key.ip())
    }
}

/// How the connection ended.
enum End {
    /// Close with this code and reason; `urgent`: drop what is unsent.
    Close {
        code: CloseCode,
        reason: String,
        urgent: bool,
    },
    /// The peer closed (with this code, if it sent one) or vanished.
    PeerGone(Option<u16>),
}

pub(crate) async fn run<T>(shared: Arc<Shared>, mut ws: T, meta: ConnectionMeta)
where
    T: Transport,
{
    // Taken apart at once: the task keeps only the source slot (released
    // when the connection ends), so its future stays small.
    let ConnectionMeta {
        peer,
        header_token,
        admission,
        codec,
        _peer_slot: peer_slot,
    } = meta;
    let (control, control_rx) = mailbox();
    let id = shared.register(control.clone());
    shared
        .metrics
        .open_connections
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let now = shared.clock.now();
    let seed =
        std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), id);
    let mut core = Connection::new(Arc::clone(&shared.limits), now, seed);
    core.set_upgrade_token(header_token);
    core.set_codec(codec);
    if let Admission::Refused { retry_after } = admission {
        logs::refused(peer, T::KIND, None, Some(1013), "over the accept rate");
        core.refuse_overload(retry_after);
    }
    let mut driver = Driver::new(&shared, core, control, peer, peer_slot, id);
    let end = driver.run_loop(&mut ws, control_rx).await;
    // Whatever ended it, the broker forgets this connection's subscriptions
    // (the core leaves them as it closes).
    driver.core.close(CloseCode::ABNORMAL, "connection dropped");
    // A connection with thousands of subscriptions leaves them in batches,
    // so its end does not hold a worker thread while others wait.
    while driver.carry_out_at_most(&mut ws, OUTPUT_BATCH).1 {
        tokio::task::yield_now().await;
    }
    // Nobody will read the answers of what is still running (keyed
    // executions finish, so a retry gets their outcome).
    driver.requests.abandon();
    let peer_slot = driver.slot.take();
    // Logged before the close handshake (which may linger), in a block of
    // its own: nothing it needs is held across the handshake.
    if logs::connection_lines() {
        let (code, by) = match &end {
            End::Close { code, .. } => (code.0, ClosedBy::Server),
            End::PeerGone(Some(code)) => (*code, ClosedBy::Client),
            End::PeerGone(None) => (CloseCode::ABNORMAL.0, ClosedBy::Network),
        };
        let since = lock(&shared.node).connected_at(id);
        logs::closed(&logs::Closed {
            peer,
            user: &driver.principal.user,
            session: &driver.session,
            transport: T::KIND,
            code,
            reason: match &end {
                End::Close { reason, .. } => reason,
                End::PeerGone(_) => "",
            },
            by,
            duration: since.map(|since| shared.clock.now().saturating_duration_since(since)),
        });
    }
    let mut out = driver.into_outbound();
    let code = match end {
        End::Close {
            code,
            reason,
            urgent,
        } => {
            // The peer is gone or not reading: do not wait behind the queue,
            // and put the close frame right after what is already going out.
            if urgent {
                ws.discard_unsent();
            } else {
                pump(&mut ws, &mut out, usize::MAX);
            }
            ws.close(Some(code.0), &reason, CLOSE_LINGER).await;
            code.0
        }
        End::PeerGone(code) => {
            // The codec has answered the peer's close (if it sent one).
            ws.close(None, "", CLOSE_LINGER).await;
            code.unwrap_or(CloseCode::ABNORMAL.0)
        }
    };
    drop(ws);
    shared.unregister(id);
    shared
        .metrics
        .open_connections
        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    shared.metrics.count_close(code);
    shared.emit("disconnect", format!("{peer} closed with {code}"));
    drop(peer_slot);
}

/// Move queued frames into the socket's write buffer while it holds less
/// than `limit` bytes (at most 64 frames when limited, so one flush batches
/// them without starving the rest of the loop).
fn pump<T>(ws: &mut T, out: &mut Outbound, limit: usize)
where
    T: Transport,
{
    let mut moved = 0;
    while ws.buffered() < limit && (limit == usize::MAX || moved < 64) {
        let Some(frame) = out.try_recv() else { break };
        ws.queue_message(&frame);
        moved += 1;
    }
}

impl Driver {
    fn now(&self) -> Instant {
        self.shared.clock.now()
    }

    /// What is still queued for the socket; the rest of the driver is
    /// dropped.
    fn into_outbound(self) -> Outbound {
        self.out
    }

    async fn run_loop<T>(&mut self, ws: &mut T, mut control: ControlReceiver) -> End
    where
        T: Transport,
    {
        let timer = tokio::time::sleep_until(self.shared.clock.to_std(self.next_deadline()).into());
        tokio::pin!(timer);
        loop {
            let more = match self.carry_out_at_most(ws, OUTPUT_BATCH) {
                (Some(end), _) => return end,
                (None, more) => more,
            };
            let deadline =
                tokio::time::Instant::from_std(self.shared.clock.to_std(self.next_deadline()));
            if timer.deadline() != deadline {
                timer.as_mut().reset(deadline);
            }
            let queued = !self.out.is_empty() && ws.buffered() < HIGH_WATER;
            let reading = self.reads_at == Instant::ZERO;
            // Biased: orders come first, then a due timer (so a peer that
            // keeps sending cannot postpone it), then the peer's frames
            // (reading also writes what is buffered; while reads wait for
            // the source's share, a flush writes it), then queued frames to
            // send.
            tokio::select! {
                biased;
                order = control.recv() => self.on_control(order, T::KIND),
                () = timer.as_mut() => {
                    // The timer can fire a little late or early: the core
                    // re-checks `now >= deadline` itself.
                    let now = self.now();
                    if self.reads_at <= now {
                        self.reads_at = Instant::ZERO;
                    }
                    self.core.handle_timeout(now);
                }
                // With more outputs than one batch waiting, this yields
                // instead (other tasks get the thread first).
                event = socket_event(ws, reading, more) => {
                    if let Some(event) = event {
                        self.pace(&event);
                        self.on_socket_event(event);
                    }
                }
                item = next_live(&mut self.inbox), if self.inbox.is_some() => {
                    if let Some(end) = self.on_live_batch(ws, item) {
                        return end;
                    }
                }
                () = std::future::ready(()), if queued => pump(ws, &mut self.out, HIGH_WATER),
            }
        }
    }

    /// The core's next deadline, or the end of a wait for the source's
    /// share if sooner.
    fn next_deadline(&self) -> Instant {
        let core = self.core.poll_timeout().unwrap_or(Instant::MAX);
        match self.reads_at {
            Instant::ZERO => core,
            at => at.min(core),
        }
    }

    /// Take `event`'s work from the source's share; past it, stop reading
    /// until the share allows.
    fn pace(&mut self, event: &Event) {
        let Some(source) = self.slot.as_ref().and_then(PeerSlot::key) else {
            return;
        };
        let units = match event {
            Event::Message(Message::Text(bytes) | Message::Binary(bytes)) => {
                work_units(bytes.len())
            }
            Event::Message(Message::Ping(_) | Message::Pong) => 1,
            _ => return,
        };
        let now = self.now();
        let resume = crate::metrics::lock(&self.shared.node)
            .sources_mut()
            .pace_work(now, source, units);
        self.reads_at = resume.unwrap_or(Instant::ZERO);
        if resume.is_some() {
            self.shared
                .metrics
                .paced_frames
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn on_socket_event(&mut self, event: Event) {
        let now = self.now();
        match event {
            // The write buffer has room again: the loop re-enables the
            // queue branch.
            Event::Room => {}
            Event::End => self
                .core
                .handle_input(now, Input::TransportError(TransportError::Gone)),
            Event::Error(error) => {
                let error = match error {
                    WsError::TooBig => TransportError::TooLarge,
                    WsError::InvalidUtf8 => TransportError::InvalidUtf8,
                    WsError::Protocol(_) => TransportError::Protocol,
                    WsError::Io(_) => TransportError::Gone,
                };
                self.core.handle_input(now, Input::TransportError(error));
            }
            Event::Message(message) => match message {
                Message::Text(bytes) => match std::str::from_utf8(&bytes) {
                    Ok(text) => self.core.handle_input(now, Input::Frame(Frame::Text(text))),
                    // The codec has validated the UTF-8 already.
                    Err(_) => self
                        .core
                        .handle_input(now, Input::TransportError(TransportError::InvalidUtf8)),
                },
                Message::Binary(bytes) => self
                    .core
                    .handle_input(now, Input::Frame(Frame::Binary(&bytes))),
                Message::Ping(payload) => self
                    .core
                    .handle_input(now, Input::Frame(Frame::Ping(&payload))),
                Message::Pong => self.core.handle_input(now, Input::Frame(Frame::Pong)),
                Message::Close(code) => self
                    .core
                    .handle_input(now, Input::Frame(Frame::Close(code))),
            },
        }
    }

    /// An order from the server, to a connection over `transport`.
    fn on_control(&mut self, order: Control, transport: &'static str) {
        let now = self.now();
        match order {
            Control::Describe(answer) => {
                let _ = answer.send(crate::mailbox::Description {
                    session: (!self.session.is_empty()).then(|| Arc::clone(&self.session)),
                    transport,
                    codec: self.core.codec(),
                });
            }
            Control::Order(order) => self.on_order(now, order),
            Control::Reply(ticket, reply) => {
                self.core.handle_input(now, Input::Reply { ticket, reply })
            }
            Control::Checked(ticket, checked) => self.checked(ticket, checked),
        }
    }

    /// `item` and what else is already in the inbox (up to 64 more), each
    /// carried out on its own, so every frame goes straight to the socket's
    /// buffer and all of them leave in one write.
    fn on_live_batch<T>(&mut self, ws: &mut T, item: LiveItem) -> Option<End>
    where
        T: Transport,
    {
        // One clock read for the batch (live items do not depend on it),
        // and one count of its deliveries for the metrics.
        let now = self.now();
        let mut frames = u64::from(matches!(item, LiveItem::Frame { .. }));
        self.on_live(now, item);
        let mut end = None;
        for _ in 0..64 {
            end = self.carry_out(ws);
            let next = match end {
                Some(_) => None,
                None => self.inbox.as_mut().and_then(LiveInbox::try_next),
            };
            let Some(item) = next else { break };
            frames += u64::from(matches!(item, LiveItem::Frame { .. }));
            self.on_live(now, item);
        }
        self.shared
            .metrics
            .deliveries
            .fetch_add(frames, std::sync::atomic::Ordering::Relaxed);
        end
    }

    fn on_live(&mut self, now: Instant, item: LiveItem) {
        match item {
            LiveItem::Frame {
                channel,
                subscriber,
                offset,
                frame,
            } => self.core.handle_input(
                now,
                Input::Live {
                    channel: &channel,
                    subscription: subscriber.get(),
                    offset,
                    frame,
                },
            ),
            LiveItem::Lagged {
                channel,
                subscriber,
            } => self.core.handle_input(
                now,
                Input::Lagged {
                    channel: &channel,
                    subscription: subscriber.get(),
                },
            ),
            LiveItem::Ended {
                channel,
                subscriber,
                error,
            } => self.core.handle_input(
                now,
                Input::SubscriptionEnded {
                    channel: &channel,
                    subscription: subscriber.get(),
                    error: &error,
                },
            ),
            LiveItem::Joined { subscriber, answer } => self.joined(subscriber, *answer),
        }
    }
}

/// The peer's next event; while reads wait for the source's share
/// (`reading` false), only the writing of what is buffered (pending once
/// written, or with an error). With more outputs waiting (`yielding`):
/// `None` after one yield to the scheduler. A hand-written poll, so the
/// connection future stays in its size class.
fn socket_event<T>(
    ws: &mut T,
    reading: bool,
    yielding: bool,
) -> impl std::future::Future<Output = Option<Event>> + '_
where
    T: Transport,
{
    let mut yielded = false;
    std::future::poll_fn(move |cx| {
        if yielding {
            if yielded {
                return Poll::Ready(None);
            }
            yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if reading {
            return ws.poll_event(cx).map(Some);
        }
        if ws.buffered() > 0 {
            if let Poll::Ready(Err(error)) = ws.poll_flush(cx) {
                return Poll::Ready(Some(Event::Error(WsError::Io(error))));
            }
        }
        Poll::Pending
    })
}

/// The next item of the connection's inbox (pending forever without one;
/// the loop polls this only when there is one).
async fn next_live(inbox: &mut Option<LiveInbox>) -> LiveItem {
    match inbox {
        Some(inbox) => inbox.next().await,
        None => std::future::pending().await,
    }
}
