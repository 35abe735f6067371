//! `slow-requests`: every second a new session fires 190 concurrent
//! `slow` requests (the demo method sleeps the given ms, at most 30 s;
//! 190 stays inside the default burst of 200) and vanishes without a close
//! frame. The recovery then shows whether the server keeps working for
//! requests nobody is waiting for (RSS, CPU, the victim's echoes).

use std::time::Duration;

use futures_util::SinkExt;
use tokio::time::Instant;
use tokio_websockets::Message;

use super::attack::Attack;
use super::flood::send;

pub(super) const SUMMARY: &str =
    "every second, a session fires 190 concurrent 30 s `slow` requests and vanishes without closing";

/// Requests per session.
const PER_SESSION: u64 = 190;
/// What each asks the server to sleep, in ms (the demo's maximum).
const SLEEP_MS: u64 = 30_000;

pub(super) async fn run(attack: &Attack) {
    let mut next = Instant::now();
    while attack.running() {
        if let Some(mut ws) = attack.open().await {
            for id in 1..=PER_SESSION {
                let frame = format!(
                    r#"{{"type":"request","id":{id},"method":"slow","params":{SLEEP_MS},"timeout_ms":{SLEEP_MS}}}"#
                );
                if !send(attack, &mut ws, Message::text(frame), false).await {
                    break;
                }
            }
            let _ = attack.bounded(ws.flush()).await;
            attack.effort.note("sessions abandoned", 1);
            // Vanish: drop the socket, no close frame.
            drop(ws);
        }
        next += Duration::from_secs(1);
        attack.bounded(tokio::time::sleep_until(next)).await;
    }
}
