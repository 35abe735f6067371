//! Connection auth for a standalone server.

mod jwt;

pub use jwt::{JwtAuthenticator, JwtError, MissingChannels};
