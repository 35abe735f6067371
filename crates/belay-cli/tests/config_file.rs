//! `belay serve --config FILE` and `belay config check FILE`, end to end
//! against the binary: every error of a bad file with its line, a
//! defaults file that checks clean, a server whose settings and JWT auth
//! come from the file (the secret from the environment), and flags that
//! cannot be combined with a file.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use belay_proto::message::{ClientMessage, Connect, ServerMessage, Subscribe};
use belay_test_support::services::free_port;
use belay_test_support::serving::spawn_listening;
use belay_test_support::sockets::{Closed, Raw};
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::json;
use tokio::process::{Child, Command};

const SOON: Duration = Duration::from_secs(5);
const SECRET: &str = "a-test-secret-of-some-length";

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("belay-config-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn belay() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_belay"))
}

#[test]
fn check_reports_every_error_of_a_file_with_its_line_and_exits_2() {
    let dir = temp_dir("bad");
    let file = dir.join("belay.toml");
    std::fs::write(
        &file,
        "[server]\nlisten = \"127.0.0.1:8080\"\n[limits]\nmax_fram_len = 10\nburst = -1\n[auth]\nmode = \"jwt\"\nsecret = \"x\"\n",
    )
    .expect("write");
    let out = belay()
        .args(["config", "check"])
        .arg(&file)
        .env_remove("BELAY_AUTH_JWT_SECRET")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let name = file.display().to_string();
    for line in [
        format!(
            "{name}:4:1: unknown key `max_fram_len` in [limits] (did you mean `max_frame_len`?)"
        ),
        format!("{name}:5:9: limits.burst: expected 1 to"),
        format!("{name}:8:1: unknown key `secret` in [auth] (did you mean `jwt_secret`?)"),
        format!("{name}:7:8: auth.mode = \"jwt\" with HS256 needs auth.jwt_secret"),
    ] {
        assert!(stderr.contains(&line), "missing {line:?} in:\n{stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_defaults_file_checks_clean() {
    let dir = temp_dir("defaults");
    let out = belay().args(["config", "defaults"]).output().expect("run");
    assert!(out.status.success());
    let file = dir.join("defaults.toml");
    std::fs::write(&file, &out.stdout).expect("write");
    let check = belay()
        .args(["config", "check"])
        .arg(&file)
        .output()
        .expect("run");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(String::from_utf8_lossy(&check.stdout).ends_with(": ok\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn flags_cannot_be_combined_with_a_config_file() {
    let dir = temp_dir("clash");
    let file = dir.join("belay.toml");
    std::fs::write(&file, "").expect("write");
    let out = belay()
        .args(["serve", "--config"])
        .arg(&file)
        .args(["--max-in-flight", "3", "--ping-interval-ms", "500"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("put these in the file instead: --ping-interval-ms, --max-in-flight")
            || stderr
                .contains("put these in the file instead: --max-in-flight, --ping-interval-ms"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `belay serve --config FILE` (with `--demo`: its `feed` ticks every
/// 50 ms) with the JWT secret in the environment.
async fn serve_with(file: &Path, demo: bool) -> (Child, SocketAddr) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_belay"));
    command.arg("serve");
    if demo {
        command.args(["--demo", "--feed-every-ms", "50"]);
    }
    command
        .arg("--config")
        .arg(file)
        .env("BELAY_AUTH_JWT_SECRET", SECRET);
    spawn_listening(&mut command).await
}

async fn serve(file: &Path) -> (Child, SocketAddr) {
    serve_with(file, false).await
}

async fn serve_demo(file: &Path) -> (Child, SocketAddr) {
    serve_with(file, true).await
}

fn token(claims: serde_json::Value, secret: &str) -> String {
    encode(
        &Header::default(),
        &claims,
        &EncodingKey::from_secret(secret.as_bytes()).expect("a key"),
    )
    .expect("a token")
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

async fn refused_with(addr: SocketAddr, token: &str) -> Closed {
    let mut raw = Raw::open(addr).await;
    raw.send(&ClientMessage::Connect(Connect {
        protocol: 1,
        token: Some(token.to_owned()),
        session: None,
    }))
    .await;
    raw.closed_within(SOON).await
}

#[tokio::test]
async fn a_server_from_a_config_file_checks_jwts_and_their_channel_grants() {
    let dir = temp_dir("jwt");
    let file = dir.join("belay.toml");
    let port = free_port();
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[auth]\nmode = \"jwt\"\njwt_audience = \"belay-tests\"\n[heartbeat]\nping_interval_ms = 2000\n"
        ),
    )
    .expect("write");
    let (_server, addr) = serve(&file).await;
    assert_eq!(addr.port(), port, "listen comes from the file");

    let good =
        json!({"sub": "alice", "exp": now() + 600, "aud": "belay-tests", "channels": ["chat:*"]});
    let (mut raw, welcome) = Raw::connected(addr, Some(&token(good.clone(), SECRET))).await;
    let ServerMessage::Welcome(welcome) = welcome else {
        panic!("welcome")
    };
    assert_eq!(
        welcome.ping_interval_ms,
        Some(2_000),
        "heartbeat from the file"
    );
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: "chat:lobby".into(),
        since: None,
        token: None,
    }))
    .await;
    let granted = tokio::time::timeout(SOON, raw.recv_skipping_pings())
        .await
        .expect("in time")
        .expect("open");
    assert!(
        matches!(granted, ServerMessage::Subscribed(_)),
        "{granted:?}"
    );
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: "orders".into(),
        since: None,
        token: None,
    }))
    .await;
    let refused = tokio::time::timeout(SOON, raw.recv_skipping_pings())
        .await
        .expect("in time")
        .expect("open");
    let ServerMessage::Unsubscribed(refused) = refused else {
        panic!("refused: {refused:?}")
    };
    assert_eq!(refused.code, "forbidden");

    let expired = json!({"sub": "alice", "exp": now() - 10, "aud": "belay-tests"});
    assert_eq!(
        refused_with(addr, &token(expired, SECRET)).await,
        Closed::Frame(4001, "unauthorized: token expired".into())
    );
    assert_eq!(
        refused_with(addr, &token(good.clone(), "another-secret")).await,
        Closed::Frame(4001, "unauthorized: bad signature".into())
    );
    let elsewhere = json!({"sub": "alice", "exp": now() + 600, "aud": "someone-else"});
    assert_eq!(
        refused_with(addr, &token(elsewhere, SECRET)).await,
        Closed::Frame(4001, "unauthorized: wrong audience".into())
    );
    assert_eq!(
        refused_with(addr, "not.a.jwt").await,
        Closed::Frame(4001, "unauthorized: malformed token (not a JWT)".into())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn jwt_file(name: &str) -> (PathBuf, PathBuf) {
    let dir = temp_dir(name);
    let file = dir.join("belay.toml");
    std::fs::write(
        &file,
        "[server]\nlisten = \"127.0.0.1:0\"\n[auth]\nmode = \"jwt\"\n[heartbeat]\nping_interval_ms = 1000\n",
    )
    .expect("write");
    (dir, file)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_refreshes_its_token_over_several_expiries_without_reconnecting() {
    use belay_client::{Client, ClientEvent, Item};
    use belay_proto::Event;
    let (dir, file) = jwt_file("refresh");
    let (_server, addr) = serve_demo(&file).await;
    // Tokens live 3 s (whole seconds: 2–3 s left when issued), leeway 0.
    let client = Client::builder(format!("ws://{addr}/ws"))
        .token_provider(|| async {
            let claims = json!({"sub": "alice", "exp": now() + 3, "channels": ["feed"]});
            Ok(token(claims, SECRET))
        })
        .connect()
        .expect("a usable URL");
    let mut events = client.events();
    let mut feed = client.subscribe("feed").await.expect("subscribe");
    let (mut refreshes, mut sessions, mut offsets) = (0, 0, Vec::new());
    let watched = tokio::time::timeout(Duration::from_secs(30), async {
        while refreshes < 4 {
            tokio::select! {
                event = events.recv() => match event.expect("events") {
                    ClientEvent::Session(Event::TokenWanted { .. }) => refreshes += 1,
                    ClientEvent::Session(Event::Connected { .. }) => sessions += 1,
                    ClientEvent::Session(Event::Disconnected { reason, .. }) => {
                        panic!("disconnected: {reason:?}")
                    }
                    _ => {}
                },
                item = feed.next() => match item.expect("the feed goes on") {
                    Item::Publication(p) => offsets.push(p.offset),
                    other => panic!("{other:?}"),
                },
            }
        }
    })
    .await;
    assert!(watched.is_ok(), "four refreshes within 30 s ({refreshes})");
    assert!(sessions <= 1, "one session: {sessions}");
    assert!(offsets.len() > 100, "the feed flowed: {}", offsets.len());
    assert!(
        offsets.windows(2).all(|w| w[1] == w[0] + 1),
        "no gap in the feed"
    );
    client.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_refresh_that_names_another_user_is_refused_with_4001() {
    let (dir, file) = jwt_file("refresh-other");
    let (_server, addr) = serve_demo(&file).await;
    let alice = token(json!({"sub": "alice", "exp": now() + 60}), SECRET);
    let (mut raw, _) = Raw::connected(addr, Some(&alice)).await;
    raw.send(&ClientMessage::Refresh(belay_proto::message::Refresh {
        token: token(json!({"sub": "mallory", "exp": now() + 60}), SECRET),
    }))
    .await;
    assert_eq!(
        raw.closed_within(SOON).await,
        Closed::Frame(
            4001,
            "unauthorized: the refreshed token names another user".into()
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_good_refresh_is_confirmed_with_its_expiry() {
    let (dir, file) = jwt_file("refresh-good");
    let (_server, addr) = serve_demo(&file).await;
    let (mut raw, welcome) = Raw::connected(
        addr,
        Some(&token(json!({"sub": "alice", "exp": now() + 60}), SECRET)),
    )
    .await;
    let ServerMessage::Welcome(welcome) = welcome else {
        panic!("welcome")
    };
    let first = welcome.expires_in_ms.expect("the expiry is announced");
    assert!((50_000..=60_000).contains(&first), "{first}");
    raw.send(&ClientMessage::Refresh(belay_proto::message::Refresh {
        token: token(json!({"sub": "alice", "exp": now() + 600}), SECRET),
    }))
    .await;
    let confirmed = tokio::time::timeout(SOON, async {
        loop {
            match raw.recv_skipping_pings().await {
                Some(ServerMessage::Refreshed(r)) => return r,
                Some(_) => continue,
                None => panic!("closed"),
            }
        }
    })
    .await
    .expect("refreshed in time");
    let later = confirmed.expires_in_ms.expect("the new expiry");
    assert!((590_000..=600_000).contains(&later), "{later}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The token lifecycle against the real server (spec/PROTOCOL.md §2.8):
/// an expired start token is replaced by the provider's instead of halting,
/// and a provider that cannot answer for a while is asked again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_replaces_an_expired_start_token_and_its_failures_are_retried() {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    use belay_client::{Client, TokenError};
    use belay_proto::backoff::BackoffPolicy;
    let (dir, file) = jwt_file("lifecycle");
    let (_server, addr) = serve_demo(&file).await;
    let expired = token(
        json!({"sub": "alice", "exp": now() - 60, "channels": ["feed"]}),
        SECRET,
    );
    // The backend fails the first two calls (unreachable), then answers.
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let client = Client::builder(format!("ws://{addr}/ws"))
        .configure(|c| {
            c.set_backoff(BackoffPolicy::fixed(Duration::from_millis(100)));
        })
        .token(expired)
        .token_provider(move || {
            let call = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                if call < 2 {
                    return Err(TokenError::Unavailable);
                }
                Ok(token(
                    json!({"sub": "alice", "exp": now() + 60, "channels": ["feed"]}),
                    SECRET,
                ))
            }
        })
        .connect()
        .expect("a usable URL");
    let ready = tokio::time::timeout(Duration::from_secs(20), client.ready()).await;
    assert!(
        matches!(ready, Ok(Ok(()))),
        "ready with the provider's token: {ready:?}, {:?}",
        client.status().borrow().clone()
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "asked after the refusal, twice more after its failures"
    );
    client.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server whose demo `feed` needs a subscription token.
fn token_feed_file(name: &str) -> (PathBuf, PathBuf) {
    let (dir, file) = jwt_file(name);
    let mut text = std::fs::read_to_string(&file).expect("read");
    text.push_str("[[namespace]]\npattern = \"feed\"\nsubscribe = \"token\"\n");
    std::fs::write(&file, text).expect("write");
    (dir, file)
}

/// A subscription token for `feed`, good for `seconds` (whole seconds).
fn feed_token(seconds: u64) -> String {
    let claims = json!({"sub": "alice", "channel": "feed", "exp": now() + seconds});
    token(claims, SECRET)
}

/// spec/PROTOCOL.md §5.8 against the real server: the server says when a
/// subscription token expires (`sub_expiring`), the client's provider gives
/// a new one, sent as `sub_refresh`: the feed flows past several expiries
/// without a gap and without leaving the channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_token_is_refreshed_in_band_before_it_expires() {
    use belay_client::{Client, ClientEvent, Item};
    use belay_proto::Event;
    let (dir, file) = token_feed_file("sub-refresh");
    let (_server, addr) = serve_demo(&file).await;
    let client = Client::builder(format!("ws://{addr}/ws"))
        .token(token(json!({"sub": "alice", "exp": now() + 600}), SECRET))
        .subscription_token_provider(|channel| async move {
            assert_eq!(channel, "feed");
            Ok(feed_token(3))
        })
        .connect()
        .expect("a usable URL");
    let mut events = client.events();
    let mut feed = client
        .subscribe_with_token("feed", &feed_token(3))
        .await
        .expect("subscribe");
    let (mut asks, mut offsets) = (0, Vec::new());
    let watched = tokio::time::timeout(Duration::from_secs(30), async {
        while asks < 3 {
            tokio::select! {
                event = events.recv() => match event.expect("events") {
                    ClientEvent::Session(Event::SubscriptionTokenWanted { .. }) => asks += 1,
                    ClientEvent::Session(Event::SubscriptionLost { code, .. }) => panic!("lost: {code}"),
                    _ => {}
                },
                item = feed.next() => match item.expect("the feed goes on") {
                    Item::Publication(p) => offsets.push(p.offset),
                    other => panic!("{other:?}"),
                },
            }
        }
    })
    .await;
    assert!(
        watched.is_ok(),
        "three subscription tokens asked within 30 s ({asks})"
    );
    assert!(offsets.len() > 50, "the feed flowed: {}", offsets.len());
    assert!(
        offsets.windows(2).all(|w| w[1] == w[0] + 1),
        "no gap in the feed"
    );
    client.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without a new token the subscription ends at the expiry (`unsubscribed`
/// `expired`, by the server's timer); the resubscribe with the expired
/// token is refused for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_whose_token_expires_unrefreshed_ends() {
    use belay_client::{Client, ClientEvent, Item};
    use belay_proto::Event;
    let (dir, file) = token_feed_file("sub-expiry");
    let (_server, addr) = serve_demo(&file).await;
    let client = Client::builder(format!("ws://{addr}/ws"))
        .token(token(json!({"sub": "alice", "exp": now() + 600}), SECRET))
        .connect()
        .expect("a usable URL");
    let mut events = client.events();
    let mut feed = client
        .subscribe_with_token("feed", &feed_token(2))
        .await
        .expect("subscribe");
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        let mut lost = None;
        loop {
            tokio::select! {
                event = events.recv() => {
                    if let Ok(ClientEvent::Session(Event::SubscriptionLost { code, .. })) = event {
                        lost = Some(code);
                    }
                }
                item = feed.next() => match item {
                    Some(Item::Refused { code }) => return (lost, code),
                    Some(_) => {}
                    None => panic!("the feed ended without a refusal"),
                },
            }
        }
    })
    .await
    .expect("ended within 20 s");
    assert_eq!(
        ended.0.as_deref(),
        Some("expired"),
        "unsubscribed expired first"
    );
    assert_eq!(ended.1, "unauthorized", "then the expired token is refused");
    client.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
