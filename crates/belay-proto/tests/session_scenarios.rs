//! Session behaviour, one scenario per test, in virtual time.

use std::time::Duration;

use belay_proto::backoff::BackoffPolicy;
use belay_proto::heartbeat::LivenessFailure;
use belay_proto::message::{
    encode_server, ClientMessage, Pacing, Publication, Reply, Response, ServerMessage,
    StreamPosition, Subscribed, PROTOCOL_VERSION,
};
use belay_proto::{
    Call, CloseCode, CloseInfo, Config, ConnectionState, DisconnectReason, Event, Failure,
    HaltReason, Input, Instant, Output, RequestError, RequestOutcome, RetryPlan, TransportId,
};
use serde_json::json;

mod common;
use common::*;

#[test]
fn start_dials_once_then_connect_and_welcome_make_it_ready() {
    let mut d = Driver::fixed(1_000);
    let out = {
        d.session.start(d.now).unwrap();
        d.drain()
    };
    assert_eq!(
        out,
        vec![Output::OpenTransport {
            id: TransportId(1),
            attempt: 0
        }]
    );
    let out = d.input(Input::TransportOpened(TransportId(1)));
    assert!(matches!(sent(&out)[..], [ClientMessage::Connect(_)]));
    assert_eq!(d.session.state(), ConnectionState::Handshaking);
    assert!(d.session.readiness().transport && !d.session.is_ready());
    let out = d.welcome(TransportId(1), welcome("s-1"));
    assert!(events(&out).contains(&Event::Connected {
        session: "s-1".into()
    }));
    assert!(d.session.is_ready());
    assert_eq!(d.session.state(), ConnectionState::Open);
}

#[test]
fn start_twice_never_opens_a_second_transport() {
    let mut d = Driver::fixed(1_000);
    d.start();
    d.session.start(d.now).unwrap();
    d.session.reconnect_now(d.now).unwrap();
    assert!(d.drain().is_empty());
}

#[test]
fn events_from_a_replaced_transport_change_nothing() {
    let mut d = Driver::fixed(1_000);
    let first = d.start();
    d.establish(first);
    d.at(5_000);
    d.input(Input::TransportClosed(first, CloseInfo::abnormal()));
    d.at(6_000);
    let second = opened_id(&d.tick());
    d.establish(second);
    let before = (d.session.state(), d.session.readiness());

    d.at(7_000);
    let late: Vec<Input> = vec![
        Input::TransportOpened(first),
        Input::TransportClosed(first, closed(CloseCode::NORMAL)),
        Input::TransportFailed(first, Failure::network("reset")),
        Input::Frame(
            first,
            r#"{"type":"welcome","session":"old","protocol":1}"#.into(),
        ),
        Input::Message(first, ServerMessage::Ping),
    ];
    for input in late {
        assert!(d.input(input).is_empty(), "a stale input produced output");
    }
    assert_eq!((d.session.state(), d.session.readiness()), before);
    assert_eq!(d.session.current_transport(), Some(second));
    assert_eq!(d.session.stats().stale_inputs, 5);
}

#[test]
fn losing_the_transport_schedules_exactly_one_reconnect() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.at(2_000);
    let out = d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    assert_eq!(
        retry_of(&out),
        RetryPlan::After {
            delay: Duration::from_secs(1)
        }
    );
    assert_eq!(d.session.state(), ConnectionState::Waiting);
    assert_eq!(d.session.poll_timeout(), Some(Instant::from_millis(3_000)));
    let out = d.next_timeout();
    assert_eq!(opened_id(&out), TransportId(2));
    assert!(
        d.tick().is_empty(),
        "a second tick at the same instant does nothing"
    );
}

#[test]
fn reconnect_now_during_backoff_dials_at_once_without_a_disconnect_event() {
    let mut d = Driver::fixed(30_000);
    let id = d.start();
    d.establish(id);
    d.at(1_000);
    d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    d.at(1_006);
    d.session.reconnect_now(d.now).unwrap();
    let out = d.drain();
    assert_eq!(out.len(), 1, "only the dial: {out:?}");
    assert_eq!(opened_id(&out), TransportId(2));
    // Pressing the button again while dialing must not start a parallel chain.
    d.session.reconnect_now(d.now).unwrap();
    assert!(d.drain().is_empty());
    assert_eq!(d.session.state(), ConnectionState::Connecting);
}

#[test]
fn backoff_resets_only_after_being_ready_for_the_cooldown() {
    let mut config = Config::default();
    config
        .set_backoff(BackoffPolicy::exponential(
            Duration::from_secs(1),
            Duration::from_secs(30),
        ))
        .set_reset_after(Duration::from_secs(5));
    let mut d = Driver::new(config);
    let id = d.start();
    d.input(Input::TransportFailed(id, Failure::network("refused")));
    let id = opened_id(&d.next_timeout());
    d.input(Input::TransportFailed(id, Failure::network("refused")));
    let id = opened_id(&d.next_timeout());
    assert_eq!(d.session.attempt(), 2);

    // Ready, but dropped 4.999 s later: the counter keeps growing (4 s next).
    d.establish(id);
    let ready_at = d.now;
    d.now = ready_at + Duration::from_millis(4_999);
    d.tick();
    let out = d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    assert_eq!(
        retry_of(&out),
        RetryPlan::After {
            delay: Duration::from_secs(4)
        }
    );

    // Ready for the full 5 s: the next loss starts again from 1 s.
    let id = opened_id(&d.next_timeout());
    d.establish(id);
    let ready_at = d.now;
    assert_eq!(
        d.session.poll_timeout(),
        Some(ready_at + Duration::from_secs(5))
    );
    d.next_timeout();
    assert_eq!(d.session.attempt(), 0);
    let out = d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    assert_eq!(
        retry_of(&out),
        RetryPlan::After {
            delay: Duration::from_secs(1)
        }
    );
}

#[test]
fn opening_without_becoming_ready_never_resets_the_backoff() {
    let mut config = Config::default();
    config.set_backoff(BackoffPolicy::exponential(
        Duration::from_secs(1),
        Duration::from_secs(30),
    ));
    let mut d = Driver::new(config);
    let mut id = d.start();
    let mut delays = Vec::new();
    for _ in 0..4 {
        d.input(Input::TransportOpened(id));
        d.now = d.now + Duration::from_millis(300);
        let out = d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
        if let RetryPlan::After { delay } = retry_of(&out) {
            delays.push(delay.as_secs());
        }
        id = opened_id(&d.next_timeout());
    }
    assert_eq!(delays, vec![1, 2, 4, 8]);
}

#[test]
fn retry_exhaustion_halts_until_an_explicit_start() {
    let mut config = Config::default();
    config
        .set_backoff(BackoffPolicy::fixed(Duration::from_secs(1)))
        .set_max_attempts(Some(2));
    let mut d = Driver::new(config);
    let mut id = d.start();
    for _ in 0..2 {
        d.input(Input::TransportFailed(id, Failure::network("refused")));
        id = opened_id(&d.next_timeout());
    }
    let out = d.input(Input::TransportFailed(id, Failure::network("refused")));
    assert_eq!(retry_of(&out), RetryPlan::No);
    assert!(events(&out).contains(&Event::Halted {
        reason: HaltReason::Exhausted { attempts: 2 }
    }));
    assert_eq!(d.session.state(), ConnectionState::Halted);
    assert_eq!(d.session.poll_timeout(), None, "no timer can resurrect it");

    d.at(60_000);
    d.session.start(d.now).unwrap();
    let out = d.drain();
    assert!(matches!(
        out[..],
        [Output::OpenTransport { attempt: 0, .. }]
    ));
}

#[test]
fn normal_and_policy_closes_are_terminal() {
    for code in [CloseCode::NORMAL, CloseCode::POLICY_VIOLATION] {
        let mut d = Driver::fixed(1_000);
        let id = d.start();
        d.establish(id);
        let out = d.input(Input::TransportClosed(id, closed(code)));
        assert_eq!(retry_of(&out), RetryPlan::No);
        assert!(matches!(
            events(&out).last(),
            Some(Event::Halted {
                reason: HaltReason::ServerClosed { .. }
            })
        ));
        assert_eq!(d.session.poll_timeout(), None);
    }
}

#[test]
fn an_auth_failure_halts_instead_of_hammering() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    let out = d.input(Input::TransportFailed(id, Failure::rejected(401)));
    assert!(events(&out).contains(&Event::Halted {
        reason: HaltReason::AuthFailed
    }));
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let out = d.input(Input::TransportClosed(id, closed(CloseCode::UNAUTHORIZED)));
    assert!(events(&out).contains(&Event::Halted {
        reason: HaltReason::AuthFailed
    }));
}

#[test]
fn a_configuration_error_stops_at_once() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    let out = d.input(Input::TransportFailed(
        id,
        Failure::InvalidConfig {
            detail: "bad url".into(),
        },
    ));
    assert!(matches!(
        events(&out).last(),
        Some(Event::Halted {
            reason: HaltReason::InvalidConfig { .. }
        })
    ));
    assert_eq!(d.session.poll_timeout(), None);
}

#[test]
fn restart_advice_sets_the_reconnect_window() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.at(10_000);
    d.server(id, advice("restart", 5_000, 9_000));
    let out = d.input(Input::TransportClosed(
        id,
        closed(CloseCode::SERVICE_RESTART),
    ));
    let RetryPlan::After { delay } = retry_of(&out) else {
        panic!("a restart is retried");
    };
    assert!(
        (5_000..9_000).contains(&(delay.as_millis() as u64)),
        "{delay:?}"
    );
}

#[test]
fn deploy_advice_doubles_the_backoff_of_later_attempts() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.server(id, advice("deploy", 2_000, 2_000));
    let out = d.input(Input::TransportClosed(
        id,
        closed(CloseCode::SERVICE_RESTART),
    ));
    assert_eq!(
        retry_of(&out),
        RetryPlan::After {
            delay: Duration::from_secs(2)
        }
    );
    let id = opened_id(&d.next_timeout());
    let out = d.input(Input::TransportFailed(id, Failure::network("refused")));
    assert_eq!(
        retry_of(&out),
        RetryPlan::After {
            delay: Duration::from_secs(2)
        },
        "the fixed 1 s policy is doubled after a deploy"
    );
}

#[test]
fn advice_on_a_connection_that_survives_is_forgotten_by_the_next_one() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.server(id, advice("restart", 60_000, 60_000));
    d.input(Input::TransportFailed(id, Failure::network("reset")));
    let id = opened_id(&d.next_timeout());
    d.establish(id);
    let out = d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    assert_eq!(
        retry_of(&out),
        RetryPlan::After {
            delay: Duration::from_secs(1)
        }
    );
}

#[test]
fn a_silent_peer_is_probed_then_dropped_within_interval_plus_timeout() {
    let mut config = Config::default();
    config
        .set_backoff(BackoffPolicy::fixed(Duration::from_secs(1)))
        .set_probe_interval(Duration::from_secs(10))
        .set_probe_timeout(Duration::from_secs(25));
    let mut d = Driver::new(config);
    let id = d.start();
    d.establish(id);
    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(10_000));
    assert_eq!(sent(&out), vec![ClientMessage::Ping]);
    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(35_000));
    assert_eq!(closes(&out), vec![(id, CloseCode::HEARTBEAT_TIMEOUT)]);
    assert!(matches!(
        events(&out)
            .iter()
            .find(|e| matches!(e, Event::Disconnected { .. })),
        Some(Event::Disconnected {
            reason: DisconnectReason::HeartbeatTimeout {
                cause: LivenessFailure::ProbeUnanswered
            },
            ..
        })
    ));
    // It does not wait for the dead socket's close event to move on.
    assert_eq!(d.session.state(), ConnectionState::Waiting);
}

#[test]
fn a_busy_connection_sends_no_probes() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    for step in 1..=100 {
        d.at(step * 5_000);
        d.tick();
        let out = d.server(id, ServerMessage::Pong);
        assert!(sent(&out).is_empty());
    }
    assert_eq!(d.session.stats().probes_sent, 0);
}

#[test]
fn server_pings_are_answered_and_their_absence_is_noticed() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.input(Input::TransportOpened(id));
    let mut w = welcome("s-1");
    w.ping_interval_ms = Some(4_000);
    d.welcome(id, w);
    d.at(4_000);
    let out = d.input(Input::Frame(id, r#"{"type":"ping"}"#.into()));
    assert_eq!(sent(&out), vec![ClientMessage::Pong]);
    // Two intervals without any frame: dead.
    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(12_000));
    assert!(events(&out).iter().any(|e| matches!(
        e,
        Event::Disconnected {
            reason: DisconnectReason::HeartbeatTimeout {
                cause: LivenessFailure::ServerPingsMissing
            },
            ..
        }
    )));
}

#[test]
fn a_transport_that_never_opens_is_abandoned_at_the_connect_timeout() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(10_000));
    assert_eq!(closes(&out), vec![(id, CloseCode::HANDSHAKE_TIMEOUT)]);
    assert!(events(&out).iter().any(|e| matches!(
        e,
        Event::ConnectFailed {
            reason: DisconnectReason::ConnectTimeout,
            ..
        }
    )));
}

#[test]
fn a_server_that_never_says_welcome_is_abandoned() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.at(2_000);
    d.input(Input::TransportOpened(id));
    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(12_000));
    assert_eq!(closes(&out), vec![(id, CloseCode::HANDSHAKE_TIMEOUT)]);
    assert!(!d.session.readiness().transport);
}

#[test]
fn offline_cancels_the_wait_and_online_dials_soon_with_a_fresh_backoff() {
    let mut config = Config::default();
    config.set_backoff(BackoffPolicy::exponential(
        Duration::from_secs(1),
        Duration::from_secs(30),
    ));
    let mut d = Driver::new(config);
    let mut id = d.start();
    for _ in 0..3 {
        d.input(Input::TransportFailed(id, Failure::network("refused")));
        id = opened_id(&d.next_timeout());
    }
    d.input(Input::TransportFailed(id, Failure::network("refused")));
    assert_eq!(d.session.state(), ConnectionState::Waiting);
    d.input(Input::Network { online: false });
    assert_eq!(d.session.state(), ConnectionState::Offline);
    assert_eq!(d.session.poll_timeout(), None);

    d.at(100_000);
    d.input(Input::Network { online: true });
    let at = d.session.poll_timeout().unwrap();
    assert!(
        at < Instant::from_millis(101_000),
        "dials within the online delay"
    );
    let out = d.next_timeout();
    assert!(matches!(
        out[..],
        [Output::OpenTransport { attempt: 0, .. }]
    ));
}

#[test]
fn going_offline_while_connecting_abandons_the_attempt() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    let out = d.input(Input::Network { online: false });
    assert_eq!(closes(&out), vec![(id, CloseCode::GOING_AWAY)]);
    assert_eq!(retry_of(&out), RetryPlan::WhenOnline);
    assert_eq!(d.session.poll_timeout(), None);
}

#[test]
fn requests_before_the_handshake_are_refused_and_never_sent() {
    let mut d = Driver::fixed(1_000);
    assert_eq!(
        d.session.request(d.now, Call::new("m", json!(null))),
        Err(RequestError::NotReady)
    );
    let id = d.start();
    d.input(Input::TransportOpened(id));
    assert_eq!(
        d.session.request(d.now, Call::new("m", json!(null))),
        Err(RequestError::NotReady)
    );
    assert!(sent(&d.drain()).is_empty());
}

#[test]
fn a_request_settles_with_its_response() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let req = d
        .session
        .request(
            d.now,
            Call::new("sum", json!([1, 2])).with_idempotency_key("k-1"),
        )
        .unwrap();
    let out = d.drain();
    let ClientMessage::Request(wire) = &sent(&out)[0] else {
        panic!("a request is sent");
    };
    assert_eq!(wire.idem.as_deref(), Some("k-1"));
    assert_eq!(wire.id, req.0);
    let out = d.input(Input::Frame(
        id,
        encode_server(&ServerMessage::Response(Response {
            id: req.0,
            reply: Reply::Result(json!(3).into()),
        })),
    ));
    assert_eq!(
        events(&out),
        vec![Event::Response {
            id: req,
            outcome: RequestOutcome::Ok {
                result: json!(3).into()
            }
        }]
    );
}

#[test]
fn a_request_times_out_at_its_deadline_and_a_late_answer_is_ignored() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let req = d
        .session
        .request(
            d.now,
            Call::new("slow", json!(null)).with_timeout(Duration::from_secs(3)),
        )
        .unwrap();
    d.drain();
    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(3_000));
    assert_eq!(
        events(&out),
        vec![Event::Response {
            id: req,
            outcome: RequestOutcome::Timeout
        }]
    );
    assert!(
        d.session.is_ready(),
        "slow replies are not a readiness failure"
    );
    let out = d.server(
        id,
        ServerMessage::Response(Response {
            id: req.0,
            reply: Reply::Result(json!(1).into()),
        }),
    );
    assert!(events(&out).is_empty());
    assert_eq!(d.session.late_responses(), 1);
}

#[test]
fn requests_in_flight_settle_when_the_connection_drops_and_ids_keep_growing() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let a = d.session.request(d.now, Call::new("a", json!(1))).unwrap();
    let b = d.session.request(d.now, Call::new("b", json!(2))).unwrap();
    d.drain();
    let out = d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    let settled: Vec<_> = events(&out)
        .into_iter()
        .filter_map(|e| match e {
            Event::Response { id, outcome } => Some((id, outcome)),
            _ => None,
        })
        .collect();
    assert_eq!(
        settled,
        vec![
            (a, RequestOutcome::ConnectionClosed),
            (b, RequestOutcome::ConnectionClosed)
        ]
    );
    let id = opened_id(&d.next_timeout());
    d.establish(id);
    let c = d.session.request(d.now, Call::new("c", json!(3))).unwrap();
    assert!(c > b, "ids are never reset on reconnect");
}

#[test]
fn a_subscription_counts_only_once_confirmed() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    let out = d.establish(id);
    assert!(sent(&out).iter().any(
        |m| matches!(m, ClientMessage::Subscribe(s) if s.channel == "news" && s.since.is_none())
    ));
    assert!(d.session.readiness().protocol);
    assert!(!d.session.is_ready(), "not ready until the server confirms");
    let out = d.server(id, subscribed("news", 0, false));
    assert!(events(&out).contains(&Event::Subscribed {
        channel: "news".into(),
        recovered: false
    }));
    assert!(d.session.is_ready());
}

fn subscribed(channel: &str, offset: u64, recovered: bool) -> ServerMessage {
    ServerMessage::Subscribed(Subscribed {
        channel: channel.into(),
        epoch: "e1".into(),
        offset,
        recovered,
    })
}

fn publication(channel: &str, offset: u64) -> ServerMessage {
    ServerMessage::Publication(Publication {
        channel: channel.into(),
        epoch: "e1".into(),
        offset,
        data: json!(offset).into(),
    })
}

#[test]
fn an_unconfirmed_subscribe_is_repeated_on_the_same_transport() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(5_000));
    assert!(matches!(sent(&out)[..], [ClientMessage::Subscribe(_)]));
    assert!(closes(&out).is_empty());
    assert_eq!(d.session.current_transport(), Some(id));
}

#[test]
fn a_lost_subscription_is_restored_without_touching_the_connection() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    d.server(id, subscribed("news", 0, false));
    let out = d.server(id, unsubscribed("news", "unavailable"));
    assert!(events(&out).contains(&Event::SubscriptionLost {
        channel: "news".into(),
        code: "unavailable".into()
    }));
    let r = d.session.readiness();
    assert!(r.transport && r.protocol && !r.service);
    let lost_at = d.now;
    let out = d.next_timeout();
    assert!(
        d.now - lost_at <= Duration::from_secs(2),
        "resubscribes within 2 s"
    );
    assert!(matches!(sent(&out)[..], [ClientMessage::Subscribe(_)]));
    d.server(id, subscribed("news", 0, true));
    assert!(d.session.is_ready());
    assert_eq!(d.session.current_transport(), Some(id));
}

#[test]
fn a_forbidden_channel_fails_for_good_and_does_not_block_readiness() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "secret").unwrap();
    let id = d.start();
    d.establish(id);
    let out = d.server(id, unsubscribed("secret", "forbidden"));
    assert!(events(&out).contains(&Event::SubscriptionFailed {
        channel: "secret".into(),
        code: "forbidden".into()
    }));
    assert!(d.session.is_ready());
}

#[test]
fn a_reconnect_resumes_each_channel_from_its_position() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    d.server(id, subscribed("news", 40, false));
    d.server(id, publication("news", 41));
    d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    let id = opened_id(&d.next_timeout());
    let out = d.establish(id);
    let since = sent(&out).into_iter().find_map(|m| match m {
        ClientMessage::Subscribe(s) => s.since,
        _ => None,
    });
    assert_eq!(
        since,
        Some(StreamPosition {
            epoch: "e1".into(),
            offset: 41
        })
    );
    let out = d.server(id, subscribed("news", 41, true));
    assert!(events(&out).contains(&Event::Subscribed {
        channel: "news".into(),
        recovered: true
    }));
}

#[test]
fn an_unrecoverable_resume_is_reported_explicitly() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    d.server(id, subscribed("news", 5, false));
    d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    let id = opened_id(&d.next_timeout());
    d.establish(id);
    let out = d.server(
        id,
        ServerMessage::Subscribed(Subscribed {
            channel: "news".into(),
            epoch: "e2".into(),
            offset: 100,
            recovered: false,
        }),
    );
    assert!(events(&out).contains(&Event::RecoveryFailed {
        channel: "news".into()
    }));
}

#[test]
fn publications_arrive_in_order_without_duplicates_and_a_gap_is_repaired() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    d.server(id, subscribed("news", 0, false));
    let delivered = |out: &[Output]| -> Vec<u64> {
        events(out)
            .into_iter()
            .filter_map(|e| match e {
                Event::Publication(p) => Some(p.offset),
                _ => None,
            })
            .collect()
    };
    assert_eq!(delivered(&d.server(id, publication("news", 1))), vec![1]);
    assert!(delivered(&d.server(id, publication("news", 1))).is_empty());
    // Offset 3 skips 2: ask the server to replay from 1 instead of losing 2.
    let out = d.server(id, publication("news", 3));
    assert!(delivered(&out).is_empty());
    assert!(sent(&out).iter().any(|m| matches!(m, ClientMessage::Subscribe(s) if s.since.as_ref().map(|p| p.offset) == Some(1))));
    d.server(id, subscribed("news", 1, true));
    assert_eq!(delivered(&d.server(id, publication("news", 2))), vec![2]);
    assert_eq!(delivered(&d.server(id, publication("news", 3))), vec![3]);
}

#[test]
fn a_malformed_frame_closes_with_a_protocol_error_and_reconnects() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let out = d.input(Input::Frame(id, "{not json".into()));
    assert_eq!(closes(&out), vec![(id, CloseCode::PROTOCOL_ERROR)]);
    assert!(retry_of(&out).will_retry());
}

#[test]
fn an_unknown_message_type_is_skipped_but_proves_life() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.at(9_000);
    let out = d.input(Input::Frame(id, r#"{"type":"hologram"}"#.into()));
    assert!(out.is_empty());
    assert_eq!(d.session.stats().unknown_frames, 1);
    d.next_timeout();
    assert_eq!(
        d.now,
        Instant::from_millis(19_000),
        "the quiet timer restarted"
    );
}

#[test]
fn stop_emits_the_final_close_and_nothing_after() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    d.session.request(d.now, Call::new("a", json!(1))).unwrap();
    d.drain();
    d.session.stop(d.now);
    let out = d.drain();
    assert_eq!(closes(&out), vec![(id, CloseCode::NORMAL)]);
    assert_eq!(events(&out).last(), Some(&Event::Stopped));
    assert!(events(&out).contains(&Event::Disconnected {
        reason: DisconnectReason::ClientStopped,
        retry: RetryPlan::No
    }));
    assert_eq!(d.session.poll_timeout(), None);
    d.input(Input::TransportClosed(id, closed(CloseCode::NORMAL)));
    d.input(Input::Network { online: true });
    assert!(d.session.reconnect_now(d.now).is_err());
    assert!(d.session.start(d.now).is_err());
    assert_eq!(
        d.session.request(d.now, Call::new("b", json!(1))),
        Err(RequestError::Stopped)
    );
    d.at(1_000_000);
    d.tick();
    assert!(d.drain().is_empty());
}

#[test]
fn server_paced_reconnects_land_on_the_advertised_slots() {
    let mut config = Config::default();
    config.set_backoff(BackoffPolicy::server_paced(
        Duration::from_secs(1),
        BackoffPolicy::fixed(Duration::from_secs(5)),
    ));
    let mut d = Driver::new(config);
    let id = d.start();
    d.at(1_000);
    d.input(Input::TransportOpened(id));
    let mut w = welcome("s-1");
    w.pacing = Some(Pacing {
        period_ms: 20_000,
        phase_ms: 7_000,
    });
    d.welcome(id, w);
    d.at(30_000);
    // First loss: the fast path, within 1 s.
    let out = d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    let RetryPlan::After { delay } = retry_of(&out) else {
        panic!()
    };
    assert!(delay < Duration::from_secs(1));
    let id = opened_id(&d.next_timeout());
    // Second failure in a row: the next slot of the grid 1 s + 7 s + k·20 s.
    let out = d.input(Input::TransportFailed(id, Failure::network("refused")));
    let RetryPlan::After { delay } = retry_of(&out) else {
        panic!()
    };
    assert_eq!(d.now + delay, Instant::from_millis(48_000));
}

#[test]
fn a_server_speaking_another_protocol_version_halts_the_session() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.input(Input::TransportOpened(id));
    let mut w = welcome("s-1");
    w.protocol = PROTOCOL_VERSION + 1;
    let out = d.welcome(id, w);
    assert_eq!(closes(&out), vec![(id, CloseCode::PROTOCOL_ERROR)]);
    assert!(events(&out).contains(&Event::Halted {
        reason: HaltReason::ProtocolMismatch {
            server: PROTOCOL_VERSION + 1
        }
    }));
    assert!(!d.session.is_ready());
}

#[test]
fn a_zero_ping_interval_means_the_server_does_not_ping() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.input(Input::TransportOpened(id));
    let mut w = welcome("s-1");
    w.ping_interval_ms = Some(0);
    d.welcome(id, w);
    let out = d.next_timeout();
    assert_eq!(
        d.now,
        Instant::from_millis(10_000),
        "the client probe, not a watchdog at 0"
    );
    assert_eq!(sent(&out), vec![ClientMessage::Ping]);
}

#[test]
fn a_connection_the_server_pings_sends_no_probes_of_its_own() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.input(Input::TransportOpened(id));
    let mut w = welcome("s-1");
    w.ping_interval_ms = Some(10_000);
    d.welcome(id, w);
    for k in 1..=30 {
        // Server pings arrive up to 20 % late; the client only answers them.
        d.at(k * 12_000);
        let before = d.tick();
        let out = d.input(Input::Frame(id, r#"{"type":"ping"}"#.into()));
        assert!(sent(&before).is_empty());
        assert_eq!(sent(&out), vec![ClientMessage::Pong]);
    }
    assert_eq!(d.session.stats().probes_sent, 0);
    assert!(d.session.is_ready());
}

#[test]
fn deploy_doubling_leaves_the_servers_slot_grid_alone() {
    let mut config = Config::default();
    config.set_backoff(BackoffPolicy::server_paced(
        Duration::from_secs(1),
        BackoffPolicy::fixed(Duration::from_secs(5)),
    ));
    let mut d = Driver::new(config);
    let id = d.start();
    d.input(Input::TransportOpened(id));
    let mut w = welcome("s-1");
    w.pacing = Some(Pacing {
        period_ms: 20_000,
        phase_ms: 3_000,
    });
    d.welcome(id, w);
    d.at(10_000);
    d.server(id, advice("deploy", 1_000, 1_000));
    d.input(Input::TransportClosed(
        id,
        closed(CloseCode::SERVICE_RESTART),
    ));
    let id = opened_id(&d.next_timeout());
    assert_eq!(d.now, Instant::from_millis(11_000));
    let out = d.input(Input::TransportFailed(id, Failure::network("refused")));
    let RetryPlan::After { delay } = retry_of(&out) else {
        panic!()
    };
    assert_eq!(
        d.now + delay,
        Instant::from_millis(23_000),
        "the next slot, not doubled"
    );
}

#[test]
fn coming_back_online_still_honours_the_servers_advice() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.server(id, advice("restart", 20_000, 20_000));
    d.input(Input::TransportClosed(
        id,
        closed(CloseCode::SERVICE_RESTART),
    ));
    d.at(1_000);
    d.input(Input::Network { online: false });
    d.at(2_000);
    d.input(Input::Network { online: true });
    assert_eq!(d.session.poll_timeout(), Some(Instant::from_millis(20_000)));
}

#[test]
fn refreshed_credentials_and_start_retry_a_refused_channel() {
    let mut config = Config::default();
    config
        .set_backoff(BackoffPolicy::fixed(Duration::from_secs(1)))
        .set_token(Some("old".into()));
    let mut d = Driver::new(config);
    d.session.subscribe(d.now, "private").unwrap();
    let id = d.start();
    d.establish(id);
    d.server(id, unsubscribed("private", "unauthorized"));
    d.input(Input::TransportClosed(id, closed(CloseCode::UNAUTHORIZED)));
    assert_eq!(d.session.state(), ConnectionState::Halted);

    d.session.set_token(Some("new".into()));
    d.session.start(d.now).unwrap();
    let id = opened_id(&d.drain());
    let out = d.establish(id);
    let messages = sent(&out);
    assert!(matches!(&messages[0], ClientMessage::Connect(c) if c.token.as_deref() == Some("new")));
    assert!(messages
        .iter()
        .any(|m| matches!(m, ClientMessage::Subscribe(s) if s.channel == "private")));
}

#[test]
fn an_oversized_frame_closes_with_message_too_big() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let huge = format!(r#"{{"type":"ping","pad":"{}"}}"#, "x".repeat(1 << 20));
    let out = d.input(Input::Frame(id, huge));
    assert_eq!(closes(&out), vec![(id, CloseCode::TOO_BIG)]);
}

#[test]
fn attempts_that_never_leave_the_device_retry_quickly_without_advancing_the_backoff() {
    let mut config = Config::default();
    config
        .set_backoff(BackoffPolicy::fixed(Duration::from_secs(30)))
        .set_max_attempts(Some(1));
    let mut d = Driver::new(config);
    let id = d.start();
    d.establish(id);
    d.at(1_000);
    // The network drops: the socket errors out and redials fail locally.
    let out = d.input(Input::TransportFailed(
        id,
        Failure::unreachable("ENETUNREACH"),
    ));
    let mut gaps = vec![retry_of(&out)];
    for _ in 0..5 {
        let id = opened_id(&d.next_timeout());
        let out = d.input(Input::TransportFailed(
            id,
            Failure::unreachable("ENETUNREACH"),
        ));
        gaps.push(retry_of(&out));
    }
    for gap in &gaps {
        let RetryPlan::After { delay } = gap else {
            panic!("{gap:?}")
        };
        assert!(*delay <= Duration::from_secs(2), "{delay:?}");
    }
    assert_eq!(
        d.session.attempt(),
        0,
        "the server-facing backoff did not move"
    );
    assert_eq!(
        d.session.state(),
        ConnectionState::Waiting,
        "never exhausted"
    );
    // The network is back: the next attempt reaches the server within 2 s.
    let back_at = d.now;
    let id = opened_id(&d.next_timeout());
    assert!(d.now - back_at <= Duration::from_secs(2));
    d.establish(id);
    assert!(d.session.is_ready());
}

#[test]
fn liveness_check_on_resume_detects_a_dead_server_in_two_seconds_not_fifty() {
    // A server that pings every 25 s: left alone, the client would wait up to
    // 2 × 25 s after the last frame. After a resume it checks at once.
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.input(Input::TransportOpened(id));
    let mut w = welcome("s-1");
    w.ping_interval_ms = Some(25_000);
    d.welcome(id, w);
    assert_eq!(d.session.poll_timeout(), Some(Instant::from_millis(37_500)));

    // The page comes back at 5 s and checks: one ping, a 2 s deadline.
    let out = d.at(5_000).check();
    assert_eq!(sent(&out), vec![ClientMessage::Ping]);
    assert_eq!(d.session.poll_timeout(), Some(Instant::from_millis(7_000)));
    // Checking again neither sends a second ping nor extends the deadline.
    assert!(d.at(6_000).check().is_empty());
    assert_eq!(d.session.poll_timeout(), Some(Instant::from_millis(7_000)));
    assert_eq!(d.session.stats().probes_sent, 1);

    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(7_000));
    assert_eq!(closes(&out), vec![(id, CloseCode::HEARTBEAT_TIMEOUT)]);
    assert!(events(&out).iter().any(|e| matches!(
        e,
        Event::Disconnected {
            reason: DisconnectReason::HeartbeatTimeout {
                cause: LivenessFailure::ProbeUnanswered
            },
            ..
        }
    )));
    assert_eq!(d.session.state(), ConnectionState::Waiting);
}

#[test]
fn liveness_check_answered_by_any_frame_keeps_the_connection() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.at(1_000).check();
    // Not a pong: any frame is proof of life.
    d.at(1_500)
        .input(Input::Frame(id, r#"{"type":"hologram"}"#.into()));
    assert_eq!(d.session.poll_timeout(), Some(Instant::from_millis(11_500)));
    assert!(d.at(3_000).tick().is_empty());
    assert!(d.session.is_ready());
    // Outside Open a check does nothing.
    d.at(4_000).input(Input::TransportClosed(
        id,
        CloseInfo::new(CloseCode::ABNORMAL, ""),
    ));
    assert!(d.check().is_empty());
    assert_eq!(d.session.state(), ConnectionState::Waiting);
}
