//! The verdict on a `refresh`'s credentials, and what it changes: the
//! session keeps its user and its host, takes the new expiry and grants,
//! and loses the subscriptions those grants no longer allow, so a refreshed
//! session never holds more than a new connection with the same token
//! could (spec/PROTOCOL.md §2.8).

use belay_proto::message::ErrorBody;
use belay_proto::server::{AuthVerdict, Identity, Input, Ticket};
use belay_proto::Instant;

use super::outputs::core_refusal;
use super::Driver;
use crate::access;
use crate::auth::{AuthError, Principal, Verdict};
use crate::metrics::lock;

impl Driver {
    /// The verdict on a `refresh`'s credentials: they must be good and
    /// name the same user and host; the principal then takes their expiry
    /// and grants, exactly those a new connection with them would get
    /// (the same check decides both).
    pub(super) fn reauthenticated(
        &mut self,
        ticket: Ticket,
        verdict: Result<Principal, AuthError>,
    ) {
        let now = self.now();
        let mut regrant = false;
        let verdict = match verdict {
            Ok(principal) => {
                let held = Identity::new(&self.principal.user, self.principal.host.as_deref());
                let new = Identity::new(&principal.user, principal.host.as_deref());
                match lock(&self.shared.node).check_refresh(held, new) {
                    Ok(()) => Ok(principal),
                    Err(reason) => Err(AuthVerdict::RefusedFor {
                        reason: reason.into(),
                    }),
                }
            }
            Err(error) => Err(core_refusal(error)),
        };
        let verdict = match verdict {
            Ok(principal) => {
                let expires_at = principal
                    .expires_at
                    .map(|at| self.shared.clock.core_instant(at));
                *self.principal = principal;
                regrant = true;
                AuthVerdict::Accepted {
                    expires_at,
                    pacing: None,
                }
            }
            Err(refused) => refused,
        };
        self.core
            .handle_input(now, Input::Refresh { ticket, verdict });
        if regrant {
            self.drop_ungranted(now);
        }
    }

    /// End, with `unsubscribed` `forbidden`, every subscription the
    /// principal's (new) grants no longer allow.
    fn drop_ungranted(&mut self, now: Instant) {
        for (channel, subscription) in self.core.subscriptions() {
            if let Err(denied) = still_granted(self, &channel) {
                let error = ErrorBody::new(denied.code(), denied.to_string());
                self.core.handle_input(
                    now,
                    Input::SubscriptionEnded {
                        channel: &channel,
                        subscription,
                        error: &error,
                    },
                );
            }
        }
    }
}

/// Whether the principal's grants still allow holding `channel`
/// ([`Node::regrant_route`](belay_proto::server::Node::regrant_route):
/// channels the backend or a subscription token judged are kept).
fn still_granted(driver: &Driver, channel: &str) -> Result<(), AuthError> {
    let caller = access::caller(&driver.principal);
    let Some(route) = lock(&driver.shared.node).regrant_route(caller, channel) else {
        return Ok(());
    };
    match access::subscribe_by(&driver.shared, &driver.principal, route, None) {
        Verdict::Now(verdict) => verdict.map(drop),
        // Not a grant's decision (see above); never waited for here.
        Verdict::Later(_) => Ok(()),
    }
}
