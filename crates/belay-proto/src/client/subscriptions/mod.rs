//! Subscriptions: confirmed, repaired on the same transport, and resumable.
//!
//! A channel counts for the service level only once the server confirms it
//! (`subscribed`). Without a confirmation in time the subscribe is repeated
//! **on the same transport**; on `unsubscribed` (the service lost it) the
//! channel is subscribed again after a short jittered delay. None of this
//! touches the transport: a healthy connection is never torn down because a
//! service behind it hiccuped.
//!
//! Each channel keeps its recovery position (epoch + offset of the last
//! publication delivered). It is sent as `since` on every re-subscribe; if the
//! server cannot replay from it (`recovered: false`) the application hears
//! [`Event::RecoveryFailed`] and must resync. Publications are delivered in
//! offset order without duplicates: an old offset is dropped, and a gap makes
//! the channel re-subscribe from its last position so the server replays the
//! missing ones instead of them being lost silently.

mod token_refresh;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::backoff::{Backoff, BackoffPolicy};
use crate::client::event::Event;
use crate::message::{
    ClientMessage, Publication, StreamPosition, Subscribe, Subscribed, Unsubscribe, Unsubscribed,
};
use crate::rng::RandomSource;
use crate::time::Instant;

/// The shortest wait for `subscribed` before repeating a subscribe; shorter
/// configured timeouts are raised to it, so a zero timeout cannot make every
/// `handle_timeout` call send another subscribe.
pub const MIN_CONFIRM_TIMEOUT: Duration = Duration::from_millis(100);

/// What the subscription machine wants done.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SubscriptionOutput {
    /// Send this on the current transport.
    Send(ClientMessage),
    /// Tell the application.
    Event(Event),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChannelState {
    /// Not sent on the current transport (there is none, or the protocol is not up yet).
    Idle,
    /// Sent; waiting for `subscribed` until the deadline.
    Pending { deadline: Instant, resumed: bool },
    /// Confirmed.
    Subscribed,
    /// Lost by the service; subscribing again at `at`.
    Retrying { at: Instant },
    /// Refused for good.
    Failed,
}

#[derive(Debug, Clone)]
struct Channel {
    state: ChannelState,
    position: Option<StreamPosition>,
    retry: Backoff,
    /// Sent with every subscribe of the channel, where the server asks
    /// for a subscription token.
    token: Option<String>,
    /// When to ask for a new subscription token, and when it expires
    /// (after `sub_expiring`, on the current transport).
    token_ask: Option<(Instant, Instant)>,
}

/// Every channel the application wants, and where each one stands.
#[derive(Debug, Clone)]
pub struct Subscriptions {
    channels: BTreeMap<String, Channel>,
    confirm_timeout: Duration,
    resubscribe: BackoffPolicy,
    online: bool,
    duplicates_dropped: u64,
    stray_publications: u64,
    resumes_refuted: u64,
}

impl Subscriptions {
    /// No channels yet. `confirm_timeout` bounds the wait for `subscribed`
    /// (at least [`MIN_CONFIRM_TIMEOUT`]); `resubscribe` paces re-subscribing
    /// after `unsubscribed`.
    pub fn new(confirm_timeout: Duration, resubscribe: BackoffPolicy) -> Self {
        Subscriptions {
            channels: BTreeMap::new(),
            confirm_timeout: confirm_timeout.max(MIN_CONFIRM_TIMEOUT),
            resubscribe,
            online: false,
            duplicates_dropped: 0,
            stray_publications: 0,
            resumes_refuted: 0,
        }
    }

    /// Whether every wanted channel (other than refused ones) is confirmed.
    /// Vacuously true with no channels.
    pub fn all_confirmed(&self) -> bool {
        self.channels
            .values()
            .all(|c| matches!(c.state, ChannelState::Subscribed | ChannelState::Failed))
    }

    /// Whether `channel` is wanted.
    pub fn contains(&self, channel: &str) -> bool {
        self.channels.contains_key(channel)
    }

    /// Whether `channel` is confirmed right now.
    pub fn is_subscribed(&self, channel: &str) -> bool {
        self.channels
            .get(channel)
            .is_some_and(|c| c.state == ChannelState::Subscribed)
    }

    /// The recovery position of `channel`.
    pub fn position(&self, channel: &str) -> Option<&StreamPosition> {
        self.channels.get(channel).and_then(|c| c.position.as_ref())
    }

    /// Publications dropped because their offset was already delivered.
    pub fn duplicates_dropped(&self) -> u64 {
        self.duplicates_dropped
    }

    /// Publications for channels not subscribed (dropped).
    pub fn stray_publications(&self) -> u64 {
        self.stray_publications
    }

    /// Resumes the server claimed as recovered (`recovered: true`) that
    /// this client refuted: another epoch, or an offset past `since`. Each
    /// one was reported as [`Event::RecoveryFailed`].
    pub fn resumes_refuted(&self) -> u64 {
        self.resumes_refuted
    }

    /// Want `channel`; subscribes at once if the protocol is up. Returns
    /// `false` if it was already wanted.
    pub fn add(&mut self, now: Instant, channel: &str, out: &mut Vec<SubscriptionOutput>) -> bool {
        self.add_with_token(now, channel, None, out)
    }

    /// Want `channel`, sending `token` (a subscription token) with every
    /// subscribe of it. Returns `false` if it was already wanted.
    pub fn add_with_token(
        &mut self,
        now: Instant,
        channel: &str,
        token: Option<String>,
        out: &mut Vec<SubscriptionOutput>,
    ) -> bool {
        if self.channels.contains_key(channel) {
            return false;
        }
        let mut entry = Channel {
            state: ChannelState::Idle,
            position: None,
            retry: Backoff::new(self.resubscribe.clone()),
            token,
            token_ask: None,
        };
        if self.online {
            let timeout = self.confirm_timeout;
            entry.state = subscribe_now(now, timeout, channel, None, entry.token.as_deref(), out);
        }
        self.channels.insert(channel.to_owned(), entry);
        true
    }

    /// Send `token` with the next subscribes of `channel` (a renewed
    /// subscription token). Returns `false` if the channel is not wanted.
    pub fn set_token(&mut self, channel: &str, token: Option<String>) -> bool {
        match self.channels.get_mut(channel) {
            Some(entry) => {
                entry.token = token;
                true
            }
            None => false,
        }
    }

    /// Stop wanting `channel`. Returns `false` if it was not wanted.
    pub fn remove(&mut self, channel: &str, out: &mut Vec<SubscriptionOutput>) -> bool {
        let Some(entry) = self.channels.remove(channel) else {
            return false;
        };
        if self.online
            && matches!(
                entry.state,
                ChannelState::Pending { .. } | ChannelState::Subscribed
            )
        {
            out.push(SubscriptionOutput::Send(ClientMessage::Unsubscribe(
                Unsubscribe {
                    channel: channel.to_owned(),
                },
            )));
        }
        true
    }

    /// Give channels the server refused another chance on the next transport.
    pub fn retry_refused(&mut self) {
        for entry in self.channels.values_mut() {
            if entry.state == ChannelState::Failed {
                entry.state = ChannelState::Idle;
            }
        }
    }

    /// The protocol level came up on a new transport: subscribe everything,
    /// resuming from each channel's position.
    pub fn handle_protocol_up(&mut self, now: Instant, out: &mut Vec<SubscriptionOutput>) {
        self.online = true;
        let timeout = self.confirm_timeout;
        for (name, entry) in &mut self.channels {
            if entry.state == ChannelState::Failed {
                continue;
            }
            entry.retry.reset();
            entry.state = subscribe_now(
                now,
                timeout,
                name,
                entry.position.clone(),
                entry.token.as_deref(),
                out,
            );
        }
    }

    /// The transport is gone: nothing is confirmed any more, positions are kept.
    pub fn handle_transport_down(&mut self) {
        self.online = false;
        for entry in self.channels.values_mut() {
            entry.token_ask = None;
            if entry.state != ChannelState::Failed {
                entry.state = ChannelState::Idle;
            }
        }
    }

    /// The server confirmed a subscription.
    pub fn handle_subscribed(&mut self, msg: Subscribed, out: &mut Vec<SubscriptionOutput>) {
        let Some(entry) = self.channels.get_mut(&msg.channel) else {
            return;
        };
        let ChannelState::Pending { resumed, .. } = entry.state else {
            // A confirmation we did not ask for on this transport: ignore it.
            return;
        };
        entry.state = ChannelState::Subscribed;
        entry.retry.reset();
        let since = entry.position.take().filter(|_| resumed);
        let (position, recovered) = checked_resume(since, &msg);
        if resumed && msg.recovered && !recovered {
            self.resumes_refuted = self.resumes_refuted.saturating_add(1);
        }
        entry.position = Some(position);
        out.push(SubscriptionOutput::Event(Event::Subscribed {
            channel: msg.channel.clone(),
            recovered,
        }));
        if resumed && !recovered {
            out.push(SubscriptionOutput::Event(Event::RecoveryFailed {
                channel: msg.channel,
            }));
        }
    }

    /// The server dropped or refused a subscription.
    pub fn handle_unsubscribed(
        &mut self,
        now: Instant,
        msg: Unsubscribed,
        rng: &mut dyn RandomSource,
        out: &mut Vec<SubscriptionOutput>,
    ) {
        let Some(entry) = self.channels.get_mut(&msg.channel) else {
            return;
        };
        if matches!(entry.state, ChannelState::Failed | ChannelState::Idle) {
            return;
        }
        if msg.is_final() {
            entry.state = ChannelState::Failed;
            out.push(SubscriptionOutput::Event(Event::SubscriptionFailed {
                channel: msg.channel,
                code: msg.code,
            }));
            return;
        }
        let delay = entry.retry.next_delay(now, rng);
        entry.state = ChannelState::Retrying { at: now + delay };
        out.push(SubscriptionOutput::Event(Event::SubscriptionLost {
            channel: msg.channel,
            code: msg.code,
        }));
    }

    /// A publication arrived.
    pub fn handle_publication(
        &mut self,
        now: Instant,
        publication: Publication,
        out: &mut Vec<SubscriptionOutput>,
    ) {
        let timeout = self.confirm_timeout;
        let Some(entry) = self.channels.get_mut(&publication.channel) else {
            self.stray_publications = self.stray_publications.saturating_add(1);
            return;
        };
        if entry.state != ChannelState::Subscribed {
            self.stray_publications = self.stray_publications.saturating_add(1);
            return;
        }
        let Some(position) = entry.position.as_mut() else {
            return;
        };
        let next = position.offset.saturating_add(1);
        if publication.epoch == position.epoch && publication.offset < next {
            self.duplicates_dropped = self.duplicates_dropped.saturating_add(1);
            return;
        }
        if publication.epoch != position.epoch || publication.offset > next {
            // A gap (or a new epoch): ask the server to replay from where we are.
            let since = Some(position.clone());
            entry.state = subscribe_now(
                now,
                timeout,
                &publication.channel,
                since,
                entry.token.as_deref(),
                out,
            );
            return;
        }
        position.offset = publication.offset;
        out.push(SubscriptionOutput::Event(Event::Publication(publication)));
    }

    /// Repeat unconfirmed subscribes and resubscribe lost channels when due.
    pub fn handle_timeout(&mut self, now: Instant, out: &mut Vec<SubscriptionOutput>) {
        if !self.online {
            return;
        }
        let timeout = self.confirm_timeout;
        for (name, entry) in &mut self.channels {
            let due = match entry.state {
                ChannelState::Pending { deadline, .. } => deadline <= now,
                ChannelState::Retrying { at } => at <= now,
                _ => false,
            };
            if due {
                entry.state = subscribe_now(
                    now,
                    timeout,
                    name,
                    entry.position.clone(),
                    entry.token.as_deref(),
                    out,
                );
            }
        }
        self.ask_for_tokens(now, out);
    }

    /// The next instant at which [`Subscriptions::handle_timeout`] has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.online {
            return None;
        }
        self.channels
            .values()
            .filter_map(|c| match c.state {
                ChannelState::Pending { deadline, .. } => Some(deadline),
                ChannelState::Retrying { at } => Some(at),
                _ => None,
            })
            .chain(self.next_token_ask())
            .min()
    }
}

/// The position and the recovery verdict after a `subscribed` answering a
/// subscribe sent with `since` (`None`: a first subscribe). The server's
/// word is checked against what this client delivered: in the same epoch the
/// position never moves backwards (a lower offset would deliver duplicates),
/// and a claimed recovery counts only if the server resumes at or before
/// `since` (a higher offset skipped publications) in the same epoch.
fn checked_resume(since: Option<StreamPosition>, msg: &Subscribed) -> (StreamPosition, bool) {
    let answered = StreamPosition {
        epoch: msg.epoch.clone(),
        offset: msg.offset,
    };
    match since {
        Some(since) if since.epoch == msg.epoch => {
            let recovered = msg.recovered && msg.offset <= since.offset;
            let offset = since.offset.max(msg.offset);
            (StreamPosition { offset, ..since }, recovered)
        }
        _ => (answered, false),
    }
}

fn subscribe_now(
    now: Instant,
    confirm_timeout: Duration,
    channel: &str,
    since: Option<StreamPosition>,
    token: Option<&str>,
    out: &mut Vec<SubscriptionOutput>,
) -> ChannelState {
    let resumed = since.is_some();
    out.push(SubscriptionOutput::Send(ClientMessage::Subscribe(
        Subscribe {
            channel: channel.to_owned(),
            since,
            token: token.map(str::to_owned),
        },
    )));
    ChannelState::Pending {
        deadline: now + confirm_timeout,
        resumed,
    }
}

#[cfg(test)]
mod tests;
