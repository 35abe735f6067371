/**
 * WebKit (Safari's engine) for the e2e tests: WebKitGTK's MiniBrowser in
 * automation mode, on an Xvfb display of its own (it has no headless mode),
 * through `WebKitWebDriver` from Debian's webkit2gtk-driver: classic W3C
 * WebDriver over HTTP on a free loopback port.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { freePort } from "./backend_example.js";
import { tab, type Browser } from "./tab.js";
import { startXvfb, stopAll, track } from "./xvfb.js";

export const WEBKIT_DRIVER = process.env["WEBKIT_DRIVER"] ?? "WebKitWebDriver";
/** WebKitGTK's MiniBrowser (in libwebkit2gtk-4.1-0, which webkit2gtk-driver depends on). */
export const MINIBROWSER =
  process.env["WEBKIT_MINIBROWSER"] ??
  ["/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser", "/usr/lib/aarch64-linux-gnu/webkit2gtk-4.1/MiniBrowser", "/usr/libexec/webkit2gtk-4.1/MiniBrowser"].find(existsSync) ??
  "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** MiniBrowser through WebKitWebDriver on a fresh Xvfb display; `close()` ends the session, the driver and the display. */
export async function openWebKit(): Promise<Browser> {
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
