//! HAProxy in front of a cluster herd's nodes: TCP round-robin on a
//! loopback port, each node checked every 100 ms (out after two failed
//! checks, back after one good one), as the cluster tests run it. From
//! `PATH` (Debian's `haproxy`); stopped when dropped.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use crate::LoadError;

/// HAProxy, running.
#[derive(Debug)]
pub(crate) struct Balancer {
    _child: Child,
    front: SocketAddr,
    dir: PathBuf,
}

impl Balancer {
    /// Start it in front of `nodes`; returns once its port accepts.
    pub(crate) async fn start(nodes: &[SocketAddr]) -> Result<Balancer, LoadError> {
        let front = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .map_err(LoadError::Io)?;
        let dir = std::env::temp_dir().join(format!(
            "belay-herd-haproxy-{}-{}",
            std::process::id(),
            front.port()
        ));
        std::fs::create_dir_all(&dir).map_err(LoadError::Io)?;
        let servers: String = nodes
            .iter()
            .enumerate()
            .map(|(i, addr)| format!("  server n{i} {addr} check inter 100ms fall 2 rise 1\n"))
            .collect();
        let config = format!(
            "defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 120s\n  timeout server 120s\n\
             frontend front\n  bind {front}\n  maxconn 100000\n  default_backend nodes\n\
             backend nodes\n  balance roundrobin\n{servers}"
        );
        let path = dir.join("haproxy.cfg");
        std::fs::write(&path, config).map_err(LoadError::Io)?;
        let child = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                LoadError::Target(format!(
                    "cannot start haproxy (apt-get install haproxy): {e}"
                ))
            })?;
        let listening = tokio::time::timeout(Duration::from_secs(10), async {
            while tokio::net::TcpStream::connect(front).await.is_err() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        if listening.is_err() {
            return Err(LoadError::Target(
                "haproxy did not listen within 10 s".into(),
            ));
        }
        Ok(Balancer {
            _child: child,
            front,
            dir,
        })
    }

    /// Where clients connect.
    pub(crate) fn front(&self) -> SocketAddr {
        self.front
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
