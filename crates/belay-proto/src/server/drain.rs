//! [`DrainPlan`]: a graceful deploy drain as a pure schedule.

use std::time::Duration;

use crate::backoff::MAX_HINT_DELAY;
use crate::close::CloseCode;
use crate::message::ReconnectAdvice;
use crate::time::Instant;

/// How a server drains. `Default` plus setters:
///
/// ```
/// use std::time::Duration;
/// use belay_proto::server::DrainConfig;
///
/// let mut config = DrainConfig::default();
/// config
///     .set_lb_delay(Duration::from_secs(10))
///     .set_message(Some("Back in a moment".into()));
/// assert_eq!(config.reason(), "deploy");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DrainConfig {
    lb_delay: Duration,
    advise_rate: f64,
    linger: Duration,
    reconnect_spread: Duration,
    deadline: Duration,
    reason: String,
    message: Option<String>,
}

impl Default for DrainConfig {
    fn default() -> Self {
        DrainConfig {
            lb_delay: Duration::from_secs(25),
            advise_rate: 500.0,
            linger: Duration::from_secs(1),
            reconnect_spread: Duration::from_secs(10),
            deadline: Duration::from_secs(120),
            reason: "deploy".to_owned(),
            message: Some("The server is being updated; reconnecting in a few seconds.".to_owned()),
        }
    }
}

impl DrainConfig {
    /// How long readiness answers 503 before the first advice, so the load
    /// balancer stops sending new clients (e.g. 4 failed checks 5 s apart,
    /// plus margin). Default: 25 s.
    pub fn lb_delay(&self) -> Duration {
        self.lb_delay
    }

    /// See [`lb_delay`](Self::lb_delay).
    pub fn set_lb_delay(&mut self, value: Duration) -> &mut Self {
        self.lb_delay = value;
        self
    }

    /// Clients advised per second. NaN and non-positive values are stored as
    /// 0, "as slowly as the deadline allows". Default: 500.
    pub fn advise_rate(&self) -> f64 {
        self.advise_rate
    }

    /// See [`advise_rate`](Self::advise_rate).
    pub fn set_advise_rate(&mut self, value: f64) -> &mut Self {
        self.advise_rate = if value > 0.0 { value } else { 0.0 };
        self
    }

    /// Time between a client's advice and its close, so in-flight responses
    /// go out. Default: 1 s.
    pub fn linger(&self) -> Duration {
        self.linger
    }

    /// See [`linger`](Self::linger).
    pub fn set_linger(&mut self, value: Duration) -> &mut Self {
        self.linger = value;
        self
    }

    /// Width of the reconnect window the clients are spread over, at most
    /// [`MAX_HINT_DELAY`] (clients clamp longer delays). Default: 10 s.
    pub fn reconnect_spread(&self) -> Duration {
        self.reconnect_spread
    }

    /// See [`reconnect_spread`](Self::reconnect_spread).
    pub fn set_reconnect_spread(&mut self, value: Duration) -> &mut Self {
        self.reconnect_spread = value.min(MAX_HINT_DELAY);
        self
    }

    /// Time from the start of the drain after which the server exits
    /// whatever is left. Default: 120 s.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// See [`deadline`](Self::deadline).
    pub fn set_deadline(&mut self, value: Duration) -> &mut Self {
        self.deadline = value;
        self
    }

    /// The advice's machine-readable `reason`. `deploy` makes clients double
    /// their backoff for the reconnects that follow. Default: `deploy`.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// See [`reason`](Self::reason).
    pub fn set_reason(&mut self, value: impl Into<String>) -> &mut Self {
        self.reason = value.into();
        self
    }

    /// The advice's human-readable `message`, for the application to show
    /// during the reconnect window. Default: a short "being updated" sentence.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// See [`message`](Self::message).
    pub fn set_message(&mut self, value: Option<String>) -> &mut Self {
        self.message = value;
        self
    }
}

/// Where a drain is at a given instant (after everything due at that
/// instant has been done).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DrainPhase {
    /// Readiness answers 503; connections are served normally while the
    /// load balancer removes the server.
    WaitingForBalancer,
    /// Some planned clients are still to be advised.
    Advising,
    /// Every planned client was advised; some closes are still lingering.
    Closing,
    /// Every planned client was advised and closed; exit once the last
    /// connection is gone.
    Drained,
    /// The deadline passed: close whatever is left (1001) and exit.
    PastDeadline,
}

/// The schedule of one graceful drain.
///
/// When a new server is healthy, the old one drains (spec/PROTOCOL.md §6.1,
/// MISSION §8): it answers its readiness check with 503, waits until the load
/// balancer has removed it, then advises its clients one by one (`reconnect`
/// with `reason: "deploy"`), closes each shortly after its advice, and exits
/// once every client has left, or at the deadline regardless.
///
/// ```text
///  start      start + lb_delay                                start + deadline
///    │ WaitingForBalancer │ Advising       │ Closing │ Drained      │ PastDeadline
///    ├────────────────────┼────────────────┼─────────┼──────────────┼────────▶
///    readiness 503        advise_at(0)     advise_at(N−1)           close whatever
///                         ·  advise_at(i) = start + lb_delay + i × step   is left (1001)
///                         ·  close_at(i)  = advise_at(i) + linger   (1012)
/// ```
///
/// * **Pace.** Clients are advised at `advise_rate` per second (`step =
///   1 / advise_rate`). If that would not close the last of the `N` planned
///   clients by the deadline, the pace is raised so that it does: the last
///   advice falls at `deadline − linger` at the latest. A client cut at the
///   deadline gets no advice and comes back on its own fast path, which is
///   exactly the herd the drain exists to avoid. A non-positive (or NaN)
///   `advise_rate` means "as slowly as the deadline allows".
/// * **Linger.** Each client is closed `linger` after its advice, so
///   responses already on their way still go out; the close code is 1012
///   (service restart), which the client retries with the advice.
/// * **Advised window.** Client `i` of `N` is told to reconnect within
///   `[i × S / N, (i + 1) × S / N)` ms after its close (`S` =
///   `reconnect_spread`): the windows tile `[0, S)` in advice order, so the
///   later a client is closed the later in the spread it comes back, and
///   reconnects reach the new server spread over about `N × step + S`, at
///   about `1 / (step + S / N)` per second: below both `advise_rate` and
///   `N / S`. (Reversing the order would line the arrivals up instead.)
///   With 10 000 clients, 500 advised per second and a 10 s spread, that is
///   about 333 reconnects per second over 30 s.
///
/// The plan only computes instants. The driver keeps the connections: it
/// numbers them `0..N` (any order, e.g. by accept time), advises index
/// `next` when `now >= advise_at(next)` (or every index below
/// [`due_by`](DrainPlan::due_by)), lets each connection close itself at its
/// `close_at`, sleeps until [`poll_timeout`](DrainPlan::poll_timeout), and
/// closes whatever is left at the deadline with 1001 (going away).
/// Connections that arrive while the balancer is still sending traffic can
/// be counted in by [`set_connections`](DrainPlan::set_connections) when
/// advising starts.
#[derive(Debug, Clone, PartialEq)]
pub struct DrainPlan {
    config: DrainConfig,
    started_at: Instant,
    connections: usize,
    /// When advising starts: `started_at + lb_delay`, not after the deadline.
    advise_start: Instant,
    /// The latest instant any advice is given: `deadline − linger`, not
    /// before `advise_start`.
    advise_end: Instant,
    deadline: Instant,
    /// Seconds between two consecutive advices (finite, non-negative).
    step_secs: f64,
}

impl DrainPlan {
    /// A drain starting at `now` for the `connections` the server holds.
    pub fn new(now: Instant, config: DrainConfig, connections: usize) -> Self {
        let deadline = now.saturating_add(config.deadline);
        let advise_start = now.saturating_add(config.lb_delay).min(deadline);
        let advise_end = deadline.saturating_sub(config.linger).max(advise_start);
        let mut plan = DrainPlan {
            config,
            started_at: now,
            connections,
            advise_start,
            advise_end,
            deadline,
            step_secs: 0.0,
        };
        plan.set_connections(connections);
        plan
    }

    /// Recount the clients to advise, e.g. when advising starts and the
    /// balancer has stopped sending new ones. Changes the pace (to meet the
    /// deadline) and the advised windows, so do it before the first advice.
    pub fn set_connections(&mut self, connections: usize) {
        self.connections = connections;
        let per_rate = if self.config.advise_rate > 0.0 {
            1.0 / self.config.advise_rate
        } else {
            f64::INFINITY
        };
        let room = self.advise_end.saturating_duration_since(self.advise_start);
        let gaps = connections.saturating_sub(1).max(1) as f64;
        self.step_secs = per_rate.min(room.as_secs_f64() / gaps);
    }

    /// Where the drain is at `now`.
    pub fn phase(&self, now: Instant) -> DrainPhase {
        if now >= self.deadline {
            DrainPhase::PastDeadline
        } else if now < self.advise_start {
            DrainPhase::WaitingForBalancer
        } else if let Some(last) = self.connections.checked_sub(1) {
            if now < self.advise_at(last) {
                DrainPhase::Advising
            } else if now < self.close_at(last) {
                DrainPhase::Closing
            } else {
                DrainPhase::Drained
            }
        } else {
            DrainPhase::Drained
        }
    }

    /// When client `index` is advised. Non-decreasing in `index`; indexes at
    /// or past the planned count continue the pace, never past
    /// `deadline − linger`.
    pub fn advise_at(&self, index: usize) -> Instant {
        // Rounded to the nearest microsecond so that float noise (999 × 2 ms
        // = 1.997 999 999… s) does not shift a schedule that is exact on
        // paper; `as` saturates, and rounding keeps the order of indexes.
        let offset_micros = (index as f64 * self.step_secs * 1e6).round();
        let offset = Duration::from_micros(offset_micros as u64);
        self.advise_start
            .saturating_add(offset)
            .min(self.advise_end)
    }

    /// When client `index` is closed (1012): `linger` after its advice, never
    /// after the deadline.
    pub fn close_at(&self, index: usize) -> Instant {
        self.advise_at(index)
            .saturating_add(self.config.linger)
            .min(self.deadline)
    }

    /// The `reconnect` advice for client `index`: the configured reason and
    /// message, and the window `[index × S / N, (index + 1) × S / N)` ms with
    /// `S = reconnect_spread` and `N` the planned count (an index past it gets
    /// the last window).
    pub fn advice_for(&self, index: usize) -> ReconnectAdvice {
        let total = self.connections.max(1) as u128;
        let index = (index as u128).min(total - 1);
        let spread_ms = self.config.reconnect_spread.as_millis();
        let at = |i: u128| u64::try_from(i * spread_ms / total).unwrap_or(u64::MAX);
        ReconnectAdvice {
            reason: self.config.reason.clone(),
            min_delay_ms: at(index),
            max_delay_ms: at(index + 1),
            message: self.config.message.clone(),
        }
    }

    /// How many planned clients are due for advice at `now`: the driver
    /// advises every index below this it has not advised yet.
    pub fn due_by(&self, now: Instant) -> usize {
        // advise_at is non-decreasing: binary search for the first index not due.
        let (mut lo, mut hi) = (0, self.connections);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.advise_at(mid) <= now {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The next instant the driver must act, for a driver that has advised
    /// clients `0..next_index`: the next advice (possibly already due, i.e.
    /// `<= now`) while planned clients remain, otherwise the next phase
    /// change after `now` (advising starts, the last close, the deadline).
    /// `None` once the deadline has passed.
    pub fn poll_timeout(&self, now: Instant, next_index: usize) -> Option<Instant> {
        if next_index < self.connections {
            return Some(self.advise_at(next_index));
        }
        let last_close = self
            .connections
            .checked_sub(1)
            .map(|last| self.close_at(last));
        [Some(self.advise_start), last_close, Some(self.deadline)]
            .into_iter()
            .flatten()
            .filter(|&at| at > now)
            .min()
    }

    /// The close code for an advised client: 1012 (service restart).
    pub fn close_code(&self) -> CloseCode {
        CloseCode::SERVICE_RESTART
    }

    /// The close code for a client still connected at the deadline: 1001
    /// (going away).
    pub fn deadline_close_code(&self) -> CloseCode {
        CloseCode::GOING_AWAY
    }

    /// The configuration of this drain.
    pub fn config(&self) -> &DrainConfig {
        &self.config
    }

    /// Clients planned.
    pub fn connections(&self) -> usize {
        self.connections
    }

    /// When the drain started (readiness turned 503).
    pub fn started_at(&self) -> Instant {
        self.started_at
    }

    /// When advising starts (the balancer is assumed to have removed us).
    pub fn advising_starts_at(&self) -> Instant {
        self.advise_start
    }

    /// When the server exits regardless.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    fn plan(connections: usize) -> DrainPlan {
        DrainPlan::new(ms(0), DrainConfig::default(), connections)
    }

    #[test]
    fn defaults_match_the_documented_values() {
        let config = DrainConfig::default();
        assert_eq!(config.lb_delay(), Duration::from_secs(25));
        assert_eq!(config.advise_rate(), 500.0);
        assert_eq!(config.linger(), Duration::from_secs(1));
        assert_eq!(config.reconnect_spread(), Duration::from_secs(10));
        assert_eq!(config.deadline(), Duration::from_secs(120));
        assert_eq!(config.reason(), "deploy");
        assert!(config.message().is_some());
    }

    #[test]
    fn advice_starts_after_the_balancer_delay_and_is_paced_by_the_rate() {
        let plan = plan(10_000);
        assert_eq!(plan.advise_at(0), ms(25_000));
        assert_eq!(plan.advise_at(1), ms(25_002));
        assert_eq!(plan.advise_at(500), ms(26_000));
        assert_eq!(plan.advise_at(9_999), ms(44_998));
    }

    #[test]
    fn each_client_closes_linger_after_its_advice() {
        let plan = plan(10_000);
        assert_eq!(plan.close_at(0), ms(26_000));
        assert_eq!(plan.close_at(500), ms(27_000));
    }

    #[test]
    fn phases_follow_the_schedule() {
        let plan = plan(1_000);
        assert_eq!(plan.phase(ms(0)), DrainPhase::WaitingForBalancer);
        assert_eq!(plan.phase(ms(24_999)), DrainPhase::WaitingForBalancer);
        assert_eq!(plan.phase(ms(25_000)), DrainPhase::Advising);
        // The last of 1 000 clients is advised at 25 s + 999 × 2 ms.
        assert_eq!(plan.phase(ms(26_997)), DrainPhase::Advising);
        assert_eq!(plan.phase(ms(26_998)), DrainPhase::Closing);
        assert_eq!(plan.phase(ms(27_998)), DrainPhase::Drained);
        assert_eq!(plan.phase(ms(119_999)), DrainPhase::Drained);
        assert_eq!(plan.phase(ms(120_000)), DrainPhase::PastDeadline);
    }

    #[test]
    fn a_drain_without_clients_is_drained_once_the_balancer_let_go() {
        let plan = plan(0);
        assert_eq!(plan.phase(ms(24_999)), DrainPhase::WaitingForBalancer);
        assert_eq!(plan.phase(ms(25_000)), DrainPhase::Drained);
        assert_eq!(plan.poll_timeout(ms(0), 0), Some(ms(25_000)));
        assert_eq!(plan.poll_timeout(ms(25_000), 0), Some(ms(120_000)));
    }

    #[test]
    fn the_pace_is_raised_so_the_last_close_meets_the_deadline() {
        // 100 000 clients at 500/s would take 200 s; the deadline is 120 s.
        let plan = plan(100_000);
        assert_eq!(plan.advise_at(99_999), ms(119_000));
        assert_eq!(plan.close_at(99_999), ms(120_000));
        let mid = plan.advise_at(50_000);
        assert!(mid > ms(71_990) && mid < ms(72_010), "{mid:?}");
    }

    #[test]
    fn a_zero_rate_spreads_advice_over_all_the_time_the_deadline_leaves() {
        let mut config = DrainConfig::default();
        config.set_advise_rate(f64::NAN);
        assert_eq!(config.advise_rate(), 0.0);
        let plan = DrainPlan::new(ms(0), config, 3);
        assert_eq!(plan.advise_at(0), ms(25_000));
        assert_eq!(plan.advise_at(1), ms(72_000));
        assert_eq!(plan.advise_at(2), ms(119_000));
    }

    #[test]
    fn advised_windows_tile_the_spread_in_advice_order() {
        let plan = plan(4);
        let windows: Vec<(u64, u64)> = (0..4)
            .map(|i| {
                let advice = plan.advice_for(i);
                (advice.min_delay_ms, advice.max_delay_ms)
            })
            .collect();
        assert_eq!(
            windows,
            vec![(0, 2_500), (2_500, 5_000), (5_000, 7_500), (7_500, 10_000)]
        );
    }

    #[test]
    fn advice_carries_the_reason_and_the_message() {
        let mut config = DrainConfig::default();
        config.set_message(Some("Updating".into()));
        let advice = DrainPlan::new(ms(0), config, 1).advice_for(0);
        assert!(advice.is_deploy());
        assert_eq!(advice.message.as_deref(), Some("Updating"));
        assert_eq!((advice.min_delay_ms, advice.max_delay_ms), (0, 10_000));
    }

    #[test]
    fn an_index_past_the_plan_gets_the_last_window() {
        let plan = plan(4);
        assert_eq!(plan.advice_for(99), plan.advice_for(3));
    }

    #[test]
    fn reconnects_reach_the_new_server_below_the_advise_rate() {
        // Latest possible arrival per client = close + max delay; count per second.
        let n = 10_000;
        let plan = plan(n);
        let mut per_second = vec![0u32; 200];
        for i in 0..n {
            let advice = plan.advice_for(i);
            let arrival = plan.close_at(i) + Duration::from_millis(advice.min_delay_ms);
            per_second[(arrival.as_millis() / 1_000) as usize] += 1;
        }
        let peak = per_second.iter().copied().max().unwrap_or(0);
        assert!(peak <= 340, "peak {peak}/s");
    }

    #[test]
    fn due_by_counts_the_advice_due_at_now() {
        let plan = plan(1_000);
        assert_eq!(plan.due_by(ms(24_999)), 0);
        assert_eq!(plan.due_by(ms(25_000)), 1);
        assert_eq!(plan.due_by(ms(25_003)), 2);
        assert_eq!(plan.due_by(ms(60_000)), 1_000);
    }

    #[test]
    fn poll_timeout_points_at_the_next_advice_even_when_overdue() {
        let plan = plan(1_000);
        assert_eq!(plan.poll_timeout(ms(0), 0), Some(ms(25_000)));
        assert_eq!(plan.poll_timeout(ms(30_000), 10), Some(ms(25_020)));
    }

    #[test]
    fn poll_timeout_after_the_last_advice_waits_for_the_last_close_then_the_deadline() {
        let plan = plan(1_000);
        assert_eq!(plan.poll_timeout(ms(26_998), 1_000), Some(ms(27_998)));
        assert_eq!(plan.poll_timeout(ms(27_998), 1_000), Some(ms(120_000)));
        assert_eq!(plan.poll_timeout(ms(120_000), 1_000), None);
    }

    #[test]
    fn recounting_when_advising_starts_includes_late_arrivals() {
        let mut plan = plan(10);
        plan.set_connections(12);
        assert_eq!(plan.connections(), 12);
        assert_eq!(plan.advise_at(11), ms(25_022));
        assert_eq!(plan.advice_for(11).max_delay_ms, 10_000);
    }

    #[test]
    fn close_codes_are_service_restart_then_going_away() {
        let plan = plan(1);
        assert_eq!(plan.close_code(), CloseCode::SERVICE_RESTART);
        assert_eq!(plan.deadline_close_code(), CloseCode::GOING_AWAY);
    }

    #[test]
    fn a_deadline_shorter_than_the_balancer_delay_advises_and_closes_at_the_deadline() {
        let mut config = DrainConfig::default();
        config.set_deadline(Duration::from_secs(10));
        let plan = DrainPlan::new(ms(0), config, 5);
        assert_eq!(plan.advising_starts_at(), ms(10_000));
        assert_eq!(plan.advise_at(4), ms(10_000));
        assert_eq!(plan.close_at(4), ms(10_000));
        assert_eq!(plan.phase(ms(10_000)), DrainPhase::PastDeadline);
    }

    #[test]
    fn the_spread_is_clamped_to_what_clients_honour() {
        let mut config = DrainConfig::default();
        config.set_reconnect_spread(Duration::MAX);
        assert_eq!(config.reconnect_spread(), MAX_HINT_DELAY);
    }

    #[test]
    fn extreme_inputs_do_not_panic() {
        let mut config = DrainConfig::default();
        config
            .set_advise_rate(f64::INFINITY)
            .set_lb_delay(Duration::MAX)
            .set_linger(Duration::MAX)
            .set_deadline(Duration::MAX);
        let plan = DrainPlan::new(Instant::MAX, config, usize::MAX);
        let _ = plan.advise_at(usize::MAX);
        let _ = plan.close_at(usize::MAX);
        let _ = plan.advice_for(usize::MAX);
        let _ = plan.phase(Instant::ZERO);
        let _ = plan.due_by(Instant::MAX);
        let _ = plan.poll_timeout(Instant::ZERO, 0);
        let empty = DrainPlan::new(Instant::ZERO, DrainConfig::default(), 0);
        assert_eq!(empty.advice_for(0).min_delay_ms, 0);
    }
}
