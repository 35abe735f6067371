//! `channel-churn`: rounds of 1,000 fresh channels subscribed and then
//! unsubscribed: 20 sessions at 90 frames/s, each subscribing 50 new
//! channels and leaving them again per round.

use tokio_websockets::Message;

use super::attack::Attack;
use super::flood::Flood;

pub(super) const SUMMARY: &str =
    "20 sessions at 90 frames/s: rounds of 1,000 fresh channels (50 per session) subscribed, then unsubscribed";

/// Channels each session churns per round.
const PER_ROUND: u64 = 50;

pub(super) async fn run(attack: &Attack) {
    let flood = Flood::new(20, Some(90.0), |slot, n| {
        let step = n - 1;
        let (round, i) = (step / (2 * PER_ROUND), step % (2 * PER_ROUND));
        let (kind, channel) = if i < PER_ROUND {
            ("subscribe", i)
        } else {
            ("unsubscribe", i - PER_ROUND)
        };
        Message::text(format!(
            r#"{{"type":"{kind}","channel":"churn.{slot}.{round}.{channel}"}}"#
        ))
    });
    flood.run(attack).await;
}
