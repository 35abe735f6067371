//! What one hostile peer can do, tried against the server's socket: each
//! module is one kind of abuse, each test one scenario, each checking the
//! documented response and that another client is unaffected.

#[path = "../common/mod.rs"]
mod common;

mod admin;
mod admin_behind_proxy;
mod admin_ui;
mod budgets;
mod channels;
mod frames;
mod handshake;
mod history_bytes;
mod host_calls;
mod idempotency;
mod in_flight;
mod lingering_close;
mod publish;
mod sources;
mod unparsable_params;
mod work_share;

use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage, Subscribe};
use belay_server::Server;
use common::{server, Raw};
use serde_json::{json, Value};

fn request(id: u64, method: &str, params: Value, idem: Option<&str>) -> ClientMessage {
    ClientMessage::Request(Request {
        id,
        method: method.into(),
        params,
        idem: idem.map(str::to_owned),
        timeout_ms: None,
    })
}

fn subscribe(channel: &str) -> ClientMessage {
    ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since: None,
        token: None,
    })
}

/// The reply to request `id` (skipping anything else).
async fn reply_to(raw: &mut Raw, id: u64) -> Reply {
    loop {
        match raw.recv_skipping_pings().await {
            Some(ServerMessage::Response(r)) if r.id == id => return r.reply,
            Some(_) => continue,
            None => panic!("closed before the reply to {id}"),
        }
    }
}

/// A bystander's echo still works.
async fn echo_works(raw: &mut Raw, id: u64) {
    raw.send(&request(id, "echo", json!(id), None)).await;
    assert_eq!(reply_to(raw, id).await, Reply::Result(json!(id).into()));
}

fn error_code(reply: &Reply) -> &str {
    match reply {
        Reply::Error(e) => &e.code,
        Reply::Result(r) => panic!("expected an error, got {r}"),
    }
}

/// One series of the server's metrics, read in process (a `/metrics`
/// request would itself be a connection, and count).
fn gauge(server: &Server, series: &str) -> f64 {
    server
        .render_metrics()
        .lines()
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == series).then(|| value.parse().ok())?
        })
        .unwrap_or(0.0)
}

/// Wait (within `SOON`) until `series` satisfies `done`.
async fn gauge_until(server: &Server, series: &str, done: impl Fn(f64) -> bool) {
    let deadline = tokio::time::Instant::now() + common::SOON;
    loop {
        let value = gauge(server, series);
        if done(value) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{series} = {value} within the bound"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}
