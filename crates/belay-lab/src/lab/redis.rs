//! The cluster's `redis-server`s: without persistence, on loopback ports,
//! a primary or a replica of one, each in a directory of its own; killed
//! when dropped. From `PATH` (Debian's `redis-server`).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::cluster::{free_port, signal, PORT_TRIES, START_BOUND};

/// A `redis-server` without persistence (`--save "" --appendonly no`) on
/// a loopback port.
#[derive(Debug)]
pub(crate) struct Redis {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    /// A replica's `--replicaof 127.0.0.1 PORT`.
    primary: Option<u16>,
}

impl Redis {
    pub(crate) async fn start(dir: &Path) -> Result<Redis, String> {
        Redis::start_with(dir, None).await
    }

    /// A replica of the Redis on `primary`; ready once synchronised.
    pub(crate) async fn start_replica_of(dir: &Path, primary: u16) -> Result<Redis, String> {
        Redis::start_with(dir, Some(primary)).await
    }

    async fn start_with(dir: &Path, primary: Option<u16>) -> Result<Redis, String> {
        let mut last = String::new();
        for _ in 0..PORT_TRIES {
            let port = free_port()?;
            // Each in a directory of its own (a replica writes its copy).
            let dir = dir.join(format!("redis-{port}"));
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            let mut redis = Redis {
                child: None,
                port,
                dir,
                primary,
            };
            match redis.spawn().await {
                Ok(()) => return Ok(redis),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Start the process on `self.port`; ready when its log says so.
    async fn spawn(&mut self) -> Result<(), String> {
        let replica_of: Vec<String> = match self.primary {
            Some(port) => vec!["--replicaof".into(), "127.0.0.1".into(), port.to_string()],
            None => Vec::new(),
        };
        let ready_line = if self.primary.is_some() {
            "sync: Finished with success"
        } else {
            "Ready to accept connections"
        };
        let mut child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--logfile", ""])
            .args(replica_of)
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                format!("cannot start redis-server (Debian's redis-server; scripts/test installs it): {e}")
            })?;
        let stdout = child.stdout.take().ok_or("redis-server: no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(START_BOUND, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains(ready_line) {
                    return true;
                }
            }
            false
        })
        .await;
        if !matches!(ready, Ok(true)) {
            let _ = child.kill().await;
            return Err(format!(
                "redis-server on port {} did not become ready within {START_BOUND:?}",
                self.port
            ));
        }
        // The rest of the log is read (and dropped) so the pipe never fills.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        self.child = Some(child);
        Ok(())
    }

    /// Its `redis://` URL.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Its port.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// `SIGKILL`, and wait until it is gone (it stays gone).
    pub(crate) async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    fn pid(&self) -> Result<u32, String> {
        self.child
            .as_ref()
            .and_then(Child::id)
            .ok_or_else(|| "redis-server is not running".to_owned())
    }

    /// `SIGSTOP`: Redis answers nothing, closes nothing and keeps its data.
    pub(crate) async fn pause(&self) -> Result<(), String> {
        signal(self.pid()?, "STOP").await
    }

    /// `SIGCONT`: it goes on where it stopped.
    pub(crate) async fn resume(&self) -> Result<(), String> {
        signal(self.pid()?, "CONT").await
    }

    /// `SIGKILL` (no goodbye to its clients), then a new redis-server on
    /// the same port, empty: it keeps nothing on disk.
    pub(crate) async fn restart(&mut self) -> Result<(), String> {
        if let Some(mut child) = self.child.take() {
            // Kills and waits until it is gone.
            let _ = child.kill().await;
        }
        self.spawn().await
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            // SIGKILL ends a stopped process too.
            let _ = child.start_kill();
        }
    }
}
