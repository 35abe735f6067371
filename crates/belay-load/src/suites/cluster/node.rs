//! One Belay node of a benchmark cluster, as its own process
//! (`cluster-bench node`), and the parent's handle on it.
//!
//! The node is the benchmark server of [`crate::servers::belay`] (the same
//! configuration, repeated in [`build`] because that one cannot take a
//! broker) on the memory broker or on Redis. It always listens on a private
//! loopback port of its own (the publisher and the recovery clients pick
//! their node with it), and with `--shared-port P` also on `127.0.0.1:P`
//! with `SO_REUSEPORT`, so several nodes share one port and the kernel
//! spreads new connections over them (no balancer). It prints
//! `LISTEN private=ADDR shared=ADDR|-`, answers `stats` on stdin with
//! `STATS open=N`, and exits when stdin closes.

use std::io::BufRead;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use belay_redis::{RedisBroker, RedisConfig};
use belay_server::broker::Broker;
use belay_server::rpc::{CallContext, RpcError};
use belay_server::{Server, ServerConfig};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::{TcpListener, TcpSocket};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::clients::target::Target;
use crate::clients::websocket::wall_micros;
use crate::measure::procfs::{self, ProcSample};

/// The method that publishes stamped messages (as in [`crate::servers::belay`],
/// plus `concurrency` and `wait`).
pub const PUBLISH_METHOD: &str = crate::loads::broadcast::PUBLISH_METHOD;

/// Accept backlog of the node's listeners (the kernel caps it at
/// `net.core.somaxconn`).
pub const BACKLOG: u32 = 4_096;

/// The benchmark server with `broker` (`None`: the embedded memory broker).
///
/// The configuration is [`crate::servers::belay::build`]'s: admission,
/// per-IP, pending-upgrade and message-rate bounds lifted, everything else
/// default. `bench.publish` takes `channel`, `messages` (≤ 1,000,000),
/// `rate` (publications/s in all), `concurrency` (publishing tasks, each
/// awaiting its publications one after the other at `rate / concurrency`;
/// default 1), `channels` (publication `n` on `CHANNEL.{n % channels}`;
/// default 1: all on `channel`) and `wait` (answer once every publication is done, with
/// `published`, `failed`, `elapsed_us`, `epoch`, `last_offset`; default:
/// answer at once, `null`). Each message is `{"n": N, "t": µs since the
/// epoch at publish time}`.
pub fn build(ping_interval: Duration, broker: Option<Arc<dyn Broker>>) -> Server {
    let mut config = ServerConfig::default()
        .with_accept_rate(1_000_000.0)
        .with_pending_upgrades(u32::MAX, u32::MAX)
        // A share no load reaches: every frame still takes it (the default
        // path's cost is measured), none waits.
        .with_work_share_per_ip(1e12, u32::MAX);
    config
        .limits
        .set_ping_interval(ping_interval)
        .set_max_connections_per_ip(u32::MAX)
        .set_messages_per_sec(1_000_000.0)
        .set_burst(1_000_000)
        .set_handshake_timeout(Duration::from_secs(60));
    let mut methods = belay_demo::methods();
    methods.register(
        PUBLISH_METHOD,
        move |ctx: CallContext, params: Value| async move {
            let job = PublishJob {
                server: ctx.server,
                channel: params["channel"].as_str().unwrap_or("bench").to_owned(),
                messages: params["messages"].as_u64().unwrap_or(0).min(1_000_000),
                rate: params["rate"].as_f64().unwrap_or(100.0).clamp(0.1, 1e6),
                concurrency: params["concurrency"].as_u64().unwrap_or(1).clamp(1, 256),
                channels: params["channels"].as_u64().unwrap_or(1).clamp(1, 100_000),
            };
            if params["wait"].as_bool().unwrap_or(false) {
                Ok::<_, RpcError>(job.run().await)
            } else {
                tokio::spawn(job.run());
                Ok(Value::Null)
            }
        },
    );
    let builder = Server::builder().config(config).methods(methods);
    match broker {
        Some(broker) => builder.broker(broker).build(),
        None => builder.build(),
    }
}

struct PublishJob {
    server: Server,
    channel: String,
    messages: u64,
    rate: f64,
    concurrency: u64,
    channels: u64,
}

impl PublishJob {
    /// Publish everything; the summary `bench.publish` answers with `wait`.
    async fn run(self) -> Value {
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        let k = self.concurrency.min(self.messages.max(1));
        for task in 0..k {
            let server = self.server.clone();
            let channel = self.channel.clone();
            let channels = self.channels;
            let (messages, rate) = (self.messages, self.rate / k as f64);
            tasks.spawn(async move {
                let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
                let (mut published, mut failed, mut last) = (0u64, 0u64, None);
                let mut n = task;
                while n < messages {
                    ticker.tick().await;
                    let on = if channels > 1 {
                        format!("{channel}.{}", n % channels)
                    } else {
                        channel.clone()
                    };
                    match server
                        .publish(&on, json!({ "n": n, "t": wall_micros() }))
                        .await
                    {
                        Ok(p) => {
                            published += 1;
                            last = Some((p.epoch, p.offset));
                        }
                        // A refused publication ends this task's share.
                        Err(_) => {
                            failed += (messages - n).div_ceil(k);
                            break;
                        }
                    }
                    n += k;
                }
                (published, failed, last)
            });
        }
        let (mut published, mut failed) = (0u64, 0u64);
        let mut top: Option<(String, u64)> = None;
        while let Some(done) = tasks.join_next().await {
            let Ok((p, f, last)) = done else { continue };
            published += p;
            failed += f;
            if let Some((epoch, offset)) = last {
                if top.as_ref().map_or(true, |(_, o)| offset > *o) {
                    top = Some((epoch, offset));
                }
            }
        }
        let elapsed = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let (epoch, last_offset) = top.unwrap_or_default();
        json!({
            "published": published,
            "failed": failed,
            "elapsed_us": elapsed,
            "epoch": epoch,
            "last_offset": last_offset,
        })
    }
}

/// A listening socket on `addr` with a large backlog, `SO_REUSEPORT` if asked.
pub fn listen(addr: SocketAddr, reuseport: bool) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    if reuseport {
        socket.set_reuseport(true)?;
    }
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// What the node process runs on.
#[derive(Debug, Clone)]
pub struct NodeArgs {
    /// `memory` or a `redis://` URL.
    pub broker: String,
    /// A port to share with other nodes (`SO_REUSEPORT`), if any.
    pub shared_port: Option<u16>,
    /// The server's ping interval.
    pub ping_interval: Duration,
    /// With Redis: publications wait for this many replicas (Redis `WAIT`).
    pub wait_replicas: usize,
    /// `broker` is a node of a Redis Cluster.
    pub cluster: bool,
}

/// The node process's main: serve until stdin closes. Warnings (the
/// broker's lost PUB/SUB connections, refused joins) go to stderr.
pub async fn serve(args: NodeArgs) -> Result<(), String> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let broker: Option<Arc<dyn Broker>> = if args.broker == "memory" {
        None
    } else if args.broker.starts_with("redis://") {
        let mut config = RedisConfig::new(args.broker.clone());
        if args.cluster {
            config = config.cluster([args.broker.clone()]);
        }
        if args.wait_replicas > 0 {
            config = config.wait_replicas(args.wait_replicas, Duration::from_millis(500));
        }
        let redis = RedisBroker::connect(config)
            .await
            .map_err(|e| format!("--broker {}: {e}", args.broker))?;
        Some(Arc::new(redis))
    } else {
        return Err(format!("--broker {}: memory or redis://…", args.broker));
    };
    let server = build(args.ping_interval, broker);
    let private =
        listen(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), false).map_err(|e| e.to_string())?;
    let private_addr = private.local_addr().map_err(|e| e.to_string())?;
    let shared = match args.shared_port {
        Some(port) => Some(
            listen(SocketAddr::from((Ipv4Addr::LOCALHOST, port)), true)
                .map_err(|e| format!("shared port {port}: {e}"))?,
        ),
        None => None,
    };
    let shared_addr = match &shared {
        Some(l) => l.local_addr().map_err(|e| e.to_string())?.to_string(),
        None => "-".into(),
    };
    println!("LISTEN private={private_addr} shared={shared_addr}");
    // Commands on stdin; exit when the parent closes it (or dies).
    let handle = server.clone();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line.trim() == "stats" {
                println!("STATS open={}", handle.metrics().open_connections());
            }
        }
        std::process::exit(0);
    });
    let router = server.router();
    match shared {
        Some(shared) => {
            let (a, b) = tokio::join!(
                server.serve(private, router.clone()),
                server.serve(shared, router)
            );
            a.and(b).map_err(|e| e.to_string())
        }
        None => server
            .serve(private, router)
            .await
            .map_err(|e| e.to_string()),
    }
}

/// A node process, seen from the benchmark. Killed (SIGKILL) when dropped.
#[derive(Debug)]
pub struct NodeProcess {
    child: Child,
    pid: u32,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    /// The node's own port.
    pub private: Target,
    /// The port it shares with the other nodes, if any.
    pub shared: Option<Target>,
}

impl NodeProcess {
    /// Start `cluster-bench node` (this executable) and wait, at most 30 s,
    /// for its `LISTEN` line.
    pub async fn start(
        broker: &str,
        shared_port: Option<u16>,
        ping_interval: Duration,
    ) -> Result<NodeProcess, String> {
        NodeProcess::start_waiting(broker, shared_port, ping_interval, 0).await
    }

    /// [`NodeProcess::start`], its publications waiting for
    /// `wait_replicas` replicas.
    pub async fn start_waiting(
        broker: &str,
        shared_port: Option<u16>,
        ping_interval: Duration,
        wait_replicas: usize,
    ) -> Result<NodeProcess, String> {
        NodeProcess::launch(broker, shared_port, ping_interval, wait_replicas, false).await
    }

    /// [`NodeProcess::start`] on the Redis Cluster `seed` is a node of.
    pub async fn start_on_cluster(
        seed: &str,
        ping_interval: Duration,
    ) -> Result<NodeProcess, String> {
        NodeProcess::launch(seed, None, ping_interval, 0, true).await
    }

    async fn launch(
        broker: &str,
        shared_port: Option<u16>,
        ping_interval: Duration,
        wait_replicas: usize,
        cluster: bool,
    ) -> Result<NodeProcess, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut command = Command::new(exe);
        command
            .args(["node", "--broker", broker, "--ping-interval-ms"])
            .arg(ping_interval.as_millis().to_string());
        if let Some(port) = shared_port {
            command.args(["--shared-port", &port.to_string()]);
        }
        if wait_replicas > 0 {
            command.args(["--wait-replicas", &wait_replicas.to_string()]);
        }
        if cluster {
            command.arg("--redis-cluster");
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start a node: {e}"))?;
        let pid = child.id().ok_or("the node exited at once")?;
        let stdin = child.stdin.take();
        let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .map_err(|_| "the node did not listen within 30 s".to_string())?
            .map_err(|e| e.to_string())?
            .ok_or("the node exited before listening")?;
        let (private, shared) = parse_listen(&line)?;
        Ok(NodeProcess {
            child,
            pid,
            stdin,
            lines,
            private: Target::local(private).map_err(|e| e.to_string())?,
            shared: shared
                .map(Target::local)
                .transpose()
                .map_err(|e| e.to_string())?,
        })
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// RSS and CPU from `/proc`.
    pub fn sample(&self) -> Result<ProcSample, String> {
        procfs::sample(self.pid).map_err(|e| format!("node {}: {e}", self.pid))
    }

    /// Open WebSocket sessions now (`belay_connections_open`), within 10 s.
    pub async fn open_connections(&mut self) -> Result<i64, String> {
        let stdin = self.stdin.as_mut().ok_or("node stopped")?;
        stdin
            .write_all(b"stats\n")
            .await
            .map_err(|e| e.to_string())?;
        stdin.flush().await.map_err(|e| e.to_string())?;
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .map_err(|_| "the node did not answer stats".to_string())?
            .map_err(|e| e.to_string())?
            .ok_or("the node exited")?;
        line.strip_prefix("STATS open=")
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| format!("unexpected node output {line:?}"))
    }

    /// `kill -9` and reap it.
    pub async fn kill9(&mut self) -> Result<(), String> {
        self.child.start_kill().map_err(|e| e.to_string())?;
        let _ = self.child.wait().await;
        Ok(())
    }

    /// Ask it to exit (stdin closed) and reap it, SIGKILL after 5 s.
    pub async fn stop(mut self) {
        drop(self.stdin.take());
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }
}

/// `LISTEN private=ADDR shared=ADDR|-`.
fn parse_listen(line: &str) -> Result<(SocketAddr, Option<SocketAddr>), String> {
    let bad = || format!("unexpected node output {line:?}");
    let rest = line.trim().strip_prefix("LISTEN ").ok_or_else(bad)?;
    let mut private = None;
    let mut shared = None;
    for part in rest.split_whitespace() {
        match part.split_once('=') {
            Some(("private", a)) => private = Some(a.parse().map_err(|_| bad())?),
            Some(("shared", "-")) => {}
            Some(("shared", a)) => shared = Some(a.parse().map_err(|_| bad())?),
            _ => return Err(bad()),
        }
    }
    Ok((private.ok_or_else(bad)?, shared))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_lines_parse() {
        let (p, s) = parse_listen("LISTEN private=127.0.0.1:5 shared=127.0.0.1:6\n").expect("ok");
        assert_eq!(p, "127.0.0.1:5".parse().expect("addr"));
        assert_eq!(s, Some("127.0.0.1:6".parse().expect("addr")));
        let (_, s) = parse_listen("LISTEN private=127.0.0.1:5 shared=-").expect("ok");
        assert_eq!(s, None);
        assert!(parse_listen("LISTEN shared=-").is_err());
        assert!(parse_listen("hello").is_err());
    }

    #[tokio::test]
    async fn reuseport_listeners_share_a_port() {
        let a = listen(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), true).expect("bind");
        let port = a.local_addr().expect("addr").port();
        let b = listen(SocketAddr::from((Ipv4Addr::LOCALHOST, port)), true).expect("second bind");
        assert_eq!(b.local_addr().expect("addr").port(), port);
        // Without the option a third bind fails.
        assert!(listen(SocketAddr::from((Ipv4Addr::LOCALHOST, port)), false).is_err());
    }

    #[tokio::test]
    async fn publish_job_publishes_everything_in_order_of_offsets() {
        let server = build(Duration::from_secs(25), None);
        let summary = PublishJob {
            server,
            channel: "t".into(),
            messages: 10,
            rate: 1e6,
            concurrency: 3,
            channels: 1,
        }
        .run()
        .await;
        assert_eq!(summary["published"], 10);
        assert_eq!(summary["failed"], 0);
        assert_eq!(summary["last_offset"], 10);
    }

    #[tokio::test]
    async fn publish_job_spreads_over_channels() {
        let server = build(Duration::from_secs(25), None);
        let summary = PublishJob {
            server: server.clone(),
            channel: "t".into(),
            messages: 9,
            rate: 1e6,
            concurrency: 3,
            channels: 3,
        }
        .run()
        .await;
        assert_eq!(summary["published"], 9);
        // Three publications on each of t.0, t.1 and t.2.
        assert_eq!(summary["last_offset"], 3);
    }
}
