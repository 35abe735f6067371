// A minimal Belay-protocol app on a reconnecting-socket wrapper
// (partysocket, reconnecting-websocket), in Node or in a browser. The
// wrapper manages the socket, with its defaults, as its users use it; the
// app on top does what the naive Rust client (crates/belay-lab/src/lab/
// naive.rs) does, plus a timeout on each request:
//
//  * on every `open`: `connect`, then `subscribe` to the channel (no
//    recovery position, no wait for `subscribed`);
//  * `ping` answered with `pong` (the server reaps a silent socket);
//  * each echo request settles on its response or after the request
//    timeout; one issued while the socket is not open is not sent and settles
//    `not_ready` at once (sending it would queue it in the wrapper, which
//    flushes its queue before the app's `open` handler can send `connect`,
//    and the server closes a session whose first frame is not `connect`).
//
// Readiness is the wrapper's: `open` is ready, `close` is lost. A `dial` is
// reported whenever the wrapper creates a socket (the WebSocket class it is
// given is wrapped to count them).
import { requestLoop } from "./requests.mjs";

const OPEN = 1;

/** Start the app on `Wrapper` (a reconnecting-socket class) over `BaseWebSocket`. */
export function startWrapper(o, emit, Wrapper, BaseWebSocket) {
  class Counted extends BaseWebSocket {
    constructor(...args) {
      emit({ ev: "dial" });
      super(...args);
    }
  }
  const socket = new Wrapper(o.url, [], { WebSocket: Counted });
  const pending = new Map();
  let ready = false;
  const send = (msg) => socket.send(JSON.stringify(msg));
  socket.addEventListener("open", () => {
    ready = true;
    emit({ ev: "ready" });
    send({ type: "connect", protocol: 1 });
    send({ type: "subscribe", channel: o.channel });
  });
  socket.addEventListener("close", (e) => {
    if (!ready) return;
    ready = false;
    emit({ ev: "lost", why: typeof e.code === "number" ? `close ${e.code}` : "close" });
  });
  socket.addEventListener("error", () => {});
  socket.addEventListener("message", (e) => {
    let msg;
    try {
      msg = JSON.parse(typeof e.data === "string" ? e.data : String(e.data));
    } catch {
      return;
    }
    if (msg.type === "ping") send({ type: "pong" });
    else if (msg.type === "publication" && msg.channel === o.channel) {
      emit({ ev: "pub", epoch: msg.epoch, offset: msg.offset });
    } else if (msg.type === "response") {
      const settle = pending.get(msg.id);
      if (settle) settle("error" in msg ? "error" : "ok");
    }
  });
  const stopRequests = requestLoop(o.requestEveryMs, (id) => new Promise((resolve) => {
    if (socket.readyState !== OPEN) return resolve("not_ready");
    const timer = setTimeout(() => settle("timeout"), o.requestTimeoutMs);
    const settle = (outcome) => {
      clearTimeout(timer);
      pending.delete(id);
      resolve(outcome);
    };
    pending.set(id, settle);
    send({ type: "request", id, method: "echo", params: { k: id } });
  }), emit);
  return {
    stop() {
      stopRequests();
      socket.close();
    },
  };
}
