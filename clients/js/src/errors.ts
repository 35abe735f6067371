/** Typed request errors: callers react differently to each (MISSION §2). */
import type { ErrorBody, Json } from "./core/messages.js";

/** Base class of every error a request rejects with. */
export class BelayError extends Error {
  override name = "BelayError";
}

/** Never sent (the protocol level is down, or the client is closed): always safe to retry. */
export class NotReadyError extends BelayError {
  override name = "NotReadyError";
  constructor(readonly stopped = false) {
    super(stopped ? "closed" : "not ready");
  }
}

/**
 * Never sent: the request's frame would be `len` UTF-8 bytes, over the
 * protocol's `max` (1 MiB; the server would close the connection for it).
 * Not retryable unchanged.
 */
export class TooLargeError extends BelayError {
  override name = "TooLargeError";
  constructor(readonly len: number, readonly max: number) {
    super(`too large: ${len} > ${max}`);
  }
}

/** Sent, no answer before the deadline: fate unknown, retry only if idempotent or keyed. */
export class TimeoutError extends BelayError {
  override name = "TimeoutError";
  constructor() {
    super("timeout: fate unknown");
  }
}

/** Sent, connection lost before an answer: fate unknown, retry only if idempotent or keyed. */
export class ConnectionClosedError extends BelayError {
  override name = "ConnectionClosedError";
  constructor() {
    super("lost: fate unknown");
  }
}

/**
 * The wire's error codes (PROTOCOL.md §4.5), plus any other string: a code
 * this client does not know (treat it like `internal`) keeps its text.
 */
export type ErrorCode =
  | "bad_request"
  | "unknown_method"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "rate_limited"
  | "unavailable"
  | "internal"
  | "timeout"
  | "too_large"
  | "host_asleep"
  | "host_offline"
  | "host_lost"
  | "lagged"
  | (string & {});

/** The server answered with an error; `code` is one of PROTOCOL.md §4.5 (unknown ones mean `internal`). */
export class ServerError extends BelayError {
  override name = "ServerError";
  readonly code: ErrorCode;
  readonly retryAfterMs: number | undefined;
  constructor(body: ErrorBody) {
    super(body.message || body.code);
    this.code = body.code;
    this.retryAfterMs = body.retry_after_ms;
  }
}

/**
 * Thrown (or rejected with) by a `tokenProvider` when the backend says this
 * user is not authorized: the client halts (`auth_failed`). Any other
 * failure of the provider is retried with the backoff.
 */
export class UnauthorizedError extends BelayError {
  override name = "UnauthorizedError";
}

/**
 * Thrown by `new BelayClient(url)` for a URL no WebSocket can dial (not
 * `ws:`, `wss:`, `http:` or `https:`, or not a URL at all): nothing is
 * started. Its `message` is the URL.
 */
export class InvalidUrlError extends BelayError {
  override name = "InvalidUrlError";
}

export type { Json };
