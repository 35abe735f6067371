//! The delivery check rejects what it must.

use super::*;
use crate::{Config, Instant};

/// A session that wants no channel.
fn session() -> Session {
    Session::new(Config::default(), Instant::ZERO, 0)
}

fn position(epoch: &str, offset: u64) -> StreamPosition {
    StreamPosition {
        epoch: epoch.into(),
        offset,
    }
}

/// A record whose `news` was confirmed at (a, 3).
fn confirmed_at_a3() -> Streams {
    let mut streams = Streams::default();
    streams.channels.insert(
        "news".into(),
        Channel {
            base: Some(position("a", 3)),
            ..Channel::default()
        },
    );
    streams
}

#[test]
fn the_delivery_check_rejects_skips_repeats_epoch_changes_and_strangers() {
    let mut driver = confirmed_at_a3();
    assert!(driver
        .deliver("news", position("a", 5), &session())
        .unwrap_err()
        .contains("skipped"));
    assert!(driver
        .deliver("news", position("a", 3), &session())
        .unwrap_err()
        .contains("repeated"));
    assert!(driver
        .deliver("news", position("b", 4), &session())
        .unwrap_err()
        .contains("epoch"));
    assert!(driver
        .deliver("feed", position("a", 1), &session())
        .unwrap_err()
        .contains("not wanted"));
    driver
        .deliver("news", position("a", 4), &session())
        .expect("the next offset");
    driver
        .deliver("news", position("a", 5), &session())
        .expect("the next offset");

    let mut driver = Streams::default();
    driver.channels.insert("news".into(), Channel::default());
    assert!(driver
        .deliver("news", position("a", 1), &session())
        .unwrap_err()
        .contains("before it was ever confirmed"));
}

#[test]
fn an_announced_gap_allows_a_jump_but_not_a_replay() {
    let mut driver = confirmed_at_a3();
    driver
        .deliver("news", position("a", 4), &session())
        .expect("the next offset");
    // RecoveryFailed: the next delivery may start anywhere...
    driver.channels.get_mut("news").unwrap().rebase = true;
    driver
        .deliver("news", position("a", 9), &session())
        .expect("after an announced gap");
    driver
        .deliver("news", position("a", 10), &session())
        .expect("the next offset");
    // ... but not at an offset already delivered in that epoch.
    driver.channels.get_mut("news").unwrap().rebase = true;
    assert!(driver
        .deliver("news", position("a", 4), &session())
        .unwrap_err()
        .contains("second time"));
    // In another epoch the record starts over.
    driver.channels.get_mut("news").unwrap().rebase = true;
    driver
        .deliver("news", position("b", 4), &session())
        .expect("a new epoch");
}
