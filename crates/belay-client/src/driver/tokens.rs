//! The driver's side of the token lifecycle (spec/PROTOCOL.md §2.8, §5.8):
//! the core asks (`TokenWanted`, `SubscriptionTokenWanted`), the
//! application's provider is called in a task of its own (a fetch never holds
//! up the connection), bounded by the connect timeout, and its answer comes
//! back to the core as an input.

use super::Driver;
use crate::{SubscriptionTokenProvider, TokenError, TokenFuture, TokenProvider};

/// The application's token providers.
pub(crate) struct Providers {
    pub(crate) token: Option<TokenProvider>,
    pub(crate) subscription_token: Option<SubscriptionTokenProvider>,
}

/// A provider's answer: for the connection (`None`) or a channel.
pub(super) type Answer = (Option<String>, Result<String, TokenError>);

impl Driver {
    /// Call the connection's provider (`channel` `None`) or the
    /// subscription-token provider for `channel`, if the application gave one.
    pub(super) fn ask(&mut self, channel: Option<String>) {
        let call: TokenFuture = match (&channel, &self.providers) {
            (
                None,
                Providers {
                    token: Some(provider),
                    ..
                },
            ) => provider(),
            (
                Some(channel),
                Providers {
                    subscription_token: Some(provider),
                    ..
                },
            ) => provider(channel.clone()),
            _ => return,
        };
        let (answers, limit) = (
            self.tokens_tx.clone(),
            self.session.config().connect_timeout(),
        );
        self.tasks.spawn(async move {
            let answer = tokio::time::timeout(limit, call)
                .await
                .unwrap_or(Err(TokenError::Unavailable));
            let _ = answers.send((channel, answer));
        });
    }

    /// A provider answered: hand it to the core.
    pub(super) fn answered(&mut self, channel: Option<String>, answer: Result<String, TokenError>) {
        let now = self.now();
        match (channel, answer) {
            (None, Ok(token)) => self.session.refresh_token(now, token),
            (None, Err(error)) => self.session.token_failed(now, error),
            (Some(channel), Ok(token)) => {
                // A channel left meanwhile needs no token.
                let _ = self
                    .session
                    .refresh_subscription_token(now, &channel, token);
            }
            // The token expires; the channel is subscribed again.
            (Some(_), Err(_)) => {}
        }
    }
}
