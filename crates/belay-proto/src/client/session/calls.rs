//! The commands that ask the server for something: requests, the channels
//! the session wants, and the credentials it connects with.

use super::phase::Phase;
use super::{Call, Output, RequestError, Session, SubscribeError};
use crate::client::registry::RequestId;
use crate::message::{encoded_len, encoded_len_bound, ClientMessage, Request, MAX_FRAME_LEN};
use crate::time::Instant;

impl Session {
    /// Send a request. Refused with [`RequestError::NotReady`] (never sent)
    /// unless the protocol level is up (it is down while the session leaves
    /// a transport the server advised it to leave). The request settles exactly once, by
    /// [`Event::Response`](crate::client::event::Event::Response), no later than its deadline.
    pub fn request(&mut self, now: Instant, call: Call) -> Result<RequestId, RequestError> {
        let now = self.advance(now);
        let id = match &self.phase {
            Phase::Stopped => return Err(RequestError::Stopped),
            Phase::Open { id, .. } if !self.leaving => *id,
            _ => return Err(RequestError::NotReady),
        };
        let timeout = call.timeout.unwrap_or(self.config.request_timeout());
        let request = Request {
            id: self.registry.next_id().0,
            method: call.method,
            params: call.params,
            idem: call.idempotency_key,
            timeout_ms: Some(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)),
        };
        // The envelope (type, id, timeout_ms, field names) is under 128
        // bytes; only a request that may be near the limit is measured.
        let bound = encoded_len_bound(&request.params)
            .saturating_add(request.method.len().saturating_mul(6))
            .saturating_add(
                request
                    .idem
                    .as_ref()
                    .map_or(0, |k| k.len().saturating_mul(6)),
            )
            .saturating_add(128);
        let message = ClientMessage::Request(request);
        if bound > MAX_FRAME_LEN {
            let len = encoded_len(&message);
            if len > MAX_FRAME_LEN {
                return Err(RequestError::TooLarge {
                    len,
                    max: MAX_FRAME_LEN,
                });
            }
        }
        let request_id = self.registry.insert(now + timeout);
        self.push(Output::Transmit { id, message });
        Ok(request_id)
    }

    /// Want `channel`. It is subscribed now if the session is established,
    /// and on every (re)connection after, resuming from its position.
    pub fn subscribe(&mut self, now: Instant, channel: &str) -> Result<(), SubscribeError> {
        self.subscribe_with_token(now, channel, None)
    }

    /// Want `channel`, sending `token` with every subscribe of it: a
    /// subscription token, for channels whose server asks for one
    /// (spec/PROTOCOL.md §5.2).
    pub fn subscribe_with_token(
        &mut self,
        now: Instant,
        channel: &str,
        token: Option<String>,
    ) -> Result<(), SubscribeError> {
        let now = self.advance(now);
        if matches!(self.phase, Phase::Stopped) {
            return Err(SubscribeError::Stopped);
        }
        let mut out = Vec::new();
        if !self
            .subscriptions
            .add_with_token(now, channel, token, &mut out)
        {
            return Err(SubscribeError::AlreadySubscribed(channel.to_owned()));
        }
        self.apply_subscription_outputs(out);
        self.refresh_readiness(now);
        Ok(())
    }

    /// Send `token` with the next subscribes of `channel` (a renewed
    /// subscription token: after a reconnect, the server checks it again).
    pub fn set_subscription_token(
        &mut self,
        channel: &str,
        token: Option<String>,
    ) -> Result<(), SubscribeError> {
        if self.subscriptions.set_token(channel, token) {
            Ok(())
        } else {
            Err(SubscribeError::NotSubscribed(channel.to_owned()))
        }
    }

    /// Use the subscription token `token` for `channel` from now on: sent
    /// at once as `sub_refresh` while the channel is confirmed (the answer
    /// to [`Event::SubscriptionTokenWanted`]; the channel is not left), and
    /// with every later subscribe of it (spec/PROTOCOL.md §5.8).
    ///
    /// [`Event::SubscriptionTokenWanted`]: crate::Event::SubscriptionTokenWanted
    pub fn refresh_subscription_token(
        &mut self,
        now: Instant,
        channel: &str,
        token: String,
    ) -> Result<(), SubscribeError> {
        let _ = self.advance(now);
        let mut out = Vec::new();
        if !self.subscriptions.refresh_token(channel, token, &mut out) {
            return Err(SubscribeError::NotSubscribed(channel.to_owned()));
        }
        self.apply_subscription_outputs(out);
        Ok(())
    }

    /// Stop wanting `channel`.
    pub fn unsubscribe(&mut self, now: Instant, channel: &str) -> Result<(), SubscribeError> {
        let now = self.advance(now);
        if matches!(self.phase, Phase::Stopped) {
            return Err(SubscribeError::Stopped);
        }
        let mut out = Vec::new();
        if !self.subscriptions.remove(channel, &mut out) {
            return Err(SubscribeError::NotSubscribed(channel.to_owned()));
        }
        self.apply_subscription_outputs(out);
        self.refresh_readiness(now);
        Ok(())
    }

    /// Replace the credentials sent in `connect` from the next transport on
    /// (after [`HaltReason::AuthFailed`], refresh them, then `start`). The
    /// application's own token: nothing is known of its expiry, and a
    /// token provider is asked only once it is refused.
    ///
    /// [`HaltReason::AuthFailed`]: crate::client::event::HaltReason::AuthFailed
    pub fn set_token(&mut self, token: Option<String>) {
        self.config.set_token(token);
        self.credentials_replaced();
    }
}
