//! [`RedisHostDirectory`]: the nodes' resident hosts shared through Redis
//! (belay-server's [`HostDirectory`]; docs/HOSTS.md, "Across nodes").
//!
//! One hash per host, `PREFIX.host.{HOST}` (one slot on a Redis Cluster):
//!
//! | field | value |
//! |---|---|
//! | `b` | the host's last heartbeat on any node (Redis `TIME`, ms) |
//! | `a.NODE` | until when (ms) a session on node `NODE` holds the host |
//! | `n.NODE` | until when node `NODE` needs the host |
//!
//! Each node renews its own fields every period for three periods
//! (`node_ttl`: one period is a third of it), so a dead node's fields lapse
//! on their own; readers skip (and delete) lapsed ones. The hash expires
//! `meta_ttl` after its last write. A host's answer to another node's call
//! goes over the control plane (`host.answer`) to every live node; only
//! the one that made the call takes it (call ids differ between nodes).

use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::Reply;
use belay_server::{DirectoryFuture, HostDirectory, Server, SharedHost};
use futures_util::future::join_all;
use redis::{Script, Value};
use serde_json::json;
use tokio::time::timeout;

use crate::broker::RedisBroker;
use crate::commands::Commands;
use crate::control::ControlPlane;

/// The control-plane method that hands a host's answer to the node whose
/// call it is; answers `true` when that node took it.
pub const HOST_ANSWER: &str = "host.answer";

/// Hosts renewed at once.
const RENEW_AT_ONCE: usize = 64;

/// Record a heartbeat (`ARGV[2]` = `1`) and read what the other nodes say.
/// KEYS: the host's hash. ARGV: this node, `1` to record a beat, the
/// hash's TTL ms. Returns `{beat age ms or -1, {the other nodes holding a
/// session of it}, needed elsewhere 0/1}`; lapsed fields are deleted on the
/// way.
const VIEW: &str = r"
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'b', now)
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
local all = redis.call('HGETALL', KEYS[1])
local age, holders, needed = -1, {}, 0
for i = 1, #all, 2 do
  local field, value = all[i], tonumber(all[i + 1]) or 0
  if field == 'b' then
    age = math.max(now - value, 0)
  else
    local kind, node = string.match(field, '^(%a)%.(.+)$')
    if value <= now then
      redis.call('HDEL', KEYS[1], field)
    elseif node ~= ARGV[1] then
      if kind == 'a' then table.insert(holders, node) elseif kind == 'n' then needed = 1 end
    end
  end
end
return {age, holders, needed}
";

/// This node's two fields of one host. KEYS: the host's hash. ARGV: this
/// node, `1` if a session here holds the host, `1` if this node needs it,
/// how long they last (ms), the hash's TTL ms. Only the host itself (its
/// heartbeat, its session) makes a hash: a node's need of a host no node
/// ever heard from (a client subscribed to a made-up id) writes nothing.
const RENEW: &str = r"
if ARGV[2] ~= '1' and redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local expires = now + tonumber(ARGV[4])
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'a.' .. ARGV[1], expires)
else
  redis.call('HDEL', KEYS[1], 'a.' .. ARGV[1])
end
if ARGV[3] == '1' then
  redis.call('HSET', KEYS[1], 'n.' .. ARGV[1], expires)
else
  redis.call('HDEL', KEYS[1], 'n.' .. ARGV[1])
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
end
return 1
";

/// The hosts of every node on one Redis.
pub(crate) struct RedisHostDirectory {
    commands: Commands,
    control: ControlPlane,
    prefix: String,
    period: Duration,
    command_timeout: Duration,
    key_ttl: Duration,
    view: Arc<Script>,
    renew: Arc<Script>,
}

impl RedisBroker {
    /// Share `server`'s resident hosts with every node on this Redis: a
    /// call reaches a host connected to any node, wakes it wherever it
    /// beats, and a node's death settles its calls `host_lost` on the
    /// calling nodes within `4 × node_ttl / 3 + command_timeout`
    /// (docs/HOSTS.md). [`RedisBroker::cluster_router`] calls it.
    pub fn serve_hosts(&self, server: &Server) {
        let taker = server.clone();
        self.control()
            .handle(HOST_ANSWER, move |body: serde_json::Value| {
                let taken = forwarded_answer(&body)
                    .is_some_and(|(host, call, reply)| taker.take_host_answer(&host, call, reply));
                async move { Ok(json!(taken)) }
            });
        let config = self.config();
        let directory = RedisHostDirectory {
            commands: self.commands().clone(),
            control: self.control().clone(),
            prefix: config.prefix.clone(),
            period: (config.node_ttl / 3).max(Duration::from_millis(10)),
            command_timeout: config.command_timeout,
            key_ttl: config.meta_ttl,
            view: Arc::new(Script::new(VIEW)),
            renew: Arc::new(Script::new(RENEW)),
        };
        server.set_host_directory(Arc::new(directory));
    }
}

/// `{host, call, reply}` of a `host.answer`.
fn forwarded_answer(body: &serde_json::Value) -> Option<(String, u64, Reply)> {
    let host = body["host"].as_str()?.to_owned();
    let call = body["call"].as_u64()?;
    let reply = serde_json::from_value(body["reply"].clone()).ok()?;
    Some((host, call, reply))
}

impl RedisHostDirectory {
    fn key(&self, host: &str) -> String {
        format!("{}.host.{{{host}}}", self.prefix)
    }

    fn millis(duration: Duration) -> u64 {
        u64::try_from(duration.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    fn read(&self, host: &str, beat: bool) -> DirectoryFuture<SharedHost> {
        let mut commands = self.commands.clone();
        let (script, key, node) = (
            Arc::clone(&self.view),
            self.key(host),
            self.control.node().to_owned(),
        );
        let (limit, key_ttl) = (self.command_timeout, Self::millis(self.key_ttl));
        Box::pin(async move {
            let mut call = script.prepare_invoke();
            call.key(&key)
                .arg(&node)
                .arg(if beat { "1" } else { "0" })
                .arg(key_ttl);
            let reply: Value = timeout(limit, call.invoke_async(&mut commands))
                .await
                .map_err(|_| "timed out".to_owned())?
                .map_err(|e| e.to_string())?;
            view_reply(&reply).ok_or_else(|| format!("unexpected reply {reply:?}"))
        })
    }
}

/// `{age, holders, needed}` as a [`SharedHost`].
fn view_reply(reply: &Value) -> Option<SharedHost> {
    let Value::Array(items) = reply else {
        return None;
    };
    let int = |v: &Value| match v {
        Value::Int(n) => Some(*n),
        _ => None,
    };
    match items.as_slice() {
        [age, Value::Array(holders), needed] => {
            let age = int(age)?;
            let holders = holders
                .iter()
                .map(|node| match node {
                    Value::BulkString(bytes) => std::str::from_utf8(bytes).ok().map(Arc::from),
                    _ => None,
                })
                .collect::<Option<Vec<Arc<str>>>>()?;
            Some(
                SharedHost::new(
                    u64::try_from(age).ok().map(Duration::from_millis),
                    false,
                    int(needed)? == 1,
                )
                .held_on(holders),
            )
        }
        _ => None,
    }
}

impl HostDirectory for RedisHostDirectory {
    fn period(&self) -> Duration {
        self.period
    }

    fn beat(&self, host: &str) -> DirectoryFuture<SharedHost> {
        self.read(host, true)
    }

    fn look_up(&self, host: &str) -> DirectoryFuture<SharedHost> {
        self.read(host, false)
    }

    fn renew(
        &self,
        held: Vec<Arc<str>>,
        needed: Vec<Arc<str>>,
        dropped: Vec<Arc<str>>,
    ) -> DirectoryFuture<()> {
        let mut hosts: Vec<(Arc<str>, bool, bool)> = Vec::new();
        for host in held.iter().chain(&needed).chain(&dropped) {
            if hosts.iter().any(|(h, _, _)| h == host) {
                continue;
            }
            hosts.push((
                Arc::clone(host),
                held.binary_search(host).is_ok(),
                needed.binary_search(host).is_ok(),
            ));
        }
        let (script, node, prefix) = (
            Arc::clone(&self.renew),
            self.control.node().to_owned(),
            self.prefix.clone(),
        );
        let commands = self.commands.clone();
        let (limit, lasts, key_ttl) = (
            self.command_timeout,
            Self::millis(self.period * 3),
            Self::millis(self.key_ttl),
        );
        Box::pin(async move {
            for chunk in hosts.chunks(RENEW_AT_ONCE) {
                let renewals = chunk.iter().map(|(host, held, needed)| {
                    let mut commands = commands.clone();
                    let mut call = script.prepare_invoke();
                    call.key(format!("{prefix}.host.{{{host}}}"))
                        .arg(&node)
                        .arg(if *held { "1" } else { "0" })
                        .arg(if *needed { "1" } else { "0" })
                        .arg(lasts)
                        .arg(key_ttl);
                    async move {
                        timeout(limit, call.invoke_async::<Value>(&mut commands))
                            .await
                            .map_err(|_| "timed out".to_owned())?
                            .map(|_| ())
                            .map_err(|e| e.to_string())
                    }
                });
                for done in join_all(renewals).await {
                    done?;
                }
            }
            Ok(())
        })
    }

    fn forward_answer(&self, host: &str, call: u64, reply: Reply) -> DirectoryFuture<bool> {
        let control = self.control.clone();
        let limit = self.command_timeout;
        let body = json!({ "host": host, "call": call, "reply": reply });
        Box::pin(async move {
            let nodes = control.alive().await.map_err(|e| e.to_string())?;
            let asks = nodes
                .iter()
                .filter(|node| node.as_str() != control.node())
                .map(|node| control.request(node, HOST_ANSWER, body.clone(), limit));
            Ok(join_all(asks)
                .await
                .into_iter()
                .any(|answer| matches!(answer, Ok(serde_json::Value::Bool(true)))))
        })
    }
}
