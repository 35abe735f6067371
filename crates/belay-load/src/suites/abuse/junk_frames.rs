//! `junk-frames`: unknown message types, invalid requests, text that is not
//! JSON and binary frames, as fast as 4 sessions can send them; a session
//! the server closes is replaced.

use tokio_websockets::Message;

use super::attack::Attack;
use super::flood::Flood;

pub(super) const SUMMARY: &str =
    "4 sessions flat out: unknown types, invalid requests, non-JSON text, binary frames; reopened when closed";

pub(super) async fn run(attack: &Attack) {
    let mut flood = Flood::new(4, None, |_, n| match n % 4 {
        0 => Message::text(format!(r#"{{"type":"no.such.type","n":{n}}}"#)),
        1 => Message::text(format!(r#"{{"type":"request","id":{n},"method":7}}"#)),
        2 => Message::text("}{ not json"),
        _ => Message::binary(n.to_be_bytes().to_vec()),
    });
    flood.reopens = 200;
    flood.run(attack).await;
}
