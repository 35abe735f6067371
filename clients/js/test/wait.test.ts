// `@belay/client/wait` against the real client (sources) over a scripted
// socket, in virtual time: NotReady stays the default; with `waitReady` the
// request is sent once the session is up, or ends NotReady / aborted / closed.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BelayClient, NotReadyError } from "../src/index.js";
import { requestWhenReady } from "../src/wait.js";
import { FakeWebSocket } from "./fake_websocket.js";

let now = 0;
const client = () =>
  new BelayClient("ws://x/ws", { WebSocket: FakeWebSocket as unknown as typeof WebSocket, now: () => now, network: null, page: null, seed: 7 });
const advance = async (ms: number) => {
  now += ms;
  await vi.advanceTimersByTimeAsync(ms);
};

describe("requestWhenReady (@belay/client/wait)", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    FakeWebSocket.all = [];
    now = 0;
  });
  afterEach(() => vi.useRealTimers());

  it("request stays NotReady at once; the wait sends once the session is up and is answered", async () => {
    const c = client();
    await expect(c.request("echo", 1)).rejects.toBeInstanceOf(NotReadyError);
    const answer = requestWhenReady(c, "echo", 1, { waitReady: 5000 });
    await advance(100);
    const socket = FakeWebSocket.all.at(-1)!;
    expect(socket.json()).toEqual([]);
    socket.welcome();
    await advance(0); // the wait resumes on a microtask
    const request = socket.json().find((m) => m.type === "request");
    expect(request).toMatchObject({ method: "echo", params: 1 });
    socket.recvText(JSON.stringify({ type: "response", id: request.id, result: "one" }));
    await expect(answer).resolves.toBe("one");
    c.close();
  });

  it("a wait that ends unready is NotReady, never sent", async () => {
    const c = client();
    const answer = requestWhenReady(c, "echo", 1, { waitReady: 300 });
    const settled = expect(answer).rejects.toBeInstanceOf(NotReadyError);
    await advance(300);
    await settled;
    expect(FakeWebSocket.all.flatMap((s) => s.json())).toEqual([]);
    c.close();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("close() ends the wait with NotReady (stopped), an abort with the signal's reason", async () => {
    const c = client();
    const closing = requestWhenReady(c, "echo");
    const aborter = new AbortController();
    const aborting = requestWhenReady(c, "echo", null, { waitReady: true, signal: aborter.signal });
    await advance(10);
    aborter.abort("gave up");
    await expect(aborting).rejects.toBe("gave up");
    c.close();
    await expect(closing).rejects.toMatchObject({ name: "NotReadyError", stopped: true });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("waitReady: false is the plain request", async () => {
    const c = client();
    await expect(requestWhenReady(c, "echo", 1, { waitReady: false })).rejects.toBeInstanceOf(NotReadyError);
    c.close();
  });
});
