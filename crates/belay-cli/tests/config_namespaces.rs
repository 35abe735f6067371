//! `[[namespace]]` tables in `belay serve --config`: a `chat:*` table with
//! `history_size = 3` keeps 3 publications per channel, other channels the
//! [history] default; `belay config check` reports an unknown key in a
//! table with its line.

use std::net::SocketAddr;
use std::time::Duration;

use belay_proto::message::{ClientMessage, ServerMessage, StreamPosition, Subscribe};
use belay_test_support::sockets::Raw;

mod jwt_serve;
use jwt_serve::{serve, temp_dir};

const SOON: Duration = Duration::from_secs(5);

async fn next(raw: &mut Raw) -> ServerMessage {
    tokio::time::timeout(SOON, raw.recv_skipping_pings())
        .await
        .expect("an answer in time")
        .expect("open")
}

/// Whether a resume of `channel` after `offset` in `epoch` is recovered.
async fn recovered(addr: SocketAddr, channel: &str, epoch: &str, offset: u64) -> bool {
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since: Some(StreamPosition {
            epoch: epoch.into(),
            offset,
        }),
        token: None,
    }))
    .await;
    match next(&mut raw).await {
        ServerMessage::Subscribed(s) => s.recovered,
        other => panic!("subscribed expected, got {other:?}"),
    }
}

/// Publish 5 on `channel` with the HTTP API; the epoch.
async fn publish_five(addr: SocketAddr, channel: &str) -> String {
    let mut epoch = String::new();
    for n in 1..=5 {
        let body = format!(r#"{{"channel":"{channel}","data":{n}}}"#);
        let reply = belay_test_support::sockets::http_call_with(
            addr,
            "POST",
            "/api/publish",
            &["Authorization: Bearer k-of-some-length-0123456789"],
            Some(&body),
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        let v: serde_json::Value = serde_json::from_str(&reply.body).expect("JSON");
        epoch = v["epoch"].as_str().expect("epoch").to_owned();
    }
    epoch
}

#[tokio::test]
async fn a_namespace_table_bounds_its_channels_history() {
    let dir = temp_dir("namespaces");
    let file = dir.join("belay.toml");
    std::fs::write(
        &file,
        "[server]\nlisten = \"127.0.0.1:0\"\n[api]\nkey = \"k-of-some-length-0123456789\"\n\n[[namespace]]\npattern = \"chat:*\"\nhistory_size = 3\n",
    )
    .expect("write");
    let (_server, addr) = serve(&file).await;
    let chat = publish_five(addr, "chat:a").await;
    let news = publish_five(addr, "news").await;
    assert!(
        recovered(addr, "chat:a", &chat, 2).await,
        "chat:a holds 3..=5"
    );
    assert!(!recovered(addr, "chat:a", &chat, 1).await, "but not 2");
    assert!(
        recovered(addr, "news", &news, 0).await,
        "news keeps the default"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_unknown_key_in_a_namespace_table_is_an_error_with_its_line() {
    let dir = temp_dir("namespaces-check");
    let file = dir.join("belay.toml");
    std::fs::write(
        &file,
        "[[namespace]]\npattern = \"chat:*\"\nhistory_sise = 3\n[[namespace]]\npresence = true\n",
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
        stderr.contains(":3:1: unknown key `history_sise` in [[namespace]]"),
        "{stderr}"
    );
    assert!(stderr.contains("needs a `pattern`"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn config_check_refuses_subscription_tokens_without_jwt_auth() {
    let dir = temp_dir("token-check");
    let file = dir.join("belay.toml");
    std::fs::write(
        &file,
        "[[namespace]]\npattern = \"private:*\"\nsubscribe = \"token\"\npublish = \"token\"\n",
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
        stderr.contains(":3:13: subscribe = \"token\" needs auth.mode = \"jwt\""),
        "{stderr}"
    );
    // Tokens are for subscribes: `publish = "token"` is not a choice.
    assert!(stderr.contains(":4:"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}
