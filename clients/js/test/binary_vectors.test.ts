// spec/vectors/binary.json through the TypeScript binary codec
// (src/binary/codec.ts), as crates/belay-proto/tests/binary_vectors.rs runs
// it through the Rust one.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { decodeBinary, encodeBinary } from "../src/binary/codec.js";
import { decodeServer } from "../src/core/codec.js";

type Case = { name: string; direction: "client" | "server"; hex: string; json?: string; error?: Record<string, unknown> };
const doc = JSON.parse(readFileSync(new URL("../vectors/binary.json", import.meta.url), "utf8")) as Record<string, Case[]>;

const bytes = (hex: string) => Uint8Array.from(hex.match(/../g) ?? [], (h) => parseInt(h, 16));
const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
/** The message of a JSON frame: the core's decoder for server messages (its defaults), as parsed for client ones. */
const fromJson = (c: Case) => (c.direction === "server" ? decodeServer(c.json!) : JSON.parse(c.json!));
// The binary frame is sent *by* `direction`; the decoder names who sent it.
const decode = (c: Case) => decodeBinary(bytes(c.hex), c.direction);

describe("binary.json", () => {
  for (const c of doc["messages"]!) {
    it(`messages/${c.name}: the same message as its JSON frame, and encodes back exactly`, () => {
      const message = decode(c);
      expect(message).toEqual(fromJson(c));
      expect(hex(encodeBinary(message as Record<string, unknown>))).toBe(c.hex);
    });
  }
  for (const c of doc["decode_ok_extensions"]!) {
    it(`decode_ok_extensions/${c.name}: a newer peer's additions are ignored`, () => {
      expect(decode(c)).toEqual(fromJson(c));
    });
  }
  for (const c of doc["decode_errors"]!) {
    it(`decode_errors/${c.name}: refused for the stated reason`, () => {
      expect(decode(c)).toMatchObject(c.error!);
    });
  }
});

describe("encodeBinary", () => {
  it("refuses an integer field that is negative, fractional or unsafe, with a TypeError", () => {
    for (const id of [-1, 1.5, Number.NaN, 2 ** 60]) {
      expect(() => encodeBinary({ type: "request", id, method: "m", params: null }), String(id)).toThrow(TypeError);
    }
  });

  it("writes a welcome's pacing.origin_ms as its last field (flag bit 3), and reads it back into the pacing", () => {
    const withOrigin = { type: "welcome", session: "s", protocol: 1, pacing: { period_ms: 20_000, phase_ms: 7_350, origin_ms: 41_000 } };
    const frame = encodeBinary(withOrigin);
    expect(hex(frame)).toBe("00020a017301a09c01b639a8c002");
    expect(decodeBinary(frame, "server")).toEqual(withOrigin);
    // No origin: no bit 3, nothing after the pacing.
    const without = { type: "welcome", session: "s", protocol: 1, pacing: { period_ms: 20_000, phase_ms: 7_350 } };
    expect(hex(encodeBinary(without))).toBe("000202017301a09c01b639");
    // An origin without pacing is read (the frame stays well-formed) and dropped.
    expect(decodeBinary(bytes("000208017301a8c002"), "server")).toEqual({ type: "welcome", session: "s", protocol: 1 });
    expect(decodeBinary(bytes("000208017301"), "server")).toMatchObject({ error: "invalid", kind: "welcome" });
  });
});

