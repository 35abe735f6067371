//! [`SourceTable`]: connections and admissions counted per source address,
//! before any socket is upgraded.
//!
//! One source must not be able to take what all the others need: file
//! descriptors (sockets that never finish their upgrade), connection slots,
//! or the admission budget. The table counts, per source, the TCP
//! connections it holds (upgraded or not) and those not yet upgraded, and
//! gives each source its own admission bucket, so a source over its share of
//! the accept rate is refused without taking tokens from anyone else.
//!
//! ```text
//!  TCP accept ──▶ open(key)       ≤ max_pending in all, ≤ max_per_source and
//!                                 ≤ max_pending_per_source for the source
//!  upgrade    ──▶ admit(now, key) the source's own bucket (then the global one)
//!                 upgraded(key)   no longer pending
//!  each frame ──▶ pace_work(now, key, units)   the source's share of the work
//!                 (a WorkPacer): now, or later
//!  closed     ──▶ close(key, pending)
//! ```
//!
//! A source is an IPv4 address, or an IPv6 address's /64 prefix (one
//! subscriber line usually gets a whole /64, so counting single IPv6
//! addresses would count nothing). An IPv4-mapped IPv6 address is its IPv4
//! address. Entries exist only while a source holds a connection or its
//! bucket is refilling, and at most `max_tracked` of them; when the table is
//! full, a new source is still counted in the global totals but gets no
//! entry (and so no per-source bound) until room is made.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv6Addr};
use std::time::Duration;

use super::{TokenBucket, Violation, WorkPacer};
use crate::time::Instant;

/// What connections are counted by: an IPv4 address or an IPv6 /64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceKey(IpAddr);

impl From<IpAddr> for SourceKey {
    fn from(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => SourceKey(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => SourceKey(IpAddr::V4(v4)),
                None => {
                    let bits = u128::from(v6) & !((1u128 << 64) - 1);
                    SourceKey(IpAddr::V6(Ipv6Addr::from(bits)))
                }
            },
        }
    }
}

impl SourceKey {
    /// The address (for IPv6, the /64 prefix with the host bits zero).
    pub fn ip(&self) -> IpAddr {
        self.0
    }
}

/// Bounds per source and in all. `Default` plus setters.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SourceLimits {
    max_per_source: u32,
    max_pending_per_source: u32,
    max_pending: u32,
    accept_rate_per_source: f64,
    work_rate_per_source: f64,
    work_burst_per_source: u32,
    max_tracked: usize,
    retry_after: Duration,
}

impl Default for SourceLimits {
    fn default() -> Self {
        SourceLimits {
            max_per_source: 1_000,
            max_pending_per_source: 64,
            max_pending: 2_048,
            accept_rate_per_source: 125.0,
            work_rate_per_source: 8_000.0,
            work_burst_per_source: 500,
            max_tracked: 65_536,
            retry_after: Duration::from_secs(35),
        }
    }
}

impl SourceLimits {
    /// Connections (upgraded or not) one source may hold. Default: 1 000.
    pub fn max_per_source(&self) -> u32 {
        self.max_per_source
    }

    /// See [`max_per_source`](Self::max_per_source).
    pub fn set_max_per_source(&mut self, value: u32) -> &mut Self {
        self.max_per_source = value;
        self
    }

    /// Connections not yet upgraded one source may hold. Default: 64.
    pub fn max_pending_per_source(&self) -> u32 {
        self.max_pending_per_source
    }

    /// See [`max_pending_per_source`](Self::max_pending_per_source).
    pub fn set_max_pending_per_source(&mut self, value: u32) -> &mut Self {
        self.max_pending_per_source = value;
        self
    }

    /// Connections not yet upgraded, from all sources: keep it well below
    /// the process's file-descriptor limit. Default: 2 048.
    pub fn max_pending(&self) -> u32 {
        self.max_pending
    }

    /// See [`max_pending`](Self::max_pending).
    pub fn set_max_pending(&mut self, value: u32) -> &mut Self {
        self.max_pending = value;
        self
    }

    /// Sessions per second one source may be admitted (its own bucket,
    /// burst one second's worth). Default: 125, a quarter of the default
    /// accept rate.
    pub fn accept_rate_per_source(&self) -> f64 {
        self.accept_rate_per_source
    }

    /// See [`accept_rate_per_source`](Self::accept_rate_per_source); NaN
    /// and negative values become 0 (only the burst).
    pub fn set_accept_rate_per_source(&mut self, value: f64) -> &mut Self {
        self.accept_rate_per_source = if value > 0.0 { value } else { 0.0 };
        self
    }

    /// Work units per second one source's frames may take
    /// ([`work_units`](super::work_units): one per frame, one more per
    /// 256 B; a [`WorkPacer`]). Frames past it are read later, never
    /// refused. Default: 8 000 (about 2 MiB/s of messages, or 8 000 small
    /// ones); 0: no share.
    pub fn work_rate_per_source(&self) -> f64 {
        self.work_rate_per_source
    }

    /// See [`work_rate_per_source`](Self::work_rate_per_source); NaN and
    /// negative values become 0 (no share).
    pub fn set_work_rate_per_source(&mut self, value: f64) -> &mut Self {
        self.work_rate_per_source = if value > 0.0 { value } else { 0.0 };
        self
    }

    /// Work units one source may take at once before its frames are paced.
    /// Default: 500.
    pub fn work_burst_per_source(&self) -> u32 {
        self.work_burst_per_source
    }

    /// See [`work_burst_per_source`](Self::work_burst_per_source).
    pub fn set_work_burst_per_source(&mut self, value: u32) -> &mut Self {
        self.work_burst_per_source = value;
        self
    }

    /// Sources tracked at once. Default: 65 536.
    pub fn max_tracked(&self) -> usize {
        self.max_tracked
    }

    /// See [`max_tracked`](Self::max_tracked).
    pub fn set_max_tracked(&mut self, value: usize) -> &mut Self {
        self.max_tracked = value.max(1);
        self
    }

    /// The `Retry-After` hint for a source at its connection limit (the
    /// time the heartbeat takes to reap leaked connections). Default: 35 s.
    pub fn set_retry_after(&mut self, value: Duration) -> &mut Self {
        self.retry_after = value;
        self
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    open: u32,
    pending: u32,
    bucket: TokenBucket,
    work: WorkPacer,
}

impl Entry {
    /// Nothing held and nothing owed: the entry may go.
    fn is_idle(&self, now: Instant) -> bool {
        self.open == 0 && self.bucket.is_full(now) && self.work.is_full(now)
    }
}

/// Connections and admissions per source. Pure: the caller passes `now`.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceTable {
    limits: SourceLimits,
    entries: BTreeMap<SourceKey, Entry>,
    pending: u32,
}

impl SourceTable {
    /// An empty table.
    pub fn new(limits: SourceLimits) -> Self {
        SourceTable {
            limits,
            entries: BTreeMap::new(),
            pending: 0,
        }
    }

    /// The limits.
    pub fn limits(&self) -> &SourceLimits {
        &self.limits
    }

    /// A TCP connection from `key` arrived at `now` (`None`: a trusted proxy,
    /// counted only in the global pending total). Refused with
    /// [`Violation::TooManyPendingUpgrades`] when too many connections are
    /// not yet upgraded (in all or from this source), or
    /// [`Violation::TooManyConnectionsFromIp`] when the source holds its
    /// maximum.
    pub fn open(&mut self, now: Instant, key: Option<SourceKey>) -> Result<(), Violation> {
        if self.pending >= self.limits.max_pending {
            return Err(Violation::TooManyPendingUpgrades);
        }
        let (max, max_pending, retry_after) = (
            self.limits.max_per_source,
            self.limits.max_pending_per_source,
            self.limits.retry_after,
        );
        if let Some(entry) = key.and_then(|key| self.entry(now, key)) {
            if entry.open >= max {
                return Err(Violation::TooManyConnectionsFromIp { retry_after });
            }
            if entry.pending >= max_pending {
                return Err(Violation::TooManyPendingUpgrades);
            }
            entry.open += 1;
            entry.pending += 1;
        }
        self.pending += 1;
        Ok(())
    }

    /// May `key` be admitted as a session at `now`? `Err` is how long until
    /// its bucket admits again.
    pub fn admit(&mut self, now: Instant, key: SourceKey) -> Result<(), Duration> {
        match self.entry(now, key) {
            Some(entry) => entry.bucket.try_take(now),
            None => Ok(()),
        }
    }

    /// A frame of `units` work units from `key` was read at `now`: `None`,
    /// within the source's share of the work; `Some(t)`, past it, read
    /// nothing more from that connection until `t`. A source without an entry (a trusted proxy, or the table
    /// full) is not paced.
    pub fn pace_work(&mut self, now: Instant, key: SourceKey, units: u32) -> Option<Instant> {
        let (rate, burst) = (
            self.limits.work_rate_per_source,
            self.limits.work_burst_per_source,
        );
        let entry = self.entries.get_mut(&key)?;
        entry.work.reserve(now, units, rate, burst)
    }

    /// The connection from `key` was upgraded: no longer pending.
    pub fn upgraded(&mut self, key: Option<SourceKey>) {
        self.pending = self.pending.saturating_sub(1);
        if let Some(entry) = key.and_then(|key| self.entries.get_mut(&key)) {
            entry.pending = entry.pending.saturating_sub(1);
        }
    }

    /// The connection from `key` ended (`pending`: before its upgrade).
    pub fn close(&mut self, now: Instant, key: Option<SourceKey>, pending: bool) {
        if pending {
            self.pending = self.pending.saturating_sub(1);
        }
        let Some(key) = key else { return };
        let Some(entry) = self.entries.get_mut(&key) else {
            return;
        };
        entry.open = entry.open.saturating_sub(1);
        if pending {
            entry.pending = entry.pending.saturating_sub(1);
        }
        if entry.is_idle(now) {
            self.entries.remove(&key);
        }
    }

    /// Connections from `key` (upgraded or not).
    pub fn connections(&self, key: SourceKey) -> u32 {
        self.entries.get(&key).map_or(0, |entry| entry.open)
    }

    /// Connections not yet upgraded, from all sources.
    pub fn pending(&self) -> u32 {
        self.pending
    }

    /// Sources tracked now.
    pub fn tracked(&self) -> usize {
        self.entries.len()
    }

    /// `key`'s entry, made if there is room (forgetting idle sources with a
    /// full bucket first when the table is full).
    fn entry(&mut self, now: Instant, key: SourceKey) -> Option<&mut Entry> {
        if !self.entries.contains_key(&key) {
            if self.entries.len() >= self.limits.max_tracked {
                self.entries.retain(|_, entry| !entry.is_idle(now));
            }
            if self.entries.len() >= self.limits.max_tracked {
                return None;
            }
            let rate = self.limits.accept_rate_per_source;
            self.entries.insert(
                key,
                Entry {
                    open: 0,
                    pending: 0,
                    bucket: TokenBucket::new(rate, rate.max(1.0), now, true),
                    work: WorkPacer::new(now),
                },
            );
        }
        self.entries.get_mut(&key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ip: &str) -> Option<SourceKey> {
        Some(SourceKey::from(ip.parse::<IpAddr>().unwrap()))
    }

    const T0: Instant = Instant::ZERO;

    #[test]
    fn ipv6_sources_are_counted_by_their_64_prefix_and_mapped_ipv4_as_ipv4() {
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:192.0.2.7"), key("192.0.2.7"));
    }

    #[test]
    fn a_source_at_its_limit_is_refused_and_others_are_not() {
        let mut limits = SourceLimits::default();
        limits.set_max_per_source(2).set_max_pending_per_source(10);
        let mut table = SourceTable::new(limits);
        let a = key("10.0.0.1");
        assert!(table.open(T0, a).is_ok());
        assert!(table.open(T0, a).is_ok());
        assert!(matches!(
            table.open(T0, a),
            Err(Violation::TooManyConnectionsFromIp { .. })
        ));
        assert!(table.open(T0, key("10.0.0.2")).is_ok());
        table.close(T0, a, true);
        assert!(table.open(T0, a).is_ok());
    }

    #[test]
    fn sockets_that_never_upgrade_are_bounded_per_source_and_in_all() {
        let mut limits = SourceLimits::default();
        limits.set_max_pending_per_source(3).set_max_pending(4);
        let mut table = SourceTable::new(limits);
        let a = key("10.0.0.1");
        for _ in 0..3 {
            table.open(T0, a).unwrap();
        }
        assert_eq!(table.open(T0, a), Err(Violation::TooManyPendingUpgrades));
        // Upgraded connections no longer count as pending.
        table.upgraded(a);
        assert!(table.open(T0, a).is_ok());
        table.open(T0, key("10.0.0.2")).unwrap();
        assert_eq!(
            table.open(T0, key("10.0.0.3")),
            Err(Violation::TooManyPendingUpgrades)
        );
        assert_eq!(table.pending(), 4);
    }

    #[test]
    fn one_source_over_its_accept_share_leaves_the_others_admitted() {
        let mut limits = SourceLimits::default();
        limits.set_accept_rate_per_source(10.0);
        let mut table = SourceTable::new(limits);
        let flood = SourceKey::from("10.0.0.1".parse::<IpAddr>().unwrap());
        let other = SourceKey::from("10.0.0.2".parse::<IpAddr>().unwrap());
        let admitted = (0..1_500)
            .filter(|_| table.admit(T0, flood).is_ok())
            .count();
        assert_eq!(admitted, 10);
        assert!(table.admit(T0, other).is_ok());
        let wait = table.admit(T0, flood).unwrap_err();
        assert_eq!(wait, Duration::from_millis(100));
    }

    #[test]
    fn one_source_past_its_work_share_waits_and_the_others_do_not() {
        let mut limits = SourceLimits::default();
        limits
            .set_work_rate_per_source(1_000.0)
            .set_work_burst_per_source(100);
        let mut table = SourceTable::new(limits);
        let (flood, other) = (key("10.0.0.1"), key("10.0.0.2"));
        table.open(T0, flood).unwrap();
        table.open(T0, other).unwrap();
        let flood = flood.unwrap();
        let paced = (0..1_000)
            .filter(|_| table.pace_work(T0, flood, 1).is_some())
            .count();
        assert_eq!(paced, 900, "the burst goes at once, the rest later");
        assert_eq!(table.pace_work(T0, other.unwrap(), 1), None);
        // Not forgotten while it owes work, even with no connection left.
        table.close(T0, Some(flood), true);
        assert_eq!(table.tracked(), 2);
    }

    #[test]
    fn idle_sources_are_forgotten_and_the_table_stays_bounded() {
        let mut limits = SourceLimits::default();
        limits.set_max_tracked(2);
        let mut table = SourceTable::new(limits);
        table.open(T0, key("10.0.0.1")).unwrap();
        table.open(T0, key("10.0.0.2")).unwrap();
        // Full: a third source is counted globally but not per source.
        table.open(T0, key("10.0.0.3")).unwrap();
        assert_eq!(table.tracked(), 2);
        assert_eq!(table.pending(), 3);
        table.close(T0, key("10.0.0.1"), true);
        assert_eq!(table.tracked(), 1, "an idle source with a full bucket goes");
        table.close(T0, key("10.0.0.3"), true);
        assert_eq!(table.pending(), 1);
    }
}
