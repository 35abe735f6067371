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

type Obj = Record<string, unknown>;

/**
 * Each server message's fields, a field's name followed by its kind (one
 * character), one table for decoding and validation. Kinds: `s` string; `S` string, "" if absent; `t` string,
 * omitted if absent or null; `i` integer >= 0; `n` integer >= 0, omitted if
 * absent or null; `b` boolean, false if absent; `j` any JSON, null if
 * absent; `P` the pacing object, `E` an error body (both omitted if absent
 * or null). `response` also needs exactly one of `result` and `error`.
 */
const ERROR_BODY = "codes messageS retry_after_msn";
const SCHEMA: Record<string, string> = {
  welcome: "sessions protocoli ping_interval_msn pacingP expires_in_msn",
  ping: "",
  pong: "",
  refreshed: "expires_in_msn",
  response: "idi errorE",
  subscribed: "channels epochs offseti recoveredb",
  unsubscribed: "channels codes reasonS",
  publication: "channels epochs offseti dataj",
  reconnect: "reasons min_delay_msi max_delay_msi messaget",
  error: ERROR_BODY,
};
// Only `@belay/client/full` refreshes subscription tokens; the default entry skips it as unknown.
if (globalThis.BELAY_FULL !== false) SCHEMA["sub_expiring"] = "channels expires_in_msi";
const NESTED: Record<string, string> = { P: "period_msi phase_msi origin_msn", E: ERROR_BODY };
const CLIENT_KINDS = ["connect", "refresh", "request", "subscribe", "unsubscribe"];

const isObj = (v: unknown): v is Obj => v != null && Object.getPrototypeOf(v) === Object.prototype;

/** Read `spec`'s fields of `o` into `into`; throws the name of the first bad field. */
function read(o: Obj, spec: string, into: Obj): Obj {
  for (const field of spec.split(" ")) {
    if (!field) continue;
    const k = field.slice(0, -1);
    const kind = field.slice(-1);
    let v = o[k];
    if (v == null && "tnPE".includes(kind)) continue; // optional and absent (JSON null counts as absent)
    if (v === undefined) v = kind === "S" ? "" : kind === "b" ? false : kind === "j" ? null : v;
    const ok =
      "sSt".includes(kind) ? typeof v === "string"
      : "in".includes(kind) ? Number.isInteger(v) && (v as number) >= 0
      : kind === "b" ? typeof v === "boolean"
      : kind === "j" || isObj(v);
    if (!ok) throw k;
    into[k] = NESTED[kind] ? read(v as Obj, NESTED[kind], {}) : v;
  }
  return into;
}

/**
 * A frame's length to compare with `MAX_FRAME_LEN`: its UTF-8 length, only
 * counted when the UTF-16 length allows more than the limit (below that, the
 * UTF-16 length, which is no larger than the limit either).
 */
export const frameLen = (text: string): number => (text.length * 3 > MAX_FRAME_LEN ? new TextEncoder().encode(text).length : text.length);

/** `too_large` if `text` is a frame longer than `MAX_FRAME_LEN`, else undefined. */
export function tooLarge(text: string): { error: "too_large"; len: number; max: number } | undefined {
  const len = frameLen(text);
  return len > MAX_FRAME_LEN ? { error: "too_large", len, max: MAX_FRAME_LEN } : undefined;
}

/**
 * Decode one frame from the server: a text frame, or the object another
 * codec read from a frame (`@belay/client/binary`): no JSON parse, the same
 * checks of every field; a `DecodeError` that codec returned is passed on
 * as is. Anything else, such as the `Blob` a WebSocket makes of a binary
 * frame, is not a message object (`not_json`).
 */
export function decodeServer(text: string | object): ServerMessage | DecodeError {
  let o: unknown = text;
  if (typeof text == "string") {
    const big = tooLarge(text);
    if (big) return big;
    try {
      o = JSON.parse(text);
    } catch (e) {
      return { error: "not_json", detail: String(e) };
    }
  } else if (isDecodeError(text as ServerMessage)) return text as DecodeError;
  if (!isObj(o)) return { error: "not_json", detail: "expected a JSON object" };
  const type = o["type"];
  if (typeof type !== "string") return { error: "missing_type" };
  const invalid = (detail: string): DecodeError => ({ error: "invalid", kind: type, detail });
  if (!Object.hasOwn(SCHEMA, type)) {
    return CLIENT_KINDS.includes(type) ? invalid("a client message sent by the server") : { error: "unknown_type", ty: type };
  }
  let m: Obj;
  try {
    m = read(o, SCHEMA[type]!, { type });
  } catch (field) {
    return invalid(`bad field ${field as string}`);
  }
  if (type === "response") {
    if ("result" in o === "error" in m) return invalid("exactly one of result and error");
    if (!m["error"]) m["result"] = o["result"];
  }
  return m as unknown as ServerMessage;
}

export function isDecodeError(m: ServerMessage | DecodeError): m is DecodeError {
  return "error" in m && !("type" in m);
}
