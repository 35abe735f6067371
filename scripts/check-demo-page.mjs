#!/usr/bin/env node
// Headless check of the demo page served by `belay serve --demo`.
//
//   node scripts/check-demo-page.mjs http://127.0.0.1:PORT /tmp/demo.png
//
// Opens the page in Debian's chromium (override with CHROMIUM=/path), checks
// that its client is the Belay browser client (/belay.js, built from
// clients/js), waits for it to be ready and to receive feed publications,
// sends an echo request with the page's button, toggles "Service down" on and
// off and watches the client's service level follow (screenshot during the
// fault: SCREENSHOT with "-fault" before .png), checks the header's connection
// count, fails on any console error, and saves a screenshot. Exits 0 on success, 1 on a failed check, 2 on bad usage.
// Needs `npm ci` in scripts/ (playwright-core). Bounded to 60 s overall.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const OVERALL_MS = 60_000;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

const [base, shot] = process.argv.slice(2);
if (!base || !shot || !/^https?:\/\//.test(base)) {
  console.error('usage: node scripts/check-demo-page.mjs BASE_URL SCREENSHOT.png   (e.g. http://127.0.0.1:8080 /tmp/demo.png)');
  process.exit(2);
}
const baseUrl = base.replace(/\/+$/, '');
const t0 = Date.now();
const say = (msg) => console.log(`[check-demo-page +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);

let context = null;
let page = null;
let userDataDir = null;
let serviceDownOn = false;
let freezeOn = false;
let finished = false;
const consoleErrors = [];

function withTimeout(promise, ms) {
  return Promise.race([promise, new Promise((resolve) => setTimeout(resolve, ms))]);
}

async function cleanup() {
  // leave the server as we found it
  for (const [on, fault] of [[serviceDownOn, 'service_down'], [freezeOn, 'freeze']]) {
    if (!on) continue;
    await withTimeout(fetch(`${baseUrl}/admin/fault/${fault}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"on":false}',
    }).catch(() => {}), 2000);
  }
  if (context) await withTimeout(context.close().catch(() => {}), 5000);
  if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
}

async function fail(message) {
  if (finished) return;
  finished = true;
  console.error(`check-demo-page: FAILED: ${message}`);
  if (consoleErrors.length) console.error(`console errors so far:\n  ${consoleErrors.join('\n  ')}`);
  if (page) {
    const saved = await withTimeout(page.screenshot({ path: shot }).then(() => true).catch(() => false), 5000);
    if (saved) console.error(`screenshot of the failure: ${shot}`);
  }
  await cleanup();
  process.exit(1);
}

const overall = setTimeout(() => fail(`did not finish within ${OVERALL_MS / 1000} s`), OVERALL_MS);

// Wait until fn(arg) is truthy in the page; fail with `what` otherwise.
async function waitFor(what, fn, arg, timeout) {
  try {
    await page.waitForFunction(fn, arg, { timeout, polling: 100 });
  } catch {
    const view = await page.evaluate(() => {
      const t = (id) => document.getElementById(id)?.textContent ?? '(missing)';
      return `transport=${t('cv-transport')} protocol=${t('cv-protocol')} service=${t('cv-service')} ready=${t('cv-ready')} `
        + `state="${t('cv-phase')}" pubs=${t('cv-pubs')} server=${t('server-status')} conns=${t('conn-count')}`;
    }).catch(() => '(page not readable)');
    throw new Error(`${what} (waited ${timeout / 1000} s; page shows: ${view})`);
  }
}

const text = (id) => page.evaluate((i) => document.getElementById(i)?.textContent ?? '', id);
const level = (id) => page.evaluate((i) => document.getElementById(i)?.dataset.up, id);

async function main() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM)`);
  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'belay-demo-chromium-'));
  say(`launching ${CHROMIUM}`);
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 800 },
    timeout: 20_000,
  });
  page = context.pages()[0] || await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') {
      const loc = m.location();
      consoleErrors.push(`${m.text()}${loc && loc.url ? ` (${loc.url}:${loc.lineNumber})` : ''}`);
    }
  });
  page.on('pageerror', (e) => consoleErrors.push(`uncaught: ${e.message}`));

  say(`opening ${baseUrl}/`);
  const res = await page.goto(`${baseUrl}/`, { waitUntil: 'load', timeout: 10_000 });
  if (!res || !res.ok()) throw new Error(`GET / answered ${res ? res.status() : 'nothing'}`);

  if ((await text('cv-mode')) !== 'Belay client') throw new Error(`the page's client is "${await text('cv-mode')}", not the Belay client`);
  if (!(await page.evaluate(() => window.belayDemo?.client?.handle?.client?.constructor?.name))) {
    throw new Error('the page has no BelayClient instance');
  }
  await waitFor('the demo client never became ready',
    () => document.getElementById('cv-ready')?.dataset.up === 'true', null, 15_000);
  say('client view: ready');
  await waitFor('fewer than 2 feed publications arrived',
    () => Number(document.getElementById('cv-pubs')?.textContent) >= 2, null, 10_000);
  say(`client view: ${await text('cv-pubs')} publications, last offset ${await text('cv-offset')}`);

  await waitFor('the header connection count is not >= 1',
    () => Number(document.getElementById('conn-count')?.textContent) >= 1, null, 5_000);
  say(`header: ${await text('conn-count')} connection(s), server ${await text('server-status')}`);

  await page.getByRole('button', { name: 'Send echo request', exact: true }).click({ timeout: 5_000 });
  await waitFor('the echo request did not come back ok',
    () => /^ok in \d+ ms$/.test(document.getElementById('cv-echo')?.textContent ?? ''), null, 5_000);
  say(`echo request: ${await text('cv-echo')}`);

  const button = page.getByRole('button', { name: 'Service down', exact: true });
  if (await button.getAttribute('aria-pressed') !== 'false') throw new Error('"Service down" is not an unpressed toggle (aria-pressed) at start');
  await button.click({ timeout: 5_000 });
  serviceDownOn = true;
  await waitFor('"Service down" did not turn on (aria-pressed)',
    () => document.querySelector('button[data-fault="service_down"]')?.getAttribute('aria-pressed') === 'true', null, 5_000);
  await waitFor('the client view did not show the service level down',
    () => document.getElementById('cv-service')?.dataset.up === 'false', null, 10_000);
  if (await level('cv-transport') !== 'true' || await level('cv-protocol') !== 'true') {
    throw new Error('Service down also took the transport or protocol level down');
  }
  say('service down: client view shows service down, transport and protocol still up');
  await page.waitForTimeout(1500);
  const faultShot = shot.replace(/\.png$/, '') + '-fault.png';
  await page.screenshot({ path: faultShot });
  say(`screenshot during the fault: ${faultShot}`);
  const pubsBefore = Number(await text('cv-pubs'));

  await button.click({ timeout: 5_000 });
  await waitFor('"Service down" did not turn off (aria-pressed)',
    () => document.querySelector('button[data-fault="service_down"]')?.getAttribute('aria-pressed') === 'false', null, 5_000);
  serviceDownOn = false;
  await waitFor('the client view did not show the service level up again',
    () => document.getElementById('cv-service')?.dataset.up === 'true'
      && document.getElementById('cv-ready')?.dataset.up === 'true', null, 15_000);
  await waitFor('no publication arrived after the service came back',
    (n) => Number(document.getElementById('cv-pubs')?.textContent) > n, pubsBefore, 5_000);
  say(`service back: ready, ${await text('cv-pubs')} publications, resyncs ${await text('cv-resyncs')}, `
    + `${await text('cv-dials')} connection attempt(s)`);
  if (await text('cv-dials') !== '1') throw new Error(`service down made the client reconnect (${await text('cv-dials')} attempts)`);

  await waitFor('the header connection count is not >= 1 after the service returned',
    () => Number(document.getElementById('conn-count')?.textContent) >= 1, null, 5_000);

  // Freeze: the demo server pings every second, so its silence is noticed
  // in about 2 s (two intervals); 5 s is the bound, generous under load.
  const freeze = page.getByRole('button', { name: 'Freeze', exact: true });
  const frozeAt = Date.now();
  await freeze.click({ timeout: 5_000 });
  freezeOn = true;
  await waitFor('the page did not notice the frozen server within 5 s',
    () => document.getElementById('cv-protocol')?.dataset.up === 'false', null, 5_000);
  say(`freeze: the page noticed the silent server after ${((Date.now() - frozeAt) / 1000).toFixed(1)} s`);
  await freeze.click({ timeout: 5_000 });
  await waitFor('"Freeze" did not turn off (aria-pressed)',
    () => document.querySelector('button[data-fault="freeze"]')?.getAttribute('aria-pressed') === 'false', null, 5_000);
  freezeOn = false;
  await waitFor('the client was not ready again after the freeze',
    () => document.getElementById('cv-ready')?.dataset.up === 'true', null, 15_000);
  say('freeze off: ready again');
  await page.waitForTimeout(1200); // one more chart redraw and poll for the picture
  await page.screenshot({ path: shot });
  say(`screenshot: ${shot}`);

  if (consoleErrors.length) throw new Error(`${consoleErrors.length} console error(s):\n  ${consoleErrors.join('\n  ')}`);
}

main().then(async () => {
  if (finished) return;
  finished = true;
  clearTimeout(overall);
  await cleanup();
  say('demo page OK');
  process.exit(0);
}, (e) => fail(e && e.message ? e.message : String(e)));
