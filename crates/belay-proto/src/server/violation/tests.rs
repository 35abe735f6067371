//! Tests of `violation`.

use super::*;

const SECOND: Duration = Duration::from_secs(1);

/// Every variant once, with its documented response.
fn table() -> Vec<(Violation, ViolationResponse)> {
    fn close(code: u16, reason: &'static str) -> ViolationResponse {
        ViolationResponse::Close {
            code: CloseCode(code),
            reason,
            advice: None,
        }
    }
    fn reply(code: &str, message: &str, retry_after_ms: Option<u64>) -> ViolationResponse {
        ViolationResponse::Reply(ErrorBody {
            code: code.into(),
            message: message.into(),
            retry_after_ms,
        })
    }
    vec![
        (
            Violation::BadOrigin,
            ViolationResponse::RejectUpgrade {
                status: 403,
                retry_after_secs: None,
            },
        ),
        (
            Violation::TooManyConnectionsFromIp {
                retry_after: Duration::from_millis(2_500),
            },
            ViolationResponse::RejectUpgrade {
                status: 429,
                retry_after_secs: Some(3),
            },
        ),
        (
            Violation::TooManyPendingUpgrades,
            ViolationResponse::RejectUpgrade {
                status: 503,
                retry_after_secs: Some(1),
            },
        ),
        (
            Violation::HandshakeTimeout,
            close(4008, "handshake timeout"),
        ),
        (Violation::NotConnectFirst, close(1002, "connect expected")),
        (
            Violation::DuplicateConnect,
            close(1002, "duplicate connect"),
        ),
        (
            Violation::UnsupportedProtocol,
            close(1008, "unsupported protocol version"),
        ),
        (Violation::FrameTooLarge, close(1009, "frame too large")),
        (Violation::InvalidUtf8, close(1007, "invalid utf-8")),
        (
            Violation::MalformedFrame,
            reply("bad_request", "malformed frame", None),
        ),
        (
            Violation::UnknownType,
            reply("bad_request", "unknown message type", None),
        ),
        (
            Violation::BinaryFrame,
            reply("bad_request", "binary frames are not supported", None),
        ),
        (
            Violation::RateLimited {
                retry_after: Duration::from_micros(10_001),
            },
            reply("rate_limited", "too many messages", Some(11)),
        ),
        (
            Violation::Flood {
                retry_after: 2 * SECOND,
            },
            ViolationResponse::Close {
                code: CloseCode::RATE_LIMITED,
                reason: "rate limited",
                advice: Some(ReconnectAdvice {
                    reason: "rate_limited".into(),
                    min_delay_ms: 2_000,
                    max_delay_ms: 4_000,
                    message: None,
                }),
            },
        ),
        (Violation::SlowConsumer, close(4009, "slow consumer")),
        (
            Violation::TooManySubscriptions,
            reply(
                "forbidden",
                "too many subscriptions on this connection",
                None,
            ),
        ),
        (
            Violation::TooManyChannels,
            reply("unavailable", "too many channels on the server", None),
        ),
        (
            Violation::InvalidChannel(ChannelNameError::TooLong { len: 300, max: 255 }),
            reply("bad_request", "channel name too long", None),
        ),
        (
            Violation::TooManyInFlight,
            reply("rate_limited", "too many requests in flight", None),
        ),
        (
            Violation::IdempotencyConflict,
            reply(
                "bad_request",
                "idempotency key reused with other params",
                None,
            ),
        ),
        (
            Violation::LivenessFlood {
                retry_after: 5 * SECOND,
            },
            ViolationResponse::Close {
                code: CloseCode::RATE_LIMITED,
                reason: "ping flood",
                advice: Some(ReconnectAdvice {
                    reason: "rate_limited".into(),
                    min_delay_ms: 5_000,
                    max_delay_ms: 10_000,
                    message: None,
                }),
            },
        ),
    ]
}

#[test]
fn every_violation_gets_its_documented_response() {
    for (violation, expected) in table() {
        assert_eq!(violation.response(), expected, "{}", violation.name());
    }
}

#[test]
fn bad_input_keeps_the_connection_and_everything_else_but_upgrades_closes() {
    for (violation, response) in table() {
        let keeps = matches!(
            violation,
            Violation::MalformedFrame
                | Violation::UnknownType
                | Violation::BinaryFrame
                | Violation::RateLimited { .. }
                | Violation::TooManySubscriptions
                | Violation::TooManyChannels
                | Violation::InvalidChannel(_)
                | Violation::TooManyInFlight
                | Violation::IdempotencyConflict
        );
        assert_eq!(response.keeps_connection(), keeps, "{}", violation.name());
        let upgrade = matches!(response, ViolationResponse::RejectUpgrade { .. });
        assert_eq!(
            response.close_code().is_some(),
            !keeps && !upgrade,
            "{}",
            violation.name()
        );
    }
}

#[test]
fn only_an_unsupported_version_is_terminal_for_the_client() {
    for (violation, response) in table() {
        if let Some(code) = response.close_code() {
            let terminal = code.disposition() == crate::close::CloseDisposition::Terminal;
            assert_eq!(
                terminal,
                violation == Violation::UnsupportedProtocol,
                "{}",
                violation.name()
            );
        }
    }
}

#[test]
fn names_are_unique() {
    let mut names: Vec<&str> = table().iter().map(|(v, _)| v.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), table().len());
}

#[test]
fn a_flood_advice_stays_within_what_clients_honour() {
    let response = Violation::Flood {
        retry_after: Duration::MAX,
    }
    .response();
    let ViolationResponse::Close {
        advice: Some(advice),
        ..
    } = response
    else {
        panic!("a flood is closed with advice: {response:?}");
    };
    assert_eq!(advice.min_delay_ms, 3_600_000);
    assert_eq!(advice.max_delay_ms, 3_600_000);
}

#[test]
fn retry_hints_never_exceed_the_wire_integer_range_or_invite_an_instant_retry() {
    let reply = Violation::RateLimited {
        retry_after: Duration::MAX,
    }
    .response();
    let ViolationResponse::Reply(body) = reply else {
        panic!("rate limiting keeps the connection: {reply:?}");
    };
    assert_eq!(body.retry_after_ms, Some(MAX_WIRE_INT));
    let upgrade = Violation::TooManyConnectionsFromIp {
        retry_after: Duration::ZERO,
    }
    .response();
    assert_eq!(
        upgrade,
        ViolationResponse::RejectUpgrade {
            status: 429,
            retry_after_secs: Some(1),
        }
    );
}
