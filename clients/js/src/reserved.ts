/**
 * The params and results of the reserved methods (spec/PROTOCOL.md §4.6,
 * §4.7, §10.3), as the Rust core types them in `belay_proto::message`
 * (`message/reserved/`). Types only: nothing here reaches a bundle. The
 * shared vectors spec/vectors/reserved.json pin the wire shapes for both
 * clients (test/reserved_vectors.test.ts runs them here).
 *
 * A server refuses params with a field it does not know (`bad_request`);
 * results and deliveries may gain fields, so read only what you need.
 */
import type { ErrorBody, Json } from "./core/messages.js";

/** `$publish` params: publish `data` to `channel` (`data` is required; `null` is data). */
export interface PublishParams {
  channel: string;
  data: Json;
}

/** `$publish` result: where the publication went in the channel. */
export interface PublishResult {
  offset: number;
  epoch: string;
}

/** `$presence` and `$presence_stats` params. */
export interface PresenceParams {
  channel: string;
  /** A subscription token, for a channel that needs one to subscribe. */
  token?: string;
}

/** One member of a presence channel: one subscription. */
export interface PresenceMember {
  /** The subscriber's session id. */
  client: string;
  /** Its authenticated user. */
  user: string;
  /** The credential's `info`, if it had one. */
  info?: Json;
}

/** `$presence` result. */
export interface PresenceMembers {
  members: PresenceMember[];
}

/** `$presence_stats` result: distinct clients (sessions) and users. */
export interface PresenceStats {
  clients: number;
  users: number;
}

/** `$call` params: call `method` (1 to 128 bytes) of the resident host `host`. The result is the host's. */
export interface CallParams {
  host: string;
  method: string;
  /** `null` when absent. */
  params?: Json;
}

/** A call as its host receives it: the data of a publication on `$host-calls:ID`. */
export interface HostCallDelivery {
  /** The id to answer with `$answer`. */
  call: number;
  method: string;
  params: Json;
}

/** `$answer` params: exactly one of `result` (`null` is a result) and `error`. */
export type AnswerParams =
  | { call: number; result: Json; error?: never }
  | { call: number; error: ErrorBody; result?: never };

/** `$answer` result: `{}`. */
export type AnswerResult = Record<string, never>;
