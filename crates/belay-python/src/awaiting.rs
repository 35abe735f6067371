//! Async Python callables awaited from the driver's tokio tasks: the call
//! is made under the GIL, and the coroutine it returns runs on the asyncio
//! loop the Python side connected from (its [`TaskLocals`]), scheduled
//! thread-safely; the task awaits its outcome.

use pyo3::prelude::*;
use pyo3_async_runtimes::TaskLocals;

/// `callable()` or `callable(arg)`, awaited on `locals`' loop.
pub(crate) async fn call(
    locals: &TaskLocals,
    callable: &Py<PyAny>,
    arg: Option<String>,
) -> PyResult<Py<PyAny>> {
    let outcome = Python::attach(|py| {
        let callable = callable.bind(py);
        let coroutine = match arg {
            Some(arg) => callable.call1((arg,))?,
            None => callable.call0()?,
        };
        pyo3_async_runtimes::into_future_with_locals(locals, coroutine)
    })?;
    outcome.await
}

/// Whether `error` is an instance of `belay.errors.NAME`.
pub(crate) fn is_a(error: &PyErr, name: &str) -> bool {
    Python::attach(|py| {
        py.import("belay.errors")
            .and_then(|module| module.getattr(name))
            .is_ok_and(|class| error.value(py).is_instance(&class).unwrap_or(false))
    })
}
