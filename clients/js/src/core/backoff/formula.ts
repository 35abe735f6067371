/** The integer-millisecond arithmetic every policy is built from (`backoff/formula.rs`). */
import { clampUnit, type RandomSource } from "../rng.js";

/** `C(n) = min(cap, base × 2^n)`, with `2^n` saturating for n >= 63. */
export function cappedExponentialMs(baseMs: number, capMs: number, n: number): number {
  if (baseMs === 0) return 0;
  return Math.min(capMs, n >= 63 ? Infinity : baseMs * 2 ** n);
}

/** `jit(lo, hi) = lo + floor(u × (hi − lo))`, or `lo` when `hi <= lo`. */
export function jitterMs(loMs: number, hiMs: number, u: number): number {
  if (hiMs <= loMs) return loMs;
  const span = hiMs - loMs;
  const offset = Math.floor(clampUnit(u) * span);
  return loMs + Math.min(offset, span - 1);
}

/** One draw, always taken, then `jit`. */
export function drawJitterMs(loMs: number, hiMs: number, rng: RandomSource): number {
  return jitterMs(loMs, hiMs, rng.nextUnit());
}
