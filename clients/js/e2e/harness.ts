/**
 * Shared by the Chromium end-to-end tests: the real demo server on a free
 * loopback port, and Debian's chromium with the flags of shared/DESIGN.md.
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";

export const ROOT = new URL("../../../", import.meta.url).pathname;
export const CHROMIUM = process.env["CHROMIUM"] ?? "/usr/bin/chromium";
export const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

let built: string | undefined;

/** The `belay` binary: `BELAY_BIN`, or a debug build made once per run (in `CARGO_TARGET_DIR` if set). */
export function belayBin(): string {
  if (process.env["BELAY_BIN"]) return process.env["BELAY_BIN"];
  if (!built) {
    execFileSync("cargo", ["build", "-q", "-p", "belay-cli"], { cwd: ROOT, stdio: "inherit" });
    built = join(process.env["CARGO_TARGET_DIR"] ?? join(ROOT, "target"), "debug/belay");
  }
  return built;
}

export interface DemoServer {
  base: string;
  ws: string;
  process: ChildProcess;
  stop(): void;
}

/** `belay serve --demo` on 127.0.0.1:0 with `args`; resolves with its URL once it listens. */
export function startServer(args: string[] = []): Promise<DemoServer> {
  const child = spawn(belayBin(), ["serve", "--demo", "--listen", "127.0.0.1:0", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`server did not start: ${seen}`)), 30_000);
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const m = /open (http:\/\/127\.0\.0\.1:\d+)\//.exec(seen);
      if (m) {
        clearTimeout(timer);
        const base = m[1]!;
        resolve({ base, ws: base.replace("http", "ws") + "/ws", process: child, stop: () => void child.kill() });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("exit", (code) => reject(new Error(`server exited with ${code}: ${seen}`)));
  });
}

/** A fresh Chromium profile; `close()` also removes it. */
export async function launch(extraArgs: string[] = []): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), "belay-chromium-"));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: [...FLAGS, ...extraArgs] });
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export async function connections(base: string): Promise<number> {
  return ((await (await fetch(`${base}/admin/state`)).json()) as { connections: number }).connections;
}

export async function fault(base: string, name: string, body: object): Promise<void> {
  const r = await fetch(`${base}/admin/fault/${name}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`fault ${name}: HTTP ${r.status}`);
}

/**
 * Page-side recorder (run with `page.evaluate(RECORDER)` on a page of the
 * server's origin): `T.start(name, mode, options)` starts a client from the
 * server's /assets/modes.js and records every event and every socket fact
 * in `runs[name]` (each socket's dial, what it received in `inputs`, what
 * the client sent in `sent`), timestamped with performance.now(); `T.fault` toggles a
 * fault from the page (returns the time just before the request).
 */
// Plain JS (a string: vitest would rewrite a dynamic import inside a function).
export const RECORDER = `(async () => {
  const { startClient } = await import("/assets/modes.js");
  window.runs = {};
  window.T = {
    now: () => performance.now(),
    async fault(name, body) {
      const t = performance.now();
      const r = await fetch("/admin/fault/" + name, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      if (!r.ok) throw new Error("fault " + name + ": HTTP " + r.status);
      return t;
    },
    start(name, mode, options = {}) {
      const events = [];
      const sockets = [];
      class Recording extends WebSocket {
        constructor(u, proto) {
          super(u, proto);
          const rec = { dial: performance.now(), inputs: [], sent: [] };
          sockets.push(rec);
          this.addEventListener("open", () => rec.inputs.push({ t: performance.now(), kind: "opened" }));
          this.addEventListener("message", (e) => rec.inputs.push({ t: performance.now(), kind: "frame", text: e.data }));
          this.addEventListener("close", (e) => rec.inputs.push({ t: performance.now(), kind: "close", code: e.code, reason: e.reason }));
          this.rec = rec;
        }
        send(data) {
          this.rec.sent.push({ t: performance.now(), text: typeof data === "string" ? data : null });
          super.send(data);
        }
      }
      const started = performance.now();
      const c = startClient(mode, { url: "ws://" + location.host + "/ws", ...options, WebSocket: Recording }, (e) => events.push({ t: performance.now(), ...e }));
      window.runs[name] = { c, events, sockets, started };
      return started;
    },
    stop(name) {
      window.runs[name]?.c.close();
    },
  };
})()`;
