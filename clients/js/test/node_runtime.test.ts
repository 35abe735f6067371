// The client in Node, against the sources and the minified default entry:
// with an EventEmitter WebSocket such as `ws` (an `error` nobody listens to
// is thrown, and would end the process), a failed dial is a transport
// failure and nothing else; a dial that reports `error` and never `close`
// (Node 20's own WebSocket) fails at once; without `window`, `document` or
// `navigator` the client runs with its defaults. And the SSE fallback's
// WebSocket dials and probes under the same two behaviours.
// (The same client against a real server in Node, Bun and with `ws`:
// scripts/package-check/runtime.mjs.)
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import * as source from "../src/index.js";
import type { DisconnectInfo } from "../src/index.js";
import { sseFallback } from "../src/fallback.js";
import { fixed } from "../src/policies.js";
// @ts-expect-error plain JS helper shared with the build script
import { bundle } from "../scripts/bundle.mjs";
import { FakeSse, until } from "./fake_sse.js";
import { NodeStyleWebSocket } from "./node_websocket.js";

const minifiedFile = join(tmpdir(), `belay-node-runtime-test-${process.pid}.mjs`);
writeFileSync(minifiedFile, (await bundle()) as Uint8Array);
const minified = (await import(pathToFileURL(minifiedFile).href)) as typeof source;
afterAll(() => rmSync(minifiedFile, { force: true }));

let now = 0;

for (const [label, entry] of [["src", source], ["dist, minified", minified]] as const) describe(`BelayClient with an EventEmitter WebSocket (${label})`, () => {
  const { BelayClient } = entry;
  const client = (opts = {}) =>
    new BelayClient("ws://127.0.0.1:1/ws", {
      WebSocket: NodeStyleWebSocket as unknown as typeof WebSocket,
      now: () => now,
      network: null,
      page: null,
      seed: 7,
      backoff: fixed(1000),
      ...opts,
    });
  const advance = async (ms: number) => {
    now += ms;
    await vi.advanceTimersByTimeAsync(ms);
  };
  const disconnects = (c: InstanceType<typeof BelayClient>) => {
    const seen: DisconnectInfo[] = [];
    c.addEventListener("disconnected", (e) => seen.push((e as CustomEvent<DisconnectInfo>).detail));
    return seen;
  };
  const ready = (ws: NodeStyleWebSocket) => {
    ws.accept();
    ws.recv({ type: "welcome", session: "s-1", protocol: 1 });
  };

  beforeEach(() => {
    vi.useFakeTimers();
    NodeStyleWebSocket.all = [];
    now = 0;
  });
  afterEach(() => vi.useRealTimers());

  it("a refused dial is a transport failure, then a redial", async () => {
    const c = client();
    const seen = disconnects(c);
    const first = NodeStyleWebSocket.all[0]!;
    expect(() => first.refuse()).not.toThrow();
    // One failure: the `close` after the `error` is from a stale transport.
    expect(seen).toEqual([{ reason: { kind: "transport_failed", failure: { kind: "network", detail: "error before open" } }, retry: { kind: "after", delay_ms: 1000 }, established: false }]);
    expect(c.status.state).toBe("waiting");
    await advance(1000);
    expect(NodeStyleWebSocket.all).toHaveLength(2);
    ready(NodeStyleWebSocket.all[1]!);
    expect(c.status.ready).toBe(true);
    c.close();
  });

  it("a failed dial that fires `error` and never `close` (Node 20's own WebSocket) fails at once", async () => {
    const c = client();
    const seen = disconnects(c);
    const first = NodeStyleWebSocket.all[0]!;
    first.emit("error", { type: "error", message: "Received network error or non-101 status code." });
    expect(seen.map((d) => [d.reason.kind, d.established])).toEqual([["transport_failed", false]]);
    await advance(1000);
    expect(NodeStyleWebSocket.all).toHaveLength(2);
    // A `close` after all, late: stale, nothing happens.
    first.emit("close", { type: "close", code: 1006, reason: "" });
    expect(seen).toHaveLength(1);
    ready(NodeStyleWebSocket.all[1]!);
    expect(c.status.ready).toBe(true);
    c.close();
  });

  it("a dial given up at the connect timeout (closed while connecting) ends quietly", async () => {
    const c = client({ connectTimeoutMs: 1000 });
    const seen = disconnects(c);
    await advance(1000);
    const first = NodeStyleWebSocket.all[0]!;
    expect(first.closes).toEqual([[4008, "connect timeout"]]);
    expect(seen.map((d) => d.reason.kind)).toEqual(["connect_timeout"]);
    // ws aborts the handshake: `error`, then `close`, on the next tick.
    expect(() => first.flush()).not.toThrow();
    expect(first.readyState).toBe(3);
    await advance(1000);
    expect(NodeStyleWebSocket.all).toHaveLength(2);
    c.close();
  });

  it("an open connection reset by the peer is a closed transport", async () => {
    const c = client();
    const seen = disconnects(c);
    ready(NodeStyleWebSocket.all[0]!);
    expect(() => NodeStyleWebSocket.all[0]!.reset()).not.toThrow();
    // 1006: no close frame, so no code.
    expect(seen).toMatchObject([{ reason: { kind: "transport_closed", close: {} }, established: true }]);
    expect((seen[0]!.reason as { close: { code?: number | null } }).close.code ?? null).toBeNull();
    c.close();
  });

  it("a socket the client closed may still report an error", async () => {
    const c = client();
    const ws = NodeStyleWebSocket.all[0]!;
    ready(ws);
    c.close();
    expect(ws.closes).toEqual([[1000, "client stop"]]);
    expect(ws.readyState).toBe(2);
    expect(() => ws.reset()).not.toThrow();
  });

  it("close codes browsers refuse reach ws as they are (1002 on a malformed frame)", async () => {
    const c = client();
    const seen = disconnects(c);
    const ws = NodeStyleWebSocket.all[0]!;
    ready(ws);
    ws.emit("message", { data: "{not json" });
    expect(ws.closes).toEqual([[1002, "malformed frame"]]);
    expect(ws.readyState).toBe(2);
    expect(seen.map((d) => d.reason.kind)).toEqual(["protocol_violation"]);
    expect(() => ws.flush()).not.toThrow();
    c.close();
  });

  it("runs with its defaults where there is no window, document or navigator", async () => {
    // Preconditions: this is Node, not a browser.
    expect(typeof (globalThis as Record<string, unknown>)["addEventListener"]).toBe("undefined");
    expect(typeof (globalThis as Record<string, unknown>)["document"]).toBe("undefined");
    const c = new BelayClient("ws://127.0.0.1:1/ws", { WebSocket: NodeStyleWebSocket as unknown as typeof WebSocket });
    const seen = disconnects(c);
    expect(c.status.state).toBe("connecting");
    expect(() => NodeStyleWebSocket.all[0]!.refuse()).not.toThrow();
    expect(seen.map((d) => d.reason.kind)).toEqual(["transport_failed"]);
    c.checkLiveness();
    c.close();
    expect(c.status.state).toBe("stopped");
  });

  it("with no WebSocket at all (Node 20 without ws or the flag), halts at once, without throwing", async () => {
    expect(typeof (globalThis as Record<string, unknown>)["WebSocket"]).toBe("undefined");
    const c = new BelayClient("ws://127.0.0.1:1/ws", { now: () => now, network: null, page: null });
    expect(c.status.state).toBe("halted");
    await advance(60_000);
    expect(c.status.state).toBe("halted");
    c.close();
  });
});

describe("@belay/client/fallback with an EventEmitter WebSocket", () => {
  beforeEach(() => {
    // Timers are the test's; setImmediate stays real for `until`.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    NodeStyleWebSocket.all = [];
    now = 0;
  });
  afterEach(() => vi.useRealTimers());

  it("a refused WebSocket probe, while the session runs on SSE, is a failed probe", async () => {
    const http = new FakeSse();
    const fallback = sseFallback({ WebSocket: NodeStyleWebSocket as unknown as typeof WebSocket, fetch: http.fetch, now: () => now, retryWebSocketEveryMs: 1000 });
    const c = new source.BelayClient("ws://h/ws", { WebSocket: fallback.WebSocket, now: () => now, network: null, page: null, seed: 7, backoff: fixed(100) });
    expect(() => NodeStyleWebSocket.all[0]!.refuse()).not.toThrow();
    now += 100;
    await vi.advanceTimersByTimeAsync(100);
    await until(() => http.streams === 1, "POST /sse");
    http.push('event: open\ndata: {"stream":"n1.AAAAAAAAAAAAAAAAAAAAAA"}\n\n');
    http.push('data: {"type":"welcome","session":"s-1","protocol":1}\n\n');
    await until(() => c.status.ready, "ready over SSE");
    expect(fallback.kind).toBe("sse");
    // The probe, a second later, is refused: no crash, the session stays on SSE.
    now += 1000;
    await vi.advanceTimersByTimeAsync(1000);
    expect(NodeStyleWebSocket.all).toHaveLength(2);
    expect(() => NodeStyleWebSocket.all[1]!.refuse()).not.toThrow();
    expect(c.status.ready).toBe(true);
    expect(fallback.kind).toBe("sse");
    c.close();
  });
});

describe("@belay/client/fallback: a failed WebSocket dial counts once, whichever events report it", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    NodeStyleWebSocket.all = [];
    now = 0;
  });
  afterEach(() => vi.useRealTimers());

  const start = () => {
    const http = new FakeSse();
    const fallback = sseFallback({ WebSocket: NodeStyleWebSocket as unknown as typeof WebSocket, fetch: http.fetch, now: () => now, afterFailures: 2 });
    const c = new source.BelayClient("ws://h/ws", { WebSocket: fallback.WebSocket, now: () => now, network: null, page: null, seed: 7, backoff: fixed(100) });
    return { http, c };
  };
  const redial = async () => {
    now += 100;
    await vi.advanceTimersByTimeAsync(100);
  };

  it("`error` then `close` (browsers, ws): one failure", async () => {
    const { http, c } = start();
    NodeStyleWebSocket.all[0]!.refuse();
    await redial();
    // afterFailures: 2, so one failure: a WebSocket again.
    expect(NodeStyleWebSocket.all).toHaveLength(2);
    expect(http.streams).toBe(0);
    NodeStyleWebSocket.all[1]!.refuse();
    await redial();
    await until(() => http.streams === 1, "POST /sse after two failures");
    expect(NodeStyleWebSocket.all).toHaveLength(2);
    c.close();
  });

  it("`error` alone (Node 20's own WebSocket): a failure too", async () => {
    const { http, c } = start();
    for (let i = 0; i < 2; i++) {
      NodeStyleWebSocket.all[i]!.emit("error", { type: "error", message: "Received network error or non-101 status code." });
      await redial();
    }
    await until(() => http.streams === 1, "POST /sse after two failures");
    expect(NodeStyleWebSocket.all).toHaveLength(2);
    c.close();
  });
});
