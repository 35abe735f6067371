//! The `jwt_claims` target's input model: the bytes after the two header
//! bytes become one token, built so that most of them reach claim handling
//! past the signature check (signed with the harness's own key) while a
//! few modes attack the signature and the header themselves.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Map, Value};

use crate::fuzzing::choices::Choices;

/// The HS256 secret the harness's authenticator checks with. Long enough
/// that no refusal reason can contain it by chance.
pub(crate) const SECRET: &[u8] = b"belay-fuzz-secret-9f3c1a7e5d2b";
/// The audience and issuer the configuration may require.
pub(crate) const AUDIENCE: &str = "belay-fuzz-aud";
pub(crate) const ISSUER: &str = "belay-fuzz-iss";

/// How byte 0 turns the rest of the input into a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The rest, as text, is the token.
    RawText,
    /// The rest is the payload segment (any bytes, not necessarily JSON),
    /// signed HS256 with [`SECRET`].
    SignedPayload,
    /// Claims built from the rest ([`claims`]), signed HS256 with [`SECRET`].
    SignedClaims,
    /// The same claims signed HS256 with another secret.
    OtherSecret,
    /// The same claims signed with HS384 and [`SECRET`] (another algorithm).
    OtherAlgorithm,
    /// The first bytes of the rest (up to a 0 byte) are the header
    /// segment, the claims are built from what follows, signed HS256 with
    /// [`SECRET`] over that header.
    MangledHeader,
    /// A [`Mode::SignedClaims`] token with one byte of its text replaced.
    FlippedByte,
}

impl Mode {
    pub(crate) fn from_byte(byte: u8) -> Mode {
        match byte % 7 {
            0 => Mode::RawText,
            1 => Mode::SignedPayload,
            2 => Mode::SignedClaims,
            3 => Mode::OtherSecret,
            4 => Mode::OtherAlgorithm,
            5 => Mode::MangledHeader,
            _ => Mode::FlippedByte,
        }
    }

    /// Whether a token of this mode carries a genuine HS256 signature by
    /// [`SECRET`] over its header and payload (a flipped byte may break it).
    pub(crate) fn signed_by_harness(self) -> bool {
        matches!(
            self,
            Mode::SignedPayload | Mode::SignedClaims | Mode::MangledHeader | Mode::FlippedByte
        )
    }
}

/// The token for `mode` from `rest`; `now` is the Unix time claims are
/// built around, `channel` the channel a subscription check will ask for
/// (so a `channel` claim can name it).
pub(crate) fn token(mode: Mode, rest: &[u8], now: u64, channel: &str) -> String {
    let hs256 = Header::new(Algorithm::HS256);
    match mode {
        Mode::RawText => String::from_utf8_lossy(rest).into_owned(),
        Mode::SignedPayload => signed(&segment(&hs256), rest, SECRET, Algorithm::HS256),
        Mode::SignedClaims => signed_claims(&claims(rest, now, channel), SECRET),
        Mode::OtherSecret => signed_claims(&claims(rest, now, channel), b"another-secret"),
        Mode::OtherAlgorithm => {
            let claims = serde_json::to_vec(&claims(rest, now, channel)).unwrap_or_default();
            let header = segment(&Header::new(Algorithm::HS384));
            signed(&header, &claims, SECRET, Algorithm::HS384)
        }
        Mode::MangledHeader => {
            let split = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            let (header, after) = rest.split_at(split);
            let claims = claims(after.get(1..).unwrap_or_default(), now, channel);
            let claims = serde_json::to_vec(&claims).unwrap_or_default();
            signed(
                &URL_SAFE_NO_PAD.encode(header),
                &claims,
                SECRET,
                Algorithm::HS256,
            )
        }
        Mode::FlippedByte => {
            let mut choices = Choices::new(rest);
            let (at, with) = (choices.next(), choices.next());
            let mut token =
                signed_claims(&claims(choices.rest(), now, channel), SECRET).into_bytes();
            let at = usize::from(at) % token.len().max(1);
            if let Some(byte) = token.get_mut(at) {
                // Printable ASCII, so the token stays text.
                *byte = 0x21 + with % 94;
            }
            String::from_utf8_lossy(&token).into_owned()
        }
    }
}

fn segment(header: &Header) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(header).unwrap_or_default())
}

fn signed_claims(claims: &Value, secret: &[u8]) -> String {
    let payload = serde_json::to_vec(claims).unwrap_or_default();
    signed(
        &segment(&Header::new(Algorithm::HS256)),
        &payload,
        secret,
        Algorithm::HS256,
    )
}

/// `header.payload.signature` over the given header segment and raw payload.
fn signed(header: &str, payload: &[u8], secret: &[u8], algorithm: Algorithm) -> String {
    let message = format!("{header}.{}", URL_SAFE_NO_PAD.encode(payload));
    let key = EncodingKey::from_secret(secret).expect("an HMAC key from any bytes");
    let signature = jsonwebtoken::crypto::sign(message.as_bytes(), &key, algorithm)
        .expect("HMAC signing cannot fail");
    format!("{message}.{signature}")
}

/// Claims built from choices: every claim the authenticator reads, each
/// absent, right, wrong, of the wrong type or extreme. Times are relative
/// to `now` (Unix seconds).
pub(crate) fn claims(bytes: &[u8], now: u64, channel: &str) -> Value {
    let mut c = Choices::new(bytes);
    let mut claims = Map::new();
    let mut put = |name: &str, value: Option<Value>| {
        if let Some(value) = value {
            claims.insert(name.to_owned(), value);
        }
    };
    let now_i = i64::try_from(now).unwrap_or(i64::MAX);
    put(
        "sub",
        pick(
            c.next(),
            [
                None,
                Some(json!("")),
                Some(json!("alice")),
                Some(json!("bob")),
                Some(json!(7)),
            ],
        ),
    );
    put("exp", time(c.next(), now_i));
    put("nbf", time(c.next(), now_i));
    put(
        "aud",
        pick(
            c.next(),
            [
                None,
                Some(json!(AUDIENCE)),
                Some(json!("other")),
                Some(json!(["other", AUDIENCE])),
                Some(json!(5)),
            ],
        ),
    );
    put(
        "iss",
        pick(
            c.next(),
            [
                None,
                Some(json!(ISSUER)),
                Some(json!("other")),
                Some(Value::Null),
            ],
        ),
    );
    put(
        "channels",
        pick(
            c.next(),
            [
                None,
                Some(json!(["news", "chat:*"])),
                Some(json!([])),
                Some(json!("news")),
                Some(json!([1])),
                Some(Value::Null),
            ],
        ),
    );
    put(
        "publish",
        pick(
            c.next(),
            [
                None,
                Some(json!(["news"])),
                Some(Value::Null),
                Some(json!({})),
            ],
        ),
    );
    put(
        "info",
        pick(
            c.next(),
            [
                None,
                Some(json!({"name": "A"})),
                Some(json!("x")),
                Some(nested(200)),
            ],
        ),
    );
    put(
        "host",
        pick(
            c.next(),
            [
                None,
                Some(json!("h1")),
                Some(json!("")),
                Some(json!("bad host!")),
                Some(json!("h".repeat(200))),
                Some(json!(1)),
            ],
        ),
    );
    put(
        "channel",
        pick(
            c.next(),
            [
                None,
                Some(json!(channel)),
                Some(json!("other")),
                Some(json!(5)),
                Some(json!("")),
            ],
        ),
    );
    // The rest, if any, is one more claim of any name with a string value.
    let rest = c.rest();
    if !rest.is_empty() {
        let text = String::from_utf8_lossy(rest);
        let (name, value) = text.split_once('=').unwrap_or((&text, ""));
        claims.insert(name.to_owned(), json!(value));
    }
    Value::Object(claims)
}

fn pick<const N: usize>(byte: u8, options: [Option<Value>; N]) -> Option<Value> {
    options[usize::from(byte) % N].clone()
}

/// A time claim: absent, in the past or the future by various amounts, at
/// the limits of the integer types, a float, a string.
fn time(byte: u8, now: i64) -> Option<Value> {
    let relative = |secs: i64| Some(json!(now.saturating_add(secs)));
    match byte % 12 {
        0 => None,
        1 => relative(-3600),
        2 => relative(-3),
        3 => relative(3),
        4 => relative(60),
        5 => relative(3600),
        6 => relative(100 * 365 * 86_400),
        7 => Some(json!(u64::MAX)),
        8 => Some(json!(-1)),
        9 => Some(json!(1e300)),
        10 => Some(json!("soon")),
        _ => Some(json!(now as f64 + 30.5)),
    }
}

/// `[[[…]]]` `depth` deep.
fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(0), |inner, _| json!([inner]))
}
