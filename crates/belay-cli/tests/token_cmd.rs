//! `belay token` against a config file: a minted token opens a session on
//! a `belay serve` with that config and `check` accepts it; a token signed
//! with another secret, or a subscription token for another user, is
//! refused (exit 1); a host token names its host; `inspect` shows the
//! claims unverified.

use std::path::Path;
use std::process::Output;

use belay_proto::message::ServerMessage;
use belay_test_support::sockets::Raw;

mod jwt_serve;
use jwt_serve::{jwt_file, now, serve, token, SECRET};

fn belay_token(config: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_belay"))
        .arg("token")
        .args(args)
        .arg("--config")
        .arg(config)
        .env("BELAY_AUTH_JWT_SECRET", SECRET)
        .output()
        .expect("belay token runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[tokio::test]
async fn a_minted_token_opens_a_session_and_check_accepts_it() {
    let (dir, file) = jwt_file("token-mint");
    let minted = belay_token(
        &file,
        &[
            "mint",
            "--user",
            "alice",
            "--ttl",
            "10m",
            "--channels",
            "news,chat:*",
        ],
    );
    assert!(minted.status.success(), "{minted:?}");
    let jwt = stdout(&minted);
    let checked = belay_token(&file, &["check", &jwt]);
    assert!(checked.status.success(), "{checked:?}");
    assert!(
        stdout(&checked).starts_with("valid: a connection token of user \"alice\""),
        "{}",
        stdout(&checked)
    );
    let (_server, addr) = serve(&file).await;
    let (_client, welcome) = Raw::connected(addr, Some(&jwt)).await;
    assert!(matches!(welcome, ServerMessage::Welcome(_)), "{welcome:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_token_signed_with_another_secret_is_refused() {
    let (dir, file) = jwt_file("token-forged");
    let forged = token(
        serde_json::json!({"sub": "mallory", "exp": now() + 600}),
        "another-secret-entirely",
    );
    let checked = belay_token(&file, &["check", &forged]);
    assert_eq!(checked.status.code(), Some(1), "{checked:?}");
    assert!(
        stdout(&checked).starts_with("refused:"),
        "{}",
        stdout(&checked)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_subscription_token_is_checked_for_its_channel_and_user() {
    let (dir, file) = jwt_file("token-sub");
    let minted = belay_token(
        &file,
        &["mint", "--user", "alice", "--channel", "private:1"],
    );
    assert!(minted.status.success(), "{minted:?}");
    let jwt = stdout(&minted);
    let ok = belay_token(
        &file,
        &["check", "--channel", "private:1", "--user", "alice", &jwt],
    );
    assert!(ok.status.success(), "{ok:?}");
    let other_user = belay_token(
        &file,
        &["check", "--channel", "private:1", "--user", "bob", &jwt],
    );
    assert_eq!(other_user.status.code(), Some(1), "{other_user:?}");
    let as_connection = belay_token(&file, &["check", &jwt]);
    assert_eq!(
        as_connection.status.code(),
        Some(1),
        "a subscription token opens no connection"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_host_token_names_its_host_and_a_bad_host_id_is_refused() {
    let (dir, file) = jwt_file("token-host");
    let minted = belay_token(&file, &["mint", "--user", "pc-1", "--host", "pc-1"]);
    assert!(minted.status.success(), "{minted:?}");
    let jwt = stdout(&minted);
    let checked = belay_token(&file, &["check", &jwt]);
    assert!(checked.status.success(), "{checked:?}");
    assert!(
        stdout(&checked).contains(r#""host":"pc-1""#),
        "{}",
        stdout(&checked)
    );
    let bad = belay_token(&file, &["mint", "--user", "x", "--host", "not a host id"]);
    assert!(!bad.status.success(), "{bad:?}");
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("is not a host id"),
        "{bad:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn inspect_shows_the_claims_unverified() {
    let jwt = token(serde_json::json!({"sub": "alice", "exp": 1}), "any-secret");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_belay"))
        .args(["token", "inspect", &jwt])
        .output()
        .expect("belay token runs");
    assert!(output.status.success(), "{output:?}");
    let shown: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    assert_eq!(shown["claims"]["sub"], "alice");
    assert_eq!(shown["header"]["alg"], "HS256");
    assert_eq!(shown["verified"], false);
}

#[test]
fn inspect_refuses_what_is_not_a_jwt() {
    for garbage in ["not-a-token", "a.b.c", "eyJhbGciOiJIUzI1NiJ9.%%%.x"] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_belay"))
            .args(["token", "inspect", garbage])
            .output()
            .expect("belay token runs");
        assert_eq!(output.status.code(), Some(2), "{garbage}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("not a JWT"), "{garbage}: {stderr}");
    }
}
