/**
 * The default policies' formulas (`backoff/rules.rs`): `server_paced` and
 * `equal_jitter`. Every other kind carries its own rule (`src/policies.ts`).
 * Delays are whole ms, except a slot-snapped `server_paced` delay, which is
 * exact to the µs.
 */
import type { RandomSource } from "../rng.js";
import { US } from "../time.js";
import { cappedExponentialMs, drawJitterMs } from "./formula.js";
import { MAX_PACING_PERIOD_MS, type PacingSlots } from "./pacing.js";
import type { BackoffPolicy, PolicyState, Rule } from "./policy.js";

const ruleOf = (policy: BackoffPolicy): Rule | undefined => (policy as { next?: Rule }).next;

/** Throws unless every kind in `policy` can be computed (opt-in kinds need their rule). */
export function checkPolicy(policy: BackoffPolicy): void {
  if (policy.kind === "server_paced") checkPolicy(policy.fallback);
  else if (policy.kind !== "equal_jitter" && !ruleOf(policy)) {
    throw new TypeError(`backoff ${policy.kind} needs @belay/client/policies`);
  }
}

/**
 * The delay (µs) for attempt `n` of `policy`, updating `state`. `loss`: how
 * the connection was lost (`Loss`): undefined if noticed (a close, a
 * refusal), 0 if silent (the session's heartbeat found it dead), the server's
 * ping interval (µs) if silent and its ping on its beat was the last frame.
 *
 * `server_paced` with slots known: once a loss on a beat that spreads the
 * fleet (`interval ≥ 0.95 × period`) is remembered, one period (or one beat,
 * if longer; at most 3600 s) each time, no draw; at attempt 0 such a loss
 * attempts at once (and is remembered), another silent loss waits for the
 * next slot, no draw; otherwise the fast path's draw.
 */
export function policyDelayUs(
  state: PolicyState,
  policy: BackoffPolicy,
  n: number,
  nowUs: number,
  slots: PacingSlots | undefined,
  rng: RandomSource,
  loss?: number,
): number {
  if (policy.kind === "equal_jitter") {
    const c = cappedExponentialMs(policy.base_ms, policy.cap_ms, n);
    return drawJitterMs(Math.floor(c / 2), c, rng) * US;
  }
  if (policy.kind !== "server_paced") return ruleOf(policy)!(state, n, rng) * US;
  const window = policy.first_window_ms;
  const period = slots && slots._periodMs * US;
  if (state._beat && period) return Math.min(Math.max(period, state._beat), MAX_PACING_PERIOD_MS * US);
  if (n === 0 && window > 0) {
    if (!(loss! >= 0 && slots)) return drawJitterMs(0, window, rng) * US;
    if (loss! * 20 < period! * 19) return slots._nextSlotAfter(nowUs) - nowUs;
    state._beat = loss;
    return 0;
  }
  const m = window > 0 ? Math.max(n - 1, 0) : n;
  const delay = policyDelayUs(state._fallback || (state._fallback = {}), policy.fallback, m, nowUs, undefined, rng);
  return slots ? slots._nextSlotAfter(nowUs + delay) - nowUs : delay;
}
