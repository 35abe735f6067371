//! `json-ping-flood`: Belay `{"type":"ping"}` messages, which the message
//! rate limit does not count (§8.2), as fast as 4 sessions can send them.

use tokio_websockets::Message;

use super::attack::Attack;
use super::flood::Flood;

pub(super) const SUMMARY: &str =
    r#"4 sessions flat out: JSON {"type":"ping"} (exempt from the rate limit)"#;

pub(super) async fn run(attack: &Attack) {
    let mut flood = Flood::new(4, None, |_, _| Message::text(r#"{"type":"ping"}"#));
    flood.reopens = 200;
    flood.run(attack).await;
}
