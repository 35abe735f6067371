//! A connect proxy's `expires_in_secs` too large for any clock is cut to
//! the longest lifetime: the session opens and serves, nothing panics.

use crate::common::{backend, connect_with, node, subscribed, BACKEND_TIMEOUT};
use axum::routing::post;
use axum::{Json, Router};
use belay_proto::message::ServerMessage;
use belay_server::auth::MAX_CREDENTIAL_LIFETIME;
use belay_server::{Access, ChannelOptions, Namespaces};
use belay_standalone::{Backend, BackendAuth};
use serde_json::json;

#[tokio::test]
async fn an_expiry_past_any_clock_is_cut_to_the_longest_lifetime() {
    let app = Router::new().route(
        "/connect",
        post(|| async { Json(json!({"result": {"user": "alice", "expires_in_secs": u64::MAX}})) }),
    );
    let (url, _backend) = backend(app).await;
    let auth = BackendAuth::default().connect_through(
        Backend::new(&format!("{url}/connect"), BACKEND_TIMEOUT, 64).expect("url"),
    );
    let namespaces = Namespaces::new().with(
        "news",
        ChannelOptions::default().with_subscribe(Access::Anyone),
    );
    let addr = node(auth, namespaces).await;
    let (mut alice, welcome) = connect_with(addr, "any").await.expect("welcome");
    let ServerMessage::Welcome(welcome) = welcome else {
        unreachable!()
    };
    let left = welcome.expires_in_ms.expect("an expiry");
    assert!(u128::from(left) <= MAX_CREDENTIAL_LIFETIME.as_millis());
    subscribed(&mut alice, "news").await;
}
