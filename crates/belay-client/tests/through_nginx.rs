//! Behind nginx with its defaults, which is how many deployments start:
//! it passes no `Upgrade` header on, so every WebSocket upgrade reaches the
//! server as a plain GET (400), and it buffers responses. The client falls
//! back to SSE on its own, and the stream flows through the buffering
//! proxy: requests are answered and publications arrive.

mod common;

use belay_client::Item;
use belay_proto::TransportKind;
use belay_test_support::services::Nginx;
use common::{builder, demo_server, start, SOON};
use serde_json::json;

#[tokio::test]
async fn behind_a_default_nginx_the_client_works_over_the_fallback() {
    let server = demo_server();
    let addr = start(&server).await;
    let nginx = Nginx::proxy_to(addr).await;
    let client = builder(nginx.addr()).connect().expect("a usable URL");
    let mut feed = client.subscribe("news").await.expect("subscribed");
    tokio::time::timeout(SOON, client.ready())
        .await
        .expect("ready in time")
        .expect("ready");
    assert_eq!(client.status().borrow().transport, TransportKind::Sse);
    for n in 0..3 {
        let echoed = client.request("echo", json!(n)).await.expect("answered");
        assert_eq!(echoed, json!(n));
        let published = server.publish("news", json!(n)).await.expect("published");
        match tokio::time::timeout(SOON, feed.next())
            .await
            .expect("in time")
        {
            Some(Item::Publication(p)) => assert_eq!(p.offset, published.offset),
            other => panic!("{other:?}"),
        }
    }
    client.close().await;
}
