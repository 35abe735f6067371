/** Close codes and what each means for reconnecting (`close.rs`, PROTOCOL.md §7). */

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

export function disposition(code: number | undefined): CloseDisposition {
  switch (code) {
    case 1000:
    case 1008:
    case 4003:
      return "terminal";
    case 4001:
      return "auth_failed";
    case 1012:
    case 1013:
    case 4029:
      return "retry_with_advice";
    default:
      return "retry";
  }
}

/** The serialized form: `code` omitted when absent, `reason` omitted when empty. */
export function closeInfo(code: number | null | undefined, reason: string | undefined): CloseInfo {
  const info: CloseInfo = {};
  if (code !== null && code !== undefined) info.code = code;
  if (reason) info.reason = reason;
  return info;
}
