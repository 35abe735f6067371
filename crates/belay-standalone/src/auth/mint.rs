//! [`TokenMint`]: tokens a config's JWT auth accepts, for development and
//! tests (`belay token mint`): the same algorithm, key, audience and issuer
//! as `[auth]`, the claims [`JwtAuthenticator`](super::JwtAuthenticator)
//! reads. An RS256 or ES256 config names only the public key, so minting
//! takes the private key apart.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

use super::JwtError;
use crate::config::Settings;

/// What a minted token says.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct MintClaims {
    /// The user (`sub`).
    pub user: String,
    /// How long it is valid from now (`exp`).
    pub ttl: Duration,
    /// Channel patterns it may subscribe to (`channels`); `None`: no claim.
    pub channels: Option<Vec<String>>,
    /// Channel patterns it may publish to from the client (`publish`).
    pub publish: Option<Vec<String>>,
    /// What other clients are told about the user (`info`).
    pub info: Option<serde_json::Value>,
    /// A subscription token for this one channel (`channel`) instead of a
    /// connection token.
    pub channel: Option<String>,
    /// The resident host the connection is (`host`, docs/HOSTS.md): only
    /// it may hold `$host-calls:ID` and answer calls to `ID`.
    pub host: Option<String>,
}

impl MintClaims {
    /// A connection token of `user`, valid for `ttl`.
    pub fn new(user: impl Into<String>, ttl: Duration) -> Self {
        MintClaims {
            user: user.into(),
            ttl,
            ..MintClaims::default()
        }
    }
}

#[derive(Serialize)]
struct Claims<'a> {
    sub: &'a str,
    exp: u64,
    iat: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    aud: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iss: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    channels: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    publish: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    info: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    channel: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    host: Option<&'a str>,
}

/// Signs tokens as a config's `[auth]` expects them.
pub struct TokenMint {
    algorithm: Algorithm,
    key: EncodingKey,
    audience: Option<String>,
    issuer: Option<String>,
}

impl std::fmt::Debug for TokenMint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenMint")
            .field("algorithm", &self.algorithm)
            .field("audience", &self.audience)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl TokenMint {
    /// The mint of `settings` (`auth.mode = "jwt"`): HS256 signs with
    /// `auth.jwt_secret`; RS256 and ES256 with `private_key` (PEM), which
    /// the config does not hold.
    pub fn from_settings(
        settings: &Settings,
        private_key: Option<&[u8]>,
    ) -> Result<TokenMint, JwtError> {
        if settings.text("auth.mode") != Some("jwt") {
            return Err(JwtError::NotConfigured);
        }
        let name = settings.text("auth.jwt_algorithm").unwrap_or("HS256");
        let failed = |reason: String| JwtError::Key {
            algorithm: name.to_owned(),
            reason,
        };
        let (algorithm, key) = match (name, private_key) {
            ("HS256", _) => {
                let secret = settings.text("auth.jwt_secret").unwrap_or_default();
                if secret.is_empty() {
                    return Err(failed("auth.jwt_secret is empty".into()));
                }
                (
                    Algorithm::HS256,
                    EncodingKey::from_secret(secret.as_bytes())
                        .map_err(|e| failed(e.to_string()))?,
                )
            }
            ("RS256", Some(pem)) => (
                Algorithm::RS256,
                EncodingKey::from_rsa_pem(pem).map_err(|e| failed(e.to_string()))?,
            ),
            ("ES256", Some(pem)) => (
                Algorithm::ES256,
                EncodingKey::from_ec_pem(pem).map_err(|e| failed(e.to_string()))?,
            ),
            (_, None) => {
                return Err(failed(
                    "the config holds the public key only: give the private key (--key FILE)"
                        .into(),
                ))
            }
            (other, Some(_)) => return Err(JwtError::Algorithm(other.to_owned())),
        };
        Ok(TokenMint {
            algorithm,
            key,
            audience: settings.text("auth.jwt_audience").map(str::to_owned),
            issuer: settings.text("auth.jwt_issuer").map(str::to_owned),
        })
    }

    /// A token with `claims`, issued now.
    pub fn mint(&self, claims: &MintClaims) -> Result<String, JwtError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let body = Claims {
            sub: &claims.user,
            exp: now.saturating_add(claims.ttl.as_secs()),
            iat: now,
            aud: self.audience.as_deref(),
            iss: self.issuer.as_deref(),
            channels: claims.channels.as_deref(),
            publish: claims.publish.as_deref(),
            info: claims.info.as_ref(),
            channel: claims.channel.as_deref(),
            host: claims.host.as_deref(),
        };
        jsonwebtoken::encode(&Header::new(self.algorithm), &body, &self.key).map_err(|e| {
            JwtError::Key {
                algorithm: format!("{:?}", self.algorithm),
                reason: e.to_string(),
            }
        })
    }
}

/// The header and claims of `token`, **without checking its signature**
/// or its times (`belay token inspect`): what it says, not whether to
/// believe it.
pub fn decode_unverified(token: &str) -> Result<(serde_json::Value, serde_json::Value), String> {
    let data = jsonwebtoken::dangerous::insecure_decode::<serde_json::Value>(token)
        .map_err(|e| format!("not a JWT: {e}"))?;
    let header = serde_json::to_value(&data.header).map_err(|e| e.to_string())?;
    Ok((header, data.claims))
}
