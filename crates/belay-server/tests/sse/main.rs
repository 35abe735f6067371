//! The SSE + HTTP fallback (spec/PROTOCOL.md §1.7) against a real server:
//! each module is one behaviour of the mapping, each test one scenario.

#[path = "../common/mod.rs"]
mod common;

mod bad_sends;
mod close_code_labels;
mod heartbeat;
mod looked_up;
mod opening;
mod oversized_send;
mod relayed;
mod session;
mod slow_reader;
mod stalled_bodies;
mod through_nginx;

use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage};
use common::{server, SseRaw};
use serde_json::Value;

fn request(id: u64, method: &str, params: Value) -> ClientMessage {
    ClientMessage::Request(Request {
        id,
        method: method.into(),
        params,
        idem: None,
        timeout_ms: None,
    })
}

/// The result of request `id` (skipping anything else).
async fn result_of(sse: &mut SseRaw, id: u64) -> Value {
    loop {
        match sse.recv_message().await {
            ServerMessage::Response(r) if r.id == id => match r.reply {
                Reply::Result(v) => return v.to_value().expect("JSON"),
                Reply::Error(e) => panic!("request {id} failed: {e:?}"),
            },
            _ => continue,
        }
    }
}
