//! The functions the fuzz targets in `fuzz/` (`jwt_claims`, `http_api`) and
//! the corpus replay test (`tests/fuzz_corpus_replay.rs`) call, so both run
//! the same checks; see docs/FUZZING.md. Behind the `fuzzing` feature, not
//! part of the public API.

mod choices;
pub mod http_api;
pub mod jwt_claims;
pub mod seeds;

pub use http_api::http_api;
pub use jwt_claims::{jwt_claims, JwtOutcome};
