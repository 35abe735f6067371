//! The reconnect controller: the connection cycle of a [`Session`].
//!
//! ```text
//!            ┌─────────────────── dial ◀──────────────────────┐
//!            ▼                                                │ the wait is over
//!       Connecting ──opened──▶ Handshaking ──welcome──▶ Open  │ (or reconnect_now)
//!            │                     │                     │    │
//!            └── failed, closed, timed out, abandoned ───┘    │
//!                               │                             │
//!                         lose_transport ──▶ Waiting ─────────┘
//!                               │            (backoff, advice, slots)
//!                               ├──────────▶ Offline ──online──▶ Waiting
//!                               └──────────▶ Halted (until start)
//! ```
//!
//! Every way a transport ends goes through `Session::lose_transport`, the
//! one place that decides what happens next: halt, wait for the network,
//! retry locally (no route), or wait out the backoff and the server's advice.

use std::time::Duration;

use super::{Output, Phase, Session};
use crate::backoff::{Loss, RetryWindow};
use crate::client::event::{DisconnectReason, Event, HaltReason, RetryPlan};
use crate::client::transport::{Failure, TransportId};
use crate::close::{CloseCode, CloseDisposition, CloseInfo};
use crate::message::{ClientMessage, Connect, ReconnectAdvice, PROTOCOL_VERSION};
use crate::rng::RandomSource;
use crate::time::Instant;

impl Session {
    // ----- transport facts -----

    pub(super) fn on_opened(&mut self, now: Instant, id: TransportId) {
        if !matches!(self.phase, Phase::Connecting { .. }) {
            return;
        }
        self.phase = Phase::Handshaking {
            id,
            deadline: now + self.config.connect_timeout(),
        };
        self.advice = None;
        self.local_backoff.reset();
        self.push(Output::Transmit {
            id,
            message: ClientMessage::Connect(Connect {
                protocol: PROTOCOL_VERSION,
                token: self.config.token(),
                session: self.session_id.clone(),
            }),
        });
        self.refresh_readiness(now);
    }

    pub(super) fn on_failed(&mut self, now: Instant, failure: Failure) {
        let halt = match &failure {
            Failure::InvalidConfig { detail } => Some(HaltReason::InvalidConfig {
                detail: detail.clone(),
            }),
            Failure::Rejected {
                status: 401 | 403, ..
            } if !self.token_refused() => Some(HaltReason::AuthFailed),
            _ => None,
        };
        if let Failure::Rejected {
            retry_after_ms: Some(after),
            ..
        } = failure
        {
            // `Retry-After: R` from the server's admission control: advice
            // like a `reconnect` message, spread over [R, 2R) so a fleet
            // told the same R does not come back in one wave.
            self.advice.get_or_insert(ReconnectAdvice {
                reason: "retry_after".to_owned(),
                min_delay_ms: after,
                max_delay_ms: after.saturating_mul(2),
                message: None,
            });
        }
        self.lose_transport(now, DisconnectReason::TransportFailed { failure }, halt);
    }

    pub(super) fn on_closed(&mut self, now: Instant, close: CloseInfo) {
        let halt = match close.disposition() {
            CloseDisposition::Terminal => Some(HaltReason::ServerClosed {
                close: close.clone(),
            }),
            CloseDisposition::AuthFailed if !self.token_refused() => Some(HaltReason::AuthFailed),
            _ => None,
        };
        self.lose_transport(now, DisconnectReason::TransportClosed { close }, halt);
    }

    /// Close the current transport ourselves and move on without waiting
    /// for its close event.
    pub(super) fn abandon(
        &mut self,
        now: Instant,
        id: TransportId,
        code: CloseCode,
        reason: DisconnectReason,
    ) {
        let text = match &reason {
            DisconnectReason::HeartbeatTimeout { .. } => "heartbeat timeout",
            DisconnectReason::ConnectTimeout => "connect timeout",
            _ => "abandoned",
        };
        self.push(Output::CloseTransport {
            id,
            code,
            reason: text.into(),
        });
        self.lose_transport(now, reason, None);
    }

    pub(super) fn on_network(&mut self, now: Instant, online: bool) {
        if online == self.online {
            return;
        }
        self.online = online;
        if !online {
            match self.phase {
                Phase::Waiting { .. } => self.phase = Phase::Offline,
                Phase::Connecting { id, .. } | Phase::Handshaking { id, .. } => {
                    self.push(Output::CloseTransport {
                        id,
                        code: CloseCode::GOING_AWAY,
                        reason: "network offline".into(),
                    });
                    self.lose_transport(now, DisconnectReason::NetworkOffline, None);
                }
                // An open connection may survive; the heartbeat will tell.
                _ => {}
            }
            return;
        }
        if matches!(self.phase, Phase::Offline | Phase::Waiting { .. }) {
            // Online proves nothing about the server: start an attempt soon,
            // with a fresh backoff, spread so a fleet does not dial at once.
            // The server's own advice ("not before") still holds.
            self.backoff.reset();
            let window = self.config.online_delay().as_millis() as f64;
            let delay_ms = (self.rng.next_unit() * window).floor() as u64;
            let until = now + Duration::from_millis(delay_ms);
            self.phase = Phase::Waiting {
                until: self.not_before.map_or(until, |t| t.max(until)),
            };
        }
    }

    /// The current transport is gone (failed, closed, or abandoned by us).
    /// This is the only place that decides what happens next.
    pub(super) fn lose_transport(
        &mut self,
        now: Instant,
        reason: DisconnectReason,
        halt: Option<HaltReason>,
    ) {
        let was_open = matches!(self.phase, Phase::Open { .. });
        let mut on_beat = None;
        if let Phase::Open { heartbeat, .. } = &self.phase {
            self.stats.probes_sent = self
                .stats
                .probes_sent
                .saturating_add(heartbeat.probes_sent());
            on_beat = heartbeat.noticed_on_beat(now);
        }
        let advice = self.advice.take();
        if self.cooldown_deadline().is_some_and(|at| at <= now) {
            // Ready for the whole cooldown even if the timer has not run yet
            // (a throttled driver): the connection was proven stable.
            self.reset_backoff();
        }
        self.phase = Phase::Idle;
        self.drop_transport_state(now);

        let local = matches!(
            reason,
            DisconnectReason::TransportFailed {
                failure: Failure::Unreachable { .. }
            }
        );
        let replaced = reason == DisconnectReason::Replaced && halt.is_none() && self.online;
        // The server refused a token the provider can replace: ask at once.
        let reauthorize = std::mem::take(&mut self.credentials.ask_now) && halt.is_none();
        let retry = if let Some(halt) = halt {
            self.phase = Phase::Halted;
            Err(halt)
        } else if (replaced || reauthorize) && self.online {
            // Not a failure: no backoff, no advice to wait for.
            Ok(RetryPlan::After {
                delay: Duration::ZERO,
            })
        } else if !self.online {
            self.phase = Phase::Offline;
            Ok(RetryPlan::WhenOnline)
        } else if local {
            Ok(self.schedule_local_retry(now))
        } else {
            let loss = match (&reason, on_beat) {
                (DisconnectReason::HeartbeatTimeout { .. }, Some(interval)) => {
                    Loss::Beat { interval }
                }
                (DisconnectReason::HeartbeatTimeout { .. }, None) => Loss::Silent,
                _ => Loss::Noticed,
            };
            self.schedule_reconnect(now, advice, loss)
        };
        let plan = retry.clone().unwrap_or(RetryPlan::No);
        self.emit(if was_open {
            Event::Disconnected {
                reason,
                retry: plan,
            }
        } else {
            Event::ConnectFailed {
                reason,
                retry: plan,
            }
        });
        if let Err(halt) = retry {
            self.emit(Event::Halted { reason: halt });
        }
        if replaced {
            self.dial(now);
        } else if reauthorize && self.online {
            self.dial_or_ask(now);
        }
    }

    fn schedule_reconnect(
        &mut self,
        now: Instant,
        advice: Option<ReconnectAdvice>,
        loss: Loss,
    ) -> Result<RetryPlan, HaltReason> {
        let attempts = self.backoff.attempt();
        if self
            .config
            .max_attempts()
            .is_some_and(|max| attempts >= max)
        {
            self.phase = Phase::Halted;
            return Err(HaltReason::Exhausted { attempts });
        }
        let advised = advice.is_some();
        if let Some(advice) = advice {
            self.deploy_backoff |= advice.is_deploy();
            self.backoff.advise(RetryWindow::from_advice(
                now,
                Duration::from_millis(advice.min_delay_ms),
                Duration::from_millis(advice.max_delay_ms),
            ));
        }
        let on_slot_grid = self.backoff.slots().is_some() && self.backoff.attempt() > 0;
        let mut delay = self.backoff.next_delay_after(loss, now, &mut self.rng);
        if self.deploy_backoff && !advised && !on_slot_grid {
            // Deploy-related reconnects back off twice as long, except on the
            // server's slot grid, which already spreads the fleet.
            delay = delay.saturating_mul(2);
        }
        if advised {
            self.not_before = Some(now + delay);
        }
        self.phase = Phase::Waiting { until: now + delay };
        Ok(RetryPlan::After { delay })
    }

    /// This device has no route to the server: try again soon on a separate,
    /// short schedule. The attempts never reach the server, so they neither
    /// advance the backoff nor count toward `max_attempts`; the server's
    /// advice ("not before") still holds.
    fn schedule_local_retry(&mut self, now: Instant) -> RetryPlan {
        let delay = self.local_backoff.next_delay(now, &mut self.rng);
        let until = now + delay;
        let until = self.not_before.map_or(until, |t| t.max(until));
        self.phase = Phase::Waiting { until };
        RetryPlan::After {
            delay: until.saturating_duration_since(now),
        }
    }

    pub(super) fn dial(&mut self, now: Instant) {
        self.not_before = None;
        self.next_transport = self.next_transport.saturating_add(1);
        let id = TransportId(self.next_transport);
        self.stats.transports_opened = self.stats.transports_opened.saturating_add(1);
        self.phase = Phase::Connecting {
            id,
            deadline: now + self.config.connect_timeout(),
        };
        self.push(Output::OpenTransport {
            id,
            attempt: self.backoff.attempt(),
        });
    }

    /// Leave `Idle`/`Halted` on the application's word: a fresh backoff, and
    /// channels the server refused get another chance (credentials may have
    /// been refreshed with [`Session::set_token`]).
    pub(super) fn resume(&mut self, now: Instant) {
        self.reset_backoff();
        self.subscriptions.retry_refused();
        self.dial_or_ask(now);
    }

    pub(super) fn reset_backoff(&mut self) {
        self.backoff.reset();
        self.deploy_backoff = false;
    }

    /// When the backoff resets: after `reset_after` of continuous readiness,
    /// and only if there is something to reset.
    pub(super) fn cooldown_deadline(&self) -> Option<Instant> {
        let since = self.ready_since?;
        if self.backoff.attempt() == 0 && !self.deploy_backoff {
            return None;
        }
        Some(since + self.config.reset_after())
    }

    /// Everything tied to the transport goes: readiness, requests in flight,
    /// confirmations. Positions and wanted channels stay.
    pub(super) fn drop_transport_state(&mut self, now: Instant) {
        self.leaving = false;
        self.switch_by = None;
        self.credentials.ask_at = None;
        self.refresh_readiness(now);
        let mut settled = Vec::new();
        self.registry.settle_all(&mut settled);
        self.emit_settled(settled);
        self.subscriptions.handle_transport_down();
    }
}
