//! A connection's subscriptions: subscribing (checks, broker grant,
//! confirmation and replay), leaving, and the live publications and lag
//! notices its inbox delivers.

use std::sync::Arc;

use belay_proto::message::{ServerMessage, Subscribe};
use belay_proto::server::{Violation, ViolationResponse};
use bytes::Bytes as FrameBytes;
use tokio::io::{AsyncRead, AsyncWrite};

use super::{queue, unsubscribed, Connection, Control, End, Held};
use crate::auth::Principal;
use crate::broker::{LiveInbox, LiveItem, SubscribeError};
use crate::metrics::Metrics;
use crate::outbound::OutboundReceiver;
use crate::ws::{WebSocket, HIGH_WATER};

impl Connection {
    pub(super) fn on_subscribe(&mut self, principal: &Principal, subscribe: Subscribe) {
        let channel = subscribe.channel;
        let shared = Arc::clone(&self.shared);
        let limits = &shared.config.limits;
        if let Err(violation) = limits.check_channel(&channel) {
            // Not even held in a refusal: the reply names a prefix.
            let shown = truncate_name(&channel, limits.max_channel_len());
            self.refuse_subscribe(shown, violation);
            return;
        }
        self.end_subscription(&channel);
        if let Err(denied) = self.shared.auth.authorize_subscribe(principal, &channel) {
            self.send(&unsubscribed(&channel, denied.code(), &denied.to_string()));
            return;
        }
        if self.faults.borrow().service_down {
            self.send(&unsubscribed(&channel, "unavailable", "service down"));
            return;
        }
        if let Err(violation) = limits.check_subscriptions(self.subscriptions.len()) {
            self.refuse_subscribe(&channel, violation);
            return;
        }
        let name: Arc<str> = Arc::from(channel.as_str());
        let history = &shared.config.history;
        let live = self
            .inbox
            .get_or_insert_with(|| LiveInbox::new(history.live_buffer, history.live_buffer_bytes))
            .sender(Arc::clone(&name));
        let id = live.id();
        let granted = match self
            .shared
            .broker
            .subscribe(&channel, subscribe.since.as_ref(), live)
        {
            Ok(granted) => granted,
            Err(SubscribeError::TooManyChannels) => {
                self.refuse_subscribe(&channel, Violation::TooManyChannels);
                return;
            }
        };
        if subscribe.since.is_some() {
            let counter = if granted.subscribed.recovered {
                &self.shared.metrics.recoveries
            } else {
                &self.shared.metrics.recovery_misses
            };
            Metrics::add(counter);
        }
        let mut after = granted.subscribed.offset;
        self.subscriptions
            .insert(Arc::clone(&name), Held { id, after });
        if !self.send(&ServerMessage::Subscribed(granted.subscribed)) {
            return;
        }
        for delivery in granted.replay {
            after = delivery.offset;
            if self.out.try_send(delivery.frame).is_err() {
                let _ = self.control.send(Control::SlowConsumer);
                return;
            }
        }
        self.subscriptions.insert(name, Held { id, after });
    }

    /// Refuse a `subscribe` with the violation's documented `unsubscribed`.
    pub(super) fn refuse_subscribe(&mut self, channel: &str, violation: Violation) {
        Metrics::add(&self.shared.metrics.subscribe_refusals);
        if let ViolationResponse::Reply(error) = violation.response() {
            self.send(&unsubscribed(channel, &error.code, &error.message));
        }
    }

    /// Stop delivering `channel` to this connection (no reply).
    pub(super) fn end_subscription(&mut self, channel: &str) {
        if let Some((name, held)) = self.subscriptions.remove_entry(channel) {
            self.shared.broker.unsubscribe(&name, held.id);
        }
        let held = &mut self.subscriptions;
        if held.capacity() > 16 && held.len() < held.capacity() / 4 {
            held.shrink_to(held.len() * 2);
        }
    }

    /// A live publication (or a lag) of one of this connection's
    /// subscriptions. Straight into the socket's write buffer when nothing
    /// is queued before it and there is room, else through the bounded
    /// queue (full: a slow consumer). Items of a subscription that was
    /// replaced or ended, and offsets already sent, are dropped.
    pub(super) fn on_live<S>(
        &mut self,
        ws: &mut WebSocket<S>,
        out: &OutboundReceiver,
        item: LiveItem,
    ) -> Option<End>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        match item {
            LiveItem::Frame {
                channel,
                subscriber,
                offset,
                frame,
            } => {
                let held = self.subscriptions.get_mut(&*channel)?;
                if held.id != subscriber || offset <= held.after {
                    return None;
                }
                held.after = offset;
                self.write_live(ws, out, frame)
            }
            LiveItem::Lagged {
                channel,
                subscriber,
            } => {
                if self.subscriptions.get(&*channel).map(|h| h.id) != Some(subscriber) {
                    return None;
                }
                self.end_subscription(&channel);
                let message = unsubscribed(&channel, "lagged", "subscriber fell behind");
                if queue(&self.out, &message) {
                    None
                } else {
                    self.violate(Violation::SlowConsumer)
                }
            }
        }
    }

    pub(super) fn write_live<S>(
        &mut self,
        ws: &mut WebSocket<S>,
        out: &OutboundReceiver,
        frame: FrameBytes,
    ) -> Option<End>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        if out.is_empty() && ws.buffered() < HIGH_WATER {
            ws.queue_text(&frame);
            None
        } else if self.out.try_send(frame).is_err() {
            self.violate(Violation::SlowConsumer)
        } else {
            None
        }
    }

    /// Service down: every subscription is dropped with `unsubscribed`.
    pub(super) fn drop_subscriptions(&mut self, code: &str, reason: &str) {
        let channels: Vec<Arc<str>> = self.subscriptions.keys().cloned().collect();
        for channel in channels {
            self.end_subscription(&channel);
            self.send(&unsubscribed(&channel, code, reason));
        }
    }

    pub(super) fn stop_subscriptions(&mut self) {
        for (channel, held) in self.subscriptions.drain() {
            self.shared.broker.unsubscribe(&channel, held.id);
        }
    }
}

/// The next item of the connection's inbox (pending forever without one;
/// the loop polls this only when there is one).
pub(super) async fn next_live(inbox: &mut Option<LiveInbox>) -> LiveItem {
    match inbox {
        Some(inbox) => inbox.next().await,
        None => std::future::pending().await,
    }
}

/// The longest prefix of `name` of at most `max` bytes on a char boundary.
fn truncate_name(name: &str, max: usize) -> &str {
    let mut end = name.len().min(max);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}
