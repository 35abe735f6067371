//! Message builders the subscription and stream-position scenarios share.

use belay_proto::message::{Publication, ServerMessage, Subscribed};
use serde_json::json;

pub(crate) fn subscribed(channel: &str, offset: u64, recovered: bool) -> ServerMessage {
    ServerMessage::Subscribed(Subscribed {
        channel: channel.into(),
        epoch: "e1".into(),
        offset,
        recovered,
    })
}

pub(crate) fn publication(channel: &str, offset: u64) -> ServerMessage {
    ServerMessage::Publication(Publication {
        channel: channel.into(),
        epoch: "e1".into(),
        offset,
        data: json!(offset).into(),
    })
}
