/** One session's reconnect backoff (`backoff/state.rs`). */
import type { RandomSource } from "../rng.js";
import { US, wholeMs } from "../time.js";
import { drawJitterMs } from "./formula.js";
import type { PacingSlots, RetryWindow } from "./pacing.js";
import type { BackoffPolicy, PolicyState } from "./policy.js";
import { checkPolicy, policyDelayUs } from "./rules.js";

export class Backoff {
  private _state: PolicyState = {};
  /** Delays handed out since the last reset. */
  _attempt = 0;
  _slots: PacingSlots | undefined;
  _advice: RetryWindow | undefined;

  constructor(readonly _policy: BackoffPolicy) {
    checkPolicy(_policy);
  }

  /**
   * The delay (µs) before the next attempt, asked at `nowUs`. Pending advice
   * wins once (one draw); otherwise the policy's rule (`loss`: undefined
   * for `Loss::Noticed`, 0 for `Loss::Silent`, the beat's interval in µs for
   * `Loss::Beat`). Always counts an attempt.
   */
  _nextDelay(nowUs: number, rng: RandomSource, loss?: number): number {
    const window = this._advice;
    let delay: number;
    if (window) {
      this._advice = undefined;
      const ms = (t: number) => wholeMs(Math.max(t - nowUs, 0)); // whole ms from now
      delay = drawJitterMs(ms(window._earliestUs), ms(window._latestUs), rng) * US;
    } else {
      delay = policyDelayUs(this._state, this._policy, this._attempt, nowUs, this._slots, rng, loss);
    }
    if (this._attempt < 0xffffffff) this._attempt++;
    return delay;
  }

  /** Clear the attempt counter and the policies' memory; keep slots and advice. */
  _reset(): void {
    this._attempt = 0;
    this._state = {};
  }
}
