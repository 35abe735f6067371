/**
 * Reconnect policies as plain data, in exactly the JSON form `BackoffPolicy`
 * serializes to (tagged by `kind`, durations in whole ms).
 *
 * The core computes the two kinds the defaults use (`server_paced` and
 * `equal_jitter`). The others are opt-in: build them with the functions of
 * `@belay/client/policies` (`src/policies.ts`), which attach their rule to
 * the object (non-enumerable, so the JSON form is unchanged).
 */
import type { RandomSource } from "../rng.js";

export type BackoffPolicy =
  | { kind: "fixed"; delay_ms: number }
  | { kind: "exponential"; base_ms: number; cap_ms: number }
  | { kind: "full_jitter"; base_ms: number; cap_ms: number }
  | { kind: "equal_jitter"; base_ms: number; cap_ms: number }
  | { kind: "decorrelated"; base_ms: number; cap_ms: number }
  | { kind: "decorrelated_capped"; base_ms: number; cap_ms: number }
  | { kind: "linear_random_start"; start_window_ms: number; step_ms: number; cap_ms: number }
  | { kind: "grpc"; initial_ms: number; multiplier: number; jitter: number; max_ms: number }
  | { kind: "server_paced"; first_window_ms: number; fallback: BackoffPolicy };

/** What a policy remembers between delays; cleared by a reset. */
export interface PolicyState {
  prevMs?: number;
  startMs?: number;
  currentMs?: number;
  _fallback?: PolicyState;
  /** `server_paced`: the loss was noticed on a beat of this interval (µs) that spreads the fleet. */
  _beat?: number;
}

/** An opt-in policy's rule: the delay (whole ms) for attempt `n`, updating `state`. */
export type Rule = (state: PolicyState, n: number, rng: RandomSource) => number;

/** Belay's default: `server_paced(1 s, equal_jitter(1 s, 30 s))`. */
export function defaultPolicy(): BackoffPolicy {
  return {
    kind: "server_paced",
    first_window_ms: 1000,
    fallback: { kind: "equal_jitter", base_ms: 1000, cap_ms: 30000 },
  };
}
