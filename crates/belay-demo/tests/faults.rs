//! The demo's fault panel end to end (spec/MISSION §10): each fault switched
//! through the admin API, observed with a raw WebSocket client; then the
//! admin API's own shapes and the `/metrics` families.
//!
//! Nothing here sleeps to synchronise: the tests wait for frames, events or
//! HTTP answers with generous bounds, and measure time only to check that
//! something did not happen too early.

mod common;

use std::time::{Duration, Instant};

use belay_proto::message::{
    ClientMessage, Reply, Request, ServerMessage, StreamPosition, Subscribe,
};
use belay_proto::server::{DrainConfig, Limits};
use belay_server::events::ServerEvent;
use belay_server::{Lifecycle, ServerConfig};
use common::{demo_server, fault, http_call, start, upgrade_head, Closed, Next, Raw, SOON};
use serde_json::{json, Value};
use tokio::sync::broadcast;

/// Long enough that a frame the server meant to send would have arrived.
const QUIET: Duration = Duration::from_millis(1_500);

/// A heartbeat fast enough to matter in a test.
fn fast_heartbeat() -> ServerConfig {
    let mut limits = Limits::default();
    limits
        .set_ping_interval(Duration::from_secs(1))
        .set_pong_timeout(Duration::from_secs(1));
    ServerConfig::default().with_limits(limits)
}

fn request(id: u64, method: &str, params: Value) -> ClientMessage {
    ClientMessage::Request(Request {
        id,
        method: method.into(),
        params,
        idem: None,
        timeout_ms: None,
    })
}

fn subscribe(channel: &str, since: Option<StreamPosition>) -> ClientMessage {
    ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since,
        token: None,
    })
}

/// Expect exactly this message next (answering server pings on the way).
async fn expect_next(raw: &mut Raw) -> ServerMessage {
    raw.recv_skipping_pings()
        .await
        .expect("a message, not a close")
}

/// An echo round trip works on `raw`.
async fn echo_works(raw: &mut Raw, id: u64) {
    raw.send(&request(id, "echo", json!(id))).await;
    match expect_next(raw).await {
        ServerMessage::Response(r) => {
            assert_eq!(r.id, id);
            assert_eq!(r.reply, Reply::Result(json!(id).into()));
        }
        other => panic!("expected the echo, got {other:?}"),
    }
}

/// The next server event of `kind` whose detail contains `needle`.
async fn event(
    events: &mut broadcast::Receiver<ServerEvent>,
    kind: &str,
    needle: &str,
) -> ServerEvent {
    tokio::time::timeout(SOON, async {
        loop {
            let event = events.recv().await.expect("the event feed lives");
            if event.kind == kind && event.detail.contains(needle) {
                return event;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("a {kind} event mentioning {needle:?} within the bound"))
}

#[tokio::test]
async fn freeze_keeps_sockets_open_but_silent_and_abandoned_connections_go_after_it() {
    let (demo, server) = demo_server(fast_heartbeat());
    let addr = start(&demo, &server).await;
    let (mut frozen, _) = Raw::connected(addr, None).await;
    frozen.send(&subscribe("feed", None)).await;
    assert!(matches!(
        expect_next(&mut frozen).await,
        ServerMessage::Subscribed(_)
    ));

    let state = fault(addr, "freeze", r#"{"on":true}"#).await;
    assert_eq!(state["faults"]["freeze"], true);
    let mut events = server.events();

    // The open session: its ping is not answered, publications do not
    // arrive, the server sends no ping of its own although the connection
    // is quiet for longer than the ping interval; the socket stays open.
    frozen.send(&ClientMessage::Ping).await;
    server
        .publish("feed", json!({"tick": "frozen 1"}))
        .await
        .expect("published");
    server
        .publish("feed", json!({"tick": "frozen 2"}))
        .await
        .expect("published");
    // A new connection during the freeze: upgraded, but no welcome.
    let mut newcomer = Raw::open(addr).await;
    newcomer
        .send(&ClientMessage::Connect(belay_proto::message::Connect {
            protocol: 1,
            token: None,
            session: None,
        }))
        .await;
    let (old, new) = tokio::join!(frozen.next_within(QUIET), newcomer.next_within(QUIET));
    assert!(matches!(old, Next::Silent), "frozen session got {old:?}");
    assert!(matches!(new, Next::Silent), "new session got {new:?}");

    // The client gives up on the frozen socket (it detected the freeze)
    // without a closing handshake, then the fault is switched off.
    let abandoned = frozen.local_addr();
    drop(frozen);
    drop(newcomer);
    fault(addr, "freeze", r#"{"on":false}"#).await;

    // The abandoned connection is gone from the server...
    event(&mut events, "disconnect", &abandoned.to_string()).await;
    // ...and a fresh session works.
    let (mut fresh, _) = Raw::connected(addr, None).await;
    echo_works(&mut fresh, 1).await;
}

#[tokio::test]
async fn a_frozen_session_the_server_gives_up_on_gets_its_close_and_fin_only_after_the_freeze() {
    let (demo, server) = demo_server(fast_heartbeat());
    let addr = start(&demo, &server).await;
    let (mut frozen, _) = Raw::connected(addr, None).await;
    let mut events = server.events();
    fault(addr, "freeze", r#"{"on":true}"#).await;
    // The server's heartbeat runs on: its ping goes unanswered (nothing
    // reaches the client), it reaps the session and lets the socket go...
    event(&mut events, "reap", "").await;
    event(&mut events, "disconnect", &frozen.local_addr().to_string()).await;
    // ...but the client sees neither the close frame nor the FIN.
    assert!(matches!(
        frozen.next_within(Duration::from_millis(300)).await,
        Next::Silent
    ));
    // Once the freeze ends, the socket the server let go of closes.
    fault(addr, "freeze", r#"{"on":false}"#).await;
    assert_eq!(frozen.closed_within(SOON).await, Closed::NoFrame);
}

#[tokio::test]
async fn service_down_drops_subscriptions_answers_pings_and_recovers_after() {
    let (demo, server) = demo_server(fast_heartbeat());
    let addr = start(&demo, &server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&subscribe("news", None)).await;
    let ServerMessage::Subscribed(confirmed) = expect_next(&mut raw).await else {
        panic!("subscribed first")
    };
    server.publish("news", json!(1)).await.expect("published");
    let ServerMessage::Publication(first) = expect_next(&mut raw).await else {
        panic!("the first publication")
    };
    assert_eq!(first.offset, confirmed.offset + 1);

    fault(addr, "service_down", r#"{"on":true}"#).await;
    // The subscription is reported lost, with a code that means "again".
    let ServerMessage::Unsubscribed(lost) = expect_next(&mut raw).await else {
        panic!("unsubscribed")
    };
    assert_eq!(
        (lost.channel.as_str(), lost.code.as_str()),
        ("news", "unavailable")
    );

    // Published while the service is down: the client must get these back.
    server.publish("news", json!(2)).await.expect("published");
    server.publish("news", json!(3)).await.expect("published");

    // Pings are still answered; a subscribe is refused; a request is held
    // unanswered, as a hung backend holds it.
    raw.send(&subscribe("news", None)).await;
    let ServerMessage::Unsubscribed(refused) = expect_next(&mut raw).await else {
        panic!("the subscribe is refused")
    };
    assert_eq!(refused.code, "unavailable");
    raw.send(&request(7, "echo", json!("lost"))).await;
    raw.send(&ClientMessage::Ping).await;
    assert_eq!(expect_next(&mut raw).await, ServerMessage::Pong);
    assert_eq!(server.metrics().requests_by_outcome().get("ok"), None);

    fault(addr, "service_down", r#"{"on":false}"#).await;
    // Resubscribing from the last position recovers what was missed, in
    // order, and the server answers at once.
    let asked = Instant::now();
    raw.send(&subscribe(
        "news",
        Some(StreamPosition {
            epoch: first.epoch.clone(),
            offset: first.offset,
        }),
    ))
    .await;
    let ServerMessage::Subscribed(resumed) = expect_next(&mut raw).await else {
        panic!("subscribed again")
    };
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "answered at once, took {:?}",
        asked.elapsed()
    );
    assert!(resumed.recovered, "{resumed:?}");
    assert_eq!(resumed.offset, first.offset);
    let mut offsets = Vec::new();
    let mut data = Vec::new();
    while offsets.len() < 2 {
        match expect_next(&mut raw).await {
            ServerMessage::Publication(p) => {
                offsets.push(p.offset);
                data.push(p.data);
            }
            // The request sent while down stays unanswered.
            ServerMessage::Response(r) => panic!("request {} was answered", r.id),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(offsets, vec![first.offset + 1, first.offset + 2]);
    assert_eq!(data, vec![json!(2), json!(3)]);
    // Live publications flow again.
    server.publish("news", json!(4)).await.expect("published");
    let ServerMessage::Publication(live) = expect_next(&mut raw).await else {
        panic!("live again")
    };
    assert_eq!(live.offset, first.offset + 3);
    assert_eq!(server.metrics().requests_by_outcome().get("ok"), None);
}

#[tokio::test]
async fn a_keyed_call_held_while_the_service_is_down_runs_once_it_is_back() {
    let (demo, server) = demo_server(fast_heartbeat());
    let addr = start(&demo, &server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    fault(addr, "service_down", r#"{"on":true}"#).await;
    let keyed = |id| {
        ClientMessage::Request(Request {
            id,
            method: "order.create".into(),
            params: json!("tea"),
            idem: Some("order-1".into()),
            timeout_ms: None,
        })
    };
    raw.send(&keyed(1)).await;
    raw.send(&ClientMessage::Ping).await;
    assert_eq!(expect_next(&mut raw).await, ServerMessage::Pong);
    // Held: nothing but the server's pings comes while the service is down.
    let quiet_until = Instant::now() + QUIET;
    while let Some(left) = quiet_until.checked_duration_since(Instant::now()) {
        match raw.next_within(left).await {
            Next::Silent => break,
            Next::Message(ServerMessage::Ping) => raw.send(&ClientMessage::Pong).await,
            other => panic!("while down: {other:?}"),
        }
    }
    fault(addr, "service_down", r#"{"on":false}"#).await;
    let ServerMessage::Response(first) = expect_next(&mut raw).await else {
        panic!("the held call is answered once the service is back")
    };
    assert_eq!(first.id, 1);
    // The client's retry with the same key gets that one outcome.
    raw.send(&keyed(2)).await;
    let ServerMessage::Response(retry) = expect_next(&mut raw).await else {
        panic!("the retry's answer")
    };
    assert_eq!((retry.id, &retry.reply), (2, &first.reply));
}

#[tokio::test]
async fn slow_replies_answer_after_the_delay_and_pings_still_flow() {
    let (demo, server) = demo_server(fast_heartbeat());
    let addr = start(&demo, &server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let state = fault(addr, "slow_replies", r#"{"on":true,"delay_ms":400}"#).await;
    assert_eq!(state["faults"]["slow_replies"], true);
    assert_eq!(state["faults"]["slow_replies_ms"], 400);

    let sent = Instant::now();
    raw.send(&request(1, "echo", json!("late"))).await;
    raw.send(&ClientMessage::Ping).await;
    // The pong overtakes the delayed response.
    assert_eq!(expect_next(&mut raw).await, ServerMessage::Pong);
    let ServerMessage::Response(response) = expect_next(&mut raw).await else {
        panic!("the response")
    };
    let took = sent.elapsed();
    assert_eq!(response.id, 1);
    assert_eq!(response.reply, Reply::Result(json!("late").into()));
    assert!(
        took >= Duration::from_millis(400),
        "came back early: {took:?}"
    );

    // Switched off, requests are answered without the delay again (a
    // request waits only for the method, here an echo).
    fault(addr, "slow_replies", r#"{"on":false}"#).await;
    echo_works(&mut raw, 2).await;
}

#[tokio::test]
async fn flapping_drops_each_session_without_a_close_frame_after_the_delay() {
    let (demo, server) = demo_server(fast_heartbeat());
    let addr = start(&demo, &server).await;
    let state = fault(addr, "flapping", r#"{"on":true,"after_ms":300}"#).await;
    assert_eq!(state["faults"]["flapping_ms"], 300);
    for _ in 0..2 {
        let (mut raw, _) = Raw::connected(addr, None).await;
        let welcomed = Instant::now();
        // Still served meanwhile.
        echo_works(&mut raw, 1).await;
        assert_eq!(raw.closed_within(SOON).await, Closed::NoFrame);
        let lived = welcomed.elapsed();
        // The client's clock starts after the server's: allow the transit.
        assert!(
            lived >= Duration::from_millis(280),
            "dropped early: {lived:?}"
        );
    }
    fault(addr, "flapping", r#"{"on":false}"#).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    // Well past the flapping delay, the session lives on.
    assert!(matches!(
        raw.next_within(Duration::from_millis(600)).await,
        Next::Silent
    ));
    echo_works(&mut raw, 2).await;
}

#[tokio::test]
async fn restart_drops_every_session_then_refuses_upgrades_for_the_window() {
    let (demo, server) = demo_server(fast_heartbeat());
    let addr = start(&demo, &server).await;
    let (mut a, _) = Raw::connected(addr, None).await;
    let (mut b, _) = Raw::connected(addr, None).await;

    let started = Instant::now();
    let state = fault(addr, "restart", r#"{"down_ms":500}"#).await;
    assert_eq!(state["faults"]["restarting"], true);
    assert_eq!(state["accepting"], false);
    assert_eq!(a.closed_within(SOON).await, Closed::NoFrame);
    assert_eq!(b.closed_within(SOON).await, Closed::NoFrame);

    // During the window: 503 with a retry hint, before any upgrade.
    let refused = upgrade_head(addr).await;
    if started.elapsed() < Duration::from_millis(500) {
        assert_eq!(refused.status, 503, "{refused:?}");
        assert_eq!(refused.header("retry-after"), Some("1"), "{refused:?}");
    }
    // Afterwards: accepted again (retrying as a client would, by the hint's
    // spirit but faster).
    let accepted_at = loop {
        let head = upgrade_head(addr).await;
        if head.status == 101 {
            break started.elapsed();
        }
        assert_eq!(head.status, 503, "{head:?}");
        assert!(
            started.elapsed() < SOON,
            "still refusing after {:?}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert!(accepted_at >= Duration::from_millis(500), "{accepted_at:?}");
    let (mut c, _) = Raw::connected(addr, None).await;
    echo_works(&mut c, 1).await;

    // A later change of another fault is not a second restart.
    fault(addr, "service_down", r#"{"on":true}"#).await;
    fault(addr, "service_down", r#"{"on":false}"#).await;
    c.send(&ClientMessage::Ping).await;
    assert_eq!(expect_next(&mut c).await, ServerMessage::Pong);
    let state = http_call(addr, "GET", "/admin/state", None).await;
    let state: Value = serde_json::from_str(&state.body).unwrap();
    assert_eq!(state["faults"]["restarting"], false);
    assert_eq!(state["accepting"], true);
}

#[tokio::test]
async fn drain_through_the_admin_api_flips_readiness_advises_and_closes_1012() {
    let mut drain = DrainConfig::default();
    drain
        .set_lb_delay(Duration::from_millis(300))
        .set_linger(Duration::from_millis(100))
        .set_deadline(Duration::from_secs(10));
    let (demo, server) = demo_server(fast_heartbeat().with_drain(drain));
    let addr = start(&demo, &server).await;
    let (mut a, _) = Raw::connected(addr, None).await;
    let (mut b, _) = Raw::connected(addr, None).await;
    assert_eq!(http_call(addr, "GET", "/readyz", None).await.status, 200);

    let state = fault(addr, "drain", "{}").await;
    assert_eq!(state["faults"]["draining"], true);
    assert_eq!(state["accepting"], false);
    assert_eq!(http_call(addr, "GET", "/readyz", None).await.status, 503);
    assert_eq!(http_call(addr, "GET", "/healthz", None).await.status, 200);
    // New upgrades are refused while draining.
    let refused = upgrade_head(addr).await;
    assert_eq!(refused.status, 503);
    assert!(refused.header("retry-after").is_some());

    for raw in [&mut a, &mut b] {
        let ServerMessage::Reconnect(advice) = expect_next(raw).await else {
            panic!("advice before the close")
        };
        assert_eq!(advice.reason, "deploy");
        assert!(advice.message.as_deref().is_some_and(|m| !m.is_empty()));
        assert!(advice.min_delay_ms <= advice.max_delay_ms);
        assert!(matches!(
            raw.closed_within(SOON).await,
            Closed::Frame(1012, _)
        ));
    }
    tokio::time::timeout(SOON, server.drained())
        .await
        .expect("drained");
    assert_eq!(server.lifecycle(), Lifecycle::Drained);
    assert_eq!(server.metrics().closes_by_code().get(&1012), Some(&2));
}

#[tokio::test]
async fn the_admin_state_and_event_stream_have_their_documented_shapes() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (demo, server) = demo_server(fast_heartbeat());
    let addr = start(&demo, &server).await;

    let state = http_call(addr, "GET", "/admin/state", None).await;
    assert_eq!(state.status, 200);
    assert!(state
        .header("content-type")
        .unwrap_or("")
        .starts_with("application/json"));
    let state: Value = serde_json::from_str(&state.body).unwrap();
    assert_eq!(state["connections"], 0);
    assert_eq!(state["accepting"], true);
    assert!(state["uptime_ms"].is_u64());
    for key in [
        "freeze",
        "service_down",
        "slow_replies",
        "flapping",
        "restarting",
        "draining",
    ] {
        assert_eq!(state["faults"][key], false, "{key}: {state}");
    }
    assert!(state["faults"]["flapping_ms"].is_null());
    assert_eq!(
        http_call(addr, "POST", "/admin/fault/meteor", Some("{}"))
            .await
            .status,
        404
    );

    // The event stream: Server-Sent Events, one JSON event each.
    let mut sse = tokio::net::TcpStream::connect(addr).await.unwrap();
    sse.write_all(format!("GET /admin/events HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains("\r\n\r\n") {
        let n = tokio::time::timeout(SOON, sse.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    assert!(
        seen.to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{seen}"
    );

    // The handler subscribed before answering: a session started now shows.
    let (raw, _) = Raw::connected(addr, None).await;
    fault(addr, "service_down", r#"{"on":true}"#).await;
    let connect = loop {
        if let Some(line) = seen
            .lines()
            .filter_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|e| e["kind"] == "connect")
        {
            break line;
        }
        let n = tokio::time::timeout(SOON, sse.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    };
    assert!(connect["detail"]
        .as_str()
        .unwrap()
        .contains(&raw.local_addr().to_string()));
    assert_eq!(connect["connections"], 1);
    assert!(connect["at_ms"].is_u64());
    // Fault changes read as words, not as a struct dump.
    let fault_event = loop {
        if let Some(e) = seen
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|e| e["kind"] == "fault")
        {
            break e;
        }
        let n = tokio::time::timeout(SOON, sse.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    };
    assert_eq!(fault_event["detail"], "service_down on");
}

/// The value of the sample `name` (with its labels) in a text exposition.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[tokio::test]
async fn metrics_expose_the_documented_families_with_plausible_values() {
    let (demo, server) = demo_server(fast_heartbeat().with_accept_rate(1.0));
    let addr = start(&demo, &server).await;
    let mut events = server.events();
    let (mut raw, _) = Raw::connected(addr, None).await;
    // Over the accept rate (one per second): a native client is refused.
    assert_eq!(upgrade_head(addr).await.status, 503);

    echo_works(&mut raw, 1).await;
    for n in 1..=3 {
        server.publish("news", json!(n)).await.expect("published");
    }
    raw.send(&subscribe("news", None)).await;
    let ServerMessage::Subscribed(top) = expect_next(&mut raw).await else {
        panic!("subscribed")
    };
    // A resume that history covers, and one it cannot (unknown epoch).
    raw.send(&subscribe(
        "news",
        Some(StreamPosition {
            epoch: top.epoch.clone(),
            offset: top.offset - 1,
        }),
    ))
    .await;
    let ServerMessage::Subscribed(recovered) = expect_next(&mut raw).await else {
        panic!("subscribed")
    };
    assert!(recovered.recovered);
    assert!(matches!(
        expect_next(&mut raw).await,
        ServerMessage::Publication(_)
    ));
    raw.send(&subscribe(
        "news",
        Some(StreamPosition {
            epoch: "another-life".into(),
            offset: 1,
        }),
    ))
    .await;
    let ServerMessage::Subscribed(missed) = expect_next(&mut raw).await else {
        panic!("subscribed")
    };
    assert!(!missed.recovered);

    // Then the client goes silent: pinged, and reaped with 4000.
    assert_eq!(raw.recv().await, Some(ServerMessage::Ping));
    assert_eq!(
        raw.closed_within(SOON).await,
        Closed::Frame(4000, "heartbeat timeout".into())
    );
    // The server has counted the close once it reports the disconnect.
    event(&mut events, "disconnect", "closed with 4000").await;

    let response = http_call(addr, "GET", "/metrics", None).await;
    assert_eq!(response.status, 200);
    assert!(response
        .header("content-type")
        .unwrap_or("")
        .starts_with("text/plain"));
    let text = response.body;
    for family in [
        "belay_connections_open",
        "belay_closes_total",
        "belay_zombies_reaped_total",
        "belay_admission_refusals_total",
        "belay_requests_total",
        "belay_pings_sent_total",
        "belay_publications_total",
        "belay_recoveries_total",
        "belay_recovery_misses_total",
        "belay_drain_remaining",
        "belay_connects_total",
    ] {
        assert!(
            text.contains(&format!("# TYPE {family} ")),
            "{family} missing:\n{text}"
        );
    }
    let expect = |name: &str, want: f64| {
        assert_eq!(sample(&text, name), Some(want), "{name}:\n{text}");
    };
    expect("belay_connections_open", 0.0);
    expect("belay_connects_total", 1.0);
    expect("belay_closes_total{code=\"4000\"}", 1.0);
    expect("belay_zombies_reaped_total", 1.0);
    expect("belay_admission_refusals_total", 1.0);
    expect("belay_requests_total{outcome=\"ok\"}", 1.0);
    expect("belay_publications_total", 3.0);
    expect("belay_recoveries_total", 1.0);
    expect("belay_recovery_misses_total", 1.0);
    expect("belay_drain_remaining", 0.0);
    assert!(
        sample(&text, "belay_pings_sent_total").is_some_and(|n| n >= 1.0),
        "{text}"
    );
}

#[tokio::test]
async fn a_drain_answers_a_request_that_outlives_the_linger_before_closing() {
    let mut drain = DrainConfig::default();
    drain
        .set_lb_delay(Duration::from_millis(10))
        .set_linger(Duration::from_millis(50))
        .set_deadline(Duration::from_secs(10));
    let (demo, server) = demo_server(fast_heartbeat().with_drain(drain));
    let addr = start(&demo, &server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    // The demo's slow method: longer than the linger.
    raw.send(&request(9, "slow", json!(600))).await;
    raw.send(&ClientMessage::Ping).await;
    assert_eq!(expect_next(&mut raw).await, ServerMessage::Pong);
    fault(addr, "drain", "{}").await;
    assert!(matches!(
        expect_next(&mut raw).await,
        ServerMessage::Reconnect(_)
    ));
    let ServerMessage::Response(response) = expect_next(&mut raw).await else {
        panic!("the response before the close")
    };
    assert_eq!(response.id, 9);
    assert_eq!(
        response.reply,
        Reply::Result(json!({"slept_ms": 600}).into())
    );
    assert!(matches!(
        raw.closed_within(SOON).await,
        Closed::Frame(1012, _)
    ));
}

#[tokio::test]
async fn a_request_the_server_refuses_still_gets_a_response_with_its_id() {
    let mut limits = Limits::default();
    limits.set_messages_per_sec(1.0).set_burst(3);
    let (demo, server) = demo_server(ServerConfig::default().with_limits(limits));
    let addr = start(&demo, &server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    // Invalid params shape for a request whose id is readable.
    raw.send_text(r#"{"type":"request","id":5,"method":7}"#)
        .await;
    let ServerMessage::Response(bad) = expect_next(&mut raw).await else {
        panic!("a response, not an error message")
    };
    assert_eq!(bad.id, 5);
    assert!(
        matches!(&bad.reply, Reply::Error(e) if e.code == "bad_request"),
        "{bad:?}"
    );
    // Over the message rate: the refused requests are answered too.
    for id in 10..14 {
        raw.send(&request(id, "echo", json!(id))).await;
    }
    let mut refused = Vec::new();
    let mut answered = Vec::new();
    while refused.len() + answered.len() < 4 {
        let ServerMessage::Response(r) = expect_next(&mut raw).await else {
            panic!("only responses")
        };
        match r.reply {
            Reply::Error(e) => {
                assert_eq!(e.code, "rate_limited");
                assert!(e.retry_after_ms.is_some_and(|ms| ms > 0));
                refused.push(r.id);
            }
            Reply::Result(_) => answered.push(r.id),
        }
    }
    assert!(!refused.is_empty(), "answered {answered:?}");
}

#[tokio::test]
async fn flapping_switched_on_also_drops_a_session_that_was_already_open() {
    let (demo, server) = demo_server(ServerConfig::default());
    let addr = start(&demo, &server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let switched_on = std::time::Instant::now();
    common::fault(addr, "flapping", r#"{"on":true,"after_ms":300}"#).await;
    assert_eq!(raw.closed_within(SOON).await, Closed::NoFrame);
    assert!(switched_on.elapsed() >= Duration::from_millis(250));
}
