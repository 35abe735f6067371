//! Seed inputs for the `jwt_claims` and `http_api` targets, written to
//! `fuzz/seeds/<target>/` by `examples/fuzz_seeds.rs` and
//! checked by the replay test to reach past the signature and the key.
//! Each is `(what it is, the bytes)`; the byte layouts are the ones
//! [`super::jwt_claims`] and [`super::http_api`] document.

/// Claim choices (`jwt_claims::token::claims`), one byte each, in order:
/// `sub`, `exp`, `nbf`, `aud`, `iss`, `channels`, `publish`, `info`,
/// `host`, `channel`. `ALICE_HOUR`: `sub` alice, `exp` in an hour.
const ALICE_HOUR: [u8; 2] = [2, 5];

fn jwt(mode: u8, config: u8, rest: &[u8]) -> Vec<u8> {
    [&[mode, config][..], rest].concat()
}

/// The `jwt_claims` seeds: every mode, every configuration bit.
pub fn jwt_claims() -> Vec<(&'static str, Vec<u8>)> {
    let alice = |more: &[u8]| [&ALICE_HOUR[..], more].concat();
    vec![
        (
            "every connection claim, valid",
            jwt(2, 0, &alice(&[0, 0, 0, 1, 1, 1, 1, 0])),
        ),
        (
            "audience and issuer required and given, nbf past",
            jwt(2, 3, &alice(&[1, 1, 1])),
        ),
        ("audience required, a wrong one", jwt(2, 1, &alice(&[0, 2]))),
        ("audience required, in a list", jwt(2, 1, &alice(&[0, 3]))),
        ("issuer required, absent", jwt(2, 2, &alice(&[]))),
        (
            "a subscription token for news",
            jwt(2, 0, &alice(&[0, 0, 0, 0, 0, 0, 0, 1])),
        ),
        (
            "a subscription token for $host-calls:h1",
            jwt(2, 4 << 5, &alice(&[0, 0, 0, 0, 0, 0, 0, 1])),
        ),
        (
            "a subscription token for another channel",
            jwt(2, 0, &alice(&[0, 0, 0, 0, 0, 0, 0, 2])),
        ),
        ("expired an hour ago", jwt(2, 0, &[2, 1])),
        ("expired 3 s ago, 5 s of leeway", jwt(2, 1 << 2, &[2, 2])),
        ("exp u64::MAX", jwt(2, 0, &[2, 7])),
        ("exp in 100 years", jwt(2, 0, &[2, 6])),
        ("exp a float", jwt(2, 0, &[2, 11])),
        ("exp a string", jwt(2, 0, &[2, 10])),
        ("nbf in an hour", jwt(2, 0, &alice(&[5]))),
        ("nbf in 3 s, 60 s of leeway", jwt(2, 2 << 2, &alice(&[3]))),
        ("no channels, MissingChannels::Any", jwt(2, 16, &alice(&[]))),
        ("channels not a list", jwt(2, 0, &alice(&[0, 0, 0, 3]))),
        (
            "a host id with a space",
            jwt(2, 0, &alice(&[0, 0, 0, 0, 0, 0, 3])),
        ),
        (
            "info nested 200 deep",
            jwt(2, 0, &alice(&[0, 0, 0, 0, 0, 3])),
        ),
        ("an empty sub", jwt(2, 0, &[1, 5])),
        ("no sub", jwt(2, 0, &[0, 5])),
        (
            "an extra claim",
            jwt(2, 0, &alice(&[0, 0, 0, 0, 0, 0, 0, 0, b'x', b'=', b'y'])),
        ),
        ("signed with another secret", jwt(3, 0, &alice(&[]))),
        ("signed with HS384", jwt(4, 0, &alice(&[]))),
        (
            "header alg none",
            jwt(
                5,
                0,
                &[br#"{"alg":"none"}"#.as_slice(), &[0], &alice(&[])].concat(),
            ),
        ),
        (
            "header HS256 with a kid",
            jwt(
                5,
                0,
                &[
                    br#"{"alg":"HS256","typ":"JWT","kid":"x"}"#.as_slice(),
                    &[0],
                    &alice(&[]),
                ]
                .concat(),
            ),
        ),
        (
            "header not JSON",
            jwt(5, 0, &[b"{".as_slice(), &[0], &alice(&[])].concat()),
        ),
        (
            "one byte of the signature changed",
            jwt(6, 0, &[200, b'A', 2, 5]),
        ),
        (
            "one byte of the header changed",
            jwt(6, 0, &[3, b'x', 2, 5]),
        ),
        ("raw text", jwt(0, 0, b"not.a.jwt")),
        ("raw text, empty", jwt(0, 0, b"")),
        (
            "a signed payload, valid claims",
            jwt(
                1,
                0,
                br#"{"sub":"alice","exp":99999999999,"channels":["news"]}"#,
            ),
        ),
        ("a signed payload, not JSON", jwt(1, 0, b"\xff\xfe")),
        (
            "a signed payload, channels of numbers",
            jwt(1, 0, br#"{"sub":"a","exp":99999999999,"channels":[1]}"#),
        ),
    ]
}

/// JSON body choices (`http_api::body::json_body`): the shape, the
/// present fields' bits (`channel` 0, `data` 1, `idempotency_key` 2,
/// `user` 3, `reason` 4, `channels` 5, `limit` 6, `since` 7, `reverse` 8,
/// an unknown field 9), then a byte for each present field's value.
fn json(fields: u16, values: &[u8]) -> Vec<u8> {
    let [low, high] = fields.to_le_bytes();
    [&[0, low, high][..], values].concat()
}

/// Header bytes: method, path, query, key headers, content type, flags
/// (bits 0–1: body kind, 2–3: body limit, 4–5: sent twice).
fn http(header: [u8; 6], rest: &[u8]) -> Vec<u8> {
    [&header[..], rest].concat()
}

const POST: u8 = 1;
const GET: u8 = 0;
/// The body kinds of the flags byte.
const RAW: u8 = 0;
const JSON: u8 = 1;
const EMPTY: u8 = 3;

/// The `http_api` seeds: every route, right and wrong keys and methods,
/// the body limit, idempotent retries and conflicts.
pub fn http_api() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "publish",
            http([POST, 0, 0, 0, 1, JSON], &json(0b11, &[0, 2])),
        ),
        (
            "publish with a key, twice",
            http([POST, 0, 0, 0, 1, JSON | 1 << 4], &json(0b111, &[0, 2, 0])),
        ),
        (
            "publish with a key, then another body",
            http([POST, 0, 0, 1, 1, JSON | 2 << 4], &json(0b111, &[0, 2, 1])),
        ),
        (
            "publish, wrong key",
            http([POST, 0, 0, 2, 1, RAW], br#"{"channel":"news","data":1}"#),
        ),
        (
            "publish, no key",
            http([POST, 0, 0, 4, 0, RAW], br#"{"channel":"news","data":1}"#),
        ),
        (
            "publish, wrong X-API-Key and the right bearer",
            http([POST, 0, 0, 6, 0, RAW], br#"{"channel":"news","data":1}"#),
        ),
        (
            "publish to a reserved channel",
            http([POST, 0, 0, 0, 1, JSON], &json(0b11, &[2, 1])),
        ),
        (
            "publish data 200 deep",
            http([POST, 0, 0, 0, 1, JSON], &json(0b11, &[0, 6])),
        ),
        (
            "publish, a 300-byte channel",
            http([POST, 0, 0, 0, 1, JSON], &json(0b11, &[6, 1])),
        ),
        (
            "publish, not JSON",
            http([POST, 0, 0, 0, 2, RAW], b"{not json"),
        ),
        (
            "publish over a 64-byte limit",
            http([POST, 0, 0, 0, 1, RAW | 2 << 2], &[b'{'; 100]),
        ),
        (
            "publish, an unknown field",
            http([POST, 0, 0, 0, 1, JSON], &json(0b10_0000_0011, &[0, 1, 0])),
        ),
        (
            "user_publish",
            http([POST, 1, 0, 0, 1, JSON], &json(0b1010, &[2, 0])),
        ),
        (
            "broadcast",
            http([POST, 2, 0, 0, 1, JSON], &json(0b10_0010, &[1, 1])),
        ),
        (
            "broadcast to 1,001 channels",
            http([POST, 2, 0, 0, 1, JSON | 3 << 2], &json(0b10_0010, &[1, 3])),
        ),
        ("info", http([GET, 3, 0, 1, 0, EMPTY], b"")),
        (
            "disconnect",
            http([POST, 4, 0, 0, 1, JSON], &json(0b1_1000, &[0, 0])),
        ),
        (
            "presence of a channel without it",
            http([POST, 5, 0, 0, 1, JSON], &json(1, &[0])),
        ),
        (
            "history",
            http([POST, 6, 0, 0, 1, JSON], &json(0b1100_0001, &[0, 1, 1])),
        ),
        (
            "history in reverse",
            http([POST, 6, 0, 0, 1, JSON], &json(0b1_0000_0001, &[0, 0])),
        ),
        (
            "history, limit too high",
            http([POST, 6, 0, 0, 1, JSON], &json(0b100_0001, &[0, 3])),
        ),
        (
            "channels with a pattern",
            http([GET, 7, 1, 0, 0, EMPTY], b""),
        ),
        (
            "channels, a parameter twice",
            http([GET, 7, 4, 0, 0, EMPTY], b""),
        ),
        (
            "channels, a query of input bytes",
            http(
                [GET, 7, 10, 0, 0, EMPTY],
                &[5, b'a', b'=', b'%', b'z', b'z'],
            ),
        ),
        ("stats", http([GET, 8, 0, 0, 0, EMPTY], b"")),
        ("stats by HEAD", http([5, 8, 0, 0, 0, EMPTY], b"")),
        ("stats, wrong key", http([GET, 8, 0, 3, 0, EMPTY], b"")),
        (
            "publish by PUT",
            http([2, 0, 0, 0, 1, JSON], &json(0b11, &[0, 1])),
        ),
        (
            "publish by PUT, no key",
            http([2, 0, 0, 4, 1, JSON], &json(0b11, &[0, 1])),
        ),
        ("an unknown method", http([7, 0, 0, 0, 0, EMPTY], b"")),
        (
            "an unknown route under /api/",
            http([GET, 10, 0, 0, 0, EMPTY], b""),
        ),
        ("/api/ itself", http([GET, 9, 0, 0, 0, EMPTY], b"")),
        (
            "/api/publish/ (a trailing slash)",
            http([POST, 11, 0, 0, 1, JSON], &json(0b11, &[0, 1])),
        ),
        (
            "an unknown route under /api/, no key",
            http([GET, 10, 0, 4, 0, EMPTY], b""),
        ),
        (
            "a path of input bytes",
            http([GET, 16, 0, 0, 0, EMPTY], &[3, b'a', b'/', b'b']),
        ),
        ("healthz", http([GET, 13, 0, 4, 0, EMPTY], b"")),
        ("metrics", http([GET, 15, 0, 4, 0, EMPTY], b"")),
    ]
}

/// A seed's file name: `seed-` and the FNV-1a hash of its content, as hex
/// (as the other targets' seeds), so writing them again writes the same
/// files.
pub fn file_name(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("seed-{hash:016x}")
}
