//! The reconnect policies as plain data: what to compute, not the state.
//!
//! A [`BackoffPolicy`] is configuration: it can be compared, cloned,
//! serialized and shared between sessions. The per-session state (attempt
//! counter, previous delay, …) lives in [`Backoff`](super::Backoff).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::formula::whole_ms;
use super::pacing::MAX_PACING_PERIOD;

/// How long to wait before each reconnect attempt.
///
/// Durations are truncated to whole milliseconds when used; the exact
/// formulas, and how many random draws each variant takes per delay, are in
/// the [module docs](super). The JSON form is internally tagged by `kind`,
/// with durations as integer milliseconds in `*_ms` fields, e.g.
/// `{"kind":"equal_jitter","base_ms":500,"cap_ms":30000}`.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BackoffPolicy {
    /// Always the same delay. No draws.
    Fixed {
        /// The delay.
        #[serde(rename = "delay_ms", with = "super::serde_ms")]
        delay: Duration,
    },
    /// `C(n)`: doubling from `base` up to `cap`, no jitter. No draws.
    ///
    /// Without jitter every client that lost the same server retries at the
    /// same instants; kept as a baseline for comparison.
    Exponential {
        /// The first delay.
        #[serde(rename = "base_ms", with = "super::serde_ms")]
        base: Duration,
        /// The largest delay.
        #[serde(rename = "cap_ms", with = "super::serde_ms")]
        cap: Duration,
    },
    /// `jit(0, C(n))`: uniform over the whole interval below the capped
    /// exponential. One draw.
    FullJitter {
        /// The scale of the first delay.
        #[serde(rename = "base_ms", with = "super::serde_ms")]
        base: Duration,
        /// The exclusive upper bound of every delay.
        #[serde(rename = "cap_ms", with = "super::serde_ms")]
        cap: Duration,
    },
    /// `jit(C(n)/2, C(n))`: uniform over the upper half-interval, so a delay
    /// is never shorter than half the exponential. One draw.
    EqualJitter {
        /// Twice the lower end of the first delay's interval.
        #[serde(rename = "base_ms", with = "super::serde_ms")]
        base: Duration,
        /// The exclusive upper bound of every delay.
        #[serde(rename = "cap_ms", with = "super::serde_ms")]
        cap: Duration,
    },
    /// AWS "decorrelated jitter": `d = min(cap, jit(base, 3 × prev))`.
    /// One draw.
    ///
    /// Once `3 × prev` is well above `cap`, most draws land above `cap` and
    /// are clipped to exactly `cap` (two thirds right after a delay at `cap`,
    /// about a third of all delays in steady state at the reference
    /// parameters): the jitter collapses and those clients synchronise on
    /// `cap` again. [`DecorrelatedCapped`](Self::DecorrelatedCapped)
    /// avoids that.
    Decorrelated {
        /// The smallest delay, and `prev` after a reset.
        #[serde(rename = "base_ms", with = "super::serde_ms")]
        base: Duration,
        /// The largest delay.
        #[serde(rename = "cap_ms", with = "super::serde_ms")]
        cap: Duration,
    },
    /// Decorrelated jitter with the cap applied to the interval instead of
    /// the result: `d = jit(base, min(cap, 3 × prev))`. One draw.
    ///
    /// Delays stay spread over `[base, cap)` however long the outage.
    DecorrelatedCapped {
        /// The smallest delay, and `prev` after a reset.
        #[serde(rename = "base_ms", with = "super::serde_ms")]
        base: Duration,
        /// The exclusive upper bound of the interval (delays are `base` if
        /// `cap <= base`).
        #[serde(rename = "cap_ms", with = "super::serde_ms")]
        cap: Duration,
    },
    /// A random start in `[0, start_window)`, drawn once per reset, then
    /// linear steps: `min(cap, start + n × step)`. One draw for the first
    /// delay after a reset, none after.
    LinearRandomStart {
        /// The width of the interval the start is drawn from.
        #[serde(rename = "start_window_ms", with = "super::serde_ms")]
        start_window: Duration,
        /// Added per attempt.
        #[serde(rename = "step_ms", with = "super::serde_ms")]
        step: Duration,
        /// The largest delay.
        #[serde(rename = "cap_ms", with = "super::serde_ms")]
        cap: Duration,
    },
    /// The gRPC connection backoff: `current × (1 ± jitter)`, then
    /// `current ← min(max, current × multiplier)`. One draw.
    ///
    /// As in gRPC, the jitter is applied after the cap, so a delay can exceed
    /// `max` by up to the jitter fraction.
    Grpc {
        /// `current` after a reset.
        #[serde(rename = "initial_ms", with = "super::serde_ms")]
        initial: Duration,
        /// Growth factor of `current` per attempt.
        multiplier: f64,
        /// Relative half-width of the jitter (0.2 means ±20 %).
        jitter: f64,
        /// The cap on `current` (not on the jittered delay).
        #[serde(rename = "max_ms", with = "super::serde_ms")]
        max: Duration,
    },
    /// Follow the pacing the server advertises, with a fast path for the
    /// first attempt and a fallback when no pacing is known.
    ///
    /// The first delay after a reset is `jit(0, first_window)` so a lone
    /// client is back quickly after a blip; after that, delays land exactly
    /// on the server's [`PacingSlots`](super::PacingSlots) if it sent any, and
    /// otherwise come from `fallback` (which keeps its own state).
    ServerPaced {
        /// The width of the first attempt's interval; zero disables the fast
        /// path.
        #[serde(rename = "first_window_ms", with = "super::serde_ms")]
        first_window: Duration,
        /// The policy used while no pacing slots are known.
        fallback: Box<BackoffPolicy>,
    },
}

impl BackoffPolicy {
    /// Always `delay`. Reference: 1 s.
    pub fn fixed(delay: Duration) -> Self {
        BackoffPolicy::Fixed { delay }
    }

    /// Capped exponential without jitter. Reference: 1 s to 30 s.
    pub fn exponential(base: Duration, cap: Duration) -> Self {
        BackoffPolicy::Exponential { base, cap }
    }

    /// Full jitter. Reference: 1 s to 30 s.
    pub fn full_jitter(base: Duration, cap: Duration) -> Self {
        BackoffPolicy::FullJitter { base, cap }
    }

    /// Equal jitter. Reference: 500 ms to 30 s, which gives a first delay in
    /// 250–499 ms.
    pub fn equal_jitter(base: Duration, cap: Duration) -> Self {
        BackoffPolicy::EqualJitter { base, cap }
    }

    /// AWS decorrelated jitter (collapses onto `cap`). Reference: 1 s to 30 s.
    pub fn decorrelated(base: Duration, cap: Duration) -> Self {
        BackoffPolicy::Decorrelated { base, cap }
    }

    /// Decorrelated jitter capped inside the interval. Reference: 1 s to 30 s.
    pub fn decorrelated_capped(base: Duration, cap: Duration) -> Self {
        BackoffPolicy::DecorrelatedCapped { base, cap }
    }

    /// Random start plus linear step. Reference: window 1 s, step 1 s, cap 30 s.
    pub fn linear_random_start(start_window: Duration, step: Duration, cap: Duration) -> Self {
        BackoffPolicy::LinearRandomStart {
            start_window,
            step,
            cap,
        }
    }

    /// The gRPC connection backoff with the defaults of its specification:
    /// initial 1 s, multiplier 1.6, jitter 0.2, max 120 s.
    pub fn grpc() -> Self {
        Self::grpc_with(Duration::from_secs(1), 1.6, 0.2, Duration::from_secs(120))
    }

    /// The gRPC connection backoff with explicit parameters.
    pub fn grpc_with(initial: Duration, multiplier: f64, jitter: f64, max: Duration) -> Self {
        BackoffPolicy::Grpc {
            initial,
            multiplier,
            jitter,
            max,
        }
    }

    /// Server-paced with a first-attempt window and a fallback.
    /// Reference: Belay's default, see [`Default`](#impl-Default-for-BackoffPolicy).
    pub fn server_paced(first_window: Duration, fallback: BackoffPolicy) -> Self {
        BackoffPolicy::ServerPaced {
            first_window,
            fallback: Box::new(fallback),
        }
    }

    /// The kind in snake_case, identical to the serde `kind` tag.
    pub fn name(&self) -> &'static str {
        match self {
            BackoffPolicy::Fixed { .. } => "fixed",
            BackoffPolicy::Exponential { .. } => "exponential",
            BackoffPolicy::FullJitter { .. } => "full_jitter",
            BackoffPolicy::EqualJitter { .. } => "equal_jitter",
            BackoffPolicy::Decorrelated { .. } => "decorrelated",
            BackoffPolicy::DecorrelatedCapped { .. } => "decorrelated_capped",
            BackoffPolicy::LinearRandomStart { .. } => "linear_random_start",
            BackoffPolicy::Grpc { .. } => "grpc",
            BackoffPolicy::ServerPaced { .. } => "server_paced",
        }
    }

    /// The largest delay this policy can ever return by itself (retry advice
    /// aside; see [`Backoff::max_delay`](super::Backoff::max_delay)).
    ///
    /// The decorrelated forms report `max(base, cap)` because a `base` above
    /// `cap` is returned as is by [`DecorrelatedCapped`](Self::DecorrelatedCapped).
    /// The gRPC form reports `floor(max(initial, max) × (1 + |jitter|))` in
    /// whole ms: the jitter can push a delay above `max`, and the very first
    /// delay jitters `initial`, which may exceed `max`.
    pub fn max_delay(&self) -> Duration {
        let ms = match self {
            BackoffPolicy::Fixed { delay } => whole_ms(*delay),
            BackoffPolicy::Exponential { cap, .. }
            | BackoffPolicy::FullJitter { cap, .. }
            | BackoffPolicy::EqualJitter { cap, .. }
            | BackoffPolicy::LinearRandomStart { cap, .. } => whole_ms(*cap),
            BackoffPolicy::Decorrelated { base, cap }
            | BackoffPolicy::DecorrelatedCapped { base, cap } => {
                whole_ms(*base).max(whole_ms(*cap))
            }
            BackoffPolicy::Grpc {
                initial,
                jitter,
                max,
                ..
            } => {
                let largest = whole_ms(*initial).max(whole_ms(*max));
                (largest as f64 * (1.0 + jitter.abs())).floor() as u64
            }
            BackoffPolicy::ServerPaced {
                first_window,
                fallback,
            } => whole_ms(*first_window)
                .max(whole_ms(fallback.max_delay()).saturating_add(whole_ms(MAX_PACING_PERIOD))),
        };
        Duration::from_millis(ms)
    }

    /// One policy of each kind at its reference parameters, in declaration
    /// order, for the CLI and the docs: fixed 1 s; exponential, full jitter,
    /// decorrelated and decorrelated-capped 1–30 s; equal jitter 500 ms–30 s;
    /// linear random start (window 1 s, step 1 s, cap 30 s); [`grpc`](Self::grpc);
    /// and Belay's [default](#impl-Default-for-BackoffPolicy).
    pub fn all_reference() -> Vec<BackoffPolicy> {
        let s = Duration::from_secs;
        vec![
            Self::fixed(s(1)),
            Self::exponential(s(1), s(30)),
            Self::full_jitter(s(1), s(30)),
            Self::equal_jitter(Duration::from_millis(500), s(30)),
            Self::decorrelated(s(1), s(30)),
            Self::decorrelated_capped(s(1), s(30)),
            Self::linear_random_start(s(1), s(1), s(30)),
            Self::grpc(),
            Self::default(),
        ]
    }
}

/// Belay's default: `server_paced(1 s, equal_jitter(1 s, 30 s))`.
///
/// A client that lost its connection in a blip retries within a second; in a
/// mass disconnect the server's pacing slots spread the herd; without pacing,
/// equal jitter keeps every delay at least half the exponential, so retries
/// back off for real while staying spread.
impl Default for BackoffPolicy {
    fn default() -> Self {
        Self::server_paced(
            Duration::from_secs(1),
            Self::equal_jitter(Duration::from_secs(1), Duration::from_secs(30)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[test]
    fn json_shape_is_tagged_with_integer_milliseconds() {
        let policy = BackoffPolicy::equal_jitter(ms(500), ms(30_000));
        let json = serde_json::to_string(&policy).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"equal_jitter","base_ms":500,"cap_ms":30000}"#
        );
    }

    #[test]
    fn json_shape_nests_the_fallback_policy() {
        let json = serde_json::to_string(&BackoffPolicy::default()).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"server_paced","first_window_ms":1000,"fallback":{"kind":"equal_jitter","base_ms":1000,"cap_ms":30000}}"#
        );
    }

    #[test]
    fn json_shape_of_grpc_keeps_factors_as_numbers() {
        let json = serde_json::to_string(&BackoffPolicy::grpc()).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"grpc","initial_ms":1000,"multiplier":1.6,"jitter":0.2,"max_ms":120000}"#
        );
    }

    #[test]
    fn every_reference_policy_round_trips_through_json() {
        for policy in BackoffPolicy::all_reference() {
            let json = serde_json::to_string(&policy).unwrap();
            let back: BackoffPolicy = serde_json::from_str(&json).unwrap();
            assert_eq!(back, policy, "{json}");
        }
    }

    #[test]
    fn name_is_the_serde_tag() {
        for policy in BackoffPolicy::all_reference() {
            let value = serde_json::to_value(&policy).unwrap();
            assert_eq!(value["kind"], policy.name());
        }
    }

    #[test]
    fn reference_set_has_one_policy_of_each_kind() {
        let names: Vec<&str> = BackoffPolicy::all_reference()
            .iter()
            .map(BackoffPolicy::name)
            .collect();
        assert_eq!(
            names,
            [
                "fixed",
                "exponential",
                "full_jitter",
                "equal_jitter",
                "decorrelated",
                "decorrelated_capped",
                "linear_random_start",
                "grpc",
                "server_paced"
            ]
        );
    }

    #[test]
    fn negative_milliseconds_are_rejected() {
        let parsed = serde_json::from_str::<BackoffPolicy>(r#"{"kind":"fixed","delay_ms":-1}"#);
        assert!(parsed.is_err());
    }

    #[test]
    fn max_delay_of_simple_policies_is_the_cap() {
        assert_eq!(BackoffPolicy::fixed(ms(1234)).max_delay(), ms(1234));
        assert_eq!(
            BackoffPolicy::equal_jitter(ms(500), ms(30_000)).max_delay(),
            ms(30_000)
        );
        assert_eq!(
            BackoffPolicy::linear_random_start(ms(1000), ms(1000), ms(30_000)).max_delay(),
            ms(30_000)
        );
    }

    #[test]
    fn max_delay_of_decorrelated_covers_a_base_above_the_cap() {
        assert_eq!(
            BackoffPolicy::decorrelated_capped(ms(5000), ms(2000)).max_delay(),
            ms(5000)
        );
    }

    #[test]
    fn max_delay_of_grpc_includes_the_jitter() {
        assert_eq!(BackoffPolicy::grpc().max_delay(), ms(144_000));
    }

    #[test]
    fn max_delay_of_server_paced_covers_the_fallback_plus_a_full_pacing_period() {
        assert_eq!(
            BackoffPolicy::default().max_delay(),
            ms(30_000) + MAX_PACING_PERIOD
        );
        let slow = BackoffPolicy::server_paced(ms(1000), BackoffPolicy::fixed(ms(900_000)));
        assert_eq!(slow.max_delay(), ms(900_000) + MAX_PACING_PERIOD);
    }
}
