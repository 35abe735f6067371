//! The publish proxy: in a namespace with `publish = backend`, the backend
//! approves each client publish before it is published (and delivered
//! with its offset) or refuses it with its message (nothing published).

use crate::common::{backend, next, node, request, subscribe, BACKEND_TIMEOUT};
use axum::routing::post;
use axum::{Json, Router};
use belay_proto::message::{Reply, ServerMessage};
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::{Access, ChannelOptions, Namespaces};
use belay_standalone::{Backend, BackendAuth};
use belay_test_support::sockets::Raw;
use serde_json::{json, Value};

/// The token is the user's name; no publish grant at all.
struct NamedUsers;

impl Authenticator for NamedUsers {
    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError> {
        token
            .map(Principal::user)
            .ok_or_else(|| AuthError::Unauthorized("a name is required".into()))
    }
}

/// Anything but spam is approved.
fn app() -> Router {
    Router::new().route(
        "/publish",
        post(|Json(body): Json<Value>| async move {
            if body["data"]["text"] == "spam" {
                Json(json!({"error": {"code": "forbidden", "message": "no spam"}}))
            } else {
                Json(json!({"result": {}}))
            }
        }),
    )
}

#[tokio::test]
async fn an_approved_publish_is_delivered_and_a_refused_one_is_not() {
    let (url, _backend) = backend(app()).await;
    let backend = Backend::new(&format!("{url}/publish"), BACKEND_TIMEOUT, 64).expect("url");
    let namespaces = Namespaces::new().with(
        "chat:*",
        ChannelOptions::default().with_publish(Access::Backend),
    );
    let addr = node(
        BackendAuth::new(NamedUsers).publish_through(backend),
        namespaces,
    )
    .await;
    let (mut alice, _) = Raw::connected(addr, Some("alice")).await;
    alice.send(&subscribe("chat:1")).await;
    assert!(matches!(
        next(&mut alice).await,
        ServerMessage::Subscribed(_)
    ));

    let spam = json!({"channel": "chat:1", "data": {"text": "spam"}});
    alice.send(&request(1, "$publish", spam)).await;
    let ServerMessage::Response(refused) = next(&mut alice).await else {
        panic!("an answer expected")
    };
    let Reply::Error(error) = refused.reply else {
        panic!("refused expected")
    };
    assert_eq!(
        (error.code.as_str(), error.message.as_str()),
        ("forbidden", "forbidden: no spam")
    );

    let hello = json!({"channel": "chat:1", "data": {"text": "hello"}});
    alice.send(&request(2, "$publish", hello)).await;
    let mut answered = None;
    let mut delivered = None;
    while answered.is_none() || delivered.is_none() {
        match next(&mut alice).await {
            ServerMessage::Response(r) if r.id == 2 => answered = Some(r.reply),
            ServerMessage::Publication(p) => delivered = Some(p),
            other => panic!("unexpected {other:?}"),
        }
    }
    let Some(Reply::Result(result)) = answered else {
        panic!("approved expected")
    };
    let publication = delivered.expect("delivered");
    // The only publication: the refused one took no offset.
    assert_eq!(publication.offset, 1);
    let result: Value = serde_json::from_str(result.get()).expect("json");
    assert_eq!(result["offset"], json!(1));
    assert_eq!(
        serde_json::from_str::<Value>(publication.data.get()).expect("json"),
        json!({"text": "hello"})
    );
}
