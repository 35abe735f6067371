//! `subscribe-storm`: 200 sessions, each within the default per-connection
//! rate (90 frames/s against 100/s, burst 200), subscribing to channel
//! names no one else uses, as far as the server lets them (1,000
//! subscriptions per connection, 100,000 channels in the broker); then all
//! leave at once.

use tokio_websockets::Message;

use super::attack::Attack;
use super::flood::Flood;

pub(super) const SUMMARY: &str =
    "200 sessions subscribing to distinct channels at 90/s each (within the rate limit), as far as the server lets them; then all leave";

pub(super) async fn run(attack: &Attack) {
    let flood = Flood::new(200, Some(90.0), |slot, n| {
        Message::text(format!(
            r#"{{"type":"subscribe","channel":"storm.{slot}.{n}"}}"#
        ))
    });
    flood.run(attack).await;
}
