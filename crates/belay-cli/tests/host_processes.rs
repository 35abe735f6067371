//! Idle sleep end to end with real processes: `belay serve --config` as
//! the relay (JWT auth, short host timings), `belay host` as the resident
//! host, and a client in this test. The host sleeps while no client wants
//! it, a client's call wakes it and succeeds within the wake bound, and it
//! sleeps again after the grace; SIGTERM stops it cleanly.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use belay_client::belay_proto::host::HostTiming;
use belay_client::Client;
use belay_test_support::serving::spawn_listening;
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;

const SECRET: &str = "a-test-secret-of-some-length";
const PATIENCE: Duration = Duration::from_secs(15);

fn token(claims: Value) -> String {
    let exp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3_600;
    let mut claims = claims;
    claims["exp"] = json!(exp);
    encode(
        &Header::default(),
        &claims,
        &EncodingKey::from_secret(SECRET.as_bytes()).expect("a key"),
    )
    .expect("a token")
}

/// The relay's host timing, as its config file says.
fn timing() -> HostTiming {
    HostTiming::default()
        .with_heartbeat_interval(Duration::from_millis(300))
        .with_connect_allowance(Duration::from_secs(3))
        .with_grace(Duration::from_millis(500))
}

fn config_file() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("belay-hosts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("belay.toml");
    std::fs::write(
        &file,
        "[server]\nlisten = \"127.0.0.1:0\"\n[auth]\nmode = \"jwt\"\n\
         [hosts]\nheartbeat_interval_ms = 300\nconnect_allowance_ms = 3000\ngrace_ms = 500\n",
    )
    .expect("config written");
    file
}

/// Wait for the host's next stdout line that satisfies `want`.
async fn line_where(
    lines: &mut mpsc::UnboundedReceiver<Value>,
    want: impl Fn(&Value) -> bool,
) -> Value {
    tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.recv().await {
            if want(&line) {
                return line;
            }
        }
        panic!("the host's output ended");
    })
    .await
    .expect("the host reported it in time")
}

#[tokio::test]
async fn a_host_sleeps_wakes_for_a_call_within_the_bound_and_sleeps_again() {
    let (_relay, addr) = spawn_listening(
        Command::new(env!("CARGO_BIN_EXE_belay"))
            .arg("serve")
            .arg("--config")
            .arg(config_file())
            .env("BELAY_AUTH_JWT_SECRET", SECRET),
    )
    .await;
    let url = format!("ws://{addr}/ws");
    let mut host = Command::new(env!("CARGO_BIN_EXE_belay"))
        .args([
            "host",
            &url,
            "--min-awake-ms",
            "300",
            "--interval-ms",
            "300",
            "--token",
        ])
        .arg(token(json!({"sub": "pc-e2e", "host": "pc-e2e"})))
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("belay host starts");
    let host_pid = host.id().expect("a pid");
    let (tx, mut lines) = mpsc::unbounded_channel();
    let mut stdout = BufReader::new(host.stdout.take().expect("stdout")).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = stdout.next_line().await {
            let _ = tx.send(serde_json::from_str::<Value>(&line).expect("JSON lines"));
        }
    });

    // Nobody wants it: it beats and sleeps.
    let asleep = line_where(&mut lines, |l| l["beats"].as_u64() >= Some(3)).await;
    assert_eq!(asleep["needed"], false, "{asleep}");
    assert_eq!(asleep["awake"], false);
    assert_eq!(asleep["starts"], 0);
    assert_eq!(asleep["host"], "pc-e2e");

    let client = Client::builder(url)
        .token(token(json!({"sub": "alice", "channels": ["$host:*"]})))
        .host_timing(&timing())
        .connect()
        .expect("a usable URL");
    client.ready().await.expect("ready");
    let asked = Instant::now();
    let info: Value = client
        .call_host("pc-e2e", "info", json!(null))
        .await
        .expect("the woken host answers")
        .parse()
        .expect("JSON");
    let waited = asked.elapsed();
    assert_eq!(
        info["pid"],
        json!(host_pid),
        "the answer came from the host process"
    );
    assert!(
        waited <= timing().wake_bound() + Duration::from_secs(1),
        "answered in {waited:?}; the bound is {:?}",
        timing().wake_bound()
    );
    line_where(&mut lines, |l| l["awake"] == true && l["starts"] == 1).await;

    // The grace (500 ms) and the minimum awake time (300 ms) pass.
    let slept = line_where(&mut lines, |l| l["awake"] == false && l["stops"] == 1).await;
    assert_eq!(slept["starts"], 1, "{slept}");
    assert_eq!(slept["needed"], false);

    let killed = std::process::Command::new("kill")
        .args(["-TERM", &host_pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    line_where(&mut lines, |l| l["ev"] == "stopped").await;
    let status = tokio::time::timeout(PATIENCE, host.wait())
        .await
        .expect("exits")
        .expect("status");
    assert!(status.success(), "{status}");
    client.close().await;
}
