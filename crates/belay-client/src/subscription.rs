//! A channel subscription as a stream of publications.

use std::pin::Pin;
use std::task::{Context, Poll};

use belay_proto::message::Publication;
use futures_util::Stream;
use tokio::sync::mpsc;

use crate::driver::Command;

/// What a [`Subscription`] yields.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Item {
    /// The next publication, in offset order, with no gap and no duplicate,
    /// across reconnects.
    Publication(Publication),
    /// The server could not replay what was missed: publications were lost
    /// and the application must resync this channel from a snapshot.
    /// Publications that follow continue from the server's current position.
    Resync,
    /// The server refused the subscription for good (its code, e.g.
    /// `forbidden`); nothing more will arrive.
    Refused {
        /// The server's code ([`ErrorCode::Other`](crate::ErrorCode::Other)
        /// for one this client does not know).
        code: crate::ErrorCode,
    },
}

/// A subscription to one channel: a [`Stream`] of [`Item`]s that ends when
/// the client stops. Dropping it unsubscribes.
///
/// Items are buffered without bound between the connection task and this
/// stream, so the connection is never blocked by a slow consumer; read it.
#[derive(Debug)]
pub struct Subscription {
    channel: String,
    // Tells this subscription apart from a later one to the same channel.
    id: u64,
    items: mpsc::UnboundedReceiver<Item>,
    // Weak, so that a live subscription does not keep a dropped client running.
    commands: mpsc::WeakUnboundedSender<Command>,
}

impl Subscription {
    pub(crate) fn new(
        channel: String,
        id: u64,
        items: mpsc::UnboundedReceiver<Item>,
        commands: mpsc::WeakUnboundedSender<Command>,
    ) -> Self {
        Subscription {
            channel,
            id,
            items,
            commands,
        }
    }

    /// The channel's name.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The next item; `None` once the client has stopped.
    pub async fn next(&mut self) -> Option<Item> {
        self.items.recv().await
    }
}

impl Stream for Subscription {
    type Item = Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        self.items.poll_recv(cx)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(commands) = self.commands.upgrade() {
            // The client may be closing; then there is nothing to unsubscribe from.
            let _ = commands.send(Command::Unsubscribe {
                channel: std::mem::take(&mut self.channel),
                id: self.id,
            });
        }
    }
}
