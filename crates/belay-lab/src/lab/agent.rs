//! Clients under test, each wrapped as an *agent*: it connects to a URL,
//! runs the same workload (subscribe to one channel, a request every few
//! hundred ms whatever the state) and reports [`Observation`]s.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use belay_proto::message::Codec;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use super::client_kind::ClientKind;
use super::observation::{Observation, Stamped};
use super::{belay_agent, naive, peer_agent};

/// What every agent does, whatever its client.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Workload {
    /// The channel to subscribe to.
    pub channel: String,
    /// A request (`echo`) is issued this often, ready or not.
    pub request_every: Duration,
    /// Each request's deadline (clients that have deadlines).
    pub request_timeout: Duration,
    /// How long a connection attempt may take (clients that have a bound).
    pub connect_timeout: Duration,
    /// Seed of the client's random source (Belay clients).
    pub seed: u64,
    /// While on the SSE fallback, how often the Belay clients try a
    /// WebSocket again (the Rust client always falls back; the browser
    /// client only where [`Workload::browser_fallback`] says).
    pub retry_websocket_every: Duration,
    /// Whether the browser client runs with `@belay/client/fallback` (the
    /// lab turns it on for the `websocket-blocked` fault and the `sse`
    /// transport; elsewhere it is the default entry alone).
    pub browser_fallback: bool,
    /// The codec the Belay clients ask for (spec/PROTOCOL.md §1.8): JSON
    /// (the default) or binary (the browser client then runs with
    /// `@belay/client/binary`).
    pub codec: Codec,
    /// The token the Belay clients connect with (the hosted fault's nodes
    /// check JWTs); `None`: none.
    pub token: Option<String>,
    /// Call this resident host's `echo` (`$call`) instead of the server's
    /// (the hosted fault; Belay clients).
    pub call_host: Option<String>,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            channel: "feed".into(),
            request_every: Duration::from_millis(200),
            request_timeout: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(2),
            seed: 1,
            retry_websocket_every: Duration::from_secs(1),
            browser_fallback: false,
            codec: Codec::Json,
            token: None,
            call_host: None,
        }
    }
}

/// Where the browser agent lives and how to start it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BrowserSetup {
    /// `node`.
    pub node: PathBuf,
    /// `clients/js/lab/agent.mjs`.
    pub script: PathBuf,
    /// The Chromium binary.
    pub chromium: PathBuf,
    /// `peers/lab/agent.mjs`: the real peers' agent, in Node and in
    /// Chromium (`npm ci` in peers/lab).
    pub peer_agent: PathBuf,
    /// A Python with the Belay SDK installed (the venv
    /// scripts/python-sdk-check.sh makes: target/python-sdk/venv/bin/python).
    pub python: PathBuf,
    /// `crates/belay-python/lab/agent.py`: the Python SDK's agent.
    pub python_agent: PathBuf,
}

impl Default for BrowserSetup {
    fn default() -> Self {
        BrowserSetup {
            node: "node".into(),
            script: "clients/js/lab/agent.mjs".into(),
            chromium: "/usr/bin/chromium".into(),
            peer_agent: "peers/lab/agent.mjs".into(),
            python: "target/python-sdk/venv/bin/python".into(),
            python_agent: "crates/belay-python/lab/agent.py".into(),
        }
    }
}

/// Stamps observations as they arrive and hands them to the lab.
#[derive(Debug, Clone)]
pub(crate) struct Emitter {
    tx: mpsc::UnboundedSender<Stamped>,
}

impl Emitter {
    pub(crate) fn emit(&self, what: Observation) {
        // The lab stopped listening: nothing left to report to.
        let _ = self.tx.send(Stamped {
            at: Instant::now(),
            what,
        });
    }
}

/// Resolves once `stop` turns true (or its sender is gone).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// A running agent.
#[derive(Debug)]
pub struct Agent {
    observations: mpsc::UnboundedReceiver<Stamped>,
    seen: Vec<Stamped>,
    runner: Runner,
}

#[derive(Debug)]
pub(super) enum Runner {
    Task {
        stop: watch::Sender<bool>,
        task: JoinHandle<()>,
    },
    Process {
        child: Child,
        reader: JoinHandle<()>,
    },
}

/// Why an agent could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The URL is not a `ws://` URL the client can dial.
    #[error("bad url {0:?}")]
    BadUrl(String),
    /// The browser agent's process could not be started.
    #[error("cannot start the browser agent ({node} {script}): {source}")]
    Spawn {
        /// The node binary.
        node: String,
        /// The script.
        script: String,
        /// What the OS said.
        source: std::io::Error,
    },
}

impl Agent {
    /// Start a `kind` client against `url` (a `ws://host:port/ws` URL).
    pub fn spawn(
        kind: ClientKind,
        url: &str,
        work: &Workload,
        browser: &BrowserSetup,
    ) -> Result<Agent, AgentError> {
        let (tx, observations) = mpsc::unbounded_channel();
        let out = Emitter { tx };
        let runner = match kind {
            ClientKind::Naive => {
                let uri: http::Uri = url.parse().map_err(|_| AgentError::BadUrl(url.into()))?;
                let (stop, stopped) = watch::channel(false);
                let task = tokio::spawn(naive::run(uri, work.clone(), out, stopped));
                Runner::Task { stop, task }
            }
            ClientKind::Belay => {
                let (stop, stopped) = watch::channel(false);
                let task =
                    tokio::spawn(belay_agent::run(url.to_owned(), work.clone(), out, stopped));
                Runner::Task { stop, task }
            }
            ClientKind::Python => spawn_python(url, work, browser, out)?,
            ClientKind::Browser | ClientKind::BrowserNaive => {
                let mode = if kind == ClientKind::Browser {
                    "belay"
                } else {
                    "naive"
                };
                spawn_browser(mode, url, work, browser, out)?
            }
            peer => peer_agent::spawn(peer, url, work, browser, out)?,
        };
        Ok(Agent {
            observations,
            seen: Vec::new(),
            runner,
        })
    }

    /// Everything observed so far (received ones are kept).
    pub fn observations(&mut self) -> &[Stamped] {
        while let Ok(s) = self.observations.try_recv() {
            self.seen.push(s);
        }
        &self.seen
    }

    /// Whether the client considered itself ready at `at`, by its last
    /// "ready" or "lost" until then.
    pub fn ready_at(&mut self, at: Instant) -> bool {
        self.observations()
            .iter()
            .rev()
            .filter(|s| s.at <= at)
            .find_map(|s| match s.what {
                Observation::Ready => Some(true),
                Observation::Lost { .. } => Some(false),
                _ => None,
            })
            .unwrap_or(false)
    }

    /// Wait (at most `bound`) until an observation after `since` satisfies
    /// `pred`; returns its time.
    pub async fn wait_for(
        &mut self,
        since: Instant,
        bound: Duration,
        mut pred: impl FnMut(&Observation) -> bool,
    ) -> Option<Instant> {
        let found = |seen: &[Stamped], pred: &mut dyn FnMut(&Observation) -> bool| {
            seen.iter()
                .find(|s| s.at >= since && pred(&s.what))
                .map(|s| s.at)
        };
        if let Some(at) = found(self.observations(), &mut pred) {
            return Some(at);
        }
        let deadline = Instant::now() + bound;
        loop {
            match tokio::time::timeout_at(deadline, self.observations.recv()).await {
                Ok(Some(s)) => {
                    let hit = s.at >= since && pred(&s.what);
                    let at = s.at;
                    self.seen.push(s);
                    if hit {
                        return Some(at);
                    }
                }
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// Stop the client and return everything it observed.
    pub async fn stop(mut self) -> Vec<Stamped> {
        const BOUND: Duration = Duration::from_secs(5);
        match self.runner {
            Runner::Task { stop, mut task } => {
                let _ = stop.send(true);
                if tokio::time::timeout(BOUND, &mut task).await.is_err() {
                    task.abort();
                }
            }
            Runner::Process { mut child, reader } => {
                // EOF on stdin asks the agent to close and exit.
                drop(child.stdin.take());
                if tokio::time::timeout(BOUND, child.wait()).await.is_err() {
                    let _ = child.kill().await;
                }
                let _ = tokio::time::timeout(BOUND, reader).await;
            }
        }
        while let Ok(s) = self.observations.try_recv() {
            self.seen.push(s);
        }
        self.seen
    }
}

/// The flags of the workload every agent process takes: the URL, the
/// channel, the request period and deadline, the connect timeout.
pub(super) fn workload_args(url: &str, work: &Workload) -> Vec<String> {
    let ms = |d: Duration| d.as_millis().to_string();
    [
        ("--url", url.to_owned()),
        ("--channel", work.channel.clone()),
        ("--request-every-ms", ms(work.request_every)),
        ("--request-timeout-ms", ms(work.request_timeout)),
        ("--connect-timeout-ms", ms(work.connect_timeout)),
    ]
    .into_iter()
    .flat_map(|(flag, value)| [flag.to_owned(), value])
    .collect()
}

/// The flags only Belay's agents take: the codec, the token, the resident
/// host to call.
fn belay_args(work: &Workload) -> Vec<String> {
    let mut args = Vec::new();
    if work.codec == Codec::Binary {
        args.extend(["--codec".to_owned(), "binary".to_owned()]);
    }
    if let Some(token) = &work.token {
        args.extend(["--token".to_owned(), token.clone()]);
    }
    if let Some(host) = &work.call_host {
        args.extend(["--call-host".to_owned(), host.clone()]);
    }
    args
}

/// Start `command` (`program` running `script`) with its stdin and stdout
/// piped: its lines become observations, EOF on its stdin stops it.
pub(super) fn start(
    command: &mut Command,
    program: &Path,
    script: &Path,
    out: Emitter,
) -> Result<Runner, AgentError> {
    let child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| AgentError::Spawn {
            node: program.display().to_string(),
            script: script.display().to_string(),
            source,
        })?;
    Ok(reading(child, out))
}

fn spawn_browser(
    mode: &str,
    url: &str,
    work: &Workload,
    browser: &BrowserSetup,
    out: Emitter,
) -> Result<Runner, AgentError> {
    let mut command = Command::new(&browser.node);
    command
        .arg(&browser.script)
        .args(workload_args(url, work))
        .args(["--mode", mode]);
    if mode == "belay" {
        if work.browser_fallback {
            command.args([
                "--fallback-retry-ms".to_owned(),
                work.retry_websocket_every.as_millis().to_string(),
            ]);
        }
        command.args(belay_args(work));
    }
    command.arg("--chromium").arg(&browser.chromium);
    start(&mut command, &browser.node, &browser.script, out)
}

/// The Python SDK's agent: its fallback always on, as the Rust client's.
fn spawn_python(
    url: &str,
    work: &Workload,
    setup: &BrowserSetup,
    out: Emitter,
) -> Result<Runner, AgentError> {
    let mut command = Command::new(&setup.python);
    command
        .arg(&setup.python_agent)
        .args(workload_args(url, work))
        .args(["--seed".to_owned(), work.seed.to_string()])
        .args([
            "--fallback-retry-ms".to_owned(),
            work.retry_websocket_every.as_millis().to_string(),
        ])
        .args(belay_args(work));
    start(&mut command, &setup.python, &setup.python_agent, out)
}

/// The runner of an agent process: its stdout's lines become observations.
pub(super) fn reading(mut child: Child, out: Emitter) -> Runner {
    let stdout = child.stdout.take();
    let reader = tokio::spawn(async move {
        let Some(stdout) = stdout else { return };
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(what) = Observation::parse_line(&line) {
                out.emit(what);
            }
        }
    });
    Runner::Process { child, reader }
}
