/**
 * The JSON text codec (`message/codec.rs`). Decoding never throws: a bad
 * frame becomes a typed `DecodeError` shaped like its serde form.
 */
import { MAX_FRAME_LEN, type ServerMessage } from "./messages.js";

export type DecodeError =
  | { error: "too_large"; len: number; max: number }
  | { error: "not_json"; detail: string }
  | { error: "missing_type" }
  | { error: "unknown_type"; ty: string }
  | { error: "invalid"; kind: string; detail: string };

const CLIENT_KINDS = new Set(["connect", "request", "subscribe", "unsubscribe"]);

type Obj = Record<string, unknown>;

/** Thrown inside the field readers; caught by `decodeServer`. */
class Bad extends Error {}

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

function str(o: Obj, k: string, def?: string): string {
  const v = o[k];
  if (v === undefined && def !== undefined) return def;
  if (typeof v !== "string") throw new Bad(`field ${k} must be a string`);
  return v;
}
function int(o: Obj, k: string): number {
  const v = o[k];
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw new Bad(`field ${k} must be a non-negative integer`);
  return v;
}
function optInt(o: Obj, k: string): number | undefined {
  return o[k] === undefined || o[k] === null ? undefined : int(o, k);
}
function errorBody(o: unknown): { code: string; message: string; retry_after_ms?: number } {
  if (!isObj(o)) throw new Bad("error must be an object");
  const body: { code: string; message: string; retry_after_ms?: number } = { code: str(o, "code"), message: str(o, "message", "") };
  const retry = optInt(o, "retry_after_ms");
  if (retry !== undefined) body.retry_after_ms = retry;
  return body;
}

/** UTF-8 length of `text` (only computed when it could exceed the limit). */
function utf8Length(text: string): number {
  if (text.length * 3 <= MAX_FRAME_LEN) return text.length;
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < text.length) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

function body(type: string, o: Obj): ServerMessage {
  switch (type) {
    case "welcome": {
      const m: ServerMessage = { type, session: str(o, "session"), protocol: int(o, "protocol") };
      const ping = optInt(o, "ping_interval_ms");
      if (ping !== undefined) m.ping_interval_ms = ping;
      const p = o["pacing"];
      if (p !== undefined && p !== null) {
        if (!isObj(p)) throw new Bad("pacing must be an object");
        m.pacing = { period_ms: int(p, "period_ms"), phase_ms: int(p, "phase_ms") };
      }
      return m;
    }
    case "ping":
    case "pong":
      return { type };
    case "response": {
      const id = int(o, "id");
      const hasResult = "result" in o;
      const error = o["error"] === undefined || o["error"] === null ? undefined : errorBody(o["error"]);
      if (hasResult && error) throw new Bad("a response has both result and error");
      if (error) return { type, id, error };
      if (!hasResult) throw new Bad("a response needs result or error");
      return { type, id, result: o["result"] as never };
    }
    case "subscribed": {
      const r = o["recovered"];
      if (r !== undefined && typeof r !== "boolean") throw new Bad("recovered must be a boolean");
      return { type, channel: str(o, "channel"), epoch: str(o, "epoch"), offset: int(o, "offset"), recovered: r === true };
    }
    case "unsubscribed":
      return { type, channel: str(o, "channel"), code: str(o, "code"), reason: str(o, "reason", "") };
    case "publication":
      return {
        type,
        channel: str(o, "channel"),
        epoch: str(o, "epoch"),
        offset: int(o, "offset"),
        data: o["data"] === undefined ? null : (o["data"] as never),
      };
    case "reconnect": {
      const m: ServerMessage = { type, reason: str(o, "reason"), min_delay_ms: int(o, "min_delay_ms"), max_delay_ms: int(o, "max_delay_ms") };
      if (o["message"] !== undefined && o["message"] !== null) m.message = str(o, "message");
      return m;
    }
    default: // "error"
      return { type: "error", ...errorBody(o) };
  }
}

const SERVER_KINDS = new Set(["welcome", "ping", "pong", "response", "subscribed", "unsubscribed", "publication", "reconnect", "error"]);

/** Decode one text frame from the server. */
export function decodeServer(text: string): ServerMessage | DecodeError {
  const len = utf8Length(text);
  if (len > MAX_FRAME_LEN) return { error: "too_large", len, max: MAX_FRAME_LEN };
  if (!text.trimStart().startsWith("{")) return { error: "not_json", detail: "expected a JSON object" };
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch (e) {
    return { error: "not_json", detail: String(e) };
  }
  if (!isObj(o)) return { error: "not_json", detail: "expected a JSON object" };
  const type = o["type"];
  if (typeof type !== "string") return { error: "missing_type" };
  if (!SERVER_KINDS.has(type)) {
    return CLIENT_KINDS.has(type)
      ? { error: "invalid", kind: type, detail: "a client message sent by the server" }
      : { error: "unknown_type", ty: type };
  }
  try {
    return body(type, o);
  } catch (e) {
    return { error: "invalid", kind: type, detail: (e as Error).message };
  }
}

export function isDecodeError(m: ServerMessage | DecodeError): m is DecodeError {
  return "error" in m && !("type" in m);
}
