//! [`RedisPresence`]: every node's presence members in Redis, per channel
//! a hash of entries (`PREFIX.presence.h.{CHANNEL}`: key → member JSON) and
//! a sorted set of their expiry times (`PREFIX.presence.z.{CHANNEL}`: key →
//! unix ms), both hash-tagged by channel. The node that added an entry
//! refreshes it every `presence_ttl / 3`; a node that dies (even `kill -9`)
//! stops refreshing, and its entries are dropped by the first read after
//! they expire, within `presence_ttl`. Reads run one script that removes
//! the expired entries and returns the rest.
//!
//! This node remembers its own entries (to refresh them), bounded by
//! `RedisConfig::presence_max_bytes`: an entry beyond it is refused
//! ([`PresenceError::Full`]). With Redis unreachable an add or remove fails
//! (the subscription is not refused; the entry is written again by the next
//! refresh, or expires), and a read answers [`PresenceError::Unavailable`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::commands::Commands;
use belay_proto::message::RawJson;
use belay_server::broker::{Member, PresenceError, PresenceFuture, PresenceStore};
use redis::Script;
use tokio::time::timeout;

/// Drop expired entries, return the rest (flat key, value list).
/// KEYS: hash, zset. ARGV: now ms.
const READ: &str = r"
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
for _, key in ipairs(expired) do redis.call('HDEL', KEYS[1], key) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
return redis.call('HGETALL', KEYS[1])
";

/// Write (or refresh) an entry. KEYS: hash, zset. ARGV: key, member JSON,
/// expiry ms, key ttl ms.
const WRITE: &str = r"
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1
";

/// Remove an entry. KEYS: hash, zset. ARGV: key.
const REMOVE: &str = r"
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('HDEL', KEYS[1], ARGV[1])
";

/// One entry this node wrote.
struct Own {
    member: Member,
    json: String,
}

/// This node's entries by (channel, key), and the bytes they cost.
type OwnEntries = (usize, HashMap<(String, String), Own>);

/// Presence in Redis, shared by every node on it.
pub(crate) struct RedisPresence {
    commands: Commands,
    prefix: String,
    command_timeout: Duration,
    ttl: Duration,
    max_bytes: usize,
    read: Script,
    write: Script,
    remove: Script,
    own: Mutex<OwnEntries>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn unavailable(error: impl std::fmt::Display) -> PresenceError {
    PresenceError::Unavailable(error.to_string())
}

impl RedisPresence {
    pub(crate) fn start(
        commands: Commands,
        prefix: &str,
        command_timeout: Duration,
        ttl: Duration,
        max_bytes: usize,
    ) -> Arc<Self> {
        let presence = Arc::new(RedisPresence {
            commands,
            prefix: prefix.to_owned(),
            command_timeout,
            ttl,
            max_bytes,
            read: Script::new(READ),
            write: Script::new(WRITE),
            remove: Script::new(REMOVE),
            own: Mutex::new((0, HashMap::new())),
        });
        tokio::spawn(refresh(Arc::downgrade(&presence), ttl / 3));
        presence
    }

    fn names(&self, channel: &str) -> (String, String) {
        (
            format!("{}.presence.h.{{{channel}}}", self.prefix),
            format!("{}.presence.z.{{{channel}}}", self.prefix),
        )
    }

    fn own(&self) -> std::sync::MutexGuard<'_, OwnEntries> {
        self.own.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn write_entry(&self, channel: &str, key: &str, json: &str) -> Result<(), PresenceError> {
        let (hash, zset) = self.names(channel);
        let ttl_ms = self.ttl.as_millis() as u64;
        let mut call = self.write.prepare_invoke();
        call.key(&hash)
            .key(&zset)
            .arg(key)
            .arg(json)
            .arg(now_ms() + ttl_ms)
            .arg(ttl_ms * 2);
        let mut commands = self.commands.clone();
        timeout(
            self.command_timeout,
            call.invoke_async::<i64>(&mut commands),
        )
        .await
        .map_err(|_| unavailable("timed out"))?
        .map_err(unavailable)?;
        Ok(())
    }

    /// Record `member` among this node's entries (now, in the caller's
    /// order, so a later remove always sees it): its JSON, or `Full`.
    fn remember(&self, channel: &str, key: &str, member: Member) -> Result<String, PresenceError> {
        let json = member.to_json().to_string();
        let mut own = self.own();
        let cost = member.cost(channel, key);
        let old = own
            .1
            .get(&(channel.to_owned(), key.to_owned()))
            .map_or(0, |old| old.member.cost(channel, key));
        if own.0 - old + cost > self.max_bytes {
            return Err(PresenceError::Full);
        }
        own.0 = own.0 - old + cost;
        let entry = Own {
            member,
            json: json.clone(),
        };
        own.1.insert((channel.to_owned(), key.to_owned()), entry);
        Ok(json)
    }

    /// Forget one of this node's entries (now): it is no longer refreshed.
    fn forget(&self, channel: &str, key: &str) -> Option<Member> {
        let mut own = self.own();
        let removed = own.1.remove(&(channel.to_owned(), key.to_owned()))?;
        own.0 -= removed.member.cost(channel, key);
        Some(removed.member)
    }

    async fn delete_entry(&self, channel: &str, key: &str) -> Result<(), PresenceError> {
        let (hash, zset) = self.names(channel);
        let mut call = self.remove.prepare_invoke();
        call.key(&hash).key(&zset).arg(key);
        let mut commands = self.commands.clone();
        timeout(
            self.command_timeout,
            call.invoke_async::<i64>(&mut commands),
        )
        .await
        .map_err(|_| unavailable("timed out"))?
        .map_err(unavailable)?;
        Ok(())
    }

    async fn read_members(&self, channel: String) -> Result<Vec<Member>, PresenceError> {
        let (hash, zset) = self.names(&channel);
        let mut call = self.read.prepare_invoke();
        call.key(&hash).key(&zset).arg(now_ms());
        let mut commands = self.commands.clone();
        let flat: Vec<String> = timeout(self.command_timeout, call.invoke_async(&mut commands))
            .await
            .map_err(|_| unavailable("timed out"))?
            .map_err(unavailable)?;
        let mut members: Vec<Member> = flat
            .chunks(2)
            .filter_map(|pair| pair.get(1))
            .filter_map(|json| parse_member(json))
            .collect();
        members.sort_by(|a, b| a.client.cmp(&b.client));
        Ok(members)
    }
}

/// A member as stored (what [`Member::to_json`] wrote); `None` for
/// anything else.
fn parse_member(json: &str) -> Option<Member> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let client = value.get("client")?.as_str()?;
    let user = value.get("user")?.as_str()?;
    let info = value.get("info").map(RawJson::from_value);
    Some(Member::new(client, user, info))
}

/// Every `every`, write this node's entries again with a new expiry.
async fn refresh(presence: Weak<RedisPresence>, every: Duration) {
    let mut tick = tokio::time::interval(every.max(Duration::from_millis(10)));
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(presence) = presence.upgrade() else {
            return;
        };
        let entries: Vec<(String, String, String)> = presence
            .own()
            .1
            .iter()
            .map(|((channel, key), own)| (channel.clone(), key.clone(), own.json.clone()))
            .collect();
        for (channel, key, json) in entries {
            // Unreachable: try again next time (entries may expire meanwhile).
            let _ = presence.write_entry(&channel, &key, &json).await;
        }
    }
}

/// The broker's presence seam: a handle on the shared store.
pub(crate) struct SharedPresence(pub(crate) Arc<RedisPresence>);

impl PresenceStore for SharedPresence {
    // This node's record of its entries changes at once, in the caller's
    // order; the Redis writes follow. Should a delete overtake its write,
    // the entry is no longer refreshed and expires within the TTL.
    fn add(&self, channel: &str, key: &str, member: Member) -> PresenceFuture<()> {
        let store = Arc::clone(&self.0);
        let (channel, key) = (channel.to_owned(), key.to_owned());
        let remembered = store.remember(&channel, &key, member);
        Box::pin(async move { store.write_entry(&channel, &key, &remembered?).await })
    }

    fn remove(&self, channel: &str, key: &str) -> PresenceFuture<Option<Member>> {
        let store = Arc::clone(&self.0);
        let (channel, key) = (channel.to_owned(), key.to_owned());
        let mine = store.forget(&channel, &key);
        Box::pin(async move {
            store.delete_entry(&channel, &key).await?;
            Ok(mine)
        })
    }

    fn members(&self, channel: &str) -> PresenceFuture<Vec<Member>> {
        let store = Arc::clone(&self.0);
        let channel = channel.to_owned();
        Box::pin(async move { store.read_members(channel).await })
    }
}
