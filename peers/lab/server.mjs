#!/usr/bin/env node
// The socket.io app of the fault lab: it mirrors `belay serve --demo` for
// socket.io, so `belay lab` can measure socket.io-client against the same
// faults (docs/LAB.md, "The peers").
//
//   node peers/lab/server.mjs [--listen 127.0.0.1:0] [--profile default|tuned] [--feed-every-ms 100]
//
// The app: a `feed` room that gets {epoch, offset} every --feed-every-ms
// (epoch: one random id per process; offsets from 1), joined with the
// `subscribe` event (acknowledged with {ok, epoch, offset}, or {error:
// "unavailable"} while the service is down), and `echo`, acknowledged with
// its argument.
//
// --profile default: socket.io's defaults (pingInterval 25 s, pingTimeout
// 20 s, no connection state recovery). --profile tuned: what socket.io's
// docs recommend for reliability, with the lab's 1 s heartbeat:
// pingInterval 1000, pingTimeout 1000, connectionStateRecovery (its
// defaults: 2 min, middlewares skipped).
//
// Two listeners. The front (--listen) is a relay (relay.mjs) in front of the
// socket.io server: clients come in there, and the freeze holds it. The
// admin port (any free port on the same host) is the socket.io server's own
// HTTP listener, which serves the admin API to the lab:
//   POST /admin/fault/{freeze|service_down|slow_replies|flapping|restart|drain}
//        {"on":bool, "after_ms":N (flapping), "down_ms":N (restart)}
//   GET  /metrics          socketio_connections_open N (engine.io clients)
//   GET  /admin/position   {"epoch":E,"offset":N}: the feed's last publication
//   GET  /healthz          200 (the browser agents' page)
// One line on stderr once both listen:
//   socket.io lab server: front ws://HOST:PORT/ admin http://HOST:PORT/
// Exits on SIGTERM, or after `drain` (every connection closed first).
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { parseArgs } from "node:util";
import { Server } from "socket.io";
import { Relay } from "./relay.mjs";

const PROFILES = {
  default: {},
  tuned: { pingInterval: 1000, pingTimeout: 1000, connectionStateRecovery: {} },
};
const SLOW_REPLIES_MS = 15_000;

const { values: args } = parseArgs({
  options: {
    listen: { type: "string", default: "127.0.0.1:0" },
    profile: { type: "string", default: "default" },
    "feed-every-ms": { type: "string", default: "100" },
  },
});
const profile = PROFILES[args.profile];
if (!profile) fail(`--profile must be default or tuned, got ${args.profile}`);
const split = args.listen.lastIndexOf(":");
const host = args.listen.slice(0, split);
const port = Number(args.listen.slice(split + 1));
const feedEvery = Number(args["feed-every-ms"]);
if (!host || !Number.isInteger(port) || !(feedEvery > 0)) fail(`bad --listen ${args.listen} or --feed-every-ms`);

const epoch = `sio-${randomBytes(6).toString("hex")}`;
let offset = 0;
const faults = { freeze: false, serviceDown: false, slowReplies: false, flapAfterMs: 0, downUntil: 0 };

const http = createServer(admin);
const io = new Server(http, {
  ...profile,
  // While a restart lasts, handshakes are refused (engine.io answers 403),
  // as the Belay demo refuses upgrades.
  allowRequest: (_req, callback) => callback(null, Date.now() >= faults.downUntil),
});

io.on("connection", (socket) => {
  if (faults.flapAfterMs > 0) flap(socket, faults.flapAfterMs);
  socket.on("subscribe", (channel, ack) => {
    if (typeof ack !== "function") return;
    if (channel !== "feed") return ack({ error: "unknown channel" });
    if (faults.serviceDown) return ack({ error: "unavailable" });
    socket.join("feed");
    ack({ ok: true, epoch, offset });
  });
  socket.on("echo", (value, ack) => {
    if (typeof ack !== "function" || faults.serviceDown) return; // down: never answered
    if (faults.slowReplies) setTimeout(() => ack(value), SLOW_REPLIES_MS);
    else ack(value);
  });
});

// Flapping: a session is dropped this long after it connected, without a
// socket.io disconnect packet (the engine connection is closed), as the
// Belay demo cuts a session's stream.
function flap(socket, afterMs) {
  setTimeout(() => socket.conn.close(true), afterMs).unref();
}

const feed = setInterval(() => {
  offset += 1;
  io.to("feed").emit("pub", { epoch, offset });
}, feedEvery);

await new Promise((resolve, reject) => {
  http.once("error", reject);
  http.listen(0, host, resolve);
});
const relay = new Relay({ host, port: http.address().port });
const front = await relay.listen(host, port).catch((e) => fail(`cannot listen on ${args.listen}: ${e.message}`));
process.stderr.write(`socket.io lab server: front ws://${host}:${front.port}/ admin http://${host}:${http.address().port}/ (${args.profile}, epoch ${epoch})\n`);
process.on("SIGTERM", () => process.exit(0));

function admin(req, res) {
  const reply = (status, body) => {
    res.writeHead(status, { "content-type": "application/json", connection: "close" });
    res.end(JSON.stringify(body));
  };
  const url = new URL(req.url, "http://x");
  if (req.method === "GET" && url.pathname === "/healthz") return reply(200, { ok: true });
  if (req.method === "GET" && url.pathname === "/admin/position") return reply(200, { epoch, offset });
  if (req.method === "GET" && url.pathname === "/metrics") {
    res.writeHead(200, { "content-type": "text/plain", connection: "close" });
    return res.end(`# socket.io lab server\nsocketio_connections_open ${io.engine.clientsCount}\n`);
  }
  const name = req.method === "POST" && url.pathname.startsWith("/admin/fault/") ? url.pathname.slice(13) : null;
  if (name === null) return reply(404, { error: "not found" });
  let raw = "";
  req.on("data", (c) => { raw += c; });
  req.on("end", () => {
    let body = {};
    try { body = raw ? JSON.parse(raw) : {}; } catch { return reply(400, { error: "bad json" }); }
    if (!apply(name, body)) return reply(404, { error: `unknown fault ${name}` });
    reply(200, { ...faults, epoch, offset });
  });
}

function apply(name, body) {
  const on = body.on === true;
  switch (name) {
    case "freeze":
      faults.freeze = on;
      relay.freeze(on);
      return true;
    case "service_down":
      faults.serviceDown = on;
      // The service lost every subscription: say so, as the demo's `unsubscribed`.
      if (on) for (const s of io.sockets.sockets.values()) if (s.rooms.has("feed")) {
        s.leave("feed");
        s.emit("unsubscribed", { channel: "feed", code: "unavailable" });
      }
      return true;
    case "slow_replies":
      faults.slowReplies = on;
      return true;
    case "flapping":
      faults.flapAfterMs = on ? Number(body.after_ms ?? 300) : 0;
      if (on) for (const s of io.sockets.sockets.values()) flap(s, faults.flapAfterMs);
      return true;
    case "restart":
      faults.downUntil = Date.now() + Number(body.down_ms ?? 3000);
      for (const s of io.sockets.sockets.values()) s.conn.close(true);
      return true;
    case "drain":
      // socket.io has no drain: its graceful shutdown is io.close(), which
      // closes every connection (clients see "transport close"); then exit.
      clearInterval(feed);
      relay.stopAccepting();
      io.close(() => { relay.close(); process.exit(0); });
      setTimeout(() => { relay.close(); process.exit(0); }, 2000).unref();
      return true;
    default:
      return false;
  }
}

function fail(msg) {
  process.stderr.write(`server: ${msg}\n`);
  process.exit(2);
}
