/**
 * `@belay/client/binary`: the compact binary codec (spec/PROTOCOL.md §1.8)
 * on WebSocket, negotiated per connection with the subprotocol. Opt-in, so
 * the default entry does not grow.
 *
 *   import { BelayClient } from "@belay/client";
 *   import { binaryCodec } from "@belay/client/binary";
 *   const binary = binaryCodec();
 *   const client = new BelayClient("wss://example.com/ws", { WebSocket: binary.WebSocket });
 *   binary.codec; // "binary" | "json": what the last WebSocket that opened speaks
 *
 * Its WebSocket offers `belay.bin.1, belay.json.1` and speaks what the
 * server's `101` names (§1.8, "Negotiation"); the session above it is the
 * same, frame for frame:
 *
 *   core ── send(JSON text) ──▶ binary connection: encodeBinary(JSON.parse(text)) ──▶ binary frame
 *                                JSON connection:   the text as is               ──▶ text frame
 *   core ◀── message.data ───── binary frame: decodeBinary(frame), a message object (or the
 *                                             DecodeError: the core answers it as it answers
 *                                             the same fault in JSON: skip an unknown code,
 *                                             close 1002 a malformed frame, 1009 one too large)
 *                                text frame:  the text as is (decoded by its opcode, §1.8)
 *
 * The core still checks every field of a decoded object, as of a JSON one.
 * Browsers fail an upgrade whose `101` names no subprotocol when the page
 * offered some (WHATWG WebSockets): use it with a server that negotiates
 * (belay-server does).
 *
 * With the SSE fallback, give it this WebSocket: its WebSocket dials (and
 * probes) are then binary, and the SSE stream stays JSON (§1.7):
 *
 *   const fallback = sseFallback({ WebSocket: binaryCodec().WebSocket });
 *   new BelayClient(url, { WebSocket: fallback.WebSocket });
 */
import { decodeBinary, encodeBinary } from "./binary/codec.js";

export { decodeBinary, encodeBinary };

/** The binary codec's subprotocol. */
export const BINARY_PROTOCOL = "belay.bin.1";
/** The JSON codec's subprotocol. */
export const JSON_PROTOCOL = "belay.json.1";
/** What the WebSocket offers, most preferred first. */
const OFFER = [BINARY_PROTOCOL, JSON_PROTOCOL];

export type Codec = "binary" | "json";

export interface BinaryOptions {
  /** The WebSocket class it dials with (default: `globalThis.WebSocket`). */
  WebSocket?: typeof WebSocket;
}

export interface BinaryCodec {
  /** Pass as `BelayOptions.WebSocket` (or as the fallback's `WebSocket`). */
  readonly WebSocket: typeof WebSocket;
  /** The codec of the last WebSocket that opened (`undefined` before one did). */
  readonly codec: Codec | undefined;
}

type Handler = ((event: Event) => void) | null;

export function binaryCodec(options: BinaryOptions = {}): BinaryCodec {
  const WS = options.WebSocket ?? globalThis.WebSocket;
  let codec: Codec | undefined;

  /** A WebSocket as the client uses one (handlers, listeners, `send`, `close`, the state getters), over one that negotiates. */
  class BinarySocket extends EventTarget {
    static readonly CONNECTING = 0;
    static readonly OPEN = 1;
    static readonly CLOSING = 2;
    static readonly CLOSED = 3;
    onopen: Handler = null;
    onmessage: Handler = null;
    onclose: Handler = null;
    onerror: Handler = null;
    private readonly _ws: WebSocket;

    constructor(url: string | URL) {
      super();
      const ws = (this._ws = new WS(url, OFFER));
      ws.binaryType = "arraybuffer";
      ws.onopen = () => {
        codec = ws.protocol === BINARY_PROTOCOL ? "binary" : "json";
        this._fire("open", {});
      };
      // Frames are decoded by their opcode, whatever was negotiated (§1.8).
      ws.onmessage = (e: MessageEvent) =>
        this._fire("message", { data: typeof e.data === "string" ? e.data : decodeBinary(new Uint8Array(e.data as ArrayBuffer), "server") });
      ws.onclose = (e: CloseEvent) => this._fire("close", { code: e.code, reason: e.reason, wasClean: e.wasClean });
      ws.onerror = () => this._fire("error", {});
    }

    get url(): string {
      return this._ws.url;
    }
    /** The subprotocol the server's `101` named (`""`: none, which is JSON). */
    get protocol(): string {
      return this._ws.protocol;
    }
    get readyState(): number {
      return this._ws.readyState;
    }
    get bufferedAmount(): number {
      return this._ws.bufferedAmount;
    }
    get extensions(): string {
      return this._ws.extensions;
    }

    /** `text` is one message in its JSON form (what the core sends). */
    send(text: string): void {
      this._ws.send(this._ws.protocol === BINARY_PROTOCOL ? encodeBinary(JSON.parse(text) as Record<string, unknown>) : text);
    }

    close(code?: number, reason?: string): void {
      this._ws.close(code, reason);
    }

    private _fire(type: string, fields: object): void {
      const event = Object.assign(new Event(type), fields);
      (this as unknown as Record<string, Handler>)["on" + type]?.call(this, event);
      this.dispatchEvent(event);
    }
  }

  return {
    WebSocket: BinarySocket as unknown as typeof WebSocket,
    get codec() {
      return codec;
    },
  };
}
