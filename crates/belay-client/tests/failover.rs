//! Failover URLs and the local address: a client whose server goes away
//! dials the next URL and resumes its subscriptions there; a client bound
//! to a local address connects from it.

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use belay_client::{Client, ClientEvent, Item};
use belay_proto::server::DrainConfig;
use belay_proto::Event;
use belay_server::broker::{Broker, HistoryLimits, MemoryBroker};
use belay_server::{Server, ServerConfig};
use common::{event_where, SOON};
use serde_json::json;
use tokio::net::TcpListener;

/// A server on `broker` whose drain advises at once and closes within ~1 s.
async fn serve(broker: &Arc<dyn Broker>) -> (Server, SocketAddr) {
    let mut drain = DrainConfig::default();
    drain
        .set_lb_delay(Duration::ZERO)
        .set_reconnect_spread(Duration::from_millis(100))
        .set_linger(Duration::from_millis(100))
        .set_deadline(Duration::from_secs(1));
    let server = Server::builder()
        .config(ServerConfig::default().with_drain(drain))
        .broker(Arc::clone(broker))
        .build();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let serving = server.clone();
    tokio::spawn(async move {
        let router = serving.router();
        let _ = serving.serve(listener, router).await;
    });
    (server, addr)
}

async fn next_publication(
    subscription: &mut belay_client::Subscription,
) -> (u64, serde_json::Value) {
    match tokio::time::timeout(SOON, subscription.next()).await {
        Ok(Some(Item::Publication(publication))) => {
            let data = serde_json::from_str(publication.data.get()).expect("JSON data");
            (publication.offset, data)
        }
        other => panic!("expected a publication, got {other:?}"),
    }
}

#[tokio::test]
async fn a_drained_server_is_followed_by_the_next_url_where_the_subscription_recovers() {
    let broker: Arc<dyn Broker> = Arc::new(MemoryBroker::new(HistoryLimits::default()));
    let (a, a_addr) = serve(&broker).await;
    let (b, b_addr) = serve(&broker).await;
    let client = common::builder(a_addr)
        .failover_url(format!("ws://{b_addr}/ws"))
        .fallback(None)
        .connect()
        .expect("usable URLs");
    let mut events = client.events();
    let mut news = client.subscribe("news").await.expect("subscribe");
    event_where(&mut events, "subscribed on A", |e| {
        matches!(e, ClientEvent::Session(Event::Subscribed { .. }))
    })
    .await;
    a.publish("news", json!("on A")).await.expect("publish");
    assert_eq!(next_publication(&mut news).await, (1, json!("on A")));

    a.drain();
    event_where(&mut events, "A's connection lost", |e| {
        matches!(e, ClientEvent::Session(Event::Disconnected { .. }))
    })
    .await;
    // Published while the client is between servers: recovered on B.
    b.publish("news", json!("meanwhile"))
        .await
        .expect("publish");
    let resumed = event_where(&mut events, "resubscribed", |e| {
        matches!(e, ClientEvent::Session(Event::Subscribed { .. }))
    })
    .await;
    assert!(
        matches!(
            resumed,
            ClientEvent::Session(Event::Subscribed {
                recovered: true,
                ..
            })
        ),
        "resumed from its position: {resumed:?}"
    );
    assert_eq!(next_publication(&mut news).await, (2, json!("meanwhile")));
    assert_eq!(b.metrics().open_connections(), 1, "the session is on B");
    common::open_connections(&a, 0).await;
    client.close().await;
}

#[tokio::test]
async fn a_refused_first_url_is_followed_by_the_next() {
    let broker: Arc<dyn Broker> = Arc::new(MemoryBroker::new(HistoryLimits::default()));
    let (b, b_addr) = serve(&broker).await;
    // A port with nothing listening on it.
    let closed = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let dead = closed.local_addr().expect("addr");
    drop(closed);
    let client = common::builder(dead)
        .failover_url(format!("ws://{b_addr}/ws"))
        .fallback(None)
        .connect()
        .expect("usable URLs");
    tokio::time::timeout(SOON, client.ready())
        .await
        .expect("ready within the bound")
        .expect("the client lives");
    assert_eq!(b.metrics().open_connections(), 1);
    client.close().await;
}

#[tokio::test]
async fn an_unusable_failover_url_is_refused_by_connect() {
    let refused = Client::builder("ws://127.0.0.1:1/ws")
        .failover_url("http://127.0.0.1:2/ws")
        .connect();
    assert!(matches!(refused, Err(belay_client::BuildError::Url(_))));
}

#[tokio::test]
async fn a_client_connects_from_its_local_address() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let local = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 7));
    let client = Client::builder(format!("ws://{addr}/ws"))
        .local_address(local)
        .fallback(None)
        .connect()
        .expect("a usable URL");
    let (_tcp, peer) = tokio::time::timeout(SOON, listener.accept())
        .await
        .expect("a dial within the bound")
        .expect("accept");
    assert_eq!(peer.ip(), local);
    client.close().await;
}
