//! The demo's RPC methods and its `feed` channel.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use belay_server::rpc::{Methods, RpcError};
use belay_server::{Lifecycle, Server};
use serde_json::{json, Value};

/// The demo's RPC methods: `echo`, idempotent `order.create` (its result
/// names the process that ran it), and `slow`
/// (sleeps the given milliseconds, at most 30 s). No fault applies to them
/// until [`FaultBench::layer_methods`](crate::FaultBench::layer_methods)
/// is added.
pub fn methods() -> Methods {
    let orders = Arc::new(AtomicU64::new(0));
    let mut methods = Methods::new();
    methods.register("echo", |_ctx, value: Value| async move {
        Ok::<_, RpcError>(value)
    });
    methods.register("order.create", move |ctx, item: Value| {
        let orders = Arc::clone(&orders);
        async move {
            // Without an idempotency key a retry would create a second order.
            let id = orders.fetch_add(1, Ordering::Relaxed) + 1;
            Ok::<_, RpcError>(json!({
                "order": id,
                "item": item,
                "idempotency_key": ctx.idempotency_key,
                // Which process ran it: in a cluster, a retry answered
                // from the stored outcome names the node that ran it.
                "node": std::process::id(),
            }))
        }
    });
    methods.register("slow", |_ctx, ms: u64| async move {
        tokio::time::sleep(Duration::from_millis(ms.min(30_000))).await;
        Ok::<_, RpcError>(json!({ "slept_ms": ms.min(30_000) }))
    });
    methods
}

/// Publish a tick on `feed` every `every` until the server is drained.
pub fn spawn_feed(server: &Server, every: Duration) -> tokio::task::JoinHandle<()> {
    let server = server.clone();
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(every);
        let mut n: u64 = 0;
        while server.lifecycle() != Lifecycle::Drained {
            ticker.tick().await;
            n += 1;
            // A tick is small and flat: publishing it is never refused.
            if let Err(error) = server.publish("feed", json!({ "tick": n })).await {
                tracing::warn!(%error, "demo feed tick refused");
            }
        }
    })
}
