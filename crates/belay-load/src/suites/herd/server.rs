//! The server of a herd run: `belay serve` as a child process, started on a
//! loopback port with the run's admission rate, fleet and injected costs,
//! killed with SIGKILL for the outage and started again on the same port.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

use crate::measure::procfs;
use crate::LoadError;

/// How long a server may take to print that it listens.
const START_BOUND: Duration = Duration::from_secs(20);

/// What every server of a run is started with.
#[derive(Debug, Clone)]
pub struct ServeSettings {
    /// The `belay` binary.
    pub belay: PathBuf,
    /// `--accept-rate`: sessions admitted per second.
    pub accept_rate: f64,
    /// `--expected-clients`: the fleet the pacing plan is sized for.
    pub expected_clients: usize,
    /// `--worker-threads`.
    pub worker_threads: u16,
    /// `--handshake-cost-us`.
    pub handshake_cost_us: u64,
    /// `--session-cost-us`.
    pub session_cost_us: u64,
    /// `--max-pending-upgrades` (and the same per IP: every client of the
    /// bench comes from 127.0.0.1).
    pub max_pending_upgrades: u32,
    /// CPUs the server may run on (`taskset -c LIST`), if pinned.
    pub cpus: Option<String>,
    /// `--broker`: `None` the embedded broker; a `redis://` URL for the
    /// nodes of a cluster.
    pub broker: Option<String>,
}

impl ServeSettings {
    /// The command line. The per-source bounds are lifted, since all the
    /// bench's clients share one address (a real fleet has one per
    /// client); admission is left to the accept rate, as in the simulator.
    fn command(&self, listen: SocketAddr) -> Command {
        let mut command = match &self.cpus {
            Some(cpus) => {
                let mut taskset = Command::new("taskset");
                taskset.arg("-c").arg(cpus).arg(&self.belay);
                taskset
            }
            None => Command::new(&self.belay),
        };
        let pending = self.max_pending_upgrades.to_string();
        command
            .arg("serve")
            .args(["--listen", &listen.to_string()])
            .args(["--accept-rate", &self.accept_rate.to_string()])
            .args(["--expected-clients", &self.expected_clients.to_string()])
            .args(["--worker-threads", &self.worker_threads.to_string()])
            .args(["--handshake-cost-us", &self.handshake_cost_us.to_string()])
            .args(["--session-cost-us", &self.session_cost_us.to_string()])
            .args(["--max-connections-per-ip", &u32::MAX.to_string()])
            .args(["--accept-rate-per-ip", "1000000000"])
            .args(["--max-pending-upgrades", &pending])
            .args(["--max-pending-upgrades-per-ip", &pending])
            .args(["--work-rate-per-ip", "0"])
            .args(["--broker", self.broker.as_deref().unwrap_or("memory")])
            // Quiet: nothing but warnings, so logging costs the server nothing.
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }
}

/// A running `belay serve`.
#[derive(Debug)]
pub struct ServeProcess {
    child: Child,
    pid: u32,
    addr: SocketAddr,
}

impl ServeProcess {
    /// Start a server on `listen` (port 0: any free one) and wait until it
    /// says it listens.
    pub async fn start(settings: &ServeSettings, listen: SocketAddr) -> Result<Self, LoadError> {
        let mut child = settings.command(listen).spawn().map_err(|e| {
            LoadError::Target(format!("cannot start {}: {e}", settings.belay.display()))
        })?;
        let pid = child
            .id()
            .ok_or_else(|| LoadError::Protocol("the server exited at once".into()))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| LoadError::Protocol("no stderr".into()))?;
        let mut lines = BufReader::new(stderr).lines();
        let addr = tokio::time::timeout(START_BOUND, async {
            while let Some(line) = lines.next_line().await? {
                if let Some(addr) = listening_addr(&line) {
                    return Ok(addr);
                }
                eprintln!("belay serve: {line}");
            }
            Err(LoadError::Protocol(
                "the server exited before listening".into(),
            ))
        })
        .await
        .map_err(|_| LoadError::Timeout("the server to listen"))??;
        // Keep reading, so a warning never blocks the server on a full pipe.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("belay serve: {line}");
            }
        });
        Ok(ServeProcess { child, pid, addr })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its CPU time so far (user + system).
    pub fn cpu(&self) -> Result<Duration, LoadError> {
        let ticks = procfs::sample(self.pid)?.cpu_ticks;
        Ok(Duration::from_secs_f64(ticks as f64 / procfs::CLK_TCK))
    }

    /// The Prometheus text at `path` (`/metrics`, …), within `bound`.
    pub async fn scrape(&self, path: &str, bound: Duration) -> Result<String, LoadError> {
        tokio::time::timeout(bound, async {
            let mut tcp = tokio::net::TcpStream::connect(self.addr).await?;
            let request = format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                self.addr
            );
            tcp.write_all(request.as_bytes()).await?;
            let mut body = String::new();
            tcp.read_to_string(&mut body).await?;
            Ok::<_, LoadError>(body)
        })
        .await
        .map_err(|_| LoadError::Timeout("scraping the server's metrics"))?
    }

    /// SIGKILL, as an unplanned outage: every connection ends at once
    /// (the kernel resets them), nothing is drained. Returns once reaped.
    pub async fn kill(mut self) -> Result<(), LoadError> {
        self.child.start_kill()?;
        self.child.wait().await?;
        Ok(())
    }
}

/// The address in `belay serve`'s "listening on ws://ADDR/ws" line.
fn listening_addr(line: &str) -> Option<SocketAddr> {
    let rest = line.split("listening on ws://").nth(1)?;
    rest.split('/').next()?.parse().ok()
}

/// The value of the series `name` (no labels) in Prometheus text.
pub fn series(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        (series == name).then(|| value.parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_listening_line_and_series() {
        assert_eq!(
            listening_addr("belay server listening on ws://127.0.0.1:4242/ws"),
            Some("127.0.0.1:4242".parse().unwrap())
        );
        assert_eq!(listening_addr("something else"), None);
        let text = "# TYPE x counter\nbelay_connects_total 12\nbelay_x{a=\"b\"} 3\n";
        assert_eq!(series(text, "belay_connects_total"), Some(12.0));
        assert_eq!(series(text, "belay_x"), None);
    }

    #[test]
    fn the_command_lifts_per_source_bounds_and_pins_when_asked() {
        let settings = ServeSettings {
            belay: PathBuf::from("/bin/belay"),
            accept_rate: 200.0,
            expected_clients: 3_000,
            worker_threads: 1,
            handshake_cost_us: 1_000,
            session_cost_us: 0,
            max_pending_upgrades: 2_048,
            cpus: Some("0".into()),
            broker: Some("redis://127.0.0.1:6379".into()),
        };
        let command = settings.command("127.0.0.1:0".parse().unwrap());
        let command = command.as_std();
        assert_eq!(command.get_program(), "taskset");
        let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy()).collect();
        let joined = args.join(" ");
        assert!(joined.starts_with("-c 0 /bin/belay serve --listen 127.0.0.1:0"));
        assert!(joined.contains("--accept-rate 200 --expected-clients 3000 --worker-threads 1"));
        assert!(joined.contains("--handshake-cost-us 1000"));
        assert!(joined.contains("--max-pending-upgrades-per-ip 2048"));
        assert!(joined.contains("--broker redis://127.0.0.1:6379"));
    }
}
