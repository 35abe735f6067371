/**
 * One small interface (tab.ts) over three browser engines, for the end-to-end tests
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
import { execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Page as PwPage } from "playwright-core";
import puppeteer, { type Browser as PpBrowser, type Page as PpPage } from "puppeteer-core";
import { CHROMIUM, FLAGS } from "./harness.js";
import { pageError, tab, type Browser, type Engine, type Tab } from "./tab.js";
import { openWebKit } from "./webkit.js";
import { startXvfb, stopAll } from "./xvfb.js";

export type { Browser, Engine, Tab } from "./tab.js";

const ALL: Engine[] = ["chromium", "firefox", "webkit"];

/** The engines this run covers: all three unless `BELAY_E2E_ENGINES` names some. */
export const ENGINES: Engine[] = (() => {
  const named = process.env["BELAY_E2E_ENGINES"]?.split(",").map((s) => s.trim()).filter(Boolean);
  if (!named?.length) return ALL;
  for (const n of named) if (!ALL.includes(n as Engine)) throw new Error(`BELAY_E2E_ENGINES: unknown engine ${n} (known: ${ALL.join(", ")})`);
  return named as Engine[];
})();


export const FIREFOX = process.env["FIREFOX"] ?? "/usr/bin/firefox-esr";

/** How each engine's `hide` puts a page in the background, for the reports. */
export const HOW_HIDDEN: Partial<Record<Engine, string>> = {
  chromium: "headed on Xvfb (puppeteer-core over CDP): another tab opened in front of it in its window (Target.createTarget), back with Page.bringToFront",
  firefox: "another tab opened in front of it in its window (WebDriver BiDi browsingContext.create), back with browsingContext.activate",
  webkit: "its window minimised (WebDriver Minimize Window), back with Set Window Rect",
};

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
