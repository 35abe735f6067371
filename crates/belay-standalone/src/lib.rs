//! Belay as a standalone server for a backend in any language: one TOML
//! config file (every option, documented defaults, environment overrides,
//! every error reported with its line) and JWT connection auth.
//!
//! # Model
//!
//! ```text
//!  belay.toml ──Settings::load──▶ Settings ──Plan::from_settings──▶ Plan
//!   (+ BELAY_* env)  (checked: unknown keys,      (ServerConfig, listen, TLS files,
//!                     types, ranges, files)        broker, JwtAuthenticator)
//! ```
//!
//! The `belay` binary runs a [`Plan`] (`belay serve --config FILE`) and
//! checks a file without running it (`belay config check FILE`).
//!
//! # Run loop
//!
//! ```
//! use belay_standalone::{Plan, Settings};
//!
//! let text = "[server]\nlisten = \"127.0.0.1:0\"\n[auth]\nmode = \"jwt\"\n";
//! let settings = Settings::parse(text, None, |var| {
//!     (var == "BELAY_AUTH_JWT_SECRET").then(|| "s3cret".to_owned())
//! })
//! .expect("a valid file");
//! let plan = Plan::from_settings(&settings).expect("a usable plan");
//! let server = belay_server::Server::builder().config(plan.server.clone());
//! let server = match plan.auth.clone() {
//!     Some(jwt) => server.authenticator(jwt),
//!     None => server,
//! }
//! .build();
//! # let _ = server;
//! ```
//!
//! The process runs on [`runtime::build_with_workers`]: tokio's
//! multi-threaded runtime whose idle workers hand jemalloc's thread cache
//! back (also the benchmark servers' runtime, belay-load).

pub mod api;
pub mod auth;
pub mod config;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod proxy;
pub mod runtime;

pub use auth::{JwtAuthenticator, JwtError, MissingChannels};
pub use config::{
    defaults_file, stray_variables, BrokerPlan, ConfigError, LoadError, LogFormat, LogPlan, Plan,
    PlanError, Settings, StrayVariable,
};
pub use proxy::{Backend, BackendAuth, BackendTls, ProxyError, RpcProxy};
