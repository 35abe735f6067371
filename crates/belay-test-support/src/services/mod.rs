//! Real services for tests, started on free loopback ports in a temporary
//! directory of their own and stopped when dropped: nothing relies on a
//! service the machine happens to run.
//!
//! The binaries come from `PATH` (the test command installs Debian's
//! `redis-server` and `nginx`); `BELAY_REDIS_SERVER` and `BELAY_NGINX` name
//! other ones.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

mod cluster;
mod sentinel;

pub use cluster::RedisCluster;
pub use sentinel::{RedisSentinels, MASTER};

/// A `redis-server` without persistence, on a loopback port.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    addr: SocketAddr,
    dir: PathBuf,
    /// With TLS: the PEM files (certificate, key, CA) it serves with; it
    /// then listens for TLS only.
    tls: Option<RedisTls>,
    /// More arguments (a replica's `--replicaof`).
    extra: Vec<String>,
}

/// PEM files for a TLS `redis-server`.
#[derive(Debug, Clone)]
pub struct RedisTls {
    /// The server's certificate chain.
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
    /// The CA that signed it (clients are not asked for certificates).
    pub ca: PathBuf,
}

impl RedisServer {
    /// Start one on a free port; panics (failing the test with the reason)
    /// when `redis-server` is missing or does not answer within 10 s.
    pub async fn start() -> RedisServer {
        RedisServer::start_with(None, Vec::new()).await
    }

    /// Start one that speaks TLS only, with `tls`'s files.
    pub async fn start_tls(tls: RedisTls) -> RedisServer {
        RedisServer::start_with(Some(tls), Vec::new()).await
    }

    /// Start one with more `redis-server` arguments (`--requirepass …`).
    pub async fn start_with_args(extra: Vec<String>) -> RedisServer {
        RedisServer::start_with(None, extra).await
    }

    /// Start a replica of `primary` (with more arguments: `--masterauth
    /// …`) and wait until it has synchronised.
    pub async fn start_replica_of(primary: SocketAddr, mut extra: Vec<String>) -> RedisServer {
        extra.extend([
            "--replicaof".into(),
            primary.ip().to_string(),
            primary.port().to_string(),
        ]);
        RedisServer::start_with(None, extra).await
    }

    /// A TLS-only replica of the TLS-only `primary` (replication over TLS
    /// too), once it has synchronised.
    pub async fn start_tls_replica_of(primary: SocketAddr, tls: RedisTls) -> RedisServer {
        let extra = vec![
            "--replicaof".into(),
            primary.ip().to_string(),
            primary.port().to_string(),
            "--tls-replication".into(),
            "yes".into(),
        ];
        RedisServer::start_with(Some(tls), extra).await
    }

    async fn start_with(tls: Option<RedisTls>, extra: Vec<String>) -> RedisServer {
        let port = free_port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let dir = std::env::temp_dir().join(format!("belay-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory for redis-server");
        let mut server = RedisServer {
            child: None,
            addr,
            dir,
            tls,
            extra,
        };
        server.spawn().await;
        server
    }

    /// Its `redis://` URL (`rediss://` with TLS, naming `localhost`).
    pub fn url(&self) -> String {
        match self.tls {
            Some(_) => format!("rediss://localhost:{}", self.addr.port()),
            None => format!("redis://{}", self.addr),
        }
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Kill it (`SIGKILL`: no goodbye to its clients) and wait until it is
    /// gone.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// Whether it runs (not killed).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Stop it answering without closing anything (`SIGSTOP`): a silent
    /// Redis, its data kept. [`resume`](Self::resume) undoes it.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Let a paused Redis answer again (`SIGCONT`).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self
            .child
            .as_ref()
            .and_then(Child::id)
            .expect("redis-server runs");
        let sent = std::process::Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("kill");
        assert!(sent.success(), "kill {signal} {pid}");
    }

    /// Start it again on the same port, empty (it keeps nothing on disk).
    pub async fn restart(&mut self) {
        self.kill().await;
        self.spawn().await;
    }

    async fn spawn(&mut self) {
        let binary =
            std::env::var("BELAY_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned());
        let port = self.addr.port().to_string();
        let listen: Vec<std::ffi::OsString> = match &self.tls {
            None => vec!["--port".into(), port.into()],
            Some(tls) => vec![
                "--port".into(),
                "0".into(),
                "--tls-port".into(),
                port.into(),
                "--tls-cert-file".into(),
                tls.cert.clone().into(),
                "--tls-key-file".into(),
                tls.key.clone().into(),
                "--tls-ca-cert-file".into(),
                tls.ca.clone().into(),
                "--tls-auth-clients".into(),
                "no".into(),
            ],
        };
        let mut child = Command::new(&binary)
            .args(["--bind", "127.0.0.1"])
            .args(listen)
            .args(["--save", "", "--appendonly", "no", "--logfile", ""])
            .args(&self.extra)
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {binary} (the test command installs redis-server): {e}")
            });
        let stdout = child.stdout.take().expect("piped stdout");
        self.child = Some(child);
        // Ready when it says so in its log (a replica: once it has the
        // primary's data); the rest of the log is read (and dropped) so the
        // pipe never fills.
        let ready_line = if self.extra.iter().any(|a| a == "--replicaof") {
            "sync: Finished with success"
        } else {
            "Ready to accept connections"
        };
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(Duration::from_secs(10), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains(ready_line) {
                    return true;
                }
            }
            false
        })
        .await;
        assert!(
            matches!(ready, Ok(true)),
            "redis-server on port {} did not become ready within 10 s",
            self.addr.port()
        );
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A loopback port nothing listens on now (the OS picks it).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Debian's `nginx` as a reverse proxy to one upstream, as people run it in
/// front of an application: its defaults (HTTP/1.0 to the upstream, no
/// `Upgrade` passed on, so a WebSocket upgrade reaches the upstream as a
/// plain GET; response buffering on), on a loopback port, with its files
/// in a temporary directory.
#[derive(Debug)]
pub struct Nginx {
    child: Child,
    addr: SocketAddr,
    dir: PathBuf,
}

impl Nginx {
    /// Proxy everything to `upstream`; panics (failing the test with the
    /// reason) when `nginx` is missing or does not listen within 10 s.
    /// `BELAY_NGINX` names another binary.
    pub async fn proxy_to(upstream: SocketAddr) -> Nginx {
        let port = free_port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let dir = std::env::temp_dir().join(format!("belay-nginx-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory for nginx");
        let d = dir.display();
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log;\nevents {{ worker_connections 512; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
             \x20 fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             \x20 server {{\n    listen 127.0.0.1:{port};\n    location / {{ proxy_pass http://{upstream}; }}\n  }}\n}}\n"
        );
        let conf_path = dir.join("nginx.conf");
        std::fs::write(&conf_path, conf).expect("write nginx.conf");
        let binary = std::env::var("BELAY_NGINX").unwrap_or_else(|_| "nginx".to_owned());
        let child = Command::new(&binary)
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(&conf_path)
            .arg("-e")
            .arg(dir.join("error.log"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {binary} (the test command installs nginx): {e}")
            });
        let listening = tokio::time::timeout(Duration::from_secs(10), async {
            while tokio::net::TcpStream::connect(addr).await.is_err() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(
            listening.is_ok(),
            "nginx did not listen on {addr} within 10 s"
        );
        Nginx { child, addr, dir }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
