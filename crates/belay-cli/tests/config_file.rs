//! `belay serve --config FILE` and `belay config check FILE`, end to end
//! against the binary: every error of a bad file with its line, a
//! defaults file that checks clean, a server whose settings and JWT auth
//! come from the file (the secret from the environment), and flags that
//! cannot be combined with a file.

use std::net::SocketAddr;
use std::time::Duration;

use belay_proto::message::{ClientMessage, Connect, ServerMessage, Subscribe};
use belay_test_support::services::free_port;
use belay_test_support::sockets::{Closed, Raw};
use serde_json::json;

mod jwt_serve;
use jwt_serve::{jwt_file, now, serve, serve_demo, temp_dir, token, SECRET};

const SOON: Duration = Duration::from_secs(5);

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

#[test]
fn a_misspelt_environment_override_is_warned_about_with_the_setting_it_is_near() {
    let dir = temp_dir("stray-env");
    let file = dir.join("belay.toml");
    std::fs::write(&file, "[server]\nlisten = \"127.0.0.1:8080\"\n").expect("write");
    let out = belay()
        .args(["config", "check"])
        .arg(&file)
        .env("BELAY_HEARTBEAT_PING_INTERVAL", "1000")
        .output()
        .expect("run");
    assert!(out.status.success(), "a warning, not an error: {out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warning = format!(
        "{}: warning: environment BELAY_HEARTBEAT_PING_INTERVAL matches no setting (did you mean BELAY_HEARTBEAT_PING_INTERVAL_MS?); ignored",
        file.display()
    );
    assert!(
        stderr.contains(&warning),
        "missing {warning:?} in:\n{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
