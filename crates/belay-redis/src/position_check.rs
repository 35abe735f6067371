//! The position check: now and then, every channel with live members on
//! this node is read in Redis (its epoch, its top offset, what it holds
//! after the members' lowest offset). A publication whose PUB/SUB message
//! never arrived, with no later one to show the gap, is delivered from the
//! history in order; one the history no longer holds, or an epoch that
//! changed (Redis lost the channel), ends the members with `unavailable`,
//! so their clients resubscribe and are told. Checks of one round run a
//! few at a time, so a node with many channels spreads its reads.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::stream::{self, StreamExt};

use crate::broker::{deliveries, Inner};

/// Channels read at once within one round.
const AT_ONCE: usize = 32;

/// Check every `every` until the broker is dropped.
pub(crate) async fn run(inner: Weak<Inner>, every: Duration) {
    let mut round = tokio::time::interval(every.max(Duration::from_millis(10)));
    round.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    round.tick().await;
    loop {
        round.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let positions = inner.hub.positions();
        stream::iter(positions)
            .for_each_concurrent(AT_ONCE, |(channel, lowest)| {
                let inner = Arc::clone(&inner);
                async move { check(&inner, &channel, lowest).await }
            })
            .await;
    }
}

/// Read `channel` after `lowest` and let the hub catch its members up.
async fn check(inner: &Inner, channel: &str, lowest: u64) {
    let read = match inner.history(channel, Some(lowest)).await {
        Ok(read) => read,
        // Redis is away: the PUB/SUB probe ends the members if it stays so.
        Err(error) => {
            tracing::debug!(channel, %error, "position check skipped");
            return;
        }
    };
    let missed = match deliveries(channel, &read.epoch, read.entries) {
        Ok(missed) => missed,
        Err(error) => {
            tracing::warn!(channel, %error, "position check: unreadable history");
            Vec::new()
        }
    };
    if !missed.is_empty() {
        tracing::debug!(
            channel,
            count = missed.len(),
            "publications caught up from history"
        );
    }
    inner
        .hub
        .catch_up(channel, &read.epoch, read.top, &missed, |interest| {
            inner.link.follow(channel, &interest)
        });
}
