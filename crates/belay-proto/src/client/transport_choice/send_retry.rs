//! [`SendRetry`]: what the SSE fallback's driver does with one send
//! (`POST /sse/send`, spec/PROTOCOL.md §1.7) until it is answered `204`, or
//! until the transport is given up as failed. Pure and clock-free: the
//! driver makes each attempt, reports how it ended, and waits or stops as
//! told.
//!
//! ```text
//!   new(now) ──▶ attempt ──▶ handle_outcome(now, outcome)
//!                  ▲            ├─ 2xx ─────────────────────────▶ Sent
//!                  │            ├─ 400, 404, 409, 413, …,
//!                  │            │  no answer by deadline() ─────▶ GiveUp(failure)
//!                  └─ RetryAt ──┴─ no answer (the request failed
//!                     (same body,  on the way), 502, 503, 504
//!                      same Belay-Seq)
//! ```
//!
//! A retry repeats the body with the same `Belay-Seq`: if the first copy
//! was read after all, the server answers the repeat `204` and ignores its
//! body, so a retry never delivers a message twice. Only failures that may
//! pass are retried: the request failed before an answer (most often a
//! kept-alive connection the server or a proxy had closed: hence the first
//! retry is immediate), or a gateway answered 502/503/504 (503 is also a
//! cluster node that did not answer in time; its `Retry-After` is taken,
//! capped). Every other answer says the stream is gone or broken, and
//! repeating cannot change it. The whole send, retries included, has one
//! budget (15 s: the server's own 10 s wait for the connection to read a
//! body, and a little more); a send not answered by then means the path
//! is dead, and the transport is given up, as a WebSocket whose writes
//! stall.

use std::time::Duration;

use crate::time::Instant;
use crate::transport::Failure;

/// The schedule of [`SendRetry`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SendRetryPolicy {
    /// The wait before each retry; as many retries as delays.
    pub retry_delays: Vec<Duration>,
    /// How long one send may take, all its attempts and waits included.
    pub budget: Duration,
    /// The longest `Retry-After` taken from an answer.
    pub max_hint: Duration,
}

impl Default for SendRetryPolicy {
    fn default() -> Self {
        SendRetryPolicy {
            retry_delays: vec![
                Duration::ZERO,
                Duration::from_millis(500),
                Duration::from_millis(2_000),
            ],
            budget: Duration::from_secs(15),
            max_hint: Duration::from_secs(5),
        }
    }
}

impl SendRetryPolicy {
    /// Set [`retry_delays`](Self::retry_delays): one retry per delay.
    pub fn set_retry_delays(&mut self, delays: Vec<Duration>) -> &mut Self {
        self.retry_delays = delays;
        self
    }

    /// Set [`budget`](Self::budget).
    pub fn set_budget(&mut self, budget: Duration) -> &mut Self {
        self.budget = budget;
        self
    }

    /// Set [`max_hint`](Self::max_hint).
    pub fn set_max_hint(&mut self, max_hint: Duration) -> &mut Self {
        self.max_hint = max_hint;
        self
    }
}

/// How one attempt of a send ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendOutcome {
    /// The server (or a proxy) answered with `status`, and its
    /// `Retry-After` in ms if it had one.
    Answered {
        /// The HTTP status.
        status: u16,
        /// `Retry-After` (delta-seconds × 1000).
        retry_after_ms: Option<u64>,
    },
    /// The request failed before an answer: the connection was refused,
    /// reset or closed on the way.
    NoAnswer,
    /// No answer by [`SendRetry::deadline`].
    TimedOut,
}

impl SendOutcome {
    /// An answer with `status` and no `Retry-After`.
    pub fn status(status: u16) -> Self {
        SendOutcome::Answered {
            status,
            retry_after_ms: None,
        }
    }
}

/// What the driver does next with the send.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendStep {
    /// The server has the body: on to the next send.
    Sent,
    /// Attempt again at this instant (same body, same `Belay-Seq`).
    RetryAt(Instant),
    /// The transport has failed: report this failure and end it.
    GiveUp(Failure),
}

/// One send's attempts (see the [module](self) docs).
#[derive(Debug, Clone)]
pub struct SendRetry {
    policy: SendRetryPolicy,
    deadline: Instant,
    retries: usize,
    done: bool,
}

impl SendRetry {
    /// A send whose first attempt starts at `now`.
    pub fn new(policy: SendRetryPolicy, now: Instant) -> Self {
        SendRetry {
            deadline: now.saturating_add(policy.budget),
            policy,
            retries: 0,
            done: false,
        }
    }

    /// When the send gives up: the driver reports an attempt still
    /// unanswered then as [`SendOutcome::TimedOut`].
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Retries so far.
    pub fn retries(&self) -> usize {
        self.retries
    }

    /// The attempt made last ended with `outcome` at `now`: what next.
    /// After `Sent` or `GiveUp` every further outcome gives up.
    pub fn handle_outcome(&mut self, now: Instant, outcome: SendOutcome) -> SendStep {
        if self.done {
            return SendStep::GiveUp(Failure::network("the send was already settled"));
        }
        let hint = match outcome {
            SendOutcome::Answered { status, .. } if (200..300).contains(&status) => {
                self.done = true;
                return SendStep::Sent;
            }
            SendOutcome::Answered {
                status: status @ (502..=504),
                retry_after_ms,
            } => (
                retry_after_ms.map_or(Duration::ZERO, Duration::from_millis),
                format!("a send was answered {status}"),
            ),
            SendOutcome::Answered { status, .. } => {
                return self.give_up(format!("a send was answered {status}"))
            }
            SendOutcome::NoAnswer => (Duration::ZERO, "a send failed on the way".to_owned()),
            SendOutcome::TimedOut => {
                return self.give_up(format!(
                    "a send was not answered within {} ms",
                    self.policy.budget.as_millis()
                ))
            }
        };
        let (hint, why) = hint;
        let Some(delay) = self.policy.retry_delays.get(self.retries) else {
            let retries = self.retries;
            return self.give_up(format!("{why}, after {retries} retries"));
        };
        let at = now.saturating_add((*delay).max(hint.min(self.policy.max_hint)));
        if at >= self.deadline {
            return self.give_up(format!("{why}, and no time is left to retry"));
        }
        self.retries += 1;
        SendStep::RetryAt(at)
    }

    fn give_up(&mut self, detail: String) -> SendStep {
        self.done = true;
        SendStep::GiveUp(Failure::network(detail))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_micros(ms * 1_000)
    }

    fn retry() -> SendRetry {
        SendRetry::new(SendRetryPolicy::default(), at(0))
    }

    #[test]
    fn a_policy_without_retries_gives_up_at_the_first_failure() {
        let mut policy = SendRetryPolicy::default();
        policy
            .set_retry_delays(Vec::new())
            .set_budget(Duration::from_secs(1))
            .set_max_hint(Duration::ZERO);
        let mut r = SendRetry::new(policy, at(0));
        assert_eq!(r.deadline(), at(1_000));
        assert!(matches!(
            r.handle_outcome(at(1), SendOutcome::NoAnswer),
            SendStep::GiveUp(_)
        ));
        assert!(
            matches!(
                r.handle_outcome(at(2), SendOutcome::status(204)),
                SendStep::GiveUp(_)
            ),
            "settled: nothing more"
        );
    }

    #[test]
    fn a_204_is_sent() {
        assert_eq!(
            retry().handle_outcome(at(5), SendOutcome::status(204)),
            SendStep::Sent
        );
    }

    #[test]
    fn failures_on_the_way_are_retried_on_the_schedule_then_given_up() {
        let mut r = retry();
        assert_eq!(
            r.handle_outcome(at(10), SendOutcome::NoAnswer),
            SendStep::RetryAt(at(10))
        );
        assert_eq!(
            r.handle_outcome(at(20), SendOutcome::NoAnswer),
            SendStep::RetryAt(at(520))
        );
        assert_eq!(
            r.handle_outcome(at(600), SendOutcome::NoAnswer),
            SendStep::RetryAt(at(2_600))
        );
        assert_eq!(r.retries(), 3);
        assert!(matches!(
            r.handle_outcome(at(2_700), SendOutcome::NoAnswer),
            SendStep::GiveUp(Failure::Network { .. })
        ));
    }

    #[test]
    fn answers_that_say_the_stream_is_gone_are_not_retried() {
        for status in [400, 404, 408, 409, 413, 500] {
            let mut r = retry();
            assert!(
                matches!(
                    r.handle_outcome(at(1), SendOutcome::status(status)),
                    SendStep::GiveUp(_)
                ),
                "{status}"
            );
        }
    }

    #[test]
    fn a_retry_after_is_taken_capped_and_the_budget_bounds_everything() {
        let mut r = retry();
        let busy = |ms| SendOutcome::Answered {
            status: 503,
            retry_after_ms: Some(ms),
        };
        assert_eq!(
            r.handle_outcome(at(100), busy(1_000)),
            SendStep::RetryAt(at(1_100))
        );
        assert_eq!(
            r.handle_outcome(at(1_200), busy(60_000)),
            SendStep::RetryAt(at(6_200))
        );
        assert!(matches!(
            r.handle_outcome(at(11_000), busy(5_000)),
            SendStep::GiveUp(_)
        ));
        assert_eq!(r.deadline(), at(15_000));
        let mut late = retry();
        assert!(matches!(
            late.handle_outcome(at(15_000), SendOutcome::TimedOut),
            SendStep::GiveUp(_)
        ));
    }
}
