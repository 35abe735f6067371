// Belay demo page: fault panel, connections chart, event log, and the page's
// own connection through the Belay browser client (or the naive baseline).
// Plain ES module; the client is /belay.js, built from clients/js.

import { startClient } from '/assets/modes.js';

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

// ---------------------------------------------------------------- client view
// The page's own connection, made by the Belay browser client (/belay.js,
// built from clients/js, with its SSE fallback for networks that block
// WebSockets) or, with ?client=naive, by the naive baseline; both
// come from modes.js, the same code the Chromium table and the lab agent run.

const ECHO_TIMEOUT_MS = 5000;

function clientView(mode, url) {
  const view = { pubs: 0, offset: null, epoch: null, data: undefined, resyncs: 0, echo: '–', lastEv: '' };
  const log = (text) => {
    const li = el('li');
    li.append(el('time', '', clock()), document.createTextNode(text));
    prependCapped($('client-log'), li, LOG_MAX);
  };
  let handle = null; // events may arrive while startClient is still running
  let dials = 0;
  handle = startClient(mode, { url, channel: 'feed', fallback: true }, (e) => {
    switch (e.ev) {
      case 'pub':
        view.pubs++;
        view.offset = e.offset;
        view.epoch = e.epoch;
        view.data = e.data;
        break;
      case 'resync': view.resyncs++; log('history lost: resync from a snapshot'); break;
      case 'dial': log(`dial #${++dials}`); break;
      case 'ready': log(e.via ? `ready (over ${e.via === 'sse' ? 'SSE' : 'WebSocket'})` : 'ready'); break;
      case 'lost': log(`not ready: ${e.why}`); break;
    }
    render();
  });
  if (handle.client) {
    handle.client.addEventListener('disconnected', (e) => {
      const { reason, retry } = e.detail;
      log(`disconnected (${reason.cause || reason.kind})${retry.kind === 'after' ? `, retry in ${(retry.delay_ms / 1000).toFixed(2)} s` : retry.kind === 'no' ? ', not retrying' : ', retry when online'}`);
    });
    handle.client.addEventListener('servererror', (e) => log(`server error: ${e.detail.code}`));
  }

  async function echo() {
    const t = performance.now();
    view.echo = 'waiting…';
    render();
    const r = await handle.request('echo', { at: Date.now() }, ECHO_TIMEOUT_MS);
    const ms = Math.round(performance.now() - t);
    view.echo = r.outcome === 'ok' ? `ok in ${ms} ms` : `${r.outcome}${r.code ? ` (${r.code})` : ''} after ${ms} ms`;
    log(`echo: ${view.echo}`);
    render();
  }

  function render() {
    const s = handle ? handle.status() : { state: 'idle', transport: false, protocol: false, service: false, ready: false };
    const lvl = (id, up, on = 'up', off = 'down') => {
      const d = $(id);
      const t = up ? on : off;
      if (d.textContent !== t) d.textContent = t;
      d.dataset.up = String(up);
    };
    lvl('cv-transport', s.transport);
    lvl('cv-protocol', s.protocol);
    lvl('cv-service', s.service);
    lvl('cv-ready', s.ready, 'ready', 'not ready');
    $('cv-phase').textContent = s.state;
    $('cv-pubs').textContent = String(view.pubs);
    $('cv-offset').textContent = view.offset === null ? '–' : String(view.offset);
    $('cv-offset').title = view.epoch ? `epoch ${view.epoch}` : '';
    $('cv-resyncs').textContent = String(view.resyncs);
    $('cv-dials').textContent = String(handle ? handle.dials : 0);
    $('cv-echo').textContent = view.echo;
    const data = view.data === undefined ? '–' : JSON.stringify(view.data);
    $('cv-data').textContent = data.length > 80 ? `${data.slice(0, 80)}…` : data;
  }

  $('cv-echo-btn').addEventListener('click', echo);
  $('cv-reconnect').addEventListener('click', () => { log('reconnect now (button)'); handle.reconnectNow(); });
  if (handle.client) handle.client.onStatus(render);
  setInterval(render, 500);
  render();
  return { handle, view };
}

// ---------------------------------------------------------------- start

function start() {
  wireFaults();
  const url = `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/ws`;
  $('cv-url').textContent = url;
  const mode = new URLSearchParams(location.search).get('client') === 'naive' ? 'naive' : 'belay';
  $('cv-mode').textContent = mode === 'naive' ? 'naive baseline' : 'Belay client';
  $('cv-switch').href = mode === 'naive' ? '?client=belay' : '?client=naive';
  $('cv-switch').textContent = mode === 'naive' ? 'use the Belay client' : 'compare: naive baseline';
  const client = clientView(mode, url);
  openEvents();
  poll();
  setInterval(poll, 1000);
  drawChart();
  setInterval(drawChart, 1000);
  window.addEventListener('resize', drawChart);
  window.belayDemo = { client, samples, state: () => lastState };
}

start();
