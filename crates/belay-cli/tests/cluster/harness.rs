//! The cluster and the fleet of clients every scenario uses.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use belay_client::belay_proto::Event as SessionEvent;
use belay_client::{Client, ClientEvent, Item, RequestError};
use belay_test_support::services::{free_port, RedisCluster, RedisSentinels, RedisServer, MASTER};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio::time::timeout;

/// `BELAY_CLUSTER_SEED_TIMING=1`: the seed's production timing (health
/// checks every 5 s, 4 failures to remove a node, the drain waiting 25 s
/// for the balancer) instead of the tests' short one (docs/CLUSTER.md).
fn seed_timing() -> bool {
    std::env::var_os("BELAY_CLUSTER_SEED_TIMING").is_some_and(|v| v == "1")
}

/// One `belay serve --demo` node on the shared Redis.
pub(crate) struct Node {
    pub(crate) port: u16,
    pub(crate) child: Child,
    /// The node's last log lines (stderr), at most [`LOG_LINES`].
    pub(crate) log: Arc<std::sync::Mutex<VecDeque<String>>>,
    /// Told of every new line.
    logged: Arc<tokio::sync::Notify>,
}

/// Log lines a node's record keeps.
const LOG_LINES: usize = 2_000;

/// What the nodes keep their channels in.
pub(crate) enum Backing {
    /// One Redis.
    Redis(Box<RedisServer>),
    /// A primary and a replica behind three Sentinels.
    Sentinels(Box<RedisSentinels>),
    /// A Redis Cluster.
    Cluster(Box<RedisCluster>),
}

impl Backing {
    /// `belay serve`'s flags for it.
    fn broker(&self) -> Vec<String> {
        match self {
            Backing::Redis(redis) => vec!["--broker".into(), redis.url()],
            Backing::Sentinels(set) => {
                // Only the scheme counts: the Sentinels name the primary.
                let mut flags: Vec<String> = vec![
                    "--broker".into(),
                    "redis://sentinel-named-primary".into(),
                    "--redis-sentinel-master".into(),
                    MASTER.into(),
                ];
                for url in set.sentinel_urls() {
                    flags.extend(["--redis-sentinel".into(), url]);
                }
                flags
            }
            Backing::Cluster(cluster) => {
                let urls = cluster.urls();
                let mut flags: Vec<String> =
                    vec!["--broker".into(), urls[0].clone(), "--redis-cluster".into()];
                for url in &urls[1..] {
                    flags.extend(["--redis-cluster-node".into(), url.clone()]);
                }
                flags
            }
        }
    }
}

impl Node {
    /// A node behind HAProxy (PROXY protocol from 127.0.0.1).
    async fn start(backing: &Backing, port: u16) -> Node {
        Node::spawn(
            backing.broker(),
            port,
            &["--proxy-protocol", "--trusted-proxy", "127.0.0.1"],
        )
        .await
    }

    /// A node reached directly (its admin routes from loopback, no token).
    pub(crate) async fn start_direct(redis: &RedisServer) -> Node {
        Node::spawn(vec!["--broker".into(), redis.url()], free_port(), &[]).await
    }

    /// Its address.
    pub(crate) fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    async fn spawn(broker: Vec<String>, port: u16, extra: &[&str]) -> Node {
        let mut child = Command::new(env!("CARGO_BIN_EXE_belay"))
            .args(["serve", "--demo"])
            .args(broker)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(extra)
            // HAProxy notices a 503 within 2 × 100 ms; a second is plenty
            // (25 s with the seed's timing, for 4 × 5 s).
            .args(["--lb-delay-secs", if seed_timing() { "25" } else { "1" }])
            .args(["--drain-spread-ms", "300"])
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
        let log = Arc::new(std::sync::Mutex::new(VecDeque::new()));
        let logged = Arc::new(tokio::sync::Notify::new());
        let (kept, told) = (Arc::clone(&log), Arc::clone(&logged));
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                {
                    let mut kept = kept.lock().unwrap();
                    if kept.len() == LOG_LINES {
                        kept.pop_front();
                    }
                    kept.push_back(line);
                }
                told.notify_waiters();
            }
        });
        Node {
            port,
            child,
            log,
            logged,
        }
    }

    /// Whether a log line holding every one of `parts` comes within
    /// `bound` (or came already).
    pub(crate) async fn logs_within(&self, parts: &[&str], bound: Duration) -> bool {
        let found = || {
            self.log
                .lock()
                .unwrap()
                .iter()
                .any(|line| parts.iter().all(|part| line.contains(part)))
        };
        timeout(bound, async {
            loop {
                let next = self.logged.notified();
                if found() {
                    return;
                }
                next.await;
            }
        })
        .await
        .is_ok()
    }

    /// Send `signal` (`TERM`, `KILL`) and wait for the process to exit.
    pub(crate) async fn signal_and_wait(&mut self, signal: &str, within: Duration) {
        let pid = self.child.id().expect("the node runs");
        let sent = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
        let exited = timeout(within, self.child.wait()).await;
        assert!(
            matches!(exited, Ok(Ok(_))),
            "the node exited after {signal}"
        );
    }
}

/// Redis, the nodes, and HAProxy in front of them.
pub(crate) struct Cluster {
    pub(crate) backing: Backing,
    pub(crate) nodes: Vec<Node>,
    pub(crate) url: String,
    /// A URL per node, through HAProxy but pinned to that node.
    pub(crate) direct: Vec<String>,
    _haproxy: Child,
    dir: PathBuf,
}

impl Cluster {
    /// `nodes` nodes on one Redis.
    pub(crate) async fn start(nodes: usize) -> Cluster {
        Cluster::start_on(Backing::Redis(Box::new(RedisServer::start().await)), nodes).await
    }

    /// `nodes` nodes on Redis behind Sentinels.
    pub(crate) async fn start_on_sentinels(nodes: usize) -> Cluster {
        Cluster::start_on(
            Backing::Sentinels(Box::new(RedisSentinels::start().await)),
            nodes,
        )
        .await
    }

    /// `nodes` nodes on a Redis Cluster of three primaries with a replica
    /// each.
    pub(crate) async fn start_on_redis_cluster(nodes: usize) -> Cluster {
        Cluster::start_on(
            Backing::Cluster(Box::new(RedisCluster::start(3, 1).await)),
            nodes,
        )
        .await
    }

    async fn start_on(backing: Backing, nodes: usize) -> Cluster {
        let mut started = Vec::new();
        for _ in 0..nodes {
            started.push(Node::start(&backing, free_port()).await);
        }
        let front = free_port();
        let dir =
            std::env::temp_dir().join(format!("belay-haproxy-{}-{front}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let ports: Vec<u16> = started.iter().map(|n| n.port).collect();
        let direct: Vec<u16> = ports.iter().map(|_| free_port()).collect();
        let haproxy = haproxy(&dir, front, &ports, &direct);
        let url = format!("ws://{}/ws", SocketAddr::from(([127, 0, 0, 1], front)));
        until_ready(SocketAddr::from(([127, 0, 0, 1], front))).await;
        Cluster {
            backing,
            nodes: started,
            url,
            direct: direct
                .iter()
                .map(|port| format!("ws://127.0.0.1:{port}/ws"))
                .collect(),
            _haproxy: haproxy,
            dir,
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Until HAProxy on `front` answers `/readyz` from a node (bounded).
async fn until_ready(front: SocketAddr) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ready = timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(mut tcp) = tokio::net::TcpStream::connect(front).await {
                let ask =
                    format!("GET /readyz HTTP/1.1\r\nHost: {front}\r\nConnection: close\r\n\r\n");
                let mut answer = Vec::new();
                if tcp.write_all(ask.as_bytes()).await.is_ok()
                    && tcp.read_to_end(&mut answer).await.is_ok()
                    && answer.starts_with(b"HTTP/1.1 200")
                {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(ready.is_ok(), "HAProxy routes to a ready node within 10 s");
}

/// HAProxy in front of `nodes`, listening on `front` (and on `direct`,
/// one port per node).
fn haproxy(dir: &Path, front: u16, nodes: &[u16], direct: &[u16]) -> Child {
    let servers: String = nodes
        .iter()
        .enumerate()
        .map(|(i, port)| {
            let check = if seed_timing() {
                "inter 5s fall 4"
            } else {
                "inter 100ms fall 2"
            };
            format!("  server n{i} 127.0.0.1:{port} check {check} rise 1 send-proxy-v2\n")
        })
        .collect();
    // And one frontend per node, pinned to it (`direct`), for a client
    // that must reach one node through the same PROXY protocol path.
    let pinned: String = nodes
        .iter()
        .zip(direct)
        .enumerate()
        .map(|(i, (port, front))| {
            format!(
                "frontend direct{i}\n  bind 127.0.0.1:{front}\n  default_backend node{i}\n\
                 backend node{i}\n  server n{i} 127.0.0.1:{port} send-proxy-v2\n"
            )
        })
        .collect();
    let config = format!(
        "defaults\n  mode http\n  timeout connect 1s\n  timeout client 30s\n  timeout server 30s\n  timeout tunnel 30s\n\
         frontend front\n  bind 127.0.0.1:{front}\n  default_backend nodes\n\
         backend nodes\n  balance roundrobin\n  option httpchk GET /readyz\n  http-check expect status 200\n{servers}{pinned}"
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

/// What a client's `feed` delivered, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Got {
    Publication { epoch: String, offset: u64 },
    Resync,
}

/// What one client saw.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    pub(crate) feed: Vec<Got>,
    pub(crate) requests_failed: usize,
    pub(crate) requests_answered: usize,
    pub(crate) requests_not_sent: usize,
    pub(crate) requests_cut: usize,
    /// Sessions opened (1: never moved).
    pub(crate) sessions: usize,
    pub(crate) errors: Vec<String>,
}

impl Seen {
    pub(crate) fn publications(&self) -> usize {
        self.feed
            .iter()
            .filter(|g| matches!(g, Got::Publication { .. }))
            .count()
    }

    pub(crate) fn resyncs(&self) -> usize {
        self.feed.iter().filter(|g| **g == Got::Resync).count()
    }

    /// Between Resyncs: one epoch, every offset once, in order. A new
    /// epoch only ever follows a Resync.
    pub(crate) fn without_silent_gaps(&self) -> Result<(), String> {
        let mut last: Option<(&str, u64)> = None;
        for got in &self.feed {
            match got {
                Got::Resync => last = None,
                Got::Publication { epoch, offset } => {
                    if let Some((e, o)) = last {
                        if e != epoch || *offset != o + 1 {
                            return Err(format!("{e}:{o} then {epoch}:{offset} without a Resync"));
                        }
                    }
                    last = Some((epoch, *offset));
                }
            }
        }
        Ok(())
    }
}

/// A client with what it saw and its reader, caller and event tasks.
pub(crate) struct Member {
    pub(crate) client: Client,
    pub(crate) seen: Arc<Mutex<Seen>>,
    reader: JoinHandle<()>,
    caller: JoinHandle<()>,
    events: JoinHandle<()>,
}

/// Clients subscribed to `feed` through `url`, each calling `echo` in a
/// loop.
pub(crate) async fn fleet(url: &str, clients: usize) -> Vec<Member> {
    let mut members = Vec::new();
    for _ in 0..clients {
        let client = Client::builder(url.to_owned())
            .connect()
            .expect("a usable URL");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mut dials = client.events();
        let mut feed = client.subscribe("feed").await.expect("subscribe");
        let reader = {
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                while let Some(item) = feed.next().await {
                    let mut seen = seen.lock().await;
                    match item {
                        Item::Publication(p) => seen.feed.push(Got::Publication {
                            epoch: p.epoch,
                            offset: p.offset,
                        }),
                        Item::Resync => seen.feed.push(Got::Resync),
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
                    // must be answered, or settle as cut by a close.
                    if client.ready().await.is_err() {
                        return;
                    }
                    let answer = client.request("echo", json!({ "n": n })).await;
                    let mut seen = seen.lock().await;
                    match answer {
                        Ok(_) => seen.requests_answered += 1,
                        Err(RequestError::NotReady) => seen.requests_not_sent += 1,
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
        let events = {
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                while let Ok(event) = dials.recv().await {
                    if matches!(event, ClientEvent::Session(SessionEvent::Connected { .. })) {
                        seen.lock().await.sessions += 1;
                    }
                }
            })
        };
        members.push(Member {
            client,
            seen,
            reader,
            caller,
            events,
        });
    }
    members
}

/// Until every client has seen at least `n` publications (bounded).
pub(crate) async fn wait_for_publications(members: &[Member], n: usize) {
    let reached = timeout(Duration::from_secs(20), async {
        loop {
            let mut all = true;
            for member in members {
                all &= member.seen.lock().await.publications() >= n;
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

/// Until every client has seen `more` publications beyond what the most
/// advanced one had now.
pub(crate) async fn wait_for_more(members: &[Member], more: usize) {
    let mut most = 0;
    for member in members {
        most = most.max(member.seen.lock().await.publications());
    }
    wait_for_publications(members, most + more).await;
}

/// Stop every client and check what a lost history asks of each: told
/// at least once to resync (`why` it lost it), never a silent gap, its
/// connection up throughout, no request cut.
pub(crate) async fn finish_resynced(members: Vec<Member>, why: &str) {
    for seen in finish(members).await {
        assert!(seen.resyncs() >= 1, "{why} is announced: {seen:?}");
        seen.without_silent_gaps()
            .expect("a new epoch only after a Resync");
        assert_eq!(
            seen.sessions, 1,
            "the connection stayed up: a service fault"
        );
        assert_eq!(seen.requests_cut, 0);
    }
}

/// Stop every client and return what each saw.
pub(crate) async fn finish(members: Vec<Member>) -> Vec<Seen> {
    let mut all = Vec::new();
    for member in members {
        member.caller.abort();
        member.events.abort();
        member.client.close().await;
        let _ = timeout(Duration::from_secs(5), member.reader).await;
        let seen = std::mem::take(&mut *member.seen.lock().await);
        all.push(seen);
    }
    all
}
