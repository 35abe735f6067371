//! Presence decisions: whether a subscription makes its subscriber a
//! member of the channel's presence, under which key, and whether the join
//! and the leave are announced on `$presence:CHANNEL`. The store and the
//! announcements are the driver's; the keys and the rules are here, so
//! every node keys members the same way.

use super::Node;

/// The prefix of the derived channels that carry joins and leaves.
pub const PRESENCE_CHANNEL_PREFIX: &str = "$presence:";

/// What a granted (or ended) subscription changes in the channel's
/// presence.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PresenceChange {
    /// The member's key in the channel's presence: one per subscription
    /// (`SESSION/SUBSCRIPTION`), so two tabs of one user are two members.
    pub key: String,
    /// Where the join or leave is announced (`$presence:CHANNEL`), if the
    /// channel's namespace announces them.
    pub announce_on: Option<String>,
}

/// The two announcements on `$presence:CHANNEL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PresenceKind {
    /// A member joined: `{"join": MEMBER}`.
    Join,
    /// A member left: `{"leave": MEMBER}`.
    Leave,
}

impl PresenceKind {
    /// The announcement's field name.
    pub fn as_str(self) -> &'static str {
        match self {
            PresenceKind::Join => "join",
            PresenceKind::Leave => "leave",
        }
    }
}

impl Node {
    /// Whether `channel`'s namespace keeps presence.
    pub fn tracks_presence(&self, channel: &str) -> bool {
        self.config.namespaces().options_for(channel).presence
    }

    /// What subscription `subscription` of session `session` to `channel`
    /// changes in presence when it is granted or ends: `None` when the
    /// channel keeps no presence.
    pub fn presence_change(
        &self,
        channel: &str,
        session: &str,
        subscription: u64,
    ) -> Option<PresenceChange> {
        let options = self.config.namespaces().options_for(channel);
        if !options.presence {
            return None;
        }
        Some(PresenceChange {
            key: format!("{session}/{subscription}"),
            announce_on: options
                .join_leave
                .then(|| format!("{PRESENCE_CHANNEL_PREFIX}{channel}")),
        })
    }
}
