//! Reconnect backoff: how long a client waits before each reconnect attempt.
//!
//! [`BackoffPolicy`] is the configuration (serializable, one variant per
//! well-known strategy); [`Backoff`] is one session's state. Server hints are
//! in [`PacingSlots`] (a standing grid of reconnect instants from `welcome`)
//! and [`RetryWindow`] (one-shot advice sent with a close).
//!
//! # Specification
//!
//! The formulas below are normative: the conformance vectors and the
//! TypeScript client follow them exactly. All delay arithmetic is in **whole
//! milliseconds** as unsigned 64-bit integers with saturating `+` and `×`;
//! `f64` is used only inside `jit` and the gRPC step, in the order written, so
//! a port doing the same `f64` operations in the same order gets bit-identical
//! results (for values below 2^53 ms, which any sensible configuration is).
//! Every [`Duration`](std::time::Duration) in a policy is truncated to whole
//! milliseconds before use.
//!
//! ```text
//! n        = delays handed out since the last reset (0 for the first)
//! u        = one draw from RandomSource::next_unit(), clamped into [0, 1)
//! C(n)     = min(cap, base × 2^n)        2^n := u64::MAX for n >= 63, × saturating
//! jit(lo, hi) = lo + floor(u × (hi − lo))   if hi > lo   (f64 ×, floor, integer +)
//!             = lo                          if hi <= lo  (the draw is still taken)
//! ```
//!
//! | policy | delay for attempt `n` | draws |
//! |---|---|---|
//! | `fixed` | `delay` | 0 |
//! | `exponential` | `C(n)` | 0 |
//! | `full_jitter` | `jit(0, C(n))` | 1 |
//! | `equal_jitter` | `jit(C(n) / 2, C(n))` (integer division) | 1 |
//! | `decorrelated` | `d = min(cap, jit(base, 3 × prev)); prev = d` | 1 |
//! | `decorrelated_capped` | `d = jit(base, min(cap, 3 × prev)); prev = d` | 1 |
//! | `linear_random_start` | `min(cap, start + n × step)` | 1 when `start` is drawn, else 0 |
//! | `grpc` | `d = floor(current × (1 + jitter × (2u − 1)))`, then `current = min(max, floor(current × multiplier))` | 1 |
//! | `server_paced` | see below | 0 or 1 |
//!
//! * `decorrelated*`: `prev = base` after a reset. With `decorrelated`, once
//!   `3 × prev` is well above `cap` many results are clipped to exactly `cap`
//!   (the jitter collapses: about a third of all delays sit exactly on `cap`
//!   in steady state at 1–30 s);
//!   `decorrelated_capped` caps the interval instead and stays spread over
//!   `[base, cap)`.
//! * `linear_random_start`: `start = jit(0, start_window)` is drawn by the
//!   first delay the policy computes after a reset and kept until the next.
//! * `grpc`: `current = initial` after a reset. The `f64` expressions are
//!   evaluated exactly as written, from left to right inside the parentheses;
//!   a negative or NaN result becomes 0 (Rust's saturating `as u64`). The
//!   jitter applies after the cap, so delays can exceed `max` by the jitter
//!   fraction, as in gRPC.
//! * `server_paced { first_window, fallback }`: once a loss was noticed on
//!   a spreading beat (rule 1), until the next reset and while slots are
//!   known, every delay is `min(max(period, interval), 3600 s)` (no draw);
//!   otherwise, in order:
//!   1. if `n == 0` and `first_window > 0`: `jit(0, first_window)` (1 draw),
//!      the fast path that brings a lone client back quickly after a blip —
//!      except after a *silent* loss (the session's heartbeat found the
//!      connection dead, [`Loss::Silent`], or [`Loss::Beat`] on a beat
//!      shorter than `0.95 × period`) while slots are known: then the
//!      delay is the time until the first slot instant strictly after `now`
//!      (no draw); and except after [`Loss::Beat`] whose `interval` is at
//!      least `0.95 × period` (`20 × interval >= 19 × period` in µs) while
//!      slots are known: then 0 (no draw), and rule 0 holds until the next
//!      reset;
//!   2. else `d` = the fallback's delay for its attempt `n − 1` (or `n`
//!      when `first_window` is zero, since no attempt was spent on a fast
//!      path), computed with the fallback's own state and draws; and
//!   3. if pacing slots are known, the delay is snapped forward onto the
//!      server's grid: the time until the first slot instant strictly after
//!      `now + d`, exact to the microsecond; otherwise it is `d`.
//!      The fallback keeps escalating (a flapping server is not hammered
//!      once per period) while every client stays on its own slot (a fleet
//!      stays spread); the bound is `fallback max + 3600 s`.
//!
//! Pending retry advice overrides all of this once: the delay is
//! `jit(earliest − now, latest − now)` with the differences saturating at
//! zero and truncated to whole ms (1 draw); the advice is then consumed.
//! Every call to [`Backoff::next_delay`] increments `n` (saturating at
//! `u32::MAX`), whichever rule produced the delay.
//!
//! Pacing slots are the instants `anchor + phase + k × period` for every
//! integer `k`, computed in integer microseconds; `period` is clamped to
//! `[1 ms, 3600 s]` ([`MAX_PACING_PERIOD`]) and `phase` reduced modulo
//! `period`. Retry advice is clamped to [`MAX_HINT_DELAY`], the same hour.

mod formula;
mod pacing;
mod policy;
mod rules;
mod serde_ms;
mod state;

pub use formula::{capped_exponential_ms, jitter_ms};
pub use pacing::{PacingSlots, RetryWindow, MAX_HINT_DELAY, MAX_PACING_PERIOD};
pub use policy::BackoffPolicy;
pub use state::{Backoff, Loss};
