#!/usr/bin/env node
// The browser client as a fault-lab agent: runs the Belay browser client (or
// the naive baseline) in real headless Chromium against a Belay server and
// reports what the application sees, one JSON object per line on stdout.
//
//   node clients/js/lab/agent.mjs --url ws://HOST:PORT/ws --mode belay|naive
//        [--channel feed] [--request-every-ms 200] [--request-timeout-ms 1000] [--connect-timeout-ms 10000]
//        [--fallback-retry-ms N] [--codec json|binary] [--token JWT] [--call-host ID]
//        [--chromium /usr/bin/chromium]
//
// --fallback-retry-ms N (belay mode): run the client with its SSE + HTTP
// fallback (@belay/client/fallback), trying a WebSocket again every N ms
// while on it; every `ready` is then followed by a `via` line.
// --codec binary (belay mode): run the client on @belay/client/binary, which
// offers the binary codec (subprotocols belay.bin.1, belay.json.1) on every
// WebSocket; every `ready` is then followed (after `via`, if any) by a
// `codec` line: what the connection it is ready on speaks. The server must
// negotiate (a browser fails an upgrade whose 101 names no subprotocol when
// the page offered some). --codec json (the default): the client as it is.
// With both, the WebSocket dials are binary and the SSE stream JSON.
// --token JWT (belay mode): connect with this token (a server that checks JWTs).
// --call-host ID (belay mode): each request is a call to resident host ID's
// `echo` (`$call` {host, method: "echo", params: {k}}) instead of the
// server's; one the host took with it when it went away settles `host_lost`.
//
// Lines (stdout carries nothing else; logs go to stderr):
//   {"ev":"started"}                      the page is up and the client created
//   {"ev":"dial"}                         a connection attempt (socket created)
//   {"ev":"ready"}                        the client considers itself ready
//   {"ev":"via","transport":"sse"}        ... over this transport (websocket | sse; with --fallback-retry-ms)
//   {"ev":"codec","codec":"binary"}       ... speaking this codec (binary | json; with --codec binary)
//   {"ev":"lost","why":"..."}             ... and no longer ready
//   {"ev":"pub","offset":N,"epoch":"E"}   a publication delivered to the app
//   {"ev":"resync"}                       history was lost (explicit resync)
//   {"ev":"sent","id":K}                  the app issued request K (echo {"k":K};
//                                         --request-every-ms 0: no requests)
//   {"ev":"settled","id":K,"outcome":O}   O: ok | timeout | not_ready | closed | error | host_lost
// The naive baseline has no request timeout: its requests settle only on a
// response, or never. EOF on stdin closes the client and the browser and
// exits 0 (within 3 s). Exit 2: bad arguments; exit 1: the browser failed.
//
// The page is the server's /healthz document (so it is on the server's
// origin); its scripts, injected through request interception so any Belay
// server works, are the demo server's own assets,
// crates/belay-demo/assets/{modes.js,belay.js,fallback.js}: the same code the demo page
// and the Chromium e2e table run. With --codec binary, also /binary.js: the
// entry @belay/client/binary bundled from clients/js/src at start, as
// `npm run build` bundles it (the demo server does not serve it). Needs
// `npm ci` in clients/js (for playwright-core and esbuild) and Debian's
// chromium; no build step.
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ASSETS = fileURLToPath(new URL("../../../crates/belay-demo/assets/", import.meta.url));
export const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

const log = (msg) => process.stderr.write(`[agent] ${msg}\n`);

function usage(problem) {
  process.stderr.write(`agent: ${problem}\nusage: node clients/js/lab/agent.mjs --url ws://HOST:PORT/ws --mode belay|naive `
    + "[--channel feed] [--request-every-ms 200] [--request-timeout-ms 1000] [--connect-timeout-ms 10000] [--fallback-retry-ms N] [--codec json|binary] [--token JWT] [--call-host ID] [--chromium /usr/bin/chromium]\n");
  process.exit(2);
}

export function parseArgs(argv) {
  const o = { url: "", mode: "belay", channel: "feed", requestEveryMs: 200, requestTimeoutMs: 1000, connectTimeoutMs: 10000, fallbackRetryMs: 0, codec: "json", token: "", callHost: "", chromium: process.env.CHROMIUM || "/usr/bin/chromium" };
  const names = { "--url": "url", "--mode": "mode", "--channel": "channel", "--request-every-ms": "requestEveryMs",
    "--request-timeout-ms": "requestTimeoutMs", "--connect-timeout-ms": "connectTimeoutMs", "--fallback-retry-ms": "fallbackRetryMs",
    "--codec": "codec", "--token": "token", "--call-host": "callHost", "--chromium": "chromium" };
  for (let i = 0; i < argv.length; i += 2) {
    const key = names[argv[i]];
    if (!key) throw new Error(`unknown argument ${argv[i]}`);
    const v = argv[i + 1];
    if (v === undefined) throw new Error(`${argv[i]} needs a value`);
    if (typeof o[key] === "number") {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0) throw new Error(`${argv[i]} must be a whole number of ms, got ${v}`);
      o[key] = n;
    } else o[key] = v;
  }
  if (!o.url) throw new Error("--url is required");
  let u;
  try {
    u = new URL(o.url);
  } catch {
    throw new Error(`--url is not a URL: ${o.url}`);
  }
  if (u.protocol !== "ws:" && u.protocol !== "wss:") throw new Error(`--url must be ws:// or wss://, got ${o.url}`);
  if (o.mode !== "belay" && o.mode !== "naive") throw new Error(`--mode must be belay or naive, got ${o.mode}`);
  if (!o.channel) throw new Error("--channel must not be empty");
  if (o.codec !== "json" && o.codec !== "binary") throw new Error(`--codec must be json or binary, got ${o.codec}`);
  if (o.codec === "binary" && o.mode !== "belay") throw new Error("--codec binary needs --mode belay (the naive client speaks JSON only)");
  if ((o.token || o.callHost) && o.mode !== "belay") throw new Error("--token and --call-host need --mode belay");
  o.origin = `${u.protocol === "wss:" ? "https:" : "http:"}//${u.host}`;
  return o;
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    usage(e.message);
  }
  if (!existsSync(opts.chromium)) usage(`no chromium at ${opts.chromium} (apt-get install chromium, or pass --chromium)`);

  const out = (line) => process.stdout.write(line + "\n");
  const profile = mkdtempSync(join(tmpdir(), "belay-agent-"));
  let context;
  let closing = false;
  const finish = async (code) => {
    if (closing) return;
    closing = true;
    setTimeout(() => process.exit(code), 2500).unref();
    try {
      await page?.evaluate(() => window.__agent?.stop()).catch(() => {});
      await context?.close();
    } catch { /* the browser is gone already */ }
    rmSync(profile, { recursive: true, force: true });
    process.exit(code);
  };
  let page;
  process.stdin.on("end", () => finish(0));
  process.stdin.on("error", () => finish(0));
  process.stdin.resume();

  let chromium;
  try {
    ({ chromium } = await import("playwright-core"));
  } catch {
    usage("playwright-core is missing: run `npm ci` in clients/js");
  }
  log(`launching ${opts.chromium}`);
  context = await chromium.launchPersistentContext(profile, { executablePath: opts.chromium, headless: true, args: FLAGS, timeout: 30_000 });
  context.on("close", () => { if (!closing) { log("the browser closed"); finish(1); } });
  page = context.pages()[0] ?? (await context.newPage());
  page.on("console", (m) => log(`page ${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => log(`page error: ${e.message}`));
  page.on("crash", () => { log("the page crashed"); finish(1); });
  await page.exposeFunction("__belayOut", out);
  // The binary entry is not among the demo's assets: bundled here, as the build does.
  const binaryJs = opts.codec === "binary" ? await bundleBinary() : undefined;
  await page.route(`${opts.origin}/__belay_agent/**`, (route) => {
    const path = new URL(route.request().url()).pathname.slice("/__belay_agent/".length);
    if (path === "modes.js" || path === "belay.js" || path === "fallback.js") {
      // modes.js imports '/belay.js' and '/fallback.js' from the origin: point it at our copies.
      let body = readFileSync(ASSETS + path, "utf8");
      if (path === "modes.js") body = body.replace("from '/belay.js'", "from '/__belay_agent/belay.js'").replace("from '/fallback.js'", "from '/__belay_agent/fallback.js'");
      return route.fulfill({ contentType: "text/javascript", body });
    }
    if (path === "binary.js" && binaryJs) return route.fulfill({ contentType: "text/javascript", body: binaryJs });
    return route.fulfill({ status: 404, body: "" });
  });
  // A document the server itself serves: Chromium's local-network-access
  // checks refuse WebSockets from a page that did not come from the network.
  // The lab may start us while the path is faulty: retry for 15 s.
  for (const until = Date.now() + 15_000; ; ) {
    const res = await page.goto(`${opts.origin}/healthz`, { waitUntil: "load", timeout: 5_000 }).catch((e) => e);
    if (res && typeof res.ok === "function" && res.ok()) break;
    const why = res instanceof Error ? res.message.split("\n")[0] : `HTTP ${res ? res.status() : "nothing"}`;
    if (Date.now() > until) throw new Error(`GET ${opts.origin}/healthz failed: ${why}`);
    log(`GET /healthz failed (${why}); retrying`);
    await new Promise((r) => setTimeout(r, 500));
  }
  await page.evaluate(async (o) => {
    const { startClient } = await import("/__belay_agent/modes.js");
    const send = (obj) => window.__belayOut(JSON.stringify(obj));
    const binary = o.codec === "binary" ? (await import("/__belay_agent/binary.js")).binaryCodec() : null;
    let queue = [];
    const emit = (e) => {
      const lines = e.ev === "pub" ? [{ ev: "pub", offset: e.offset, epoch: e.epoch }]
        : e.ev === "ready" && e.via ? [{ ev: "ready" }, { ev: "via", transport: e.via }] : [e];
      // The SSE stream is JSON whatever the WebSocket negotiated (PROTOCOL.md §1.7).
      if (e.ev === "ready" && binary) lines.push({ ev: "codec", codec: e.via === "sse" ? "json" : binary.codec });
      for (const line of lines) {
        if (queue) queue.push(line);
        else send(line);
      }
    };
    const config = { url: o.url, channel: o.channel };
    if (o.mode === "belay") {
      config.requestTimeoutMs = o.requestTimeoutMs;
      config.connectTimeoutMs = o.connectTimeoutMs;
      if (o.fallbackRetryMs > 0) config.fallback = { retryWebSocketEveryMs: o.fallbackRetryMs };
      if (binary) config.WebSocket = binary.WebSocket; // modes.js hands it to the fallback too
      if (o.token) config.token = o.token;
    }
    const call = (id) => o.callHost
      ? c.request("$call", { host: o.callHost, method: "echo", params: { k: id } }, o.requestTimeoutMs)
        .then((r) => (r.outcome === "error" && r.code === "host_lost" ? { ...r, outcome: "host_lost" } : r))
      : c.request("echo", { k: id }, o.requestTimeoutMs);
    const c = startClient(o.mode, config, emit);
    send({ ev: "started" });
    for (const line of queue) send(line);
    queue = null;
    let k = 0;
    const timer = o.requestEveryMs > 0 ? setInterval(() => {
      const id = ++k;
      send({ ev: "sent", id });
      call(id).then((r) => send({ ev: "settled", id, outcome: r.outcome }));
    }, o.requestEveryMs) : 0;
    window.__agent = { stop() { clearInterval(timer); c.close(); } };
  }, opts);
  log(`running the ${opts.mode} client${opts.codec === "binary" ? " (binary codec)" : ""} against ${opts.url}`);
}

/** `@belay/client/binary` as dist/binary.js would be (scripts/bundle.mjs), from the sources. */
async function bundleBinary() {
  let bundle;
  try {
    ({ bundle } = await import("../scripts/bundle.mjs"));
  } catch {
    usage("esbuild is missing (needed for --codec binary): run `npm ci` in clients/js");
  }
  return Buffer.from(await bundle({ entry: "binary" }));
}

main().catch((e) => {
  log(`failed: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
