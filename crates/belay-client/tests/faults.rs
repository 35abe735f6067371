//! The client against the demo server's faults. Nothing sleeps to
//! synchronise: tests wait on the client's status and events or on server
//! events, with generous bounds, and measure time only to report it or to
//! check that something did not take too long.
//!
//! The protocol behaviour under a freeze, a restart (no publication lost or
//! twice, requests in flight settled) and slow replies is checked in virtual
//! time on the core's Pair (crates/belay-proto/tests/pair/: freeze.rs,
//! restart_without_loss.rs, restart_settles_requests.rs, slow_replies.rs);
//! what stays here is the driver's own: dialling, closing, handles, TLS.

mod common;

use std::time::{Duration, Instant};

use belay_client::{Client, ClientEvent, Item, RequestError, TlsSettings};
use belay_proto::{ConnectionState, Event};
use common::{builder, demo_server, event_where, fault, open_connections, start, status_where};
use serde_json::json;

fn is_disconnect(event: &ClientEvent) -> bool {
    matches!(
        event,
        ClientEvent::Session(Event::Disconnected { .. } | Event::ConnectFailed { .. })
    )
}

#[tokio::test]
async fn connects_becomes_ready_and_echoes() {
    let server = demo_server();
    let addr = start(&server).await;
    let client = builder(addr).connect().expect("a usable URL");
    // Before the session is established a request is refused, never sent.
    assert_eq!(
        client.request("echo", json!(1)).await,
        Err(RequestError::NotReady)
    );
    client.ready().await.expect("ready");
    assert_eq!(
        client.request("echo", json!({"a": 1})).await,
        Ok(json!({"a": 1}).into())
    );
    let status = client.status().borrow().clone();
    assert!(status.ready && status.readiness.transport && status.readiness.protocol);
    assert_eq!(status.state, ConnectionState::Open);
    client.close().await;
    assert_eq!(
        client.request("echo", json!(1)).await,
        Err(RequestError::Closed)
    );
}

#[tokio::test]
async fn service_down_drops_only_the_service_level_and_data_flows_again() {
    let server = demo_server();
    let addr = start(&server).await;
    let client = builder(addr).connect().expect("a usable URL");
    let mut news = client.subscribe("news").await.expect("subscribe");
    client.ready().await.expect("ready");
    let mut status = client.status();
    let mut events = client.events();
    let first = server.publish("news", json!(1)).await.expect("published");
    assert_eq!(news.next().await, Some(Item::Publication(first.clone())));

    fault(addr, "service_down", r#"{"on":true}"#).await;
    let down = status_where(&mut status, "service down", |s| !s.readiness.service).await;
    assert!(
        down.readiness.transport && down.readiness.protocol,
        "{down:?}"
    );
    assert_eq!(down.state, ConnectionState::Open);
    let missed = [
        server.publish("news", json!(2)).await.expect("published"),
        server.publish("news", json!(3)).await.expect("published"),
    ];

    fault(addr, "service_down", r#"{"on":false}"#).await;
    let back = Instant::now();
    for expected in missed {
        let item = tokio::time::timeout(common::SOON, news.next())
            .await
            .expect("flows");
        assert_eq!(item, Some(Item::Publication(expected)));
    }
    let flowing = back.elapsed();
    println!("service_down: publications flowing again {flowing:?} after the service returned");
    assert!(flowing <= Duration::from_secs(2), "{flowing:?}");
    status_where(&mut status, "ready", |s| s.ready).await;
    while let Ok(event) = events.try_recv() {
        assert!(!is_disconnect(&event), "no reconnect: {event:?}");
    }
    assert_eq!(server.metrics().connects(), 1, "no reconnect");
    client.close().await;
}

#[tokio::test]
async fn reconnect_now_during_backoff_dials_at_once_without_a_second_connection() {
    let server = demo_server();
    let addr = start(&server).await;
    // A long backoff, so the client is surely waiting when we step in.
    let client = builder(addr)
        .configure(|c| {
            c.set_backoff(belay_proto::backoff::BackoffPolicy::equal_jitter(
                Duration::from_secs(20),
                Duration::from_secs(30),
            ));
        })
        .connect()
        .expect("a usable URL");
    client.ready().await.expect("ready");
    let mut status = client.status();
    server
        .demo
        .faults()
        .restart(&server, Duration::from_millis(300));
    let waiting = status_where(&mut status, "waiting", |s| {
        s.state == ConnectionState::Waiting
    })
    .await;
    assert!(waiting.next_attempt.is_some());
    // The server accepts again once its restart window is over.
    if let Some(until) = server.demo.faults().faults().refuse_until {
        tokio::time::sleep_until(until.into()).await;
    }
    let mut events = client.events();
    let mut server_events = server.events();
    let asked = Instant::now();
    client.reconnect_now().expect("open");
    event_where(&mut events, "connecting", |e| {
        matches!(e, ClientEvent::Connecting { .. })
    })
    .await;
    let dialed = asked.elapsed();
    let connected = tokio::time::timeout(common::SOON, async {
        loop {
            let e = server_events.recv().await.expect("server events");
            if e.kind == "connect" {
                return asked.elapsed();
            }
        }
    })
    .await
    .expect("the server sees the session");
    println!("reconnect_now: dial after {dialed:?}, server session after {connected:?}");
    assert!(dialed <= Duration::from_millis(50), "{dialed:?}");
    client.ready().await.expect("ready");
    while let Ok(event) = events.try_recv() {
        assert!(!is_disconnect(&event), "no extra disconnect: {event:?}");
    }
    assert_eq!(
        server.metrics().open_connections(),
        1,
        "never two connections"
    );
    // Calling it again while connected does nothing.
    client.reconnect_now().expect("open");
    assert_eq!(client.request("echo", json!(1)).await, Ok(json!(1).into()));
    assert_eq!(server.metrics().open_connections(), 1);
    client.close().await;
}

#[tokio::test]
async fn after_close_no_new_connection_appears() {
    let server = demo_server();
    let addr = start(&server).await;
    let client = builder(addr).connect().expect("a usable URL");
    client.ready().await.expect("ready");
    let mut status = client.status();
    // Lose the connection so that a redial is pending, then close.
    server
        .demo
        .faults()
        .restart(&server, Duration::from_millis(100));
    status_where(&mut status, "waiting", |s| {
        matches!(
            s.state,
            ConnectionState::Waiting | ConnectionState::Connecting
        )
    })
    .await;
    client.close().await;
    assert_eq!(client.status().borrow().state, ConnectionState::Stopped);
    let connects = server.metrics().connects();
    open_connections(&server, 0).await;
    // Longer than the whole backoff (≤ 1 s) plus the restart window.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    assert_eq!(server.metrics().connects(), connects, "no new session");
    assert_eq!(server.metrics().open_connections(), 0);
    assert!(client.reconnect_now().is_err());
}

#[tokio::test]
async fn dropping_the_last_handle_stops_the_connection() {
    let server = demo_server();
    let addr = start(&server).await;
    let client = builder(addr).connect().expect("a usable URL");
    client.ready().await.expect("ready");
    open_connections(&server, 1).await;
    drop(client);
    open_connections(&server, 0).await;
}

#[tokio::test]
async fn wss_with_a_custom_root_for_a_self_signed_server() {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("a certificate");
    let tls = belay_server::tls::server_config(
        vec![certified.cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::try_from(certified.signing_key.serialize_der())
            .expect("key"),
    )
    .expect("tls config");
    let server = demo_server();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let serving = server.clone();
    tokio::spawn(async move { serving.serve_tls(listener, serving.router(), tls).await });

    let mut trust = TlsSettings::default();
    trust
        .set_webpki_roots(false)
        .add_root_pem(certified.cert.pem().as_bytes())
        .expect("pem");
    let client = Client::builder(format!("wss://localhost:{port}/ws"))
        .tls(trust)
        .connect()
        .expect("a usable URL");
    client.ready().await.expect("ready over TLS");
    assert_eq!(
        client.request("echo", json!("tls")).await,
        Ok(json!("tls").into())
    );
    client.close().await;

    // Without the custom root the certificate is refused (and retried).
    let untrusting = Client::builder(format!("wss://localhost:{port}/ws"))
        .connect()
        .expect("a usable URL");
    let mut events = untrusting.events();
    let failed = event_where(&mut events, "connect failed", is_disconnect).await;
    assert!(format!("{failed:?}").contains("TLS"), "{failed:?}");
    untrusting.close().await;
}
