/**
 * End to end in real headless Chromium against `belay serve --demo`:
 * connect → ready → feed in order; service down → service level drops and
 * data returns within 2 s of the service coming back; restart → reconnect.
 *
 * Needs /usr/bin/chromium (`apt-get install chromium`) and builds the server
 * with cargo (`BELAY_BIN` overrides the binary).
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";

const ROOT = new URL("../../../", import.meta.url).pathname;
const CHROMIUM = process.env["CHROMIUM"] ?? "/usr/bin/chromium";
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

let server: ChildProcess;
let base = "";
let profile = "";
let context: BrowserContext;
let page: Page;

async function startServer(): Promise<string> {
  let bin = process.env["BELAY_BIN"];
  if (!bin) {
    execFileSync("cargo", ["build", "-q", "-p", "belay-cli"], { cwd: ROOT, stdio: "inherit" });
    bin = join(ROOT, "target/debug/belay");
  }
  server = spawn(bin, ["serve", "--demo", "--listen", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    let seen = "";
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const m = /open (http:\/\/127\.0\.0\.1:\d+)\//.exec(seen);
      if (m) resolve(m[1]!);
    };
    server.stdout!.on("data", onData);
    server.stderr!.on("data", onData);
    server.on("exit", (code) => reject(new Error(`server exited with ${code}: ${seen}`)));
    setTimeout(() => reject(new Error(`server did not start: ${seen}`)), 30_000);
  });
}

async function fault(name: string, body: object): Promise<void> {
  const r = await fetch(`${base}/admin/fault/${name}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  expect(r.ok).toBe(true);
}
async function connections(): Promise<number> {
  return ((await (await fetch(`${base}/admin/state`)).json()) as { connections: number }).connections;
}

beforeAll(async () => {
  base = await startServer();
  // The same source as dist/belay.js, as a global for the test page.
  const bundle = await build({ entryPoints: [new URL("../src/index.ts", import.meta.url).pathname], bundle: true, format: "iife", globalName: "Belay", write: false, target: "es2020" });
  profile = mkdtempSync(join(tmpdir(), "belay-chromium-"));
  context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS });
  page = context.pages()[0] ?? (await context.newPage());
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
  await context?.close();
  server?.kill();
  if (profile) rmSync(profile, { recursive: true, force: true });
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
