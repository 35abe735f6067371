//! [`Commands`]: the node's command connection to the Redis primary,
//! replaced (asking the [`Endpoint`] again) when it fails.
//!
//! Every connection learns the primary's `run_id` when it is made: a
//! different process (a replica promoted by a failover, or Redis restarted
//! from its disk) may lack the last writes the old one acknowledged, so
//! the channel scripts start a new epoch when the `run_id` a channel was
//! last written under changes (see `scripts.rs`).
//!
//! On a Redis Cluster the connection is redis-rs's cluster connection: it
//! sends each command to the primary of its key's slot and follows
//! `MOVED`, `ASK` and failovers itself. Which primary runs a script is then
//! not known here, so the scripts learn the writer's `run_id` themselves
//! ([`CLUSTER_WRITER`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisError, RedisFuture, Value};

use crate::endpoint::Endpoint;

/// How soon after a failed attempt another connection is tried: callers
/// in between are refused at once, so a burst of publications while Redis
/// is away asks the Sentinels once, not once each.
const RETRY_AFTER: Duration = Duration::from_millis(100);

/// The node's command connection. Cheap to clone; usable as a
/// [`ConnectionLike`] (each call runs on the current primary).
#[derive(Clone)]
pub(crate) struct Commands {
    shared: Arc<Shared>,
}

struct Shared {
    endpoint: Arc<Endpoint>,
    config: AsyncConnectionConfig,
    command_timeout: Duration,
    current: Mutex<Current>,
    /// Held while connecting, so one caller connects and the rest wait.
    connecting: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Current {
    primary: Option<Primary>,
    made: u64,
    failed_at: Option<tokio::time::Instant>,
    last_error: String,
}

/// The writer the scripts are given on a Redis Cluster: "ask the node
/// that runs the script" (see `scripts.rs`).
pub(crate) const CLUSTER_WRITER: &str = "@";

/// One connection to one primary process (or, on a cluster, to each
/// primary).
#[derive(Clone)]
pub(crate) struct Primary {
    pub(crate) connection: Connection,
    /// The primary's `run_id` (empty when Redis would not say: an ACL user
    /// without `INFO`; [`CLUSTER_WRITER`] on a cluster).
    pub(crate) run_id: Arc<str>,
    generation: u64,
}

/// A connection to one Redis, or to a Redis Cluster.
#[derive(Clone)]
pub(crate) enum Connection {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
        }
    }
}

impl Commands {
    /// Connect now (the first connection must succeed: the broker does not
    /// start without Redis).
    pub(crate) async fn connect(
        endpoint: Arc<Endpoint>,
        command_timeout: Duration,
    ) -> Result<Commands, String> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(command_timeout))
            .set_response_timeout(Some(command_timeout));
        let commands = Commands {
            shared: Arc::new(Shared {
                endpoint,
                config,
                command_timeout,
                current: Mutex::new(Current::default()),
                connecting: tokio::sync::Mutex::new(()),
            }),
        };
        commands.primary().await.map_err(|e| e.to_string())?;
        Ok(commands)
    }

    fn current(&self) -> std::sync::MutexGuard<'_, Current> {
        self.shared
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The connection to the primary, made now if there is none.
    pub(crate) async fn primary(&self) -> redis::RedisResult<Primary> {
        if let Some(primary) = self.current().primary.clone() {
            return Ok(primary);
        }
        let _connecting = self.shared.connecting.lock().await;
        {
            let current = self.current();
            if let Some(primary) = current.primary.clone() {
                return Ok(primary);
            }
            if let Some(at) = current.failed_at {
                if at.elapsed() < RETRY_AFTER {
                    return Err(unavailable(&current.last_error));
                }
            }
        }
        let made = tokio::time::timeout(self.shared.command_timeout, self.open()).await;
        let mut current = self.current();
        match made {
            Ok(Ok((connection, run_id))) => {
                current.made += 1;
                let primary = Primary {
                    connection,
                    run_id: run_id.into(),
                    generation: current.made,
                };
                current.primary = Some(primary.clone());
                current.failed_at = None;
                Ok(primary)
            }
            Ok(Err(error)) => {
                current.failed_at = Some(tokio::time::Instant::now());
                current.last_error = error.to_string();
                Err(error)
            }
            Err(_) => {
                current.failed_at = Some(tokio::time::Instant::now());
                current.last_error = "connecting timed out".into();
                Err(unavailable(&current.last_error))
            }
        }
    }

    async fn open(&self) -> redis::RedisResult<(Connection, String)> {
        if let Some(seeds) = self.shared.endpoint.cluster() {
            let client = seeds.client(self.shared.command_timeout, None)?;
            let connection = client.get_async_connection().await?;
            return Ok((Connection::Cluster(connection), CLUSTER_WRITER.into()));
        }
        let client = self.shared.endpoint.primary().await?;
        let mut connection = client
            .get_multiplexed_async_connection_with_config(&self.shared.config)
            .await?;
        let info: redis::RedisResult<String> = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut connection)
            .await;
        let run_id = match info {
            Ok(info) => info
                .lines()
                .find_map(|line| line.strip_prefix("run_id:"))
                .map(|id| id.trim().to_owned())
                .unwrap_or_default(),
            Err(error) if error.is_io_error() || error.is_connection_dropped() => {
                return Err(error)
            }
            Err(error) => {
                tracing::warn!(
                    %error,
                    "Redis would not say its run_id (INFO): a failover or restart that loses writes is not detected"
                );
                String::new()
            }
        };
        Ok((Connection::Single(connection), run_id))
    }

    /// `error` came from `primary`: forget that connection if the error
    /// means it is gone or no longer a primary, so the next call connects
    /// again (and asks the Sentinels again).
    pub(crate) fn failed(&self, primary: &Primary, error: &RedisError) {
        if !ends_connection(error) {
            return;
        }
        let mut current = self.current();
        if current
            .primary
            .as_ref()
            .is_some_and(|p| p.generation == primary.generation)
        {
            tracing::warn!(%error, "Redis command connection lost; reconnecting");
            current.primary = None;
        }
    }

    /// Run `command` on `primary` (the one a script's arguments were made
    /// for), within the command timeout.
    pub(crate) async fn query<T: redis::FromRedisValue>(
        &self,
        primary: &Primary,
        command: &Cmd,
    ) -> Result<T, String> {
        let mut connection = primary.connection.clone();
        self.settle(primary, command.query_async(&mut connection))
            .await
    }

    /// [`Commands::query`] on the primary serving `key`'s slot: on a
    /// cluster a keyless command (`WAIT`) would go to any node.
    pub(crate) async fn query_at<T: redis::FromRedisValue>(
        &self,
        primary: &Primary,
        command: &Cmd,
        key: &str,
    ) -> Result<T, String> {
        let Connection::Cluster(connection) = &primary.connection else {
            return self.query(primary, command).await;
        };
        let mut connection = connection.clone();
        let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::with_key(
            key,
            SlotAddr::Master,
        )));
        let reply = async {
            let value = connection.route_command(command.clone(), route).await?;
            T::from_redis_value(value).map_err(RedisError::from)
        };
        self.settle(primary, reply).await
    }

    /// Run `call` on `primary`, within the command timeout.
    pub(crate) async fn invoke(
        &self,
        primary: &Primary,
        call: &redis::ScriptInvocation<'_>,
    ) -> Result<Value, String> {
        let mut connection = primary.connection.clone();
        self.settle(primary, call.invoke_async(&mut connection))
            .await
    }

    /// `reply` from `primary` within the command timeout; a failure that
    /// ends the connection (or no answer in time) makes the next call
    /// connect again.
    async fn settle<T>(
        &self,
        primary: &Primary,
        reply: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, String> {
        match tokio::time::timeout(self.shared.command_timeout, reply).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => {
                self.failed(primary, &error);
                Err(error.to_string())
            }
            Err(_) => {
                self.forget(primary);
                Err("timed out".into())
            }
        }
    }

    /// A primary that did not answer in time is replaced too: it may be
    /// stopped, or cut off from us.
    fn forget(&self, primary: &Primary) {
        let mut current = self.current();
        if current
            .primary
            .as_ref()
            .is_some_and(|p| p.generation == primary.generation)
        {
            tracing::warn!("Redis command connection did not answer in time; reconnecting");
            current.primary = None;
        }
    }
}

/// Whether `error` means the connection is no use any more: gone, or to a
/// server that is no longer the primary.
fn ends_connection(error: &RedisError) -> bool {
    error.is_io_error()
        || error.is_connection_dropped()
        || error.is_unrecoverable_error()
        || error.is_timeout()
        || matches!(error.code(), Some("READONLY" | "MASTERDOWN" | "LOADING"))
        || error.to_string().contains("READONLY")
}

fn unavailable(reason: &str) -> RedisError {
    RedisError::from((
        redis::ErrorKind::Io,
        "Redis primary unavailable",
        reason.to_owned(),
    ))
}

impl ConnectionLike for Commands {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let primary = self.primary().await?;
            let mut connection = primary.connection.clone();
            let reply = connection.req_packed_command(cmd).await;
            if let Err(error) = &reply {
                self.failed(&primary, error);
            }
            reply
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let primary = self.primary().await?;
            let mut connection = primary.connection.clone();
            let reply = connection
                .req_packed_commands(pipeline, offset, count)
                .await;
            if let Err(error) = &reply {
                self.failed(&primary, error);
            }
            reply
        })
    }

    fn get_db(&self) -> i64 {
        self.current()
            .primary
            .as_ref()
            .map_or(0, |p| p.connection.get_db())
    }
}
