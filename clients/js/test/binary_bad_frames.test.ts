// Bad binary frames through `@belay/client/binary` and the real client end
// as the same fault does in JSON (spec/PROTOCOL.md §1.8, the bad-frame
// table, client column): an unknown code is skipped, counted and proof of
// life; a malformed frame closes 1002 `malformed frame`; one over
// MAX_FRAME_LEN closes 1009 `frame too large`; each with the codec's
// `DecodeError` as the disconnect's detail.
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { BINARY_PROTOCOL, binaryCodec } from "../src/binary.js";
import { decodeBinary } from "../src/binary/codec.js";
import { BelayClient, type DisconnectInfo } from "../src/index.js";
import { MAX_FRAME_LEN } from "../src/core/messages.js";
import { fixed } from "../src/policies.js";
import { FakeWebSocket } from "./fake_websocket.js";

let now = 0;
const advance = async (ms: number) => {
  now += ms;
  await vi.advanceTimersByTimeAsync(ms);
};

/** A client whose session is open on a binary connection; its disconnects, recorded. */
function open() {
  const codec = binaryCodec({ WebSocket: FakeWebSocket as unknown as typeof WebSocket });
  const client = new BelayClient("ws://x/ws", { WebSocket: codec.WebSocket, now: () => now, network: null, page: null, seed: 7, backoff: fixed(1000) });
  const disconnects: DisconnectInfo[] = [];
  client.addEventListener("disconnected", (e) => disconnects.push((e as CustomEvent<DisconnectInfo>).detail));
  const ws = FakeWebSocket.all[0]!;
  ws.accept(BINARY_PROTOCOL);
  ws.recvBinary({ type: "welcome", session: "s-1", protocol: 1 });
  expect(client.status.ready).toBe(true);
  return { client, ws, disconnects };
}

const types = (ws: FakeWebSocket) => ws.sent.map((f) => (decodeBinary(f as Uint8Array, "client") as { type: string }).type);
const stats = (client: BelayClient) => (client as unknown as { _session: { stats(): { unknownFrames: number } } })._session.stats();

beforeEach(() => {
  vi.useFakeTimers();
  FakeWebSocket.all = [];
  now = 0;
});
afterEach(() => {
  vi.useRealTimers();
});

it("an unknown code: skipped, counted, and proof of life (it puts off the heartbeat's probe)", async () => {
  const { client, ws, disconnects } = open();
  // Silence would be probed at 10 s (probeIntervalMs); a frame at 6 s moves that to 16 s.
  await advance(6000);
  ws.recvBytes(Uint8Array.of(0x12, 0x34, 0xff, 0x00));
  expect(stats(client).unknownFrames).toBe(1);
  await advance(9000); // 15 s
  expect(types(ws)).toEqual(["connect"]);
  await advance(1000); // 16 s
  expect(types(ws)).toEqual(["connect", "ping"]);
  expect(ws.closes).toEqual([]);
  expect(disconnects).toEqual([]);
  expect(client.status.ready).toBe(true);
  client.close();
});

const malformed: [string, Uint8Array, object][] = [
  ["a cut publication", Uint8Array.of(0x00, 0x24, 0x04, 0x6e, 0x65), { error: "invalid", kind: "publication" }],
  ["a frame of one byte", Uint8Array.of(0x00), { error: "missing_type" }],
  ["a bool other than 0 or 1", Uint8Array.of(0x00, 0x21, 0x01, 0x63, 0x01, 0x65, 0x00, 0x02), { error: "invalid", kind: "subscribed", detail: "a bool is 0 or 1, not 2" }],
  ["a message of the other direction", Uint8Array.of(0x00, 0x22, 0x01, 0x63), { error: "invalid", kind: "unsubscribe" }],
];
for (const [name, frame, error] of malformed) {
  it(`malformed (${name}): close 1002 \`malformed frame\`, a protocol violation with the codec's detail, then a reconnect`, async () => {
    const { client, ws, disconnects } = open();
    ws.recvBytes(frame);
    // Browsers refuse to send 1002 (InvalidAccessError): the client then closes without a code.
    expect(ws.closes).toEqual([[1002, "malformed frame"], [undefined, undefined]]);
    expect(disconnects).toHaveLength(1);
    expect(disconnects[0]!.reason).toMatchObject({ kind: "protocol_violation", error });
    const detail = (disconnects[0]!.reason as { error: { detail?: string } }).error.detail;
    if ("kind" in error) expect(detail).toMatch(/./);
    expect(client.status.transport).toBe(false);
    await advance(1000);
    expect(FakeWebSocket.all).toHaveLength(2);
    client.close();
  });
}

it(`over MAX_FRAME_LEN: close 1009 \`frame too large\`, a protocol violation too_large with the frame's length`, () => {
  const { client, ws, disconnects } = open();
  const frame = new Uint8Array(MAX_FRAME_LEN + 1);
  frame.set([0x00, 0x24]);
  ws.recvBytes(frame);
  expect(ws.closes[0]).toEqual([1009, "frame too large"]);
  expect(disconnects[0]!.reason).toEqual({ kind: "protocol_violation", error: { error: "too_large", len: MAX_FRAME_LEN + 1, max: MAX_FRAME_LEN } });
  client.close();
});

it("a frame of exactly MAX_FRAME_LEN bytes is read", () => {
  const { client, ws, disconnects } = open();
  const items: unknown[] = [];
  client.subscribe("c").on((i) => items.push(i));
  ws.recvBinary({ type: "subscribed", channel: "c", epoch: "e", offset: 0, recovered: false });
  // publication: code (2) · channel (1 + 1) · epoch (1 + 1) · offset (1) · data (3-byte length + the JSON string).
  const pad = MAX_FRAME_LEN - 2 - 2 - 2 - 1 - 3 - 2;
  const frame = new Uint8Array(MAX_FRAME_LEN);
  frame.set([0x00, 0x24, 0x01, 0x63, 0x01, 0x65, 0x01]);
  const len = pad + 2;
  frame.set([(len & 0x7f) | 0x80, ((len >> 7) & 0x7f) | 0x80, len >> 14], 7);
  frame.fill(0x61, 10);
  frame[10] = 0x22;
  frame[MAX_FRAME_LEN - 1] = 0x22;
  ws.recvBytes(frame);
  expect(disconnects).toEqual([]);
  expect(items.at(-1)).toMatchObject({ type: "publication", offset: 1 });
  expect(((items.at(-1) as { data: string }).data).length).toBe(pad);
  client.close();
});
