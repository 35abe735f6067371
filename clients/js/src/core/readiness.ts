/**
 * Readiness (`readiness.rs`): three levels with one-way dependencies —
 * transport ▶ protocol ▶ service — and one aggregate, `ready`.
 */
export interface Readiness {
  transport: boolean;
  protocol: boolean;
  service: boolean;
}

/** Levels from the facts, keeping the dependencies: a level is up only if the one below is. */
export function readinessOf(transport: boolean, protocol: boolean, service: boolean): Readiness {
  const p = transport && protocol;
  return { transport, protocol: p, service: p && service };
}

export function isReady(r: Readiness): boolean {
  return r.transport && r.protocol && r.service;
}

export function sameReadiness(a: Readiness, b: Readiness): boolean {
  return a.transport === b.transport && a.protocol === b.protocol && a.service === b.service;
}
