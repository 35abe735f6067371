/**
 * A scriptable stand-in for the browser's WebSocket as `@belay/client/binary`
 * drives it: it records the subprotocols offered, `binaryType`, every frame
 * sent (text or bytes) and every close asked for, and the test plays the
 * server: `accept(protocol)` (the `101`), frames, drops. Like a browser, it
 * refuses a close code other than 1000 and 3000–4999 (after recording it).
 */
import { encodeBinary } from "../src/binary/codec.js";

type Handler = ((e: any) => void) | null;

export class FakeWebSocket {
  static all: FakeWebSocket[] = [];
  readonly protocols: string[];
  binaryType = "blob";
  protocol = "";
  readyState = 0;
  bufferedAmount = 0;
  extensions = "";
  onopen: Handler = null;
  onmessage: Handler = null;
  onclose: Handler = null;
  onerror: Handler = null;
  /** Every frame sent: a string (text frame) or the bytes of a binary one. */
  readonly sent: (string | Uint8Array)[] = [];
  /** Every `close(code, reason)` asked for, refused or not. */
  readonly closes: [number | undefined, string | undefined][] = [];

  constructor(readonly url: string, protocols?: string | string[]) {
    this.protocols = protocols === undefined ? [] : typeof protocols === "string" ? [protocols] : [...protocols];
    FakeWebSocket.all.push(this);
  }

  send(data: string | Uint8Array): void {
    if (this.readyState !== 1) throw new Error("InvalidStateError");
    this.sent.push(typeof data === "string" ? data : new Uint8Array(data));
  }

  close(code?: number, reason?: string): void {
    this.closes.push([code, reason]);
    if (code !== undefined && code !== 1000 && (code < 3000 || code > 4999)) throw new Error("InvalidAccessError");
    this.readyState = 2;
  }

  /** The server's `101`: `protocol` is what its `Sec-WebSocket-Protocol` names ("" for none). */
  accept(protocol: string): void {
    this.protocol = protocol;
    this.readyState = 1;
    this.onopen?.({ type: "open" });
  }

  /** A binary frame of these bytes, delivered as `binaryType` says (only "arraybuffer" is supported). */
  recvBytes(bytes: Uint8Array): void {
    if (this.binaryType !== "arraybuffer") throw new Error(`binaryType is ${this.binaryType}, not arraybuffer`);
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    this.onmessage?.({ type: "message", data: buffer });
  }

  /** A server message as one binary frame. */
  recvBinary(message: Record<string, unknown>): void {
    this.recvBytes(encodeBinary(message));
  }

  /** A text frame. */
  recvText(text: string): void {
    this.onmessage?.({ type: "message", data: text });
  }

  /** The connection ends (1006: without a close frame). */
  drop(code = 1006, reason = ""): void {
    this.readyState = 3;
    this.onclose?.({ type: "close", code, reason, wasClean: code !== 1006 });
  }

  /** The text frames sent, parsed. */
  json(): any[] {
    return this.sent.filter((f): f is string => typeof f === "string").map((f) => JSON.parse(f));
  }

  /** The `101`, then the server's `welcome` (JSON, no subprotocol). */
  welcome(session = "s-1"): void {
    this.accept("");
    this.recvText(JSON.stringify({ type: "welcome", session, protocol: 1 }));
  }

  /** The last frame sent. */
  last(): string | Uint8Array {
    return this.sent[this.sent.length - 1]!;
  }
}
