/** Session configuration (`client/config.rs`); every field optional, defaults as in Rust. */
import { defaultPolicy, type BackoffPolicy } from "./backoff/policy.js";

export interface Config {
  backoff: BackoffPolicy;
  /** Automatic reconnects in a row before halting; `null` never halts. */
  maxAttempts: number | null;
  resetAfterMs: number;
  connectTimeoutMs: number;
  probeIntervalMs: number;
  probeTimeoutMs: number;
  requestTimeoutMs: number;
  /** Raised to at least 100 ms. */
  subscribeTimeoutMs: number;
  resubscribeBackoff: BackoffPolicy;
  onlineDelayMs: number;
  unreachableRetry: BackoffPolicy;
  token: string | null;
  /** The application answers `token_wanted` before a dial too (PROTOCOL.md §2.8). Default: false. */
  tokenProvider?: boolean;
}

export function defaultConfig(): Config {
  return {
    backoff: defaultPolicy(),
    maxAttempts: null,
    resetAfterMs: 5000,
    connectTimeoutMs: 10_000,
    probeIntervalMs: 10_000,
    probeTimeoutMs: 10_000,
    requestTimeoutMs: 10_000,
    subscribeTimeoutMs: 5000,
    resubscribeBackoff: { kind: "equal_jitter", base_ms: 500, cap_ms: 2000 },
    onlineDelayMs: 1000,
    unreachableRetry: { kind: "equal_jitter", base_ms: 1000, cap_ms: 2000 },
    token: null,
  };
}

/** The defaults with `overrides` applied. */
export function makeConfig(overrides: Partial<Config> = {}): Config {
  const config = defaultConfig();
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) (config as unknown as Record<string, unknown>)[k] = v;
  return config;
}
