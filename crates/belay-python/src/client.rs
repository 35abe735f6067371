//! `belay._native.connect` and the client it returns: [`belay_client::Client`]
//! with its builder's options, its commands as awaitables.

use std::sync::Arc;
use std::time::Duration;

use belay_client::{Client, RequestOptions, Status, TokenError};
use belay_proto::message::{Codec, RawJson};
use belay_proto::{FallbackConfig, TransportKind};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_async_runtimes::tokio::{future_into_py, get_current_locals, get_runtime};
use tokio::sync::{watch, Mutex};

use crate::awaiting;
use crate::errors;
use crate::subscription::NativeSubscription;

/// A connected client (`belay.Client` wraps it).
#[pyclass(frozen, module = "belay._native")]
pub(crate) struct NativeClient {
    client: Client,
    /// The status changes `next_status` waits for.
    watcher: Arc<Mutex<watch::Receiver<Status>>>,
}

/// Start a client of `url`. Called from a running asyncio loop when there
/// is a `token_provider` (an async callable returning a token; raising
/// `belay.errors.Unauthorized` halts the client, anything else is retried
/// after the backoff).
#[pyfunction]
#[pyo3(signature = (
    url,
    *,
    token = None,
    token_provider = None,
    codec = "json",
    fallback = true,
    retry_websocket_every_ms = None,
    connect_timeout_ms = None,
    request_timeout_ms = None,
    seed = None,
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn connect(
    py: Python<'_>,
    url: String,
    token: Option<String>,
    token_provider: Option<Py<PyAny>>,
    codec: &str,
    fallback: bool,
    retry_websocket_every_ms: Option<u64>,
    connect_timeout_ms: Option<u64>,
    request_timeout_ms: Option<u64>,
    seed: Option<u64>,
) -> PyResult<NativeClient> {
    let codec = match codec {
        "json" => Codec::Json,
        "binary" => Codec::Binary,
        other => {
            return Err(PyValueError::new_err(format!(
                "codec must be \"json\" or \"binary\", not {other:?}"
            )))
        }
    };
    let mut builder = Client::builder(url)
        .codec(codec)
        .fallback(fallback.then(|| {
            let mut config = FallbackConfig::default();
            if let Some(ms) = retry_websocket_every_ms {
                config.set_retry_websocket_every(Duration::from_millis(ms));
            }
            config
        }))
        .configure(move |config| {
            if let Some(ms) = connect_timeout_ms {
                config.set_connect_timeout(Duration::from_millis(ms));
            }
            if let Some(ms) = request_timeout_ms {
                config.set_request_timeout(Duration::from_millis(ms));
            }
        });
    if let Some(token) = token {
        builder = builder.token(token);
    }
    if let Some(seed) = seed {
        builder = builder.seed(seed);
    }
    if let Some(provider) = token_provider {
        let locals = get_current_locals(py)?;
        let provider = Arc::new(provider);
        builder = builder.token_provider(move || {
            let (locals, provider) = (locals.clone(), Arc::clone(&provider));
            async move {
                match awaiting::call(&locals, &provider, None).await {
                    Ok(token) => Python::attach(|py| token.extract::<String>(py))
                        .map_err(|_| TokenError::Unavailable),
                    Err(error) if awaiting::is_a(&error, "Unauthorized") => {
                        Err(TokenError::Unauthorized)
                    }
                    Err(_) => Err(TokenError::Unavailable),
                }
            }
        });
    }
    // The driver's tasks run on the binding's tokio runtime.
    let _runtime = get_runtime().enter();
    let client = builder
        .connect()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let watcher = Arc::new(Mutex::new(client.status()));
    Ok(NativeClient { client, watcher })
}

/// `status` as the dict `belay.Status` is made from: the three readiness
/// levels, the state and why the client halted in the protocol's snake_case
/// names (`halted`, `auth_failed`), the dials so far, the transport and
/// codec, the session id, and why the last connection ended (`why`).
fn status_dict<'py>(py: Python<'py>, status: &Status) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    let r = status.readiness;
    dict.set_item("ready", status.ready)?;
    dict.set_item("transport", r.transport)?;
    dict.set_item("protocol", r.protocol)?;
    dict.set_item("service", r.service)?;
    dict.set_item("state", snake_case(&status.state))?;
    dict.set_item("attempts", status.attempts)?;
    dict.set_item(
        "transport_kind",
        match status.transport {
            TransportKind::Sse => "sse",
            _ => "websocket",
        },
    )?;
    dict.set_item(
        "codec",
        match status.codec {
            Codec::Binary => "binary",
            _ => "json",
        },
    )?;
    dict.set_item("session", status.session.clone())?;
    dict.set_item(
        "halted",
        status.halted.as_ref().map(|halt| {
            serde_json::to_value(halt)
                .ok()
                .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_owned))
                .unwrap_or_else(|| format!("{halt:?}"))
        }),
    )?;
    dict.set_item(
        "why",
        status
            .last_disconnect
            .as_ref()
            .map(|d| format!("{:?}", d.reason)),
    )?;
    Ok(dict)
}

/// A unit variant's serde name (`ConnectionState::Halted` → `halted`).
fn snake_case<T: serde::Serialize + std::fmt::Debug>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{value:?}"))
}

#[pymethods]
impl NativeClient {
    /// Resolves once the client is ready (raises `ClientClosed` if it
    /// closes first).
    fn ready<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let client = self.client.clone();
        future_into_py(py, async move {
            client.ready().await.map_err(errors::closed)?;
            Ok(())
        })
    }

    /// `method` with `params` (JSON text); the result as JSON text.
    #[pyo3(signature = (method, params, *, timeout_ms = None, idempotency_key = None))]
    fn request<'py>(
        &self,
        py: Python<'py>,
        method: String,
        params: String,
        timeout_ms: Option<u64>,
        idempotency_key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let params: serde_json::Value = serde_json::from_str(&params)
            .map_err(|e| PyValueError::new_err(format!("params are not JSON: {e}")))?;
        let mut options = RequestOptions::default();
        if let Some(ms) = timeout_ms {
            options = options.timeout(Duration::from_millis(ms));
        }
        if let Some(key) = idempotency_key {
            options = options.idempotency_key(key);
        }
        let client = self.client.clone();
        future_into_py(py, async move {
            let result = client
                .request_with(&method, params, options)
                .await
                .map_err(errors::request)?;
            Ok(RawJson::get(&result).to_owned())
        })
    }

    /// Publish `data` (JSON text) to `channel` from the client (the
    /// token must allow it); the server's answer as JSON text.
    fn publish<'py>(
        &self,
        py: Python<'py>,
        channel: String,
        data: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let data: serde_json::Value = serde_json::from_str(&data)
            .map_err(|e| PyValueError::new_err(format!("data is not JSON: {e}")))?;
        let client = self.client.clone();
        future_into_py(py, async move {
            let answer = client
                .publish(&channel, data)
                .await
                .map_err(errors::request)?;
            Ok(answer.get().to_owned())
        })
    }

    /// Subscribe to `channel` (with a subscription token where its
    /// namespace asks for one): a subscription yielding its items.
    #[pyo3(signature = (channel, *, token = None))]
    fn subscribe<'py>(
        &self,
        py: Python<'py>,
        channel: String,
        token: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.client.clone();
        future_into_py(py, async move {
            let subscribed = match &token {
                Some(token) => client.subscribe_with_token(&channel, token).await,
                None => client.subscribe(&channel).await,
            };
            let subscription = subscribed.map_err(errors::subscribe)?;
            Ok(NativeSubscription::new(subscription))
        })
    }

    /// The status now, as a dict (`belay.Status` names its keys).
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let status = self.client.status().borrow().clone();
        status_dict(py, &status)
    }

    /// Resolves with the next status once it changes (at most one waiter at
    /// a time sees each change; `None` once the client is gone).
    fn next_status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let watcher = Arc::clone(&self.watcher);
        future_into_py(py, async move {
            let mut watcher = watcher.lock().await;
            if watcher.changed().await.is_err() {
                return Ok(None);
            }
            let status = watcher.borrow_and_update().clone();
            Python::attach(|py| status_dict(py, &status).map(|d| Some(d.unbind())))
        })
    }

    /// Drop the connection and dial again now (the network changed).
    fn reconnect_now(&self) -> PyResult<()> {
        self.client.reconnect_now().map_err(errors::closed)
    }

    /// Close the client: requests in flight fail `ClientClosed`.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let client = self.client.clone();
        future_into_py(py, async move {
            client.close().await;
            Ok(())
        })
    }
}
