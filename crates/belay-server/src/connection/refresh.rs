//! The verdict on a `refresh`'s credentials, and what it changes: the
//! session keeps its user and its host, takes the new expiry and grants,
//! and loses the subscriptions those grants no longer allow, so a refreshed
//! session never holds more than a new connection with the same token
//! could (spec/PROTOCOL.md §2.8).

use belay_proto::host::{HostChannel, HOST_CHANNEL_PREFIX};
use belay_proto::message::ErrorBody;
use belay_proto::server::{Access, AuthVerdict, Input, Ticket};
use belay_proto::Instant;

use super::outputs::core_refusal;
use super::Driver;
use crate::access;
use crate::auth::{AuthError, Principal, Verdict};

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
            Ok(principal) if principal.user != self.principal.user => AuthVerdict::RefusedFor {
                reason: "the refreshed token names another user".into(),
            },
            // A host session holds its host's calls channel: new
            // credentials may not make it another host, nor a host of a
            // session that was not one (nor the reverse).
            Ok(principal) if principal.host != self.principal.host => AuthVerdict::RefusedFor {
                reason: "the refreshed token names another host".into(),
            },
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
            Err(error) => core_refusal(error),
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

/// Whether the principal's grants still allow holding `channel`. Channels
/// whose namespace asks the backend or a subscription token were judged at
/// their subscribe by that, not by the grants, and are kept.
fn still_granted(driver: &Driver, channel: &str) -> Result<(), AuthError> {
    let judged_by = match HostChannel::parse(channel) {
        Some(HostChannel::State(host)) => format!("{HOST_CHANNEL_PREFIX}{host}"),
        _ => channel.to_owned(),
    };
    let namespace = driver.shared.config.namespaces.options_for(&judged_by);
    if matches!(namespace.subscribe, Access::Backend | Access::Token) {
        return Ok(());
    }
    match access::subscribe(&driver.shared, &driver.principal, channel, None) {
        Verdict::Now(verdict) => verdict,
        // Not a grant's decision (see above); never waited for here.
        Verdict::Later(_) => Ok(()),
    }
}
