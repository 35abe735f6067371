/**
 * `@belay/client/binary` in real browsers (headless Chromium, headless
 * Firefox, WebKitGTK: e2e/browsers.ts) against the real demo server
 * (spec/PROTOCOL.md §1.8, "Negotiation"):
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
 * The bundles are this build's dist/ (`npm run e2e` builds first), handed
 * to the page as text and imported from blob: URLs, which are of the page's
 * origin (the server's); each entry is one self-contained module (the
 * starter refuses one that imports another).
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENGINES, openBrowser, type Browser, type Tab } from "./browsers.js";
import { connections, startServer, type DemoServer } from "./harness.js";
import { startNginx, type Nginx } from "./nginx.js";

const DIST = new URL("../dist/", import.meta.url).pathname;

/** The entries' code, each checked to be one module with no import of its own (a blob: URL has no path to resolve one against). */
function bundles(): Record<"belay" | "full" | "binary" | "fallback", string> {
  const read = (name: string) => {
    const text = readFileSync(DIST + name, "utf8");
    if (/\bimport\s*[("{*]|\bfrom\s*"/.test(text)) throw new Error(`dist/${name} imports another module; the e2e starter loads each entry on its own`);
    return text;
  };
  return { belay: read("belay.js"), full: read("full.js"), binary: read("binary.js"), fallback: read("fallback.js") };
}

/**
 * Page side: `E.start(name, binary, fallback)` starts a client on the feed
 * (the default entry's; with `fallback`: `@belay/client/full`'s under
 * `sseFallback(fallback)`), through a WebSocket
 * subclass that records for each socket the protocols offered, the one the
 * 101 named, and each received frame's kind (text or binary).
 */
const STARTER = (code: ReturnType<typeof bundles>) => `(async () => {
  const load = (text) => import(URL.createObjectURL(new Blob([text], { type: "text/javascript" })));
  const { BelayClient } = await load(${JSON.stringify(code.belay)});
  // The fallback's switch back is the full client's (\`@belay/client/full\`).
  const { BelayClient: FullClient } = await load(${JSON.stringify(code.full)});
  const { binaryCodec } = await load(${JSON.stringify(code.binary)});
  const { sseFallback } = await load(${JSON.stringify(code.fallback)});
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
      const client = fb ? new FullClient("ws://" + location.host + "/ws", { WebSocket: fb.WebSocket }) : new BelayClient("ws://" + location.host + "/ws", { WebSocket: ws });
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

const report = (page: Tab, name: string) => page.call<Report>("E.report", name);

/** One epoch, each offset once, none skipped. */
function assertInOrder(pubs: Pub[]): void {
  expect(new Set(pubs.map((p) => p.epoch)).size).toBe(1);
  pubs.forEach((p, i) => i && expect(p.offset, `after ${pubs[i - 1]!.offset}`).toBe(pubs[i - 1]!.offset + 1));
}

describe.each(ENGINES)("%s", (engine) => {
  let server: DemoServer;
  let browser: Browser;
  let nginx: Nginx;
  let starter: string;

  beforeAll(async () => {
    starter = STARTER(bundles());
    server = await startServer(["--feed-every-ms", "50"]);
    nginx = await startNginx(server.base);
    browser = await openBrowser(engine);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    nginx?.stop();
    server?.stop();
  });

  /** A page of `origin` (default: the server's) with the starter loaded. */
  async function openPage(origin = server.base): Promise<Tab> {
    const page = await browser.newTab();
    // A document of the server's own origin (Chromium refuses WebSockets from a page that did not come from the network).
    await page.goto(`${origin}/healthz`);
    await page.eval(starter);
    return page;
  }

  it("the binary entry: the 101 names belay.bin.1, every frame is binary, the feed in order, a request answered", async () => {
    const page = await openPage();
    await page.call("E.start", "bin", true);
    await page.waitFor("window.runs.bin.client.status.ready");
    await page.waitFor("window.runs.bin.pubs.length >= 20");
    const params = { k: 1, text: "héllo ✓", nested: { list: [1, 2.5, null, true] } };
    expect(await page.call("E.request", "bin", params)).toEqual(params);
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
    await page.eval("window.runs.bin.client.close()");
    await expect.poll(() => connections(server.base), { timeout: 5000 }).toBe(0);
    await page.close();
  }, 60_000);

  it("the default entry alone: no subprotocol offered, none named, JSON in text frames as before", async () => {
    const page = await openPage();
    await page.call("E.start", "json", false);
    await page.waitFor("window.runs.json.client.status.ready");
    await page.waitFor("window.runs.json.pubs.length >= 20");
    expect(await page.call("E.request", "json", { k: 2 })).toEqual({ k: 2 });
    const r = await report(page, "json");
    expect(r.sockets).toHaveLength(1);
    expect(r.sockets[0]!.offered).toBeNull();
    expect(r.sockets[0]!.protocol).toBe("");
    expect(r.sockets[0]!.frames.binary).toBe(0);
    expect(r.sockets[0]!.frames.text).toBeGreaterThanOrEqual(r.pubs.length + 3);
    assertInOrder(r.pubs);
    await page.eval("window.runs.json.client.close()");
    await expect.poll(() => connections(server.base), { timeout: 5000 }).toBe(0);
    await page.close();
  }, 60_000);

  it("both at once: the same publications, offset for offset, in binary and in JSON", async () => {
    const page = await openPage();
    await page.eval(`(E.start("bin", true), E.start("json", false))`);
    await page.waitFor("window.runs.bin.client.status.ready && window.runs.json.client.status.ready");
    await page.waitFor("window.runs.bin.pubs.length >= 30 && window.runs.json.pubs.length >= 30");
    const [bin, json] = [await report(page, "bin"), await report(page, "json")];
    expect(bin.sockets[0]!.protocol).toBe("belay.bin.1");
    expect(json.sockets[0]!.protocol).toBe("");
    assertInOrder(bin.pubs);
    assertInOrder(json.pubs);
    const byOffset = new Map(json.pubs.map((p) => [p.offset, p]));
    const shared = bin.pubs.filter((p) => byOffset.has(p.offset));
    expect(shared.length).toBeGreaterThan(20);
    for (const p of shared) expect(p).toEqual(byOffset.get(p.offset));
    await page.eval("(window.runs.bin.client.close(), window.runs.json.client.close())");
    await expect.poll(() => connections(server.base), { timeout: 5000 }).toBe(0);
    await page.close();
  }, 60_000);

  it("under the SSE fallback behind a proxy that drops upgrades: SSE in JSON, then back on a WebSocket in binary, no gap", async () => {
    const page = await openPage(nginx.origin);
    await page.call("E.start", "fb", true, { retryWebSocketEveryMs: 1000 });
    await page.waitFor("window.runs.fb.client.status.ready && window.runs.fb.fb.kind === 'sse'");
    await page.waitFor("window.runs.fb.pubs.length >= 10");
    const onSse = await report(page, "fb");
    // The blocked dial offered both codecs; nothing opened.
    expect(onSse.sockets[0]!.offered).toEqual(["belay.bin.1", "belay.json.1"]);
    expect(onSse.sockets.every((s) => s.protocol === null)).toBe(true);
    expect(await page.call("E.request", "fb", { on: "sse" })).toEqual({ on: "sse" });

    await nginx.passUpgrades(true);
    await page.waitFor("window.runs.fb.client.status.ready && window.runs.fb.fb.kind === 'websocket'");
    const backAt = (await report(page, "fb")).pubs.length;
    await page.waitFor(`window.runs.fb.pubs.length >= ${backAt + 20}`);
    expect(await page.call("E.request", "fb", { on: "websocket" })).toEqual({ on: "websocket" });
    const r = await report(page, "fb");
    expect(r.codec).toBe("binary");
    // The session's WebSocket (the last socket; the probe before it opened too): binary, only binary frames.
    const last = r.sockets[r.sockets.length - 1]!;
    expect(last.protocol).toBe("belay.bin.1");
    expect(last.frames.text).toBe(0);
    expect(last.frames.binary).toBeGreaterThanOrEqual(20);
    assertInOrder(r.pubs);
    await page.eval("window.runs.fb.client.close()");
    await expect.poll(() => connections(server.base), { timeout: 5000 }).toBe(0);
    await page.close();
    await nginx.passUpgrades(false);
  }, 90_000);
});
