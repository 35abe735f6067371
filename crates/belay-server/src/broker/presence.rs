//! Presence: who is subscribed to a channel whose namespace tracks it
//! ([`ChannelOptions::presence`](belay_proto::server::ChannelOptions)).
//!
//! One [`Member`] per subscription, keyed by the connection's session and
//! the subscription's id; added when the subscription is granted, removed
//! when it ends (unsubscribe, close, reap, drain). A broker that serves
//! several nodes shares its store ([`Broker::presence`](super::Broker::presence));
//! otherwise each node keeps its members in memory ([`MemoryPresence`]),
//! bounded in bytes server-wide: a member beyond the budget is not recorded
//! ([`PresenceError::Full`]; the subscription itself is still granted, the
//! member is missing from queries and no join is published for it).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use belay_proto::message::RawJson;

/// One subscriber as presence reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Member {
    /// The session id of the subscriber's connection.
    pub client: String,
    /// The authenticated user (`Principal::user`).
    pub user: String,
    /// What the credential said about the user (`Principal::info`).
    pub info: Option<RawJson>,
}

impl Member {
    /// A member.
    pub fn new(client: impl Into<String>, user: impl Into<String>, info: Option<RawJson>) -> Self {
        Member {
            client: client.into(),
            user: user.into(),
            info,
        }
    }

    /// `{"client":…,"user":…,"info":…}` (no `info` when absent).
    pub fn to_json(&self) -> serde_json::Value {
        let mut object = serde_json::Map::new();
        object.insert("client".into(), self.client.clone().into());
        object.insert("user".into(), self.user.clone().into());
        if let Some(info) = &self.info {
            let value = serde_json::from_str(info.get()).unwrap_or(serde_json::Value::Null);
            object.insert("info".into(), value);
        }
        serde_json::Value::Object(object)
    }

    /// Bytes this member costs a store (its strings plus a fixed overhead).
    pub fn cost(&self, channel: &str, key: &str) -> usize {
        96 + channel.len()
            + key.len()
            + self.client.len()
            + self.user.len()
            + self.info.as_ref().map_or(0, |info| info.get().len())
    }
}

/// Why presence could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PresenceError {
    /// The store holds as many bytes of members as it may.
    #[error("presence store full")]
    Full,
    /// The store cannot be reached now.
    #[error("presence unavailable: {0}")]
    Unavailable(String),
    /// The channel's namespace does not track presence.
    #[error("channel {0:?} does not track presence")]
    NotTracked(String),
}

/// A presence operation on its way.
pub type PresenceFuture<T> = Pin<Box<dyn Future<Output = Result<T, PresenceError>> + Send>>;

/// Where members are kept.
pub trait PresenceStore: Send + Sync + 'static {
    /// Record `member` under `key` on `channel` (replacing what was there).
    fn add(&self, channel: &str, key: &str, member: Member) -> PresenceFuture<()>;
    /// Forget `key` on `channel`; the member that was there, if any.
    fn remove(&self, channel: &str, key: &str) -> PresenceFuture<Option<Member>>;
    /// The channel's members now.
    fn members(&self, channel: &str) -> PresenceFuture<Vec<Member>>;
}

/// Members in this process's memory, at most `max_bytes` of them.
#[derive(Debug)]
pub struct MemoryPresence {
    max_bytes: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    bytes: usize,
    channels: HashMap<String, HashMap<String, Member>>,
}

impl MemoryPresence {
    /// An empty store holding at most `max_bytes` of members.
    pub fn new(max_bytes: usize) -> Self {
        MemoryPresence {
            max_bytes,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Bytes held now.
    pub fn bytes(&self) -> usize {
        self.state().bytes
    }

    fn add_now(&self, channel: &str, key: &str, member: Member) -> Result<(), PresenceError> {
        let cost = member.cost(channel, key);
        let mut state = self.state();
        let old = state
            .channels
            .get(channel)
            .and_then(|members| members.get(key))
            .map_or(0, |old| old.cost(channel, key));
        if state.bytes - old + cost > self.max_bytes {
            return Err(PresenceError::Full);
        }
        state.bytes = state.bytes - old + cost;
        state
            .channels
            .entry(channel.to_owned())
            .or_default()
            .insert(key.to_owned(), member);
        Ok(())
    }

    fn remove_now(&self, channel: &str, key: &str) -> Option<Member> {
        let mut state = self.state();
        let members = state.channels.get_mut(channel)?;
        let member = members.remove(key)?;
        if members.is_empty() {
            state.channels.remove(channel);
        }
        state.bytes -= member.cost(channel, key);
        Some(member)
    }

    fn members_now(&self, channel: &str) -> Vec<Member> {
        let state = self.state();
        let mut members: Vec<Member> = state
            .channels
            .get(channel)
            .map(|members| members.values().cloned().collect())
            .unwrap_or_default();
        members.sort_by(|a, b| a.client.cmp(&b.client));
        members
    }
}

impl PresenceStore for MemoryPresence {
    fn add(&self, channel: &str, key: &str, member: Member) -> PresenceFuture<()> {
        let answer = self.add_now(channel, key, member);
        Box::pin(std::future::ready(answer))
    }

    fn remove(&self, channel: &str, key: &str) -> PresenceFuture<Option<Member>> {
        let answer = Ok(self.remove_now(channel, key));
        Box::pin(std::future::ready(answer))
    }

    fn members(&self, channel: &str) -> PresenceFuture<Vec<Member>> {
        let answer = Ok(self.members_now(channel));
        Box::pin(std::future::ready(answer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_budget_refuses_a_member_and_frees_on_remove() {
        let member = Member::new("s1", "alice", None);
        let cost = member.cost("c", "k1");
        let store = MemoryPresence::new(cost * 2);
        assert_eq!(store.add_now("c", "k1", member.clone()), Ok(()));
        assert_eq!(store.add_now("c", "k2", member.clone()), Ok(()));
        assert_eq!(
            store.add_now("c", "k3", member.clone()),
            Err(PresenceError::Full)
        );
        assert_eq!(store.members_now("c").len(), 2);
        assert!(store.remove_now("c", "k1").is_some());
        assert_eq!(store.add_now("c", "k3", member), Ok(()));
        assert_eq!(store.bytes(), cost * 2);
    }
}
