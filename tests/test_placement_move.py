#!/usr/bin/env python3
"""test_placement_move.py SLOTD SLOTD_FP SLOTCTL — move_event between two
one-node replica sets of one placement on one etcd (docs/design.md, "The
mover"; docs/protocol.md, "Placement").

Checks:
  - bad input changes nothing: a move to an unknown set (invalid_argument),
    of an unknown event (unknown_event), to the set that owns it
    (invalid_argument), sent to a set that does not own it (wrong_set naming
    the owner); the map is the same after each;
  - `slotctl move hot --to s2` of an event with a few thousand holds (some
    confirmed, some released, a block allocated) while a
    client keeps holding, retrying `moving` with the same request keys and
    following wrong_set to the new owner; a second move_event while the
    first runs is `moving`;
  - afterwards: the map says serving on s2 at gen 2; every acknowledged hold
    is on s2 by id with its status; replays of earlier holds on s2 answer the
    same hold id with "replay":true; s1 answers wrong_set naming s2; `check`
    is clean on both; the event view on s2 sums to its capacity and counts
    what was held and confirmed;
  - kill -9 of s1's slotd in a move (failpoints kill_move_after_relinquish
    and kill_move_after_own of slotd-failpoints), then a restart: within 30 s
    the move is undone (first) or finished (second), the event is served by
    exactly one set, and every acknowledged hold is there; while the dead
    mover's lock is held a move on the other set is `moving` (two movers);
  - kill -9 of the target (s2) while the map says moving, then a restart: the
    move is settled (undone or finished) within 30 s, by one set, every hold there;
  - a move to a set whose primary is down: unavailable, the map back at once.
Needs etcd (Debian's etcd-server; else exit 77). Every process it starts is
stopped by its PID; the folders are temporary.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import slotd_kit as kit
from slotd_kit import check, call
from test_placement import start_etcd, wait_primary, one, ETCD

HOLDS = int(os.environ.get('SLOT_MOVE_HOLDS', '3000'))


def place_args(name, etcd_url, secret):
    return ['--cluster', name, '--node', 'n1', '--etcd', etcd_url, '--cluster-secret-file', secret,
            '--placement', 'p', '--min-replicas', '0', '--heartbeat-ms', '50',
            '--failover-timeout-ms', '600', '--durability', 'nosync']


def write_secret(base):
    """The cluster secret the sets of a test's placement share: BASE/secret, mode 0600."""
    secret = os.path.join(base, 'secret')
    with open(secret, 'w') as f:
        f.write('placement-test-secret-0123456789\n')
    os.chmod(secret, 0o600)
    return secret


def wait_sets(port, n, timeout_s=10):
    """Waits (at most timeout_s) until the placement op on port lists n sets."""
    end = time.time() + timeout_s
    while time.time() < end and len(one(port, {'op': 'placement'}).get('sets', {})) < n:
        time.sleep(0.1)


def entry(port, ev):
    m = one(port, {'op': 'placement', 'event': ev})
    return m.get('events', {}).get(ev) if m.get('ok') else m


def call_many(port, reqs, step=1000):
    """call() in slices of step requests (a pipeline the socket buffers hold)."""
    out = []
    for i in range(0, len(reqs), step):
        out += call(port, reqs[i:i + step])
    return out


def hold_all(port, ev, prefix, n, qty=1):
    """n holds user/request PREFIX{i}, pipelined; {request: reply}."""
    out = {}
    for base in range(0, n, 500):
        reqs = [{'op': 'hold', 'event': ev, 'user': '%s%d' % (prefix, i), 'request': '%s%d' % (prefix, i),
                 'qty': qty} for i in range(base, min(n, base + 500))]
        for q, r in zip(reqs, call(port, reqs)):
            out[q['request']] = r
    return out


class Seller(threading.Thread):
    """Holds one unit at a time on the owner, with the same request key until
    it is answered: moving waits retry_after_ms, wrong_set goes to the set it
    names. acked: {request: hold id}."""

    def __init__(self, ports, ev):
        super().__init__(daemon=True)
        self.ports, self.ev = ports, ev
        self.acked = {}
        self.moving = self.redirects = 0
        self.errors = []
        self.stop = threading.Event()

    def run(self):
        owner, i = 's1', 0
        conns = {}
        while not self.stop.is_set():
            req = {'op': 'hold', 'event': self.ev, 'user': 'w%d' % i, 'request': 'w%d' % i, 'qty': 1}
            while True:
                try:
                    if owner not in conns:
                        conns[owner] = kit.Conn(self.ports[owner])
                    r = conns[owner].ask(req)
                except (OSError, ConnectionError) as e:
                    self.errors.append(repr(e))
                    conns.pop(owner, None)
                    time.sleep(0.05)
                    continue
                if r.get('error') == 'moving':
                    self.moving += 1
                    time.sleep(r.get('retry_after_ms', 100) / 1000.0)
                    continue
                if r.get('error') == 'wrong_set':
                    self.redirects += 1
                    owner = r.get('set')
                    continue
                break
            if r.get('ok'):
                self.acked[req['request']] = r['hold']
            else:
                self.errors.append(r)
            i += 1
        for c in conns.values():
            c.close()


def restart(sets, name, binary, base, etcd_url, secret, env=None):
    sets[name] = kit.Server(binary, os.path.join(base, name), http=False, env=env,
                            extra=place_args(name, etcd_url, secret),
                            stderr_path=os.path.join(base, name + '.log'))
    check(wait_primary(sets[name].port), '%s is primary again' % name)


def served_by_one(sets, ev):
    """The set that serves ev (a read answered), and that the other answers wrong_set."""
    owners = []
    for name, srv in sets.items():
        r = one(srv.port, {'op': 'event', 'event': ev})
        if r.get('ok'):
            owners.append(name)
        elif r.get('error') != 'wrong_set':
            return None, r
    return (owners[0] if len(owners) == 1 else None), owners


def wait_resolved(port, ev, deadline_s):
    end = time.time() + deadline_s
    e = None
    while time.time() < end:
        e = entry(port, ev)
        if e and e.get('state') == 'serving':
            return e, time.time()
        time.sleep(0.2)
    return e, None


def main():
    slotd, slotd_fp, slotctl = sys.argv[1], sys.argv[2], sys.argv[3]
    if not os.access(ETCD, os.X_OK):
        print('etcd not found (install etcd-server)')
        sys.exit(77)
    base = tempfile.mkdtemp(prefix='slotd-move-')
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

        cap = 100000
        r = one(p1, {'op': 'create_event', 'event': 'hot', 'capacity': cap, 'shards': 8, 'waitlist_max': 10})
        check(r.get('ok'), 'create hot on s1', r)
        first = hold_all(p1, 'hot', 'u', HOLDS)
        check(all(x.get('ok') for x in first.values()), '%d holds on s1' % HOLDS)
        confirmed = ['u%d' % i for i in range(0, HOLDS, 5)]
        released = ['u%d' % i for i in range(1, HOLDS, 7) if i % 5]
        rs = call_many(p1, [{'op': 'confirm', 'event': 'hot', 'user': u, 'hold': first[u]['hold']} for u in confirmed] +
                  [{'op': 'release', 'event': 'hot', 'user': u, 'hold': first[u]['hold']} for u in released])
        check(all(x.get('ok') for x in rs), 'confirms and releases on s1', [x for x in rs if not x.get('ok')][:2])
        r = one(p1, {'op': 'allocate', 'event': 'hot', 'allocation': 'vip', 'qty': 50})
        check(r.get('ok'), 'a block allocated on s1', r)

        # bad input: each a clear error, nothing changed
        before = entry(p1, 'hot')
        for req, code, what in (
                ({'op': 'move_event', 'event': 'hot', 'to': 's9'}, 'invalid_argument', 'a move to an unknown set'),
                ({'op': 'move_event', 'event': 'nope', 'to': 's2'}, 'unknown_event', 'a move of an unknown event'),
                ({'op': 'move_event', 'event': 'hot', 'to': 's1'}, 'invalid_argument', 'a move to the owning set')):
            r = one(p1, req)
            check(r.get('error') == code and r.get('message'), what + ' is ' + code, r)
        r = one(p2, {'op': 'move_event', 'event': 'hot', 'to': 's1'})
        check(r.get('error') == 'wrong_set' and r.get('set') == 's1', 'a move sent to a set that does not own it '
              'is wrong_set naming the owner', r)
        check(entry(p1, 'hot') == before == {'set': 's1', 'gen': 1, 'state': 'serving'},
              'the map is unchanged after the refused moves', entry(p1, 'hot'))
        r = one(p1, {'op': 'hold', 'event': 'hot', 'user': 'x', 'request': 'x', 'qty': 1})
        check(r.get('ok'), 's1 still serves hot', r)

        seller = Seller({'s1': p1, 's2': p2}, 'hot')
        seller.start()
        time.sleep(0.3)
        mv = subprocess.Popen([slotctl, '--host', '127.0.0.1:%d' % p1, 'move', 'hot', '--to', 's2'],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        second = None
        end = time.time() + 30
        while time.time() < end and mv.poll() is None:
            e = entry(p2, 'hot')
            if e and e.get('state') == 'moving':
                second = one(p1, {'op': 'move_event', 'event': 'hot', 'to': 's2'})
                break
            time.sleep(0.01)
        out, err = mv.communicate(timeout=120)
        check(mv.returncode == 0 and 'moved hot to s2: gen 2' in out, 'slotctl move hot --to s2', (out, err))
        print('slotctl move: ' + out.strip())
        check(second is not None and second.get('error') == 'moving' and second.get('retry_after_ms', 0) > 0,
              'a second move_event while the first runs is moving with retry_after_ms', second)
        time.sleep(0.5)
        seller.stop.set()
        seller.join(30)
        check(not seller.errors, 'the seller saw no errors', seller.errors[:3])
        check(seller.redirects >= 1 and len(seller.acked) > 0, 'the seller was redirected to s2 and kept selling',
              (seller.redirects, len(seller.acked)))
        print('seller: %d holds acknowledged, %d moving answers, %d redirects' %
              (len(seller.acked), seller.moving, seller.redirects))

        check(entry(p1, 'hot') == {'set': 's2', 'gen': 2, 'state': 'serving'}, 'the map: hot serving on s2 at gen 2',
              entry(p1, 'hot'))
        # every acknowledged hold on s2, by id, with its status
        want = {}
        conf_set, rel_set = set(confirmed), set(released)
        for u, x in first.items():
            want[u] = (x['hold'], 'confirmed' if u in conf_set else 'released' if u in rel_set else 'held')
        for u, h in seller.acked.items():
            want[u] = (h, 'held')
        users = sorted(want)
        got = call_many(p2, [{'op': 'get_hold', 'event': 'hot', 'hold': want[u][0], 'user': u} for u in users])
        bad = [(u, g) for u, g in zip(users, got) if not g.get('ok') or g.get('status') != want[u][1]]
        check(len(got) == len(users) and not bad, 'all %d acknowledged holds are on s2 with their status' % len(users),
              bad[:3])
        # replays answer identically on s2
        sample = ['u%d' % i for i in range(2, HOLDS, 11) if 'u%d' % i not in rel_set][:200] + \
            sorted(seller.acked)[:100]
        reps = call(p2, [{'op': 'hold', 'event': 'hot', 'user': u, 'request': u, 'qty': 1} for u in sample])
        bad = [(u, r) for u, r in zip(sample, reps) if not (r.get('ok') and r.get('replay') is True and
                                                            r.get('hold') == want[u][0])]
        check(not bad, 'replays of %d earlier holds on s2: same hold id, replay:true' % len(sample), bad[:3])
        r = one(p1, {'op': 'hold', 'event': 'hot', 'user': 'z', 'request': 'z', 'qty': 1})
        check(r.get('error') == 'wrong_set' and r.get('set') == 's2' and r.get('gen') == 2,
              's1 answers wrong_set naming s2 at gen 2', r)
        for name in ('s1', 's2'):
            c = one(sets[name].port, {'op': 'check'})
            check(c.get('ok') and c.get('violations_total') == 0, 'check is clean on ' + name, c)
        w = subprocess.run([slotctl, '--host', '127.0.0.1:%d' % p1, 'move', 'hot', '--to', 's2'],
                           capture_output=True, text=True, timeout=60)
        check(w.returncode == 1 and 'placed on set s2 (gen 2), primary 127.0.0.1:%d' % p2 in w.stderr,
              'slotctl move sent to the old owner prints where the event is', (w.returncode, w.stderr))
        v = one(p2, {'op': 'event', 'event': 'hot'})
        held = sum(1 for u in want if want[u][1] == 'held') + 1  # + the hold "x"
        check(v.get('ok') and v['available'] + v['held'] + v['confirmed'] + v.get('allocated', 0) == cap,
              'the event view on s2 sums to the capacity', v)
        check(v.get('held') == held and v.get('confirmed') == len(confirmed),
              'and counts what was held and confirmed', (v.get('held'), held, v.get('confirmed'), len(confirmed)))

        # kill -9 of the source in a move: undone, then finished
        # an undone move leaves the source owning the event at G+1 (so a later move may stage
        # on the same target at G+2); a finished one has the target owning it at G+1
        for ev, fp, resolved_to, gen, how in (('k1', 'kill_move_after_relinquish', 's1', 2, 'undone'),
                                              ('k2', 'kill_move_after_own', 's2', 2, 'finished')):
            r = one(sets['s1'].port, {'op': 'create_event', 'event': ev, 'capacity': 1000})
            check(r.get('ok'), 'create %s on s1' % ev, r)
            acked = hold_all(sets['s1'].port, ev, 'k', 200)
            check(all(x.get('ok') for x in acked.values()), '200 holds on %s' % ev)
            sets['s1'].stop()
            restart(sets, 's1', slotd_fp, base, etcd_url, secret, env={'SLOT_FAILPOINTS': fp})
            t0 = time.time()
            got = []
            try:
                got = call(sets['s1'].port, [{'op': 'move_event', 'event': ev, 'to': 's2'}])
            except (OSError, ConnectionError):
                pass
            r = got[0] if got else None
            check(r is None or not r.get('ok'), 'the move of %s dies with s1 (%s)' % (ev, fp), r)
            sets['s1'].proc.wait(30)
            check(not sets['s1'].alive(), 's1 was killed in the move')
            if ev == 'k1':  # two movers at once: the dead mover's lock is still held
                r = one(sets['s2'].port, {'op': 'move_event', 'event': 'hot', 'to': 's1'})
                check(r.get('error') == 'moving' and r.get('retry_after_ms', 0) > 0,
                      'a move on s2 while the dead mover\'s lock is held is moving', r)
                check(entry(sets['s2'].port, 'hot') == {'set': 's2', 'gen': 2, 'state': 'serving'},
                      'and the map entry of hot is unchanged', entry(sets['s2'].port, 'hot'))
            restart(sets, 's1', slotd, base, etcd_url, secret)
            e, at = wait_resolved(sets['s2'].port, ev, 30 - (time.time() - t0) + 5)
            check(at is not None and at - t0 <= 30, 'the move of %s is resolved within 30 s' % ev,
                  (e, at and at - t0))
            check(e == {'set': resolved_to, 'gen': gen, 'state': 'serving'},
                  '%s: %s, on %s at gen %d' % (fp, how, resolved_to, gen), e)
            owner, seen = served_by_one(sets, ev)
            check(owner == resolved_to, '%s is served by exactly one set, %s' % (ev, resolved_to), seen)
            port = sets[resolved_to].port
            got = call(port, [{'op': 'get_hold', 'event': ev, 'hold': x['hold'], 'user': u}
                              for u, x in sorted(acked.items())])
            check(len(got) == len(acked) and all(g.get('ok') and g.get('status') == 'held' for g in got),
                  'every acknowledged hold of %s is on %s' % (ev, resolved_to))
            r = one(port, {'op': 'hold', 'event': ev, 'user': 'after', 'request': 'after', 'qty': 1})
            check(r.get('ok'), '%s sells %s after the recovery' % (resolved_to, ev), r)

        # kill -9 of the target in a move: settled within 30 s of its restart, served by one set
        r = one(sets['s1'].port, {'op': 'create_event', 'event': 'k3', 'capacity': 100000})
        check(r.get('ok'), 'create k3 on s1', r)
        acked = hold_all(sets['s1'].port, 'k3', 'k', 20000)
        check(all(x.get('ok') for x in acked.values()), '20000 holds on k3')
        mc = kit.Conn(sets['s1'].port, timeout=60)
        mc.send({'op': 'move_event', 'event': 'k3', 'to': 's2'})
        end = time.time() + 30
        while time.time() < end and (entry(sets['s1'].port, 'k3') or {}).get('state') != 'moving':
            time.sleep(0.005)
        sets['s2'].kill()
        r = mc.line()
        mc.close()
        print('the move of k3 with its target killed: %s' % r.get('message', r))
        t0 = time.time()
        restart(sets, 's2', slotd, base, etcd_url, secret)
        e, at = wait_resolved(sets['s1'].port, 'k3', 35)
        check(at is not None and at - t0 <= 30, 'the move of k3 is settled within 30 s of the target\'s restart',
              (e, at and at - t0))
        owner, seen = served_by_one(sets, 'k3')
        check(owner is not None and e and owner == e.get('set'), 'k3 is served by exactly one set, the map\'s',
              (seen, e))
        if owner:
            got = call_many(sets[owner].port, [{'op': 'get_hold', 'event': 'k3', 'hold': x['hold'], 'user': u}
                                               for u, x in sorted(acked.items())])
            check(len(got) == len(acked) and all(g.get('ok') and g.get('status') == 'held' for g in got),
                  'every acknowledged hold of k3 is on %s' % owner)
            print('k3 settled on %s at gen %s, %.1f s after the restart' % (owner, e.get('gen'), at - t0))
        # a target that is down: nothing was sent, so the map is back at once
        before = entry(sets['s1'].port, 'k1')
        sets['s2'].kill()
        r = one(sets['s1'].port, {'op': 'move_event', 'event': 'k1', 'to': 's2'})
        check(r.get('error') == 'unavailable' and 'served here' in r.get('message', ''),
              'a move to a set whose primary is down is unavailable', r)
        check(entry(sets['s1'].port, 'k1') == before, 'and the map entry is back at once', entry(sets['s1'].port, 'k1'))
        r = one(sets['s1'].port, {'op': 'hold', 'event': 'k1', 'user': 'down', 'request': 'down', 'qty': 1})
        check(r.get('ok'), 's1 goes on selling k1', r)
        restart(sets, 's2', slotd, base, etcd_url, secret)
        # the target of k1's undone move takes it now (it stayed refused: aborted at the
        # gen the next move staged at), with every hold k1 had
        held_k1 = one(sets['s1'].port, {'op': 'event', 'event': 'k1'}).get('held')
        end = time.time() + 30  # until s2's restarted primary is published and answers
        while True:
            r = (call(sets['s1'].port, [{'op': 'move_event', 'event': 'k1', 'to': 's2'}], timeout=60) or [{}])[0]
            if r.get('ok') or r.get('error') != 'unavailable' or time.time() > end:
                break
            time.sleep(0.2)
        check(r.get('ok') and r.get('gen') == 3, 'k1, once undone, moves to s2 at gen 3', r)
        check(entry(sets['s2'].port, 'k1') == {'set': 's2', 'gen': 3, 'state': 'serving'},
              'the map: k1 serving on s2 at gen 3', entry(sets['s2'].port, 'k1'))
        v = one(sets['s2'].port, {'op': 'event', 'event': 'k1'})
        check(v.get('ok') and v.get('held') == held_k1, 's2 holds what k1 held on s1', (v, held_k1))
        for name in ('s1', 's2'):
            c = one(sets[name].port, {'op': 'check'})
            check(c.get('ok') and c.get('violations_total') == 0, 'check is clean on %s at the end' % name, c)
    finally:
        kit.stop_all()
        shutil.rmtree(base, ignore_errors=True)
    kit.finish()


if __name__ == '__main__':
    main()
