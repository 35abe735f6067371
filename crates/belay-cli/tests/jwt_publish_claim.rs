//! `belay serve --config` with JWT auth: a token's `publish` claim lets
//! the client `$publish` to the channels it names, and nowhere else.

use std::time::Duration;

use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage};
use belay_test_support::sockets::Raw;
use serde_json::json;

mod jwt_serve;
use jwt_serve::{now, serve, temp_dir, token, SECRET};

const SOON: Duration = Duration::from_secs(5);

async fn publish(raw: &mut Raw, id: u64, channel: &str) -> Reply {
    raw.send(&ClientMessage::Request(Request {
        id,
        method: "$publish".into(),
        params: json!({"channel": channel, "data": {"n": id}}),
        idem: None,
        timeout_ms: None,
    }))
    .await;
    loop {
        let message = tokio::time::timeout(SOON, raw.recv_skipping_pings())
            .await
            .expect("an answer in time")
            .expect("open");
        if let ServerMessage::Response(r) = message {
            return r.reply;
        }
    }
}

#[tokio::test]
async fn the_publish_claim_grants_client_publish_to_its_patterns_only() {
    let dir = temp_dir("jwt-publish");
    let file = dir.join("belay.toml");
    std::fs::write(
        &file,
        "[server]\nlisten = \"127.0.0.1:0\"\n[auth]\nmode = \"jwt\"\n",
    )
    .expect("write");
    let (_server, addr) = serve(&file).await;
    let claims = json!({"sub": "alice", "exp": now() + 600, "publish": ["chat:*"]});
    let (mut raw, _) = Raw::connected(addr, Some(&token(claims, SECRET))).await;
    let allowed = publish(&mut raw, 1, "chat:a").await;
    assert!(matches!(allowed, Reply::Result(_)), "{allowed:?}");
    let Reply::Error(refused) = publish(&mut raw, 2, "news").await else {
        panic!("news is outside the grant")
    };
    assert_eq!(refused.code, "forbidden");
    let without = json!({"sub": "bob", "exp": now() + 600});
    let (mut raw, _) = Raw::connected(addr, Some(&token(without, SECRET))).await;
    let Reply::Error(refused) = publish(&mut raw, 1, "chat:a").await else {
        panic!("no publish claim, no client publish")
    };
    assert_eq!(refused.code, "forbidden");
    let _ = std::fs::remove_dir_all(dir);
}
