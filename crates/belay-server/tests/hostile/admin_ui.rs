//! The admin web UI's routes against hostile or mistaken requests: the
//! login takes the token only in a body and holds nothing for a wrong one,
//! a cookie stands for the token only while its login holds, every query
//! and body is bounded and checked, and the actions do what they say.

use std::net::SocketAddr;
use std::time::Duration;

use crate::common::{self, http_call, http_call_with, Closed, HttpResponse, Raw};
use belay_server::{Lifecycle, Server, ServerConfig};
use serde_json::Value;

const TOKEN: &str = "admin-ui-test-token-0123";

async fn with_token() -> (Server, SocketAddr) {
    let server = crate::server(ServerConfig::default().with_admin_token(TOKEN));
    let addr = common::start_with(&server, server.router().merge(server.admin_router())).await;
    (server, addr)
}

async fn on_loopback() -> (Server, SocketAddr) {
    let server = crate::server(ServerConfig::default());
    let addr = common::start_with(&server, server.router().merge(server.admin_router())).await;
    (server, addr)
}

async fn login(addr: SocketAddr, token: &str) -> HttpResponse {
    let body = serde_json::json!({ "token": token }).to_string();
    http_call(addr, "POST", "/admin/login", Some(&body)).await
}

/// The `belay_admin=…` pair of a login's `Set-Cookie`.
fn cookie_of(answer: &HttpResponse) -> String {
    let set = answer.header("set-cookie").expect("a Set-Cookie");
    set.split(';').next().unwrap().to_owned()
}

fn json(answer: &HttpResponse) -> Value {
    serde_json::from_str(&answer.body).unwrap_or_else(|_| panic!("JSON: {answer:?}"))
}

#[tokio::test]
async fn the_right_token_logs_in_with_an_httponly_strict_cookie_and_a_wrong_one_holds_nothing() {
    let (_server, addr) = with_token().await;
    let wrong = login(addr, "admin-ui-test-token-0124").await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.header("set-cookie").is_none());
    let right = login(addr, TOKEN).await;
    assert_eq!(right.status, 204, "{right:?}");
    let set = right.header("set-cookie").unwrap();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/admin", "Max-Age="] {
        assert!(set.contains(attribute), "{set}");
    }
    assert!(!set.contains(TOKEN), "the cookie is not the token");
    let cookie = format!("Cookie: {}", cookie_of(&right));
    let overview = http_call_with(addr, "GET", "/admin/overview", &[&cookie], None).await;
    assert_eq!(overview.status, 200, "{overview:?}");
    assert_eq!(json(&overview)["token_required"], true);
}

#[tokio::test]
async fn a_forged_or_logged_out_cookie_is_refused() {
    let (_server, addr) = with_token().await;
    let forged =
        "Cookie: belay_admin=0000000000000000000000000000000000000000000000000000000000000000";
    let answer = http_call_with(addr, "GET", "/admin/overview", &[forged], None).await;
    assert_eq!(answer.status, 401);
    let cookie = format!("Cookie: {}", cookie_of(&login(addr, TOKEN).await));
    let out = http_call_with(addr, "POST", "/admin/logout", &[&cookie], None).await;
    assert_eq!(out.status, 204);
    assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
    let after = http_call_with(addr, "GET", "/admin/overview", &[&cookie], None).await;
    assert_eq!(after.status, 401);
}

#[tokio::test]
async fn a_login_from_another_origin_or_with_no_token_configured_is_refused() {
    let (_server, addr) = with_token().await;
    let body = serde_json::json!({ "token": TOKEN }).to_string();
    let foreign = http_call_with(
        addr,
        "POST",
        "/admin/login",
        &["Origin: https://evil.example"],
        Some(&body),
    )
    .await;
    assert_eq!(foreign.status, 403);
    assert!(foreign.header("set-cookie").is_none());
    let (_server, open) = on_loopback().await;
    assert_eq!(login(open, TOKEN).await.status, 404);
}

#[tokio::test]
async fn a_login_body_that_is_not_the_json_or_too_large_is_refused() {
    let (_server, addr) = with_token().await;
    let extra = r#"{"token":"x","user":"y"}"#;
    assert_eq!(
        http_call(addr, "POST", "/admin/login", Some(extra))
            .await
            .status,
        400
    );
    let huge = format!(r#"{{"token":"{}"}}"#, "a".repeat(8 << 10));
    assert_eq!(
        http_call(addr, "POST", "/admin/login", Some(&huge))
            .await
            .status,
        413
    );
}

#[tokio::test]
async fn the_page_is_the_login_form_without_a_login_and_never_framed_or_cached() {
    let (_server, addr) = with_token().await;
    let page = http_call(addr, "GET", "/admin/", None).await;
    assert_eq!(page.status, 401);
    assert!(page.body.contains("login-form"));
    assert!(!page.body.contains("console.js"));
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("cache-control"), Some("no-store"));
    assert!(page
        .header("content-security-policy")
        .unwrap()
        .contains("frame-ancestors 'none'"));
    // The console's script is behind the guard; the login's is not.
    assert_eq!(
        http_call(addr, "GET", "/admin/console.js", None)
            .await
            .status,
        401
    );
    assert_eq!(
        http_call(addr, "GET", "/admin/login.js", None).await.status,
        200
    );
    let cookie = format!("Cookie: {}", cookie_of(&login(addr, TOKEN).await));
    let console = http_call_with(addr, "GET", "/admin/", &[&cookie], None).await;
    assert_eq!(console.status, 200);
    assert!(console.body.contains("/admin/console.js"));
}

#[tokio::test]
async fn a_users_sessions_show_transport_and_codec_and_disconnect_closes_them_4003() {
    let (server, addr) = on_loopback().await;
    let (mut raw, _welcome) = Raw::connected(addr, None).await;
    // An answered request: the connection's task is past its welcome.
    raw.answered(1, "echo", serde_json::json!({})).await;
    let sessions = json(&http_call(addr, "GET", "/admin/sessions?user=anonymous", None).await);
    let listed = sessions["sessions"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{sessions}");
    assert_eq!(listed[0]["transport"], "websocket");
    assert_eq!(listed[0]["codec"], "json");
    assert!(listed[0]["session"].as_str().is_some_and(|s| !s.is_empty()));
    let body = r#"{"user":"anonymous","reason":"test"}"#;
    let answer = http_call(addr, "POST", "/admin/disconnect", Some(body)).await;
    assert_eq!(json(&answer)["disconnected"], 1);
    match raw.closed_within(Duration::from_secs(5)).await {
        Closed::Frame(code, reason) => {
            assert_eq!(code, 4003);
            assert_eq!(reason, "disconnected: test");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.lifecycle(), Lifecycle::Serving);
}

#[tokio::test]
async fn queries_without_a_name_or_with_a_long_one_answer_400_naming_it() {
    let (_server, addr) = on_loopback().await;
    let missing = http_call(addr, "GET", "/admin/sessions", None).await;
    assert_eq!(missing.status, 400);
    assert_eq!(json(&missing)["error"], "user is missing");
    let long = format!("/admin/channel?name={}", "c".repeat(2_000));
    let answer = http_call(addr, "GET", &long, None).await;
    assert_eq!(answer.status, 400);
    assert!(json(&answer)["error"]
        .as_str()
        .unwrap()
        .starts_with("name:"));
}

#[tokio::test]
async fn a_test_message_is_published_and_shows_in_the_channels_history() {
    let (_server, addr) = on_loopback().await;
    let body = r#"{"channel":"news","data":{"hello":1}}"#;
    let published = json(&http_call(addr, "POST", "/admin/publish", Some(body)).await);
    assert_eq!(published["offset"], 1);
    let channel = json(&http_call(addr, "GET", "/admin/channel?name=news", None).await);
    assert_eq!(channel["history"]["top_offset"], 1);
    assert_eq!(channel["history"]["size"], 1);
    assert_eq!(channel["history"]["recent"][0]["data"]["hello"], 1);
}

#[tokio::test]
async fn a_publish_to_a_server_channel_or_with_a_bad_body_publishes_nothing() {
    let (_server, addr) = on_loopback().await;
    let reserved = r#"{"channel":"$presence:news","data":1}"#;
    assert_eq!(
        http_call(addr, "POST", "/admin/publish", Some(reserved))
            .await
            .status,
        403
    );
    let not_json = http_call(addr, "POST", "/admin/publish", Some("{nope")).await;
    assert_eq!(not_json.status, 400);
    let huge = format!(r#"{{"channel":"news","data":"{}"}}"#, "x".repeat(70 << 10));
    assert_eq!(
        http_call(addr, "POST", "/admin/publish", Some(&huge))
            .await
            .status,
        413
    );
    let channel = json(&http_call(addr, "GET", "/admin/channel?name=news", None).await);
    assert_eq!(channel["history"]["top_offset"], 0);
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_answered_408() {
    let server =
        crate::server(ServerConfig::default().with_body_timeout(Duration::from_millis(200)));
    let addr = common::start_with(&server, server.router().merge(server.admin_router())).await;
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    // A length announced and never sent.
    let request = format!(
        "POST /admin/publish HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\nConnection: close\r\n\r\n{{"
    );
    let answer = common::exchange(&mut tcp, request.as_bytes())
        .await
        .unwrap();
    assert_eq!(answer.status, 408);
}

#[tokio::test]
async fn the_samples_come_once_a_second_and_the_ui_is_on_the_internal_router_only() {
    let server = crate::server(ServerConfig::default());
    let public = common::start_with(&server, server.client_router()).await;
    let internal = common::start_with(&server, server.internal_router()).await;
    assert_eq!(http_call(public, "GET", "/admin/", None).await.status, 404);
    assert_eq!(
        http_call(internal, "GET", "/admin/", None).await.status,
        200
    );
    let samples = json(&http_call(internal, "GET", "/admin/samples", None).await);
    assert_eq!(samples["every_ms"], 1000);
    assert!(samples["samples"].is_array());
}

#[tokio::test]
async fn a_channels_detail_shows_its_subscribers_here_and_its_presence() {
    use belay_server::{ChannelOptions, Namespaces};
    let namespaces =
        Namespaces::new().with("room:*", ChannelOptions::default().with_presence(true));
    let server = crate::server(ServerConfig::default().with_namespaces(namespaces));
    let addr = common::start_with(&server, server.router().merge(server.admin_router())).await;
    let (mut raw, _welcome) = Raw::connected(addr, None).await;
    raw.subscribed("room:1").await;
    // An answered request: the connection's task is past the join.
    raw.answered(1, "echo", serde_json::json!({})).await;
    let listed = json(&http_call(addr, "GET", "/admin/channels?pattern=room:*", None).await);
    assert_eq!(listed["channels"][0]["channel"], "room:1");
    assert_eq!(listed["channels"][0]["subscribers"], 1);
    let channel = json(&http_call(addr, "GET", "/admin/channel?name=room:1", None).await);
    assert_eq!(channel["subscribers"], 1);
    assert_eq!(channel["presence"][0]["user"], "anonymous");
    // A channel whose namespace tracks no presence says so (null).
    let other = json(&http_call(addr, "GET", "/admin/channel?name=news", None).await);
    assert_eq!(other["presence"], Value::Null);
}
