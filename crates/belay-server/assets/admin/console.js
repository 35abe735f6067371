// The admin console: reads the guarded JSON routes of /admin/ (the login
// cookie goes with every request; the token is never in a URL or in the
// page's storage) and follows the node's figures live through the Belay
// browser client, subscribed to the admin hub's `stats` channel at
// /admin/live. State for tests and the curious: window.belayAdmin.
import { BelayClient } from '/admin/belay.js';

const $ = (id) => document.getElementById(id);
const KEPT = 300;
const admin = (window.belayAdmin = { samples: [], live: 'connecting', livePublications: 0, actions: [] });

function log(line) {
  const item = document.createElement('li');
  item.textContent = `${new Date().toLocaleTimeString()}  ${line}`;
  $('log').prepend(item);
  admin.actions.push(line);
}

function duration(ms) {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

// A guarded request; a lost login sends the browser back to the login form.
async function api(path, body) {
  const init = body === undefined ? {} : {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  };
  const res = await fetch(path, { credentials: 'same-origin', ...init });
  if (res.status === 401) {
    location.replace('/admin/');
    throw new Error('the login no longer holds');
  }
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* a plain-text answer */ }
  if (!res.ok) throw new Error(`${res.status}: ${json?.error ?? text}`);
  return json ?? text;
}

function row(table, cells, onClick) {
  const tr = document.createElement('tr');
  for (const cell of cells) {
    const td = document.createElement('td');
    td.textContent = cell == null ? '–' : String(cell);
    tr.append(td);
  }
  if (onClick) {
    tr.className = 'pick';
    tr.addEventListener('click', onClick);
  }
  $(table).querySelector('tbody').append(tr);
}

function clear(table) {
  $(table).querySelector('tbody').replaceChildren();
}

// ----- charts -----

const CHARTS = [
  ['chart-connections', 'now-connections', (s) => s.connections, '#2456c9'],
  ['chart-deliveries', 'now-deliveries', (s) => s.deliveries_per_s, '#16794a'],
  ['chart-refusals', 'now-refusals', (s) => s.refusals_per_s, '#b42318'],
];

function draw() {
  for (const [canvasId, nowId, value, colour] of CHARTS) {
    const canvas = $(canvasId);
    const g = canvas.getContext('2d');
    const { width: w, height: h } = canvas;
    g.clearRect(0, 0, w, h);
    const points = admin.samples.map(value);
    $(nowId).textContent = points.length ? String(points[points.length - 1]) : '–';
    const max = Math.max(1, ...points);
    g.fillStyle = '#667085';
    g.font = '10px sans-serif';
    g.fillText(String(max), 4, 11);
    g.strokeStyle = '#d9dde5';
    g.beginPath();
    g.moveTo(0, h - 0.5);
    g.lineTo(w, h - 0.5);
    g.stroke();
    if (points.length === 0) continue;
    g.strokeStyle = colour;
    g.lineWidth = 2;
    g.beginPath();
    points.forEach((p, i) => {
      const x = points.length === 1 ? w : (i / (KEPT - 1)) * w + (w * (KEPT - points.length)) / (KEPT - 1);
      const y = h - 4 - (p / max) * (h - 18);
      if (i === 0) g.moveTo(x, y);
      else g.lineTo(x, y);
    });
    g.stroke();
  }
}

function addSample(sample) {
  const last = admin.samples[admin.samples.length - 1];
  if (last && sample.at_ms <= last.at_ms) return;
  admin.samples.push(sample);
  if (admin.samples.length > KEPT) admin.samples.shift();
  draw();
}

async function startLive() {
  const { samples } = await api('/admin/samples');
  samples.forEach(addSample);
  draw();
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/admin/live`;
  const client = new BelayClient(url);
  admin.client = client;
  client.onStatus((status) => {
    admin.live = status.ready ? 'live' : status.state === 'halted' ? 'lost' : 'connecting';
    $('live-state').textContent = admin.live;
    $('live-state').dataset.state = admin.live;
  });
  client.subscribe('stats').on((item) => {
    if (item.type !== 'publication') return;
    admin.livePublications++;
    addSample(item.data);
  });
}

// ----- the node and its cluster -----

async function refresh() {
  const overview = await api('/admin/overview');
  const stats = overview.stats;
  admin.overview = overview;
  $('node-id').textContent = overview.node ? `node ${overview.node}` : 'single node';
  $('state').textContent = stats.lifecycle;
  $('state').dataset.state = stats.lifecycle;
  $('conn-count').textContent = String(stats.connections);
  $('uptime').textContent = duration(stats.uptime_ms);
  $('logout').hidden = !overview.token_required;
  $('drain').disabled = stats.lifecycle !== 'serving';
  let nodes = null;
  const res = await fetch('/admin/cluster', { credentials: 'same-origin' });
  if (res.ok) nodes = (await res.json()).nodes ?? null;
  clear('nodes');
  admin.cluster = !!nodes;
  if (nodes) {
    for (const n of nodes) {
      row('nodes', [n.node, n.error ? 'unanswered' : n.lifecycle, n.connections, n.error ? n.error : duration(n.uptime_ms)]);
    }
    $('nodes-note').textContent = `${nodes.length} node(s) answered through the broker.`;
  } else {
    row('nodes', [overview.node ?? 'this node', stats.lifecycle, stats.connections, duration(stats.uptime_ms)]);
    $('nodes-note').textContent = 'One node (the embedded broker has no cluster).';
  }
}

// ----- connections by user -----

let shownUser = null;

// On a cluster (the nodes table came from /admin/cluster) every node is
// asked; otherwise this one.
async function lookUp(user) {
  const q = encodeURIComponent(user);
  let sessions = [];
  let unanswered = [];
  if (admin.cluster) {
    const { nodes } = await api(`/admin/cluster/sessions?user=${q}`);
    for (const n of nodes) {
      if (n.error) unanswered.push(n.node);
      else sessions.push(...n.answer.map((s) => ({ node: n.node, ...s })));
    }
  } else {
    sessions = (await api(`/admin/sessions?user=${q}`)).sessions.map((s) => ({ node: admin.overview?.node ?? 'this node', ...s }));
  }
  shownUser = user;
  clear('sessions');
  for (const s of sessions) row('sessions', [s.node, s.session, s.transport, s.codec, duration(s.connected_ms)]);
  $('sessions-note').textContent = `${sessions.length} connection(s) of ${user}`
    + (admin.cluster ? ' in the cluster' : ' on this node')
    + (unanswered.length ? `; no answer from ${unanswered.join(', ')}` : '') + '.';
  $('disconnect').disabled = sessions.length === 0;
  admin.sessions = sessions;
}

$('user-form').addEventListener('submit', (event) => {
  event.preventDefault();
  lookUp($('user').value).catch((e) => log(`lookup failed: ${e.message}`));
});

$('disconnect').addEventListener('click', async () => {
  if (!shownUser) return;
  try {
    const body = { user: shownUser, reason: 'by an operator' };
    const disconnected = admin.cluster
      ? (await api('/admin/cluster/disconnect', body)).nodes.reduce((sum, n) => sum + (n.answer ?? 0), 0)
      : (await api('/admin/disconnect', body)).disconnected;
    log(`disconnected ${shownUser}: ${disconnected} connection(s) closed 4003`);
    await lookUp(shownUser);
  } catch (e) {
    log(`disconnect failed: ${e.message}`);
  }
});

// ----- channels -----

async function listChannels() {
  const list = await api(`/admin/channels?pattern=${encodeURIComponent($('pattern').value || '*')}`);
  clear('channels');
  for (const c of list.channels) row('channels', [c.channel, c.subscribers], () => showChannel(c.channel));
  admin.channels = list.channels;
}

async function showChannel(name) {
  const c = await api(`/admin/channel?name=${encodeURIComponent(name)}`);
  admin.channel = c;
  $('channel-detail').hidden = false;
  $('channel-name').textContent = c.channel;
  $('channel-subscribers').textContent = c.subscribers ?? '–';
  const h = c.history;
  $('channel-history').textContent = h.error ? h.error : `${h.size} publication(s), epoch ${h.epoch}`;
  $('channel-top').textContent = h.error ? '–' : String(h.top_offset);
  $('channel-presence').textContent = c.presence === null ? 'not tracked in this namespace'
    : Array.isArray(c.presence) ? c.presence.map((m) => m.user).join(', ') || 'nobody' : c.presence.error;
  $('channel-recent').textContent = h.recent ? h.recent.map((p) => `${p.offset}  ${JSON.stringify(p.data)}`).join('\n') : '';
}

$('channels-form').addEventListener('submit', (event) => {
  event.preventDefault();
  listChannels().catch((e) => log(`listing failed: ${e.message}`));
});

// ----- actions -----

$('publish-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const channel = $('publish-channel').value;
  let data;
  try {
    data = JSON.parse($('publish-data').value);
  } catch (e) {
    $('publish-note').textContent = `not JSON: ${e.message}`;
    return;
  }
  try {
    const p = await api('/admin/publish', { channel, data });
    $('publish-note').textContent = `published on ${p.channel} at offset ${p.offset}`;
    log(`published a test message on ${p.channel} (offset ${p.offset})`);
    if (!$('channel-detail').hidden && $('channel-name').textContent === channel) await showChannel(channel);
  } catch (e) {
    $('publish-note').textContent = e.message;
  }
});

$('drain').addEventListener('click', async () => {
  if (!window.confirm('Drain this node? Its clients are advised to reconnect elsewhere, then closed 1012.')) return;
  try {
    await api('/admin/drain', {});
    log('drain started');
    await refresh();
  } catch (e) {
    log(`drain failed: ${e.message}`);
  }
});

$('logout').addEventListener('click', async () => {
  await fetch('/admin/logout', { method: 'POST', credentials: 'same-origin' });
  location.replace('/admin/');
});

// ----- start -----

draw();
refresh().catch((e) => log(`overview failed: ${e.message}`));
setInterval(() => refresh().catch((e) => log(`overview failed: ${e.message}`)), 2000);
listChannels().catch((e) => log(`listing failed: ${e.message}`));
startLive().catch((e) => log(`live feed failed: ${e.message}`));
