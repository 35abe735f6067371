//! The HTTP admin endpoint: switch faults and read counters over HTTP.

mod common;

use belay_lab::{admin, Fault};
use common::*;
use serde_json::Value;

#[tokio::test]
async fn post_faults_switches_the_proxy() {
    let proxy = proxy_to(echo_upstream().await).await;
    let (addr, serving) = admin::serve(proxy.clone(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(serving);

    let (status, body) = http(addr, "GET", "/faults", "").await;
    assert_eq!((status, body.as_str()), (200, r#"{"mode":"pass"}"#));

    let (status, body) = http(addr, "POST", "/faults", r#"{"mode":"latency","ms":25}"#).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(proxy.fault(), Fault::Latency { ms: 25 });

    let (status, body) = http(addr, "POST", "/faults", r#"{"mode":"melt"}"#).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = http(
        addr,
        "POST",
        "/faults",
        r#"{"mode":"bandwidth","bytes_per_sec":0}"#,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("error"), "{body}");
    assert_eq!(
        proxy.fault(),
        Fault::Latency { ms: 25 },
        "a refused fault changes nothing"
    );

    let mut client = connect(&proxy).await;
    round_trip(&mut client, b"x").await;
    let (status, body) = http(addr, "GET", "/counters", "").await;
    assert_eq!(status, 200);
    let counters: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(counters["accepted"], 1);
    assert_eq!(counters["faults_set"], 1);
}

#[tokio::test]
async fn admin_refuses_a_non_loopback_address() {
    let proxy = proxy_to(echo_upstream().await).await;
    let refused = admin::serve(proxy, "0.0.0.0:0".parse().unwrap()).await;
    assert!(refused.is_err());
}
