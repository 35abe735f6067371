/**
 * `@belay/client/history`: read a channel's retained history without
 * subscribing, the reserved request `$history` (spec/PROTOCOL.md §4.8),
 * built on the client's public `request` (same options: `timeout`,
 * `signal`, `waitReady`). Allowed exactly when the client may subscribe to
 * the channel. Opt-in, so the default entry does not grow.
 *
 *   import { history } from "@belay/client/history";
 *   const { publications, epoch, offset } = await history(client, "chat:lobby", { limit: 20, reverse: true });
 *   // then follow live from the position read: nothing published after it is missed
 *   client.subscribe("chat:lobby");
 *
 * A refusal rejects with the client's `ServerError`: `bad_request`,
 * `forbidden` / `unauthorized` (as a subscribe would be), `not_found` (`since`
 * is no position of the channel now: read again without it), `unavailable`.
 */
import type { BelayClient, RequestOptions } from "./client.js";
import type { Json } from "./core/messages.js";

/** What to read: by default all the server holds (up to the channel's history size), oldest first. */
export interface HistoryOptions extends RequestOptions {
  /** Read after this position (or, `reverse`, before it). */
  since?: { epoch: string; offset: number };
  /** Publications at most (the server caps it at the channel's history size). */
  limit?: number;
  /** Newest first. */
  reverse?: boolean;
  /** The channel's subscription token, if its server asks for one. */
  token?: string;
}

/** One read of a channel's history. */
export interface History {
  /** In the order asked. */
  publications: { offset: number; data: Json }[];
  /** The channel's position at the read: its epoch and top offset. */
  epoch: string;
  offset: number;
  /** The server's byte bound ended the answer: read again after the last offset given. */
  truncated: boolean;
}

/** Read `channel`'s retained history through `client`. */
export async function history(
  client: Pick<BelayClient, "request">,
  channel: string,
  options: HistoryOptions = {},
): Promise<History> {
  const { since, limit, reverse, token, ...request } = options;
  const params: Record<string, Json> = { channel };
  if (since) params.since = { epoch: since.epoch, offset: since.offset };
  if (limit !== undefined) params.limit = limit;
  if (reverse) params.reverse = true;
  if (token !== undefined) params.token = token;
  const r = (await client.request("$history", params, request)) as unknown as History;
  return { publications: r.publications, epoch: r.epoch, offset: r.offset, truncated: r.truncated === true };
}
