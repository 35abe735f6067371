// The Node servers of the peer server benchmarks (`server-bench peers`,
// scripts/bench-peers.sh; docs/BENCHMARKS.md, "Against socket.io and ws").
// One process, one thread, as each library runs by default:
//
//   node server.mjs --kind socketio [--ping-interval-ms 10000]
//     socket.io 4.8.3, websocket transport only, path /socket.io/.
//     Events: "echo" (acknowledged with its argument), "subscribe" (joins
//     the room named by its argument, then acknowledges), "bench.publish"
//     ({channel, messages, rate}: acknowledged at once, then
//     io.to(channel).emit("publication", {n, t}) M times at X per second).
//     Heartbeat: engine.io's own (a "2" every pingInterval, the client's "3"
//     within pingTimeout), both set to --ping-interval-ms.
//
//   node server.mjs --kind ws [--ping-interval-ms 10000]
//     ws 8.23.1 (WebSocketServer, path /ws) speaking the same small JSON
//     protocol as the Rust floor server (crates/belay-load/src/servers/floor.rs),
//     written the way a user of ws writes it: JSON.parse every message,
//     JSON.stringify every answer, a Set of subscribers, one string sent to
//     each. Frames: connect -> welcome; request echo -> response with the
//     params as result; subscribe -> subscribed; request bench.publish ->
//     response, then M publications at X per second. Heartbeat: the ws
//     README's (every --ping-interval-ms, terminate a client that did not
//     answer the previous protocol ping, then ping it).
//
// Publications carry t, the publish time in microseconds since the Unix
// epoch (performance.timeOrigin + performance.now(), as the Rust servers
// stamp theirs with the wall clock).
//
// Prints `LISTEN 127.0.0.1:PORT` once listening. Each line "mem" on stdin
// is answered with `MEM {json of process.memoryUsage()}`. Exits when stdin
// closes. Loopback only.
import { createServer } from "node:http";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { Server as SocketIoServer } from "socket.io";
import { WebSocketServer } from "ws";

const { values: args } = parseArgs({
  options: {
    kind: { type: "string" },
    "ping-interval-ms": { type: "string", default: "10000" },
  },
});
const PING_INTERVAL_MS = Math.max(Number(args["ping-interval-ms"]) || 10000, 100);
const MAX_MESSAGES = 100_000;

const wallMicros = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

/** Call `send(n)` for n = 0..messages at `rate` per second; late ticks are
 * caught up at once (tokio's `MissedTickBehavior::Burst`, as the Rust servers). */
function schedule(messages, rate, send) {
  const count = Math.min(Math.max(Math.floor(Number(messages) || 0), 0), MAX_MESSAGES);
  const period = 1000 / Math.min(Math.max(Number(rate) || 100, 0.1), 1e6);
  const start = performance.now();
  let n = 0;
  const tick = () => {
    const due = Math.min(count, Math.floor((performance.now() - start) / period) + 1);
    while (n < due) send(n++);
    if (n < count) setTimeout(tick, Math.max(0, start + n * period - performance.now()));
  };
  if (count > 0) tick();
}

function socketIo() {
  const http = createServer();
  const io = new SocketIoServer(http, {
    transports: ["websocket"],
    serveClient: false,
    pingInterval: PING_INTERVAL_MS,
    pingTimeout: PING_INTERVAL_MS,
  });
  io.on("connection", (socket) => {
    socket.on("echo", (data, ack) => {
      if (typeof ack === "function") ack(data);
    });
    socket.on("subscribe", (channel, ack) => {
      socket.join(String(channel));
      if (typeof ack === "function") ack({ channel: String(channel) });
    });
    socket.on("bench.publish", (params, ack) => {
      if (typeof ack === "function") ack(null);
      const room = io.to(String(params?.channel ?? "bench"));
      schedule(params?.messages, params?.rate, (n) => room.emit("publication", { n, t: wallMicros() }));
    });
  });
  return http;
}

function plainWs() {
  const http = createServer();
  const wss = new WebSocketServer({ server: http, path: "/ws" });
  const subscribers = new Set();
  let offset = 0;
  const welcome = JSON.stringify({ type: "welcome", session: "ws", protocol: 1, ping_interval_ms: PING_INTERVAL_MS });
  wss.on("connection", (ws) => {
    ws.isAlive = true;
    ws.on("pong", () => {
      ws.isAlive = true;
    });
    ws.on("error", () => {});
    ws.on("close", () => subscribers.delete(ws));
    ws.on("message", (data, isBinary) => {
      if (isBinary) return;
      let m;
      try {
        m = JSON.parse(data);
      } catch {
        return;
      }
      switch (m?.type) {
        case "connect":
          ws.send(welcome);
          break;
        case "subscribe":
          subscribers.add(ws);
          ws.send(JSON.stringify({ type: "subscribed", channel: m.channel, epoch: "ws", offset, recovered: false }));
          break;
        case "request":
          if (m.method === "bench.publish") {
            ws.send(JSON.stringify({ type: "response", id: m.id, result: null }));
            const channel = String(m.params?.channel ?? "bench");
            schedule(m.params?.messages, m.params?.rate, (n) => {
              offset += 1;
              const frame = JSON.stringify({ type: "publication", channel, epoch: "ws", offset, data: { n, t: wallMicros() } });
              for (const s of subscribers) s.send(frame);
            });
          } else {
            ws.send(JSON.stringify({ type: "response", id: m.id, result: m.params }));
          }
          break;
        default:
          break;
      }
    });
  });
  // The ws README's heartbeat.
  const heartbeat = setInterval(() => {
    for (const ws of wss.clients) {
      if (!ws.isAlive) {
        ws.terminate();
        continue;
      }
      ws.isAlive = false;
      ws.ping();
    }
  }, PING_INTERVAL_MS);
  wss.on("close", () => clearInterval(heartbeat));
  return http;
}

const servers = { socketio: socketIo, ws: plainWs };
if (!servers[args.kind]) {
  console.error(`--kind must be one of ${Object.keys(servers).join(", ")}`);
  process.exit(2);
}
const http = servers[args.kind]();
http.listen(0, "127.0.0.1", () => {
  const { address, port } = http.address();
  process.stdout.write(`LISTEN ${address}:${port}\n`);
});
const input = createInterface({ input: process.stdin });
input.on("line", (line) => {
  if (line.trim() === "mem") process.stdout.write(`MEM ${JSON.stringify(process.memoryUsage())}\n`);
});
input.on("close", () => process.exit(0));
