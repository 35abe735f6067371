/**
 * The lab agent (lab/agent.mjs) against a real `belay serve --demo`: its
 * stdout is one JSON event per line, in the documented order, and EOF on
 * stdin ends it with exit 0 within 3 s.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CHROMIUM, startServer, type DemoServer } from "./harness.js";

const AGENT = new URL("../lab/agent.mjs", import.meta.url).pathname;
let server: DemoServer;
const children: ReturnType<typeof spawn>[] = [];

beforeAll(async () => {
  server = await startServer();
}, 180_000);
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill();
  server?.stop();
});

type Line = { ev: string; [k: string]: unknown };

async function runAgent(mode: string, until: (lines: Line[]) => boolean, extra: string[] = []): Promise<{ lines: Line[]; atEof: number; exitMs: number; code: number | null }> {
  const child = spawn(process.execPath, [AGENT, "--url", server.ws, "--mode", mode, "--request-every-ms", "200", "--request-timeout-ms", "1000", ...extra, "--chromium", CHROMIUM], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  children.push(child);
  const lines: Line[] = [];
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`agent lines so far: ${JSON.stringify(lines.slice(-10))}`)), 30_000);
    createInterface({ input: child.stdout! }).on("line", (text) => {
      lines.push(JSON.parse(text)); // anything but one JSON object per line fails here
      if (until(lines)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const t = Date.now();
  const atEof = lines.length;
  child.stdin!.end();
  const code = await exited;
  return { lines, atEof, exitMs: Date.now() - t, code };
}

for (const mode of ["belay", "naive"]) {
  it(`${mode}: started, dial, ready, publications in order, requests sent and settled ok; EOF exits 0`, async () => {
    const { lines: all, atEof, exitMs, code } = await runAgent(mode, (ls) => ls.filter((l) => l.ev === "pub").length >= 4 && ls.filter((l) => l.ev === "settled").length >= 3);
    const lines = all.slice(0, atEof); // closing the client at EOF may add a last `lost` and settle requests
    expect(lines[0]).toEqual({ ev: "started" });
    const kinds = lines.map((l) => l.ev);
    expect(kinds.indexOf("dial")).toBeGreaterThan(0);
    expect(kinds.indexOf("ready")).toBeGreaterThan(kinds.indexOf("dial"));
    expect(kinds.indexOf("pub")).toBeGreaterThan(kinds.indexOf("ready"));
    expect(kinds.filter((k) => k === "dial")).toHaveLength(1);
    expect(kinds).not.toContain("lost");
    const offsets = lines.filter((l) => l.ev === "pub").map((l) => l.offset as number);
    offsets.forEach((o, i) => i && expect(o).toBe(offsets[i - 1]! + 1));
    for (const l of lines.filter((x) => x.ev === "pub")) expect(Object.keys(l).sort()).toEqual(["epoch", "ev", "offset"]);
    const sent = lines.filter((l) => l.ev === "sent").map((l) => l.id);
    expect(sent.slice(0, 3)).toEqual([1, 2, 3]);
    const settled = lines.filter((l) => l.ev === "settled");
    for (const s of settled) expect(sent).toContain(s.id);
    // Requests issued after ready are answered; before it they may fail (belay: not_ready, naive: a send on a connecting socket).
    const readyAt = kinds.indexOf("ready");
    const afterReady = settled.filter((s) => lines.findIndex((l) => l.ev === "sent" && l.id === s.id) > readyAt);
    expect(afterReady.length).toBeGreaterThan(0);
    for (const s of afterReady) expect(s.outcome).toBe("ok");
    expect(code).toBe(0);
    expect(exitMs).toBeLessThan(3000);
  }, 60_000);
}

it("--codec binary: every ready is followed by a codec line naming binary; publications in order, requests answered", async () => {
  const { lines: all, atEof, code } = await runAgent("belay", (ls) => ls.filter((l) => l.ev === "pub").length >= 4 && ls.filter((l) => l.ev === "settled").length >= 3, ["--codec", "binary"]);
  const lines = all.slice(0, atEof);
  const kinds = lines.map((l) => l.ev);
  const ready = kinds.indexOf("ready");
  expect(ready).toBeGreaterThan(0);
  expect(lines[ready + 1]).toEqual({ ev: "codec", codec: "binary" });
  expect(kinds.filter((k) => k === "codec")).toHaveLength(kinds.filter((k) => k === "ready").length);
  const offsets = lines.filter((l) => l.ev === "pub").map((l) => l.offset as number);
  offsets.forEach((o, i) => i && expect(o).toBe(offsets[i - 1]! + 1));
  const afterReady = lines.filter((l) => l.ev === "settled" && lines.findIndex((x) => x.ev === "sent" && x.id === l.id) > ready);
  expect(afterReady.length).toBeGreaterThan(0);
  for (const s of afterReady) expect(s.outcome).toBe("ok");
  expect(code).toBe(0);
}, 60_000);

for (const args of [["--url", "http://x/ws", "--mode", "belay"], ["--url", "ws://x/ws", "--codec", "cbor"], ["--url", "ws://x/ws", "--mode", "naive", "--codec", "binary"], ["--url", "ws://x/ws", "--mode", "naive", "--call-host", "pc-1"]]) {
  it(`rejects bad arguments with exit 2: ${args.join(" ")}`, async () => {
    const child = spawn(process.execPath, [AGENT, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    const code = await new Promise((resolve) => child.on("exit", resolve));
    expect(code).toBe(2);
    expect(out).toBe("");
  });
}
