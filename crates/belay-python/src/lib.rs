//! The native half of the `belay` Python package (`belay._native`): the
//! Rust client, [`belay_client`], with its sans-IO core (belay-proto) and
//! its tokio driver, behind a PyO3 binding. Every protocol decision is the
//! core's; this crate only moves values across the boundary:
//!
//! - JSON crosses as text (the Python layer, `python/belay/`, encodes and
//!   decodes it), so no value is reinterpreted on the way;
//! - a Rust future becomes a Python awaitable on the caller's asyncio loop
//!   (`pyo3-async-runtimes`), and an async Python callable (a token
//!   provider, a host's method) becomes a Rust future (`awaiting.rs`);
//! - the client's typed errors become the exceptions of `belay.errors`
//!   (`errors.rs`).
//!
//! Why the tokio driver rather than asyncio I/O around the core:
//! docs/SDKS.md.

use pyo3::prelude::*;

mod awaiting;
mod client;
mod conformance;
mod errors;
mod host;
mod subscription;
mod tokens;

/// `belay._native`.
#[pymodule(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<client::NativeClient>()?;
    module.add_class::<subscription::NativeSubscription>()?;
    module.add_class::<host::NativeHost>()?;
    module.add_function(wrap_pyfunction!(client::connect, module)?)?;
    module.add_function(wrap_pyfunction!(host::start_host, module)?)?;
    module.add_function(wrap_pyfunction!(tokens::sign_jwt, module)?)?;
    // The shared vectors' hooks into the core (tests/test_vectors.py).
    module.add_class::<conformance::VectorHeartbeat>()?;
    module.add_class::<conformance::VectorBackoff>()?;
    module.add_function(wrap_pyfunction!(conformance::decode_server, module)?)?;
    module.add_function(wrap_pyfunction!(conformance::decode_client, module)?)?;
    module.add_function(wrap_pyfunction!(conformance::encode_client, module)?)?;
    module.add_function(wrap_pyfunction!(conformance::heartbeat_decide, module)?)?;
    module.add_function(wrap_pyfunction!(conformance::splitmix64, module)?)?;
    module.add("CORE_VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
