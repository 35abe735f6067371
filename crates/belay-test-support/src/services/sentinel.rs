//! [`RedisSentinels`]: a primary, a replica and three Sentinels watching
//! them, as a team runs Redis with failover, on loopback ports.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Notify;

use super::{free_port, RedisServer, RedisTls};

/// The master name the Sentinels watch the primary under.
pub const MASTER: &str = "belay-main";

/// How long the Sentinels wait before they call a silent primary down:
/// short, so a failover takes a few seconds in a test.
const DOWN_AFTER_MS: u64 = 1_000;

/// A primary, one replica and three Sentinels (quorum 2). Stopped when
/// dropped.
#[derive(Debug)]
pub struct RedisSentinels {
    /// The primary as started (a failover promotes the replica).
    pub primary: RedisServer,
    /// Its replica.
    pub replica: RedisServer,
    sentinels: Vec<Sentinel>,
    /// Everything speaks TLS only (with these files).
    tls: Option<RedisTls>,
    /// Every Sentinel's log lines, and a wake-up for each new one.
    log: Arc<(Mutex<Vec<String>>, Notify)>,
}

#[derive(Debug)]
struct Sentinel {
    addr: SocketAddr,
    child: Child,
    dir: std::path::PathBuf,
}

impl RedisSentinels {
    /// Start them all and wait until every Sentinel knows the replica and
    /// the other two Sentinels (so a failover can be agreed at once).
    pub async fn start() -> RedisSentinels {
        RedisSentinels::start_with_passwords(None).await
    }

    /// With passwords: `(redis, sentinel)`: the primary and the replica
    /// require the first (and use it with each other), the Sentinels
    /// require the second (and use the first with Redis).
    pub async fn start_with_passwords(passwords: Option<(&str, &str)>) -> RedisSentinels {
        let redis_auth: Vec<String> = match passwords {
            Some((redis, _)) => vec![
                "--requirepass".into(),
                redis.into(),
                "--masterauth".into(),
                redis.into(),
            ],
            None => Vec::new(),
        };
        let primary = RedisServer::start_with_args(redis_auth.clone()).await;
        let replica = RedisServer::start_replica_of(primary.addr(), redis_auth).await;
        RedisSentinels::watch(primary, replica, passwords, None).await
    }

    /// Everything over TLS only, with `tls`'s files: the primary, its
    /// replica (replicating over TLS) and the Sentinels (`rediss://`,
    /// reaching Redis over TLS). The certificate must name `127.0.0.1`:
    /// the Sentinels name the primary by address.
    pub async fn start_tls(tls: RedisTls) -> RedisSentinels {
        let primary = RedisServer::start_tls(tls.clone()).await;
        let replica = RedisServer::start_tls_replica_of(primary.addr(), tls.clone()).await;
        RedisSentinels::watch(primary, replica, None, Some(tls)).await
    }

    async fn watch(
        primary: RedisServer,
        replica: RedisServer,
        passwords: Option<(&str, &str)>,
        tls: Option<RedisTls>,
    ) -> RedisSentinels {
        let log = Arc::new((Mutex::new(Vec::new()), Notify::new()));
        let mut sentinels = Vec::new();
        for _ in 0..3 {
            sentinels.push(
                Sentinel::spawn(primary.addr(), passwords, tls.as_ref(), Arc::clone(&log)).await,
            );
        }
        let set = RedisSentinels {
            primary,
            replica,
            sentinels,
            tls,
            log,
        };
        // Each Sentinel logs the replica it found and each other Sentinel.
        set.wait_for_lines("+slave slave", 3, Duration::from_secs(20))
            .await;
        set.wait_for_lines("+sentinel sentinel", 6, Duration::from_secs(20))
            .await;
        set
    }

    /// The Sentinels' URLs (`rediss://` with TLS).
    pub fn sentinel_urls(&self) -> Vec<String> {
        let scheme = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        self.sentinels
            .iter()
            .map(|s| format!("{scheme}://{}", s.addr))
            .collect()
    }

    /// Kill the primary (`SIGKILL`) and wait until the Sentinels have
    /// promoted the replica (`+switch-master`); returns how long that took.
    pub async fn fail_over(&mut self) -> Duration {
        let started = tokio::time::Instant::now();
        self.primary.kill().await;
        self.wait_for_lines("+switch-master", 1, Duration::from_secs(30))
            .await;
        started.elapsed()
    }

    /// Wait until the Sentinels' logs hold `count` lines containing
    /// `needle`; panics after `limit`.
    pub async fn wait_for_lines(&self, needle: &str, count: usize, limit: Duration) {
        let (lines, changed) = &*self.log;
        let found = tokio::time::timeout(limit, async {
            loop {
                let notified = changed.notified();
                let seen = lines
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .iter()
                    .filter(|l| l.contains(needle))
                    .count();
                if seen >= count {
                    return;
                }
                notified.await;
            }
        })
        .await;
        assert!(
            found.is_ok(),
            "the Sentinels did not log {count} × {needle:?} within {limit:?}: {:?}",
            lines.lock().unwrap_or_else(PoisonError::into_inner)
        );
    }
}

impl Sentinel {
    async fn spawn(
        primary: SocketAddr,
        passwords: Option<(&str, &str)>,
        tls: Option<&RedisTls>,
        log: Arc<(Mutex<Vec<String>>, Notify)>,
    ) -> Sentinel {
        let port = free_port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let dir =
            std::env::temp_dir().join(format!("belay-sentinel-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory for the Sentinel");
        // A Sentinel rewrites its configuration file, so it gets one of its
        // own (`auth-pass` after the `monitor` line it refers to).
        let conf = dir.join("sentinel.conf");
        let auth = match passwords {
            Some((redis, sentinel)) => {
                format!("requirepass {sentinel}\nsentinel auth-pass {MASTER} {redis}\n")
            }
            None => String::new(),
        };
        std::fs::write(
            &conf,
            format!(
                "bind 127.0.0.1\n{listen}dir {dir}\n\
                 sentinel monitor {MASTER} {ip} {primary_port} 2\n\
                 sentinel down-after-milliseconds {MASTER} {DOWN_AFTER_MS}\n\
                 sentinel failover-timeout {MASTER} 5000\n\
                 sentinel parallel-syncs {MASTER} 1\n",
                listen = listen(port, tls),
                dir = dir.display(),
                ip = primary.ip(),
                primary_port = primary.port(),
            ) + &auth,
        )
        .expect("write sentinel.conf");
        let binary =
            std::env::var("BELAY_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned());
        let mut child = Command::new(&binary)
            .arg(&conf)
            .arg("--sentinel")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {binary} --sentinel: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let (kept, changed) = &*log;
                kept.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(format!("{port}: {line}"));
                changed.notify_waiters();
            }
        });
        Sentinel { addr, child, dir }
    }
}

/// A Sentinel's listening lines: `port N`, or TLS only on N (and TLS to
/// the Redis servers it watches).
fn listen(port: u16, tls: Option<&RedisTls>) -> String {
    match tls {
        None => format!("port {port}\n"),
        Some(tls) => format!(
            "port 0\ntls-port {port}\ntls-cert-file {}\ntls-key-file {}\n\
             tls-ca-cert-file {}\ntls-auth-clients no\ntls-replication yes\n",
            tls.cert.display(),
            tls.key.display(),
            tls.ca.display(),
        ),
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
