// A heartbeat loss followed at once by a redial that fails: the client
// reports both, apart (`disconnected` with `established: true`, then
// `established: false`), so the failed redial never hides why the session
// was lost (what the netcut test reads from `belay connect`).
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { BelayClient, type DisconnectInfo } from "../src/index.js";
import { fixed } from "../src/policies.js";
import { FakeWebSocket } from "./fake_websocket.js";

let now = 0;
beforeEach(() => {
  vi.useFakeTimers();
  FakeWebSocket.all = [];
  now = 0;
});
afterEach(() => vi.useRealTimers());

it("a loss and the failed redial after it are two disconnected events, kept apart", async () => {
  const c = new BelayClient("ws://x/ws", {
    WebSocket: FakeWebSocket as unknown as typeof WebSocket,
    now: () => now,
    network: null,
    page: null,
    seed: 7,
    backoff: fixed(0),
    probeIntervalMs: 1000,
    probeTimeoutMs: 1000,
  });
  const seen: DisconnectInfo[] = [];
  c.addEventListener("disconnected", (e) => seen.push((e as CustomEvent<DisconnectInfo>).detail));
  const first = FakeWebSocket.all[0]!;
  first.welcome();
  // No frame at all: the probe goes unanswered and the session is lost.
  for (let i = 0; i < 30 && seen.length === 0; i++) {
    now += 100;
    await vi.advanceTimersByTimeAsync(100);
  }
  expect(seen.map((d) => [d.established, d.reason.kind])).toEqual([[true, "heartbeat_timeout"]]);
  // The redial fails before opening.
  for (let i = 0; i < 30 && FakeWebSocket.all.length < 2; i++) {
    now += 100;
    await vi.advanceTimersByTimeAsync(100);
  }
  FakeWebSocket.all[1]!.drop();
  expect(seen.map((d) => d.established)).toEqual([true, false]);
  expect(seen[0]!.reason.kind).toBe("heartbeat_timeout");
  expect(seen[1]!.reason.kind).not.toBe("heartbeat_timeout");
  c.close();
});
