/** What the session tells the application (`client/event.rs`), in its serde JSON form. */
import type { CloseInfo } from "./close.js";
import type { DecodeError } from "./codec.js";
import type { LivenessFailure } from "./heartbeat.js";
import type { ErrorBody, Json } from "./messages.js";
import type { Readiness } from "./readiness.js";
import type { Failure } from "./transport.js";

export type DisconnectReason =
  | { kind: "transport_closed"; close: CloseInfo }
  | { kind: "transport_failed"; failure: Failure }
  | { kind: "heartbeat_timeout"; cause: LivenessFailure }
  | { kind: "connect_timeout" }
  | { kind: "protocol_violation"; error: DecodeError }
  | { kind: "network_offline" }
  | { kind: "client_stopped" }
  /** The server advised a reconnect; the session closed the transport once idle. */
  | { kind: "advised" }
  /** The token provider gave no token before a dial (failed, or no answer in the connect timeout): retried after the backoff. */
  | { kind: "token_unavailable" }
  /** The token provider said the user is not authorized: the session halts. */
  | { kind: "unauthorized" }
  /** The driver moved the session to another transport (`replaceTransport`): closed 1000 and dialed again at once. */
  | { kind: "replaced" };

/** Whether (and when) the session will try again. */
export type RetryPlan = { kind: "after"; delay_ms: number } | { kind: "when_online" } | { kind: "no" };

export type HaltReason =
  | { kind: "server_closed"; close: CloseInfo }
  | { kind: "auth_failed" }
  | { kind: "exhausted"; attempts: number }
  | { kind: "protocol_mismatch"; server: number }
  | { kind: "invalid_config"; detail: string };

export type RequestOutcome =
  | { kind: "ok"; result: Json }
  | { kind: "server_error"; error: ErrorBody }
  | { kind: "timeout" }
  | { kind: "connection_closed" };

export type Event =
  | { event: "readiness_changed"; readiness: Readiness; ready: boolean }
  | { event: "connected"; session: string }
  | { event: "disconnected"; reason: DisconnectReason; retry: RetryPlan }
  | { event: "connect_failed"; reason: DisconnectReason; retry: RetryPlan }
  | { event: "halted"; reason: HaltReason }
  | { event: "stopped" }
  | { event: "response"; id: number; outcome: RequestOutcome }
  | { event: "subscribed"; channel: string; recovered: boolean }
  | { event: "recovery_failed"; channel: string }
  | { event: "subscription_lost"; channel: string; code: string }
  | { event: "subscription_failed"; channel: string; code: string }
  | { event: "publication"; channel: string; epoch: string; offset: number; data: Json }
  | ({ event: "server_error" } & ErrorBody)
  /** A token is wanted (before a dial, or ahead of the expiry): answer with `refreshToken` or `tokenFailed`. */
  | { event: "token_wanted"; expires_in_ms: number }
  /** The channel's subscription token expires in `expires_in_ms`: answer with `refreshSubscriptionToken` (sent in-band). */
  | { event: "subscription_token_wanted"; channel: string; expires_in_ms: number };
