//! `upgrade-flood`: one IP opening sessions as fast as it can, aiming at
//! 1,500 upgrades per second (64 dialers, each paced), each closed right
//! after `welcome`. The victim's probe meanwhile measures whether new
//! sessions from another IP still get in.

use std::time::Duration;

use futures_util::future::join_all;
use futures_util::SinkExt;
use tokio::time::Instant;
use tokio_websockets::Message;

use super::attack::Attack;

pub(super) const SUMMARY: &str =
    "one IP upgrading as fast as it can (target 1,500/s: 64 paced dialers), each session closed after welcome";

/// Upgrades per second aimed at.
const TARGET_PER_SEC: f64 = 1_500.0;
/// Dialers working at once.
const DIALERS: usize = 64;

pub(super) async fn run(attack: &Attack) {
    let every = Duration::from_secs_f64(DIALERS as f64 / TARGET_PER_SEC);
    let dialers = (0..DIALERS).map(|d| async move {
        let mut next = Instant::now() + every.mul_f64(d as f64 / DIALERS as f64);
        while attack.running() {
            attack.bounded(tokio::time::sleep_until(next)).await;
            // A dialer that fell behind does not burst to catch up.
            next = (next + every).max(Instant::now());
            if let Some(mut ws) = attack.open().await {
                let _ = attack.bounded(ws.send(Message::close(None, ""))).await;
            }
        }
    });
    join_all(dialers).await;
}
