//! Each fault of the proxy, proven on the wire with plain loopback sockets.
//!
//! Nothing sleeps to synchronise: tests wait for bytes, EOFs or resets with
//! generous bounds, and measure time only for latency and bandwidth, or to
//! check that nothing arrives for [`common::QUIET`].

mod common;

use std::io::ErrorKind;
use std::time::Instant;

use belay_lab::{Direction, Fault};
use common::*;
use tokio::io::AsyncWriteExt;

#[tokio::test]
async fn pass_forwards_both_ways_and_counts() {
    let proxy = proxy_to(echo_upstream().await).await;
    assert_eq!(proxy.fault(), Fault::Pass);
    let mut client = connect(&proxy).await;
    round_trip(&mut client, b"hello").await;
    round_trip(&mut client, &[7u8; 100_000]).await;
    counters_reach(&proxy, |c| {
        c.accepted == 1
            && c.open == 1
            && c.client_to_server == 100_005
            && c.server_to_client == 100_005
    })
    .await;
    drop(client);
    counters_reach(&proxy, |c| c.open == 0).await;
}

#[tokio::test]
async fn blackhole_holds_bytes_both_ways_keeps_sockets_open_and_resumes() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    client.write_all(b"a").await.unwrap();
    assert_eq!(read_n(&mut server, 1).await, b"a");

    proxy.set(Fault::Blackhole).unwrap();
    client.write_all(b"up").await.unwrap();
    server.write_all(b"down").await.unwrap();
    tokio::join!(assert_silent(&mut client), assert_silent(&mut server));
    // Closing is held too: the client's FIN does not reach the server.
    client.shutdown().await.unwrap();
    assert_silent(&mut server).await;

    proxy.set(Fault::Pass).unwrap();
    assert_eq!(
        read_n(&mut server, 2).await,
        b"up",
        "held bytes are delivered"
    );
    assert_eq!(
        read_n(&mut client, 4).await,
        b"down",
        "held bytes are delivered"
    );
    assert_eq!(
        next_read(&mut server).await.unwrap(),
        0,
        "then the held FIN"
    );
}

#[tokio::test]
async fn blackhole_applies_to_new_connections() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    proxy.set(Fault::Blackhole).unwrap();
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    client.write_all(b"x").await.unwrap();
    assert_silent(&mut server).await;
    proxy.set(Fault::Pass).unwrap();
    assert_eq!(read_n(&mut server, 1).await, b"x");
}

#[tokio::test]
async fn latency_adds_at_least_its_delay_each_way() {
    const MS: u64 = 200;
    let proxy = proxy_to(echo_upstream().await).await;
    let mut client = connect(&proxy).await;
    round_trip(&mut client, b"warm").await;
    proxy.set(Fault::Latency { ms: MS }).unwrap();
    let start = Instant::now();
    round_trip(&mut client, b"slow").await;
    let elapsed = start.elapsed().as_millis();
    assert!(
        elapsed >= u128::from(2 * MS),
        "round trip took {elapsed} ms"
    );
    proxy.set(Fault::Pass).unwrap();
    let start = Instant::now();
    round_trip(&mut client, b"fast").await;
    let elapsed = start.elapsed().as_millis();
    assert!(
        elapsed < u128::from(2 * MS),
        "latency lifted, yet {elapsed} ms"
    );
}

#[tokio::test]
async fn bandwidth_caps_bytes_per_second() {
    let proxy = proxy_to(echo_upstream().await).await;
    let mut client = connect(&proxy).await;
    proxy
        .set(Fault::Bandwidth {
            bytes_per_sec: 20_000,
        })
        .unwrap();
    let start = Instant::now();
    // 20 000 bytes at 20 000 B/s: about a second (both directions pipelined).
    round_trip(&mut client, &[1u8; 20_000]).await;
    let elapsed = start.elapsed().as_millis();
    assert!(elapsed >= 800, "20 kB went through in {elapsed} ms");
    assert!(proxy.set(Fault::Bandwidth { bytes_per_sec: 0 }).is_err());
}

#[tokio::test]
async fn reset_sends_rst_to_both_sides_and_new_connections_pass() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    client.write_all(b"a").await.unwrap();
    assert_eq!(read_n(&mut server, 1).await, b"a");

    proxy.set(Fault::Reset { refuse_ms: 0 }).unwrap();
    let seen = next_read(&mut client).await.expect_err("a reset");
    assert_eq!(seen.kind(), ErrorKind::ConnectionReset, "{seen}");
    let seen = next_read(&mut server).await.expect_err("a reset");
    assert_eq!(seen.kind(), ErrorKind::ConnectionReset, "{seen}");
    assert_eq!(proxy.fault(), Fault::Pass, "a reset acts once");
    counters_reach(&proxy, |c| c.resets == 1 && c.open == 0).await;

    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    client.write_all(b"b").await.unwrap();
    assert_eq!(read_n(&mut server, 1).await, b"b");
}

#[tokio::test]
async fn reset_refuses_new_connections_for_its_window() {
    let proxy = proxy_to(echo_upstream().await).await;
    proxy.set(Fault::Reset { refuse_ms: 60_000 }).unwrap();
    assert!(matches!(proxy.fault(), Fault::Reset { refuse_ms } if refuse_ms > 50_000));
    let mut client = connect(&proxy).await;
    let seen = next_read(&mut client).await.expect_err("a reset");
    assert_eq!(seen.kind(), ErrorKind::ConnectionReset, "{seen}");
    counters_reach(&proxy, |c| c.refused == 1).await;
    // Any other fault ends the window.
    proxy.set(Fault::Pass).unwrap();
    let mut client = connect(&proxy).await;
    round_trip(&mut client, b"back").await;
}

#[tokio::test]
async fn half_open_drops_server_to_client_only() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    proxy
        .set(Fault::HalfOpen {
            drop: Direction::ServerToClient,
        })
        .unwrap();
    client.write_all(b"up").await.unwrap();
    assert_eq!(read_n(&mut server, 2).await, b"up");
    server.write_all(b"down").await.unwrap();
    assert_silent(&mut client).await;
    counters_reach(&proxy, |c| c.dropped_server_to_client == 4).await;
    // The server's FIN is withheld while the direction is dropped.
    server.shutdown().await.unwrap();
    assert_silent(&mut client).await;
    // Dropped, not held: once lifted, only the FIN arrives.
    proxy.set(Fault::Pass).unwrap();
    assert_eq!(next_read(&mut client).await.unwrap(), 0);
}

#[tokio::test]
async fn half_open_drops_client_to_server_only() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    proxy
        .set(Fault::HalfOpen {
            drop: Direction::ClientToServer,
        })
        .unwrap();
    server.write_all(b"down").await.unwrap();
    assert_eq!(read_n(&mut client, 4).await, b"down");
    client.write_all(b"up").await.unwrap();
    assert_silent(&mut server).await;
    counters_reach(&proxy, |c| c.dropped_client_to_server == 2).await;
}

#[tokio::test]
async fn drop_new_closes_new_connections_at_once_and_spares_open_ones() {
    let proxy = proxy_to(echo_upstream().await).await;
    let mut open = connect(&proxy).await;
    round_trip(&mut open, b"before").await;
    proxy.set(Fault::DropNew).unwrap();
    let mut fresh = connect(&proxy).await;
    assert_eq!(next_read(&mut fresh).await.unwrap(), 0, "closed at once");
    round_trip(&mut open, b"still").await;
    counters_reach(&proxy, |c| c.dropped_new == 1 && c.accepted == 2).await;
}

#[tokio::test]
async fn unreachable_upstream_closes_the_client() {
    let free = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = free.local_addr().unwrap();
    drop(free);
    let proxy = proxy_to(upstream).await;
    let mut client = connect(&proxy).await;
    assert_eq!(next_read(&mut client).await.unwrap(), 0);
    counters_reach(&proxy, |c| c.upstream_failures == 1).await;
}

#[tokio::test]
async fn non_loopback_addresses_are_refused() {
    let local = "127.0.0.1:0".parse().unwrap();
    let error = belay_lab::Proxy::start(local, "192.0.2.1:80".parse().unwrap())
        .await
        .expect_err("a non-loopback upstream is refused");
    assert!(
        error.to_string().contains("not a loopback address"),
        "{error}"
    );
    let error = belay_lab::Proxy::start(
        "0.0.0.0:0".parse().unwrap(),
        "127.0.0.1:80".parse().unwrap(),
    )
    .await
    .expect_err("a non-loopback listener is refused");
    assert!(error.to_string().contains("listen"), "{error}");
}
