//! Secrets that open the server are checked before it starts: an empty or
//! short `[api] key` or `server.admin_token` (in the file or the
//! environment) is an error with its line at `config check` and at `serve`,
//! and the HTTP API never opens to an empty key. With
//! `server.internal_listen`, `/metrics` and the admin routes leave the
//! clients' port for a listener of their own.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use belay_test_support::sockets::{http_call, http_call_with};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const SOON: Duration = Duration::from_secs(10);

fn file_with(name: &str, text: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("belay-secrets-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("belay.toml");
    std::fs::write(&file, text).expect("write");
    (dir, file)
}

fn belay() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_belay"));
    command
        .env_remove("BELAY_API_KEY")
        .env_remove("BELAY_SERVER_ADMIN_TOKEN");
    command
}

#[test]
fn an_empty_api_key_is_refused_with_its_line() {
    let (dir, file) = file_with(
        "empty",
        "[server]\nlisten = \"127.0.0.1:0\"\n[api]\nkey = \"\"\n",
    );
    let name = file.display().to_string();
    let at_check = format!("{name}:4:7: api.key: a secret cannot be empty");
    let at_serve = "line 4, column 7: api.key: a secret cannot be empty".to_owned();
    for (verb, said) in [
        (&["config", "check"][..], at_check),
        (&["serve", "--config"][..], at_serve),
    ] {
        let out = belay().args(verb).arg(&file).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{verb:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&said), "{verb:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn short_keys_and_admin_tokens_are_refused_from_the_file_and_the_environment() {
    let (dir, file) = file_with(
        "short",
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_token = \"s3cret\"\n",
    );
    let name = file.display().to_string();
    let out = belay()
        .args(["config", "check"])
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{name}:3:15: server.admin_token: too short: at least 16 characters (found 6)"
        )),
        "{stderr}"
    );
    let (dir2, clean) = file_with("env", "[server]\nlisten = \"127.0.0.1:0\"\n");
    for value in ["", "short-key"] {
        let out = belay()
            .args(["serve", "--config"])
            .arg(&clean)
            .env("BELAY_API_KEY", value)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{value:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("environment BELAY_API_KEY (api.key):"),
            "{value:?}: {stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

#[tokio::test]
async fn an_embedded_api_with_an_empty_key_opens_to_nobody() {
    let server = belay_server::Server::builder().build();
    let routes = server
        .router()
        .merge(belay_standalone::api::router(&server, "", 4_096, None));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let serving = server.clone();
    tokio::spawn(async move { serving.serve(listener, routes).await });
    let body = r#"{"channel":"news","data":1}"#;
    for header in ["X-API-Key: ", "Authorization: Bearer "] {
        let answer = http_call_with(addr, "POST", "/api/publish", &[header], Some(body)).await;
        assert_eq!(answer.status, 401, "{header:?}");
    }
}

/// `belay serve --config FILE`: the internal listener's address and the
/// clients'.
async fn serve_internal(file: &PathBuf) -> (tokio::process::Child, SocketAddr, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_belay"))
        .args(["serve", "--config"])
        .arg(file)
        .env_remove("BELAY_API_KEY")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("starts");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let (mut internal, mut public) = (None, None);
    tokio::time::timeout(SOON, async {
        while let Ok(Some(line)) = lines.next_line().await {
            let after = |mark: &str, end: &str| {
                line.split(mark)
                    .nth(1)
                    .and_then(|rest| rest.split(end).next())
                    .and_then(|a| a.parse::<SocketAddr>().ok())
            };
            if line.contains("internal routes") {
                internal = after("http://", "/");
            }
            if line.contains("listening on ws://") {
                public = after("ws://", "/ws");
                break;
            }
        }
    })
    .await
    .expect("the server says where it listens");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (
        child,
        internal.expect("the internal address"),
        public.expect("the clients' address"),
    )
}

#[tokio::test]
async fn an_internal_listener_takes_metrics_and_admin_off_the_clients_port() {
    let (dir, file) = file_with(
        "internal",
        "[server]\nlisten = \"127.0.0.1:0\"\ninternal_listen = \"127.0.0.1:0\"\n",
    );
    let (_child, internal, public) = serve_internal(&file).await;
    assert_eq!(http_call(public, "GET", "/metrics", None).await.status, 404);
    assert_eq!(
        http_call(public, "POST", "/admin/drain", None).await.status,
        404
    );
    assert_eq!(http_call(public, "GET", "/healthz", None).await.status, 200);
    let metrics = http_call(internal, "GET", "/metrics", None).await;
    assert_eq!(metrics.status, 200);
    assert!(
        metrics.body.contains("belay_connections"),
        "{}",
        metrics.body
    );
    // The admin routes are there, behind their guard (loopback passes).
    assert_eq!(
        http_call(internal, "GET", "/admin/hosts", None)
            .await
            .status,
        200
    );
    let _ = std::fs::remove_dir_all(&dir);
}
