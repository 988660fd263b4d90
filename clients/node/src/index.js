// slotd-client: the Node.js client of slotd (docs/protocol.md, protocol version 1).
//
// One socket per host, requests pipelined on it and replies matched in the order the requests
// were sent (NDJSON). Each call that takes an idempotency key (`request`) gets a fresh one,
// kept on every resend of that call. Replies that say nothing changed (not_primary, wrong_set,
// moving, overloaded, shutting_down) are resent to where they point; outcomes that are
// unknown (a lost connection, a timeout, unavailable) are resent with the same key only for
// ops whose resend cannot apply twice. The rule is written in clients/fixtures/README.md.
// No runtime dependencies.

import net from 'node:net';
import { randomUUID } from 'node:crypto';

/**
 * The bounds the client keeps, from the server's documented defaults (docs/protocol.md,
 * "Limits and flow control"; slotd --help).
 * @type {Readonly<{maxLineBytes: number, maxReplyBytes: number, maxInFlight: number, maxQueued: number, backoffMinMs: number, backoffMaxMs: number, maxRetryAfterMs: number}>}
 */
export const LIMITS = Object.freeze({
  /** longest request line sent, without its newline: slotd's default --max-line (65,536) */
  maxLineBytes: 65536,
  /** longest reply line read: the largest --max-line slotd allows (16 MiB) */
  maxReplyBytes: 16 * 1024 * 1024,
  /** unanswered requests per connection: slotd's default --max-inflight (1,024) */
  maxInFlight: 1024,
  /** requests waiting for an in-flight slot per connection before calls are refused */
  maxQueued: 65536,
  /** the pause before a resend: 20 ms doubling up to 500 ms (the C client's; no jitter, so
   * calls that lost one connection are resent in the order they were first sent) */
  backoffMinMs: 20,
  backoffMaxMs: 500,
  /** the longest `retry_after_ms` of a `moving` reply the client waits */
  maxRetryAfterMs: 5000,
});

/**
 * The ops of protocol version 1 (docs/protocol.md, "The ops"), in the op table's order, as
 * method name -> wire name.
 * @type {Readonly<Record<string, string>>}
 */
export const OPS = Object.freeze({
  hello: 'hello',
  hold: 'hold',
  confirm: 'confirm',
  extend: 'extend',
  release: 'release',
  getHold: 'get_hold',
  event: 'event',
  createEvent: 'create_event',
  setCapacity: 'set_capacity',
  reshard: 'reshard',
  setStatus: 'set_status',
  setSaleWindow: 'set_sale_window',
  cancel: 'cancel',
  shards: 'shards',
  check: 'check',
  expire: 'expire',
  stats: 'stats',
  digest: 'digest',
  holdMany: 'hold_many',
  waitlistJoin: 'waitlist_join',
  waitlistLeave: 'waitlist_leave',
  waitlist: 'waitlist',
  waitlistEntries: 'waitlist_entries',
  subscribe: 'subscribe',
  ack: 'ack',
  unsubscribe: 'unsubscribe',
  feedConsumers: 'feed_consumers',
  feedForget: 'feed_forget',
  cluster: 'cluster',
  metrics: 'metrics',
  backup: 'backup',
  clusterChange: 'cluster_change',
});

/** Ops the client gives a fresh `request` key per call when the caller passes none. */
const KEYED = new Set(['hold', 'hold_many', 'waitlist_join']);
/** Ops bound to one connection (the feed's): never resent on another after an unknown
 * outcome. Every other op is resent as it was (clients/fixtures/README.md, the retry rule). */
const NOT_RESENT_UNKNOWN = new Set(['subscribe', 'ack', 'unsubscribe']);
/** Errors that say nothing changed and that another try (after a pause, elsewhere) may pass. */
const RETRY_NOTHING_CHANGED = new Set(['not_primary', 'wrong_set', 'moving', 'overloaded', 'shutting_down']);
/** The key charset and length the protocol allows for `request` (docs/protocol.md, "Names"). */
const KEY_RE = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * A failed call: an `ok:false` reply of the server, or the client's own verdict in the same
 * shape (`unavailable` when it gave up, `timeout` is never a code: a call that timed out on
 * every try gives up as `unavailable`).
 */
export class SlotError extends Error {
  /**
   * @param {object} reply the whole error reply: `{ok:false, error, message, ...}`
   * @param {{request?: string, host?: string}} [info] the call's idempotency key and the host
   *   that answered (or was tried last)
   */
  constructor(reply, info = {}) {
    super(`${reply.error}: ${reply.message ?? ''}`);
    this.name = 'SlotError';
    /** @type {string} the protocol's error code (`invalid_argument`, `unknown_hold`, ...) */
    this.code = reply.error;
    /** @type {object} the whole reply object */
    this.reply = reply;
    /** @type {string|undefined} the `request` key the call used (keep it to retry later) */
    this.request = info.request;
    /** @type {string|undefined} the host of the last try */
    this.host = info.host;
  }
}

/**
 * A fresh idempotency key: a random UUID (36 bytes of [0-9a-f-], inside the protocol's
 * 1..64 bytes of [A-Za-z0-9._:-]).
 * @returns {string}
 */
export function newRequestKey() {
  return randomUUID();
}

/** A transport failure of one try (connect refused, connection lost, no reply in time). */
class TransportError extends Error {
  constructor(message, host) {
    super(message);
    this.host = host;
  }
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function parseHost(h) {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(h) || /^([^:]+):(\d+)$/.exec(h);
  if (!m) throw new TypeError(`slotd-client: host must be "HOST:PORT", not ${JSON.stringify(h)}`);
  const port = Number(m[2]);
  if (port < 1 || port > 65535) throw new TypeError(`slotd-client: bad port in ${JSON.stringify(h)}`);
  return { host: m[1], port };
}

/** One connection to one host: pipelined requests, replies matched in send order. */
class Conn {
  constructor(client, host, onPush) {
    this.client = client;
    this.host = host;
    this.onPush = onPush; // feed connections: pushed {"feed":SEQ,...} lines
    this.sock = null;
    this.buf = '';
    this.inflight = []; // {resolve, reject, deadline}, in send order
    this.timer = null; // one timer, armed for the oldest unanswered request's deadline
    this.out = ''; // lines of this tick not yet written
    this.flushing = false; // a write of `out` is scheduled
    this.head = 0; // index of the oldest unanswered entry in inflight
    this.waiting = []; // {line, timeoutMs, resolve, reject} waiting for an in-flight slot
    this.dead = null; // the TransportError once closed
    this.features = [];
    this.isReady = false; // hello answered: calls skip awaiting `ready`
    this.ready = this.open().then((c) => ((this.isReady = true), c));
    this.ready.catch(() => {});
  }

  get inFlight() {
    return this.inflight.length - this.head;
  }

  open() {
    const { host, port } = parseHost(this.host);
    const o = this.client.opts;
    return new Promise((resolve, reject) => {
      const sock = net.connect({ host, port });
      this.sock = sock;
      sock.setNoDelay(true);
      sock.setEncoding('utf8');
      const ct = setTimeout(() => {
        this.fail(new TransportError(`connect to ${this.host} timed out after ${o.timeoutMs} ms`, this.host));
      }, o.timeoutMs);
      sock.once('connect', () => {
        clearTimeout(ct);
        const hello = { op: 'hello' };
        if (o.token !== undefined) hello.token = o.token;
        this.sendNow(JSON.stringify(hello) + '\n', o.timeoutMs).then(
          (r) => {
            if (r.ok) {
              this.features = Array.isArray(r.features) ? r.features : [];
              resolve(this);
            } else {
              const e = new SlotError(r, { host: this.host });
              reject(e);
              this.fail(new TransportError(e.message, this.host));
            }
          },
          reject,
        );
      });
      sock.on('data', (chunk) => this.onData(chunk));
      sock.on('error', (err) => {
        clearTimeout(ct);
        this.fail(new TransportError(`${this.host}: ${err.code || err.message}`, this.host));
      });
      sock.on('close', () => {
        clearTimeout(ct);
        this.fail(new TransportError(`${this.host}: connection closed`, this.host));
      });
      this.failOpen = reject;
    });
  }

  onData(chunk) {
    this.buf += chunk;
    let start = 0;
    for (;;) {
      const nl = this.buf.indexOf('\n', start);
      if (nl < 0) break;
      const line = this.buf.slice(start, nl);
      start = nl + 1;
      if (line.length === 0 || line === '\r') continue;
      let obj;
      try {
        obj = JSON.parse(line);
      } catch {
        this.fail(new TransportError(`${this.host}: reply is not JSON: ${line.slice(0, 80)}`, this.host));
        return;
      }
      if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
        this.fail(new TransportError(`${this.host}: reply is not an object`, this.host));
        return;
      }
      if (this.onPush && obj.ok === undefined && typeof obj.feed === 'number') {
        this.onPush(obj);
        continue;
      }
      if (this.head >= this.inflight.length) {
        this.fail(new TransportError(`${this.host}: a reply to no request`, this.host));
        return;
      }
      const e = this.inflight[this.head];
      this.inflight[this.head++] = undefined;
      if (this.head > 1024 && this.head * 2 > this.inflight.length) {
        this.inflight = this.inflight.slice(this.head);
        this.head = 0;
      }
      e.resolve(obj);
      this.pump();
      if (this.dead) return;
    }
    this.buf = start === 0 ? this.buf : this.buf.slice(start);
    const max = this.client.opts.maxReplyBytes;
    if (this.buf.length * 3 > max && Buffer.byteLength(this.buf) > max) {
      this.fail(new TransportError(`${this.host}: reply line over ${this.client.opts.maxReplyBytes} bytes`, this.host));
    }
  }

  /** Writes `line` at once (an in-flight slot is known to be free, or it is the hello). */
  sendNow(line, timeoutMs) {
    return new Promise((resolve, reject) => {
      if (this.dead) return reject(this.dead);
      const e = { resolve, reject, deadline: Date.now() + timeoutMs, timeoutMs };
      this.inflight.push(e);
      if (!this.timer) this.arm(timeoutMs);
      // the lines of one tick go out in one write (one string, one syscall)
      this.out += line;
      if (!this.flushing) {
        this.flushing = true;
        process.nextTick(() => {
          this.flushing = false;
          const out = this.out;
          this.out = '';
          if (!this.dead) this.sock.write(out);
        });
      }
    });
  }

  /** The reply timeout: one timer for the oldest unanswered request (replies come in order,
   * so it is the one that must come first); when it fires early for a newer head, re-armed. */
  arm(ms) {
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.dead || this.head >= this.inflight.length) return;
      const e = this.inflight[this.head];
      const left = e.deadline - Date.now();
      if (left <= 0) this.fail(new TransportError(`${this.host}: no reply within ${e.timeoutMs} ms`, this.host));
      else this.arm(left);
    }, ms);
    this.timer.unref?.();
  }

  /** Sends `line` when an in-flight slot is free; the reply object, or a TransportError. */
  send(line, timeoutMs) {
    if (this.dead) return Promise.reject(this.dead);
    if (this.inFlight < this.client.opts.maxInFlight && this.waiting.length === 0) {
      return this.sendNow(line, timeoutMs);
    }
    if (this.waiting.length >= this.client.opts.maxQueued) {
      return Promise.reject(
        new SlotError({
          ok: false,
          error: 'overloaded',
          message: `client: ${this.waiting.length} requests already wait for ${this.host}`,
          client: true,
        }),
      );
    }
    return new Promise((resolve, reject) => this.waiting.push({ line, timeoutMs, resolve, reject }));
  }

  pump() {
    while (this.waiting.length && this.inFlight < this.client.opts.maxInFlight && !this.dead) {
      const w = this.waiting.shift();
      this.sendNow(w.line, w.timeoutMs).then(w.resolve, w.reject);
    }
  }

  /** Closes the connection; every unanswered request fails with `err`. */
  fail(err) {
    if (this.dead) return;
    this.dead = err;
    this.client.forget(this);
    if (this.sock) this.sock.destroy();
    if (this.failOpen) this.failOpen(err);
    const pending = this.inflight.slice(this.head);
    const waiting = this.waiting;
    this.inflight = [];
    this.head = 0;
    this.waiting = [];
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const e of pending) e.reject(err);
    for (const w of waiting) w.reject(err);
    if (this.onClose) this.onClose(err);
  }

  close() {
    this.fail(new TransportError(`${this.host}: closed by the client`, this.host));
  }
}

/**
 * A slotd client: a connection per host, opened on first use.
 * Create it with {@link connect}.
 */
export class Client {
  /**
   * @param {ConnectOptions} opts see {@link connect}
   */
  constructor(opts) {
    const hosts = Array.isArray(opts.hosts) ? opts.hosts.slice() : [opts.hosts ?? '127.0.0.1:7420'];
    if (hosts.length === 0) throw new TypeError('slotd-client: hosts is empty');
    hosts.forEach(parseHost);
    const num = (v, d, lo, hi, name) => {
      if (v === undefined) return d;
      if (!Number.isInteger(v) || v < lo || v > hi) throw new TypeError(`slotd-client: ${name} must be an integer in ${lo}..${hi}`);
      return v;
    };
    /** @private */
    this.opts = {
      token: opts.token,
      timeoutMs: num(opts.timeoutMs, 5000, 1, 3600000, 'timeoutMs'),
      retries: num(opts.retries, 8, 0, 1000, 'retries'),
      maxInFlight: num(opts.maxInFlight, LIMITS.maxInFlight, 1, 1000000, 'maxInFlight'),
      maxQueued: num(opts.maxQueued, LIMITS.maxQueued, 0, 100000000, 'maxQueued'),
      maxLineBytes: num(opts.maxLineBytes, LIMITS.maxLineBytes, 1024, 16777216, 'maxLineBytes'),
      maxReplyBytes: num(opts.maxReplyBytes, LIMITS.maxReplyBytes, 1024, 1 << 30, 'maxReplyBytes'),
    };
    /** The hosts, in order; a primary named by a reply is added when it is not there. */
    this.hosts = hosts;
    /** @private index of the host the next request goes to */
    this.cur = 0;
    /** @private host -> Conn */
    this.conns = new Map();
    /** @private event -> host, learnt from wrong_set and placement */
    this.routes = new Map();
    this.closed = false;
  }

  /** @private */
  forget(conn) {
    if (this.conns.get(conn.host) === conn) this.conns.delete(conn.host);
  }

  /** @private the open (or opening) connection to `host` */
  conn(host) {
    let c = this.conns.get(host);
    if (!c) {
      c = new Conn(this, host, null);
      this.conns.set(host, c);
    }
    return c;
  }

  /** The host requests go to now (the primary once one was named). */
  get currentHost() {
    return this.hosts[this.cur];
  }

  /** @private points the client at `host` (added to the list when new) */
  moveTo(host) {
    let i = this.hosts.indexOf(host);
    if (i < 0) {
      parseHost(host);
      this.hosts.push(host);
      i = this.hosts.length - 1;
    }
    this.cur = i;
  }

  /** @private the next host after `host`, unless another call moved on already */
  moveOn(host) {
    if (this.hosts[this.cur] === host) this.cur = (this.cur + 1) % this.hosts.length;
  }

  /**
   * Sends one request of any op and resolves to its `ok:true` reply, following the retry
   * rule (clients/fixtures/README.md).
   * @param {string} op the wire name (`hold`, `get_hold`, ...)
   * @param {object} [fields] the op's fields; `request` is filled for keyed ops when absent
   * @param {CallOptions} [callOpts] per-call `timeoutMs` and `retries`
   * @returns {Promise<object>} the reply (`sold_out` and other outcomes included)
   * @throws {SlotError} an `ok:false` reply, or `unavailable` when the tries ran out
   */
  async request(op, fields = {}, callOpts = {}) {
    if (typeof op !== 'string' || op.length === 0) throw new TypeError('slotd-client: op must be a non-empty string');
    if (this.closed) throw new SlotError({ ok: false, error: 'unavailable', message: 'client: closed', client: true });
    const body = Object.assign({ op }, fields);
    body.op = op;
    if (KEYED.has(op) && body.request === undefined) body.request = newRequestKey();
    const key = body.request;
    if (key !== undefined && KEYED.has(op) && (typeof key !== 'string' || !KEY_RE.test(key))) {
      throw new SlotError({ ok: false, error: 'invalid_argument', message: 'request: must be 1 to 64 bytes of [A-Za-z0-9._:-]', client: true }, { request: key });
    }
    const line = JSON.stringify(body);
    if (line.length * 3 > this.opts.maxLineBytes && Buffer.byteLength(line) > this.opts.maxLineBytes) {
      throw new SlotError({ ok: false, error: 'line_too_long', message: `client: request of ${Buffer.byteLength(line)} bytes is over maxLineBytes ${this.opts.maxLineBytes}`, client: true }, { request: key });
    }
    const timeoutMs = callOpts.timeoutMs ?? this.opts.timeoutMs;
    const retries = callOpts.retries ?? this.opts.retries;
    const unknownOk = !NOT_RESENT_UNKNOWN.has(op);
    const started = Date.now();
    let last = '';
    let lastReply;
    let pauses = 0;
    const ev = typeof body.event === 'string' ? body.event : undefined;
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (this.closed) break;
      const host = (ev !== undefined && this.routes.get(ev)) || this.hosts[this.cur];
      let reply;
      try {
        const c = this.conn(host);
        if (!c.isReady) await c.ready;
        reply = await c.send(line + '\n', timeoutMs);
      } catch (err) {
        if (err instanceof SlotError) {
          // hello refused (unauthenticated, ...) or the client's own refusal: not retried
          err.request = key;
          throw err;
        }
        last = `${host}: ${err.message}`;
        lastReply = undefined;
        if (!unknownOk) {
          throw new SlotError({ ok: false, error: 'unavailable', message: `outcome unknown, not resent (${op} belongs to its connection): ${last}`, outcome_unknown: true, client: true }, { request: key, host });
        }
        if (ev !== undefined) this.routes.delete(ev);
        this.moveOn(host);
        if (attempt < retries) await sleep(this.backoff(pauses++));
        continue;
      }
      if (reply.ok !== false) return reply;
      const code = reply.error;
      last = `${host}: ${code}: ${reply.message ?? ''}`;
      lastReply = reply;
      if (attempt === retries) {
        if (code === 'unavailable' || RETRY_NOTHING_CHANGED.has(code)) break;
        throw new SlotError(reply, { request: key, host });
      }
      if (code === 'not_primary') {
        if (typeof reply.primary === 'string' && reply.primary !== '' && reply.primary !== host) {
          this.moveTo(reply.primary);
          if (ev !== undefined) this.routes.delete(ev);
        } else {
          this.moveOn(host);
          await sleep(this.backoff(pauses++));
        }
      } else if (code === 'wrong_set') {
        const to = await this.placementOf(reply, host, timeoutMs);
        if (to && ev !== undefined) this.routes.set(ev, to);
        else if (to) this.moveTo(to);
        else {
          this.moveOn(host);
          await sleep(this.backoff(pauses++));
        }
      } else if (code === 'moving') {
        const ms = Number.isInteger(reply.retry_after_ms) ? reply.retry_after_ms : this.backoff(pauses++);
        await sleep(Math.min(Math.max(ms, 0), LIMITS.maxRetryAfterMs));
      } else if (code === 'overloaded') {
        await sleep(this.backoff(pauses++));
      } else if (code === 'shutting_down') {
        this.moveOn(host);
        await sleep(this.backoff(pauses++));
      } else if (code === 'unavailable') {
        if (!unknownOk) throw new SlotError(reply, { request: key, host });
        this.moveOn(host);
        await sleep(this.backoff(pauses++));
      } else {
        throw new SlotError(reply, { request: key, host });
      }
    }
    const n = retries + 1;
    const gaveUp = { ok: false, error: 'unavailable', message: `gave up after ${n} attempts in ${Date.now() - started} ms; last: ${last}`, client: true, attempts: n, gave_up: true };
    if (lastReply) gaveUp.last = lastReply;
    throw new SlotError(gaveUp, { request: key });
  }

  /** @private where a wrong_set reply points: its `primary`, else the `placement` op's set */
  async placementOf(reply, host, timeoutMs) {
    if (typeof reply.primary === 'string' && reply.primary !== '') return reply.primary;
    const c = this.conns.get(host);
    if (!c || !c.features.includes('placement') || typeof reply.set !== 'string') return null;
    try {
      const p = await c.send(JSON.stringify({ op: 'placement', event: reply.event }) + '\n', timeoutMs);
      const s = p.ok && p.sets && p.sets[reply.set];
      return s && typeof s.primary === 'string' ? s.primary : null;
    } catch {
      return null;
    }
  }

  /** @private the pause before the `n`-th resend: 20 ms doubling to 500 ms */
  backoff(n) {
    return Math.min(LIMITS.backoffMaxMs, LIMITS.backoffMinMs * 2 ** Math.min(n, 10));
  }

  /**
   * A feed consumer (docs/protocol.md, "Feed"): subscribes as `consumer` on a connection of
   * its own and yields each pushed entry. Call `entry.ack()` once an entry is done: it stores
   * the position durably, so a later consumer of that name resumes after it. When the
   * connection is lost (the primary died or stepped down), the iterator subscribes again
   * (on the next host, following not_primary) from the stored ack and skips the entries it
   * already yielded, so each seq is yielded once per iterator; delivery across processes is
   * at least once (deduplicate by `entry.feed`).
   * @param {FeedOptions} opts `consumer`; `from`: `'acked'` (default), `'start'`, a seq >= 1
   *   (0 means `'start'`); `window` 1..10000 (default 1000)
   * @returns {AsyncIterable<FeedEntry> & {close(): Promise<void>}}
   */
  feed(opts) {
    return new Feed(this, opts);
  }

  /**
   * Closes every connection; calls in flight fail (and are not resent).
   * @returns {Promise<void>}
   */
  async close() {
    this.closed = true;
    for (const c of [...this.conns.values()]) c.close();
    this.conns.clear();
  }
}

for (const [method, op] of Object.entries(OPS)) {
  if (method === 'subscribe' || method === 'unsubscribe' || method === 'ack') continue;
  Object.defineProperty(Client.prototype, method, {
    value: function (fields = {}, callOpts = {}) {
      return this.request(op, fields, callOpts);
    },
    writable: true,
    configurable: true,
  });
}
// subscribe, ack and unsubscribe belong to one connection: feed() runs them. As plain calls
// they go out like any op (a subscribe on a pooled connection would make it a consumer's).
Client.prototype.subscribe = function () {
  return Promise.reject(new TypeError('slotd-client: use client.feed({consumer}) to subscribe'));
};
Client.prototype.ack = function (fields = {}, callOpts = {}) {
  return this.request('ack', fields, callOpts);
};
Client.prototype.unsubscribe = function (fields = {}, callOpts = {}) {
  return this.request('unsubscribe', fields, callOpts);
};

/** The feed consumer behind Client.feed. */
class Feed {
  constructor(client, opts) {
    if (!opts || typeof opts.consumer !== 'string') throw new TypeError('slotd-client: feed needs {consumer}');
    this.client = client;
    this.consumer = opts.consumer;
    this.from = opts.from === undefined || opts.from === 0 ? (opts.from === 0 ? 'start' : 'acked') : opts.from;
    this.window = opts.window;
    this.queue = []; // entries received, not yet yielded
    this.waiter = null; // {resolve, reject} of a next() waiting for an entry
    this.yielded = 0; // the highest seq yielded
    this.pushed = 0; // the highest seq pushed on the current subscription
    this.acked = 0; // the highest position the server stored for this iterator's acks
    this.ackWaiters = []; // acks waiting for their seq to be pushed on the current subscription
    this.conn = null;
    this.error = null;
    this.done = false;
    this.subscribing = null;
    this.host = null;
    /** the newest seq when the last subscribe was answered (0 before) */
    this.head = 0;
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  async subscribe() {
    const cl = this.client;
    const o = cl.opts;
    let pauses = 0;
    let last = '';
    for (let attempt = 0; attempt <= o.retries && !this.done; attempt++) {
      const host = cl.hosts[cl.cur];
      const c = new Conn(cl, host, (e) => this.onEntry(c, e));
      c.onClose = () => {
        if (this.conn === c) this.conn = null;
        this.wake();
      };
      try {
        await c.ready;
        const sub = { op: 'subscribe', consumer: this.consumer, from: this.yielded > 0 ? 'acked' : this.from };
        if (this.window !== undefined) sub.window = this.window;
        this.pushed = 0;
        const r = await c.send(JSON.stringify(sub) + '\n', o.timeoutMs);
        if (r.ok) {
          if (Number.isInteger(r.from) && r.from - 1 > this.pushed) this.pushed = r.from - 1;
          if (Number.isInteger(r.head)) this.head = r.head;
          this.conn = c;
          this.host = host;
          return;
        }
        c.close();
        last = `${host}: ${r.error}: ${r.message ?? ''}`;
        if (r.error === 'not_primary' && typeof r.primary === 'string' && r.primary && r.primary !== host) {
          cl.moveTo(r.primary);
          continue;
        }
        if (r.error === 'not_primary' || r.error === 'unavailable' || r.error === 'shutting_down' || r.error === 'overloaded') {
          cl.moveOn(host);
          await sleep(cl.backoff(pauses++));
          continue;
        }
        throw new SlotError(r, { host });
      } catch (err) {
        if (err instanceof SlotError) throw err;
        c.close();
        last = `${host}: ${err.message}`;
        cl.moveOn(host);
        await sleep(cl.backoff(pauses++));
      }
    }
    throw new SlotError({ ok: false, error: 'unavailable', message: `feed: gave up subscribing; last: ${last}`, gave_up: true, client: true });
  }

  onEntry(c, e) {
    if (c !== this.conn && this.conn !== null) return;
    if (e.feed > this.pushed) this.pushed = e.feed;
    this.ackWaiters = this.ackWaiters.filter((w) => {
      if (w.seq <= this.pushed) {
        w.resolve();
        return false;
      }
      return true;
    });
    if (e.feed <= this.yielded) return; // seen before this resubscribe
    const entry = { ...e };
    Object.defineProperty(entry, 'ack', { value: () => this.ack(e.feed), enumerable: false });
    this.queue.push(entry);
    this.wake();
  }

  wake() {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w();
    }
  }

  /** Yields the next entry; subscribes (again) when there is no subscription. */
  async next() {
    for (;;) {
      if (this.done) return { done: true, value: undefined };
      if (this.queue.length) {
        const v = this.queue.shift();
        this.yielded = v.feed;
        return { done: false, value: v };
      }
      if (!this.conn) {
        if (!this.subscribing) this.subscribing = this.subscribe().finally(() => (this.subscribing = null));
        await this.subscribing;
        continue;
      }
      await new Promise((resolve) => (this.waiter = resolve));
    }
  }

  /** Stores `seq` as the consumer's position (the reply comes after its commit). */
  async ack(seq) {
    const o = this.client.opts;
    for (let attempt = 0; attempt <= o.retries; attempt++) {
      if (this.done) throw new SlotError({ ok: false, error: 'unavailable', message: 'feed: closed', client: true });
      if (!this.conn) {
        if (!this.subscribing) this.subscribing = this.subscribe().finally(() => (this.subscribing = null));
        await this.subscribing;
        continue;
      }
      const c = this.conn;
      if (seq <= this.acked) return { ok: true, consumer: this.consumer, acked: this.acked };
      if (this.pushed < seq) {
        // resubscribed from the stored ack: wait until this subscription pushed seq again
        await new Promise((resolve, reject) => {
          const t = setTimeout(() => reject(new SlotError({ ok: false, error: 'unavailable', message: `feed: seq ${seq} not pushed again within ${o.timeoutMs} ms`, client: true })), o.timeoutMs);
          this.ackWaiters.push({ seq, resolve: () => (clearTimeout(t), resolve()) });
        });
      }
      try {
        const r = await c.send(JSON.stringify({ op: 'ack', consumer: this.consumer, seq }) + '\n', o.timeoutMs);
        if (r.ok) {
          if (Number.isInteger(r.acked) && r.acked > this.acked) this.acked = r.acked;
          return r;
        }
        throw new SlotError(r, { host: c.host });
      } catch (err) {
        if (err instanceof SlotError) throw err;
        // the connection is gone: resubscribe from the stored ack and send the ack again
        // (an ack is a position: sending it twice is harmless)
        await sleep(this.client.backoff(attempt));
      }
    }
    throw new SlotError({ ok: false, error: 'unavailable', message: `feed: ack ${seq} gave up`, gave_up: true, client: true });
  }

  /** Ends the iteration: unsubscribes and closes the feed's connection. */
  async return() {
    await this.close();
    return { done: true, value: undefined };
  }

  async close() {
    if (this.done) return;
    this.done = true;
    const c = this.conn;
    this.conn = null;
    if (c) {
      try {
        await c.send(JSON.stringify({ op: 'unsubscribe' }) + '\n', this.client.opts.timeoutMs);
      } catch {
        /* closing anyway */
      }
      c.close();
    }
    this.wake();
  }
}

/**
 * Makes a client for a standalone slotd or a replica set. The first connection opens at once
 * (so a wrong host or token shows here); later ones when a request needs them.
 * @param {ConnectOptions} opts `hosts` ("H:P", in order: the first is tried first), `token`
 *   (sent in `hello` on every connection), `timeoutMs` (per try: connect and each reply; default
 *   5000), `retries` (resends per call after the first try; default 8)
 * @returns {Promise<Client>}
 * @throws {SlotError} `unauthenticated` for a wrong token; `unavailable` when no host answers
 */
export async function connect(opts = {}) {
  const c = new Client(opts);
  let last = '';
  for (let i = 0; i < c.hosts.length; i++) {
    const host = c.hosts[c.cur];
    try {
      await c.conn(host).ready;
      return c;
    } catch (err) {
      if (err instanceof SlotError) {
        await c.close();
        throw err;
      }
      last = `${host}: ${err.message}`;
      c.moveOn(host);
    }
  }
  await c.close();
  throw new SlotError({ ok: false, error: 'unavailable', message: `no host answered; last: ${last}`, client: true });
}

/**
 * @typedef {object} ConnectOptions
 * @property {string[]|string} [hosts]
 * @property {string} [token]
 * @property {number} [timeoutMs]
 * @property {number} [retries]
 * @property {number} [maxInFlight]
 * @property {number} [maxQueued]
 * @property {number} [maxLineBytes]
 * @property {number} [maxReplyBytes]
 */
/** @typedef {{timeoutMs?: number, retries?: number}} CallOptions */
/** @typedef {{consumer: string, from?: 'acked'|'start'|number, window?: number}} FeedOptions */
/** @typedef {{feed: number, type: string, at: number, ack(): Promise<object>} & Record<string, unknown>} FeedEntry */
