/**
 * A background tab in Chromium, Firefox and WebKit, hidden for real (not
 * emulated as in background.e2e.ts): Chromium runs headed on an Xvfb
 * display (headless Chromium keeps every page visible) and, like headless
 * Firefox, gets another tab in front of the page; WebKitGTK minimises its
 * window. Each then reports `document.visibilityState` "hidden" and treats
 * the page's timers as it does a user's background tab.
 *
 * - Server pinging every second, the server freezing while the page is
 *   hidden: how long until the hidden page's client notices.
 * - Server pinging every 25 s (the default), freezing while the page is
 *   hidden; the page comes back: the client's liveness probe on
 *   `visibilitychange` goes out at once and finds the dead server within
 *   its 2 s deadline, where the same client without the page hooks does not
 *   notice within 4 s.
 *
 * - Opt-in (`BELAY_E2E_LONG_BACKGROUND=1`, about 8 minutes): hidden for
 *   5.5 minutes, how late a 100 ms timer fires as the time hidden grows
 *   (the throttling that sets in later, as Chromium's intensive throttling
 *   does after 5 minutes), then the freeze.
 *
 * The figures go to target/browser-background-hidden.json (the long run's
 * to target/browser-background-long.json) and docs/BROWSER.md.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENGINES, HOW_HIDDEN, openBrowser, type Browser, type Engine, type Tab } from "./browsers.js";
import { connections, RECORDER, ROOT, startServer, type DemoServer } from "./harness.js";

/** Every engine: Chromium headed (openBrowser's `headed`), the others as in the other tests. */
const HIDEABLE = ENGINES;
const open = (engine: Engine) => openBrowser(engine, { headed: true });
const results: Partial<Record<Engine, Record<string, unknown>>> = {};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const secs = (ms: number | null) => (ms === null ? null : Math.round(ms) / 1000);

/** The page's visibility changes, and how late three 100 ms timers fire (the throttling in force). */
const PAGE_SETUP = `(() => {
  window.VIS = [];
  document.addEventListener("visibilitychange", () => VIS.push({ t: performance.now(), state: document.visibilityState }));
  window.timerLateness = async (n = 3) => {
    const took = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await new Promise((r) => setTimeout(r, 100));
      took.push(Math.round(performance.now() - t));
    }
    return took;
  };
})()`;

const lostSince = (run: string, t: number) => `(window.runs[${JSON.stringify(run)}].events.find((e) => e.ev === "lost" && e.t >= ${t}) || { t: null }).t`;

afterAll(() => {
  if (Object.keys(results).length) {
    console.log(`background tab, hidden for real: ${JSON.stringify(results, null, 1)}`);
    mkdirSync(ROOT + "target", { recursive: true });
    writeFileSync(ROOT + "target/browser-background-hidden.json", JSON.stringify(results, null, 2));
  }
});

describe.each(HIDEABLE)("%s", (engine) => {
  let fast: DemoServer; // pings every second, as in the seed table
  let slow: DemoServer; // pings every 25 s, the default before issue 43
  let browser: Browser;
  const r: Record<string, unknown> = {};

  async function pageOn(server: DemoServer): Promise<Tab> {
    const page = await browser.newTab();
    await page.goto(`${server.base}/healthz`);
    await page.eval(PAGE_SETUP);
    await page.eval(RECORDER);
    return page;
  }

  async function drained(server: DemoServer): Promise<void> {
    for (let i = 0; i < 150 && (await connections(server.base)) !== 0; i++) await sleep(100);
    expect(await connections(server.base)).toBe(0);
  }

  beforeAll(async () => {
    [fast, slow] = await Promise.all([startServer(["--ping-interval-ms", "1000"]), startServer(["--ping-interval-ms", "25000"])]);
    browser = await open(engine);
    results[engine] = r;
    r["browser"] = browser.version;
    r["how_hidden"] = HOW_HIDDEN[engine];
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    fast?.stop();
    slow?.stop();
  });

  it("hidden, the server pinging every second: a freeze is noticed while the page stays hidden", async () => {
    const page = await pageOn(fast);
    expect(page.hide, `${engine} can hide a page`).toBeDefined();
    r["visible_timer_100ms_took_ms"] = await page.eval("timerLateness()");
    await page.call("T.start", "h", "belay");
    await page.waitFor(`window.runs.h.c.status().ready`, 10_000);
    await page.hide!();
    const hiddenAt = await page.eval<number>("T.now()");
    r["hidden_timer_100ms_took_ms"] = await page.eval("timerLateness()");
    const t0 = await page.eval<number>(`T.fault("freeze", { on: true })`);
    await page.waitFor(`${lostSince("h", t0)} !== null`, 15_000).catch(() => {});
    const lost = await page.eval<number | null>(lostSince("h", t0));
    await page.eval(`T.fault("freeze", { on: false })`);
    // Hidden from before the freeze until the loss was seen.
    const shown = await page.eval<number | null>(`(VIS.find((v) => v.t > ${hiddenAt} && v.state === "visible") || { t: null }).t`);
    r["hidden_1s_ping_hidden_s_before_freeze"] = secs(t0 - hiddenAt);
    r["hidden_1s_ping_freeze_detected_s"] = secs(lost === null ? null : lost - t0);
    await page.show!();
    await page.call("T.stop", "h");
    await page.close();
    await drained(fast);
    expect(shown, "the page stayed hidden").toBeNull();
    expect(lost, "freeze detected while hidden").not.toBeNull();
    // The watchdog (2 × 1 s after the last frame), late by at most the 1 s
    // that a hidden page's timers are clamped or aligned to, + 0.6 s slack.
    expect(lost! - t0).toBeLessThanOrEqual(2000 + 1000 + 600);
  }, 60_000);

  it("the server pinging every 25 s freezes while hidden; back in the foreground, the probe goes out at once and finds it dead in 2 s", async () => {
    const page = await pageOn(slow);
    await page.eval(`(T.start("probe", "belay"), T.start("noprobe", "belay", { page: null, network: null }))`); // noprobe: no wake-up hooks, only its watchdog
    await page.waitFor(`window.runs.probe.c.status().ready && window.runs.noprobe.c.status().ready`, 10_000);
    await page.hide!();
    const t0 = await page.eval<number>(`T.fault("freeze", { on: true })`);
    await sleep(5000); // the user is elsewhere; the server froze meanwhile
    await page.show!();
    const tv = await page.eval<number>(`VIS.filter((v) => v.state === "visible").pop().t`);
    await page.waitFor(`${lostSince("probe", t0)} !== null`, 8000).catch(() => {});
    // Give the client without hooks the same 4 s after the page came back.
    await sleep(Math.max(0, tv + 4000 - (await page.eval<number>("T.now()"))));
    const probe = await page.eval<number | null>(lostSince("probe", t0));
    const noprobe = await page.eval<number | null>(lostSince("noprobe", t0));
    const ping = await page.eval<number | null>(
      `(window.runs.probe.sockets.flatMap((s) => s.sent).find((m) => m.t >= ${tv} && m.text !== null && JSON.parse(m.text).type === "ping") || { t: null }).t`,
    );
    const pingWhileHidden = await page.eval<boolean>(
      `window.runs.probe.sockets.flatMap((s) => s.sent).some((m) => m.t >= ${t0} && m.t < ${tv} && m.text !== null && JSON.parse(m.text).type === "ping")`,
    );
    await page.eval(`T.fault("freeze", { on: false })`);
    r["slow_ping_probe_sent_ms_after_visible"] = ping === null ? null : Math.round(ping - tv);
    r["slow_ping_probe_detected_s_after_visible"] = secs(probe === null ? null : probe - tv);
    r["slow_ping_without_probe_detected_within_4s_of_visible"] = noprobe !== null;
    await page.eval(`(T.stop("probe"), T.stop("noprobe"))`);
    await page.close();
    await drained(slow);
    expect(pingWhileHidden, "no probe while hidden (nothing woke the client)").toBe(false);
    expect(ping, "a ping sent after the page became visible").not.toBeNull();
    expect(ping! - tv, "the probe goes out at once").toBeLessThan(500);
    expect(probe, "the dead server found").not.toBeNull();
    expect(probe! - tv).toBeGreaterThanOrEqual(1900); // the probe's 2 s deadline
    expect(probe! - tv).toBeLessThanOrEqual(2600);
    expect(noprobe).toBeNull(); // its watchdog is 2 × 25 s after the last frame
  }, 60_000);
});

const LONG = process.env["BELAY_E2E_LONG_BACKGROUND"] === "1";
const MARKS_S = [10, 30, 60, 120, 180, 240, 300, 330];

it.runIf(LONG)(
  "hidden for 5.5 minutes (BELAY_E2E_LONG_BACKGROUND=1): timer throttling as the time hidden grows, then a freeze",
  async () => {
    const server = await startServer(["--ping-interval-ms", "1000"]);
    const long: Record<string, Record<string, unknown>> = {};
    const opened: { engine: Engine; browser: Browser; page: Tab; hiddenAt: number }[] = [];
    try {
      for (const engine of HIDEABLE) {
        const browser = await open(engine);
        const page = await browser.newTab();
        opened.push({ engine, browser, page, hiddenAt: 0 });
        await page.goto(`${server.base}/healthz`);
        await page.eval(PAGE_SETUP);
        await page.eval(RECORDER);
        await page.call("T.start", "h", "belay");
        await page.waitFor(`window.runs.h.c.status().ready`, 10_000);
        long[engine] = { browser: browser.version, how_hidden: HOW_HIDDEN[engine], timer_100ms_took_ms_at_s_hidden: {} };
      }
      await Promise.all(opened.map(async (o) => ((await o.page.hide!()), (o.hiddenAt = await o.page.eval<number>("T.now()")))));
      // Each engine samples on its own: a throttled sample must not delay the other's.
      await Promise.all(
        opened.map(async (o) => {
          const at = long[o.engine]!["timer_100ms_took_ms_at_s_hidden"] as Record<number, number>;
          for (const mark of MARKS_S) {
            await sleep(Math.max(0, o.hiddenAt + mark * 1000 - (await o.page.eval<number>("T.now()"))));
            at[mark] = (await o.page.eval<number[]>("timerLateness(1)"))[0]!;
          }
        }),
      );
      const t0s = await Promise.all(opened.map((o) => o.page.eval<number>("T.now()")));
      await fetch(`${server.base}/admin/fault/freeze`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ on: true }) });
      const deadline = Date.now() + 120_000;
      const lost = await Promise.all(
        opened.map(async (o, i) => {
          await o.page.waitFor(`${lostSince("h", t0s[i]!)} !== null`, Math.max(1000, deadline - Date.now())).catch(() => {});
          return o.page.eval<number | null>(lostSince("h", t0s[i]!));
        }),
      );
      await fetch(`${server.base}/admin/fault/freeze`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ on: false }) });
      for (const [i, o] of opened.entries()) {
        const shown = await o.page.eval<number | null>(`(VIS.find((v) => v.t > ${o.hiddenAt} && v.state === "visible") || { t: null }).t`);
        long[o.engine]!["hidden_s_before_freeze"] = secs(t0s[i]! - o.hiddenAt);
        long[o.engine]!["freeze_detected_s"] = secs(lost[i] === null ? null : lost[i]! - t0s[i]!);
        long[o.engine]!["stayed_hidden"] = shown === null;
      }
      console.log(`background tab, hidden 5.5 minutes: ${JSON.stringify(long, null, 1)}`);
      mkdirSync(ROOT + "target", { recursive: true });
      writeFileSync(ROOT + "target/browser-background-long.json", JSON.stringify(long, null, 2));
      for (const [i, o] of opened.entries()) {
        expect(long[o.engine]!["stayed_hidden"], `${o.engine} stayed hidden`).toBe(true);
        expect(lost[i], `${o.engine}: freeze detected while hidden, within 2 minutes`).not.toBeNull();
        await o.page.show!();
        await o.page.waitFor(`window.runs.h.c.status().ready`, 15_000);
      }
    } finally {
      for (const o of opened) await o.browser.close();
      server.stop();
    }
  },
  600_000,
);
