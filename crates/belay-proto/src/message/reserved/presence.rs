//! `$presence` and `$presence_stats` (spec/PROTOCOL.md §4.7): params
//! `{"channel": "...", "token"?: "..."}`; results `{"members": [...]}` and
//! `{"clients": N, "users": N}`.

use serde::{Deserialize, Serialize};

use crate::message::Payload;

/// `$presence` and `$presence_stats` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PresenceParams {
    /// The channel whose members are asked for.
    pub channel: String,
    /// A subscription token, for a channel that needs one to subscribe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

impl PresenceParams {
    /// Ask for `channel`'s members.
    pub fn new(channel: impl Into<String>) -> Self {
        PresenceParams {
            channel: channel.into(),
            token: None,
        }
    }
}

/// One member of a presence channel: one subscription.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PresenceMember {
    /// The subscriber's session id.
    pub client: String,
    /// Its authenticated user.
    pub user: String,
    /// What its credential said about the user, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<Payload>,
}

impl PresenceMember {
    /// A member.
    pub fn new(client: impl Into<String>, user: impl Into<String>, info: Option<Payload>) -> Self {
        PresenceMember {
            client: client.into(),
            user: user.into(),
            info,
        }
    }
}

/// `$presence` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PresenceMembers {
    /// Every member, one per subscription.
    pub members: Vec<PresenceMember>,
}

impl PresenceMembers {
    /// These members.
    pub fn new(members: Vec<PresenceMember>) -> Self {
        PresenceMembers { members }
    }
}

/// `$presence_stats` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PresenceStats {
    /// Distinct clients (sessions).
    pub clients: u64,
    /// Distinct users.
    pub users: u64,
}

impl PresenceStats {
    /// The counts of `members`: distinct session ids and distinct users.
    pub fn of(members: &[PresenceMember]) -> Self {
        let clients: std::collections::BTreeSet<&str> =
            members.iter().map(|m| m.client.as_str()).collect();
        let users: std::collections::BTreeSet<&str> =
            members.iter().map(|m| m.user.as_str()).collect();
        PresenceStats {
            clients: clients.len() as u64,
            users: users.len() as u64,
        }
    }
}
