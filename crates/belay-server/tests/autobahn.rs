//! The conformance echo route (`belay_server::conformance`): it upgrades
//! like `/ws` and echoes, and, when the `kosoku` runner is installed (by
//! `scripts/autobahn.sh`, or named by `$KOSOKU`), Autobahn cases 1-10 pass
//! against it with no failure.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use belay_server::conformance::{echo_router, ECHO_MAX_PAYLOAD, ECHO_PATH};
use belay_server::Server;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_websockets::{ClientBuilder, Message};

const SOON: Duration = Duration::from_secs(10);

/// Serve `/echo` and a default Belay server's routes on 127.0.0.1.
async fn start() -> SocketAddr {
    let server = Server::builder().build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = echo_router().merge(server.router());
    tokio::spawn(async move { server.serve(listener, router).await });
    addr
}

async fn get(addr: SocketAddr, path: &str) -> String {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(SOON, tcp.read_to_string(&mut response))
        .await
        .unwrap()
        .unwrap();
    response
}

#[tokio::test]
async fn the_echo_route_returns_text_and_binary_messages_up_to_16_mib() {
    let addr = start().await;
    let uri = format!("ws://{addr}{ECHO_PATH}");
    let (mut ws, _) = ClientBuilder::new()
        .uri(&uri)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let big = vec![0xa5_u8; ECHO_MAX_PAYLOAD];
    for message in [
        Message::text("héllo"),
        Message::binary(vec![0_u8, 1, 2, 255]),
        Message::binary(big),
    ] {
        ws.send(message.clone()).await.unwrap();
        let echoed = tokio::time::timeout(SOON, ws.next())
            .await
            .expect("echoed in time")
            .expect("open")
            .expect("a frame");
        assert_eq!(echoed.is_text(), message.is_text());
        assert!(echoed.as_payload()[..] == message.as_payload()[..]);
    }
    ws.close().await.unwrap();
}

#[tokio::test]
async fn the_echo_route_refuses_what_ws_refuses_the_same_way() {
    let addr = start().await;
    let echo = get(addr, ECHO_PATH).await;
    let ws = get(addr, "/ws").await;
    assert!(echo.starts_with("HTTP/1.1 400"), "{echo}");
    assert!(ws.starts_with("HTTP/1.1 400"), "{ws}");
    assert!(echo.ends_with("expected a WebSocket upgrade"), "{echo}");
    assert!(ws.ends_with("expected a WebSocket upgrade"), "{ws}");
}

/// `$KOSOKU`, or the venv `scripts/autobahn.sh` makes.
fn kosoku() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KOSOKU") {
        return Some(PathBuf::from(path));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let path = target.join("autobahn-venv/bin/kosoku");
    path.exists().then_some(path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autobahn_cases_1_to_10_pass_when_kosoku_is_installed() {
    let Some(kosoku) = kosoku() else {
        eprintln!("kosoku not installed (run scripts/autobahn.sh once): Autobahn cases skipped");
        return;
    };
    let addr = start().await;
    let outdir = std::env::temp_dir().join(format!("belay-autobahn-{}", std::process::id()));
    let mut command = tokio::process::Command::new(&kosoku);
    command.arg(format!("ws://{addr}{ECHO_PATH}"));
    for group in ["1", "2", "3", "4", "5", "6", "7", "9", "10"] {
        command.arg("-i").arg(format!("{group}.*"));
    }
    command.arg("-o").arg(&outdir).kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("kosoku finishes within 2 minutes")
        .expect("kosoku runs");
    let index = std::fs::read_to_string(outdir.join("index.json")).unwrap_or_else(|e| {
        panic!(
            "no report ({e}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    std::fs::remove_dir_all(&outdir).ok();
    let index: serde_json::Value = serde_json::from_str(&index).unwrap();
    let cases = index
        .as_object()
        .and_then(|agents| agents.values().next())
        .and_then(|cases| cases.as_object())
        .expect("one agent's cases");
    let failed: Vec<String> = cases
        .iter()
        .filter(|(_, case)| {
            !matches!(
                case["behavior"].as_str(),
                Some("OK" | "NON-STRICT" | "INFORMATIONAL")
            ) || !matches!(case["behaviorClose"].as_str(), Some("OK" | "INFORMATIONAL"))
        })
        .map(|(id, case)| format!("{id}: {} / {}", case["behavior"], case["behaviorClose"]))
        .collect();
    assert!(cases.len() > 250, "only {} cases ran", cases.len());
    assert!(failed.is_empty(), "failed cases: {failed:#?}");
    assert!(output.status.success(), "kosoku: {:?}", output.status);
}
