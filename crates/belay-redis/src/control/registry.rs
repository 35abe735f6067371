//! Which nodes are alive: one hash, `PREFIX.nodes`, a field per node whose
//! value is `EXPIRES_MS|RATE|OPEN` (its admission rate per second, 0 when
//! it plans alone, and its open connections). Each node renews its field
//! every heartbeat and hears back the cluster's totals;
//! a node that stops (killed, cut off from Redis) expires after the node
//! TTL, and listing drops expired fields. Times are Redis's own clock, so
//! the nodes' clocks need not agree.

use redis::{Script, Value};

/// Renew a node's field and total the live nodes' loads. KEYS: the hash.
/// ARGV: node id, TTL ms, admission rate, open connections, the most
/// admissions per second one node counts for and the most connections
/// (another node's field is read, never trusted: one that claims more
/// counts as that much). Returns `{nodes, rate, open}` over the live nodes
/// that gave a rate (the rate as a string: Lua numbers reach Rust as
/// integers).
pub(crate) const BEAT: &str = r"
local now = redis.call('TIME')
local ms = now[1] * 1000 + math.floor(now[2] / 1000)
redis.call('HSET', KEYS[1], ARGV[1], (ms + tonumber(ARGV[2])) .. '|' .. ARGV[3] .. '|' .. ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local nodes, rate, open = 0, 0, 0
local all = redis.call('HGETALL', KEYS[1])
for i = 2, #all, 2 do
  local expires, r, o = string.match(all[i], '^(%d+)|([%d%.]+)|(%d+)$')
  if expires and tonumber(expires) > ms and tonumber(r) and tonumber(r) > 0 then
    nodes = nodes + 1
    rate = rate + math.min(tonumber(r), tonumber(ARGV[5]))
    open = open + math.min(tonumber(o), tonumber(ARGV[6]))
  end
end
return {nodes, tostring(rate), open}
";

/// The ids of live nodes, dropping expired fields. KEYS: the hash.
pub(crate) const ALIVE: &str = r"
local now = redis.call('TIME')
local ms = now[1] * 1000 + math.floor(now[2] / 1000)
local all = redis.call('HGETALL', KEYS[1])
local alive = {}
for i = 1, #all, 2 do
  local expires = tonumber(string.match(all[i + 1], '^(%d+)|'))
  if expires and expires > ms then
    table.insert(alive, all[i])
  else
    redis.call('HDEL', KEYS[1], all[i])
  end
end
return alive
";

/// Forget a node at once (it stops on purpose). KEYS: the hash. ARGV: id.
pub(crate) const LEAVE: &str = r"
return redis.call('HDEL', KEYS[1], ARGV[1])
";

pub(crate) struct RegistryScripts {
    pub(crate) beat: Script,
    pub(crate) alive: Script,
    pub(crate) leave: Script,
}

impl RegistryScripts {
    pub(crate) fn new() -> Self {
        RegistryScripts {
            beat: Script::new(BEAT),
            alive: Script::new(ALIVE),
            leave: Script::new(LEAVE),
        }
    }
}

/// Node ids from [`ALIVE`]'s reply, sorted.
pub(crate) fn alive_reply(value: Value) -> Option<Vec<String>> {
    let Value::Array(items) = value else {
        return None;
    };
    let mut ids = items
        .into_iter()
        .map(|item| match item {
            Value::BulkString(bytes) => String::from_utf8(bytes).ok(),
            Value::SimpleString(text) => Some(text),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    ids.sort();
    Some(ids)
}
