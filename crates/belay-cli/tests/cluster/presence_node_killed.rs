//! Presence when a node is killed with SIGKILL: two `belay serve --config`
//! processes on one Redis, `room:*` tracking presence with a 2 s
//! `broker.presence_ttl_ms`. A member on each node is seen from node B;
//! both stay past several TTLs while their nodes refresh them; after node A
//! is killed (no leave, no cleanup), B's presence query loses A's member
//! within the TTL (plus a bound for the polling and the loaded machine),
//! and B's own member stays throughout.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage, Subscribe};
use belay_test_support::services::RedisServer;
use belay_test_support::sockets::Raw;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::timeout;

const TTL: Duration = Duration::from_millis(2_000);
/// Beyond the TTL: one refresh period for the last refresh before the
/// kill, the polling interval, and two shared cores busy with other tests.
const SLACK: Duration = Duration::from_millis(3_000);
const SOON: Duration = Duration::from_secs(10);
const CHANNEL: &str = "room:1";

/// A `belay serve --config FILE` process.
struct Node {
    child: Child,
    addr: SocketAddr,
}

impl Node {
    async fn start(file: &Path) -> Node {
        let mut child = Command::new(env!("CARGO_BIN_EXE_belay"))
            .arg("serve")
            .arg("--config")
            .arg(file)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("run belay serve");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        // "belay server listening on ws://ADDR/ws"
        let addr = timeout(SOON, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(rest) = line.split("listening on ws://").nth(1) {
                    return rest
                        .split("/ws")
                        .next()
                        .and_then(|a| a.parse::<SocketAddr>().ok());
                }
            }
            None
        })
        .await
        .ok()
        .flatten()
        .expect("the node says where it listens");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Node { child, addr }
    }

    /// SIGKILL, and wait until the process is gone.
    async fn kill_9(&mut self) {
        let pid = self.child.id().expect("the node runs");
        let sent = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .expect("kill");
        assert!(sent.success(), "kill -KILL {pid}");
        let exited = timeout(SOON, self.child.wait())
            .await
            .expect("the node exits after SIGKILL")
            .expect("wait");
        assert!(!exited.success(), "killed, not exited: {exited:?}");
    }
}

fn config_file(redis: &RedisServer) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "belay-presence-killed-{}-{}",
        std::process::id(),
        redis.addr().port()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("belay.toml");
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\
             [broker]\nurl = \"{}\"\npresence_ttl_ms = {}\n\n\
             [[namespace]]\npattern = \"room:*\"\npresence = true\n",
            redis.url(),
            TTL.as_millis()
        ),
    )
    .expect("write the config");
    file
}

/// A session on `addr` subscribed to [`CHANNEL`]; its session id (the
/// `client` of its presence entry).
async fn member(addr: SocketAddr) -> (Raw, String) {
    let (mut raw, welcome) = Raw::connected(addr, None).await;
    let ServerMessage::Welcome(welcome) = welcome else {
        panic!("welcome expected, got {welcome:?}")
    };
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: CHANNEL.into(),
        since: None,
        token: None,
    }))
    .await;
    let answer = timeout(SOON, raw.recv_skipping_pings())
        .await
        .expect("an answer in time")
        .expect("open");
    assert!(matches!(answer, ServerMessage::Subscribed(_)), "{answer:?}");
    (raw, welcome.session)
}

/// The `client` of every member of [`CHANNEL`], by a `$presence` query.
async fn members(raw: &mut Raw, id: u64) -> BTreeSet<String> {
    raw.send(&ClientMessage::Request(Request {
        id,
        method: "$presence".into(),
        params: json!({ "channel": CHANNEL }),
        idem: None,
        timeout_ms: None,
    }))
    .await;
    loop {
        let message = timeout(SOON, raw.recv_skipping_pings())
            .await
            .expect("an answer in time")
            .expect("open");
        let ServerMessage::Response(response) = message else {
            continue;
        };
        assert_eq!(response.id, id);
        let Reply::Result(result) = response.reply else {
            panic!("members expected, got {:?}", response.reply)
        };
        let value: Value = serde_json::from_str(result.get()).expect("JSON");
        return value["members"]
            .as_array()
            .expect("members")
            .iter()
            .map(|m| {
                assert_eq!(m["user"], json!("anonymous"), "{m}");
                m["client"].as_str().expect("client").to_owned()
            })
            .collect();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_with_sigkill_loses_its_members_from_presence_within_the_ttl() {
    let redis = RedisServer::start().await;
    let file = config_file(&redis);
    let mut a = Node::start(&file).await;
    let b = Node::start(&file).await;

    let (_alice, on_a) = member(a.addr).await;
    let (mut bob, on_b) = member(b.addr).await;
    let both: BTreeSet<String> = [on_a.clone(), on_b.clone()].into();
    let mut id = 0;

    // Both are seen from node B (the adds are written before `subscribed`).
    id += 1;
    assert_eq!(members(&mut bob, id).await, both, "both members, from B");
    // And stay past 1.5 TTLs while their nodes refresh them: what expires
    // below is the killed node's, not every entry at its TTL.
    let alive_since = Instant::now();
    while alive_since.elapsed() < TTL * 3 / 2 {
        id += 1;
        assert_eq!(
            members(&mut bob, id).await,
            both,
            "both refreshed at {:?}",
            alive_since.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    a.kill_9().await;
    let killed = Instant::now();
    let gone_after = loop {
        id += 1;
        let seen = members(&mut bob, id).await;
        assert!(
            seen.contains(&on_b),
            "B's own member stays ({:?} after the kill): {seen:?}",
            killed.elapsed()
        );
        if !seen.contains(&on_a) {
            assert_eq!(seen, [on_b.clone()].into());
            break killed.elapsed();
        }
        assert!(
            killed.elapsed() < TTL + SLACK,
            "A's member {on_a} still present {:?} after the kill (TTL {TTL:?})",
            killed.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!("node A's member left B's presence {gone_after:?} after SIGKILL (TTL {TTL:?})");

    // B's member is still refreshed: another TTL on, it is still there.
    let after = Instant::now();
    while after.elapsed() < TTL {
        id += 1;
        assert_eq!(
            members(&mut bob, id).await,
            [on_b.clone()].into(),
            "B's member alone"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(b);
    if let Some(dir) = file.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}
