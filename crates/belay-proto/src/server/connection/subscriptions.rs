//! Subscriptions: the subscribe order (name check → authorize → limit →
//! join → confirm → replay → live), leaving, and which live frames reach
//! the client (none twice, none from a replaced subscription).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::message::{ErrorBody, ServerMessage, StreamPosition, Subscribe, Unsubscribed};
use crate::time::Instant;

use super::super::{Violation, ViolationResponse};
use super::sub_refresh::sub_expiring;
use super::{Connection, Event, JoinAnswer, OutboundRoom, Output, Ticket};

/// One confirmed subscription.
#[derive(Debug, Clone, Copy)]
pub(super) struct Held {
    /// The broker's id (a replacing `subscribe` gets a new one).
    subscription: u64,
    /// The last offset sent (confirmation, replay or live).
    after: u64,
    /// When the subscription token that opened it expires.
    pub(super) expires_at: Option<Instant>,
    /// The `sub_refresh` whose token is being checked.
    pub(super) refreshing: Option<Ticket>,
}

#[derive(Debug)]
struct Pending {
    channel: Arc<str>,
    since: Option<StreamPosition>,
    /// Authorized and asked of the broker.
    joining: bool,
    /// When the subscription token expires (set when authorized).
    expires_at: Option<Instant>,
}

/// The subscriptions a connection holds and those it is setting up.
#[derive(Debug, Default)]
pub(super) struct Subscriptions {
    held: HashMap<Arc<str>, Held>,
    /// How many held subscriptions have an expiry: without any, the
    /// connection's deadline never looks through them.
    expiring: usize,
    /// Subscribes being set up (usually none or one; a plain vector keeps
    /// an idle connection free of allocations and hashers).
    pending: Vec<(Ticket, Pending)>,
}

impl Subscriptions {
    pub(super) fn len(&self) -> usize {
        self.held.len()
    }

    /// Every confirmed subscription: its channel and the broker's id.
    pub(super) fn held(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.held
            .iter()
            .map(|(channel, held)| (&**channel, held.subscription))
    }

    /// Every confirmed subscription, removed.
    pub(super) fn take_all(&mut self) -> Vec<(Arc<str>, u64)> {
        self.expiring = 0;
        let all = self
            .held
            .drain()
            .map(|(channel, held)| (channel, held.subscription))
            .collect();
        self.held = HashMap::new();
        all
    }

    fn end(&mut self, channel: &str) -> Option<(Arc<str>, u64)> {
        let ended = self.held.remove_entry(channel).map(|(name, held)| {
            if held.expires_at.is_some() {
                self.expiring -= 1;
            }
            (name, held.subscription)
        });
        if self.held.capacity() > 16 && self.held.len() < self.held.capacity() / 4 {
            self.held.shrink_to(self.held.len() * 2);
        }
        // A subscribe still being set up for the channel is superseded.
        self.pending
            .retain(|(_, pending)| &*pending.channel != channel);
        ended
    }

    pub(super) fn held_mut(&mut self, channel: &str) -> Option<&mut Held> {
        self.held.get_mut(channel)
    }

    /// The `sub_refresh` `ticket` was answered: its subscription (if still
    /// held) now expires at `at` (`Some(None)`: never), or keeps its expiry
    /// (`None`: refused). Its channel, if any.
    pub(super) fn refreshed(
        &mut self,
        ticket: Ticket,
        at: Option<Option<Instant>>,
    ) -> Option<Arc<str>> {
        let (channel, held) = self
            .held
            .iter_mut()
            .find(|(_, held)| held.refreshing == Some(ticket))?;
        held.refreshing = None;
        if let Some(at) = at {
            match (held.expires_at.is_some(), at.is_some()) {
                (false, true) => self.expiring += 1,
                (true, false) => self.expiring -= 1,
                _ => {}
            }
            held.expires_at = at;
        }
        Some(Arc::clone(channel))
    }

    /// The channels whose token has expired at `now`.
    pub(super) fn expired(&self, now: Instant) -> Vec<Arc<str>> {
        if self.expiring == 0 {
            return Vec::new();
        }
        self.held
            .iter()
            .filter(|(_, held)| held.expires_at.is_some_and(|at| at <= now))
            .map(|(channel, _)| Arc::clone(channel))
            .collect()
    }

    /// When the next subscription token expires.
    pub(super) fn next_expiry(&self) -> Option<Instant> {
        if self.expiring == 0 {
            return None;
        }
        self.held.values().filter_map(|held| held.expires_at).min()
    }

    fn joining(&self) -> usize {
        self.pending.iter().filter(|(_, p)| p.joining).count()
    }

    fn pending(&mut self, ticket: Ticket) -> Option<&mut Pending> {
        self.pending
            .iter_mut()
            .find(|(t, _)| *t == ticket)
            .map(|(_, p)| p)
    }

    fn remove_pending(&mut self, ticket: Ticket) -> Option<Pending> {
        let index = self.pending.iter().position(|(t, _)| *t == ticket)?;
        let (_, pending) = self.pending.swap_remove(index);
        if self.pending.is_empty() {
            self.pending = Vec::new();
        }
        Some(pending)
    }
}

impl<F> Connection<F> {
    pub(super) fn on_subscribe(&mut self, subscribe: Subscribe) {
        let Subscribe {
            channel,
            since,
            token,
        } = subscribe;
        if let Err(violation) = self.limits.check_channel(&channel) {
            // Not even held in a refusal: the reply names a prefix.
            let shown = truncate_name(&channel, self.limits.max_channel_len()).to_owned();
            return self.refuse_subscribe(&shown, violation);
        }
        // A repeat for a channel held replaces it and is not counted
        // (spec/PROTOCOL.md §5.7): it takes the place it leaves.
        let repeat = self.leave(&channel);
        // Other subscribes waiting for the authorizer are bounded like
        // those held.
        let setting_up = self.activity().subscriptions.pending.len();
        if !repeat {
            if let Err(violation) = self.limits.check_subscriptions(setting_up) {
                return self.refuse_subscribe(&channel, violation);
            }
        }
        let ticket = self.ticket();
        self.activity().subscriptions.pending.push((
            ticket,
            Pending {
                channel: Arc::from(channel.as_str()),
                since,
                joining: false,
                expires_at: None,
            },
        ));
        self.out.push_back(Output::AuthorizeSubscribe {
            ticket,
            channel,
            token,
        });
    }

    pub(super) fn on_unsubscribe(&mut self, channel: &str) {
        self.leave(channel);
    }

    /// The authorizer's answer for [`Output::AuthorizeSubscribe`]
    /// ([`Input::SubscribeAuthorized`](super::Input::SubscribeAuthorized)).
    pub(super) fn handle_subscribe_authorized(
        &mut self,
        now: Instant,
        ticket: Ticket,
        verdict: Result<Option<Duration>, ErrorBody>,
    ) {
        let Some(pending) = self.activity().subscriptions.pending(ticket) else {
            return;
        };
        if pending.joining {
            return;
        }
        let channel = Arc::clone(&pending.channel);
        if let Err(denied) = verdict {
            self.activity().subscriptions.remove_pending(ticket);
            return self.send(unsubscribed(&channel, &denied.code, &denied.message));
        }
        let subscriptions = &self.activity().subscriptions;
        let held = subscriptions.len() + subscriptions.joining();
        if let Err(violation) = self.limits.check_subscriptions(held) {
            self.activity().subscriptions.remove_pending(ticket);
            return self.refuse_subscribe(&channel, violation);
        }
        let Some(pending) = self.activity().subscriptions.pending(ticket) else {
            return;
        };
        pending.joining = true;
        pending.expires_at = verdict.ok().flatten().map(|d| now.saturating_add(d));
        let since = pending.since.clone();
        self.out.push_back(Output::Join {
            ticket,
            channel: channel.to_string(),
            since,
        });
    }

    /// The broker's answer for [`Output::Join`], while the driver's
    /// outbound queue has `room` ([`Input::Joined`](super::Input::Joined)). Joined: `subscribed`, the replay, and
    /// from then on live frames. A replay the room does not take
    /// ([`OutboundRoom::takes_replay`]) is not sent: `subscribed` says
    /// `recovered: false` at the replay's top instead (spec/PROTOCOL.md
    /// §5.7), so a resume is never answered by a slow-consumer close. A
    /// join the connection no longer wants (replaced, ended, closed) is
    /// left again at once.
    pub(super) fn handle_joined(
        &mut self,
        now: Instant,
        ticket: Ticket,
        answer: JoinAnswer<F>,
        room: OutboundRoom,
    ) where
        F: AsRef<[u8]>,
    {
        let subscriptions = &mut self.activity().subscriptions;
        let pending = match subscriptions.pending(ticket) {
            Some(pending) if pending.joining => subscriptions.remove_pending(ticket),
            _ => None,
        };
        let Some(pending) = pending else {
            if let JoinAnswer::Joined {
                subscribed,
                subscription,
                ..
            } = answer
            {
                self.out.push_back(Output::Leave {
                    channel: subscribed.channel,
                    subscription,
                });
            }
            return;
        };
        match answer {
            JoinAnswer::Joined {
                mut subscribed,
                subscription,
                mut replay,
            } => {
                if !room.takes_replay(&replay) {
                    if let Some((top, _)) = replay.last() {
                        subscribed.offset = *top;
                    }
                    subscribed.recovered = false;
                    replay = Vec::new();
                }
                if pending.since.is_some() {
                    self.event(Event::Resumed {
                        recovered: subscribed.recovered,
                    });
                }
                let mut after = subscribed.offset;
                self.send(ServerMessage::Subscribed(subscribed));
                if let Some(at) = pending.expires_at {
                    self.send(sub_expiring(&pending.channel, now, at));
                }
                for (offset, frame) in replay {
                    after = offset;
                    self.out.push_frame(frame);
                }
                let subscriptions = &mut self.activity().subscriptions;
                if pending.expires_at.is_some() {
                    subscriptions.expiring += 1;
                }
                let replaced = subscriptions.held.insert(
                    pending.channel,
                    Held {
                        subscription,
                        after,
                        expires_at: pending.expires_at,
                        refreshing: None,
                    },
                );
                if replaced.is_some_and(|old| old.expires_at.is_some()) {
                    subscriptions.expiring -= 1;
                }
            }
            JoinAnswer::NoRoom => {
                self.refuse_subscribe(&pending.channel, Violation::TooManyChannels)
            }
            JoinAnswer::Unavailable(error) => {
                self.send(unsubscribed(&pending.channel, &error.code, &error.message))
            }
        }
    }

    /// A live publication at `offset` of `subscription` on `channel`,
    /// encoded as `frame`: sent unless the subscription was replaced or
    /// ended, or `offset` was already sent (by the replay).
    pub(super) fn handle_live(&mut self, channel: &str, subscription: u64, offset: u64, frame: F) {
        let Some(held) = self
            .activity
            .as_mut()
            .and_then(|a| a.subscriptions.held.get_mut(channel))
        else {
            return;
        };
        if held.subscription != subscription || offset <= held.after {
            return;
        }
        held.after = offset;
        self.out.push_frame(frame);
    }

    /// The broker stopped delivering `subscription` because this connection
    /// fell behind: the client is told (`unsubscribed` `lagged`) and
    /// resubscribes from its position, so the history replays what it missed.
    pub(super) fn handle_lagged(&mut self, channel: &str, subscription: u64) {
        let lagged = ErrorBody::new("lagged", "subscriber fell behind");
        self.handle_subscription_ended(channel, subscription, &lagged);
    }

    /// The broker ended `subscription` for a reason of its own (its backing
    /// store went away, the service behind the channel is down): the client
    /// is told with `unsubscribed` carrying `error`, and decides from the
    /// code whether and when to subscribe again (spec §5.3). A stale
    /// `subscription` (the channel was left or subscribed again since) is
    /// ignored.
    pub(super) fn handle_subscription_ended(
        &mut self,
        channel: &str,
        subscription: u64,
        error: &ErrorBody,
    ) {
        let current = self
            .activity
            .as_ref()
            .and_then(|a| a.subscriptions.held.get(channel))
            .map(|h| h.subscription);
        if current != Some(subscription) {
            return;
        }
        self.leave(channel);
        self.send(unsubscribed(channel, &error.code, &error.message));
    }

    /// Lose every subscription with `unsubscribed` carrying `error` (the
    /// broker is down); the client resubscribes from its positions.
    pub fn unsubscribe_all(&mut self, error: &ErrorBody) {
        let held = self
            .activity
            .as_mut()
            .map(|a| a.subscriptions.take_all())
            .unwrap_or_default();
        for (channel, subscription) in held {
            self.out.push_back(Output::Leave {
                channel: channel.to_string(),
                subscription,
            });
            self.send(unsubscribed(&channel, &error.code, &error.message));
        }
    }

    /// End this connection's subscription to `channel`, if any (no reply).
    /// Leave `channel` if it is held (and drop a subscribe for it still
    /// being set up); whether it was held.
    pub(super) fn leave(&mut self, channel: &str) -> bool {
        let ended = self
            .activity
            .as_mut()
            .and_then(|a| a.subscriptions.end(channel));
        let Some((channel, subscription)) = ended else {
            return false;
        };
        self.out.push_back(Output::Leave {
            channel: channel.to_string(),
            subscription,
        });
        true
    }

    /// Refuse a `subscribe` with the violation's documented `unsubscribed`.
    fn refuse_subscribe(&mut self, channel: &str, violation: Violation) {
        self.event(Event::SubscribeRefused);
        if let ViolationResponse::Reply(error) = violation.response() {
            self.send(unsubscribed(channel, &error.code, &error.message));
        }
    }
}

/// `unsubscribed` for `channel`, with `code` and `reason`.
pub(crate) fn unsubscribed(channel: &str, code: &str, reason: &str) -> ServerMessage {
    ServerMessage::Unsubscribed(Unsubscribed {
        channel: channel.to_owned(),
        code: code.to_owned(),
        reason: reason.to_owned(),
    })
}

/// The longest prefix of `name` of at most `max` bytes on a char boundary.
fn truncate_name(name: &str, max: usize) -> &str {
    let mut end = name.len().min(max);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}
