// The storefront in a real browser: Debian's chromium, headless, driven by playwright-core.
// The test starts its own slotd (ephemeral loopback port, temporary data folder) and its own
// storefront server (node server.js, ephemeral port), stops both by PID, and drives two buyers
// (two browser contexts, two cookies): buyer 1 holds the last units, extends, has a card
// declined, pays; buyer 2 then sees sold out; a hold of a short-ttl event expires on screen and
// is paid late (reacquire); a hold whose reply is lost (slotd stopped) is the same hold when
// tried again; slotd going away is shown as an error and "Try again" then holds.
// After each step the page is checked against slotd's own counters (check clean at the end),
// and a screenshot is written to $SLOT_ARTIFACTS (meson: the build folder) as NN-step.png.
//
//   SLOTD=build/slotd node --test-reporter=spec examples/storefront/test/browser.test.js

import { test as nodeTest, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { connect } from '../../../clients/node/src/index.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SLOTD = process.env.SLOTD;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = process.env.SLOT_ARTIFACTS || path.join(HERE, '..', 'storefront-artifacts');
/** The bound on any one wait of the test (a browser step, a server's first line). */
const WAIT_MS = 15000;
/** The short-ttl event's hold time (slotd's least hold_ttl_ms is 1000). */
const SHORT_TTL_MS = 3000;
const CARD_OK = '4242 4242 4242 4242';
const CARD_DECLINED = '4000 0000 0000 0002';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'storefront-test-'));
const procs = [];
let slotdProc; let slotdAddr; let shopUrl; let admin; let browser; let buyer1; let buyer2;
let shot = 0;
const shots = [];
/** Script errors of the pages (none may happen). */
const pageErrors = [];

/** Starts a program and resolves with the first stdout line that matches re (bounded). */
function startProc(cmd, args, re, name) {
  const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  procs.push(p);
  const log = fs.createWriteStream(path.join(tmp, `${name}.log`), { flags: 'a' });
  p.stderr.pipe(log);
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${name}: no "${re}" line in ${WAIT_MS} ms (log ${tmp}/${name}.log)`)), WAIT_MS);
    const rl = readline.createInterface({ input: p.stdout });
    rl.on('line', (line) => {
      log.write(line + '\n');
      const m = re.exec(line);
      if (m) {
        clearTimeout(t);
        resolve({ p, m });
      }
    });
    p.once('exit', (code, sig) => { clearTimeout(t); reject(new Error(`${name} exited (${code ?? sig}) before "${re}"; log ${tmp}/${name}.log`)); });
  });
}

async function stopProc(p, sig = 'SIGTERM') {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const done = new Promise((r) => p.once('exit', r));
  p.kill(sig);
  const t = setTimeout(() => p.kill('SIGKILL'), 5000);
  await done;
  clearTimeout(t);
}

async function startSlotd(listen) {
  const { p, m } = await startProc(SLOTD, ['--data', path.join(tmp, 'data'), '--listen', listen, '--durability', 'nosync'],
    /^listening on (\S+)$/, 'slotd');
  slotdProc = p;
  return m[1];
}

/** A screenshot of the page as NN-name.png, listed with what it should show. */
async function screenshot(page, name, shows) {
  assert.deepEqual(pageErrors, [], 'script errors on the page');
  shot += 1;
  const file = `${String(shot).padStart(2, '0')}-${name}.png`;
  await page.screenshot({ path: path.join(ARTIFACTS, file), fullPage: true });
  shots.push(`${file}: ${shows}`);
}

let failed = false;
/** A test whose failure leaves a screenshot of both pages and keeps the servers' logs. */
function test(name, fn) {
  nodeTest(name, async () => {
    try {
      await fn();
    } catch (err) {
      failed = true;
      for (const [who, page] of [['buyer1', buyer1], ['buyer2', buyer2]]) {
        if (page) await page.screenshot({ path: path.join(ARTIFACTS, `FAILED-${shot + 1}-${who}.png`), fullPage: true }).catch(() => {});
      }
      throw err;
    }
  });
}

const state = (page) => page.locator('#panel').getAttribute('data-state');
const waitState = (page, s) => page.waitForSelector(`#panel[data-state="${s}"]`, { timeout: WAIT_MS });
const text = (page, sel) => page.locator(sel).innerText();

/** Waits until the page's list shows `what` for the event (its list reloaded). */
const listShows = (page, event, what) => page.waitForFunction(([e, w]) => {
  const el = document.querySelector(`#events li[data-event="${e}"] .left`);
  return el !== null && el.textContent === w;
}, [event, what], { timeout: WAIT_MS });

async function openShop(ctx) {
  const page = await ctx.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (err) => pageErrors.push(err.message));
  await page.goto(shopUrl);
  await page.waitForSelector('#events li.event');
  return page;
}

async function pickAndHold(page, event, qty) {
  await page.click(`#events li.event[data-event="${event}"]`);
  await page.selectOption('#qty', String(qty));
  await page.click('#hold');
}

before(async () => {
  assert.ok(SLOTD, 'SLOTD: the slotd binary');
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  for (const f of fs.readdirSync(ARTIFACTS)) if (/^(\d\d|FAILED)-.*\.png$/.test(f)) fs.rmSync(path.join(ARTIFACTS, f));
  slotdAddr = await startSlotd('127.0.0.1:0');
  admin = await connect({ hosts: [slotdAddr], timeoutMs: 5000, retries: 20 });
  // gig: 2 units, both for buyer 1; flash: a short hold time, for the expiry
  await admin.createEvent({ event: 'gig', capacity: 2, shards: 2, max_per_request: 2 });
  await admin.createEvent({ event: 'flash', capacity: 4, shards: 1, hold_ttl_ms: SHORT_TTL_MS });
  // drop: 2 units with the default 10-minute holds, for the lost reply and slotd going away
  await admin.createEvent({ event: 'drop', capacity: 2, shards: 1 });
  const { m } = await startProc(process.execPath, [path.join(HERE, '..', 'server.js'), '--slotd', slotdAddr,
    '--listen', '127.0.0.1:0', '--event', 'gig', '--event', 'flash', '--event', 'drop', '--timeout-ms', '1000', '--retries', '3'],
  /^storefront listening on (http:\S+)$/, 'storefront');
  shopUrl = m[1];
  browser = await chromium.launch({ executablePath: CHROMIUM });
  const viewport = { width: 1040, height: 720 };
  buyer1 = await openShop(await browser.newContext({ viewport }));
  buyer2 = await openShop(await browser.newContext({ viewport }));
});

after(async () => {
  if (browser) await browser.close();
  if (admin) await admin.close();
  for (const p of procs.reverse()) await stopProc(p);
  fs.writeFileSync(path.join(ARTIFACTS, 'screenshots.txt'), shots.join('\n') + '\n');
  console.log(`storefront: screenshots in ${ARTIFACTS}:\n  ${shots.join('\n  ')}`);
  if (failed) console.log(`storefront: a step failed; the servers' logs are in ${tmp}`);
  else fs.rmSync(tmp, { recursive: true, force: true });
});

test('both buyers see the events with what is left', async () => {
  for (const page of [buyer1, buyer2]) {
    assert.match(await text(page, '#events li[data-event="gig"] .left'), /^2 of 2 left$/);
    assert.match(await text(page, '#events li[data-event="flash"] .left'), /^4 of 4 left$/);
  }
  // buyer 2 picks gig now, while it has units, and presses Hold only after buyer 1 paid
  await buyer2.click('#events li.event[data-event="gig"]');
  await screenshot(buyer1, 'events', 'the three events, 2 of 2, 4 of 4 and 2 of 2 left, gig picked');
});

test('buyer 1 holds the last 2 units and sees the countdown run', async () => {
  await pickAndHold(buyer1, 'gig', 2);
  await waitState(buyer1, 'held');
  assert.equal(await text(buyer1, '#held-what'), '2 tickets for gig');
  const first = await text(buyer1, '#countdown');
  assert.match(first, /^(10|\d):\d\d$/); // the default hold_ttl_ms: 10 min
  await buyer1.waitForFunction((t) => document.getElementById('countdown').textContent !== t, first, { timeout: WAIT_MS });
  const v = await admin.event({ event: 'gig' });
  assert.equal(v.held, 2);
  assert.equal(v.available, 0);
  await screenshot(buyer1, 'held', 'gig: 2 tickets held, the countdown running, Extend (1 left), the card form');
});

test('buyer 1 extends the hold once, then no more', async () => {
  const before = await text(buyer1, '#until');
  await buyer1.click('#extend');
  await buyer1.waitForFunction(() => document.getElementById('extend').textContent === 'No more extensions');
  assert.notEqual(await text(buyer1, '#until'), before);
  assert.ok(await buyer1.locator('#extend').isDisabled());
  const hold = await admin.request('check', { event: 'gig' });
  assert.deepEqual(hold.violations, []);
  await screenshot(buyer1, 'extended', 'the hold extended: a later "until", a longer countdown, no more extensions');
});

test('a declined card is shown and the hold stays', async () => {
  await buyer1.fill('#card', CARD_DECLINED);
  await buyer1.click('#pay');
  await buyer1.waitForSelector('#pay-msg:not([hidden])');
  assert.equal(await text(buyer1, '#pay-msg'), 'Payment failed: card declined.');
  assert.equal(await state(buyer1), 'held');
  const v = await admin.event({ event: 'gig' });
  assert.equal(v.held, 2);
  assert.equal(v.confirmed, 0);
  await screenshot(buyer1, 'declined', 'payment failed: card declined, the hold still counting down');
});

test('buyer 1 pays and the purchase is confirmed, once', async () => {
  await buyer1.fill('#card', CARD_OK);
  await buyer1.click('#pay');
  await waitState(buyer1, 'confirmed');
  assert.equal(await text(buyer1, '#ok-what'), '2 tickets for gig');
  assert.match(await text(buyer1, '#ok-card'), /4242, charged/);
  const v = await admin.event({ event: 'gig' });
  assert.equal(v.confirmed, 2);
  assert.equal(v.held, 0);
  await listShows(buyer1, 'gig', 'Sold out');
  await screenshot(buyer1, 'confirmed', 'paid: 2 tickets for gig, the hold id, card 4242; gig now sold out in the list');
});

test('buyer 2 holds after that and sees sold out', async () => {
  // the page still shows gig as it was when loaded (2 left): the hold is what says sold out
  assert.match(await text(buyer2, '#events li[data-event="gig"] .left'), /^2 of 2 left$/);
  await buyer2.click('#hold');
  await waitState(buyer2, 'sold_out');
  assert.equal(await text(buyer2, '#sold-text'), 'Every ticket for gig is taken. Nothing was charged.');
  await listShows(buyer2, 'gig', 'Sold out');
  assert.equal((await admin.event({ event: 'gig' })).confirmed, 2);
  await screenshot(buyer2, 'sold-out', 'buyer 2: sold out, nothing charged; gig marked sold out in the list');
});

test('a short hold expires on screen and the late payment gets the units again', async () => {
  await buyer2.click('#sold-text ~ button.again');
  await pickAndHold(buyer2, 'flash', 2);
  await waitState(buyer2, 'held');
  assert.match(await text(buyer2, '#countdown'), /^0:0[0-3]$/);
  await screenshot(buyer2, 'short-hold', `flash: 2 tickets held for ${SHORT_TTL_MS / 1000} s`);
  await waitState(buyer2, 'expired');
  assert.match(await text(buyer2, '#expired-text'), /^The 2 tickets for flash went back on sale at /);
  // the sweeper returns the units within --sweep-interval-ms (1 s) + 1 s of expires_at
  let v0;
  for (let i = 0; i < 50; i++) {
    v0 = await admin.event({ event: 'flash' });
    if (v0.held === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(v0.held, 0, 'the expired hold\'s units went back');
  assert.equal(v0.available, 4);
  await listShows(buyer2, 'flash', '4 of 4 left');
  await screenshot(buyer2, 'expired', 'flash: the hold expired, its 2 units back on sale (4 of 4 left), the late-payment form');

  await buyer2.fill('#late-card', CARD_DECLINED);
  await buyer2.click('#late-pay');
  await buyer2.waitForSelector('#late-msg:not([hidden])');
  assert.equal(await text(buyer2, '#late-msg'), 'Payment failed: card declined.');
  assert.equal(await state(buyer2), 'expired');
  assert.equal((await admin.event({ event: 'flash' })).confirmed, 0);
  await screenshot(buyer2, 'late-declined', 'the late payment declined: still expired, nothing bought');

  await buyer2.fill('#late-card', CARD_OK);
  await buyer2.click('#late-pay');
  await waitState(buyer2, 'confirmed');
  assert.equal(await text(buyer2, '#ok-what'), '2 tickets for flash');
  const replaces = await text(buyer2, '#ok-replaces');
  const m = /in place of the expired (\S+)$/.exec(replaces);
  assert.ok(m, replaces);
  const newHold = await text(buyer2, '#ok-hold');
  const old = await admin.getHold({ event: 'flash', hold: m[1] });
  assert.equal(old.status, 'expired');
  assert.equal(old.replaced_by, newHold);
  const v = await admin.event({ event: 'flash' });
  assert.equal(v.confirmed, 2);
  assert.equal(v.available, 2);
  await screenshot(buyer2, 'late-paid', 'paid late: 2 tickets for flash on a new hold in place of the expired one');
});

test('a hold whose reply was lost is the same hold when tried again (the attempt keeps its key)', async () => {
  await buyer1.click('[data-for="confirmed"] button.again');
  await listShows(buyer1, 'drop', '2 of 2 left');
  slotdProc.kill('SIGSTOP'); // the hold reaches slotd's socket; no reply comes
  try {
    await pickAndHold(buyer1, 'drop', 1);
    await buyer1.waitForSelector('#error:not([hidden])');
    assert.equal(await text(buyer1, '#error-title'), 'Error: unavailable');
  } finally {
    slotdProc.kill('SIGCONT');
  }
  // slotd now answers what was sent while it was stopped: the attempt's hold is made
  let v;
  for (let i = 0; i < 100; i++) {
    v = await admin.event({ event: 'drop' });
    if (v.held > 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(v.held, 1, 'the hold sent while slotd was stopped was made');
  await screenshot(buyer1, 'lost-reply', 'slotd stopped: the hold timed out, "Error: unavailable", Try again');
  await buyer1.click('#retry');
  await waitState(buyer1, 'held');
  v = await admin.event({ event: 'drop' });
  assert.equal(v.held, 1, 'Try again sent the same key: the same hold, not a second one');
  assert.equal(v.available, 1);
  await screenshot(buyer1, 'lost-reply-retried', 'Try again: the one hold (a replay), 1 ticket for drop held');
  await buyer1.setViewportSize({ width: 390, height: 844 }); // a phone: one column
  await screenshot(buyer1, 'narrow', 'the same page 390 px wide: the list above the purchase, nothing cut off');
});

test('slotd going away is shown plainly; Try again then holds with the same attempt', async () => {
  await buyer2.click('[data-for="confirmed"] button.again');
  await listShows(buyer2, 'drop', '1 of 2 left');
  await stopProc(slotdProc, 'SIGKILL');
  await pickAndHold(buyer2, 'drop', 1);
  await buyer2.waitForSelector('#error:not([hidden])');
  assert.equal(await text(buyer2, '#error-title'), 'Error: unavailable');
  assert.match(await text(buyer2, '#error-text'), /did not answer\. Nothing was charged\./);
  assert.ok(await buyer2.locator('#retry').isVisible());
  await screenshot(buyer2, 'error', 'slotd down: "Error: unavailable" in plain words, a Try again button');

  await startSlotd(slotdAddr); // the same port and data folder: slotd back
  await buyer2.click('#retry');
  await waitState(buyer2, 'held');
  assert.ok(await buyer2.locator('#error').isHidden());
  const v = await admin.event({ event: 'drop' });
  assert.equal(v.held, 2);
  assert.equal(v.available, 0);
  await listShows(buyer2, 'drop', 'Sold out');
  const c = await admin.request('check', {});
  assert.deepEqual(c.violations, []);
  await screenshot(buyer2, 'retried', 'slotd back: Try again held 1 ticket for drop, now sold out');
});
