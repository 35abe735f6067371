//! Echo round trips: C sessions, each sending R sequential `echo` requests.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use tokio::task::JoinSet;
use tokio_websockets::Message;

use belay_proto::message::{ClientMessage, Codec, Request};

use crate::clients::target::Target;
use crate::clients::{websocket, wire};
use crate::measure::stats::Latencies;
use crate::LoadError;

/// How to run the echo load.
#[derive(Debug, Clone)]
pub struct EchoConfig {
    /// Sessions (at most 100,000).
    pub connections: usize,
    /// Sequential requests per session (at most 10,000,000).
    pub requests: usize,
    /// Source addresses, round-robin.
    pub sources: Vec<IpAddr>,
    /// The method to call; it must return its params.
    pub method: String,
    /// Bound on the whole run, opening included.
    pub time_limit: Duration,
    /// The codec the sessions ask for (JSON: none offered).
    pub codec: Codec,
}

impl EchoConfig {
    /// `connections` × `requests` calls of `echo`, within 120 s.
    pub fn new(connections: usize, requests: usize) -> Self {
        EchoConfig {
            connections: connections.min(100_000),
            requests: requests.min(10_000_000),
            sources: Vec::new(),
            method: "echo".into(),
            time_limit: Duration::from_secs(120),
            codec: Codec::Json,
        }
    }
}

/// What the echo load measured.
#[derive(Debug)]
pub struct EchoReport {
    /// Sessions that opened.
    pub sessions: usize,
    /// Requests answered with the right id.
    pub completed: u64,
    /// Requests that failed (error reply, wrong id, close, time limit).
    pub failed: u64,
    /// The first failure, if any.
    pub first_error: Option<String>,
    /// From the first request to the last response.
    pub elapsed: Duration,
    /// Round-trip latencies.
    pub latencies: Latencies,
}

impl EchoReport {
    /// Completed requests per second.
    pub fn requests_per_sec(&self) -> f64 {
        self.completed as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

struct PerSession {
    completed: u64,
    failed: u64,
    error: Option<String>,
    latencies: Latencies,
}

/// Run the load. Sessions open first; the requests start together.
pub async fn run(target: &Target, config: &EchoConfig) -> Result<EchoReport, LoadError> {
    let deadline = tokio::time::Instant::now() + config.time_limit;
    let mut sessions = Vec::with_capacity(config.connections);
    for i in 0..config.connections {
        let source = websocket::source_for(&config.sources, i);
        let ws = tokio::time::timeout_at(
            deadline,
            wire::open(target, source, Duration::from_secs(10), config.codec),
        )
        .await
        .map_err(|_| LoadError::Timeout("opening the echo sessions"))??;
        sessions.push(ws);
    }
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for mut ws in sessions {
        let requests = config.requests;
        let method = config.method.clone();
        let codec = config.codec;
        tasks.spawn(async move {
            let mut out = PerSession {
                completed: 0,
                failed: 0,
                error: None,
                latencies: Latencies::new(),
            };
            for id in 1..=requests as u64 {
                let sent = Instant::now();
                let frame = match codec {
                    Codec::Json => Message::text(format!(
                        r#"{{"type":"request","id":{id},"method":"{method}","params":{id}}}"#
                    )),
                    codec => wire::frame(codec, &request(id, &method)),
                };
                let result = tokio::time::timeout_at(deadline, async {
                    ws.send(frame).await?;
                    wire::next_non_ping(&mut ws, codec).await
                })
                .await;
                match result {
                    Ok(Ok(answer)) if answer.is_result_for(id) => {
                        out.completed += 1;
                        out.latencies.record(sent.elapsed());
                    }
                    Ok(Ok(answer)) => {
                        out.failed += 1;
                        out.error.get_or_insert(answer.describe());
                    }
                    Ok(Err(e)) => {
                        out.failed += requests as u64 - id + 1;
                        out.error.get_or_insert(e.to_string());
                        break;
                    }
                    Err(_) => {
                        out.failed += requests as u64 - id + 1;
                        out.error.get_or_insert("time limit reached".into());
                        break;
                    }
                }
            }
            let _ = ws.send(Message::close(None, "")).await;
            out
        });
    }
    let mut report = EchoReport {
        sessions: config.connections,
        completed: 0,
        failed: 0,
        first_error: None,
        elapsed: Duration::ZERO,
        latencies: Latencies::new(),
    };
    while let Some(done) = tasks.join_next().await {
        let Ok(one) = done else { continue };
        report.completed += one.completed;
        report.failed += one.failed;
        if report.first_error.is_none() {
            report.first_error = one.error;
        }
        report.latencies.merge(one.latencies);
    }
    report.elapsed = start.elapsed();
    Ok(report)
}

/// Request `id` of `method` with `id` as its params (the JSON load's frame,
/// as a message).
fn request(id: u64, method: &str) -> ClientMessage {
    ClientMessage::Request(Request {
        id,
        method: method.to_owned(),
        params: serde_json::Value::from(id),
        idem: None,
        timeout_ms: None,
    })
}
