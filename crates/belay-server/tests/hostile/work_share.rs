//! One source's connections, each within its own message rate, cannot take
//! more than the source's share of the server's work: past it they are read
//! more slowly (nothing refused), while another source is served at once.

use std::time::{Duration, Instant};

use belay_proto::message::{ClientMessage, Connect, Reply, ServerMessage};
use belay_server::ServerConfig;
use serde_json::json;

use crate::common::{self, Raw};
use crate::{gauge, request, server};

/// Frames the flooding source sends: 2 units each at 400 units/s past a
/// burst of 20 units, so its last is read no sooner than ~0.45 s.
const FLOOD: u64 = 100;

async fn session_from(source: &str, addr: std::net::SocketAddr) -> Raw {
    let mut raw = Raw::open_from(source, addr).await.expect("upgrade");
    raw.send(&ClientMessage::Connect(Connect {
        protocol: 1,
        token: None,
        session: None,
    }))
    .await;
    let welcome = raw.recv().await.expect("welcome");
    assert!(matches!(welcome, ServerMessage::Welcome(_)), "{welcome:?}");
    raw
}

/// A server whose sources get `rate` work units per second, `burst` at
/// once, and whose connections' own message rates are out of the way.
fn with_share(rate: f64, burst: u32) -> belay_server::Server {
    let mut config = ServerConfig::default().with_work_share_per_ip(rate, burst);
    config
        .limits
        .set_messages_per_sec(10_000.0)
        .set_burst(10_000);
    server(config)
}

#[tokio::test]
async fn a_source_past_its_work_share_is_read_later_and_another_source_is_not() {
    let server = with_share(400.0, 20);
    let addr = common::start(&server).await;
    let mut flood = session_from("127.0.0.2", addr).await;
    let mut other = session_from("127.0.0.1", addr).await;

    // 300 B of params: two work units each.
    let params = json!({ "pad": "x".repeat(300) });
    let started = Instant::now();
    for id in 1..=FLOOD {
        flood.send(&request(id, "echo", params.clone(), None)).await;
    }
    // The other source's echo is answered while the flood is still paced.
    other.send(&request(1, "echo", json!(1), None)).await;
    let answered = loop {
        match other.recv_skipping_pings().await {
            Some(ServerMessage::Response(r)) if r.id == 1 => break r.reply,
            Some(_) => continue,
            None => panic!("the other source's session closed"),
        }
    };
    assert_eq!(answered, Reply::Result(json!(1).into()));
    let other_done = started.elapsed();

    // Every flood request is answered, none refused.
    let mut results = 0;
    while results < FLOOD {
        match flood.recv_skipping_pings().await {
            Some(ServerMessage::Response(r)) => {
                assert!(matches!(r.reply, Reply::Result(_)), "{:?}", r.reply);
                results += 1;
            }
            Some(_) => continue,
            None => panic!("the flooding session closed after {results} answers"),
        }
    }
    let flood_done = started.elapsed();
    // 200 units past the 20 of the burst, at 400/s: no sooner than 0.45 s
    // (a lower bound the pacing guarantees; the other source's echo has no
    // such floor).
    assert!(flood_done >= Duration::from_millis(400), "{flood_done:?}");
    assert!(other_done < flood_done, "{other_done:?} vs {flood_done:?}");
    assert!(gauge(&server, "belay_paced_frames_total") >= 1.0);
}

#[tokio::test]
async fn a_work_rate_of_zero_paces_nothing() {
    let server = with_share(0.0, 0);
    let addr = common::start(&server).await;
    let mut flood = session_from("127.0.0.2", addr).await;
    for id in 1..=FLOOD {
        flood.send(&request(id, "echo", json!(id), None)).await;
    }
    let mut results = 0;
    while results < FLOOD {
        match flood.recv_skipping_pings().await {
            Some(ServerMessage::Response(_)) => results += 1,
            Some(_) => continue,
            None => panic!("the session closed after {results} answers"),
        }
    }
    assert_eq!(gauge(&server, "belay_paced_frames_total"), 0.0);
}
