//! A real network for the link cut: the server's own network namespace,
//! joined to this one by a veth pair. Cutting sets the server's end down,
//! so packets vanish in both directions and no FIN or RST is ever sent.
//!
//! ```text
//!   this namespace                      belaylab{n}
//!   client ── blab{n}h 10.213.n.1 ═══ blab{n}s 10.213.n.2 ── belay serve
//! ```

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU8, Ordering};

use tokio::process::Command;

/// The namespace index of the next cut (wraps; runs never need 250 at once).
static NEXT: AtomicU8 = AtomicU8::new(0);

/// A namespace with a veth pair to this one; removed on drop.
#[derive(Debug)]
pub(crate) struct Netns {
    name: String,
    host_end: String,
    server_end: String,
    server_ip: Ipv4Addr,
}

async fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .await
        .map_err(|e| format!("cannot run `ip` (iproute2): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Netns {
    /// Create the namespace and the link. Fails (loudly) where the kernel
    /// or the permissions refuse namespaces.
    pub(crate) async fn create() -> Result<Netns, String> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed) % 250 + 1;
        let net = Netns {
            name: format!("belaylab{n}"),
            host_end: format!("blab{n}h"),
            server_end: format!("blab{n}s"),
            server_ip: Ipv4Addr::new(10, 213, n, 2),
        };
        // Leftovers of an interrupted run would make the adds fail.
        let _ = ip(&["netns", "del", &net.name]).await;
        let _ = ip(&["link", "del", &net.host_end]).await;
        ip(&["netns", "add", &net.name])
            .await
            .map_err(|e| format!("network namespaces refused: {e}"))?;
        let host_ip = format!("10.213.{n}.1/30");
        let server_ip = format!("{}/30", net.server_ip);
        let steps: [&[&str]; 6] = [
            &[
                "link",
                "add",
                &net.host_end,
                "type",
                "veth",
                "peer",
                "name",
                &net.server_end,
                "netns",
                &net.name,
            ],
            &["addr", "add", &host_ip, "dev", &net.host_end],
            &["link", "set", &net.host_end, "up"],
            &[
                "-n",
                &net.name,
                "addr",
                "add",
                &server_ip,
                "dev",
                &net.server_end,
            ],
            &["-n", &net.name, "link", "set", &net.server_end, "up"],
            &["-n", &net.name, "link", "set", "lo", "up"],
        ];
        for step in steps {
            ip(step).await?;
        }
        Ok(net)
    }

    /// The namespace's name, for `ip netns exec`.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The server's address inside the namespace.
    pub(crate) fn server_ip(&self) -> IpAddr {
        IpAddr::V4(self.server_ip)
    }

    /// Cut the link: the server's end goes down.
    pub(crate) async fn cut(&self) -> Result<(), String> {
        ip(&["-n", &self.name, "link", "set", &self.server_end, "down"]).await
    }

    /// Restore the link.
    pub(crate) async fn restore(&self) -> Result<(), String> {
        ip(&["-n", &self.name, "link", "set", &self.server_end, "up"]).await
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting the namespace deletes both ends of the pair.
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}
