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
    super(stopped ? "client closed: not sent" : "not ready: not sent");
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
    super(`request too large (${len} > ${max} B): not sent`);
  }
}

/** Sent, no answer before the deadline: fate unknown, retry only if idempotent or keyed. */
export class TimeoutError extends BelayError {
  override name = "TimeoutError";
  constructor() {
    super("no response in time: fate unknown");
  }
}

/** Sent, connection lost before an answer: fate unknown, retry only if idempotent or keyed. */
export class ConnectionClosedError extends BelayError {
  override name = "ConnectionClosedError";
  constructor() {
    super("connection lost: fate unknown");
  }
}

/** The server answered with an error; `code` is one of PROTOCOL.md §4.5 (unknown ones mean `internal`). */
export class ServerError extends BelayError {
  override name = "ServerError";
  readonly code: string;
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

export type { Json };
