import { describe, expect, it } from "vitest";
import { followPresence, presence, type PresenceEvent } from "../src/presence.js";
import type { ChannelItem } from "../src/subscription.js";

describe("presence (@belay/client/presence)", () => {
  it("sends the $presence request and returns the members", async () => {
    const calls: unknown[] = [];
    const members = [{ client: "s1", user: "alice", info: { name: "Alice" } }];
    const client = {
      request(method: string, params: unknown) {
        calls.push([method, params]);
        return Promise.resolve({ members });
      },
    };
    expect(await presence(client as never, "room:1")).toEqual(members);
    expect(calls).toEqual([["$presence", { channel: "room:1" }]]);
  });

  it("follows $presence:CHANNEL: joins, leaves, and a resync", () => {
    let listener: ((item: ChannelItem) => void) | undefined;
    let subscribed = "";
    let unsubscribed = false;
    const client = {
      subscribe(channel: string) {
        subscribed = channel;
        return { on: (l: (item: ChannelItem) => void) => (listener = l), unsubscribe: () => (unsubscribed = true) };
      },
    };
    const events: PresenceEvent[] = [];
    const stop = followPresence(client as never, "room:1", (e) => events.push(e));
    const m = { client: "s1", user: "alice" };
    listener!({ type: "subscribed", recovered: false });
    listener!({ type: "publication", epoch: "e", offset: 1, data: { join: m } });
    listener!({ type: "publication", epoch: "e", offset: 2, data: { leave: m } });
    listener!({ type: "resync" });
    stop();
    expect(subscribed).toBe("$presence:room:1");
    expect(events).toEqual([{ type: "join", member: m }, { type: "leave", member: m }, { type: "resync" }]);
    expect(unsubscribed).toBe(true);
  });
});
