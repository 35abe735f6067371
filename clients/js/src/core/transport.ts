/** Transport identity and the failures a driver reports (`client/transport.rs`). */

/** Ids grow monotonically and are never reused: a stale transport is always told apart. */
export type TransportId = number;

export type Failure =
  /** Reached the server's side (or the driver cannot tell): refused, reset, TLS… */
  | { kind: "network"; detail: string }
  /** Never left this device (no route): retried on the short local schedule. */
  | { kind: "unreachable"; detail: string }
  /**
   * The upgrade was answered with this HTTP status (401/403 = auth failure),
   * and its `Retry-After` in ms, if any: advice, the next dial drawn in
   * `[R, 2R)` (spec §6).
   */
  | { kind: "rejected"; status: number; retry_after_ms?: number }
  /** The driver cannot even try (bad URL): halts at once. */
  | { kind: "invalid_config"; detail: string };
