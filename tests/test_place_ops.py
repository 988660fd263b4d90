#!/usr/bin/env python3
"""test_place_ops.py SLOTD — the placement's internal ops, driven by hand
(docs/design.md, "Moving an event"): two one-node sets of one placement on
one etcd; an event with holds (held, confirmed, released, one about to
expire), a block and a waitlist entry is exported from s1 in chunks, staged on
s2, relinquished by s1, its tail (what changed after the first copy) staged,
owned by s2 and given up for good by s1.

Checks: every internal op needs the cluster secret's mac (forbidden without
it, nothing changed); during the cut-over s1 serves reads and answers writes
`moving` with retry_after_ms, s2 answers `moving`; afterwards s1 answers
`wrong_set` naming s2 at gen 2, s2 serves the event: every hold by id with the
same fields, replays answered as before ("replay":true, same hold), the view
equal to s1's at the relinquish, `check` clean on both; a hold that was due
after the relinquish is expired by s2, never by s1; a cart over both sets is
cross_set; the feed of s1 ends the event with event.moved, s2's begins it with
event.arrived. An undone move: staged on s2, aborted there, reclaimed by s1,
which serves again; a late own on s2 is wrong_set. Bad input (a foreign key
in the records, a stage of an event s2 owns, an own with nothing staged):
clear errors, nothing changed. Needs etcd (else exit 77).
"""
import base64
import hashlib
import hmac
import json
import os
import shutil
import socket
import struct
import sys
import tempfile
import time

import slotd_kit as kit
from slotd_kit import check, require, call

ETCD = shutil.which('etcd') or '/usr/bin/etcd'
SECRET = b'placement-test-secret-0123456789'


def free_port():
    s = socket.socket()
    s.bind((kit.LOOPBACK, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_etcd(base):
    cport, pport = free_port(), free_port()
    client = 'http://%s:%d' % (kit.LOOPBACK, cport)
    peer = 'http://%s:%d' % (kit.LOOPBACK, pport)
    log = open(os.path.join(base, 'etcd.log'), 'w')
    import subprocess
    proc = subprocess.Popen([ETCD, '--name', 't', '--data-dir', os.path.join(base, 'etcd-data'),
                             '--listen-client-urls', client, '--advertise-client-urls', client,
                             '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
                             '--initial-cluster', 't=' + peer], stdout=log, stderr=log)
    kit.STARTED.append(proc)
    for _ in range(200):
        try:
            socket.create_connection((kit.LOOPBACK, cport), timeout=1).close()
            return client
        except OSError:
            time.sleep(0.05)
    sys.exit('etcd did not start')


def one(port, req):
    return call(port, [req])[0]


def signed(op, event, gen, set_='', data='', secret=SECRET, **more):
    msg = ('slotd-place-1\n%s\n%s\n%d\n%s\n' % (op, event, gen, set_)).encode() + data.encode()
    req = {'op': op, 'event': event, 'gen': gen, 'mac': hmac.new(secret, msg, hashlib.sha256).hexdigest()}
    if set_:
        req['set'] = set_
    if data:
        req['data'] = data
    req.update(more)
    return req


def records(raw):
    """export's records as {(db, key): value}, in order."""
    out, off = {}, 0
    while off < len(raw):
        db, klen = raw[off], struct.unpack('>H', raw[off + 1:off + 3])[0]
        off += 3
        k = raw[off:off + klen]
        off += klen
        vlen = struct.unpack('>I', raw[off:off + 4])[0]
        off += 4
        out[(db, k)] = raw[off:off + vlen]
        off += vlen
    return out


def pack(recs):
    b = b''
    for (db, k), v in recs:
        b += bytes([db]) + struct.pack('>H', len(k)) + k
        b += struct.pack('>I', 0xFFFFFFFF) if v is None else struct.pack('>I', len(v)) + v
    return b


def export_all(port, event, gen):
    out, cursor, chunks = {}, None, 0
    while True:
        req = signed('place_export', event, gen)
        if cursor:
            req['cursor'] = cursor
        r = one(port, req)
        require(r.get('ok'), 'place_export of %s' % event, r)
        raw = base64.b64decode(r['data'])
        got = records(raw)
        check(len(got) == r['count'], 'a chunk\'s count is its records', r['count'])
        out.update(got)
        chunks += 1
        cursor = r.get('cursor')
        if not cursor:
            return out, chunks


def stage(port, event, gen, src, recs, first):
    """stages recs (list of ((db,key), value|None)) in chunks of about 24 KiB."""
    chunk, size, n, firstsent = [], 0, 0, False
    items = list(recs)
    if not items:
        items = []
    i = 0
    while i < len(items) or (first and not firstsent):
        chunk, size = [], 0
        while i < len(items) and size < 24000:
            (db, k), v = items[i]
            chunk.append(items[i])
            size += 7 + len(k) + (len(v) if v else 0)
            i += 1
        data = base64.b64encode(pack(chunk)).decode()
        extra = {'first': True} if first and not firstsent else {}
        r = one(port, signed('place_stage', event, gen, src, data, **extra))
        require(r.get('ok') and r.get('count') == len(chunk), 'place_stage of %d records' % len(chunk), r)
        firstsent = True
        n += 1
    return n


def feed_lines(port, consumer):
    c = kit.Conn(port, 10)
    c.send({'op': 'subscribe', 'consumer': consumer, 'from': 'start', 'window': 10000})
    lines = []
    c.sock.settimeout(1.0)
    try:
        while True:
            lines.append(c.line())
    except (socket.timeout, OSError, ValueError):
        pass
    c.close()
    return [l for l in lines if 'feed' in l]


def main():
    slotd = sys.argv[1]
    if not os.access(ETCD, os.X_OK):
        print('etcd not found (install etcd-server)')
        sys.exit(77)
    base = tempfile.mkdtemp(prefix='slotd-placeops-')
    try:
        etcd_url = start_etcd(base)
        secret = os.path.join(base, 'secret')
        with open(secret, 'wb') as f:
            f.write(SECRET + b'\n')
        os.chmod(secret, 0o600)
        sets = {}
        for name in ('s1', 's2'):
            sets[name] = kit.Server(slotd, os.path.join(base, name), extra=[
                '--cluster', name, '--node', 'n1', '--etcd', etcd_url, '--cluster-secret-file', secret,
                '--placement', 'p', '--min-replicas', '0', '--heartbeat-ms', '50',
                '--failover-timeout-ms', '600', '--durability', 'nosync'],
                stderr_path=os.path.join(base, name + '.log'))
        p1, p2 = sets['s1'].port, sets['s2'].port
        for p in (p1, p2):
            deadline = time.time() + 30
            while time.time() < deadline and one(p, {'op': 'cluster'}).get('role') != 'primary':
                time.sleep(0.1)

        r = one(p1, {'op': 'create_event', 'event': 'hot', 'capacity': 5000, 'shards': 4, 'waitlist_max': 100,
                     'hold_ttl_ms': 600000})
        require(r.get('ok'), 'create hot on s1', r)
        require(one(p2, {'op': 'create_event', 'event': 'other', 'capacity': 10}).get('ok'), 'create other on s2')
        r = one(p1, {'op': 'allocate', 'event': 'hot', 'allocation': 'presale', 'qty': 50})
        require(r.get('ok'), 'a block on hot', r)
        holds = call(p1, [{'op': 'hold', 'event': 'hot', 'user': 'u%d' % (i % 50), 'request': 'r%d' % i, 'qty': 1 + i % 3}
                          for i in range(1500)])
        require(all(h.get('ok') for h in holds), '1500 holds on s1', [h for h in holds if not h.get('ok')][:2])
        ids = [h['hold'] for h in holds]
        out = call(p1, [{'op': 'confirm', 'event': 'hot', 'hold': ids[i], 'user': 'u%d' % (i % 50)} for i in range(0, 300, 3)] +
                   [{'op': 'release', 'event': 'hot', 'hold': ids[i], 'user': 'u%d' % (i % 50)} for i in range(1, 300, 3)])
        require(all(o.get('ok') for o in out), 'confirms and releases', [o for o in out if not o.get('ok')][:2])
        r = one(p1, {'op': 'hold', 'event': 'hot', 'user': 'blk', 'request': 'b1', 'qty': 2, 'allocation': 'presale'})
        require(r.get('ok'), 'a hold from the block', r)

        # every internal op needs the mac
        r = one(p1, {'op': 'place_relinquish', 'event': 'hot', 'gen': 1, 'set': 's2'})
        check(r.get('error') == 'forbidden', 'relinquish without a mac: forbidden', r)
        r = one(p1, signed('place_relinquish', 'hot', 1, 's2', secret=b'another-secret-0123456789abcdef'))
        check(r.get('error') == 'forbidden', 'relinquish with a wrong mac: forbidden', r)
        r = one(p1, {'op': 'hold', 'event': 'hot', 'user': 'x', 'request': 'after-forbidden', 'qty': 1})
        check(r.get('ok'), 'nothing changed: s1 still holds', r)
        r = one(p2, signed('place_stage', 'other', 2, 's1', base64.b64encode(pack([((1, b'\x05other'), b'x')])).decode(),
                           first=True))
        check(r.get('error') == 'invalid_argument', 'a stage of an event s2 owns: invalid_argument', r)
        r = one(p2, signed('place_own', 'hot', 2))
        check(r.get('error') == 'invalid_argument', 'an own with nothing staged: invalid_argument', r)
        st = one(p2, {'op': 'place_state', 'event': 'hot'})
        check(st.get('state') == 'absent' and st.get('exists') is False, 's2 has nothing of hot', st)

        # 1. the first copy, while s1 sells
        snap, chunks = export_all(p1, 'hot', 1)
        check(chunks > 1, 'the export came in several chunks (%d)' % chunks)
        foreign = base64.b64encode(pack([((3, b'\x05other' + b'\0' * 8), b'x')])).decode()
        r = one(p2, signed('place_stage', 'hot', 2, 's1', foreign, first=True))
        check(r.get('error') == 'invalid_argument', 'records with a key of another event: refused', r)
        check(one(p2, {'op': 'place_state', 'event': 'hot'}).get('state') == 'absent', 'and nothing was staged')
        stage(p2, 'hot', 2, 's1', sorted(snap.items()), True)
        check(one(p2, {'op': 'place_state', 'event': 'hot'}).get('state') == 'staged', 's2 staged hot at gen 2')
        r = one(p2, {'op': 'event', 'event': 'hot'})
        check(r.get('error') == 'moving' and r.get('retry_after_ms', 0) > 0, 's2 answers the staged event moving', r)
        late = call(p1, [{'op': 'hold', 'event': 'hot', 'user': 'late', 'request': 'late%d' % i, 'qty': 1} for i in range(40)])
        require(all(h.get('ok') for h in late), 'holds after the first copy', late[:2])
        short = one(p1, {'op': 'hold', 'event': 'hot', 'user': 'short', 'request': 's1', 'qty': 1})
        out = call(p1, [{'op': 'release', 'event': 'hot', 'hold': ids[400], 'user': 'u%d' % (400 % 50)},
                        {'op': 'confirm', 'event': 'hot', 'hold': ids[401], 'user': 'u%d' % (401 % 50)}])
        require(all(o.get('ok') for o in out), 'a release and a confirm after the first copy', out)

        # 2. the relinquish: the cut-over
        r = one(p1, signed('place_relinquish', 'hot', 1, 's2'))
        require(r.get('ok'), 'relinquish on s1', r)
        r2 = one(p1, signed('place_relinquish', 'hot', 1, 's2'))
        check(r2.get('ok'), 'relinquish again: as before', r2)
        view1 = one(p1, {'op': 'event', 'event': 'hot'})
        check(view1.get('ok'), 's1 serves reads in the cut-over', view1)
        r = one(p1, {'op': 'hold', 'event': 'hot', 'user': 'x', 'request': 'in-cutover', 'qty': 1})
        check(r.get('error') == 'moving' and r.get('retry_after_ms', 0) > 0, 's1 answers writes moving', r)
        r = one(p1, {'op': 'hold', 'event': 'hot', 'user': 'u0', 'request': 'r0', 'qty': 1})
        check(r.get('error') == 'moving', 'a replay in the cut-over is a write: moving', r)
        g = one(p1, {'op': 'get_hold', 'event': 'hot', 'hold': ids[5], 'user': 'u5'})
        check(g.get('ok'), 'get_hold on s1 in the cut-over', g)

        # 3. the tail: what changed after the first copy
        now, _ = export_all(p1, 'hot', 1)
        tail = [(k, v) for k, v in sorted(now.items()) if snap.get(k) != v] + \
               [(k, None) for k in sorted(snap) if k not in now]
        check(len(tail) >= 40, 'the tail holds the late holds and changes (%d records)' % len(tail))
        stage(p2, 'hot', 2, 's1', tail, False)

        # 4. own on s2, done on s1
        r = one(p2, signed('place_own', 'hot', 2))
        require(r.get('ok') and r.get('gen') == 2, 'own on s2 at gen 2', r)
        r = one(p1, {'op': 'hold', 'event': 'hot', 'user': 'x', 'request': 'before-done', 'qty': 1})
        check(r.get('error') == 'moving', 's1 still moving before done', r)
        r = one(p1, signed('place_done', 'hot', 2))
        require(r.get('ok'), 'done on s1', r)
        r = one(p1, {'op': 'hold', 'event': 'hot', 'user': 'x', 'request': 'after', 'qty': 1})
        check(r.get('error') == 'wrong_set' and r.get('set') == 's2' and r.get('gen') == 2 and r.get('event') == 'hot',
              's1 answers wrong_set naming s2 at gen 2', r)
        check(r.get('primary') == '127.0.0.1:%d' % p2, 'with s2\'s primary (the map\'s copy)', r)
        r = one(p1, {'op': 'event', 'event': 'hot'})
        check(r.get('error') == 'wrong_set', 'reads too, once it is gone', r)
        deadline = time.time() + 10
        while time.time() < deadline:
            r = one(p1, {'op': 'hold', 'event': 'other', 'user': 'x', 'request': 'x1', 'qty': 1})
            if r.get('error') == 'wrong_set':
                break
            time.sleep(0.1)
        check(r.get('error') == 'wrong_set' and r.get('set') == 's2' and r.get('gen') == 1 and
              r.get('primary') == '127.0.0.1:%d' % p2,
              'an event s1 never had but the map places on s2: wrong_set, not unknown_event', r)
        r = one(p1, {'op': 'event', 'event': 'nowhere'})
        check(r.get('error') == 'unknown_event', 'a name the map does not hold: unknown_event', r)

        view2 = one(p2, {'op': 'event', 'event': 'hot'})
        for k in ('capacity', 'available', 'held', 'confirmed', 'allocated', 'shards'):
            check(view2.get(k) == view1.get(k), 'the view\'s %s on s2 is s1\'s at the relinquish' % k,
                  (view1.get(k), view2.get(k)))
        allids = [(h['hold'], 'u%d' % (i % 50)) for i, h in enumerate(holds)] + \
                 [(h['hold'], 'late') for h in late] + [(short['hold'], 'short')]
        got = call(p2, [{'op': 'get_hold', 'event': 'hot', 'hold': h, 'user': u} for h, u in allids])
        check(all(g.get('ok') for g in got) and len(got) == len(allids), 'every hold found on s2 by id',
              [g for g in got if not g.get('ok')][:3])
        reps = call(p2, [{'op': 'hold', 'event': 'hot', 'user': 'u%d' % (i % 50), 'request': 'r%d' % i, 'qty': 1 + i % 3}
                         for i in range(0, 1500, 7)])
        check(all(r.get('ok') and r.get('replay') and r.get('hold') == holds[i * 7]['hold'] for i, r in enumerate(reps)),
              'replays on s2 answer the same holds', [r for r in reps if not r.get('replay')][:2])
        r = one(p2, {'op': 'hold', 'event': 'hot', 'user': 'new', 'request': 'n1', 'qty': 1})
        check(r.get('ok') and r.get('status') == 'held', 'a new hold on s2', r)
        r = one(p2, {'op': 'hold', 'event': 'hot', 'user': 'blk2', 'request': 'b2', 'qty': 1, 'allocation': 'presale'})
        check(r.get('ok'), 'the block moved with it', r)
        for name, p in (('s1', p1), ('s2', p2)):
            c = one(p, {'op': 'check'})
            check(c.get('ok') and c.get('violations') == [], 'check clean on %s' % name, c)
        r = one(p2, {'op': 'hold_many', 'user': 'c', 'request': 'c1',
                     'items': [{'event': 'hot', 'qty': 1}, {'event': 'gone', 'qty': 1}]})
        check(r.get('error') == 'unknown_event', 'a cart with an unknown event', r)

        # the feed: s1 ends hot with event.moved, s2 begins it with event.arrived
        f1 = [l for l in feed_lines(p1, 'w1') if l.get('event') == 'hot']
        f2 = [l for l in feed_lines(p2, 'w2') if l.get('event') == 'hot']
        check(f1 and f1[-1].get('type') == 'event.moved' and f1[-1].get('to') == 's2' and f1[-1].get('gen') == 2,
              's1\'s feed ends hot with event.moved', f1[-1:] if f1 else f1)
        check(f2 and f2[0].get('type') == 'event.arrived' and f2[0].get('from') == 's1' and f2[0].get('gen') == 2 and
              f2[0].get('held') == view1.get('held'), 's2\'s feed begins hot with event.arrived', f2[:1])

        # expiry: a hold due in the cut-over is expired by the new owner, never by the old
        require(one(p1, {'op': 'create_event', 'event': 'ttl', 'capacity': 10, 'hold_ttl_ms': 1000}).get('ok'),
                'create ttl on s1')
        th = one(p1, {'op': 'hold', 'event': 'ttl', 'user': 't', 'request': 't1', 'qty': 2})
        require(th.get('ok'), 'a hold of 1 s on ttl', th)
        snap, _ = export_all(p1, 'ttl', 1)
        stage(p2, 'ttl', 2, 's1', sorted(snap.items()), True)
        require(one(p1, signed('place_relinquish', 'ttl', 1, 's2')).get('ok'), 'relinquish ttl')
        time.sleep(2.5)  # past the hold's expiry: s1's sweeper runs every few hundred ms
        v = one(p1, {'op': 'event', 'event': 'ttl'})
        check(v.get('held') == 2, 's1 did not expire the relinquished event\'s hold', v)
        require(one(p2, signed('place_own', 'ttl', 2)).get('ok'), 'own ttl on s2')
        require(one(p1, signed('place_done', 'ttl', 2)).get('ok'), 'done ttl on s1')
        deadline, g = time.time() + 10, {}
        while time.time() < deadline:
            g = one(p2, {'op': 'event', 'event': 'ttl'})
            if g.get('held') == 0:
                break
            time.sleep(0.1)
        check(g.get('held') == 0 and g.get('available') == 10, 's2 expired it (its expiry index was made at own)', g)
        g = one(p2, {'op': 'get_hold', 'event': 'ttl', 'hold': th['hold'], 'user': 't'})
        check(g.get('status') == 'expired', 'the hold is expired on s2', g)

        # an undone move: staged on s1 (back), aborted there, reclaimed by s2
        r = one(p2, {'op': 'create_event', 'event': 'undo', 'capacity': 20})
        require(r.get('ok'), 'create undo on s2', r)
        require(one(p2, {'op': 'hold', 'event': 'undo', 'user': 'a', 'request': 'a1', 'qty': 3}).get('ok'), 'a hold on undo')
        snap, _ = export_all(p2, 'undo', 1)
        stage(p1, 'undo', 2, 's2', sorted(snap.items()), True)
        require(one(p2, signed('place_relinquish', 'undo', 1, 's1')).get('ok'), 'relinquish undo on s2')
        r = one(p1, signed('place_abort', 'undo', 2, 's2'))
        require(r.get('ok'), 'abort on s1', r)
        r = one(p1, signed('place_own', 'undo', 2))
        check(r.get('error') == 'wrong_set' and r.get('set') == 's2', 'a late own after the abort: wrong_set', r)
        r = one(p2, signed('place_reclaim', 'undo', 1))
        check(r.get('error') == 'invalid_argument', 'a reclaim at the move\'s own gen is refused', r)
        r = one(p2, signed('place_reclaim', 'undo', 2))
        require(r.get('ok') and r.get('gen') == 2, 'reclaim on s2 at gen 2', r)
        r = one(p2, signed('place_reclaim', 'undo', 2))
        check(r.get('ok') and r.get('gen') == 2, 'a reclaim again answers as before', r)
        r = one(p2, {'op': 'place_state', 'event': 'undo'})
        check(r.get('state') == 'owned' and r.get('gen') == 2, 's2 owns undo at gen 2 after the undo', r)
        r = one(p2, {'op': 'hold', 'event': 'undo', 'user': 'b', 'request': 'b1', 'qty': 2})
        check(r.get('ok') and r.get('status') == 'held', 's2 sells undo again', r)
        r = one(p2, {'op': 'hold', 'event': 'undo', 'user': 'a', 'request': 'a1', 'qty': 3})
        check(r.get('ok') and r.get('replay'), 'and answers its replays', r)
        r = one(p1, {'op': 'event', 'event': 'undo'})
        check(r.get('error') == 'wrong_set' and r.get('set') == 's2' and r.get('gen') == 2,
              's1 sends undo\'s buyers to s2 at gen 2', r)
        r = one(p1, signed('place_purge', 'undo', 2))
        check(r.get('ok') and r.get('more') is False and r.get('count', 0) > 0, 'the aborted stage purged', r)
        # the undone move's target takes the event in a later move (it used to stay
        # refused: aborted at the gen the next move staged at)
        snap, _ = export_all(p2, 'undo', 2)
        stage(p1, 'undo', 3, 's2', sorted(snap.items()), True)
        require(one(p2, signed('place_relinquish', 'undo', 2, 's1')).get('ok'), 'relinquish undo on s2 at gen 2')
        r = one(p1, signed('place_own', 'undo', 2))
        check(not r.get('ok') and r.get('error') in ('wrong_set', 'invalid_argument'),
              'a stale own at the undone gen is still refused', r)
        r = one(p1, signed('place_own', 'undo', 3))
        check(r.get('ok') and r.get('gen') == 3, 'the next move owns undo on s1 at gen 3', r)
        require(one(p2, signed('place_done', 'undo', 3)).get('ok'), 'done on s2 at gen 3')
        r = one(p1, {'op': 'hold', 'event': 'undo', 'user': 'b', 'request': 'b1', 'qty': 2})
        check(r.get('ok') and r.get('replay'), 's1 answers the replay of a hold made after the undo', r)
        r = one(p2, {'op': 'event', 'event': 'undo'})
        check(r.get('error') == 'wrong_set' and r.get('set') == 's1' and r.get('gen') == 3, 's2 sends undo to s1', r)
        for name, p in (('s1', p1), ('s2', p2)):
            c = one(p, {'op': 'check'})
            check(c.get('ok') and c.get('violations') == [], 'check clean on %s after the undo' % name, c)
        for name, srv in sets.items():
            check(srv.stop() == 0, 'set %s stops cleanly' % name, srv.stderr_text()[-2000:])
    finally:
        kit.stop_all()
        shutil.rmtree(base, ignore_errors=True)
    kit.finish()


if __name__ == '__main__':
    main()
