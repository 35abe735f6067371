//! [`RedisBroker`]: the [`Broker`] of a cluster, on Redis.

use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::{Publication, RawJson, StreamPosition};
use belay_server::broker::{
    Broker, ChannelList, ChannelQuery, ChannelTally, Delivery, HistoryFuture, HistoryQuery,
    Joining, ListError, LiveSender, OutcomeStore, PublishError, Publishing, SubscribeError,
    SubscriberId,
};
use tokio::time::timeout;

use crate::commands::{Commands, Primary};
use crate::config::RedisConfig;
use crate::control::{control_names, ControlPlane};
use crate::durable::Durable;
use crate::endpoint::Endpoint;
use crate::hub::Hub;
use crate::keys::ChannelKeys;
use crate::outcomes::{RedisOutcomes, SharedOutcomes};
use crate::presence::{RedisPresence, SharedPresence};
use crate::pubsub::Link;
use crate::scripts::{history_reply, publish_reply, HeldEntry, HistoryReply, Scripts};

/// Why a [`RedisBroker`] could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL is not a Redis URL this broker can use.
    #[error("invalid Redis URL: {0}")]
    InvalidUrl(String),
    /// Redis did not answer (refused, timed out, or rejected the
    /// credentials).
    #[error("cannot reach Redis: {0}")]
    Unreachable(String),
    /// Settings that do not go together (a Redis Cluster found through
    /// Sentinels).
    #[error("unsupported Redis setup: {0}")]
    Unsupported(String),
}

/// Channels, history and live fan-out shared by every node on one Redis.
///
/// Publishing runs one script that takes the next offset, appends to the
/// channel's Stream and publishes on its PUB/SUB name; subscribing joins
/// the node's hub, subscribes the PUB/SUB name, reads the history after the
/// client's position, and merges by offset (see the crate docs). Cheap to
/// clone.
#[derive(Clone)]
pub struct RedisBroker {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    commands: Commands,
    /// Under [`RedisConfig::wait_replicas`]: the connections publications
    /// wait for replicas on.
    durable: Option<Durable>,
    scripts: Scripts,
    pub(crate) hub: Arc<Hub>,
    pub(crate) link: Link,
    outcomes: Arc<RedisOutcomes>,
    presence: Arc<RedisPresence>,
    control: ControlPlane,
    /// Permits for joins reading their history ([`RedisConfig::joins_in_flight`]).
    pub(crate) history_reads: tokio::sync::Semaphore,
    config: RedisConfig,
}

impl std::fmt::Debug for RedisBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBroker")
            .field("prefix", &self.inner.config.prefix)
            .field("channels", &self.inner.hub.len())
            .finish_non_exhaustive()
    }
}

impl RedisBroker {
    /// Connect to Redis as `config` says. Fails when Redis cannot be
    /// reached now; once started, the broker reconnects by itself (and
    /// refuses publications and subscriptions while Redis is away).
    pub async fn connect(config: RedisConfig) -> Result<RedisBroker, ConnectError> {
        let endpoint = Arc::new(Endpoint::new(&config)?);
        let commands = Commands::connect(Arc::clone(&endpoint), config.command_timeout)
            .await
            .map_err(ConnectError::Unreachable)?;
        let hub = Arc::new(Hub::new(config.join_buffer));
        let node = config.node_id.clone().unwrap_or_else(new_epoch);
        let (to_control, inbox) = tokio::sync::mpsc::channel(1_024);
        let (link, listening) = Link::start(
            Arc::clone(&endpoint),
            Arc::clone(&hub),
            &config.prefix,
            (config.command_timeout, config.probe_every),
            (control_names(&config.prefix, &node), to_control),
        );
        // Started means reachable on PUB/SUB too, control names included.
        timeout(config.command_timeout, listening)
            .await
            .map_err(|_| ConnectError::Unreachable("no PUB/SUB connection in time".into()))?
            .map_err(|_| ConnectError::Unreachable("PUB/SUB task ended".into()))?;
        let control = ControlPlane::start(
            node,
            &config.prefix,
            commands.clone(),
            config.command_timeout,
            config.node_ttl,
            inbox,
        );
        control.announce(config.node_ttl).await;
        let outcomes = Arc::new(RedisOutcomes::new(
            commands.clone(),
            &config.prefix,
            config.command_timeout,
            config.outcome_max_bytes,
        ));
        let presence = RedisPresence::start(
            commands.clone(),
            &config.prefix,
            config.command_timeout,
            config.presence_ttl,
            config.presence_max_bytes,
        );
        let every = config.position_check_every;
        let durable = match config.wait_replicas {
            0 => None,
            _ => Some(
                Durable::connect(&endpoint, &config)
                    .await
                    .map_err(ConnectError::Unreachable)?,
            ),
        };
        let inner = Arc::new(Inner {
            durable,
            commands,
            outcomes,
            presence,
            control,
            scripts: Scripts::new(),
            hub,
            link,
            history_reads: tokio::sync::Semaphore::new(config.joins_in_flight.max(1)),
            config,
        });
        tokio::spawn(crate::position_check::run(Arc::downgrade(&inner), every));
        Ok(RedisBroker { inner })
    }
}

/// Held publications of `channel` as the frames subscribers get.
pub(crate) fn deliveries(
    channel: &str,
    epoch: &str,
    entries: Vec<HeldEntry>,
) -> Result<Vec<Delivery>, String> {
    entries
        .into_iter()
        .map(|entry| {
            let data = RawJson::from_json(entry.data)
                .map_err(|_| "a publication in Redis is not JSON".to_string())?;
            Ok(Delivery::encode(&Publication {
                channel: channel.to_owned(),
                epoch: epoch.to_owned(),
                offset: entry.offset,
                data,
            }))
        })
        .collect()
}

/// A fresh epoch: the time in nanoseconds and a process-wide counter, hex.
pub(crate) fn new_epoch() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default();
    format!("{nanos:x}{:x}", NEXT.fetch_add(1, Ordering::Relaxed) & 0xff)
}

impl Inner {
    /// The primary to run a channel script on, and the writer to name in
    /// it: the primary's `run_id`, or none under
    /// [`RedisConfig::wait_replicas`] (a failover then loses nothing a
    /// client saw, so epochs are kept).
    pub(crate) async fn primary(&self, what: &str) -> Result<(Primary, Arc<str>), String> {
        let primary = self
            .commands
            .primary()
            .await
            .map_err(|e| format!("Redis {what}: {e}"))?;
        let writer = if self.config.wait_replicas > 0 {
            Arc::from("")
        } else {
            Arc::clone(&primary.run_id)
        };
        Ok((primary, writer))
    }

    /// Run `call` on `primary` within the command timeout; why not, as the
    /// reason a client is told (`what`: which operation).
    pub(crate) async fn run(
        &self,
        what: &str,
        primary: &Primary,
        call: &redis::ScriptInvocation<'_>,
    ) -> Result<redis::Value, String> {
        self.run_on(&self.commands, what, primary, call).await
    }

    /// [`Inner::run`] on a connection of `commands` other than the node's
    /// main one.
    async fn run_on(
        &self,
        commands: &Commands,
        what: &str,
        primary: &Primary,
        call: &redis::ScriptInvocation<'_>,
    ) -> Result<redis::Value, String> {
        commands
            .invoke(primary, call)
            .await
            .map_err(|error| format!("Redis {what}: {error}"))
    }

    /// The command the scripts publish live with: sharded on a cluster.
    pub(crate) fn live_command(&self) -> &'static str {
        if self.config.is_cluster() {
            "SPUBLISH"
        } else {
            "PUBLISH"
        }
    }

    /// `1` when publications are durable: readers see only what replicas
    /// confirmed (the scripts' `visible_top`).
    pub(crate) fn durable_flag(&self) -> &'static str {
        if self.durable.is_some() {
            "1"
        } else {
            "0"
        }
    }

    /// The scripts.
    pub(crate) fn scripts(&self) -> &Scripts {
        &self.scripts
    }

    /// How Redis is reached and what is kept there.
    pub(crate) fn config(&self) -> &RedisConfig {
        &self.config
    }

    /// The prefix of every key and PUB/SUB name.
    pub(crate) fn prefix(&self) -> &str {
        &self.config.prefix
    }

    /// `channel`'s history length and age: its namespace's, capped by
    /// the configured ones.
    pub(crate) fn history_bounds(&self, channel: &str) -> (usize, Duration) {
        self.config.namespaces.history_bounds(
            channel,
            self.config.history_len,
            self.config.history_age,
        )
    }

    async fn publish(&self, channel: String, data: RawJson) -> Result<Publication, PublishError> {
        if let Some(durable) = &self.durable {
            return durable.publish(self, channel, data).await;
        }
        let (primary, writer) = self
            .primary("publish")
            .await
            .map_err(PublishError::Unavailable)?;
        let (offset, epoch) = self
            .append(&self.commands, &primary, &writer, &channel, &data, true)
            .await
            .map_err(PublishError::Unavailable)?;
        Ok(Publication {
            channel,
            epoch,
            offset,
            data,
        })
    }

    /// Run the publish script for `data` on `primary`: `{offset, epoch}`.
    /// `live`: publish it on PUB/SUB too (otherwise the caller does, once
    /// replicas have it).
    pub(crate) async fn append(
        &self,
        commands: &Commands,
        primary: &Primary,
        writer: &str,
        channel: &str,
        data: &RawJson,
        live: bool,
    ) -> Result<(u64, String), String> {
        let keys = ChannelKeys::new(&self.config.prefix, channel, self.config.is_cluster());
        let (history_len, history_age) = self.history_bounds(channel);
        let mut call = self.scripts.publish.prepare_invoke();
        call.key(&keys.meta)
            .key(&keys.history)
            .arg(&keys.live)
            .arg(data.get())
            .arg(history_len)
            .arg(history_age.as_secs().max(1))
            .arg(self.config.meta_ttl.as_secs().max(1))
            .arg(new_epoch())
            .arg(self.config.history_max_bytes)
            .arg(writer)
            .arg(if live { "1" } else { "0" })
            .arg(self.live_command());
        // A publication whose answer is lost may or may not have been
        // appended: the caller is told it failed, and a retry publishes it
        // again (the application's own idempotency decides).
        let reply = self.run_on(commands, "publish", primary, &call).await?;
        publish_reply(reply).map_err(|e| e.to_string())
    }

    pub(crate) async fn history(
        &self,
        channel: &str,
        after: Option<u64>,
    ) -> Result<HistoryReply, String> {
        let keys = ChannelKeys::new(&self.config.prefix, channel, self.config.is_cluster());
        let mut call = self.scripts.history.prepare_invoke();
        call.key(&keys.meta)
            .key(&keys.history)
            .arg(after.map(|a| a.to_string()).unwrap_or_default())
            .arg(self.config.meta_ttl.as_secs().max(1))
            .arg(new_epoch());
        let (primary, writer) = self.primary("history").await?;
        call.arg(&*writer).arg(self.durable_flag());
        let reply = self.run("history", &primary, &call).await?;
        history_reply(reply).map_err(|e| e.to_string())
    }

    fn leave(&self, channel: &str, subscriber: SubscriberId) {
        self.hub.leave(channel, subscriber, |interest| {
            self.link.follow(channel, &interest)
        });
    }
}

impl Broker for RedisBroker {
    fn publish(&self, channel: &str, data: RawJson) -> Publishing {
        let inner = Arc::clone(&self.inner);
        let channel = channel.to_owned();
        Box::pin(async move { inner.publish(channel, data).await })
    }

    fn subscribe(
        &self,
        channel: &str,
        since: Option<&StreamPosition>,
        live: LiveSender,
    ) -> Joining {
        let inner = Arc::clone(&self.inner);
        // Asked of the PUB/SUB connection on every join (it answers at once
        // for a name it holds, without asking Redis), in the hub's order: a
        // join never goes live on a name an earlier leave is about to
        // unsubscribe.
        let joined = inner.hub.join(live.clone(), inner.config.max_channels, || {
            inner.link.subscribe(channel)
        });
        let Some(confirmed) = joined else {
            return Joining::Now(Err(SubscribeError::TooManyChannels));
        };
        let since = since.cloned();
        tokio::spawn(async move {
            if let Err(reason) = inner.join(&live, since.as_ref(), confirmed).await {
                inner.leave(live.channel(), live.id());
                live.refuse(SubscribeError::Unavailable(reason));
            }
        });
        Joining::Later
    }

    fn unsubscribe(&self, channel: &str, subscriber: SubscriberId) {
        self.inner.leave(channel, subscriber);
    }

    fn channels(&self) -> Option<usize> {
        Some(self.inner.hub.len())
    }

    fn history(&self, channel: &str, query: HistoryQuery) -> HistoryFuture {
        let inner = Arc::clone(&self.inner);
        let channel = channel.to_owned();
        Box::pin(async move { inner.read(channel, query).await })
    }

    /// This node's subscribers only (its hub); every node's: ask each
    /// (belay-standalone's cluster API does, over the control plane).
    fn list_channels(&self, query: &ChannelQuery) -> Result<ChannelList, ListError> {
        let mut tally = ChannelTally::new(query);
        self.inner.hub.tally(&mut tally);
        Ok(tally.finish())
    }

    fn outcomes(&self) -> Option<Arc<dyn OutcomeStore>> {
        Some(Arc::new(SharedOutcomes(Arc::clone(&self.inner.outcomes))))
    }

    fn presence(&self) -> Option<Arc<dyn belay_server::broker::PresenceStore>> {
        Some(Arc::new(SharedPresence(Arc::clone(&self.inner.presence))))
    }
}

impl RedisBroker {
    /// This node's end of the cluster's node-to-node messages.
    pub fn control(&self) -> &ControlPlane {
        &self.inner.control
    }

    /// The node's command connection.
    pub(crate) fn commands(&self) -> &Commands {
        &self.inner.commands
    }

    /// How Redis is reached and what is kept there.
    pub(crate) fn config(&self) -> &RedisConfig {
        &self.inner.config
    }

    /// Bytes of idempotent outcomes this node holds in Redis now (bounded
    /// by [`RedisConfig::outcome_max_bytes`]).
    pub fn outcome_bytes(&self) -> usize {
        self.inner.outcomes.bytes()
    }
}
