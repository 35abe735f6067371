//! The size check of a publication, before the broker is asked: the
//! longest frame it can make on either codec must fit the configured
//! maximum, so every subscriber can take it.

use crate::message::{
    encode_publication_binary, encode_server, Publication, RawJson, ServerMessage,
};
use crate::server::{
    check_channel_name, payload_depth, ChannelNameError, MAX_OFFSET, MAX_PAYLOAD_DEPTH,
};

use super::Node;

/// The longest epoch a broker makes, in bytes; the size check counts a
/// publication's frame with an epoch this long.
pub const EPOCH_ALLOWANCE: usize = 64;

/// Why a publication is refused before the broker is asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
// Exhaustive on purpose: every driver maps each refusal to its own error,
// and a new refusal must break the drivers' build until they do.
#[allow(clippy::exhaustive_enums)]
pub enum PublicationRefused {
    /// The channel name is empty, too long or malformed (`bad_request`).
    #[error(transparent)]
    InvalidChannel(#[from] ChannelNameError),
    /// The data nests deeper than clients parse (`bad_request`).
    #[error("data nests {depth} levels deep; at most {max}")]
    TooDeep {
        /// Its depth.
        depth: usize,
        /// The most allowed.
        max: usize,
    },
    /// Its frame would be longer than the maximum (`too_large`).
    #[error("publication frame of up to {len} bytes; at most {max}")]
    TooLarge {
        /// The longest frame it can make.
        len: usize,
        /// The most allowed.
        max: usize,
    },
}

impl PublicationRefused {
    /// The error code a request that asked for it answers.
    pub fn code(&self) -> &'static str {
        match self {
            PublicationRefused::TooLarge { .. } => "too_large",
            PublicationRefused::InvalidChannel(_) | PublicationRefused::TooDeep { .. } => {
                "bad_request"
            }
        }
    }
}

/// The longest frame a publication of `data` (as JSON) on `channel` makes,
/// on the JSON codec or the binary one, with any offset and an epoch of up
/// to [`EPOCH_ALLOWANCE`] bytes.
pub fn max_publication_frame_len(channel: &str, data: &RawJson) -> usize {
    let envelope = Publication {
        channel: channel.to_owned(),
        epoch: "e".repeat(EPOCH_ALLOWANCE),
        offset: MAX_OFFSET,
        data: RawJson::from_value(&serde_json::Value::Null),
    };
    let placeholder = envelope.data.get().len();
    let json = encode_server(&ServerMessage::Publication(envelope.clone())).len();
    let binary = encode_publication_binary(&envelope).len();
    json.max(binary)
        .saturating_sub(placeholder)
        .saturating_add(data.get().len())
}

impl Node {
    /// `data` for `channel` as the broker takes it (JSON text), or why it is
    /// refused: a bad channel name, data nested too deep, or a frame longer
    /// than [`NodeConfig::max_publication_len`](super::NodeConfig::max_publication_len).
    pub fn check_publication(
        &self,
        channel: &str,
        data: &crate::message::Payload,
    ) -> Result<RawJson, PublicationRefused> {
        check_channel_name(channel, self.config.max_channel_len())?;
        let depth = payload_depth(data);
        if depth > MAX_PAYLOAD_DEPTH {
            return Err(PublicationRefused::TooDeep {
                depth,
                max: MAX_PAYLOAD_DEPTH,
            });
        }
        let data = RawJson::from_value(data);
        let len = max_publication_frame_len(channel, &data);
        let max = self.config.max_publication_len();
        if len > max {
            return Err(PublicationRefused::TooLarge { len, max });
        }
        Ok(data)
    }
}
