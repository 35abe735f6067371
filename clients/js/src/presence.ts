/**
 * `@belay/client/presence`: who is subscribed to a channel whose namespace
 * tracks presence (spec/PROTOCOL.md §4.7), built on the client's public
 * `request` and `subscribe`. Opt-in, so the default entry does not grow.
 *
 *   import { presence, presenceStats, followPresence } from "@belay/client/presence";
 *   const members = await presence(client, "room:1");
 *   const { clients, users } = await presenceStats(client, "room:1"); // counts only
 *   const stop = followPresence(client, "room:1", (e) => {
 *     if (e.type === "join") add(e.member);
 *     else if (e.type === "leave") remove(e.member);
 *     else presence(client, "room:1").then(replaceAll); // resync: events were missed
 *   });
 *
 * Joins and leaves arrive on `$presence:CHANNEL` as ordinary publications,
 * so they are recovered across reconnects like any channel; when they
 * cannot be (`resync`), query again. A refusal rejects with the client's
 * `ServerError` (`bad_request` without presence, `forbidden`, `unavailable`).
 */
import type { BelayClient, RequestOptions } from "./client.js";
import type { Json } from "./core/messages.js";
import type { PresenceMember, PresenceMembers, PresenceParams, PresenceStats } from "./reserved.js";
import type { ChannelItem } from "./subscription.js";

/** One subscription to the channel. */
export type Member = PresenceMember;

/** What `followPresence` reports. */
export type PresenceEvent =
  | { type: "join"; member: Member }
  | { type: "leave"; member: Member }
  /** Joins or leaves were lost: query `presence` again. */
  | { type: "resync" };

/** The members of `channel` now. */
export async function presence(
  client: Pick<BelayClient, "request">,
  channel: string,
  options: RequestOptions = {},
): Promise<Member[]> {
  const params: PresenceParams = { channel };
  const result = (await client.request("$presence", params as unknown as Json, options)) as unknown as PresenceMembers;
  return result.members;
}

/** How many distinct clients (sessions) and users are subscribed to `channel` now (`$presence_stats`). */
export async function presenceStats(
  client: Pick<BelayClient, "request">,
  channel: string,
  options: RequestOptions = {},
): Promise<PresenceStats> {
  const params: PresenceParams = { channel };
  const r = (await client.request("$presence_stats", params as unknown as Json, options)) as unknown as PresenceStats;
  return { clients: r.clients, users: r.users };
}

/** Follow the joins and leaves of `channel`; returns a function that stops. */
export function followPresence(
  client: Pick<BelayClient, "subscribe">,
  channel: string,
  listener: (event: PresenceEvent) => void,
): () => void {
  const sub = client.subscribe("$presence:" + channel);
  sub.on((item: ChannelItem) => {
    if (item.type === "resync") listener({ type: "resync" });
    if (item.type !== "publication") return;
    const data = (item.data ?? {}) as unknown as { join?: Member; leave?: Member };
    if (data.join) listener({ type: "join", member: data.join });
    else if (data.leave) listener({ type: "leave", member: data.leave });
  });
  return () => sub.unsubscribe();
}
