#!/usr/bin/env node
// The browser client's two codecs, message by message (`npm run bench:codec`):
// the JSON one (JSON.stringify out, the core's decodeServer in) against the
// binary one of `@belay/client/binary` (src/binary/codec.ts: encodeBinary,
// decodeBinary), and what a browser pays per received publication: JSON,
// decodeServer(text); binary, decodeBinary(frame) and the core's checks of
// the object it makes, decodeServer(object).
//
//   node bench/codec.bench.mjs [--runs 21] [--batch-ms 20] [--warm-ms 500] [--json]
//
// The sources are bundled with esbuild as the build does (minified, the same
// code the browser runs) and imported. Each case is timed in batches of N
// calls, N calibrated so a batch takes about --batch-ms; a case's figure is
// the median over --runs batches of the batch's time / N, in ns per call.
// The JSON and the binary side of a comparison run in alternate batches, so
// a change in the machine's load weighs on both alike. Before any timing,
// every function runs on every message for --warm-ms (default 500), so the
// JIT has seen all the shapes a client sees (as in a live session) whatever
// case comes first.
// Client messages (connect, request, subscribe) have no decodeServer: their
// JSON decode is JSON.parse, what a server written in JS would do first.
// Prints a Markdown table (or, with --json, one JSON document).
import { build } from "esbuild";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive whole number`);
  return n;
}
const RUNS = arg("--runs", 21);
const BATCH_MS = arg("--batch-ms", 20);
const WARM_MS = arg("--warm-ms", 500);
const AS_JSON = process.argv.includes("--json");

const out = await build({
  stdin: {
    contents: 'export { encodeBinary, decodeBinary } from "./src/binary/codec.ts"; export { decodeServer, isDecodeError } from "./src/core/codec.ts";',
    resolveDir: ROOT,
    loader: "ts",
  },
  bundle: true,
  format: "esm",
  target: "es2020",
  minify: true,
  mangleProps: /^_/,
  write: false,
  logLevel: "silent",
});
const { encodeBinary, decodeBinary, decodeServer, isDecodeError } = await import("data:text/javascript;base64," + Buffer.from(out.outputFiles[0].contents).toString("base64"));

// A typical publication payload: about 100 bytes of JSON.
const DATA = { sym: "ABC", px: 101.25, qty: 1200, side: "buy", venue: "XNAS", ts: 1714557600123, flags: ["odd_lot", "iso"] };
/** [name, direction (who sends it), message in its JSON form]. */
const MESSAGES = [
  ["connect", "client", { type: "connect", protocol: 1, token: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1LTQyIn0.c2lnbmF0dXJl", session: "s-7f3a9c2e" }],
  ["welcome", "server", { type: "welcome", session: "s-7f3a9c2e", protocol: 1, ping_interval_ms: 25000, pacing: { period_ms: 20000, phase_ms: 7350 } }],
  ["ping", "server", { type: "ping" }],
  ["request", "client", { type: "request", id: 1042, method: "orders.place", params: { sym: "ABC", qty: 100, px: 101.25 }, idem: "k-1042", timeout_ms: 10000 }],
  ["response ok", "server", { type: "response", id: 1042, result: { order: "o-99812", status: "accepted" } }],
  ["response error", "server", { type: "response", id: 1042, error: { code: "rate_limited", message: "too many requests", retry_after_ms: 250 } }],
  ["subscribe", "client", { type: "subscribe", channel: "prices.eu", since: { epoch: "e-2024-05-01", offset: 1180 } }],
  ["subscribed", "server", { type: "subscribed", channel: "prices.eu", epoch: "e-2024-05-01", offset: 1180, recovered: true }],
  ["publication", "server", { type: "publication", channel: "prices.eu", epoch: "e-2024-05-01", offset: 1181, data: DATA }],
  ["reconnect", "server", { type: "reconnect", reason: "deploy", min_delay_ms: 1000, max_delay_ms: 30000, message: "a new version is rolling out" }],
  ["error", "server", { type: "error", code: "bad_request", message: "unknown method", retry_after_ms: 100 }],
];

let sink = 0;
const keep = (v) => {
  sink ^= typeof v === "string" ? v.length : v && typeof v === "object" ? (v.length ?? 1) : 1;
};

function batch(f, n) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) keep(f());
  return Number(process.hrtime.bigint() - t) / n;
}

/** Calls of `f` for a batch of about BATCH_MS. */
function calibrate(f) {
  let n = 64;
  for (;;) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) keep(f());
    if (Number(process.hrtime.bigint() - t) >= BATCH_MS * 1e6 / 4 || n >= 1 << 24) return n * 4;
    n *= 2;
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** Median ns per call of each of `fs`, over RUNS rounds of one batch of each, in turn. */
function measure(...fs) {
  const ns = fs.map(calibrate);
  fs.forEach((f, i) => batch(f, ns[i])); // warm-up at the measured sizes
  const runs = fs.map(() => []);
  for (let r = 0; r < RUNS; r++) fs.forEach((f, i) => runs[i].push(batch(f, ns[i])));
  return runs.map(median);
}

/** Fail loudly rather than time something that does not work. */
function check(name, cond, what) {
  if (!cond) throw new Error(`${name}: ${what}`);
}

// Every function on every message, for WARM_MS.
{
  const texts = MESSAGES.map(([, , m]) => JSON.stringify(m));
  const frames = MESSAGES.map(([, , m]) => encodeBinary(m));
  const textBytes = texts.map((t) => new TextEncoder().encode(t));
  const utf8 = new TextDecoder();
  const until = process.hrtime.bigint() + BigInt(WARM_MS) * 1_000_000n;
  while (process.hrtime.bigint() < until) {
    for (let i = 0; i < MESSAGES.length; i++) {
      const [, dir, m] = MESSAGES[i];
      keep(JSON.stringify(m));
      keep(encodeBinary(m));
      const decoded = decodeBinary(frames[i], dir);
      if (dir === "server") {
        keep(decodeServer(texts[i]));
        keep(decodeServer(decoded));
        keep(decodeServer(utf8.decode(textBytes[i])));
      } else keep(JSON.parse(texts[i]));
    }
  }
}

const rows = [];
for (const [name, dir, message] of MESSAGES) {
  const text = JSON.stringify(message);
  const frame = encodeBinary(message);
  const jsonDecode = dir === "server" ? () => decodeServer(text) : () => JSON.parse(text);
  const binaryDecode = () => decodeBinary(frame, dir);
  const fromJson = jsonDecode();
  const fromBinary = binaryDecode();
  check(name, !isDecodeError(fromJson) && !("error" in fromBinary && !("type" in fromBinary)), "does not decode");
  check(name, JSON.stringify(fromBinary) === JSON.stringify(dir === "server" ? fromJson : message), "the codecs disagree");
  const [encode_json_ns, encode_binary_ns] = measure(() => JSON.stringify(message), () => encodeBinary(message));
  const [decode_json_ns, decode_binary_ns] = measure(jsonDecode, binaryDecode);
  rows.push({ message: name, direction: dir, json_bytes: Buffer.byteLength(text), binary_bytes: frame.length, encode_json_ns, encode_binary_ns, decode_json_ns, decode_binary_ns });
}

// What the browser pays per received publication, the core's checks included.
const pub = MESSAGES.find((m) => m[0] === "publication")[2];
const pubText = JSON.stringify(pub);
const pubFrame = encodeBinary(pub);
const viaBinary = () => decodeServer(decodeBinary(pubFrame, "server"));
check("publication", JSON.stringify(viaBinary()) === JSON.stringify(decodeServer(pubText)), "the two client paths disagree");
// A browser turns a text frame's UTF-8 into a string before `onmessage`, and
// hands a binary frame over as bytes: the JSON path with that step too, for
// comparison (the binary path's own UTF-8 decoding is in decodeBinary).
const pubBytes = new TextEncoder().encode(pubText);
const utf8 = new TextDecoder();
const [json_ns, binary_ns, json_from_bytes_ns] = measure(() => decodeServer(pubText), viaBinary, () => decodeServer(utf8.decode(pubBytes)));
const perPublication = { json_ns, binary_ns, json_from_bytes_ns };

const ratio = (a, b) => (a / b).toFixed(2);
if (AS_JSON) {
  console.log(JSON.stringify({ node: process.version, runs: RUNS, batch_ms: BATCH_MS, warm_ms: WARM_MS, rows, client_decode_per_publication: perPublication }, null, 2));
} else {
  const ns = (v) => v.toFixed(0);
  console.log(`Node ${process.version}, ${RUNS} runs of ~${BATCH_MS} ms batches per case (after ${WARM_MS} ms of warm-up); median ns per call; ratio = JSON / binary (> 1: binary faster)\n`);
  console.log("| message | JSON B | binary B | encode JSON ns | encode binary ns | encode ratio | decode JSON ns | decode binary ns | decode ratio |");
  console.log("|---|--:|--:|--:|--:|--:|--:|--:|--:|");
  for (const r of rows) {
    const dec = r.direction === "server" ? "" : " (JSON.parse)";
    console.log(`| ${r.message} | ${r.json_bytes} | ${r.binary_bytes} | ${ns(r.encode_json_ns)} | ${ns(r.encode_binary_ns)} | ${ratio(r.encode_json_ns, r.encode_binary_ns)} | ${ns(r.decode_json_ns)}${dec} | ${ns(r.decode_binary_ns)} | ${ratio(r.decode_json_ns, r.decode_binary_ns)} |`);
  }
  console.log(`\nClient decode cost per publication (${pubText.length} B JSON, ${pubFrame.length} B binary; data ${JSON.stringify(pub.data).length} B):`);
  console.log("\n| path | ns | ratio JSON / binary |");
  console.log("|---|--:|--:|");
  console.log(`| JSON: decodeServer(text) | ${ns(perPublication.json_ns)} | ${ratio(perPublication.json_ns, perPublication.binary_ns)} |`);
  console.log(`| binary: decodeBinary(frame) + decodeServer(object) | ${ns(perPublication.binary_ns)} | 1.00 |`);
  console.log(`| JSON from the frame's bytes: TextDecoder + decodeServer (adds the UTF-8 step a browser does before onmessage) | ${ns(perPublication.json_from_bytes_ns)} | ${ratio(perPublication.json_from_bytes_ns, perPublication.binary_ns)} |`);
}
if (sink === 0.5) console.log(""); // keeps `sink` live
