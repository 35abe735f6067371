//! The HTTP publisher of the broadcast load: M messages at X per second
//! sent as `POST /api/publish` (belay-standalone's HTTP server API) over a
//! few keep-alive HTTP/1.1 connections, each message stamped with the time
//! its request is written, so the subscribers' latency is publish request
//! to receipt.
//!
//! A ticker hands message numbers to whichever connection is free (one
//! request at a time per connection, as a backend's pooled client does);
//! when every connection is busy the numbers wait and the ticker bursts to
//! catch up, like `bench.publish`'s ticker on the server.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper::{header, Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::{mpsc, Mutex};
use tokio::task::JoinSet;

use crate::clients::target::Target;
use crate::clients::websocket;
use crate::measure::stats::Latencies;
use crate::LoadError;

/// The API path the publisher posts to.
pub const PUBLISH_PATH: &str = "/api/publish";

/// How to publish over HTTP.
#[derive(Debug, Clone)]
pub struct HttpPublisher {
    /// The API key (`Authorization: Bearer KEY`).
    pub key: String,
    /// Keep-alive connections (1 to 64).
    pub connections: usize,
}

/// What the HTTP publisher saw.
#[derive(Debug, Default)]
pub struct HttpPublishReport {
    /// Requests answered 200.
    pub published: u64,
    /// Requests not answered 200, or not answered at all.
    pub failed: u64,
    /// Request round trips (write to the end of the answer) of the 200s.
    pub round_trips: Latencies,
    /// The first failure, if any.
    pub first_error: Option<String>,
}

/// One keep-alive connection to the API.
struct Connection {
    sender: http1::SendRequest<Full<Bytes>>,
    driver: tokio::task::JoinHandle<()>,
}

impl Connection {
    async fn open(target: &Target, source: Option<IpAddr>) -> Result<Connection, LoadError> {
        let stream = websocket::dial(target.addr, source).await?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| LoadError::Protocol(format!("HTTP handshake: {e}")))?;
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Connection { sender, driver })
    }

    /// One publish: the status and the answer's body.
    async fn publish(
        &mut self,
        host: &str,
        key: &str,
        body: String,
    ) -> Result<(StatusCode, Bytes), LoadError> {
        self.sender
            .ready()
            .await
            .map_err(|e| LoadError::Protocol(format!("HTTP connection: {e}")))?;
        let request = Request::builder()
            .method(Method::POST)
            .uri(PUBLISH_PATH)
            .header(header::HOST, host)
            .header(header::AUTHORIZATION, format!("Bearer {key}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| LoadError::Protocol(format!("HTTP request: {e}")))?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|e| LoadError::Protocol(format!("HTTP request: {e}")))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| LoadError::Protocol(format!("HTTP answer: {e}")))?
            .to_bytes();
        Ok((status, body))
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// Publish `messages` to `channel` at `rate` per second through the API of
/// the server at `target`, from `source`; open the connections first
/// (their set-up is not part of the schedule). Returns once every request
/// is answered or `deadline` passes.
pub async fn run(
    target: &Target,
    source: Option<IpAddr>,
    publisher: &HttpPublisher,
    channel: &str,
    messages: u64,
    rate: f64,
    deadline: tokio::time::Instant,
) -> Result<HttpPublishReport, LoadError> {
    let host = target.addr.to_string();
    let mut connections = Vec::new();
    for _ in 0..publisher.connections.clamp(1, 64) {
        connections.push(Connection::open(target, source).await?);
    }
    let (numbers, queue) = mpsc::unbounded_channel::<u64>();
    let queue = Arc::new(Mutex::new(queue));
    let mut workers = JoinSet::new();
    for mut connection in connections {
        let queue = Arc::clone(&queue);
        let (host, key, channel) = (host.clone(), publisher.key.clone(), channel.to_owned());
        workers.spawn(async move {
            let mut report = HttpPublishReport::default();
            loop {
                // Whichever connection is free takes the next number.
                let next = queue.lock().await.recv().await;
                let Some(n) = next else { break };
                let body = format!(
                    r#"{{"channel":"{channel}","data":{{"n":{n},"t":{}}}}}"#,
                    websocket::wall_micros()
                );
                let sent = Instant::now();
                match connection.publish(&host, &key, body).await {
                    Ok((StatusCode::OK, _)) => {
                        report.published += 1;
                        report.round_trips.record(sent.elapsed());
                    }
                    Ok((status, body)) => {
                        report.failed += 1;
                        report.first_error.get_or_insert_with(|| {
                            format!(
                                "POST {PUBLISH_PATH}: {status} {}",
                                String::from_utf8_lossy(&body)
                            )
                        });
                    }
                    Err(e) => {
                        // The connection is gone: the rest of its share fails.
                        report.failed += 1;
                        report.first_error.get_or_insert(e.to_string());
                        break;
                    }
                }
            }
            report
        });
    }
    let ticker = tokio::spawn(async move {
        let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        for n in 0..messages {
            ticker.tick().await;
            if numbers.send(n).is_err() {
                return;
            }
        }
    });
    let mut report = HttpPublishReport::default();
    let collect = async {
        while let Some(done) = workers.join_next().await {
            let Ok(part) = done else { continue };
            report.published += part.published;
            report.failed += part.failed;
            report.round_trips.merge(part.round_trips);
            if report.first_error.is_none() {
                report.first_error = part.first_error;
            }
        }
    };
    if tokio::time::timeout_at(deadline, collect).await.is_err() {
        report
            .first_error
            .get_or_insert("time limit before every publish was answered".into());
    }
    ticker.abort();
    report.failed = messages.saturating_sub(report.published);
    Ok(report)
}
