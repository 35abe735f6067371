//! A publication is checked against the longest frame it can make on
//! either codec, not a guessed envelope.

use serde_json::json;

use super::node_with;
use crate::message::{encode_server, Publication, RawJson, ServerMessage};
use crate::server::node::{max_publication_frame_len, NodeConfig, PublicationRefused};
use crate::server::{MAX_OFFSET, MAX_PAYLOAD_DEPTH};

#[test]
fn the_bound_covers_every_real_frame_of_the_publication() {
    let data = RawJson::from_value(&json!({"text": "hi \"there\"", "n": [1, 2, 3]}));
    let bound = max_publication_frame_len("chat:\"quoted\"", &data);
    let real = encode_server(&ServerMessage::Publication(Publication {
        channel: "chat:\"quoted\"".into(),
        epoch: "0123456789abcdef.ff".into(),
        offset: MAX_OFFSET,
        data: data.clone(),
    }));
    assert!(real.len() <= bound, "{} > {bound}", real.len());
    // Tight: the allowance is the epoch's only slack.
    assert!(bound - real.len() <= super::super::EPOCH_ALLOWANCE);
}

#[test]
fn a_publication_over_the_maximum_is_refused_too_large() {
    let mut config = NodeConfig::default();
    config.set_max_publication_len(200);
    let (node, _) = node_with(config, &[]);
    assert!(node.check_publication("c", &json!("x".repeat(10))).is_ok());
    let refused = node
        .check_publication("c", &json!("x".repeat(200)))
        .unwrap_err();
    assert!(matches!(
        refused,
        PublicationRefused::TooLarge { max: 200, .. }
    ));
    assert_eq!(refused.code(), "too_large");
}

#[test]
fn a_bad_channel_or_deep_data_is_a_bad_request() {
    let (node, _) = node_with(NodeConfig::default(), &[]);
    let empty = node.check_publication("", &json!(1)).unwrap_err();
    assert_eq!(empty.code(), "bad_request");
    let mut deep = json!(0);
    for _ in 0..=MAX_PAYLOAD_DEPTH {
        deep = json!([deep]);
    }
    let refused = node.check_publication("c", &deep).unwrap_err();
    assert!(matches!(refused, PublicationRefused::TooDeep { .. }));
    assert_eq!(refused.code(), "bad_request");
}
