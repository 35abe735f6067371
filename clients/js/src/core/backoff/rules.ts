/**
 * The default policies' formulas (`backoff/rules.rs`): `server_paced` and
 * `equal_jitter`. Every other kind carries its own rule (`src/policies.ts`).
 * Delays are whole ms, except a slot-snapped `server_paced` delay, which is
 * exact to the µs.
 */
import type { RandomSource } from "../rng.js";
import { US } from "../time.js";
import { cappedExponentialMs, drawJitterMs } from "./formula.js";
import type { PacingSlots } from "./pacing.js";
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
 * The delay (µs) for attempt `n` of `policy`, updating `state`. `silent`: the
 * session's heartbeat found the connection dead (`Loss::Silent`): a
 * server-paced fast path is replaced by the next slot, if slots are known.
 */
export function policyDelayUs(
  state: PolicyState,
  policy: BackoffPolicy,
  n: number,
  nowUs: number,
  slots: PacingSlots | undefined,
  rng: RandomSource,
  silent?: boolean,
): number {
  if (policy.kind === "equal_jitter") {
    const c = cappedExponentialMs(policy.base_ms, policy.cap_ms, n);
    return drawJitterMs(Math.floor(c / 2), c, rng) * US;
  }
  if (policy.kind !== "server_paced") return ruleOf(policy)!(state, n, rng) * US;
  const window = policy.first_window_ms;
  if (n === 0 && window > 0) return silent && slots ? slots._nextSlotAfter(nowUs) - nowUs : drawJitterMs(0, window, rng) * US;
  const m = window > 0 ? Math.max(n - 1, 0) : n;
  const delay = policyDelayUs((state.fallback ??= {}), policy.fallback, m, nowUs, undefined, rng);
  return slots ? slots._nextSlotAfter(nowUs + delay) - nowUs : delay;
}
