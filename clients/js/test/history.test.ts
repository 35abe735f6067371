import { describe, expect, it } from "vitest";
import { history } from "../src/history.js";
import { presenceStats } from "../src/presence.js";

/** A stand-in client that records each request and answers `answer`. */
function recording(answer: unknown) {
  const calls: unknown[] = [];
  const client = {
    request(method: string, params: unknown, options: unknown) {
      calls.push([method, params, options]);
      return Promise.resolve(answer);
    },
  };
  return { client: client as never, calls };
}

describe("history (@belay/client/history)", () => {
  it("sends $history with only the fields given and returns the page", async () => {
    const page = { publications: [{ offset: 4, data: { a: 1 } }], epoch: "e", offset: 5, truncated: false };
    const { client, calls } = recording(page);
    expect(await history(client, "chat:1")).toEqual(page);
    const signal = new AbortController().signal;
    await history(client, "chat:1", { since: { epoch: "e", offset: 3 }, limit: 2, reverse: true, token: "t", timeout: 500, signal });
    expect(calls).toEqual([
      ["$history", { channel: "chat:1" }, {}],
      ["$history", { channel: "chat:1", since: { epoch: "e", offset: 3 }, limit: 2, reverse: true, token: "t" }, { timeout: 500, signal }],
    ]);
  });

  it("a page without truncated is not truncated", async () => {
    const { client } = recording({ publications: [], epoch: "e", offset: 0 });
    expect((await history(client, "c")).truncated).toBe(false);
  });
});

describe("presenceStats (@belay/client/presence)", () => {
  it("sends $presence_stats and returns the counts", async () => {
    const { client, calls } = recording({ clients: 3, users: 2 });
    expect(await presenceStats(client, "room:1")).toEqual({ clients: 3, users: 2 });
    expect(calls).toEqual([["$presence_stats", { channel: "room:1" }, {}]]);
  });
});
