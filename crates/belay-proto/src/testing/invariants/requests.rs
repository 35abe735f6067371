//! Every request settles exactly once (spec §4.3): the checker's record of
//! the requests a session accepted.

use std::collections::BTreeMap;

use crate::time::Instant;
use crate::{RequestId, RequestOutcome, Session};

use super::{Invariant, Violation};

#[derive(Debug, Clone, Copy)]
struct Pending {
    /// `None`: learned from the wire, deadline unknown.
    deadline: Option<Instant>,
    settled: bool,
}

/// The requests known to the checker, by id.
#[derive(Debug, Default)]
pub(super) struct Requests {
    pending: BTreeMap<u64, Pending>,
}

fn violation(what: String) -> Violation {
    Violation::new(Invariant::SettleOnce, what)
}

impl Requests {
    /// `request` returned `id`, due by `deadline`.
    pub(super) fn accepted(&mut self, id: RequestId, deadline: Instant) {
        let pending = Pending {
            deadline: Some(deadline),
            settled: false,
        };
        self.pending.insert(id.0, pending);
    }

    /// A request seen on the wire (a driver that does not report requests):
    /// known from now on, its deadline unknown.
    pub(super) fn learned(&mut self, id: u64) {
        let learned = Pending {
            deadline: None,
            settled: false,
        };
        self.pending.entry(id).or_insert(learned);
    }

    /// The ids not settled yet.
    pub(super) fn unsettled(&self) -> Vec<RequestId> {
        let open = self.pending.iter().filter(|(_, p)| !p.settled);
        open.map(|(id, _)| RequestId(*id)).collect()
    }

    /// The unsettled ones with their deadlines.
    pub(super) fn open(&self) -> Vec<(u64, Option<Instant>)> {
        let open = self.pending.iter().filter(|(_, p)| !p.settled);
        open.map(|(id, p)| (*id, p.deadline)).collect()
    }

    /// `id` settled at `now` with `outcome`: known, once, and a timeout not
    /// before its deadline.
    pub(super) fn settle(
        &mut self,
        now: Instant,
        id: RequestId,
        outcome: &RequestOutcome,
    ) -> Result<(), Violation> {
        let Some(pending) = self.pending.get_mut(&id.0) else {
            return Err(violation(format!("Response for {id:?}, never returned")));
        };
        let (settled, deadline) = (pending.settled, pending.deadline);
        pending.settled = true;
        if settled {
            let what = format!("{id:?} settled twice (again with {outcome:?})");
            return Err(violation(what));
        }
        match deadline {
            Some(deadline) if matches!(outcome, RequestOutcome::Timeout) && now < deadline => {
                let what = format!("{id:?} timed out at {now:?}, before its deadline {deadline:?}");
                Err(violation(what))
            }
            _ => Ok(()),
        }
    }

    /// After `handle_timeout(at)`: every request due by `at` has settled.
    pub(super) fn due_by(&self, at: Instant) -> Result<(), Violation> {
        let mut pending = self.pending.iter();
        let due = pending.find(|(_, p)| !p.settled && p.deadline.is_some_and(|d| d <= at));
        match due {
            Some((id, p)) => Err(violation(format!(
                "request {id} (deadline {:?}) unsettled after handle_timeout at {at:?}",
                p.deadline
            ))),
            None => Ok(()),
        }
    }

    /// The end of a run: every request settled.
    pub(super) fn all_settled(&self, session: &Session) -> Result<(), Violation> {
        match self.pending.iter().find(|(_, p)| !p.settled) {
            Some((id, p)) => Err(violation(format!(
                "request {id} (deadline {:?}) never settled; {} in flight in the session",
                p.deadline,
                session.requests_in_flight()
            ))),
            None => Ok(()),
        }
    }
}
