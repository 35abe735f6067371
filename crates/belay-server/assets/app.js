// Belay demo page: fault panel, connections chart, event log, and a small
// demo client. Plain ES module, no build step, no dependencies.

const $ = (id) => document.getElementById(id);
const mono = () => performance.now();
const TOGGLES = ['freeze', 'service_down', 'slow_replies', 'flapping'];
const WINDOW_MS = 60_000;
const LOG_MAX = 200;

const pad = (n, w = 2) => String(n).padStart(w, '0');
function clock(d = new Date()) {
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}
function duration(ms) {
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  return h ? `${h}h ${pad(m)}m ${pad(s % 60)}s` : m ? `${m}m ${pad(s % 60)}s` : `${s}s`;
}
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function prependCapped(list, li, max) {
  list.prepend(li);
  while (list.childElementCount > max) list.lastElementChild.remove();
}

// ---------------------------------------------------------------- admin API

let seq = 0;          // request order: a state fetched earlier never overwrites a later one
let shownSeq = 0;
let lastState = null;
let serverStart = 0;  // wall-clock ms of the server's start, from uptime_ms
const samples = [];   // {t: wall ms, n: connections, f: any fault on}

async function fetchState(path, init) {
  const my = ++seq;
  const res = await fetch(path, { cache: 'no-store', ...init });
  if (!res.ok) {
    let text = '';
    try { text = (await res.text()).slice(0, 200); } catch { /* ignore */ }
    throw new Error(`HTTP ${res.status}${text ? `: ${text}` : ''}`);
  }
  const s = await res.json();
  if (my > shownSeq) { shownSeq = my; renderState(s); }
  return s;
}

function addSample(n, f) {
  const t = Date.now();
  samples.push({ t, n, f: f ?? (samples.length ? samples[samples.length - 1].f : false) });
  while (samples.length && samples[0].t < t - WINDOW_MS - 5000) samples.shift();
}

function anyFault(f) {
  return !!f && (f.freeze || f.service_down || f.slow_replies || f.flapping || f.restarting || f.draining);
}

function renderState(s) {
  lastState = s;
  const f = s.faults || {};
  const status = f.draining ? 'draining' : f.restarting ? 'restarting' : s.accepting ? 'accepting' : 'refusing';
  const pill = $('server-status');
  pill.textContent = status;
  pill.dataset.state = status;
  $('conn-count').textContent = String(s.connections);
  $('uptime').textContent = typeof s.uptime_ms === 'number' ? duration(s.uptime_ms) : '–';
  if (typeof s.uptime_ms === 'number') {
    const start = Date.now() - s.uptime_ms;
    // latency only makes the estimate late: keep the earliest, unless the server restarted
    if (!serverStart || Math.abs(start - serverStart) > 2000) serverStart = start;
    else serverStart = Math.min(serverStart, start);
  }
  for (const name of TOGGLES) {
    const b = document.querySelector(`button[data-fault="${name}"]`);
    b.setAttribute('aria-pressed', String(!!f[name]));
  }
  const flapIn = $('flap-ms');
  if (f.flapping && typeof f.flapping_ms === 'number' && document.activeElement !== flapIn) flapIn.value = f.flapping_ms;
  const rb = document.querySelector('button[data-action="restart"]');
  rb.setAttribute('aria-busy', String(!!f.restarting));
  const db = document.querySelector('button[data-action="drain"]');
  db.setAttribute('aria-busy', String(!!f.draining));
}

let polledOnce = false;
async function poll() {
  try {
    const s = await fetchState('/admin/state');
    addSample(s.connections, anyFault(s.faults));
    if (!polledOnce) {
      polledOnce = true;
      const on = Object.keys(s.faults || {}).filter((k) => s.faults[k] === true);
      localEvent(`admin API: ${s.connections} connection(s), faults on: ${on.length ? on.join(', ') : 'none'}`);
    }
  } catch {
    const pill = $('server-status');
    pill.textContent = 'unreachable';
    pill.dataset.state = 'unreachable';
    $('conn-count').textContent = '–';
  }
}

function intInput(id, fallback) {
  const v = Number.parseInt($(id).value, 10);
  return Number.isFinite(v) && v >= 0 ? v : fallback;
}

async function postFault(name, body, button) {
  const msg = $('fault-msg');
  button.disabled = true;
  try {
    const s = await fetchState(`/admin/fault/${name}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    msg.textContent = '';
    addSample(s.connections, anyFault(s.faults));
  } catch (e) {
    msg.textContent = `${button.textContent.trim()}: ${e.message}`;
  } finally {
    button.disabled = false;
  }
}

function wireFaults() {
  for (const b of document.querySelectorAll('button[data-fault]')) {
    b.addEventListener('click', () => {
      const name = b.dataset.fault;
      const on = b.getAttribute('aria-pressed') !== 'true';
      const body = { on };
      if (name === 'flapping' && on) body.after_ms = intInput('flap-ms', 300);
      postFault(name, body, b);
    });
  }
  const restart = document.querySelector('button[data-action="restart"]');
  restart.addEventListener('click', () => postFault('restart', { on: true, down_ms: intInput('restart-ms', 5000) }, restart));
  const drain = document.querySelector('button[data-action="drain"]');
  drain.addEventListener('click', () => postFault('drain', { on: true }, drain));
}

// ---------------------------------------------------------------- event log

function logLine(kind, detail, conns, at) {
  const li = el('li');
  const time = el('time', '', at);
  li.append(time, el('span', `kind k-${kind.replace(/[^a-z_]/gi, '')}`, kind), document.createTextNode(detail || ''));
  if (typeof conns === 'number') li.append(el('span', 'conns', `conns ${conns}`));
  prependCapped($('event-log'), li, LOG_MAX);
}

function localEvent(detail) { logLine('page', detail, undefined, clock()); }

function serverEvent(e) {
  const kind = typeof e.kind === 'string' ? e.kind : 'event';
  // at_ms is ms since server start (as uptime_ms); wall-clock ms is accepted too.
  let at = clock();
  if (typeof e.at_ms === 'number') {
    if (e.at_ms > 1e12) at = clock(new Date(e.at_ms));
    else if (serverStart) at = clock(new Date(serverStart + e.at_ms));
  }
  logLine(kind, typeof e.detail === 'string' ? e.detail : JSON.stringify(e.detail ?? ''), e.connections, at);
  if (typeof e.connections === 'number') {
    $('conn-count').textContent = String(e.connections);
    addSample(e.connections);
  }
}

let events = null;
let sseWasLive = false;
function setSse(state, text = state) {
  const p = $('sse-status');
  p.dataset.state = state;
  p.textContent = text;
}
function openEvents() {
  const es = new EventSource('/admin/events');
  events = es;
  setSse('connecting');
  es.onopen = () => {
    if (es !== events) return;
    if (sseWasLive) localEvent('event stream reconnected; events in between may be missing');
    sseWasLive = true;
    setSse('live');
  };
  es.onmessage = (ev) => {
    let e;
    try { e = JSON.parse(ev.data); } catch { return; }
    if (e && typeof e === 'object') serverEvent(e);
  };
  es.onerror = () => {
    if (es !== events) return;
    if ($('sse-status').dataset.state === 'live') localEvent('event stream lost');
    if (es.readyState === EventSource.CLOSED) {
      // The browser gave up (e.g. an HTTP error): retry ourselves.
      setSse('closed', 'closed, retrying');
      es.close();
      setTimeout(() => { if (es === events) openEvents(); }, 3000);
    } else {
      setSse('reconnecting');
    }
  };
}

// ---------------------------------------------------------------- chart

const chart = { css: null };
function drawChart() {
  const c = $('chart');
  const ctx = c.getContext('2d');
  const dpr = window.devicePixelRatio || 1;
  const w = c.clientWidth, h = c.clientHeight;
  if (!w || !h) return;
  if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
  }
  if (!chart.css) {
    const cs = getComputedStyle(document.documentElement);
    chart.css = {
      fg: cs.getPropertyValue('--muted').trim() || '#667',
      line: cs.getPropertyValue('--accent').trim() || '#2456c9',
      grid: cs.getPropertyValue('--line').trim() || '#ddd',
    };
  }
  const { fg, line, grid } = chart.css;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  const L = 46, R = 14, T = 10, B = 34;
  const pw = w - L - R, ph = h - T - B;
  const now = Date.now(), t0 = now - WINDOW_MS;
  const pts = samples.filter((p) => p.t >= t0 - 3000);
  const maxN = Math.max(1, ...pts.map((p) => p.n));
  const step = niceStep(maxN / 4);
  const yMax = Math.ceil(maxN / step) * step;
  const X = (t) => L + ((t - t0) / WINDOW_MS) * pw;
  const Y = (n) => T + ph - (n / yMax) * ph;

  ctx.save();
  ctx.beginPath();
  ctx.rect(L, T, pw, ph);
  ctx.clip();
  // fault shading
  ctx.fillStyle = 'rgba(180, 35, 24, 0.14)';
  for (let i = 0; i < pts.length; i++) {
    if (!pts[i].f) continue;
    const end = i + 1 < pts.length ? pts[i + 1].t : now;
    ctx.fillRect(X(pts[i].t), T, Math.max(1, X(end) - X(pts[i].t)), ph);
  }
  ctx.restore();

  // grid and axis labels
  ctx.font = '11px system-ui, sans-serif';
  ctx.fillStyle = fg;
  ctx.strokeStyle = grid;
  ctx.lineWidth = 1;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (let v = 0; v <= yMax + 1e-9; v += step) {
    const y = Math.round(Y(v)) + 0.5;
    ctx.beginPath(); ctx.moveTo(L, y); ctx.lineTo(L + pw, y); ctx.stroke();
    ctx.fillText(String(v), L - 6, y);
  }
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  for (let s = 60; s >= 0; s -= 10) {
    const x = Math.round(X(now - s * 1000)) + 0.5;
    ctx.beginPath(); ctx.moveTo(x, T + ph); ctx.lineTo(x, T + ph + 4); ctx.stroke();
    ctx.fillText(s === 0 ? 'now' : `−${s}s`, x, T + ph + 6);
  }
  ctx.fillText('time (seconds ago)', L + pw / 2, T + ph + 20);
  ctx.save();
  ctx.translate(11, T + ph / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textBaseline = 'middle';
  ctx.fillText('connections', 0, 0);
  ctx.restore();
  ctx.strokeStyle = fg;
  ctx.beginPath(); ctx.moveTo(L + 0.5, T); ctx.lineTo(L + 0.5, T + ph); ctx.lineTo(L + pw, T + ph + 0.5); ctx.stroke();

  // step line; a hole of more than 3 s (server unreachable) breaks it
  ctx.save();
  ctx.beginPath();
  ctx.rect(L, T - 2, pw, ph + 4);
  ctx.clip();
  ctx.strokeStyle = line;
  ctx.lineWidth = 2;
  ctx.lineJoin = 'round';
  ctx.beginPath();
  for (let i = 0; i < pts.length; i++) {
    const p = pts[i];
    const prev = pts[i - 1];
    if (!prev || p.t - prev.t > 3000) ctx.moveTo(X(p.t), Y(p.n));
    else { ctx.lineTo(X(p.t), Y(prev.n)); ctx.lineTo(X(p.t), Y(p.n)); }
  }
  const last = pts[pts.length - 1];
  if (last && now - last.t <= 3000) ctx.lineTo(X(now), Y(last.n));
  ctx.stroke();
  ctx.restore();
  if (last) {
    ctx.fillStyle = line;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'bottom';
    ctx.font = 'bold 12px system-ui, sans-serif';
    ctx.fillText(`${last.n}`, L + pw - 2, Math.max(T + 14, Y(last.n) - 3));
  }
}
function niceStep(raw) {
  if (raw <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

// ---------------------------------------------------------------- demo client
// Readiness levels (transport / protocol / service), heartbeat probes,
// gap detection with resubscribe-from-position, and equal-jitter reconnects.

const PROBE_AFTER_MS = 5000;      // probe when nothing arrived for this long
const PROBE_TIMEOUT_MS = 5000;    // drop when the probe gets no frame back
const CONNECT_TIMEOUT_MS = 10000;
const SUBSCRIBE_TIMEOUT_MS = 5000;
const RESET_AFTER_MS = 5000;      // ready this long: backoff starts over
const ECHO_EVERY_MS = 2000;
const ECHO_TIMEOUT_MS = 10000;
const FINAL_CODES = new Set(['forbidden', 'unauthorized', 'not_found', 'bad_request']);
const TERMINAL_CLOSES = new Set([1000, 1008, 4001, 4003]);

// equal jitter: half the capped exponential, plus a random half
function equalJitter(attempt, baseMs, capMs) {
  const d = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return d / 2 + Math.random() * (d / 2);
}

class DemoClient {
  constructor(url, channel) {
    this.url = url;
    this.channel = channel;
    this.ws = null;
    this.phase = 'idle';
    this.session = null;
    this.attempt = 0;
    this.advice = null;
    this.retryAt = 0;
    this.retryTimer = 0;
    this.lv = { transport: false, protocol: false, service: false };
    this.readySince = 0;
    this.sub = { state: 'idle', epoch: null, offset: null, sentSince: false, sentAt: 0, retryAt: 0, rsAttempt: 0 };
    this.stats = { pubs: 0, gaps: 0, lost: 0, reconnects: 0, data: undefined };
    this.lastRx = 0;
    this.probeAt = 0;
    this.nextId = 1;
    this.echo = { pending: null, lastSent: 0, text: '–' };
    setInterval(() => this.tick(), 250);
  }

  log(text) {
    const li = el('li');
    li.append(el('time', '', clock()), document.createTextNode(text));
    prependCapped($('client-log'), li, LOG_MAX);
  }

  send(msg) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }

  dial() {
    clearTimeout(this.retryTimer);
    if (this.dialed) this.stats.reconnects++;
    this.dialed = true;
    this.phase = 'connecting';
    this.dialAt = mono();
    let ws;
    try { ws = new WebSocket(this.url); } catch (e) { this.lost(`cannot open: ${e.message}`); return; }
    this.ws = ws;
    ws.onopen = () => {
      if (ws !== this.ws) return;
      this.phase = 'handshaking';
      this.openedAt = mono();
      this.advice = null;
      this.lv.transport = true;
      const hello = { type: 'connect', protocol: 1 };
      if (this.session) hello.session = this.session;
      this.send(hello);
      this.render();
    };
    ws.onmessage = (ev) => { if (ws === this.ws) this.onFrame(ev.data); };
    ws.onclose = (ev) => {
      if (ws !== this.ws) return; // a transport we abandoned: ignore
      this.lost(`closed ${ev.code}${ev.reason ? ` "${ev.reason}"` : ''}`, ev.code);
    };
    ws.onerror = () => { /* a close event follows */ };
    this.render();
  }

  onFrame(raw) {
    this.lastRx = mono();
    this.probeAt = 0;
    let m;
    try { m = JSON.parse(raw); } catch { this.log('ignored a frame that is not JSON'); return; }
    if (!m || typeof m.type !== 'string') return;
    switch (m.type) {
      case 'ping': this.send({ type: 'pong' }); break;
      case 'welcome': this.onWelcome(m); break;
      case 'subscribed': this.onSubscribed(m); break;
      case 'unsubscribed': this.onUnsubscribed(m); break;
      case 'publication': this.onPublication(m); break;
      case 'response': this.onResponse(m); break;
      case 'reconnect':
        this.advice = { min: Number(m.min_delay_ms) || 0, max: Number(m.max_delay_ms) || 0 };
        this.log(`reconnect advice: ${m.reason} in ${this.advice.min}–${this.advice.max} ms`);
        break;
      case 'error': this.log(`server error: ${m.code} ${m.message || ''}`); break;
      default: break; // pong and unknown types: proof of life only
    }
    this.render();
  }

  onWelcome(m) {
    if (this.phase !== 'handshaking') return;
    if (m.protocol !== 1) {
      this.log(`unsupported protocol ${m.protocol}: stopping`);
      this.halt('unsupported protocol version');
      return;
    }
    this.phase = 'open';
    this.session = m.session || this.session;
    this.lv.protocol = true;
    this.sub.rsAttempt = 0;
    this.log(`welcome, session ${m.session}${m.ping_interval_ms ? `, server pings every ${m.ping_interval_ms} ms` : ''}`);
    if (this.sub.state !== 'failed') this.subscribe();
  }

  subscribe() {
    const msg = { type: 'subscribe', channel: this.channel };
    this.sub.sentSince = this.sub.epoch !== null;
    if (this.sub.sentSince) msg.since = { epoch: this.sub.epoch, offset: this.sub.offset };
    this.sub.state = 'pending';
    this.sub.sentAt = mono();
    this.lv.service = false;
    this.send(msg);
  }

  onSubscribed(m) {
    if (m.channel !== this.channel || this.sub.state !== 'pending') return;
    if (this.sub.sentSince && !m.recovered) {
      this.stats.lost++;
      this.log(`recovery FAILED: publications after ${this.sub.epoch}/${this.sub.offset} lost; resync needed`);
    } else if (this.sub.sentSince) {
      this.log(`subscribed, recovered from offset ${this.sub.offset}: missed publications replay`);
    } else {
      this.log(`subscribed to ${m.channel} at ${m.epoch}/${m.offset}`);
    }
    this.sub.state = 'subscribed';
    this.sub.epoch = m.epoch;
    this.sub.offset = m.offset;
    this.sub.rsAttempt = 0;
    this.lv.service = true;
  }

  onUnsubscribed(m) {
    if (m.channel !== this.channel || (this.sub.state !== 'pending' && this.sub.state !== 'subscribed')) return;
    this.lv.service = false;
    if (FINAL_CODES.has(m.code)) {
      this.sub.state = 'failed';
      this.log(`subscription refused for good: ${m.code} ${m.reason || ''}`);
      return;
    }
    const delay = equalJitter(this.sub.rsAttempt++, 500, 2000);
    this.sub.state = 'retrying';
    this.sub.retryAt = mono() + delay;
    this.log(`subscription lost: ${m.code}${m.reason ? ` (${m.reason})` : ''}; resubscribe in ${Math.round(delay)} ms`);
  }

  onPublication(m) {
    if (m.channel !== this.channel || this.sub.state !== 'subscribed') return; // stray
    const next = this.sub.offset + 1;
    if (m.epoch === this.sub.epoch && m.offset < next) return; // duplicate
    if (m.epoch === this.sub.epoch && m.offset === next) {
      this.sub.offset = m.offset;
      this.stats.pubs++;
      this.stats.data = m.data;
      return;
    }
    this.stats.gaps++;
    this.log(m.epoch === this.sub.epoch
      ? `GAP: expected offset ${next}, got ${m.offset}; resubscribing from ${this.sub.offset}`
      : `epoch changed ${this.sub.epoch} → ${m.epoch}; resubscribing`);
    this.subscribe();
  }

  sendEcho() {
    const id = this.nextId++;
    this.echo.pending = { id, at: mono() };
    this.echo.lastSent = mono();
    this.send({ type: 'request', id, method: 'echo', params: { n: id }, timeout_ms: ECHO_TIMEOUT_MS });
  }

  onResponse(m) {
    const p = this.echo.pending;
    if (!p || m.id !== p.id) return; // late or unknown
    this.echo.pending = null;
    const ms = Math.round(mono() - p.at);
    this.echo.text = m.error ? `error ${m.error.code} after ${ms} ms` : `${ms} ms round trip`;
  }

  lost(reason, code) {
    const ws = this.ws;
    this.ws = null;
    if (ws && ws.readyState < WebSocket.CLOSING) {
      const c = reason.startsWith('heartbeat') ? 4000 : reason.startsWith('connect timeout') ? 4008 : 1000;
      try { ws.close(c, reason.slice(0, 100)); } catch { /* ignore */ }
    }
    this.lv = { transport: false, protocol: false, service: false };
    if (this.sub.state !== 'failed') this.sub.state = 'idle';
    if (this.echo.pending) { this.echo.pending = null; this.echo.text = 'lost with the connection'; }
    if (TERMINAL_CLOSES.has(code)) { this.log(`connection ${reason}: terminal, not retrying`); this.halt(); return; }
    let delay;
    if (this.advice) {
      delay = this.advice.min + Math.random() * Math.max(0, this.advice.max - this.advice.min);
      this.advice = null;
    } else {
      delay = equalJitter(this.attempt, 500, 10000);
    }
    this.attempt++;
    this.phase = 'waiting';
    this.retryAt = mono() + delay;
    this.retryTimer = setTimeout(() => this.dial(), delay);
    this.log(`connection lost (${reason}); retry #${this.attempt} in ${(delay / 1000).toFixed(2)} s`);
    this.render();
  }

  halt(why) {
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      try { ws.close(1000, why || 'client stop'); } catch { /* ignore */ }
    }
    clearTimeout(this.retryTimer);
    this.lv = { transport: false, protocol: false, service: false };
    this.phase = 'halted';
    this.render();
  }

  reconnectNow() {
    const ws = this.ws;
    this.ws = null;
    if (ws) { try { ws.close(1000, 'reconnect requested'); } catch { /* ignore */ } }
    clearTimeout(this.retryTimer);
    this.advice = null;
    this.attempt = 0;
    this.lv = { transport: false, protocol: false, service: false };
    this.sub.state = 'idle';
    this.echo.pending = null;
    this.log('reconnecting now (button)');
    this.dial();
  }

  ready() { return this.lv.transport && this.lv.protocol && this.lv.service; }

  tick() {
    const now = mono();
    if (this.phase === 'connecting' && now - this.dialAt >= CONNECT_TIMEOUT_MS) return this.lost('connect timeout: transport did not open');
    if (this.phase === 'handshaking' && now - this.openedAt >= CONNECT_TIMEOUT_MS) return this.lost('connect timeout: no welcome');
    if (this.phase === 'open') {
      if (this.probeAt) {
        if (now - this.probeAt >= PROBE_TIMEOUT_MS) return this.lost('heartbeat timeout: probe unanswered');
      } else if (now - this.lastRx >= PROBE_AFTER_MS) {
        this.probeAt = now;
        this.send({ type: 'ping' });
        this.log(`quiet for ${PROBE_AFTER_MS / 1000} s: probing with ping`);
      }
      if (this.sub.state === 'retrying' && now >= this.sub.retryAt) this.subscribe();
      if (this.sub.state === 'pending' && now - this.sub.sentAt >= SUBSCRIBE_TIMEOUT_MS) {
        this.log('no answer to subscribe in 5 s: sending it again');
        this.subscribe();
      }
      const p = this.echo.pending;
      if (p && now - p.at >= ECHO_TIMEOUT_MS) {
        this.echo.pending = null;
        this.echo.text = `no reply in ${ECHO_TIMEOUT_MS / 1000} s`;
      } else if (!p && now - this.echo.lastSent >= ECHO_EVERY_MS) {
        this.sendEcho();
      }
    }
    if (this.ready()) {
      if (!this.readySince) this.readySince = now;
      if (this.attempt && now - this.readySince >= RESET_AFTER_MS) this.attempt = 0;
    } else {
      this.readySince = 0;
    }
    this.render();
  }

  render() {
    const lvl = (id, up, on = 'up', off = 'down') => {
      const d = $(id);
      const t = up ? on : off;
      if (d.textContent !== t) d.textContent = t;
      d.dataset.up = String(up);
    };
    lvl('cv-transport', this.lv.transport);
    lvl('cv-protocol', this.lv.protocol);
    lvl('cv-service', this.lv.service);
    lvl('cv-ready', this.ready(), 'ready', 'not ready');
    const now = mono();
    let phase = this.phase;
    if (phase === 'waiting') phase = `waiting, retry #${this.attempt} in ${Math.max(0, (this.retryAt - now) / 1000).toFixed(1)} s`;
    if (phase === 'open' && this.sub.state !== 'subscribed') phase = `open, feed ${this.sub.state}`;
    if (phase === 'open' && this.probeAt) phase = 'open, probe pending';
    $('cv-phase').textContent = phase;
    $('cv-session').textContent = this.session || '–';
    $('cv-pubs').textContent = String(this.stats.pubs);
    $('cv-offset').textContent = this.sub.offset === null ? '–' : `${this.sub.offset}`;
    $('cv-offset').title = this.sub.epoch ? `epoch ${this.sub.epoch}` : '';
    $('cv-gaps').textContent = String(this.stats.gaps);
    $('cv-lost').textContent = String(this.stats.lost);
    $('cv-reconnects').textContent = String(this.stats.reconnects);
    const p = this.echo.pending;
    $('cv-echo').textContent = p && now - p.at > 1000 ? `waiting ${((now - p.at) / 1000).toFixed(1)} s` : this.echo.text;
    const data = this.stats.data === undefined ? '–' : JSON.stringify(this.stats.data);
    $('cv-data').textContent = data.length > 80 ? `${data.slice(0, 80)}…` : data;
  }
}

// ---------------------------------------------------------------- start

function start() {
  wireFaults();
  const url = `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/ws`;
  $('cv-url').textContent = url;
  const client = new DemoClient(url, 'feed');
  $('cv-reconnect').addEventListener('click', () => client.reconnectNow());
  client.dial();
  openEvents();
  poll();
  setInterval(poll, 1000);
  drawChart();
  setInterval(drawChart, 1000);
  window.addEventListener('resize', drawChart);
  window.belayDemo = { client, samples, state: () => lastState };
}

start();
