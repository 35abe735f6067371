// Seed 003, side by side: a client whose connection the server side just
// dropped is waiting out a 1,500 ms reconnect backoff; 200 ms into the wait
// the application asks it to reconnect now. How long until it is connected
// again, how many sockets it opened by 700 ms, and which extra events it
// fired.
//
// Every client goes through the same counting TCP proxy, which drops all its
// connections at once (a deploy's cut), and has its backoff fixed at 1,500 ms:
//   socket.io-client connect()            (against a socket.io server)
//   socket.io-client io._close()+connect() (the seed's workaround)
//   partysocket reconnect()               (its generic WebSocket, against belay serve; it manages the socket only)
//   reconnecting-websocket reconnect()    (against belay serve)
//   @belay/client reconnectNow()          (against belay serve; connected = ready)
//   belay-client (Rust) reconnect_now()   (the example crates/belay-client/examples/reconnect_now.rs,
//                                          a process of its own driven over stdin/stdout; connected = ready)
//
// Run: (cd clients/js && npm ci && npm run build)
//      && cargo build -p belay-cli && cargo build -p belay-client --example reconnect_now
//      && cd peers/seed003 && npm ci && node reconnect_now.mjs [--belay PATH] [--rust-client PATH] [--runs 3]
// Loopback only; every wait is bounded.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer as createHttp } from "node:http";
import net from "node:net";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { WebSocket as PartySocket } from "partysocket";
import ReconnectingWebSocket from "reconnecting-websocket";
import { Server as SocketIoServer } from "socket.io";
import { io } from "socket.io-client";
import WS from "ws";
import { BelayClient } from "../../clients/js/dist/belay.js";
import { parsePolicy } from "../../clients/js/dist/policies.js";

const { values: args } = parseArgs({
  options: {
    belay: { type: "string", default: new URL("../../target/debug/belay", import.meta.url).pathname },
    "rust-client": {
      type: "string",
      default: new URL("../../target/debug/examples/reconnect_now", import.meta.url).pathname,
    },
    runs: { type: "string", default: "3" },
  },
});
const RUNS = Math.min(Math.max(Number(args.runs) || 3, 1), 20);
const BACKOFF_MS = 1500;
const WAKE_AFTER_MS = 200;
const SNAPSHOT_MS = 700;
const GIVE_UP_MS = 5000;
const wait = (ms) => new Promise((r) => setTimeout(r, ms));

/** A TCP proxy to `port` that counts the connections it accepts and drops them all on demand. */
async function proxy(port) {
  const pairs = new Set();
  let accepted = 0;
  const server = net.createServer((inbound) => {
    accepted += 1;
    const outbound = net.connect(port, "127.0.0.1");
    const pair = { inbound, outbound };
    pairs.add(pair);
    const end = () => {
      inbound.destroy();
      outbound.destroy();
      pairs.delete(pair);
    };
    inbound.on("error", end).on("close", end);
    outbound.on("error", end).on("close", end);
    inbound.pipe(outbound);
    outbound.pipe(inbound);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: server.address().port,
    accepted: () => accepted,
    drop: () => {
      for (const { inbound, outbound } of pairs) {
        inbound.destroy();
        outbound.destroy();
      }
      pairs.clear();
    },
    close: () => server.close(),
  };
}

async function socketIoServer() {
  const http = createHttp();
  new SocketIoServer(http, { transports: ["websocket"] });
  await new Promise((r) => http.listen(0, "127.0.0.1", r));
  return { port: http.address().port, close: () => http.close() };
}

async function belayServer(exe) {
  const child = spawn(exe, ["serve", "--listen", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] });
  const lines = createInterface({ input: child.stderr });
  const port = await Promise.race([
    new Promise((resolve) =>
      lines.on("line", (line) => {
        const m = line.match(/ws:\/\/127\.0\.0\.1:(\d+)\/ws/);
        if (m) resolve(Number(m[1]));
      }),
    ),
    wait(10_000).then(() => {
      throw new Error("belay serve did not say where it listens");
    }),
  ]);
  return { port, close: () => child.kill() };
}

/**
 * One trial. `client` opens a client against the proxy and returns
 * { connected(): bool, wake(): void, events: string[], close(): void }.
 */
async function trial(px, client) {
  const c = client(px.port);
  const t0 = Date.now();
  while (!c.connected() && Date.now() - t0 < GIVE_UP_MS) await wait(5);
  if (!c.connected()) throw new Error("never connected");
  c.events.length = 0;
  px.drop();
  await wait(WAKE_AFTER_MS);
  const alreadyBack = c.connected();
  const before = px.accepted();
  const t = Date.now();
  c.wake();
  let reconnectedAt = -1;
  while (Date.now() - t < SNAPSHOT_MS) {
    if (reconnectedAt < 0 && c.connected()) reconnectedAt = Date.now() - t;
    await wait(5);
  }
  const socketsBy700 = px.accepted() - before;
  while (!c.connected() && Date.now() - t < GIVE_UP_MS) await wait(5);
  if (reconnectedAt < 0 && c.connected()) reconnectedAt = Date.now() - t;
  const events = [...c.events];
  c.close();
  await wait(100);
  return { alreadyBack, reconnectedAt, socketsBy700, events };
}

const clients = {
  "socket.io-client connect()": {
    server: "socketio",
    make: (wake) => (port) => {
      const s = io(`http://127.0.0.1:${port}`, {
        transports: ["websocket"],
        reconnectionDelay: BACKOFF_MS,
        reconnectionDelayMax: BACKOFF_MS,
        randomizationFactor: 0,
      });
      const events = [];
      s.on("disconnect", (reason) => events.push(`disconnect:${reason}`));
      return { connected: () => s.connected, wake: () => wake(s), events, close: () => s.disconnect() };
    },
    wake: (s) => s.connect(),
  },
  "socket.io-client io._close()+connect()": {
    server: "socketio",
    wake: (s) => {
      s.io._close();
      s.connect();
    },
  },
  "partysocket reconnect()": {
    server: "belay",
    make: () => (port) => wrapper(PartySocket, port),
  },
  "reconnecting-websocket reconnect()": {
    server: "belay",
    make: () => (port) => wrapper(ReconnectingWebSocket, port),
  },
  "@belay/client reconnectNow()": {
    server: "belay",
    make: () => (port) => {
      const client = new BelayClient(`ws://127.0.0.1:${port}/ws`, {
        WebSocket: WS,
        backoff: parsePolicy({ kind: "fixed", delay_ms: BACKOFF_MS }),
      });
      const events = [];
      let ready = false;
      client.onStatus((s) => {
        if (ready && !s.ready) events.push(`not-ready:${s.state}`);
        ready = s.ready;
      });
      return { connected: () => ready, wake: () => client.reconnectNow(), events, close: () => client.close() };
    },
  },
  "belay-client (Rust) reconnect_now()": {
    server: "belay",
    make: () => (port) => rustClient(port),
  },
};
clients["socket.io-client io._close()+connect()"].make = (wake) =>
  clients["socket.io-client connect()"].make(wake);

/**
 * The Rust client in a process of its own (crates/belay-client/examples/reconnect_now.rs):
 * it prints `ready TRANSPORT` / `not-ready STATE` as its status flips, and
 * calls `reconnect_now()` on the line `wake`. Connected = ready, as for
 * @belay/client; the two pipe hops add well under a millisecond.
 */
function rustClient(port) {
  const child = spawn(args["rust-client"], [`ws://127.0.0.1:${port}/ws`, "--backoff-ms", String(BACKOFF_MS)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const events = [];
  let ready = false;
  createInterface({ input: child.stdout }).on("line", (line) => {
    if (line.startsWith("ready")) ready = true;
    else if (line.startsWith("not-ready")) {
      ready = false;
      events.push(line.replace("not-ready ", "not-ready:"));
    }
  });
  return {
    connected: () => ready,
    wake: () => child.stdin.write("wake\n"),
    events,
    close: () => {
      child.stdin.end();
      // Bounded: the example closes the client and exits on the end of stdin.
      setTimeout(() => child.kill(), 2000).unref();
    },
  };
}

/** A reconnecting-socket wrapper around `ws`, its backoff fixed. */
function wrapper(Kind, port) {
  const socket = new Kind(`ws://127.0.0.1:${port}/ws`, [], {
    WebSocket: WS,
    minReconnectionDelay: BACKOFF_MS,
    maxReconnectionDelay: BACKOFF_MS,
    reconnectionDelayGrowFactor: 1,
    minUptime: 0,
  });
  const events = [];
  socket.addEventListener("close", () => events.push("close"));
  return {
    connected: () => socket.readyState === 1,
    wake: () => socket.reconnect(),
    events,
    close: () => socket.close(),
  };
}

/** Each distinct list of events after the drop, with the runs that saw it. */
function eventsSeen(results) {
  const counts = new Map();
  for (const r of results) {
    const key = JSON.stringify(r.events);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([events, n]) => `${events} ×${n}`).join("; ");
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

if (!existsSync(args["rust-client"])) {
  console.error(`${args["rust-client"]} is missing: cargo build -p belay-client --example reconnect_now`);
  process.exit(2);
}
const servers = { socketio: await socketIoServer(), belay: await belayServer(args.belay) };
const proxies = { socketio: await proxy(servers.socketio.port), belay: await proxy(servers.belay.port) };
console.log(`| client (backoff ${BACKOFF_MS} ms, woken ${WAKE_AFTER_MS} ms into it) | back on its own before the wake | reconnected after the wake (median of ${RUNS}) | runs | new sockets by ${SNAPSHOT_MS} ms | events after the drop |`);
console.log("|---|---|---|---|---|---|");
for (const [name, spec] of Object.entries(clients)) {
  const results = [];
  for (let i = 0; i < RUNS; i++) results.push(await trial(proxies[spec.server], spec.make(spec.wake)));
  const times = results.map((r) => r.reconnectedAt);
  console.log(
    `| ${name} | ${results.filter((r) => r.alreadyBack).length}/${RUNS} | ${median(times)} ms | ${times.join(", ")} | ${median(results.map((r) => r.socketsBy700))} | ${eventsSeen(results)} |`,
  );
}
for (const p of Object.values(proxies)) p.close();
for (const s of Object.values(servers)) s.close();
process.exit(0);
