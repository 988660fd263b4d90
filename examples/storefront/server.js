#!/usr/bin/env node
// The storefront: a small shop in front of slotd (node:http, no framework, the Node client).
//
// It serves one page (public/) and a JSON API the page calls. The buyer is a random id kept in
// a cookie; each purchase attempt (one event and quantity, from "Hold" to paid or given up) has
// an idempotency key of its own, kept here, that every hold of the attempt sends: a page that
// resends a hold after a lost reply gets the same hold back (replay), never a second one.
// Payment is a fake gateway: an authorisation that a card number decides, captured once the
// confirm is in, voided when the units could not be had (the buyer is never charged for
// nothing). The expired path offers the late payment, confirm with reacquire (docs/protocol.md,
// "Reacquire").
//
//   node server.js --slotd 127.0.0.1:7420 --event gig [--listen 127.0.0.1:8080]
//
// The first line on stdout is "storefront listening on http://HOST:PORT". README.md has more.

import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { connect, SlotError } from '../../clients/node/src/index.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Bounds of this server, each with its reason. */
const LIMITS = Object.freeze({
  /** largest JSON body the page sends (a card number and an attempt id fit many times over) */
  bodyBytesMax: 16 * 1024,
  /** purchase attempts kept; the oldest is dropped past this (a page still using it gets
   * "unknown attempt" and starts over; the hold it had expires in slotd on its own) */
  attemptsMax: 10000,
  /** events listed on the page */
  eventsMax: 64,
  /** longest wait for one slotd call before the page is told the service is unavailable */
  slotdTimeoutMs: 5000,
  /** slotd resends per call (the client's bounded backoff between them) */
  slotdRetries: 8,
  /** open HTTP connections; more are refused until some close (each may hold a slotd call) */
  connectionsMax: 4096,
  /** highest quantity the page offers, whatever the event allows */
  qtyMax: 10,
});

const USAGE = `usage: node server.js --slotd HOST:PORT [--slotd HOST:PORT ...] [options]

The storefront of slotd: one page (hold, countdown, extend, pay, late payment) and its JSON API.

options:
  --slotd HOST:PORT     a slotd to talk to; give every member of a replica set (repeatable)
  --listen HOST:PORT    where to serve the page (default 127.0.0.1:8080; port 0 picks a free one,
                        printed as "storefront listening on http://HOST:PORT")
  --event NAME          an event to sell (repeatable, at most ${LIMITS.eventsMax})
  --create NAME:CAPACITY[:HOLD_TTL_MS]
                        create that event first (needs an admin token, or slotd without tokens),
                        and sell it
  --token-file FILE     the slotd token, the file's first line ("frontend TOKEN" or "TOKEN");
                        the environment's SLOTD_TOKEN is used otherwise
  --timeout-ms MS       how long one slotd call may take before it is resent (default ${LIMITS.slotdTimeoutMs})
  --retries N           resends per slotd call (default ${LIMITS.slotdRetries})
  --help                this text
`;

/**
 * Reads the command line.
 * @param {string[]} argv the arguments after the script
 * @returns {{hosts: string[], listen: {host: string, port: number}, events: string[],
 *   create: {event: string, capacity: number, hold_ttl_ms?: number}[], token?: string,
 *   timeoutMs: number, retries: number}}
 * @throws {Error} a usage error, its message naming the flag
 */
export function parseArgs(argv) {
  const o = { hosts: [], listen: { host: '127.0.0.1', port: 8080 }, events: [], create: [],
    token: process.env.SLOTD_TOKEN || undefined, timeoutMs: LIMITS.slotdTimeoutMs, retries: LIMITS.slotdRetries };
  const int = (v, lo, hi, flag) => {
    if (!/^\d+$/.test(v ?? '') || Number(v) < lo || Number(v) > hi) throw new Error(`${flag}: an integer in ${lo}..${hi}`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) throw new Error(`${flag}: needs a value`);
      return argv[++i];
    };
    if (flag === '--slotd') o.hosts.push(val());
    else if (flag === '--listen') {
      const m = /^(.+):(\d+)$/.exec(val());
      if (!m) throw new Error('--listen: HOST:PORT');
      o.listen = { host: m[1], port: int(m[2], 0, 65535, '--listen') };
    } else if (flag === '--event') o.events.push(val());
    else if (flag === '--create') {
      const [event, cap, ttl] = val().split(':');
      const c = { event, capacity: int(cap, 0, 2 ** 40, '--create CAPACITY') };
      if (ttl !== undefined) c.hold_ttl_ms = int(ttl, 1000, 86400000, '--create HOLD_TTL_MS');
      o.create.push(c);
      o.events.push(event);
    } else if (flag === '--token-file') {
      const first = fs.readFileSync(val(), 'utf8').split('\n')[0].trim().split(/\s+/);
      o.token = first[first.length - 1];
    } else if (flag === '--timeout-ms') o.timeoutMs = int(val(), 1, 3600000, flag);
    else if (flag === '--retries') o.retries = int(val(), 0, 1000, flag);
    else if (flag === '--help') throw Object.assign(new Error(USAGE), { help: true });
    else throw new Error(`unknown flag ${flag}`);
  }
  if (o.hosts.length === 0) throw new Error('--slotd: at least one is needed');
  o.events = [...new Set(o.events)];
  if (o.events.length === 0) throw new Error('--event or --create: at least one event to sell');
  if (o.events.length > LIMITS.eventsMax) throw new Error(`--event: at most ${LIMITS.eventsMax}`);
  for (const e of o.events) if (!/^[A-Za-z0-9._:-]{1,64}$/.test(e)) throw new Error(`--event ${e}: 1-64 bytes of [A-Za-z0-9._:-]`);
  return o;
}

// ---------------------------------------------------------------------------------------------
// The fake payment gateway. Card numbers are Stripe's well-known test numbers: 4242 4242 4242
// 4242 pays; 4000 0000 0000 0002 is declined; 4000 0000 0000 9995 has insufficient funds; any
// other 16 digits that pass the Luhn check pay; anything else is an invalid card number.

const DECLINED = new Map([
  ['4000000000000002', 'card declined'],
  ['4000000000009995', 'insufficient funds'],
]);

/** @param {string} digits @returns {boolean} the Luhn check */
function luhn(digits) {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
}

/**
 * Authorises a payment (money reserved, not taken).
 * @param {unknown} card the card number as typed (spaces and dashes allowed)
 * @returns {{ok: true, auth: string, last4: string} | {ok: false, reason: string}}
 */
function authorize(card) {
  const digits = typeof card === 'string' ? card.replace(/[\s-]/g, '') : '';
  if (!/^\d{16}$/.test(digits) || !luhn(digits)) return { ok: false, reason: 'invalid card number' };
  const why = DECLINED.get(digits);
  if (why) return { ok: false, reason: why };
  return { ok: true, auth: 'auth_' + randomBytes(6).toString('hex'), last4: digits.slice(-4) };
}

// ---------------------------------------------------------------------------------------------
// Purchase attempts: one per (buyer, attempt id the page chose). The state the page is shown.

/**
 * @typedef {object} Attempt
 * @property {string} id the page's attempt id
 * @property {string} user the buyer (slotd's `user`)
 * @property {string} key the idempotency key (slotd's `request`) every hold of this attempt sends
 * @property {string} event
 * @property {number} qty
 * @property {string} state new | held | sold_out | confirmed | expired | released | cancelled
 * @property {string|null} hold the hold id
 * @property {number|null} expires_at server clock, ms since the epoch
 * @property {number} extensions extensions used
 * @property {string|null} replaces the expired hold a late payment replaced
 * @property {{auth: string, last4: string, state: string}|null} charge the payment: captured once
 *   confirmed, voided when the units could not be had
 * @property {Promise<void>} busy the chain that runs this attempt's steps one at a time
 */

/** Attempts by `${user}/${id}`, in insertion order (a Map), at most LIMITS.attemptsMax. */
const attempts = new Map();

/** @returns {Attempt} the attempt, made when new; a reused id must name the same purchase */
function attemptFor(user, id, event, qty) {
  const k = `${user}/${id}`;
  let a = attempts.get(k);
  if (a) {
    if (a.event !== event || a.qty !== qty) throw httpError(409, 'attempt_mismatch', 'this purchase attempt was for another event or quantity; start a new one');
    return a;
  }
  if (attempts.size >= LIMITS.attemptsMax) attempts.delete(attempts.keys().next().value);
  a = { id, user, key: 'sf-' + randomBytes(12).toString('hex'), event, qty, state: 'new', hold: null,
    expires_at: null, extensions: 0, replaces: null, charge: null, busy: Promise.resolve() };
  attempts.set(k, a);
  return a;
}

/** @returns {Attempt} the buyer's attempt @throws 404 when it is not (or no longer) known */
function attemptOf(user, id) {
  const a = typeof id === 'string' ? attempts.get(`${user}/${id}`) : undefined;
  if (!a) throw httpError(404, 'unknown_attempt', 'this purchase attempt is not known (any more); start again');
  return a;
}

/** Runs fn with the attempt to itself (a double click pays once). */
function serialized(a, fn) {
  const run = a.busy.then(fn, fn);
  a.busy = run.then(() => {}, () => {});
  return run;
}

/** What the page is told about an attempt. */
function view(a, extra = {}) {
  return {
    attempt: a.id, event: a.event, qty: a.qty, state: a.state, hold: a.hold, expires_at: a.expires_at,
    // The countdown runs on the page's own clock from this: the page's clock may be off, this
    // server's is the one beside slotd (the same in a small deployment, NTP-close otherwise).
    remaining_ms: a.expires_at === null ? null : Math.max(0, a.expires_at - Date.now()),
    extensions: a.extensions, replaces: a.replaces,
    paid: a.charge && a.charge.state === 'captured' ? { last4: a.charge.last4, auth: a.charge.auth } : null,
    ...extra,
  };
}

function httpError(status, error, message, extra = {}) {
  return Object.assign(new Error(message), { status, body: { ok: false, error, message, ...extra } });
}

/** The HTTP status of a slotd error code (the page reads the body's `error`). */
function statusOf(code) {
  if (code === 'unavailable' || code === 'overloaded' || code === 'shutting_down' || code === 'storage_full') return 503;
  if (code === 'internal') return 502;
  if (code === 'unknown_event' || code === 'unknown_hold') return 404;
  if (code === 'invalid_argument') return 400;
  return 409;
}

/** Plain words for the slotd errors a buyer can meet. */
const WORDS = {
  unavailable: 'The ticket service did not answer. Nothing was charged. Try again: tickets already held for you are not held twice.',
  overloaded: 'The ticket service is too busy right now. Nothing was bought; try again in a moment.',
  shutting_down: 'The ticket service is restarting. Nothing was bought; try again in a moment.',
  not_on_sale: 'This event is not on sale right now.',
  user_limit: 'You already hold or bought as many tickets for this event as one buyer may.',
  extend_limit: 'This hold cannot be extended any further.',
  unknown_event: 'There is no such event.',
  idempotency_conflict: 'This purchase attempt was already used for another quantity; start again.',
};

/** Turns a slotd error into the page's error reply. */
function fromSlot(err) {
  if (!(err instanceof SlotError)) throw err;
  const r = err.reply || {};
  const words = err.code === 'hold_not_active' && r.status ? `This hold is ${r.status}.` : WORDS[err.code];
  return httpError(statusOf(err.code), err.code, words || r.message || err.message,
    r.status !== undefined ? { status: r.status } : {});
}

// ---------------------------------------------------------------------------------------------
// The routes.

/**
 * Makes the storefront's request handler.
 * @param {{client: () => Promise<import('../../clients/node/src/index.js').Client>, events: string[]}} ctx
 * @returns {(req: http.IncomingMessage, res: http.ServerResponse) => void}
 */
export function handler(ctx) {
  const slot = async (fn) => {
    const c = await ctx.client();
    try {
      return await fn(c);
    } catch (err) {
      throw fromSlot(err);
    }
  };
  const eventView = async (event) => slot((c) => c.event({ event }));

  const api = {
    'GET /api/events': async () => {
      const out = [];
      for (const event of ctx.events) {
        try {
          const v = await eventView(event);
          out.push({ event, status: v.status, capacity: v.capacity, available: v.available,
            max_per_request: v.max_per_request, max_per_user: v.max_per_user, hold_ttl_ms: v.hold_ttl_ms,
            max_extensions: v.max_extensions, qty_max: Math.min(LIMITS.qtyMax, v.max_per_request,
              v.max_per_user > 0 ? v.max_per_user : LIMITS.qtyMax) });
        } catch (err) {
          if (!err.body) throw err;
          if (err.body.error !== 'unknown_event') throw err;
          out.push({ event, error: err.body.error, message: err.body.message });
        }
      }
      return { events: out };
    },

    // Hold (or, for an attempt the page already sent, the same hold again: its key is kept).
    'POST /api/hold': async (user, b) => {
      if (typeof b.event !== 'string' || !ctx.events.includes(b.event)) throw httpError(404, 'unknown_event', 'There is no such event here.');
      if (!Number.isInteger(b.qty) || b.qty < 1 || b.qty > LIMITS.qtyMax) throw httpError(400, 'invalid_argument', `Pick a quantity of 1 to ${LIMITS.qtyMax}.`);
      if (typeof b.attempt !== 'string' || !/^[A-Za-z0-9-]{8,64}$/.test(b.attempt)) throw httpError(400, 'invalid_argument', 'attempt: 8-64 of [A-Za-z0-9-]');
      const a = attemptFor(user, b.attempt, b.event, b.qty);
      return serialized(a, async () => {
        if (a.state !== 'new' && a.state !== 'sold_out') return view(a, { replay: true });
        const r = await slot((c) => c.hold({ event: a.event, user, qty: a.qty, request: a.key }));
        if (r.status === 'sold_out') {
          a.state = 'sold_out';
          return view(a, { available: r.available });
        }
        a.hold = r.hold;
        a.expires_at = r.expires_at;
        a.state = r.status; // held, or on a replay its current status
        return view(a, { replay: r.replay === true });
      });
    },

    'GET /api/attempt': async (user, b, q) => {
      const a = attemptOf(user, q.get('attempt'));
      return serialized(a, async () => {
        if (a.hold !== null && a.replaces === null) {
          const r = await slot((c) => c.getHold({ event: a.event, hold: a.hold, user }));
          a.state = r.status;
          if (typeof r.expires_at === 'number') a.expires_at = r.expires_at;
        }
        return view(a);
      });
    },

    'POST /api/extend': async (user, b) => {
      const a = attemptOf(user, b.attempt);
      return serialized(a, async () => {
        if (a.state !== 'held') throw httpError(409, 'hold_not_active', 'This hold is not active any more.', { status: a.state });
        const ev = await eventView(a.event);
        // by half the hold's ttl: max_hold_ms (default 2 x ttl) leaves room for it
        const by_ms = Math.max(1000, Math.floor(ev.hold_ttl_ms / 2));
        try {
          const r = await slot((c) => c.extend({ event: a.event, hold: a.hold, user, by_ms }));
          a.expires_at = r.expires_at;
          a.extensions = r.extensions;
        } catch (err) {
          if (err.body && err.body.error === 'hold_not_active') a.state = err.body.status || 'expired';
          throw err;
        }
        return view(a, { max_extensions: ev.max_extensions, extended_by_ms: by_ms });
      });
    },

    'POST /api/release': async (user, b) => {
      const a = attemptOf(user, b.attempt);
      return serialized(a, async () => {
        if (a.hold === null) return view(a);
        const r = await slot((c) => c.release({ event: a.event, hold: a.hold, user }));
        a.state = r.status;
        return view(a);
      });
    },

    // Pay for a held hold: authorise, confirm, capture (void when the confirm could not be made).
    'POST /api/pay': async (user, b) => {
      const a = attemptOf(user, b.attempt);
      return serialized(a, async () => {
        if (a.state === 'confirmed') return view(a, { replay: true });
        if (a.state !== 'held') throw httpError(409, 'hold_not_active', 'This hold is not active any more.', { status: a.state });
        const pay = authorize(b.card);
        if (!pay.ok) return view(a, { payment: { ok: false, reason: pay.reason } });
        a.charge = { auth: pay.auth, last4: pay.last4, state: 'authorized' };
        let r;
        try {
          r = await slot((c) => c.confirm({ event: a.event, hold: a.hold, user }));
        } catch (err) {
          a.charge.state = 'voided';
          if (err.body && err.body.error === 'hold_not_active') {
            a.state = err.body.status || 'expired';
            return view(a, { payment: { ok: false, voided: true, reason: `your hold is ${a.state}; the card was not charged` } });
          }
          throw err; // unknown outcome: the page may pay again, the confirm is idempotent
        }
        a.state = r.status;
        a.charge.state = 'captured';
        return view(a, { payment: { ok: true } });
      });
    },

    // The late payment: the hold expired (or was released); try to get the units again.
    'POST /api/late-pay': async (user, b) => {
      const a = attemptOf(user, b.attempt);
      return serialized(a, async () => {
        if (a.state === 'confirmed') return view(a, { replay: true });
        if (a.state !== 'expired' && a.state !== 'released') throw httpError(409, 'hold_not_active', `A late payment is for an expired hold; this one is ${a.state}.`, { status: a.state });
        const pay = authorize(b.card);
        if (!pay.ok) return view(a, { payment: { ok: false, reason: pay.reason } });
        a.charge = { auth: pay.auth, last4: pay.last4, state: 'authorized' };
        let r;
        try {
          r = await slot((c) => c.confirm({ event: a.event, hold: a.hold, user, qty: a.qty, reacquire: true }));
        } catch (err) {
          a.charge.state = 'voided';
          if (err.body && err.body.error === 'hold_not_active') a.state = err.body.status || a.state;
          throw err;
        }
        if (r.status === 'sold_out') {
          a.charge.state = 'voided';
          return view(a, { payment: { ok: false, voided: true, reason: 'sold out meanwhile; the card was not charged' }, available: r.available });
        }
        a.replaces = r.replaces ?? a.hold;
        a.hold = r.hold;
        a.expires_at = null;
        a.state = r.status;
        a.charge.state = 'captured';
        return view(a, { payment: { ok: true } });
      });
    },
  };

  return (req, res) => {
    route(req, res, api).catch((err) => {
      const status = err.status || 500;
      const body = err.body || { ok: false, error: 'internal', message: 'The storefront failed; nothing was bought.' };
      if (!err.status) console.error(`storefront: ${req.method} ${req.url}: ${err.stack || err}`);
      send(res, status, body);
    });
  };
}

const STATIC = {
  '/': ['index.html', 'text/html; charset=utf-8'],
  '/app.js': ['app.js', 'text/javascript; charset=utf-8'],
  '/style.css': ['style.css', 'text/css; charset=utf-8'],
};

function send(res, status, body, type = 'application/json; charset=utf-8') {
  if (res.headersSent) return res.end();
  const data = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "default-src 'self'; frame-ancestors 'none'", 'Content-Length': Buffer.byteLength(data) });
  res.end(data);
}

/** The buyer of this request: the cookie, or a new one (set on the reply). */
function buyer(req, res) {
  const m = /(?:^|;\s*)sf_buyer=(b-[0-9a-f]{24})(?:;|$)/.exec(req.headers.cookie || '');
  if (m) return m[1];
  const id = 'b-' + randomBytes(12).toString('hex');
  res.setHeader('Set-Cookie', `sf_buyer=${id}; Path=/; HttpOnly; SameSite=Strict`);
  return id;
}

async function readJson(req) {
  if (!/^application\/json\b/.test(req.headers['content-type'] || '')) throw httpError(415, 'invalid_argument', 'send application/json');
  const parts = [];
  let n = 0;
  for await (const chunk of req) {
    n += chunk.length;
    if (n > LIMITS.bodyBytesMax) throw httpError(413, 'invalid_argument', `body over ${LIMITS.bodyBytesMax} bytes`);
    parts.push(chunk);
  }
  try {
    const v = JSON.parse(Buffer.concat(parts).toString('utf8'));
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
    return v;
  } catch {
    throw httpError(400, 'bad_json', 'the body is not one JSON object');
  }
}

async function route(req, res, api) {
  const url = new URL(req.url, 'http://storefront');
  const file = req.method === 'GET' ? STATIC[url.pathname] : undefined;
  if (file) return send(res, 200, fs.readFileSync(path.join(HERE, 'public', file[0])), file[1]);
  const fn = api[`${req.method} ${url.pathname}`];
  if (!fn) {
    const known = Object.keys(api).some((k) => k.endsWith(' ' + url.pathname));
    throw httpError(known ? 405 : 404, known ? 'method_not_allowed' : 'not_found', `${req.method} ${url.pathname}: no such page`);
  }
  const user = buyer(req, res);
  const body = req.method === 'POST' ? await readJson(req) : {};
  send(res, 200, { ok: true, ...(await fn(user, body, url.searchParams)) });
}

// ---------------------------------------------------------------------------------------------

/**
 * Starts the storefront.
 * @param {ReturnType<typeof parseArgs>} o the options
 * @returns {Promise<{server: http.Server, url: string, close: () => Promise<void>}>}
 */
export async function start(o) {
  // One client for the whole server, connected on first use and again after a failed connect
  // (slotd may start after the storefront); it pipelines every buyer's calls.
  let pending = null;
  const client = () => {
    if (!pending) {
      pending = connect({ hosts: o.hosts, token: o.token, timeoutMs: o.timeoutMs, retries: o.retries });
      pending.catch(() => { pending = null; });
    }
    return pending.catch((err) => { throw fromSlot(err); });
  };
  for (const c of o.create) {
    const cl = await client();
    await cl.createEvent({ event: c.event, capacity: c.capacity, ...(c.hold_ttl_ms ? { hold_ttl_ms: c.hold_ttl_ms } : {}) });
  }
  const server = http.createServer(handler({ client, events: o.events }));
  server.headersTimeout = 10000;
  server.requestTimeout = 30000;
  server.maxHeadersCount = 64;
  server.maxConnections = LIMITS.connectionsMax;
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.listen.port, o.listen.host, resolve);
  });
  const addr = server.address();
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    server,
    url: `http://${host}:${addr.port}`,
    close: async () => {
      const closed = new Promise((r) => server.close(r));
      server.closeAllConnections(); // keep-alive and in-flight ones too: a stop does not wait on browsers
      await closed;
      if (pending) await (await pending.catch(() => null))?.close();
    },
  };
}

async function main() {
  let o;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(err.help ? err.message : `storefront: ${err.message}\n${USAGE}`);
    process.exit(err.help ? 0 : 64);
  }
  let s;
  try {
    s = await start(o);
  } catch (err) {
    process.stderr.write(`storefront: cannot start: ${err.message}\n`);
    process.exit(1);
  }
  process.stdout.write(`storefront listening on ${s.url}\n`);
  const stop = () => s.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
