//! HAProxy in front of the lab cluster's nodes: the cluster tests'
//! configuration (crates/belay-cli/tests/cluster/harness.rs: health checks
//! on `/readyz`, the client's address sent with `send-proxy-v2`), with a
//! stats socket the lab reads each node's state from. For the hosted
//! fault, one more front per node that sends everything to that node while
//! it is up and to the others (`backup`) once it is down: the client and
//! the host are placed on different nodes, and the host's reconnect after
//! its node dies lands on a living one, as through any balancer.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use super::cluster::{free_port, PORT_TRIES, START_BOUND};
use super::http;

/// HAProxy in front of the nodes.
#[derive(Debug)]
pub(crate) struct Haproxy {
    _child: Child,
    pub(crate) front: SocketAddr,
    /// The pinned fronts, one per node (none unless asked for).
    pub(crate) pinned: Vec<SocketAddr>,
    /// Its stats socket (`show stat`: each node's state).
    stats: PathBuf,
}

/// HAProxy's configuration: the cluster tests'
/// (crates/belay-cli/tests/cluster/harness.rs), with a stats socket at
/// `stats` for the lab to read the nodes' states, and a front pinned to
/// node `i` at `pinned[i]` (if any).
fn haproxy_config(
    front: SocketAddr,
    nodes: &[SocketAddr],
    pinned: &[SocketAddr],
    stats: &Path,
) -> String {
    let servers = |primary: Option<usize>| -> String {
        nodes
            .iter()
            .enumerate()
            .map(|(i, addr)| {
                let backup = match primary {
                    Some(p) if p != i => " backup",
                    _ => "",
                };
                format!(
                    "  server n{i} {addr} check inter 100ms fall 2 rise 1 send-proxy-v2{backup}\n"
                )
            })
            .collect()
    };
    let checks = "  option httpchk GET /readyz\n  http-check expect status 200\n";
    let mut config = format!(
        "global\n  maxconn 1024\n  stats socket {} level user\n\
         defaults\n  mode http\n  timeout connect 1s\n  timeout client 30s\n  timeout server 30s\n  timeout tunnel 30s\n\
         frontend front\n  bind {front}\n  default_backend nodes\n\
         backend nodes\n  balance roundrobin\n{checks}{}",
        stats.display(),
        servers(None),
    );
    for (i, addr) in pinned.iter().enumerate() {
        config.push_str(&format!(
            "frontend pin{i}\n  bind {addr}\n  default_backend pin{i}\n\
             backend pin{i}\n{checks}{}",
            servers(Some(i))
        ));
    }
    config
}

impl Haproxy {
    /// Start it in front of `nodes`, with a front pinned to each if
    /// `pinned`.
    pub(crate) async fn start(
        dir: &Path,
        nodes: &[SocketAddr],
        pinned: bool,
    ) -> Result<Haproxy, String> {
        let path = dir.join("haproxy.cfg");
        let stats = dir.join("haproxy.sock");
        let mut last = String::new();
        for _ in 0..PORT_TRIES {
            let front = SocketAddr::from(([127, 0, 0, 1], free_port()?));
            let pins = if pinned {
                nodes
                    .iter()
                    .map(|_| free_port().map(|p| SocketAddr::from(([127, 0, 0, 1], p))))
                    .collect::<Result<Vec<_>, _>>()?
            } else {
                Vec::new()
            };
            std::fs::write(&path, haproxy_config(front, nodes, &pins, &stats))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            let mut child = Command::new("haproxy")
                .arg("-db")
                .arg("-f")
                .arg(&path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| {
                    format!(
                        "cannot start haproxy (Debian's haproxy; scripts/test installs it): {e}"
                    )
                })?;
            let mut routed = Ok(());
            for addr in std::iter::once(front).chain(pins.iter().copied()) {
                routed = routes(&mut child, addr).await;
                if routed.is_err() {
                    break;
                }
            }
            match routed {
                Ok(()) => {
                    return Ok(Haproxy {
                        _child: child,
                        front,
                        pinned: pins,
                        stats,
                    })
                }
                Err(e) => {
                    let _ = child.kill().await;
                    last = e;
                }
            }
        }
        Err(last)
    }
}

impl Haproxy {
    /// The state HAProxy gives node `index` (`UP`, `DOWN`, `UP 1/2`: going
    /// down…), from `show stat` on its stats socket.
    pub(crate) async fn state(&self, index: usize) -> Result<String, String> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let ask = async {
            let mut socket = tokio::net::UnixStream::connect(&self.stats)
                .await
                .map_err(|e| format!("haproxy stats socket: {e}"))?;
            socket
                .write_all(b"show stat\n")
                .await
                .map_err(|e| format!("haproxy stats socket: {e}"))?;
            let mut text = String::new();
            socket
                .read_to_string(&mut text)
                .await
                .map_err(|e| format!("haproxy stats socket: {e}"))?;
            server_state(&text, "nodes", &format!("n{index}"))
                .ok_or_else(|| format!("no state for node {index} in haproxy's stats"))
        };
        tokio::time::timeout(Duration::from_secs(2), ask)
            .await
            .map_err(|_| "haproxy's stats socket did not answer within 2 s".to_owned())?
    }
}

/// The `status` of server `server` of backend `backend` in `show stat`'s
/// CSV (a header line `# pxname,svname,…,status,…`).
fn server_state(csv: &str, backend: &str, server: &str) -> Option<String> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines
        .next()?
        .trim_start_matches('#')
        .trim()
        .split(',')
        .collect();
    let column = header.iter().position(|h| *h == "status")?;
    lines.find_map(|line| {
        let fields: Vec<&str> = line.split(',').collect();
        (fields.first() == Some(&backend) && fields.get(1) == Some(&server))
            .then(|| fields.get(column).map(|s| (*s).to_owned()))
            .flatten()
    })
}

/// Until HAProxy on `front` answers `/readyz` from a node (bounded), or
/// has exited (a port taken under it).
async fn routes(child: &mut Child, front: SocketAddr) -> Result<(), String> {
    let up = tokio::time::timeout(START_BOUND, async {
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("haproxy on {front} exited: {status}"));
            }
            if let Ok(answer) = http::call(front, "GET", "/readyz", "", false).await {
                if answer.status == 200 {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    up.unwrap_or_else(|_| {
        Err(format!(
            "haproxy on {front} routed to no node within {START_BOUND:?}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn haproxy_checks_readyz_and_sends_proxy_v2() {
        let config = haproxy_config(
            "127.0.0.1:9000".parse().unwrap(),
            &[
                "127.0.0.1:9001".parse().unwrap(),
                "127.0.0.1:9002".parse().unwrap(),
            ],
            &[],
            Path::new("/tmp/x/haproxy.sock"),
        );
        assert!(config.contains("stats socket /tmp/x/haproxy.sock level user\n"));
        assert!(!config.contains("backup"));
        assert!(config.contains("bind 127.0.0.1:9000\n"));
        assert!(config.contains("option httpchk GET /readyz\n"));
        assert!(config
            .contains("server n1 127.0.0.1:9002 check inter 100ms fall 2 rise 1 send-proxy-v2\n"));
    }

    #[test]
    fn a_pinned_front_sends_to_its_node_and_to_the_others_once_it_is_down() {
        let nodes: [SocketAddr; 2] = [
            "127.0.0.1:9001".parse().unwrap(),
            "127.0.0.1:9002".parse().unwrap(),
        ];
        let pins: [SocketAddr; 2] = [
            "127.0.0.1:9011".parse().unwrap(),
            "127.0.0.1:9012".parse().unwrap(),
        ];
        let config = haproxy_config(
            "127.0.0.1:9000".parse().unwrap(),
            &nodes,
            &pins,
            Path::new("/tmp/x/haproxy.sock"),
        );
        let pin1 = &config[config.find("backend pin1\n").expect("pin1's backend")..];
        assert!(pin1.contains(
            "server n0 127.0.0.1:9001 check inter 100ms fall 2 rise 1 send-proxy-v2 backup\n"
        ));
        assert!(pin1
            .contains("server n1 127.0.0.1:9002 check inter 100ms fall 2 rise 1 send-proxy-v2\n"));
        assert!(config.contains("frontend pin0\n  bind 127.0.0.1:9011\n"));
    }

    #[test]
    fn reads_a_server_state_from_show_stat() {
        let csv = "# pxname,svname,qcur,status,weight\n\
                   front,FRONTEND,,OPEN,\n\
                   nodes,n0,0,DOWN,1\n\
                   nodes,n1,0,UP 1/2,1\n\
                   nodes,BACKEND,0,UP,1\n";
        assert_eq!(server_state(csv, "nodes", "n0").as_deref(), Some("DOWN"));
        assert_eq!(server_state(csv, "nodes", "n1").as_deref(), Some("UP 1/2"));
        assert_eq!(server_state(csv, "nodes", "n2"), None);
    }
}
