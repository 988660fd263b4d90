// A 3-node replica set whose primary is killed (kill -9) mid-run, with holds pipelined through
// one client the whole time: every acknowledged hold is found afterwards on the new primary,
// and no purchase was made twice by a resend (one purchase attempt per user; the feed and the
// event's counters show at most one hold per user, and exactly the acknowledged ones).
// Skipped without etcd (Debian's etcd-server).

import test from 'node:test';
import assert from 'node:assert/strict';
import { connect } from '../src/index.js';
import { slotdBinary, etcdBinary, startSet } from './servers.js';

const USERS = 2000; // one purchase attempt (a hold of 1 unit) each
const WORKERS = 256; // calls in flight at once on the client's one connection
const KILL_AT = 600; // acknowledged holds before the kill

const skip = !slotdBinary() ? 'no slotd binary ($SLOTD)' : !etcdBinary() ? 'no etcd (Debian package etcd-server)' : false;

test('kill -9 of the primary mid-run: no acknowledged hold lost, no purchase twice', { skip, timeout: 90000 }, async () => {
  const set = await startSet();
  let client;
  try {
    client = await connect({ hosts: set.hosts, timeoutMs: 2000, retries: 40 });
    await client.createEvent({ event: 'sale', capacity: 100000, shards: 4 });
    const acked = new Map(); // user -> hold id
    const failed = [];
    let replays = 0;
    let next = 0;
    let killed = null;
    let killing = null;
    const worker = async () => {
      for (;;) {
        const i = next++;
        if (i >= USERS) return;
        const user = `buyer-${i}`;
        try {
          const r = await client.hold({ event: 'sale', user, qty: 1 });
          assert.equal(r.status, 'held', JSON.stringify(r));
          acked.set(user, r.hold);
          if (r.replay) replays++;
        } catch (err) {
          failed.push(`${user}: ${err.message}`);
        }
        if (acked.size >= KILL_AT && !killing) {
          killing = set.killPrimary().then((p) => (killed = p));
        }
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, worker));
    await killing;
    assert.ok(killed, 'a new primary was elected');
    assert.deepEqual(failed, [], 'every purchase attempt was answered in the end');
    assert.equal(acked.size, USERS);

    // Every acknowledged hold is on the new primary, held, and the user's.
    const views = await Promise.all(
      [...acked].map(([user, hold]) => client.getHold({ event: 'sale', hold, user })),
    );
    for (const v of views) assert.equal(v.status, 'held');
    const ev = await client.event({ event: 'sale' });
    assert.equal(ev.held, USERS, 'the event holds exactly the acknowledged units (no second hold by a resend)');

    // The feed: one hold.held per user, each the acknowledged hold.
    const perUser = new Map();
    const feed = client.feed({ consumer: 'audit', from: 'start', window: 500 });
    for await (const e of feed) {
      if (e.feed % 100 === 0) await e.ack(); // the window (500 past the last ack) moves on
      if (e.type === 'hold.held') {
        perUser.set(e.user, (perUser.get(e.user) || 0) + 1);
        assert.equal(e.hold, acked.get(e.user), `the feed's hold of ${e.user} is the acknowledged one`);
      }
      if (e.feed >= feed.head) break;
    }
    assert.equal(perUser.size, USERS);
    for (const [user, n] of perUser) assert.equal(n, 1, `${user} has ${n} holds`);
    console.log(`# failover: ${USERS} holds acknowledged, ${replays} answered as replays after a resend; new primary ${killed.host}`);
  } finally {
    if (client) await client.close();
    await set.stop();
  }
});
