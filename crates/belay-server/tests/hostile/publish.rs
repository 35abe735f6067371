//! Publishing can be refused, and says so: nothing is published.

use belay_server::broker::PublishError;
use belay_server::ServerConfig;
use serde_json::json;

use crate::server;

#[tokio::test]
async fn a_payload_clients_could_not_take_is_refused_and_takes_no_offset() {
    let server = server(ServerConfig::default().with_max_publication_len(1_024));
    let first = server.publish("news", json!(1)).await.expect("published");
    assert!(matches!(
        server.publish("news", json!("x".repeat(2_000))).await,
        Err(PublishError::TooLarge { max: 1_024, .. })
    ));
    let mut deep = json!(0);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    assert!(matches!(
        server.publish("news", deep).await,
        Err(PublishError::TooDeep { depth: 200, .. })
    ));
    assert!(matches!(
        server.publish(&"c".repeat(300), json!(1)).await,
        Err(PublishError::InvalidChannel(_))
    ));
    assert!(matches!(
        server.publish("", json!(1)).await,
        Err(PublishError::InvalidChannel(_))
    ));
    let next = server.publish("news", json!(2)).await.expect("published");
    assert_eq!(next.offset, first.offset + 1, "refusals took no offset");
}
