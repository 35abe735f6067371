//! `POST /api/history` refusals: a `since` of another epoch is 409
//! `epoch_changed` and one beyond the top 409 `beyond_top`, both with the
//! channel's current `position`; a field of the wrong type or out of range
//! (`null` included), an unknown field or a bad channel is 400
//! `bad_request` naming the field.

use std::net::SocketAddr;

use crate::common::api_node as start;
use belay_test_support::sockets::http_call_with;
use serde_json::{json, Value};

const AUTH: &str = "Authorization: Bearer k";

async fn history(addr: SocketAddr, body: &str) -> (u16, Value) {
    let response = http_call_with(addr, "POST", "/api/history", &[AUTH], Some(body)).await;
    let value = serde_json::from_str(&response.body).expect("JSON");
    (response.status, value)
}

#[tokio::test]
async fn a_position_the_channel_no_longer_has_is_409_with_the_current_one() {
    let (server, addr) = start().await;
    let published = server.publish("feed", json!(1)).await.expect("published");
    let current = json!({"epoch": published.epoch, "offset": 1});

    let (status, answer) = history(
        addr,
        r#"{"channel":"feed","since":{"offset":1,"epoch":"an-old-epoch"}}"#,
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(answer["error"]["code"], "epoch_changed");
    assert_eq!(answer["position"], current);

    let beyond = json!({"channel": "feed", "since": {"offset": 2, "epoch": published.epoch}});
    let (status, answer) = history(addr, &beyond.to_string()).await;
    assert_eq!(
        (status, &answer["error"]["code"], &answer["position"]),
        (409, &json!("beyond_top"), &current)
    );
}

#[tokio::test]
async fn a_bad_field_is_400_naming_it() {
    let (_server, addr) = start().await;
    for (body, field) in [
        (r#"{"channel":"a","limit":1001}"#, "limit"),
        (r#"{"channel":"a","limit":null}"#, "limit"),
        (r#"{"channel":"a","limit":-1}"#, "limit"),
        (r#"{"channel":"a","reverse":"yes"}"#, "reverse"),
        (
            r#"{"channel":"a","since":{"offset":"1","epoch":"e"}}"#,
            "since.offset",
        ),
        (
            r#"{"channel":"a","since":{"offset":9007199254740992,"epoch":"e"}}"#,
            "since.offset",
        ),
        (r#"{"channel":"a","since":{"epoch":"e"}}"#, "since.offset"),
        (
            r#"{"channel":"a","since":{"offset":1,"epoch":"e","x":1}}"#,
            "since.x",
        ),
        (r#"{"channel":"a","since":null}"#, "since"),
        (r#"{"channel":"a","sinse":{}}"#, "sinse"),
        (r#"{"limit":1}"#, "channel"),
        (r#"{"channel":"no spaces"}"#, "channel"),
        (r#"{"channel":7}"#, "channel"),
    ] {
        let (status, answer) = history(addr, body).await;
        assert_eq!(
            (status, &answer["error"]["code"]),
            (400, &json!("bad_request")),
            "{body}: {answer}"
        );
        let message = answer["error"]["message"].as_str().expect("a message");
        assert!(message.contains(field), "{body}: {message}");
    }
    let (status, _) = history(addr, "[]").await;
    assert_eq!(status, 400);
}
