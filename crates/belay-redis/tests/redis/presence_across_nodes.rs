//! Presence on two nodes sharing one real Redis: a client joining on node
//! A is seen by a `$presence` query on node B, B's subscriber of
//! `$presence:room:1` gets the join and the leave (offsets 1, 2); and when
//! node A dies without a goodbye (its runtime stopped at once, like
//! `kill -9`) its member is gone from B's queries within the presence TTL.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{config, next, subscribe, Raw, RedisServer};
use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage, Unsubscribe};
use belay_redis::{RedisBroker, RedisConfig};
use belay_server::{ChannelOptions, Namespaces, Server, ServerConfig};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const TTL: Duration = Duration::from_millis(900);

/// A node on its own runtime (so it can be stopped at once), `room:*`
/// tracking presence with joins and leaves.
struct Node {
    addr: SocketAddr,
    runtime: tokio::runtime::Runtime,
}

impl Node {
    async fn start(redis: RedisConfig) -> Node {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let (ready, started) = oneshot::channel();
        runtime.spawn(async move {
            let broker = RedisBroker::connect(redis).await.expect("Redis answers");
            let namespaces = Namespaces::new().with(
                "room:*",
                ChannelOptions::default()
                    .with_presence(true)
                    .with_join_leave(true),
            );
            let server = Server::builder()
                .config(ServerConfig::default().with_namespaces(namespaces))
                .broker(Arc::new(broker))
                .build();
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let _ = ready.send(listener.local_addr().expect("addr"));
            let _ = server.serve(listener, server.router()).await;
        });
        let addr = started.await.expect("the node started");
        Node { addr, runtime }
    }

    /// Stop the node at once: no leave, no cleanup, its refreshes stop.
    fn kill(self) {
        self.runtime.shutdown_background();
    }
}

async fn members(raw: &mut Raw, id: u64) -> Vec<Value> {
    raw.send(&ClientMessage::Request(Request {
        id,
        method: "$presence".into(),
        params: json!({ "channel": "room:1" }),
        idem: None,
        timeout_ms: None,
    }))
    .await;
    loop {
        if let ServerMessage::Response(response) = next(raw).await {
            let Reply::Result(result) = response.reply else {
                panic!("members expected, got {:?}", response.reply)
            };
            let value: Value = serde_json::from_str(result.get()).expect("JSON");
            return value["members"].as_array().expect("members").clone();
        }
    }
}

async fn event(raw: &mut Raw) -> (u64, Value) {
    loop {
        if let ServerMessage::Publication(p) = next(raw).await {
            assert_eq!(p.channel, "$presence:room:1");
            return (p.offset, p.data.parse().expect("JSON"));
        }
    }
}

fn session(welcome: &ServerMessage) -> String {
    let ServerMessage::Welcome(welcome) = welcome else {
        panic!("welcome expected")
    };
    welcome.session.clone()
}

#[tokio::test]
async fn a_member_on_one_node_is_seen_on_the_other_and_a_killed_nodes_members_expire() {
    let redis = RedisServer::start().await;
    let settings = config(&redis).presence_ttl(TTL);
    let a = Node::start(settings.clone()).await;
    let b = Node::start(settings).await;

    let (mut watcher, _) = Raw::connected(b.addr, None).await;
    let answer = subscribe(&mut watcher, "$presence:room:1", None).await;
    assert!(matches!(answer, ServerMessage::Subscribed(_)), "{answer:?}");

    let (mut alice, welcome) = Raw::connected(a.addr, None).await;
    let member = json!({ "client": session(&welcome), "user": "anonymous" });
    let answer = subscribe(&mut alice, "room:1", None).await;
    assert!(matches!(answer, ServerMessage::Subscribed(_)), "{answer:?}");
    assert_eq!(event(&mut watcher).await, (1, json!({ "join": member })));
    assert_eq!(members(&mut watcher, 1).await, vec![member.clone()]);

    alice
        .send(&ClientMessage::Unsubscribe(Unsubscribe {
            channel: "room:1".into(),
        }))
        .await;
    assert_eq!(event(&mut watcher).await, (2, json!({ "leave": member })));
    assert!(members(&mut watcher, 2).await.is_empty());

    // Subscribed again, then node A dies: past the TTL the refreshes have
    // stopped and B's reads drop the entry.
    let answer = subscribe(&mut alice, "room:1", None).await;
    assert!(matches!(answer, ServerMessage::Subscribed(_)), "{answer:?}");
    assert_eq!(event(&mut watcher).await, (3, json!({ "join": member })));
    // Alive past several TTLs: the owner's refreshes keep it.
    tokio::time::sleep(TTL * 2).await;
    assert_eq!(members(&mut watcher, 3).await, vec![member.clone()]);
    let killed = Instant::now();
    a.kill();
    let mut id = 4;
    loop {
        if members(&mut watcher, id).await.is_empty() {
            break;
        }
        assert!(
            killed.elapsed() < TTL + Duration::from_millis(500),
            "the killed node's member outlived the TTL"
        );
        id += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b.kill();
}
