#!/usr/bin/env python3
"""test_sold_out.py — the sold-out read path (docs/design.md, "The sold-out
read path"): a hold that is certainly sold_out is answered from the read
snapshot, with the write path's exact answer.

    test_sold_out.py SLOTD

1. Differential: one seeded stream of holds (new and repeated keys, other
   users' keys, cart and waitlist keys, qty over the limits), releases,
   confirms, cancels, capacity changes, status changes, waitlist joins and
   leaves, carts, and a sold-out event with a 1 s TTL whose holds are due
   after a pause (the write path expires them first), one request at a time to a
   slotd and to a slotd with --no-read-path: every reply equal (hold ids
   compared by their sequence part, expires_at left out: both are per
   server), stats' sold_out equal, sold_out_fast > 0 on the first and 0 on
   the second (so the comparison is not vacuous).
2. A held key replayed on a sold-out event is answered held with
   replay:true, never sold_out, also after a restart.
3. A hold racing its own first copy (pipelined on one connection, and on two
   connections) is never told sold_out: both copies answer held.
Servers listen on 127.0.0.1:0 in temporary folders and are stopped by PID.
"""
import json
import os
import random
import sys
import tempfile
import time

from slotd_kit import Conn, Server, check, finish, stop_all



def normal(v):
    """A reply with what differs between two servers by design taken out:
    hold ids keep their sequence part (the first 16 hex digits), times go."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k in ('expires_at', 'created_at', 'confirmed_at'):
                continue
            if k == 'hold' and isinstance(x, str) and len(x) == 32:
                x = x[:16]
            out[k] = normal(x)
        return out
    if isinstance(v, list):
        return [normal(x) for x in v]
    return v


EVENTS = [
    {"op": "create_event", "event": "a", "capacity": 6, "shards": 3, "max_per_request": 3},
    {"op": "create_event", "event": "u", "capacity": 5, "shards": 2, "max_per_user": 2},
    {"op": "create_event", "event": "w", "capacity": 3, "shards": 1, "waitlist_max": 20},
    {"op": "create_event", "event": "t", "capacity": 3, "shards": 2, "hold_ttl_ms": 1000},
]
USERS = ['ann', 'bob', 'cy']


class Pair:
    """The same request to both servers, one at a time; replies compared."""

    def __init__(self, fast, slow):
        self.fast, self.slow = fast, slow
        self.ids = [{}, {}]  # per server: (event, user, request) -> hold id
        self.n = 0
        self.events = None  # when set: the events whose holds by_hold may name

    def ask(self, req, key=None):
        r = [self.fast.ask(req), self.slow.ask(req)]
        self.n += 1
        check(normal(r[0]) == normal(r[1]), 'request %d %s: %s (read path) != %s (write path)' %
              (self.n, json.dumps(req), json.dumps(r[0]), json.dumps(r[1])))
        for i in range(2):
            if key and r[i].get('hold'):
                self.ids[i][key] = r[i]['hold']
            for item in r[i].get('holds', []) or []:
                if isinstance(item, dict) and item.get('hold') and item.get('event'):
                    self.ids[i][(item['event'], req.get('user'), req.get('request'))] = item['hold']
        return r[0]

    def by_hold(self, op, key, extra=None):
        if key not in self.ids[0] or key not in self.ids[1]:
            return
        if self.events is not None and key[0] not in self.events:
            return
        reqs = []
        for i in range(2):
            q = {"op": op, "event": key[0], "hold": self.ids[i][key]}
            if op != 'cancel':
                q["user"] = key[1]
            q.update(extra or {})
            reqs.append(q)
        r = [self.fast.ask(reqs[0]), self.slow.ask(reqs[1])]
        self.n += 1
        check(normal(r[0]) == normal(r[1]), 'request %d %s: %s != %s' % (self.n, json.dumps(reqs[0]),
                                                                        json.dumps(r[0]), json.dumps(r[1])))


def step(p, rnd, events):
    ev = rnd.choice(events)
    user = rnd.choice(USERS)
    # Mostly hold keys, sometimes a cart's or a waitlist's key (a clash).
    key = rnd.choice(['k%d' % i for i in range(8)] + ['c0', 'c1', 'j0', 'j1'])
    x = rnd.random()
    if x < 0.55:
        qty = rnd.choice([1, 1, 1, 2, 3, 4])
        p.ask({"op": "hold", "event": ev, "user": user, "request": key, "qty": qty}, (ev, user, key))
    elif x < 0.63:
        keys = list(p.ids[0])
        if keys:
            p.by_hold('release', rnd.choice(keys))
    elif x < 0.68:
        keys = list(p.ids[0])
        if keys:
            p.by_hold('confirm', rnd.choice(keys))
    elif x < 0.71:
        keys = list(p.ids[0])
        if keys:
            p.by_hold('cancel', rnd.choice(keys))
    elif x < 0.76:
        p.ask({"op": "set_capacity", "event": ev, "capacity": rnd.randrange(0, 9)})
    elif x < 0.79:
        p.ask({"op": "set_status", "event": ev, "status": rnd.choice(["closed", "on_sale", "on_sale"])})
    elif x < 0.86:
        j = 'j%d' % rnd.randrange(6)
        p.ask({"op": "waitlist_join", "event": "w", "user": user, "request": j, "qty": rnd.choice([1, 2])},
              ("w", user, j))
    elif x < 0.89:
        p.ask({"op": "waitlist_leave", "event": "w", "user": user, "request": 'j%d' % rnd.randrange(6)})
    elif x < 0.95:
        other = rnd.choice([e for e in events if e != ev])
        p.ask({"op": "hold_many", "user": user, "request": 'c%d' % rnd.randrange(6),
               "items": [{"event": ev, "qty": 1}, {"event": other, "qty": rnd.choice([1, 2])}]})
    else:
        p.ask({"op": "event", "event": ev})


def stats(port):
    c = Conn(port)
    s = c.ask({"op": "stats"})
    c.close()
    return s


def differential(binary, tmp):
    fast = Server(binary, os.path.join(tmp, 'fast'))
    slow = Server(binary, os.path.join(tmp, 'slow'), ['--no-read-path'])
    p = Pair(Conn(fast.port), Conn(slow.port))
    for ev in EVENTS:
        p.ask(ev)
    rnd = random.Random(int(os.environ.get('SLOT_TEST_SEED', '13')))
    names = [e['event'] for e in EVENTS]
    # The 1 s TTL event t is used only in two short bursts around a pause:
    # its holds are held before the pause on both servers and due after it,
    # whatever the pace of the rest.
    p.events = [n for n in names if n != 't']
    for _ in range(300):
        step(p, rnd, p.events)
    # Sell t out with fresh holds that will be due after the pause: a new
    # key then must not be told sold_out from the snapshot, whose due holds
    # the write path expires first.
    p.ask({"op": "set_status", "event": "t", "status": "on_sale"})
    p.ask({"op": "set_capacity", "event": "t", "capacity": 20})
    for i in range(8):
        p.ask({"op": "hold", "event": "t", "user": "fill", "request": 'f%d' % i, "qty": 4})
    time.sleep(1.5)
    for i in range(6):
        p.ask({"op": "hold", "event": "t", "user": "late", "request": 'l%d' % i, "qty": 4})
    # From here on t's holds may expire at any moment: it is left alone.
    for _ in range(300):
        step(p, rnd, p.events)
    # Sold out for certain: a sell-out of a fresh event, then new keys.
    p.ask({"op": "create_event", "event": "s", "capacity": 2, "shards": 2})
    for i in range(40):
        p.ask({"op": "hold", "event": "s", "user": 'x%d' % (i % 5), "request": 's%d' % i, "qty": 1 + i % 2},
              ("s", 'x%d' % (i % 5), 's%d' % i))
    sf, ss = stats(fast.port), stats(slow.port)
    check(sf['sold_out'] == ss['sold_out'], 'sold_out counted alike: %d vs %d' % (sf['sold_out'], ss['sold_out']))
    check(sf['holds'] == ss['holds'], 'holds counted alike: %d vs %d' % (sf['holds'], ss['holds']))
    check(sf['requests'] == ss['requests'], 'requests by op counted alike')
    check(sf['sold_out_fast'] > 0, 'the read path answered some sold_out (%d)' % sf['sold_out_fast'])
    check(ss['sold_out_fast'] == 0, '--no-read-path answers none from the read path (%d)' % ss['sold_out_fast'])
    check(sf['sold_out_fast'] <= sf['sold_out'], 'sold_out_fast counts within sold_out')
    print('differential: %d requests, sold_out %d, of them read path %d' % (p.n, sf['sold_out'],
                                                                            sf['sold_out_fast']))
    for s in (fast, slow):
        check(s.stop() == 0, 'slotd stops cleanly')


def replay_and_restart(binary, tmp):
    data = os.path.join(tmp, 'replay')
    srv = Server(binary, data)
    c = Conn(srv.port)
    c.ask({"op": "create_event", "event": "g", "capacity": 1, "shards": 1})
    first = c.ask({"op": "hold", "event": "g", "user": "ann", "request": "k1", "qty": 1})
    check(first.get('status') == 'held', 'the first hold is held: %r' % first)
    # A read first: with --durability pipelined the read path answers only once
    # LMDB holds every batch that ran, and a read waits for that commit.
    c.ask({"op": "event", "event": "g"})
    out = c.ask({"op": "hold", "event": "g", "user": "bob", "request": "k1", "qty": 1})
    check(out == {"ok": True, "status": "sold_out", "available": 0}, 'a new key is sold_out: %r' % out)
    before = c.ask({"op": "stats"})['sold_out_fast']
    check(before >= 1, 'that sold_out came from the read path')
    for _ in range(3):
        r = c.ask({"op": "hold", "event": "g", "user": "ann", "request": "k1", "qty": 1})
        check(r.get('status') == 'held' and r.get('replay') is True and r.get('hold') == first.get('hold'),
              'the held key replays held on the sold-out event: %r' % r)
    c.close()
    check(srv.stop() == 0, 'slotd stops cleanly')
    srv = Server(binary, data)
    c = Conn(srv.port)
    r = c.ask({"op": "hold", "event": "g", "user": "ann", "request": "k1", "qty": 1})
    check(r.get('status') == 'held' and r.get('replay') is True and r.get('hold') == first.get('hold'),
          'after a restart the held key still replays held: %r' % r)
    r = c.ask({"op": "hold", "event": "g", "user": "ann", "request": "k1", "qty": 2})
    check(r.get('error') == 'idempotency_conflict', 'after a restart another qty is a conflict: %r' % r)
    r = c.ask({"op": "hold", "event": "g", "user": "cy", "request": "k2", "qty": 1})
    check(r == {"ok": True, "status": "sold_out", "available": 0}, 'a new key is sold_out after restart: %r' % r)
    s = c.ask({"op": "stats"})
    check(s['sold_out_fast'] == 1 and s['sold_out'] == 1, 'only the new key took the read path: %r' %
          {k: s[k] for k in ('sold_out', 'sold_out_fast')})
    c.close()
    check(srv.stop() == 0, 'slotd stops cleanly')


def racing(binary, tmp):
    srv = Server(binary, os.path.join(tmp, 'race'))
    a, b = Conn(srv.port), Conn(srv.port)
    # A busy sold-out event beside, so the read path is in use throughout.
    a.ask({"op": "create_event", "event": "full", "capacity": 1, "shards": 1})
    a.ask({"op": "hold", "event": "full", "user": "z", "request": "z", "qty": 1})
    for i in range(60):
        ev = 'r%d' % i
        a.ask({"op": "create_event", "event": ev, "capacity": 1, "shards": 1})
        h = {"op": "hold", "event": ev, "user": "ann", "request": "k", "qty": 1}
        noise = {"op": "hold", "event": "full", "user": "n", "request": 'n%d' % i, "qty": 1}
        if i % 2 == 0:  # one connection, pipelined: both copies in one write
            a.send(noise, h, h, noise)
            got = [a.line() for _ in range(4)]
            copies = got[1:3]
            check(got[0].get('status') == 'sold_out' and got[3].get('status') == 'sold_out',
                  'the other event is sold_out: %r' % got)
        else:  # two connections, sent back to back
            a.send(h)
            b.send(noise, h)
            copies = [a.line(), b.line(), b.line()]
            copies = [copies[0], copies[2]]
        check(all(r.get('status') == 'held' for r in copies), 'both copies of a racing key are held: %r' % copies)
        check(sum(1 for r in copies if r.get('replay')) == 1, 'one of them is the replay: %r' % copies)
        check(copies[0].get('hold') == copies[1].get('hold'), 'the same hold: %r' % copies)
    # A release pipelined before a hold on the same connection: the hold
    # sees the unit come back (docs/protocol.md, "Ordering"), never a
    # snapshot from before the release.
    for i in range(30):
        ev = 'p%d' % i
        a.ask({"op": "create_event", "event": ev, "capacity": 1, "shards": 1})
        first = a.ask({"op": "hold", "event": ev, "user": "ann", "request": "k", "qty": 1})
        a.send({"op": "hold", "event": ev, "user": "cy", "request": "before", "qty": 1},
               {"op": "release", "event": ev, "user": "ann", "hold": first.get('hold')},
               {"op": "hold", "event": ev, "user": "bob", "request": "after", "qty": 1})
        got = [a.line() for _ in range(3)]
        check(got[0].get('status') == 'sold_out', 'sold out before the release: %r' % got[0])
        check(got[1].get('status') == 'released', 'released: %r' % got[1])
        check(got[2].get('status') == 'held', 'the hold after the release gets the unit: %r' % got[2])
    s = a.ask({"op": "stats"})
    check(s['sold_out_fast'] > 0, 'the read path answered the other event (%d)' % s['sold_out_fast'])
    a.close()
    b.close()
    check(srv.stop() == 0, 'slotd stops cleanly')


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: test_sold_out.py SLOTD')
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            differential(binary, tmp)
            replay_and_restart(binary, tmp)
            racing(binary, tmp)
        finally:
            stop_all()
    finish()


if __name__ == '__main__':
    main()
