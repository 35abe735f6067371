#!/usr/bin/env node
// Headless check of the admin web UI served by `belay serve` at /admin/.
//
//   ADMIN_TOKEN=… node scripts/check-admin-page.mjs http://127.0.0.1:PORT target/admin-page.png
//
// The server runs with --demo (a feed channel with history) and
// --admin-token $ADMIN_TOKEN. In Debian's chromium (override with
// CHROMIUM=/path): /admin/ answers the login form; a wrong token is refused
// on the page; the right one logs in (an HttpOnly, SameSite=Strict cookie).
// A second page of the same origin runs the Belay browser client as user
// "anonymous" on the feed. The console then shows this node serving, the live
// charts fed over its own Belay client (/admin/live: several samples, the
// connections chart drawn), the user's session with transport and codec,
// the feed channel with subscribers, history size and top offset; it
// publishes a test message (the second page receives it), disconnects the
// user (the second page's client is closed 4003 and halts; the lookup shows
// none), and drains the node (the page shows it, the server exits). The
// screenshots are decoded and checked (size; the chart's line colour is in
// the chart's screenshot). No request or WebSocket URL of either page holds
// the token, nor does the page's storage or document.cookie; no console
// error. Exits 0 on success, 1 on a failed check, 2 on bad usage. Bounded
// to 90 s overall.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { chromium } from 'playwright-core';

const OVERALL_MS = 90_000;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const TOKEN = process.env.ADMIN_TOKEN || '';
const ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

const [base, shot] = process.argv.slice(2);
if (!base || !shot || !/^https?:\/\//.test(base) || TOKEN.length < 16) {
  console.error('usage: ADMIN_TOKEN=<16+ chars> node scripts/check-admin-page.mjs BASE_URL SCREENSHOT.png');
  process.exit(2);
}
const baseUrl = base.replace(/\/+$/, '');
const t0 = Date.now();
const say = (msg) => console.log(`[check-admin-page +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);

let context = null;
let admin = null;
let userDataDir = null;
let finished = false;
const consoleErrors = [];
const urls = [];

async function cleanup() {
  if (context) await Promise.race([context.close().catch(() => {}), new Promise((r) => setTimeout(r, 5000))]);
  if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
}

async function fail(message) {
  if (finished) return;
  finished = true;
  console.error(`check-admin-page: FAILED: ${message}`);
  if (consoleErrors.length) console.error(`console errors so far:\n  ${consoleErrors.join('\n  ')}`);
  if (admin) await admin.screenshot({ path: shot }).then(() => console.error(`screenshot of the failure: ${shot}`), () => {});
  await cleanup();
  process.exit(1);
}
const overall = setTimeout(() => fail(`did not finish within ${OVERALL_MS / 1000} s`), OVERALL_MS);

function watch(page, name) {
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(`${name}: ${m.text()}`); });
  page.on('pageerror', (e) => consoleErrors.push(`${name}: uncaught: ${e.message}`));
  page.on('request', (r) => urls.push(r.url()));
  page.on('websocket', (ws) => urls.push(ws.url()));
}

async function waitFor(page, what, fn, arg, timeout = 10_000) {
  try {
    await page.waitForFunction(fn, arg, { timeout, polling: 100 });
  } catch {
    const seen = await page.evaluate(() => JSON.stringify({
      state: document.getElementById('state')?.textContent,
      live: window.belayAdmin?.live, samples: window.belayAdmin?.samples?.length,
      log: window.belayAdmin?.actions,
    })).catch(() => '(page not readable)');
    throw new Error(`${what} (waited ${timeout / 1000} s; page: ${seen})`);
  }
}

const text = (page, id) => page.evaluate((i) => document.getElementById(i)?.textContent ?? '', id);

// ----- PNG: decode 8-bit RGB(A), non-interlaced (what Chromium writes) -----

function decodePng(buffer) {
  if (buffer.readUInt32BE(0) !== 0x89504e47) throw new Error('a screenshot is not a PNG');
  let offset = 8;
  let width = 0, height = 0, channels = 0;
  const idat = [];
  while (offset < buffer.length) {
    const len = buffer.readUInt32BE(offset);
    const type = buffer.toString('ascii', offset + 4, offset + 8);
    const data = buffer.subarray(offset + 8, offset + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const [depth, colour, , , interlace] = [data[8], data[9], data[10], data[11], data[12]];
      if (depth !== 8 || interlace !== 0 || ![2, 6].includes(colour)) throw new Error(`unexpected PNG format (depth ${depth}, colour ${colour})`);
      channels = colour === 6 ? 4 : 3;
    } else if (type === 'IDAT') idat.push(data);
    offset += 12 + len;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[y * stride + x - channels] : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels] : 0;
      const p = a + b - c;
      const pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
      const paeth = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      const predictor = [0, a, b, (a + b) >> 1, paeth][filter];
      pixels[y * stride + x] = (line[x] + predictor) & 0xff;
    }
  }
  return { width, height, channels, pixels };
}

// Pixels within `tolerance` of [r, g, b].
function countColour(image, [r, g, b], tolerance = 40) {
  let n = 0;
  for (let i = 0; i < image.pixels.length; i += image.channels) {
    const d = Math.abs(image.pixels[i] - r) + Math.abs(image.pixels[i + 1] - g) + Math.abs(image.pixels[i + 2] - b);
    if (d <= tolerance) n++;
  }
  return n;
}

async function main() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM)`);
  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'belay-admin-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 1000 }, timeout: 20_000,
  });
  admin = context.pages()[0] || await context.newPage();
  watch(admin, 'admin');
  admin.on('dialog', (d) => d.accept());

  // 1. The login form, a wrong token, the right one.
  const first = await admin.goto(`${baseUrl}/admin/`, { waitUntil: 'load', timeout: 10_000 });
  if (first.status() !== 401 || !(await admin.locator('#login-form').count())) {
    throw new Error(`/admin/ without a login answered ${first.status()}, not the login form (401)`);
  }
  await admin.fill('#token', 'not-the-token-at-all');
  await admin.click('#login-form button');
  await waitFor(admin, 'a wrong token was not refused on the page',
    () => /^401/.test(document.getElementById('login-error')?.textContent ?? ''));
  say('login form: a wrong token is refused (401)');
  await admin.fill('#token', TOKEN);
  await Promise.all([admin.waitForURL(`${baseUrl}/admin/`, { timeout: 10_000 }), admin.click('#login-form button')]);
  await waitFor(admin, 'the console did not load after the login', () => !!document.getElementById('charts-placeholder') || !!window.belayAdmin);
  const cookies = await context.cookies(`${baseUrl}/admin/`);
  const cookie = cookies.find((c) => c.name === 'belay_admin');
  if (!cookie || !cookie.httpOnly || cookie.sameSite !== 'Strict' || cookie.path !== '/admin') {
    throw new Error(`the login cookie is not HttpOnly, SameSite=Strict, path /admin: ${JSON.stringify(cookie)}`);
  }
  if (cookie.value.includes(TOKEN)) throw new Error('the login cookie carries the token');
  say('logged in: HttpOnly SameSite=Strict cookie, not the token');

  // 2. The node, and the live feed over the Belay client.
  await waitFor(admin, 'the node is not shown serving', () => document.getElementById('state')?.textContent === 'serving');
  await waitFor(admin, 'the nodes table does not list this node serving',
    () => [...document.querySelectorAll('#nodes tbody tr')].some((r) => r.cells[1]?.textContent === 'serving'));
  await waitFor(admin, 'the live feed (Belay client on /admin/live) did not become live', () => window.belayAdmin?.live === 'live', null, 15_000);
  if (!(await admin.evaluate(() => window.belayAdmin.client?.constructor?.name))) throw new Error('the console has no BelayClient');

  // 3. A user on the feed, from a second page of the same origin.
  const user = await context.newPage();
  watch(user, 'user');
  await user.goto(`${baseUrl}/healthz`, { timeout: 10_000 });
  await user.evaluate(async () => {
    const { BelayClient } = await import('/belay.js');
    const got = (window.got = { pubs: [], closes: [] });
    const client = (window.userClient = new BelayClient(`ws://${location.host}/ws`));
    client.addEventListener('disconnected', (e) => got.closes.push(e.detail.reason?.close?.code ?? null));
    client.subscribe('feed').on((item) => { if (item.type === 'publication') got.pubs.push(item.data); });
  });
  await waitFor(user, 'the user page never got a feed publication', () => window.got.pubs.length >= 1, null, 10_000);
  say('user page: the Belay client is on the feed as "anonymous"');

  await waitFor(admin, 'the live samples did not reach 4 with a connection counted',
    () => window.belayAdmin.livePublications >= 3 && window.belayAdmin.samples.at(-1)?.connections >= 1, null, 15_000);
  await waitFor(admin, 'deliveries/s never rose above 0', () => window.belayAdmin.samples.some((s) => s.deliveries_per_s > 0), null, 10_000);
  say(`live charts: ${await admin.evaluate(() => window.belayAdmin.samples.length)} samples, ${await admin.evaluate(() => window.belayAdmin.livePublications)} over the Belay client`);

  // 4. Lookup by user: session, transport, codec.
  await admin.fill('#user', 'anonymous');
  await admin.click('#user-form button');
  await waitFor(admin, 'the lookup did not show the user\'s websocket/json session',
    () => (window.belayAdmin.sessions ?? []).some((s) => s.transport === 'websocket' && s.codec === 'json' && s.session));
  say(`lookup: ${await text(admin, 'sessions-note')}`);

  // 5. Channels: the feed with its subscriber, history and top offset.
  await admin.click('#channels-form button');
  await waitFor(admin, 'the channel list does not show the feed with a subscriber',
    () => (window.belayAdmin.channels ?? []).some((c) => c.channel === 'feed' && c.subscribers >= 1));
  await admin.locator('#channels tbody tr', { hasText: 'feed' }).first().click();
  await waitFor(admin, 'the feed\'s detail has no history size and top offset',
    () => window.belayAdmin.channel?.channel === 'feed' && window.belayAdmin.channel.history.size >= 1
      && window.belayAdmin.channel.history.top_offset >= 1 && Number(document.getElementById('channel-top').textContent) >= 1);
  say(`channel feed: ${await text(admin, 'channel-history')}, top offset ${await text(admin, 'channel-top')}, ${await text(admin, 'channel-subscribers')} subscriber(s)`);

  // 6. Publish a test message: the user's page receives it.
  await admin.fill('#publish-channel', 'feed');
  await admin.fill('#publish-data', '{"admin_test": 42}');
  await admin.click('#publish-form button');
  await waitFor(admin, 'the publish was not confirmed', () => /^published on feed at offset \d+$/.test(document.getElementById('publish-note').textContent));
  await waitFor(user, 'the user page did not receive the test message', () => window.got.pubs.some((d) => d && d.admin_test === 42));
  say(`publish: ${await text(admin, 'publish-note')}; the user page received it`);

  // Screenshots, checked: the whole console, and the connections chart.
  await admin.screenshot({ path: shot, fullPage: true });
  const page = decodePng(fs.readFileSync(shot));
  if (page.width < 1000 || page.height < 600) throw new Error(`the screenshot is ${page.width}x${page.height}`);
  const chartShot = shot.replace(/\.png$/, '') + '-chart.png';
  await admin.locator('#chart-connections').screenshot({ path: chartShot });
  const chart = decodePng(fs.readFileSync(chartShot));
  const line = countColour(chart, [0x24, 0x56, 0xc9]);
  if (line < 30) throw new Error(`the connections chart's screenshot has ${line} pixels of its line colour`);
  const green = countColour(page, [0x16, 0x79, 0x4a]);
  if (green < 30) throw new Error(`the console's screenshot has ${green} pixels of the serving/deliveries green`);
  say(`screenshots: ${shot} ${page.width}x${page.height}; chart line ${line} px, green ${green} px`);

  // 7. Disconnect the user: closed 4003, the client halts, none left.
  await admin.click('#disconnect');
  await waitFor(user, 'the user\'s client was not closed 4003', () => window.got.closes.includes(4003));
  await waitFor(user, 'the user\'s client did not halt after 4003', () => window.userClient.status.state === 'halted');
  await waitFor(admin, 'the lookup still shows the user\'s sessions', () => (window.belayAdmin.sessions ?? [1]).length === 0);
  say('disconnect: the user was closed 4003 and halted; the lookup shows none');

  // No credential in a URL, in storage, or readable by scripts.
  const leaks = urls.filter((u) => u.includes(TOKEN));
  if (leaks.length) throw new Error(`the token is in URL(s): ${leaks.join(', ')}`);
  const held = await admin.evaluate((t) => [document.cookie, JSON.stringify(localStorage), JSON.stringify(sessionStorage)].some((s) => s.includes(t) || s.includes('belay_admin')), TOKEN);
  if (held) throw new Error('the token or the login cookie is readable by the page (document.cookie or storage)');
  say(`no credential in ${urls.length} request/WebSocket URLs, storage or document.cookie`);

  // 8. Drain the node from the console.
  await admin.click('#drain');
  await waitFor(admin, 'the console did not log the drain', () => window.belayAdmin.actions.includes('drain started'));
  const ready = await fetch(`${baseUrl}/readyz`).then((r) => r.status, () => 'gone');
  if (ready === 200) throw new Error('/readyz still answers 200 after the drain');
  say(`drain: started from the console; /readyz now ${ready}`);

  const errors = consoleErrors.filter((e) => !/WebSocket|ERR_CONNECTION_REFUSED|Failed to load resource/.test(e));
  if (errors.length) throw new Error(`${errors.length} console error(s):\n  ${errors.join('\n  ')}`);
}

main().then(async () => {
  if (finished) return;
  finished = true;
  clearTimeout(overall);
  await cleanup();
  say('admin page OK');
  process.exit(0);
}, (e) => fail(e && e.message ? e.message : String(e)));
