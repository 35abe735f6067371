//! The Belay server as the benchmarks run it: the demo methods plus
//! `bench.publish`, with admission, per-IP and per-connection rate limits
//! raised so that the load, not a limit, is what gets measured.

use std::time::Duration;

use belay_server::rpc::{CallContext, RpcError};
use belay_server::{Server, ServerConfig};
use serde_json::{json, Value};

use crate::clients::websocket::wall_micros;

/// The benchmarks' server config with `ping_interval`: every bound a load
/// from a few loopback sources would hit is lifted.
pub fn config(ping_interval: Duration) -> ServerConfig {
    // Loads open thousands of sessions at once from a few loopback sources:
    // the per-source and pending-upgrade bounds are lifted like the rest.
    let mut config = ServerConfig::default()
        .with_accept_rate(1_000_000.0)
        .with_pending_upgrades(u32::MAX, u32::MAX)
        // A share no load reaches: every frame still takes it (the default
        // path's cost is measured), none waits.
        .with_work_share_per_ip(1e12, u32::MAX);
    config
        .limits
        .set_ping_interval(ping_interval)
        .set_max_connections_per_ip(u32::MAX)
        .set_messages_per_sec(1_000_000.0)
        .set_burst(1_000_000)
        .set_handshake_timeout(Duration::from_secs(60));
    config
}

/// Build the benchmark's Belay server with `ping_interval`.
pub fn build(ping_interval: Duration) -> Server {
    let config = config(ping_interval);
    let mut methods = belay_demo::methods();
    methods.register("bench.publish", move |ctx: CallContext, params: Value| {
        async move {
            let server = ctx.server;
            let channel = params["channel"].as_str().unwrap_or("bench").to_owned();
            let messages = params["messages"].as_u64().unwrap_or(0).min(100_000);
            let rate = params["rate"].as_f64().unwrap_or(100.0).clamp(0.1, 1e6);
            tokio::spawn(async move {
                let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
                for n in 0..messages {
                    ticker.tick().await;
                    // A bad channel name from the load client ends the run.
                    if server
                        .publish(&channel, json!({ "n": n, "t": wall_micros() }))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
            });
            Ok::<_, RpcError>(Value::Null)
        }
    });
    Server::builder().config(config).methods(methods).build()
}
