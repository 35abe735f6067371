/**
 * One small interface over three browser engines, for the end-to-end tests
 * that run in each of them (the seed's table, the fallback, binary, the
 * background tab hidden for real):
 *
 * - **chromium**: Debian's chromium through playwright-core (CDP), headless,
 *   as the Chromium-only tests drive it (harness.ts `launch`); or, for a
 *   real background tab, headed on Xvfb through puppeteer-core (CDP);
 * - **firefox**: Debian's firefox-esr through puppeteer-core over WebDriver
 *   BiDi, headless;
 * - **webkit**: WebKitGTK (Safari's engine) through `WebKitWebDriver` from
 *   Debian's webkit2gtk-driver, classic W3C WebDriver over HTTP on a free
 *   loopback port, driving WebKitGTK's MiniBrowser in automation mode. The
 *   MiniBrowser has no headless mode, so it runs on an Xvfb display of its
 *   own (`Xvfb -displayfd` picks a free display number).
 *
 * `BELAY_E2E_ENGINES` (comma-separated) narrows the engines, e.g.
 * `BELAY_E2E_ENGINES=firefox npm run e2e`.
 *
 * Every evaluation takes a JavaScript expression as a string (the tests
 * keep their page-side code as plain JS: vitest rewrites functions), awaits
 * it in the page and returns its value through JSON, the same way in every
 * engine. `waitFor` polls from Node, not from the page, so a page whose
 * timers are throttled (a background tab) does not slow the polling down.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Page as PwPage } from "playwright-core";
import puppeteer, { type Browser as PpBrowser, type Page as PpPage } from "puppeteer-core";
import { freePort } from "./backend_example.js";
import { CHROMIUM, FLAGS } from "./harness.js";

export type Engine = "chromium" | "firefox" | "webkit";
const ALL: Engine[] = ["chromium", "firefox", "webkit"];

/** The engines this run covers: all three unless `BELAY_E2E_ENGINES` names some. */
export const ENGINES: Engine[] = (() => {
  const named = process.env["BELAY_E2E_ENGINES"]?.split(",").map((s) => s.trim()).filter(Boolean);
  if (!named?.length) return ALL;
  for (const n of named) if (!ALL.includes(n as Engine)) throw new Error(`BELAY_E2E_ENGINES: unknown engine ${n} (known: ${ALL.join(", ")})`);
  return named as Engine[];
})();

export const FIREFOX = process.env["FIREFOX"] ?? "/usr/bin/firefox-esr";
export const WEBKIT_DRIVER = process.env["WEBKIT_DRIVER"] ?? "WebKitWebDriver";
/** WebKitGTK's MiniBrowser (in libwebkit2gtk-4.1-0, which webkit2gtk-driver depends on). */
export const MINIBROWSER =
  process.env["WEBKIT_MINIBROWSER"] ??
  ["/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser", "/usr/lib/aarch64-linux-gnu/webkit2gtk-4.1/MiniBrowser", "/usr/libexec/webkit2gtk-4.1/MiniBrowser"].find(existsSync) ??
  "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";

/**
 * One page (tab or window) of a browser. The page the browser starts with
 * stays open and unused (closing a browser's last window ends it), so every
 * tab is a new one.
 */
export interface Tab {
  readonly engine: Engine;
  goto(url: string): Promise<void>;
  /** Evaluate `expr` in the page, await it, and return its value through JSON (undefined becomes null). */
  eval<T = unknown>(expr: string): Promise<T>;
  /** `eval` of `fn(...args)`, each argument as JSON: `tab.call("T.start", "a", "belay")`. */
  call<T = unknown>(fn: string, ...args: unknown[]): Promise<T>;
  /** Resolves once `expr` is truthy in the page (polled from Node every 20 ms); rejects after `timeoutMs`. */
  waitFor(expr: string, timeoutMs?: number): Promise<void>;
  /**
   * Puts the page in the background the way the engine allows, for real
   * (Firefox and headed Chromium: another tab in front of it; WebKit: its
   * window minimised); resolves once `document.visibilityState` is
   * "hidden". Absent in headless Chromium, which keeps every page visible.
   */
  hide?(): Promise<void>;
  /** Brings a hidden page back to the foreground; resolves once it is "visible". */
  show?(): Promise<void>;
  close(): Promise<void>;
}

/** How each engine's `hide` puts a page in the background, for the reports. */
export const HOW_HIDDEN: Partial<Record<Engine, string>> = {
  chromium: "headed on Xvfb (puppeteer-core over CDP): another tab opened in front of it in its window (Target.createTarget), back with Page.bringToFront",
  firefox: "another tab opened in front of it in its window (WebDriver BiDi browsingContext.create), back with browsingContext.activate",
  webkit: "its window minimised (WebDriver Minimize Window), back with Set Window Rect",
};

export interface Browser {
  readonly engine: Engine;
  /** The engine's version, as the driver reports it. */
  readonly version: string;
  newTab(): Promise<Tab>;
  close(): Promise<void>;
}

/** Wraps `expr` so that its awaited value comes back as a JSON string. */
const asJson = (expr: string) => `(async () => JSON.stringify((await (\n${expr}\n)) ?? null))()`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The parts every engine shares: `call` and `waitFor` on top of `eval`. */
function tab(
  engine: Engine,
  goto: (url: string) => Promise<void>,
  evalJson: (script: string) => Promise<string>,
  close: () => Promise<void>,
  background?: { hide(): Promise<void>; show(): Promise<void> },
): Tab {
  const t: Tab = {
    engine,
    goto,
    async eval<T>(expr: string) {
      return JSON.parse(await evalJson(asJson(expr))) as T;
    },
    call<T>(fn: string, ...args: unknown[]) {
      return t.eval<T>(`${fn}(${args.map((a) => JSON.stringify(a)).join(", ")})`);
    },
    async waitFor(expr: string, timeoutMs = 15_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        if (await t.eval<boolean>(`!!(${expr})`)) return;
        if (Date.now() > end) throw new Error(`${engine}: not true within ${timeoutMs} ms: ${expr}`);
        await sleep(20);
      }
    },
    close,
  };
  if (background) {
    t.hide = async () => {
      await background.hide();
      await t.waitFor(`document.visibilityState === "hidden"`, 10_000);
    };
    t.show = async () => {
      await background.show();
      await t.waitFor(`document.visibilityState === "visible"`, 10_000);
    };
  }
  return t;
}

/**
 * Starts `engine` with a fresh profile; `close()` ends every process it
 * started and removes the profile. `headed`: Chromium with a window, on an
 * Xvfb display of its own, where a tab can be put in the background for real
 * (`openChromiumHeaded`); Firefox and WebKit ignore it (Firefox is headless
 * and can hide a tab; WebKit always has a window).
 */
export function openBrowser(engine: Engine, options: { headed?: boolean } = {}): Promise<Browser> {
  switch (engine) {
    case "chromium":
      return options.headed ? openChromiumHeaded() : openChromium();
    case "firefox":
      return openFirefox();
    case "webkit":
      return openWebKit();
  }
}

const pageError = (engine: Engine) => (e: unknown) => console.error(`${engine} page error: ${e instanceof Error ? e.message : String(e)}`);

async function openChromium(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "belay-chromium-"));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS });
  const wrap = (page: PwPage): Tab => {
    page.on("pageerror", pageError("chromium"));
    return tab(
      "chromium",
      async (url) => void (await page.goto(url)),
      (script) => page.evaluate(script) as Promise<string>,
      () => page.close(),
    );
  };
  return {
    engine: "chromium",
    version: chromiumVersion(),
    async newTab() {
      return wrap(await context.newPage());
    },
    async close() {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const chromiumVersion = () => execFileSync(CHROMIUM, ["--version"], { stdio: ["ignore", "pipe", "ignore"] }).toString().trim();

/**
 * A page driven by puppeteer-core (Firefox over WebDriver BiDi, headed
 * Chromium over CDP); `hide` opens another tab in front of it in its window.
 */
function puppeteerTab(engine: Engine, browser: PpBrowser, page: PpPage): Tab {
  page.on("pageerror", pageError(engine));
  let cover: PpPage | undefined;
  return tab(
    engine,
    async (url) => void (await page.goto(url)),
    (script) => page.evaluate(script) as Promise<string>,
    () => page.close(),
    {
      async hide() {
        // A new tab opens in the focused window, in front: focus this page's window first.
        await page.bringToFront();
        cover = await browser.newPage();
      },
      async show() {
        await page.bringToFront();
        await cover?.close();
        cover = undefined;
      },
    },
  );
}

/**
 * Chromium with a window, on an Xvfb display of its own, through
 * puppeteer-core over CDP: there a tab behind another is hidden and
 * throttled as in a user's browser (headless Chromium keeps every page
 * visible; playwright keeps every page of a headed one visible too).
 * Playwright's and puppeteer's default flags that keep background pages at
 * full speed are left out.
 */
async function openChromiumHeaded(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "belay-chromium-"));
  const started: ChildProcess[] = [];
  let browser: PpBrowser;
  try {
    const display = await startXvfb(started);
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: false,
      userDataDir: profile,
      args: FLAGS.filter((f) => f !== "--headless"),
      env: { ...process.env, DISPLAY: `:${display}` },
      ignoreDefaultArgs: ["--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows", "--disable-renderer-backgrounding"],
    });
  } catch (e) {
    stopAll(started);
    throw e;
  }
  return {
    engine: "chromium",
    version: `${chromiumVersion()} (headed, Xvfb)`,
    async newTab() {
      // A tab in the one window, in front (the tab before it goes behind):
      // with no window manager, the window that a new tab opens in is the
      // last one Chromium made active, not the one brought to the front.
      return puppeteerTab("chromium", browser, await browser.newPage());
    },
    async close() {
      await browser.close().catch(() => {});
      stopAll(started);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

async function openFirefox(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "belay-firefox-"));
  const browser = await puppeteer.launch({
    browser: "firefox",
    protocol: "webDriverBiDi",
    executablePath: FIREFOX,
    headless: true,
    userDataDir: profile,
    // Loopback only: no update checks, telemetry or captive-portal probes.
    extraPrefsFirefox: {
      "app.update.disabledForTesting": true,
      "network.captive-portal-service.enabled": false,
      "network.connectivity-service.enabled": false,
      "toolkit.telemetry.reportingpolicy.firstRun": false,
      "datareporting.policy.dataSubmissionEnabled": false,
    },
  });
  const version = await browser.version();
  return {
    engine: "firefox",
    version,
    async newTab() {
      // A window of its own: a new tab would put the one before it in the
      // background, where Firefox hides the page and throttles its timers.
      return puppeteerTab("firefox", browser, await browser.newPage({ type: "window" }));
    },
    async close() {
      await browser.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A display of its own: Xvfb writes the free display number it took to fd 3. The process goes into `started`. */
async function startXvfb(started: ChildProcess[]): Promise<string> {
  const xvfb = spawn("Xvfb", ["-displayfd", "3", "-screen", "0", "1280x800x24", "-nolisten", "tcp"], { stdio: ["ignore", "ignore", "pipe", "pipe"] });
  track(xvfb, started);
  return new Promise<string>((resolve, reject) => {
    let seen = "";
    let err = "";
    const timer = setTimeout(() => reject(new Error(`Xvfb gave no display within 20 s: ${err}`)), 20_000);
    xvfb.stderr!.on("data", (d) => (err += d));
    xvfb.stdio[3]!.on("data", (d) => {
      seen += d;
      if (seen.includes("\n")) {
        clearTimeout(timer);
        resolve(seen.trim());
      }
    });
    xvfb.on("error", (e) => reject(new Error(`cannot start Xvfb (the test command installs xvfb): ${e.message}`)));
    xvfb.on("exit", (code) => reject(new Error(`Xvfb exited with ${code}: ${err}`)));
  });
}

const stopAll = (started: ChildProcess[]) => {
  for (const c of started.reverse()) if (c.exitCode === null && c.signalCode === null) c.kill();
};

/** Every Xvfb and driver still running, ended if the test process exits without closing them (a test timed out in beforeAll). */
const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const c of running) if (c.exitCode === null && c.signalCode === null) c.kill();
});
const track = (c: ChildProcess, started: ChildProcess[]) => {
  started.push(c);
  running.add(c);
  c.on("exit", () => running.delete(c));
};

async function openWebKit(): Promise<Browser> {
  const started: ChildProcess[] = [];
  try {
    const display = await startXvfb(started);
    const port = await freePort();
    const driver = spawn(WEBKIT_DRIVER, [`--port=${port}`, "--host=local"], { env: { ...process.env, DISPLAY: `:${display}` }, stdio: ["ignore", "ignore", "pipe"] });
    track(driver, started);
    let driverErr = "";
    driver.stderr!.on("data", (d) => (driverErr = (driverErr + d).slice(-4000)));
    const driverFailed = new Promise<never>((_, reject) => {
      driver.on("error", (e) => reject(new Error(`cannot start ${WEBKIT_DRIVER} (the test command installs webkit2gtk-driver): ${e.message}`)));
      driver.on("exit", (code) => reject(new Error(`${WEBKIT_DRIVER} exited with ${code}: ${driverErr}`)));
    });
    driverFailed.catch(() => {});
    const base = `http://127.0.0.1:${port}`;
    const raw = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const r = await fetch(base + path, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
      const j = (await r.json()) as { value: T & { error?: string; message?: string } };
      if (!r.ok) throw new Error(`webkit ${method} ${path}: ${j.value?.error}: ${j.value?.message}`);
      return j.value;
    };
    // The driver listens: GET /status answers.
    const ready = (async () => {
      for (const end = Date.now() + 20_000; ; await sleep(50)) {
        try {
          await raw("GET", "/status");
          return;
        } catch (e) {
          if (Date.now() > end) throw new Error(`${WEBKIT_DRIVER} did not answer within 20 s: ${e}`);
        }
      }
    })();
    await Promise.race([ready, driverFailed]);
    const created = await raw<{ sessionId: string; capabilities: { browserVersion?: string } }>("POST", "/session", {
      capabilities: { alwaysMatch: { "webkitgtk:browserOptions": { binary: MINIBROWSER, args: ["--automation"] } } },
    });
    const session = `/session/${created.sessionId}`;
    // One command at a time, and window switches only where a command needs them.
    let queue: Promise<unknown> = Promise.resolve();
    const serial = <T>(f: () => Promise<T>): Promise<T> => {
      const run = queue.then(f, f);
      queue = run.catch(() => {});
      return run;
    };
    let current = "";
    /** `f` with `handle` as the current window, no other command in between. */
    const inWindow = <T>(handle: string, f: () => Promise<T>) =>
      serial(async () => {
        if (current !== handle) {
          await raw("POST", session + "/window", { handle });
          current = handle;
        }
        return f();
      });
    await serial(() => raw("POST", session + "/timeouts", { script: 300_000, pageLoad: 60_000 }));
    current = await serial(() => raw<string>("GET", session + "/window"));
    const keeper = current;
    return {
      engine: "webkit",
      version: `WebKitGTK ${created.capabilities.browserVersion ?? "?"} (MiniBrowser)`,
      async newTab() {
        // A window of its own, not a tab: MiniBrowser opens new tabs behind
        // the current one, where the page is hidden (and its timers throttled).
        const handle = (await inWindow(keeper, () => raw<{ handle: string }>("POST", session + "/window/new", { type: "window" }))).handle;
        const c = <T>(method: string, path: string, body?: unknown) => inWindow(handle, () => raw<T>(method, session + path, body));
        const t = tab(
          "webkit",
          async (url) => void (await c("POST", "/url", { url })),
          async (script) => {
            const out = await c<{ ok?: string; err?: string }>("POST", "/execute/async", {
              script: `const done = arguments[arguments.length - 1]; ${script}.then((v) => done({ ok: v }), (e) => done({ err: String((e && e.stack) || e) }));`,
              args: [],
            });
            if (out.err !== undefined) throw new Error(`webkit page: ${out.err}`);
            return out.ok!;
          },
          () =>
            inWindow(handle, async () => {
              await raw("DELETE", session + "/window");
              // Back to the first window: commands such as /window/new need a current one.
              await raw("POST", session + "/window", { handle: keeper });
              current = keeper;
            }),
          {
            // Without a window manager (Xvfb alone) WebKitGTK unmaps a minimised
            // window, and maps it again when its rectangle is set.
            hide: async () => void (await c("POST", "/window/minimize", {})),
            show: async () => void (await c("POST", "/window/rect", { x: 0, y: 0 })),
          },
        );
        return t;
      },
      async close() {
        await serial(() => raw("DELETE", session)).catch(() => {});
        stopAll(started);
      },
    };
  } catch (e) {
    stopAll(started);
    throw e;
  }
}
