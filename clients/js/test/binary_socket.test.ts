// `@belay/client/binary` (src/binary.ts) under the real client, over a fake
// WebSocket: the negotiation (spec/PROTOCOL.md §1.8, "Negotiation"), every
// message of a session both ways in the codec the server's `101` named, and
// the JSON pass-through when it named JSON or nothing.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BINARY_PROTOCOL, JSON_PROTOCOL, binaryCodec } from "../src/binary.js";
import { decodeBinary, encodeBinary } from "../src/binary/codec.js";
import { BelayClient, ServerError, type ChannelItem } from "../src/index.js";
import { fixed } from "../src/policies.js";
import { FakeWebSocket } from "./fake_websocket.js";

let now = 0;

function setup() {
  const codec = binaryCodec({ WebSocket: FakeWebSocket as unknown as typeof WebSocket });
  const client = new BelayClient("ws://x/ws", { WebSocket: codec.WebSocket, now: () => now, network: null, page: null, seed: 7, backoff: fixed(1000) });
  return { codec, client, ws: () => FakeWebSocket.all[FakeWebSocket.all.length - 1]! };
}

/** What a socket sent, each frame decoded by its kind: `["binary" | "text", message]`. */
const sent = (ws: FakeWebSocket) =>
  ws.sent.map((f) => (typeof f === "string" ? ["text", JSON.parse(f)] : ["binary", decodeBinary(f, "client")]));

beforeEach(() => {
  vi.useFakeTimers();
  FakeWebSocket.all = [];
  now = 0;
});
afterEach(() => {
  vi.useRealTimers();
});

describe("the server's 101 names belay.bin.1", () => {
  it("offers belay.bin.1 then belay.json.1, with binaryType arraybuffer", () => {
    const { client, ws } = setup();
    expect(FakeWebSocket.all).toHaveLength(1);
    expect(ws().url).toBe("ws://x/ws");
    expect(ws().protocols).toEqual([BINARY_PROTOCOL, JSON_PROTOCOL]);
    expect(ws().binaryType).toBe("arraybuffer");
    client.close();
  });

  it("a whole session in binary frames: connect, welcome, subscribe, publications in order, a request and its responses", async () => {
    const { codec, client, ws } = setup();
    expect(codec.codec).toBeUndefined();
    const items: ChannelItem[] = [];
    client.subscribe("news").on((i) => items.push(i));
    ws().accept(BINARY_PROTOCOL);
    expect(codec.codec).toBe("binary");
    expect(sent(ws())).toEqual([["binary", { type: "connect", protocol: 1 }]]);

    ws().recvBinary({ type: "welcome", session: "s-1", protocol: 1, ping_interval_ms: 25_000, pacing: { period_ms: 20_000, phase_ms: 7350 } });
    expect(client.status.protocol).toBe(true);
    expect(sent(ws())[1]).toEqual(["binary", { type: "subscribe", channel: "news" }]);

    ws().recvBinary({ type: "subscribed", channel: "news", epoch: "e1", offset: 4, recovered: false });
    for (const offset of [5, 6, 7]) ws().recvBinary({ type: "publication", channel: "news", epoch: "e1", offset, data: { sym: "ABC", px: 100 + offset, tags: ["a", "é"] } });
    expect(client.status.ready).toBe(true);
    expect(items).toEqual([
      { type: "subscribed", recovered: false },
      ...[5, 6, 7].map((offset) => ({ type: "publication", epoch: "e1", offset, data: { sym: "ABC", px: 100 + offset, tags: ["a", "é"] } })),
    ]);

    const ok = client.request("echo", { k: 1 }, { timeout: 3000, idempotencyKey: "k-1" });
    const refused = client.request("nope");
    expect(sent(ws()).slice(2)).toEqual([
      ["binary", { type: "request", id: 1, method: "echo", params: { k: 1 }, idem: "k-1", timeout_ms: 3000 }],
      ["binary", { type: "request", id: 2, method: "nope", params: null, timeout_ms: 10_000 }],
    ]);
    ws().recvBinary({ type: "response", id: 2, error: { code: "not_found", message: "no method nope" } });
    ws().recvBinary({ type: "response", id: 1, result: { k: 1 } });
    await expect(ok).resolves.toEqual({ k: 1 });
    await expect(refused).rejects.toBeInstanceOf(ServerError);
    await expect(refused).rejects.toMatchObject({ code: "not_found" });

    // The server's ping, answered with a binary pong.
    ws().recvBinary({ type: "ping" });
    expect(sent(ws()).at(-1)).toEqual(["binary", { type: "pong" }]);
    expect(ws().sent.every((f) => f instanceof Uint8Array)).toBe(true);
    client.close();
    expect(ws().closes).toEqual([[1000, "client stop"]]);
  });

  it("forwards protocol, readyState, bufferedAmount and url, and the events to handlers and listeners", () => {
    const Socket = binaryCodec({ WebSocket: FakeWebSocket as unknown as typeof WebSocket }).WebSocket;
    const s = new Socket("ws://x/ws");
    const inner = FakeWebSocket.all[0]!;
    const seen: string[] = [];
    s.onopen = () => seen.push("onopen");
    s.addEventListener("open", () => seen.push("open listener"));
    s.onmessage = (e) => seen.push(`onmessage ${JSON.stringify(e.data)}`);
    s.onerror = () => seen.push("onerror");
    s.onclose = (e) => seen.push(`onclose ${e.code} ${e.reason} ${e.wasClean}`);
    expect([s.readyState, s.protocol, s.url]).toEqual([0, "", "ws://x/ws"]);
    inner.accept(BINARY_PROTOCOL);
    inner.bufferedAmount = 42;
    expect([s.readyState, s.protocol, s.bufferedAmount]).toEqual([1, BINARY_PROTOCOL, 42]);
    inner.recvBinary({ type: "unsubscribed", channel: "c", code: "forbidden", reason: "no" });
    inner.recvText('{"type":"pong"}');
    inner.onerror!({ type: "error" });
    inner.drop(1012, "restart");
    expect(seen).toEqual([
      "onopen",
      "open listener",
      'onmessage {"type":"unsubscribed","channel":"c","code":"forbidden","reason":"no"}',
      'onmessage "{\\"type\\":\\"pong\\"}"',
      "onerror",
      "onclose 1012 restart true",
    ]);
    expect(s.readyState).toBe(3);
    s.close(4000, "bye");
    expect(inner.closes).toEqual([[4000, "bye"]]);
  });
});

describe("the server's 101 names JSON, or nothing", () => {
  for (const answer of [JSON_PROTOCOL, ""]) {
    it(`${JSON.stringify(answer)}: every frame the client sends is the core's JSON text, unchanged, and text frames are read as JSON`, async () => {
      const { codec, client, ws } = setup();
      client.subscribe("news");
      ws().accept(answer);
      expect(codec.codec).toBe("json");
      ws().recvText('{"type":"welcome","session":"s-1","protocol":1}');
      ws().recvText('{"type":"subscribed","channel":"news","epoch":"e1","offset":0,"recovered":false}');
      const reply = client.request("echo", [1, 2]);
      ws().recvText('{"type":"response","id":1,"result":[1,2]}');
      await expect(reply).resolves.toEqual([1, 2]);
      expect(ws().sent).toEqual([
        '{"type":"connect","protocol":1}',
        '{"type":"subscribe","channel":"news"}',
        '{"type":"request","id":1,"method":"echo","params":[1,2],"timeout_ms":10000}',
      ]);
      expect(client.status.ready).toBe(true);
      client.close();
    });
  }

  it("a binary frame on a JSON connection is still decoded by its opcode (§1.8)", () => {
    const { client, ws } = setup();
    const items: ChannelItem[] = [];
    client.subscribe("news").on((i) => items.push(i));
    ws().accept(JSON_PROTOCOL);
    ws().recvText('{"type":"welcome","session":"s-1","protocol":1}');
    ws().recvText('{"type":"subscribed","channel":"news","epoch":"e1","offset":0,"recovered":false}');
    ws().recvBytes(encodeBinary({ type: "publication", channel: "news", epoch: "e1", offset: 1, data: "x" }));
    expect(items.at(-1)).toEqual({ type: "publication", epoch: "e1", offset: 1, data: "x" });
    expect(ws().sent.every((f) => typeof f === "string")).toBe(true);
    client.close();
  });

  it("each connection speaks what its own 101 named: binary, then JSON after a reconnect", async () => {
    const { codec, client, ws } = setup();
    ws().accept(BINARY_PROTOCOL);
    ws().recvBinary({ type: "welcome", session: "s-1", protocol: 1 });
    ws().drop();
    now += 1000;
    await vi.advanceTimersByTimeAsync(1000);
    expect(FakeWebSocket.all).toHaveLength(2);
    ws().accept(JSON_PROTOCOL);
    expect(codec.codec).toBe("json");
    expect(ws().sent).toEqual(['{"type":"connect","protocol":1,"session":"s-1"}']);
    expect(sent(FakeWebSocket.all[0]!)).toEqual([["binary", { type: "connect", protocol: 1 }]]);
    client.close();
  });
});
