//! `non-reader`: sessions that subscribe to `feed` and send `echo`
//! requests with ~60 KiB params (which the server sends back) but never
//! read their socket, so every answer piles up on the server's side.

use tokio_websockets::Message;

use super::attack::Attack;
use super::flood::Flood;
use super::idempotency_flood::BIG;

pub(super) const SUMMARY: &str =
    "20 sessions subscribed to feed, sending 90 echo/s with ~60 KiB params, never reading";

pub(super) async fn run(attack: &Attack) {
    let blob = "r".repeat(BIG);
    let mut flood = Flood::new(20, Some(90.0), move |_, n| {
        Message::text(format!(
            r#"{{"type":"request","id":{n},"method":"echo","params":"{blob}"}}"#
        ))
    });
    flood.read = false;
    flood.setup = vec![r#"{"type":"subscribe","channel":"feed"}"#.to_owned()];
    flood.run(attack).await;
}
