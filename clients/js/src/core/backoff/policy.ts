/**
 * Reconnect policies as plain data, in exactly the JSON form `BackoffPolicy`
 * serializes to (tagged by `kind`, durations in whole ms).
 */

export type BackoffPolicy =
  | { kind: "fixed"; delay_ms: number }
  | { kind: "exponential"; base_ms: number; cap_ms: number }
  | { kind: "full_jitter"; base_ms: number; cap_ms: number }
  | { kind: "equal_jitter"; base_ms: number; cap_ms: number }
  | { kind: "decorrelated"; base_ms: number; cap_ms: number }
  | { kind: "decorrelated_capped"; base_ms: number; cap_ms: number }
  | { kind: "linear_random_start"; start_window_ms: number; step_ms: number; cap_ms: number }
  | { kind: "grpc"; initial_ms: number; multiplier: number; jitter: number; max_ms: number }
  | { kind: "server_paced"; first_window_ms: number; fallback: BackoffPolicy };

/** Belay's default: `server_paced(1 s, equal_jitter(1 s, 30 s))`. */
export function defaultPolicy(): BackoffPolicy {
  return {
    kind: "server_paced",
    first_window_ms: 1000,
    fallback: { kind: "equal_jitter", base_ms: 1000, cap_ms: 30000 },
  };
}

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
 * only, in serialization order). Throws on anything `serde` would reject.
 */
export function parsePolicy(value: unknown): BackoffPolicy {
  if (typeof value !== "object" || value === null) throw new TypeError("policy must be an object");
  const obj = value as Record<string, unknown>;
  const kind = obj["kind"] as BackoffPolicy["kind"];
  const fields = FIELDS[kind];
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
  return out as BackoffPolicy;
}
