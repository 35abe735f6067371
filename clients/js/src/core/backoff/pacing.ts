/** Server hints: pacing slots from `welcome` and one-shot retry windows (`backoff/pacing.rs`). */
import { US } from "../time.js";

/**
 * Longest pacing period and longest advised delay (ms, one hour: Rust's
 * `MAX_PACING_PERIOD` and `MAX_HINT_DELAY`); longer ones are clamped.
 */
export const MAX_PACING_PERIOD_MS = 3_600_000;

/** `a mod m` in `[0, m)`, for integers (exact below 2^53). */
const mod = (a: number, m: number): number => ((a % m) + m) % m;

/** Reconnect instants `anchor + phase + k × period` (µs), for every integer k. */
export class PacingSlots {
  readonly _periodMs: number;
  readonly _phaseMs: number;

  /** `anchorUs` is the instant `welcome` was received, in µs. */
  constructor(periodMs: number, phaseMs: number, readonly _anchorUs: number) {
    this._periodMs = Math.min(Math.max(Math.floor(periodMs), 1), MAX_PACING_PERIOD_MS);
    this._phaseMs = Math.floor(phaseMs) % this._periodMs;
  }

  /**
   * The smallest slot instant (µs) strictly after `nowUs`: one period after
   * `nowUs`, less how far `nowUs` is past a slot (`mod`, never negative).
   */
  _nextSlotAfter(nowUs: number): number {
    const period = this._periodMs * US;
    return nowUs + period - mod(nowUs - this._anchorUs - this._phaseMs * US, period);
  }
}

/** Advice window `[earliest, latest)` in µs. */
export interface RetryWindow {
  _earliestUs: number;
  _latestUs: number;
}

/** `[now + min, now + max)` with both clamped to 3600 s and `max` raised to `min`. */
export function retryWindow(nowUs: number, minMs: number, maxMs: number): RetryWindow {
  const lo = Math.min(Math.floor(minMs), MAX_PACING_PERIOD_MS);
  const hi = Math.max(Math.min(Math.floor(maxMs), MAX_PACING_PERIOD_MS), lo);
  return { _earliestUs: nowUs + lo * US, _latestUs: nowUs + hi * US };
}
