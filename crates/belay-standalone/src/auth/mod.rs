//! Connection auth for a standalone server.

mod jwt;
mod mint;

pub use jwt::{JwtAuthenticator, JwtError, MissingChannels};
pub use mint::{decode_unverified, MintClaims, TokenMint};
