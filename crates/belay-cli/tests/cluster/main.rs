//! A cluster of `belay serve --demo --broker redis://…` processes on one
//! Redis, behind HAProxy (health checks on `/readyz`, the client address
//! sent with `send-proxy-v2`), with Rust clients subscribed to `feed` and
//! sending requests through it: a deploy (drain), a node killed with
//! SIGKILL, and Redis restarted without persistence. Without HAProxy:
//! presence on two `belay serve --config` nodes, one killed with SIGKILL
//! (`presence_node_killed`).
//!
//! HAProxy and redis-server come from Debian (the test command installs
//! them); each runs on free loopback ports in a temporary directory. Every
//! wait is bounded.

mod admin_cluster;
mod deploy;
mod harness;
mod node_kill;
mod presence_node_killed;
mod redis_cluster_failover;
mod redis_restart;
mod sentinel_failover;
