//! The server under abuse: `belay serve --demo --listen 127.0.0.1:0` (plus
//! any extra flags) as a child process, so its RSS and CPU are its own.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::clients::target::Target;
use crate::measure::procfs::{self, ProcSample};

/// How long the server may take to say where it listens.
const START_BOUND: Duration = Duration::from_secs(15);

/// A running server; killed when dropped.
#[derive(Debug)]
pub struct ServerChild {
    child: Child,
    /// Where its WebSocket endpoint is.
    pub target: Target,
}

impl ServerChild {
    /// Start `exe serve --demo --listen 127.0.0.1:0 EXTRA…` and wait for
    /// its banner ("… open http://ADDR/ …").
    pub fn start(exe: &Path, extra: &[String]) -> Result<ServerChild, String> {
        let mut child = Command::new(exe)
            .args(["serve", "--demo", "--listen", "127.0.0.1:0"])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {} serve: {e}", exe.display()))?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let (found, address) = mpsc::channel();
        // Read every line, so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut found = Some(found);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = banner_address(&line) {
                    if let Some(tx) = found.take() {
                        let _ = tx.send(addr);
                    }
                }
            }
        });
        let mut server = ServerChild {
            child,
            target: Target::local(SocketAddr::from(([127, 0, 0, 1], 0)))
                .map_err(|e| e.to_string())?,
        };
        let addr = address.recv_timeout(START_BOUND).map_err(|_| {
            format!(
                "{} serve {} did not report its address within {START_BOUND:?} ({})",
                exe.display(),
                extra.join(" "),
                server.exited().unwrap_or_else(|| "still running".into())
            )
        })?;
        server.target = Target::local(addr).map_err(|e| e.to_string())?;
        Ok(server)
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// RSS and CPU time now.
    pub fn sample(&self) -> Result<ProcSample, String> {
        procfs::sample(self.child.id()).map_err(|e| format!("server process: {e}"))
    }

    /// How it ended, if it has (`None` while it runs).
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(format!("server exited: {status}")),
            Ok(None) => None,
            Err(e) => Some(format!("server state unknown: {e}")),
        }
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ADDR` in a banner line containing `scheme://ADDR/`.
fn banner_address(line: &str) -> Option<SocketAddr> {
    line.split("://").nth(1)?.split('/').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_address_in_the_banner() {
        let line = "belay demo server: open http://127.0.0.1:40123/ (WebSocket at ws://127.0.0.1:40123/ws)";
        assert_eq!(banner_address(line), "127.0.0.1:40123".parse().ok());
        assert_eq!(banner_address("2026-12-01 WARN something"), None);
    }
}
