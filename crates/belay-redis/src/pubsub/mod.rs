//! The node's one PUB/SUB connection to Redis, owned by one task: it
//! subscribes and unsubscribes channel names in the order the hub decided,
//! hands every live message to the hub (and every control message to the
//! control plane), and probes the connection with
//! `PING`. A connection that fails or stays silent past the command timeout
//! is replaced (with backoff while Redis is unreachable), and every
//! subscription on it is ended with `unavailable`, so clients resubscribe
//! from their positions and recover from the history: a publication that
//! went out while no connection listened is never skipped silently.
//!
//! On one Redis (or the primary the Sentinels name) that is one PUB/SUB
//! connection ([`single`]); on a Redis Cluster, one cluster connection
//! subscribing each channel on its shard's primary ([`sharded`]).

mod sharded;
mod single;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::{Publication, RawJson};
use belay_server::broker::Delivery;
use tokio::sync::{mpsc, oneshot};
use tokio::time::timeout;

use crate::endpoint::Endpoint;
use crate::hub::{Hub, Interest};
use crate::keys::{channel_of, live_name, parse_live};

/// What the PUB/SUB task is asked to do.
#[derive(Debug)]
enum Command {
    /// Subscribe to a channel's live name; answered once Redis confirmed.
    Subscribe(String, oneshot::Sender<Result<(), String>>),
    Unsubscribe(String),
}

/// A handle on the PUB/SUB task.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    commands: mpsc::UnboundedSender<Command>,
    prefix: Arc<str>,
    cluster: bool,
}

impl Link {
    /// Start the task on the primary `endpoint` names (asked again on every
    /// reconnect), delivering into `hub`.
    pub(crate) fn start(
        endpoint: Arc<Endpoint>,
        hub: Arc<Hub>,
        prefix: &str,
        timing: (Duration, Duration),
        control: ([String; 2], mpsc::Sender<Vec<u8>>),
    ) -> (Link, oneshot::Receiver<()>) {
        let (commands, queue) = mpsc::unbounded_channel();
        let prefix: Arc<str> = Arc::from(prefix);
        let (command_timeout, probe_every) = timing;
        let cluster = endpoint.cluster().is_some();
        let task = Task {
            cluster,
            endpoint,
            hub,
            prefix: Arc::clone(&prefix),
            command_timeout,
            probe_every,
            control_names: control.0,
            control_inbox: control.1,
        };
        let (ready, listening) = oneshot::channel();
        tokio::spawn(task.run(queue, ready));
        (
            Link {
                commands,
                prefix,
                cluster,
            },
            listening,
        )
    }

    /// Subscribe to `channel` (again, if already): resolves when Redis has
    /// confirmed, so every later publication reaches the hub.
    pub(crate) fn subscribe(&self, channel: &str) -> oneshot::Receiver<Result<(), String>> {
        let (answer, confirmed) = oneshot::channel();
        let _ = self.commands.send(Command::Subscribe(
            live_name(&self.prefix, channel, self.cluster),
            answer,
        ));
        confirmed
    }

    /// Carry out what the hub decided for `channel`.
    pub(crate) fn follow(&self, channel: &str, interest: &Interest) {
        if *interest == Interest::Unsubscribe {
            let _ = self.commands.send(Command::Unsubscribe(live_name(
                &self.prefix,
                channel,
                self.cluster,
            )));
        }
    }
}

struct Task {
    endpoint: Arc<Endpoint>,
    /// On a Redis Cluster (sharded PUB/SUB).
    cluster: bool,
    hub: Arc<Hub>,
    prefix: Arc<str>,
    command_timeout: Duration,
    probe_every: Duration,
    /// The node's control names, subscribed on every connection, and where
    /// their messages go.
    control_names: [String; 2],
    control_inbox: mpsc::Sender<Vec<u8>>,
}

/// Why a connection was given up.
const LOST: &str = "the broker lost its connection to Redis: resubscribe";

/// Where live names are subscribed: one connection's PUB/SUB sink, or a
/// cluster connection's sharded subscriptions.
trait LiveNames {
    async fn join(&mut self, name: &str) -> redis::RedisResult<()>;
    async fn part(&mut self, name: &str) -> redis::RedisResult<()>;
}

impl LiveNames for redis::aio::PubSubSink {
    async fn join(&mut self, name: &str) -> redis::RedisResult<()> {
        self.subscribe(name).await
    }

    async fn part(&mut self, name: &str) -> redis::RedisResult<()> {
        self.unsubscribe(name).await
    }
}

impl LiveNames for redis::cluster_async::ClusterConnection {
    async fn join(&mut self, name: &str) -> redis::RedisResult<()> {
        self.ssubscribe(name).await
    }

    async fn part(&mut self, name: &str) -> redis::RedisResult<()> {
        self.sunsubscribe(name).await
    }
}

/// A connection made, of either kind.
enum Session {
    Single(redis::aio::PubSub),
    Sharded(sharded::Sharded),
}

impl Task {
    /// `ready` is told once the first connection listens on the control
    /// names.
    async fn run(self, mut queue: mpsc::UnboundedReceiver<Command>, ready: oneshot::Sender<()>) {
        let mut ready = Some(ready);
        let mut backoff = Duration::from_millis(50);
        // Since when the connection is lost (for the line that says it is back).
        let mut lost_at: Option<tokio::time::Instant> = None;
        loop {
            let connected = timeout(self.command_timeout, self.open()).await;
            let Ok(Ok(session)) = connected else {
                // Unreachable: refuse what waits, retry after a while.
                let wait = tokio::time::sleep(backoff);
                tokio::pin!(wait);
                loop {
                    tokio::select! {
                        () = &mut wait => break,
                        command = queue.recv() => match command {
                            Some(Command::Subscribe(_, answer)) => {
                                let _ = answer.send(Err("Redis is unreachable".into()));
                            }
                            Some(Command::Unsubscribe(_)) => {}
                            None => return,
                        },
                    }
                }
                backoff = (backoff * 2).min(Duration::from_millis(500));
                continue;
            };
            backoff = Duration::from_millis(50);
            if let Some(since) = lost_at.take() {
                tracing::info!(
                    down_ms = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX),
                    "PUB/SUB connection to Redis back"
                );
            }
            let served = match session {
                Session::Single(pubsub) => {
                    let (sink, stream) = pubsub.split();
                    self.serve(sink, stream, &mut queue, &mut ready).await
                }
                Session::Sharded(sharded) => {
                    self.serve_sharded(sharded, &mut queue, &mut ready).await
                }
            };
            match served {
                Served::Closed => return,
                Served::Lost => {
                    tracing::warn!("PUB/SUB connection to Redis lost; reconnecting");
                    lost_at = Some(tokio::time::Instant::now());
                    self.hub.end_all(LOST);
                }
            }
        }
    }

    /// Carry out the hub's `command` on `names`, keeping `subscribed` (the
    /// names confirmed: a join on one of them needs no round trip, since
    /// commands are served in order). `Some` when the connection's loop
    /// ends: the broker is gone, or Redis did not confirm.
    async fn command(
        &self,
        names: &mut impl LiveNames,
        subscribed: &mut HashSet<String>,
        command: Option<Command>,
    ) -> Option<Served> {
        let Some(command) = command else {
            return Some(Served::Closed);
        };
        match command {
            Command::Subscribe(name, answer) => {
                if subscribed.contains(&name) {
                    let _ = answer.send(Ok(()));
                    return None;
                }
                let done = timeout(self.command_timeout, names.join(&name)).await;
                let ok = matches!(done, Ok(Ok(())));
                let _ = answer.send(if ok {
                    Ok(())
                } else {
                    Err("Redis did not confirm the subscription".into())
                });
                if !ok {
                    return Some(Served::Lost);
                }
                subscribed.insert(name);
                None
            }
            Command::Unsubscribe(name) => self.part(names, subscribed, &name).await,
        }
    }

    /// Unsubscribe `name` (nobody here listens any more); `Some(Lost)`
    /// when Redis did not confirm.
    async fn part(
        &self,
        names: &mut impl LiveNames,
        subscribed: &mut HashSet<String>,
        name: &str,
    ) -> Option<Served> {
        subscribed.remove(name);
        let done = timeout(self.command_timeout, names.part(name)).await;
        (!matches!(done, Ok(Ok(())))).then_some(Served::Lost)
    }

    /// A new connection: to the primary as of now, or to the cluster.
    async fn open(&self) -> redis::RedisResult<Session> {
        if let Some(seeds) = self.endpoint.cluster() {
            return sharded::Sharded::open(seeds, self.command_timeout)
                .await
                .map(Session::Sharded);
        }
        let pubsub = self.endpoint.primary().await?.get_async_pubsub().await?;
        Ok(Session::Single(pubsub))
    }

    /// A live message: encoded once for this node's members. Returns
    /// whether the channel has no member left here.
    pub(super) fn deliver(&self, name: &str, payload: &[u8]) -> bool {
        let Some(channel) = channel_of(&self.prefix, name, self.cluster) else {
            return false;
        };
        let Some((offset, epoch, data)) = parse_live(payload) else {
            tracing::warn!(channel, "malformed live message from Redis, ignored");
            return false;
        };
        // A message whose data is not JSON is skipped here; the next one
        // shows the gap and the members resubscribe (the history then
        // refuses the same entry, as `unavailable`).
        let Ok(data) = RawJson::from_json(data.to_owned()) else {
            tracing::warn!(channel, offset, "live message with invalid JSON, skipped");
            return false;
        };
        let publication = Publication {
            channel: channel.to_owned(),
            epoch: epoch.to_owned(),
            offset,
            data,
        };
        self.hub
            .dispatch(channel, epoch, &Delivery::encode(&publication))
    }
}

pub(super) enum Served {
    /// The broker is gone.
    Closed,
    /// The connection failed or went silent.
    Lost,
}
