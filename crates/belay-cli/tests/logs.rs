//! `belay serve`'s log lines, read from a real process's stderr: in JSON
//! (`--log-format json`) every connection's life is one line per step with
//! stable fields (accepted, welcomed, closed; refused), the periodic summary
//! counts them at `info`; in text no colour reaches a pipe.

use std::process::Stdio;
use std::time::Duration;

use belay_test_support::sockets::{http_call, Raw};
use futures_util::SinkExt;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio_websockets::{CloseCode, Message};

const BOUND: Duration = Duration::from_secs(20);

/// `belay serve` with `flags` (and a listener on a free port unless they
/// name a config file), at `RUST_LOG=debug`, and its stderr lines.
async fn serve(flags: &[&str]) -> (Child, std::net::SocketAddr, mpsc::UnboundedReceiver<String>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_belay"));
    command.arg("serve");
    if !flags.contains(&"--config") {
        command.args(["--listen", "127.0.0.1:0"]);
    }
    let mut child = command
        .args(flags)
        .env("RUST_LOG", "debug")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("belay serve starts");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = tx.send(line);
        }
    });
    let addr = tokio::time::timeout(BOUND, async {
        while let Some(line) = rx.recv().await {
            if let Some(rest) = line.split("ws://").nth(1) {
                if let Some(addr) = rest.split("/ws").next().and_then(|a| a.parse().ok()) {
                    return addr;
                }
            }
        }
        panic!("the server ended before saying where it listens");
    })
    .await
    .expect("the server says where it listens");
    (child, addr, rx)
}

/// The next JSON line whose message is `message` (other lines skipped).
async fn json_line(lines: &mut mpsc::UnboundedReceiver<String>, message: &str) -> Value {
    tokio::time::timeout(BOUND, async {
        while let Some(line) = lines.recv().await {
            let Ok(value) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if value["message"] == message {
                return value;
            }
        }
        panic!("stderr ended before a `{message}` line");
    })
    .await
    .unwrap_or_else(|_| panic!("a `{message}` line within the bound"))
}

/// The next text line containing every one of `parts`.
async fn text_line(lines: &mut mpsc::UnboundedReceiver<String>, parts: &[&str]) -> String {
    tokio::time::timeout(BOUND, async {
        while let Some(line) = lines.recv().await {
            assert!(!line.contains('\u{1b}'), "no colour in a pipe: {line:?}");
            if parts.iter().all(|p| line.contains(p)) {
                return line;
            }
        }
        panic!("stderr ended before a line with {parts:?}");
    })
    .await
    .unwrap_or_else(|_| panic!("a line with {parts:?} within the bound"))
}

#[tokio::test]
async fn a_connections_life_is_logged_in_json_with_stable_fields_and_summarised() {
    let (_child, addr, mut lines) =
        serve(&["--log-format", "json", "--log-summary-secs", "1"]).await;
    let (mut client, welcome) = Raw::connected(addr, None).await;
    let accepted = json_line(&mut lines, "accepted").await;
    assert_eq!(accepted["level"], "DEBUG");
    assert_eq!(accepted["target"], "belay::connection");
    assert_eq!(accepted["transport"], "websocket");
    assert_eq!(accepted["source"], "127.0.0.1");
    let peer = accepted["peer"].as_str().expect("peer").to_owned();
    let welcomed = json_line(&mut lines, "welcomed").await;
    assert_eq!(welcomed["peer"], peer.as_str());
    assert_eq!(welcomed["codec"], "json");
    assert_eq!(welcomed["user"], "anonymous");
    let session = welcomed["session"].as_str().expect("session");
    assert!(
        format!("{welcome:?}").contains(session),
        "the session of the welcome: {welcome:?}"
    );
    client
        .ws
        .send(Message::close(Some(CloseCode::NORMAL_CLOSURE), "bye"))
        .await
        .expect("close");
    let closed = json_line(&mut lines, "closed").await;
    assert_eq!(closed["peer"], peer.as_str());
    assert_eq!(closed["code"], 1000);
    assert_eq!(closed["by"], "client");
    assert!(closed["duration_ms"].as_u64().is_some(), "{closed}");
    let refused = http_call(addr, "GET", "/ws", None).await;
    assert_eq!(refused.status, 400, "not an upgrade");
    let line = json_line(&mut lines, "refused").await;
    assert_eq!(
        (line["status"].as_u64(), line["transport"].as_str()),
        (Some(400), Some("websocket"))
    );
    let summary = json_line(&mut lines, "summary").await;
    assert_eq!(summary["level"], "INFO");
    assert_eq!(summary["target"], "belay::server");
    assert_eq!(summary["welcomed"], 1, "{summary}");
    assert_eq!(summary["closed_by_code"], "1000:1", "{summary}");
    assert_eq!(summary["open"], 0, "{summary}");
}

#[tokio::test]
async fn text_lines_carry_the_same_fields_without_colour_in_a_pipe() {
    let (_child, addr, mut lines) = serve(&[]).await;
    let (mut client, _) = Raw::connected(addr, None).await;
    text_line(
        &mut lines,
        &[
            "belay::connection",
            "welcomed",
            "transport=\"websocket\"",
            "codec=\"json\"",
        ],
    )
    .await;
    client
        .ws
        .send(Message::close(Some(CloseCode::GOING_AWAY), ""))
        .await
        .expect("close");
    text_line(&mut lines, &["closed", "code=1001", "by=\"client\""]).await;
}

#[tokio::test]
async fn the_config_files_log_section_chooses_json() {
    let dir = std::env::temp_dir().join(format!("belay-logs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("belay.toml");
    std::fs::write(
        &file,
        "[server]\nlisten = \"127.0.0.1:0\"\n[log]\nformat = \"json\"\nsummary_secs = 0\n",
    )
    .expect("write");
    let (_child, addr, mut lines) = serve(&["--config", file.to_str().expect("utf-8")]).await;
    let (_client, _) = Raw::connected(addr, None).await;
    let welcomed = json_line(&mut lines, "welcomed").await;
    assert_eq!(welcomed["transport"], "websocket");
    let _ = std::fs::remove_dir_all(&dir);
}
