//! `$publish` (spec/PROTOCOL.md §4.6): params `{"channel": "...", "data":
//! <json>}`, result `{"offset": N, "epoch": "..."}`.

use serde::{Deserialize, Serialize};

use crate::message::Payload;

/// `$publish` params: publish `data` to `channel` from the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PublishParams {
    /// The channel.
    pub channel: String,
    /// The publication's data.
    pub data: Payload,
}

impl PublishParams {
    /// Publish `data` to `channel`.
    pub fn new(channel: impl Into<String>, data: Payload) -> Self {
        PublishParams {
            channel: channel.into(),
            data,
        }
    }
}

/// `$publish` result: where the publication landed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PublishResult {
    /// Its offset in the channel.
    pub offset: u64,
    /// The channel's epoch.
    pub epoch: String,
}

impl PublishResult {
    /// A publication at `offset` in `epoch`.
    pub fn new(offset: u64, epoch: impl Into<String>) -> Self {
        PublishResult {
            offset,
            epoch: epoch.into(),
        }
    }
}
