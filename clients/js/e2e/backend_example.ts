/**
 * The end-to-end scenario of the backend examples (examples/*-backend),
 * shared by python_backend.e2e.ts and node_backend.e2e.ts: only the `belay`
 * binary, the backend and headless Chromium. The backend issues the JWT,
 * answers the `orders.create` RPC that Belay forwards to it, and publishes
 * the order through Belay's HTTP API; the browser client subscribes to
 * `orders`, calls the RPC, and receives the order as a publication. Then the
 * backend restarts and a second order goes through too: an example that
 * numbers orders from a counter in memory reuses its publication keys
 * after a restart, and Belay refuses them (409).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, beforeAll, expect, it } from "vitest";
import { belayBin, launch } from "./harness.js";

const SECRET = "e2e-secret-of-some-length";
const API_KEY = "e2e-api-key-0123456789";
const env = { ...process.env, BELAY_AUTH_JWT_SECRET: SECRET, BELAY_API_KEY: API_KEY };

/** A loopback port nothing listens on now. */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Start `cmd` (into `children`); resolves with it once a line of its output matches `ready`. */
function start(children: ChildProcess[], cmd: string, args: string[], ready: RegExp): Promise<ChildProcess> {
  const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`${cmd} did not start: ${seen}`)), 30_000);
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (ready.test(seen)) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("exit", (code, signal) => reject(new Error(`${cmd} exited with ${code ?? signal}: ${seen}`)));
  });
}

/**
 * Registers the scenario for one backend: `backend(port, belay)` is the
 * command that starts it on `port`, talking to Belay at `belay`; it prints
 * "backend listening" once it listens.
 */
export function backendExample(name: string, backend: (port: number, belay: string) => [string, string[]]): void {
  const children: ChildProcess[] = [];
  let dir = "";
  let belay = "";
  let backendUrl = "";
  let backendPort = 0;
  let backendProcess: ChildProcess;
  let browser: Awaited<ReturnType<typeof launch>>;

  beforeAll(async () => {
    const belayPort = await freePort();
    backendPort = await freePort();
    belay = `http://127.0.0.1:${belayPort}`;
    backendUrl = `http://127.0.0.1:${backendPort}`;
    dir = mkdtempSync(join(tmpdir(), `belay-${name}-`));
    const config = join(dir, "belay.toml");
    writeFileSync(config, `[server]\nlisten = "127.0.0.1:${belayPort}"\n[auth]\nmode = "jwt"\n[proxy]\nrpc_url = "${backendUrl}/belay/rpc"\n`);
    await start(children, belayBin(), ["serve", "--config", config], /listening on ws:/);
    const [cmd, args] = backend(backendPort, belay);
    backendProcess = await start(children, cmd, args, /backend listening/);
    browser = await launch();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    for (const c of children) c.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(`${name}: the browser client gets its token from the backend, calls its RPC and receives the order it published`, async () => {
    const { token } = (await (await fetch(`${backendUrl}/token?user=alice`)).json()) as { token: string };
    const bundle = await build({ entryPoints: [new URL("../src/index.ts", import.meta.url).pathname], bundle: true, format: "iife", globalName: "Belay", write: false, target: "es2020" });
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    await page.goto(`${belay}/healthz`);
    await page.setContent(`<!doctype html><title>belay ${name} e2e</title>`);
    await page.addScriptTag({ content: bundle.outputFiles[0]!.text });
    const ws = belay.replace("http", "ws") + "/ws";
    const order = (key: string) =>
      page.evaluate(
        async ({ ws, token, key }) => {
          const w = window as any;
          const client = new w.Belay.BelayClient(ws, { token });
          const orders: any[] = [];
          const got = new Promise<void>((resolve) =>
            client.subscribe("orders").on((item: any) => {
              if (item.type === "publication") {
                orders.push(item);
                resolve();
              }
            }),
          );
          await client.whenReady();
          const answer = await client.request("orders.create", { sku: "A1" }, { idempotencyKey: key });
          await got;
          client.close();
          return { answer, orders };
        },
        { ws, token, key },
      );
    const first = await order("cart-1");
    expect(first.answer).toMatchObject({ item: { sku: "A1" }, user: "alice" });
    expect(typeof first.answer.order).toBe("string");
    expect(first.orders).toHaveLength(1);
    expect(first.orders[0]).toMatchObject({ type: "publication", data: { order: first.answer.order, user: "alice" } });

    // The backend restarts (a deploy); its next order still goes out.
    const exited = new Promise((resolve) => backendProcess.once("exit", resolve));
    backendProcess.kill();
    await exited;
    const [cmd, args] = backend(backendPort, belay);
    backendProcess = await start(children, cmd, args, /backend listening/);
    const second = await order("cart-2");
    expect(second.answer).toMatchObject({ item: { sku: "A1" }, user: "alice" });
    expect(second.answer.order).not.toBe(first.answer.order);
    expect(second.orders.map((p: any) => p.data.order)).toContain(second.answer.order);
  }, 60_000);
}
