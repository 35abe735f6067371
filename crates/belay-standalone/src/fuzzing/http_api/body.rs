//! JSON bodies built from fuzz bytes: an object with any subset of the
//! fields the API's routes read (and one they do not), each value picked
//! among right, wrong-typed, empty, reserved and extreme ones.

use serde_json::{json, Map, Value};

use crate::fuzzing::choices::Choices;

/// The channel names a body may carry: plain, a pattern's match, the
/// reserved prefixes (host calls, presence, a user's), empty, over the
/// 255-byte limit, at it, with a space, non-ASCII, not a string.
fn channel(byte: u8) -> Value {
    match byte % 12 {
        0 => json!("news"),
        1 => json!("chat:1"),
        2 => json!("$host-calls:x"),
        3 => json!("$presence:a"),
        4 => json!("#bob"),
        5 => json!(""),
        6 => json!("a".repeat(300)),
        7 => json!("a b"),
        8 => json!("ü"),
        9 => json!("a".repeat(255)),
        10 => json!(1),
        _ => Value::Null,
    }
}

/// `[[[…]]]` or `{"a":{"a":…}}` `depth` deep.
fn nested(depth: usize, objects: bool) -> Value {
    (0..depth).fold(json!(0), |inner, _| {
        if objects {
            json!({ "a": inner })
        } else {
            json!([inner])
        }
    })
}

fn data(byte: u8) -> Value {
    match byte % 10 {
        0 => Value::Null,
        1 => json!(1),
        2 => json!({"n": 1}),
        3 => json!("text"),
        // One past u64::MAX: a float to serde_json.
        4 => serde_json::from_str("18446744073709551616").unwrap_or(Value::Null),
        5 => json!(-1e308),
        6 => nested(200, false),
        7 => nested(40, true),
        8 => json!("d".repeat(5000)),
        _ => json!([true, false]),
    }
}

fn field(name: &str, byte: u8) -> Value {
    let text = |options: &[Value]| options[usize::from(byte) % options.len()].clone();
    match name {
        "channel" => channel(byte),
        "data" => data(byte),
        "idempotency_key" => text(&[
            json!("k1"),
            json!("k2"),
            json!(""),
            json!("k".repeat(300)),
            json!(5),
        ]),
        "user" => text(&[
            json!("alice"),
            json!("bob"),
            json!(""),
            json!("u".repeat(300)),
            json!("a b"),
            json!(1),
        ]),
        "reason" => text(&[json!("bye"), json!(""), json!("r".repeat(500)), Value::Null]),
        "channels" => match byte % 7 {
            0 => json!(["news"]),
            1 => json!(["news", "chat:1", "$presence:a"]),
            2 => json!([]),
            3 => Value::Array((0..1001).map(|i| json!(format!("c{i}"))).collect()),
            4 => json!(["", "news"]),
            5 => json!("news"),
            _ => json!([1]),
        },
        "limit" => text(&[
            json!(0),
            json!(10),
            json!(1000),
            json!(1001),
            json!(-1),
            json!(1.5),
            json!("x"),
            json!(u64::MAX),
        ]),
        "since" => text(&[
            json!({"offset": 0, "epoch": ""}),
            json!({"offset": 0, "epoch": "e"}),
            json!({"offset": u64::MAX, "epoch": "e"}),
            json!({"offset": 1, "epoch": "e", "x": 1}),
            json!({"epoch": "e"}),
            json!([]),
            json!({"offset": 0, "epoch": "e".repeat(300)}),
        ]),
        "reverse" => text(&[json!(true), json!(false), json!("yes")]),
        _ => json!(1),
    }
}

/// The fields, in the order of the bit that selects each.
const FIELDS: [&str; 10] = [
    "channel",
    "data",
    "idempotency_key",
    "user",
    "reason",
    "channels",
    "limit",
    "since",
    "reverse",
    "extra",
];

/// A JSON body from `bytes`: byte 0 the shape (an object; 1 in 8 that
/// object in an array; 1 in 8 `null`), bytes 1–2 which fields are present,
/// then one byte for each present field's value. With `other_data`, `data`
/// is replaced (a second request with another body).
pub(crate) fn json_body(bytes: &[u8], other_data: bool) -> Vec<u8> {
    let mut c = Choices::new(bytes);
    let shape = c.next() % 8;
    let present = u16::from_le_bytes([c.next(), c.next()]);
    let mut object = Map::new();
    for (bit, name) in FIELDS.iter().enumerate() {
        if present & (1 << bit) != 0 {
            object.insert((*name).to_owned(), field(name, c.next()));
        }
    }
    if other_data {
        object.insert("data".to_owned(), json!({"again": true}));
    }
    let body = match shape {
        6 => json!([object]),
        7 => Value::Null,
        _ => Value::Object(object),
    };
    serde_json::to_vec(&body).unwrap_or_default()
}
