//! Belay's Redis broker: every node of a cluster serves the same channels,
//! with the same offsets, history and recovery as the embedded broker.
//!
//! # Model
//!
//! Redis holds each channel's truth: a meta hash (epoch, top offset) and a
//! Stream of recent publications whose entry ids are their offsets (keys in
//! [`keys`](crate#keys)). A publication is one Lua script: take the next
//! offset, append, publish `OFFSET:EPOCH:DATA` on the channel's PUB/SUB
//! name. A meta hash that is missing (never made, expired, lost with a
//! Redis restart) starts a new epoch, so an old position never resumes
//! against new offsets: the client is told `recovered: false` (Resync).
//!
//! Each node keeps one PUB/SUB connection and a hub of its own subscribers.
//! A subscribe joins the hub first (buffering), subscribes the PUB/SUB name,
//! reads the history after the client's position, then merges the buffer
//! behind the replay by offset and goes live, all before any frame of the
//! subscription leaves (the server's [`Joining::Later`](belay_server::broker::Joining::Later)).
//! A live publication that does not follow a subscriber's last offset, a
//! PUB/SUB connection that fails or stops answering its `PING`, or Redis
//! being down ends the subscriptions with `unavailable`: clients keep their
//! connection, resubscribe from their positions, and recover from the
//! history once Redis answers. Publishing while Redis is down fails with
//! [`PublishError::Unavailable`](belay_server::broker::PublishError::Unavailable).
//!
//! # Run loop
//!
//! ```no_run
//! use std::sync::Arc;
//! use belay_redis::{RedisBroker, RedisConfig};
//! use belay_server::Server;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let broker = RedisBroker::connect(RedisConfig::new("redis://127.0.0.1:6379")).await?;
//! let server = Server::builder().broker(Arc::new(broker)).build();
//! // Every node built like this serves the same channels.
//! server.publish("news", serde_json::json!({"hello": "world"})).await?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! server.serve(listener, server.router()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Keys
//!
//! | what | key |
//! |---|---|
//! | epoch (`e`) and top offset (`s`), a hash | `PREFIX.meta.{CHANNEL}` |
//! | history, a Stream with entry ids `OFFSET-0`, fields `d` (data) and `t` (ms) | `PREFIX.history.{CHANNEL}` |
//! | live publications, PUB/SUB | `PREFIX.live.CHANNEL` |
//!
//! The `{CHANNEL}` hash tag keeps a channel's keys in one slot of a Redis
//! Cluster.

mod broker;
mod cluster_info;
mod cluster_pacing;
mod commands;
mod config;
mod control;
mod durable;
mod endpoint;
mod history_page;
mod host_directory;
mod hub;
mod join;
mod keys;
mod ledger;
mod outcomes;
mod position_check;
mod presence;
mod pubsub;
mod scripts;
mod sse_relay;

pub use broker::{ConnectError, RedisBroker};
pub use cluster_info::{answer_disconnects, NODE_INFO, NODE_SESSIONS, USER_DISCONNECT};
pub use config::{RedisConfig, SentinelConfig};
pub use control::{ControlError, ControlPlane, HandlerFuture, MAX_CONTROL_MESSAGE};
pub use host_directory::HOST_ANSWER;
