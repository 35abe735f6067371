//! The server under test: `belay serve --demo` as a child process (in a
//! network namespace for the link cut, or as one node of a cluster on
//! Redis behind HAProxy), or the lab's socket.io app for the socket.io
//! clients (`peers/lab/server.mjs`), driven through its admin API.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::http;
use super::probe::{self, Position};
use super::socketio_app::{self, ServerApp};

/// How the lab starts servers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerSetup {
    /// The `belay` executable.
    pub exe: PathBuf,
    /// Server ping interval (the heartbeat the clients' watchdogs follow).
    pub ping_interval: Duration,
    /// How long the server waits for any frame after a ping.
    pub pong_timeout: Duration,
    /// How often the demo feed publishes.
    pub feed_every: Duration,
    /// Width of the reconnect window a drain spreads clients over.
    pub drain_spread: Duration,
    /// The app: `belay serve --demo`, or the socket.io app (the lab picks
    /// it per client: [`ClientKind::socketio_profile`](super::ClientKind::socketio_profile)).
    pub app: ServerApp,
    /// Node.js, for the socket.io app.
    pub node: PathBuf,
    /// `peers/lab/server.mjs`, the socket.io app (`npm ci` in peers/lab).
    pub socketio_script: PathBuf,
}

impl Default for ServerSetup {
    fn default() -> Self {
        ServerSetup {
            exe: "belay".into(),
            ping_interval: Duration::from_secs(1),
            pong_timeout: Duration::from_secs(1),
            feed_every: Duration::from_millis(100),
            drain_spread: Duration::from_secs(1),
            app: ServerApp::BelayDemo,
            node: "node".into(),
            socketio_script: "peers/lab/server.mjs".into(),
        }
    }
}

/// A running `belay serve --demo`.
#[derive(Debug)]
pub(crate) struct LabServer {
    child: Child,
    /// Where clients connect.
    addr: SocketAddr,
    /// Where the admin API and the metrics are (the socket.io app's own
    /// listener behind its freezable front; Belay: `addr`).
    admin: SocketAddr,
    app: ServerApp,
    /// It expects a PROXY header from loopback peers (a cluster node
    /// behind HAProxy): the lab's own calls send one.
    behind_proxy: bool,
}

/// How a cluster node differs from a lone server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeSetup {
    /// The broker's URL, `redis://127.0.0.1:PORT`.
    pub(crate) broker: String,
    /// With Sentinel: the master name and the Sentinels' URLs (the
    /// broker's URL then gives only the scheme).
    pub(crate) sentinel: Option<(String, Vec<String>)>,
    /// Publications wait for this many replicas (`--redis-wait-replicas`).
    pub(crate) wait_replicas: usize,
    /// On a Redis Cluster: more of its nodes (`--redis-cluster
    /// --redis-cluster-node …`; the broker's URL is one).
    pub(crate) cluster: Option<Vec<String>>,
    /// Seconds the balancer needs to notice `/readyz` = 503 in a drain.
    pub(crate) lb_delay_secs: u64,
    /// A config file holding every setting but the demo's (`--config`;
    /// the hosted fault's, with JWT auth: `hosted.rs`); the fields above
    /// then only say what it holds.
    pub(crate) config: Option<PathBuf>,
}

/// How long a server may take to say where it listens.
const START_BOUND: Duration = Duration::from_secs(10);

impl LabServer {
    /// Start a server listening on `listen` (port 0: any), inside network
    /// namespace `netns` if given.
    pub(crate) async fn start(
        setup: &ServerSetup,
        listen: SocketAddr,
        netns: Option<&str>,
    ) -> Result<LabServer, String> {
        LabServer::spawn(setup, listen, netns, None).await
    }

    /// Start one node of a cluster on a free loopback port: on the Redis
    /// broker, behind HAProxy (PROXY protocol from 127.0.0.1).
    pub(crate) async fn start_node(
        setup: &ServerSetup,
        node: &NodeSetup,
    ) -> Result<LabServer, String> {
        let listen = SocketAddr::from(([127, 0, 0, 1], 0));
        LabServer::spawn(setup, listen, None, Some(node)).await
    }

    async fn spawn(
        setup: &ServerSetup,
        listen: SocketAddr,
        netns: Option<&str>,
        node: Option<&NodeSetup>,
    ) -> Result<LabServer, String> {
        let lb_delay = node.map_or(0, |n| n.lb_delay_secs);
        let mut serve_args = vec![
            "serve".to_owned(),
            "--demo".into(),
            "--listen".into(),
            listen.to_string(),
            "--ping-interval-ms".into(),
            setup.ping_interval.as_millis().to_string(),
            "--pong-timeout-ms".into(),
            setup.pong_timeout.as_millis().to_string(),
            "--feed-every-ms".into(),
            setup.feed_every.as_millis().to_string(),
            "--drain-spread-ms".into(),
            setup.drain_spread.as_millis().to_string(),
            "--lb-delay-secs".into(),
            lb_delay.to_string(),
        ];
        if let Some(file) = node.and_then(|n| n.config.as_ref()) {
            serve_args = vec![
                "serve".to_owned(),
                "--demo".into(),
                "--feed-every-ms".into(),
                setup.feed_every.as_millis().to_string(),
                "--config".into(),
                file.display().to_string(),
            ];
        } else if let Some(node) = node {
            serve_args.extend([
                "--broker".into(),
                node.broker.clone(),
                "--proxy-protocol".into(),
                "--trusted-proxy".into(),
                "127.0.0.1".into(),
            ]);
            if node.wait_replicas > 0 {
                serve_args.extend([
                    "--redis-wait-replicas".into(),
                    node.wait_replicas.to_string(),
                ]);
            }
            if let Some(more) = &node.cluster {
                serve_args.push("--redis-cluster".into());
                for url in more {
                    serve_args.extend(["--redis-cluster-node".into(), url.clone()]);
                }
            }
            if let Some((master, urls)) = &node.sentinel {
                serve_args.extend(["--redis-sentinel-master".into(), master.clone()]);
                for url in urls {
                    serve_args.extend(["--redis-sentinel".into(), url.clone()]);
                }
            }
        }
        let (program, args) = match setup.app.socketio_profile() {
            Some(profile) if node.is_none() => (
                setup.node.clone(),
                socketio_app::args(setup, profile, listen),
            ),
            _ => (setup.exe.clone(), serve_args),
        };
        let mut command = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(&program);
                c
            }
            None => Command::new(&program),
        };
        command
            .args(args)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let found = tokio::time::timeout(START_BOUND, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(addr) = listening_address(&line) {
                    let admin = socketio_app::admin_address(&line).unwrap_or(addr);
                    return Some((addr, admin));
                }
            }
            None
        })
        .await;
        let Ok(Some((addr, admin))) = found else {
            let _ = child.kill().await;
            return Err(format!(
                "{} did not report its address within {START_BOUND:?}",
                program.display()
            ));
        };
        // Keep reading so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(LabServer {
            child,
            addr,
            admin,
            app: if node.is_some() {
                ServerApp::BelayDemo
            } else {
                setup.app
            },
            behind_proxy: node.is_some(),
        })
    }

    /// Where it listens.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `POST /admin/fault/{name}` with `body`.
    pub(crate) async fn fault(&self, name: &str, body: &str) -> Result<(), String> {
        let path = format!("/admin/fault/{name}");
        let answer = http::call(self.admin, "POST", &path, body, self.behind_proxy).await?;
        if answer.status == 200 {
            Ok(())
        } else {
            Err(format!(
                "fault {name}: HTTP {} {}",
                answer.status, answer.body
            ))
        }
    }

    /// A sample of `/metrics`.
    pub(crate) async fn metric(&self, name: &str) -> Result<f64, String> {
        let answer = http::call(self.admin, "GET", "/metrics", "", self.behind_proxy).await?;
        http::metric(&answer.body, name).ok_or_else(|| format!("no {name} in /metrics"))
    }

    /// The server's open connections, by its own count.
    pub(crate) async fn connections_open(&self) -> Result<u64, String> {
        let open = self.metric(self.app.connections_metric()).await?;
        Ok(open as u64)
    }

    /// The last publication of `channel`: Belay's is read by a session of
    /// the lab's own; the socket.io app's from its admin API.
    pub(crate) async fn position(&self, channel: &str) -> Result<Position, String> {
        if self.app == ServerApp::BelayDemo {
            return probe::position(self.addr, channel, None).await;
        }
        let answer = http::call(self.admin, "GET", "/admin/position", "", false).await?;
        socketio_app::position(&answer.body)
    }

    /// Wait (at most `bound`) for the process to exit on its own.
    pub(crate) async fn exited(&mut self, bound: Duration) -> bool {
        tokio::time::timeout(bound, self.child.wait()).await.is_ok()
    }

    /// Send `signal` (`TERM`, `KILL`) to the process.
    pub(crate) async fn signal(&self, signal: &str) -> Result<(), String> {
        let pid = self
            .child
            .id()
            .ok_or_else(|| format!("the server on {} has exited", self.addr))?;
        super::cluster::signal(pid, signal).await
    }

    /// Stop it now.
    pub(crate) async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

/// The address in `belay serve`'s first line: "… open http://ADDR/ …" or
/// "… listening on ws://ADDR/ws".
fn listening_address(line: &str) -> Option<SocketAddr> {
    let start = line.find("://")? + 3;
    let rest = &line[start..];
    let end = rest.find('/').unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_address_of_the_demo_banner() {
        let line = "belay demo server: open http://127.0.0.1:40123/ (WebSocket at ws://127.0.0.1:40123/ws)";
        assert_eq!(
            listening_address(line),
            Some("127.0.0.1:40123".parse().unwrap())
        );
        assert_eq!(listening_address("some log line"), None);
    }
}
