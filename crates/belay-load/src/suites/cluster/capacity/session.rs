//! One session of a hold child: the core's `Session` on one task.

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use belay_proto::{Config, Event as CoreEvent};
use tokio::sync::{mpsc, watch, Semaphore};

use crate::clients::core_session::CoreSession;
use crate::clients::target::Target;
use crate::clients::websocket::{self, wall_micros};

use super::hold::{Event, Phase, Received};

/// One held session: the core's `Session` on one task ([`CoreSession`]),
/// which answers the node's pings, resubscribes a lost subscription from
/// its position, and delivers publications in order without duplicates.
pub(super) struct Session {
    pub(super) target: Target,
    pub(super) source: Option<IpAddr>,
    pub(super) config: Config,
    pub(super) seed: u64,
    pub(super) phase: watch::Receiver<Phase>,
    pub(super) events: mpsc::UnboundedSender<Event>,
    pub(super) alive: Arc<AtomicUsize>,
    pub(super) channel: String,
    pub(super) messages: u64,
    /// Subscribes pending at once in this process (`None`: unbounded).
    pub(super) subscribe_permits: Option<Arc<Semaphore>>,
}

/// Refusals of one session's subscribe (the core retries each after its
/// resubscribe backoff) before it counts as refused.
const MAX_REFUSALS: u32 = 30;

/// Where a held session's subscription is.
#[derive(Debug)]
enum State {
    Idle,
    /// Sent, not yet confirmed; the turn (the in-flight bound) is held.
    Pending(Option<tokio::sync::OwnedSemaphorePermit>, u32),
    Receiving(Received, Option<u64>),
    Finished,
}

impl Session {
    pub(super) async fn run(mut self, permit: tokio::sync::OwnedSemaphorePermit) {
        let mut core = CoreSession::start(
            self.target.clone(),
            self.source,
            self.config.clone(),
            self.seed,
        );
        // Opened: the first `welcome`, or the first failed dial.
        let opened = loop {
            match core.next_event_or(std::future::pending::<()>()).await {
                Some(CoreEvent::Connected { .. }) => break Ok(()),
                Some(CoreEvent::ConnectFailed { reason, .. }) => break Err(format!("{reason:?}")),
                Some(_) => {}
                None => break Err("interrupted".into()),
            }
        };
        drop(permit);
        if let Err(e) = opened {
            let _ = self.events.send(Event::Opened(Err(e)));
            core.close().await;
            return;
        }
        self.alive.fetch_add(1, Ordering::Relaxed);
        let _ = self.events.send(Event::Opened(Ok(())));
        let mut connected = true;
        self.hold(&mut core, &mut connected).await;
        if connected {
            self.alive.fetch_sub(1, Ordering::Relaxed);
        }
        core.close().await;
    }

    /// Follow the phases until `stop`: subscribe when asked, count what
    /// arrives, report when done.
    async fn hold(&mut self, core: &mut CoreSession, connected: &mut bool) {
        let mut state = State::Idle;
        loop {
            if let Some(event) = core.next_event_or(self.phase.changed()).await {
                self.on_event(event, &mut state, connected);
                continue;
            }
            if self.phase.has_changed().is_err() {
                break;
            }
            let phase = *self.phase.borrow_and_update();
            match phase {
                Phase::Subscribe if matches!(state, State::Idle) => {
                    let turn = match &self.subscribe_permits {
                        Some(permits) => Arc::clone(permits).acquire_owned().await.ok(),
                        None => None,
                    };
                    let (session, now) = core.core();
                    match session.subscribe(now, &self.channel) {
                        Ok(()) => state = State::Pending(turn, 0),
                        Err(e) => {
                            let _ = self.events.send(Event::Subscribed(Err(e.to_string())));
                            state = State::Finished;
                        }
                    }
                }
                Phase::Report => {
                    self.end(
                        &mut state,
                        "not every publication arrived by the collect deadline".into(),
                    );
                }
                Phase::Stop => break,
                _ => {}
            }
        }
    }

    fn on_event(&mut self, event: CoreEvent, state: &mut State, connected: &mut bool) {
        match event {
            CoreEvent::Connected { .. } if !*connected => {
                *connected = true;
                self.alive.fetch_add(1, Ordering::Relaxed);
            }
            CoreEvent::Disconnected { .. } if *connected => {
                *connected = false;
                self.alive.fetch_sub(1, Ordering::Relaxed);
            }
            CoreEvent::Subscribed { channel, recovered } if channel == self.channel => {
                match std::mem::replace(state, State::Finished) {
                    State::Pending(turn, _) => {
                        drop(turn);
                        *state = State::Receiving(Received::default(), None);
                        let _ = self.events.send(Event::Subscribed(Ok(())));
                        if self.messages == 0 {
                            self.finish(state);
                        }
                    }
                    State::Receiving(mut r, offset) => {
                        if !recovered {
                            r.not_recovered += 1;
                        }
                        *state = State::Receiving(r, offset);
                    }
                    other => *state = other,
                }
            }
            // Refused for now: the core subscribes again after its
            // resubscribe backoff (a confirmed one is resumed from its
            // position, as a Belay client does).
            CoreEvent::SubscriptionLost { channel, code } if channel == self.channel => {
                match std::mem::replace(state, State::Finished) {
                    State::Pending(turn, refusals) if refusals < MAX_REFUSALS => {
                        let _ = self.events.send(Event::Refused(code));
                        *state = State::Pending(turn, refusals + 1);
                    }
                    State::Receiving(mut r, offset) if r.resumed < MAX_REFUSALS => {
                        r.resumed += 1;
                        r.error.get_or_insert(code);
                        *state = State::Receiving(r, offset);
                    }
                    other => {
                        *state = other;
                        self.end(state, code);
                    }
                }
            }
            CoreEvent::SubscriptionFailed { channel, code } if channel == self.channel => {
                self.end(state, code);
            }
            CoreEvent::Publication(publication) if publication.channel == self.channel => {
                self.publication(&publication, state);
            }

            _ => {}
        }
    }

    fn publication(&self, publication: &belay_proto::message::Publication, state: &mut State) {
        let State::Receiving(r, offset) = state else {
            return;
        };
        let now = wall_micros();
        if let Some(t) = websocket::field_u64(publication.data.get(), "t") {
            r.latencies
                .push(u32::try_from(now.saturating_sub(t)).unwrap_or(u32::MAX));
        }
        if offset.is_some_and(|before| publication.offset != before + 1) {
            r.gaps += 1;
        }
        *offset = Some(publication.offset);
        r.got += 1;
        r.last_wall = now;
        if r.got >= self.messages {
            self.finish(state);
        }
    }

    fn finish(&self, state: &mut State) {
        if let State::Receiving(r, _) = std::mem::replace(state, State::Finished) {
            let _ = self.events.send(Event::Done(r));
        }
    }

    /// The session stops receiving: say why to whoever waits for it.
    fn end(&self, state: &mut State, why: String) {
        match std::mem::replace(state, State::Finished) {
            State::Pending(..) => {
                let _ = self.events.send(Event::Subscribed(Err(why)));
            }
            State::Receiving(mut r, _) => {
                r.error.get_or_insert(why);
                let _ = self.events.send(Event::Done(r));
            }
            other => *state = other,
        }
    }
}
