#!/usr/bin/env python3
"""cold_touch.py — touch closed events of a bench/gen_store store while a sale
runs (issue 25, "A cold event stalls everyone"; docs/design.md, "Cold events
load in slices").

    cold_touch.py PORT FIRST N [DELAY_S]

After DELAY_S seconds (default 2), opens N connections to 127.0.0.1:PORT and
sends on each, at once, one hold with a new key to event ev-<FIRST+i>
(gen_store's names), then prints each answer's error and its time in ms.
Exit status: 0 every touch answered; 1 otherwise; 64 usage error.
"""
import json
import socket
import sys
import time


def main():
    if len(sys.argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        sys.exit(64)
    port, first, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    delay = float(sys.argv[4]) if len(sys.argv) == 5 else 2.0
    if not (1 <= n <= 1000 and 0 <= first and 0 <= delay <= 3600):
        print('cold_touch.py: N 1..1000, FIRST >= 0, DELAY_S 0..3600', file=sys.stderr)
        sys.exit(64)
    time.sleep(delay)
    conns = [socket.create_connection(('127.0.0.1', port), timeout=60) for _ in range(n)]
    t0 = time.monotonic()
    for i, c in enumerate(conns):
        req = {"op": "hold", "event": "ev-%05d" % (first + i), "user": "toucher", "request": "t%d" % i, "qty": 1}
        c.sendall((json.dumps(req) + '\n').encode())
    ok = 0
    for i, c in enumerate(conns):
        buf = b''
        while b'\n' not in buf:
            chunk = c.recv(4096)
            if not chunk:
                break
            buf += chunk
        ms = (time.monotonic() - t0) * 1000
        if b'\n' in buf:
            r = json.loads(buf.split(b'\n', 1)[0])
            ok += 1
            print('touch ev-%05d: %s after %.1f ms' % (first + i, r.get('error', r.get('status')), ms))
        c.close()
    print('cold_touch: %d of %d answered' % (ok, n))
    sys.exit(0 if ok == n else 1)


if __name__ == '__main__':
    main()
