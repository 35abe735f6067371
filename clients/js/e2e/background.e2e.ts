/**
 * A background tab: what Chromium's timer throttling does to freeze
 * detection, and what the liveness probe on `visibilitychange` buys when the
 * tab comes back.
 *
 * Headless Chromium keeps every page visible (a second tab in front,
 * minimising the window and `Page.setWebLifecycleState` do not change
 * `document.visibilityState` or throttle timers there), so the page emulates
 * it: `document.visibilityState`/`hidden` report "hidden" and `setTimeout`
 * follows Chromium's documented policies for hidden pages: wake-ups aligned
 * to 1 s (the standard background throttling) or to 1 min ("intensive
 * wake-up throttling", after 5 min hidden); becoming visible lifts the
 * throttling, and a timer that is then overdue runs at once, as in Chromium.
 * WebSocket events are not throttled (they are not timers). The figures go
 * to target/browser-background.json and docs/BROWSER.md.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { connections, launch, RECORDER, ROOT, startServer, type DemoServer } from "./harness.js";

// Installed before any client exists; plain JS in a string.
const THROTTLE = `(() => {
  const realSet = window.setTimeout.bind(window);
  const realClear = window.clearTimeout.bind(window);
  const EMU = (window.EMU = { hidden: false, align: 0 });
  const timers = new Map();
  let nextId = 1;
  const schedule = (id) => {
    const t = timers.get(id);
    const at = EMU.align ? Math.ceil(t.due / EMU.align) * EMU.align : t.due;
    t.real = realSet(() => { timers.delete(id); t.fn(...t.args); }, Math.max(0, at - performance.now()));
  };
  window.setTimeout = (fn, delay = 0, ...args) => {
    const id = nextId++;
    timers.set(id, { fn, args, due: performance.now() + Math.max(0, Number(delay) || 0) });
    schedule(id);
    return id;
  };
  window.clearTimeout = (id) => {
    const t = timers.get(id);
    if (t) { realClear(t.real); timers.delete(id); }
  };
  Object.defineProperty(document, "visibilityState", { configurable: true, get: () => (EMU.hidden ? "hidden" : "visible") });
  Object.defineProperty(document, "hidden", { configurable: true, get: () => EMU.hidden });
  EMU.set = (hidden, align) => {
    EMU.hidden = hidden;
    EMU.align = align;
    for (const id of timers.keys()) { realClear(timers.get(id).real); schedule(id); }
    document.dispatchEvent(new Event("visibilitychange"));
    return performance.now();
  };
})()`;

const results: Record<string, unknown> = {};
let fast: DemoServer; // pings every second, as in the seed table
let slow: DemoServer; // pings every 25 s, the default before issue 43
let browser: Awaited<ReturnType<typeof launch>>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function pageOn(server: DemoServer): Promise<Page> {
  const page = await browser.context.newPage();
  await page.goto(`${server.base}/healthz`);
  await page.evaluate(THROTTLE);
  await page.evaluate(RECORDER);
  return page;
}
const lostAfter = (page: Page, run: string, since: number) =>
  page.evaluate(([r, t]) => ((window as any).runs[r].events.find((e: any) => e.ev === "lost" && e.t >= t) ?? { t: null }).t, [run, since] as const) as Promise<number | null>;
const secs = (ms: number | null) => (ms === null ? null : Math.round(ms) / 1000);

async function drained(server: DemoServer) {
  for (let i = 0; i < 150 && (await connections(server.base)) !== 0; i++) await sleep(100);
}

beforeAll(async () => {
  [fast, slow] = await Promise.all([startServer(["--ping-interval-ms", "1000"]), startServer(["--ping-interval-ms", "25000"])]);
  browser = await launch();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  fast?.stop();
  slow?.stop();
  if (Object.keys(results).length) {
    console.log(`background tab: ${JSON.stringify(results, null, 1)}`);
    mkdirSync(ROOT + "target", { recursive: true });
    writeFileSync(ROOT + "target/browser-background.json", JSON.stringify(results, null, 2));
  }
});

it("hidden tab, wake-ups aligned to 1 s: freeze still detected within the watchdog + 1 s", async () => {
  const page = await pageOn(fast);
  await page.evaluate(() => (window as any).T.start("h1", "belay"));
  await page.waitForFunction(() => (window as any).runs.h1.c.status().ready, undefined, { timeout: 10_000 });
  await page.evaluate(() => (window as any).EMU.set(true, 1000));
  await sleep(1500); // hidden for a while, publications still arrive
  const t0 = await page.evaluate(() => (window as any).T.fault("freeze", { on: true }));
  await page.waitForFunction((t) => (window as any).runs.h1.events.some((e: any) => e.ev === "lost" && e.t >= t), t0, { timeout: 8000, polling: 50 }).catch(() => {});
  const lost = await lostAfter(page, "h1", t0);
  await page.evaluate(() => (window as any).T.fault("freeze", { on: false }));
  results["hidden_1s_alignment_freeze_detected_s"] = secs(lost === null ? null : lost - t0);
  await page.evaluate(() => (window as any).T.stop("h1"));
  await page.close();
  await drained(fast);
  expect(lost).not.toBeNull();
  expect(lost! - t0).toBeLessThanOrEqual(2000 + 1000 + 600);
}, 40_000);

it("hidden tab, intensive throttling (1 wake-up per minute): no detection while hidden; at once when visible", async () => {
  const page = await pageOn(fast);
  await page.evaluate(() => (window as any).T.start("h60", "belay"));
  await page.waitForFunction(() => (window as any).runs.h60.c.status().ready, undefined, { timeout: 10_000 });
  // Align so that the next minute boundary is far away: the worst case.
  await page.evaluate(() => (window as any).EMU.set(true, 60_000));
  const t0 = await page.evaluate(() => (window as any).T.fault("freeze", { on: true }));
  const nextWake = Math.ceil((t0 + 2000) / 60_000) * 60_000;
  await sleep(8000);
  const whileHidden = await lostAfter(page, "h60", t0);
  const tv = await page.evaluate(() => (window as any).EMU.set(false, 0));
  await page.waitForFunction((t) => (window as any).runs.h60.events.some((e: any) => e.ev === "lost" && e.t >= t), tv, { timeout: 5000, polling: 20 }).catch(() => {});
  const lost = await lostAfter(page, "h60", t0);
  await page.evaluate(() => (window as any).T.fault("freeze", { on: false }));
  results["intensive_hidden_8s_detected_while_hidden"] = whileHidden !== null;
  results["intensive_watchdog_would_fire_s_after_freeze"] = secs(nextWake - t0);
  results["intensive_detected_s_after_visible"] = secs(lost === null ? null : lost - tv);
  await page.evaluate(() => (window as any).T.stop("h60"));
  await page.close();
  await drained(fast);
  if (nextWake - t0 > 8000) expect(whileHidden).toBeNull(); // the throttled watchdog cannot fire before the boundary
  expect(lost).not.toBeNull();
  expect(lost! - tv).toBeLessThan(500);
}, 40_000);

it("server pinging every 25 s: back from the background, the liveness probe detects a dead server in 2 s", async () => {
  const page = await pageOn(slow);
  await page.evaluate(() => {
    const T = (window as any).T;
    T.start("probe", "belay");
    T.start("noprobe", "belay", { page: null, network: null }); // no wake-up hooks: only its watchdog
  });
  await page.waitForFunction(() => (window as any).runs.probe.c.status().ready && (window as any).runs.noprobe.c.status().ready, undefined, { timeout: 10_000 });
  await page.evaluate(() => (window as any).EMU.set(true, 1000));
  const t0 = await page.evaluate(() => (window as any).T.fault("freeze", { on: true }));
  await sleep(5000); // the user is elsewhere; the server froze meanwhile
  const tv = await page.evaluate(() => (window as any).EMU.set(false, 0));
  await sleep(4000);
  const probe = await lostAfter(page, "probe", t0);
  const noprobe = await lostAfter(page, "noprobe", t0);
  await page.evaluate(() => (window as any).T.fault("freeze", { on: false }));
  results["slow_ping_probe_detected_s_after_visible"] = secs(probe === null ? null : probe - tv);
  results["slow_ping_without_probe_detected_within_4s_of_visible"] = noprobe !== null;
  await page.evaluate(() => ["probe", "noprobe"].forEach((r) => (window as any).T.stop(r)));
  await page.close();
  await drained(slow);
  expect(probe).not.toBeNull();
  expect(probe! - tv).toBeGreaterThanOrEqual(1900); // the probe's 2 s deadline
  expect(probe! - tv).toBeLessThanOrEqual(2600);
  expect(noprobe).toBeNull(); // its watchdog is 2 × 25 s after the last frame
}, 40_000);
