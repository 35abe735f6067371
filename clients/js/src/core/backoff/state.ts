/** One session's reconnect backoff (`backoff/state.rs`). */
import type { RandomSource } from "../rng.js";
import { US } from "../time.js";
import { drawJitterMs } from "./formula.js";
import type { PacingSlots, RetryWindow } from "./pacing.js";
import type { BackoffPolicy } from "./policy.js";
import { policyDelayUs, type PolicyState } from "./rules.js";

export class Backoff {
  private state: PolicyState = {};
  /** Delays handed out since the last reset. */
  attempt = 0;
  slots: PacingSlots | undefined;
  advice: RetryWindow | undefined;

  constructor(readonly policy: BackoffPolicy) {}

  /**
   * The delay (µs) before the next attempt, asked at `nowUs`. Pending advice
   * wins once (one draw); otherwise the policy's rule. Always counts an attempt.
   */
  nextDelay(nowUs: number, rng: RandomSource): number {
    const window = this.advice;
    let delay: number;
    if (window) {
      this.advice = undefined;
      const lo = Math.floor(Math.max(window.earliestUs - nowUs, 0) / US);
      const hi = Math.floor(Math.max(window.latestUs - nowUs, 0) / US);
      delay = drawJitterMs(lo, hi, rng) * US;
    } else {
      delay = policyDelayUs(this.state, this.policy, this.attempt, nowUs, this.slots, rng);
    }
    if (this.attempt < 0xffffffff) this.attempt++;
    return delay;
  }

  /** Clear the attempt counter and the policies' memory; keep slots and advice. */
  reset(): void {
    this.attempt = 0;
    this.state = {};
  }
}
