// SseSocket (src/fallback/sse_socket.ts), the SSE + HTTP fallback's transport
// (spec/PROTOCOL.md §1.7), against a fake `fetch`: opening on `POST /sse` and
// the stream's `open`, messages in order across chunks, a refused stream,
// sends (one in flight, batched, numbered by `Belay-Seq`, retried as
// `SendRetry` decides, ended by an answer that is not retried or a 15 s
// silence), the server's `close` and a stream that just ends, and the
// client's `close` (`POST /sse/close`).
import { afterEach, describe, expect, it, vi } from "vitest";
import { SseSocket } from "../src/fallback/sse_socket.js";

// ---- the fake fetch ---------------------------------------------------------

/** One request the socket made, and the means to answer it. */
interface Call {
  url: string;
  method: string;
  headers: Headers;
  body: string;
  signal: AbortSignal | undefined;
  settled: boolean;
  respond(res: Response): void;
  fail(err: unknown): void;
}

/** Records every request; each stays pending until the test answers it. Honours `signal` as a real fetch does. */
class FakeServer {
  readonly calls: Call[] = [];
  /** Requests to `/sse/send` not yet answered, and the most there ever were at once. */
  sendsInFlight = 0;
  maxSendsInFlight = 0;

  readonly fetch = ((input: RequestInfo | URL, init: RequestInit = {}): Promise<Response> => {
    const url = String(input);
    const isSend = url.endsWith("/sse/send");
    if (isSend) this.maxSendsInFlight = Math.max(this.maxSendsInFlight, ++this.sendsInFlight);
    return new Promise<Response>((resolve, reject) => {
      const call: Call = {
        url,
        method: init.method ?? "GET",
        headers: new Headers(init.headers),
        body: typeof init.body === "string" ? init.body : "",
        signal: init.signal ?? undefined,
        settled: false,
        respond: (res) => settle(() => resolve(res)),
        fail: (err) => settle(() => reject(err)),
      };
      const settle = (f: () => void) => {
        if (call.settled) return;
        call.settled = true;
        if (isSend) this.sendsInFlight--;
        f();
      };
      call.signal?.addEventListener("abort", () => call.fail(call.signal!.reason));
      if (call.signal?.aborted) call.fail(call.signal.reason);
      this.calls.push(call);
    });
  }) as typeof fetch;

  to(path: string): Call[] {
    return this.calls.filter((c) => new URL(c.url).pathname === path);
  }
}

/** An event stream answer whose body the test writes into. */
function eventStream(signal?: AbortSignal) {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  // As a real fetch's body: aborting the request errors it.
  signal?.addEventListener("abort", () => {
    try {
      controller.error(signal.reason);
    } catch {
      // already closed
    }
  });
  const encoder = new TextEncoder();
  return {
    response: new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } }),
    push: (chunk: string | Uint8Array) => controller.enqueue(typeof chunk === "string" ? encoder.encode(chunk) : chunk),
    end: () => controller.close(),
  };
}

const OPEN = 'event: open\ndata: {"stream":"n1.AAAAAAAAAAAAAAAAAAAAAA"}\n\n';
const STREAM_ID = "n1.AAAAAAAAAAAAAAAAAAAAAA";
const noContent = () => new Response(null, { status: 204 });

/** Let the socket's promises and stream reader run until `cond` holds (bounded: fails rather than hangs). */
async function until(cond: () => boolean, what = "the condition"): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (cond()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A few turns of the event loop, for asserting that something did NOT happen. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

interface Recorded {
  opens: Event[];
  messages: string[];
  closes: CloseEvent[];
}

function record(socket: SseSocket): Recorded {
  const r: Recorded = { opens: [], messages: [], closes: [] };
  socket.addEventListener("open", (e) => r.opens.push(e));
  socket.addEventListener("message", (e) => r.messages.push((e as MessageEvent).data as string));
  socket.addEventListener("close", (e) => r.closes.push(e as CloseEvent));
  return r;
}

/** A socket whose stream has answered 200 (not yet `open`). */
async function connecting() {
  const server = new FakeServer();
  const socket = new SseSocket("ws://h/ws", server.fetch);
  const events = record(socket);
  await until(() => server.to("/sse").length === 1, "POST /sse");
  const streamCall = server.to("/sse")[0]!;
  const stream = eventStream(streamCall.signal);
  streamCall.respond(stream.response);
  return { server, socket, events, stream, streamCall };
}

/** A socket whose stream has sent `open`. */
async function opened() {
  const c = await connecting();
  c.stream.push(OPEN);
  await until(() => c.socket.readyState === 1, "open");
  return c;
}

afterEach(() => {
  vi.useRealTimers();
});

// ---- the tests --------------------------------------------------------------

describe("SseSocket: opening", () => {
  it("POSTs to /sse for the ws URL, asking for an event stream", async () => {
    const server = new FakeServer();
    new SseSocket("ws://h/ws", server.fetch);
    await until(() => server.calls.length > 0, "a request");
    const first = server.calls[0]!;
    expect(first.url).toBe("http://h/sse");
    expect(first.method).toBe("POST");
    expect(first.headers.get("accept")).toBe("text/event-stream");
  });

  it("opens only on the stream's `open` event: readyState 1, onopen and listeners", async () => {
    const { socket, events, stream } = await connecting();
    let onopen = 0;
    socket.onopen = () => onopen++;
    // A 200 answer and half of the `open` event are not an open yet.
    stream.push(OPEN.slice(0, 20));
    await settle();
    expect(socket.readyState).toBe(0);
    expect(onopen).toBe(0);
    expect(events.opens).toHaveLength(0);

    stream.push(OPEN.slice(20));
    await until(() => socket.readyState === 1, "open");
    expect(onopen).toBe(1);
    expect(events.opens).toHaveLength(1);
  });

  it("delivers the unnamed events that follow as messages, in order, however the chunks split them", async () => {
    const { socket, events, stream } = await opened();
    const onmessage: string[] = [];
    socket.onmessage = (e) => onmessage.push((e as MessageEvent).data as string);
    const utf8 = new TextEncoder().encode('data: {"t":"é"}\n\n'); // "é" is two bytes: split between them
    const cut = utf8.indexOf(0xc3) + 1;
    stream.push('data: {"type":"welcome","session":"s-1"}\n\ndata: {"n"');
    stream.push(":2}\n");
    stream.push("\n: padding\n\ndata: {\"n\":3}\n\n");
    stream.push(utf8.slice(0, cut));
    stream.push(utf8.slice(cut));
    const expected = ['{"type":"welcome","session":"s-1"}', '{"n":2}', '{"n":3}', '{"t":"é"}'];
    await until(() => events.messages.length === expected.length, "four messages");
    expect(events.messages).toEqual(expected);
    expect(onmessage).toEqual(expected);
    expect(socket.readyState).toBe(1);
  });

  it("ends a refused stream (503) with close 1006, never opening", async () => {
    const server = new FakeServer();
    const socket = new SseSocket("ws://h/ws", server.fetch);
    const events = record(socket);
    let onopen = 0;
    socket.onopen = () => onopen++;
    await until(() => server.calls.length === 1, "POST /sse");
    server.calls[0]!.respond(new Response("draining", { status: 503, headers: { "retry-after": "5" } }));
    await until(() => events.closes.length === 1, "close");
    expect(events.closes[0]!.code).toBe(1006);
    expect(socket.readyState).toBe(3);
    expect(onopen).toBe(0);
    expect(events.opens).toHaveLength(0);
  });
});

describe("SseSocket: sending", () => {
  it("sends one POST /sse/send at a time, numbered from 1, batching what was queued meanwhile", async () => {
    const { server, socket } = await opened();
    socket.send('{"type":"connect","protocol":1}');
    socket.send('{"n":2}');
    socket.send('{"n":3}');
    await settle();
    expect(server.to("/sse/send")).toHaveLength(1); // the others wait for its answer

    server.to("/sse/send")[0]!.respond(noContent());
    await until(() => server.to("/sse/send").length === 2, "the second send");
    socket.send('{"n":4}'); // queued behind the second
    server.to("/sse/send")[1]!.respond(noContent());
    await until(() => server.to("/sse/send").length === 3, "the third send");
    server.to("/sse/send")[2]!.respond(noContent());
    await settle();

    const sends = server.to("/sse/send");
    expect(sends.map((c) => c.url)).toEqual(["http://h/sse/send", "http://h/sse/send", "http://h/sse/send"]);
    expect(sends.map((c) => c.method)).toEqual(["POST", "POST", "POST"]);
    expect(sends.map((c) => c.headers.get("belay-stream"))).toEqual([STREAM_ID, STREAM_ID, STREAM_ID]);
    expect(sends.map((c) => c.headers.get("belay-seq"))).toEqual(["1", "2", "3"]);
    expect(sends.map((c) => c.body)).toEqual(['{"type":"connect","protocol":1}', '{"n":2}\n{"n":3}', '{"n":4}']);
    expect(server.maxSendsInFlight).toBe(1);
    expect(socket.readyState).toBe(1);
  });

  it("ends the transport (1006) on a send answered other than 204, and sends nothing after", async () => {
    const { server, socket, events } = await opened();
    socket.send('{"n":1}');
    server.to("/sse/send")[0]!.respond(new Response("unknown stream", { status: 404 }));
    await until(() => events.closes.length === 1, "close");
    expect(events.closes[0]!.code).toBe(1006);
    expect(socket.readyState).toBe(3);

    const before = server.calls.length;
    socket.send('{"n":2}');
    await settle();
    expect(server.calls.length).toBe(before);
  });

  it("retries a send that failed on the way at once, with the same Belay-Seq, and stays open", async () => {
    const { server, socket, events } = await opened();
    socket.send('{"n":1}');
    server.to("/sse/send")[0]!.fail(new TypeError("fetch failed"));
    await until(() => server.to("/sse/send").length === 2, "the retry");
    const [first, retry] = server.to("/sse/send") as [Call, Call];
    expect(retry.headers.get("belay-seq")).toBe(first.headers.get("belay-seq"));
    expect(retry.headers.get("belay-seq")).toBe("1");
    expect(retry.body).toBe(first.body);

    retry.respond(noContent());
    socket.send('{"n":2}');
    await until(() => server.to("/sse/send").length === 3, "the next send");
    expect(server.to("/sse/send")[2]!.headers.get("belay-seq")).toBe("2");
    expect(socket.readyState).toBe(1);
    expect(events.closes).toHaveLength(0);
  });

  it("ends the transport (1006) on a send not answered in 15 s, without retrying it", async () => {
    const { server, socket, events } = await opened();
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] }); // the send's deadline; setImmediate stays real for `until`
    socket.send('{"n":1}');
    expect(server.to("/sse/send")).toHaveLength(1);

    vi.advanceTimersByTime(14_999);
    await settle();
    expect(socket.readyState).toBe(1);

    vi.advanceTimersByTime(1);
    await until(() => events.closes.length === 1, "close");
    expect(events.closes[0]!.code).toBe(1006);
    expect(socket.readyState).toBe(3);
    expect(server.to("/sse/send")).toHaveLength(1);
  });

  it("batches ASCII messages up to 60 KiB a body", async () => {
    const { server, socket } = await opened();
    const big = "a".repeat(30 * 1024);
    socket.send("x");
    socket.send(big);
    socket.send(big); // 2 × (30 KiB + 1) > 60 KiB: the second waits for the next body
    server.to("/sse/send")[0]!.respond(noContent());
    await until(() => server.to("/sse/send").length === 2, "the second send");
    expect(server.to("/sse/send")[1]!.body).toBe(big);
    server.to("/sse/send")[1]!.respond(noContent());
    await until(() => server.to("/sse/send").length === 3, "the third send");
    expect(server.to("/sse/send")[2]!.body).toBe(big);
  });

  // Non-ASCII text (CJK: 3 bytes a character) counts by its UTF-8 bytes, so
  // a body stays under the 60 KiB a relayed send may be (§1.7).
  it("batches non-ASCII messages by their UTF-8 bytes, up to 60 KiB a body", async () => {
    const { server, socket } = await opened();
    const cjk = "日".repeat(20_000); // 60 000 bytes of UTF-8: each fits a body alone, no two do
    socket.send("x");
    socket.send(cjk);
    socket.send(cjk);
    socket.send(cjk);
    server.to("/sse/send")[0]!.respond(noContent());
    await until(() => server.to("/sse/send").length === 2, "the second send");
    const body = server.to("/sse/send")[1]!.body;
    expect(new TextEncoder().encode(body).length).toBeLessThanOrEqual(60 * 1024);
    expect(body).toBe(cjk);
  });
});

describe("SseSocket: the stream's end", () => {
  it("gives the server's `close` event's code and reason", async () => {
    const { socket, events, stream } = await opened();
    stream.push('event: close\ndata: {"code":1012,"reason":"restart"}\n\n');
    await until(() => events.closes.length === 1, "close");
    expect(events.closes[0]!.code).toBe(1012);
    expect(events.closes[0]!.reason).toBe("restart");
    expect(socket.readyState).toBe(3);
  });

  it("gives 1006 for a stream that ends without `close`", async () => {
    const { socket, events, stream } = await opened();
    stream.push('data: {"n":1}\n\n');
    stream.end();
    await until(() => events.closes.length === 1, "close");
    expect(events.messages).toEqual(['{"n":1}']);
    expect(events.closes[0]!.code).toBe(1006);
    expect(socket.readyState).toBe(3);
  });
});

describe("SseSocket: close()", () => {
  it("POSTs /sse/close with the stream id, code and reason, and closes at once; a second close does nothing", async () => {
    const { server, socket, events, streamCall } = await opened();
    let onclose = 0;
    socket.onclose = () => onclose++;
    socket.close(1000, "client stop");

    const closes = server.to("/sse/close");
    expect(closes).toHaveLength(1);
    expect(closes[0]!.url).toBe("http://h/sse/close");
    expect(closes[0]!.method).toBe("POST");
    expect(closes[0]!.headers.get("belay-stream")).toBe(STREAM_ID);
    expect(JSON.parse(closes[0]!.body)).toEqual({ code: 1000, reason: "client stop" });
    expect(socket.readyState).toBe(3);
    expect(events.closes).toHaveLength(1);
    expect(events.closes[0]!.code).toBe(1000);
    expect(events.closes[0]!.reason).toBe("client stop");
    expect(onclose).toBe(1);
    expect(streamCall.signal?.aborted).toBe(true); // the stream's request is dropped

    const before = server.calls.length;
    socket.close(1000, "again");
    await settle();
    expect(server.calls.length).toBe(before);
    expect(events.closes).toHaveLength(1);
    expect(onclose).toBe(1);
  });

  it("sends the close's own reason (the session's `transport replaced` when it moves back to WebSocket)", async () => {
    const { server, socket } = await opened();
    socket.close(1000, "transport replaced");
    expect(JSON.parse(server.to("/sse/close")[0]!.body)).toEqual({ code: 1000, reason: "transport replaced" });
  });
});

describe("SseSocket: send retries (SendRetry)", () => {
  /** A socket on a fake clock: `clock.ms` moves with the fake timers. */
  async function openedOnFakeTime() {
    const clock = { ms: 0 };
    const server = new FakeServer();
    const socket = new SseSocket("ws://h/ws", server.fetch, () => clock.ms);
    const events = record(socket);
    await until(() => server.to("/sse").length === 1, "POST /sse");
    const streamCall = server.to("/sse")[0]!;
    const stream = eventStream(streamCall.signal);
    streamCall.respond(stream.response);
    stream.push(OPEN);
    await until(() => socket.readyState === 1, "open");
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const advance = (ms: number) => {
      clock.ms += ms;
      vi.advanceTimersByTime(ms);
    };
    return { server, socket, events, advance };
  }

  it("retries a 503 after its Retry-After, then a 502 after 500 ms, on the same Belay-Seq", async () => {
    const { server, socket, events, advance } = await openedOnFakeTime();
    socket.send('{"n":1}');
    server.to("/sse/send")[0]!.respond(new Response(null, { status: 503, headers: { "retry-after": "1" } }));
    await settle();
    advance(999);
    await settle();
    expect(server.to("/sse/send")).toHaveLength(1);
    advance(1);
    await until(() => server.to("/sse/send").length === 2, "the retry after 1 s");
    server.to("/sse/send")[1]!.respond(new Response(null, { status: 502 }));
    await settle();
    advance(499);
    await settle();
    expect(server.to("/sse/send")).toHaveLength(2);
    advance(1);
    await until(() => server.to("/sse/send").length === 3, "the retry after 500 ms");
    server.to("/sse/send")[2]!.respond(noContent());
    await settle();
    expect(server.to("/sse/send").map((c) => c.headers.get("belay-seq"))).toEqual(["1", "1", "1"]);
    expect(socket.readyState).toBe(1);
    expect(events.closes).toHaveLength(0);
  });

  it("gives the stream up (1006) when the fourth attempt fails too", async () => {
    const { server, events, socket, advance } = await openedOnFakeTime();
    socket.send('{"n":1}');
    const fail = async (n: number) => {
      await until(() => server.to("/sse/send").length === n, `attempt ${n}`);
      server.to("/sse/send")[n - 1]!.fail(new TypeError("fetch failed"));
      await settle();
    };
    await fail(1); // retried at once
    await fail(2); // then after 500 ms
    advance(500);
    await fail(3); // then after 2 s
    advance(2000);
    await fail(4);
    await until(() => events.closes.length === 1, "close");
    expect(events.closes[0]!.code).toBe(1006);
    expect(server.to("/sse/send")).toHaveLength(4);
  });
});
