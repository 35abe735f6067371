//! belay-sim: a fleet of real Belay sessions in virtual time.
//!
//! Every simulated client is a [`belay_proto::Session`], the decision code
//! the real clients run, with its own seed. The simulator owns one virtual
//! clock, an agenda of wake-ups, and a model of the server (down for a
//! while, then admitting through the core's own accept bucket,
//! [`belay_proto::server::TokenBucket`], optionally sending pacing hints
//! and restart advice); it feeds the sessions transport facts and answers
//! what they ask for. Nothing here re-implements a policy or the server's
//! admission.
//!
//! ```text
//!  scenario ──▶ Fleet (agenda: timers + deliveries) ──▶ Session × N  (belay-proto)
//!                 │  ▲                                     │
//!                 ▼  │ admit / refuse, welcome, pong        ▼ OpenTransport, connect, ping
//!               ServerModel (down, TokenBucket, FleetPacing) ◀───────┘
//!                 │
//!                 ▼
//!               Recorder ──▶ metrics ──▶ report (markdown, CSV) / plot (SVG)
//! ```
//!
//! The scenarios are in [`scenario`]: the mass outage and the planned
//! restart ([`scenario::outage`]), a flapping server ([`scenario::flapping`])
//! and a lone client's network blip ([`scenario::blip`]); the outage on a
//! server whose every attempt costs work ([`cost`],
//! [`scenario::cost_sweep`]), and with its notices spread over a window,
//! next to what the best possible protocol could do ([`bound`],
//! [`scenario::spread`]). The model and the results are described in
//! `docs/SIMULATION.md`.
//!
//! ```
//! use belay_sim::policy::select_cases;
//! use belay_sim::scenario::outage::{run_outage, OutageSpec};
//!
//! // The seed's outage, scaled down: 500 clients, 10 s down, then 25/s.
//! let mut spec = OutageSpec::seed_scenario();
//! spec.clients = 500;
//! spec.server = belay_sim::server::ServerOptions::new(25);
//! let default = &select_cases(Some("belay-default")).unwrap()[0];
//! let run = run_outage(&spec, default, None);
//! assert_eq!(run.metrics.connected_at_end, 500);
//! assert!(run.metrics.peak_after_return <= 30);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bound;
pub mod cost;
mod duration;
mod fleet;
pub mod metrics;
mod parallel;
mod plot;
pub mod policy;
mod progress;
mod queue;
mod record;
pub mod report;
pub mod scenario;
pub mod server;

pub use duration::{format_duration, parse_duration};
pub use fleet::{client_seed, EngineStats};
pub use plot::outage_svg;
pub use progress::Progress;
pub use record::Recorder;
