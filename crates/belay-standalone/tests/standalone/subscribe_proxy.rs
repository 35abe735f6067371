//! The subscribe proxy: in a namespace with `subscribe = backend`, the
//! backend allows or refuses each subscribe (its message reaches the
//! client); a backend that is down or slow refuses it `unavailable`
//! (retryable), and the connection serves its other messages meanwhile.

use crate::common::{backend, next, nobody, node, subscribe, BACKEND_TIMEOUT};
use axum::routing::post;
use axum::{Json, Router};
use belay_proto::message::ServerMessage;
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::{Access, ChannelOptions, Namespaces};
use belay_standalone::{Backend, BackendAuth};
use belay_test_support::sockets::Raw;
use serde_json::{json, Value};

/// The token is the user's name.
struct NamedUsers;

impl Authenticator for NamedUsers {
    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError> {
        token
            .map(Principal::user)
            .ok_or_else(|| AuthError::Unauthorized("a name is required".into()))
    }
}

/// `private:USER` is USER's; `private:slow` is never answered.
fn app() -> Router {
    Router::new().route(
        "/subscribe",
        post(|Json(body): Json<Value>| async move {
            let channel = body["channel"].as_str().unwrap_or_default().to_owned();
            let user = body["user"].as_str().unwrap_or_default();
            if channel == "private:slow" {
                return std::future::pending().await;
            }
            if channel == format!("private:{user}") {
                Json(json!({"result": {}}))
            } else {
                Json(json!({"error": {"code": "forbidden", "message": "not your room"}}))
            }
        }),
    )
}

fn namespaces() -> Namespaces {
    Namespaces::new().with(
        "private:*",
        ChannelOptions::default().with_subscribe(Access::Backend),
    )
}

async fn node_asking(url: &str) -> std::net::SocketAddr {
    let backend = Backend::new(url, BACKEND_TIMEOUT, 64).expect("url");
    node(
        BackendAuth::new(NamedUsers).subscribe_through(backend),
        namespaces(),
    )
    .await
}

#[tokio::test]
async fn the_backend_allows_one_subscriber_and_refuses_another_with_its_message() {
    let (url, _backend) = backend(app()).await;
    let addr = node_asking(&format!("{url}/subscribe")).await;
    let (mut alice, _) = Raw::connected(addr, Some("alice")).await;
    alice.send(&subscribe("private:alice")).await;
    assert!(matches!(
        next(&mut alice).await,
        ServerMessage::Subscribed(_)
    ));
    let (mut bob, _) = Raw::connected(addr, Some("bob")).await;
    bob.send(&subscribe("private:alice")).await;
    let ServerMessage::Unsubscribed(refused) = next(&mut bob).await else {
        panic!("a refusal expected")
    };
    assert_eq!(
        (refused.code.as_str(), refused.reason.as_str()),
        ("forbidden", "forbidden: not your room")
    );
}

#[tokio::test]
async fn a_slow_backend_holds_up_only_its_subscribe_which_ends_unavailable() {
    let (url, _backend) = backend(app()).await;
    let addr = node_asking(&format!("{url}/subscribe")).await;
    let (mut alice, _) = Raw::connected(addr, Some("alice")).await;
    alice.send(&subscribe("private:slow")).await;
    // A channel nobody needs to approve is granted while the backend waits.
    alice.send(&subscribe("news")).await;
    let ServerMessage::Subscribed(first) = next(&mut alice).await else {
        panic!("news granted first")
    };
    assert_eq!(first.channel, "news");
    let ServerMessage::Unsubscribed(refused) = next(&mut alice).await else {
        panic!("then the slow one refused")
    };
    assert_eq!(
        (refused.channel.as_str(), refused.code.as_str()),
        ("private:slow", "unavailable")
    );
}

#[tokio::test]
async fn a_dead_backend_refuses_subscribes_unavailable_and_leaves_the_connection_open() {
    let addr = node_asking(&nobody().await).await;
    let (mut alice, _) = Raw::connected(addr, Some("alice")).await;
    alice.send(&subscribe("private:alice")).await;
    let ServerMessage::Unsubscribed(refused) = next(&mut alice).await else {
        panic!("a refusal expected")
    };
    assert_eq!(refused.code, "unavailable");
    alice.send(&subscribe("news")).await;
    assert!(matches!(
        next(&mut alice).await,
        ServerMessage::Subscribed(_)
    ));
}
