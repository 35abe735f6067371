//! What the loads and suites measure with.
//!
//! * [`stats`]: latency samples and their percentiles, medians.
//! * [`procfs`]: resident memory and CPU time of a process, from `/proc`.

pub mod procfs;
pub mod stats;
