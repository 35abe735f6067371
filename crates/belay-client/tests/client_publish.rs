//! `Client::publish` against a real server: the `$publish` request reaches
//! a subscriber, a refusal is a typed server error, and a retry with the
//! same idempotency key publishes once.

use std::time::Duration;

use belay_client::{Client, Item, RequestError, RequestOptions};
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::Server;
use serde_json::{json, Value};
use tokio::net::TcpListener;

/// Everyone may publish to `chat:*`.
struct ChatPublishers;

impl Authenticator for ChatPublishers {
    fn authenticate(&self, _token: Option<&str>) -> Result<Principal, AuthError> {
        Ok(Principal::user("alice").publishing_to(vec!["chat:*".to_string()]))
    }
}

async fn serve() -> (Server, String) {
    let server = Server::builder().authenticator(ChatPublishers).build();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("ws://{}/ws", listener.local_addr().expect("addr"));
    let serving = server.clone();
    tokio::spawn(async move {
        let _ = serving.serve(listener, serving.router()).await;
    });
    (server, url)
}

#[tokio::test]
async fn a_client_publish_reaches_a_subscriber_and_a_keyed_retry_publishes_once() {
    let (server, url) = serve().await;
    let client = Client::builder(url).connect().expect("a usable URL");
    let mut feed = client.subscribe("chat:a").await.expect("subscribed");
    client.ready().await.expect("ready");
    let keyed = || RequestOptions::default().idempotency_key("k1");
    let first = client
        .publish_with("chat:a", json!({"text": "hi"}), keyed())
        .await
        .expect("published");
    let result: Value = first.parse().expect("JSON");
    assert_eq!(result["offset"], json!(1));
    let item = tokio::time::timeout(Duration::from_secs(5), feed.next())
        .await
        .expect("delivered in time");
    let Some(Item::Publication(p)) = item else {
        panic!("a publication expected, got {item:?}")
    };
    assert_eq!(p.offset, 1);
    assert_eq!(p.data, json!({"text": "hi"}));
    let retry = client
        .publish_with("chat:a", json!({"text": "hi"}), keyed())
        .await
        .expect("the stored outcome");
    assert_eq!(retry, first);
    let next = server.publish("chat:a", json!(2)).await.expect("published");
    assert_eq!(next.offset, 2, "the retry published nothing");
    let refused = client.publish("news", json!(1)).await;
    assert!(
        matches!(&refused, Err(RequestError::Server { code, .. }) if code == "forbidden"),
        "{refused:?}"
    );
    client.close().await;
}
