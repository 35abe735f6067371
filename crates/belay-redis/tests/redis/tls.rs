//! Redis over TLS (`rediss://`): a broker that trusts the CA reaches a
//! TLS-only redis-server and serves a channel through it; one that does
//! not trust it is refused at connect with a clear error.

use crate::common::{node, publications, subscribe, Raw};
use belay_proto::message::ServerMessage;
use belay_redis::{ConnectError, RedisBroker, RedisConfig};
use belay_test_support::services::{RedisServer, RedisTls};
use serde_json::json;

/// A self-signed certificate for `localhost`, written where redis-server
/// reads it; returns the files and the certificate's PEM (the client's CA).
fn certificate(dir: &std::path::Path) -> (RedisTls, String) {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("a certificate");
    std::fs::create_dir_all(dir).expect("dir");
    let (cert, key) = (dir.join("redis.crt"), dir.join("redis.key"));
    let pem = certified.cert.pem();
    std::fs::write(&cert, &pem).expect("write cert");
    std::fs::write(&key, certified.signing_key.serialize_pem()).expect("write key");
    let tls = RedisTls {
        cert: cert.clone(),
        key,
        ca: cert,
    };
    (tls, pem)
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("belay-redis-tls-{name}-{}", std::process::id()))
}

#[tokio::test]
async fn a_broker_that_trusts_the_ca_serves_channels_over_tls() {
    let dir = temp_dir("trusted");
    let (tls, ca) = certificate(&dir);
    let redis = RedisServer::start_tls(tls).await;
    assert!(redis.url().starts_with("rediss://"));
    let config = crate::common::config(&redis).tls_ca_pem(ca.into_bytes());
    let (server, addr) = node(config).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(_) = subscribe(&mut raw, "secure", None).await else {
        panic!("subscribed expected")
    };
    server
        .publish("secure", json!("over tls"))
        .await
        .expect("published");
    assert_eq!(publications(&mut raw, 1).await, [(1, json!("over tls"))]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_broker_that_does_not_trust_the_certificate_is_refused_at_connect() {
    let dir = temp_dir("untrusted");
    let (tls, _) = certificate(&dir);
    let redis = RedisServer::start_tls(tls).await;
    let (_, other_ca) = certificate(&temp_dir("other"));
    let refused =
        RedisBroker::connect(RedisConfig::new(redis.url()).tls_ca_pem(other_ca.into_bytes())).await;
    assert!(
        matches!(&refused, Err(ConnectError::Unreachable(_))),
        "{refused:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(temp_dir("other"));
}
