import { describe, expect, it } from "vitest";
import { publish } from "../src/publish.js";
import type { RequestOptions } from "../src/client.js";

describe("publish (@belay/client/publish)", () => {
  it("sends the $publish request with the request options and returns the place", async () => {
    const calls: unknown[] = [];
    const client = {
      request(method: string, params: unknown, options?: RequestOptions) {
        calls.push([method, params, options]);
        return Promise.resolve({ offset: 7, epoch: "e1" });
      },
    };
    const got = await publish(client as never, "chat:a", { text: "hi" }, { idempotencyKey: "k", timeout: 500 });
    expect(got).toEqual({ offset: 7, epoch: "e1" });
    expect(calls).toEqual([["$publish", { channel: "chat:a", data: { text: "hi" } }, { idempotencyKey: "k", timeout: 500 }]]);
  });

  it("passes a refusal through", async () => {
    const client = { request: () => Promise.reject(new Error("forbidden")) };
    await expect(publish(client as never, "news", 1)).rejects.toThrow("forbidden");
  });
});
