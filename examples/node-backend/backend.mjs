#!/usr/bin/env node
/**
 * An application backend for Belay in Node (20+), standard library only
 * (`node:http`, `node:crypto`).
 *
 * It does the three things a backend does with a standalone Belay server:
 *
 * - issues connection tokens (HS256 JWTs) at GET /token?user=NAME;
 * - answers the RPCs Belay forwards to it (POST /belay/rpc): here
 *   `orders.create`, which gives an order its id, and answers it;
 * - publishes through Belay's HTTP server API: every new order goes out on
 *   the `orders` channel (POST {belay}/api/publish, with an idempotency key,
 *   over a keep-alive connection).
 *
 *     node backend.mjs --port 9000 --belay http://127.0.0.1:8080
 *
 * The JWT secret and the API key come from BELAY_AUTH_JWT_SECRET and
 * BELAY_API_KEY, the same variables `belay serve --config` reads.
 */
import { createHash, createHmac, randomUUID } from "node:crypto";
import { Agent, createServer, request } from "node:http";
import { parseArgs } from "node:util";

const SECRET = required("BELAY_AUTH_JWT_SECRET");
const API_KEY = required("BELAY_API_KEY");
/** Largest RPC body read from Belay (its own cap is far below). */
const MAX_BODY = 1 << 20;
const agent = new Agent({ keepAlive: true, maxSockets: 16 });
/**
 * The order's id: from the client's idempotency key when it sent one (a
 * retried call makes the same order, published once), else random. Never a
 * counter in memory: a restarted backend would reuse the ids, and the
 * publication keys made from them.
 */
function orderId(user, key) {
  if (key) return createHash("sha256").update(`${user}\0${key}`).digest("hex").slice(0, 16);
  return randomUUID().replaceAll("-", "").slice(0, 16);
}

function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is not set`);
    process.exit(2);
  }
  return value;
}

const b64url = (data) => Buffer.from(data).toString("base64url");

/** An HS256 JWT for `user`, valid `lifetimeS` seconds. */
function token(user, lifetimeS = 60) {
  const header = b64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
  // `channels`: what the user may subscribe to (without it: nothing, by default).
  const exp = Math.floor(Date.now() / 1000) + lifetimeS;
  const claims = b64url(JSON.stringify({ sub: user, exp, channels: ['orders'] }));
  const signature = createHmac("sha256", SECRET).update(`${header}.${claims}`).digest("base64url");
  return `${header}.${claims}.${signature}`;
}

/** POST {belay}/api/publish; resolves to Belay's JSON answer, rejects on an error status. */
function publish(belay, channel, data, idempotencyKey) {
  const body = JSON.stringify({ channel, data, idempotency_key: idempotencyKey });
  return new Promise((resolve, reject) => {
    const req = request(
      `${belay}/api/publish`,
      {
        method: "POST",
        agent,
        timeout: 5000,
        headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body), Authorization: `Bearer ${API_KEY}` },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => (res.statusCode === 200 ? resolve(JSON.parse(text)) : reject(new Error(`publish: ${res.statusCode} ${text}`))));
      },
    );
    req.on("timeout", () => req.destroy(new Error("publish: timeout")));
    req.on("error", reject);
    req.end(body);
  });
}

function answer(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks = [];
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) req.destroy(new Error("body too large"));
      else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

async function rpc(belay, req, res) {
  let call;
  try {
    call = JSON.parse(await readBody(req));
  } catch (e) {
    return answer(res, 400, { error: { code: "bad_request", message: String(e) } });
  }
  if (call.method !== "orders.create") {
    return answer(res, 404, { error: { code: "unknown_method", message: String(call.method) } });
  }
  const order = { order: orderId(call.user, call.idempotency_key), item: call.params, user: call.user };
  try {
    // The publication's key is the order's: a retried publish goes out once.
    await publish(belay, "orders", order, `order-${order.order}`);
  } catch (e) {
    return answer(res, 200, { error: { code: "publish_failed", message: String(e) } });
  }
  answer(res, 200, { result: order });
}

function main() {
  const { values } = parseArgs({ options: { port: { type: "string", default: "9000" }, belay: { type: "string", default: "http://127.0.0.1:8080" } } });
  const belay = values.belay.replace(/\/+$/, "");
  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://backend");
    if (req.method === "GET" && url.pathname === "/token") {
      return answer(res, 200, { token: token(url.searchParams.get("user") ?? "anonymous") });
    }
    if (req.method === "POST" && url.pathname === "/belay/rpc") {
      return void rpc(belay, req, res);
    }
    answer(res, 404, { error: { code: "not_found", message: url.pathname } });
  });
  server.listen(Number(values.port), "127.0.0.1", () => {
    console.log(`backend listening on http://127.0.0.1:${server.address().port}`);
  });
  process.on("SIGTERM", () => server.close(() => process.exit(0)));
}

main();
