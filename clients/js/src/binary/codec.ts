/**
 * The compact binary codec (spec/PROTOCOL.md §1.8; `message/binary/` in
 * the Rust core): a message object in its JSON form ↔ a binary frame. The
 * frame is the type's two-byte code, then the fields of `LAYOUTS` in order:
 * `u` a shortest-form LEB128 integer, `s` a length-prefixed UTF-8 string,
 * `j` a length-prefixed JSON payload, `b` one byte 0/1, `g` a group; a type
 * with optional fields (`?`) starts with a flags integer, bit i for its
 * i-th optional field. Decoding never throws: a bad frame is a
 * `DecodeError` shaped like the Rust core's serde form.
 *
 * In the opt-in entry `@belay/client/binary` (src/binary.ts), which
 * negotiates it per WebSocket; the vectors (`spec/vectors/binary.json`)
 * run it.
 *
 * A `welcome`'s `pacing.origin_ms` is written as a field of the welcome
 * itself, the last one (flag bit 3), and read back into its pacing (dropped
 * if there is no pacing), as the Rust core does.
 *
 * One difference from the Rust core: integers above 2^53 − 1 are refused
 * (`invalid`), since a JavaScript number cannot hold them exactly.
 */
import type { DecodeError } from "../core/codec.js";

type Obj = Record<string, unknown>;
/** A field: its name, its form, `?` when optional, and a group's fields. */
type Field = readonly [name: string, form: "u" | "s" | "j" | "b" | "g", optional?: "?", group?: readonly Field[]];

const ERROR_BODY: readonly Field[] = [["code", "s"], ["message", "s"], ["retry_after_ms", "u", "?"]];
const LAYOUTS: Record<string, readonly Field[]> = {
  connect: [["protocol", "u"], ["token", "s", "?"], ["session", "s", "?"]],
  welcome: [["session", "s"], ["protocol", "u"], ["ping_interval_ms", "u", "?"], ["pacing", "g", "?", [["period_ms", "u"], ["phase_ms", "u"]]], ["expires_in_ms", "u", "?"], ["origin_ms", "u", "?"]],
  ping: [],
  pong: [],
  refresh: [["token", "s"]],
  refreshed: [["expires_in_ms", "u", "?"]],
  request: [["id", "u"], ["method", "s"], ["params", "j"], ["idem", "s", "?"], ["timeout_ms", "u", "?"]],
  subscribe: [["channel", "s"], ["since", "g", "?", [["epoch", "s"], ["offset", "u"]]], ["token", "s", "?"]],
  subscribed: [["channel", "s"], ["epoch", "s"], ["offset", "u"], ["recovered", "b"]],
  unsubscribe: [["channel", "s"]],
  unsubscribed: [["channel", "s"], ["code", "s"], ["reason", "s"]],
  publication: [["channel", "s"], ["epoch", "s"], ["offset", "u"], ["data", "j"]],
  sub_refresh: [["channel", "s"], ["token", "s"]],
  sub_expiring: [["channel", "s"], ["expires_in_ms", "u"]],
  reconnect: [["reason", "s"], ["min_delay_ms", "u"], ["max_delay_ms", "u"], ["message", "s", "?"]],
  error: ERROR_BODY,
};
const CODES: Record<string, number> = {
  connect: 0x01, welcome: 0x02, ping: 0x03, pong: 0x04, refresh: 0x05, refreshed: 0x06, request: 0x10, response: 0x11,
  subscribe: 0x20, subscribed: 0x21, unsubscribe: 0x22, unsubscribed: 0x23, publication: 0x24,
  sub_refresh: 0x25, sub_expiring: 0x26, reconnect: 0x30, error: 0xff,
};
const CLIENT = new Set(["connect", "ping", "pong", "refresh", "request", "subscribe", "unsubscribe", "sub_refresh"]);
const SERVER = new Set(["welcome", "ping", "pong", "refreshed", "response", "subscribed", "unsubscribed", "publication", "sub_expiring", "reconnect", "error"]);
const MAX_FRAME_LEN = 1_048_576;
/** Each code's type, for decoding. */
const TYPES = new Map(Object.keys(CODES).map((t) => [CODES[t]!, t]));
/** Whether a field list has optional fields (and so starts with flags). */
const hasOptional = new Map<readonly Field[], boolean>([...Object.values(LAYOUTS)].map((f) => [f, f.some((x) => x[2] === "?")]));
/**
 * Strings up to this many UTF-16 units are encoded by hand when they are
 * ASCII (most are: names, ids, JSON payloads of a few hundred bytes); below
 * it a TextEncoder call and the array it allocates cost more.
 */
const BY_HAND = 256;

// ----- encoding -----

/**
 * One scratch buffer for every encoding (a typed array over 64 bytes costs
 * more to allocate than a small frame costs to write); the frame is copied
 * out of it at the end. An encoding started while one is under way (a
 * payload's `toJSON` that encodes) gets a buffer of its own.
 */
let scratch = new Uint8Array(4096);
let scratchBusy = false;

class Writer {
  private _buf: Uint8Array;
  private _len = 0;
  private readonly _shared: boolean;
  constructor() {
    this._shared = !scratchBusy;
    this._buf = this._shared ? scratch : new Uint8Array(256);
    if (this._shared) scratchBusy = true;
  }
  /** Make room for `n` more bytes. */
  private _room(n: number): void {
    if (this._len + n <= this._buf.length) return;
    const grown = new Uint8Array(Math.max(this._buf.length * 2, this._len + n));
    grown.set(this._buf.subarray(0, this._len));
    this._buf = grown;
    if (this._shared) scratch = grown;
  }
  uint(n: number): void {
    if (!Number.isSafeInteger(n) || n < 0) throw new TypeError(`binary codec: ${n} is not an integer from 0 to 2^53 - 1`);
    this._room(8); // 2^53 takes 8 bytes
    for (;;) {
      const low = n % 128;
      n = Math.floor(n / 128);
      if (n === 0) return void (this._buf[this._len++] = low);
      this._buf[this._len++] = low | 0x80;
    }
  }
  /** `s` in UTF-8, after its length in bytes. */
  str(s: string): void {
    const n = s.length;
    if (n <= BY_HAND) {
      const start = this._len;
      this.uint(n);
      this._room(n);
      const buf = this._buf;
      let at = this._len;
      for (let i = 0; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c > 0x7f) {
          // Not ASCII: its UTF-8 length is not `n`.
          this._len = start;
          return this.bytes(utf8.encode(s));
        }
        buf[at++] = c;
      }
      this._len = at;
      return;
    }
    this.bytes(utf8.encode(s));
  }
  bytes(b: Uint8Array): void {
    this.uint(b.length);
    this._room(b.length);
    this._buf.set(b, this._len);
    this._len += b.length;
  }
  byte(b: number): void {
    this._room(1);
    this._buf[this._len++] = b;
  }
  /** The frame, in a buffer of its own; the scratch buffer is free again. */
  done(): Uint8Array {
    this.release();
    return this._buf.slice(0, this._len);
  }
  release(): void {
    if (this._shared) scratchBusy = false;
  }
}

const utf8 = new TextEncoder();

function writeFields(w: Writer, fields: readonly Field[], m: Obj): void {
  if (hasOptional.get(fields)) {
    let flags = 0;
    let bit = 1;
    for (const f of fields) {
      if (f[2] !== "?") continue;
      if (m[f[0]] !== undefined) flags += bit;
      bit *= 2;
    }
    w.uint(flags);
  }
  for (const [name, form, opt, group] of fields) {
    const v = m[name];
    if (opt && v === undefined) continue;
    if (form === "u") w.uint(v as number);
    else if (form === "s") w.str(v as string);
    else if (form === "j") w.str(JSON.stringify(v === undefined ? null : v));
    else if (form === "b") w.byte(v ? 1 : 0);
    else writeGroup(w, group!, v as Obj);
  }
}

function writeGroup(w: Writer, fields: readonly Field[], m: Obj): void {
  for (const [name, form] of fields) {
    if (form === "u") w.uint(m[name] as number);
    else w.str(m[name] as string);
  }
}

/**
 * The binary frame of `message` (a message object in its JSON form, `type`
 * included). Throws a `TypeError` for an integer field that is not one
 * from 0 to 2^53 − 1, or a type the codec has no code for (a caller's
 * mistake: the core never builds either).
 */
export function encodeBinary(message: Obj): Uint8Array {
  const type = message["type"] as string;
  const code = Object.hasOwn(CODES, type) ? CODES[type]! : undefined;
  if (code === undefined) throw new TypeError(`binary codec: no message type ${JSON.stringify(type)}`);
  const w = new Writer();
  try {
    w.byte(code >> 8);
    w.byte(code & 0xff);
    if (type === "response") {
      w.uint(message["id"] as number);
      if (message["error"] !== undefined) {
        w.byte(1);
        writeFields(w, ERROR_BODY, message["error"] as Obj);
      } else {
        w.byte(0);
        w.str(JSON.stringify(message["result"] === undefined ? null : message["result"]));
      }
    } else {
      // A welcome's `pacing.origin_ms` is written as its last field.
      writeFields(w, LAYOUTS[type]!, type === "welcome" ? { ...message, origin_ms: (message["pacing"] as Obj | undefined)?.["origin_ms"] } : message);
    }
    return w.done();
  } finally {
    w.release();
  }
}

// ----- decoding -----

class Bad extends Error {}
const text = new TextDecoder("utf-8", { fatal: true });

/** Strings up to this many bytes are decoded by hand when they are ASCII (below it, a TextDecoder call costs more). */
const DECODE_BY_HAND = 24;

/** Reads a frame's body: from byte 2, after the code. */
class Reader {
  private _at = 2;
  constructor(private readonly _b: Uint8Array) {}
  byte(): number {
    const b = this._b[this._at];
    if (b === undefined) throw new Bad(`the frame ends at byte ${this._at}`);
    this._at++;
    return b;
  }
  uint(): number {
    const first = this.byte();
    if (first < 0x80) return first;
    // Exact below 2^53; above it the sum may round, but never to 2^53 − 1 or less.
    let value = first & 0x7f;
    let scale = 128;
    for (let i = 1; i < 10; i++) {
      const b = this.byte();
      const part = b & 0x7f;
      if (i === 9 && part > 1) throw new Bad("a uint is past 2^64");
      value += part * scale;
      if ((b & 0x80) === 0) {
        if (part === 0) throw new Bad("a uint is not in its shortest form");
        if (value > Number.MAX_SAFE_INTEGER) throw new Bad("a uint is past 2^53 - 1");
        return value;
      }
      scale *= 128;
    }
    throw new Bad("a uint is longer than 10 bytes");
  }
  str(): string {
    const len = this.uint();
    const left = this._b.length - this._at;
    if (len > left) throw new Bad(`a length of ${len} bytes with ${left} left in the frame`);
    const start = this._at;
    this._at += len;
    if (len <= DECODE_BY_HAND) {
      const b = this._b;
      let s = "";
      for (let i = start; i < start + len; i++) {
        const c = b[i]!;
        if (c > 0x7f) break;
        s += String.fromCharCode(c);
      }
      if (s.length === len) return s;
    }
    try {
      return text.decode(this._b.subarray(start, start + len));
    } catch {
      throw new Bad("a string is not UTF-8");
    }
  }
  json(): unknown {
    const t = this.str();
    try {
      return JSON.parse(t);
    } catch {
      throw new Bad("a payload is not JSON");
    }
  }
  bool(): boolean {
    const b = this.byte();
    if (b > 1) throw new Bad(`a bool is 0 or 1, not ${b}`);
    return b === 1;
  }
}

function readFields(r: Reader, fields: readonly Field[], out: Obj): Obj {
  const flags = hasOptional.get(fields) ? r.uint() : 0;
  let bit = 1;
  for (const [name, form, opt, group] of fields) {
    if (opt) {
      const present = Math.floor(flags / bit) % 2 === 1;
      bit *= 2;
      if (!present) continue;
    }
    if (form === "u") out[name] = r.uint();
    else if (form === "s") out[name] = r.str();
    else if (form === "j") out[name] = r.json();
    else if (form === "b") out[name] = r.bool();
    else {
      const g: Obj = {};
      for (const [gname, gform] of group!) g[gname] = gform === "u" ? r.uint() : r.str();
      out[name] = g;
    }
  }
  return out;
}

/**
 * Decode a binary frame sent the other way: `"server"` for a frame a client
 * receives, `"client"` for one a server receives.
 */
export function decodeBinary(frame: Uint8Array, from: "server" | "client"): Obj | DecodeError {
  if (frame.length > MAX_FRAME_LEN) return { error: "too_large", len: frame.length, max: MAX_FRAME_LEN };
  if (frame.length < 2) return { error: "missing_type" };
  const code = (frame[0]! << 8) | frame[1]!;
  const type = TYPES.get(code);
  if (!type) return { error: "unknown_type", ty: "0x" + code.toString(16).toUpperCase().padStart(4, "0") };
  const r = new Reader(frame);
  try {
    if (!(from === "server" ? SERVER : CLIENT).has(type)) throw new Bad(`a ${from === "server" ? "client" : "server"} message, sent the wrong way`);
    const out: Obj = { type };
    if (type !== "response") {
      readFields(r, LAYOUTS[type]!, out);
      if (type === "welcome") {
        // The plan's origin belongs to the pacing: without pacing it is read
        // (the frame stays well-formed) and dropped.
        const { origin_ms, ...welcome } = out;
        if (origin_ms !== undefined && welcome["pacing"]) (welcome["pacing"] as Obj)["origin_ms"] = origin_ms;
        return welcome;
      }
      return out;
    }
    out["id"] = r.uint();
    const tag = r.byte();
    if (tag === 0) out["result"] = r.json();
    else if (tag === 1) out["error"] = readFields(r, ERROR_BODY, {});
    else throw new Bad(`reply tag ${tag} (0: result, 1: error)`);
    return out;
  } catch (e) {
    if (e instanceof Bad) return { error: "invalid", kind: type, detail: e.message };
    throw e;
  }
}
