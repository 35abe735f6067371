/** Wire messages (`message/*.rs`, PROTOCOL.md §1–§6), as their JSON objects. */

export const PROTOCOL_VERSION = 1;
/** Largest frame in UTF-8 bytes (1 MiB). */
export const MAX_FRAME_LEN = 1 << 20;

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface StreamPosition {
  epoch: string;
  offset: number;
}

export interface ErrorBody {
  code: string;
  message: string;
  retry_after_ms?: number;
}

/** Client → server. Absent optional fields are omitted. */
export type ClientMessage =
  | { type: "connect"; protocol: number; token?: string; session?: string }
  | { type: "ping" }
  | { type: "pong" }
  | { type: "refresh"; token: string }
  | { type: "request"; id: number; method: string; params: Json; idem?: string; timeout_ms?: number }
  | { type: "subscribe"; channel: string; since?: StreamPosition | undefined; token?: string | undefined }
  | { type: "unsubscribe"; channel: string }
  | { type: "sub_refresh"; channel: string; token: string };

export interface Welcome {
  type: "welcome";
  session: string;
  protocol: number;
  ping_interval_ms?: number;
  /** `origin_ms`: how long before this `welcome` the server's plan began (the fleet's beat). */
  pacing?: { period_ms: number; phase_ms: number; origin_ms?: number };
  /** The credentials expire this many ms after `welcome` (send `refresh` before). */
  expires_in_ms?: number;
}
export interface Publication {
  type: "publication";
  channel: string;
  epoch: string;
  offset: number;
  data: Json;
}
export interface Subscribed {
  type: "subscribed";
  channel: string;
  epoch: string;
  offset: number;
  recovered: boolean;
}
/** A channel's subscription token expires `expires_in_ms` from now (PROTOCOL.md §5.8). */
export interface SubExpiring {
  type: "sub_expiring";
  channel: string;
  expires_in_ms: number;
}
export interface Unsubscribed {
  type: "unsubscribed";
  channel: string;
  code: string;
  reason: string;
}
export interface Response {
  type: "response";
  id: number;
  result?: Json;
  error?: ErrorBody;
}
export interface ReconnectAdvice {
  type: "reconnect";
  reason: string;
  min_delay_ms: number;
  max_delay_ms: number;
  message?: string;
}

/** Server → client. */
export type ServerMessage =
  | Welcome
  | { type: "ping" }
  | { type: "pong" }
  | { type: "refreshed"; expires_in_ms?: number }
  | Response
  | Subscribed
  | Unsubscribed
  | Publication
  | SubExpiring
  | ReconnectAdvice
  | ({ type: "error" } & ErrorBody);

/** `unsubscribed` codes after which the client stops trying the channel. */
export function isFinalUnsubscribe(code: string): boolean {
  return ["forbidden", "unauthorized", "not_found", "bad_request"].includes(code);
}
