/**
 * Time as the core sees it. The public API takes milliseconds (possibly
 * fractional, as `performance.now()` gives them); inside, instants are whole
 * microseconds like `belay-proto`'s `Instant`, so pacing slots are exact.
 * Durations in policies and on the wire are whole milliseconds.
 */

/** Microseconds per millisecond. */
export const US = 1000;

/** An instant in ms (from the driver) as whole microseconds (truncated, never negative). */
export function fromMs(ms: number): number {
  return ms > 0 ? Math.floor(ms * US) : 0;
}

/** Whole milliseconds of a microsecond count (truncated). */
export function wholeMs(us: number): number {
  return Math.floor(us / US);
}
