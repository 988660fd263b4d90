#!/usr/bin/env python3
"""bench_holds.py — holds/s through slotd.AsyncClient at K connections, against slot-bench in
the same run on the same slotd.

usage: bench_holds.py --slotd BUILD/slotd --slot-bench BUILD/bench/slot-bench
                      [--connections 256] [--pipeline 1] [--capacity 100000] [--durability sync]

Starts one slotd (clients/fixtures/servers.py: ephemeral loopback port, temporary folder,
no token), then on it, one after the other, each on a new event of --capacity units (16
shards, qty 1, a new user per hold):
  1. slot-bench hot-release --connections K --pipeline D (its own numbers, from --json);
  2. the Python client: one asyncio process, K AsyncClient objects (K connections), each with
     D buyers holding one unit at a time until sold out; holds/s = held / the time from the
     first send to the sell-out.
Then checks the Python run (held = capacity, event view, check clean) and prints both
numbers. Speeds are reported, never asserted.
"""
import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import slotd  # noqa: E402

SERVERS = os.path.join(HERE, '..', 'fixtures', 'servers.py')


async def python_run(host, event, capacity, conns, depth):
    admin = slotd.AsyncClient([host])
    await admin.create_event(event, capacity, shards=16, max_per_request=1, hold_ttl_ms=3600000)
    clients = [slotd.AsyncClient([host], max_in_flight=depth) for _ in range(conns)]
    for c in clients:  # connect before the clock starts (as slot-bench does)
        await c.event(event)
    held = [0]
    sold_out = asyncio.Event()
    seq = [0]

    async def buyer(c):
        while not sold_out.is_set():
            seq[0] += 1
            r = await c.hold(event, 'py-%d' % seq[0], 1)
            if r['status'] == 'held':
                held[0] += 1
            else:
                sold_out.set()

    t0 = time.monotonic()
    await asyncio.gather(*(buyer(c) for c in clients for _ in range(depth)))
    elapsed = time.monotonic() - t0
    view = await admin.event(event)
    chk = await admin.check(event)
    for c in clients:
        await c.close()
    await admin.close()
    return held[0], elapsed, view, chk


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    ap.add_argument('--slotd', required=True)
    ap.add_argument('--slot-bench', required=True)
    ap.add_argument('--connections', type=int, default=256)
    ap.add_argument('--pipeline', type=int, default=1, help='requests in flight per connection (both)')
    ap.add_argument('--capacity', type=int, default=100000)
    ap.add_argument('--durability', default='sync', choices=['sync', 'nosync'])
    o = ap.parse_args()
    srv = subprocess.Popen([sys.executable, SERVERS, '--slotd', o.slotd, '--no-token', '--durability', o.durability],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        view = json.loads(srv.stdout.readline())
        host = view['primary']
        port = host.rsplit(':', 1)[1]
        with tempfile.TemporaryDirectory() as tmp:
            jpath = os.path.join(tmp, 'bench.json')
            b = subprocess.run([o.slot_bench, 'hot-release', '--port', port, '--capacity', str(o.capacity),
                                '--connections', str(o.connections), '--pipeline', str(o.pipeline), '--tail', '0',
                                '--json', jpath], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if b.returncode != 0:
                print(b.stdout)
                sys.exit('slot-bench failed (exit %d)' % b.returncode)
            with open(jpath) as f:
                br = json.load(f)['results']
        event = 'py-%d' % os.getpid()
        held, elapsed, ev, chk = asyncio.run(python_run(host, event, o.capacity, o.connections, o.pipeline))
        ok = held == o.capacity and ev['held'] == o.capacity and ev['available'] == 0 and chk['violations'] == []
        print('slotd %s (durability %s), capacity %d, qty 1, %d connections x pipeline %d' % (
            host, o.durability, o.capacity, o.connections, o.pipeline))
        print('  slot-bench hot-release   %8.0f holds/s  (%d holds, sold out in %.3f s, p99 %.2f ms)' % (
            br['holds_per_s'], br['holds'], br['sellout_s'], br['latency_ms']['p99']))
        print('  python AsyncClient       %8.0f holds/s  (%d holds in %.3f s, one process, asyncio)' % (
            held / elapsed, held, elapsed))
        print('  python run verified: %s (held %d = capacity, event view held %d available %d, %d violations)' % (
            'passed' if ok else 'FAILED', held, ev['held'], ev['available'], len(chk['violations'])))
        sys.exit(0 if ok else 1)
    finally:
        try:
            srv.stdin.write('stop\n')
            srv.stdin.close()
        except OSError:
            pass
        srv.wait(60)


if __name__ == '__main__':
    main()
