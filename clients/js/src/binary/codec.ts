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
 * Not yet in any entry: no server speaks the codec on the wire so far
 * (issue 17); the vectors (`spec/vectors/binary.json`) run it.
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
  welcome: [["session", "s"], ["protocol", "u"], ["ping_interval_ms", "u", "?"], ["pacing", "g", "?", [["period_ms", "u"], ["phase_ms", "u"]]], ["expires_in_ms", "u", "?"]],
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
  reconnect: [["reason", "s"], ["min_delay_ms", "u"], ["max_delay_ms", "u"], ["message", "s", "?"]],
  error: ERROR_BODY,
};
const CODES: Record<string, number> = {
  connect: 0x01, welcome: 0x02, ping: 0x03, pong: 0x04, refresh: 0x05, refreshed: 0x06, request: 0x10, response: 0x11,
  subscribe: 0x20, subscribed: 0x21, unsubscribe: 0x22, unsubscribed: 0x23, publication: 0x24, reconnect: 0x30, error: 0xff,
};
const CLIENT = new Set(["connect", "ping", "pong", "refresh", "request", "subscribe", "unsubscribe"]);
const SERVER = new Set(["welcome", "ping", "pong", "refreshed", "response", "subscribed", "unsubscribed", "publication", "reconnect", "error"]);
const MAX_FRAME_LEN = 1_048_576;

// ----- encoding -----

class Writer {
  private readonly _out: number[] = [];
  uint(n: number): void {
    if (!Number.isSafeInteger(n) || n < 0) throw new TypeError(`binary codec: ${n} is not an integer from 0 to 2^53 - 1`);
    for (;;) {
      const low = n % 128;
      n = Math.floor(n / 128);
      if (n === 0) return void this._out.push(low);
      this._out.push(low | 0x80);
    }
  }
  bytes(b: Uint8Array): void {
    this.uint(b.length);
    for (const x of b) this._out.push(x);
  }
  byte(b: number): void {
    this._out.push(b);
  }
  done(): Uint8Array {
    return Uint8Array.from(this._out);
  }
}

const utf8 = new TextEncoder();

function writeFields(w: Writer, fields: readonly Field[], m: Obj): void {
  const optional = fields.filter((f) => f[2] === "?");
  if (optional.length > 0) w.uint(optional.reduce((bits, f, i) => (m[f[0]] !== undefined ? bits + 2 ** i : bits), 0));
  for (const [name, form, opt, group] of fields) {
    const v = m[name];
    if (opt && v === undefined) continue;
    if (form === "u") w.uint(v as number);
    else if (form === "s") w.bytes(utf8.encode(v as string));
    else if (form === "j") w.bytes(utf8.encode(JSON.stringify(v === undefined ? null : v)));
    else if (form === "b") w.byte(v ? 1 : 0);
    else writeGroup(w, group!, v as Obj);
  }
}

function writeGroup(w: Writer, fields: readonly Field[], m: Obj): void {
  for (const [name, form] of fields) {
    if (form === "u") w.uint(m[name] as number);
    else w.bytes(utf8.encode(m[name] as string));
  }
}

/**
 * The binary frame of `message` (a message object in its JSON form, `type`
 * included). Throws a `TypeError` for an integer field that is not one
 * from 0 to 2^53 − 1 (a caller's mistake: the core never builds one).
 */
export function encodeBinary(message: Obj): Uint8Array {
  const type = message["type"] as string;
  const w = new Writer();
  const code = CODES[type]!;
  w.byte(code >> 8);
  w.byte(code & 0xff);
  if (type === "response") {
    w.uint(message["id"] as number);
    if (message["error"] !== undefined) {
      w.byte(1);
      writeFields(w, ERROR_BODY, message["error"] as Obj);
    } else {
      w.byte(0);
      w.bytes(utf8.encode(JSON.stringify(message["result"] === undefined ? null : message["result"])));
    }
  } else writeFields(w, LAYOUTS[type]!, message);
  return w.done();
}

// ----- decoding -----

class Bad extends Error {}
const text = new TextDecoder("utf-8", { fatal: true });

class Reader {
  private _at = 0;
  constructor(private readonly _b: Uint8Array) {}
  byte(): number {
    const b = this._b[this._at];
    if (b === undefined) throw new Bad(`the frame ends at byte ${this._at + 2}`);
    this._at++;
    return b;
  }
  uint(): number {
    let value = 0n;
    for (let i = 0; i < 10; i++) {
      const b = this.byte();
      const part = BigInt(b & 0x7f);
      if (i === 9 && part > 1n) throw new Bad("a uint is past 2^64");
      value |= part << BigInt(7 * i);
      if ((b & 0x80) === 0) {
        if (i > 0 && part === 0n) throw new Bad("a uint is not in its shortest form");
        if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new Bad("a uint is past 2^53 - 1");
        return Number(value);
      }
    }
    throw new Bad("a uint is longer than 10 bytes");
  }
  str(): string {
    const len = this.uint();
    const left = this._b.length - this._at;
    if (len > left) throw new Bad(`a length of ${len} bytes with ${left} left in the frame`);
    const bytes = this._b.subarray(this._at, this._at + len);
    this._at += len;
    try {
      return text.decode(bytes);
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
  const hasOptional = fields.some((f) => f[2] === "?");
  const flags = hasOptional ? r.uint() : 0;
  let bit = 0;
  for (const [name, form, opt, group] of fields) {
    if (opt && Math.floor(flags / 2 ** bit++) % 2 === 0) continue;
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
  const type = Object.keys(CODES).find((t) => CODES[t] === code);
  if (!type) return { error: "unknown_type", ty: "0x" + code.toString(16).toUpperCase().padStart(4, "0") };
  const r = new Reader(frame.subarray(2));
  try {
    if (!(from === "server" ? SERVER : CLIENT).has(type)) throw new Bad(`a ${from === "server" ? "client" : "server"} message, sent the wrong way`);
    const out: Obj = { type };
    if (type !== "response") return readFields(r, LAYOUTS[type]!, out);
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
