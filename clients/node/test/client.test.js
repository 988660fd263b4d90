// The client against a real standalone slotd (started here on 127.0.0.1:0, temporary folder,
// stopped by PID): every op's method, pipelined replies in order, outcomes vs errors, the
// idempotency key, limits, and the feed consumer's acks and resume.

import test from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect, SlotError, OPS, LIMITS, Client } from '../src/index.js';
import { slotdBinary, startSlotd } from './servers.js';

const skip = slotdBinary() ? false : 'no slotd binary ($SLOTD)';

test('standalone slotd', { skip, timeout: 30000 }, async (t) => {
  const s = await startSlotd(['--durability', 'nosync']);
  const c = await connect({ hosts: [s.host], timeoutMs: 3000 });
  t.after(async () => {
    await c.close();
    await s.stop();
  });

  await t.test('one method per op of docs/protocol.md', () => {
    assert.equal(Object.keys(OPS).length, 32);
    for (const m of Object.keys(OPS)) assert.equal(typeof c[m], 'function', m);
    assert.equal(typeof c.request, 'function');
  });

  await t.test('hold, confirm, release, extend, get_hold, event, sold_out as an outcome', async () => {
    const ev = await c.createEvent({ event: 'gig', capacity: 5, shards: 2, max_per_request: 4, hold_ttl_ms: 60000 });
    assert.equal(ev.available, 5);
    const h = await c.hold({ event: 'gig', user: 'ann', qty: 2 });
    assert.equal(h.status, 'held');
    const e = await c.extend({ event: 'gig', hold: h.hold, user: 'ann', by_ms: 1000 });
    assert.ok(e.expires_at > h.expires_at);
    const g = await c.getHold({ event: 'gig', hold: h.hold, user: 'ann' });
    assert.equal(g.status, 'held');
    assert.equal((await c.confirm({ event: 'gig', hold: h.hold, user: 'ann' })).status, 'confirmed');
    const h2 = await c.hold({ event: 'gig', user: 'bob', qty: 3 });
    assert.equal((await c.release({ event: 'gig', hold: h2.hold, user: 'bob' })).released, true);
    const so = await c.hold({ event: 'gig', user: 'cy', qty: 4 });
    assert.deepEqual([so.ok, so.status, so.available], [true, 'sold_out', 3]);
    const view = await c.event({ event: 'gig' });
    assert.deepEqual([view.held, view.confirmed, view.available], [0, 2, 3]);
  });

  await t.test('ok:false rejects with SlotError (code, reply); nothing retried', async () => {
    await assert.rejects(c.confirm({ event: 'gig', hold: 'nope', user: 'ann' }), (err) => {
      assert.ok(err instanceof SlotError);
      assert.equal(err.code, 'unknown_hold');
      assert.equal(err.reply.ok, false);
      return true;
    });
    await assert.rejects(c.hold({ event: 'gig', user: 'ann', qty: 1.5 }), { code: 'invalid_argument' });
    await assert.rejects(c.request('fly'), { code: 'unknown_op' });
    const st = await c.stats();
    assert.equal(st.requests.confirm, 2, 'the unknown_hold confirm was sent once');
  });

  await t.test('a fresh request key per call, the caller may choose it, replay', async () => {
    await c.createEvent({ event: 'keys', capacity: 100 });
    const a = await c.hold({ event: 'keys', user: 'u', qty: 1 });
    const b = await c.hold({ event: 'keys', user: 'u', qty: 1 });
    assert.notEqual(a.hold, b.hold, 'two calls are two purchases');
    const k1 = await c.hold({ event: 'keys', user: 'u', qty: 1, request: 'cart-7' });
    const k2 = await c.hold({ event: 'keys', user: 'u', qty: 1, request: 'cart-7' });
    assert.equal(k2.hold, k1.hold);
    assert.equal(k2.replay, true);
    await assert.rejects(c.hold({ event: 'keys', user: 'u', qty: 2, request: 'cart-7' }), { code: 'idempotency_conflict' });
    await assert.rejects(c.hold({ event: 'keys', user: 'u', qty: 1, request: 'bad key!' }), { code: 'invalid_argument' });
  });

  await t.test('pipelined calls answered in order on one socket', async () => {
    await c.createEvent({ event: 'pipe', capacity: 100000, shards: 8 });
    const N = 3000; // above the in-flight bound: the rest wait in the client's queue
    const calls = [];
    for (let i = 0; i < N; i++) {
      calls.push(i % 3 === 2 ? c.event({ event: 'pipe' }) : c.hold({ event: 'pipe', user: `p${i}`, qty: 1, request: `r${i}` }));
    }
    const rs = await Promise.all(calls);
    let held = 0;
    for (let i = 0; i < N; i++) {
      if (i % 3 === 2) {
        assert.equal(rs[i].event, 'pipe');
        assert.ok(rs[i].held >= held, 'a read sees the writes answered before it');
      } else {
        assert.equal(rs[i].status, 'held');
        held++;
      }
    }
    assert.equal(c.conns.size, 1, 'one connection');
    const again = await c.getHold({ event: 'pipe', hold: rs[0].hold, user: 'p0' });
    assert.equal(again.user, 'p0');
  });

  await t.test('admin ops: shards, check, digest, stats, metrics, cluster, set_status, waitlist', async () => {
    assert.equal((await c.shards({ event: 'gig' })).shards.length, 2);
    assert.equal((await c.check()).violations_total, 0);
    assert.match((await c.digest()).digest, /^[0-9a-f]{64}$/);
    assert.match((await c.metrics()).text, /slotd_build_info/);
    assert.equal((await c.cluster()).role, 'standalone');
    assert.equal((await c.setStatus({ event: 'gig', status: 'closed' })).status, 'closed');
    await assert.rejects(c.hold({ event: 'gig', user: 'z', qty: 1 }), { code: 'not_on_sale' });
    await c.setStatus({ event: 'gig', status: 'on_sale' });
    await c.createEvent({ event: 'wl', capacity: 1, shards: 1, waitlist_max: 10 });
    await c.hold({ event: 'wl', user: 'a', qty: 1 });
    const j = await c.waitlistJoin({ event: 'wl', user: 'b', qty: 1, request: 'w1' });
    assert.equal(j.status, 'waiting');
    assert.equal((await c.waitlist({ event: 'wl', user: 'b', request: 'w1' })).position, 1);
    assert.equal((await c.waitlistEntries({ event: 'wl' })).entries.length, 1);
    assert.equal((await c.expire()).ok, true);
  });

  await t.test('limits: a request over maxLineBytes is refused before it is sent', async () => {
    await assert.rejects(c.event({ event: 'x'.repeat(LIMITS.maxLineBytes) }), { code: 'line_too_long' });
    assert.equal((await c.event({ event: 'gig' })).event, 'gig', 'the connection is still fine');
    const small = new Client({ hosts: [s.host], maxInFlight: 2, maxQueued: 3 });
    const ps = Array.from({ length: 6 }, () => small.event({ event: 'gig' }).then(() => 'ok', (e) => e.code));
    const got = await Promise.all(ps);
    assert.ok(got.includes('overloaded'), 'calls past maxInFlight + maxQueued are refused: ' + got);
    await small.close();
  });

  await t.test('feed: ack stores the position; a new consumer resumes after it', async () => {
    await c.createEvent({ event: 'fd', capacity: 10 });
    const f = c.feed({ consumer: 'mail', from: 'start', window: 4 });
    const seen = [];
    for await (const e of f) {
      seen.push(e.feed);
      await e.ack();
      if (seen.length === 5) break;
    }
    assert.deepEqual(seen, [1, 2, 3, 4, 5]);
    const list = await c.feedConsumers();
    assert.equal(list.consumers.find((x) => x.consumer === 'mail').acked, 5);
    const f2 = c.feed({ consumer: 'mail' }); // from the stored ack
    const first = await f2[Symbol.asyncIterator]().next();
    assert.equal(first.value.feed, 6);
    await f2.close();
    assert.equal((await c.feedForget({ consumer: 'mail' })).forgotten, true);
  });

  await t.test('feed: a lost connection is resubscribed from the stored ack, no entry twice', async () => {
    const f = c.feed({ consumer: 'resume', from: 'start' });
    const it = f[Symbol.asyncIterator]();
    const a = (await it.next()).value;
    const b = (await it.next()).value;
    await a.ack(); // stored: 1; b (2) yielded but not acked
    f.conn.sock.destroy(); // the connection drops (as when a primary steps down)
    const cc = (await it.next()).value;
    assert.equal(cc.feed, b.feed + 1, 'resumed after the stored ack, the entry already yielded skipped');
    await b.ack();
    await cc.ack();
    await f.close();
    const list = await c.feedConsumers();
    assert.equal(list.consumers.find((x) => x.consumer === 'resume').acked, cc.feed);
  });
});

test('connect: tokens; a wrong token is unauthenticated; no host answering is unavailable', { skip, timeout: 20000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slotd-node-tok-'));
  const tokens = path.join(dir, 'tokens');
  fs.writeFileSync(tokens, 'frontend f-secret\nadmin a-secret\n', { mode: 0o600 });
  const s = await startSlotd(['--durability', 'nosync', '--token-file', tokens]);
  try {
    const admin = await connect({ hosts: [s.host], token: 'a-secret' });
    await admin.createEvent({ event: 'tok', capacity: 3 });
    const front = await connect({ hosts: [s.host], token: 'f-secret' });
    assert.equal((await front.hello({ token: 'f-secret' })).role, 'frontend');
    assert.equal((await front.hold({ event: 'tok', user: 'u', qty: 1 })).status, 'held');
    await assert.rejects(front.createEvent({ event: 'no', capacity: 1 }), { code: 'forbidden' });
    await assert.rejects(connect({ hosts: [s.host], token: 'wrong' }), { code: 'unauthenticated' });
    await admin.close();
    await front.close();
  } finally {
    await s.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const dead = net.createServer();
  await new Promise((r) => dead.listen(0, '127.0.0.1', r));
  const port = dead.address().port;
  await new Promise((r) => dead.close(r));
  await assert.rejects(connect({ hosts: [`127.0.0.1:${port}`], timeoutMs: 500 }), { code: 'unavailable' });
});
