/**
 * Each policy's formula and memory (`backoff/rules.rs`). Delays are whole ms,
 * except a slot-snapped `server_paced` delay, which is exact to the µs.
 */
import type { RandomSource } from "../rng.js";
import { clampUnit } from "../rng.js";
import { US } from "../time.js";
import { cappedExponentialMs, drawJitterMs } from "./formula.js";
import type { PacingSlots } from "./pacing.js";
import type { BackoffPolicy } from "./policy.js";

/** What a policy remembers between delays; cleared by a reset. */
export interface PolicyState {
  prevMs?: number;
  startMs?: number;
  currentMs?: number;
  fallback?: PolicyState;
}

/** The delay (µs) for attempt `n` of `policy`, updating `state`. */
export function policyDelayUs(
  state: PolicyState,
  policy: BackoffPolicy,
  n: number,
  nowUs: number,
  slots: PacingSlots | undefined,
  rng: RandomSource,
): number {
  switch (policy.kind) {
    case "fixed":
      return policy.delay_ms * US;
    case "exponential":
      return cappedExponentialMs(policy.base_ms, policy.cap_ms, n) * US;
    case "full_jitter":
      return drawJitterMs(0, cappedExponentialMs(policy.base_ms, policy.cap_ms, n), rng) * US;
    case "equal_jitter": {
      const c = cappedExponentialMs(policy.base_ms, policy.cap_ms, n);
      return drawJitterMs(Math.floor(c / 2), c, rng) * US;
    }
    case "decorrelated": {
      const prev = state.prevMs ?? policy.base_ms;
      state.prevMs = Math.min(drawJitterMs(policy.base_ms, prev * 3, rng), policy.cap_ms);
      return state.prevMs * US;
    }
    case "decorrelated_capped": {
      const prev = state.prevMs ?? policy.base_ms;
      state.prevMs = drawJitterMs(policy.base_ms, Math.min(prev * 3, policy.cap_ms), rng);
      return state.prevMs * US;
    }
    case "linear_random_start": {
      state.startMs ??= drawJitterMs(0, policy.start_window_ms, rng);
      return Math.min(state.startMs + policy.step_ms * n, policy.cap_ms) * US;
    }
    case "grpc": {
      const current = state.currentMs ?? policy.initial_ms;
      const u = clampUnit(rng.nextUnit());
      const d = Math.floor(current * (1.0 + policy.jitter * (2.0 * u - 1.0)));
      const grown = Math.floor(current * policy.multiplier);
      state.currentMs = Math.min(saturate(grown), policy.max_ms);
      return saturate(d) * US;
    }
    case "server_paced": {
      const window = policy.first_window_ms;
      if (n === 0 && window > 0) return drawJitterMs(0, window, rng) * US;
      const m = window > 0 ? Math.max(n - 1, 0) : n;
      const delay = policyDelayUs((state.fallback ??= {}), policy.fallback, m, nowUs, undefined, rng);
      return slots ? slots._nextSlotAfter(nowUs + delay) - nowUs : delay;
    }
  }
}

/** Rust's saturating `f64 as u64`: negative and NaN become 0. */
function saturate(x: number): number {
  return x > 0 ? x : 0;
}
