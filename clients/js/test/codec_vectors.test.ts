/**
 * Runs the codec vectors (../../spec/vectors/codec.json, format in its
 * README.md) for what the browser client implements: decoding server
 * messages (`decode_server`) and encoding client messages (`encode_client`).
 * The Rust core runs every section (crates/belay-proto/tests/codec_vectors.rs).
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { decodeServer, isDecodeError } from "../src/core/codec.js";
import { makeConfig } from "../src/core/config.js";
import type { ClientMessage } from "../src/core/messages.js";
import { Session, type Output } from "../src/core/session.js";
import { fixed } from "../src/policies.js";

type J = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const VECTORS = join(dirname(fileURLToPath(import.meta.url)), "../vectors/codec.json");
const doc: J = JSON.parse(readFileSync(VECTORS, "utf8"));

/**
 * Vectors the browser client is known to fail, each with the reason. They
 * run as `it.fails`: one that starts passing fails the suite, so the entry
 * must then be removed. Both need the frame's text, which `JSON.parse` does
 * not expose (and a scanner of our own does not fit the size budget).
 */
const KNOWN_DEVIATIONS: Record<string, string> = {
  ...Object.fromEntries(
    [
      "duplicate_type_same",
      "duplicate_type_different",
      "duplicate_type_body_message",
      "duplicate_type_escaped",
      "duplicate_type_unknown",
      "duplicate_type_after_whitespace",
    ].map((name) => [name, "JSON.parse keeps the last of duplicated keys: a second `type` is not seen (PROTOCOL.md §8.1: NotJson)"]),
  ),
  ...Object.fromEntries(
    [
      "welcome_protocol_float_literal",
      "welcome_protocol_exponent_literal",
      "subscribed_offset_exponent_literal",
      "publication_offset_float_literal",
    ].map((name) => [name, "JSON.parse reads 1.0 and 1e3 as integers (PROTOCOL.md §1.1: integer literals only)"]),
  ),
};

/** A text written as a string or as pieces (`{"repeat": s, "times": n}`). */
const textOf = (t: J): string =>
  typeof t === "string" ? t : t.map((p: J) => (typeof p === "string" ? p : p.repeat.repeat(p.times))).join("");

const short = (s: string): string => (s.length > 300 ? `${s.slice(0, 300)}… (${s.length} chars)` : s);
const show = (v: J): string => {
  try {
    return short(JSON.stringify(v));
  } catch {
    return String(v);
  }
};

/** The payload field of a decoded server message, if it has one. */
const PAYLOAD: Record<string, string> = { publication: "data", response: "result" };

function checkDecoded(v: J): void {
  const frame = textOf(v.frame);
  const got: J = decodeServer(frame);
  const where = `${v.name}: frame ${short(frame)}`;
  if (v.message !== undefined) {
    if (isDecodeError(got)) throw new Error(`${where} should decode to ${show(v.message)}, got ${show(got)}`);
    const message = { ...got };
    const key = PAYLOAD[message.type];
    const hasPayload = key !== undefined && key in message;
    const payload = hasPayload ? message[key] : undefined;
    if (hasPayload) delete message[key];
    expect(message, where).toStrictEqual(v.message);
    if (v.payload === undefined) {
      expect(hasPayload, `${where}: unexpected payload ${show(payload)}`).toBe(false);
    } else {
      expect(hasPayload, `${where}: expected a payload`).toBe(true);
      // This client parses payloads: it must hold what JSON.parse reads from the payload's text.
      expect(payload, `${where}: payload`).toEqual(JSON.parse(textOf(v.payload)));
    }
  } else {
    if (!isDecodeError(got)) throw new Error(`${where} should fail with ${show(v.error)}, got ${show(got)}`);
    expect(v.error.detail, `${v.name}: a vector never matches detail`).toBeUndefined();
    // Subset match: every expected key (error, kind, ty, len, max) is equal.
    const error: J = got;
    for (const k of Object.keys(v.error)) {
      expect(error[k], `${where}: ${k} (expected ${show(v.error)}, got ${show(got)})`).toEqual(v.error[k]);
    }
  }
}

describe("codec.json decode_server", () => {
  for (const v of doc.decode_server) {
    const known = KNOWN_DEVIATIONS[v.name];
    (known ? it.fails : it)(known ? `${v.name} (known deviation: ${known})` : v.name, () => checkDecoded(v));
  }
  it("every known deviation names a vector", () => {
    const names = new Set(doc.decode_server.map((v: J) => v.name));
    expect(Object.keys(KNOWN_DEVIATIONS).filter((n) => !names.has(n))).toEqual([]);
  });
});

describe("codec.json encode_client", () => {
  // The browser client's encoder is JSON.stringify of the message objects the
  // session builds (client.ts): for the vector's message, written in wire
  // field order, the text must be exact (escapes, numbers, no whitespace).
  for (const v of doc.encode_client) {
    it(v.name, () => {
      expect(JSON.parse(v.text), `${v.name}: invalid vector, text is not the message`).toEqual(v.message);
      expect(JSON.stringify(v.message as ClientMessage)).toBe(v.text);
    });
  }

  it("the session builds every client message in the vectors' field order", () => {
    // Wire order of each type: the keys of its vector with the most fields;
    // every other vector of the type must list its keys in that order too.
    const order: Record<string, string[]> = {};
    const isOrdered = (keys: string[], wire: string[]): boolean => {
      let at = 0;
      for (const k of keys) {
        at = wire.indexOf(k, at);
        if (at < 0) return false;
      }
      return true;
    };
    const vectorsByKeys = [...doc.encode_client].sort((a: J, b: J) => Object.keys(b.message).length - Object.keys(a.message).length);
    for (const v of vectorsByKeys) {
      const keys = Object.keys(v.message);
      const wire = (order[v.message.type] ??= keys);
      expect(isOrdered(keys, wire), `${v.name}: keys ${keys} out of the order ${wire}`).toBe(true);
    }
    const since = doc.encode_client.find((v: J) => v.message.since).message.since;

    // One session that sends every client message type, with every optional field.
    const s = new Session(makeConfig({ backoff: fixed(1000), token: "t" }), 0, 1);
    const sent: ClientMessage[] = [];
    const drain = (): void => {
      for (let o: Output | undefined = s.pollOutput(); o; o = s.pollOutput()) if (o.output === "transmit") sent.push(o.message);
    };
    const frame = (at: number, id: number, text: string): void => {
      s.handleInput(at, { kind: "frame", id, text });
      drain();
    };
    s.start(0);
    s.handleInput(1, { kind: "opened", id: 1 });
    frame(2, 1, '{"type":"welcome","session":"s-1","protocol":1}');
    s.subscribe(3, "c", "st");
    frame(4, 1, '{"type":"subscribed","channel":"c","epoch":"e","offset":0}');
    frame(5, 1, '{"type":"publication","channel":"c","epoch":"e","offset":1,"data":null}');
    s.request(6, { method: "m", params: { a: 1 }, idempotencyKey: "k", timeoutMs: 100 });
    s.checkLiveness(7);
    frame(8, 1, '{"type":"ping"}');
    s.handleInput(9, { kind: "closed", id: 1, code: 1012, reason: "" });
    drain();
    s.handleTimeout(s.pollTimeout()!);
    drain();
    s.handleInput(s.pollTimeout()! - 1, { kind: "opened", id: 2 });
    drain();
    frame(s.pollTimeout()! - 1, 2, '{"type":"welcome","session":"s-2","protocol":1}');
    s.unsubscribe(s.pollTimeout()! - 1, "c");
    drain();

    const types = new Set(sent.map((m) => m.type));
    expect([...types].sort()).toEqual(["connect", "ping", "pong", "request", "subscribe", "unsubscribe"]);
    expect(sent).toContainEqual({ type: "connect", protocol: 1, token: "t", session: "s-1" });
    expect(sent).toContainEqual({ type: "subscribe", channel: "c", since: { epoch: "e", offset: 1 }, token: "st" });
    for (const m of sent) {
      const keys = Object.keys(m);
      expect(isOrdered(keys, order[m.type]!), `${JSON.stringify(m)} out of the order ${order[m.type]}`).toBe(true);
      if ("since" in m && m.since) expect(Object.keys(m.since)).toEqual(Object.keys(since));
    }
  });
});
