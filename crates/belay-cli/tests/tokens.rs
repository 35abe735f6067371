//! The token lifecycle against the binary (spec/PROTOCOL.md §2.8, §5.8):
//! the Rust client's providers and a `belay serve` with JWT auth.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

mod jwt_serve;
use jwt_serve::{jwt_file, now, serve_demo, token, SECRET};

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
