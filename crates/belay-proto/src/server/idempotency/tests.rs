//! Tests of `idempotency`.

use serde_json::json;

use super::*;

fn ms(v: u64) -> Instant {
    Instant::from_millis(v)
}

fn cache() -> IdempotencyCache {
    IdempotencyCache::new(Duration::from_secs(60), 100)
}

fn ok(v: u64) -> Reply {
    Reply::Result(json!(v).into())
}

#[test]
fn a_new_key_runs_once_and_a_retry_gets_the_stored_reply() {
    let mut cache = cache();
    assert_eq!(cache.begin(ms(0), "alice", "k1", 0), Begin::New);
    cache.complete(ms(10), "alice", "k1", &ok(1));
    assert_eq!(cache.begin(ms(20), "alice", "k1", 0), Begin::Done(ok(1)));
    assert_eq!(cache.len(), 1);
}

#[test]
fn a_retry_while_the_first_execution_runs_is_in_flight() {
    let mut cache = cache();
    assert_eq!(cache.begin(ms(0), "alice", "k1", 0), Begin::New);
    assert_eq!(cache.begin(ms(5), "alice", "k1", 0), Begin::InFlight);
    assert_eq!(cache.in_flight(), 1);
}

#[test]
fn the_same_key_from_another_scope_is_a_different_request() {
    let mut cache = cache();
    assert_eq!(cache.begin(ms(0), "alice", "k1", 0), Begin::New);
    cache.complete(ms(1), "alice", "k1", &ok(1));
    assert_eq!(cache.begin(ms(2), "bob", "k1", 0), Begin::New);
}

#[test]
fn a_method_error_is_stored_like_a_result() {
    let mut cache = cache();
    let error = Reply::Error(ErrorBody::new("not_found", "no such order"));
    assert_eq!(cache.begin(ms(0), "alice", "k1", 0), Begin::New);
    cache.complete(ms(1), "alice", "k1", &error.clone());
    assert_eq!(cache.begin(ms(2), "alice", "k1", 0), Begin::Done(error));
}

#[test]
fn an_abandoned_key_runs_again_on_retry() {
    let mut cache = cache();
    assert_eq!(cache.begin(ms(0), "alice", "k1", 0), Begin::New);
    cache.abandon("alice", "k1");
    assert!(cache.is_empty());
    assert_eq!(cache.begin(ms(1), "alice", "k1", 0), Begin::New);
}

#[test]
fn abandon_never_forgets_a_completed_outcome() {
    let mut cache = cache();
    cache.begin(ms(0), "alice", "k1", 0);
    cache.complete(ms(1), "alice", "k1", &ok(1));
    cache.abandon("alice", "k1");
    assert_eq!(cache.begin(ms(2), "alice", "k1", 0), Begin::Done(ok(1)));
}

#[test]
fn a_completed_outcome_expires_exactly_retention_after_completion() {
    let mut cache = cache();
    cache.begin(ms(0), "alice", "k1", 0);
    cache.complete(ms(5_000), "alice", "k1", &ok(1));
    assert_eq!(cache.poll_timeout(), Some(ms(65_000)));
    assert_eq!(
        cache.begin(ms(64_999), "alice", "k1", 0),
        Begin::Done(ok(1))
    );
    assert_eq!(cache.begin(ms(65_000), "alice", "k1", 0), Begin::New);
}

#[test]
fn an_in_flight_entry_expires_after_the_in_flight_limit() {
    let mut cache = cache();
    cache.set_in_flight_limit(Duration::from_secs(30));
    cache.begin(ms(0), "alice", "k1", 0);
    assert_eq!(cache.poll_timeout(), Some(ms(30_000)));
    assert_eq!(cache.begin(ms(29_999), "alice", "k1", 0), Begin::InFlight);
    cache.prune(ms(30_000));
    assert!(cache.is_empty());
}

#[test]
fn the_first_reply_wins_over_a_late_second_completion() {
    let mut cache = cache();
    cache.begin(ms(0), "alice", "k1", 0);
    cache.complete(ms(1), "alice", "k1", &ok(1));
    cache.complete(ms(2), "alice", "k1", &ok(2));
    assert_eq!(cache.begin(ms(3), "alice", "k1", 0), Begin::Done(ok(1)));
}

#[test]
fn a_completion_after_the_in_flight_entry_expired_is_still_stored() {
    let mut cache = cache();
    cache.set_in_flight_limit(Duration::from_secs(1));
    cache.begin(ms(0), "alice", "k1", 0);
    cache.complete(ms(5_000), "alice", "k1", &ok(1));
    assert_eq!(cache.begin(ms(6_000), "alice", "k1", 0), Begin::Done(ok(1)));
}

#[test]
fn a_full_cache_evicts_the_oldest_completed_entry_first() {
    let mut cache = IdempotencyCache::new(Duration::from_secs(60), 3);
    for (i, key) in ["a", "b"].into_iter().enumerate() {
        cache.begin(ms(i as u64), "u", key, 0);
        cache.complete(ms(i as u64), "u", key, &ok(i as u64));
    }
    assert_eq!(cache.begin(ms(10), "u", "running", 0), Begin::New);
    assert_eq!(cache.begin(ms(11), "u", "c", 0), Begin::New);
    assert_eq!(cache.len(), 3);
    // "a" was the oldest completed entry; "b" and the in-flight one stay.
    assert_eq!(cache.begin(ms(12), "u", "b", 0), Begin::Done(ok(1)));
    assert_eq!(cache.begin(ms(12), "u", "running", 0), Begin::InFlight);
    assert_eq!(cache.begin(ms(12), "u", "c", 0), Begin::InFlight);
}

#[test]
fn eviction_order_follows_completion_not_begin() {
    let mut cache = IdempotencyCache::new(Duration::from_secs(60), 2);
    cache.begin(ms(0), "u", "early", 0);
    cache.begin(ms(1), "u", "late", 0);
    cache.complete(ms(2), "u", "late", &ok(2));
    cache.complete(ms(3), "u", "early", &ok(1));
    assert_eq!(cache.begin(ms(4), "u", "new", 0), Begin::New);
    assert_eq!(cache.begin(ms(5), "u", "early", 0), Begin::Done(ok(1)));
}

#[test]
fn a_cache_full_of_in_flight_entries_refuses_without_evicting_any() {
    let mut cache = IdempotencyCache::new(Duration::from_secs(60), 2);
    assert_eq!(cache.begin(ms(0), "u", "a", 0), Begin::New);
    assert_eq!(cache.begin(ms(0), "u", "b", 0), Begin::New);
    assert_eq!(cache.begin(ms(1), "u", "c", 0), Begin::Full);
    assert_eq!(cache.begin(ms(1), "u", "a", 0), Begin::InFlight);
    assert_eq!(cache.begin(ms(1), "u", "b", 0), Begin::InFlight);
    assert_eq!(cache.len(), 2);
}

#[test]
fn a_completion_for_an_unknown_key_is_dropped_when_full_of_in_flight_entries() {
    let mut cache = IdempotencyCache::new(Duration::from_secs(60), 1);
    cache.begin(ms(0), "u", "a", 0);
    cache.complete(ms(1), "u", "ghost", &ok(9));
    assert_eq!(cache.len(), 1);
    assert_eq!(cache.begin(ms(2), "u", "a", 0), Begin::InFlight);
}

#[test]
fn zero_max_entries_still_holds_one_key() {
    let mut cache = IdempotencyCache::new(Duration::from_secs(60), 0);
    assert_eq!(cache.max_entries(), 1);
    assert_eq!(cache.begin(ms(0), "u", "a", 0), Begin::New);
    assert_eq!(cache.begin(ms(0), "u", "b", 0), Begin::Full);
}

#[test]
fn an_earlier_now_is_clamped_and_does_not_extend_retention() {
    let mut cache = cache();
    cache.begin(ms(100_000), "u", "a", 0);
    cache.complete(ms(0), "u", "a", &ok(1));
    assert_eq!(cache.poll_timeout(), Some(ms(160_000)));
    assert_eq!(cache.begin(ms(160_000), "u", "a", 0), Begin::New);
}

#[test]
fn prune_releases_everything_once_expired() {
    let mut cache = cache();
    for i in 0..50 {
        let key = format!("k{i}");
        cache.begin(ms(i), "u", &key, 0);
        cache.complete(ms(i), "u", &key, &ok(i));
    }
    cache.prune(ms(60_049));
    assert!(cache.is_empty());
    assert_eq!(cache.poll_timeout(), None);
}
