// `@belay/client/binary` under the SSE fallback,
// `sseFallback({ WebSocket: binaryCodec().WebSocket })`: the WebSocket dials
// and probes offer the binary codec and speak it; the SSE stream stays JSON
// (spec/PROTOCOL.md §1.7, §1.8). One session: the WebSocket is blocked, the
// session runs on SSE in JSON, a probe gets through, and the session is back
// on a WebSocket in binary.
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { BINARY_PROTOCOL, JSON_PROTOCOL, binaryCodec } from "../src/binary.js";
import { decodeBinary } from "../src/binary/codec.js";
import { sseFallback } from "../src/fallback.js";
import { BelayClient } from "../src/index.js";
import { fixed } from "../src/policies.js";
import { FakeSse, until } from "./fake_sse.js";
import { FakeWebSocket } from "./fake_websocket.js";

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

it("WebSocket dials and probes are binary, the SSE stream JSON, and back on a WebSocket the session is binary again", async () => {
  const http = new FakeSse();
  const binary = binaryCodec({ WebSocket: FakeWebSocket as unknown as typeof WebSocket });
  const fallback = sseFallback({ WebSocket: binary.WebSocket, fetch: http.fetch, now: () => now, retryWebSocketEveryMs: 1000 });
  const client = new BelayClient("ws://h/ws", { WebSocket: fallback.WebSocket, now: () => now, network: null, page: null, seed: 7, backoff: fixed(100) });

  // 1. The WebSocket dial offers both codecs, and is blocked.
  const blocked = FakeWebSocket.all[0]!;
  expect(blocked.protocols).toEqual([BINARY_PROTOCOL, JSON_PROTOCOL]);
  blocked.drop(1006);

  // 2. The next dial is SSE, in JSON both ways.
  await advance(100);
  await until(() => http.streams === 1, "POST /sse");
  http.push('event: open\ndata: {"stream":"n1.AAAAAAAAAAAAAAAAAAAAAA"}\n\n');
  await until(() => http.sends.length === 1, "the connect");
  expect(http.sends).toEqual(['{"type":"connect","protocol":1}']);
  http.push('data: {"type":"welcome","session":"s-1","protocol":1}\n\n');
  await until(() => client.status.ready, "ready over SSE");
  expect(fallback.kind).toBe("sse");
  const onSse = client.request("echo", { via: "sse" });
  await until(() => http.sends.length === 2, "the request");
  expect(JSON.parse(http.sends[1]!)).toEqual({ type: "request", id: 1, method: "echo", params: { via: "sse" }, timeout_ms: 10_000 });
  http.push('data: {"type":"response","id":1,"result":{"via":"sse"}}\n\n');
  await expect(onSse).resolves.toEqual({ via: "sse" });
  expect(FakeWebSocket.all).toHaveLength(1);

  // 3. The probe, a second later, offers the binary codec too; it opens, and is closed at once.
  await advance(1000);
  expect(FakeWebSocket.all).toHaveLength(2);
  const probe = FakeWebSocket.all[1]!;
  expect(probe.protocols).toEqual([BINARY_PROTOCOL, JSON_PROTOCOL]);
  probe.accept(BINARY_PROTOCOL);
  expect(probe.closes).toEqual([[1000, "probe"]]);
  expect(probe.sent).toEqual([]);

  // 4. The session leaves the stream at once (nothing in flight) and dials a WebSocket: binary.
  await until(() => http.closes.length === 1, "POST /sse/close");
  expect(JSON.parse(http.closes[0]!)).toEqual({ code: 1000, reason: "transport replaced" });
  await advance(0);
  await until(() => FakeWebSocket.all.length === 3, "the WebSocket dial");
  const back = FakeWebSocket.all[2]!;
  back.accept(BINARY_PROTOCOL);
  expect(back.sent.map((f) => decodeBinary(f as Uint8Array, "client"))).toEqual([{ type: "connect", protocol: 1, session: "s-1" }]);
  back.recvBinary({ type: "welcome", session: "s-2", protocol: 1 });
  expect(client.status.ready).toBe(true);
  expect(fallback.kind).toBe("websocket");
  expect(binary.codec).toBe("binary");
  const onWs = client.request("echo", { via: "websocket" });
  expect(decodeBinary(back.last() as Uint8Array, "client")).toEqual({ type: "request", id: 2, method: "echo", params: { via: "websocket" }, timeout_ms: 10_000 });
  back.recvBinary({ type: "response", id: 2, result: { via: "websocket" } });
  await expect(onWs).resolves.toEqual({ via: "websocket" });
  // Nothing but the first two frames went over HTTP.
  expect(http.sends).toHaveLength(2);
  client.close();
});
