//! Credentials that expire: the client asks for a new token ahead of the
//! expiry and refreshes it in-band, so the connection outlives the first
//! credential; without a refresh the server closes 4001 at the expiry, and
//! the client asks for a token again and reconnects with it.

use std::time::Duration;

use belay_proto::testing::Pair;
use belay_proto::{Config, Event, Instant};

use crate::support::{accepted, count, first_at, server_closes, start, C};

const LIFETIME: Duration = Duration::from_secs(60);

/// A client with a token provider (it answers `TokenWanted`), against a
/// server whose credentials last `LIFETIME`.
fn pair_with_expiring_credentials(seed: u64) -> Pair {
    let mut config = Config::default();
    config.set_token_provider(true);
    config.set_token(Some("first".into()));
    let mut pair = Pair::new(config, seed);
    pair.application_mut().credential_lifetime = Some(LIFETIME);
    start(&mut pair, C, &[]);
    pair
}

fn token_wanted(event: &Event) -> bool {
    matches!(event, Event::TokenWanted { .. })
}

#[test]
fn a_token_refreshed_ahead_of_the_expiry_keeps_the_connection() {
    let mut pair = pair_with_expiring_credentials(31);
    let connected = pair.now();
    pair.run_for(Duration::from_secs(55));
    let asked = first_at(&pair, C, token_wanted).expect("asked ahead of the expiry");
    // 75–90 % of the lifetime (spec/PROTOCOL.md §2.8).
    let after = asked.saturating_duration_since(connected);
    assert!(
        after >= LIFETIME.mul_f64(0.7) && after <= LIFETIME.mul_f64(0.9),
        "{after:?}"
    );
    pair.command(C, |s, now| s.refresh_token(now, "fresh".into()));
    pair.run_for(Duration::from_secs(30));
    assert!(pair.client(C).session.is_ready());
    assert_eq!(accepted(&pair), 1, "no reconnect");
    assert!(
        server_closes(&pair).is_empty(),
        "{:?}",
        server_closes(&pair)
    );
    assert!(pair.now() > Instant::ZERO + LIFETIME);
}

#[test]
fn without_a_refresh_the_server_closes_4001_at_the_expiry_and_the_client_reconnects() {
    let mut pair = pair_with_expiring_credentials(32);
    pair.run_for(Duration::from_secs(62));
    assert_eq!(server_closes(&pair), [4001], "credentials expired");
    assert!(!pair.client(C).session.is_ready());
    // The refused token is not dialled with again: the client asks for one.
    let asked = count(&pair, C, token_wanted);
    assert_eq!(asked, 2, "ahead of the expiry, then after the refusal");
    pair.command(C, |s, now| s.refresh_token(now, "fresh".into()));
    pair.run_for(Duration::from_secs(10));
    assert!(pair.client(C).session.is_ready());
    assert_eq!(accepted(&pair), 2);
}
