//! Subscription tokens that expire (spec/PROTOCOL.md §5.8): after the
//! server's `sub_expiring`, the channel asks the application for a new
//! token at 75–90 % of what is left ([`Event::SubscriptionTokenWanted`],
//! drawn like the connection's ask), and the answer goes out as
//! `sub_refresh` without leaving the channel. Losing the transport forgets
//! the ask: the next `subscribed` is followed by a new `sub_expiring`.

use std::time::Duration;

use super::{ChannelState, SubscriptionOutput, Subscriptions};
use crate::client::event::Event;
use crate::client::session::{REFRESH_FROM, REFRESH_SPREAD};
use crate::message::{ClientMessage, SubExpiring, SubRefresh};
use crate::rng::RandomSource;
use crate::time::Instant;

impl Subscriptions {
    /// The server said the token of a confirmed channel expires
    /// `expires_in_ms` from `now`: schedule the ask.
    pub fn handle_sub_expiring(
        &mut self,
        now: Instant,
        msg: &SubExpiring,
        rng: &mut impl RandomSource,
    ) {
        let Some(entry) = self.channels.get_mut(&msg.channel) else {
            return;
        };
        if entry.state != ChannelState::Subscribed {
            return;
        }
        let fraction = REFRESH_FROM + REFRESH_SPREAD * rng.next_unit();
        let ask = (msg.expires_in_ms as f64 * fraction).floor() as u64;
        entry.token_ask = Some((
            now + Duration::from_millis(ask),
            now + Duration::from_millis(msg.expires_in_ms),
        ));
    }

    /// Use `token` for `channel` from now on: sent with every later
    /// subscribe of it, and at once as `sub_refresh` if it is confirmed on
    /// the current transport. Returns `false` if the channel is not wanted.
    pub fn refresh_token(
        &mut self,
        channel: &str,
        token: String,
        out: &mut Vec<SubscriptionOutput>,
    ) -> bool {
        let Some(entry) = self.channels.get_mut(channel) else {
            return false;
        };
        entry.token = Some(token.clone());
        entry.token_ask = None;
        if self.online && entry.state == ChannelState::Subscribed {
            out.push(SubscriptionOutput::Send(ClientMessage::SubRefresh(
                SubRefresh {
                    channel: channel.to_owned(),
                    token,
                },
            )));
        }
        true
    }

    /// Ask for the tokens due at `now`.
    pub(super) fn ask_for_tokens(&mut self, now: Instant, out: &mut Vec<SubscriptionOutput>) {
        for (name, entry) in &mut self.channels {
            let Some((at, expires_at)) = entry.token_ask else {
                continue;
            };
            if at > now || entry.state != ChannelState::Subscribed {
                continue;
            }
            entry.token_ask = None;
            out.push(SubscriptionOutput::Event(Event::SubscriptionTokenWanted {
                channel: name.clone(),
                expires_in: expires_at.saturating_duration_since(now),
            }));
        }
    }

    /// When the next token ask is due.
    pub(super) fn next_token_ask(&self) -> Option<Instant> {
        self.channels
            .values()
            .filter(|entry| entry.state == ChannelState::Subscribed)
            .filter_map(|entry| entry.token_ask.map(|(at, _)| at))
            .min()
    }
}
