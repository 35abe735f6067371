//! A relay on loopback with short host timings, and hosts for it.

use std::time::Duration;

use belay_client::host::{Host, HostBuilder, HostError, HostStatus};
use belay_proto::host::{HostTiming, IdleSleepConfig};
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::{Server, ServerConfig};
use tokio::net::TcpListener;

/// `host:ID` is the token of host `ID`; `nobody` names no host; anything
/// else is the user `alice`.
struct Tokens;

impl Authenticator for Tokens {
    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError> {
        match token {
            Some(t) if t.starts_with("host:") => {
                let id = &t["host:".len()..];
                Ok(Principal::user(id).hosting(id))
            }
            Some("bad") => Err(AuthError::Unauthorized("bad token".into())),
            _ => Ok(Principal::user("alice")),
        }
    }
}

/// Hosts beat every 200 ms, a woken host has 2 s to connect, and a host is
/// needed for 300 ms after its last call.
pub(crate) fn timing() -> HostTiming {
    HostTiming::default()
        .with_heartbeat_interval(Duration::from_millis(200))
        .with_connect_allowance(Duration::from_secs(2))
        .with_grace(Duration::from_millis(300))
}

/// The relay's server, its WebSocket URL and its HTTP base.
pub(crate) async fn relay() -> (Server, String, String) {
    let config = ServerConfig::default().with_host_timing(timing());
    let server = Server::builder()
        .config(config)
        .authenticator(Tokens)
        .build();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let serving = server.clone();
    tokio::spawn(async move {
        let router = serving.router().merge(serving.admin_router());
        let _ = serving.serve(listener, router).await;
    });
    (server, format!("ws://{addr}/ws"), format!("http://{addr}"))
}

/// Host `id` of the relay at `url` with an `echo` method, awake at least
/// 200 ms after a wake.
pub(crate) fn host(url: &str, id: &str) -> Host {
    HostBuilder::new(url, format!("host:{id}"))
        .sleep(IdleSleepConfig::default().with_min_awake(Duration::from_millis(200)))
        .interval(Duration::from_millis(200))
        .method("echo", |params| async move { Ok::<_, HostError>(params) })
        .method("fail", |_| async move {
            Err::<serde_json::Value, _>(HostError::new("not_found", "no such file"))
        })
        .start()
}

/// The server error code of a request's outcome.
pub(crate) fn code(
    result: &Result<belay_proto::message::RawJson, belay_client::RequestError>,
) -> String {
    match result {
        Err(belay_client::RequestError::Server { code, .. }) => code.to_string(),
        other => panic!("a server error expected, got {other:?}"),
    }
}

/// Wait (up to 10 s) until the host's status satisfies `done`.
pub(crate) async fn until(host: &Host, done: impl Fn(&HostStatus) -> bool) -> HostStatus {
    let mut status = host.status();
    let seen = tokio::time::timeout(Duration::from_secs(10), status.wait_for(|s| done(s)))
        .await
        .expect("the host reached the state in time")
        .expect("the host is running");
    seen.clone()
}

/// The relay's listing of hosts (`GET /admin/hosts`).
pub(crate) async fn listing(base: &str) -> serde_json::Value {
    let (status, body) = http("GET", base, "/admin/hosts", None).await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).expect("JSON")
}

/// POST the heartbeat with `token`: its status and body.
pub(crate) async fn beat(base: &str, token: &str) -> (u16, String) {
    http("POST", base, "/hosts/heartbeat", Some(token)).await
}

/// One request on a fresh connection to the relay at `base` (`http://ADDR`).
async fn http(method: &str, base: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let addr = base
        .strip_prefix("http://")
        .and_then(|a| a.parse().ok())
        .expect("an http://ADDR base");
    let auth = token.map(|t| format!("Authorization: Bearer {t}"));
    let headers: Vec<&str> = auth.as_deref().into_iter().collect();
    let response =
        belay_test_support::sockets::http_call_with(addr, method, path, &headers, None).await;
    (response.status, response.body)
}
