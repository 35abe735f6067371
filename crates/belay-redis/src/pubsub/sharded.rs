//! Sharded PUB/SUB on a Redis Cluster: one cluster connection (RESP3)
//! subscribes each channel's live name with `SSUBSCRIBE` on the primary of
//! its slot, and its messages arrive as pushes. The control names stay
//! ordinary PUB/SUB names, which a cluster carries to every node.
//!
//! What could lose a live publication unseen ends subscriptions with
//! `unavailable`, so their clients resubscribe and recover from the history:
//! - a lost node connection (the cluster connection would resubscribe by
//!   itself, but not replay what went out meanwhile): every subscription,
//!   on a new connection that learns the slots again;
//! - a slot moved by resharding, which Redis tells with a `sunsubscribe`
//!   nobody asked for: that channel's subscriptions (a resubscription goes
//!   to the slot's new primary);
//! - a primary that stops answering `PING` (a probe reaches every primary):
//!   every subscription.

use std::collections::HashSet;
use std::time::Duration;

use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, ResponsePolicy, RoutingInfo};
use redis::{PushInfo, PushKind, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::timeout;

use super::{Command, Served, Task};
use crate::endpoint::ClusterSeeds;
use crate::keys::channel_of;

/// Why a channel's subscriptions end when its slot moved.
const MOVED: &str = "the channel moved to another Redis Cluster shard: resubscribe";

/// A cluster connection and the pushes it delivers.
pub(super) struct Sharded {
    connection: ClusterConnection,
    pushes: mpsc::UnboundedReceiver<PushInfo>,
}

impl Sharded {
    pub(super) async fn open(
        seeds: &ClusterSeeds,
        command_timeout: Duration,
    ) -> redis::RedisResult<Sharded> {
        let (sender, pushes) = mpsc::unbounded_channel();
        let client = seeds.client(command_timeout, Some(sender))?;
        let connection = client.get_async_connection().await?;
        Ok(Sharded { connection, pushes })
    }
}

impl Task {
    pub(super) async fn serve_sharded(
        &self,
        sharded: Sharded,
        queue: &mut mpsc::UnboundedReceiver<Command>,
        ready: &mut Option<oneshot::Sender<()>>,
    ) -> Served {
        let Sharded {
            mut connection,
            mut pushes,
        } = sharded;
        for name in &self.control_names {
            let done = timeout(self.command_timeout, connection.subscribe(name)).await;
            if !matches!(done, Ok(Ok(()))) {
                return Served::Lost;
            }
        }
        if let Some(ready) = ready.take() {
            let _ = ready.send(());
        }
        // Confirmed live names (`Task::command`).
        let mut subscribed: HashSet<String> = HashSet::new();
        // A message from one primary says nothing of the others, so every
        // primary is probed at each interval, busy or not.
        let mut probe = tokio::time::interval(self.probe_every);
        probe.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        probe.reset();
        loop {
            tokio::select! {
                command = queue.recv() => {
                    if let Some(served) = self.command(&mut connection, &mut subscribed, command).await {
                        return served;
                    }
                }
                push = pushes.recv() => {
                    let Some(push) = push else {
                        return Served::Lost;
                    };
                    match push.kind {
                        PushKind::Disconnection => {
                            tracing::warn!("a Redis Cluster node connection was lost");
                            return Served::Lost;
                        }
                        PushKind::Message | PushKind::SMessage => {
                            let Some((name, payload)) = name_and_payload(&push.data) else {
                                continue;
                            };
                            if self.control_names.contains(&name) {
                                if self.control_inbox.try_send(payload.to_vec()).is_err() {
                                    tracing::warn!("control inbox full: message dropped");
                                }
                                continue;
                            }
                            if self.deliver(&name, payload) {
                                if let Some(served) = self.part(&mut connection, &mut subscribed, &name).await {
                                    return served;
                                }
                            }
                        }
                        PushKind::SUnsubscribe => {
                            // Asked for: already forgotten. Not asked for:
                            // Redis moved the slot away.
                            let Some(name) = push.data.first().and_then(text) else {
                                continue;
                            };
                            if subscribed.remove(&name) {
                                if let Some(channel) = channel_of(&self.prefix, &name, true) {
                                    tracing::info!(channel, "channel's slot moved: its subscriptions resubscribe");
                                    self.hub.end_channel(channel, MOVED);
                                }
                            }
                        }
                        _ => {}
                    }
                },
                _ = probe.tick() => {
                    let ping = connection.route_command(
                        redis::cmd("PING"),
                        RoutingInfo::MultiNode((
                            MultipleNodeRoutingInfo::AllMasters,
                            Some(ResponsePolicy::AllSucceeded),
                        )),
                    );
                    if !matches!(timeout(self.command_timeout, ping).await, Ok(Ok(_))) {
                        return Served::Lost;
                    }
                }
            }
        }
    }
}

/// A message push's `[channel, payload]`.
fn name_and_payload(data: &[Value]) -> Option<(String, &[u8])> {
    match data {
        [name, Value::BulkString(payload), ..] => Some((text(name)?, payload.as_slice())),
        _ => None,
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}
