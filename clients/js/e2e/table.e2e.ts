/**
 * The seed's results table (MISSION §10), measured in real browsers
 * (headless Chromium, headless Firefox, WebKitGTK: e2e/browsers.ts) against
 * `belay serve --demo --ping-interval-ms 1000` for the Belay browser client
 * and the naive baseline. Both run from the demo server's own
 * /assets/modes.js (the code the demo page and the lab agent use) in a page
 * on the server's origin. Prints the table per engine, asserts the Belay
 * row, and writes the figures to target/browser-table.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeConfig } from "../src/core/config.js";
import { Session, type Input } from "../src/core/session.js";
import { ENGINES, openBrowser, type Browser, type Engine, type Tab } from "./browsers.js";
import { connections, RECORDER, ROOT, startServer, type DemoServer } from "./harness.js";

const PING_MS = 1000; // the server pings a quiet connection every second, as in the reference
const FREEZE_MS = 12_000; // the reference froze for 12 s
const FLAP_WINDOW_MS = 15_000;
const FLAP_AFTER_MS = 300;
const SEED = 42;

type Row = { freeze: number | null; service: number | null; dataAfter: number | null; connsAfterFreeze: number; flapAttempts: number };
type Figures = { version: string; rows: Record<"belay" | "naive", Partial<Row>>; notes: Record<string, unknown> };
const figures: Partial<Record<Engine, Figures>> = {};
const NAMES: Record<Engine, string> = { chromium: "Chromium", firefox: "Firefox", webkit: "WebKit" };

const ready = (run: string) => `window.runs[${JSON.stringify(run)}].c.status().ready`;
const pubs = (run: string) => `window.runs[${JSON.stringify(run)}].events.filter(e => e.ev === 'pub').length`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

afterAll(() => {
  const show = (v: number | null | undefined, none: string) => (v === null || v === undefined ? none : `${(v / 1000).toFixed(2)} s`);
  const line = (name: string, r: Partial<Row>) =>
    `| ${name} | ${show(r.freeze, "never")} | ${show(r.service, "never")} | ${r.dataAfter == null ? "no data" : `data after ${show(r.dataAfter, "")}`} | ${r.connsAfterFreeze ?? "–"} | ${r.flapAttempts ?? "–"} |`;
  for (const [engine, f] of Object.entries(figures) as [Engine, Figures][]) {
    if (f.rows.belay.freeze === undefined) continue;
    console.log(
      [
        "",
        `${f.version}:`,
        `| client (${NAMES[engine]}) | freeze detected | service loss detected | after service returns | server conns after freeze | attempts in 15 s flapping |`,
        "| --- | --- | --- | --- | --- | --- |",
        line("naive (trusts socket events)", f.rows.naive),
        line("Belay browser client", f.rows.belay),
        "",
      ].join("\n"),
    );
  }
  if (Object.keys(figures).length) {
    mkdirSync(ROOT + "target", { recursive: true });
    writeFileSync(ROOT + "target/browser-table.json", JSON.stringify(figures, null, 2));
  }
});

/**
 * What the reconnect policy predicts: the same core, in virtual time, fed the
 * server's answers the real sockets got (open, frames, close, each at the
 * same delay after its dial), counting dials in the window.
 */
function predictDials(seed: number, sockets: { dial: number; inputs: { t: number; kind: string; text?: string; code?: number; reason?: string }[] }[], windowMs: number): number {
  const s = new Session(makeConfig(), 0, BigInt(seed));
  const queue: { at: number; input: Input }[] = [];
  let dials = 0;
  const drain = (now: number) => {
    for (let o = s.pollOutput(); o; o = s.pollOutput()) {
      if (o.output !== "open_transport") continue;
      const rec = sockets[Math.min(dials, sockets.length - 1)]!;
      dials++;
      let opened = false;
      for (const i of rec.inputs) {
        const at = now + (i.t - rec.dial);
        if (i.kind === "opened") opened = true;
        const input: Input =
          i.kind === "opened" ? { kind: "opened", id: o.id }
          : i.kind === "frame" ? { kind: "frame", id: o.id, text: i.text! }
          : opened ? { kind: "closed", id: o.id, code: i.code === 1005 || i.code === 1006 ? null : i.code!, reason: i.reason ?? "" }
          : { kind: "failed", id: o.id, failure: { kind: "network", detail: "closed before open" } };
        queue.push({ at, input });
      }
      queue.sort((a, b) => a.at - b.at);
    }
  };
  s.start(0);
  drain(0);
  for (;;) {
    const timer = s.pollTimeout();
    const next = queue[0];
    const at = Math.min(timer ?? Infinity, next?.at ?? Infinity);
    if (at >= windowMs) break;
    if (next && next.at <= (timer ?? Infinity)) {
      queue.shift();
      s.handleInput(next.at, next.input);
    } else s.handleTimeout(at);
    drain(at);
  }
  return dials;
}

describe.each(ENGINES)("%s", (engine) => {
  let server: DemoServer;
  let browser: Browser;
  let page: Tab;
  const rows: Figures["rows"] = { belay: {}, naive: {} };
  const notes: Record<string, unknown> = {};

  const evalNum = (expr: string) => page.eval<number>(expr);
  const waitFor = (expr: string, timeout: number) => page.waitFor(expr, timeout);
  /** Time of the first event of `run` matching `pred` at or after `since`, or null. */
  const firstEvent = (run: string, pred: string, since: number) =>
    page.eval<number | null>(`(window.runs[${JSON.stringify(run)}].events.find(e => e.t >= ${since} && (${pred})) || {t: null}).t`);

  async function waitConnections(n: number, timeout = 15_000): Promise<void> {
    const end = Date.now() + timeout;
    while ((await connections(server.base)) !== n) {
      if (Date.now() > end) throw new Error(`server connections did not reach ${n} (now ${await connections(server.base)})`);
      await sleep(100);
    }
  }

  beforeAll(async () => {
    server = await startServer(["--ping-interval-ms", String(PING_MS)]);
    browser = await openBrowser(engine);
    figures[engine] = { version: browser.version, rows, notes };
    page = await browser.newTab();
    await page.goto(`${server.base}/healthz`);
    await page.eval(RECORDER);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    server?.stop();
  });

  for (const mode of ["naive", "belay"] as const) {
    it(`${mode}: freeze for 12 s (detection, then server connections)`, async () => {
      const run = `freeze-${mode}`;
      await page.call("T.start", run, mode);
      await waitFor(`${ready(run)} && ${pubs(run)} >= 1`, 10_000);
      const t0 = await evalNum(`T.fault('freeze', {on: true})`);
      await sleep(FREEZE_MS);
      const lost = await firstEvent(run, "e.ev === 'lost'", t0);
      await evalNum(`T.fault('freeze', {on: false})`);
      rows[mode].freeze = lost === null ? null : lost - t0;
      await waitFor(ready(run), 15_000);
      await sleep(2000); // let the server finish closing whatever the client abandoned
      rows[mode].connsAfterFreeze = await connections(server.base);
      notes[`${mode}_freeze_dials`] = await evalNum(`window.runs['${run}'].c.dials`);
      await page.call("T.stop", run);
      await waitConnections(0);
      if (mode === "belay") {
        // The watchdog: two server ping intervals after the last frame (which came before the freeze).
        expect(rows.belay.freeze, "freeze detected").not.toBeNull();
        expect(rows.belay.freeze!).toBeLessThanOrEqual(2 * PING_MS + 600);
        expect(rows.belay.connsAfterFreeze).toBe(1);
      }
    }, 60_000);
  }

  it("service down and back (both clients at once)", async () => {
    await page.eval(`(T.start("svc-naive", "naive"), T.start("svc-belay", "belay"))`);
    await waitFor(`${ready("svc-naive")} && ${ready("svc-belay")} && ${pubs("svc-naive")} >= 1 && ${pubs("svc-belay")} >= 1`, 10_000);
    const t0 = await evalNum(`T.fault('service_down', {on: true})`);
    await sleep(3000);
    const t1 = await evalNum(`T.fault('service_down', {on: false})`);
    await sleep(5000);
    for (const mode of ["naive", "belay"] as const) {
      const lost = await firstEvent(`svc-${mode}`, "e.ev === 'lost'", t0);
      rows[mode].service = lost === null || lost > t1 ? null : lost - t0;
      const data = await firstEvent(`svc-${mode}`, "e.ev === 'pub'", t1);
      rows[mode].dataAfter = data === null ? null : data - t1;
    }
    const belayStatus = await page.eval(`window.runs["svc-belay"].c.status()`);
    await page.eval(`(T.stop("svc-naive"), T.stop("svc-belay"))`);
    await waitConnections(0);
    expect(rows.belay.service, "service loss detected").not.toBeNull();
    expect(rows.belay.service!).toBeLessThan(500); // at once: the server says so
    expect(rows.belay.dataAfter, "data after the service returned").not.toBeNull();
    expect(rows.belay.dataAfter!).toBeLessThanOrEqual(2000);
    expect(belayStatus).toMatchObject({ transport: true, protocol: true, service: true, ready: true });
    expect(rows.naive.service).toBeNull(); // it cannot see the service level at all
  }, 60_000);

  it("15 s of flapping (both clients at once): connection attempts", async () => {
    const t0 = await evalNum(`T.fault('flapping', {on: true, after_ms: ${FLAP_AFTER_MS}})`);
    const started = await page.eval<number[]>(`[T.start("flap-naive", "naive"), T.start("flap-belay", "belay", { seed: ${SEED} })]`);
    await sleep(FLAP_WINDOW_MS - ((await evalNum("T.now()")) - t0));
    await evalNum(`T.fault('flapping', {on: false})`);
    for (const mode of ["naive", "belay"] as const) {
      rows[mode].flapAttempts = await evalNum(`window.runs['flap-${mode}'].events.filter(e => e.ev === 'dial' && e.t < ${t0 + FLAP_WINDOW_MS}).length`);
    }
    const sockets = await page.eval<Parameters<typeof predictDials>[1]>(`window.runs["flap-belay"].sockets`);
    const predicted = predictDials(SEED, sockets, t0 + FLAP_WINDOW_MS - sockets[0]!.dial);
    notes["belay_flap_predicted"] = predicted;
    notes["flap_clients_started_ms_after_fault"] = started.map((t: number) => Math.round(t - t0));
    await page.eval(`(T.stop("flap-naive"), T.stop("flap-belay"))`);
    await waitConnections(0);
    console.log(`${engine} flapping: belay ${rows.belay.flapAttempts} attempts (the policy predicts ${predicted}), naive ${rows.naive.flapAttempts}`);
    expect(Math.abs(rows.belay.flapAttempts! - predicted)).toBeLessThanOrEqual(1);
    expect(rows.belay.flapAttempts!).toBeLessThan(rows.naive.flapAttempts!);
  }, 90_000);
});
