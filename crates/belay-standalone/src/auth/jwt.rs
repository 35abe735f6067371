//! [`JwtAuthenticator`]: a connection's token is a JWT signed by the
//! application's backend.
//!
//! Claims read: `sub` (the user, required), `exp` (required; the server
//! closes the connection with 4001 when it passes, by a timer), `aud` and
//! `iss` (required and checked when configured), `nbf` (checked when
//! present, with the leeway), and `channels`: a list of channel patterns
//! (`news`, `chat:*`) the user may subscribe to (absent: as
//! [`MissingChannels`] says, by default none), `publish`: patterns the user
//! may publish to from the client with `$publish` (absent: none), and
//! `info`: any JSON value other clients are told about the user (presence
//! entries, join/leave), and `host`: the id of the resident host the token
//! belongs to (docs/HOSTS.md; a host can only ever act as the id its token
//! names). One algorithm is accepted (HS256, RS256 or ES256); a token
//! signed with another is refused, so an HMAC secret can never be confused
//! with a public key.
//!
//! A subscription token (for namespaces with `subscribe = "token"`) is a JWT
//! with the same key, `sub`, `exp` and `channel`: the one channel it opens.
//! The `channel` claim is what tells the two kinds apart, both ways: a
//! token that carries it never opens a connection (nor refreshes one), and
//! a token without it never opens a channel, so neither can stand in for
//! the other.
//!
//! A lifetime longer than
//! [`MAX_CREDENTIAL_LIFETIME`](belay_server::auth::MAX_CREDENTIAL_LIFETIME)
//! (an `exp` of `2^64-1`, say) is cut to it: values from a token are
//! saturated, never trusted to fit.
//!
//! Every failure is `unauthorized` (close 4001) with a reason a developer
//! can act on (`token expired`, `bad signature`, `wrong audience`, …); a
//! reason never contains key material or the token.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use belay_proto::message::RawJson;
use belay_proto::server::{payload_depth, MAX_PAYLOAD_DEPTH};
use belay_server::auth::{AuthError, Authenticator, Principal, Verdict};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

/// Why a [`JwtAuthenticator`] could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JwtError {
    /// The algorithm is not HS256, RS256 or ES256.
    #[error("unsupported JWT algorithm {0:?} (HS256, RS256 or ES256)")]
    Algorithm(String),
    /// The key is not usable for the algorithm (not a PEM public key of
    /// the right type, or an empty secret).
    #[error("unusable JWT key for {algorithm}: {reason}")]
    Key {
        /// The algorithm.
        algorithm: String,
        /// Why (never the key itself).
        reason: String,
    },
    /// The config does not check JWTs (`auth.mode` is not `"jwt"`).
    #[error("the config's auth.mode is not \"jwt\": it checks no tokens")]
    NotConfigured,
}

/// What a connection token without a `channels` claim may subscribe to
/// in `subscribe = "grant"` namespaces (`auth.jwt_missing_channels`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MissingChannels {
    /// Nothing: a grant must be written in the token (the default).
    #[default]
    None,
    /// Every channel, as if the claim were `["*"]`.
    Any,
}

/// Checks connection tokens as JWTs.
#[derive(Clone)]
pub struct JwtAuthenticator {
    key: Arc<DecodingKey>,
    validation: Arc<Validation>,
    missing_channels: MissingChannels,
}

impl std::fmt::Debug for JwtAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtAuthenticator")
            .field("algorithms", &self.validation.algorithms)
            .field("missing_channels", &self.missing_channels)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
    exp: u64,
    #[serde(default)]
    channels: Option<Vec<String>>,
    /// Channel patterns the user may publish to from the client
    /// (`$publish`); absent: none.
    #[serde(default)]
    publish: Option<Vec<String>>,
    /// What other clients are told about the user (presence, join/leave).
    #[serde(default)]
    info: Option<Box<serde_json::value::RawValue>>,
    /// The resident host the token belongs to.
    #[serde(default)]
    host: Option<String>,
    /// Present only in subscription tokens: such a token is refused here.
    #[serde(default)]
    channel: Option<serde::de::IgnoredAny>,
}

/// The claims of a subscription token.
#[derive(Debug, Deserialize)]
struct SubscriptionClaims {
    sub: String,
    #[serde(default)]
    channel: Option<String>,
    /// Required by the validation; how long the subscription lasts.
    exp: u64,
}

impl JwtAuthenticator {
    /// Tokens signed with HS256 and `secret`.
    pub fn hs256(secret: &[u8]) -> Result<JwtAuthenticator, JwtError> {
        if secret.is_empty() {
            return Err(key_error("HS256", "the secret is empty"));
        }
        let key =
            DecodingKey::from_secret(secret).map_err(|e| key_error("HS256", &e.to_string()))?;
        Ok(JwtAuthenticator::with(key, Algorithm::HS256))
    }

    /// Tokens signed with `algorithm` (`"HS256"`, `"RS256"`, `"ES256"`);
    /// `key` is the secret for HS256, a PEM public key otherwise.
    pub fn new(algorithm: &str, key: &[u8]) -> Result<JwtAuthenticator, JwtError> {
        match algorithm {
            "HS256" => JwtAuthenticator::hs256(key),
            "RS256" => DecodingKey::from_rsa_pem(key)
                .map(|k| JwtAuthenticator::with(k, Algorithm::RS256))
                .map_err(|_| key_error("RS256", "not a PEM RSA public key")),
            "ES256" => DecodingKey::from_ec_pem(key)
                .map(|k| JwtAuthenticator::with(k, Algorithm::ES256))
                .map_err(|_| key_error("ES256", "not a PEM EC (P-256) public key")),
            other => Err(JwtError::Algorithm(other.to_owned())),
        }
    }

    fn with(key: DecodingKey, algorithm: Algorithm) -> JwtAuthenticator {
        let mut validation = Validation::new(algorithm);
        validation.set_required_spec_claims(&["exp", "sub"]);
        validation.leeway = 0;
        validation.validate_aud = false;
        // `nbf` is checked whenever a token carries it (with the leeway).
        validation.validate_nbf = true;
        JwtAuthenticator {
            key: Arc::new(key),
            validation: Arc::new(validation),
            missing_channels: MissingChannels::default(),
        }
    }

    /// Require `aud` to name `audience`: a token without `aud` is refused
    /// too (configured means required).
    pub fn audience(mut self, audience: &str) -> Self {
        let validation = Arc::make_mut(&mut self.validation);
        validation.set_audience(&[audience]);
        validation.validate_aud = true;
        validation.required_spec_claims.insert("aud".into());
        self
    }

    /// Require `iss` to be `issuer`: a token without `iss` is refused too.
    pub fn issuer(mut self, issuer: &str) -> Self {
        let validation = Arc::make_mut(&mut self.validation);
        validation.set_issuer(&[issuer]);
        validation.required_spec_claims.insert("iss".into());
        self
    }

    /// What a token without a `channels` claim may subscribe to.
    pub fn missing_channels(mut self, missing: MissingChannels) -> Self {
        self.missing_channels = missing;
        self
    }

    /// Allow `leeway` of clock skew on `exp` and `nbf`.
    pub fn leeway(mut self, leeway: Duration) -> Self {
        Arc::make_mut(&mut self.validation).leeway = leeway.as_secs();
        self
    }
}

impl JwtAuthenticator {
    /// A good subscription token: for how long (`exp` and the leeway).
    fn subscription(
        &self,
        principal: &Principal,
        channel: &str,
        token: Option<&str>,
    ) -> Result<Option<Duration>, AuthError> {
        let Some(token) = token else {
            return Err(AuthError::Unauthorized(format!(
                "{channel:?} needs a subscription token"
            )));
        };
        let claims = jsonwebtoken::decode::<SubscriptionClaims>(token, &self.key, &self.validation)
            .map_err(|e| AuthError::Unauthorized(format!("subscription {}", refusal(e.kind()))))?
            .claims;
        let Some(named) = claims.channel.as_deref() else {
            return Err(AuthError::Unauthorized(
                "a connection token is not a subscription token (no claim `channel`)".into(),
            ));
        };
        if named != channel {
            return Err(AuthError::Forbidden(format!(
                "the subscription token is not for {channel:?}"
            )));
        }
        if claims.sub != principal.user {
            return Err(AuthError::Forbidden(
                "the subscription token is for another user".into(),
            ));
        }
        Ok(Some(self.left_of(claims.exp)))
    }

    /// The time left on a token whose `exp` is `exp` (with the leeway),
    /// at most [`MAX_CREDENTIAL_LIFETIME`](belay_server::auth::MAX_CREDENTIAL_LIFETIME).
    fn left_of(&self, exp: u64) -> Duration {
        let now_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let left = exp
            .saturating_add(self.validation.leeway)
            .saturating_sub(now_unix);
        Duration::from_secs(left).min(belay_server::auth::MAX_CREDENTIAL_LIFETIME)
    }
}

fn key_error(algorithm: &str, reason: &str) -> JwtError {
    JwtError::Key {
        algorithm: algorithm.to_owned(),
        reason: reason.to_owned(),
    }
}

/// The reason a client is told.
fn refusal(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "token expired".into(),
        ErrorKind::ImmatureSignature => "token not valid yet (nbf)".into(),
        ErrorKind::InvalidSignature => "bad signature".into(),
        ErrorKind::InvalidAudience => "wrong audience".into(),
        ErrorKind::InvalidIssuer => "wrong issuer".into(),
        ErrorKind::InvalidAlgorithm => "token signed with another algorithm".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("missing claim `{claim}`"),
        ErrorKind::InvalidClaimFormat(claim) => format!("claim `{claim}` has the wrong type"),
        ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Utf8(_) => {
            "malformed token (not a JWT)".into()
        }
        ErrorKind::Json(_) => "malformed claims (`sub` must be a string, `exp` a number, `channels` and `publish` lists of strings)".into(),
        _ => "invalid token".into(),
    }
}

impl Authenticator for JwtAuthenticator {
    /// A subscription token is a JWT signed like the connection's, with
    /// `sub` (the connection's user), `channel` (the channel, exactly) and
    /// `exp`; it is checked at each subscribe (a resubscribe after a
    /// reconnect too) and each `sub_refresh`, and the subscription lasts
    /// until its `exp` (spec/PROTOCOL.md §5.8).
    fn check_subscription_token(
        &self,
        principal: &Principal,
        channel: &str,
        token: Option<&str>,
    ) -> Verdict<Option<Duration>> {
        Verdict::Now(self.subscription(principal, channel, token))
    }

    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError> {
        let Some(token) = token else {
            return Err(AuthError::Unauthorized("a token is required".into()));
        };
        let data = jsonwebtoken::decode::<Claims>(token, &self.key, &self.validation)
            .map_err(|e| AuthError::Unauthorized(refusal(e.kind())))?;
        let claims = data.claims;
        if claims.channel.is_some() {
            return Err(AuthError::Unauthorized(
                "a subscription token cannot open or refresh a connection (claim `channel`)".into(),
            ));
        }
        if claims.sub.is_empty() {
            return Err(AuthError::Unauthorized("empty `sub`".into()));
        }
        let left = self.left_of(claims.exp);
        let mut principal = Principal::user(claims.sub).expiring_in(left);
        match (claims.channels, self.missing_channels) {
            (Some(channels), _) => principal = principal.subscribing_to(channels),
            (None, MissingChannels::None) => principal = principal.subscribing_to(Vec::new()),
            (None, MissingChannels::Any) => {}
        }
        if let Some(publish) = claims.publish {
            principal = principal.publishing_to(publish);
        }
        if let Some(info) = claims.info {
            // Other clients are sent `info` (presence entries, join/leave):
            // nested deeper than a publication's data may be, it would be a
            // frame their parsers cannot take (serde_json stops at 128), as
            // `Server::publish` refuses for data. Past 128 it does not even
            // parse as a `Value` here.
            let too_deep = serde_json::from_str::<serde_json::Value>(info.get())
                .map_or(true, |value| payload_depth(&value) > MAX_PAYLOAD_DEPTH);
            if too_deep {
                return Err(AuthError::Unauthorized(format!(
                    "claim `info` nests deeper than {MAX_PAYLOAD_DEPTH} levels"
                )));
            }
            let info = RawJson::from_json(info.get().to_owned())
                .map_err(|_| AuthError::Unauthorized("claim `info` is not JSON".into()))?;
            principal = principal.with_info(info);
        }
        if let Some(host) = claims.host {
            if !belay_proto::host::valid_host_id(&host) {
                return Err(AuthError::Unauthorized(
                    "claim `host` is not a host id (1-128 of A-Z a-z 0-9 - _ .)".into(),
                ));
            }
            principal = principal.hosting(host);
        }
        Ok(principal)
    }
}
