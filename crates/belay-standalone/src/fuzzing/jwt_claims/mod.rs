//! `jwt_claims`: one token against [`JwtAuthenticator`], as a connection
//! token ([`Authenticator::authenticate`]) and as a subscription token
//! ([`Authenticator::check_subscription_token`]).
//!
//! Input: byte 0 picks the [`Mode`] that turns the rest into a token (raw
//! text, and no token at all for empty text; any payload bytes signed
//! with the harness's key; claims built from the bytes, signed with the
//! harness's key, another key or another algorithm; a mangled header; a
//! flipped byte), byte 1 the configuration
//! (bit 0: an audience required, bit 1: an issuer, bits 2–3: a leeway of
//! 0, 5, 60 or 3,600 s, bit 4: a token without `channels` may subscribe to
//! any channel ([`MissingChannels::Any`]) or none, bits 5–7: the channel the
//! subscription check asks for).
//!
//! Checks, panicking with `jwt_claims: invariant N (…)`: **1** a refusal
//! has a reason, which contains neither the secret nor the token; **2** an
//! accepted connection token has a non-empty string `sub`, the principal's
//! user; **3** and no `channel` claim (that is a subscription token; `null` is
//! none);
//! **4** an accepted token's `exp` (+ leeway) is not past, and the
//! principal expires no later than [`MAX_CREDENTIAL_LIFETIME`](belay_server::auth::MAX_CREDENTIAL_LIFETIME) from now;
//! **5** a configured audience / issuer is in the token's `aud` / `iss`;
//! **6** `nbf`, if any, is not later than now + leeway; **7** the grant
//! ([`Principal::subscribe`]) is the `channels` claim, or none-at-all
//! (`Some([])`) without one unless [`MissingChannels::Any`]; **8** a `host`
//! claim is a valid host id and the principal's host; **9** an accepted
//! subscription token names the channel asked in `channel` and the
//! principal's user in `sub`; **10** nothing not signed with the harness's
//! key and HS256 is accepted; **11** an accepted `info` (sent to other
//! clients) nests no deeper than a publication's data may
//! ([`MAX_PAYLOAD_DEPTH`](belay_proto::server::MAX_PAYLOAD_DEPTH)). A panic in the authenticator is a crash too.

mod checks;
mod token;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use belay_server::auth::{Authenticator, Principal, Verdict};

use crate::auth::{JwtAuthenticator, MissingChannels};
use crate::fuzzing::choices::Choices;
use checks::{check_connection, check_refusal, check_subscription};
use token::{Mode, AUDIENCE, ISSUER, SECRET};

/// The channels a subscription check may ask for: plain, a pattern's
/// match, empty, a user's, a host's calls, presence, a 300-byte name.
const CHANNELS: [&str; 8] = [
    "news",
    "chat:1",
    "",
    "#alice",
    "$host-calls:h1",
    "$presence:news",
    "other",
    "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",
];

/// What one input came to, for the replay test's check that the seeds
/// reach past the signature.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JwtOutcome {
    /// The token was accepted as a connection token.
    pub connection_accepted: bool,
    /// The token was accepted as a subscription token.
    pub subscription_accepted: bool,
}

/// The configuration byte, decoded.
struct Config {
    audience: bool,
    issuer: bool,
    leeway_secs: u64,
    missing: MissingChannels,
    channel: &'static str,
}

impl Config {
    fn from_byte(byte: u8) -> Config {
        Config {
            audience: byte & 1 != 0,
            issuer: byte & 2 != 0,
            leeway_secs: [0, 5, 60, 3600][usize::from((byte >> 2) & 3)],
            missing: if byte & 16 != 0 {
                MissingChannels::Any
            } else {
                MissingChannels::None
            },
            channel: CHANNELS[usize::from(byte >> 5)],
        }
    }

    fn authenticator(&self) -> JwtAuthenticator {
        let mut jwt = JwtAuthenticator::hs256(SECRET)
            .expect("a usable secret")
            .leeway(Duration::from_secs(self.leeway_secs))
            .missing_channels(self.missing);
        if self.audience {
            jwt = jwt.audience(AUDIENCE);
        }
        if self.issuer {
            jwt = jwt.issuer(ISSUER);
        }
        jwt
    }
}

/// Run one input; panics when an invariant breaks.
pub fn jwt_claims(data: &[u8]) -> JwtOutcome {
    let mut choices = Choices::new(data);
    let mode = Mode::from_byte(choices.next());
    let config = Config::from_byte(choices.next());
    let jwt = config.authenticator();
    let now = unix_now();
    let token = token::token(mode, choices.rest(), now, config.channel);
    let mut outcome = JwtOutcome::default();
    // Empty raw text stands for no token at all (a connect without one).
    let presented = (mode != Mode::RawText || !token.is_empty()).then_some(token.as_str());

    let principal = match jwt.authenticate(presented) {
        Ok(principal) => {
            check_connection(&config, mode, &token, &principal, now);
            outcome.connection_accepted = true;
            principal
        }
        Err(refusal) => {
            check_refusal(&refusal, &token);
            Principal::user("alice")
        }
    };
    let verdict = jwt.check_subscription_token(&principal, config.channel, presented);
    let Verdict::Now(decision) = verdict else {
        panic!("jwt_claims: invariant 9 (a JWT is checked at once): Verdict::Later");
    };
    match decision {
        Ok(lifetime) => {
            assert!(
                lifetime.is_some_and(|d| d <= belay_server::auth::MAX_CREDENTIAL_LIFETIME),
                "jwt_claims: invariant 9 (a subscription lasts as long as its token's `exp`, within the cap): {lifetime:?}"
            );
            check_subscription(&config, mode, &token, &principal, now);
            outcome.subscription_accepted = true;
        }
        Err(refusal) => check_refusal(&refusal, &token),
    }
    outcome
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
