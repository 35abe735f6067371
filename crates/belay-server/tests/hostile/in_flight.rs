//! Requests in flight are bounded per connection, and the handlers of a
//! connection that vanished are cancelled (keyed ones finish, so a retry
//! gets their outcome).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use belay_server::rpc::{Methods, RpcError};
use belay_server::{Server, ServerConfig};
use serde_json::{json, Value};

use crate::common::{self, Raw, SOON};
use crate::{error_code, reply_to, request};

/// Counts running `hold` handlers; a handler that is dropped (cancelled)
/// stops counting.
struct Running(Arc<AtomicUsize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A server whose `hold` method runs for `ms` milliseconds (counted while
/// it runs) and whose `done` counts completions.
fn holding_server(config: ServerConfig) -> (Server, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let running = Arc::new(AtomicUsize::new(0));
    let completed = Arc::new(AtomicUsize::new(0));
    let mut methods = Methods::new();
    let (r, c) = (Arc::clone(&running), Arc::clone(&completed));
    methods.register("hold", move |_ctx, ms: u64| {
        let (running, completed) = (Arc::clone(&r), Arc::clone(&c));
        async move {
            running.fetch_add(1, Ordering::SeqCst);
            let _running = Running(running);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            completed.fetch_add(1, Ordering::SeqCst);
            Ok::<_, RpcError>(Value::Null)
        }
    });
    let server = Server::builder().config(config).methods(methods).build();
    (server, running, completed)
}

async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + SOON;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} within the bound"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn requests_over_the_in_flight_bound_are_refused_rate_limited() {
    let mut config = ServerConfig::default();
    config.limits.set_max_in_flight(8);
    let (server, running, _) = holding_server(config);
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    for id in 1..=10u64 {
        raw.send(&request(id, "hold", json!(30_000), None)).await;
    }
    for id in [9, 10] {
        assert_eq!(error_code(&reply_to(&mut raw, id).await), "rate_limited");
    }
    until("eight handlers running", || {
        running.load(Ordering::SeqCst) == 8
    })
    .await;
}

#[tokio::test]
async fn a_vanished_connection_cancels_its_handlers_but_keyed_ones_finish() {
    let (server, running, completed) = holding_server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    for id in 1..=20u64 {
        raw.send(&request(id, "hold", json!(30_000), None)).await;
    }
    raw.send(&request(21, "hold", json!(300), Some("keyed")))
        .await;
    until("21 handlers running", || {
        running.load(Ordering::SeqCst) == 21
    })
    .await;
    drop(raw);
    until("the unkeyed handlers cancelled", || {
        running.load(Ordering::SeqCst) <= 1
    })
    .await;
    until("the keyed handler finished", || {
        completed.load(Ordering::SeqCst) == 1
    })
    .await;
    // Its retry on a new connection gets the stored outcome at once.
    let (mut retry, _) = Raw::connected(addr, None).await;
    retry
        .send(&request(1, "hold", json!(300), Some("keyed")))
        .await;
    assert_eq!(
        reply_to(&mut retry, 1).await,
        belay_proto::message::Reply::Result(belay_proto::message::RawJson::null())
    );
    assert_eq!(completed.load(Ordering::SeqCst), 1, "not run twice");
    assert_eq!(running.load(Ordering::SeqCst), 0);
}
