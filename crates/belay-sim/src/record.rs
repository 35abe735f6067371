//! What a run records while it goes: attempts, failures, connections.
//!
//! Recording starts at an instant `from` (the incident); the setup before
//! it is not counted. Everything is appended in time order, because the
//! engine processes events in time order, so the metrics can be computed
//! with single passes afterwards.

use std::time::Duration;

use belay_proto::Instant;

/// Raw observations of one run.
#[derive(Debug, Clone)]
pub struct Recorder {
    from: Instant,
    bin: Duration,
    clients: usize,
    /// Instants of every attempt (`OpenTransport`) at or after `from`.
    attempts: Vec<Instant>,
    /// Attempts that failed (refused by the server or unreachable).
    failed: u64,
    /// Every moment a client became connected at or after `from`:
    /// `(instant, client)`.
    connects: Vec<(Instant, u32)>,
    connected: usize,
    /// Per bin after `from`: attempts started in the bin.
    attempts_per_bin: Vec<u32>,
    /// Per bin after `from`: connected clients at the end of the bin.
    connected_per_bin: Vec<u32>,
    /// The first bin whose `connected_per_bin` is not written yet.
    filled: usize,
}

impl Recorder {
    /// Record a fleet of `clients` from `from` on, for `bins` bins of `bin`.
    pub(crate) fn new(clients: usize, from: Instant, bin: Duration, bins: usize) -> Self {
        Recorder {
            from,
            bin,
            clients,
            attempts: Vec::new(),
            failed: 0,
            connects: Vec::new(),
            connected: 0,
            attempts_per_bin: vec![0; bins],
            connected_per_bin: vec![0; bins],
            filled: 0,
        }
    }

    fn bin_of(&self, at: Instant) -> Option<usize> {
        let offset = at.as_micros().checked_sub(self.from.as_micros())?;
        let width = self.bin.as_micros().max(1) as u64;
        Some((offset / width) as usize)
    }

    /// A connection attempt at `at`.
    pub(crate) fn attempt(&mut self, at: Instant, failed: bool) {
        let Some(bin) = self.bin_of(at) else { return };
        self.attempts.push(at);
        if failed {
            self.failed += 1;
        }
        if let Some(slot) = self.attempts_per_bin.get_mut(bin) {
            *slot += 1;
        }
    }

    /// An attempt already counted turned out to fail (its answer came
    /// after the server's work, or never).
    pub(crate) fn failure(&mut self) {
        self.failed += 1;
    }

    /// Client `client` became connected (`true`) or stopped being
    /// connected (`false`) at `at`.
    pub(crate) fn connection(&mut self, at: Instant, client: u32, connected: bool) {
        if let Some(bin) = self.bin_of(at) {
            self.fill_until(bin);
            if connected {
                self.connects.push((at, client));
            }
        }
        if connected {
            self.connected += 1;
        } else {
            self.connected = self.connected.saturating_sub(1);
        }
    }

    /// Write `connected` into every bin before `bin` not written yet.
    fn fill_until(&mut self, bin: usize) {
        let end = bin.min(self.connected_per_bin.len());
        while self.filled < end {
            self.connected_per_bin[self.filled] = self.connected as u32;
            self.filled += 1;
        }
    }

    /// Close the record: bins after the last change keep the final count.
    pub(crate) fn finish(&mut self) {
        self.fill_until(usize::MAX);
    }

    /// Clients connected right now.
    pub fn connected(&self) -> usize {
        self.connected
    }

    /// The size of the fleet.
    pub fn clients(&self) -> usize {
        self.clients
    }

    /// The instant recording starts (the incident, "t = 0" in reports).
    pub fn from(&self) -> Instant {
        self.from
    }

    /// Every attempt at or after [`from`](Self::from), in time order.
    pub fn attempts(&self) -> &[Instant] {
        &self.attempts
    }

    /// Failed attempts at or after [`from`](Self::from).
    pub fn failed(&self) -> u64 {
        self.failed
    }

    /// Every moment a client became connected, in time order.
    pub fn connects(&self) -> &[(Instant, u32)] {
        &self.connects
    }

    /// Width of the time-series bins.
    pub fn bin(&self) -> Duration {
        self.bin
    }

    /// Attempts started in each bin.
    pub fn attempts_per_bin(&self) -> &[u32] {
        &self.attempts_per_bin
    }

    /// Connected clients at the end of each bin.
    pub fn connected_per_bin(&self) -> &[u32] {
        &self.connected_per_bin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn nothing_before_the_start_is_counted() {
        let mut r = Recorder::new(2, at(1000), Duration::from_secs(1), 3);
        r.attempt(at(999), true);
        r.attempt(at(1000), true);
        r.attempt(at(2500), false);
        assert_eq!(r.attempts(), [at(1000), at(2500)]);
        assert_eq!(r.failed(), 1);
        assert_eq!(r.attempts_per_bin(), [1, 1, 0]);
    }

    #[test]
    fn connected_bins_hold_the_count_at_their_end() {
        let mut r = Recorder::new(2, at(0), Duration::from_secs(1), 4);
        r.connection(at(500), 0, true);
        r.connection(at(2100), 1, true);
        r.connection(at(2200), 0, false);
        r.finish();
        assert_eq!(r.connected_per_bin(), [1, 1, 1, 1]);
        assert_eq!(r.connects(), [(at(500), 0), (at(2100), 1)]);
        assert_eq!(r.connected(), 1);
    }
}
