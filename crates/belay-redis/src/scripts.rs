//! The Lua scripts every channel operation runs, and their replies.
//! Each runs atomically in Redis, so offsets never skip or repeat within an
//! epoch, whichever node publishes.

use redis::{Script, Value};

/// The channel's epoch (KEYS[1] the meta hash, KEYS[2] the Stream), or a
/// new one, `fresh`. A new epoch starts when the meta hash is missing (its
/// history is gone: never made, expired, or lost by Redis) or when the
/// channel was last written by another Redis process than `writer` (the
/// `run_id` of the primary this runs on, empty: not checked): a replica
/// promoted by a failover, or Redis restarted from its disk, may lack the
/// last publications the old process acknowledged and sent live, and its
/// offsets would count them again. Any leftover Stream of the old epoch is
/// dropped, so entry ids keep matching offsets. Every script starts with it.
///
/// On a Redis Cluster (`writer` is `@`: the caller does not know which
/// node runs the script) the writer is this node, `RUN_ID/NODE_ID`. A
/// channel last written by another node that this node sees as a healthy
/// primary came here by resharding (`MIGRATE` moves keys whole), so it
/// keeps its epoch. One last written by a node that failed, is a replica
/// now, or is this node restarted (same node id, new `run_id`) may lack
/// acknowledged writes: a new epoch, as above.
const CURRENT_EPOCH: &str = r"
local function cluster_writer()
  local info = redis.call('INFO', 'server')
  return string.match(info, 'run_id:(%x+)') .. '/' .. redis.call('CLUSTER', 'MYID')
end

local function healthy_primary(node)
  for line in string.gmatch(redis.call('CLUSTER', 'NODES'), '[^\n]+') do
    local id, flags = string.match(line, '^(%x+) %S+ (%S+)')
    if id == node then
      return string.find(flags, 'master', 1, true) ~= nil and string.find(flags, 'fail', 1, true) == nil
    end
  end
  return false
end

local function current_epoch(fresh, writer)
  local meta = redis.call('HMGET', KEYS[1], 'e', 'w')
  local epoch = meta[1]
  if writer == '@' then
    writer = cluster_writer()
    if epoch and meta[2] and meta[2] ~= writer then
      local node = string.match(meta[2], '/(%x+)$')
      if node and node ~= string.match(writer, '/(%x+)$') and healthy_primary(node) then
        redis.call('HSET', KEYS[1], 'w', writer)
        meta[2] = writer
      end
    end
  end
  if epoch and writer ~= '' and meta[2] ~= writer then
    if meta[2] then
      epoch = false
    else
      redis.call('HSET', KEYS[1], 'w', writer)
    end
  end
  if not epoch then
    epoch = fresh
    redis.call('HSET', KEYS[1], 'e', epoch, 's', 0, 'b', 0, 'c', 0)
    if writer ~= '' then
      redis.call('HSET', KEYS[1], 'w', writer)
    else
      redis.call('HDEL', KEYS[1], 'w')
    end
    redis.call('DEL', KEYS[2])
  end
  return epoch
end

-- The top a reader may see: with durable publications (`durable` is '1')
-- only what replicas confirmed (`c`, raised by the confirm script), so no
-- reader is handed a publication a failover could still take back.
local function visible_top(durable)
  local top = tonumber(redis.call('HGET', KEYS[1], 's'))
  if durable == '1' then
    top = math.min(top, tonumber(redis.call('HGET', KEYS[1], 'c') or '0'))
  end
  return top
end
";

/// Publish. KEYS: meta, history. ARGV: live channel, data, history length
/// (0: none kept), history TTL s, meta TTL s, an epoch to start if there
/// is none, the most bytes of data the history holds, the writer's
/// `run_id` ([`CURRENT_EPOCH`]; `@` on a cluster), `1` to publish live now
/// (`0`: the caller publishes once replicas confirmed), the command that
/// publishes live (`PUBLISH`; `SPUBLISH` on a cluster). Returns `{offset, epoch}`.
///
/// A missing meta hash starts a new epoch ([`CURRENT_EPOCH`]). The meta
/// hash's `b` counts the bytes of data in the Stream (a Stream that
/// expired took them along); the oldest entries are deleted one by one
/// until the new one fits in both the length and the bytes, so what is
/// held stays consecutive up to the top. A publication larger than the
/// byte bound alone empties the Stream.
const PUBLISH: &str = r"
local epoch = current_epoch(ARGV[6], ARGV[8])
local offset = redis.call('HINCRBY', KEYS[1], 's', 1)
redis.call('EXPIRE', KEYS[1], ARGV[5])
if ARGV[3] ~= '0' then
  local max_len = tonumber(ARGV[3])
  local max_bytes = tonumber(ARGV[7])
  local size = string.len(ARGV[2])
  local held = 0
  if redis.call('EXISTS', KEYS[2]) == 1 then
    held = tonumber(redis.call('HGET', KEYS[1], 'b') or '0')
  end
  if size > max_bytes then
    redis.call('DEL', KEYS[2])
    held = 0
  else
    local len = redis.call('XLEN', KEYS[2])
    while len > 0 and (len >= max_len or held + size > max_bytes) do
      local oldest = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)[1]
      -- fields: d, DATA, t, MS
      held = held - string.len(oldest[2][2])
      redis.call('XDEL', KEYS[2], oldest[1])
      len = len - 1
    end
    local now = redis.call('TIME')
    local ms = now[1] * 1000 + math.floor(now[2] / 1000)
    redis.call('XADD', KEYS[2], offset .. '-0', 'd', ARGV[2], 't', ms)
    redis.call('EXPIRE', KEYS[2], ARGV[4])
    held = held + size
  end
  redis.call('HSET', KEYS[1], 'b', math.max(held, 0))
end
if ARGV[9] == '1' then
  redis.call(ARGV[10], ARGV[1], offset .. ':' .. epoch .. ':' .. ARGV[2])
end
return {offset, epoch}
";

/// Read the position and what is held after a given offset. KEYS: meta,
/// history. ARGV: the offset to read after (empty: read nothing), meta TTL
/// s, an epoch to start if there is none, the writer's `run_id`, `1` for
/// durable publications (read only what replicas confirmed). Returns
/// `{epoch, top, now_ms, entries}`, entries as `XRANGE` gives them.
const HISTORY: &str = r"
local epoch = current_epoch(ARGV[3], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[2])
local top = visible_top(ARGV[5])
local now = redis.call('TIME')
local ms = now[1] * 1000 + math.floor(now[2] / 1000)
local entries = {}
if ARGV[1] ~= '' then
  local after = tonumber(ARGV[1])
  if after < top then
    entries = redis.call('XRANGE', KEYS[2], (after + 1) .. '-0', top .. '-0', 'COUNT', top - after)
  end
end
return {epoch, top, ms, entries}
";

/// A page of history, for a read outside a subscription (the HTTP API's).
/// KEYS: meta, history. ARGV: the position's epoch and offset (both empty:
/// none), `1` to read newest first, the most entries, the most bytes of
/// data (the first entry always goes in), the history's age in ms, meta
/// TTL s, an epoch to start if there is none, the entry id to start at
/// (inclusive; empty: read nothing), the writer's `run_id`, and `1` for
/// durable publications (read only what replicas confirmed). Returns
/// `{epoch, top, entries, truncated}`: nothing is read when the position is of another epoch or
/// beyond the top (the caller refuses it). Entries are in time order, so
/// the expired ones are the oldest: skipped going forward, the end going
/// back.
const READ: &str = r"
local epoch = current_epoch(ARGV[8], ARGV[10])
redis.call('EXPIRE', KEYS[1], ARGV[7])
local top = visible_top(ARGV[11])
local limit = tonumber(ARGV[4])
local entries = {}
local truncated = 0
local reading = ARGV[9] ~= '' and limit > 0
if ARGV[1] ~= '' and (ARGV[1] ~= epoch or tonumber(ARGV[2]) > top) then
  reading = false
end
if reading then
  local now = redis.call('TIME')
  local ms = now[1] * 1000 + math.floor(now[2] / 1000)
  local max_age = tonumber(ARGV[6])
  local budget = tonumber(ARGV[5])
  local reverse = ARGV[3] == '1'
  local cursor = ARGV[9]
  local bytes = 0
  local done = false
  while not done do
    local batch
    if reverse then
      batch = redis.call('XREVRANGE', KEYS[2], cursor, '-', 'COUNT', limit - #entries)
    else
      batch = redis.call('XRANGE', KEYS[2], cursor, '+', 'COUNT', limit - #entries)
    end
    if #batch == 0 then
      break
    end
    for _, entry in ipairs(batch) do
      -- Not confirmed yet: past the end going forward, skipped going back.
      local beyond = tonumber(string.match(entry[1], '^%d+')) > top
      if beyond and not reverse then
        done = true
        break
      end
      if not beyond then
        local fields = entry[2]
        local data, t = '', 0
        for i = 1, #fields, 2 do
          if fields[i] == 'd' then
            data = fields[i + 1]
          elseif fields[i] == 't' then
            t = tonumber(fields[i + 1])
          end
        end
        if ms - t >= max_age then
          if reverse then
            done = true
            break
          end
        elseif #entries > 0 and bytes + #data > budget then
          truncated = 1
          done = true
          break
        else
          bytes = bytes + #data
          entries[#entries + 1] = entry
          if #entries >= limit then
            done = true
            break
          end
        end
      end
    end
    cursor = '(' .. batch[#batch][1]
  end
end
return {epoch, top, entries, truncated}
";

/// A durable publication confirmed by the replicas: raise the channel's
/// confirmed top (`c`) to it, so readers may see it, and publish live, in
/// offset order, every publication up to it not yet published. KEYS: meta,
/// history. ARGV: the live channel, the offset, the epoch, the data, the
/// command that publishes live (`PUBLISH`; `SPUBLISH` on a cluster).
///
/// Confirmations come out of order (publishers on other connections and
/// nodes), but one replication stream carries every write in order, so a
/// later offset confirmed means every earlier one is on the replicas too:
/// they go live first (read back from the Stream), the confirmed top only
/// rises, and a confirmation at or below it has nothing left to do. So
/// subscribers see offsets in order, not gaps that would send them to the
/// history. A publication of another epoch (the channel started a new one
/// meanwhile) is not published.
const CONFIRM: &str = r"
if redis.call('HGET', KEYS[1], 'e') ~= ARGV[3] then
  return 0
end
local confirmed = tonumber(redis.call('HGET', KEYS[1], 'c') or '0')
local offset = tonumber(ARGV[2])
if offset <= confirmed then
  return 0
end
if offset > confirmed + 1 then
  local earlier = redis.call('XRANGE', KEYS[2], (confirmed + 1) .. '-0', (offset - 1) .. '-0')
  for _, entry in ipairs(earlier) do
    local fields = entry[2]
    for i = 1, #fields, 2 do
      if fields[i] == 'd' then
        local id = string.match(entry[1], '^%d+')
        redis.call(ARGV[5], ARGV[1], id .. ':' .. ARGV[3] .. ':' .. fields[i + 1])
      end
    end
  end
end
redis.call('HSET', KEYS[1], 'c', offset)
redis.call(ARGV[5], ARGV[1], offset .. ':' .. ARGV[3] .. ':' .. ARGV[4])
return 1
";

/// The scripts, loaded once per broker (sent by hash, and by body when a
/// restarted Redis no longer knows them).
#[derive(Debug)]
pub(crate) struct Scripts {
    pub(crate) publish: Script,
    pub(crate) history: Script,
    pub(crate) read: Script,
    pub(crate) confirm: Script,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        Scripts {
            publish: Script::new(&format!("{CURRENT_EPOCH}{PUBLISH}")),
            history: Script::new(&format!("{CURRENT_EPOCH}{HISTORY}")),
            read: Script::new(&format!("{CURRENT_EPOCH}{READ}")),
            confirm: Script::new(CONFIRM),
        }
    }
}

/// A reply Redis should not have given (a script of another version, a
/// key of another type): treated like Redis being unavailable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected reply from Redis: {0}")]
pub(crate) struct UnexpectedReply(pub(crate) &'static str);

/// One held publication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeldEntry {
    pub(crate) offset: u64,
    pub(crate) published_ms: u64,
    pub(crate) data: String,
}

/// The history script's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HistoryReply {
    pub(crate) epoch: String,
    pub(crate) top: u64,
    pub(crate) now_ms: u64,
    pub(crate) entries: Vec<HeldEntry>,
}

pub(crate) fn publish_reply(value: Value) -> Result<(u64, String), UnexpectedReply> {
    let Value::Array(items) = value else {
        return Err(UnexpectedReply("publish: not an array"));
    };
    match items.as_slice() {
        [offset, epoch] => Ok((
            int(offset).ok_or(UnexpectedReply("publish: offset"))?,
            text(epoch).ok_or(UnexpectedReply("publish: epoch"))?,
        )),
        _ => Err(UnexpectedReply("publish: length")),
    }
}

pub(crate) fn history_reply(value: Value) -> Result<HistoryReply, UnexpectedReply> {
    let Value::Array(items) = value else {
        return Err(UnexpectedReply("history: not an array"));
    };
    let [epoch, top, now_ms, entries] = items.as_slice() else {
        return Err(UnexpectedReply("history: length"));
    };
    let Value::Array(entries) = entries else {
        return Err(UnexpectedReply("history: entries"));
    };
    Ok(HistoryReply {
        epoch: text(epoch).ok_or(UnexpectedReply("history: epoch"))?,
        top: int(top).ok_or(UnexpectedReply("history: top"))?,
        now_ms: int(now_ms).ok_or(UnexpectedReply("history: time"))?,
        entries: entries
            .iter()
            .map(entry)
            .collect::<Option<Vec<_>>>()
            .ok_or(UnexpectedReply("history: entry"))?,
    })
}

/// The read script's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadReply {
    pub(crate) epoch: String,
    pub(crate) top: u64,
    pub(crate) entries: Vec<HeldEntry>,
    pub(crate) truncated: bool,
}

pub(crate) fn read_reply(value: Value) -> Result<ReadReply, UnexpectedReply> {
    let Value::Array(items) = value else {
        return Err(UnexpectedReply("read: not an array"));
    };
    let [epoch, top, entries, truncated] = items.as_slice() else {
        return Err(UnexpectedReply("read: length"));
    };
    let Value::Array(entries) = entries else {
        return Err(UnexpectedReply("read: entries"));
    };
    Ok(ReadReply {
        epoch: text(epoch).ok_or(UnexpectedReply("read: epoch"))?,
        top: int(top).ok_or(UnexpectedReply("read: top"))?,
        entries: entries
            .iter()
            .map(entry)
            .collect::<Option<Vec<_>>>()
            .ok_or(UnexpectedReply("read: entry"))?,
        truncated: int(truncated).ok_or(UnexpectedReply("read: truncated"))? == 1,
    })
}

/// `[id, [field, value, …]]` with id `N-0` and fields `d` and `t`.
fn entry(value: &Value) -> Option<HeldEntry> {
    let Value::Array(parts) = value else {
        return None;
    };
    let [id, Value::Array(fields)] = parts.as_slice() else {
        return None;
    };
    let id = text(id)?;
    let offset = id.strip_suffix("-0")?.parse().ok()?;
    let (mut data, mut published_ms) = (None, None);
    for pair in fields.chunks(2) {
        let [name, value] = pair else { return None };
        match text(name)?.as_str() {
            "d" => data = Some(text(value)?),
            "t" => published_ms = text(value)?.parse().ok(),
            _ => {}
        }
    }
    Some(HeldEntry {
        offset,
        published_ms: published_ms?,
        data: data?,
    })
}

fn int(value: &Value) -> Option<u64> {
    match value {
        Value::Int(n) => u64::try_from(*n).ok(),
        other => text(other)?.parse().ok(),
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn a_history_reply_parses_its_entries() {
        let reply = Value::Array(vec![
            bulk("e1"),
            Value::Int(4),
            Value::Int(1_000),
            Value::Array(vec![Value::Array(vec![
                bulk("4-0"),
                Value::Array(vec![bulk("d"), bulk("{\"n\":4}"), bulk("t"), bulk("990")]),
            ])]),
        ]);
        let parsed = history_reply(reply).unwrap();
        assert_eq!((parsed.epoch.as_str(), parsed.top), ("e1", 4));
        assert_eq!(
            parsed.entries,
            [HeldEntry {
                offset: 4,
                published_ms: 990,
                data: "{\"n\":4}".into()
            }]
        );
    }

    #[test]
    fn an_unexpected_reply_is_an_error_not_a_panic() {
        assert!(history_reply(Value::Nil).is_err());
        assert!(history_reply(Value::Array(vec![bulk("e")])).is_err());
        assert!(publish_reply(Value::Array(vec![bulk("x"), bulk("e")])).is_err());
        let bad_entry = Value::Array(vec![
            bulk("e"),
            Value::Int(1),
            Value::Int(1),
            Value::Array(vec![Value::Array(vec![bulk("1-5"), Value::Array(vec![])])]),
        ]);
        assert!(history_reply(bad_entry).is_err());
    }
}
