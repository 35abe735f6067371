// The core takes a frame as text or as the object a codec of the driver's
// already made of it (`@belay/client/binary`): an object is checked field by
// field as its JSON text is, a `DecodeError` that codec returned is answered
// as the same fault in JSON, and what is not a plain object (the `Blob` a
// WebSocket makes of a binary frame, for the default entry) is refused
// `not_json`, closing 1002 as before.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { decodeServer } from "../src/core/codec.js";
import { makeConfig } from "../src/core/config.js";
import { Session, type Output } from "../src/core/session.js";
import { BelayClient, type DisconnectInfo } from "../src/index.js";
import { fixed } from "../src/policies.js";

type Vector = { name: string; frame: string | unknown[]; message?: object; error?: { error: string } };
const doc = JSON.parse(readFileSync(new URL("../vectors/codec.json", import.meta.url), "utf8")) as { decode_server: Vector[] };

describe("decodeServer on an object: the verdict of its JSON text", () => {
  // Every vector whose text is one JSON object; the faults of the text itself
  // (not JSON, too large) have no object form. Objects of a codec never hold
  // duplicated keys or non-integer literals, which JSON.parse cannot tell apart.
  const objects = doc.decode_server.filter((v) => {
    if (typeof v.frame !== "string" || v.error?.error === "not_json" || v.error?.error === "too_large") return false;
    try {
      const o: unknown = JSON.parse(v.frame);
      return typeof o === "object" && o !== null && !Array.isArray(o);
    } catch {
      return false;
    }
  });
  it("covers the vectors' messages and their bad fields", () => {
    expect(objects.filter((v) => v.message).length).toBeGreaterThan(20);
    expect(objects.filter((v) => v.error?.error === "invalid").length).toBeGreaterThan(10);
  });
  for (const v of objects) {
    it(v.name, () => {
      expect(decodeServer(JSON.parse(v.frame as string) as object)).toEqual(decodeServer(v.frame as string));
    });
  }
});

describe("decodeServer on what is not a message object", () => {
  it("passes a DecodeError from another codec on as is", () => {
    for (const e of [{ error: "unknown_type", ty: "0x1234" }, { error: "invalid", kind: "publication", detail: "the frame ends at byte 5" }, { error: "too_large", len: 9, max: 8 }, { error: "missing_type" }]) {
      expect(decodeServer(e)).toBe(e);
    }
  });
  it("refuses a Blob, an ArrayBuffer, an array and a null-prototype object as not_json", () => {
    for (const o of [new Blob(["{}"]), new ArrayBuffer(4), [{ type: "ping" }], Object.assign(Object.create(null), { type: "ping" })]) {
      expect(decodeServer(o)).toEqual({ error: "not_json", detail: "expected a JSON object" });
    }
  });
  it("a text frame that parses to an error-shaped object is not taken as a DecodeError", () => {
    expect(decodeServer('{"error":"unknown_type","ty":"x"}')).toEqual({ error: "missing_type" });
  });
});

const drain = (s: Session): Output[] => {
  const out: Output[] = [];
  for (let o = s.pollOutput(); o; o = s.pollOutput()) out.push(o);
  return out;
};

describe("the session's frame input", () => {
  function open(): Session {
    const s = new Session(makeConfig({ backoff: fixed(1000) }), 0, 1);
    s.start(0);
    s.handleInput(1, { kind: "opened", id: 1 });
    s.handleInput(2, { kind: "frame", id: 1, text: { type: "welcome", session: "s", protocol: 1 } });
    expect(s.state()).toBe("open");
    drain(s);
    return s;
  }
  it("an object with a bad field closes 1002 as its text would", () => {
    const s = open();
    s.handleInput(3, { kind: "frame", id: 1, text: { type: "subscribed", channel: "c", epoch: "e", offset: -1, recovered: false } });
    const out = drain(s);
    expect(out[0]).toEqual({ output: "close_transport", id: 1, code: 1002, reason: "malformed frame" });
    expect(out).toContainEqual(expect.objectContaining({ event: "disconnected", reason: { kind: "protocol_violation", error: { error: "invalid", kind: "subscribed", detail: "bad field offset" } } }));
  });
  it("a passed-on unknown_type is skipped and counted; too_large closes 1009", () => {
    const s = open();
    s.handleInput(3, { kind: "frame", id: 1, text: { error: "unknown_type", ty: "0x1234" } });
    expect(drain(s)).toEqual([]);
    expect(s.stats().unknownFrames).toBe(1);
    s.handleInput(4, { kind: "frame", id: 1, text: { error: "too_large", len: 2_000_000, max: 1_048_576 } });
    expect(drain(s)[0]).toEqual({ output: "close_transport", id: 1, code: 1009, reason: "frame too large" });
  });
});

it("the default entry, sent a binary frame (a Blob): close 1002 `malformed frame`, not_json, as before", () => {
  class Socket {
    static last: Socket;
    onopen: (() => void) | null = null;
    onmessage: ((e: { data: unknown }) => void) | null = null;
    onclose: ((e: { code: number; reason: string }) => void) | null = null;
    closes: unknown[][] = [];
    constructor() {
      Socket.last = this;
    }
    send() {}
    close(...args: unknown[]) {
      this.closes.push(args);
    }
  }
  const client = new BelayClient("ws://x/ws", { WebSocket: Socket as unknown as typeof WebSocket, now: () => 0, network: null, page: null, seed: 1 });
  const disconnects: DisconnectInfo[] = [];
  client.addEventListener("disconnected", (e) => disconnects.push((e as CustomEvent<DisconnectInfo>).detail));
  Socket.last.onopen!();
  Socket.last.onmessage!({ data: '{"type":"welcome","session":"s","protocol":1}' });
  // A Blob has a string `type` (its MIME type, ""): it must not pass for an unknown message.
  Socket.last.onmessage!({ data: new Blob([Uint8Array.of(0x00, 0x03)]) });
  expect(Socket.last.closes).toEqual([[1002, "malformed frame"]]);
  expect(disconnects[0]!.reason).toEqual({ kind: "protocol_violation", error: { error: "not_json", detail: "expected a JSON object" } });
  client.close();
});
