//! Live publications for the subscriptions of one connection, polled by the
//! connection's own task (no task per subscription).
//!
//! Each subscription is a stream over the channel's broadcast receiver that
//! skips offsets already sent (confirmation or replay) and ends after
//! reporting that it lagged; the connection holds them in one
//! [`SelectAll`], which polls only the subscriptions that were woken, and
//! ends one with its [`AbortHandle`] (unsubscribe, a replacing subscribe,
//! service down).

use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream::{self, AbortHandle, SelectAll, Stream};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use crate::broker::Delivery;

/// What a subscription yields.
pub(crate) enum Live {
    /// The next publication's frame.
    Frame(Bytes),
    /// Publications were skipped (the subscriber fell more than the live
    /// buffer behind); the subscription has ended.
    Lagged,
}

type LiveStream = Pin<Box<dyn Stream<Item = (Arc<str>, Live)> + Send>>;

/// The live side of a connection's subscriptions (allocated at the first).
#[derive(Default)]
pub(crate) struct Subscriptions(Option<SelectAll<LiveStream>>);

impl Subscriptions {
    /// Start delivering `channel` after offset `after`; the handle ends it.
    pub(crate) fn add(
        &mut self,
        channel: Arc<str>,
        after: u64,
        live: broadcast::Receiver<Arc<Delivery>>,
    ) -> AbortHandle {
        let deliveries = stream::unfold(Some((channel, after, live)), |state| async move {
            let (channel, mut after, mut live) = state?;
            loop {
                match live.recv().await {
                    Ok(delivery) if delivery.offset <= after => continue,
                    Ok(delivery) => {
                        after = delivery.offset;
                        let item = (Arc::clone(&channel), Live::Frame(delivery.frame.clone()));
                        return Some((item, Some((channel, after, live))));
                    }
                    // Never lose publications silently: the client
                    // resubscribes from its position and the history
                    // replays them (or says it cannot).
                    Err(RecvError::Lagged(_)) => return Some(((channel, Live::Lagged), None)),
                    Err(RecvError::Closed) => return None,
                }
            }
        });
        let (deliveries, handle) = stream::abortable(deliveries);
        self.0
            .get_or_insert_with(SelectAll::new)
            .push(Box::pin(deliveries));
        handle
    }

    /// A live item that is ready now, if any. (Polls with a no-op waker:
    /// the caller polls [`next`](Self::next) again before it waits, which
    /// registers its own waker again.)
    pub(crate) fn try_next(&mut self) -> Option<(Arc<str>, Live)> {
        use futures_util::FutureExt;
        self.next().now_or_never().flatten()
    }

    /// The next live item of any subscription; `None` at once if there are
    /// none (so a `select!` branch on it is disabled). Cancel-safe.
    pub(crate) async fn next(&mut self) -> Option<(Arc<str>, Live)> {
        use futures_util::StreamExt;
        match &mut self.0 {
            Some(all) if !all.is_empty() => all.next().await,
            _ => None,
        }
    }
}
