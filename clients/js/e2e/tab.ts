/**
 * The page interface of e2e/browsers.ts, and what every engine's page
 * shares: `call` and `waitFor` on top of one `eval`.
 */

export type Engine = "chromium" | "firefox" | "webkit";

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
export function tab(
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

export const pageError = (engine: Engine) => (e: unknown) => console.error(`${engine} page error: ${e instanceof Error ? e.message : String(e)}`);
