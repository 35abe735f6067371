//! A graceful drain run on a [`DrainPlan`]: the node numbers the
//! connections it holds when advising starts, advises each at its
//! [`advise_at`](DrainPlan::advise_at), orders its close at its
//! [`close_at`](DrainPlan::close_at) (1012 once its requests are answered,
//! by the plan's deadline), and closes whatever is left at the deadline
//! with 1001.

use std::collections::VecDeque;

use super::registry::{ConnectionHandle, Registry};
use super::{ConnectionOrder, NodeOutput};
use crate::server::{DrainConfig, DrainPhase, DrainPlan};
use crate::time::Instant;

/// The reason of the close at the deadline.
pub(super) const DEADLINE_REASON: &str = "server shutting down";

#[derive(Debug)]
pub(super) struct DrainRun {
    plan: DrainPlan,
    /// The connections being advised, numbered by index; `None` while the
    /// balancer is still being waited for.
    targets: Option<Vec<ConnectionHandle>>,
    /// Indexes below this were advised.
    advised: usize,
    /// Advised connections whose close is due, in close order.
    closing: VecDeque<(Instant, ConnectionHandle)>,
    /// Cut short ([`DrainRun::end_at`]): the deadline's close comes then.
    ended_at: Option<Instant>,
}

impl DrainRun {
    pub(super) fn new(now: Instant, config: DrainConfig) -> Self {
        DrainRun {
            plan: DrainPlan::new(now, config, 0),
            targets: None,
            advised: 0,
            closing: VecDeque::new(),
            ended_at: None,
        }
    }

    /// Cut the drain short: what is left is closed as at the deadline, at
    /// `now` (or at the deadline, if that is sooner).
    pub(super) fn end_at(&mut self, now: Instant) {
        self.ended_at = Some(self.ended_at.map_or(now, |at| at.min(now)));
    }

    /// When what is left is closed 1001: the plan's deadline, or sooner
    /// if the drain was cut short.
    fn deadline(&self) -> Instant {
        let deadline = self.plan.deadline();
        self.ended_at.map_or(deadline, |at| at.min(deadline))
    }

    pub(super) fn phase(&self, now: Instant) -> DrainPhase {
        self.plan.phase(now)
    }

    /// Do what is due at `now`; `true` once the deadline has passed (what
    /// was left has been ordered closed).
    pub(super) fn step(
        &mut self,
        now: Instant,
        registry: &Registry,
        outputs: &mut VecDeque<NodeOutput>,
    ) -> bool {
        let mut order = |connection, order| {
            if registry.contains(connection) {
                outputs.push_back(NodeOutput::Order { connection, order });
            }
        };
        if now >= self.deadline() {
            for connection in registry.all() {
                order(
                    connection,
                    ConnectionOrder::Close {
                        code: self.plan.deadline_close_code(),
                        reason: DEADLINE_REASON.to_owned(),
                    },
                );
            }
            return true;
        }
        if self.targets.is_none() && now >= self.plan.advising_starts_at() {
            // The balancer has stopped sending clients: plan for those here.
            let targets = registry.all();
            self.plan.set_connections(targets.len());
            self.targets = Some(targets);
        }
        if let Some(targets) = &self.targets {
            let due = self.plan.due_by(now).min(targets.len());
            for (index, &connection) in targets.iter().enumerate().take(due).skip(self.advised) {
                order(
                    connection,
                    ConnectionOrder::Advise(self.plan.advice_for(index)),
                );
                self.closing
                    .push_back((self.plan.close_at(index), connection));
            }
            self.advised = self.advised.max(due);
        }
        while let Some(&(at, connection)) = self.closing.front() {
            if at > now {
                break;
            }
            self.closing.pop_front();
            order(
                connection,
                ConnectionOrder::Drain {
                    until: self.plan.deadline(),
                },
            );
        }
        false
    }

    /// The next instant something is due.
    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        let next_advice = match &self.targets {
            None => Some(self.plan.advising_starts_at()),
            Some(targets) if self.advised < targets.len() => {
                Some(self.plan.advise_at(self.advised))
            }
            Some(_) => None,
        };
        let next_close = self.closing.front().map(|&(at, _)| at);
        [next_advice, next_close, Some(self.deadline())]
            .into_iter()
            .flatten()
            .min()
    }
}
