//! belay-redis against a real `redis-server` (started per test on a free
//! loopback port): one test binary, so it links once; one behaviour per
//! module.

mod across_nodes;
mod auth;
mod channel_list;
mod cluster_pacing;
mod common;
mod control_plane;
mod history_bytes;
mod history_read;
mod hosts_across_nodes;
mod idempotency_across_nodes;
mod namespace_history;
mod position_check;
mod presence_across_nodes;
mod presence_redis_down;
mod redis_cluster;
mod redis_down;
mod redis_faults;
mod sentinel_failover;
mod shared_subscription;
mod sse_relay;
mod tls;
