/**
 * Reading the fallback's event stream (spec/PROTOCOL.md §1.7): text in,
 * whole events out. One bound: text that holds no complete event past a
 * frame's size (1 MiB, with room for the framing) is refused before more is
 * buffered, as a WebSocket frame over the limit is.
 */

/** A frame's limit (§1.4) and room for `event:`, `data:` and the line breaks. */
const MAX_EVENT_CHARS = 1_048_576 + 1024;

export type StreamEvent =
  | { kind: "open"; stream: string }
  | { kind: "message"; text: string }
  | { kind: "close"; code: number; reason: string };

export class EventReader {
  private _buffer = "";

  /** Add `text`; every event it completes, in order. Throws a `TypeError` saying what broke. */
  push(text: string): StreamEvent[] {
    this._buffer += text.replace(/\r\n?/g, "\n");
    const events: StreamEvent[] = [];
    let end: number;
    while ((end = this._buffer.indexOf("\n\n")) >= 0) {
      const block = this._buffer.slice(0, end);
      this._buffer = this._buffer.slice(end + 2);
      const event = parse(block);
      if (event) events.push(event);
    }
    if (this._buffer.length > MAX_EVENT_CHARS) throw new TypeError("an event from the server is over the frame limit");
    return events;
  }
}

/** One block of lines; `undefined` for one with no data (a comment, padding). */
function parse(block: string): StreamEvent | undefined {
  let name = "";
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  if (data.length === 0) return undefined;
  const text = data.join("\n");
  if (name === "") return { kind: "message", text };
  if (name !== "open" && name !== "close") return undefined; // another named event: not ours, skipped
  const body = JSON.parse(text) as { stream?: unknown; code?: unknown; reason?: unknown };
  if (name === "open" && typeof body.stream === "string") return { kind: "open", stream: body.stream };
  if (name === "close" && typeof body.code === "number") return { kind: "close", code: body.code, reason: typeof body.reason === "string" ? body.reason : "" };
  throw new TypeError(`a \`${name}\` event whose data is not what §1.7 says`);
}
