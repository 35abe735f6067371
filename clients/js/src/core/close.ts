/** Close codes and what each means for reconnecting (`close.rs`, PROTOCOL.md §7). */
import type { HaltReason } from "./events.js";

// An enum, so the bundler inlines the numbers.
export enum CloseCode {
  NORMAL = 1000,
  GOING_AWAY = 1001,
  PROTOCOL_ERROR = 1002,
  ABNORMAL = 1006,
  POLICY_VIOLATION = 1008,
  TOO_BIG = 1009,
  SERVICE_RESTART = 1012,
  TRY_AGAIN_LATER = 1013,
  HEARTBEAT_TIMEOUT = 4000,
  UNAUTHORIZED = 4001,
  FORBIDDEN = 4003,
  HANDSHAKE_TIMEOUT = 4008,
  RATE_LIMITED = 4029,
}

/** How a transport ended: `code` absent when no close frame arrived (1006). */
export interface CloseInfo {
  code?: number;
  reason?: string;
}

export type CloseDisposition = "terminal" | "auth_failed" | "retry_with_advice" | "retry";

/** The `terminal` codes: the server closed for good (normal closure, policy violation, forbidden). */
const TERMINAL: number[] = [CloseCode.NORMAL, CloseCode.POLICY_VIOLATION, CloseCode.FORBIDDEN];

export function disposition(code: number | undefined): CloseDisposition {
  return code === CloseCode.UNAUTHORIZED ? "auth_failed"
    : TERMINAL.includes(code!) ? "terminal"
    : [CloseCode.SERVICE_RESTART, CloseCode.TRY_AGAIN_LATER, CloseCode.RATE_LIMITED].includes(code!) ? "retry_with_advice"
    : "retry";
}

/**
 * Why the session halts after `close`: its disposition is `auth_failed` or
 * `terminal` (`server_closed`); undefined for the others, after which it
 * reconnects (the session needs no more of the disposition).
 */
export function closeHalt(close: CloseInfo): HaltReason | undefined {
  return close.code === CloseCode.UNAUTHORIZED ? { kind: "auth_failed" } : TERMINAL.includes(close.code!) ? { kind: "server_closed", close } : undefined;
}

/** The serialized form: `code` omitted when absent, `reason` omitted when empty. */
export function closeInfo(code: number | null | undefined, reason: string | undefined): CloseInfo {
  const info: CloseInfo = {};
  if (code != null) info.code = code;
  if (reason) info.reason = reason;
  return info;
}
