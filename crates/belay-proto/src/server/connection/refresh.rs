//! `refresh`: new credentials on an open session, checked like those of
//! `connect`; good ones replace the old expiry and are confirmed with
//! `refreshed`, bad ones (or another user's) close 4001, and a credential
//! nobody could judge now closes 1013 (the client reconnects with it).

use crate::close::CloseCode;
use crate::message::{Refreshed, ServerMessage};
use crate::time::Instant;

use super::handshake::millis_until;
use super::{AuthVerdict, Connection, Output, Stage, Ticket};

impl<F> Connection<F> {
    /// A `refresh` on the open session: ask the driver to check it (a
    /// later `refresh` replaces one still being checked).
    pub(super) fn on_refresh(&mut self, token: String) {
        let ticket = self.ticket();
        let Stage::Open(open) = &mut self.stage else {
            return;
        };
        open.refreshing = Some(ticket);
        self.out.push_back(Output::Reauthenticate { ticket, token });
    }

    /// The verdict on a `refresh`'s credential ([`Output::Reauthenticate`]),
    /// at `now`: accepted and not yet expired, the session's expiry becomes
    /// the new one and `refreshed` is sent; otherwise close 4001 (the
    /// driver refuses a credential that names another user).
    pub(super) fn handle_refresh(&mut self, now: Instant, ticket: Ticket, verdict: AuthVerdict) {
        let Stage::Open(open) = &mut self.stage else {
            return;
        };
        if open.refreshing != Some(ticket) {
            return;
        }
        open.refreshing = None;
        match verdict {
            AuthVerdict::Accepted { expires_at, .. } if !expires_at.is_some_and(|at| now >= at) => {
                open.expires_at = expires_at;
                self.send(ServerMessage::Refreshed(Refreshed {
                    expires_in_ms: expires_at.map(|at| millis_until(now, at)),
                }));
            }
            AuthVerdict::Accepted { .. } => {
                self.close_with(
                    CloseCode::UNAUTHORIZED,
                    "unauthorized: the refreshed credentials have expired",
                );
            }
            AuthVerdict::RefusedFor { reason } => {
                self.close_with(CloseCode::UNAUTHORIZED, &format!("unauthorized: {reason}"));
            }
            // The refresh cannot be answered: the client reconnects with
            // its new credential (within backoff) rather than wait.
            AuthVerdict::Unavailable { reason } => {
                self.close_with(
                    CloseCode::TRY_AGAIN_LATER,
                    &format!("unavailable: {reason}"),
                );
            }
            _ => self.close_with(CloseCode::UNAUTHORIZED, "unauthorized"),
        }
    }
}
