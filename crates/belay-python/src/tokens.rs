//! `belay._native.sign_jwt`: the backend helpers' tokens, signed with the
//! same library and algorithms belay-standalone checks them with (HS256
//! with a shared secret, RS256 and ES256 with a PEM private key). The
//! claims are the Python layer's (`belay.backend`).

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Sign `claims` (a JSON object, as text) with `key` (the HS256 secret, or
/// the RS256 / ES256 private key in PEM).
#[pyfunction]
pub(crate) fn sign_jwt(algorithm: &str, key: &[u8], claims: &str) -> PyResult<String> {
    let bad = |what: String| PyValueError::new_err(what);
    let claims: serde_json::Value =
        serde_json::from_str(claims).map_err(|e| bad(format!("claims are not JSON: {e}")))?;
    if !claims.is_object() {
        return Err(bad("claims must be a JSON object".into()));
    }
    let (algorithm, key) = match algorithm {
        "HS256" if key.is_empty() => return Err(bad("the HS256 secret is empty".into())),
        "HS256" => (
            Algorithm::HS256,
            EncodingKey::from_secret(key).map_err(|e| bad(format!("HS256 key: {e}")))?,
        ),
        "RS256" => (
            Algorithm::RS256,
            EncodingKey::from_rsa_pem(key).map_err(|e| bad(format!("RS256 key: {e}")))?,
        ),
        "ES256" => (
            Algorithm::ES256,
            EncodingKey::from_ec_pem(key).map_err(|e| bad(format!("ES256 key: {e}")))?,
        ),
        other => {
            return Err(bad(format!(
                "algorithm must be HS256, RS256 or ES256, not {other:?}"
            )))
        }
    };
    jsonwebtoken::encode(&Header::new(algorithm), &claims, &key)
        .map_err(|e| bad(format!("cannot sign: {e}")))
}
