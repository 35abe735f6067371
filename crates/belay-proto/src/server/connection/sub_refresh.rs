//! Subscription tokens that expire (spec/PROTOCOL.md §5.8). A channel a
//! subscription token opened lasts as long as the token: the server tells
//! the client when it expires (`sub_expiring`, right after `subscribed`),
//! takes a new token for it in-band (`sub_refresh`, checked like the
//! subscribe's; confirmed with a new `sub_expiring`), and ends the
//! subscription on time if none came (`unsubscribed` `expired`), by a
//! timer, whatever the client sends.

use std::time::Duration;

use crate::message::{ErrorBody, ServerMessage, SubExpiring, SubRefresh};
use crate::time::Instant;

use super::handshake::millis_until;
use super::subscriptions::unsubscribed;
use super::{Connection, Output, Ticket};

/// The `unsubscribed` code of a subscription whose token expired.
const EXPIRED: &str = "expired";

impl<F> Connection<F> {
    /// `sub_refresh` for a channel held: ask the driver to check the token
    /// (a later one replaces one still being checked). For a channel not
    /// held (left or ended meanwhile) it is ignored.
    pub(super) fn on_sub_refresh(&mut self, refresh: SubRefresh) {
        let ticket = self.ticket();
        let Some(held) = self
            .activity
            .as_mut()
            .and_then(|a| a.subscriptions.held_mut(&refresh.channel))
        else {
            return;
        };
        held.refreshing = Some(ticket);
        self.out.push_back(Output::CheckSubscriptionToken {
            ticket,
            channel: refresh.channel,
            token: refresh.token,
        });
    }

    /// The verdict on a `sub_refresh`'s token
    /// ([`Output::CheckSubscriptionToken`]), at `now`: good for `Some(d)`,
    /// the subscription lasts until `now + d` and the client is told with
    /// `sub_expiring`; good with no expiry, it no longer expires; refused,
    /// the subscription ends with `unsubscribed` carrying the error.
    pub(super) fn handle_sub_refresh_checked(
        &mut self,
        now: Instant,
        ticket: Ticket,
        verdict: Result<Option<Duration>, ErrorBody>,
    ) {
        let Some(activity) = self.activity.as_mut() else {
            return;
        };
        let at = verdict
            .as_ref()
            .ok()
            .map(|lifetime| lifetime.map(|d| now.saturating_add(d)));
        let Some(channel) = activity.subscriptions.refreshed(ticket, at) else {
            return;
        };
        match (verdict, at) {
            (Ok(_), Some(Some(at))) => self.send(sub_expiring(&channel, now, at)),
            (Ok(_), _) => {}
            (Err(denied), _) => self.end_subscription(&channel, &denied.code, &denied.message),
        }
    }

    /// End every subscription whose token has expired at `now`.
    pub(super) fn expire_subscriptions(&mut self, now: Instant) {
        let expired = self
            .activity
            .as_ref()
            .map(|a| a.subscriptions.expired(now))
            .unwrap_or_default();
        for channel in expired {
            self.end_subscription(&channel, EXPIRED, "subscription token expired");
        }
    }

    /// `deadline`, or a subscription token's expiry if that comes first.
    pub(super) fn earliest(&self, deadline: Instant) -> Instant {
        let next = self
            .activity
            .as_ref()
            .and_then(|a| a.subscriptions.next_expiry());
        next.map_or(deadline, |at| at.min(deadline))
    }

    fn end_subscription(&mut self, channel: &str, code: &str, reason: &str) {
        if self.leave(channel) {
            self.send(unsubscribed(channel, code, reason));
        }
    }
}

/// `sub_expiring` for `channel`, whose token expires at `at`.
pub(super) fn sub_expiring(channel: &str, now: Instant, at: Instant) -> ServerMessage {
    ServerMessage::SubExpiring(SubExpiring {
        channel: channel.to_owned(),
        expires_in_ms: millis_until(now, at),
    })
}
