#!/usr/bin/env python3
"""test_placement_kill_loop.py SLOTD — moves of a selling event back and forth
between two one-node replica sets of one placement, each cut short by kill -9
of the source's primary (which runs the mover) or of the target's primary at a
random moment of the move (docs/design.md, "The mover": recovery).

The event has 20,000 holds, so a move takes long enough that a kill lands in
its steps; round 0 moves it unharmed and gives the move's length, each later
round kills at a moment drawn from [0, 1.2 × that length] after the
move_event was sent (or, by chance, once it has answered). A seller holds one
unit at a time throughout, following moving and wrong_set with the same
request key. After each kill the victim is restarted and, each round:

  - within 35 s of the restart the map entry says serving, and exactly one
    set serves the event (the other answers wrong_set);
  - every hold acknowledged so far (the 20,000 and the seller's) is on the
    owner by id, and the owner takes a new hold.

At the end `check` is clean on both sets. SLOT_MOVE_KILL_ROUNDS sets the
number of killed rounds (default 4), SLOT_MOVE_KILL_SEED repeats the draws
(the moment of each kill is also the scheduler's). Needs etcd (Debian's
etcd-server; else exit 77). Every process it starts is stopped by its PID;
the folders are temporary.
"""
import os
import random
import shutil
import sys
import tempfile
import threading
import time

import slotd_kit as kit
from slotd_kit import check
from test_placement import start_etcd, wait_primary, one, ETCD
from test_placement_move import write_secret, wait_sets, place_args, entry, call_many, hold_all, served_by_one

ROUNDS = int(os.environ.get('SLOT_MOVE_KILL_ROUNDS', '4'))
HOLDS = 20000
SETTLE_S = 35


class Seller(threading.Thread):
    """One unit at a time on the owner, the same request key until answered:
    moving waits, wrong_set goes to the set named, a dead connection is tried
    again (the port is read from ports, which a restart updates).
    acked: {request: hold id}."""

    def __init__(self, ports, ev):
        super().__init__(daemon=True)
        self.ports, self.ev = ports, ev
        self.acked, self.answers = {}, []
        self.stop = threading.Event()

    def run(self):
        owner, i, conns = 's1', 0, {}
        end = time.time() + 900
        while not self.stop.is_set() and time.time() < end:
            req = {'op': 'hold', 'event': self.ev, 'user': 'w%d' % i, 'request': 'w%d' % i, 'qty': 1}
            for _ in range(5000):
                if self.stop.is_set():
                    break
                try:
                    if owner not in conns:
                        conns[owner] = kit.Conn(self.ports[owner], timeout=15)
                    r = conns[owner].ask(req)
                except (OSError, ConnectionError, ValueError):
                    conns.pop(owner, None)
                    time.sleep(0.05)
                    continue
                if r.get('error') == 'moving':
                    time.sleep(min(r.get('retry_after_ms', 100), 500) / 1000.0)
                    continue
                if r.get('error') == 'wrong_set' and r.get('set') in self.ports:
                    conns.pop(owner, None)
                    owner = r['set']
                    continue
                if r.get('ok'):
                    self.acked[req['request']] = r['hold']
                elif r.get('error') not in ('unavailable', 'not_primary'):
                    self.answers.append(r)
                break
            i += 1
            time.sleep(0.005)
        for c in conns.values():
            c.close()


def main():
    slotd = sys.argv[1]
    if not os.access(ETCD, os.X_OK):
        print('etcd not found (install etcd-server)')
        sys.exit(77)
    seed = int(os.environ.get('SLOT_MOVE_KILL_SEED', '0')) or random.randrange(1, 1 << 31)
    print('seed %d (SLOT_MOVE_KILL_SEED=%d repeats the draws), %d killed rounds' % (seed, seed, ROUNDS), flush=True)
    rnd = random.Random(seed)
    base = tempfile.mkdtemp(prefix='slotd-movekill-')
    sets, ports = {}, {}

    def start(name):
        sets[name] = kit.Server(slotd, os.path.join(base, name), extra=place_args(name, etcd_url, secret),
                                stderr_path=os.path.join(base, name + '.log'))
        ports[name] = sets[name].port
        return wait_primary(sets[name].port)

    try:
        _, etcd_url = start_etcd(base)
        secret = write_secret(base)
        kit.require(start('s1') and start('s2'), 'both single-node sets become primary')
        wait_sets(ports['s1'], 2)
        r = one(ports['s1'], {'op': 'create_event', 'event': 'hot', 'capacity': 1000000, 'shards': 8,
                              'hold_ttl_ms': 3600000})
        kit.require(r.get('ok'), 'create hot on s1', r)
        first = hold_all(ports['s1'], 'hot', 'u', HOLDS)
        kit.require(all(x.get('ok') for x in first.values()), '%d holds on s1' % HOLDS)
        before = {u: x['hold'] for u, x in first.items()}
        seller = Seller(ports, 'hot')
        seller.start()
        owner, gen, length_s = 's1', 1, None
        outcomes = {}
        for rnd_i in range(ROUNDS + 1):
            src, dst = owner, ('s2' if owner == 's1' else 's1')
            victim = rnd.choice((src, dst)) if rnd_i else None
            delay = rnd.uniform(0, 1.2 * length_s) if rnd_i else 0
            reply = {}

            def mover():
                try:
                    reply['r'] = kit.call(ports[src], [{'op': 'move_event', 'event': 'hot', 'to': dst}], timeout=60)
                except (OSError, ConnectionError, ValueError) as e:
                    reply['r'] = repr(e)

            t0 = time.time()
            t = threading.Thread(target=mover, daemon=True)
            t.start()
            if victim:
                time.sleep(delay)
                sets[victim].kill()
                t.join(60)
                killed_at = time.time()
                ok_start = start(victim)
                check(ok_start, 'round %d: %s restarted and primary' % (rnd_i, victim))
            else:
                t.join(60)
                r = reply.get('r')
                r = r[0] if isinstance(r, list) and r else r
                kit.require(isinstance(r, dict) and r.get('ok'), 'round 0: an unharmed move of hot to %s' % dst, r)
                length_s = max(r['total_ms'], 50) / 1000.0
                print('round 0: moved in %d ms (pause %d ms, %d records)' % (r['total_ms'], r['pause_ms'],
                                                                               r['records']), flush=True)
                killed_at = time.time()
            settled = None
            while time.time() < killed_at + SETTLE_S:
                try:
                    e = entry(ports[dst], 'hot') or entry(ports[src], 'hot')
                except (OSError, ConnectionError, ValueError):
                    e = None
                if e and e.get('state') == 'serving':
                    settled = e
                    break
                time.sleep(0.2)
            check(settled is not None, 'round %d: the map says serving within %d s' % (rnd_i, SETTLE_S),
                  entry(ports[dst], 'hot'))
            if not settled:
                break
            who, seen = served_by_one(sets, 'hot')
            check(who == settled['set'], 'round %d: hot is served by exactly one set, the map\'s (%s)'
                  % (rnd_i, settled['set']), seen)
            outcome = 'finished' if settled['set'] == dst else 'undone'
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            r = reply.get('r')
            r = r[0] if isinstance(r, list) and r else (r or 'none: the connection closed')
            print('round %d: %s killed %.0f ms into the move: %s (on %s at gen %d), settled %.1f s after the '
                  'restart; the move answered %s' % (rnd_i, victim or 'nobody', delay * 1000, outcome,
                                                     settled['set'], settled['gen'], time.time() - killed_at,
                                                     r if isinstance(r, str) else r.get('message', r)), flush=True)
            # finished: T owns at G+1; undone: S owns at G+1 (G when nothing reached T)
            check(settled['gen'] == gen + 1 or (outcome == 'undone' and settled['gen'] == gen),
                  'round %d: the gen goes up by one with each finished or undone move' % rnd_i, settled)
            owner, gen = settled['set'], settled['gen']
            time.sleep(0.3)
            acked = dict(before)
            acked.update(seller.acked)
            users = sorted(acked)
            got = call_many(ports[owner], [{'op': 'get_hold', 'event': 'hot', 'hold': acked[u], 'user': u}
                                           for u in users])
            bad = [(u, g) for u, g in zip(users, got) if not g.get('ok')]
            check(len(got) == len(users) and not bad, 'round %d: all %d acknowledged holds are on %s'
                  % (rnd_i, len(users), owner), bad[:3])
            r = one(ports[owner], {'op': 'hold', 'event': 'hot', 'user': 'r%d' % rnd_i, 'request': 'r%d' % rnd_i,
                                   'qty': 1})
            check(r.get('ok'), 'round %d: %s takes a new hold' % (rnd_i, owner), r)
            if r.get('ok'):
                before['r%d' % rnd_i] = r['hold']
        # no round leaves a set that refuses the event for good: an unharmed move there and
        # back finishes (an undone move used to leave its target aborted at the gen the
        # next move staged at)
        for back in range(2):
            src, dst = owner, ('s2' if owner == 's1' else 's1')
            r = None
            end = time.time() + 30
            while time.time() < end:
                r = (kit.call(ports[src], [{'op': 'move_event', 'event': 'hot', 'to': dst}], timeout=60) or [{}])[0]
                if r.get('error') not in ('unavailable', 'moving'):
                    break
                time.sleep(0.3)
            check(r.get('ok') and r.get('gen') == gen + 1, 'after the rounds: an unharmed move of hot to %s' % dst, r)
            if not (r and r.get('ok')):
                break
            owner, gen = dst, r['gen']
        seller.stop.set()
        seller.join(30)
        check(len(seller.acked) > 0, 'the seller had holds acknowledged (%d)' % len(seller.acked))
        check(not seller.answers, 'the seller got no other error answers', seller.answers[:3])
        print('outcomes: %s' % outcomes, flush=True)
        for name in ('s1', 's2'):
            c = one(ports[name], {'op': 'check'})
            check(c.get('ok') and c.get('violations_total') == 0, 'check is clean on %s' % name, c)
    finally:
        kit.stop_all()
        if kit.FAILURES:
            print('folders kept: %s' % base)
        else:
            shutil.rmtree(base, ignore_errors=True)
    kit.finish()


if __name__ == '__main__':
    main()
