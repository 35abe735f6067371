//! Each toxic, proven on the wire with plain loopback sockets: one
//! direction or both, stacked, with toxicity drawn from a seed.
//!
//! Nothing sleeps to synchronise: tests wait for bytes, EOFs or resets with
//! generous bounds, and measure time only as lower bounds on delays.

mod common;

use std::io::ErrorKind;
use std::time::Instant;

use belay_lab::{Fault, ProxyError, RefuseWith, Stream, Toxic, ToxicKind};
use common::*;
use tokio::io::AsyncWriteExt;

fn latency(ms: u64) -> ToxicKind {
    ToxicKind::Latency {
        latency_ms: ms,
        jitter_ms: 0,
    }
}

fn elapsed_ms(since: Instant) -> u128 {
    since.elapsed().as_millis()
}

#[tokio::test]
async fn latency_on_downstream_delays_only_server_to_client() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    let toxic = Toxic::new(latency(600)).on(Stream::Downstream);
    proxy.add_toxic(toxic).unwrap();

    let start = Instant::now();
    client.write_all(b"up").await.unwrap();
    assert_eq!(read_n(&mut server, 2).await, b"up");
    let up = elapsed_ms(start);
    assert!(up < 600, "upstream untouched, yet {up} ms");

    let start = Instant::now();
    server.write_all(b"down").await.unwrap();
    assert_eq!(read_n(&mut client, 4).await, b"down");
    let down = elapsed_ms(start);
    assert!(down >= 600, "downstream took {down} ms");
}

#[tokio::test]
async fn latency_with_jitter_never_delays_below_latency_minus_jitter() {
    let proxy = proxy_with(
        echo_upstream().await,
        7,
        vec![Toxic::new(ToxicKind::Latency {
            latency_ms: 150,
            jitter_ms: 50,
        })],
    )
    .await;
    let mut client = connect(&proxy).await;
    for i in 0..4u8 {
        let start = Instant::now();
        round_trip(&mut client, &[i; 3]).await;
        let rtt = elapsed_ms(start);
        assert!(rtt >= 200, "round trip {i} took {rtt} ms (each way ≥ 100)");
    }
}

#[tokio::test]
async fn stacked_latencies_on_both_streams_add_up() {
    let proxy = proxy_to(echo_upstream().await).await;
    let mut client = connect(&proxy).await;
    round_trip(&mut client, b"warm").await;
    let up = Toxic::new(latency(150)).on(Stream::Upstream);
    let down = Toxic::new(latency(150)).on(Stream::Downstream);
    let both = Toxic::new(latency(100)).named("extra");
    for toxic in [up, down, both] {
        proxy.add_toxic(toxic).unwrap();
    }
    let start = Instant::now();
    round_trip(&mut client, b"slow").await;
    let rtt = elapsed_ms(start);
    assert!(rtt >= 500, "150 + 150 + 2 × 100 ms, yet {rtt} ms");
    assert_eq!(proxy.fault(), Fault::Toxics);
}

#[tokio::test]
async fn bandwidth_on_upstream_caps_client_to_server() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    let cap = ToxicKind::Bandwidth {
        bytes_per_sec: 10_000,
    };
    proxy
        .add_toxic(Toxic::new(cap).on(Stream::Upstream))
        .unwrap();
    let start = Instant::now();
    client.write_all(&[5u8; 10_000]).await.unwrap();
    assert_eq!(read_n(&mut server, 10_000).await, vec![5u8; 10_000]);
    let ms = elapsed_ms(start);
    assert!(ms >= 800, "10 kB at 10 kB/s in {ms} ms");
}

#[tokio::test]
async fn blackhole_on_upstream_holds_client_bytes_while_server_bytes_flow() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    let toxic = Toxic::new(ToxicKind::Blackhole).on(Stream::Upstream);
    proxy.add_toxic(toxic).unwrap();
    client.write_all(b"up").await.unwrap();
    assert_silent(&mut server).await;
    server.write_all(b"down").await.unwrap();
    assert_eq!(read_n(&mut client, 4).await, b"down");

    proxy.remove_toxic("blackhole_upstream").unwrap();
    assert_eq!(read_n(&mut server, 2).await, b"up", "held, not dropped");
}

#[tokio::test]
async fn timeout_holds_then_closes_the_connection_after_its_delay() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    let start = Instant::now();
    let toxic = ToxicKind::Timeout { timeout_ms: 400 };
    proxy
        .add_toxic(Toxic::new(toxic).on(Stream::Downstream))
        .unwrap();
    server.write_all(b"lost").await.unwrap();
    assert_eq!(next_read(&mut client).await.unwrap(), 0, "closed, no data");
    let ms = elapsed_ms(start);
    assert!(ms >= 400, "closed after {ms} ms");
    counters_reach(&proxy, |c| c.closed_by_toxic == 1 && c.open == 0).await;
}

#[tokio::test]
async fn timeout_zero_holds_without_closing_until_removed() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    let toxic = ToxicKind::Timeout { timeout_ms: 0 };
    proxy.add_toxic(Toxic::new(toxic)).unwrap();
    server.write_all(b"held").await.unwrap();
    assert_silent(&mut client).await;
    proxy.clear_toxics();
    assert_eq!(read_n(&mut client, 4).await, b"held");
}

#[tokio::test]
async fn reset_peer_resets_both_sides_after_its_delay() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    let start = Instant::now();
    let toxic = ToxicKind::ResetPeer { timeout_ms: 300 };
    proxy.add_toxic(Toxic::new(toxic)).unwrap();
    let seen = next_read(&mut client).await.expect_err("a reset");
    assert_eq!(seen.kind(), ErrorKind::ConnectionReset, "{seen}");
    let ms = elapsed_ms(start);
    assert!(ms >= 300, "reset after {ms} ms");
    let seen = next_read(&mut server).await.expect_err("a reset");
    assert_eq!(seen.kind(), ErrorKind::ConnectionReset, "{seen}");
    counters_reach(&proxy, |c| c.resets == 1).await;
}

#[tokio::test]
async fn reset_peer_zero_resets_new_connections_at_once() {
    let toxic = Toxic::new(ToxicKind::ResetPeer { timeout_ms: 0 });
    let proxy = proxy_with(echo_upstream().await, 0, vec![toxic]).await;
    let mut client = connect(&proxy).await;
    let seen = next_read(&mut client).await.expect_err("a reset");
    assert_eq!(seen.kind(), ErrorKind::ConnectionReset, "{seen}");
}

#[tokio::test]
async fn slow_close_delays_the_fin_but_not_the_data() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    let toxic = ToxicKind::SlowClose { delay_ms: 500 };
    proxy
        .add_toxic(Toxic::new(toxic).on(Stream::Downstream))
        .unwrap();
    server.write_all(b"bye").await.unwrap();
    let start = Instant::now();
    server.shutdown().await.unwrap();
    assert_eq!(read_n(&mut client, 3).await, b"bye");
    assert_eq!(next_read(&mut client).await.unwrap(), 0, "then the FIN");
    let ms = elapsed_ms(start);
    assert!(ms >= 500, "FIN after {ms} ms");
}

#[tokio::test]
async fn slicer_cuts_data_into_small_delayed_slices() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    let slicer = ToxicKind::Slicer {
        average_size: 10,
        size_variation: 0,
        delay_us: 20_000,
    };
    proxy
        .add_toxic(Toxic::new(slicer).on(Stream::Downstream))
        .unwrap();
    let data: Vec<u8> = (0..100).collect();
    let start = Instant::now();
    server.write_all(&data).await.unwrap();
    server.shutdown().await.unwrap();
    let reads = reads_until_eof(&mut client).await;
    let ms = elapsed_ms(start);
    assert_eq!(reads.concat(), data, "every byte, in order");
    assert!(reads.len() >= 3, "{} reads: {reads:?}", reads.len());
    assert!(ms >= 180, "10 slices 20 ms apart in {ms} ms");
}

#[tokio::test]
async fn limit_data_closes_the_connection_after_its_bytes() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    let toxic = ToxicKind::LimitData { bytes: 10 };
    proxy
        .add_toxic(Toxic::new(toxic).on(Stream::Downstream))
        .unwrap();
    server.write_all(&[9u8; 100]).await.unwrap();
    let reads = reads_until_eof(&mut client).await;
    assert_eq!(reads.concat(), vec![9u8; 10], "exactly the limit, then EOF");
    counters_reach(&proxy, |c| {
        c.closed_by_toxic == 1 && c.server_to_client == 10
    })
    .await;
}

#[tokio::test]
async fn discard_on_downstream_drops_server_bytes_and_keeps_sockets_open() {
    let (upstream, mut accepted) = socket_upstream().await;
    let proxy = proxy_to(upstream).await;
    let (mut client, mut server) = connect_pair(&proxy, &mut accepted).await;
    let toxic = Toxic::new(ToxicKind::Discard).on(Stream::Downstream);
    proxy.add_toxic(toxic).unwrap();
    server.write_all(b"gone").await.unwrap();
    assert_silent(&mut client).await;
    client.write_all(b"up").await.unwrap();
    assert_eq!(read_n(&mut server, 2).await, b"up");
    counters_reach(&proxy, |c| c.dropped_server_to_client == 4).await;
}

#[tokio::test]
async fn refuse_resets_new_connections_and_spares_open_ones() {
    let proxy = proxy_to(echo_upstream().await).await;
    let mut open = connect(&proxy).await;
    round_trip(&mut open, b"before").await;
    let refuse = ToxicKind::Refuse {
        with: RefuseWith::Reset,
    };
    proxy.add_toxic(Toxic::new(refuse)).unwrap();
    let mut fresh = connect(&proxy).await;
    let seen = next_read(&mut fresh).await.expect_err("a reset");
    assert_eq!(seen.kind(), ErrorKind::ConnectionReset, "{seen}");
    round_trip(&mut open, b"still").await;
    counters_reach(&proxy, |c| c.refused == 1).await;

    proxy.remove_toxic("refuse_both").unwrap();
    let mut after = connect(&proxy).await;
    round_trip(&mut after, b"back").await;
}

#[tokio::test]
async fn refuse_upgrades_answers_an_upgrade_403_and_passes_plain_requests() {
    let proxy = proxy_to(echo_upstream().await).await;
    let mut open = connect(&proxy).await;
    round_trip(&mut open, b"before").await;
    proxy
        .add_toxic(Toxic::new(ToxicKind::RefuseUpgrades))
        .unwrap();

    let mut upgrade = connect(&proxy).await;
    upgrade
        .write_all(
            b"GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        )
        .await
        .unwrap();
    let answer = reads_until_eof(&mut upgrade).await.concat();
    assert!(
        answer.starts_with(b"HTTP/1.1 403 Forbidden\r\n"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    counters_reach(&proxy, |c| c.upgrades_refused == 1).await;

    // A plain request reaches the upstream whole (the echo returns it).
    let plain = b"POST /sse HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi";
    let mut fresh = connect(&proxy).await;
    fresh.write_all(plain).await.unwrap();
    assert_eq!(read_n(&mut fresh, plain.len()).await, plain);
    round_trip(&mut open, b"still").await;
}

#[tokio::test]
async fn accept_rate_resets_the_excess_within_its_window() {
    let rate = ToxicKind::AcceptRate {
        max: 2,
        window_ms: 60_000,
    };
    let proxy = proxy_with(echo_upstream().await, 0, vec![Toxic::new(rate)]).await;
    let mut first = connect(&proxy).await;
    round_trip(&mut first, b"1").await;
    let mut second = connect(&proxy).await;
    round_trip(&mut second, b"2").await;
    let mut third = connect(&proxy).await;
    let seen = next_read(&mut third).await.expect_err("a reset");
    assert_eq!(seen.kind(), ErrorKind::ConnectionReset, "{seen}");
    counters_reach(&proxy, |c| c.rate_limited == 1 && c.accepted == 3).await;

    proxy.clear_toxics();
    let mut fourth = connect(&proxy).await;
    round_trip(&mut fourth, b"4").await;
}

/// Which of `n` successive connections `proxy` lets through.
async fn admitted(proxy: &belay_lab::Proxy, n: usize) -> Vec<bool> {
    let mut pattern = Vec::new();
    for _ in 0..n {
        let mut client = connect(proxy).await;
        // A refused connection ends (FIN, or RST if our byte hit it first).
        let _ = client.write_all(b"?").await;
        pattern.push(matches!(next_read(&mut client).await, Ok(n) if n > 0));
    }
    pattern
}

#[tokio::test]
async fn toxicity_picks_the_same_connections_for_the_same_seed() {
    let upstream = echo_upstream().await;
    let refuse_half = || {
        let refuse = ToxicKind::Refuse {
            with: RefuseWith::Close,
        };
        vec![
            Toxic::new(refuse).with_toxicity(0.5),
            Toxic::new(ToxicKind::Blackhole).with_toxicity(0.0),
        ]
    };
    let first = proxy_with(upstream, 42, refuse_half()).await;
    let second = proxy_with(upstream, 42, refuse_half()).await;
    let pattern = admitted(&first, 16).await;
    assert_eq!(
        pattern,
        admitted(&second, 16).await,
        "same seed, same picks"
    );
    assert!(
        pattern.contains(&true) && pattern.contains(&false),
        "{pattern:?}"
    );
    let c = first.counters();
    let refused = pattern.iter().filter(|a| !**a).count() as u64;
    assert_eq!(c.dropped_new, refused);
}

#[tokio::test]
async fn set_replaces_the_toxics_and_the_api_refuses_bad_requests() {
    let proxy = proxy_to(echo_upstream().await).await;
    proxy.add_toxic(Toxic::new(latency(10))).unwrap();
    assert!(matches!(
        proxy.add_toxic(Toxic::new(latency(20))),
        Err(ProxyError::DuplicateToxic(name)) if name == "latency_both"
    ));
    assert!(matches!(
        proxy.add_toxic(Toxic::new(latency(1)).named("x").with_toxicity(2.0)),
        Err(ProxyError::InvalidToxic(_))
    ));
    assert!(matches!(
        proxy.remove_toxic("nope"),
        Err(ProxyError::NoSuchToxic(_))
    ));
    proxy.set(Fault::Blackhole).unwrap();
    let names: Vec<String> = proxy.toxics().iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(names, ["blackhole_both"]);
    assert_eq!(proxy.fault(), Fault::Blackhole);
    proxy.set(Fault::Pass).unwrap();
    assert!(proxy.toxics().is_empty());
    let mut client = connect(&proxy).await;
    round_trip(&mut client, b"clean").await;
}
