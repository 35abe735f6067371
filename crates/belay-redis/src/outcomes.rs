//! [`RedisOutcomes`]: the cluster's idempotency records, one Redis string
//! per key (`PREFIX.idem.LEN:SCOPE:KEY`, a belay-proto
//! [`SharedOutcome`] as its value), each changed by a small script that
//! compares before it writes, so only the execution holding a claim
//! completes, renews or releases it.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::commands::Commands;
use belay_proto::server::SharedOutcome;
use belay_server::broker::{OutcomeError, OutcomeFuture, OutcomeKey, OutcomeStore};
use redis::{Script, Value};
use tokio::time::timeout;

use crate::ledger::Ledger;

/// Take the key unless it holds a record. ARGV: the claim, its lease ms.
/// Returns the record found, or nil when the claim was set.
const CLAIM: &str = r"
local found = redis.call('GET', KEYS[1])
if found then return found end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
";

/// Replace the claim (or nothing: it lapsed and nobody took the key) with
/// the outcome. ARGV: the claim, the outcome, retention ms.
const COMPLETE: &str = r"
local found = redis.call('GET', KEYS[1])
if found and found ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
";

/// Extend the claim's lease. ARGV: the claim, the lease ms.
const RENEW: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
";

/// Delete the key if it holds exactly ARGV[1] (a claim being released);
/// with ARGV[1] empty, if it holds an outcome (`D|` or `T|`: evicting one
/// this node wrote, never someone's claim).
const FORGET: &str = r"
local found = redis.call('GET', KEYS[1])
if not found then return 0 end
local kind = string.sub(found, 1, 2)
if found == ARGV[1] or (ARGV[1] == '' and (kind == 'D|' or kind == 'T|')) then
  return redis.call('DEL', KEYS[1])
end
return 0
";

/// Idempotency records in Redis, shared by every node on it.
pub(crate) struct RedisOutcomes {
    commands: Commands,
    prefix: String,
    command_timeout: Duration,
    claim: Script,
    complete: Script,
    renew: Script,
    forget: Script,
    ledger: Mutex<Ledger>,
}

impl RedisOutcomes {
    pub(crate) fn new(
        commands: Commands,
        prefix: &str,
        command_timeout: Duration,
        max_bytes: usize,
    ) -> Self {
        RedisOutcomes {
            commands,
            prefix: prefix.to_owned(),
            command_timeout,
            claim: Script::new(CLAIM),
            complete: Script::new(COMPLETE),
            renew: Script::new(RENEW),
            forget: Script::new(FORGET),
            ledger: Mutex::new(Ledger::new(max_bytes)),
        }
    }

    /// The Redis key of `key`: the scope's length first, so no two
    /// (scope, key) pairs share one.
    fn name(&self, key: &OutcomeKey) -> String {
        format!(
            "{}.idem.{}:{}:{}",
            self.prefix,
            key.scope.len(),
            key.scope,
            key.key
        )
    }

    /// Bytes this node's outcomes hold in Redis now (as counted).
    pub(crate) fn bytes(&self) -> usize {
        self.ledger
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .bytes()
    }
}

/// Run `script` on `name` with `args` within `limit`.
async fn invoke(
    mut commands: Commands,
    limit: Duration,
    script: &Script,
    name: &str,
    args: &[&[u8]],
) -> Result<Value, OutcomeError> {
    let mut call = script.prepare_invoke();
    call.key(name);
    for arg in args {
        call.arg(*arg);
    }
    match timeout(limit, call.invoke_async(&mut commands)).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(OutcomeError(error.to_string())),
        Err(_) => Err(OutcomeError("timed out".into())),
    }
}

/// A record as a script returned it: nil, or a string this encoding wrote.
fn record(value: Value) -> Result<Option<SharedOutcome>, OutcomeError> {
    let text = match value {
        Value::Nil | Value::Boolean(false) => return Ok(None),
        Value::BulkString(bytes) => String::from_utf8(bytes).ok(),
        Value::SimpleString(text) => Some(text),
        _ => None,
    };
    text.as_deref()
        .and_then(SharedOutcome::decode)
        .map(Some)
        .ok_or_else(|| OutcomeError("a key holds a value that is not an idempotency record".into()))
}

/// Spawn fire-and-forget work, unless the runtime is gone (a node shutting
/// down: its claims lapse with their leases).
fn spawn(work: impl std::future::Future<Output = ()> + Send + 'static) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(work);
    }
}

fn millis(duration: Duration) -> Vec<u8> {
    duration.as_millis().max(1).to_string().into_bytes()
}

/// The [`OutcomeStore`] of a [`RedisBroker`](crate::RedisBroker).
#[derive(Clone)]
pub(crate) struct SharedOutcomes(pub(crate) Arc<RedisOutcomes>);

impl OutcomeStore for SharedOutcomes {
    fn claim(
        &self,
        key: &OutcomeKey,
        claim: &SharedOutcome,
        lease: Duration,
    ) -> OutcomeFuture<Option<SharedOutcome>> {
        let store = Arc::clone(&self.0);
        let name = store.name(key);
        let claim = claim.encode();
        Box::pin(async move {
            let lease = millis(lease);
            let args: [&[u8]; 2] = [claim.as_bytes(), &lease];
            let found = invoke(
                store.commands.clone(),
                store.command_timeout,
                &store.claim,
                &name,
                &args,
            )
            .await?;
            record(found)
        })
    }

    fn look(&self, key: &OutcomeKey) -> OutcomeFuture<Option<SharedOutcome>> {
        let store = Arc::clone(&self.0);
        let name = store.name(key);
        Box::pin(async move {
            let mut commands = store.commands.clone();
            let get = redis::cmd("GET").arg(&name).to_owned();
            let found = match timeout(store.command_timeout, get.query_async(&mut commands)).await {
                Ok(Ok(value)) => value,
                Ok(Err(error)) => return Err(OutcomeError(error.to_string())),
                Err(_) => return Err(OutcomeError("timed out".into())),
            };
            record(found)
        })
    }

    fn complete(
        &self,
        key: &OutcomeKey,
        claim: &SharedOutcome,
        outcome: &SharedOutcome,
        retention: Duration,
    ) -> OutcomeFuture<()> {
        let store = Arc::clone(&self.0);
        let name = store.name(key);
        let (claim, outcome) = (claim.encode(), outcome.encode());
        Box::pin(async move {
            let kept = millis(retention);
            let args: [&[u8]; 3] = [claim.as_bytes(), outcome.as_bytes(), &kept];
            let stored = invoke(
                store.commands.clone(),
                store.command_timeout,
                &store.complete,
                &name,
                &args,
            )
            .await?;
            if stored == Value::Int(1) {
                let evicted = store
                    .ledger
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .record(Instant::now(), name, outcome.len(), retention);
                for old in evicted {
                    invoke(
                        store.commands.clone(),
                        store.command_timeout,
                        &store.forget,
                        &old,
                        &[b""],
                    )
                    .await?;
                }
            }
            Ok(())
        })
    }

    fn renew(&self, key: &OutcomeKey, claim: &SharedOutcome, lease: Duration) {
        let store = Arc::clone(&self.0);
        let name = store.name(key);
        let claim = claim.encode();
        spawn(async move {
            let lease = millis(lease);
            let args: [&[u8]; 2] = [claim.as_bytes(), &lease];
            let renewed = invoke(
                store.commands.clone(),
                store.command_timeout,
                &store.renew,
                &name,
                &args,
            )
            .await;
            if let Err(error) = renewed {
                tracing::warn!(%error, "idempotency claim not renewed");
            }
        });
    }

    fn release(&self, key: &OutcomeKey, claim: &SharedOutcome) {
        let store = Arc::clone(&self.0);
        let name = store.name(key);
        let claim = claim.encode();
        spawn(async move {
            let args: [&[u8]; 1] = [claim.as_bytes()];
            let forgot = invoke(
                store.commands.clone(),
                store.command_timeout,
                &store.forget,
                &name,
                &args,
            )
            .await;
            if let Err(error) = forgot {
                tracing::warn!(%error, "idempotency claim not released");
            }
        });
    }
}
