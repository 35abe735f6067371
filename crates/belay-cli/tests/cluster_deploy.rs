//! A deploy of a two-node cluster behind HAProxy, end to end: two
//! `belay serve --demo --broker redis://…` processes on one Redis, HAProxy
//! in front (health checks on `/readyz`, the client address sent with
//! `send-proxy-v2`), and Rust clients subscribed to `feed` and sending
//! requests through it. Node A is drained (SIGTERM, as a deploy stops a
//! process): its clients move to node B and resume with every publication,
//! none twice, no Resync, and every request sent answered.
//!
//! HAProxy and redis-server come from Debian (the test command installs
//! them); each runs on free loopback ports in a temporary directory. Every
//! wait is bounded.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use belay_client::{Client, ClientEvent, Item, RequestError};
use belay_test_support::services::{free_port, RedisServer};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;
use tokio::time::timeout;

const CLIENTS: usize = 16;

/// One `belay serve --demo` node on the shared Redis.
async fn node(redis: &RedisServer, port: u16) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_belay"))
        .args(["serve", "--demo", "--broker", &redis.url()])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--proxy-protocol", "--trusted-proxy", "127.0.0.1"])
        // HAProxy notices a 503 within 2 × 100 ms; a second is plenty.
        .args(["--lb-delay-secs", "1", "--drain-spread-ms", "300"])
        .args(["--feed-every-ms", "50", "--ping-interval-ms", "1000"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("run belay serve");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let up = timeout(Duration::from_secs(10), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("belay demo server: open") {
                return true;
            }
        }
        false
    })
    .await;
    assert!(matches!(up, Ok(true)), "node on {port} did not start");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

/// HAProxy in front of `nodes`, listening on `front`.
fn haproxy(dir: &Path, front: u16, nodes: &[u16]) -> Child {
    let servers: String = nodes
        .iter()
        .enumerate()
        .map(|(i, port)| {
            format!(
                "  server n{i} 127.0.0.1:{port} check inter 100ms fall 2 rise 1 send-proxy-v2\n"
            )
        })
        .collect();
    let config = format!(
        "defaults\n  mode http\n  timeout connect 1s\n  timeout client 30s\n  timeout server 30s\n  timeout tunnel 30s\n\
         frontend front\n  bind 127.0.0.1:{front}\n  default_backend nodes\n\
         backend nodes\n  balance roundrobin\n  option httpchk GET /readyz\n  http-check expect status 200\n{servers}"
    );
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, config).expect("write haproxy.cfg");
    Command::new("haproxy")
        .arg("-db")
        .arg("-f")
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("run haproxy (the test command installs it)")
}

/// A client with what it saw and its reader, caller and event tasks.
type Running = (
    Client,
    Arc<Mutex<Seen>>,
    tokio::task::JoinHandle<()>,
    tokio::task::JoinHandle<()>,
    tokio::task::JoinHandle<()>,
);

/// What one client saw.
#[derive(Debug, Default)]
struct Seen {
    offsets: Vec<u64>,
    epochs: Vec<String>,
    resyncs: usize,
    requests_failed: usize,
    requests_answered: usize,
    requests_not_sent: usize,
    requests_cut: usize,
    dials: usize,
    errors: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drained_node_hands_its_clients_to_the_other_without_loss() {
    let redis = RedisServer::start().await;
    let (port_a, port_b, front) = (free_port(), free_port(), free_port());
    let mut a = node(&redis, port_a).await;
    let _b = node(&redis, port_b).await;
    let dir = std::env::temp_dir().join(format!("belay-haproxy-{}-{front}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let _haproxy = haproxy(&dir, front, &[port_a, port_b]);
    let url = format!("ws://{}/ws", SocketAddr::from(([127, 0, 0, 1], front)));

    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let client = Client::builder(url.clone()).connect();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mut dials = client.events();
        let mut feed = client.subscribe("feed").await.expect("subscribe");
        let reader = {
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                while let Some(item) = feed.next().await {
                    let mut seen = seen.lock().await;
                    match item {
                        Item::Publication(p) => {
                            seen.offsets.push(p.offset);
                            seen.epochs.push(p.epoch);
                        }
                        Item::Resync => seen.resyncs += 1,
                        other => panic!("feed refused: {other:?}"),
                    }
                }
            })
        };
        let caller = {
            let (client, seen) = (client.clone(), Arc::clone(&seen));
            tokio::spawn(async move {
                for n in 0..u64::MAX {
                    // As an application does: wait for the connection, then
                    // call. A call that still finds it down was never sent
                    // (a typed refusal, counted apart); one that was sent
                    // must be answered.
                    if client.ready().await.is_err() {
                        return;
                    }
                    let answer = client.request("echo", json!({ "n": n })).await;
                    let mut seen = seen.lock().await;
                    match answer {
                        Ok(_) => seen.requests_answered += 1,
                        Err(RequestError::NotReady) => seen.requests_not_sent += 1,
                        // Sent in the instant node A closed (see below).
                        Err(RequestError::ConnectionClosed) => seen.requests_cut += 1,
                        Err(error) => {
                            seen.requests_failed += 1;
                            seen.errors.push(error.to_string());
                        }
                    }
                    drop(seen);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
        };
        let dial_count = {
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                while let Ok(event) = dials.recv().await {
                    if matches!(event, ClientEvent::Connecting { .. }) {
                        seen.lock().await.dials += 1;
                    }
                }
            })
        };
        clients.push((client, seen, reader, caller, dial_count));
    }

    // Everyone is live before the deploy.
    wait_for_publications(&clients, 5).await;

    // The deploy: node A gets SIGTERM and drains.
    let pid = a.id().expect("node A runs");
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill -TERM");
    assert!(killed.success());
    let exited = timeout(Duration::from_secs(20), a.wait()).await;
    assert!(matches!(exited, Ok(Ok(_))), "node A drained and exited");

    // And everyone is live again, on B.
    let before: Vec<usize> = {
        let mut v = Vec::new();
        for (_, seen, ..) in &clients {
            v.push(seen.lock().await.offsets.len());
        }
        v
    };
    wait_for_publications(&clients, before.iter().max().copied().unwrap_or(0) + 10).await;

    let (mut moved, mut not_sent, mut answered, mut cut) = (0, 0, 0, 0);
    for (client, seen, reader, caller, dial_count) in clients {
        caller.abort();
        dial_count.abort();
        client.close().await;
        let _ = timeout(Duration::from_secs(5), reader).await;
        let seen = seen.lock().await;
        if seen.dials > 1 {
            moved += 1;
        }
        not_sent += seen.requests_not_sent;
        answered += seen.requests_answered;
        cut += seen.requests_cut;
        assert_eq!(seen.resyncs, 0, "no Resync: {seen:?}");
        assert_eq!(
            seen.requests_failed, 0,
            "no request lost: {:?}",
            seen.errors
        );
        assert!(seen.requests_answered > 0);
        assert!(
            seen.epochs.windows(2).all(|w| w[0] == w[1]),
            "one epoch throughout"
        );
        assert!(
            seen.offsets.windows(2).all(|w| w[1] == w[0] + 1),
            "every offset once, in order: {:?}",
            seen.offsets
        );
    }
    eprintln!(
        "{moved} of {CLIENTS} clients dialled again; {answered} requests answered, \
         {not_sent} refused unsent, {cut} cut by the close"
    );
    assert!(moved > 0, "some clients were on node A and moved");
    // Known gap (docs/CLUSTER.md): a request the client sends in the same
    // instant the draining node sends its close frame cannot be answered
    // (RFC 6455: nothing after Close) and settles as `ConnectionClosed`.
    // At most one per moving client; seen in about 1 run of 4.
    assert!(cut <= moved, "{cut} requests cut by {moved} moves");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Until every client has seen at least `n` publications (bounded).
async fn wait_for_publications(clients: &[Running], n: usize) {
    let reached = timeout(Duration::from_secs(20), async {
        loop {
            let mut all = true;
            for (_, seen, ..) in clients {
                all &= seen.lock().await.offsets.len() >= n;
            }
            if all {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        reached.is_ok(),
        "every client saw {n} publications within 20 s"
    );
}
