//! Three Redis Sentinels (quorum 2) watching the cluster's primary, for
//! the `sentinel-failover` fault: they notice a dead primary within a
//! second ([`DOWN_AFTER_MS`]) and promote its replica. Each runs in a
//! directory of its own (a Sentinel rewrites its configuration file) and
//! is killed when dropped; every wait is bounded.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Notify;

use super::cluster::free_port;

/// The master name the Sentinels watch the primary under.
pub(crate) const MASTER: &str = "belay-lab";
/// How long a silent primary is given before the Sentinels call it down.
const DOWN_AFTER_MS: u64 = 1_000;
/// How long the Sentinels may take to find the replica and each other.
const DISCOVERY_BOUND: Duration = Duration::from_secs(20);

/// Every Sentinel's log lines, and a wake-up for each new one.
type Log = Arc<(Mutex<Vec<String>>, Notify)>;

#[derive(Debug)]
pub(crate) struct Sentinels {
    children: Vec<Child>,
    ports: Vec<u16>,
    log: Log,
}

impl Sentinels {
    /// Start three watching the primary on `primary` (which has its
    /// `replicas` already) and wait until each knows the replicas and the
    /// other two.
    pub(crate) async fn start(
        dir: &Path,
        primary: u16,
        replicas: usize,
    ) -> Result<Sentinels, String> {
        let log: Log = Arc::new((Mutex::new(Vec::new()), Notify::new()));
        let mut sentinels = Sentinels {
            children: Vec::new(),
            ports: Vec::new(),
            log,
        };
        for _ in 0..3 {
            let port = free_port()?;
            let child = spawn(dir, port, primary, Arc::clone(&sentinels.log)).await?;
            sentinels.children.push(child);
            sentinels.ports.push(port);
        }
        sentinels
            .lines("+slave slave", 3 * replicas, DISCOVERY_BOUND)
            .await?;
        sentinels
            .lines("+sentinel sentinel", 6, DISCOVERY_BOUND)
            .await?;
        Ok(sentinels)
    }

    /// Their `redis://` URLs.
    pub(crate) fn urls(&self) -> Vec<String> {
        self.ports
            .iter()
            .map(|port| format!("redis://127.0.0.1:{port}"))
            .collect()
    }

    /// Wait (at most `bound`) until they have promoted a replica.
    pub(crate) async fn switched(&self, bound: Duration) -> Result<(), String> {
        self.lines("+switch-master", 1, bound).await
    }

    async fn lines(&self, needle: &str, count: usize, bound: Duration) -> Result<(), String> {
        let (lines, changed) = &*self.log;
        let seen = || {
            lines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .filter(|l| l.contains(needle))
                .count()
        };
        let found = tokio::time::timeout(bound, async {
            loop {
                let next = changed.notified();
                if seen() >= count {
                    return;
                }
                next.await;
            }
        })
        .await;
        found.map_err(|_| {
            format!(
                "the Sentinels logged {} of {count} `{needle}` within {bound:?}",
                seen()
            )
        })
    }
}

async fn spawn(dir: &Path, port: u16, primary: u16, log: Log) -> Result<Child, String> {
    let dir = dir.join(format!("sentinel-{port}"));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let conf = dir.join("sentinel.conf");
    let text = format!(
        "bind 127.0.0.1\nport {port}\ndir {}\n\
         sentinel monitor {MASTER} 127.0.0.1 {primary} 2\n\
         sentinel down-after-milliseconds {MASTER} {DOWN_AFTER_MS}\n\
         sentinel failover-timeout {MASTER} 5000\n",
        dir.display()
    );
    std::fs::write(&conf, text).map_err(|e| format!("cannot write {}: {e}", conf.display()))?;
    let mut child = Command::new("redis-server")
        .arg(&conf)
        .arg("--sentinel")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start redis-server --sentinel: {e}"))?;
    let stdout = child.stdout.take().ok_or("a Sentinel without stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let (kept, changed) = &*log;
            kept.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(line);
            changed.notify_waiters();
        }
    });
    Ok(child)
}
