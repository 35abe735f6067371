//! The client's typed errors as the exceptions of `belay.errors` (defined in
//! Python, so that they carry attributes and docs; built here by name).

use belay_client::{Closed, RequestError, SubscribeError};
use pyo3::prelude::*;

/// An exception `belay.errors.CLASS(*args)`; if that module cannot be
/// imported, the import's own error.
fn exception<'py, A>(py: Python<'py>, class: &str, args: A) -> PyErr
where
    A: pyo3::call::PyCallArgs<'py>,
{
    let built = py
        .import("belay.errors")
        .and_then(|module| module.getattr(class))
        .and_then(|class| class.call1(args));
    match built {
        Ok(value) => PyErr::from_value(value),
        Err(error) => error,
    }
}

/// A request's failure.
pub(crate) fn request(error: RequestError) -> PyErr {
    Python::attach(|py| match error {
        RequestError::NotReady => exception(py, "NotReady", (error.to_string(),)),
        RequestError::Timeout => exception(py, "Timeout", (error.to_string(),)),
        RequestError::ConnectionClosed => exception(py, "ConnectionClosed", (error.to_string(),)),
        RequestError::Closed => exception(py, "ClientClosed", (error.to_string(),)),
        RequestError::TooLarge { .. } => exception(py, "TooLarge", (error.to_string(),)),
        RequestError::Server {
            code,
            message,
            retry_after_ms,
        } => exception(
            py,
            "ServerError",
            (code.as_str().to_owned(), message, retry_after_ms),
        ),
        other => exception(py, "BelayError", (other.to_string(),)),
    })
}

/// A subscribe's failure.
pub(crate) fn subscribe(error: SubscribeError) -> PyErr {
    Python::attach(|py| match error {
        SubscribeError::AlreadySubscribed(_) => {
            exception(py, "AlreadySubscribed", (error.to_string(),))
        }
        other => exception(py, "ClientClosed", (other.to_string(),)),
    })
}

/// A command to a closed client.
pub(crate) fn closed(error: Closed) -> PyErr {
    Python::attach(|py| exception(py, "ClientClosed", (error.to_string(),)))
}
