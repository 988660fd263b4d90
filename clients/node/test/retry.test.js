// The retry rule (clients/fixtures/README.md) against fake servers in this process that answer
// as a script says: the same request key on every resend, following not_primary and
// wrong_set, moving waited, outcomes of the kind "nothing changed" resent, sold_out and
// invalid_argument never resent, a timeout resent, giving up as `unavailable`.

import test from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { connect, SlotError } from '../src/index.js';

/** A fake slotd: `handler(req, sock, peer)` answers each non-hello request (returns an object
 * to send, 'close', 'silence', or 'stop' = close and stop listening). */
async function fakePeer(handler) {
  const peer = { seen: [], sockets: new Set() };
  const srv = net.createServer((sock) => {
    peer.sockets.add(sock);
    sock.on('close', () => peer.sockets.delete(sock));
    sock.setEncoding('utf8');
    let buf = '';
    sock.on('data', async (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const req = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        if (req.op === 'hello') {
          sock.write(JSON.stringify({ ok: true, server: 'slotd', protocol: 1, role: 'admin', features: peer.features || [] }) + '\n');
          continue;
        }
        peer.seen.push(req);
        const a = await handler(req, peer);
        if (a === 'close') sock.destroy();
        else if (a === 'stop') {
          sock.destroy();
          peer.stop();
        } else if (a !== 'silence') sock.write(JSON.stringify(a) + '\n');
      }
    });
    sock.on('error', () => {});
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  peer.host = `127.0.0.1:${srv.address().port}`;
  peer.stop = () => {
    srv.close();
    for (const s of peer.sockets) s.destroy();
  };
  return peer;
}

const HELD = { ok: true, status: 'held', hold: 'h1', qty: 1, expires_at: 1 };

test('a reply lost after the commit: resent with the same key, the replay answered', async () => {
  let n = 0;
  const p = await fakePeer(() => (n++ === 0 ? 'close' : { ...HELD, replay: true }));
  const c = await connect({ hosts: [p.host], timeoutMs: 1000, retries: 3 });
  const r = await c.hold({ event: 'E', user: 'u', qty: 1 });
  assert.equal(r.replay, true);
  assert.equal(p.seen.length, 2);
  assert.ok(p.seen[0].request, 'a key was generated');
  assert.equal(p.seen[1].request, p.seen[0].request, 'the same key on the resend');
  const r2 = await c.hold({ event: 'E', user: 'u', qty: 1 });
  assert.equal(r2.status, 'held');
  assert.notEqual(p.seen[2].request, p.seen[0].request, 'a new call, a new key');
  await c.close();
  p.stop();
});

test('not_primary with primary is followed; the primary dying moves to the next host', async () => {
  const b = await fakePeer(() => HELD);
  const a = await fakePeer(() => ({ ok: false, error: 'not_primary', message: 'replica', primary: b.host }));
  const c = await connect({ hosts: [a.host], timeoutMs: 1000, retries: 3 });
  assert.equal((await c.hold({ event: 'E', user: 'u', qty: 1 })).hold, 'h1');
  assert.equal(b.seen[0].request, a.seen[0].request);
  assert.equal(c.currentHost, b.host, 'later calls go to the primary');
  await c.close();
  a.stop();
  b.stop();

  const q = await fakePeer(() => HELD);
  const d = await fakePeer(() => 'stop');
  const c2 = await connect({ hosts: [d.host, q.host], timeoutMs: 1000, retries: 3 });
  assert.equal((await c2.hold({ event: 'E', user: 'u', qty: 1 })).hold, 'h1');
  assert.equal(q.seen[0].request, d.seen[0].request);
  await c2.close();
  q.stop();
});

test('wrong_set: its primary followed for that event; moving: retry_after_ms waited', async () => {
  const t = await fakePeer(() => HELD);
  const s = await fakePeer((req) =>
    req.event === 'E' ? { ok: false, error: 'wrong_set', event: 'E', set: 'T', gen: 2, primary: t.host } : { ok: true, event: req.event });
  const c = await connect({ hosts: [s.host], timeoutMs: 1000, retries: 3 });
  assert.equal((await c.hold({ event: 'E', user: 'u', qty: 1 })).hold, 'h1');
  await c.event({ event: 'F' });
  await c.hold({ event: 'E', user: 'u', qty: 1 });
  assert.deepEqual(s.seen.map((r) => r.event), ['E', 'F'], 'E went to its set after the first wrong_set');
  await c.close();
  s.stop();
  t.stop();

  let n = 0;
  const m = await fakePeer(() => (n++ === 0 ? { ok: false, error: 'moving', retry_after_ms: 150 } : HELD));
  const c2 = await connect({ hosts: [m.host], timeoutMs: 1000, retries: 3 });
  const t0 = Date.now();
  await c2.hold({ event: 'E', user: 'u', qty: 1 });
  assert.ok(Date.now() - t0 >= 140, 'waited retry_after_ms');
  assert.equal(m.seen[1].request, m.seen[0].request);
  await c2.close();
  m.stop();
});

test('wrong_set without primary: the placement op names the set primary', async () => {
  const t = await fakePeer(() => HELD);
  const s = await fakePeer((req) =>
    req.op === 'placement'
      ? { ok: true, events: { E: { set: 'T', gen: 2, state: 'serving' } }, sets: { T: { primary: t.host } } }
      : { ok: false, error: 'wrong_set', event: 'E', set: 'T', gen: 2 });
  s.features = ['placement'];
  const c = await connect({ hosts: [s.host], timeoutMs: 1000, retries: 3 });
  assert.equal((await c.hold({ event: 'E', user: 'u', qty: 1 })).hold, 'h1');
  assert.deepEqual(s.seen.map((r) => r.op), ['hold', 'placement']);
  await c.close();
  s.stop();
  t.stop();
});

test('unavailable, overloaded, shutting_down resent with the same key; a timeout too', async () => {
  for (const code of ['unavailable', 'overloaded', 'shutting_down']) {
    let n = 0;
    const p = await fakePeer(() => (n++ === 0 ? { ok: false, error: code, message: 'x' } : HELD));
    const c = await connect({ hosts: [p.host], timeoutMs: 1000, retries: 3 });
    assert.equal((await c.hold({ event: 'E', user: 'u', qty: 1 })).hold, 'h1', code);
    assert.equal(p.seen[1].request, p.seen[0].request, code);
    await c.close();
    p.stop();
  }
  let n = 0;
  const p = await fakePeer(() => (n++ === 0 ? 'silence' : HELD));
  const c = await connect({ hosts: [p.host], timeoutMs: 300, retries: 2 });
  assert.equal((await c.hold({ event: 'E', user: 'u', qty: 1 })).hold, 'h1');
  assert.equal(p.seen[1].request, p.seen[0].request);
  await c.close();
  p.stop();
});

test('sold_out, invalid_argument, idempotency_conflict are never resent', async () => {
  const answers = [
    { ok: true, status: 'sold_out', available: 0 },
    { ok: false, error: 'invalid_argument', message: 'qty' },
    { ok: false, error: 'idempotency_conflict', message: 'k' },
  ];
  let i = 0;
  const p = await fakePeer(() => answers[i++]);
  const c = await connect({ hosts: [p.host], timeoutMs: 1000, retries: 5 });
  assert.equal((await c.hold({ event: 'E', user: 'u', qty: 1 })).status, 'sold_out');
  await assert.rejects(c.hold({ event: 'E', user: 'u', qty: 1 }), { code: 'invalid_argument' });
  await assert.rejects(c.hold({ event: 'E', user: 'u', qty: 1 }), { code: 'idempotency_conflict' });
  assert.equal(p.seen.length, 3);
  await c.close();
  p.stop();
});

test('every op is resent as it was (extend too); retries run out as unavailable with the last reply', async () => {
  let n = 0;
  const p = await fakePeer((req) =>
    req.op === 'extend' ? (n++ === 0 ? 'close' : { ok: true, status: 'held', hold: 'h', expires_at: 2, extensions: 1 }) : { ok: false, error: 'unavailable', message: 'no quorum' });
  const c = await connect({ hosts: [p.host], timeoutMs: 1000, retries: 2 });
  assert.equal((await c.extend({ event: 'E', hold: 'h', user: 'u', by_ms: 1000 })).extensions, 1);
  const ex = p.seen.filter((r) => r.op === 'extend');
  assert.deepEqual(ex[1], ex[0], 'the same fields');
  await assert.rejects(c.hold({ event: 'E', user: 'u', qty: 1, request: 'mine' }), (e) => {
    assert.ok(e instanceof SlotError);
    assert.equal(e.code, 'unavailable');
    assert.equal(e.reply.client, true);
    assert.equal(e.reply.attempts, 3);
    assert.equal(e.reply.last.message, 'no quorum');
    assert.equal(e.request, 'mine', 'the key to retry with later');
    return true;
  });
  assert.equal(p.seen.filter((r) => r.op === 'hold').length, 3, 'one try and 2 resends');
  await c.close();
  p.stop();
});
