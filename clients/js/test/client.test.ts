// The same tests run against the sources and against the minified default
// entry as `npm run build` makes it (private and session-only members
// mangled, scripts/bundle.mjs): the public API must come through unchanged.
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import * as source from "../src/index.js";
import type { ChannelItem } from "../src/index.js";
import { fixed, grpc, serverPaced } from "../src/policies.js";
// @ts-expect-error plain JS helper shared with the build script
import { bundle } from "../scripts/bundle.mjs";

const minifiedFile = join(tmpdir(), `belay-client-test-${process.pid}.mjs`);
writeFileSync(minifiedFile, (await bundle()) as Uint8Array);
const minified = (await import(pathToFileURL(minifiedFile).href)) as typeof source;
afterAll(() => rmSync(minifiedFile, { force: true }));

/** A scriptable stand-in for the browser's WebSocket. */
class FakeSocket {
  static all: FakeSocket[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((e: { data: unknown }) => void) | null = null;
  onclose: ((e: { code: number; reason: string }) => void) | null = null;
  onerror: (() => void) | null = null;
  sent: any[] = [];
  closedWith: [number?, string?] | undefined;
  constructor(readonly url: string) {
    if (!url.startsWith("ws")) throw new SyntaxError("bad url");
    FakeSocket.all.push(this);
  }
  send(text: string) {
    this.sent.push(JSON.parse(text));
  }
  close(code?: number, reason?: string) {
    if (code !== undefined && code !== 1000 && (code < 3000 || code > 4999)) throw new Error("InvalidAccessError");
    this.closedWith = [code, reason];
  }
  open() {
    this.onopen?.();
  }
  recv(msg: object) {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
  drop(code = 1006, reason = "") {
    this.onclose?.({ code, reason });
  }
  welcome() {
    this.open();
    this.recv({ type: "welcome", session: "s-1", protocol: 1 });
  }
}

let now = 0;
const network = new EventTarget();

for (const [label, entry] of [["src", source], ["dist, minified", minified]] as const) describe(`BelayClient (${label})`, () => {
  const { BelayClient, ConnectionClosedError, NotReadyError, ServerError, TimeoutError } = entry;
  function client(opts = {}) {
    return new BelayClient("ws://x/ws", {
      WebSocket: FakeSocket as unknown as typeof WebSocket,
      now: () => now,
      network,
      seed: 7,
      backoff: fixed(1000),
      ...opts,
    });
  }
  const advance = async (ms: number) => {
    now += ms;
    await vi.advanceTimersByTimeAsync(ms);
  };

  beforeEach(() => {
    vi.useFakeTimers();
    FakeSocket.all = [];
    now = 0;
  });
  afterEach(() => vi.useRealTimers());

  it("connects, reports status, and settles requests with typed errors", async () => {
    const c = client();
    const seen: boolean[] = [];
    c.onStatus((s) => seen.push(s.ready));
    await expect(c.request("echo", 1)).rejects.toBeInstanceOf(NotReadyError);
    const ws = FakeSocket.all[0]!;
    ws.welcome();
    expect(ws.sent[0]).toEqual({ type: "connect", protocol: 1 });
    expect(c.status).toMatchObject({ state: "open", transport: true, protocol: true, service: true, ready: true });
    expect(seen.at(-1)).toBe(true);

    const ok = c.request("echo", { a: 1 }, { idempotencyKey: "k" });
    expect(ws.sent.at(-1)).toMatchObject({ type: "request", id: 1, method: "echo", idem: "k" });
    ws.recv({ type: "response", id: 1, result: { a: 1 } });
    await expect(ok).resolves.toEqual({ a: 1 });

    const bad = c.request("x");
    ws.recv({ type: "response", id: 2, error: { code: "unknown_method", message: "no" } });
    await expect(bad).rejects.toMatchObject({ name: "ServerError", code: "unknown_method" });
    await expect(bad).rejects.toBeInstanceOf(ServerError);

    const slow = c.request("slow", 1, { timeout: 500 });
    const slowDone = expect(slow).rejects.toBeInstanceOf(TimeoutError);
    await advance(500);
    await slowDone;

    const lost = c.request("echo");
    ws.drop();
    await expect(lost).rejects.toBeInstanceOf(ConnectionClosedError);
    expect(c.status.ready).toBe(false);
    c.close();
  });

  it("a $call waits out a sleeping host's wake bound by default; other requests keep requestTimeoutMs", async () => {
    const c = client();
    const ws = FakeSocket.all[0]!;
    ws.welcome();
    const call = c.request("$call", { host: "pc-1", method: "files.list" });
    expect(ws.sent.at(-1)).toMatchObject({ method: "$call", timeout_ms: 30_000 });
    const echo = c.request("echo", 1);
    expect(ws.sent.at(-1)).toMatchObject({ method: "echo", timeout_ms: 10_000 });
    const echoDone = expect(echo).rejects.toBeInstanceOf(TimeoutError);
    // The relay wakes the host within 20 s; the call is answered at 25 s.
    await advance(25_000);
    await echoDone;
    expect(c.status.ready).toBe(true);
    ws.recv({ type: "response", id: 1, result: { files: [] } });
    await expect(call).resolves.toEqual({ files: [] });
    // An explicit timeout is the call's own.
    const quick = c.request("$call", { host: "pc-1", method: "m" }, { timeout: 2000 });
    expect(ws.sent.at(-1)).toMatchObject({ method: "$call", timeout_ms: 2000 });
    const quickDone = expect(quick).rejects.toBeInstanceOf(TimeoutError);
    await advance(2000);
    await quickDone;
    c.close();
  });

  it("never lets a dead socket's late close touch the new connection", async () => {
    const c = client({ probeIntervalMs: 1000, probeTimeoutMs: 1000 });
    const first = FakeSocket.all[0]!;
    first.welcome();
    await advance(1000); // probe
    expect(first.sent.at(-1)).toEqual({ type: "ping" });
    await advance(1000); // unanswered: abandoned at once with 4000
    expect(first.closedWith).toEqual([4000, "heartbeat timeout"]);
    await advance(1000); // fixed backoff
    const second = FakeSocket.all[1]!;
    second.welcome();
    expect(c.status.ready).toBe(true);
    first.drop(1006); // the browser's close event, a minute late
    expect(c.status.ready).toBe(true);
    expect(FakeSocket.all).toHaveLength(2);
    c.close();
  });

  it("reconnectNow cancels the backoff wait without a second connection", async () => {
    const c = client({ backoff: fixed(30000) });
    FakeSocket.all[0]!.drop();
    expect(c.status.state).toBe("waiting");
    c.reconnectNow();
    c.reconnectNow();
    expect(FakeSocket.all).toHaveLength(2);
    c.close();
  });

  it("delivers publications in order, repairs gaps, and announces a resync", async () => {
    const c = client();
    const items: ChannelItem[] = [];
    const sub = c.subscribe("feed");
    sub.on((i) => items.push(i));
    const ws = FakeSocket.all[0]!;
    ws.welcome();
    expect(c.status.service).toBe(false);
    expect(ws.sent.at(-1)).toEqual({ type: "subscribe", channel: "feed" });
    ws.recv({ type: "subscribed", channel: "feed", epoch: "e", offset: 0 });
    expect(c.status.ready).toBe(true);
    ws.recv({ type: "publication", channel: "feed", epoch: "e", offset: 1, data: "a" });
    ws.recv({ type: "publication", channel: "feed", epoch: "e", offset: 1, data: "a" });
    ws.recv({ type: "publication", channel: "feed", epoch: "e", offset: 3, data: "c" });
    expect(ws.sent.at(-1)).toEqual({ type: "subscribe", channel: "feed", since: { epoch: "e", offset: 1 } });
    ws.recv({ type: "subscribed", channel: "feed", epoch: "e2", offset: 10, recovered: false });
    ws.recv({ type: "publication", channel: "feed", epoch: "e2", offset: 11, data: "k" });
    expect(items.map((i) => (i.type === "publication" ? i.data : i.type))).toEqual(["subscribed", "a", "subscribed", "resync", "k"]);

    const iter = sub[Symbol.asyncIterator]();
    ws.recv({ type: "publication", channel: "feed", epoch: "e2", offset: 12, data: "l" });
    await expect(iter.next()).resolves.toEqual({ done: false, value: { type: "publication", epoch: "e2", offset: 12, data: "l" } });
    sub.unsubscribe();
    expect(ws.sent.at(-1)).toEqual({ type: "unsubscribe", channel: "feed" });
    await expect(iter.next()).resolves.toMatchObject({ done: true });
    c.close();
  });

  it("offline cancels the wait; online dials after a short random delay", async () => {
    const c = client({ backoff: fixed(30000) });
    FakeSocket.all[0]!.drop();
    network.dispatchEvent(new Event("offline"));
    expect(c.status.state).toBe("offline");
    network.dispatchEvent(new Event("online"));
    expect(c.status.state).toBe("waiting");
    await advance(1000);
    expect(FakeSocket.all).toHaveLength(2);
    c.close();
  });

  it("opt-in policies need @belay/client/policies; the defaults' kinds work as plain data", () => {
    const opts = { WebSocket: FakeSocket as unknown as typeof WebSocket, network: null, autoStart: false };
    expect(() => new BelayClient("ws://x/ws", { ...opts, backoff: { kind: "fixed", delay_ms: 1000 } })).toThrow(/@belay\/client\/policies/);
    expect(() => new BelayClient("ws://x/ws", { ...opts, backoff: { kind: "server_paced", first_window_ms: 0, fallback: { kind: "grpc", initial_ms: 1, multiplier: 2, jitter: 0, max_ms: 9 } } })).toThrow(TypeError);
    expect(() => new BelayClient("ws://x/ws", { ...opts, backoff: serverPaced(0, grpc(1, 2, 0, 9)) })).not.toThrow();
    expect(() => new BelayClient("ws://x/ws", { ...opts, resubscribeBackoff: { kind: "equal_jitter", base_ms: 1, cap_ms: 2 } })).not.toThrow();
    expect(JSON.stringify(fixed(1000))).toBe('{"kind":"fixed","delay_ms":1000}');
  });

  it("an unusable URL throws InvalidUrlError from the constructor; close() leaves no timer behind", async () => {
    for (const url of ["http:// nope", "not a url", "ftp://x/ws"]) {
      FakeSocket.all = [];
      expect(() => new BelayClient(url, { WebSocket: FakeSocket as unknown as typeof WebSocket, network: null })).toThrow(entry.InvalidUrlError);
      expect(FakeSocket.all).toEqual([]);
    }
    for (const url of ["wss://x/ws", "https://x/ws"]) {
      const ok = new BelayClient(url, { WebSocket: FakeSocket as unknown as typeof WebSocket, network: null, autoStart: false });
      expect(ok.status.state).toBe("idle");
    }
    const c = client();
    FakeSocket.all.at(-1)!.welcome();
    const pending = c.request("echo");
    c.close();
    await expect(pending).rejects.toBeInstanceOf(ConnectionClosedError);
    expect(FakeSocket.all.at(-1)!.closedWith).toEqual([1000, "client stop"]);
    expect(vi.getTimerCount()).toBe(0);
    await expect(c.request("echo")).rejects.toMatchObject({ stopped: true });
  });

  it("abort signals reject the request and ignore the late response", async () => {
    const c = client();
    const ws = FakeSocket.all[0]!;
    ws.welcome();
    const ctl = new AbortController();
    const p = c.request("echo", 1, { signal: ctl.signal });
    ctl.abort(new Error("user"));
    await expect(p).rejects.toThrow("user");
    ws.recv({ type: "response", id: 1, result: 1 });
    c.close();
  });

  it("probes at once when the page becomes visible, is restored, resumes or comes online", async () => {
    const page = Object.assign(new EventTarget(), { visibilityState: "visible" });
    const c = client({ page, probeTimeoutMs: 10_000 });
    const ws = FakeSocket.all[0]!;
    ws.welcome();
    const pings = () => ws.sent.filter((m) => m.type === "ping").length;
    page.visibilityState = "hidden";
    page.dispatchEvent(new Event("visibilitychange"));
    expect(pings()).toBe(0); // becoming hidden proves nothing either way
    page.visibilityState = "visible";
    page.dispatchEvent(new Event("visibilitychange"));
    expect(pings()).toBe(1);
    page.dispatchEvent(new Event("resume")); // a check is pending: no second ping
    expect(pings()).toBe(1);
    await advance(1000);
    ws.recv({ type: "pong" });
    network.dispatchEvent(Object.assign(new Event("pageshow"), { persisted: false }));
    expect(pings()).toBe(1); // an ordinary load is not a restore
    network.dispatchEvent(Object.assign(new Event("pageshow"), { persisted: true }));
    expect(pings()).toBe(2);
    // Silence: dropped after min(probe timeout, 2 s), not after the 10 s probe timeout.
    await advance(1999);
    expect(c.status.ready).toBe(true);
    await advance(1);
    expect(c.status).toMatchObject({ ready: false, state: "waiting" });
    expect(ws.closedWith).toEqual([4000, "heartbeat timeout"]);
    c.close();
    page.dispatchEvent(new Event("visibilitychange")); // listeners are gone
    expect(FakeSocket.all).toHaveLength(1);
  });

  // The sources carry the token lifecycle (the build leaves it out of this entry).
  it.runIf(label !== "src")("refuses a tokenProvider, which needs @belay/client/full, with a TypeError", () => {
    expect(() => client({ tokenProvider: async () => "t" })).toThrow(/@belay\/client\/full/);
  });

  it("fires connected, servererror, disconnected and halted with their details", () => {
    const c = client({ maxAttempts: 0 });
    const got: [string, unknown][] = [];
    for (const t of ["connected", "servererror", "disconnected", "halted"]) c.addEventListener(t, (e) => got.push([t, (e as CustomEvent).detail]));
    const ws = FakeSocket.all[0]!;
    ws.welcome();
    ws.recv({ type: "error", code: "rate_limited", message: "slow down", retry_after_ms: 500 });
    ws.drop(1011, "bye");
    expect(got).toEqual([
      ["connected", "s-1"],
      ["servererror", { code: "rate_limited", message: "slow down", retry_after_ms: 500 }],
      ["disconnected", { reason: { kind: "transport_closed", close: { code: 1011, reason: "bye" } }, retry: { kind: "no" }, established: true }],
      ["halted", { kind: "exhausted", attempts: 0 }],
    ]);
    expect(c.status.state).toBe("halted");
    c.close();
  });

  it("an idle connection probes on its beat, set on its slots; a silent death is noticed just before its slot", async () => {
    // Slots at 7 000 + k x 20 000 after the welcome (at 0); one beat per period (the interval is
    // the period), probe timeout + 250 ms = 10 250 before each slot: 16 750, 36 750, ...
    const c = client({ backoff: serverPaced(1000, fixed(5000)), probeIntervalMs: 20_000, probeTimeoutMs: 10_000 });
    const ws = FakeSocket.all[0]!;
    ws.open();
    ws.recv({ type: "welcome", session: "s-1", protocol: 1, pacing: { period_ms: 20_000, phase_ms: 7_000, origin_ms: 3_000 } });
    const pings = () => ws.sent.filter((m) => m.type === "ping").length;
    const lost: unknown[] = [];
    c.addEventListener("disconnected", (e) => lost.push((e as CustomEvent).detail));
    await advance(16_749);
    expect(pings()).toBe(0);
    await advance(1);
    expect(pings()).toBe(1); // on the beat, not 20 s after the welcome
    ws.recv({ type: "pong" }); // still idle: the next probe on the next beat
    await advance(19_999);
    expect(pings()).toBe(1);
    await advance(1);
    expect(pings()).toBe(2);
    await advance(10_000); // unanswered: dead at 46 750, a silent loss 250 ms before the slot
    expect(lost).toEqual([{ reason: { kind: "heartbeat_timeout", cause: "probe_unanswered" }, retry: { kind: "after", delay_ms: 250 }, established: true }]);
    await advance(249);
    expect(FakeSocket.all).toHaveLength(1);
    await advance(1); // the slot
    expect(FakeSocket.all).toHaveLength(2);
    c.close();
  });
});
