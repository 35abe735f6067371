//! A subscription's join on the Redis broker: wait until Redis confirmed
//! the channel's PUB/SUB name (live publications are buffered for the
//! member from then on), read the history after the client's position, and
//! grant: the replay, then live, merged by offset under the hub's lock (see
//! [`crate::hub`]).

use belay_proto::message::{StreamPosition, Subscribed};
use belay_proto::server::{can_resume, HeldHistory};
use belay_server::broker::{LiveSender, Subscription};
use tokio::time::timeout;

use crate::broker::{deliveries, Inner};
use crate::hub::JoinFailure;

impl Inner {
    /// Subscribe the PUB/SUB name, read the history, grant.
    pub(crate) async fn join(
        &self,
        live: &LiveSender,
        since: Option<&StreamPosition>,
        confirmed: tokio::sync::oneshot::Receiver<Result<(), String>>,
    ) -> Result<(), String> {
        timeout(self.config().command_timeout, confirmed)
            .await
            .map_err(|_| "Redis did not confirm the subscription in time".to_string())?
            .map_err(|_| "the broker is shutting down".to_string())??;
        // Live publications are buffered for this member from here on, so
        // waiting for a permit loses nothing.
        let _reading = self
            .history_reads
            .acquire()
            .await
            .map_err(|_| "the broker is shutting down".to_string())?;
        let channel = live.channel().to_string();
        let read = self.history(&channel, since.map(|s| s.offset)).await?;
        let (_, history_age) = self.history_bounds(&channel);
        let max_age = u64::try_from(history_age.as_millis()).unwrap_or(u64::MAX);
        // Entries are in offset (and so in time) order: the fresh ones are
        // a suffix.
        let fresh: Vec<_> = read
            .entries
            .into_iter()
            .skip_while(|e| read.now_ms.saturating_sub(e.published_ms) >= max_age)
            .collect();
        let contiguous = fresh
            .windows(2)
            .all(|pair| pair[1].offset == pair[0].offset + 1)
            && fresh.last().map_or(true, |last| last.offset == read.top);
        let held = HeldHistory::new(&read.epoch, read.top, fresh.first().map(|e| e.offset));
        let recovered = contiguous && since.is_some_and(|since| can_resume(since, held));
        let (offset, replay) = match since {
            Some(since) if recovered => {
                let replay = deliveries(&channel, &read.epoch, fresh)?;
                (since.offset, replay)
            }
            _ => (read.top, Vec::new()),
        };
        let subscribed = Subscribed {
            channel: channel.clone(),
            epoch: read.epoch.clone(),
            offset,
            recovered,
        };
        self.hub
            .grant(
                &channel,
                live.id(),
                &read.epoch,
                offset,
                replay,
                |live, replay| {
                    live.grant(Subscription { subscribed, replay });
                },
            )
            .map_err(|failure| match failure {
                JoinFailure::Left => "left while joining".to_string(),
                JoinFailure::Overflowed => {
                    "too many publications while the subscription joined: try again".to_string()
                }
                JoinFailure::Inconsistent => {
                    "publications arrived out of order while joining: try again".to_string()
                }
            })
    }
}
