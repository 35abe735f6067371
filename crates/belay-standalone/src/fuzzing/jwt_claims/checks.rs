//! The invariants of the `jwt_claims` target (numbered as in
//! [`super`]'s documentation), checked on what the authenticator answered.

use std::collections::BTreeMap;
use std::time::Instant;

use belay_proto::server::{payload_depth, MAX_PAYLOAD_DEPTH};
use belay_server::auth::{AuthError, Principal, MAX_CREDENTIAL_LIFETIME};
use serde_json::value::RawValue;
use serde_json::Value;

use super::token::{Mode, AUDIENCE, ISSUER, SECRET};
use super::Config;
use crate::auth::MissingChannels;

/// The claims the authenticator reads (and the invariants look at) in a
/// connection token, `info` apart ([`check_info`])…
const CONNECTION_CLAIMS: [&str; 9] = [
    "sub", "exp", "nbf", "aud", "iss", "channels", "publish", "host", "channel",
];
/// …and in a subscription token.
const SUBSCRIPTION_CLAIMS: [&str; 6] = ["sub", "exp", "nbf", "aud", "iss", "channel"];

/// Clock steps the harness tolerates between its reading of the time and
/// the authenticator's (whole seconds of Unix time can tick in between).
const CLOCK_SLACK_SECS: u64 = 2;

pub(super) fn check_refusal(refusal: &AuthError, token: &str) {
    // `AuthError` is non-exhaustive: a kind added later is checked on its
    // whole text.
    let reason = match refusal {
        AuthError::Unauthorized(r) | AuthError::Forbidden(r) | AuthError::Unavailable(r) => {
            r.clone()
        }
        other => other.to_string(),
    };
    assert!(
        !reason.trim().is_empty(),
        "jwt_claims: invariant 1 (a refusal has a reason): {refusal:?}"
    );
    let secret = String::from_utf8_lossy(SECRET);
    assert!(
        !reason.contains(secret.as_ref()),
        "jwt_claims: invariant 1 (a reason never contains the secret): {reason:?}"
    );
    // Checked for tokens of a JWT's shape (16 bytes or more, two dots):
    // raw text could be a piece of a fixed reason ("malformed token (not"),
    // and no reason has two dots.
    if token.len() >= 16 && token.matches('.').count() >= 2 {
        assert!(
            !reason.contains(token),
            "jwt_claims: invariant 1 (a reason never contains the token): {reason:?}"
        );
    }
}

/// The claims `read` of a token the authenticator accepted, each parsed
/// apart (a claim it does not read may nest deeper than a `Value` can
/// hold: the authenticator never parses it).
fn accepted_claims(token: &str, read: &[&str]) -> serde_json::Map<String, Value> {
    let mut claims = serde_json::Map::new();
    for (name, value) in raw_claims(token) {
        if read.contains(&name.as_str()) {
            let parsed = serde_json::from_str(value.get()).unwrap_or_else(|e| {
                panic!("jwt_claims: invariant 10 (an accepted claim `{name}` parses): {e}")
            });
            claims.insert(name, parsed);
        }
    }
    claims
}

fn raw_claims(token: &str) -> BTreeMap<String, Box<RawValue>> {
    jsonwebtoken::dangerous::insecure_decode_claims(token).unwrap_or_else(|e| {
        panic!("jwt_claims: invariant 10 (an accepted token has a JSON object of claims): {e:?}")
    })
}

/// Invariant 11: the `info` of an accepted connection token.
fn check_info(token: &str) {
    if let Some(info) = raw_claims(token).get("info") {
        let depth = serde_json::from_str::<Value>(info.get()).map(|v| payload_depth(&v));
        assert!(
            depth.as_ref().is_ok_and(|d| *d <= MAX_PAYLOAD_DEPTH),
            "jwt_claims: invariant 11 (an accepted `info` nests no deeper than a publication): {depth:?}"
        );
    }
}

/// Invariants 4, 5, 6 and 10, shared by both kinds of token.
fn check_common(
    config: &Config,
    mode: Mode,
    token: &str,
    claims: &serde_json::Map<String, Value>,
    now: u64,
) {
    let header = jsonwebtoken::decode_header(token).map(|h| h.alg);
    assert!(
        mode.signed_by_harness() && header == Ok(jsonwebtoken::Algorithm::HS256),
        "jwt_claims: invariant 10 (only HS256 tokens signed with the harness's key are accepted): mode {mode:?}, alg {header:?}"
    );
    // Compared as floats: a time claim may be a JSON float, and whole
    // seconds far from now do not need an exact comparison.
    let (now_f, leeway_f, slack_f) = (
        now as f64,
        config.leeway_secs as f64,
        CLOCK_SLACK_SECS as f64,
    );
    let exp = claims.get("exp").and_then(Value::as_f64);
    assert!(
        exp.is_some_and(|exp| exp + leeway_f + slack_f >= now_f),
        "jwt_claims: invariant 4 (an accepted token has an `exp` not past): exp {:?}, now {now}, leeway {}",
        claims.get("exp"),
        config.leeway_secs
    );
    if let Some(nbf) = claims.get("nbf") {
        let nbf = nbf.as_f64();
        assert!(
            nbf.is_some_and(|nbf| nbf <= now_f + leeway_f + slack_f),
            "jwt_claims: invariant 6 (`nbf` is not in the future): nbf {nbf:?}, now {now}, leeway {}",
            config.leeway_secs
        );
    }
    if config.audience {
        let aud = claims.get("aud");
        let named = match aud {
            Some(Value::String(a)) => a == AUDIENCE,
            Some(Value::Array(list)) => list.iter().any(|a| a.as_str() == Some(AUDIENCE)),
            _ => false,
        };
        assert!(
            named,
            "jwt_claims: invariant 5 (the configured audience is in `aud`): {aud:?}"
        );
    }
    if config.issuer {
        let iss = claims.get("iss");
        assert!(
            iss.and_then(Value::as_str) == Some(ISSUER),
            "jwt_claims: invariant 5 (`iss` is the configured issuer): {iss:?}"
        );
    }
}

pub(super) fn check_connection(
    config: &Config,
    mode: Mode,
    token: &str,
    principal: &Principal,
    now: u64,
) {
    let claims = accepted_claims(token, &CONNECTION_CLAIMS);
    check_info(token);
    check_common(config, mode, token, &claims, now);
    let sub = claims.get("sub").and_then(Value::as_str);
    assert!(
        sub.is_some_and(|s| !s.is_empty()) && sub == Some(principal.user.as_str()),
        "jwt_claims: invariant 2 (a non-empty `sub` is the principal's user): sub {:?}, user {:?}",
        claims.get("sub"),
        principal.user
    );
    // A `null` claim is no claim (serde reads it as absent).
    assert!(
        claims.get("channel").is_none_or(Value::is_null),
        "jwt_claims: invariant 3 (a subscription token is no connection token): channel {:?}",
        claims.get("channel")
    );
    let latest = Instant::now() + MAX_CREDENTIAL_LIFETIME;
    assert!(
        principal.expires_at.is_some_and(|at| at <= latest),
        "jwt_claims: invariant 4 (the principal expires within MAX_CREDENTIAL_LIFETIME): {:?}",
        principal
            .expires_at
            .map(|at| at.saturating_duration_since(Instant::now()))
    );
    // `null` is read as no claim, like an absent one.
    let channels: Option<Vec<String>> = claims.get("channels").and_then(|c| {
        serde_json::from_value::<Option<Vec<String>>>(c.clone()).unwrap_or_else(|e| {
            panic!("jwt_claims: invariant 7 (an accepted `channels` is a list of strings): {e}")
        })
    });
    let grant = principal.subscribe.as_deref();
    let expected_grant_ok = match (&channels, config.missing) {
        (Some(list), _) => grant == Some(list.as_slice()),
        (None, MissingChannels::Any) => grant.is_none(),
        (None, _) => grant == Some(&[][..]),
    };
    assert!(
        expected_grant_ok,
        "jwt_claims: invariant 7 (the grant is the `channels` claim, or none without one unless MissingChannels::Any): channels {channels:?}, grant {grant:?}"
    );
    let host = claims.get("host");
    if let Some(host) = host {
        let id = host.as_str();
        assert!(
            id.is_some_and(belay_proto::host::valid_host_id) && principal.host.as_deref() == id,
            "jwt_claims: invariant 8 (`host` is a valid host id, the principal's): {host:?}, principal {:?}",
            principal.host
        );
    } else {
        assert!(
            principal.host.is_none(),
            "jwt_claims: invariant 8 (no `host` claim, no host): {:?}",
            principal.host
        );
    }
}

pub(super) fn check_subscription(
    config: &Config,
    mode: Mode,
    token: &str,
    principal: &Principal,
    now: u64,
) {
    let claims = accepted_claims(token, &SUBSCRIPTION_CLAIMS);
    check_common(config, mode, token, &claims, now);
    let channel = claims.get("channel").and_then(Value::as_str);
    let sub = claims.get("sub").and_then(Value::as_str);
    assert!(
        channel == Some(config.channel) && sub == Some(principal.user.as_str()),
        "jwt_claims: invariant 9 (a subscription token names the channel asked and the principal's user): channel {:?} for {:?}, sub {:?} for {:?}",
        claims.get("channel"),
        config.channel,
        claims.get("sub"),
        principal.user
    );
}
