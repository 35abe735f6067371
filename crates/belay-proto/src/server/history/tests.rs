//! The channel log's rules: bounds in count, age and bytes, and what a
//! resume gets.

use serde_json::json;

use super::*;

fn ms(v: u64) -> Instant {
    Instant::from_millis(v)
}

fn log(max_len: usize, max_age: Duration) -> ChannelLog {
    ChannelLog::new("prices", "e1", max_len, max_age)
}

fn at(epoch: &str, offset: u64) -> StreamPosition {
    StreamPosition {
        epoch: epoch.into(),
        offset,
    }
}

fn publish_n(log: &mut ChannelLog, n: u64, now: Instant) {
    for i in 0..n {
        log.publish(now, json!(i).into());
    }
}

fn offsets(recovery: &Recovery) -> Vec<u64> {
    recovery.replay.iter().map(|p| p.offset).collect()
}

#[test]
fn held_lists_what_is_kept_oldest_first_after_pruning_by_age() {
    let mut log = log(3, Duration::from_millis(100));
    publish_n(&mut log, 2, ms(0));
    publish_n(&mut log, 3, ms(50));
    let held: Vec<u64> = log.held(ms(60)).map(|(offset, _)| offset).collect();
    assert_eq!(held, [3, 4, 5], "bounded by length");
    let newest = log
        .held(ms(60))
        .next_back()
        .map(|(o, d)| (o, d.get().to_owned()));
    assert_eq!(newest, Some((5, "2".to_owned())));
    assert_eq!(log.held(ms(150)).count(), 0, "aged out");
    assert_eq!(log.top(), 5);
}

#[test]
fn the_byte_bound_drops_the_oldest_and_a_resume_past_them_is_not_recovered() {
    // Each entry: 5 bytes of data ("abc" quoted) and the entry itself.
    let size = 5 + std::mem::size_of::<Entry>();
    let mut log = log(100, Duration::MAX).with_max_bytes(3 * size);
    for _ in 0..5 {
        log.publish(ms(0), json!("abc").into());
    }
    assert_eq!((log.len(), log.bytes()), (3, 3 * size));
    assert!(!log.recover(ms(0), Some(&at("e1", 1))).subscribed.recovered);
    assert_eq!(
        offsets(&log.recover(ms(0), Some(&at("e1", 2)))),
        vec![3, 4, 5]
    );
    // One publication over the bound alone: nothing older can stay.
    log.publish(ms(0), json!("x".repeat(4 * size)).into());
    assert_eq!((log.len(), log.bytes()), (0, 0));
    assert!(log.recover(ms(0), Some(&at("e1", 6))).subscribed.recovered);
    log.evict_through(6);
    assert_eq!(log.top(), 6);
}

#[test]
fn offsets_are_consecutive_from_one() {
    let mut log = log(10, Duration::MAX);
    let p1 = log.publish(ms(0), json!("a").into());
    let p2 = log.publish(ms(1), json!("b").into());
    assert_eq!((p1.offset, p2.offset), (1, 2));
    assert_eq!(p2.channel, "prices");
    assert_eq!(p2.epoch, "e1");
    assert_eq!(p2.data, json!("b"));
    assert_eq!(log.top(), 2);
}

#[test]
fn a_first_subscribe_starts_at_the_top_without_replay() {
    let mut log = log(10, Duration::MAX);
    publish_n(&mut log, 3, ms(0));
    let recovery = log.recover(ms(0), None);
    assert_eq!(
        recovery.subscribed,
        Subscribed {
            channel: "prices".into(),
            epoch: "e1".into(),
            offset: 3,
            recovered: false,
        }
    );
    assert!(recovery.replay.is_empty());
}

#[test]
fn a_first_subscribe_to_an_empty_channel_is_at_offset_zero() {
    let mut log = log(10, Duration::MAX);
    let recovery = log.recover(ms(0), None);
    assert_eq!(recovery.subscribed.offset, 0);
    assert!(!recovery.subscribed.recovered);
}

#[test]
fn a_resume_within_history_replays_everything_after_since_in_order() {
    let mut log = log(10, Duration::MAX);
    publish_n(&mut log, 7, ms(0));
    let recovery = log.recover(ms(0), Some(&at("e1", 4)));
    assert_eq!(recovery.subscribed.offset, 4);
    assert!(recovery.subscribed.recovered);
    assert_eq!(offsets(&recovery), vec![5, 6, 7]);
    assert_eq!(recovery.replay[0].data, json!(4));
}

#[test]
fn a_resume_at_the_top_recovers_with_nothing_to_replay() {
    let mut log = log(0, Duration::MAX);
    publish_n(&mut log, 5, ms(0));
    let recovery = log.recover(ms(0), Some(&at("e1", 5)));
    assert!(recovery.subscribed.recovered);
    assert_eq!(recovery.subscribed.offset, 5);
    assert!(recovery.replay.is_empty());
}

#[test]
fn a_resume_from_zero_recovers_while_the_first_publication_is_held() {
    let mut log = log(10, Duration::MAX);
    publish_n(&mut log, 3, ms(0));
    let recovery = log.recover(ms(0), Some(&at("e1", 0)));
    assert!(recovery.subscribed.recovered);
    assert_eq!(offsets(&recovery), vec![1, 2, 3]);
}

#[test]
fn a_resume_in_another_epoch_fails_without_replay() {
    let mut log = log(10, Duration::MAX);
    publish_n(&mut log, 3, ms(0));
    let recovery = log.recover(ms(0), Some(&at("e0", 1)));
    assert_eq!(recovery.subscribed.epoch, "e1");
    assert_eq!(recovery.subscribed.offset, 3);
    assert!(!recovery.subscribed.recovered);
    assert!(recovery.replay.is_empty());
}

#[test]
fn a_resume_beyond_the_top_fails_without_replay() {
    let mut log = log(10, Duration::MAX);
    publish_n(&mut log, 3, ms(0));
    let recovery = log.recover(ms(0), Some(&at("e1", 4)));
    assert_eq!(recovery.subscribed.offset, 3);
    assert!(!recovery.subscribed.recovered);
    assert!(recovery.replay.is_empty());
}

#[test]
fn history_pruned_by_length_past_since_fails_without_a_partial_replay() {
    let mut log = log(3, Duration::MAX);
    publish_n(&mut log, 6, ms(0));
    assert_eq!(log.oldest_offset(), Some(4));
    // 3 is still replayable from: 4, 5, 6 are held.
    let ok = log.recover(ms(0), Some(&at("e1", 3)));
    assert!(ok.subscribed.recovered);
    assert_eq!(offsets(&ok), vec![4, 5, 6]);
    // From 2, publication 3 is gone: nothing at all is replayed.
    let lost = log.recover(ms(0), Some(&at("e1", 2)));
    assert!(!lost.subscribed.recovered);
    assert_eq!(lost.subscribed.offset, 6);
    assert!(lost.replay.is_empty());
}

#[test]
fn history_pruned_by_age_past_since_fails_without_a_partial_replay() {
    let mut log = log(100, Duration::from_secs(60));
    log.publish(ms(0), json!(1).into());
    log.publish(ms(30_000), json!(2).into());
    log.publish(ms(59_000), json!(3).into());
    // At 60 s publication 1 has aged out.
    let lost = log.recover(ms(60_000), Some(&at("e1", 0)));
    assert!(!lost.subscribed.recovered);
    assert!(lost.replay.is_empty());
    assert_eq!(log.oldest_offset(), Some(2));
    let ok = log.recover(ms(60_000), Some(&at("e1", 1)));
    assert_eq!(offsets(&ok), vec![2, 3]);
}

#[test]
fn an_entry_ages_out_at_exactly_max_age() {
    let mut log = log(100, Duration::from_secs(60));
    log.publish(ms(1_000), json!(1).into());
    assert_eq!(log.poll_timeout(), Some(ms(61_000)));
    log.prune(ms(60_999));
    assert_eq!(log.len(), 1);
    log.prune(ms(61_000));
    assert!(log.is_empty());
    assert_eq!(log.poll_timeout(), None);
    assert_eq!(log.top(), 1, "pruning never changes the top");
}

#[test]
fn memory_stays_within_max_len() {
    let mut log = log(5, Duration::MAX);
    for i in 0..1_000 {
        log.publish(ms(i), json!(i).into());
        assert!(log.len() <= 5);
    }
    assert_eq!(log.oldest_offset(), Some(996));
}

#[test]
fn zero_max_len_keeps_no_history() {
    let mut log = log(0, Duration::MAX);
    publish_n(&mut log, 3, ms(0));
    assert!(log.is_empty());
    assert_eq!(log.oldest_offset(), None);
    assert!(!log.recover(ms(0), Some(&at("e1", 2))).subscribed.recovered);
}

#[test]
fn a_publish_with_an_earlier_now_is_stamped_at_the_latest_now() {
    let mut log = log(10, Duration::from_secs(10));
    log.publish(ms(20_000), json!(1).into());
    log.publish(ms(5_000), json!(2).into());
    log.prune(ms(29_999));
    assert_eq!(log.len(), 2);
    log.prune(ms(30_000));
    assert!(log.is_empty());
}

#[test]
fn passing_the_largest_safe_offset_starts_a_new_epoch() {
    let mut log = log(10, Duration::MAX);
    log.top = MAX_OFFSET - 1;
    let last = log.publish(ms(0), json!("last").into());
    assert_eq!((last.epoch.as_str(), last.offset), ("e1", MAX_OFFSET));
    let next = log.publish(ms(0), json!("next").into());
    assert_eq!((next.epoch.as_str(), next.offset), ("e1+", 1));
    assert_eq!(log.len(), 1);
    let stale = log.recover(ms(0), Some(&at("e1", MAX_OFFSET)));
    assert!(!stale.subscribed.recovered);
    assert_eq!(log.position(), at("e1+", 1));
}
