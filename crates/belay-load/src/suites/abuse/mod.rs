//! The abuse harness behind `belay abuse` (docs/ABUSE.md): each abuse runs
//! against a fresh `belay serve --demo` process next to a well-behaved
//! victim client, and the report says whether the victim noticed.
//!
//! ```text
//!  runner ──spawns──▶ belay serve --demo ◀── /proc/PID/{status,stat} every 500 ms
//!    │                    ▲        ▲
//!    │   victim thread ───┘        └─── attacker thread (nice 19), from 127.0.0.2
//!    │   (127.0.0.1: subscribed to `feed`, echo every 20 ms, a new session every 500 ms)
//!    └── phases: baseline (victim alone) → abuse (victim + attacker) → recovery (attacker gone)
//! ```
//!
//! Every attacker is bounded in count and in time: it stops at the end of
//! the abuse phase, and its sockets close when it returns. Everything goes
//! to loopback only.
//!
//! One file per abuse; [`Abuse`] lists them. The shared parts: [`server`]
//! (the server process), [`victim`] (the victim and the new-session probe),
//! [`attack`] (what every attacker is given and counts), [`attacker`]
//! (the attacker's low-priority thread), [`flood`] (the
//! "N sessions sending frames" loop most abuses are made of), [`runner`]
//! (the phases) and [`report`] (figures, verdicts, the markdown table).

pub mod attack;
pub mod attacker;
pub mod flood;
pub mod report;
pub mod runner;
pub mod server;
pub mod victim;

mod channel_churn;
mod idempotency_flood;
mod idle_sockets;
mod json_ping_flood;
mod junk_frames;
mod long_names;
mod non_reader;
mod raw;
mod slow_requests;
mod slowloris;
mod subscribe_storm;
mod upgrade_flood;
mod ws_ping_flood;

use std::time::Duration;

use attack::Attack;

/// One abuse of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Abuse {
    /// 200 sessions subscribing to distinct channels within the rate limit.
    SubscribeStorm,
    /// Rounds of 1,000 fresh channels subscribed and unsubscribed.
    ChannelChurn,
    /// Keyed `order.create`/`echo` requests with ~60 KiB params, fresh keys.
    IdempotencyFlood,
    /// Sessions that subscribe and ask for big answers but never read.
    NonReader,
    /// Subscribes with ~60 KiB channel names.
    LongNames,
    /// Unknown types, invalid requests and binary frames, flat out.
    JunkFrames,
    /// WebSocket ping control frames, flat out.
    WsPingFlood,
    /// JSON `ping` messages, flat out.
    JsonPingFlood,
    /// Thousands of TCP connections that never send a byte or never finish
    /// the upgrade.
    IdleSockets,
    /// Upgrade requests trickled at 1 byte/s.
    Slowloris,
    /// One IP upgrading as fast as it can.
    UpgradeFlood,
    /// Many concurrent `slow` requests, then the connection vanishes.
    SlowRequests,
}

impl Abuse {
    /// Every abuse, in the order the report lists them.
    pub const ALL: [Abuse; 12] = [
        Abuse::SubscribeStorm,
        Abuse::ChannelChurn,
        Abuse::IdempotencyFlood,
        Abuse::NonReader,
        Abuse::LongNames,
        Abuse::JunkFrames,
        Abuse::WsPingFlood,
        Abuse::JsonPingFlood,
        Abuse::IdleSockets,
        Abuse::Slowloris,
        Abuse::UpgradeFlood,
        Abuse::SlowRequests,
    ];

    /// The name used on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Abuse::SubscribeStorm => "subscribe-storm",
            Abuse::ChannelChurn => "channel-churn",
            Abuse::IdempotencyFlood => "idempotency-flood",
            Abuse::NonReader => "non-reader",
            Abuse::LongNames => "long-names",
            Abuse::JunkFrames => "junk-frames",
            Abuse::WsPingFlood => "ws-ping-flood",
            Abuse::JsonPingFlood => "json-ping-flood",
            Abuse::IdleSockets => "idle-sockets",
            Abuse::Slowloris => "slowloris",
            Abuse::UpgradeFlood => "upgrade-flood",
            Abuse::SlowRequests => "slow-requests",
        }
    }

    /// The abuse called `name`.
    pub fn parse(name: &str) -> Option<Abuse> {
        Abuse::ALL.into_iter().find(|a| a.name() == name.trim())
    }

    /// What the attacker does, in one line.
    pub fn summary(self) -> &'static str {
        match self {
            Abuse::SubscribeStorm => subscribe_storm::SUMMARY,
            Abuse::ChannelChurn => channel_churn::SUMMARY,
            Abuse::IdempotencyFlood => idempotency_flood::SUMMARY,
            Abuse::NonReader => non_reader::SUMMARY,
            Abuse::LongNames => long_names::SUMMARY,
            Abuse::JunkFrames => junk_frames::SUMMARY,
            Abuse::WsPingFlood => ws_ping_flood::SUMMARY,
            Abuse::JsonPingFlood => json_ping_flood::SUMMARY,
            Abuse::IdleSockets => idle_sockets::SUMMARY,
            Abuse::Slowloris => slowloris::SUMMARY,
            Abuse::UpgradeFlood => upgrade_flood::SUMMARY,
            Abuse::SlowRequests => slow_requests::SUMMARY,
        }
    }

    /// Memory the server keeps after this abuse by design, and for how
    /// long: its recovery may last that much longer (the outcomes of keyed
    /// requests, kept for the idempotency retention).
    pub fn kept_by_design(self, server_args: &[String]) -> Duration {
        match self {
            Abuse::IdempotencyFlood => idempotency_flood::retention(server_args),
            _ => Duration::ZERO,
        }
    }

    /// Run the attacker until `attack.until`; its sockets are closed when
    /// this returns.
    pub async fn run(self, attack: &Attack) {
        match self {
            Abuse::SubscribeStorm => subscribe_storm::run(attack).await,
            Abuse::ChannelChurn => channel_churn::run(attack).await,
            Abuse::IdempotencyFlood => idempotency_flood::run(attack).await,
            Abuse::NonReader => non_reader::run(attack).await,
            Abuse::LongNames => long_names::run(attack).await,
            Abuse::JunkFrames => junk_frames::run(attack).await,
            Abuse::WsPingFlood => ws_ping_flood::run(attack).await,
            Abuse::JsonPingFlood => json_ping_flood::run(attack).await,
            Abuse::IdleSockets => idle_sockets::run(attack).await,
            Abuse::Slowloris => slowloris::run(attack).await,
            Abuse::UpgradeFlood => upgrade_flood::run(attack).await,
            Abuse::SlowRequests => slow_requests::run(attack).await,
        }
    }
}

/// Parse a comma-separated list of abuse names.
pub fn parse_list(list: &str) -> Result<Vec<Abuse>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            Abuse::parse(name).ok_or_else(|| {
                let known: Vec<&str> = Abuse::ALL.iter().map(|a| a.name()).collect();
                format!("unknown abuse {name:?} (known: {})", known.join(", "))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for abuse in Abuse::ALL {
            assert_eq!(Abuse::parse(abuse.name()), Some(abuse));
            assert!(!abuse.summary().is_empty());
        }
        assert_eq!(
            parse_list("slowloris, junk-frames").expect("known"),
            vec![Abuse::Slowloris, Abuse::JunkFrames]
        );
        assert!(parse_list("slowloris,nope").is_err());
    }
}
