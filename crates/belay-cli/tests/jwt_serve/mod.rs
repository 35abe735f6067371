//! A `belay serve` configured by a file with JWT auth, for the tests that
//! run against the binary (config_file.rs, config_namespaces.rs,
//! jwt_publish_claim.rs, tokens.rs).

// Each test crate uses a part of it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use belay_test_support::serving::spawn_listening;
use jsonwebtoken::{encode, EncodingKey, Header};
use tokio::process::{Child, Command};

/// The HS256 secret every test server is given (in the environment).
pub(crate) const SECRET: &str = "a-test-secret-of-some-length";

pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("belay-config-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// `belay serve --config FILE` (with `--demo`: its `feed` ticks every
/// 50 ms) with the JWT secret in the environment.
pub(crate) async fn serve_with(file: &Path, demo: bool) -> (Child, SocketAddr) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_belay"));
    command.arg("serve");
    if demo {
        command.args(["--demo", "--feed-every-ms", "50"]);
    }
    command
        .arg("--config")
        .arg(file)
        .env("BELAY_AUTH_JWT_SECRET", SECRET);
    spawn_listening(&mut command).await
}

pub(crate) async fn serve(file: &Path) -> (Child, SocketAddr) {
    serve_with(file, false).await
}

pub(crate) async fn serve_demo(file: &Path) -> (Child, SocketAddr) {
    serve_with(file, true).await
}

pub(crate) fn token(claims: serde_json::Value, secret: &str) -> String {
    encode(
        &Header::default(),
        &claims,
        &EncodingKey::from_secret(secret.as_bytes()).expect("a key"),
    )
    .expect("a token")
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

pub(crate) fn jwt_file(name: &str) -> (PathBuf, PathBuf) {
    let dir = temp_dir(name);
    let file = dir.join("belay.toml");
    std::fs::write(
        &file,
        "[server]\nlisten = \"127.0.0.1:0\"\n[auth]\nmode = \"jwt\"\n[heartbeat]\nping_interval_ms = 1000\n",
    )
    .expect("write");
    (dir, file)
}
