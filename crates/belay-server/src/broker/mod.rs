//! Channels: publish from anywhere, subscribe with recovery.
//!
//! A [`Broker`] owns every channel's history and live fan-out. Subscribing is
//! atomic with respect to publishing: the recovery decision, the replay and
//! the registration of the subscriber's [`LiveSender`] happen under the
//! channel's lock, so a subscriber sees every offset after its position
//! exactly once, or is told `recovered: false`. Frames are encoded once per
//! publication and shared by every subscriber.
//!
//! **Bounded channels.** Under an authenticator that lets anyone subscribe
//! to any name, subscribing is a way to make the server create channels. So
//! a channel costs only what it holds: its history (if published on) and one
//! [`LiveSender`] per subscriber, with no per-channel buffer; a channel that
//! has no subscriber and no retained history is freed at once (when its last
//! subscriber leaves, or when its history expires and the next publication
//! or subscription looks at it); names are limited in length
//! ([`Limits::max_channel_len`](belay_proto::server::Limits::max_channel_len));
//! and a `subscribe` that would create a channel beyond
//! [`HistoryLimits::max_channels`] is refused
//! ([`SubscribeError::TooManyChannels`]: the client gets `unsubscribed`
//! `unavailable` and tries again later).
//!
//! **Publishing can be refused** ([`PublishError`]): a payload the clients
//! could not take (too large or nested too deeply), an invalid channel name,
//! or a broker that cannot accept publications right now.
//!
//! **Brokers that wait on a network.** A broker backed by a store another
//! process holds (Redis) cannot answer at once. [`Broker::publish`] returns
//! a future ([`Publishing`]; the memory broker's is ready when returned),
//! and [`Broker::subscribe`] may answer [`Joining::Later`]: the broker then
//! gives its answer through the subscriber's own [`LiveSender`]
//! ([`LiveSender::grant`] or [`LiveSender::refuse`]), ahead of the
//! subscription's first live frame, so the connection sees the replay and
//! the live publications in one order.

mod history;
mod listing;
mod live;
mod memory;
mod outcomes;
mod presence;

use std::future::Future;
use std::pin::Pin;

use belay_proto::message::{
    encode_publication_binary, encode_server, Codec, Publication, RawJson, ServerMessage,
    StreamPosition, Subscribed,
};
use belay_proto::server::ChannelNameError;
use bytes::Bytes;

pub use history::{HistoryError, HistoryFuture, HistoryPage, HistoryQuery};
pub use listing::{ChannelCount, ChannelList, ChannelQuery, ChannelTally, ListError};
pub use live::{Delivered, LiveSender, SubscriberId};
pub(crate) use live::{LiveInbox, LiveItem};
pub use memory::{HistoryLimits, MemoryBroker};
pub use outcomes::{OutcomeError, OutcomeFuture, OutcomeKey, OutcomeStore};
pub use presence::{Member, MemoryPresence, PresenceError, PresenceFuture, PresenceStore};

/// One publication, encoded once per codec for every subscriber
/// (spec/PROTOCOL.md §1.8: a subscriber's inbox takes the frame its
/// connection speaks).
#[derive(Debug, Clone)]
pub struct Delivery {
    /// Its offset within the channel's epoch.
    pub offset: u64,
    /// The `publication` frame, as JSON text.
    pub frame: Bytes,
    /// The same frame in the binary codec.
    pub binary: Bytes,
}

impl Delivery {
    /// `publication` as the frames every subscriber gets.
    pub fn encode(publication: &Publication) -> Delivery {
        Delivery {
            offset: publication.offset,
            frame: Bytes::from(encode_server(&ServerMessage::Publication(
                publication.clone(),
            ))),
            binary: Bytes::from(encode_publication_binary(publication)),
        }
    }

    /// The frame for a connection that speaks `codec`.
    pub fn frame_in(&self, codec: Codec) -> &Bytes {
        match codec {
            Codec::Binary => &self.binary,
            _ => &self.frame,
        }
    }
}

/// A subscription as the broker grants it.
#[derive(Debug)]
pub struct Subscription {
    /// The confirmation to send.
    pub subscribed: Subscribed,
    /// Missed publications, in order, to send before anything live.
    pub replay: Vec<Delivery>,
}

/// A broker's answer to [`Broker::subscribe`].
#[derive(Debug)]
#[non_exhaustive]
pub enum Joining {
    /// Answered now.
    Now(Result<Subscription, SubscribeError>),
    /// The broker answers later, exactly once, through the subscriber's
    /// [`LiveSender`] ([`LiveSender::grant`] or [`LiveSender::refuse`]),
    /// before any live frame of this subscription.
    Later,
}

impl From<Result<Subscription, SubscribeError>> for Joining {
    fn from(answer: Result<Subscription, SubscribeError>) -> Self {
        Joining::Now(answer)
    }
}

/// A publication on its way into a broker: resolves to the publication
/// (with its position) or to why it was refused. A caller that awaits each
/// publication before the next gets them in that order on the channel.
pub type Publishing = Pin<Box<dyn Future<Output = Result<Publication, PublishError>> + Send>>;

/// Why a subscription was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubscribeError {
    /// The channel does not exist and the broker holds as many channels as
    /// it may.
    #[error("too many channels")]
    TooManyChannels,
    /// The broker cannot take subscriptions now (its backing store is
    /// unreachable, the service behind the channel is down): the client
    /// gets `unsubscribed` `unavailable` with this reason and tries again
    /// later.
    #[error("broker unavailable: {0}")]
    Unavailable(String),
}

/// Why a publication was refused. Nothing was published: no offset was
/// taken and no subscriber saw it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The channel name is empty or too long.
    #[error("invalid channel name: {0}")]
    InvalidChannel(#[from] ChannelNameError),
    /// The encoded `publication` frame would be longer than subscribers
    /// accept.
    #[error("publication too large: {len} bytes, at most {max}")]
    TooLarge {
        /// Encoded length of the payload plus the frame around it.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The payload nests deeper than clients parse.
    #[error("payload nested {depth} deep, at most {max}")]
    TooDeep {
        /// The payload's depth.
        depth: usize,
        /// The limit.
        max: usize,
    },
    /// The broker cannot take publications now (for example, its backing
    /// store is unreachable); retry later.
    #[error("broker unavailable: {0}")]
    Unavailable(String),
}

impl From<belay_proto::server::PublicationRefused> for PublishError {
    fn from(refused: belay_proto::server::PublicationRefused) -> Self {
        use belay_proto::server::PublicationRefused as Refused;
        match refused {
            Refused::InvalidChannel(e) => PublishError::InvalidChannel(e),
            Refused::TooDeep { depth, max } => PublishError::TooDeep { depth, max },
            Refused::TooLarge { len, max } => PublishError::TooLarge { len, max },
        }
    }
}

/// Where channels live. The embedded [`MemoryBroker`] is the default; a
/// multi-node broker must keep the same promises about offsets and history.
pub trait Broker: Send + Sync + 'static {
    /// Append `data` to `channel` and fan it out to every subscriber's
    /// [`LiveSender`]; resolves to the publication. The server has checked
    /// the channel name and the payload before calling.
    fn publish(&self, channel: &str, data: RawJson) -> Publishing;

    /// Subscribe `live` to `channel`, resuming after `since` if given;
    /// refused when the channel would be one too many or the broker cannot
    /// serve it now. From the granted position on, the channel's
    /// publications go to `live`, until it is unsubscribed or the broker
    /// ends it ([`LiveSender::end`]).
    fn subscribe(&self, channel: &str, since: Option<&StreamPosition>, live: LiveSender)
        -> Joining;

    /// Stop delivering `channel` to `subscriber`; a channel left with no
    /// subscriber and no retained history is freed.
    fn unsubscribe(&self, channel: &str, subscriber: SubscriberId);

    /// Channels held now, if the broker knows (for `/metrics`).
    fn channels(&self) -> Option<usize> {
        None
    }

    /// Bytes of history held in this process now, if the broker knows (for
    /// `/metrics`). A broker that wraps another must forward this.
    fn history_bytes(&self) -> Option<usize> {
        None
    }

    /// Read `channel`'s retained history as `query` says, with its position
    /// now (a channel with no history: no publication, top offset 0); the
    /// default answers [`HistoryError::Unsupported`]. A broker that wraps
    /// another must forward this.
    fn history(&self, channel: &str, query: HistoryQuery) -> HistoryFuture {
        let _ = (channel, query);
        Box::pin(std::future::ready(Err(HistoryError::Unsupported)))
    }

    /// The channels this node's subscribers are on, with how many each, as
    /// `query` bounds them; the default answers [`ListError::Unsupported`].
    /// A broker that wraps another must forward this.
    fn list_channels(&self, query: &ChannelQuery) -> Result<ChannelList, ListError> {
        let _ = query;
        Err(ListError::Unsupported)
    }

    /// The idempotency store every node shares, for a broker that serves
    /// several nodes (see [`OutcomeStore`]); `None` (the default) keeps
    /// outcomes in each node's memory only. A broker that wraps another
    /// must forward this, or its cluster runs keyed requests once per node.
    fn outcomes(&self) -> Option<std::sync::Arc<dyn OutcomeStore>> {
        None
    }

    /// The presence store every node shares, for a broker that serves
    /// several nodes (see [`PresenceStore`]); `None` (the default) keeps
    /// members in this node's memory ([`MemoryPresence`], bounded by
    /// `ServerConfig::presence_max_bytes`). A broker that wraps another
    /// must forward this.
    fn presence(&self) -> Option<std::sync::Arc<dyn PresenceStore>> {
        None
    }
}
