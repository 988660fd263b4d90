#!/usr/bin/env python3
"""waiting_room.py — a frontend fragment over slotd's HTTP API
(docs/protocol.md, "Admission", "HTTP"): puts a buyer in an event's waiting
room, shows the position while waiting, and holds with the grant once
admitted. The buyer's session id is the client key (docs/protocol.md,
"Client limits"); slotd would otherwise use this frontend's address for every
buyer.

    waiting_room.py --http 127.0.0.1:8080 --event tour --user ann [--qty 2] [--session S]

Exit status 0 when a hold was made, 1 when the room sold out, the grant
expired or slotd refused, 2 on a usage error.
"""
import argparse
import http.client
import json
import sys
import time
import uuid


def post(addr, op, body):
    host, port = addr.rsplit(':', 1)
    c = http.client.HTTPConnection(host, int(port), timeout=10)
    c.request('POST', '/v1/' + op, body=json.dumps(body).encode(), headers={'Content-Type': 'application/json'})
    r = c.getresponse()
    out = r.status, json.loads(r.read() or b'{}'), r.getheader('Retry-After')
    c.close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--http', required=True, help='slotd --http address, HOST:PORT')
    ap.add_argument('--event', required=True)
    ap.add_argument('--user', required=True)
    ap.add_argument('--qty', type=int, default=1)
    ap.add_argument('--session', default=None, help='the client key (default: a fresh one)')
    ap.add_argument('--max-wait-s', type=float, default=3600)
    a = ap.parse_args()
    session = a.session or uuid.uuid4().hex
    # 1. join: one place per user; joining again (a reload) answers the same entry
    st, r, _ = post(a.http, 'join', {'event': a.event, 'user': a.user, 'request': 'join-' + session})
    if st != 200:
        print('join refused:', r.get('error'), r.get('message'))
        return 1
    ticket = r.get('ticket')
    deadline = time.time() + a.max_wait_s
    # 2. wait, showing the position (null before a lottery's draw)
    while r.get('status') == 'waiting' and time.time() < deadline:
        if r.get('position') is None:
            print('in the lottery; the draw is at', r.get('draw_at'))
        else:
            print('position', r['position'])
        time.sleep(1)
        st, r, _ = post(a.http, 'admission', {'event': a.event, 'ticket': ticket})
    if r.get('status') != 'admitted':
        print('not admitted:', r.get('status') or r.get('error'))
        return 1
    # 3. hold with the grant (it serves several holds until expires_at)
    st, h, retry = post(a.http, 'hold', {'event': a.event, 'user': a.user, 'request': 'hold-' + session,
                                         'qty': a.qty, 'grant': r['grant'], 'client': session})
    if st == 429:
        print('too many holds from this session; retry in', retry, 's')
        return 1
    if st != 200 or h.get('status') != 'held':
        print('no hold:', h.get('status') or h.get('error'))
        return 1
    print('held', h['hold'], 'until', h['expires_at'], '- go to payment')
    return 0


if __name__ == '__main__':
    sys.exit(main())
