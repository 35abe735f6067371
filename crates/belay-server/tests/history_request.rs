//! The reserved channel reads over real sockets: `$history` (a channel's
//! retained publications, bounded by its namespace's history size, refused
//! as a subscribe would be) and `$presence_stats` (distinct clients and
//! users among a presence channel's members).

mod common;

use std::time::Duration;

use belay_proto::message::{ClientMessage, RawJson, Reply, Request, ServerMessage, Subscribe};
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::{Access, ChannelOptions, Namespaces, Server, ServerConfig};
use common::{start, Raw};
use serde_json::{json, Value};

/// The token is the user, who may subscribe to every channel.
struct TokenIsUser;

impl Authenticator for TokenIsUser {
    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError> {
        let user = token.unwrap_or("anonymous");
        Ok(Principal::user(user).with_info(RawJson::from_value(&json!({ "name": user }))))
    }
}

async fn next(raw: &mut Raw) -> ServerMessage {
    tokio::time::timeout(Duration::from_secs(5), raw.recv_skipping_pings())
        .await
        .expect("an answer in time")
        .expect("the connection stays open")
}

/// Ask `method` with `params`: the result, or the error's code.
async fn ask(raw: &mut Raw, id: u64, method: &str, params: Value) -> Result<Value, String> {
    raw.send(&ClientMessage::Request(Request {
        id,
        method: method.into(),
        params,
        idem: None,
        timeout_ms: None,
    }))
    .await;
    loop {
        if let ServerMessage::Response(response) = next(raw).await {
            assert_eq!(response.id, id);
            return match response.reply {
                Reply::Result(result) => Ok(serde_json::from_str(result.get()).unwrap()),
                Reply::Error(error) => Err(error.code),
            };
        }
    }
}

fn offsets(answer: &Value) -> Vec<u64> {
    answer["publications"]
        .as_array()
        .expect("a publications array")
        .iter()
        .map(|p| p["offset"].as_u64().expect("an offset"))
        .collect()
}

fn server() -> Server {
    let namespaces = Namespaces::new()
        .with("chat:*", ChannelOptions::default().with_history_size(3))
        .with(
            "private:*",
            ChannelOptions::default().with_subscribe(Access::Nobody),
        )
        .with(
            "secret:*",
            ChannelOptions::default().with_subscribe(Access::Token),
        )
        .with("room:*", ChannelOptions::default().with_presence(true));
    Server::builder()
        .config(ServerConfig::default().with_namespaces(namespaces))
        .authenticator(TokenIsUser)
        .build()
}

#[tokio::test]
async fn history_reads_what_the_channel_holds_within_its_size() {
    let server = server();
    let addr = start(&server).await;
    let mut epoch = String::new();
    for n in 1..=5 {
        let published = server
            .publish("chat:1", json!({ "n": n }))
            .await
            .expect("published");
        epoch = published.epoch.clone();
    }
    let (mut raw, _) = Raw::connected(addr, Some("alice")).await;

    // Everything held (the namespace keeps 3), oldest first, with the top.
    let all = ask(&mut raw, 1, "$history", json!({ "channel": "chat:1" }))
        .await
        .expect("an answer");
    assert_eq!(offsets(&all), [3, 4, 5]);
    assert_eq!(all["publications"][0]["data"], json!({ "n": 3 }));
    assert_eq!(all["epoch"], json!(epoch));
    assert_eq!(all["offset"], json!(5));
    assert_eq!(all["truncated"], json!(false));

    // Newest first, at most 2; a limit over the size is capped by it.
    let newest = ask(
        &mut raw,
        2,
        "$history",
        json!({ "channel": "chat:1", "limit": 2, "reverse": true }),
    )
    .await
    .expect("an answer");
    assert_eq!(offsets(&newest), [5, 4]);
    let capped = ask(
        &mut raw,
        3,
        "$history",
        json!({ "channel": "chat:1", "limit": 1_000_000 }),
    )
    .await
    .expect("an answer");
    assert_eq!(offsets(&capped), [3, 4, 5]);

    // After a position.
    let after = ask(
        &mut raw,
        4,
        "$history",
        json!({ "channel": "chat:1", "since": { "epoch": epoch, "offset": 3 } }),
    )
    .await
    .expect("an answer");
    assert_eq!(offsets(&after), [4, 5]);

    // A position of another epoch, or beyond the top, is no position now.
    for (id, since) in [
        (5, json!({ "epoch": "another", "offset": 1 })),
        (6, json!({ "epoch": epoch, "offset": 99 })),
    ] {
        assert_eq!(
            ask(
                &mut raw,
                id,
                "$history",
                json!({ "channel": "chat:1", "since": since })
            )
            .await,
            Err("not_found".into())
        );
    }

    // A channel nobody published on: nothing, at offset 0.
    let empty = ask(&mut raw, 7, "$history", json!({ "channel": "chat:none" }))
        .await
        .expect("an answer");
    assert_eq!(offsets(&empty), Vec::<u64>::new());
    assert_eq!(empty["offset"], json!(0));
}

#[tokio::test]
async fn history_is_refused_as_a_subscribe_would_be_and_bad_params_are_bad_requests() {
    let server = server();
    let addr = start(&server).await;
    server
        .publish("private:1", json!(1))
        .await
        .expect("published");
    let (mut raw, _) = Raw::connected(addr, Some("alice")).await;

    assert_eq!(
        ask(&mut raw, 1, "$history", json!({ "channel": "private:1" })).await,
        Err("forbidden".into())
    );
    // A subscription-token channel without its token: as a subscribe.
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: "secret:1".into(),
        since: None,
        token: None,
    }))
    .await;
    let refused = match next(&mut raw).await {
        ServerMessage::Unsubscribed(u) => u.code,
        other => panic!("unsubscribed expected, got {other:?}"),
    };
    assert_eq!(
        ask(&mut raw, 2, "$history", json!({ "channel": "secret:1" })).await,
        Err(refused)
    );
    for (id, params) in [
        (3, json!(null)),
        (4, json!({ "channel": "chat:1", "limit": -1 })),
        (5, json!({ "channel": "chat:1", "since": { "offset": 1 } })),
        (6, json!({ "channel": "chat:1", "unknown": true })),
    ] {
        assert_eq!(
            ask(&mut raw, id, "$history", params).await,
            Err("bad_request".into())
        );
    }
    // The connection is still fine.
    let answer = ask(&mut raw, 7, "$history", json!({ "channel": "chat:1" })).await;
    assert!(answer.is_ok(), "{answer:?}");
}

#[tokio::test]
async fn presence_stats_count_distinct_clients_and_users() {
    let server = server();
    let addr = start(&server).await;
    let mut held = Vec::new();
    for user in ["alice", "alice", "bob"] {
        let (mut raw, _) = Raw::connected(addr, Some(user)).await;
        raw.send(&ClientMessage::Subscribe(Subscribe {
            channel: "room:1".into(),
            since: None,
            token: None,
        }))
        .await;
        match next(&mut raw).await {
            ServerMessage::Subscribed(s) => assert_eq!(s.channel, "room:1"),
            other => panic!("subscribed expected, got {other:?}"),
        }
        held.push(raw);
    }
    let (mut watcher, _) = Raw::connected(addr, Some("carol")).await;
    assert_eq!(
        ask(
            &mut watcher,
            1,
            "$presence_stats",
            json!({ "channel": "room:1" })
        )
        .await,
        Ok(json!({ "clients": 3, "users": 2 }))
    );
    // Without presence: as `$presence`.
    assert_eq!(
        ask(
            &mut watcher,
            2,
            "$presence_stats",
            json!({ "channel": "chat:1" })
        )
        .await,
        Err("bad_request".into())
    );
    assert_eq!(
        ask(
            &mut watcher,
            3,
            "$presence_stats",
            json!({ "channel": "private:1" })
        )
        .await,
        Err("bad_request".into())
    );
    drop(held);
}

#[tokio::test]
async fn an_answer_is_bounded_by_the_outbound_queue_and_says_it_was_cut() {
    // An 8 KiB outbound queue: an answer holds at most 2 KiB of data.
    let mut limits = belay_proto::server::Limits::default();
    limits.set_outbound_bytes(8 << 10);
    let server = Server::builder()
        .config(ServerConfig::default().with_limits(limits))
        .authenticator(TokenIsUser)
        .build();
    let addr = start(&server).await;
    let big = "x".repeat(1500);
    let mut epoch = String::new();
    for _ in 0..3 {
        epoch = server
            .publish("feed", json!(big))
            .await
            .expect("published")
            .epoch;
    }
    let (mut raw, _) = Raw::connected(addr, Some("alice")).await;
    let first = ask(&mut raw, 1, "$history", json!({ "channel": "feed" }))
        .await
        .expect("an answer");
    assert_eq!(offsets(&first), [1]);
    assert_eq!(first["truncated"], json!(true));
    // Read on from the last offset given.
    let next = ask(
        &mut raw,
        2,
        "$history",
        json!({ "channel": "feed", "since": { "epoch": epoch, "offset": 1 } }),
    )
    .await
    .expect("an answer");
    assert_eq!(offsets(&next), [2]);
    assert_eq!(next["truncated"], json!(true));
}
