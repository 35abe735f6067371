/**
 * Time as the core sees it. The public API takes milliseconds (possibly
 * fractional, as `performance.now()` gives them); inside, instants are whole
 * microseconds like `belay-proto`'s `Instant`, so pacing slots are exact.
 * Durations in policies and on the wire are whole milliseconds.
 */

/** Microseconds per millisecond. */
export const US = 1000;

/**
 * An instant in ms (from the driver) as whole microseconds (the nearest,
 * never negative). Rounding, not truncating: `pollTimeout()` returns
 * `us / 1000`, and `Math.floor((us / 1000) * 1000)` is `us - 1` for about
 * one instant in 170, so a driver calling `handleTimeout(pollTimeout())`
 * would never reach such a deadline and spin.
 */
export function fromMs(ms: number): number {
  return ms > 0 ? Math.round(ms * US) : 0;
}

/** Whole milliseconds of a microsecond count (truncated). */
export function wholeMs(us: number): number {
  return Math.floor(us / US);
}
