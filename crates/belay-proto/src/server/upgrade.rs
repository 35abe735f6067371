//! What a WebSocket upgrade request gets, decided before any socket exists.
//!
//! The checks run in a fixed order, cheapest and least stateful first, so
//! that a request refused early never counts against its source or takes
//! an admission token:
//!
//! | step | refused with |
//! |---|---|
//! | [`UpgradeDecision::new`]: `Origin` against the allow-list | 403 |
//! | … the server is draining | 503, `Retry-After: 5` |
//! | [`UpgradeDecision::source_counted`]: too many connections from the source | 429 + `Retry-After` |
//! | [`UpgradeDecision::admitted`]: over the source's share or the accept rate, native client (no `Origin`) | 503 + `Retry-After` |
//! | … the same, browser (`Origin` present) | upgraded, then `reconnect` advice and close 1013 (a browser cannot read the status of a failed upgrade) |
//!
//! Each step is pure: the driver counts the source and takes the token
//! (both stateful, in [`SourceTable`](super::SourceTable) and
//! [`TokenBucket`](super::TokenBucket)) between the steps and passes the
//! outcome in.
//!
//! ```
//! use belay_proto::server::{Limits, UpgradeDecision, UpgradeVerdict};
//! use std::time::Duration;
//!
//! let limits = Limits::default();
//! let verdict = UpgradeDecision::new(&limits, Some("https://app.example"), false)
//!     .and_then(|d| d.source_counted(Ok(())))
//!     .map(|(d, ())| d.admitted(Err(Duration::from_millis(1_500))))
//!     .unwrap_or_else(|refused| refused);
//! assert_eq!(verdict, UpgradeVerdict::UpgradeThenRefuse { retry_after: Duration::from_millis(1_500) });
//! ```

use std::time::Duration;

use super::{Limits, Violation, ViolationResponse};

/// How long a draining server tells an upgrade to wait.
pub const DRAINING_RETRY_AFTER: Duration = Duration::from_secs(5);

/// What the upgrade request gets.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpgradeVerdict {
    /// Upgrade and run the session.
    Upgrade,
    /// Upgrade, then refuse in-band: `reconnect` advice and close 1013 with
    /// the hint in the reason (the connection machine's
    /// `refuse_overload(retry_after)`).
    UpgradeThenRefuse {
        /// When to try again.
        retry_after: Duration,
    },
    /// Answer with this HTTP status instead of upgrading.
    Refuse {
        /// HTTP status code.
        status: u16,
        /// The `Retry-After` header, in whole seconds, if any.
        retry_after_secs: Option<u64>,
        /// The body: a short name of the reason.
        reason: &'static str,
    },
}

/// An upgrade request part-way through the checks (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpgradeDecision {
    /// A browser sends `Origin`; a native client does not.
    browser: bool,
}

impl UpgradeDecision {
    /// The first checks: `origin` against `limits`' allow-list, then
    /// whether the server is `draining`.
    pub fn new(
        limits: &Limits,
        origin: Option<&str>,
        draining: bool,
    ) -> Result<UpgradeDecision, UpgradeVerdict> {
        limits.check_origin(origin).map_err(refusal)?;
        if draining {
            return Err(retry_later(503, DRAINING_RETRY_AFTER, "draining"));
        }
        Ok(UpgradeDecision {
            browser: origin.is_some(),
        })
    }

    /// The request counted against its source: `Ok` with what counts it
    /// (the driver's slot, handed back), or the violation counting it met
    /// (too many connections from it).
    pub fn source_counted<T>(
        self,
        counted: Result<T, Violation>,
    ) -> Result<(Self, T), UpgradeVerdict> {
        let slot = counted.map_err(refusal)?;
        Ok((self, slot))
    }

    /// The last check: admission (`Err(wait)` when over the source's share
    /// of the accept rate or over the accept rate itself).
    pub fn admitted(self, admission: Result<(), Duration>) -> UpgradeVerdict {
        match admission {
            Ok(()) => UpgradeVerdict::Upgrade,
            Err(retry_after) if self.browser => UpgradeVerdict::UpgradeThenRefuse { retry_after },
            Err(wait) => retry_later(503, wait, "over capacity"),
        }
    }
}

/// The documented answer to a violation found before the upgrade.
fn refusal(violation: Violation) -> UpgradeVerdict {
    match violation.response() {
        ViolationResponse::RejectUpgrade {
            status,
            retry_after_secs,
        } => UpgradeVerdict::Refuse {
            status,
            retry_after_secs,
            reason: violation.name(),
        },
        // Every violation met before the upgrade has an HTTP answer; one
        // that did not would still be refused, as a bad request.
        _ => UpgradeVerdict::Refuse {
            status: 400,
            retry_after_secs: None,
            reason: violation.name(),
        },
    }
}

fn retry_later(status: u16, after: Duration, reason: &'static str) -> UpgradeVerdict {
    // Whole seconds, rounded up, at least one.
    let secs = after.as_millis().div_ceil(1_000).max(1);
    UpgradeVerdict::Refuse {
        status,
        retry_after_secs: Some(u64::try_from(secs).unwrap_or(u64::MAX)),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict() -> Limits {
        let mut limits = Limits::default();
        limits.set_allowed_origins(vec!["https://app.example".into()]);
        limits
    }

    fn decide(
        limits: &Limits,
        origin: Option<&str>,
        draining: bool,
        counted: Result<(), Violation>,
        admission: Result<(), Duration>,
    ) -> UpgradeVerdict {
        UpgradeDecision::new(limits, origin, draining)
            .and_then(|d| d.source_counted(counted))
            .map(|(d, ())| d.admitted(admission))
            .unwrap_or_else(|refused| refused)
    }

    #[test]
    fn a_foreign_origin_is_refused_403_before_anything_else() {
        let verdict = decide(
            &strict(),
            Some("https://evil.example"),
            true,
            Err(Violation::TooManyPendingUpgrades),
            Err(Duration::from_secs(3)),
        );
        assert_eq!(
            verdict,
            UpgradeVerdict::Refuse {
                status: 403,
                retry_after_secs: None,
                reason: Violation::BadOrigin.name()
            }
        );
    }

    #[test]
    fn a_draining_server_refuses_503_with_five_seconds_before_counting_the_source() {
        let first = UpgradeDecision::new(&Limits::default(), None, true);
        assert_eq!(
            first,
            Err(UpgradeVerdict::Refuse {
                status: 503,
                retry_after_secs: Some(5),
                reason: "draining"
            })
        );
    }

    #[test]
    fn too_many_connections_from_a_source_is_429_with_its_hint() {
        let verdict = decide(
            &Limits::default(),
            None,
            false,
            Err(Violation::TooManyConnectionsFromIp {
                retry_after: Duration::from_millis(2_100),
            }),
            Ok(()),
        );
        assert_eq!(
            verdict,
            UpgradeVerdict::Refuse {
                status: 429,
                retry_after_secs: Some(3),
                reason: Violation::TooManyConnectionsFromIp {
                    retry_after: Duration::ZERO
                }
                .name()
            }
        );
    }

    #[test]
    fn over_capacity_a_native_client_gets_503_and_a_browser_an_in_band_refusal() {
        let wait = Err(Duration::from_millis(400));
        assert_eq!(
            decide(&Limits::default(), None, false, Ok(()), wait),
            UpgradeVerdict::Refuse {
                status: 503,
                retry_after_secs: Some(1),
                reason: "over capacity"
            }
        );
        assert_eq!(
            decide(&strict(), Some("https://app.example"), false, Ok(()), wait),
            UpgradeVerdict::UpgradeThenRefuse {
                retry_after: Duration::from_millis(400)
            }
        );
    }

    #[test]
    fn everything_passed_is_an_upgrade() {
        assert_eq!(
            decide(
                &strict(),
                Some("https://APP.example"),
                false,
                Ok(()),
                Ok(())
            ),
            UpgradeVerdict::Upgrade
        );
    }
}
