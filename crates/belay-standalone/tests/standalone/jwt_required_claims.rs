//! A configured audience or issuer is required: a token without `aud` or
//! `iss` is refused like one that names another.

use crate::common::{connect_with, jwt, node, refused, unix_now};
use belay_server::Namespaces;
use belay_standalone::JwtAuthenticator;
use serde_json::json;

fn auth() -> JwtAuthenticator {
    JwtAuthenticator::hs256(crate::common::SECRET)
        .expect("key")
        .audience("my-app")
        .issuer("https://auth.example")
}

#[tokio::test]
async fn a_token_without_aud_is_refused() {
    let addr = node(auth(), Namespaces::new()).await;
    let token =
        jwt(json!({"sub": "alice", "exp": unix_now() + 600, "iss": "https://auth.example"}));
    assert_eq!(
        refused(addr, &token).await,
        "unauthorized: missing claim `aud`"
    );
}

#[tokio::test]
async fn a_token_without_iss_is_refused() {
    let addr = node(auth(), Namespaces::new()).await;
    let token = jwt(json!({"sub": "alice", "exp": unix_now() + 600, "aud": "my-app"}));
    assert_eq!(
        refused(addr, &token).await,
        "unauthorized: missing claim `iss`"
    );
}

#[tokio::test]
async fn a_token_with_both_is_let_in() {
    let addr = node(auth(), Namespaces::new()).await;
    let token = jwt(json!({
        "sub": "alice", "exp": unix_now() + 600,
        "aud": "my-app", "iss": "https://auth.example",
    }));
    assert!(connect_with(addr, &token).await.is_ok());
}
