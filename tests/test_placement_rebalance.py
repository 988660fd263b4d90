#!/usr/bin/env python3
"""test_placement_rebalance.py SLOTD SLOTCTL — `slotctl rebalance` over two
one-node replica sets of one placement on a private etcd (docs/design.md,
"Evening out a placement").

Checks:
  - bad input is a usage error (exit 64) with a message, and changes nothing:
    neither or both of --dry-run and --apply, a bad --by, a bad --max-moves,
    an unknown placement, a placement whose keys name no replica set;
  - six events on s1, none on s2: --dry-run plans 3 moves (the map is the
    same afterwards); --apply runs them (the map is 3/3, each moved event at
    gen 2 on s2, every hold made before answers get_hold on s2 with its
    status, s1 answers wrong_set); a second --dry-run plans nothing;
  - a family (a parent and its child) on s1 is left alone and said so: the
    plan moves one plain event (s1 5, s2 3 -> 4/4) and neither of the family;
  - --by holds (holds_made sampled --interval-ms apart): while a client holds
    on one event of s2 nothing is planned (its move would only swap the sets:
    the stop rule); while it holds on two, one of those two moves to s1;
  - --max-moves bounds the plan;
  - --apply stops at the first move that fails, with its error (exit 1): a
    third set, without events, whose slotd is killed after it published its
    key; the map is unchanged.
Needs etcd (Debian's etcd-server; else exit 77). Every process it starts is
stopped by its PID; the folders are temporary.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import slotd_kit as kit
from slotd_kit import check, call
from test_placement import start_etcd, wait_primary, one, ETCD
from test_placement_move import write_secret, wait_sets

EVENTS = ['e%d' % i for i in range(1, 7)]
HOLDS_PER_EVENT = 4


def place_args(name, etcd_url, secret):
    return ['--cluster', name, '--node', 'n1', '--etcd', etcd_url, '--cluster-secret-file', secret,
            '--placement', 'p', '--min-replicas', '0', '--heartbeat-ms', '50',
            '--failover-timeout-ms', '600', '--durability', 'nosync']


def the_map(port):
    r = one(port, {'op': 'placement'})
    return r.get('events', {}) if r.get('ok') else r


def per_set(m):
    out = {}
    for ev, e in m.items():
        out.setdefault(e.get('set'), set()).add(ev)
    return out


def etcd_put(url, key, value):
    body = json.dumps({'key': base64.b64encode(key.encode()).decode(),
                       'value': base64.b64encode(value.encode()).decode()}).encode()
    req = urllib.request.Request(url + '/v3/kv/put', data=body, headers={'Content-Type': 'application/json'})
    with urllib.request.urlopen(req, timeout=10) as f:
        f.read()


def rebalance(slotctl, etcd_url, *args, placement='p'):
    cmd = [slotctl, 'rebalance', '--etcd', etcd_url] + (['--placement', placement] if placement else []) + list(args)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def moves_of(out):
    """The plan's lines: [(event, from, to)]."""
    res = []
    for line in out.splitlines():
        if line.startswith('move '):
            w = line.split()
            res.append((w[1], w[3], w[5].rstrip(':')))
    return res


class Holder(threading.Thread):
    """Holds one unit at a time on each of events, round robin, until stop."""

    def __init__(self, port, events):
        super().__init__(daemon=True)
        self.port, self.events, self.stop, self.n, self.errors = port, events, threading.Event(), 0, []

    def run(self):
        c = kit.Conn(self.port)
        end = time.time() + 60
        while not self.stop.is_set() and time.time() < end:
            for ev in self.events:
                r = c.ask({'op': 'hold', 'event': ev, 'user': 'h%d' % self.n, 'request': 'h%d' % self.n, 'qty': 1})
                if not r.get('ok'):
                    self.errors.append(r)
                self.n += 1
        c.close()


def main():
    slotd, slotctl = sys.argv[1], sys.argv[2]
    if not os.access(ETCD, os.X_OK):
        print('etcd not found (install etcd-server)')
        sys.exit(77)
    base = tempfile.mkdtemp(prefix='slotd-rebalance-')
    try:
        _, etcd_url = start_etcd(base)
        secret = write_secret(base)
        sets = {}
        for name in ('s1', 's2'):
            sets[name] = kit.Server(slotd, os.path.join(base, name), extra=place_args(name, etcd_url, secret),
                                    stderr_path=os.path.join(base, name + '.log'))
        p1, p2 = sets['s1'].port, sets['s2'].port
        check(wait_primary(p1) and wait_primary(p2), 'both single-node sets become primary')
        wait_sets(p1, 2)

        holds = {}  # event -> [(user, hold id, status)]
        for ev in EVENTS:
            r = one(p1, {'op': 'create_event', 'event': ev, 'capacity': 100000})
            check(r.get('ok'), 'create %s on s1' % ev, r)
            for i in range(HOLDS_PER_EVENT):
                u = '%s-u%d' % (ev, i)
                r = one(p1, {'op': 'hold', 'event': ev, 'user': u, 'request': u, 'qty': 1 + i})
                check(r.get('ok') and r.get('status') == 'held', 'a hold on %s' % ev, r)
                holds.setdefault(ev, []).append((u, r.get('hold'), 'held'))
            u, h, _ = holds[ev][0]
            r = one(p1, {'op': 'confirm', 'event': ev, 'user': u, 'hold': h})
            check(r.get('ok'), 'a confirm on %s' % ev, r)
            holds[ev][0] = (u, h, 'confirmed')
        before = the_map(p1)
        check(per_set(before) == {'s1': set(EVENTS)}, 'six events on s1, none on s2', before)

        # bad input: exit 64 with a message, the map unchanged
        etcd_put(etcd_url, '/slotd/placement/nosets/event/x', '{"set":"s9","gen":1,"state":"serving"}')
        for args, placement, words, what in (
                ((), 'p', 'give one of --dry-run and --apply', 'neither --dry-run nor --apply'),
                (('--dry-run', '--apply'), 'p', 'not both', 'both --dry-run and --apply'),
                (('--dry-run', '--by', 'seats'), 'p', "--by: 'events' or 'holds'", 'a bad --by'),
                (('--dry-run', '--max-moves', '0'), 'p', '--max-moves', 'a --max-moves of 0'),
                (('--dry-run',), 'nope', "no placement 'nope'", 'an unknown placement'),
                (('--dry-run',), 'nosets', 'has no replica sets', 'a placement without sets'),
                (('--dry-run',), None, '--placement NAME', 'no --placement'),
                (('--dry-run',), 'p/event', '[A-Za-z0-9._:-]', 'a --placement with a slash')):
            rc, out, err = rebalance(slotctl, etcd_url, *args, placement=placement)
            check(rc == 64 and words in err and not moves_of(out), what + ': exit 64 and says so', (rc, out, err))
        check(the_map(p1) == before, 'the map is unchanged after the refused runs', the_map(p1))

        # --dry-run: 3 moves planned, nothing changed
        rc, out, err = rebalance(slotctl, etcd_url, '--dry-run')
        plan = moves_of(out)
        check(rc == 0 and len(plan) == 3 and all(f == 's1' and t == 's2' for _, f, t in plan),
              '--dry-run plans 3 moves from s1 to s2', (rc, out, err))
        check('spread 6 -> 0' in out and 'nothing changed' in out, 'the plan says the spread before and after',
              out)
        print('dry run:\n' + out.strip())
        check(the_map(p1) == before, '--dry-run leaves the map unchanged', the_map(p1))

        # --max-moves bounds the plan
        rc, out, err = rebalance(slotctl, etcd_url, '--dry-run', '--max-moves', '2')
        check(rc == 0 and len(moves_of(out)) == 2, '--max-moves 2 plans 2 moves', (rc, out, err))

        # --apply: 3/3, every hold on its new owner
        rc, out, err = rebalance(slotctl, etcd_url, '--apply')
        applied = moves_of(out)
        check(rc == 0 and len(applied) == 3 and out.count('moved ') == 3 and 'applied: 3 moves' in out,
              '--apply runs the 3 moves', (rc, out, err))
        print('apply:\n' + out.strip())
        after = the_map(p1)
        by = per_set(after)
        check(len(by.get('s1', ())) == 3 and len(by.get('s2', ())) == 3, 'the map is 3/3', after)
        moved = [ev for ev, _, _ in applied]
        check(set(moved) == by.get('s2', set()), 'the events planned are those on s2', (moved, after))
        for ev in moved:
            check(after[ev] == {'set': 's2', 'gen': 2, 'state': 'serving'}, '%s serving on s2 at gen 2' % ev,
                  after[ev])
            for u, h, status in holds[ev]:
                r = one(p2, {'op': 'get_hold', 'event': ev, 'hold': h, 'user': u})
                check(r.get('ok') and r.get('status') == status, 'hold %s of %s answers on s2 (%s)' % (h, ev, status),
                      r)
            r = one(p1, {'op': 'event', 'event': ev})
            check(r.get('error') == 'wrong_set' and r.get('set') == 's2', 's1 answers wrong_set for %s' % ev, r)

        # a second --dry-run: nothing to do
        rc, out, err = rebalance(slotctl, etcd_url, '--dry-run')
        check(rc == 0 and not moves_of(out) and 'plan: 0 moves' in out, 'a second --dry-run plans nothing',
              (rc, out, err))

        # a family is left alone
        for req in ({'op': 'create_event', 'event': 'venue', 'capacity': 100},
                    {'op': 'create_event', 'event': 'standing', 'capacity': 50, 'parent': 'venue'}):
            r = one(p1, req)
            check(r.get('ok'), 'create %s on s1' % req['event'], r)
        rc, out, err = rebalance(slotctl, etcd_url, '--dry-run')
        plan = moves_of(out)
        check(rc == 0 and len(plan) == 1 and plan[0][0] not in ('venue', 'standing') and plan[0][1:] == ('s1', 's2'),
              'with a family of two on s1 (5/3) one plain event is planned, s1 to s2', (rc, out, err))
        check('left alone: venue (in a family' in out and 'left alone: standing (in a family' in out and
              'parent venue' in out, 'the family is left alone, and said so', out)

        # --by holds: one hot event on s2 -- moving it would only swap the sets: nothing planned
        m = per_set(the_map(p1))
        hot = sorted(m['s2'])[:2]
        holder = Holder(p2, hot[:1])
        holder.start()
        time.sleep(0.3)
        rc, out, err = rebalance(slotctl, etcd_url, '--dry-run', '--by', 'holds', '--interval-ms', '1000')
        holder.stop.set()
        holder.join(30)
        check(rc == 0 and not moves_of(out) and 'plan: 0 moves' in out and 'no move makes it smaller' in out,
              '--by holds with one hot event plans nothing (its move would not make the spread smaller)',
              (rc, out, err))

        # --by holds: two hot events on one set, one of them moves
        holder = Holder(p2, hot)
        holder.start()
        time.sleep(0.3)
        rc, out, err = rebalance(slotctl, etcd_url, '--dry-run', '--by', 'holds', '--interval-ms', '1500')
        holder.stop.set()
        holder.join(30)
        check(not holder.errors, 'the holder saw no errors', holder.errors[:2])
        plan = moves_of(out)
        check(rc == 0 and len(plan) == 1 and plan[0][0] in hot and plan[0][1:] == ('s2', 's1'),
              '--by holds plans one of the two hot events of s2 to s1', (rc, out, err, hot))
        check('holds made per second' in out, '--by holds says what it measured', out)
        print('by holds:\n' + out.strip())
        for name in ('s1', 's2'):
            c = one(sets[name].port, {'op': 'check'})
            check(c.get('ok') and c.get('violations_total') == 0, 'check is clean on %s at the end' % name, c)

        # --apply stops at the first failed move: a third set s3, without events, whose slotd is killed
        # (its key stays in the map): the plan sends events to it, the first move is unavailable
        sets['s3'] = kit.Server(slotd, os.path.join(base, 's3'), extra=place_args('s3', etcd_url, secret),
                                stderr_path=os.path.join(base, 's3.log'))
        check(wait_primary(sets['s3'].port), 's3 becomes primary')
        wait_sets(p1, 3)
        sets['s3'].kill()
        before = the_map(p1)
        rc, out, err = rebalance(slotctl, etcd_url, '--apply')
        plan = moves_of(out)
        check(rc == 1 and len(plan) == 2 and all(t == 's3' for _, _, t in plan) and 'moved ' not in out and
              'unavailable' in err and 'stopped at move 1 of 2' in err,
              '--apply to a set that is down stops at the first move with its error (exit 1)', (rc, out, err))
        check(the_map(p1) == before, 'and the map is unchanged', the_map(p1))
        print('apply to a set that is down:\n' + out.strip() + '\n' + err.strip())
    finally:
        kit.stop_all()
        shutil.rmtree(base, ignore_errors=True)
    kit.finish()


if __name__ == '__main__':
    main()
