//! `ws-ping-flood`: WebSocket protocol-level ping control frames (which
//! the WebSocket layer answers with pongs), as fast as 4 sessions can send
//! them.

use tokio_websockets::Message;

use super::attack::Attack;
use super::flood::Flood;

pub(super) const SUMMARY: &str = "4 sessions flat out: WebSocket ping control frames";

pub(super) async fn run(attack: &Attack) {
    let mut flood = Flood::new(4, None, |_, n| Message::ping(n.to_be_bytes().to_vec()));
    flood.reopens = 200;
    flood.run(attack).await;
}
