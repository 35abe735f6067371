//! A request whose params cannot be parsed (nesting deeper than a parser's
//! recursion limit, a number out of range, a lone surrogate escape) still
//! gets its one `response`, `bad_request` with a reason, when its id can be
//! read (spec/PROTOCOL.md §8.2): the caller's request does not hang until
//! its own timeout. The connection lives on.

use belay_proto::message::{Reply, ServerMessage};
use belay_server::ServerConfig;

use crate::common::{self, Raw};
use crate::{echo_works, server};

/// Send `params` (raw JSON text) as request 7's params; the next message
/// must be request 7's `bad_request` response, with a reason.
async fn is_answered_bad_request(params: &str) {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send_text(&format!(
        r#"{{"type":"request","id":7,"method":"echo","params":{params}}}"#
    ))
    .await;
    match raw.recv_skipping_pings().await {
        Some(ServerMessage::Response(response)) => {
            assert_eq!(response.id, 7);
            let Reply::Error(error) = response.reply else {
                panic!("expected an error, got {:?}", response.reply);
            };
            assert_eq!(error.code, "bad_request");
            assert!(!error.message.is_empty(), "a reason: {error:?}");
        }
        other => panic!("expected request 7's response, got {other:?}"),
    }
    echo_works(&mut raw, 8).await;
}

#[tokio::test]
async fn params_nested_30k_deep_get_a_bad_request_response() {
    is_answered_bad_request(&format!("{}{}", "[".repeat(30_000), "]".repeat(30_000))).await;
}

#[tokio::test]
async fn params_with_a_number_out_of_range_get_a_bad_request_response() {
    is_answered_bad_request("1e999999").await;
}

#[tokio::test]
async fn params_with_a_lone_surrogate_escape_get_a_bad_request_response() {
    is_answered_bad_request(r#""\ud800""#).await;
}
