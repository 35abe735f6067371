//! A subscription's items, one awaitable at a time (`belay.Subscription`
//! makes it an async iterator).

use std::sync::Arc;

use belay_client::{Item, Subscription};
use futures_util::FutureExt;
use pyo3::prelude::*;
use pyo3_async_runtimes::tokio::future_into_py;
use tokio::sync::{watch, Mutex};

/// One item: `(kind, data as JSON text, epoch, offset, code)`; kind is
/// `publication`, `resync` or `refused` (with the server's code).
type ItemTuple = (String, String, String, u64, String);

/// Items handed over at once when more are ready: one crossing into Python
/// for many publications (a busy channel costs the event loop a wake-up per
/// batch, not per publication).
const BATCH: usize = 256;

/// A subscription to one channel.
#[pyclass(frozen, module = "belay._native")]
pub(crate) struct NativeSubscription {
    channel: String,
    /// `None` once closed (dropping the subscription unsubscribes).
    inner: Arc<Mutex<Option<Subscription>>>,
    /// Turned true by `close`, which ends a `next` waiting meanwhile.
    closed: watch::Sender<bool>,
}

impl NativeSubscription {
    pub(crate) fn new(subscription: Subscription) -> Self {
        NativeSubscription {
            channel: subscription.channel().to_owned(),
            inner: Arc::new(Mutex::new(Some(subscription))),
            closed: watch::Sender::new(false),
        }
    }
}

fn item(item: Item) -> ItemTuple {
    match item {
        Item::Publication(p) => (
            "publication".into(),
            p.data.get().to_owned(),
            p.epoch,
            p.offset,
            String::new(),
        ),
        Item::Resync => (
            "resync".into(),
            String::new(),
            String::new(),
            0,
            String::new(),
        ),
        Item::Refused { code } => (
            "refused".into(),
            String::new(),
            String::new(),
            0,
            code.as_str().to_owned(),
        ),
        other => (
            "unknown".into(),
            String::new(),
            String::new(),
            0,
            format!("{other:?}"),
        ),
    }
}

#[pymethods]
impl NativeSubscription {
    /// Its channel.
    #[getter]
    fn channel(&self) -> String {
        self.channel.clone()
    }

    /// The next items, in order: the first once it comes, with those
    /// already waiting behind it (at most [`BATCH`]); `None` when the
    /// subscription ended (the client closed, or this subscription was
    /// closed).
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = Arc::clone(&self.inner);
        let mut closed = self.closed.subscribe();
        future_into_py(py, async move {
            let mut guard = inner.lock().await;
            let Some(subscription) = guard.as_mut() else {
                return Ok(None);
            };
            let first = tokio::select! {
                next = subscription.next() => next,
                _ = closed.wait_for(|closed| *closed) => None,
            };
            let Some(first) = first else {
                return Ok(None);
            };
            let mut batch = vec![item(first)];
            while batch.len() < BATCH {
                match subscription.next().now_or_never() {
                    Some(Some(next)) => batch.push(item(next)),
                    // The end comes with the next call.
                    Some(None) | None => break,
                }
            }
            Ok(Some(batch))
        })
    }

    /// Unsubscribe.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.closed.send_replace(true);
        let inner = Arc::clone(&self.inner);
        future_into_py(py, async move {
            inner.lock().await.take();
            Ok(())
        })
    }
}
