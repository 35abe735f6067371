//! The scenarios: what happens to the fleet, and what is measured.

pub mod blip;
pub mod cost_sweep;
pub mod flapping;
pub mod outage;
pub mod spread;
