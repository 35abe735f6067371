//! [`Backend`]: JSON POSTs to one backend URL (`http://` or `https://`)
//! on pooled keep-alive connections, each bounded in time and its answer
//! in bytes, a bounded
//! number at once, every failure classified by whether the backend may
//! have acted on it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::CONTENT_TYPE;
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tokio::sync::Semaphore;

use super::tls::{BackendConnector, BackendTls};
use super::ProxyError;

/// Why a call to the backend has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// It never reached the backend: refused, unreachable, or too many
    /// calls in flight. Not acted on.
    NotSent,
    /// No answer within the timeout: the backend may have acted.
    Timeout,
    /// The connection broke after the call was sent: it may have acted.
    Broke,
    /// The answer is longer than the backend's `max_response_bytes`: the
    /// rest was not read (the connection is dropped). It acted.
    TooLarge,
}

/// The longest backend answer read by default: as long as the longest
/// frame a client can be sent (a `result` longer than that could not
/// reach it anyway).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = belay_proto::message::MAX_FRAME_LEN;

/// One backend URL.
#[derive(Clone)]
pub struct Backend {
    client: Client<BackendConnector, Full<Bytes>>,
    url: Uri,
    timeout: Duration,
    max_response_bytes: usize,
    in_flight: Arc<Semaphore>,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("url", &self.url)
            .field("timeout", &self.timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish_non_exhaustive()
    }
}

impl Backend {
    /// POSTs to `url` (`http://…`, or `https://…` whose certificate chains
    /// to the Mozilla roots), each answered within `timeout`, at most
    /// `max_in_flight` at once, answers read up to
    /// [`DEFAULT_MAX_RESPONSE_BYTES`].
    pub fn new(url: &str, timeout: Duration, max_in_flight: usize) -> Result<Backend, ProxyError> {
        Backend::with_tls(url, timeout, max_in_flight, &BackendTls::default())
    }

    /// As [`Backend::new`], an `https://` backend's certificate checked as
    /// `tls` says.
    pub fn with_tls(
        url: &str,
        timeout: Duration,
        max_in_flight: usize,
        tls: &BackendTls,
    ) -> Result<Backend, ProxyError> {
        let uri: Uri = url.parse().map_err(|_| ProxyError::Url(url.to_owned()))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(ProxyError::Url(url.to_owned()));
        }
        let mut tcp = HttpConnector::new();
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(timeout));
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(BackendConnector::new(tcp, tls)?);
        Ok(Backend {
            client,
            url: uri,
            timeout,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            in_flight: Arc::new(Semaphore::new(max_in_flight.max(1))),
        })
    }

    /// Read answers up to `max` bytes: a longer one fails
    /// [`Failure::TooLarge`] as soon as it passes `max`.
    pub fn with_max_response_bytes(mut self, max: usize) -> Self {
        self.max_response_bytes = max;
        self
    }

    /// How long a call may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// POST `body`; the status and the whole answer (at most
    /// `max_response_bytes`).
    pub async fn post(&self, body: &Value) -> Result<(StatusCode, Bytes), Failure> {
        let started = tokio::time::Instant::now();
        let answer = self.exchange(body).await;
        let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match &answer {
            Ok((status, _)) => tracing::debug!(
                target: "belay::backend",
                url = %self.url,
                status = status.as_u16(),
                latency_ms,
                "backend answered"
            ),
            Err(failure) => tracing::debug!(
                target: "belay::backend",
                url = %self.url,
                failure = ?failure,
                latency_ms,
                "backend failed"
            ),
        }
        answer
    }

    async fn exchange(&self, body: &Value) -> Result<(StatusCode, Bytes), Failure> {
        let Ok(_permit) = self.in_flight.try_acquire() else {
            return Err(Failure::NotSent);
        };
        let request = Request::builder()
            .method(Method::POST)
            .uri(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|_| Failure::NotSent)?;
        let exchange = async {
            let response = self.client.request(request).await.map_err(|e| {
                if e.is_connect() {
                    Failure::NotSent
                } else {
                    Failure::Broke
                }
            })?;
            let status = response.status();
            // Counted as it streams: reading stops at the bound (and the
            // connection, its answer unread, is not reused).
            let bytes = Limited::new(response.into_body(), self.max_response_bytes)
                .collect()
                .await
                .map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        Failure::TooLarge
                    } else {
                        Failure::Broke
                    }
                })?
                .to_bytes();
            Ok((status, bytes))
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| Failure::Timeout)?
    }
}
