/**
 * What a session takes and gives (`client/session/io.rs`): the driver's
 * inputs, the session's outputs, a call, and the typed refusals of its
 * commands. Types only.
 */
import type { Event } from "./events.js";
import type { ClientMessage, Json, ServerMessage } from "./messages.js";
import type { Failure, TransportId } from "./transport.js";

export type Input =
  | { kind: "opened"; id: TransportId }
  | { kind: "failed"; id: TransportId; failure: Failure }
  /** `code` null/absent when no close frame arrived (what browsers report as 1006). */
  | { kind: "closed"; id: TransportId; code?: number | null; reason?: string }
  /**
   * A frame: its text, or the message object a codec of the driver's made of
   * it (`@belay/client/binary`), checked field by field all the same; that
   * codec's `DecodeError` is answered as the JSON one for the same fault.
   */
  | { kind: "frame"; id: TransportId; text: string | object }
  | { kind: "message"; id: TransportId; message: ServerMessage }
  | { kind: "network"; online: boolean };

export type Output =
  | { output: "open_transport"; id: TransportId; attempt: number }
  | { output: "transmit"; id: TransportId; message: ClientMessage }
  | { output: "close_transport"; id: TransportId; code: number; reason: string }
  | ({ output: "event" } & Event);

export interface Call {
  method: string;
  params?: Json;
  /** This call's deadline in ms; the config's request timeout if absent. */
  timeoutMs?: number | undefined;
  idempotencyKey?: string | undefined;
}

/** A request refused unsent: the protocol level is down, the session stopped, or its frame is over `MAX_FRAME_LEN`. */
export type RequestError = "not_ready" | "stopped" | TooLarge;
/** The frame's length and the limit, in UTF-8 bytes. */
export interface TooLarge {
  error: "too_large";
  len: number;
  max: number;
}
export type SubscribeError = "already_subscribed" | "not_subscribed" | "stopped";

/** Why the token provider gave no token: `unavailable` is retried, `unauthorized` halts. */
export type TokenError = "unavailable" | "unauthorized";

export interface SessionStats {
  transportsOpened: number;
  staleInputs: number;
  unknownFrames: number;
  probesSent: number;
}
