#!/usr/bin/env python3
"""room_bench.py — the waiting room measured on a running slotd
(docs/protocol.md, "Admission"). Numbers are printed, never asserted.

    room_bench.py --port P [--crowd N] [--admit-per-s R] [--seconds S] [--pipeline K] [--data DIR --pid PID]

1. joins/s: N users join one room (queue, opens_at in the future), K requests
   in flight per connection, 4 connections; durable (each reply after its commit).
2. bytes per entry: the data folder's growth (with --data) and slotd's RSS
   growth (with --pid) over those N joins.
3. order: a queue room and a lottery room of N entries with capacity 1 (the stop
   rule then admits exactly one entry, so a waiting entry's position is its
   admission rank): queue — every position equals the join rank (verified);
   lottery — every rank 0..N-1 appears once, and a chi-square test of join
   decile against admission decile (10 x 10, 81 degrees of freedom) is printed
   with its p-value (uniform order: p is not small).
4. rate: a room with admit_per_s R and R x (S + 4) entries, all joined before
   the sale opens (set_sale_window then opens it); the admitted count is read
   1 s after opens_at and S s later: the rate over S seconds, and its error
   against R.
5. no hold without a grant: a hold without one is admission_required.
"""
import argparse
import json
import math
import os
import socket
import sys
import threading
import time
import uuid

P = uuid.uuid4().hex[:6]


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(('127.0.0.1', port), timeout=60)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b''

    def line(self):
        while b'\n' not in self.buf:
            d = self.s.recv(1 << 20)
            if not d:
                raise ConnectionError('closed')
            self.buf += d
        ln, self.buf = self.buf.split(b'\n', 1)
        return json.loads(ln)

    def ask(self, **req):
        self.s.sendall(json.dumps(req).encode() + b'\n')
        return self.line()

    def pipeline(self, reqs, depth):
        out, sent = [], 0
        while sent < min(depth, len(reqs)):
            self.s.sendall(json.dumps(reqs[sent]).encode() + b'\n')
            sent += 1
        while len(out) < len(reqs):
            out.append(self.line())
            if sent < len(reqs):
                self.s.sendall(json.dumps(reqs[sent]).encode() + b'\n')
                sent += 1
        return out


def now_ms():
    return int(time.time() * 1000)


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return total


def rss(pid):
    with open('/proc/%d/status' % pid) as f:
        for ln in f:
            if ln.startswith('VmRSS:'):
                return int(ln.split()[1]) * 1024
    return 0


def joins(port, ev, n, depth, conns=4):
    per = [[] for _ in range(conns)]
    for i in range(n):
        per[i % conns].append({'op': 'join', 'event': ev, 'user': 'u%07d' % i, 'request': 'j'})
    res = [None] * conns

    def run(k):
        c = Conn(port)
        res[k] = c.pipeline(per[k], depth)

    t0 = time.time()
    th = [threading.Thread(target=run, args=(k,)) for k in range(conns)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    dt = time.time() - t0
    answers = []
    for i in range(n):
        answers.append(res[i % conns][i // conns])
    bad = [a for a in answers if not a.get('ok')]
    return dt, answers, bad


def order(port, mode, n, depth):
    c = Conn(port)
    ev = '%s-%s' % (P, mode)
    c.ask(op='create_event', event=ev, capacity=1, admission=mode, admit_per_s=1000, opens_at=now_ms() + 2000)
    _, answers, bad = joins(port, ev, n, depth)
    tickets = [a['ticket'] for a in answers]
    deadline = time.time() + 30
    while c.ask(op='event', event=ev)['room']['admitted'] < 1 and time.time() < deadline:
        time.sleep(0.05)
    st = c.pipeline([{'op': 'admission', 'event': ev, 'ticket': t} for t in tickets], depth)
    # the join rank is the ticket's join seq - 1 (the ticket is hex(seq) + hex(tag)); joins of
    # several connections interleave, so it is not the user's index
    by_join = sorted(zip((int(t[:16], 16) - 1 for t in tickets), st))
    ranks = [0 if s['status'] == 'admitted' else s['position'] for _, s in by_join]
    perm_ok = sorted(ranks) == list(range(n)) and [j for j, _ in by_join] == list(range(n))
    h = c.ask(op='hold', event=ev, user='u0000000', request='h', qty=1)
    nogrant = h.get('error') == 'admission_required'
    if mode == 'queue':
        print('order queue: entries %d, admissions follow join order exactly: %s; hold without grant refused: %s'
              % (n, ranks == list(range(n)), nogrant))
        return
    bins = 10
    table = [[0] * bins for _ in range(bins)]
    for j, r in enumerate(ranks):
        table[j * bins // n][r * bins // n] += 1
    exp = n / (bins * bins)
    chi2 = sum((x - exp) ** 2 / exp for row in table for x in row)
    df = (bins - 1) ** 2
    z = ((chi2 / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))  # Wilson-Hilferty
    p = 0.5 * math.erfc(z / math.sqrt(2))
    print('order lottery: entries %d, every rank once: %s, chi2 %.1f df %d p %.3f (%s at 0.001); '
          'hold without grant refused: %s' % (n, perm_ok, chi2, df, p, 'not rejected' if p > 0.001 else 'REJECTED',
                                              nogrant))


def rate(port, r, seconds, depth):
    c = Conn(port)
    ev = '%s-rate%d' % (P, r)
    n = int(r * (seconds + 4))
    c.ask(op='create_event', event=ev, capacity=10 * n, admission='queue', admit_per_s=r, opens_at=now_ms() + 3600000)
    joins(port, ev, n, depth)  # all join before the sale opens, then it opens in 300 ms
    opens = now_ms() + 300
    c.ask(op='set_sale_window', event=ev, opens_at=opens, closes_at=0)
    while now_ms() < opens + 1000:
        time.sleep(0.005)
    a1, t1 = c.ask(op='event', event=ev)['room']['admitted'], time.time()
    time.sleep(seconds)
    a2, t2 = c.ask(op='event', event=ev)['room']['admitted'], time.time()
    got = (a2 - a1) / (t2 - t1)
    print('rate: admit_per_s %d over %.1f s: %.1f admissions/s (error %+.2f%%), %d entries, %d admitted'
          % (r, t2 - t1, got, 100.0 * (got - r) / r, n, a2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--port', type=int, required=True)
    ap.add_argument('--crowd', type=int, default=100000)
    ap.add_argument('--admit-per-s', type=int, default=1000)
    ap.add_argument('--seconds', type=float, default=20)
    ap.add_argument('--pipeline', type=int, default=16)
    ap.add_argument('--order-n', type=int, default=5000)
    ap.add_argument('--data', default=None)
    ap.add_argument('--pid', type=int, default=None)
    a = ap.parse_args()
    c = Conn(a.port)
    ev = '%s-crowd' % P
    c.ask(op='create_event', event=ev, capacity=1000, admission='queue', opens_at=now_ms() + 3600000)
    d0 = du(a.data) if a.data else 0
    m0 = rss(a.pid) if a.pid else 0
    dt, answers, bad = joins(a.port, ev, a.crowd, a.pipeline)
    d1 = du(a.data) if a.data else 0
    m1 = rss(a.pid) if a.pid else 0
    print('joins: %d in %.2f s = %.0f joins/s (pipeline %d x 4 connections, durable), %d errors'
          % (a.crowd, dt, a.crowd / dt, a.pipeline, len(bad)))
    if a.data:
        print('disk: %.1f bytes per entry (data folder %d -> %d)' % ((d1 - d0) / a.crowd, d0, d1))
    if a.pid:
        print('memory: %.1f bytes per entry (slotd RSS %d -> %d)' % ((m1 - m0) / a.crowd, m0, m1))
    order(a.port, 'queue', a.order_n, a.pipeline)
    order(a.port, 'lottery', a.order_n, a.pipeline)
    rate(a.port, a.admit_per_s, a.seconds, a.pipeline)
    return 0


if __name__ == '__main__':
    sys.exit(main())
