//! `idempotency-flood`: keyed requests with ~60 KiB params, each with a
//! fresh idempotency key (`idem`), alternating `order.create` and `echo`,
//! within the rate limit, over 20 sessions: every answer the server keeps
//! for deduplication is one more big entry.

use tokio_websockets::Message;

use super::attack::Attack;
use super::flood::Flood;

pub(super) const SUMMARY: &str =
    "20 sessions at 90 requests/s: order.create/echo with ~60 KiB params and a fresh idempotency key each";

/// The size of each request's params.
pub(super) const BIG: usize = 60 * 1024;

pub(super) async fn run(attack: &Attack) {
    let blob = "k".repeat(BIG);
    let flood = Flood::new(20, Some(90.0), move |slot, n| {
        let method = if n % 2 == 0 { "order.create" } else { "echo" };
        Message::text(format!(
            r#"{{"type":"request","id":{n},"method":"{method}","params":{{"blob":"{blob}"}},"idem":"abuse-{slot}-{n}","timeout_ms":5000}}"#
        ))
    });
    flood.run(attack).await;
}
