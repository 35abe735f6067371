//! Time as the core sees it: a point on the driver's monotonic clock.
//!
//! The core never reads a clock. Every call that depends on time takes `now`
//! from the driver. [`Instant`] is a plain number of microseconds since an
//! origin the driver picks (typically the moment it created the session), so
//! the simulator can run millions of sessions on one virtual clock, the
//! conformance vectors can write times as integers, and the browser client can
//! use `performance.now()` without conversion tricks.
//!
//! All arithmetic saturates: a driver can never make the core panic by
//! passing an extreme time or duration.

use std::fmt;
use std::ops::{Add, Sub};
use std::time::Duration;

/// A point in time on the driver's monotonic clock, with microsecond resolution.
///
/// Only differences between instants of the same driver are meaningful.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant {
    micros: u64,
}

impl Instant {
    /// The origin of the driver's clock.
    pub const ZERO: Instant = Instant { micros: 0 };
    /// The largest representable instant; used as "never".
    pub const MAX: Instant = Instant { micros: u64::MAX };

    /// An instant `millis` milliseconds after the origin.
    pub const fn from_millis(millis: u64) -> Self {
        Instant {
            micros: millis.saturating_mul(1000),
        }
    }

    /// An instant `micros` microseconds after the origin.
    pub const fn from_micros(micros: u64) -> Self {
        Instant { micros }
    }

    /// An instant `elapsed` after the origin (saturating).
    pub fn from_elapsed(elapsed: Duration) -> Self {
        Instant {
            micros: u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        }
    }

    /// Microseconds since the origin.
    pub const fn as_micros(self) -> u64 {
        self.micros
    }

    /// Whole milliseconds since the origin.
    pub const fn as_millis(self) -> u64 {
        self.micros / 1000
    }

    /// Time since the origin.
    pub const fn elapsed_since_origin(self) -> Duration {
        Duration::from_micros(self.micros)
    }

    /// `self - earlier`, or zero if `earlier` is later than `self`.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_micros(self.micros.saturating_sub(earlier.micros))
    }

    /// `self + duration`, saturating at [`Instant::MAX`].
    pub fn saturating_add(self, duration: Duration) -> Instant {
        let add = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        Instant {
            micros: self.micros.saturating_add(add),
        }
    }

    /// `self - duration`, saturating at [`Instant::ZERO`].
    pub fn saturating_sub(self, duration: Duration) -> Instant {
        let sub = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        Instant {
            micros: self.micros.saturating_sub(sub),
        }
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, rhs: Duration) -> Instant {
        self.saturating_add(rhs)
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, rhs: Duration) -> Instant {
        self.saturating_sub(rhs)
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_duration_since(rhs)
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "t+{}.{:06}s",
            self.micros / 1_000_000,
            self.micros % 1_000_000
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_panicking() {
        assert_eq!(Instant::MAX + Duration::from_secs(1), Instant::MAX);
        assert_eq!(Instant::ZERO - Duration::from_secs(1), Instant::ZERO);
        assert_eq!(Instant::ZERO - Instant::MAX, Duration::ZERO);
        assert_eq!(Instant::from_millis(u64::MAX), Instant::MAX);
        assert_eq!(Instant::ZERO + Duration::MAX, Instant::MAX);
    }

    #[test]
    fn millis_and_differences_agree() {
        let a = Instant::from_millis(20_000);
        let b = a + Duration::from_millis(25_000);
        assert_eq!(b.as_millis(), 45_000);
        assert_eq!(b - a, Duration::from_secs(25));
        assert!(b - Duration::from_micros(1) < b);
    }
}
