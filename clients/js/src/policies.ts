/**
 * `@belay/client/policies`: the opt-in backoff policies (`backoff/rules.rs`).
 *
 * The default entry computes only what its defaults use (`server_paced` with
 * an `equal_jitter` fallback). Every other kind is built here: each function
 * returns the policy in its serde JSON form with its rule attached
 * (non-enumerable, so `JSON.stringify` gives exactly the JSON form).
 *
 *   import { BelayClient } from "@belay/client";
 *   import { grpc, parsePolicy } from "@belay/client/policies";
 *   new BelayClient(url, { backoff: grpc(1000, 1.6, 0.2, 120_000) });
 *   new BelayClient(url, { backoff: parsePolicy({ kind: "fixed", delay_ms: 1000 }) });
 */
import { cappedExponentialMs, drawJitterMs } from "./core/backoff/formula.js";
import type { BackoffPolicy, PolicyState, Rule } from "./core/backoff/policy.js";
import { clampUnit, type RandomSource } from "./core/rng.js";

export type { BackoffPolicy };

type Of<K extends BackoffPolicy["kind"]> = Extract<BackoffPolicy, { kind: K }>;
type P = Record<string, number>;

/** Rust's saturating `f64 as u64`: negative and NaN become 0. */
const saturate = (x: number): number => (x > 0 ? x : 0);

const RULES: Partial<Record<BackoffPolicy["kind"], (p: P, s: PolicyState, n: number, rng: RandomSource) => number>> = {
  fixed: (p) => p["delay_ms"]!,
  exponential: (p, _, n) => cappedExponentialMs(p["base_ms"]!, p["cap_ms"]!, n),
  full_jitter: (p, _, n, rng) => drawJitterMs(0, cappedExponentialMs(p["base_ms"]!, p["cap_ms"]!, n), rng),
  decorrelated: (p, s, _, rng) => (s.prevMs = Math.min(drawJitterMs(p["base_ms"]!, (s.prevMs ?? p["base_ms"]!) * 3, rng), p["cap_ms"]!)),
  decorrelated_capped: (p, s, _, rng) => (s.prevMs = drawJitterMs(p["base_ms"]!, Math.min((s.prevMs ?? p["base_ms"]!) * 3, p["cap_ms"]!), rng)),
  linear_random_start: (p, s, n, rng) => Math.min((s.startMs ??= drawJitterMs(0, p["start_window_ms"]!, rng)) + p["step_ms"]! * n, p["cap_ms"]!),
  grpc: (p, s, _, rng) => {
    const current = s.currentMs ?? p["initial_ms"]!;
    const u = clampUnit(rng.nextUnit());
    const d = Math.floor(current * (1.0 + p["jitter"]! * (2.0 * u - 1.0)));
    s.currentMs = Math.min(saturate(Math.floor(current * p["multiplier"]!)), p["max_ms"]!);
    return saturate(d);
  },
};

const FIELDS: Record<BackoffPolicy["kind"], readonly string[]> = {
  fixed: ["delay_ms"],
  exponential: ["base_ms", "cap_ms"],
  full_jitter: ["base_ms", "cap_ms"],
  equal_jitter: ["base_ms", "cap_ms"],
  decorrelated: ["base_ms", "cap_ms"],
  decorrelated_capped: ["base_ms", "cap_ms"],
  linear_random_start: ["start_window_ms", "step_ms", "cap_ms"],
  grpc: ["initial_ms", "multiplier", "jitter", "max_ms"],
  server_paced: ["first_window_ms", "fallback"],
};

/**
 * Validate a policy from JSON and return it in canonical form (known fields
 * only, in serialization order) with its rule attached. Throws on anything
 * `serde` would reject.
 */
export function parsePolicy(value: unknown): BackoffPolicy {
  if (typeof value !== "object" || value === null) throw new TypeError("policy must be an object");
  const obj = value as Record<string, unknown>;
  const kind = obj["kind"] as BackoffPolicy["kind"];
  const fields = Object.hasOwn(FIELDS, kind) ? FIELDS[kind] : undefined;
  if (!fields) throw new TypeError(`unknown policy kind ${String(kind)}`);
  const out: Record<string, unknown> = { kind };
  for (const f of fields) {
    const v = obj[f];
    if (f === "fallback") out[f] = parsePolicy(v);
    else if (f.endsWith("_ms")) {
      if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw new TypeError(`${f} must be whole ms`);
      out[f] = v;
    } else {
      if (typeof v !== "number" || !Number.isFinite(v)) throw new TypeError(`${f} must be a number`);
      out[f] = v;
    }
  }
  const rule = RULES[kind];
  if (rule) {
    const p = out as P;
    const next: Rule = (s, n, rng) => rule(p, s, n, rng);
    Object.defineProperty(out, "next", { value: next });
  }
  return out as BackoffPolicy;
}

/** The same delay every time. */
export const fixed = (delay_ms: number): Of<"fixed"> => parsePolicy({ kind: "fixed", delay_ms }) as Of<"fixed">;
/** `min(cap, base × 2^n)`, no jitter. */
export const exponential = (base_ms: number, cap_ms: number): Of<"exponential"> =>
  parsePolicy({ kind: "exponential", base_ms, cap_ms }) as Of<"exponential">;
/** Uniform in `[0, C(n))`. */
export const fullJitter = (base_ms: number, cap_ms: number): Of<"full_jitter"> =>
  parsePolicy({ kind: "full_jitter", base_ms, cap_ms }) as Of<"full_jitter">;
/** Uniform in `[C(n)/2, C(n))` (also available as plain data: the core computes it). */
export const equalJitter = (base_ms: number, cap_ms: number): Of<"equal_jitter"> =>
  parsePolicy({ kind: "equal_jitter", base_ms, cap_ms }) as Of<"equal_jitter">;
/** `min(cap, uniform[base, 3 × prev))`. */
export const decorrelated = (base_ms: number, cap_ms: number): Of<"decorrelated"> =>
  parsePolicy({ kind: "decorrelated", base_ms, cap_ms }) as Of<"decorrelated">;
/** `uniform[base, min(cap, 3 × prev))`. */
export const decorrelatedCapped = (base_ms: number, cap_ms: number): Of<"decorrelated_capped"> =>
  parsePolicy({ kind: "decorrelated_capped", base_ms, cap_ms }) as Of<"decorrelated_capped">;
/** A random start in `[0, window)`, then `+ step` per attempt, capped. */
export const linearRandomStart = (start_window_ms: number, step_ms: number, cap_ms: number): Of<"linear_random_start"> =>
  parsePolicy({ kind: "linear_random_start", start_window_ms, step_ms, cap_ms }) as Of<"linear_random_start">;
/** gRPC's connection backoff. */
export const grpc = (initial_ms: number, multiplier: number, jitter: number, max_ms: number): Of<"grpc"> =>
  parsePolicy({ kind: "grpc", initial_ms, multiplier, jitter, max_ms }) as Of<"grpc">;
/** A random first delay in `[0, window)`, then `fallback`, snapped to the server's pacing slots. */
export const serverPaced = (first_window_ms: number, fallback: BackoffPolicy): Of<"server_paced"> =>
  parsePolicy({ kind: "server_paced", first_window_ms, fallback }) as Of<"server_paced">;
