/**
 * End to end in real headless Chromium against `belay serve --demo`:
 * connect → ready → feed in order; service down → service level drops and
 * data returns within 2 s of the service coming back; restart → reconnect.
 *
 * Needs /usr/bin/chromium (`apt-get install chromium`) and builds the server
 * with cargo (`BELAY_BIN` overrides the binary).
 */
import { build } from "esbuild";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { connections as serverConnections, fault as serverFault, launch, startServer, type DemoServer } from "./harness.js";

let server: DemoServer;
let browser: Awaited<ReturnType<typeof launch>>;
let base = "";
let page: Page;

const fault = (name: string, body: object) => serverFault(base, name, body);
const connections = () => serverConnections(base);

beforeAll(async () => {
  server = await startServer();
  base = server.base;
  // The same source as dist/belay.js, as a global for the test page.
  const bundle = await build({ entryPoints: [new URL("../src/index.ts", import.meta.url).pathname], bundle: true, format: "iife", globalName: "Belay", write: false, target: "es2020" });
  browser = await launch();
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  await page.goto(`${base}/healthz`);
  await page.setContent("<!doctype html><title>belay e2e</title>");
  await page.addScriptTag({ content: bundle.outputFiles[0]!.text });
  await page.evaluate((ws) => {
    const w = window as any;
    w.statuses = [];
    w.items = [];
    w.client = new w.Belay.BelayClient(ws, { probeIntervalMs: 2000, probeTimeoutMs: 2000 });
    w.client.onStatus((s: object) => w.statuses.push({ t: performance.now(), ...s }));
    w.client.subscribe("feed").on((i: object) => w.items.push({ t: performance.now(), ...i }));
  }, base.replace("http", "ws") + "/ws");
}, 180_000);

afterAll(async () => {
  await page?.evaluate(() => (window as any).client.close()).catch(() => {});
  await browser?.close();
  server?.stop();
});

const now = () => page.evaluate(() => performance.now());
const waitFor = (fn: string, timeout = 10_000) => page.waitForFunction(fn, undefined, { timeout, polling: 20 });

/** Publications must come in offset order with no gap and no duplicate, except right after an announced resync. */
async function assertInOrder(): Promise<number> {
  const items: any[] = await page.evaluate(() => (window as any).items);
  let last: { epoch: string; offset: number } | undefined;
  let count = 0;
  for (const i of items) {
    if (i.type === "resync") last = undefined;
    if (i.type !== "publication") continue;
    if (last && last.epoch === i.epoch) expect(i.offset, JSON.stringify(items.slice(-20))).toBe(last.offset + 1);
    last = i;
    count++;
  }
  return count;
}

it("connects, becomes ready and receives the feed in order", async () => {
  await waitFor("window.client.status.ready");
  await waitFor("window.items.filter(i => i.type === 'publication').length >= 3", 5000);
  expect(await assertInOrder()).toBeGreaterThanOrEqual(3);
  expect(await connections()).toBe(1);
  const r = await page.evaluate(() => (window as any).client.request("echo", { hi: 1 }));
  expect(r).toEqual({ hi: 1 });
});

it("service down lowers only the service level; data returns within 2 s", async () => {
  const t0 = await now();
  await fault("service_down", { on: true });
  await waitFor("!window.client.status.service", 2000);
  const s = await page.evaluate(() => (window as any).client.status);
  expect(s).toMatchObject({ transport: true, protocol: true, service: false, ready: false });
  const lostAfter = (await now()) - t0;
  console.log(`service loss detected after ${lostAfter.toFixed(0)} ms`);
  await new Promise((r) => setTimeout(r, 1500));
  const before = await page.evaluate(() => (window as any).items.length);
  const t1 = await now();
  await fault("service_down", { on: false });
  await waitFor(`window.items.slice(${before}).some(i => i.type === 'publication')`, 2000);
  console.log(`data after the service returned: ${((await now()) - t1).toFixed(0)} ms`);
  await waitFor("window.client.status.ready", 2000);
  await assertInOrder();
  expect(await connections()).toBe(1);
});

it("reconnects after a server restart, with one connection", async () => {
  const t0 = await now();
  await fault("restart", { down_ms: 1000 });
  await waitFor("!window.client.status.transport", 5000);
  await waitFor("window.client.status.ready", 15_000);
  console.log(`ready again ${((await now()) - t0).toFixed(0)} ms after the restart`);
  const before = await page.evaluate(() => (window as any).items.length);
  await waitFor(`window.items.slice(${before}).some(i => i.type === 'publication')`, 3000);
  await assertInOrder();
  expect(await connections()).toBe(1);
});
