/**
 * A stand-in for the `ws` package's WebSocket (the usual one in Node), with
 * the behaviour that differs from a browser's:
 *
 * - it is an EventEmitter: `onerror` & co. are listeners added by a setter
 *   (setting `null` removes them), and emitting `error` with no listener
 *   throws, which in a real process is an uncaught exception that ends it;
 * - a refused or reset connection emits `error`, then `close` with 1006;
 * - `close()` while connecting aborts the handshake: `error` ("closed before
 *   the connection was established"), then `close` 1006, on the next tick
 *   (here: when the test calls `flush()`);
 * - `close(code)` accepts 1000–1014 (but 1004–1006) and 3000–4999, and
 *   throws a TypeError for any other code before changing state.
 */
import { EventEmitter } from "node:events";

type Handler = (event: any) => void;
const ATTRIBUTE = Symbol("on-attribute");

export class NodeStyleWebSocket extends EventEmitter {
  static all: NodeStyleWebSocket[] = [];
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSING = 2;
  static readonly CLOSED = 3;
  readyState = 0;
  /** Every frame sent, parsed. */
  readonly sent: any[] = [];
  /** Every `close(code, reason)` asked for, refused or not. */
  readonly closes: [number | undefined, string | undefined][] = [];
  private _deferred: (() => void)[] = [];
  declare onopen: Handler | null;
  declare onmessage: Handler | null;
  declare onclose: Handler | null;
  declare onerror: Handler | null;

  constructor(readonly url: string) {
    super();
    NodeStyleWebSocket.all.push(this);
  }

  /** ws's EventTarget-like methods: listeners of the emitter, given the event object. */
  addEventListener(type: string, listener: Handler): void {
    this.on(type, listener);
  }

  removeEventListener(type: string, listener: Handler): void {
    this.removeListener(type, listener);
  }

  send(text: string): void {
    if (this.readyState !== 1) throw new Error(`WebSocket is not open: readyState ${this.readyState}`);
    this.sent.push(JSON.parse(text));
  }

  close(code?: number, reason?: string): void {
    this.closes.push([code, reason]);
    if (this.readyState === 3) return;
    if (this.readyState === 0) {
      this.readyState = 2;
      this._deferred.push(() => this._fail("WebSocket was closed before the connection was established"));
      return;
    }
    if (this.readyState === 2) return;
    const valid = code === undefined || (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);
    if (!valid) throw new TypeError("First argument must be a valid error code number");
    this.readyState = 2;
    // The server echoes the close frame.
    this._deferred.push(() => this._closed(code ?? 1005, reason ?? ""));
  }

  /** The server's `101`. */
  accept(): void {
    this.readyState = 1;
    this.emit("open", { type: "open" });
  }

  recv(message: object): void {
    this.emit("message", { type: "message", data: JSON.stringify(message) });
  }

  /** The dial is refused (ECONNREFUSED): `error`, then `close` 1006. */
  refuse(): void {
    this._fail("connect ECONNREFUSED 127.0.0.1:1");
  }

  /** The connection is reset (ECONNRESET): `error`, then `close` 1006. */
  reset(): void {
    this._fail("read ECONNRESET");
  }

  /** Runs what `ws` defers to the next tick. */
  flush(): void {
    const deferred = this._deferred;
    this._deferred = [];
    for (const f of deferred) f();
  }

  private _fail(message: string): void {
    this.readyState = 2;
    const error = new Error(message);
    // EventEmitter's rule: an `error` nobody listens to is thrown.
    this.emit("error", { type: "error", error, message });
    this._closed(1006, "");
  }

  private _closed(code: number, reason: string): void {
    this.readyState = 3;
    this.emit("close", { type: "close", code, reason, wasClean: code !== 1006 });
  }
}

// `ws`'s event attributes: one listener per type, replaced by each assignment.
for (const type of ["open", "message", "close", "error"]) {
  Object.defineProperty(NodeStyleWebSocket.prototype, `on${type}`, {
    get(this: NodeStyleWebSocket) {
      const l = this.listeners(type).find((l) => ATTRIBUTE in l) as { [ATTRIBUTE]: Handler } | undefined;
      return l ? l[ATTRIBUTE] : null;
    },
    set(this: NodeStyleWebSocket, handler: Handler | null) {
      for (const l of this.listeners(type)) if (ATTRIBUTE in l) this.removeListener(type, l as unknown as Handler);
      if (typeof handler !== "function") return;
      const listener = Object.assign((e: unknown) => handler.call(this, e), { [ATTRIBUTE]: handler });
      this.on(type, listener);
    },
  });
}
