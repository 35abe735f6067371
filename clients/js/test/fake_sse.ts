// The SSE fallback's HTTP side for tests, and a bounded wait for what the
// stream reader and the sends' promises do.
/** The fallback's HTTP side: `POST /sse` answered with a stream the test writes; sends and closes answered 204 at once. */
export class FakeSse {
  readonly sends: string[] = [];
  readonly closes: string[] = [];
  streams = 0;
  private _controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  readonly fetch = (async (input: RequestInfo | URL, init: RequestInit = {}): Promise<Response> => {
    const path = new URL(String(input)).pathname;
    if (path === "/sse/send") {
      this.sends.push(String(init.body));
      return new Response(null, { status: 204 });
    }
    if (path === "/sse/close") {
      this.closes.push(String(init.body));
      return new Response(null, { status: 204 });
    }
    this.streams++;
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (this._controller = c) });
    init.signal?.addEventListener("abort", () => {
      try {
        this._controller?.error(init.signal!.reason);
      } catch {
        // already closed
      }
    });
    return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
  }) as typeof fetch;
  push(text: string): void {
    this._controller!.enqueue(new TextEncoder().encode(text));
  }
}

/** Let the stream reader and the sends' promises run until `cond` holds (bounded: fails rather than hangs). */
export async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (cond()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`timed out waiting for ${what}`);
}
