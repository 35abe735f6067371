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

/// An admin API over an empty registry; its address.
async fn admin_api() -> std::net::SocketAddr {
    let registry = belay_lab::Registry::new(1);
    let (addr, serving) = admin::serve_registry(registry, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(serving);
    addr
}

/// `POST /proxies` a proxy named `name` to `upstream`; its listen address.
async fn create(admin: std::net::SocketAddr, name: &str, upstream: std::net::SocketAddr) -> String {
    let body = format!(r#"{{"name":"{name}","upstream":"{upstream}"}}"#);
    let (status, body) = http(admin, "POST", "/proxies", &body).await;
    assert_eq!(status, 201, "{body}");
    let created: Value = serde_json::from_str(&body).unwrap();
    created["listen"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn proxies_are_created_listed_and_deleted_over_http() {
    let admin = admin_api().await;
    let upstream = echo_upstream().await;
    let listen = create(admin, "a", upstream).await;
    let mut client = tokio::net::TcpStream::connect(&listen).await.unwrap();
    round_trip(&mut client, b"through a").await;
    create(admin, "b", upstream).await;

    let (status, body) = http(admin, "GET", "/proxies", "").await;
    assert_eq!(status, 200);
    let list: Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(list[0]["counters"]["accepted"], 1);

    let again = format!(r#"{{"name":"a","upstream":"{upstream}"}}"#);
    let (status, body) = http(admin, "POST", "/proxies", &again).await;
    assert_eq!(status, 409, "{body}");
    let remote = r#"{"name":"c","upstream":"192.0.2.1:80"}"#;
    let (status, body) = http(admin, "POST", "/proxies", remote).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("loopback"), "{body}");
    let (status, body) = http(admin, "POST", "/proxies", r#"{"name":"d"}"#).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("upstream"), "{body}");

    let (status, _) = http(admin, "DELETE", "/proxies/a", "").await;
    assert_eq!(status, 204);
    assert_eq!(
        next_read(&mut client).await.unwrap_or(0),
        0,
        "its connections close"
    );
    let (status, body) = http(admin, "GET", "/proxies/a", "").await;
    assert_eq!(status, 404, "{body}");
    let deadline = tokio::time::Instant::now() + SOON;
    while tokio::net::TcpStream::connect(&listen).await.is_ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the port stays open"
        );
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn toxics_are_added_and_removed_over_http() {
    let admin = admin_api().await;
    let listen = create(admin, "p", echo_upstream().await).await;
    let mut client = tokio::net::TcpStream::connect(&listen).await.unwrap();
    round_trip(&mut client, b"warm").await;

    let blackhole = r#"{"type":"blackhole","stream":"upstream"}"#;
    let (status, body) = http(admin, "POST", "/proxies/p/toxics", blackhole).await;
    assert_eq!(status, 201, "{body}");
    let stored: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(stored["name"], "blackhole_upstream");
    tokio::io::AsyncWriteExt::write_all(&mut client, b"held")
        .await
        .unwrap();
    assert_silent(&mut client).await;

    let (status, body) = http(admin, "POST", "/proxies/p/toxics", blackhole).await;
    assert_eq!(status, 409, "{body}");
    let bad = r#"{"type":"bandwidth","attributes":{"bytes_per_sec":0}}"#;
    let (status, body) = http(admin, "POST", "/proxies/p/toxics", bad).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("bytes_per_sec"), "{body}");
    let (status, body) = http(admin, "POST", "/proxies/p/toxics", "{").await;
    assert_eq!(status, 400, "{body}");
    let (status, _) = http(admin, "POST", "/proxies/nope/toxics", blackhole).await;
    assert_eq!(status, 404);

    let (status, body) = http(admin, "GET", "/proxies/p/toxics", "").await;
    assert_eq!(status, 200);
    let toxics: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(toxics.as_array().unwrap().len(), 1, "{body}");
    let (status, body) = http(admin, "GET", "/proxies/p/fault", "").await;
    assert_eq!((status, body.as_str()), (200, r#"{"mode":"toxics"}"#));

    let (status, _) = http(admin, "DELETE", "/proxies/p/toxics/blackhole_upstream", "").await;
    assert_eq!(status, 204);
    assert_eq!(read_n(&mut client, 4).await, b"held", "released");
    let (status, _) = http(admin, "DELETE", "/proxies/p/toxics/blackhole_upstream", "").await;
    assert_eq!(status, 404);

    let lag = r#"{"name":"lag","type":"latency","attributes":{"latency_ms":5}}"#;
    let (status, body) = http(admin, "POST", "/proxies/p/toxics", lag).await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = http(admin, "GET", "/proxies/p/toxics/lag", "").await;
    assert_eq!(status, 200, "{body}");
    let lag: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(lag["attributes"]["latency_ms"], 5, "{body}");
    let (status, _) = http(admin, "DELETE", "/proxies/p/toxics", "").await;
    assert_eq!(status, 204);
    let (_, body) = http(admin, "GET", "/proxies/p/toxics", "").await;
    assert_eq!(body, "[]");

    let half_open = r#"{"mode":"half_open","drop":"server_to_client"}"#;
    let (status, body) = http(admin, "POST", "/proxies/p/fault", half_open).await;
    assert_eq!((status, body.as_str()), (200, half_open));
    let (_, body) = http(admin, "GET", "/proxies/p/toxics", "").await;
    assert!(
        body.contains(r#""type":"discard","stream":"downstream""#),
        "{body}"
    );
    let (status, body) = http(admin, "POST", "/proxies/p/fault", r#"{"mode":"toxics"}"#).await;
    assert_eq!(status, 400, "{body}");
}

#[tokio::test]
async fn a_timeline_posted_over_http_runs() {
    let admin = admin_api().await;
    create(admin, "t", echo_upstream().await).await;
    let timeline = r#"{"steps":[
        {"at_ms":0,"action":"add","toxic":{"name":"lag","type":"latency","attributes":{"latency_ms":50}}},
        {"at_ms":300,"action":"add","toxic":{"name":"end","type":"blackhole"}},
        {"at_ms":300,"action":"remove","name":"lag"}]}"#;
    let (status, body) = http(admin, "POST", "/proxies/t/timeline", timeline).await;
    assert_eq!((status, body.as_str()), (202, r#"{"steps":3}"#));
    // Only a timeline that ran every step leaves exactly `end` behind.
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let (_, body) = http(admin, "GET", "/proxies/t", "").await;
        let proxy: Value = serde_json::from_str(&body).unwrap();
        if proxy["timeline_running"] == false {
            let toxics = proxy["toxics"].as_array().unwrap();
            assert_eq!(toxics.len(), 1, "{body}");
            assert_eq!(toxics[0]["name"], "end", "{body}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the timeline never ended: {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let bad = r#"{"steps":[{"at_ms":0,"action":"melt"}]}"#;
    let (status, body) = http(admin, "POST", "/proxies/t/timeline", bad).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("melt"), "{body}");
    let (status, _) = http(admin, "DELETE", "/proxies/t/timeline", "").await;
    assert_eq!(status, 204);
}
