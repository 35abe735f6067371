#!/usr/bin/env node
// The real peers as fault-lab agents: socket.io-client (defaults or tuned),
// partysocket or reconnecting-websocket, in Node or in headless Chromium,
// reporting what the application sees as one JSON object per line on stdout
// (the lab's agent protocol: docs/LAB.md; clients/js/lab/agent.mjs is the
// Belay browser client's agent).
//
//   node peers/lab/agent.mjs --url ws://HOST:PORT/ws --client socketio|socketio-tuned|partysocket|rws
//        [--channel feed] [--request-every-ms 200] [--request-timeout-ms 1000] [--connect-timeout-ms 2000]
//        [--browser --chromium /usr/bin/chromium]
//
// socketio*: the URL is a socket.io lab server's front (server.mjs; the
// path is ignored). partysocket, rws: a Belay server's /ws.
// Lines: started, dial, ready, via (socket.io: polling | websocket), lost,
// pub, resync (socketio-tuned), sent, settled. EOF on stdin stops the client
// and exits 0 (within 3 s). Exit 2: bad arguments; exit 1: failure.
//
// --browser: the same client code (src/peers.mjs), bundled with esbuild for
// the browser, runs in a page of headless Chromium (playwright-core) on the
// server's own /healthz document (same origin, as Chromium's
// local-network-access checks want), over the browser's WebSocket.
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { PEERS } from "./src/peers.mjs";

const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const log = (msg) => process.stderr.write(`[peer-agent] ${msg}\n`);
const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

function options() {
  const { values: v } = parseArgs({
    options: {
      url: { type: "string", default: "" },
      client: { type: "string", default: "" },
      channel: { type: "string", default: "feed" },
      "request-every-ms": { type: "string", default: "200" },
      "request-timeout-ms": { type: "string", default: "1000" },
      "connect-timeout-ms": { type: "string", default: "2000" },
      browser: { type: "boolean", default: false },
      chromium: { type: "string", default: process.env.CHROMIUM || "/usr/bin/chromium" },
    },
  });
  const ms = (name) => {
    const n = Number(v[name]);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number of ms`);
    return n;
  };
  if (!PEERS.includes(v.client)) throw new Error(`--client must be one of ${PEERS.join(", ")}`);
  const u = new URL(v.url);
  if (u.protocol !== "ws:") throw new Error(`--url must be ws://, got ${v.url}`);
  return {
    url: v.url, client: v.client, channel: v.channel, browser: v.browser, chromium: v.chromium,
    origin: `http://${u.host}`,
    requestEveryMs: ms("request-every-ms"), requestTimeoutMs: ms("request-timeout-ms"),
    connectTimeoutMs: ms("connect-timeout-ms"),
  };
}

/** Run `finish` once stdin ends; it must exit the process. */
function onStdinEnd(finish) {
  process.stdin.on("end", finish);
  process.stdin.on("error", finish);
  process.stdin.resume();
}

async function inNode(o) {
  const { default: WS } = await import("ws");
  const { startPeer } = await import("./src/peers.mjs");
  out({ ev: "started" });
  const client = startPeer(o, out, WS);
  onStdinEnd(() => {
    setTimeout(() => process.exit(0), 3000).unref();
    try { client.stop(); } catch { /* already closed */ }
    setTimeout(() => process.exit(0), 100);
  });
}

/** src/peers.mjs bundled for the page. */
async function bundle() {
  const esbuild = await import("esbuild");
  const entry = fileURLToPath(new URL("./src/peers.mjs", import.meta.url));
  const built = await esbuild.build({
    entryPoints: [entry], bundle: true, format: "esm", platform: "browser", write: false, logLevel: "silent",
  });
  return built.outputFiles[0].text;
}

async function inBrowser(o) {
  if (!existsSync(o.chromium)) throw new Error(`no chromium at ${o.chromium} (apt-get install chromium)`);
  const code = await bundle();
  const { chromium } = await import("playwright-core");
  const profile = mkdtempSync(join(tmpdir(), "belay-peer-agent-"));
  let context;
  let page;
  let closing = false;
  const finish = async (status) => {
    if (closing) return;
    closing = true;
    setTimeout(() => process.exit(status), 2500).unref();
    try {
      await page?.evaluate(() => window.__peer?.stop()).catch(() => {});
      await context?.close();
    } catch { /* the browser is gone already */ }
    rmSync(profile, { recursive: true, force: true });
    process.exit(status);
  };
  onStdinEnd(() => finish(0));
  context = await chromium.launchPersistentContext(profile, { executablePath: o.chromium, headless: true, args: FLAGS, timeout: 30_000 });
  context.on("close", () => { if (!closing) { log("the browser closed"); finish(1); } });
  page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (e) => log(`page error: ${e.message}`));
  page.on("crash", () => { log("the page crashed"); finish(1); });
  await page.exposeFunction("__peerOut", (line) => process.stdout.write(line + "\n"));
  await page.route(`${o.origin}/__peer_lab/peers.js`, (route) => route.fulfill({ contentType: "text/javascript", body: code }));
  // The lab may start us while the path is faulty: retry for 15 s.
  for (const until = Date.now() + 15_000; ;) {
    const res = await page.goto(`${o.origin}/healthz`, { waitUntil: "load", timeout: 5_000 }).catch((e) => e);
    if (res && typeof res.ok === "function" && res.ok()) break;
    const why = res instanceof Error ? res.message.split("\n")[0] : `HTTP ${res ? res.status() : "nothing"}`;
    if (Date.now() > until) throw new Error(`GET ${o.origin}/healthz failed: ${why}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  await page.evaluate(async (opts) => {
    const { startPeer } = await import("/__peer_lab/peers.js");
    const emit = (obj) => window.__peerOut(JSON.stringify(obj));
    emit({ ev: "started" });
    window.__peer = startPeer(opts, emit, window.WebSocket);
  }, o);
  log(`running ${o.client} in Chromium against ${o.url}`);
}

let opts;
try {
  opts = options();
} catch (e) {
  process.stderr.write(`agent: ${e.message}\n`);
  process.exit(2);
}
(opts.browser ? inBrowser(opts) : inNode(opts)).catch((e) => {
  log(`failed: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
