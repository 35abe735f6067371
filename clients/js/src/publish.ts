/**
 * `@belay/client/publish`: publish to a channel from the browser, the
 * reserved request `$publish` (spec/PROTOCOL.md §4.6), built on the
 * client's public `request` (same options: `timeout`, `idempotencyKey`).
 * Opt-in, so the default entry does not grow.
 *
 *   import { publish } from "@belay/client/publish";
 *   const { offset, epoch } = await publish(client, "chat:room-1", { text: "hi" }, { idempotencyKey: "m-17" });
 *
 * A refusal rejects with the client's `ServerError` (`forbidden`,
 * `too_large`, `bad_request`, `unavailable`).
 */
import type { BelayClient, RequestOptions } from "./client.js";
import type { Json } from "./core/messages.js";
import type { PublishParams, PublishResult } from "./reserved.js";

/** Where the publication went in the channel (`$publish`'s result). */
export type Published = PublishResult;

/** Publish `data` to `channel` through `client`. */
export async function publish(
  client: Pick<BelayClient, "request">,
  channel: string,
  data: Json,
  options: RequestOptions = {},
): Promise<Published> {
  const params: PublishParams = { channel, data };
  const result = (await client.request("$publish", params as unknown as Json, options)) as unknown as PublishResult;
  return { offset: result.offset, epoch: result.epoch };
}
