//! What halts the session for good (exhausted retries, a normal or policy
//! close, an auth failure, a configuration error) and how an explicit
//! `start` brings it back.

use std::time::Duration;

use belay_proto::backoff::BackoffPolicy;
use belay_proto::message::ClientMessage;
use belay_proto::{
    CloseCode, Config, ConnectionState, Event, Failure, HaltReason, Input, Output, RetryPlan,
};

use crate::common::{closed, events, opened_id, retry_of, sent, unsubscribed, Driver};

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
