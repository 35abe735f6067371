//! A redis-server of the benchmark's own (a free loopback port, a fresh
//! temporary directory, no persistence), stopped when dropped; and the
//! `redis-benchmark` floor against it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::measure::procfs::{self, ProcSample};

/// A running `redis-server`.
#[derive(Debug)]
pub struct RedisProcess {
    child: Child,
    port: u16,
    dir: PathBuf,
}

/// A loopback port nothing listens on now (the kernel's choice for port 0).
pub fn free_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

impl RedisProcess {
    /// Start `redis-server` on a free loopback port in a new temporary
    /// directory (`--save "" --appendonly no`), and wait, at most 10 s,
    /// until it answers `PING`.
    pub fn start() -> Result<RedisProcess, String> {
        RedisProcess::start_with(&[])
    }

    /// Start a replica of `primary` and wait, at most 10 s, until it has
    /// synchronised (`master_link_status:up`).
    pub fn start_replica_of(primary: &RedisProcess) -> Result<RedisProcess, String> {
        let port = primary.port.to_string();
        let replica = RedisProcess::start_with(&["--replicaof", "127.0.0.1", &port])?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if replica
                .info("replication")?
                .contains("master_link_status:up")
            {
                return Ok(replica);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err("the replica did not synchronise within 10 s".into())
    }

    pub(crate) fn start_with(extra: &[&str]) -> Result<RedisProcess, String> {
        let mut last = String::new();
        // The port is free when chosen; another process could take it
        // before redis-server binds it, so try a few.
        for attempt in 0..5 {
            let port = free_port().map_err(|e| e.to_string())?;
            let dir = std::env::temp_dir().join(format!(
                "belay-cluster-bench-{}-{port}-{attempt}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
                .args(extra)
                .arg("--dir")
                .arg(&dir)
                .arg("--logfile")
                .arg(dir.join("redis.log"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start redis-server (is it installed?): {e}"))?;
            let mut redis = RedisProcess { child, port, dir };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(status)) = redis.child.try_wait() {
                    last = format!("redis-server exited: {status}");
                    break;
                }
                match redis.command(&["PING"]) {
                    Ok(reply) if reply.starts_with("+PONG") => return Ok(redis),
                    Ok(reply) => last = format!("PING answered {reply:?}"),
                    Err(e) => last = e,
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Err(format!("redis-server did not start: {last}"))
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// RSS and CPU from `/proc`.
    pub fn sample(&self) -> std::io::Result<ProcSample> {
        procfs::sample(self.child.id())
    }

    /// Send one command (RESP array of bulk strings) and return the first
    /// line of the answer (`+OK`, `:3`, `$5` …), within 5 s.
    pub fn command(&self, args: &[&str]) -> Result<String, String> {
        let mut stream = self.connect()?;
        let mut request = format!("*{}\r\n", args.len());
        for a in args {
            request.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        stream
            .write_all(request.as_bytes())
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        BufReader::new(&mut stream)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        Ok(line.trim_end().to_owned())
    }
}

impl RedisProcess {
    /// A connection to it (within 1 s) whose reads wait at most 5 s.
    fn connect(&self) -> Result<TcpStream, String> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let stream =
            TcpStream::connect_timeout(&addr, Duration::from_secs(1)).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        Ok(stream)
    }

    /// `INFO section`, whole (a bulk string), within 5 s.
    fn info(&self, section: &str) -> Result<String, String> {
        let mut stream = self.connect()?;
        let request = format!("*2\r\n$4\r\nINFO\r\n${}\r\n{section}\r\n", section.len());
        stream
            .write_all(request.as_bytes())
            .map_err(|e| e.to_string())?;
        let mut reader = BufReader::new(stream);
        let mut header = String::new();
        reader.read_line(&mut header).map_err(|e| e.to_string())?;
        let len: usize = header
            .trim_end()
            .strip_prefix('$')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("INFO answered {header:?}"))?;
        let mut body = vec![0; len];
        reader.read_exact(&mut body).map_err(|e| e.to_string())?;
        String::from_utf8(body).map_err(|e| e.to_string())
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What one `redis-benchmark` run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedisBenchmark {
    /// Requests per second.
    pub rps: f64,
    /// Median latency in ms, as redis-benchmark reports it.
    pub p50_ms: f64,
    /// 99th percentile in ms.
    pub p99_ms: f64,
}

/// `redis-benchmark -h 127.0.0.1 -p PORT -n requests -c clients --csv
/// PUBLISH channel PAYLOAD` with a payload of `payload_len` bytes, bounded
/// by 120 s.
pub fn publish_floor(
    port: u16,
    requests: u64,
    clients: usize,
    channel: &str,
    payload_len: usize,
) -> Result<RedisBenchmark, String> {
    let payload = "x".repeat(payload_len.clamp(1, 4_096));
    let mut child = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-n", &requests.min(10_000_000).to_string()])
        .args(["-c", &clients.clamp(1, 1_000).to_string(), "--csv"])
        .args(["PUBLISH", channel, &payload])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start redis-benchmark: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err("redis-benchmark took more than 120 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out = String::new();
    child
        .stdout
        .take()
        .ok_or("no stdout")?
        .read_to_string(&mut out)
        .map_err(|e| e.to_string())?;
    parse_csv(&out).ok_or_else(|| format!("unexpected redis-benchmark output {out:?}"))
}

/// The figures of the first data row of redis-benchmark's `--csv` output.
pub fn parse_csv(out: &str) -> Option<RedisBenchmark> {
    let row = out.lines().find(|l| !l.starts_with("\"test\""))?;
    // "NAME","rps","avg","min","p50","p95","p99","max": the name may hold
    // commas, so count fields from the end.
    let fields: Vec<f64> = row
        .rsplitn(8, "\",\"")
        .take(7)
        .map(|f| f.trim_matches('"').parse().ok())
        .collect::<Option<Vec<f64>>>()?;
    // rsplitn gives them last first: max, p99, p95, p50, min, avg, rps.
    Some(RedisBenchmark {
        rps: fields[6],
        p50_ms: fields[3],
        p99_ms: fields[1],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_redis_benchmark_csv() {
        let out = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\"PUBLISH bench.floor xx,yy\",\"12113.87\",\"0.079\",\"0.008\",\"0.081\",\"0.135\",\"0.207\",\"3.743\"\n";
        let b = parse_csv(out).expect("a row");
        assert_eq!(b.rps, 12113.87);
        assert_eq!(b.p50_ms, 0.081);
        assert_eq!(b.p99_ms, 0.207);
        assert_eq!(parse_csv("\"test\",\"rps\"\n"), None);
        assert_eq!(parse_csv(""), None);
    }
}
