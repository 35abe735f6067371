/**
 * Readiness (`client/readiness.rs`): three levels with one-way dependencies —
 * transport ▶ protocol ▶ service — and one aggregate, `ready`. Inside the
 * session the levels are one number, how many are up (0–3): a level is up
 * only if the one below is, by construction.
 */
export interface Readiness {
  transport: boolean;
  protocol: boolean;
  service: boolean;
}

/** The levels of a count of levels up (3 = ready). */
export function readinessOf(level: number): Readiness {
  return { transport: level > 0, protocol: level > 1, service: level > 2 };
}
