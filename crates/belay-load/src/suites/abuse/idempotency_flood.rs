//! `idempotency-flood`: keyed requests with ~60 KiB params, each with a
//! fresh idempotency key (`idem`), alternating `order.create` and `echo`,
//! within the rate limit, over 20 sessions: every answer the server keeps
//! for deduplication is one more big entry.

use std::time::Duration;

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

/// How long the server keeps the outcomes this abuse leaves, by design
/// (spec §4.4): `--idempotency-retention-secs` among the server's flags, or
/// the server's default. Its memory can only come back after that.
pub(super) fn retention(server_args: &[String]) -> Duration {
    const FLAG: &str = "--idempotency-retention-secs";
    let mut args = server_args.iter();
    while let Some(arg) = args.next() {
        let value = match arg.strip_prefix(FLAG) {
            Some("") => args.next().map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        };
        if let Some(secs) = value.and_then(|v| v.parse().ok()) {
            return Duration::from_secs(secs);
        }
    }
    belay_server::ServerConfig::default().idempotency_retention
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_retention_is_the_flag_or_the_servers_default() {
        assert_eq!(retention(&[]), Duration::from_secs(300));
        let spaced = args(&["--accept-rate", "9", "--idempotency-retention-secs", "20"]);
        assert_eq!(retention(&spaced), Duration::from_secs(20));
        let joined = args(&["--idempotency-retention-secs=7"]);
        assert_eq!(retention(&joined), Duration::from_secs(7));
    }
}
