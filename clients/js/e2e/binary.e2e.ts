/**
 * `@belay/client/binary` in real headless Chromium against the real demo
 * server (spec/PROTOCOL.md §1.8, "Negotiation"):
 *
 * - a page on the binary entry offers `belay.bin.1, belay.json.1`; the
 *   server's 101 names `belay.bin.1` (`ws.protocol`), every frame it sends
 *   is binary, the feed arrives in order and a request gets its response;
 * - the default entry alone offers nothing and gets JSON, text frames only,
 *   as before negotiation;
 * - both at once on one server: the same publications, whichever codec
 *   carried them (the fan-out encodes each once per codec);
 * - under the SSE fallback, behind Debian's nginx dropping upgrades: ready
 *   over SSE in JSON; upgrades passed again: back on a WebSocket, binary,
 *   the feed without a gap.
 *
 * The bundles are this build's dist/ (`npm run e2e` builds first), served
 * to the page through request interception, on the server's origin.
 */
import { readFileSync } from "node:fs";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { connections, launch, startServer, type DemoServer } from "./harness.js";
import { startNginx, type Nginx } from "./nginx.js";

const DIST = new URL("../dist/", import.meta.url).pathname;
let server: DemoServer;
let browser: Awaited<ReturnType<typeof launch>>;
let nginx: Nginx;

beforeAll(async () => {
  server = await startServer(["--feed-every-ms", "50"]);
  nginx = await startNginx(server.base);
  browser = await launch();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  nginx?.stop();
  server?.stop();
});

/** A page of `origin` (default: the server's) with the starter loaded. */
async function openPage(origin = server.base): Promise<Page> {
  const page = await browser.context.newPage();
  await page.route(`${origin}/__e2e/*.js`, (route) => {
    const name = new URL(route.request().url()).pathname.slice("/__e2e/".length);
    return route.fulfill({ contentType: "text/javascript", body: readFileSync(DIST + name, "utf8") });
  });
  // A document of the server's own origin (Chromium refuses WebSockets from a page that did not come from the network).
  await page.goto(`${origin}/healthz`);
  await page.evaluate(STARTER);
  return page;
}

/**
 * Page side: `E.start(name, binary, fallback)` starts a client on the feed
 * (with `fallback`: under `sseFallback(fallback)`), through a WebSocket
 * subclass that records for each socket the protocols offered, the one the
 * 101 named, and each received frame's kind (text or binary).
 */
const STARTER = `(async () => {
  const { BelayClient } = await import("/__e2e/belay.js");
  const { binaryCodec } = await import("/__e2e/binary.js");
  const { sseFallback } = await import("/__e2e/fallback.js");
  window.runs = {};
  window.E = {
    start(name, binary, fallback) {
      const sockets = [];
      class Recording extends WebSocket {
        constructor(u, protocols) {
          super(u, protocols);
          const rec = { offered: protocols ?? null, protocol: null, frames: { text: 0, binary: 0 } };
          sockets.push(rec);
          this.addEventListener("open", () => { rec.protocol = this.protocol; });
          this.addEventListener("message", (e) => { rec.frames[typeof e.data === "string" ? "text" : "binary"]++; });
        }
      }
      const codec = binary ? binaryCodec({ WebSocket: Recording }) : null;
      const ws = codec ? codec.WebSocket : Recording;
      const fb = fallback ? sseFallback({ ...fallback, WebSocket: ws }) : null;
      const client = new BelayClient("ws://" + location.host + "/ws", { WebSocket: fb ? fb.WebSocket : ws });
      const pubs = [];
      client.subscribe("feed").on((item) => {
        if (item.type === "publication") pubs.push({ offset: item.offset, epoch: item.epoch, data: item.data });
      });
      window.runs[name] = { client, codec, fb, sockets, pubs };
    },
    async request(name, params) {
      return window.runs[name].client.request("echo", params);
    },
    report(name) {
      const r = window.runs[name];
      return { sockets: r.sockets, pubs: r.pubs, codec: r.codec ? r.codec.codec : null, via: r.fb ? r.fb.kind : null, status: r.client.status };
    },
  };
})()`;

type Pub = { offset: number; epoch: string; data: unknown };
type Report = {
  sockets: { offered: string[] | null; protocol: string | null; frames: { text: number; binary: number } }[];
  pubs: Pub[];
  codec: string | null;
  via: string | null;
  status: { ready: boolean };
};

const waitFor = (page: Page, fn: string, timeout = 15_000) => page.waitForFunction(fn, undefined, { timeout, polling: 20 });
const report = (page: Page, name: string) => page.evaluate((n) => (window as any).E.report(n), name) as Promise<Report>;

/** One epoch, each offset once, none skipped. */
function assertInOrder(pubs: Pub[]): void {
  expect(new Set(pubs.map((p) => p.epoch)).size).toBe(1);
  pubs.forEach((p, i) => i && expect(p.offset, `after ${pubs[i - 1]!.offset}`).toBe(pubs[i - 1]!.offset + 1));
}

it("the binary entry: the 101 names belay.bin.1, every frame is binary, the feed in order, a request answered", async () => {
  const page = await openPage();
  await page.evaluate(() => (window as any).E.start("bin", true));
  await waitFor(page, "window.runs.bin.client.status.ready");
  await waitFor(page, "window.runs.bin.pubs.length >= 20");
  const params = { k: 1, text: "héllo ✓", nested: { list: [1, 2.5, null, true] } };
  expect(await page.evaluate((p) => (window as any).E.request("bin", p), params)).toEqual(params);
  const r = await report(page, "bin");
  expect(r.sockets).toHaveLength(1);
  expect(r.sockets[0]!.offered).toEqual(["belay.bin.1", "belay.json.1"]);
  expect(r.sockets[0]!.protocol).toBe("belay.bin.1");
  expect(r.codec).toBe("binary");
  expect(r.sockets[0]!.frames.text).toBe(0);
  // welcome, subscribed, the publications, the response (and pings).
  expect(r.sockets[0]!.frames.binary).toBeGreaterThanOrEqual(r.pubs.length + 3);
  assertInOrder(r.pubs);
  expect(await connections(server.base)).toBe(1);
  await page.evaluate(() => (window as any).runs.bin.client.close());
  await expect.poll(() => connections(server.base), { timeout: 5000 }).toBe(0);
  await page.close();
}, 60_000);

it("the default entry alone: no subprotocol offered, none named, JSON in text frames as before", async () => {
  const page = await openPage();
  await page.evaluate(() => (window as any).E.start("json", false));
  await waitFor(page, "window.runs.json.client.status.ready");
  await waitFor(page, "window.runs.json.pubs.length >= 20");
  expect(await page.evaluate(() => (window as any).E.request("json", { k: 2 }))).toEqual({ k: 2 });
  const r = await report(page, "json");
  expect(r.sockets).toHaveLength(1);
  expect(r.sockets[0]!.offered).toBeNull();
  expect(r.sockets[0]!.protocol).toBe("");
  expect(r.sockets[0]!.frames.binary).toBe(0);
  expect(r.sockets[0]!.frames.text).toBeGreaterThanOrEqual(r.pubs.length + 3);
  assertInOrder(r.pubs);
  await page.evaluate(() => (window as any).runs.json.client.close());
  await expect.poll(() => connections(server.base), { timeout: 5000 }).toBe(0);
  await page.close();
}, 60_000);

it("both at once: the same publications, offset for offset, in binary and in JSON", async () => {
  const page = await openPage();
  await page.evaluate(() => {
    (window as any).E.start("bin", true);
    (window as any).E.start("json", false);
  });
  await waitFor(page, "window.runs.bin.client.status.ready && window.runs.json.client.status.ready");
  await waitFor(page, "window.runs.bin.pubs.length >= 30 && window.runs.json.pubs.length >= 30");
  const [bin, json] = [await report(page, "bin"), await report(page, "json")];
  expect(bin.sockets[0]!.protocol).toBe("belay.bin.1");
  expect(json.sockets[0]!.protocol).toBe("");
  assertInOrder(bin.pubs);
  assertInOrder(json.pubs);
  const byOffset = new Map(json.pubs.map((p) => [p.offset, p]));
  const shared = bin.pubs.filter((p) => byOffset.has(p.offset));
  expect(shared.length).toBeGreaterThan(20);
  for (const p of shared) expect(p).toEqual(byOffset.get(p.offset));
  await page.evaluate(() => {
    (window as any).runs.bin.client.close();
    (window as any).runs.json.client.close();
  });
  await expect.poll(() => connections(server.base), { timeout: 5000 }).toBe(0);
  await page.close();
}, 60_000);

it("under the SSE fallback behind a proxy that drops upgrades: SSE in JSON, then back on a WebSocket in binary, no gap", async () => {
  const page = await openPage(nginx.origin);
  await page.evaluate(() => (window as any).E.start("fb", true, { retryWebSocketEveryMs: 1000 }));
  await waitFor(page, "window.runs.fb.client.status.ready && window.runs.fb.fb.kind === 'sse'");
  await waitFor(page, "window.runs.fb.pubs.length >= 10");
  const onSse = await report(page, "fb");
  // The blocked dial offered both codecs; nothing opened.
  expect(onSse.sockets[0]!.offered).toEqual(["belay.bin.1", "belay.json.1"]);
  expect(onSse.sockets.every((s) => s.protocol === null)).toBe(true);
  expect(await page.evaluate(() => (window as any).E.request("fb", { on: "sse" }))).toEqual({ on: "sse" });

  await nginx.passUpgrades(true);
  await waitFor(page, "window.runs.fb.client.status.ready && window.runs.fb.fb.kind === 'websocket'");
  const backAt = (await report(page, "fb")).pubs.length;
  await waitFor(page, `window.runs.fb.pubs.length >= ${backAt + 20}`);
  expect(await page.evaluate(() => (window as any).E.request("fb", { on: "websocket" }))).toEqual({ on: "websocket" });
  const r = await report(page, "fb");
  expect(r.codec).toBe("binary");
  // The session's WebSocket (the last socket; the probe before it opened too): binary, only binary frames.
  const last = r.sockets[r.sockets.length - 1]!;
  expect(last.protocol).toBe("belay.bin.1");
  expect(last.frames.text).toBe(0);
  expect(last.frames.binary).toBeGreaterThanOrEqual(20);
  assertInOrder(r.pubs);
  await page.evaluate(() => (window as any).runs.fb.client.close());
  await expect.poll(() => connections(server.base), { timeout: 5000 }).toBe(0);
  await page.close();
  await nginx.passUpgrades(false);
}, 90_000);
