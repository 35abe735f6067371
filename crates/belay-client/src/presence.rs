//! [`Client::presence`] and [`Client::presence_stats`]: the `$presence` and
//! `$presence_stats` requests (spec/PROTOCOL.md §4.7), with their answers
//! typed.

use belay_proto::message::{self, PresenceMembers, PresenceParams};
use belay_proto::server::{PRESENCE_METHOD, PRESENCE_STATS_METHOD};
use serde_json::Value;

use crate::{reserved_params, Client, RequestError};

/// One subscriber of a presence channel.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PresenceMember {
    /// The subscriber's session id.
    pub client: String,
    /// Its authenticated user.
    pub user: String,
    /// What its credential said about the user, if anything.
    pub info: Option<Value>,
}

/// How many are subscribed to a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PresenceStats {
    /// Distinct clients (sessions).
    pub clients: u64,
    /// Distinct users.
    pub users: u64,
}

/// Why [`Client::presence`] (or [`Client::presence_stats`]) has no answer to give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PresenceError {
    /// The request failed (`bad_request` for a channel without presence,
    /// `forbidden`, `unavailable`, or the connection's own failures).
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The server's answer was not `{"members": [...]}`.
    #[error("malformed presence answer: {0}")]
    Malformed(String),
}

impl Client {
    /// Who is subscribed to `channel` now: one member per subscription.
    pub async fn presence(&self, channel: &str) -> Result<Vec<PresenceMember>, PresenceError> {
        let params = reserved_params(&PresenceParams::new(channel));
        let answer = self.request(PRESENCE_METHOD, params).await?;
        let answer: PresenceMembers = answer
            .parse()
            .map_err(|e| PresenceError::Malformed(e.to_string()))?;
        Ok(answer.members.into_iter().map(member).collect())
    }

    /// How many distinct clients and users are subscribed to `channel`
    /// now, without listing them; allowed and refused as
    /// [`presence`](Self::presence).
    ///
    /// ```no_run
    /// # async fn run(client: belay_client::Client) -> Result<(), belay_client::PresenceError> {
    /// let stats = client.presence_stats("room:1").await?;
    /// println!("{} people in {} tabs", stats.users, stats.clients);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn presence_stats(&self, channel: &str) -> Result<PresenceStats, PresenceError> {
        let params = reserved_params(&PresenceParams::new(channel));
        let answer = self.request(PRESENCE_STATS_METHOD, params).await?;
        let stats: message::PresenceStats = answer
            .parse()
            .map_err(|e| PresenceError::Malformed(e.to_string()))?;
        Ok(PresenceStats {
            clients: stats.clients,
            users: stats.users,
        })
    }
}

fn member(member: message::PresenceMember) -> PresenceMember {
    PresenceMember {
        client: member.client,
        user: member.user,
        info: member.info,
    }
}
