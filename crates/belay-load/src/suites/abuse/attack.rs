//! What every attacker is given (where to aim, from where, until when) and
//! what it counts (its effort, reported next to the victim's figures).

use std::collections::BTreeMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::clients::target::Target;
use crate::clients::websocket::{self, Session};
use crate::LoadError;

/// The attacker's source address: not the victim's (127.0.0.1), so per-IP
/// limits can tell them apart.
pub const ATTACKER_IP: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));

/// One attacker's run.
#[derive(Debug)]
pub struct Attack {
    /// The server.
    pub target: Target,
    /// Where the attacker's sockets are bound.
    pub source: IpAddr,
    /// When the attacker must stop.
    pub until: Instant,
    /// Descriptors the attacker may hold at once (from this process's
    /// `RLIMIT_NOFILE`, with room left for the victim).
    pub fd_budget: usize,
    /// What it did.
    pub effort: Effort,
}

impl Attack {
    /// An attack on `target` from [`ATTACKER_IP`] lasting `length`.
    pub fn new(target: Target, length: Duration) -> Attack {
        Attack {
            target,
            source: ATTACKER_IP,
            until: Instant::now() + length,
            fd_budget: fd_budget(),
            effort: Effort::default(),
        }
    }

    /// Whether the attack is still on.
    pub fn running(&self) -> bool {
        Instant::now() < self.until
    }

    /// `work`, cut off at the end of the attack (`None` then, and at once
    /// once the attack is over: a timeout alone would still poll `work`).
    pub async fn bounded<F: Future>(&self, work: F) -> Option<F::Output> {
        if !self.running() {
            return None;
        }
        tokio::time::timeout_at(self.until, work).await.ok()
    }

    /// A TCP connection from the attacker's address; counted.
    pub async fn dial(&self) -> Option<TcpStream> {
        let dialed = self
            .bounded(websocket::dial(self.target.addr, Some(self.source)))
            .await?;
        self.counted(dialed)
    }

    /// A session (upgrade, `connect`, `welcome`) from the attacker's
    /// address, within 5 s and the attack; counted.
    pub async fn open(&self) -> Option<Session> {
        let opened = self
            .bounded(websocket::open(
                &self.target,
                Some(self.source),
                Duration::from_secs(5),
            ))
            .await?;
        self.counted(opened)
    }

    fn counted<T>(&self, result: Result<T, LoadError>) -> Option<T> {
        match result {
            Ok(value) => {
                self.effort.connections.fetch_add(1, Ordering::Relaxed);
                Some(value)
            }
            Err(e) => {
                self.effort.refused.fetch_add(1, Ordering::Relaxed);
                self.effort.note(&failure_kind(&e), 1);
                None
            }
        }
    }
}

/// Counters of an attacker's effort and of what the server answered.
#[derive(Debug, Default)]
pub struct Effort {
    /// Connections or sessions opened.
    pub connections: AtomicU64,
    /// Connections or sessions the server refused or that failed to open.
    pub refused: AtomicU64,
    /// Frames (or, for raw sockets, writes) sent.
    pub sent: AtomicU64,
    /// Bytes sent.
    pub bytes: AtomicU64,
    /// Frames received.
    pub received: AtomicU64,
    notes: Mutex<BTreeMap<String, u64>>,
}

impl Effort {
    /// Add `n` to the named counter (answer kinds, close codes, failures).
    pub fn note(&self, what: &str, n: u64) {
        if let Ok(mut notes) = self.notes.lock() {
            *notes.entry(what.to_owned()).or_default() += n;
        }
    }

    /// Add every counter of `counts` (a task's own tally).
    pub fn note_all(&self, counts: BTreeMap<String, u64>) {
        for (what, n) in counts {
            self.note(&what, n);
        }
    }

    /// Count one frame sent of `bytes` bytes.
    pub fn sent_frame(&self, bytes: usize) {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> EffortSnapshot {
        EffortSnapshot {
            connections: self.connections.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            sent: self.sent.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            received: self.received.load(Ordering::Relaxed),
            notes: self.notes.lock().map(|n| n.clone()).unwrap_or_default(),
        }
    }
}

/// [`Effort`] at the end of an attack.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EffortSnapshot {
    /// Connections or sessions opened.
    pub connections: u64,
    /// Connections or sessions refused or failed.
    pub refused: u64,
    /// Frames or writes sent.
    pub sent: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Frames received.
    pub received: u64,
    /// Named counters: answer kinds (`subscribed`, `response/rate_limited`),
    /// close codes (`close 4009`), failures (`http 503`).
    pub notes: BTreeMap<String, u64>,
}

/// A short name for why a session did not open or ended: `http 503`,
/// `close 4029`, `timeout`, `reset`, ….
pub fn failure_kind(error: &LoadError) -> String {
    use tokio_websockets::upgrade::Error as Upgrade;
    match error {
        LoadError::WebSocket(tokio_websockets::Error::Upgrade(Upgrade::DidNotSwitchProtocols(
            status,
        ))) => format!("http {status}"),
        LoadError::WebSocket(_) => "websocket error".into(),
        LoadError::Io(e) => format!("io {:?}", e.kind()),
        LoadError::Timeout(_) => "timeout".into(),
        LoadError::Protocol(text) if text.starts_with("closed by the server: ") => {
            let code = text["closed by the server: ".len()..]
                .split(' ')
                .next()
                .unwrap_or("");
            format!("close {code}")
        }
        LoadError::Protocol(text) if text == "connection closed" => "closed".into(),
        LoadError::Protocol(_) => "unexpected frame".into(),
        LoadError::Target(_) => "bad target".into(),
    }
}

/// The value of the first `"key":"…"` string field in `text`.
pub fn field_str<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let pattern = format!("\"{key}\":\"");
    let start = text.find(&pattern)? + pattern.len();
    let rest = &text[start..];
    Some(&rest[..rest.find('"')?])
}

/// How to name an answer from the server in the effort notes: its type,
/// and its error code if it has one (`response/rate_limited`).
pub fn answer_kind(text: &str) -> String {
    let ty = websocket::message_type(text).unwrap_or("?");
    match field_str(text, "code") {
        Some(code) => format!("{ty}/{code}"),
        None => ty.to_owned(),
    }
}

/// Descriptors this process may still open for an attacker: the soft
/// `RLIMIT_NOFILE` (from `/proc/self/limits`) less 1,000 for the victim,
/// the probes and the runtime, at least 100.
pub fn fd_budget() -> usize {
    let limit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| parse_open_files_limit(&text))
        .unwrap_or(1_024);
    limit.saturating_sub(1_000).max(100)
}

/// The soft "Max open files" limit from the text of `/proc/PID/limits`.
pub fn parse_open_files_limit(limits: &str) -> Option<usize> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line["Max open files".len()..].split_whitespace().next()?;
    if soft == "unlimited" {
        return Some(1 << 20);
    }
    soft.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_named() {
        let closed = LoadError::Protocol("closed by the server: 4029 rate limited".into());
        assert_eq!(failure_kind(&closed), "close 4029");
        let refused = LoadError::WebSocket(tokio_websockets::Error::Upgrade(
            tokio_websockets::upgrade::Error::DidNotSwitchProtocols(503),
        ));
        assert_eq!(failure_kind(&refused), "http 503");
        assert_eq!(failure_kind(&LoadError::Timeout("x")), "timeout");
    }

    #[test]
    fn answers_are_named() {
        assert_eq!(answer_kind(r#"{"type":"pong"}"#), "pong");
        assert_eq!(
            answer_kind(r#"{"type":"response","id":3,"error":{"code":"rate_limited"}}"#),
            "response/rate_limited"
        );
        assert_eq!(field_str(r#"{"a":"b"}"#, "a"), Some("b"));
    }

    #[test]
    fn reads_the_descriptor_limit() {
        let text = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            20000                20000                files\n";
        assert_eq!(parse_open_files_limit(text), Some(20_000));
        assert_eq!(parse_open_files_limit("nothing"), None);
        assert!(fd_budget() >= 100);
    }
}
