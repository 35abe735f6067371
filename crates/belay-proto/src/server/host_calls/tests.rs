//! One scenario per test, in virtual time (default timing: wake bound
//! 15 s + 5 s = 20 s, answer deadline 30 s after the call's start).

use serde_json::json;

use super::*;
use crate::host::{max_calls_per_caller, SharedHost};
use crate::time::Instant;

const HOST: &str = "pc-1";

fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

fn call_req(caller: &str) -> CallRequest {
    CallRequest::new(HOST, caller, "ping", json!({"n": 1}))
}

fn result(value: &str) -> Reply {
    Reply::Result(json!(value).into())
}

/// A table where `HOST` beat at 0, optionally attached.
fn relay(attached: bool) -> HostCalls {
    let mut calls = HostCalls::new(HostCallsConfig::default());
    calls.handle_beat(at(0), HOST).unwrap();
    if attached {
        calls.handle_attached(at(0), HOST);
    }
    drain(&mut calls);
    calls
}

fn drain(calls: &mut HostCalls) -> Vec<HostCallOutput> {
    std::iter::from_fn(|| calls.poll_output()).collect()
}

fn delivered(outputs: &[HostCallOutput]) -> Vec<CallId> {
    (outputs.iter())
        .filter_map(|out| match out {
            HostCallOutput::Deliver(d) => Some(d.call),
            _ => None,
        })
        .collect()
}

fn settled(outputs: &[HostCallOutput]) -> Vec<(CallId, Result<Reply, HostCallError>)> {
    (outputs.iter())
        .filter_map(|out| match out {
            HostCallOutput::Settled { call, outcome, .. } => Some((*call, outcome.clone())),
            _ => None,
        })
        .collect()
}

fn states(outputs: &[HostCallOutput]) -> Vec<HostState> {
    (outputs.iter())
        .filter_map(|out| match out {
            HostCallOutput::StateChanged { state, .. } => Some(*state),
            _ => None,
        })
        .collect()
}

#[test]
fn a_call_to_a_ready_host_is_delivered_and_answered_in_time() {
    let mut calls = relay(true);
    let id = calls.handle_call(at(100), call_req("a")).unwrap();
    let out = drain(&mut calls);
    let [HostCallOutput::Deliver(delivery)] = &out[..] else {
        panic!("{out:?}");
    };
    assert_eq!((delivery.call, &*delivery.host), (id, HOST));
    assert_eq!(
        (delivery.method.as_str(), &delivery.params),
        ("ping", &json!({"n": 1}))
    );
    assert_eq!(calls.call_timeout(id), Some(at(30_100)));
    calls
        .handle_answer(at(900), HOST, id, result("pong"))
        .unwrap();
    assert_eq!(settled(&drain(&mut calls)), [(id, Ok(result("pong")))]);
    assert_eq!((calls.call_count(), calls.poll_timeout()), (0, None));
}

#[test]
fn a_delivered_call_unanswered_by_its_deadline_settles_timeout() {
    let mut calls = relay(true);
    let id = calls.handle_call(at(0), call_req("a")).unwrap();
    drain(&mut calls);
    assert_eq!(calls.poll_timeout(), Some(at(30_000)));
    calls.handle_timeout(at(29_999));
    assert!(settled(&drain(&mut calls)).is_empty(), "early: a no-op");
    calls.handle_timeout(at(30_000));
    let out = settled(&drain(&mut calls));
    assert_eq!(out, [(id, Err(HostCallError::Timeout))]);
    let body = HostCallError::Timeout.error_body(HOST, &calls.config().timing);
    assert_eq!((body.code.as_str(), body.retry_after_ms), ("timeout", None));
}

#[test]
fn a_call_wakes_an_asleep_host_and_is_answered_once_it_attaches() {
    let mut calls = relay(false);
    let id = calls.handle_call(at(1_000), call_req("a")).unwrap();
    let out = drain(&mut calls);
    assert!(delivered(&out).is_empty(), "not before the host attaches");
    assert_eq!(states(&out), [HostState::Waking]);
    let beat = calls.handle_beat(at(10_000), HOST).unwrap();
    assert!(beat.needed, "the next heartbeat learns it is needed");
    assert_eq!(calls.poll_timeout(), Some(at(21_000)), "the wake bound");
    calls.handle_attached(at(14_000), HOST);
    let out = drain(&mut calls);
    assert_eq!(delivered(&out), [id]);
    assert_eq!(states(&out), [HostState::Ready]);
    // The deadline counts from the call's start, past the wake bound.
    assert_eq!(calls.poll_timeout(), Some(at(31_000)));
    calls
        .handle_answer(at(15_000), HOST, id, result("ok"))
        .unwrap();
    assert_eq!(settled(&drain(&mut calls)), [(id, Ok(result("ok")))]);
}

#[test]
fn a_host_that_does_not_wake_within_the_bound_settles_host_asleep() {
    let mut calls = relay(false);
    let id = calls.handle_call(at(0), call_req("a")).unwrap();
    drain(&mut calls);
    calls.handle_timeout(at(19_999));
    assert!(drain(&mut calls).is_empty());
    calls.handle_timeout(at(20_000));
    assert_eq!(
        settled(&drain(&mut calls)),
        [(id, Err(HostCallError::Asleep))]
    );
    let body = HostCallError::Asleep.error_body(HOST, &calls.config().timing);
    assert_eq!(body.code, "host_asleep");
    assert_eq!(body.retry_after_ms, Some(15_000), "one heartbeat interval");
    assert!(body.message.contains("20000 ms"), "{}", body.message);
    // A host attaching later finds nothing to deliver.
    calls.handle_attached(at(21_000), HOST);
    assert!(delivered(&drain(&mut calls)).is_empty());
}

#[test]
fn a_caller_past_its_share_is_refused_rate_limited_and_others_are_not() {
    let mut calls = relay(true);
    let share = max_calls_per_caller(calls.config().max_calls_per_host);
    let mine: Vec<CallId> = (0..share)
        .map(|_| calls.handle_call(at(0), call_req("a")).unwrap())
        .collect();
    let refused = calls.handle_call(at(0), call_req("a")).unwrap_err();
    assert_eq!(refused, HostCallError::CallerBusy);
    let body = refused.error_body(HOST, &calls.config().timing);
    assert_eq!(
        (body.code.as_str(), body.retry_after_ms),
        ("rate_limited", Some(1_000))
    );
    calls.handle_call(at(0), call_req("b")).unwrap();
    // One of its calls ends: its share has room again.
    calls
        .handle_answer(at(10), HOST, mine[0], result("x"))
        .unwrap();
    calls.handle_call(at(20), call_req("a")).unwrap();
}

#[test]
fn a_host_with_all_its_calls_is_refused_rate_limited() {
    let mut calls = HostCalls::new(HostCallsConfig::default().with_bounds(10, 4));
    calls.handle_beat(at(0), HOST).unwrap();
    for caller in ["a", "b", "c", "d"] {
        calls.handle_call(at(0), call_req(caller)).unwrap();
    }
    let refused = calls.handle_call(at(0), call_req("e")).unwrap_err();
    assert_eq!(
        (refused, refused.code()),
        (HostCallError::HostBusy, "rate_limited")
    );
}

#[test]
fn the_hosts_session_ending_settles_its_delivered_calls_host_lost() {
    let mut calls = relay(false);
    let id = calls.handle_call(at(0), call_req("a")).unwrap();
    calls.handle_attached(at(1_000), HOST);
    drain(&mut calls);
    calls.handle_detached(at(2_000), HOST);
    let out = drain(&mut calls);
    assert_eq!(settled(&out), [(id, Err(HostCallError::Lost))]);
    assert_eq!(HostCallError::Lost.code(), "host_lost");
    // A call made while the host is away waits for it, not lost.
    let next = calls.handle_call(at(3_000), call_req("a")).unwrap();
    assert!(drain(&mut calls)
        .iter()
        .all(|o| !matches!(o, HostCallOutput::Settled { .. })));
    calls.handle_attached(at(4_000), HOST);
    assert_eq!(delivered(&drain(&mut calls)), [next]);
}

#[test]
fn one_of_two_sessions_leaving_loses_nothing() {
    let mut calls = relay(true);
    calls.handle_attached(at(0), HOST);
    let id = calls.handle_call(at(0), call_req("a")).unwrap();
    calls.handle_detached(at(1_000), HOST);
    assert!(settled(&drain(&mut calls)).is_empty());
    calls
        .handle_answer(at(1_500), HOST, id, result("ok"))
        .unwrap();
}

#[test]
fn late_duplicate_foreign_and_unknown_answers_are_refused() {
    let mut calls = relay(true);
    calls.handle_beat(at(0), "pc-2").unwrap();
    let id = calls.handle_call(at(0), call_req("a")).unwrap();
    assert_eq!(
        calls.handle_answer(at(1), "pc-2", id, result("x")),
        Err(NoSuchCall(id)),
        "another host's call"
    );
    let unknown = CallId::from_u64(id.as_u64() + 100);
    assert_eq!(
        calls.handle_answer(at(1), HOST, unknown, result("x")),
        Err(NoSuchCall(unknown))
    );
    calls
        .handle_answer(at(2), HOST, id, result("first"))
        .unwrap();
    assert_eq!(
        calls.handle_answer(at(3), HOST, id, result("again")),
        Err(NoSuchCall(id))
    );
    let late = calls.handle_call(at(10), call_req("a")).unwrap();
    calls.handle_timeout(at(30_010));
    assert_eq!(
        calls.handle_answer(at(30_011), HOST, late, result("late")),
        Err(NoSuchCall(late))
    );
    let outcomes = settled(&drain(&mut calls));
    assert_eq!(
        outcomes,
        [
            (id, Ok(result("first"))),
            (late, Err(HostCallError::Timeout))
        ]
    );
}

#[test]
fn a_call_not_yet_delivered_cannot_be_answered() {
    let mut calls = relay(false);
    let id = calls.handle_call(at(0), call_req("a")).unwrap();
    assert_eq!(
        calls.handle_answer(at(1), HOST, id, result("x")),
        Err(NoSuchCall(id))
    );
}

#[test]
fn unknown_and_offline_hosts_are_refused_at_once() {
    let mut calls = relay(false);
    let unknown = calls.handle_call(at(0), CallRequest::new("nobody", "a", "m", json!(null)));
    assert_eq!(unknown.map_err(HostCallError::code), Err("not_found"));
    // Three intervals (45 s) without a heartbeat: offline, and announced.
    let offline = calls.handle_call(at(45_000), call_req("a")).unwrap_err();
    assert_eq!(
        (offline, offline.code()),
        (HostCallError::Offline, "host_offline")
    );
    assert_eq!(states(&drain(&mut calls)), [HostState::Offline]);
    assert_eq!(calls.call_count(), 0);
}

#[test]
fn a_caller_that_leaves_frees_its_slot_and_its_call_is_not_settled() {
    let mut calls = HostCalls::new(HostCallsConfig::default().with_bounds(10, 1));
    calls.handle_beat(at(0), HOST).unwrap();
    calls.handle_attached(at(0), HOST);
    let id = calls.handle_call(at(0), call_req("a")).unwrap();
    assert!(calls.handle_call(at(0), call_req("b")).is_err());
    drain(&mut calls);
    assert!(calls.handle_call_ended(at(5), id));
    assert!(!calls.handle_call_ended(at(6), id), "once");
    assert!(settled(&drain(&mut calls)).is_empty());
    assert_eq!(calls.poll_timeout(), None);
    calls.handle_call(at(7), call_req("b")).unwrap();
}

#[test]
fn a_host_is_needed_for_the_grace_after_its_last_call() {
    let mut calls = relay(true);
    let id = calls.handle_call(at(0), call_req("a")).unwrap();
    calls
        .handle_answer(at(1_000), HOST, id, result("ok"))
        .unwrap();
    calls.handle_detached(at(2_000), HOST);
    assert!(calls.handle_beat(at(60_999), HOST).unwrap().needed);
    let beat = calls.handle_beat(at(61_000), HOST).unwrap();
    assert_eq!((beat.needed, beat.state), (false, HostState::Asleep));
}

#[test]
fn a_full_table_forgets_offline_hosts_to_make_room() {
    let mut calls = HostCalls::new(HostCallsConfig::default().with_bounds(1, 4));
    calls.handle_beat(at(0), "old").unwrap();
    assert_eq!(calls.handle_beat(at(1_000), "new"), Err(RegistryFull));
    calls.handle_beat(at(45_000), "new").unwrap();
    assert_eq!(calls.host_count(), 1);
    let views: Vec<HostView> = calls.hosts(at(45_000)).collect();
    assert_eq!(&*views[0].host, "new");
}

#[test]
fn subscribers_before_the_first_heartbeat_count_once_it_registers() {
    let mut calls = HostCalls::new(HostCallsConfig::default());
    calls.handle_subscribed(at(0), HOST);
    let beat = calls.handle_beat(at(1), HOST).unwrap();
    assert_eq!((beat.needed, beat.state), (true, HostState::Waking));
    calls.handle_unsubscribed(at(2), HOST);
    assert_eq!(states(&drain(&mut calls)), [HostState::Asleep]);
}

#[test]
fn calls_are_numbered_from_the_configured_first_id() {
    let base = 7u64 << 32;
    let mut calls = HostCalls::new(HostCallsConfig::default().with_first_call_id(base));
    calls.handle_beat(at(0), HOST).unwrap();
    calls.handle_attached(at(0), HOST);
    let first = calls.handle_call(at(1), call_req("a")).unwrap();
    let second = calls.handle_call(at(2), call_req("b")).unwrap();
    assert_eq!(first, CallId::from_u64(base));
    assert_eq!(second, CallId::from_u64(base + 1));
    // Another node's numbering never names these calls.
    let other = HostCalls::new(HostCallsConfig::default().with_first_call_id(9u64 << 32));
    assert_ne!(other.config().first_call_id, base);
    let answer = calls.handle_answer(at(3), HOST, CallId::from_u64(9u64 << 32), result("x"));
    assert!(
        answer.is_err(),
        "an id from another node's range is no call here"
    );
}

fn elsewhere(attached: bool, needed: bool) -> SharedHost {
    SharedHost::new(
        Some(std::time::Duration::from_millis(500)),
        attached,
        needed,
    )
}

#[test]
fn a_host_beating_on_another_relay_is_known_here_and_its_call_waits() {
    let mut calls = HostCalls::new(HostCallsConfig::default());
    assert_eq!(
        calls.handle_call(at(0), call_req("a")),
        Err(HostCallError::UnknownHost)
    );
    calls
        .handle_shared(at(1_000), HOST, elsewhere(false, false))
        .unwrap();
    let call = calls.handle_call(at(1_000), call_req("a")).unwrap();
    let out = drain(&mut calls);
    assert!(delivered(&out).is_empty(), "asleep: the call waits");
    assert_eq!(states(&out), [HostState::Waking]);
    assert_eq!(calls.hosts_to_look_up(), [Arc::from(HOST)]);
    let (held, needed) = calls.hosts_held_and_needed(at(1_000));
    assert!(held.is_empty());
    assert_eq!(needed, [Arc::from(HOST)], "the waiting call needs it");
    assert_eq!(calls.call_timeout(call), Some(at(21_000)));
}

#[test]
fn a_session_held_on_another_relay_gets_the_waiting_calls_and_its_end_settles_them_lost() {
    let mut calls = HostCalls::new(HostCallsConfig::default());
    calls
        .handle_shared(at(0), HOST, elsewhere(false, false))
        .unwrap();
    let call = calls.handle_call(at(0), call_req("a")).unwrap();
    drain(&mut calls);
    calls
        .handle_shared(at(2_000), HOST, elsewhere(true, false))
        .unwrap();
    let out = drain(&mut calls);
    assert_eq!(delivered(&out), [call], "the broker carries it there");
    assert_eq!(states(&out), [HostState::Ready]);
    assert!(calls.is_attached(HOST));
    // The relay holding the session died (its lease ran out) or the
    // session ended there: the delivered call may have run.
    calls
        .handle_shared(at(3_000), HOST, elsewhere(false, false))
        .unwrap();
    let out = drain(&mut calls);
    assert_eq!(settled(&out), [(call, Err(HostCallError::Lost))]);
}

#[test]
fn a_relay_needing_the_host_makes_its_heartbeat_here_say_needed() {
    let mut calls = HostCalls::new(HostCallsConfig::default());
    assert!(!calls.handle_beat(at(0), HOST).unwrap().needed);
    calls
        .handle_shared(at(100), HOST, elsewhere(false, true))
        .unwrap();
    let beat = calls.handle_beat(at(100), HOST).unwrap();
    assert!(beat.needed, "another relay waits for it");
    assert_eq!(beat.state, HostState::Waking);
    let (_, needed_here) = calls.hosts_held_and_needed(at(100));
    assert!(needed_here.is_empty(), "not needed by this relay itself");
}

#[test]
fn a_local_session_is_not_undone_by_the_shared_view() {
    let mut calls = relay(true);
    let call = calls.handle_call(at(10), call_req("a")).unwrap();
    drain(&mut calls);
    calls
        .handle_shared(at(20), HOST, elsewhere(false, false))
        .unwrap();
    assert!(calls.is_attached(HOST));
    assert!(settled(&drain(&mut calls)).is_empty());
    assert!(calls.hosts_to_look_up().is_empty(), "held here");
    let (held, _) = calls.hosts_held_and_needed(at(20));
    assert_eq!(held, [Arc::from(HOST)]);
    assert_eq!(
        calls.call_timeout(call),
        Some(at(30_010)),
        "the answer deadline"
    );
}

#[test]
fn subscribers_of_a_host_that_beats_elsewhere_make_it_needed_for_the_others() {
    let mut calls = HostCalls::new(HostCallsConfig::default());
    calls.handle_subscribed(at(0), HOST);
    let (held, needed) = calls.hosts_held_and_needed(at(0));
    assert!(held.is_empty());
    assert_eq!(
        needed,
        [Arc::from(HOST)],
        "not registered here, still needed"
    );
    calls.handle_unsubscribed(at(1), HOST);
    assert!(calls.hosts_held_and_needed(at(1)).1.is_empty());
}

/// The view of a host held on relays `nodes` (none: held nowhere else).
fn held_on(nodes: &[&str]) -> SharedHost {
    elsewhere(false, false).held_on(nodes.iter().map(|n| Arc::from(*n)))
}

#[test]
fn a_call_delivered_to_a_relay_that_died_settles_lost_though_the_host_came_back_here() {
    let mut calls = HostCalls::new(HostCallsConfig::default());
    calls.handle_shared(at(0), HOST, held_on(&["b"])).unwrap();
    let on_b = calls.handle_call(at(0), call_req("a")).unwrap();
    assert_eq!(delivered(&drain(&mut calls)), [on_b]);
    // Relay b is killed; the host connects here before b's lease runs out.
    calls.handle_attached(at(500), HOST);
    let here = calls.handle_call(at(600), call_req("a")).unwrap();
    assert_eq!(delivered(&drain(&mut calls)), [here]);
    assert_eq!(
        calls.hosts_to_look_up(),
        [Arc::from(HOST)],
        "a call went to b: b is watched though the host is held here"
    );
    calls
        .handle_shared(at(1_000), HOST, held_on(&["b"]))
        .unwrap();
    assert!(settled(&drain(&mut calls)).is_empty(), "b still holds it");
    // b's lease ran out: its session never answers, and the one here
    // never saw that call.
    calls.handle_shared(at(4_000), HOST, held_on(&[])).unwrap();
    assert_eq!(
        settled(&drain(&mut calls)),
        [(on_b, Err(HostCallError::Lost))]
    );
    calls
        .handle_answer(at(4_100), HOST, here, result("ok"))
        .unwrap();
    assert!(calls.hosts_to_look_up().is_empty());
}

#[test]
fn a_call_answered_through_the_hosts_new_relay_before_the_old_lapses_is_not_lost() {
    let mut calls = HostCalls::new(HostCallsConfig::default());
    calls.handle_shared(at(0), HOST, held_on(&["b"])).unwrap();
    let id = calls.handle_call(at(0), call_req("a")).unwrap();
    drain(&mut calls);
    // The host worked on, reconnected here and answered on its new session.
    calls.handle_attached(at(500), HOST);
    calls
        .handle_answer(at(900), HOST, id, result("ok"))
        .unwrap();
    let out = drain(&mut calls);
    assert_eq!(settled(&out), [(id, Ok(result("ok")))]);
    calls.handle_shared(at(4_000), HOST, held_on(&[])).unwrap();
    assert!(settled(&drain(&mut calls)).is_empty());
}

#[test]
fn a_call_delivered_here_is_lost_when_the_session_here_goes_though_another_relay_holds_the_host() {
    let mut calls = relay(true);
    let id = calls.handle_call(at(10), call_req("a")).unwrap();
    assert_eq!(delivered(&drain(&mut calls)), [id]);
    // A session of the host on relay b, after the call went out.
    calls.handle_shared(at(20), HOST, held_on(&["b"])).unwrap();
    calls.handle_detached(at(30), HOST);
    assert_eq!(
        settled(&drain(&mut calls)),
        [(id, Err(HostCallError::Lost))]
    );
    assert!(calls.is_attached(HOST), "still held on b");
}

#[test]
fn a_view_that_names_no_relay_counts_as_one_unnamed_holder() {
    let view = elsewhere(true, false);
    assert_eq!(view.holding_relays(), [Arc::from("")]);
    assert!(elsewhere(false, false).holding_relays().is_empty());
    let named = elsewhere(false, false).held_on([Arc::from("b"), Arc::from("a"), Arc::from("b")]);
    assert!(named.attached_elsewhere);
    assert_eq!(named.holding_relays(), [Arc::from("a"), Arc::from("b")]);
}
