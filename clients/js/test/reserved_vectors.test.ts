/**
 * Runs the reserved methods' vectors (../../spec/vectors/reserved.json,
 * format in its README.md) for what this client sends and reads: the
 * params its entries build (`publish`, `presence`, `presenceStats`) must be
 * the vectors' `encoded` JSON, and the results they return must hold the
 * vectors' `fields`. `$call` and `$answer` have no entry here (no host
 * mode, no call helper): their params and deliveries are checked against
 * the types of src/reserved.ts only. The Rust core runs every section,
 * invalid params included (crates/belay-proto/tests/reserved_vectors.rs).
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { Json } from "../src/core/messages.js";
import { presence, presenceStats } from "../src/presence.js";
import { publish } from "../src/publish.js";
import type { AnswerParams, AnswerResult, CallParams, HostCallDelivery } from "../src/reserved.js";

type J = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const VECTORS = join(dirname(fileURLToPath(import.meta.url)), "../vectors/reserved.json");
const doc: J = JSON.parse(readFileSync(VECTORS, "utf8"));

/** A client whose `request` records what it was asked and answers `result`. */
function recording(result: Json = null) {
  const sent: [string, Json][] = [];
  const client = {
    request(method: string, params: Json) {
      sent.push([method, params]);
      return Promise.resolve(result);
    },
  };
  return { client, sent };
}

/** What the vector says the typed value encodes to. */
const encoded = (v: J): Json => ("encoded" in v ? v.encoded : JSON.parse(v.json));

describe("reserved.json params", () => {
  for (const v of doc.params as J[]) {
    it(v.name, async () => {
      const f = v.fields;
      const { client, sent } = recording({ offset: 0, epoch: "", members: [], clients: 0, users: 0 });
      switch (v.method) {
        case "$publish":
          await publish(client, f.channel, f.data);
          break;
        case "$presence":
        case "$presence_stats":
          // The entries send no subscription token.
          if (f.token !== null) return;
          if (v.method === "$presence") await presence(client, f.channel);
          else await presenceStats(client, f.channel);
          break;
        case "$call": {
          const params: CallParams = { host: f.host, method: f.method, params: f.params };
          sent.push([v.method, params as unknown as Json]);
          break;
        }
        case "$answer": {
          const params: AnswerParams =
            "result" in f ? { call: f.call, result: f.result } : { call: f.call, error: withoutNulls(f.error) };
          sent.push([v.method, params as unknown as Json]);
          break;
        }
        default:
          throw new Error(`unknown method ${v.method}`);
      }
      expect(sent).toEqual([[v.method, encoded(v)]]);
    });
  }
});

describe("reserved.json results", () => {
  for (const v of doc.results as J[]) {
    it(v.name, async () => {
      const answer = JSON.parse(v.json);
      const { client } = recording(answer);
      switch (v.method) {
        case "$publish":
          expect(await publish(client, "c", null)).toEqual(v.fields);
          break;
        case "$presence": {
          const members = await presence(client, "c");
          // An absent `info` is the vectors' `null`.
          expect({ members: members.map((m) => ({ ...m, info: m.info ?? null })) }).toEqual(v.fields);
          break;
        }
        case "$presence_stats":
          expect(await presenceStats(client, "c")).toEqual(v.fields);
          break;
        case "$answer": {
          const result: AnswerResult = answer;
          expect(result).toEqual(v.fields);
          break;
        }
        default:
          throw new Error(`unknown method ${v.method}`);
      }
    });
  }
});

describe("reserved.json deliveries (types only)", () => {
  for (const v of doc.deliveries as J[]) {
    it(v.name, () => {
      const delivery: HostCallDelivery = { call: v.fields.call, method: v.fields.method, params: v.fields.params };
      expect(delivery).toEqual(encoded(v));
    });
  }
});

/** An error body's fields without the ones the vectors write as `null` (absent). */
function withoutNulls(error: J): J {
  return Object.fromEntries(Object.entries(error).filter(([, value]) => value !== null));
}
