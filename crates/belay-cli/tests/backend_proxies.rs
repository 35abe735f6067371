//! `belay serve --config` with the backend deciding: `auth.mode = "proxy"`
//! (the backend says who a token is), a namespace whose subscribes it
//! approves and one whose client publishes it approves; and `belay config
//! check` refusing a `backend` rule without its URL, with its line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use axum::routing::post;
use axum::{Json, Router};
use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage, Subscribe};
use belay_test_support::serving::spawn_listening;
use belay_test_support::sockets::Raw;
use serde_json::{json, Value};
use tokio::process::{Child, Command};

const SOON: Duration = Duration::from_secs(5);

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("belay-proxies-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Tokens `t-USER` are USER; `private:USER` is USER's; spam is refused.
fn app() -> Router {
    Router::new()
        .route(
            "/connect",
            post(|Json(body): Json<Value>| async move {
                match body["token"].as_str().and_then(|t| t.strip_prefix("t-")) {
                    Some(user) => Json(json!({"result": {"user": user, "expires_in_secs": 600}})),
                    None => {
                        Json(json!({"error": {"code": "unauthorized", "message": "log in first"}}))
                    }
                }
            }),
        )
        .route(
            "/subscribe",
            post(|Json(body): Json<Value>| async move {
                let mine = format!("private:{}", body["user"].as_str().unwrap_or_default());
                if body["channel"].as_str() == Some(mine.as_str()) {
                    Json(json!({"result": {}}))
                } else {
                    Json(json!({"error": {"code": "forbidden", "message": "not your room"}}))
                }
            }),
        )
        .route(
            "/publish",
            post(|Json(body): Json<Value>| async move {
                if body["data"] == json!("spam") {
                    Json(json!({"error": {"code": "forbidden", "message": "no spam"}}))
                } else {
                    Json(json!({"result": {}}))
                }
            }),
        )
}

async fn backend() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app()).await.expect("serve") });
    addr
}

fn config(backend: SocketAddr) -> String {
    format!(
        r#"[server]
listen = "127.0.0.1:0"
[auth]
mode = "proxy"
[proxy]
connect_url = "http://{backend}/connect"
subscribe_url = "http://{backend}/subscribe"
publish_url = "http://{backend}/publish"
timeout_ms = 2000
[[namespace]]
pattern = "private:*"
subscribe = "backend"
[[namespace]]
pattern = "chat:*"
publish = "backend"
"#
    )
}

async fn serve(file: &PathBuf) -> (Child, SocketAddr) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_belay"));
    command.arg("serve").arg("--config").arg(file);
    spawn_listening(&mut command).await
}

async fn next(raw: &mut Raw) -> ServerMessage {
    tokio::time::timeout(SOON, raw.recv_skipping_pings())
        .await
        .expect("an answer in time")
        .expect("open")
}

fn subscribe(channel: &str) -> ClientMessage {
    ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since: None,
        token: None,
    })
}

fn publish(id: u64, data: Value) -> ClientMessage {
    ClientMessage::Request(Request {
        id,
        method: "$publish".into(),
        params: json!({"channel": "chat:1", "data": data}),
        idem: None,
        timeout_ms: Some(5_000),
    })
}

#[tokio::test]
async fn the_backend_names_users_approves_subscribes_and_approves_publishes() {
    let dir = temp_dir("serve");
    let file = dir.join("belay.toml");
    std::fs::write(&file, config(backend().await)).expect("write");
    let (_server, addr) = serve(&file).await;

    let (mut alice, _) = Raw::connected(addr, Some("t-alice")).await;
    alice.send(&subscribe("private:alice")).await;
    assert!(matches!(
        next(&mut alice).await,
        ServerMessage::Subscribed(_)
    ));
    alice.send(&subscribe("private:bob")).await;
    let ServerMessage::Unsubscribed(refused) = next(&mut alice).await else {
        panic!("refused expected")
    };
    assert_eq!(refused.reason, "forbidden: not your room");

    alice.send(&subscribe("chat:1")).await;
    assert!(matches!(
        next(&mut alice).await,
        ServerMessage::Subscribed(_)
    ));
    alice.send(&publish(1, json!("spam"))).await;
    let ServerMessage::Response(answer) = next(&mut alice).await else {
        panic!("an answer expected")
    };
    assert!(matches!(answer.reply, Reply::Error(ref e) if e.code == "forbidden"));
    alice.send(&publish(2, json!("hi"))).await;
    let (mut approved, mut delivered) = (false, false);
    while !(approved && delivered) {
        match next(&mut alice).await {
            ServerMessage::Response(r) => approved = matches!(r.reply, Reply::Result(_)),
            ServerMessage::Publication(p) => delivered = p.offset == 1,
            other => panic!("unexpected {other:?}"),
        }
    }

    let mut stranger = Raw::open(addr).await;
    stranger
        .send_text(r#"{"type":"connect","protocol":1,"token":"forged"}"#)
        .await;
    assert_eq!(
        stranger.closed_within(SOON).await,
        belay_test_support::sockets::Closed::Frame(4001, "unauthorized: log in first".into())
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn config_check_names_the_line_of_a_backend_rule_without_its_url() {
    let dir = temp_dir("check");
    let file = dir.join("belay.toml");
    std::fs::write(
        &file,
        "[auth]\nmode = \"proxy\"\n[[namespace]]\npattern = \"chat:*\"\npublish = \"backend\"\n",
    )
    .expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_belay"))
        .args(["config", "check"])
        .arg(&file)
        .output()
        .expect("run belay config check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(":5:11: publish = \"backend\" needs proxy.publish_url"),
        "{stderr}"
    );
    assert!(
        stderr.contains("auth.mode = \"proxy\" needs proxy.connect_url"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
