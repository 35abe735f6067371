//! [`Client::presence`] and [`Client::presence_stats`]: the `$presence` and
//! `$presence_stats` requests (spec/PROTOCOL.md §4.7), with their answers
//! typed.

use serde_json::{json, Value};

use crate::{Client, RequestError};

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
        let answer = self
            .request("$presence", json!({ "channel": channel }))
            .await?;
        let value: Value = serde_json::from_str(answer.get())
            .map_err(|e| PresenceError::Malformed(e.to_string()))?;
        let members = value
            .get("members")
            .and_then(Value::as_array)
            .ok_or_else(|| PresenceError::Malformed("no members array".into()))?;
        members.iter().map(member).collect()
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
        let answer = self
            .request("$presence_stats", json!({ "channel": channel }))
            .await?;
        let value: Value = serde_json::from_str(answer.get())
            .map_err(|e| PresenceError::Malformed(e.to_string()))?;
        let count = |field: &str| {
            value
                .get(field)
                .and_then(Value::as_u64)
                .ok_or_else(|| PresenceError::Malformed(format!("no {field} count")))
        };
        Ok(PresenceStats {
            clients: count("clients")?,
            users: count("users")?,
        })
    }
}

fn member(value: &Value) -> Result<PresenceMember, PresenceError> {
    let text = |field: &str| {
        value
            .get(field)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| PresenceError::Malformed(format!("a member without {field}")))
    };
    Ok(PresenceMember {
        client: text("client")?,
        user: text("user")?,
        info: value.get("info").cloned(),
    })
}
