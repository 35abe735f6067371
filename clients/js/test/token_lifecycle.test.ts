// The token lifecycle as the application sees it (PROTOCOL.md §2.8): the
// client asks its tokenProvider before a dial when the server refused the
// token it had, a provider failure is retried and never strands the user,
// and only the provider's typed UnauthorizedError (or a refusal of a token
// it just gave) halts. The session vectors hold the rules; these tests hold
// the driver: the provider is called, its answer reaches the session.
// Run against the sources and against the minified `@belay/client/full`
// as `npm run build` makes it.
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import * as source from "../src/full.js";
import type { HaltReason } from "../src/full.js";
import { fixed } from "../src/policies.js";
// @ts-expect-error plain JS helper shared with the build script
import { bundle } from "../scripts/bundle.mjs";
import { FakeWebSocket } from "./fake_websocket.js";

const minifiedFile = join(tmpdir(), `belay-tokens-test-${process.pid}.mjs`);
writeFileSync(minifiedFile, (await bundle({ entry: "full" })) as Uint8Array);
const minified = (await import(pathToFileURL(minifiedFile).href)) as typeof source;
afterAll(() => rmSync(minifiedFile, { force: true }));

let now = 0;
/** The clock and the timers move together, 50 ms at a time. */
const advance = async (ms: number) => {
  do {
    const step = Math.min(50, ms);
    now += step;
    ms -= step;
    await vi.advanceTimersByTimeAsync(step);
  } while (ms > 0);
};
const sockets = () => FakeWebSocket.all;
const sent = (ws: FakeWebSocket) => ws.sent.map((f) => JSON.parse(f as string));

for (const [label, entry] of [["src", source], ["dist, minified", minified]] as const) describe(`token lifecycle (${label})`, () => {
  const { BelayClient, UnauthorizedError } = entry;
  function client(options: { token?: string; tokenProvider?: () => Promise<string>; subscriptionTokenProvider?: (channel: string) => Promise<string> }) {
    const c = new BelayClient("ws://x/ws", {
      ...options,
      WebSocket: FakeWebSocket as unknown as typeof WebSocket,
      now: () => now,
      network: null,
      page: null,
      seed: 7,
      backoff: fixed(1000),
    });
    const halts: HaltReason[] = [];
    c.addEventListener("halted", (e) => halts.push((e as CustomEvent<HaltReason>).detail));
    return { c, halts };
  }

  beforeEach(() => {
    vi.useFakeTimers();
    FakeWebSocket.all = [];
    now = 0;
  });
  afterEach(() => vi.useRealTimers());

  it("asks the provider when the server refuses an expired start token, and connects with its token", async () => {
    const provider = vi.fn(async () => "t-new");
    const { c, halts } = client({ token: "t-old", tokenProvider: provider });
    const first = sockets()[0]!;
    first.accept("");
    expect(sent(first)[0]).toMatchObject({ type: "connect", token: "t-old" });
    first.drop(4001, "token expired");
    await advance(0);
    expect(provider).toHaveBeenCalledTimes(1);
    expect(halts).toEqual([]);
    const second = sockets()[1]!;
    second.accept("");
    expect(sent(second)[0]).toMatchObject({ type: "connect", token: "t-new" });
    second.recvText(JSON.stringify({ type: "welcome", session: "s-1", protocol: 1, expires_in_ms: 60_000 }));
    expect(c.status.ready).toBe(true);
    c.close();
  });

  it("retries a provider that failed while offline, past a 4001 at the expiry, instead of halting", async () => {
    // The backend is unreachable until 10.5 s, then answers.
    const provider = vi.fn(async () => {
      if (now < 10_500) throw new TypeError("fetch failed");
      return "t-2";
    });
    const { c, halts } = client({ token: "t-1", tokenProvider: provider });
    const first = sockets()[0]!;
    first.accept("");
    first.recvText(JSON.stringify({ type: "welcome", session: "s-1", protocol: 1, expires_in_ms: 10_000 }));
    await advance(9_200); // the in-band ask (at 8084 ms) fails; it is asked again 1 s later, and fails
    expect(provider).toHaveBeenCalledTimes(2);
    await advance(800);
    first.drop(4001, "credentials expired");
    await advance(0); // the provider is asked at once, and fails again: the attempt waits out the backoff
    expect(provider).toHaveBeenCalledTimes(3);
    expect(halts).toEqual([]);
    expect(c.status.state).toBe("waiting");
    await advance(1_000); // the backoff's retry gets a token
    expect(halts).toEqual([]);
    const second = sockets()[1]!;
    expect(second).toBeDefined();
    second.accept("");
    expect(sent(second)[0]).toMatchObject({ type: "connect", token: "t-2", session: "s-1" });
    second.recvText(JSON.stringify({ type: "welcome", session: "s-1", protocol: 1, expires_in_ms: 10_000 }));
    expect(c.status.ready).toBe(true);
    c.close();
  });

  it("halts auth_failed when the provider throws UnauthorizedError, and only then", async () => {
    const provider = vi.fn(async (): Promise<string> => {
      throw new UnauthorizedError("signed out");
    });
    const { c, halts } = client({ tokenProvider: provider });
    await advance(0);
    expect(provider).toHaveBeenCalledTimes(1);
    expect(sockets()).toHaveLength(0);
    expect(halts).toEqual([{ kind: "auth_failed" }]);
    expect(c.status.state).toBe("halted");
    c.close();
  });

  it("refreshes its token in-band before the credentials expire, without reconnecting", async () => {
    const tokens = ["t-2", "t-3"];
    const { c } = client({ token: "t-1", tokenProvider: async () => tokens.shift()! });
    const ws = sockets()[0]!;
    ws.accept("");
    ws.recvText(JSON.stringify({ type: "welcome", session: "s-1", protocol: 1, expires_in_ms: 10_000 }));
    await advance(7_400);
    expect(sent(ws).filter((m) => m.type === "refresh")).toEqual([]);
    // The ask falls in [7 500, 9 000) ms: by then the provider's token is sent.
    await advance(1_700);
    expect(sent(ws).filter((m) => m.type === "refresh")).toEqual([{ type: "refresh", token: "t-2" }]);
    ws.recvText(JSON.stringify({ type: "refreshed", expires_in_ms: 10_000 }));
    await advance(9_100);
    expect(sent(ws).filter((m) => m.type === "refresh").map((m) => m.token)).toEqual(["t-2", "t-3"]);
    expect(sockets()).toHaveLength(1);
    expect(c.status.ready).toBe(true);
    c.close();
  });

  it("refreshes a subscription token in-band when the server says it expires, without leaving the channel", async () => {
    const asked: string[] = [];
    const { c } = client({ token: "t-1", subscriptionTokenProvider: async (channel) => (asked.push(channel), "s-2") });
    const sub = c.subscribe("private:1", "s-1");
    const ws = sockets()[0]!;
    ws.accept("");
    ws.recvText(JSON.stringify({ type: "welcome", session: "s-1", protocol: 1 }));
    expect(sent(ws).at(-1)).toMatchObject({ type: "subscribe", channel: "private:1", token: "s-1" });
    ws.recvText(JSON.stringify({ type: "subscribed", channel: "private:1", epoch: "e1", offset: 0 }));
    ws.recvText(JSON.stringify({ type: "sub_expiring", channel: "private:1", expires_in_ms: 10_000 }));
    await advance(7_400);
    expect(asked).toEqual([]);
    await advance(1_700); // the ask falls in [7 500, 9 000) ms
    expect(asked).toEqual(["private:1"]);
    expect(sent(ws).filter((m) => m.type === "sub_refresh")).toEqual([{ type: "sub_refresh", channel: "private:1", token: "s-2" }]);
    expect(sent(ws).filter((m) => m.type === "unsubscribe")).toEqual([]);
    expect(sockets()).toHaveLength(1);
    sub.unsubscribe();
    c.close();
  });

  it("after a halt, a token the application sets is dialed with before the provider is asked again", async () => {
    const provider = vi.fn(async () => "t-fresh");
    const { c, halts } = client({ tokenProvider: provider });
    await advance(0);
    sockets()[0]!.accept("");
    sockets()[0]!.drop(4001, "bad signature"); // the provider's token, refused: halt
    expect(halts).toEqual([{ kind: "auth_failed" }]);
    c.setToken("t-app");
    c.start();
    await advance(0);
    expect(provider).toHaveBeenCalledTimes(1);
    sockets()[1]!.accept("");
    expect(sent(sockets()[1]!)[0]).toMatchObject({ type: "connect", token: "t-app" });
    c.close();
  });

  it("asks before the first dial when there is no token", async () => {
    const provider = vi.fn(async () => "t-1");
    const { c } = client({ tokenProvider: provider });
    expect(sockets()).toHaveLength(0);
    expect(c.status.state).toBe("connecting");
    await advance(0);
    expect(provider).toHaveBeenCalledTimes(1);
    sockets()[0]!.accept("");
    expect(sent(sockets()[0]!)[0]).toMatchObject({ type: "connect", token: "t-1" });
    c.close();
  });
});
