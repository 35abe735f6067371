//! [`Durable`]: publications acknowledged only once replicas have them
//! ([`RedisConfig::wait_replicas`]).
//!
//! The publish script appends without publishing live; Redis `WAIT` then
//! blocks until the replicas confirmed it (on the connection that wrote it:
//! `WAIT` counts that client's writes), and only then does the confirm
//! script raise the channel's confirmed top (what history reads may return)
//! and publish it on PUB/SUB (with any earlier one a slower publisher has
//! not confirmed yet, in offset order), and the publisher is told. So a failover to a replica that
//! confirmed loses nothing a publisher was told or a client was sent. A
//! `WAIT` blocks its connection's later commands, so durable publications
//! run on a few connections of their own, round-robin, never on the one
//! the node's other commands use. On a Redis Cluster each is a cluster
//! connection (one connection per primary), and the `WAIT` goes to the
//! primary of the channel's slot, which took the append on that same
//! connection.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use belay_proto::message::{Publication, RawJson};
use belay_server::broker::PublishError;

use crate::broker::Inner;
use crate::commands::Commands;
use crate::config::RedisConfig;
use crate::endpoint::Endpoint;
use crate::keys::ChannelKeys;

/// Connections durable publications are spread over.
const CONNECTIONS: usize = 4;

pub(crate) struct Durable {
    connections: Vec<Commands>,
    next: AtomicUsize,
    replicas: usize,
    wait_ms: u64,
}

impl Durable {
    pub(crate) async fn connect(
        endpoint: &Arc<Endpoint>,
        config: &RedisConfig,
    ) -> Result<Durable, String> {
        let mut connections = Vec::with_capacity(CONNECTIONS);
        // A WAIT answers within its own timeout; the command timeout
        // bounds the rest of the round trip.
        let limit = config.command_timeout + config.wait_timeout;
        for _ in 0..CONNECTIONS {
            connections.push(Commands::connect(Arc::clone(endpoint), limit).await?);
        }
        Ok(Durable {
            connections,
            next: AtomicUsize::new(0),
            replicas: config.wait_replicas,
            wait_ms: u64::try_from(config.wait_timeout.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
        })
    }

    pub(crate) async fn publish(
        &self,
        broker: &Inner,
        channel: String,
        data: RawJson,
    ) -> Result<Publication, PublishError> {
        let unavailable = PublishError::Unavailable;
        let commands = &self.connections[self.next.fetch_add(1, Ordering::Relaxed) % CONNECTIONS];
        let primary = commands
            .primary()
            .await
            .map_err(|e| unavailable(format!("Redis publish: {e}")))?;
        let (offset, epoch) = broker
            .append(commands, &primary, "", &channel, &data, false)
            .await
            .map_err(unavailable)?;
        let keys = ChannelKeys::new(broker.prefix(), &channel, broker.config().is_cluster());
        let mut wait = redis::cmd("WAIT");
        wait.arg(self.replicas).arg(self.wait_ms);
        // On a cluster, at the primary that took the append (its slot's).
        let confirmed: usize = commands
            .query_at(&primary, &wait, &keys.meta)
            .await
            .map_err(|e| unavailable(format!("Redis WAIT: {e}")))?;
        if confirmed < self.replicas {
            return Err(unavailable(format!(
                "{confirmed} of {} replicas confirmed the publication within {} ms: it may or may not survive a failover",
                self.replicas, self.wait_ms
            )));
        }
        let mut confirm = broker.scripts().confirm.prepare_invoke();
        confirm
            .key(&keys.meta)
            .key(&keys.history)
            .arg(&keys.live)
            .arg(offset)
            .arg(&epoch)
            .arg(data.get())
            .arg(broker.live_command());
        if let Err(error) = commands.invoke(&primary, &confirm).await {
            // It is on the replicas and in the history: subscribers get it
            // from there once a later confirmation raises the confirmed top
            // (the position check, or the next publication's gap).
            tracing::warn!(%error, channel = %channel, "a durable publication was not confirmed in Redis or sent live");
        }
        Ok(Publication {
            channel,
            epoch,
            offset,
            data,
        })
    }
}
