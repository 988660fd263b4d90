#!/usr/bin/env python3
"""test_client_limits.py — the client limits over TCP and HTTP
(docs/protocol.md, "Client limits"): max_active_per_client and client_rate on
a real slotd.

    test_client_limits.py SLOTD

1. max_active_per_client: a client key holds up to the limit across users;
   one more unit is rate_limited with limit "max_active_per_client" and a
   retry_after_ms no later than the first held hold's expiry; a replay is
   answered as before (replays never count); a release frees the place; a
   confirm frees it too (units held, not confirmed); a request without a
   client key is not limited.
2. client_rate (1 hold/s, burst 2): two holds pass, the third is rate_limited
   with limit "client_rate"; a replay and a request refused with another
   error (max_per_request) take no token; another key has its own bucket.
3. Decision order: user_limit (the event's and a block's) comes before
   rate_limited; a cart refused by a later item's error takes no token for
   its earlier items.
4. Bad input: a client of 129 bytes, an empty client, a number; a negative
   max_active_per_client, a client_rate over 1,000,000: invalid_argument,
   the digest unchanged.
5. HTTP: without "client" the peer address is the key: 429 with Retry-After.
6. A restart keeps max_active_per_client's count (from the stored holds).
The server listens on 127.0.0.1:0 in a temporary folder and is stopped by PID.
"""
import http.client
import json
import os
import sys
import tempfile

from slotd_kit import Conn, Server, check, finish, require, stop_all


def ok(c, **req):
    r = c.ask(req)
    require(r.get('ok') is True, '%s %s' % (req.get('op'), req.get('event', '')), r)
    return r


def err(c, code, what, **req):
    r = c.ask(req)
    check(r.get('ok') is False and r.get('error') == code, what, r)
    return r


def hold(c, ev, user, request, qty=1, **extra):
    return c.ask(dict(op='hold', event=ev, user=user, request=request, qty=qty, **extra))


def active(port):
    c = Conn(port)
    ok(c, op='create_event', event='act', capacity=100, max_active_per_client=3, hold_ttl_ms=60000)
    v = ok(c, op='event', event='act')
    check(v.get('max_active_per_client') == 3, 'the view shows max_active_per_client', v)
    a = hold(c, 'act', 'u1', 'k', 2, client='bot')
    b = hold(c, 'act', 'u2', 'k', 1, client='bot')
    check(a.get('status') == 'held' and b.get('status') == 'held', 'two users of one key hold up to 3', (a, b))
    r = hold(c, 'act', 'u3', 'k', 1, client='bot')
    check(r.get('error') == 'rate_limited' and r.get('limit') == 'max_active_per_client',
          'a 4th unit of the key is rate_limited (max_active_per_client)', r)
    now_left = a['expires_at'] - r.get('retry_after_ms', 0)
    check(0 < r.get('retry_after_ms', 0) <= 60000 and now_left > 0,
          'retry_after_ms is the time until the first held hold expires', r)
    again = hold(c, 'act', 'u1', 'k', 2, client='bot')
    check(again.get('status') == 'held' and again.get('replay') is True and again.get('hold') == a['hold'],
          'a replay is answered as before, not limited', again)
    other = hold(c, 'act', 'u3', 'k', 1, client='human')
    check(other.get('status') == 'held', 'another key is not limited by the first', other)
    none = hold(c, 'act', 'u4', 'k', 5)
    check(none.get('status') == 'held', 'a hold without a client key is not limited', none)
    ok(c, op='release', event='act', hold=b['hold'], user='u2')
    r = hold(c, 'act', 'u3', 'k2', 1, client='bot')
    check(r.get('status') == 'held', 'a release frees the key\'s place', r)
    ok(c, op='confirm', event='act', hold=a['hold'], user='u1')
    r = hold(c, 'act', 'u5', 'k', 2, client='bot')
    check(r.get('status') == 'held', 'a confirm frees it too (units held, not confirmed)', r)
    r = hold(c, 'act', 'u6', 'k', 1, client='bot')
    check(r.get('error') == 'rate_limited', 'the key is at its limit again (1 + 2 held)', r)
    r = c.ask({'op': 'check'})
    check(r.get('ok') and r.get('violations') == [], 'check clean', r)
    c.close()


def rate(port):
    c = Conn(port)
    ok(c, op='create_event', event='rate', capacity=100, client_rate=1, max_per_request=4)
    a = hold(c, 'rate', 'u1', 'k', client='s')
    b = hold(c, 'rate', 'u2', 'k', client='s')
    check(a.get('status') == 'held' and b.get('status') == 'held', 'a burst of twice the rate passes', (a, b))
    r = hold(c, 'rate', 'u1', 'k', client='s')
    check(r.get('replay') is True, 'a replay passes and takes no token', r)
    r = hold(c, 'rate', 'u3', 'k', 9, client='s')
    check(r.get('error') == 'invalid_argument', 'another error comes first', r)
    r = hold(c, 'rate', 'u3', 'k', client='s')
    check(r.get('error') == 'rate_limited' and r.get('limit') == 'client_rate' and
          1 <= r.get('retry_after_ms', 0) <= 1000, 'the third new hold is rate_limited (client_rate)', r)
    r = hold(c, 'rate', 'u3', 'k', client='t')
    check(r.get('status') == 'held', 'another key has its own bucket', r)
    # the decision order: user_limit before rate_limited
    ok(c, op='create_event', event='order', capacity=10, client_rate=1, max_per_user=1)
    for i in range(2):
        hold(c, 'order', 'w%d' % i, 'k', client='o')
    r = hold(c, 'order', 'w0', 'k2', client='o')
    check(r.get('error') == 'user_limit', 'user_limit comes before rate_limited', r)
    # a block's max_per_user is a user_limit too: before rate_limited
    ok(c, op='create_event', event='border', capacity=10, client_rate=1)
    ok(c, op='allocate', event='border', allocation='fans', qty=5, max_per_user=1)
    for i in range(2):
        hold(c, 'border', 'v%d' % i, 'k', client='b', allocation='fans')
    r = hold(c, 'border', 'v0', 'k2', client='b', allocation='fans')
    check(r.get('error') == 'user_limit', "the block's user_limit comes before rate_limited", r)
    # a cart refused by a later item's error takes no token for its earlier items
    ok(c, op='create_event', event='ca', capacity=10, client_rate=1)
    ok(c, op='create_event', event='cb', capacity=10, client_rate=1, max_per_request=2)
    for i in range(3):
        r = c.ask({'op': 'hold_many', 'user': 'x%d' % i, 'request': 'c', 'client': 'z',
                   'items': [{'event': 'ca', 'qty': 1}, {'event': 'cb', 'qty': 5}]})
        check(r.get('error') == 'invalid_argument', 'a cart refused on its second item', r)
    for i in range(2):
        r = hold(c, 'ca', 'y%d' % i, 'k', client='z')
        check(r.get('status') == 'held', 'the refused carts spent none of the burst (hold %d)' % i, r)
    r = hold(c, 'ca', 'y2', 'k', client='z')
    check(r.get('error') == 'rate_limited', 'the burst spent by holds: rate_limited', r)
    c.close()


def bad_input(port):
    c = Conn(port)
    d0 = ok(c, op='digest')
    err(c, 'invalid_argument', 'a client of 129 bytes', op='hold', event='act', user='x', request='k', qty=1,
        client='c' * 129)
    err(c, 'invalid_argument', 'an empty client', op='hold', event='act', user='x', request='k', qty=1, client='')
    err(c, 'invalid_argument', 'a client that is a number', op='hold', event='act', user='x', request='k', qty=1,
        client=7)
    err(c, 'invalid_argument', 'a cart\'s client of 129 bytes', op='hold_many', user='x', request='k',
        items=[{'event': 'act', 'qty': 1}], client='c' * 129)
    err(c, 'invalid_argument', 'a negative max_active_per_client', op='create_event', event='bad1', capacity=1,
        max_active_per_client=-1)
    err(c, 'invalid_argument', 'a client_rate over 1,000,000', op='create_event', event='bad2', capacity=1,
        client_rate=1000001)
    err(c, 'event_exists', 'a create with other client limits', op='create_event', event='act', capacity=100,
        max_active_per_client=4, hold_ttl_ms=60000)
    d1 = ok(c, op='digest')
    check(d0['digest'] == d1['digest'], 'bad input changed nothing', (d0, d1))
    r = hold(c, 'act', 'x', 'k', 1, client='c' * 128)
    check(r.get('status') == 'held', 'a client of 128 bytes is taken', r)
    c.close()


def post(port, op, body):
    h = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
    h.request('POST', '/v1/' + op, body=json.dumps(body).encode(), headers={'Content-Type': 'application/json'})
    r = h.getresponse()
    out = (r.status, r.getheader('Retry-After'), r.read())
    h.close()
    return out


def over_http(srv):
    st, _, body = post(srv.http_port, 'create_event', {'event': 'web', 'capacity': 9, 'max_active_per_client': 1})
    check(st == 200, 'HTTP create_event with max_active_per_client', body)
    st, _, body = post(srv.http_port, 'hold', {'event': 'web', 'user': 'a', 'request': 'k', 'qty': 1})
    check(st == 200 and json.loads(body).get('status') == 'held', 'HTTP a first hold', body)
    st, ra, body = post(srv.http_port, 'hold', {'event': 'web', 'user': 'b', 'request': 'k', 'qty': 1})
    r = json.loads(body)
    check(st == 429 and r.get('error') == 'rate_limited' and r.get('limit') == 'max_active_per_client',
          'HTTP without client: the peer address is the key (429)', (st, body))
    check(ra is not None and int(ra) >= 1, 'HTTP 429 carries Retry-After', ra)
    st, _, body = post(srv.http_port, 'hold', {'event': 'web', 'user': 'b', 'request': 'k', 'qty': 1,
                                                'client': 'session-b'})
    check(st == 200 and json.loads(body).get('status') == 'held', 'HTTP an explicit client is its own key', body)


def restart(binary, data, srv):
    check(srv.stop() == 0, 'slotd stops cleanly')
    srv2 = Server(binary, data, http=True)
    c = Conn(srv2.port)
    r = hold(c, 'act', 'u7', 'k', 1, client='bot')
    check(r.get('error') == 'rate_limited' and r.get('limit') == 'max_active_per_client',
          'a restart keeps the key\'s count (from the stored holds)', r)
    r = c.ask({'op': 'check'})
    check(r.get('ok') and r.get('violations') == [], 'check clean after a restart', r)
    c.close()
    srv2.stop()


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: test_client_limits.py SLOTD')
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        try:
            data = os.path.join(tmp, 'data')
            srv = Server(binary, data, http=True, stderr_path=os.path.join(tmp, 'stderr'))
            c = Conn(srv.port)
            r = ok(c, op='hello')
            require('client_limits' in r.get('features', []), 'hello lists client_limits', r)
            c.close()
            active(srv.port)
            rate(srv.port)
            bad_input(srv.port)
            over_http(srv)
            restart(binary, data, srv)
        finally:
            stop_all()
    finish()


if __name__ == '__main__':
    main()
