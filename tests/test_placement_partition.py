#!/usr/bin/env python3
"""test_placement_partition.py SLOTD_FP — a move whose source is cut from etcd
(docs/design.md, "The mover": the lock's trust and recovery).

Network namespaces the test makes: a hub (a bridge, 10.201.0.1/24; etcd, and
this script's checks, which re-runs itself there) and one namespace per
one-node replica set of the placement, s1 at 10.201.0.11 and s2 at
10.201.0.12. A cut drops, with nftables, etcd's answers on s1's side and s1's
packets to etcd's port on the hub's, so s1 sees only timeouts; s1 and s2
still reach each other and the hub.

slotd-failpoints on s1 makes three moves stand still for 4 s (its loop
turning): the first before place_relinquish, the second after it, the third
after place_own. Each move (of k1, k2, k3, each with holds made before and a
seller holding one unit at a time through it) has s1 cut from etcd 0.3 s into
its pause, for 9 s, then healed. Checked for each:

  - during the cut, at no probe did both sets acknowledge a write of the event
    (a hold sent to each every 150 ms: never two owners);
  - the outcome: k1 and k2 undone (the mover stops trusting its lock once no
    keep-alive was answered for SLOT_PLACE_LOCK_TRUST_MS, so it never sends
    place_own), k3 finished (own had committed before the cut);
  - within 30 s of the heal the map entry says serving on that set, at gen 2
    (undone: the source owns the event at G+1 again; finished: the target
    owns it at G+1), the owner answers holds and the other set
    wrong_set naming it;
  - every hold acknowledged before, during and after (seller and probes) is on
    the owner by id; `check` is clean on both sets.

Needs root, `ip netns`, nft and etcd (Debian's etcd-server); exit 77
otherwise. The namespaces are deleted and every process stopped by its PID on
every way out; the folders are temporary.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ETCD = '/usr/bin/etcd'
NET = '10.201.0'
HUB_IP = NET + '.1'
IPS = {'s1': NET + '.11', 's2': NET + '.12'}
PORT = 7400
ETCD_PORT = 2379
CUT_AFTER_S = 0.3     # into the mover's 4 s pause (SLOT_FP_PAUSE_MOVE_MS)
CUT_FOR_S = 9.0       # past the lock's TTL (5 s): etcd expires the dead lock
SETTLE_S = 30.0       # docs/design.md: a move left behind is resolved within 30 s
PROBE_EVERY_S = 0.15

FAILURES = []
STARTED = []


def check(cond, what, detail=''):
    if not cond:
        FAILURES.append(what)
        print('FAIL: ' + what + ('\n' + str(detail) if detail else ''), flush=True)
    else:
        print('ok: ' + what, flush=True)
    return cond


def sh(cmd):
    return subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode


# ---- the outer part: namespaces, then this script again inside the hub


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
    tag = 'slp%d' % (os.getpid() % 100000)
    ns = {'hub': tag + '-hub', 's1': tag + '-s1', 's2': tag + '-s2'}
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
        for i, s in enumerate(('s1', 's2')):
            assert sh('ip -n %s link add v%d type veth peer name eth0 netns %s' % (hub, i, ns[s])) == 0
            assert sh('ip -n %s link set v%d master br0 && ip -n %s link set v%d up' % (hub, i, hub, i)) == 0
            assert sh('ip -n %s addr add %s/24 dev eth0 && ip -n %s link set eth0 up' % (ns[s], IPS[s], ns[s])) == 0
        for n in (ns['hub'], ns['s1']):
            if sh("ip netns exec %s nft 'add table inet slt; add chain inet slt in "
                  "{ type filter hook input priority 0 ; }'" % n) != 0:
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


def cut(ns, on):
    """s1 from etcd (both sides) when on, else healed."""
    rules = {ns['s1']: 'ip saddr %s tcp sport %d drop' % (HUB_IP, ETCD_PORT),
             ns['hub']: 'ip saddr %s tcp dport %d drop' % (IPS['s1'], ETCD_PORT)}
    for n, rule in rules.items():
        cmd = "ip netns exec %s nft 'flush chain inet slt in%s'" % (n, '; add rule inet slt in ' + rule if on else '')
        assert sh(cmd) == 0, cmd


class Conn:
    def __init__(self, s, timeout=20):
        self.sock = socket.create_connection((IPS[s], PORT), timeout=timeout)
        self.buf = b''

    def ask(self, obj):
        self.sock.sendall(json.dumps(obj, separators=(',', ':')).encode() + b'\n')
        while b'\n' not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError('closed')
            self.buf += chunk
        line, self.buf = self.buf.split(b'\n', 1)
        return json.loads(line)

    def close(self):
        self.sock.close()


def one(s, req, timeout=20):
    c = Conn(s, timeout)
    try:
        return c.ask(req)
    finally:
        c.close()


def many(s, reqs):
    c = Conn(s)
    try:
        return [c.ask(q) for q in reqs]
    finally:
        c.close()


def entry(ev):
    for s in ('s2', 's1'):
        try:
            m = one(s, {'op': 'placement', 'event': ev}, timeout=5)
        except OSError:
            continue
        if m.get('ok'):
            return m.get('events', {}).get(ev)
    return None


class Seller(threading.Thread):
    """One unit at a time, the same request key until answered: moving waits
    retry_after_ms, wrong_set goes to the set it names. acked: {request: hold}."""

    def __init__(self, ev):
        super().__init__(daemon=True)
        self.ev, self.acked, self.errors = ev, {}, []
        self.stop = threading.Event()

    def run(self):
        owner, i, conns = 's1', 0, {}
        end = time.time() + 120
        while not self.stop.is_set() and time.time() < end:
            req = {'op': 'hold', 'event': self.ev, 'user': 'w%d' % i, 'request': 'w%d' % i, 'qty': 1}
            for _ in range(2000):
                if self.stop.is_set():
                    break
                try:
                    if owner not in conns:
                        conns[owner] = Conn(owner)
                    r = conns[owner].ask(req)
                except (OSError, ConnectionError, ValueError) as e:
                    self.errors.append(repr(e))
                    conns.pop(owner, None)
                    time.sleep(0.05)
                    continue
                if r.get('error') == 'moving':
                    time.sleep(min(r.get('retry_after_ms', 100), 500) / 1000.0)
                    continue
                if r.get('error') == 'wrong_set' and r.get('set') in IPS:
                    owner = r['set']
                    continue
                if r.get('ok'):
                    self.acked[req['request']] = (r['hold'], owner)
                elif r.get('error') != 'unavailable':
                    self.errors.append(r)
                break
            i += 1
            time.sleep(0.01)
        for c in conns.values():
            c.close()


def start_node(name, slotd_fp, base, ns, etcd_url, secret, failpoints=None):
    env = dict(os.environ)
    env.pop('SLOT_FAILPOINTS', None)
    if failpoints:
        env['SLOT_FAILPOINTS'] = failpoints
    log = open(os.path.join(base, name + '.log'), 'a')
    argv = ['ip', 'netns', 'exec', ns[name], slotd_fp, '--data', os.path.join(base, name),
            '--listen', '%s:%d' % (IPS[name], PORT), '--insecure', '--cluster', name, '--node', 'n1',
            '--etcd', etcd_url, '--cluster-secret-file', secret, '--placement', 'p', '--min-replicas', '0',
            '--heartbeat-ms', '50', '--failover-timeout-ms', '600', '--durability', 'nosync']
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, env=env, text=True)  # ip execs slotd: same PID
    STARTED.append(p)
    first = p.stdout.readline()
    if not first.startswith('listening on '):
        sys.exit('%s did not start: %r' % (name, first))
    end = time.time() + 30
    while time.time() < end:
        try:
            if one(name, {'op': 'cluster'}, timeout=5).get('role') == 'primary':
                return p
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit('%s did not become primary' % name)


def probe(ev, n):
    """A fresh hold sent to each set; {set: hold id} of the ones acknowledged."""
    got = {}
    for s in ('s1', 's2'):
        req = {'op': 'hold', 'event': ev, 'user': 'p%d%s' % (n, s), 'request': 'p%d%s' % (n, s), 'qty': 1}
        try:
            r = one(s, req, timeout=3)
        except (OSError, ValueError):
            continue
        if r.get('ok'):
            got[s] = r['hold']
    return got


def one_case(ev, step, want_set, want_gen):
    print('-- %s: s1 cut from etcd in the move, %s' % (ev, step), flush=True)
    seller = Seller(ev)
    seller.start()
    time.sleep(0.5)
    reply = {}

    def mover():
        try:
            reply['r'] = one('s1', {'op': 'move_event', 'event': ev, 'to': 's2'}, timeout=60)
        except (OSError, ValueError) as e:
            reply['r'] = {'error': repr(e)}

    t = threading.Thread(target=mover, daemon=True)
    t.start()
    time.sleep(CUT_AFTER_S)
    cut(NS, True)
    probes, both, n = {}, [], 0
    end = time.time() + CUT_FOR_S
    while time.time() < end:
        got = probe(ev, n)
        n += 1
        for s, h in got.items():
            probes[h] = s
        if len(got) > 1:
            both.append(got)
        time.sleep(PROBE_EVERY_S)
    cut(NS, False)
    healed = time.time()
    check(not both, '%s: no probe in the cut had a write acknowledged by both sets' % ev, both[:3])
    t.join(60)
    print('   the move answered: %s' % reply.get('r'), flush=True)
    settled = None
    while time.time() < healed + SETTLE_S:
        e = entry(ev)
        if e and e.get('state') == 'serving':
            settled = e
            break
        time.sleep(0.2)
    check(settled is not None, '%s: the map says serving within %d s of the heal' % (ev, SETTLE_S), entry(ev))
    if settled:
        print('   settled %.1f s after the heal: %s' % (time.time() - healed, settled), flush=True)
        check(settled.get('set') == want_set and settled.get('gen') == want_gen,
              '%s: %s (serving on %s at gen %d)' % (ev, 'undone' if want_set == 's1' else 'finished', want_set,
                                                    want_gen), settled)
    time.sleep(1.0)
    seller.stop.set()
    seller.join(30)
    owner = settled.get('set') if settled else want_set
    other = 's2' if owner == 's1' else 's1'
    r = one(owner, {'op': 'hold', 'event': ev, 'user': 'after', 'request': 'after', 'qty': 1})
    check(r.get('ok'), '%s: the owner %s takes a hold after the heal' % (ev, owner), r)
    if r.get('ok'):
        probes[r['hold']] = owner
    r = one(other, {'op': 'hold', 'event': ev, 'user': 'after2', 'request': 'after2', 'qty': 1})
    check(r.get('error') == 'wrong_set' and r.get('set') == owner, '%s: %s answers wrong_set naming %s'
          % (ev, other, owner), r)
    ids = [h for h, _ in seller.acked.values()] + list(probes) + BEFORE[ev]
    rs = many(owner, [{'op': 'get_hold', 'event': ev, 'hold': h} for h in ids])
    lost = [h for h, x in zip(ids, rs) if not x.get('ok')]
    check(not lost, '%s: all %d acknowledged holds (%d before, %d by the seller, %d probes) are on %s'
          % (ev, len(ids), len(BEFORE[ev]), len(seller.acked), len(probes), owner), lost[:5])
    check(not [e for e in seller.errors if not isinstance(e, str)], '%s: the seller got no error answers' % ev,
          seller.errors[:3])


NS = {}
BEFORE = {}


def start_hub(base, secret_text):
    """In the hub: lo up, etcd on HUB_IP:ETCD_PORT (data and log under base, in STARTED),
    and the cluster secret file (mode 0600). Returns (etcd's client URL, the secret's path)."""
    sh('ip link set lo up')
    elog = open(os.path.join(base, 'etcd.log'), 'w')
    client = 'http://%s:%d' % (HUB_IP, ETCD_PORT)
    peer = 'http://127.0.0.1:2380'
    etcd = subprocess.Popen([ETCD, '--name', 't', '--data-dir', os.path.join(base, 'etcd-data'),
                             '--listen-client-urls', client, '--advertise-client-urls', client,
                             '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
                             '--initial-cluster', 't=' + peer], stdout=elog, stderr=elog)
    STARTED.append(etcd)
    for _ in range(200):
        try:
            socket.create_connection((HUB_IP, ETCD_PORT), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    secret = os.path.join(base, 'secret')
    with open(secret, 'w') as f:
        f.write(secret_text + '\n')
    os.chmod(secret, 0o600)
    return client, secret


def finish(base):
    """Every process in STARTED killed by its PID; base removed (kept when a check
    failed); exit 1 when one did, else print ok."""
    for p in STARTED:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
    if FAILURES:
        print('folders kept: %s' % base)
    else:
        shutil.rmtree(base, ignore_errors=True)
    if FAILURES:
        print('%d failed' % len(FAILURES))
        sys.exit(1)
    print('ok')


def inner(slotd_fp):
    NS.update(json.loads(os.environ['SLOT_PP_NS']))
    base = tempfile.mkdtemp(prefix='slotd-ppart-')
    try:
        client, secret = start_hub(base, 'placement-partition-secret-0123456789')
        # k1 passes after_relinquish too (then stops trusting its lock), so that one skips a pass;
        # neither k1 nor k2 reaches place_own
        fps = 'pause_move_before_relinquish*1,pause_move_after_relinquish@1*1,pause_move_after_own*1'
        start_node('s1', slotd_fp, base, NS, client, secret, fps)
        start_node('s2', slotd_fp, base, NS, client, secret)
        end = time.time() + 10
        while time.time() < end and len(one('s1', {'op': 'placement'}).get('sets', {})) < 2:
            time.sleep(0.1)
        cases = (('k1', 'before place_relinquish', 's1', 2), ('k2', 'after place_relinquish', 's1', 2),
                 ('k3', 'after place_own', 's2', 2))
        for ev, _, _, _ in cases:
            r = one('s1', {'op': 'create_event', 'event': ev, 'capacity': 100000, 'shards': 4})
            check(r.get('ok'), 'create %s on s1' % ev, r)
            rs = many('s1', [{'op': 'hold', 'event': ev, 'user': 'u%d' % i, 'request': 'u%d' % i, 'qty': 1}
                             for i in range(200)])
            BEFORE[ev] = [x['hold'] for x in rs if x.get('ok')]
            check(len(BEFORE[ev]) == 200, '%s: 200 holds on s1 before its move' % ev)
        for case in cases:
            one_case(*case)
        # an undone move's target takes the event in the next move (it stayed aborted
        # at the gen that move staged at)
        r = {}
        end = time.time() + 30
        while time.time() < end:
            r = one('s1', {'op': 'move_event', 'event': 'k1', 'to': 's2'}, timeout=60)
            if r.get('error') not in ('unavailable', 'moving'):
                break
            time.sleep(0.3)
        check(r.get('ok') and r.get('gen') == 3, 'k1, undone in the cut, moves to s2 at gen 3 after the heal', r)
        for s in ('s1', 's2'):
            r = one(s, {'op': 'check'})
            check(r.get('ok') and r.get('violations_total') == 0, 'check is clean on %s' % s, r)
    finally:
        finish(base)


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == '--inner':
        inner(sys.argv[2])
    elif len(sys.argv) == 2:
        outer(sys.argv[1])
    else:
        sys.exit('usage: test_placement_partition.py SLOTD_FP')
