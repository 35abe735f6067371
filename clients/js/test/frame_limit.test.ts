/**
 * MAX_FRAME_LEN (1 MiB of UTF-8) in both directions (PROTOCOL.md §1.4, §4.3,
 * §8.1): a request over it is refused unsent with a typed error; a frame over
 * it from the server closes the transport with 1009.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BelayClient, BelayError, TooLargeError } from "../src/index.js";
import { fixed } from "../src/policies.js";
import { makeConfig } from "../src/core/config.js";
import { MAX_FRAME_LEN } from "../src/core/messages.js";
import { Session, type Output } from "../src/core/session.js";

const drain = (s: Session): Output[] => {
  const out: Output[] = [];
  for (let o = s.pollOutput(); o; o = s.pollOutput()) out.push(o);
  return out;
};

function open(): Session {
  const s = new Session(makeConfig({ backoff: fixed(1000) }), 0, 1);
  s.start(0);
  s.handleInput(0, { kind: "opened", id: 1 });
  s.handleInput(0, { kind: "frame", id: 1, text: '{"type":"welcome","session":"s","protocol":1}' });
  drain(s);
  return s;
}

/** {"type":"request","id":N,"method":"big","params":"…","timeout_ms":10000}: 71 bytes around the text for a one-digit id. */
const AROUND = 71;
const big = (text: string) => ({ method: "big", params: text });

describe("outbound: the request frame limit", () => {
  it("a request whose frame is over 1 MiB is refused with its length and the limit, and nothing is sent", () => {
    const s = open();
    const before = s.pollTimeout();
    expect(s.request(100, big("x".repeat(MAX_FRAME_LEN - AROUND + 1)))).toEqual({ error: "too_large", len: MAX_FRAME_LEN + 1, max: MAX_FRAME_LEN });
    expect(drain(s)).toEqual([]);
    expect(s.pollTimeout()).toBe(before);
    expect(s.state()).toBe("open");
  });

  it("a frame of exactly 1 MiB is sent", () => {
    const s = open();
    expect(s.request(100, big("x".repeat(MAX_FRAME_LEN - AROUND)))).toBe(1);
    const [sent] = drain(s);
    expect(sent?.output === "transmit" && new TextEncoder().encode(JSON.stringify(sent.message)).length).toBe(MAX_FRAME_LEN);
  });

  it("a refused request takes no id", () => {
    const s = open();
    s.request(100, big("x".repeat(MAX_FRAME_LEN)));
    expect(s.request(200, { method: "small" })).toBe(1);
  });

  it("the limit counts UTF-8 bytes, not UTF-16 units", () => {
    const s = open();
    const n = Math.ceil((MAX_FRAME_LEN - AROUND + 1) / 2); // é is 2 bytes, 1 unit
    expect(s.request(100, big("é".repeat(n)))).toMatchObject({ error: "too_large", len: AROUND + 2 * n });
    expect(s.request(100, big("é".repeat(n - 1)))).toBe(1);
  });

  it("every field of the frame counts, not only params", () => {
    const s = open();
    const exact = "x".repeat(MAX_FRAME_LEN - AROUND);
    expect(s.request(100, { ...big(exact), idempotencyKey: "k" })).toMatchObject({ error: "too_large" });
    expect(s.request(100, { ...big(exact), timeoutMs: 100_000 })).toMatchObject({ error: "too_large" });
  });

  it("while the protocol is down, not_ready comes first", () => {
    const s = new Session(makeConfig(), 0, 1);
    expect(s.request(0, big("x".repeat(MAX_FRAME_LEN)))).toBe("not_ready");
  });
});

describe("inbound: a frame over the limit", () => {
  it("closes the transport with 1009 and reconnects like any protocol violation", () => {
    const s = open();
    s.handleInput(100, { kind: "frame", id: 1, text: JSON.stringify({ type: "ping", pad: "x".repeat(MAX_FRAME_LEN) }) });
    const out = drain(s);
    expect(out[0]).toEqual({ output: "close_transport", id: 1, code: 1009, reason: "frame too large" });
    expect(out.at(-1)).toMatchObject({ event: "disconnected", reason: { kind: "protocol_violation", error: { error: "too_large", max: MAX_FRAME_LEN } }, retry: { kind: "after", delay_ms: 1000 } });
  });
});

// ----- the browser client -----

class FakeSocket {
  static last: FakeSocket;
  sent: string[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((e: { data: string }) => void) | null = null;
  onclose: ((e: { code: number; reason: string }) => void) | null = null;
  onerror: (() => void) | null = null;
  constructor() {
    FakeSocket.last = this;
  }
  send(text: string) {
    this.sent.push(text);
  }
  close() {}
}

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe("BelayClient.request over the frame limit", () => {
  it("rejects at once with TooLargeError (len, max) and sends nothing; the connection carries on", async () => {
    const c = new BelayClient("ws://x/ws", { WebSocket: FakeSocket as unknown as typeof WebSocket, now: () => 0, network: null, page: null, seed: 1 });
    const ws = FakeSocket.last;
    ws.onopen!();
    ws.onmessage!({ data: '{"type":"welcome","session":"s","protocol":1}' });
    const sentBefore = ws.sent.length;
    const e = await c.request("big", "x".repeat(MAX_FRAME_LEN)).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(TooLargeError);
    expect(e).toBeInstanceOf(BelayError);
    expect(e).toMatchObject({ name: "TooLargeError", len: MAX_FRAME_LEN + AROUND, max: MAX_FRAME_LEN });
    expect(ws.sent.length).toBe(sentBefore);
    expect(c.status.ready).toBe(true);
    c.request("small").catch(() => {}); // settled by close()
    expect(JSON.parse(ws.sent.at(-1)!)).toMatchObject({ type: "request", id: 1, method: "small" });
    c.close();
  });
});
