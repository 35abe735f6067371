//! The scenarios: what happens to the fleet, and what is measured.

pub mod blip;
pub mod flapping;
pub mod outage;
