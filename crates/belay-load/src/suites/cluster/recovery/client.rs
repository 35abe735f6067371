//! One recovery client: a belay-client `Client` (the core's `Session`) with
//! both nodes' URLs, and what it records on its way from A to B.

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use belay_client::Item;
use belay_proto::backoff::BackoffPolicy;
use belay_proto::{Config, Event};
use tokio::sync::{watch, Semaphore};

use crate::clients::session;
use crate::clients::target::Target;
use crate::clients::websocket::{self, wall_micros};

#[derive(Debug, Default)]
pub(super) struct Progress {
    pub(super) subscribed: AtomicUsize,
    pub(super) first_publication: AtomicUsize,
    pub(super) caught_up: AtomicUsize,
}

/// What one client saw (wall-clock µs).
#[derive(Debug, Default, Clone)]
pub(super) struct Outcome {
    pub(super) lost_at: Option<u64>,
    pub(super) reconnected_at: Option<u64>,
    pub(super) resubscribed_at: Option<u64>,
    pub(super) recovered: Option<bool>,
    pub(super) caught_up_at: Option<u64>,
    pub(super) replayed: u64,
    pub(super) attempts: u32,
    /// `unsubscribed` answers to a `subscribe` (retried with backoff).
    pub(super) refusals: u32,
    pub(super) first_refusal: Option<String>,
    pub(super) gaps: u64,
    pub(super) duplicates: u64,
    pub(super) last_offset: u64,
    pub(super) error: Option<String>,
}

pub(super) struct Client {
    pub(super) urls: Vec<Target>,
    pub(super) source: Option<IpAddr>,
    pub(super) permits: Arc<Semaphore>,
    pub(super) channel: String,
    pub(super) progress: Arc<Progress>,
    pub(super) top: watch::Receiver<Option<u64>>,
    pub(super) deadline: tokio::time::Instant,
    /// The seed of the client's jitter.
    pub(super) seed: u64,
    /// The first dial after a loss waits a uniformly random part of this.
    pub(super) reconnect_window: Duration,
    /// The client's quiet time before it probes (twice the nodes' ping
    /// interval: the server's pings keep it alive, as with the default).
    pub(super) probe_interval: Duration,
    pub(super) shared: Arc<std::sync::Mutex<Outcome>>,
}

impl Client {
    /// Run until the top is reached or the time is up; what it saw is in
    /// `self.shared`, kept up to date at every step, so a client stopped
    /// from outside still tells where it got to.
    pub(super) async fn run(mut self) {
        let mut out = Outcome::default();
        self.drive(&mut out).await;
        self.save(&out);
    }

    fn save(&self, out: &Outcome) {
        if let Ok(mut shared) = self.shared.lock() {
            *shared = out.clone();
        }
    }

    async fn drive(&mut self, out: &mut Outcome) {
        // Cold start: a handshake permit until the subscription is confirmed.
        let permit = self.permits.acquire().await;
        let connected =
            session::builder(&self.urls, self.source, self.config(), self.seed).connect();
        let client = match connected {
            Ok(client) => client,
            Err(e) => {
                out.error.get_or_insert(e.to_string());
                return;
            }
        };
        let mut events = client.events();
        let mut subscription = match client.subscribe(&self.channel).await {
            Ok(subscription) => subscription,
            Err(e) => {
                out.error.get_or_insert(e.to_string());
                return;
            }
        };
        let mut permit = Some(permit);
        // Set at the loss; the resubscribe is sent right after `welcome`.
        let mut resumed_at: Option<u64> = None;
        let mut last: Option<u64> = None;
        let mut last_meanwhile: Option<u64> = None;
        let mut seen_first = false;
        loop {
            let reached = matches!((*self.top.borrow(), last), (Some(top), Some(o)) if o >= top);
            if reached {
                if out.lost_at.is_some() && out.caught_up_at.is_none() {
                    self.catch_up(out, last_meanwhile);
                }
                out.last_offset = last.unwrap_or(0);
                self.save(out);
                client.close().await;
                return;
            }
            tokio::select! {
                // The session's events come first: a replayed publication
                // is read after the `Subscribed` that precedes it.
                biased;
                event = session::next_event(&mut events) => match event {
                    None => {
                        out.error.get_or_insert("the client stopped".into());
                        return;
                    }
                    Some(Err(e)) => {
                        out.error.get_or_insert(e);
                        return;
                    }
                    Some(Ok(Event::Subscribed { recovered, .. })) => {
                        drop(permit.take());
                        if out.lost_at.is_none() {
                            self.progress.subscribed.fetch_add(1, Ordering::Relaxed);
                        } else {
                            out.resubscribed_at.get_or_insert(wall_micros());
                            out.recovered = Some(out.recovered.unwrap_or(true) && recovered);
                            if !recovered {
                                out.error.get_or_insert("resume not recovered".into());
                            }
                        }
                    }
                    Some(Ok(Event::Connected { .. })) if out.lost_at.is_some() => {
                        let now = wall_micros();
                        out.reconnected_at.get_or_insert(now);
                        resumed_at.get_or_insert(now);
                    }
                    Some(Ok(Event::Disconnected { .. })) => {
                        if out.reconnected_at.is_some() {
                            out.error.get_or_insert("lost a second connection".into());
                        }
                        out.lost_at.get_or_insert(wall_micros());
                    }
                    Some(Ok(Event::ConnectFailed { .. })) => out.attempts += 1,
                    Some(Ok(Event::SubscriptionLost { code, .. })) => {
                        out.refusals += 1;
                        out.first_refusal.get_or_insert(code);
                    }
                    Some(Ok(_)) => {}
                },
                item = subscription.next() => match item {
                    Some(Item::Publication(publication)) => {
                        let this = publication.offset;
                        match last {
                            Some(before) if this <= before => out.duplicates += 1,
                            Some(before) => out.gaps += this - before - 1,
                            None => {}
                        }
                        last = Some(last.map_or(this, |before| before.max(this)));
                        if !seen_first {
                            seen_first = true;
                            self.progress.first_publication.fetch_add(1, Ordering::Relaxed);
                        }
                        if let Some(resumed) = resumed_at.filter(|_| out.caught_up_at.is_none()) {
                            let stamp = websocket::field_u64(publication.data.get(), "t").unwrap_or(0);
                            if stamp < resumed {
                                last_meanwhile = Some(wall_micros());
                                out.replayed += 1;
                            } else {
                                self.catch_up(out, last_meanwhile);
                            }
                        }
                    }
                    Some(Item::Resync) => {
                        out.recovered = Some(false);
                        out.error.get_or_insert("publications lost: resync".into());
                    }
                    Some(Item::Refused { code }) => {
                        out.error.get_or_insert(format!("subscription refused: {}", code.as_str()));
                        return;
                    }
                    Some(other) => {
                        out.error.get_or_insert(format!("unexpected item {other:?}"));
                    }
                    None => {
                        out.error.get_or_insert("the subscription ended".into());
                        return;
                    }
                },
                changed = self.top.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                () = tokio::time::sleep_until(self.deadline) => {
                    out.error.get_or_insert("time limit".into());
                    return;
                }
            }
            self.save(out);
        }
    }

    /// The core's configuration for this run: after a loss, the first
    /// dial at a uniformly random instant of the reconnect window (0: at
    /// once), then every 100 ms; the default resubscribe backoff.
    fn config(&self) -> Config {
        let mut config = Config::default();
        config
            .set_backoff(BackoffPolicy::server_paced(
                self.reconnect_window,
                BackoffPolicy::fixed(Duration::from_millis(100)),
            ))
            .set_connect_timeout(Duration::from_secs(10))
            .set_probe_interval(self.probe_interval);
        config
    }

    fn catch_up(&self, out: &mut Outcome, last_meanwhile: Option<u64>) {
        let subscribed = out.resubscribed_at.unwrap_or(0);
        out.caught_up_at = Some(last_meanwhile.map_or(subscribed, |t| t.max(subscribed)));
        self.progress.caught_up.fetch_add(1, Ordering::Relaxed);
        self.save(out);
    }
}
