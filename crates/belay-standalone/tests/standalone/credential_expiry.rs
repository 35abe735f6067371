//! An expired credential closes its session 4001 `credentials expired`
//! on time, whatever the client sends: WebSocket pings (control frames,
//! not protocol messages) or nothing at all.

use std::time::Duration;

use crate::common::{connect_with, jwt, node, subscribed, unix_now};
use belay_server::Namespaces;
use belay_standalone::JwtAuthenticator;
use belay_test_support::sockets::Closed;
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio_websockets::Message;

/// Far more than the token's 1-2 s left, far less than the heartbeat's
/// reaping (45 s).
const BOUND: Duration = Duration::from_secs(10);

fn auth() -> JwtAuthenticator {
    JwtAuthenticator::hs256(crate::common::SECRET).expect("key")
}

/// A token that expires in 1 to 2 s (`exp` counts whole seconds).
fn short_lived() -> String {
    jwt(json!({"sub": "alice", "exp": unix_now() + 2, "channels": ["news"]}))
}

#[tokio::test]
async fn a_client_sending_only_websocket_pings_is_closed_at_the_expiry() {
    let addr = node(auth(), Namespaces::new()).await;
    let (mut alice, _) = connect_with(addr, &short_lived()).await.expect("welcome");
    subscribed(&mut alice, "news").await;
    let deadline = tokio::time::Instant::now() + BOUND;
    let mut pings = tokio::time::interval(Duration::from_millis(200));
    let closed = loop {
        tokio::select! {
            _ = pings.tick() => {
                // The server may already have closed: a failed send is fine.
                let _ = alice.ws.send(Message::ping(&b"alive"[..])).await;
            }
            frame = alice.ws.next() => match frame {
                Some(Ok(message)) => {
                    if let Some((code, reason)) = message.as_close() {
                        break Closed::Frame(u16::from(code), reason.to_owned());
                    }
                }
                _ => break Closed::NoFrame,
            },
            _ = tokio::time::sleep_until(deadline) => panic!("still open {BOUND:?} after connect"),
        }
    };
    assert_eq!(closed, Closed::Frame(4001, "credentials expired".into()));
}

#[tokio::test]
async fn a_silent_client_is_closed_4001_not_4000() {
    let addr = node(auth(), Namespaces::new()).await;
    let (mut alice, _) = connect_with(addr, &short_lived()).await.expect("welcome");
    assert_eq!(
        alice.closed_within(BOUND).await,
        Closed::Frame(4001, "credentials expired".into())
    );
}
