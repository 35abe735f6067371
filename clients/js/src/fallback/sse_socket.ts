/**
 * The fallback's transport in the browser (spec/PROTOCOL.md §1.7), shaped
 * like the part of a WebSocket the client uses: `onopen`, `onmessage`,
 * `onclose`, `send(text)`, `close(code, reason)` (and the same events for
 * listeners). It decides nothing.
 *
 *   POST /sse ──▶ 200 text/event-stream: open → "open"; messages → "message"; close → "close"
 *   send(text) ──▶ queue ──▶ POST /sse/send (Belay-Seq n) ──▶ 204 ──▶ the next
 *   close(code, reason) ──▶ POST /sse/close
 *
 * The stream is read with `fetch` streaming, never `EventSource` (which
 * reconnects by itself behind the session's back). Each send is retried as
 * `SendRetry` decides (`core/send_retry.ts`, the Rust client's rule: a
 * failure on the way or a 502/503/504 again at once, +500 ms, +2 s, with the
 * same `Belay-Seq`; 15 s for the whole send). A stream that ends without
 * `close` and a send given up end the transport with 1006, as a WebSocket
 * that dropped.
 */
import { SendRetry, type SendOutcome } from "../core/send_retry.js";
import { EventReader } from "./event_stream.js";

/** A send body's size beyond which what is queued waits for the next send (one relayed control message). */
const BATCH_BYTES = 60 * 1024;
const ABNORMAL = 1006;
const TIMED_OUT = new TypeError("a send was not answered in time");

type Handler = ((event: Event) => void) | null;

/** `ws://host/base/ws` → `http://host/base/sse` (§1.7: the last segment `ws` becomes `sse`, else `/sse` is appended). */
export function sseUrl(url: string): string {
  const u = new URL(url);
  u.protocol = u.protocol === "wss:" ? "https:" : "http:";
  const path = u.pathname.replace(/\/+$/, "");
  u.pathname = path.endsWith("/ws") ? path.slice(0, -3) + "/sse" : path + "/sse";
  return u.href;
}

/** `s`'s length in UTF-8 bytes (a surrogate pair counts 4; a lone surrogate, 2, one short of the U+FFFD it becomes). */
function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) n += c >= 0x800 && (c < 0xd800 || c > 0xdfff) ? 2 : 1;
  }
  return n;
}

export class SseSocket extends EventTarget {
  /** 0 connecting, 1 open, 3 closed (as a WebSocket's). */
  readyState = 0;
  onopen: Handler = null;
  onmessage: Handler = null;
  onclose: Handler = null;
  onerror: Handler = null;
  private _stream: string | undefined;
  private readonly _queue: string[] = [];
  private _seq = 1;
  private _sending = false;
  private readonly _abort = new AbortController();
  private readonly _url: string;

  constructor(
    url: string,
    private readonly _fetch: typeof fetch = (...a) => fetch(...a),
    /** The clock of the sends' retries, in ms. */
    private readonly _now: () => number = () => performance.now(),
  ) {
    super();
    this._url = sseUrl(url);
    void this._read();
  }

  send(text: string): void {
    if (this.readyState !== 1) return;
    this._queue.push(text);
    void this._sendQueued();
  }

  close(code = 1000, reason = ""): void {
    if (this.readyState === 3) return;
    const stream = this._stream;
    if (stream !== undefined) {
      const body = JSON.stringify({ code, reason });
      // `keepalive`: the close still goes out if the page is being unloaded.
      this._fetch(this._url + "/close", { method: "POST", keepalive: true, headers: { "content-type": "text/plain", "belay-stream": stream }, body }).catch(() => {});
    }
    this._end(code, reason);
  }

  private async _read(): Promise<void> {
    try {
      const res = await this._fetch(this._url, {
        method: "POST",
        headers: { accept: "text/event-stream", "content-type": "text/plain" },
        body: "",
        cache: "no-store",
        signal: this._abort.signal,
      });
      if (res.status !== 200 || !res.body) {
        void res.body?.cancel().catch(() => {});
        return this._end(ABNORMAL, `the stream was refused (${res.status})`);
      }
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      const events = new EventReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (this.readyState === 3) return void reader.cancel().catch(() => {});
        if (done) return this._end(ABNORMAL, "the stream ended without `close`");
        for (const e of events.push(value)) {
          if (this.readyState === 0) {
            if (e.kind !== "open") throw new TypeError("the event stream did not open with `open`");
            this._stream = e.stream;
            this.readyState = 1;
            this._fire("open", {});
          } else if (e.kind === "message") this._fire("message", { data: e.text });
          else if (e.kind === "close") return this._end(e.code, e.reason);
          if (this.readyState === 3) return void reader.cancel().catch(() => {});
        }
      }
    } catch (e) {
      this._end(ABNORMAL, `the event stream failed: ${String(e)}`);
    }
  }

  /** One send at a time, in order; what was queued meanwhile goes in the next, batched. */
  private async _sendQueued(): Promise<void> {
    if (this._sending) return;
    this._sending = true;
    try {
      while (this.readyState === 1 && this._queue.length > 0) {
        const failure = await this._sendOne(this._takeBatch(), String(this._seq++));
        if (failure !== undefined) return this._end(ABNORMAL, failure);
      }
    } finally {
      this._sending = false;
    }
  }

  /** One send, its attempts as `SendRetry` decides: undefined once the server has it (or the socket closed meanwhile), else why the transport failed. */
  private async _sendOne(body: string, seq: string): Promise<string | undefined> {
    const retry = new SendRetry(this._now());
    for (;;) {
      const outcome = await this._post(body, seq, retry.deadline());
      if (this.readyState !== 1) return undefined;
      const step = retry.handleOutcome(this._now(), outcome);
      if (step.kind === "sent") return undefined;
      if (step.kind === "give_up") return `a send failed: ${step.failure.kind === "network" ? step.failure.detail : step.failure.kind}`;
      const wait = step.retryAt - this._now();
      if (wait > 0) await new Promise((r) => setTimeout(r, Math.ceil(wait)));
      if (this.readyState !== 1) return undefined;
    }
  }

  /** One attempt, unanswered by `deadline` (ms) at the latest: how it ended. */
  private async _post(body: string, seq: string, deadline: number): Promise<SendOutcome> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(TIMED_OUT), Math.max(0, Math.ceil(deadline - this._now())));
    const stop = () => abort.abort();
    this._abort.signal.addEventListener("abort", stop);
    try {
      const res = await this._fetch(this._url + "/send", {
        method: "POST",
        headers: { "content-type": "text/plain", "belay-stream": this._stream!, "belay-seq": seq },
        body,
        signal: abort.signal,
      });
      await res.arrayBuffer().catch(() => {});
      const after = res.headers.get("retry-after");
      const secs = after === null ? NaN : Number(after.trim());
      return { status: res.status, ...(secs >= 0 ? { retryAfterMs: secs * 1000 } : {}) };
    } catch {
      return abort.signal.reason === TIMED_OUT ? "timed_out" : "no_answer";
    } finally {
      clearTimeout(timer);
      this._abort.signal.removeEventListener("abort", stop);
    }
  }

  /** What is queued, up to `BATCH_BYTES` (at least one message), one per line. */
  private _takeBatch(): string {
    let bytes = 0;
    let take = 0;
    for (const m of this._queue) {
      const len = utf8Length(m) + 1;
      if (take > 0 && bytes + len > BATCH_BYTES) break;
      bytes += len;
      take++;
    }
    return this._queue.splice(0, take).join("\n");
  }

  private _end(code: number, reason: string): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this._abort.abort();
    this._fire("close", { code, reason, wasClean: code !== ABNORMAL });
  }

  private _fire(type: "open" | "message" | "close", fields: object): void {
    const event = Object.assign(new Event(type), fields);
    (this as unknown as Record<string, Handler>)["on" + type]?.call(this, event);
    this.dispatchEvent(event);
  }
}
