// socket.io-client as a lab agent, in Node or in a browser (the same code,
// bundled for the page). Two configurations (docs/LAB.md, "The peers"):
//
//  * `socketio`: the library's defaults. Each echo is sent with the basic
//    per-emit timeout, socket.timeout(requestTimeoutMs).emit(…).
//  * `socketio-tuned`: what socket.io's docs recommend for reliability:
//    ackTimeout + retries (the client's queue: one packet in flight, each
//    retried up to RETRIES times), and the lab's connect timeout as `timeout`.
//    The server runs connectionStateRecovery with a 1 s heartbeat
//    (server.mjs --profile tuned); after a reconnect the app rejoins the feed
//    only if the session was not recovered, and then announces a resync
//    (`socket.recovered` false: the missed packets are gone), as the docs'
//    example does.
//
// Readiness is the library's own: `connect` is ready, `disconnect` (or a
// failed attempt) is lost. The app subscribes to the feed on every connect
// (rooms are per connection) and does nothing else on its own.
import { io } from "socket.io-client";

import { requestLoop } from "./requests.mjs";

/** Retries per packet in the tuned configuration (the docs' example: 3). */
export const RETRIES = 3;

/** The socket.io-client options of each configuration. */
export function socketIoOptions(o) {
  const tuned = o.client.endsWith("socketio-tuned");
  // forceNew: one Manager per agent, never shared.
  return tuned
    ? { forceNew: true, ackTimeout: o.requestTimeoutMs, retries: RETRIES, timeout: o.connectTimeoutMs }
    : { forceNew: true };
}

export function startSocketIo(o, emit) {
  const tuned = o.client.endsWith("socketio-tuned");
  const url = o.url.replace(/^ws/, "http").replace(/\/ws$/, "/");
  const socket = io(url, socketIoOptions(o));
  let ready = false;
  let connects = 0;
  const lost = (why) => {
    if (!ready) return;
    ready = false;
    emit({ ev: "lost", why });
  };
  emit({ ev: "dial" });
  socket.io.on("reconnect_attempt", () => emit({ ev: "dial" }));
  socket.on("connect", () => {
    connects += 1;
    ready = true;
    emit({ ev: "ready" });
    emit({ ev: "via", transport: socket.io.engine.transport.name });
    if (tuned && socket.recovered) return; // rooms and missed packets restored
    if (tuned && connects > 1) emit({ ev: "resync" });
    socket.emit("subscribe", o.channel, () => {});
  });
  socket.io.on("open", () => {
    socket.io.engine.on("upgrade", (t) => { if (ready) emit({ ev: "via", transport: t.name }); });
  });
  socket.on("disconnect", (reason) => lost(reason));
  socket.on("connect_error", (e) => lost(`connect_error: ${e.message}`));
  socket.on("pub", (p) => emit({ ev: "pub", epoch: p.epoch, offset: p.offset }));
  const settle = (resolve) => (err) => resolve(err ? "timeout" : "ok");
  const stopRequests = requestLoop(o.requestEveryMs, (id) => new Promise((resolve) => {
    if (tuned) socket.emit("echo", { k: id }, settle(resolve));
    else socket.timeout(o.requestTimeoutMs).emit("echo", { k: id }, settle(resolve));
  }), emit);
  return {
    stop() {
      stopRequests();
      socket.disconnect();
    },
  };
}
