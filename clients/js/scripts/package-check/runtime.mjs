// One runtime against a real `belay serve --demo`, using @belay/client as an
// app installs it (scripts/package-check.mjs runs this file from a scratch
// project with the packed tarball installed):
//
//   node runtime.mjs ws                              Node + the ws package
//   node --experimental-websocket runtime.mjs builtin  Node's own WebSocket
//   bun runtime.mjs builtin                          Bun's own WebSocket
//
// BELAY_BIN names the `belay` binary. The scenario: connect, subscribe
// `feed`, a request answered; the server killed (dials refused while it is
// down: the process must live on) and restarted on the same port, the client
// ready again by itself; the server frozen (nothing read or written), the
// client's heartbeat notices, and after the freeze the subscription resumes
// with every publication of the freeze, in order, none twice. Then the client
// closes and the process must exit by itself (no timer or socket left).
// Every wait is a poll with a deadline; exits 1 with the record on failure.
import { spawn } from "node:child_process";
import { BelayClient } from "@belay/client";

const MODE = process.argv[2];
const RUNTIME = typeof Bun === "object" ? `bun ${Bun.version}` : `node ${process.versions.node}`;
const LABEL = `${RUNTIME}, ${MODE === "ws" ? "ws" : "built-in WebSocket"}`;
const BIN = process.env.BELAY_BIN;
const T0 = performance.now();
const ms = () => Math.round(performance.now() - T0);
const record = [];
/** The server now: `{ child, port, exited }`. */
let server;
const note = (what) => record.push(`${String(ms()).padStart(6)} ms  ${what}`);

function fail(message) {
  console.error(`[${LABEL}] FAILED: ${message}\n${record.join("\n")}`);
  server?.child.kill("SIGKILL");
  process.exit(1);
}

/** Poll `cond` every 20 ms until it holds; fail after `limit` ms. */
async function until(what, limit, cond) {
  const deadline = performance.now() + limit;
  for (;;) {
    const value = cond();
    if (value) return value;
    if (performance.now() > deadline) fail(`not within ${limit} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** `belay serve --demo` on `listen`; resolves once it listens, with its port. */
function serve(listen) {
  const child = spawn(BIN, ["serve", "--demo", "--listen", listen, "--ping-interval-ms", "1000", "--feed-every-ms", "200"], { stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`server did not start: ${seen}`)), 30_000);
    const onData = (chunk) => {
      seen += chunk.toString();
      const m = /open http:\/\/127\.0\.0\.1:(\d+)\//.exec(seen);
      if (m) {
        clearTimeout(timer);
        resolve({ child, port: Number(m[1]), exited: new Promise((r) => child.once("exit", r)) });
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}: ${seen}`));
    });
  });
}

async function fault(name, on) {
  const r = await fetch(`http://127.0.0.1:${server.port}/admin/fault/${name}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ on }) });
  if (!r.ok) fail(`fault ${name}: HTTP ${r.status}`);
  note(`fault ${name} ${on ? "on" : "off"}`);
}

if (!BIN) fail("BELAY_BIN is not set");
let WebSocketClass;
if (MODE === "ws") WebSocketClass = (await import("ws")).default;
else if (MODE === "builtin") {
  if (typeof globalThis.WebSocket !== "function") fail("no global WebSocket in this runtime (Node: --experimental-websocket)");
} else fail(`unknown mode ${MODE}: ws or builtin`);

server = await serve("127.0.0.1:0");
const url = `ws://127.0.0.1:${server.port}/ws`;
note(`server on ${url}`);

// The built-in mode passes no WebSocket option: the client's default is the runtime's own.
const client = new BelayClient(url, WebSocketClass ? { WebSocket: WebSocketClass } : {});
const disconnects = [];
let connects = 0;
client.addEventListener("connected", (e) => {
  connects++;
  note(`connected (${e.detail})`);
});
client.addEventListener("disconnected", (e) => {
  disconnects.push(e.detail);
  note(`disconnected: ${JSON.stringify(e.detail)}`);
});
client.addEventListener("halted", (e) => fail(`halted: ${JSON.stringify(e.detail)}`));

// 1. Connect, subscribe, a request answered.
await until("ready", 10_000, () => client.status.ready);
const items = [];
const feed = client.subscribe("feed");
feed.on((item) => {
  items.push(item);
  if (item.type !== "publication") note(`feed: ${JSON.stringify(item)}`);
});
await until("feed subscribed", 10_000, () => items.some((i) => i.type === "subscribed"));
await until("2 publications", 10_000, () => items.filter((i) => i.type === "publication").length >= 2);
const echoed = await client.request("echo", { runtime: LABEL }, { timeout: 5000 });
if (echoed?.runtime !== LABEL) fail(`echo answered ${JSON.stringify(echoed)}`);
note("echo answered");

// 2. The server is killed; dials are refused while it is down; it comes back on the same port.
const before = disconnects.length;
const killedAt = items.length;
server.child.kill("SIGKILL");
await server.exited;
note("server killed");
// Some loss after the kill was of the established session (by the time this
// looks, the first refused redial may already have come after it: Bun
// reports the child's exit later than Node does).
await until("the loss noticed", 10_000, () => disconnects.slice(before).some((d) => d.established));
// Refused at once: a transport failure, not a dial left hanging until the connect timeout (10 s).
await until("a refused dial while down, failed as refused", 10_000, () => disconnects.slice(before).some((d) => !d.established && d.reason.kind === "transport_failed"));
if (client.status.ready) fail("ready while the server is down");
const port = server.port;
// The port was just freed; should something else take it meanwhile, try again (bounded).
for (let attempt = 1; ; attempt++) {
  try {
    server = await serve(`127.0.0.1:${port}`);
    break;
  } catch (e) {
    if (attempt === 5) fail(`cannot restart on port ${port}: ${e.message}`);
    note(`restart attempt ${attempt} failed: ${e.message.split("\n")[0]}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
note("server restarted on the same port");
const connectsBefore = connects;
await until("ready again after the restart", 20_000, () => connects > connectsBefore && client.status.ready);
await until("feed subscribed again", 10_000, () => items.slice(killedAt).some((i) => i.type === "subscribed"));
await until("publications after the restart", 10_000, () => items.slice(killedAt).some((i) => i.type === "publication"));
const again = await client.request("echo", "again", { timeout: 5000 });
if (again !== "again") fail(`echo after the restart answered ${JSON.stringify(again)}`);
note("echo answered after the restart");

// 3. The server freezes: the heartbeat notices (pings every 1 s: within 2 s of the last frame), then it thaws.
const pubs = () => items.filter((i) => i.type === "publication");
const lastBefore = pubs().at(-1);
const frozenAt = items.length;
const lossesBefore = disconnects.length;
await fault("freeze", true);
const lost = await until("the freeze noticed", 10_000, () => disconnects.slice(lossesBefore).find((d) => d.established));
if (lost.reason.kind !== "heartbeat_timeout") fail(`the freeze was noticed as ${lost.reason.kind}, not heartbeat_timeout`);
await fault("freeze", false);
const connectsFrozen = connects;
await until("ready again after the freeze", 30_000, () => connects > connectsFrozen && client.status.ready);
const resumed = await until("feed resumed", 10_000, () => items.slice(frozenAt).find((i) => i.type === "subscribed"));
if (!resumed.recovered) fail("the resubscribe after the freeze did not recover");
await until("publications after the freeze", 10_000, () => pubs().at(-1).offset > lastBefore.offset + 5);
const after = items.slice(frozenAt).filter((i) => i.type === "publication");
if (items.slice(frozenAt).some((i) => i.type === "resync")) fail("a resync after the freeze");
let expected = lastBefore.offset + 1;
for (const p of after) {
  if (p.epoch !== lastBefore.epoch || p.offset !== expected) fail(`after the freeze: offset ${p.offset} (epoch ${p.epoch}), expected ${expected} (epoch ${lastBefore.epoch})`);
  expected++;
}
note(`feed resumed: offsets ${lastBefore.offset + 1}..${expected - 1}, none missing, none twice`);

// Every publication of every epoch, in order and once.
for (let i = 1; i < items.length; i++) {
  const [a, b] = [items[i - 1], items[i]];
  if (a.type === "publication" && b.type === "publication" && a.epoch === b.epoch && b.offset !== a.offset + 1) fail(`offset ${b.offset} after ${a.offset}`);
}

// 4. Close: the process must then exit by itself (the caller bounds it).
client.close();
if (client.status.state !== "stopped") fail(`state ${client.status.state} after close()`);
// The server sees the connection end (polled: its admin state counts connections).
let open = -1;
const connections = async () => (await (await fetch(`http://127.0.0.1:${server.port}/admin/state`)).json()).connections;
for (const deadline = performance.now() + 10_000; (open = await connections()) > 0 && performance.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
if (open !== 0) fail(`the server still counts ${open} connections 10 s after close()`);
note("the server counts no connection");
// SIGKILL: a SIGTERM drains, and waits for a load balancer (25 s by default).
server.child.kill("SIGKILL");
await server.exited;
// The record too when asked, or when the run was slow (every wait passed, but near its bound).
if (process.env.BELAY_VERBOSE || ms() > 15_000) console.log(record.join("\n"));
console.log(`[${LABEL}] ok in ${ms()} ms: ${connects} connections, ${disconnects.length} losses (${disconnects.map((d) => d.reason.kind).join(", ")}), ${pubs().length} publications`);
