#!/usr/bin/env python3
"""seat_map_cost.py — the cost of seat_map on a large seated event
(docs/protocol.md, "Seated events"; docs/performance.md, "Seated events").

    seat_map_cost.py PORT SEATS [CALLS] [HELD_PCT]

Creates a seated event of SEATS seats (100 seats a row, 50 rows a section,
named seatmap-<SEATS>-<time>) on slotd at 127.0.0.1:PORT — its create_event
line is about 20 bytes a row, so slotd needs a --max-line above that (e.g.
--max-line 1000000 for 100,000 seats) — holds HELD_PCT percent of its seats
first (default 50, holds of 10 adjacent seats, 64 in flight), then calls
seat_map CALLS times (default 20) on one connection, one at a time, and
prints each call's time (request sent to the whole reply read) and the
reply's bytes, then the median, mean and max. Exit status: 0 every call
answered ok; 1 otherwise; 64 usage error.
"""
import json
import socket
import statistics
import sys
import time

ROW_SEATS = 100
SECTION_ROWS = 50


def seat_map_def(seats):
    rows_total = (seats + ROW_SEATS - 1) // ROW_SEATS
    sections, left = [], seats
    for s in range((rows_total + SECTION_ROWS - 1) // SECTION_ROWS):
        rows = []
        for r in range(SECTION_ROWS):
            if left == 0:
                break
            n = min(ROW_SEATS, left)
            rows.append({'name': str(r + 1), 'from': 1, 'to': n})
            left -= n
        sections.append({'name': 'S%d' % (s + 1), 'rows': rows})
    return {'sections': sections}


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(('127.0.0.1', port), timeout=120)
        self.buf = b''

    def send(self, obj):
        self.s.sendall((json.dumps(obj, separators=(',', ':')) + '\n').encode())

    def line(self):
        while b'\n' not in self.buf:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise RuntimeError('connection closed')
            self.buf += chunk
        line, self.buf = self.buf.split(b'\n', 1)
        return line

    def call(self, obj):
        self.send(obj)
        return json.loads(self.line())


def main():
    if len(sys.argv) not in (3, 4, 5):
        print(__doc__, file=sys.stderr)
        sys.exit(64)
    port, seats = int(sys.argv[1]), int(sys.argv[2])
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    held_pct = int(sys.argv[4]) if len(sys.argv) > 4 else 50
    if not (1 <= seats <= 1000000 and 1 <= calls <= 1000 and 0 <= held_pct <= 100):
        print('seat_map_cost.py: SEATS 1..1000000, CALLS 1..1000, HELD_PCT 0..100', file=sys.stderr)
        sys.exit(64)
    c = Conn(port)
    event = 'seatmap-%d-%d' % (seats, int(time.time()))
    r = c.call({'op': 'create_event', 'event': event, 'hold_ttl_ms': 86400000, 'max_per_request': 10,
                'seats': seat_map_def(seats)})
    if not r.get('ok'):
        print('create_event: %s' % r, file=sys.stderr)
        sys.exit(1)
    holds, window = seats * held_pct // 100 // 10, 64
    sent = got = 0
    while got < holds:
        while sent < holds and sent - got < window:
            c.send({'op': 'hold', 'event': event, 'user': 'u%d' % sent, 'request': 'r%d' % sent, 'qty': 10,
                    'adjacent': True})
            sent += 1
        a = json.loads(c.line())
        got += 1
        if a.get('status') != 'held':
            print('hold: %s' % a, file=sys.stderr)
            sys.exit(1)
    times, size = [], 0
    for i in range(calls):
        t0 = time.monotonic()
        c.send({'op': 'seat_map', 'event': event})
        line = c.line()
        times.append((time.monotonic() - t0) * 1e3)
        size = len(line) + 1
        if not json.loads(line).get('ok'):
            print('seat_map: %s' % line[:200], file=sys.stderr)
            sys.exit(1)
        print('call %2d  %8.2f ms  %d bytes' % (i + 1, times[-1], size))
    print('seat_map of %d seats (%d%% held, %d rows): %d bytes; median %.2f ms, mean %.2f ms, max %.2f ms over %d calls'
          % (seats, held_pct, (seats + ROW_SEATS - 1) // ROW_SEATS, size, statistics.median(times),
             statistics.mean(times), max(times), calls))


if __name__ == '__main__':
    main()
