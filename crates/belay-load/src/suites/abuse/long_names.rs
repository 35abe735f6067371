//! `long-names`: subscribes with ~60 KiB channel names (just under the
//! server's 64 KiB frame limit), each name new, within the rate limit.

use tokio_websockets::Message;

use super::attack::Attack;
use super::flood::Flood;
use super::idempotency_flood::BIG;

pub(super) const SUMMARY: &str =
    "20 sessions at 90 subscribes/s, each to a new ~60 KiB channel name";

pub(super) async fn run(attack: &Attack) {
    let tail = "n".repeat(BIG);
    let flood = Flood::new(20, Some(90.0), move |slot, n| {
        Message::text(format!(
            r#"{{"type":"subscribe","channel":"long.{slot}.{n}.{tail}"}}"#
        ))
    });
    flood.run(attack).await;
}
