//! `belay._native.start_host`: a resident host ([`belay_client::host`]),
//! its methods async Python callables. Each is called with the call's
//! params as JSON text and returns `("ok", result JSON, "")` or
//! `("error", code, message)` (the Python layer, `belay.host`, wraps the
//! application's handlers so).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use belay_client::host::{Host, HostBuilder, HostError};
use belay_proto::host::{Beat, IdleSleepConfig};
use pyo3::prelude::*;
use pyo3_async_runtimes::tokio::{future_into_py, get_current_locals, get_runtime};
use pyo3_async_runtimes::TaskLocals;
use tokio::sync::Mutex;

use crate::awaiting;

/// A running host (`belay.host.Host` wraps it).
#[pyclass(frozen, module = "belay._native")]
pub(crate) struct NativeHost {
    /// `None` once stopped.
    host: Arc<Mutex<Option<Host>>>,
    status: tokio::sync::watch::Receiver<belay_client::host::HostStatus>,
}

/// Start a host of the relay at `url` with its host token; `methods` maps
/// each method's name to its async handler. Called from a running asyncio
/// loop (the handlers run on it).
#[pyfunction]
#[pyo3(signature = (url, token, methods, *, interval_ms = 15_000, min_awake_ms = 60_000))]
pub(crate) fn start_host(
    py: Python<'_>,
    url: String,
    token: String,
    methods: HashMap<String, Py<PyAny>>,
    interval_ms: u64,
    min_awake_ms: u64,
) -> PyResult<NativeHost> {
    let locals = get_current_locals(py)?;
    let mut builder = HostBuilder::new(url, token)
        .interval(Duration::from_millis(interval_ms))
        .sleep(IdleSleepConfig::default().with_min_awake(Duration::from_millis(min_awake_ms)));
    for (name, handler) in methods {
        builder = builder.method(name, handler_of(locals.clone(), Arc::new(handler)));
    }
    let _runtime = get_runtime().enter();
    let host = builder.start();
    let status = host.status();
    Ok(NativeHost {
        host: Arc::new(Mutex::new(Some(host))),
        status,
    })
}

/// A method of the host that awaits `handler` on `locals`' loop.
fn handler_of(
    locals: TaskLocals,
    handler: Arc<Py<PyAny>>,
) -> impl Fn(
    serde_json::Value,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<serde_json::Value, HostError>> + Send>,
> + Send
       + Sync
       + 'static {
    move |params| {
        let (locals, handler) = (locals.clone(), Arc::clone(&handler));
        Box::pin(async move {
            let outcome = awaiting::call(&locals, &handler, Some(params.to_string()))
                .await
                .and_then(|value| {
                    Python::attach(|py| value.extract::<(String, String, String)>(py))
                });
            match outcome {
                Ok((kind, result, _)) if kind == "ok" => {
                    serde_json::from_str(&result).map_err(|e| {
                        HostError::new("internal", format!("the result is not JSON: {e}"))
                    })
                }
                Ok((_, code, message)) => Err(HostError::new(code, message)),
                Err(error) => Err(HostError::new("internal", error.to_string())),
            }
        })
    }
}

#[pymethods]
impl NativeHost {
    /// `(id, awake, needed, beats, starts, stops, stopped)`: what the host
    /// is doing (`needed`: the last heartbeat's answer, `None` if it had
    /// none or failed).
    fn status(&self) -> (Option<String>, bool, Option<bool>, u64, u64, u64, bool) {
        let s = self.status.borrow().clone();
        let needed = match s.last_beat {
            Some(Beat::Answered { needed }) => needed,
            _ => None,
        };
        (
            s.id,
            s.awake,
            needed,
            s.stats.beats,
            s.stats.starts,
            s.stats.stops,
            s.stopped,
        )
    }

    /// Stop: the session closes and every task of the host ends.
    fn stop<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let host = Arc::clone(&self.host);
        future_into_py(py, async move {
            if let Some(host) = host.lock().await.take() {
                host.stop().await;
            }
            Ok(())
        })
    }
}
