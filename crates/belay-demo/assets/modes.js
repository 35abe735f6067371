// The two browser clients Belay is measured with, behind one small interface,
// shared by the demo page (app.js), the Chromium end-to-end table
// (clients/js/e2e/) and the lab agent (clients/js/lab/agent.mjs):
//
//   const c = startClient(mode, { url, channel, seed }, (event) => ...);
//   c.request(method, params, timeoutMs) -> Promise<{ outcome, result?, code? }>
//   c.status() -> { state, transport, protocol, service, ready, via }
//   c.reconnectNow(); c.close(); c.dials
//
// `event` is one of {ev:"dial"} {ev:"ready"} {ev:"lost",why} {ev:"resync"}
// {ev:"pub",offset,epoch,data}; an outcome is "ok" | "timeout" | "not_ready" |
// "closed" | "error".
//
// mode "belay": the Belay browser client (/belay.js, built from clients/js);
// other options are BelayOptions (seed, requestTimeoutMs, WebSocket, ...).
// `fallback: true` (or FallbackOptions) adds the SSE + HTTP fallback
// (/fallback.js, `@belay/client/fallback`); `via` says which transport the
// last dial that opened used ("websocket" | "sse"); a `ready` event then
// carries it too.
// mode "naive": what a page without a connection layer does (the seed's
// stage 0): it trusts onopen/onclose, reconnects 1 s after every close, has no
// heartbeat, no request registry or timeout, and no subscription
// confirmation. Like any socket library it answers the server's
// {"type":"ping"} with {"type":"pong"}.

import { BelayClient, NotReadyError, TimeoutError, ConnectionClosedError } from '/belay.js';
import { sseFallback } from '/fallback.js';

export const MODES = ['belay', 'naive'];

export function startClient(mode, options, emit) {
  if (mode === 'belay') return belay(options, emit);
  if (mode === 'naive') return naive(options, emit);
  throw new TypeError(`unknown client mode ${JSON.stringify(mode)} (expected one of ${MODES.join(', ')})`);
}

function belay({ url, channel = 'feed', seed, WebSocket: Base = WebSocket, fallback, ...config }, emit) {
  let dials = 0;
  let why = 'transport';
  const fb = fallback ? sseFallback({ ...(fallback === true ? {} : fallback), WebSocket: Base }) : null;
  const via = () => (fb ? fb.kind : 'websocket');
  // Count dials where they happen: every socket the client creates (the
  // fallback's WebSocket probes are not dials).
  class CountingSocket extends (fb ? fb.WebSocket : Base) {
    constructor(u, p) {
      super(u, p);
      dials++;
      emit({ ev: 'dial' });
    }
  }
  const client = new BelayClient(url, { ...config, ...(seed === undefined ? {} : { seed }), WebSocket: CountingSocket, autoStart: false });
  client.addEventListener('disconnected', (e) => { why = e.detail.reason.cause || e.detail.reason.kind; });
  let ready = false;
  client.onStatus((s) => {
    if (s.ready === ready) return;
    ready = s.ready;
    if (ready) return emit(fb ? { ev: 'ready', via: via() } : { ev: 'ready' });
    // The status event comes just before `disconnected` in the same turn: name the cause after it.
    const level = s.transport ? (s.protocol ? 'service' : 'protocol') : null;
    queueMicrotask(() => emit({ ev: 'lost', why: level || why }));
  });
  client.subscribe(channel).on((item) => {
    if (item.type === 'publication') emit({ ev: 'pub', offset: item.offset, epoch: item.epoch, data: item.data });
    else if (item.type === 'resync') emit({ ev: 'resync' });
  });
  client.start();
  return {
    mode: 'belay',
    client,
    get dials() { return dials; },
    status: () => ({ ...client.status, via: via() }),
    reconnectNow: () => client.reconnectNow(),
    close: () => client.close(),
    request(method, params, timeoutMs) {
      return client.request(method, params, timeoutMs ? { timeout: timeoutMs } : {}).then(
        (result) => ({ outcome: 'ok', result }),
        (e) => ({
          outcome: e instanceof NotReadyError ? 'not_ready' : e instanceof TimeoutError ? 'timeout'
            : e instanceof ConnectionClosedError ? 'closed' : 'error',
          code: e.code,
        }));
    },
  };
}

function naive({ url, channel = 'feed' }, emit) {
  let ws = null;
  let open = false;
  let closed = false;
  let dials = 0;
  let nextId = 1;
  let timer = 0;
  const pending = new Map(); // id -> resolve; nothing ever times out or is rejected
  const lose = (why) => {
    if (!open) return;
    open = false;
    emit({ ev: 'lost', why });
  };
  const dial = () => {
    if (closed) return;
    dials++;
    emit({ ev: 'dial' });
    const s = new WebSocket(url);
    ws = s;
    s.onopen = () => {
      open = true;
      emit({ ev: 'ready' });
      s.send(JSON.stringify({ type: 'connect', protocol: 1 }));
      s.send(JSON.stringify({ type: 'subscribe', channel }));
    };
    s.onmessage = (e) => {
      let m;
      try { m = JSON.parse(e.data); } catch { return; }
      if (m.type === 'ping') s.send(JSON.stringify({ type: 'pong' }));
      else if (m.type === 'publication' && m.channel === channel) emit({ ev: 'pub', offset: m.offset, epoch: m.epoch, data: m.data });
      else if (m.type === 'response' && pending.has(m.id)) {
        const resolve = pending.get(m.id);
        pending.delete(m.id);
        resolve(m.error ? { outcome: 'error', code: m.error.code } : { outcome: 'ok', result: m.result });
      }
    };
    s.onerror = () => lose('error');
    s.onclose = (e) => {
      lose(`close ${e.code}`);
      if (!closed) timer = setTimeout(dial, 1000);
    };
  };
  dial();
  return {
    mode: 'naive',
    get dials() { return dials; },
    status: () => ({ state: open ? 'open' : 'closed', transport: open, protocol: open, service: open, ready: open }),
    reconnectNow() { ws?.close(); },
    close() {
      closed = true;
      clearTimeout(timer);
      ws?.close();
    },
    request(method, params) {
      const id = nextId++;
      return new Promise((resolve) => {
        pending.set(id, resolve);
        try {
          ws.send(JSON.stringify({ type: 'request', id, method, params }));
        } catch {
          pending.delete(id);
          resolve({ outcome: 'error', code: 'send_failed' }); // send() on a socket that is still connecting throws
        }
      });
    },
  };
}
