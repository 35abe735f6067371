//! One source cannot take what the others need: sockets that never finish
//! their upgrade are bounded per source and in all, slow handshakes time
//! out, a source gets only its share of the admission budget, and behind a
//! trusted proxy the client's own address is what counts.

use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;

use crate::common::{self, exchange, tcp_from, upgrade_request, Raw, SOON};
use crate::{echo_works, server};
use belay_proto::server::{IpRange, TrustedProxies};
use belay_server::ServerConfig;

/// Whether the server closed `tcp` (reading gives end of stream or an
/// error) within `bound`.
async fn closed_within(tcp: &mut tokio::net::TcpStream, bound: Duration) -> bool {
    let mut buf = [0u8; 512];
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        match tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

#[tokio::test]
async fn idle_sockets_from_one_source_are_bounded_and_other_sources_still_connect() {
    let server = server(ServerConfig::default().with_pending_upgrades(2_048, 8));
    let addr = common::start(&server).await;
    let mut idle = Vec::new();
    for _ in 0..8 {
        idle.push(tcp_from("127.0.0.2", addr).await);
    }
    crate::gauge_until(&server, "belay_pending_upgrades", |n| n >= 8.0).await;
    let mut ninth = tcp_from("127.0.0.2", addr).await;
    let refused = exchange(&mut ninth, b"").await.expect("a canned answer");
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("retry-after"), Some("1"));
    let (mut other, _) = Raw::connected(addr, None).await;
    echo_works(&mut other, 1).await;
}

#[tokio::test]
async fn sockets_not_yet_upgraded_are_bounded_over_all_sources() {
    let server = server(ServerConfig::default().with_pending_upgrades(6, 64));
    let addr = common::start(&server).await;
    let mut idle = Vec::new();
    for n in 2..8 {
        idle.push(tcp_from(&format!("127.0.0.{n}"), addr).await);
    }
    crate::gauge_until(&server, "belay_pending_upgrades", |n| n >= 6.0).await;
    let mut more = tcp_from("127.0.0.9", addr).await;
    assert_eq!(exchange(&mut more, b"").await.map(|r| r.status), Some(503));
    drop(idle);
    crate::gauge_until(&server, "belay_pending_upgrades", |n| n == 0.0).await;
    let (mut other, _) = Raw::connected(addr, None).await;
    echo_works(&mut other, 1).await;
}

#[tokio::test]
async fn connections_from_one_ip_are_counted_from_the_accept_not_the_upgrade() {
    let mut config = ServerConfig::default();
    config.limits.set_max_connections_per_ip(3);
    let server = server(config);
    let addr = common::start(&server).await;
    let _session = Raw::open_from("127.0.0.2", addr).await.expect("upgrade");
    let _idle = [
        tcp_from("127.0.0.2", addr).await,
        tcp_from("127.0.0.2", addr).await,
    ];
    crate::gauge_until(&server, "belay_pending_upgrades", |n| n >= 2.0).await;
    let mut fourth = tcp_from("127.0.0.2", addr).await;
    let refused = exchange(&mut fourth, b"").await.expect("a canned answer");
    assert_eq!(refused.status, 429);
    assert!(refused.header("retry-after").is_some());
}

#[tokio::test]
async fn a_slow_or_silent_handshake_is_closed_within_the_upgrade_timeout() {
    let server = server(ServerConfig::default().with_upgrade_timeout(Duration::from_millis(800)));
    let addr = common::start(&server).await;
    let mut silent = tcp_from("127.0.0.2", addr).await;
    let mut trickle = tcp_from("127.0.0.3", addr).await;
    let request = upgrade_request(addr, "");
    let started = tokio::time::Instant::now();
    let mut closed = false;
    for byte in request.as_bytes() {
        if trickle.write_all(&[*byte]).await.is_err() {
            closed = true;
            break;
        }
        if closed_within(&mut trickle, Duration::from_millis(50)).await {
            closed = true;
            break;
        }
    }
    assert!(closed, "the trickled upgrade was closed");
    assert!(started.elapsed() < SOON);
    assert!(
        closed_within(&mut silent, SOON).await,
        "the silent socket was closed"
    );
    crate::gauge_until(&server, "belay_pending_upgrades", |n| n == 0.0).await;
}

#[tokio::test]
async fn one_source_over_its_admission_share_leaves_others_admitted() {
    let server = server(
        ServerConfig::default()
            .with_accept_rate(1_000.0)
            .with_accept_rate_per_ip(5.0),
    );
    let addr = common::start(&server).await;
    let mut statuses = Vec::new();
    let mut upgraded = Vec::new();
    for _ in 0..30 {
        let mut tcp = tcp_from("127.0.0.2", addr).await;
        let answer = exchange(&mut tcp, upgrade_request(addr, "").as_bytes()).await;
        statuses.push(answer.map_or(0, |a| a.status));
        upgraded.push(tcp);
    }
    let admitted = statuses.iter().filter(|s| **s == 101).count();
    let refused = statuses.iter().filter(|s| **s == 503).count();
    assert!((5..=7).contains(&admitted), "{statuses:?}");
    assert_eq!(admitted + refused, 30, "{statuses:?}");
    let (mut other, _) = Raw::connected(addr, None).await;
    echo_works(&mut other, 1).await;
}

fn behind_proxy(proxy_protocol: bool) -> belay_server::Server {
    let proxies = TrustedProxies::new(vec!["127.0.0.1".parse::<IpRange>().unwrap()]);
    let mut config = ServerConfig::default().with_trusted_proxies(proxies, proxy_protocol);
    config.limits.set_max_connections_per_ip(1);
    server(config)
}

async fn via_proxy(
    addr: std::net::SocketAddr,
    prefix: &str,
    extra: &str,
) -> (tokio::net::TcpStream, u16) {
    let mut tcp = tcp_from("127.0.0.1", addr).await;
    let request = format!("{prefix}{}", upgrade_request(addr, extra));
    let status = exchange(&mut tcp, request.as_bytes())
        .await
        .map_or(0, |a| a.status);
    (tcp, status)
}

#[tokio::test]
async fn behind_a_trusted_proxy_the_proxy_protocol_source_is_counted() {
    let server = behind_proxy(true);
    let addr = common::start(&server).await;
    let header = "PROXY TCP4 198.51.100.7 127.0.0.1 5000 80\r\n";
    let (_first, status) = via_proxy(addr, header, "").await;
    assert_eq!(status, 101);
    let (_second, status) = via_proxy(addr, header, "").await;
    assert_eq!(status, 429, "one connection per client IP");
    let other = "PROXY TCP4 198.51.100.8 127.0.0.1 5001 80\r\n";
    let (_third, status) = via_proxy(addr, other, "").await;
    assert_eq!(status, 101);
    // Without a header the trusted peer's connection is not served.
    let mut bare = tcp_from("127.0.0.1", addr).await;
    assert!(exchange(&mut bare, upgrade_request(addr, "").as_bytes())
        .await
        .is_none());
}

#[tokio::test]
async fn behind_a_trusted_proxy_the_forwarded_for_client_is_counted() {
    let server = behind_proxy(false);
    let addr = common::start(&server).await;
    let (_first, status) = via_proxy(addr, "", "X-Forwarded-For: 198.51.100.7\r\n").await;
    assert_eq!(status, 101);
    let (_second, status) = via_proxy(addr, "", "X-Forwarded-For: 198.51.100.7\r\n").await;
    assert_eq!(status, 429);
    let (_third, status) = via_proxy(addr, "", "Forwarded: for=198.51.100.9\r\n").await;
    assert_eq!(status, 101);
    // A peer that is not trusted cannot claim another address.
    let mut direct = tcp_from("127.0.0.2", addr).await;
    let forged = upgrade_request(addr, "X-Forwarded-For: 198.51.100.50\r\n");
    assert_eq!(
        exchange(&mut direct, forged.as_bytes())
            .await
            .map(|a| a.status),
        Some(101)
    );
    let mut again = tcp_from("127.0.0.2", addr).await;
    assert_eq!(
        exchange(&mut again, upgrade_request(addr, "").as_bytes())
            .await
            .map(|a| a.status),
        Some(429),
        "counted as 127.0.0.2"
    );
}

#[tokio::test]
async fn from_a_peer_that_is_not_trusted_forwarding_headers_change_nothing() {
    let server = behind_proxy(false);
    let addr = common::start(&server).await;
    let forged = |client: &str| upgrade_request(addr, &format!("X-Forwarded-For: {client}\r\n"));
    let mut first = tcp_from("127.0.0.2", addr).await;
    let status = exchange(&mut first, forged("198.51.100.50").as_bytes()).await;
    assert_eq!(status.map(|a| a.status), Some(101));
    // Naming another client does not get 127.0.0.2 past its own cap...
    let mut second = tcp_from("127.0.0.2", addr).await;
    let status = exchange(&mut second, forged("198.51.100.51").as_bytes()).await;
    assert_eq!(status.map(|a| a.status), Some(429), "counted as 127.0.0.2");
    // ...and the client it named was not charged for it.
    let (_named, status) = via_proxy(addr, "", "X-Forwarded-For: 198.51.100.50\r\n").await;
    assert_eq!(status, 101, "198.51.100.50 was not counted");
}
