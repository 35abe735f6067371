// The browser's switch back from the SSE fallback to WebSocket, through the
// client (spec/PROTOCOL.md §1.7): once a probe opens, the fallback fires
// `belay:replace` on the stream and the session moves at its next quiet
// moment. Requests keep being taken and sent on the stream meanwhile; only
// past `switchWithinMs` are new ones refused (never sent) until the last
// answer is in.
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { NotReadyError } from "../src/errors.js";
import { sseFallback } from "../src/fallback.js";
import { BelayClient } from "../src/index.js";
import { fixed } from "../src/policies.js";
import { FakeSse, until } from "./fake_sse.js";
import { FakeWebSocket } from "./fake_websocket.js";

/** A FakeWebSocket with the listeners a real one has (the fallback listens for `open` and `close`). */
class ListenedWebSocket extends FakeWebSocket {
  private readonly _listeners = new Map<string, ((e: unknown) => void)[]>();
  addEventListener(type: string, f: (e: unknown) => void): void {
    this._listeners.set(type, [...(this._listeners.get(type) ?? []), f]);
  }
  private _fire(type: string, e: unknown): void {
    for (const f of this._listeners.get(type) ?? []) f(e);
  }
  override accept(protocol: string): void {
    super.accept(protocol);
    this._fire("open", { type: "open" });
  }
  override drop(code = 1006, reason = ""): void {
    super.drop(code, reason);
    this._fire("close", { type: "close", code, reason });
  }
}

let now = 0;
const advance = async (ms: number) => {
  now += ms;
  await vi.advanceTimersByTimeAsync(ms);
};

beforeEach(() => {
  // Timers are the test's; setImmediate stays real for `until`.
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
  FakeWebSocket.all = [];
  now = 0;
});
afterEach(() => {
  vi.useRealTimers();
});

/** A client whose WebSocket dial was blocked, ready over SSE; probes every second. */
async function onTheStream(switchWithinMs?: number) {
  const http = new FakeSse();
  const fallback = sseFallback({
    WebSocket: ListenedWebSocket as unknown as typeof WebSocket,
    fetch: http.fetch,
    now: () => now,
    retryWebSocketEveryMs: 1000,
    ...(switchWithinMs === undefined ? {} : { switchWithinMs }),
  });
  const client = new BelayClient("ws://h/ws", { WebSocket: fallback.WebSocket, now: () => now, network: null, page: null, seed: 7, backoff: fixed(100) });
  FakeWebSocket.all[0]!.drop(1006);
  await advance(100);
  await until(() => http.streams === 1, "POST /sse");
  http.push('event: open\ndata: {"stream":"n1.AAAAAAAAAAAAAAAAAAAAAA"}\n\n');
  await until(() => http.sends.length === 1, "the connect");
  http.push('data: {"type":"welcome","session":"s-1","protocol":1}\n\n');
  await until(() => client.status.ready, "ready over SSE");
  expect(fallback.kind).toBe("sse");
  return { http, fallback, client };
}

/** The probe a second later opens. */
async function probeOpens(): Promise<void> {
  const before = FakeWebSocket.all.length;
  await advance(1000);
  expect(FakeWebSocket.all).toHaveLength(before + 1);
  const probe = FakeWebSocket.all[before]!;
  probe.accept("");
  expect(probe.closes).toEqual([[1000, "probe"]]);
}

const requestSent = (http: FakeSse, id: number) => http.sends.some((s) => s.includes(`"type":"request","id":${id},`));

it("waits for the requests in flight, taking and sending new ones meanwhile, then moves at once", async () => {
  const { http, fallback, client } = await onTheStream();
  const a = client.request("a");
  await until(() => requestSent(http, 1), "request 1 sent");

  await probeOpens();
  // Not quiet: the stream stays; a new request is taken and sent on it.
  const b = client.request("b");
  await until(() => requestSent(http, 2), "request 2 sent on the stream");
  expect(client.status.ready).toBe(true);
  http.push('data: {"type":"response","id":1,"result":"A"}\n\n');
  await expect(a).resolves.toBe("A");
  expect(http.closes).toEqual([]);

  // The last answer: the quiet moment.
  http.push('data: {"type":"response","id":2,"result":"B"}\n\n');
  await expect(b).resolves.toBe("B");
  await until(() => http.closes.length === 1, "POST /sse/close");
  expect(JSON.parse(http.closes[0]!)).toEqual({ code: 1000, reason: "transport replaced" });
  await advance(0);
  await until(() => FakeWebSocket.all.length === 3, "the WebSocket dial");
  const back = FakeWebSocket.all[2]!;
  back.accept("");
  expect(JSON.parse(back.sent[0] as string)).toEqual({ type: "connect", protocol: 1, session: "s-1" });
  back.recvText('{"type":"welcome","session":"s-1","protocol":1}');
  expect(client.status.ready).toBe(true);
  expect(fallback.kind).toBe("websocket");
  client.close();
});

it("past switchWithinMs refuses new requests, never sending them, until the last answer is in", async () => {
  const { http, client } = await onTheStream(500);
  const slow = client.request("slow");
  await until(() => requestSent(http, 1), "request 1 sent");
  await probeOpens();
  const early = client.request("early");
  await until(() => requestSent(http, 2), "request 2 sent: before the bound");

  await advance(500);
  expect(client.status.ready).toBe(false);
  const sends = http.sends.length;
  await expect(client.request("late")).rejects.toBeInstanceOf(NotReadyError);
  expect(http.sends).toHaveLength(sends);
  expect(http.closes).toEqual([]);

  http.push('data: {"type":"response","id":2,"result":"E"}\n\n');
  await expect(early).resolves.toBe("E");
  expect(http.closes).toEqual([]);
  http.push('data: {"type":"response","id":1,"result":"S"}\n\n');
  await expect(slow).resolves.toBe("S");
  await until(() => http.closes.length === 1, "POST /sse/close");
  expect(JSON.parse(http.closes[0]!)).toEqual({ code: 1000, reason: "transport replaced" });
  await advance(0);
  await until(() => FakeWebSocket.all.length === 3, "the WebSocket dial");
  client.close();
});
