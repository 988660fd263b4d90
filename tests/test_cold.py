#!/usr/bin/env python3
"""test_cold.py — cold events (docs/design.md, "Cold events load in
slices"): the first request on a closed, settled event waits for that
event's keys while everyone else's requests go on.

    test_cold.py SLOTD GEN_STORE [SLOTD_FLAG...]

A store from bench/gen_store: 200,000 holds over 20 events, ev-00000 on
sale, the 19 others closed and settled (cold: their keys stay on disk).

1. A sale under a cold touch: four connections hold on ev-00000 one request
   at a time while a fifth sends, event after event, [stats, a hold on a
   closed event, stats] pipelined. The stats pair frames the cold hold on its
   own connection (its first stats runs at arrival, its second once the hold
   is answered), so counts show what the server did meanwhile, with no clock:
   the commit thread made at least ceil(10,000 / 1,024) batches (one slice of
   the event's keys each, at the default --cold-load-keys) and the sale's
   holds went on committing. A cold load in the batch (the old behaviour, or
   --no-cold-park) answers the hold in the batch it came in: one or two
   commits, no sale hold in between. Every sale request is answered.
2. Differential: one seeded stream, pipelined a few requests at a time on one
   connection, against a slotd and a slotd with --no-cold-park on copies of
   the store: new keys, replays and key conflicts on closed events, carts
   over a closed and the live event, waitlist joins, a closed event opened
   again and held, confirms and releases of replayed holds, reads; every
   reply equal (hold ids by their sequence part, times left out), stats
   cold_parked > 0 on the first and 0 on the second.
3. A stop while a hold is parked answers it (shutting_down or its answer) and
   slotd exits 0.
Servers listen on 127.0.0.1:0 in temporary folders and are stopped by PID;
every loop is bounded by a count and a deadline.
"""
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from slotd_kit import Conn, Server, check, finish, stop_all

HOLDS, EVENTS = 200000, 20
PER_EVENT = HOLDS // EVENTS
SLICE = 1024  # --cold-load-keys' default (slot/limits.h)
SALE_CONNS = 4
DEADLINE_S = 120


def gen_key(j, evi):
    """gen_store's user and request key of hold j (from 0) of event evi."""
    m = (1 << 64) - 1
    x = (((j + 1) * 0x9e3779b97f4a7c15) & m) ^ (evi << 40)
    return 'u%d' % j, 'r-%016x' % (x ^ (x >> 29))


def ev(i):
    return 'ev-%05d' % i


def make_store(gen, data):
    out = subprocess.run([gen, '--data', data, '--holds', str(HOLDS), '--events', str(EVENTS)],
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        sys.exit('gen_store failed: %s' % out.stderr)


def sale_worker(port, wid, stop, tally):
    c = Conn(port)
    sent = answered = bad = 0
    t_end = time.monotonic() + DEADLINE_S
    while not stop.is_set() and sent < 200000 and time.monotonic() < t_end:
        r = c.ask({"op": "hold", "event": ev(0), "user": 's%d' % wid, "request": 's%d-%d' % (wid, sent), "qty": 1})
        sent += 1
        answered += 1
        if r.get('status') not in ('held', 'sold_out'):
            bad += 1
    c.close()
    tally[wid] = (sent, answered, bad)


def concurrent(binary, gen, tmp, extra):
    data = os.path.join(tmp, 'sale')
    make_store(gen, data)
    srv = Server(binary, data, extra)
    stop = threading.Event()
    tally = {}
    workers = [threading.Thread(target=sale_worker, args=(srv.port, w, stop, tally)) for w in range(SALE_CONNS)]
    for w in workers:
        w.start()
    cold = Conn(srv.port)
    # The sale is under way before the first touch.
    t_end = time.monotonic() + DEADLINE_S
    while cold.ask({"op": "stats"})['holds'] < 20 and time.monotonic() < t_end:
        time.sleep(0.01)
    need = math.ceil(PER_EVENT / SLICE)
    worst_commits, worst_holds = None, None
    sale_during = 0
    for i in range(1, EVENTS):
        u, r = gen_key(7, i)
        cold.send({"op": "stats"}, {"op": "hold", "event": ev(i), "user": 'c%d' % i, "request": 'fresh', "qty": 1},
                  {"op": "hold", "event": ev(i), "user": u, "request": r, "qty": 1}, {"op": "stats"})
        before, fresh, replay, after = cold.line(), cold.line(), cold.line(), cold.line()
        check(fresh.get('error') == 'not_on_sale', '%s: a new key on a closed event is not_on_sale: %r' % (ev(i), fresh))
        check(replay.get('status') == 'confirmed' and replay.get('replay') is True,
              '%s: a known key replays its confirmed hold: %r' % (ev(i), replay))
        commits, holds = after['commits'] - before['commits'], after['holds'] - before['holds']
        worst_commits = commits if worst_commits is None else min(worst_commits, commits)
        worst_holds = holds if worst_holds is None else min(worst_holds, holds)
        check(commits >= need, '%s: the commit thread kept making batches while the cold event loaded: '
              '%d commits between arrival and answer, want >= %d' % (ev(i), commits, need))
        sale_during += holds
    # The sale's holds committed while the touches waited, summed over them:
    # a load in the batch lets at most two batches of the sale (one hold per
    # sale connection each) commit between a touch's arrival and its answer.
    touches = EVENTS - 1
    check(sale_during > 2 * SALE_CONNS * touches, 'the sale kept committing holds while cold events loaded: '
          '%d holds during %d touches, want > %d' % (sale_during, touches, 2 * SALE_CONNS * touches))
    stop.set()
    for w in workers:
        w.join(timeout=DEADLINE_S)
    s = cold.ask({"op": "stats"})
    cold.close()
    sent = sum(t[0] for t in tally.values())
    check(len(tally) == SALE_CONNS, 'every sale connection finished (%d of %d)' % (len(tally), SALE_CONNS))
    check(sent > 0 and sum(t[1] for t in tally.values()) == sent, 'every sale request was answered')
    check(sum(t[2] for t in tally.values()) == 0, 'every sale reply is held or sold_out')
    check(s.get('cold_loaded', 0) == EVENTS - 1, 'stats: %s cold events loaded in slices' % s.get('cold_loaded'))
    print('concurrent: %d sale holds sent; per cold touch at least %s commits and %s sale holds between its '
          'arrival and its answer (want >= %d and > %d); cold_parked %s, cold_slices %s' %
          (sent, worst_commits, worst_holds, need, 2 * SALE_CONNS, s.get('cold_parked'), s.get('cold_slices')))
    check(srv.stop() == 0, 'slotd stops cleanly')


def normal(v):
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


def differential(binary, gen, tmp, extra):
    base = os.path.join(tmp, 'diff-a')
    make_store(gen, base)
    shutil.copytree(base, os.path.join(tmp, 'diff-b'))
    a = Server(binary, base, extra)
    b = Server(binary, os.path.join(tmp, 'diff-b'), list(extra) + ['--no-cold-park'])
    ca, cb = Conn(a.port), Conn(b.port)
    rnd = random.Random(int(os.environ.get('SLOT_TEST_SEED', '25')))
    known = []  # (event, user, hold id on a, hold id on b) of replayed holds
    n = 0
    opened = set()
    t_end = time.monotonic() + DEADLINE_S
    for _ in range(120):
        if time.monotonic() > t_end:
            check(False, 'differential: within %d s' % DEADLINE_S)
            break
        chunk = []
        for _ in range(rnd.randrange(1, 7)):
            i = rnd.randrange(1, EVENTS)
            j = rnd.randrange(PER_EVENT)
            u, r = gen_key(j, i)
            x = rnd.random()
            if x < 0.25:
                chunk.append({"op": "hold", "event": ev(i), "user": u, "request": r, "qty": 1})
            elif x < 0.32:
                chunk.append({"op": "hold", "event": ev(i), "user": u, "request": r, "qty": 2})
            elif x < 0.45:
                chunk.append({"op": "hold", "event": ev(i), "user": 'n%d' % rnd.randrange(5),
                              "request": 'k%d' % rnd.randrange(5), "qty": rnd.choice([1, 2])})
            elif x < 0.55:
                chunk.append({"op": "hold", "event": ev(0), "user": 'live', "request": 'l%d' % rnd.randrange(40),
                              "qty": 1})
            elif x < 0.63:
                chunk.append({"op": "hold_many", "user": 'n%d' % rnd.randrange(5), "request": 'c%d' % rnd.randrange(4),
                              "items": [{"event": ev(i), "qty": 1}, {"event": ev(0), "qty": 1}]})
            elif x < 0.68:
                chunk.append({"op": "waitlist_join", "event": ev(i), "user": u, "request": r, "qty": 1})
            elif x < 0.72 and len(opened) < 3:
                opened.add(i)
                chunk.append({"op": "set_status", "event": ev(i), "status": "on_sale"})
            elif x < 0.80 and known:
                e, user, ha, hb = rnd.choice(known)
                op = rnd.choice(['release', 'confirm'])
                chunk.append((op, e, user, ha, hb))
            else:
                chunk.append({"op": "event", "event": ev(i)})
        reqs = [[], []]
        for q in chunk:
            if isinstance(q, tuple):
                op, e, user, ha, hb = q
                reqs[0].append({"op": op, "event": e, "user": user, "hold": ha})
                reqs[1].append({"op": op, "event": e, "user": user, "hold": hb})
            else:
                reqs[0].append(q)
                reqs[1].append(q)
        ca.send(*reqs[0])
        cb.send(*reqs[1])
        ra = [ca.line() for _ in reqs[0]]
        rb = [cb.line() for _ in reqs[1]]
        for q, x, y in zip(reqs[0], ra, rb):
            n += 1
            check(normal(x) == normal(y), 'request %d %s: %s (parked) != %s (loaded in the batch)' %
                  (n, json.dumps(q), json.dumps(x), json.dumps(y)))
            if q['op'] == 'hold' and x.get('hold') and y.get('hold'):
                known.append((q['event'], q['user'], x['hold'], y['hold']))
    sa, sb = ca.ask({"op": "stats"}), cb.ask({"op": "stats"})
    check(sa.get('cold_parked', 0) > 0, 'the first server parked requests (%s)' % sa.get('cold_parked'))
    check(sb.get('cold_parked', 0) == 0, '--no-cold-park parks none (%s)' % sb.get('cold_parked'))
    check(sa['holds'] == sb['holds'] and sa['errors'] == sb['errors'], 'holds and errors counted alike')
    print('differential: %d requests, cold_parked %s, cold_loaded %s' % (n, sa.get('cold_parked'),
                                                                         sa.get('cold_loaded')))
    ca.close()
    cb.close()
    for s in (a, b):
        check(s.stop() == 0, 'slotd stops cleanly')


def stop_while_parked(binary, gen, tmp, extra):
    data = os.path.join(tmp, 'stop')
    make_store(gen, data)
    srv = Server(binary, data, list(extra) + ['--cold-load-keys', '1'])
    c = Conn(srv.port)
    c.send({"op": "hold", "event": ev(3), "user": "z", "request": "z", "qty": 1})
    time.sleep(0.05)
    srv.signal(signal.SIGTERM)
    r = c.line()
    check(r.get('error') in ('not_on_sale', 'shutting_down'), 'a parked hold is answered at a stop: %r' % r)
    c.close()
    check(srv.stop() == 0, 'slotd stops cleanly with a parked hold')


def main():
    if len(sys.argv) < 3:
        sys.exit('usage: test_cold.py SLOTD GEN_STORE [SLOTD_FLAG...]')
    binary, gen, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            concurrent(binary, gen, tmp, extra)
            if not extra:
                differential(binary, gen, tmp, extra)
                stop_while_parked(binary, gen, tmp, extra)
        finally:
            stop_all()
    finish()


if __name__ == '__main__':
    main()
