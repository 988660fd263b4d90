#!/usr/bin/env python3
"""A move whose source is a three-node replica set, its primary cut off in
the move (docs/design.md, "The mover", "The lock's trust", "Recovery").

In network namespaces this test makes (a hub with etcd, one namespace per
slotd: s1's members n1, n2, n3 and s2's one node), three moves of an event from
s1 to s2 stand still for 4 s (slotd-failpoints' pause_move_*), and s1's
primary is cut off 0.3 s into the pause for 9 s (past the lock's lease), then
healed:

  - a1, paused after place_relinquish on n1, n1 cut from etcd alone: its
    replicas still hear it, so it stays primary; its mover stops trusting the
    lock and undoes, its recovery pass puts the map back after the heal:
    serving on s1 at gen 2;
  - a2, the same pause on n1, n1 isolated (from etcd, its replicas, s2 and the
    test): another member takes over, and its recovery (the dead lock's lease
    expired) aborts on s2 and reclaims: serving on s1 at gen 2; n1's mover,
    back after the heal, finds the target aborted;
  - b, paused after place_own on the member that took over (n2 and n3 are
    armed with that failpoint, n1 is not), that member isolated: the next
    primary's recovery finishes the move: serving on s2 at gen 2.

Checked for each: during the cut, no probe (a fresh hold sent to every member
of both sets every 150 ms) had a write acknowledged by both sets, or by two
members of s1; an isolated primary is replaced; within 30 s of the heal the
map says serving on the expected set at gen 2; the owner's primary answers
holds and the other set wrong_set; every hold acknowledged before, during and
after (a seller holding one unit at a time, following wrong_set, moving and
not_primary, and the probes) is on the owner by id; s1 has its three members
again; at the end its members agree on the digest and `check` is clean on both
sets' primaries. With recovery finishing a move whose target is only staged
(a planted fault), a2 ends on s2 with its holds answering `moving`: the test
fails.

Needs root, `ip netns`, nft and etcd; exit 77 otherwise. The namespaces are
deleted and every process stopped by its PID on every way out.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import test_placement_partition as pp
from test_placement_partition import check, sh, ETCD, NET, HUB_IP, PORT, ETCD_PORT, STARTED

CUT_AFTER_S = 0.3
CUT_FOR_S = 9.0
SETTLE_S = 30.0
PROBE_EVERY_S = 0.15

# (set, node) -> (namespace key, address)
NODES = {('s1', 'n1'): ('a', NET + '.11'), ('s1', 'n2'): ('b', NET + '.13'), ('s1', 'n3'): ('c', NET + '.14'),
         ('s2', 'n1'): ('d', NET + '.12')}
SETS = {'s1': ['n1', 'n2', 'n3'], 's2': ['n1']}
NS = {}
BEFORE = {}


def outer(slotd_fp):
    if os.geteuid() != 0:
        print('network namespaces need root: skipped')
        sys.exit(77)
    for tool in ('ip', 'nft'):
        if not shutil.which(tool):
            print('%s not found: skipped' % tool)
            sys.exit(77)
    if not os.access(ETCD, os.X_OK):
        print('etcd not found (install etcd-server): skipped')
        sys.exit(77)
    tag = 'sps%d' % (os.getpid() % 100000)
    ns = {k: '%s-%s' % (tag, k) for k in ('hub', 'a', 'b', 'c', 'd')}
    made = []
    try:
        for n in ns.values():
            if sh('ip netns add %s' % n) != 0:
                print('`ip netns add` failed: skipped')
                sys.exit(77)
            made.append(n)
            assert sh('ip -n %s link set lo up' % n) == 0
        hub = ns['hub']
        assert sh('ip -n %s link add br0 type bridge && ip -n %s addr add %s/24 dev br0 && ip -n %s link set br0 up'
                  % (hub, hub, HUB_IP, hub)) == 0
        for i, (k, ip) in enumerate(sorted(NODES.values())):
            assert sh('ip -n %s link add v%d type veth peer name eth0 netns %s' % (hub, i, ns[k])) == 0
            assert sh('ip -n %s link set v%d master br0 && ip -n %s link set v%d up' % (hub, i, hub, i)) == 0
            assert sh('ip -n %s addr add %s/24 dev eth0 && ip -n %s link set eth0 up' % (ns[k], ip, ns[k])) == 0
        for k in ns:
            if sh("ip netns exec %s nft 'add table inet slt; add chain inet slt in "
                  "{ type filter hook input priority 0 ; }'" % ns[k]) != 0:
                print('nft does not work in a namespace: skipped')
                sys.exit(77)
        env = dict(os.environ, SLOT_PP_NS=json.dumps(ns))
        rc = subprocess.call(['ip', 'netns', 'exec', hub, sys.executable, os.path.abspath(__file__), '--inner',
                              slotd_fp], env=env)
        sys.exit(rc)
    finally:
        for n in made:
            sh('ip netns delete %s' % n)


# ---- the inner part, in the hub


def cut(node, how):
    """s1's member node cut off: 'etcd' from etcd alone (both sides), 'isolate' from
    everything (etcd, its replicas, s2 and the test: a machine fallen off the network);
    None heals (every rule gone)."""
    k, ip = NODES[('s1', node)]
    rules = {n: None for n in NS.values()}
    if how == 'etcd':
        rules[NS[k]] = 'ip saddr %s tcp sport %d drop' % (HUB_IP, ETCD_PORT)
        rules[NS['hub']] = 'ip saddr %s tcp dport %d drop' % (ip, ETCD_PORT)
    elif how == 'isolate':
        for n in NS.values():
            rules[n] = 'ip saddr %s drop' % ip
        rules[NS[k]] = 'iifname "eth0" drop'
    for n, rule in rules.items():
        cmd = "ip netns exec %s nft 'flush chain inet slt in%s'" % (n, '; add rule inet slt in ' + rule if rule else '')
        assert sh(cmd) == 0, cmd


class Conn(pp.Conn):
    def __init__(self, ip, timeout=20):  # pylint: disable=super-init-not-called
        self.sock = socket.create_connection((ip, PORT), timeout=timeout)
        self.buf = b''


def one(ip, req, timeout=20):
    c = Conn(ip, timeout)
    try:
        return c.ask(req)
    finally:
        c.close()


def ip_of(s, node):
    return NODES[(s, node)][1]


def primary(s, timeout=0.5):
    """The address of the member of s that says it is primary at the highest epoch, or None."""
    best = None
    for node in SETS[s]:
        ip = ip_of(s, node)
        try:
            r = one(ip, {'op': 'cluster'}, timeout=timeout)
        except (OSError, ValueError):
            continue
        if r.get('role') == 'primary' and (best is None or r.get('epoch', 0) > best[0]):
            best = (r.get('epoch', 0), ip, node)
    return best


def entry(ev):
    for s in ('s2', 's1'):
        for node in SETS[s]:
            try:
                m = one(ip_of(s, node), {'op': 'placement', 'event': ev}, timeout=0.5)
            except (OSError, ValueError):
                continue
            if m.get('ok'):
                return m.get('events', {}).get(ev)
    return None


class Seller(threading.Thread):
    """One unit at a time, the same request key until answered; moving waits
    retry_after_ms, wrong_set goes to the set it names, not_primary, unavailable
    and a lost connection look for the set's primary again. acked: {request: (hold, set)}."""

    def __init__(self, ev):
        super().__init__(daemon=True)
        self.ev, self.acked, self.errors = ev, {}, []
        self.stop = threading.Event()

    def run(self):
        owner, i, conn = 's1', 0, None
        end = time.time() + 120
        while not self.stop.is_set() and time.time() < end:
            req = {'op': 'hold', 'event': self.ev, 'user': 'w%d' % i, 'request': 'w%d' % i, 'qty': 1}
            for _ in range(2000):
                if self.stop.is_set():
                    break
                try:
                    if conn is None:
                        p = primary(owner)
                        if not p:
                            time.sleep(0.05)
                            continue
                        conn = Conn(p[1], 5)
                    r = conn.ask(req)
                except (OSError, ConnectionError, ValueError):
                    if conn:
                        conn.close()
                    conn = None
                    time.sleep(0.05)
                    continue
                err = r.get('error')
                if err == 'moving':
                    time.sleep(min(r.get('retry_after_ms', 100), 500) / 1000.0)
                    continue
                if err == 'wrong_set' and r.get('set') in SETS:
                    owner = r['set']
                    conn.close()
                    conn = None
                    continue
                if err in ('not_primary', 'unavailable', 'overloaded'):
                    conn.close()
                    conn = None
                    time.sleep(0.05)
                    continue
                if r.get('ok'):
                    self.acked[req['request']] = (r['hold'], owner)
                else:
                    self.errors.append(r)
                break
            i += 1
            time.sleep(0.01)
        if conn:
            conn.close()


def start_node(s, node, slotd_fp, base, etcd_url, secret, failpoints=None):
    env = dict(os.environ)
    env.pop('SLOT_FAILPOINTS', None)
    if failpoints:
        env['SLOT_FAILPOINTS'] = failpoints
    k, ip = NODES[(s, node)]
    name = '%s-%s' % (s, node)
    log = open(os.path.join(base, name + '.log'), 'a')
    argv = ['ip', 'netns', 'exec', NS[k], slotd_fp, '--data', os.path.join(base, name),
            '--listen', '%s:%d' % (ip, PORT), '--insecure', '--cluster', s, '--node', node,
            '--etcd', etcd_url, '--cluster-secret-file', secret, '--placement', 'p', '--min-replicas', '0',
            '--heartbeat-ms', '50', '--failover-timeout-ms', '600', '--repl-timeout-ms', '300',
            '--durability', 'nosync']
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, env=env, text=True)  # ip execs slotd: same PID
    STARTED.append(p)
    first = p.stdout.readline()
    if not first.startswith('listening on '):
        sys.exit('%s did not start: %r' % (name, first))
    return p


def probe(ev, n):
    """A fresh hold sent to every member of both sets; [(set, node, hold)] of those acknowledged."""
    got = []
    for (s, node), (_, ip) in sorted(NODES.items()):
        rk = 'p%d%s%s' % (n, s, node)
        try:
            r = one(ip, {'op': 'hold', 'event': ev, 'user': rk, 'request': rk, 'qty': 1}, timeout=0.5)
        except (OSError, ValueError):
            continue
        if r.get('ok'):
            got.append((s, node, r['hold']))
    return got


def wait_until(cond, timeout_s, step=0.1):
    end = time.time() + timeout_s
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return None


def one_case(ev, how, step, want_set, want_gen):
    p = primary('s1')
    check(p is not None, '%s: s1 has a primary' % ev)
    if not p:
        return
    cut_node = p[2]
    print('-- %s: s1\'s primary %s cut (%s) in the move, %s' % (ev, cut_node, how, step), flush=True)
    seller = Seller(ev)
    seller.start()
    time.sleep(0.5)
    reply = {}

    def mover():
        try:
            reply['r'] = one(p[1], {'op': 'move_event', 'event': ev, 'to': 's2'}, timeout=60)
        except (OSError, ValueError) as e:
            reply['r'] = {'error': repr(e)}

    t = threading.Thread(target=mover, daemon=True)
    t.start()
    time.sleep(CUT_AFTER_S)
    cut(cut_node, how)
    probes, both, n = {}, [], 0
    end = time.time() + CUT_FOR_S
    while time.time() < end:
        got = probe(ev, n)
        n += 1
        for s, node, h in got:
            probes[h] = s
        if len({s for s, _, _ in got}) > 1 or len([1 for s, _, _ in got if s == 's1']) > 1:
            both.append(got)
        time.sleep(PROBE_EVERY_S)
    np = primary('s1')
    print('   s1\'s primary at the end of the cut: %s' % (np[2] if np else None), flush=True)
    if how == 'isolate':
        check(np is not None and np[2] != cut_node, '%s: another member of s1 took over from the isolated %s'
              % (ev, cut_node), np)
    cut(cut_node, None)
    healed = time.time()
    check(not both, '%s: no probe in the cut had a write acknowledged by two sets or two members of s1' % ev,
          both[:3])
    t.join(60)
    print('   the move answered: %s' % reply.get('r'), flush=True)
    settled = wait_until(lambda: (lambda e: e if e and e.get('state') == 'serving' else None)(entry(ev)), SETTLE_S, 0.2)
    check(settled is not None, '%s: the map says serving within %d s of the heal' % (ev, SETTLE_S), entry(ev))
    if settled:
        print('   settled %.1f s after the heal: %s' % (time.time() - healed, settled), flush=True)
        check(settled.get('set') == want_set and settled.get('gen') == want_gen,
              '%s: %s (serving on %s at gen %d)' % (ev, 'undone' if want_set == 's1' else 'finished', want_set,
                                                    want_gen), settled)
    time.sleep(1.0)
    seller.stop.set()
    seller.join(30)
    check(not seller.errors, '%s: the seller got no other errors' % ev, seller.errors[:3])
    check(len(seller.acked) > 0, '%s: the seller had holds acknowledged (%d)' % (ev, len(seller.acked)))
    owner = settled.get('set') if settled else want_set
    other = 's2' if owner == 's1' else 's1'
    op = wait_until(lambda: primary(owner), 20)
    xp = wait_until(lambda: primary(other), 20)
    check(op is not None and xp is not None, '%s: both sets have a primary after the heal' % ev)
    if not (op and xp):
        return
    r = one(op[1], {'op': 'hold', 'event': ev, 'user': 'after', 'request': 'after-' + ev, 'qty': 1})
    check(r.get('ok'), '%s: the owner %s sells after the heal' % (ev, owner), r)
    r = one(xp[1], {'op': 'hold', 'event': ev, 'user': 'after', 'request': 'after-' + ev, 'qty': 1})
    check(r.get('error') == 'wrong_set' and r.get('set') == owner, '%s: %s answers wrong_set naming %s'
          % (ev, other, owner), r)
    holds = list(BEFORE[ev]) + [h for h, _ in seller.acked.values()] + list(probes)
    c = Conn(op[1], 30)
    missing = []
    try:
        for h in holds:
            g = c.ask({'op': 'get_hold', 'event': ev, 'hold': h})
            if not g.get('ok'):
                missing.append((h, g))
    finally:
        c.close()
    check(not missing, '%s: all %d acknowledged holds are on %s' % (ev, len(holds), owner), missing[:3])


def digests_agree():
    """Every member of s1 gives the same digest (after it caught up)."""
    def same():
        ds = []
        for node in SETS['s1']:
            try:
                r = one(ip_of('s1', node), {'op': 'digest'}, timeout=5)
            except (OSError, ValueError):
                return None
            if not r.get('ok'):
                return None
            ds.append(r.get('digest'))
        return ds if len(set(ds)) == 1 else None
    return wait_until(same, 20, 0.3)


def inner(slotd_fp):
    NS.update(json.loads(os.environ['SLOT_PP_NS']))
    base = tempfile.mkdtemp(prefix='slotd-ppset-')
    try:
        client, secret = pp.start_hub(base, 'placement-partition-set-secret-0123456789')
        # n1 (s1's first primary) pauses its first two moves after relinquish; n2 and n3
        # pause theirs after own, so the third case pauses there whichever of them took over
        start_node('s1', 'n1', slotd_fp, base, client, secret, 'pause_move_after_relinquish*2')
        kit_ok = wait_until(lambda: (primary('s1') or (0, 0, ''))[2] == 'n1', 30)
        check(kit_ok, 's1\'s first node is its primary')
        for node in ('n2', 'n3'):
            start_node('s1', node, slotd_fp, base, client, secret, 'pause_move_after_own*1')
        start_node('s2', 'n1', slotd_fp, base, client, secret)
        check(wait_until(lambda: primary('s2'), 30) is not None, 's2 has a primary')

        def members_ready():
            p = primary('s1')
            ms = one(p[1], {'op': 'cluster'}, timeout=5).get('members', []) if p else []
            return len(ms) == 3 and all(m.get('role') in ('primary', 'replica') for m in ms)
        check(wait_until(members_ready, 30), 's1 has three members, two of them replicas')
        p1 = primary('s1')[1]
        check(wait_until(lambda: len(one(p1, {'op': 'placement'}).get('sets', {})) >= 2, 10),
              'the placement names both sets')
        cases = (('a1', 'etcd', 'after place_relinquish', 's1', 2), ('a2', 'isolate', 'after place_relinquish', 's1', 2),
                 ('b', 'isolate', 'after place_own', 's2', 2))
        for ev, _, _, _, _ in cases:
            r = one(p1, {'op': 'create_event', 'event': ev, 'capacity': 100000, 'shards': 4})
            check(r.get('ok'), 'create %s on s1' % ev, r)
            c = Conn(p1)
            try:
                rs = [c.ask({'op': 'hold', 'event': ev, 'user': 'u%d' % i, 'request': 'u%d' % i, 'qty': 1})
                      for i in range(200)]
            finally:
                c.close()
            BEFORE[ev] = [x['hold'] for x in rs if x.get('ok')]
            check(len(BEFORE[ev]) == 200, '%s: 200 holds on s1 before its move' % ev)
        for case in cases:
            one_case(*case)
            check(wait_until(members_ready, 30), 'after %s: s1 has its three members again' % case[0])
        check(digests_agree() is not None, 'the members of s1 agree on the digest')
        for s in ('s1', 's2'):
            p = primary(s)
            r = one(p[1], {'op': 'check'}) if p else {}
            check(r.get('ok') and r.get('violations_total') == 0, 'check is clean on %s\'s primary' % s, r)
    finally:
        pp.finish(base)


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == '--inner':
        inner(sys.argv[2])
    elif len(sys.argv) == 2:
        outer(sys.argv[1])
    else:
        sys.exit('usage: test_placement_partition_set.py SLOTD_FP')
