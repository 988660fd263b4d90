#!/usr/bin/env python3
"""test_placement.py SLOTD ... — two replica sets of one placement (--placement)
sharing one etcd (docs/design.md, "Many replica sets"; docs/protocol.md,
"Placement"). Each set is one node (--min-replicas 0), its own primary.

Checks: each primary publishes its addresses (the placement op names both);
create_event places the event on its set (the map entry exists when the
create is answered); the same name created on the other set is wrong_set
with the owner's set, gen and primary, and that set has no such event; a
child created on another set than its parent is wrong_set; a child of a
parent the map does not hold is unknown_event; a refused create leaves no
map entry; placement with "event" answers that event alone, and an event the
map does not hold is unknown_event; a create and a hold pipelined on one
connection keep their order; over HTTP wrong_set is 307 with Location on
the owning set's HTTP address (the reply's "http"); slotctl placement
prints the map and the sets (--event, --json, an unknown event exits 1).
Routing (slot_route, through tests/route_probe.c, seeded with s1 only):
holds on events of both sets each land on the owner's primary, once (the
event's held count; get_hold on the owner); the other set does not have
them (wrong_set, or unknown_event where the set has no fence yet); an event
created on s2 after the map was read is found by a re-read; every request
sent again is a replay of the same hold. slot-bench multi-event --placement
seeded with s1: its 4 events are created on both sets (round-robin), each
sold out on its owner and absent from the other, and the run's
verification (every hold by get_hold) passes.
Usage: test_placement.py SLOTD [ROUTE_PROBE [SLOTCTL [SLOT_BENCH]]].
Needs etcd (Debian's etcd-server; else exit 77). Every process it starts is
stopped by its PID; the folders are temporary.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import slotd_kit as kit
from slotd_kit import check, call

ETCD = shutil.which('etcd') or '/usr/bin/etcd'


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
    proc = subprocess.Popen([ETCD, '--name', 't', '--data-dir', os.path.join(base, 'etcd-data'),
                             '--listen-client-urls', client, '--advertise-client-urls', client,
                             '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
                             '--initial-cluster', 't=' + peer],
                            stdout=log, stderr=log)
    kit.STARTED.append(proc)
    for _ in range(200):
        try:
            socket.create_connection((kit.LOOPBACK, cport), timeout=1).close()
            return proc, client
        except OSError:
            time.sleep(0.05)
    sys.exit('etcd did not start')


def one(port, req):
    return call(port, [req])[0]


def wait_primary(port):
    deadline = time.time() + 30
    while time.time() < deadline:
        r = one(port, {'op': 'cluster'})
        if r.get('role') == 'primary':
            return True
        time.sleep(0.1)
    return False


def http_post(port, op, body):
    c = http.client.HTTPConnection(kit.LOOPBACK, port, timeout=30)
    c.request('POST', '/v1/' + op, body=json.dumps(body), headers={'Content-Type': 'application/json'})
    resp = c.getresponse()
    data = resp.read()
    loc = resp.getheader('Location')
    c.close()
    return resp.status, loc, json.loads(data)


def check_http_wrong_set(sets):
    """A create on the set that does not own the name: 307 to the owner's HTTP address."""
    status, loc, r = http_post(sets['s2'].http_port, 'create_event', {'event': 'a', 'capacity': 5})
    check(status == 307 and r.get('error') == 'wrong_set' and r.get('http') == '127.0.0.1:%d' % sets['s1'].http_port,
          'HTTP create of a on s2: 307, the reply names s1\'s HTTP address', (status, r))
    check(loc == 'http://127.0.0.1:%d/v1/create_event' % sets['s1'].http_port,
          'and Location is the owner\'s HTTP address, not s2\'s own', loc)
    status, loc, r = http_post(int(loc.rsplit(':', 1)[1].split('/')[0]), 'create_event', {'event': 'a', 'capacity': 100})
    check(status == 200 and r.get('ok'), 'the same create at the Location is answered (a replay)', (status, r))


def check_routing(sets, probe):
    """A client seeded with s1 only holds on events of both sets through slot_route."""
    addr = {name: '127.0.0.1:%d' % srv.port for name, srv in sets.items()}
    owner = {}
    for i in range(3):
        for name in ('s1', 's2'):
            ev = 'route-%s-%d' % (name, i)
            r = one(sets[name].port, {'op': 'create_event', 'event': ev, 'capacity': 50})
            check(r.get('ok'), 'create %s on %s' % (ev, name), r)
            owner[ev] = name
    proc = subprocess.Popen([probe, addr['s1']], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    kit.STARTED.append(proc)

    def ask(line):
        proc.stdin.write(line + '\n')
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    def hold_line(ev):
        return json.dumps({'op': 'hold', 'event': ev, 'user': 'u-' + ev, 'qty': 2, 'request': 'k-' + ev})

    holds = {}
    for ev in sorted(owner):
        a = ask(hold_line(ev))
        rep = a.get('reply') or {}
        check(a.get('rc') == 0 and rep.get('ok') and rep.get('status') == 'held' and a.get('node') == addr[owner[ev]],
              'route: hold of %s answered by its owner %s' % (ev, owner[ev]), a)
        holds[ev] = rep.get('hold')
    # an event created after the route read the map: found by a re-read, or by the
    # wrong_set the set it asked answers from its own copy of the map
    r = one(sets['s2'].port, {'op': 'create_event', 'event': 'route-late', 'capacity': 5})
    check(r.get('ok'), 'create route-late on s2 after the map was read', r)
    owner['route-late'] = 's2'
    a = ask(hold_line('route-late'))
    check(a.get('rc') == 0 and (a.get('reply') or {}).get('ok') and a.get('node') == addr['s2'],
          'route: the late event is held on s2', a)
    holds['route-late'] = a['reply'].get('hold')
    # every request again: a replay of the same hold, never a second one
    for ev in sorted(owner):
        a = ask(hold_line(ev))
        rep = a.get('reply') or {}
        check(a.get('rc') == 0 and rep.get('replay') is True and rep.get('hold') == holds[ev] and
              a.get('node') == addr[owner[ev]], 'route: %s sent again is a replay on its owner' % ev, a)
    st = ask('stats')
    check(st.get('map_reads', 0) >= 1 and (st.get('map_reads', 0) >= 2 or st.get('wrong_set', 0) >= 1) and
          st.get('map_failures') == 0, 'route: the map was read (and re-read, or a wrong_set named the owner)', st)
    proc.stdin.close()
    check(proc.wait(timeout=30) == 0, 'route_probe exits 0')
    # each hold exactly once, on its owner; the other set has none of it
    for ev, name in sorted(owner.items()):
        other = 's2' if name == 's1' else 's1'
        r = one(sets[name].port, {'op': 'get_hold', 'event': ev, 'hold': holds[ev]})
        check(r.get('ok') and r.get('qty') == 2 and r.get('status') == 'held', 'get_hold of %s on %s' % (ev, name), r)
        v = one(sets[name].port, {'op': 'event', 'event': ev})
        check(v.get('held') == 2, '%s holds 2 units on %s: one hold' % (ev, name), v)
        r = one(sets[other].port, {'op': 'get_hold', 'event': ev, 'hold': holds[ev]})
        check(not r.get('ok') and r.get('error') in ('wrong_set', 'unknown_event'),
              '%s is not on %s' % (ev, other), r)


def check_slotctl(sets, slotctl):
    """slotctl placement prints the map and the sets; --event, --json; an unknown event exits 1."""
    host = ['--host', '127.0.0.1:%d' % sets['s2'].port]
    p = subprocess.run([slotctl] + host + ['placement'], capture_output=True, text=True, timeout=60)
    if os.environ.get('SLOT_TEST_VERBOSE'):
        print(p.stdout)
    lines = p.stdout.splitlines()
    row = [l.split() for l in lines if l.split()[:1] == ['a']]
    check(p.returncode == 0 and row == [['a', 's1', '1', 'serving']], 'slotctl placement: a on s1, gen 1', p.stdout)
    sets_rows = {l.split()[0]: l.split()[1:] for l in lines[lines.index(next(x for x in lines if x.startswith('sets:'))):]
                 if l.startswith('  ') and not l.split()[0] == 'set'}
    check(sets_rows.get('s1') == ['127.0.0.1:%d' % sets['s1'].port, '127.0.0.1:%d' % sets['s1'].http_port] and
          sets_rows.get('s2', [''])[0] == '127.0.0.1:%d' % sets['s2'].port, 'and both sets\' addresses', p.stdout)
    p = subprocess.run([slotctl] + host + ['--json', 'placement', '--event', 'b'], capture_output=True, text=True,
                       timeout=60)
    m = json.loads(p.stdout) if p.returncode == 0 else {}
    check(m.get('events') == {'b': {'set': 's2', 'gen': 1, 'state': 'serving'}}, 'slotctl --json placement --event b',
          p.stdout + p.stderr)
    p = subprocess.run([slotctl] + host + ['placement', '--event', 'nosuch'], capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 1 and 'unknown_event' in p.stderr, 'slotctl placement --event nosuch exits 1', p.stderr)
    p = subprocess.run([slotctl, 'placement', 'extra'], capture_output=True, text=True, timeout=60)
    check(p.returncode == 64, 'slotctl placement with an argument is a usage error', p.stderr)


def check_bench(sets, bench):
    """slot-bench multi-event --placement seeded with s1: events over both sets, each verified on its owner."""
    p = subprocess.run([bench, 'multi-event', '--placement', '--host', '127.0.0.1:%d' % sets['s1'].port,
                        '--event', 'pb', '--events', '4', '--capacity', '150', '--connections', '8', '--tail', '20',
                        '--zipf', '0', '--duration', '60'], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0 and 'verification: passed' in p.stdout, 'slot-bench --placement over two sets verifies',
          p.stdout[-1500:] + p.stderr[-1500:])
    m = one(sets['s2'].port, {'op': 'placement'})
    placed = {e: v['set'] for e, v in m.get('events', {}).items() if e.startswith('pb-')}
    check(placed == {'pb-0': 's1', 'pb-1': 's2', 'pb-2': 's1', 'pb-3': 's2'}, 'its events are spread over both sets',
          placed)
    for ev, name in sorted(placed.items()):
        v = one(sets[name].port, {'op': 'event', 'event': ev})
        check(v.get('held') == 150 and v.get('available') == 0, '%s sold out on its owner %s' % (ev, name), v)
        other = 's2' if name == 's1' else 's1'
        v = one(sets[other].port, {'op': 'event', 'event': ev})
        check(not v.get('ok'), '%s is not on %s' % (ev, other), v)


def main():
    slotd = sys.argv[1]
    probe = sys.argv[2] if len(sys.argv) > 2 else None
    slotctl = sys.argv[3] if len(sys.argv) > 3 else None
    bench = sys.argv[4] if len(sys.argv) > 4 else None
    if not os.access(ETCD, os.X_OK):
        print('etcd not found (install etcd-server)')
        sys.exit(77)
    base = tempfile.mkdtemp(prefix='slotd-place-')
    try:
        _, etcd_url = start_etcd(base)
        secret = os.path.join(base, 'secret')
        with open(secret, 'w') as f:
            f.write('placement-test-secret-0123456789\n')
        os.chmod(secret, 0o600)
        sets = {}
        for name in ('s1', 's2'):
            sets[name] = kit.Server(slotd, os.path.join(base, name), http=True, extra=[
                '--cluster', name, '--node', 'n1', '--etcd', etcd_url, '--cluster-secret-file', secret,
                '--placement', 'p', '--min-replicas', '0', '--heartbeat-ms', '50',
                '--failover-timeout-ms', '600', '--durability', 'nosync'],
                stderr_path=os.path.join(base, name + '.log'))
        p1, p2 = sets['s1'].port, sets['s2'].port
        check(wait_primary(p1) and wait_primary(p2), 'both single-node sets become primary')

        # each primary publishes its addresses
        deadline = time.time() + 10
        while time.time() < deadline:
            m = one(p1, {'op': 'placement'})
            if len(m.get('sets', {})) == 2:
                break
            time.sleep(0.1)
        check(m.get('ok') and m.get('sets', {}).get('s1', {}).get('primary') == '127.0.0.1:%d' % p1 and
              m['sets'].get('s2', {}).get('primary') == '127.0.0.1:%d' % p2,
              'placement names both sets\' primaries', m)
        check(m['sets']['s2'].get('http') == '127.0.0.1:%d' % sets['s2'].http_port,
              'and their HTTP addresses', m)

        h = one(p1, {'op': 'hello'})
        check(h.get('features', [])[-1:] == ['placement'] and 'cluster' in h.get('features', []),
              'hello lists placement (after cluster and http)', h)

        # create_event places the event on its set
        r = one(p1, {'op': 'create_event', 'event': 'a', 'capacity': 100})
        check(r.get('ok'), 'create_event on s1', r)
        m = one(p2, {'op': 'placement', 'event': 'a'})
        check(m.get('ok') and m.get('events') == {'a': {'set': 's1', 'gen': 1, 'state': 'serving'}},
              'the map holds a on s1 (asked of s2)', m)
        r = one(p1, {'op': 'create_event', 'event': 'a', 'capacity': 100})
        check(r.get('ok') or r.get('error') != 'wrong_set', 'the same create again on s1 is not wrong_set', r)

        # the name placed elsewhere
        r = one(p2, {'op': 'create_event', 'event': 'a', 'capacity': 5})
        check(r.get('error') == 'wrong_set' and r.get('set') == 's1' and r.get('gen') == 1 and
              r.get('event') == 'a' and r.get('primary') == '127.0.0.1:%d' % p1,
              'create of a on s2: wrong_set naming s1, gen 1 and its primary', r)
        r = one(p2, {'op': 'place_state', 'event': 'a'})
        check(r.get('exists') is False, 's2 made no event a', r)
        # s2 redirects from its copy of the map, which its etcd watch keeps (the placement op
        # above reads etcd itself): wait, bounded, for the watch to bring a, as a client retries
        deadline = time.time() + 5
        r = one(p2, {'op': 'event', 'event': 'a'})
        while r.get('error') == 'unknown_event' and time.time() < deadline:
            time.sleep(0.05)
            r = one(p2, {'op': 'event', 'event': 'a'})
        check(r.get('error') == 'wrong_set' and r.get('set') == 's1',
              'and answers it wrong_set naming s1 (unknown_event only for a name the map lacks)', r)

        # families are placed together
        r = one(p2, {'op': 'create_event', 'event': 'a.vip', 'capacity': 10, 'parent': 'a'})
        check(r.get('error') == 'wrong_set' and r.get('set') == 's1', 'a child on another set than its parent', r)
        r = one(p1, {'op': 'create_event', 'event': 'a.vip', 'capacity': 10, 'parent': 'a'})
        check(r.get('ok'), 'the child on its parent\'s set', r)
        r = one(p2, {'op': 'create_event', 'event': 'orphan', 'capacity': 10, 'parent': 'nosuch'})
        check(r.get('error') == 'unknown_event', 'a parent the map does not hold: unknown_event', r)
        m = one(p1, {'op': 'placement', 'event': 'orphan'})
        check(m.get('error') == 'unknown_event', 'and no entry for the child', m)

        # a refused create leaves no map entry
        r = one(p2, {'op': 'create_event', 'event': 'bad', 'capacity': 10, 'shards': 100000})
        check(not r.get('ok') and r.get('error') not in ('wrong_set', 'unavailable'), 'a create the server refuses', r)
        ok = False
        for _ in range(50):
            m = one(p1, {'op': 'placement', 'event': 'bad'})
            if m.get('error') == 'unknown_event':
                ok = True
                break
            time.sleep(0.1)
        check(ok, 'the refused create left no map entry', m)

        # order on one connection: a create, then a hold on it, pipelined
        out = call(p2, [{'op': 'create_event', 'event': 'b', 'capacity': 3},
                        {'op': 'hold', 'event': 'b', 'user': 'u1', 'qty': 1, 'request': 'r1'},
                        {'op': 'event', 'event': 'b'}])
        check(len(out) == 3 and out[0].get('ok') and out[1].get('ok') and out[2].get('held') == 1,
              'pipelined create, hold, event answered in order', out)
        m = one(p1, {'op': 'placement'})
        check(m.get('ok') and set(m.get('events', {})) == {'a', 'a.vip', 'b'} and m['events']['b']['set'] == 's2',
              'the whole map: a, a.vip on s1 and b on s2', m)
        if os.environ.get('SLOT_TEST_VERBOSE'):
            print(json.dumps(m))

        # placement on any role, and of an event the map does not hold
        m = one(p2, {'op': 'placement', 'event': 'nosuch'})
        check(m.get('error') == 'unknown_event', 'placement of an event the map does not hold', m)

        check_http_wrong_set(sets)
        if slotctl:
            check_slotctl(sets, slotctl)
        if probe:
            check_routing(sets, probe)
        if bench:
            check_bench(sets, bench)

        for name, srv in sets.items():
            check(srv.stop() == 0, 'set %s stops cleanly' % name, srv.stderr_text()[-2000:])
    finally:
        kit.stop_all()
        shutil.rmtree(base, ignore_errors=True)
    kit.finish()


if __name__ == '__main__':
    main()
