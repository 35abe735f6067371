//! One caller cannot take every call slot of a resident host: a connection
//! holds at most its share of `max_calls_per_host` (a quarter, at least
//! one), its further `$call`s are refused `rate_limited`, and another
//! user's call still gets a slot (docs/HOSTS.md).

use std::net::SocketAddr;
use std::time::Duration;

use belay_proto::host::HostTiming;
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::{Server, ServerConfig};
use serde_json::{json, Value};

use crate::common::{self, http_call_with, Raw, SOON};
use crate::{error_code, reply_to, request};

/// `host:ID` is the token of host `ID`; any other token is the user it names.
struct Tokens;

impl Authenticator for Tokens {
    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError> {
        match token {
            Some(t) if t.starts_with("host:") => {
                let id = &t["host:".len()..];
                Ok(Principal::user(id).hosting(id))
            }
            Some(user) => Ok(Principal::user(user)),
            None => Err(AuthError::Unauthorized("a token is required".into())),
        }
    }
}

/// A relay allowing 8 calls per host whose hosts beat every minute, so a
/// call to a host that never connects waits (holding its slot) far longer
/// than the test runs; with host `pc-1` registered by one heartbeat.
async fn relay() -> SocketAddr {
    let timing = HostTiming::default().with_heartbeat_interval(Duration::from_secs(60));
    let config = ServerConfig::default()
        .with_host_timing(timing)
        .with_host_limits(100, 8);
    let server = Server::builder()
        .config(config)
        .authenticator(Tokens)
        .build();
    let addr = common::start_with(&server, server.router().merge(server.admin_router())).await;
    let beat = http_call_with(
        addr,
        "POST",
        "/hosts/heartbeat",
        &["Authorization: Bearer host:pc-1"],
        None,
    )
    .await;
    assert_eq!(beat.status, 200, "{}", beat.body);
    addr
}

/// The calls host `pc-1` holds, as the admin listing says.
async fn calls(addr: SocketAddr) -> u64 {
    let listing = http_call_with(addr, "GET", "/admin/hosts", &[], None).await;
    let listing: Value = serde_json::from_str(&listing.body).expect("JSON");
    listing["hosts"][0]["calls"].as_u64().expect("calls")
}

/// Wait (within `SOON`) until host `pc-1` holds `n` calls.
async fn until_calls(addr: SocketAddr, n: u64) {
    let deadline = tokio::time::Instant::now() + SOON;
    while calls(addr).await != n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{n} calls within the bound"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `raw` calls `echo` on `pc-1` as request `id`: `true` when the call took
/// a slot (the host then holds `held + 1`), `false` when it was refused
/// `rate_limited`.
async fn call_takes_a_slot(addr: SocketAddr, raw: &mut Raw, id: u64, held: u64) -> bool {
    let params = json!({"host": "pc-1", "method": "echo", "params": id});
    raw.send(&request(id, "$call", params, None)).await;
    tokio::select! {
        reply = reply_to(raw, id) => {
            assert_eq!(error_code(&reply), "rate_limited", "{reply:?}");
            false
        }
        () = until_calls(addr, held + 1) => true,
    }
}

#[tokio::test]
async fn one_connection_holds_its_share_and_another_users_call_gets_a_slot() {
    let addr = relay().await;
    let (mut mallory, _) = Raw::connected(addr, Some("mallory")).await;
    let mut held = 0;
    for id in 1..=8 {
        if !call_takes_a_slot(addr, &mut mallory, id, held).await {
            break;
        }
        held += 1;
    }
    let (mut alice, _) = Raw::connected(addr, Some("alice")).await;
    assert!(
        call_takes_a_slot(addr, &mut alice, 1, held).await,
        "another user's call gets a slot (mallory holds {held})"
    );
    assert_eq!(held, 2, "one connection holds a quarter of the 8 slots");
}
