#!/usr/bin/env python3
"""test_feed_placement.py SLOTD SLOTCTL MAIL_WORKER — the feed of a placement
(docs/design.md, "The feed of a placement"): `slotctl feed --placement` and
`examples/mail_worker.py --placement` over two replica sets of one placement
on one etcd.

Two sets, s1 (one node) and s2 (three nodes); events a (s1), b (s2) and hot
(s1), with holds, confirms and releases on each. Then, while a seller keeps
holding hot (retrying moving, following wrong_set) and a, b keep changing: hot
moves s1 -> s2 (gen 2), more writes, and back s2 -> s1 (gen 3), more writes;
then s2 fails over (kill -9 of its primary) and b changes again on the new
primary. What each set's feed holds is read directly from each set (the
truth): an event's entries are its epochs, each from an event.created or
event.arrived up to the event.moved that ends it (or the end), in gen order.

Checks:
  - a run of `slotctl feed --placement p --etcd URL --json --state F` before the
    moves, then a `--follow --state F` run through them and s2's failover (it
    follows s2's new primary and subscribes there again; stopped by SIGTERM
    once it printed what the truth says), together print every entry of both
    sets exactly once, each event's entries in its order, event.moved and
    event.arrived of both moves included;
  - a fresh run without state, after it all, prints the same: hot's 600 entries
    on s1 before its first move are more than a turn of reading (256 lines), so
    s2's event.arrived is read before s1's event.moved and must wait for it;
  - examples/mail_worker.py --placement p --etcd URL --entries --until-head,
    run before the moves and again at the end from its state file, delivers
    the same, once each, in order per event, and mails each hold.confirmed once;
  - a run --from the first run's positions (its "next" at the end), without
    state, prints what the --follow run printed;
  - bad usage: --placement without --etcd, a --from that is not SET=SEQ of a
    set of the placement, --consumer, and an etcd that does not answer, each a
    clear error.
Needs etcd (Debian's etcd-server; else exit 77). Every process it starts is
stopped by its PID; every wait is bounded by a count and a time; the folders
are temporary.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import slotd_kit as kit
from slotd_kit import check, require, call
from test_placement import start_etcd, wait_primary, one, ETCD
from test_placement_move import write_secret, wait_sets, place_args, call_many, Seller


def read_feed(port, consumer='truth'):
    """Every entry of the set's feed, from the oldest, up to its head now; the consumer is forgotten after."""
    c = kit.Conn(port, timeout=30)
    r = c.ask({'op': 'subscribe', 'consumer': consumer, 'from': 'start', 'window': 10000})
    require(r.get('ok'), 'subscribe %s on %d' % (consumer, port), r)
    out, head = [], r['head']
    end = time.time() + 30
    while (not out or out[-1]['feed'] < head) and head and time.time() < end and len(out) < 100000:
        m = c.line()
        if 'feed' in m:
            out.append(m)
    c.close()
    one(port, {'op': 'feed_forget', 'consumer': consumer})
    return out


def truth(sets):
    """{event: [(set, seq), ...]} in the order a consumer must see, and every (set, seq) of both feeds."""
    segs, every, outside = {}, set(), []
    for name, srv in sets.items():
        cur = {}
        for e in read_feed(srv.port):
            every.add((name, e['feed']))
            ev, t = e['event'], e['type']
            if t in ('event.created', 'event.arrived'):
                cur[ev] = (1 if t == 'event.created' else e['gen'], [])
                segs.setdefault(ev, []).append(cur[ev])
            if ev not in cur:
                outside.append(e)
                continue
            cur[ev][1].append((name, e['feed'], t))
            if t == 'event.moved':
                del cur[ev]
    require(not outside, 'every entry of both feeds is in an epoch of its event', outside[:3])
    order = {}
    for ev, ss in segs.items():
        order[ev] = [x for _, seg in sorted(ss, key=lambda s: s[0]) for x in seg]
    return order, every


def judge_output(what, lines, order, every):
    """lines: the JSON entries a consumer printed (each with "set"). Checks exactly once and per-event order."""
    got = [(m['set'], m['feed']) for m in lines]
    dup = len(got) - len(set(got))
    missing = every - set(got)
    extra = set(got) - every
    check(dup == 0, '%s: no entry twice' % what, dup)
    check(not missing and not extra, '%s: every entry of both sets, nothing else (%d)' % (what, len(every)),
          (sorted(missing)[:5], sorted(extra)[:5]))
    per = {}
    for m in lines:
        per.setdefault(m['event'], []).append((m['set'], m['feed'], m['type']))
    bad = [ev for ev in order if per.get(ev) != order[ev]]
    check(not bad, '%s: each event\'s entries in its order across the moves' % what,
          [(ev, [x for x in zip(per.get(ev, []), order[ev]) if x[0] != x[1]][:3]) for ev in bad][:2])
    hot = [t for _, _, t in per.get('hot', [])]
    check(hot.count('event.moved') == 2 and hot.count('event.arrived') == 2,
          '%s: hot\'s two hand-overs, event.moved and event.arrived each, are seen' % what, hot.count('event.moved'))


def slotctl_feed(slotctl, etcd_url, extra, timeout=120):
    r = subprocess.run([slotctl, '--json', 'feed', '--placement', 'p', '--etcd', etcd_url] + extra,
                       capture_output=True, text=True, timeout=timeout)
    return r.returncode, [json.loads(x) for x in r.stdout.splitlines() if x.strip()], r.stderr


def start_s2_node(slotd, base, etcd_url, secret, i):
    """Node n{i} of the three-node set s2."""
    return kit.Server(slotd, os.path.join(base, 's2-n%d' % i), stderr_path=os.path.join(base, 's2-n%d.log' % i),
                      extra=['--cluster', 's2', '--node', 'n%d' % i, '--etcd', etcd_url, '--cluster-secret-file',
                             secret, '--placement', 'p', '--min-replicas', '0', '--heartbeat-ms', '50',
                             '--failover-timeout-ms', '600', '--durability', 'nosync'])


def wait_members(port, n):
    """True once the primary at port names n members and none is joining (at most 60 s)."""
    end = time.time() + 60
    while time.time() < end:
        r = one(port, {'op': 'cluster'})
        ms = r.get('members', [])
        if len(ms) >= n and all(m.get('role') != 'joining' for m in ms):
            return True
        time.sleep(0.2)
    return False


def mail_worker(worker, etcd_url, state):
    """One run of mail_worker.py --placement --until-head; its stdout lines."""
    r = subprocess.run([sys.executable, worker, '--placement', 'p', '--etcd', etcd_url, '--state', state,
                        '--entries', '--until-head'], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, 'mail_worker.py --placement --until-head', (r.returncode, r.stderr[-2000:]))
    return r.stdout.splitlines()


def writes(sets, tag, n):
    """n holds on a (s1) and b (s2), each third confirmed and each fifth released."""
    for ev, name in (('a', 's1'), ('b', 's2')):
        port = sets[name].port
        hs = call_many(port, [{'op': 'hold', 'event': ev, 'user': '%s%d' % (tag, i), 'request': '%s%d' % (tag, i),
                               'qty': 1} for i in range(n)])
        check(all(h.get('ok') for h in hs), '%d holds on %s (%s)' % (n, ev, tag), [h for h in hs if not h.get('ok')][:2])
        ops = [{'op': 'confirm', 'event': ev, 'user': '%s%d' % (tag, i), 'hold': h['hold']}
               for i, h in enumerate(hs) if i % 3 == 0 and h.get('ok')]
        ops += [{'op': 'release', 'event': ev, 'user': '%s%d' % (tag, i), 'hold': h['hold']}
                for i, h in enumerate(hs) if i % 5 == 1 and h.get('ok')]
        rs = call_many(port, ops)
        check(all(x.get('ok') for x in rs), 'confirms and releases on %s (%s)' % (ev, tag))


def hot_changes(port, tag, n):
    """n holds of hot on port (its owner), each fourth confirmed and each seventh released."""
    hs = call_many(port, [{'op': 'hold', 'event': 'hot', 'user': '%s%d' % (tag, i), 'request': '%s%d' % (tag, i),
                           'qty': 1} for i in range(n)])
    check(all(h.get('ok') for h in hs), '%d holds on hot (%s)' % (n, tag), [h for h in hs if not h.get('ok')][:2])
    ops = [{'op': 'confirm', 'event': 'hot', 'user': '%s%d' % (tag, i), 'hold': h['hold']}
           for i, h in enumerate(hs) if i % 4 == 0 and h.get('ok')]
    ops += [{'op': 'release', 'event': 'hot', 'user': '%s%d' % (tag, i), 'hold': h['hold']}
            for i, h in enumerate(hs) if i % 7 == 1 and h.get('ok')]
    rs = call_many(port, ops)
    check(all(x.get('ok') for x in rs), 'confirms and releases on hot (%s)' % tag)


def move(slotctl, port, to, gen):
    r = subprocess.run([slotctl, '--host', '127.0.0.1:%d' % port, 'move', 'hot', '--to', to],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and 'moved hot to %s: gen %d' % (to, gen) in r.stdout, 'slotctl move hot --to ' + to,
          (r.stdout, r.stderr))


def main():
    slotd, slotctl, worker = sys.argv[1], sys.argv[2], sys.argv[3]
    if not os.access(ETCD, os.X_OK):
        print('etcd not found (install etcd-server)')
        sys.exit(77)
    base = tempfile.mkdtemp(prefix='slotd-pfeed-')
    follow = None
    try:
        _, etcd_url = start_etcd(base)
        secret = write_secret(base)
        sets = {'s1': kit.Server(slotd, os.path.join(base, 's1'), extra=place_args('s1', etcd_url, secret),
                                 stderr_path=os.path.join(base, 's1.log'))}
        require(wait_primary(sets['s1'].port), 's1 (one node) becomes primary')
        s2 = [start_s2_node(slotd, base, etcd_url, secret, 1)]
        require(wait_primary(s2[0].port), 's2\'s n1 founds its set')
        s2 += [start_s2_node(slotd, base, etcd_url, secret, i) for i in (2, 3)]
        require(wait_members(s2[0].port, 3), 's2 has three members, none joining')
        sets['s2'] = s2[0]
        p1, p2 = sets['s1'].port, sets['s2'].port
        wait_sets(p1, 2)

        # bad usage
        for extra, want in ((['feed', '--placement', 'p'], 'needs --etcd'),
                            (['feed', '--placement', 'p', '--etcd', etcd_url, '--from', '3'], 'want SET=SEQ'),
                            (['feed', '--placement', 'p', '--etcd', etcd_url, '--from', 's9=3'], 'want SET=SEQ'),
                            (['feed', '--placement', 'p', '--etcd', etcd_url, '--consumer', 'x'], 'takes no --consumer'),
                            (['feed', '--etcd', etcd_url], 'goes with --placement')):
            r = subprocess.run([slotctl] + extra, capture_output=True, text=True, timeout=30)
            check(r.returncode == 64 and want in r.stderr, 'slotctl %s: usage error' % ' '.join(extra[1:3]),
                  (r.returncode, r.stderr))
        r = subprocess.run([slotctl, 'feed', '--placement', 'p', '--etcd', 'http://127.0.0.1:9'],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 2 and 'etcd' in r.stderr, 'an etcd that does not answer: exit 2 naming it',
              (r.returncode, r.stderr))

        for ev, port in (('a', p1), ('b', p2), ('hot', p1)):
            r = one(port, {'op': 'create_event', 'event': ev, 'capacity': 100000})
            require(r.get('ok'), 'create %s' % ev, r)
        writes(sets, 'x', 60)
        hot_changes(p1, 'h', 450)  # hot: ~600 entries on s1 before its first move

        state = os.path.join(base, 'pfeed.state')
        rc, first, err1 = slotctl_feed(slotctl, etcd_url, ['--state', state])
        check(rc == 0 and first and os.path.exists(state), 'slotctl feed --placement --state: a first run', (rc, err1))
        print('first run: %d entries; %s' % (len(first), err1.strip().splitlines()[-1:]))
        wstate = os.path.join(base, 'mail.state')
        mail1 = mail_worker(worker, etcd_url, wstate)
        out_path = os.path.join(base, 'follow.out')
        out = open(out_path, 'w')
        follow = subprocess.Popen([slotctl, '--json', 'feed', '--placement', 'p', '--etcd', etcd_url, '--state', state,
                                   '--follow'], stdout=out, stderr=subprocess.PIPE, text=True)

        seller = Seller({'s1': p1, 's2': p2}, 'hot')
        seller.start()
        writes(sets, 'y', 30)
        time.sleep(0.3)
        move(slotctl, p1, 's2', 2)
        writes(sets, 'z', 30)
        hot_changes(p2, 'i', 60)
        time.sleep(0.5)  # the seller is on s2 by now (it waited out its moving answers)
        move(slotctl, p2, 's1', 3)
        hot_changes(p1, 'j', 60)
        time.sleep(0.3)
        seller.stop.set()
        seller.join(30)
        check(not seller.errors, 'the seller saw no errors', seller.errors[:3])
        check(seller.redirects >= 2, 'the seller followed hot to s2 and back', (seller.redirects, len(seller.acked), seller.moving))
        # a failover in s2 (kill -9 of its primary): the --follow run follows the new primary
        # (a member it read from etcd, or the not_primary it is sent on) and subscribes there again
        sets['s2'].kill()
        sets['s2'] = None
        end = time.time() + 30
        while time.time() < end and sets['s2'] is None:
            for srv in s2[1:]:
                if one(srv.port, {'op': 'cluster'}).get('role') == 'primary':
                    sets['s2'] = srv
            time.sleep(0.1)
        require(sets['s2'] is not None, 'a new primary of s2 within 30 s')
        r = {}
        while time.time() < end and not r.get('ok'):  # until it has taken over (writes answered)
            r = one(sets['s2'].port, {'op': 'hold', 'event': 'b', 'user': 'over', 'request': 'over', 'qty': 1})
            time.sleep(0.1)
        require(r.get('ok'), 'the new primary of s2 takes writes', r)
        writes(sets, 'w', 20)

        order, every = truth(sets)
        print('truth: %d entries (s1 %d, s2 %d); hot %d' % (len(every), sum(1 for s, _ in every if s == 's1'),
                                                            sum(1 for s, _ in every if s == 's2'), len(order['hot'])))
        want = len(every) - len(first)
        end = time.time() + 60
        n = 0
        while time.time() < end and n < want:
            with open(out_path) as f:
                n = sum(1 for _ in f)
            time.sleep(0.2)
        follow.send_signal(signal.SIGTERM)
        _, ferr = follow.communicate(timeout=60)
        out.close()
        check(follow.returncode == 0, 'the --follow run ends at SIGTERM with 0', (follow.returncode, ferr))
        check('set s2: ' in ferr and 'subscribing again' in ferr,
              'the --follow run subscribed to s2 again after its failover', ferr)
        follow = None
        with open(out_path) as f:
            second = [json.loads(x) for x in f if x.strip()]
        print('follow run: %d entries; %s' % (len(second), ferr.strip().splitlines()[-1:]))
        print('\n'.join(x for x in ferr.splitlines() if 'set s2' in x)[:600])
        judge_output('a first run and a --follow run resumed from its --state', first + second, order, every)

        # --from the first run's positions (its "next"), without --state: what the --follow run printed
        nxt = err1.strip().splitlines()[-1].split('next: ')[1].split()
        rc, again, err = slotctl_feed(slotctl, etcd_url, ['--from', ','.join(nxt)])
        check(rc == 0 and sorted((m['set'], m['feed']) for m in again) == sorted((m['set'], m['feed']) for m in second),
              '--from %s prints what the --follow run from the state printed' % ','.join(nxt), (rc, err, len(again)))
        judge_output('a --from run', first + again, order, every)

        rc, fresh, err = slotctl_feed(slotctl, etcd_url, [])
        check(rc == 0, 'a fresh run without --state', (rc, err))
        check(' 0 waited' not in err and 'waited for a hand-over' in err,
              'in it s2\'s event.arrived waited for s1\'s event.moved', err)
        print('fresh run: %d entries; %s' % (len(fresh), err.strip().splitlines()[-1:]))
        judge_output('a fresh run', fresh, order, every)

        r = subprocess.run([slotctl, 'feed', '--placement', 'p', '--etcd', etcd_url], capture_output=True, text=True,
                           timeout=120)
        human = r.stdout.splitlines()
        check(r.returncode == 0 and len(human) == len(every) and all(x[:4] in ('s1  ', 's2  ') for x in human),
              'a human run: a line per entry, each starting with its set', (r.returncode, human[:2], r.stderr))

        lines = mail1 + mail_worker(worker, etcd_url, wstate)
        entries = [json.loads(x[len('entry '):]) for x in lines if x.startswith('entry ')]
        judge_output('mail_worker.py --placement, a run before the moves and one resumed from its state after',
                     entries, order, every)
        mails = [x for x in lines if x.startswith('mail to ') and 'confirmed' in x]
        confirmed = sum(1 for m in entries if m['type'] == 'hold.confirmed')
        check(len(mails) == confirmed and len(set(mails)) == len(mails),
              'mail_worker.py mails each hold.confirmed once', (len(mails), confirmed))
        for name in ('s1', 's2'):
            c = one(sets[name].port, {'op': 'feed_consumers'})
            left = [x['consumer'] for x in c.get('consumers', []) if x['consumer'].startswith('slotctl.')]
            check(c.get('ok') and not left, 'slotctl forgot its consumers on ' + name, c)
    finally:
        if follow is not None and follow.poll() is None:
            follow.kill()
            follow.wait()
        kit.stop_all()
        shutil.rmtree(base, ignore_errors=True)
    kit.finish()


if __name__ == '__main__':
    main()
