//! A server under test as a child process: it prints `LISTEN addr` on its
//! first stdout line and exits when its stdin closes. Its RSS and CPU are
//! read from `/proc/PID`, so the load process is never counted.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdout, Command, Stdio};

use serde_json::Value;

use crate::measure::procfs::{self, ProcSample};
use crate::LoadError;

/// A running server child.
#[derive(Debug)]
pub struct ServerChild {
    child: Child,
    stdout: BufReader<ChildStdout>,
    /// Where it listens.
    pub addr: SocketAddr,
}

/// What a Node server reports of its own memory (`process.memoryUsage()`),
/// in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeMemory {
    /// Resident set size, as Node sees it.
    pub rss: f64,
    /// V8 heap in use (live objects and garbage not yet collected).
    pub heap_used: f64,
    /// Memory of C++ objects bound to JavaScript ones, array buffers included.
    pub external: f64,
}

impl ServerChild {
    /// Start `command` (stdin and stdout piped, stderr inherited) and wait
    /// for its `LISTEN addr` line.
    pub fn start(mut command: Command) -> Result<ServerChild, LoadError> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            return Err(LoadError::Protocol("the server has no stdout".into()));
        };
        let mut server = ServerChild {
            child,
            stdout: BufReader::new(stdout),
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        let line = server.line()?;
        server.addr = line
            .trim()
            .strip_prefix("LISTEN ")
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| LoadError::Protocol(format!("unexpected server output {line:?}")))?;
        Ok(server)
    }

    /// Its RSS and CPU time now.
    pub fn sample(&self) -> Result<ProcSample, LoadError> {
        Ok(procfs::sample(self.child.id())?)
    }

    /// Ask a Node server (peers/bench/server.mjs) for `process.memoryUsage()`.
    pub fn node_memory(&mut self) -> Result<NodeMemory, LoadError> {
        let stdin = self
            .child
            .stdin
            .as_mut()
            .ok_or_else(|| LoadError::Protocol("the server's stdin is closed".into()))?;
        stdin.write_all(b"mem\n")?;
        stdin.flush()?;
        let line = self.line()?;
        let json: Value = line
            .trim()
            .strip_prefix("MEM ")
            .and_then(|j| serde_json::from_str(j).ok())
            .ok_or_else(|| LoadError::Protocol(format!("unexpected answer to mem: {line:?}")))?;
        let field = |key: &str| json[key].as_f64().unwrap_or(f64::NAN);
        Ok(NodeMemory {
            rss: field("rss"),
            heap_used: field("heapUsed"),
            external: field("external"),
        })
    }

    fn line(&mut self) -> Result<String, LoadError> {
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            return Err(LoadError::Protocol("the server exited".into()));
        }
        Ok(line)
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
