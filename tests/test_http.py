#!/usr/bin/env python3
"""test_http.py — slotd's HTTP listener (docs/protocol.md, "HTTP").

    test_http.py SLOTD SLOTD_FAILPOINTS

Starts its own slotd processes on ephemeral loopback ports (--listen and
--http 127.0.0.1:0, the ports read from their first two lines) with
temporary data folders, stops them by PID. Every status of the table is
reached by a real HTTP client (http.client), and each answer's body is
compared with the NDJSON reply the TCP protocol gives for the same request.
Then bad HTTP (no length, huge headers, a body over the limit, slow headers,
pipelining, HTTP/1.0, wrong methods) is answered or dropped, never a crash,
and a TCP hold still works. 307 not_primary is reached in test_haproxy.py.
"""
import http.client
import json
import os
import signal
import socket
import sys
import tempfile
import time

from slotd_kit import Conn, Server, check, finish, stop_all

MAX_LINE = 1024


def start(binary, tmp, name, extra=(), env=None):
    """One slotd with --http in tmp/name (its data and its stderr); port and
    http_port from its stdout (slotd_kit.Server)."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    return Server(binary, os.path.join(d, 'data'),
                  ['--max-line', str(MAX_LINE), '--line-timeout-ms', '1000'] + list(extra), http=True, env=env,
                  stderr_path=os.path.join(d, 'stderr'))


def post(port, op, body, headers=None, conn=None):
    """POST /v1/op with body (a dict, or bytes as they are): (status, headers, body bytes)."""
    c = conn or http.client.HTTPConnection('127.0.0.1', port, timeout=30)
    data = body if isinstance(body, bytes) else json.dumps(body, separators=(',', ':')).encode()
    h = {'Content-Type': 'application/json'}
    h.update(headers or {})
    c.request('POST', '/v1/' + op, body=data, headers=h)
    r = c.getresponse()
    out = (r.status, dict(r.getheaders()), r.read())
    if not conn:
        c.close()
    return out


def get(port, path, headers=None):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
    c.request('GET', path, headers=headers or {})
    r = c.getresponse()
    out = (r.status, dict(r.getheaders()), r.read())
    c.close()
    return out


def same(srv, op, body, want_status, tcp=None, what=None, headers=None, tcp_extra=None):
    """The HTTP answer has want_status and the body TCP gives for {"op":op, ...body}."""
    what = what or '%s %s' % (op, body)
    st, hd, got = post(srv.http_port, op, body, headers)
    t = tcp or Conn(srv.port)
    req = dict(body)
    req['op'] = op
    req.update(tcp_extra or {})
    want = t.ask_raw(req)
    if not tcp:
        t.close()
    check(st == want_status, '%s: HTTP status %d, want %d (body %r)' % (what, st, want_status, got))
    check(got == want, '%s: HTTP body %r != TCP reply %r' % (what, got, want))
    return st, hd, got


def bad_json_counts_from_the_body(srv, t):
    """A bad_json's "(byte N)" (and an integer out of range's) is a byte of the
    body the client sent, not of the request line slotd makes of it: the
    message is the one TCP gives for the body alone as a line (its newlines
    made spaces, which moves no byte)."""
    bodies = (
        (b'{"event":', None, b'(byte 9)'),
        (b'{\n  "event": "e1",\n  "user": u1\n}', None, None),   # pretty-printed
        (b'   \n\n   {"event":"e1","event":"e2"}', None, None),   # leading spaces; a duplicate key
        (b'{"event":"e1","user":"u1",', {'Idempotency-Key': 'kb'}, None),  # the header's member is slotd's
        (b'{"event":"e1","qty":99999999999999999999}', None, None),  # invalid_argument, same count
    )
    for body, headers, want_byte in bodies:
        st, _, got = post(srv.http_port, 'hold', body, headers)
        t.sock.sendall(body.replace(b'\n', b' ') + b'\n')
        want = t.raw_line()
        check(st == 400 and got == want, 'byte offsets of body %r: HTTP %d %r != TCP %r' % (body, st, got, want))
        if want_byte:
            check(want_byte in got, 'body %r: %r names %r' % (body, got, want_byte))


def statuses(binary, fp_binary, tmp):
    srv = start(binary, tmp, 'plain')
    t = Conn(srv.port)
    p = srv.http_port
    # 200: create_event, hold (and its replay through Idempotency-Key), sold_out, the event view
    ev = {'event': 'e1', 'capacity': 3, 'max_per_user': 2, 'max_extensions': 0}
    st, _, body = post(p, 'create_event', ev)
    check(st == 200 and json.loads(body)['ok'], 'create_event: %d %r' % (st, body))
    check(body.endswith(b'\n') and body.count(b'\n') == 1, 'the body is one NDJSON line: %r' % body)
    same(srv, 'create_event', ev, 200, t, 'create_event again (same settings: a replay)')
    st, _, held = post(p, 'hold', {'event': 'e1', 'user': 'u1', 'qty': 1}, {'Idempotency-Key': 'k1'})
    check(st == 200 and json.loads(held)['status'] == 'held', 'hold with Idempotency-Key: %d %r' % (st, held))
    st, _, replay = post(p, 'hold', {'event': 'e1', 'user': 'u1', 'qty': 1}, {'Idempotency-Key': 'k1'})
    hold_id = json.loads(held)['hold']
    check(st == 200 and json.loads(replay).get('replay') is True and json.loads(replay)['hold'] == hold_id,
          'Idempotency-Key replays: %d %r' % (st, replay))
    tcp_replay = t.ask_raw({'op': 'hold', 'event': 'e1', 'user': 'u1', 'qty': 1, 'request': 'k1'})
    check(tcp_replay == replay, 'HTTP replay %r == TCP replay %r' % (replay, tcp_replay))
    # the body's own request wins over the header
    st, _, own = post(p, 'hold', {'event': 'e1', 'user': 'u1', 'qty': 1, 'request': 'k1'}, {'Idempotency-Key': 'k9'})
    check(st == 200 and json.loads(own)['hold'] == hold_id, 'a body request wins over Idempotency-Key: %r' % own)
    # 409 idempotency_conflict, through the header
    same(srv, 'hold', {'event': 'e1', 'user': 'u1', 'qty': 2}, 409, t, 'idempotency_conflict',
         {'Idempotency-Key': 'k1'}, {'request': 'k1'})
    # 409 user_limit (max_per_user 2: u1 holds 1)
    same(srv, 'hold', {'event': 'e1', 'user': 'u1', 'qty': 2, 'request': 'k2'}, 409, t, 'user_limit')
    # sold_out is 200
    post(p, 'hold', {'event': 'e1', 'user': 'u2', 'qty': 2, 'request': 'k3'})
    st, _, so = same(srv, 'hold', {'event': 'e1', 'user': 'u3', 'qty': 1, 'request': 'k4'}, 200, t, 'sold_out')
    check(json.loads(so).get('status') == 'sold_out', 'sold_out answer: %r' % so)
    # GET /v1/events/E is exactly the event op's reply
    st, hd, view = get(p, '/v1/events/e1')
    want = t.ask_raw({'op': 'event', 'event': 'e1'})
    check(st == 200 and view == want, 'GET /v1/events/e1: %d %r != %r' % (st, view, want))
    check(hd.get('Content-Type') == 'application/json', 'Content-Type: %r' % hd.get('Content-Type'))
    st, _, view = get(p, '/v1/events/nope')
    want = t.ask_raw({'op': 'event', 'event': 'nope'})
    check(st == 404 and view == want, 'GET /v1/events/nope: %d %r != %r' % (st, view, want))
    st, _, view = get(p, '/v1/events/bad%20name')
    check(st == 400 and json.loads(view)['error'] == 'invalid_argument', 'a bad event name: %d %r' % (st, view))
    # 400: bad_json, invalid_argument, unknown_op
    st, _, bj = post(p, 'hold', b'{"event":')
    t.sock.sendall(b'{"event":\n')  # the body alone: the same message, the same byte
    want = t.raw_line()
    check(st == 400 and bj == want, 'bad_json: %d %r != %r' % (st, bj, want))
    bad_json_counts_from_the_body(srv, t)
    same(srv, 'hold', {'event': 'e1', 'user': 'u1', 'qty': 0, 'request': 'k5'}, 400, t, 'invalid_argument')
    same(srv, 'nosuchop', {'x': 1}, 400, t, 'unknown_op')
    st, _, body = post(p, 'hold', b'[1,2]')
    check(st == 400 and json.loads(body)['error'] == 'bad_json', 'a body that is not an object: %d %r' % (st, body))
    st, _, body = post(p, 'hold', {'op': 'release'})
    check(st == 400 and json.loads(body)['error'] == 'bad_json', 'a body with its own op: %d %r' % (st, body))
    st, _, body = post(p, 'stats', b'')
    check(st == 200 and json.loads(body)['ok'], 'an empty body is {}: %d %r' % (st, body))
    # 404: unknown_event, unknown_hold
    same(srv, 'hold', {'event': 'nope', 'user': 'u1', 'qty': 1, 'request': 'k6'}, 404, t, 'unknown_event')
    same(srv, 'get_hold', {'event': 'e1', 'user': 'u1', 'hold': '00' * 16}, 404, t, 'unknown_hold')
    # 409: event_exists, hold_not_active, capacity_below_allocated, extend_limit, not_on_sale
    same(srv, 'create_event', {'event': 'e1', 'capacity': 5}, 409, t, 'event_exists')
    same(srv, 'set_capacity', {'event': 'e1', 'capacity': 1}, 409, t, 'capacity_below_allocated')
    same(srv, 'extend', {'event': 'e1', 'user': 'u1', 'hold': hold_id, 'by_ms': 1000}, 409, t, 'extend_limit')
    post(p, 'release', {'event': 'e1', 'user': 'u1', 'hold': hold_id})
    same(srv, 'confirm', {'event': 'e1', 'user': 'u1', 'hold': hold_id}, 409, t, 'hold_not_active')
    post(p, 'set_status', {'event': 'e1', 'status': 'closed'})
    same(srv, 'hold', {'event': 'e1', 'user': 'u5', 'qty': 1, 'request': 'k7'}, 409, t, 'not_on_sale')
    # feed ops are not for HTTP
    st, _, body = post(p, 'subscribe', {'consumer': 'c1'})
    check(st == 400 and json.loads(body)['error'] == 'invalid_argument', 'subscribe over HTTP: %d %r' % (st, body))
    # 413: a body over --max-line, the same answer as a line over it
    st, hd, big = post(p, 'hold', b'{"event":"' + b'x' * (MAX_LINE + 10) + b'"}')
    t2 = Conn(srv.port)
    t2.sock.sendall(b'{"event":"' + b'x' * (MAX_LINE + 10) + b'"}\n')
    want = t2.raw_line()
    t2.close()
    check(st == 413 and big == want, 'body over --max-line: %d %r != %r' % (st, big, want))
    # hello lists "http" in features
    st, _, hello = post(p, 'hello', {})
    check('http' in json.loads(hello).get('features', []), 'hello features with --http: %r' % hello)
    # /health, /primary, /metrics
    st, _, body = get(p, '/health')
    check(st == 200, '/health: %d %r' % (st, body))
    st, _, body = get(p, '/primary')
    check(st == 200, '/primary on a standalone server: %d %r' % (st, body))
    st, hd, body = get(p, '/metrics')
    check(st == 200 and hd.get('Content-Type', '').startswith('text/plain; version=0.0.4'),
          '/metrics: %d %r' % (st, hd))
    text = body.decode()
    check('# TYPE slotd_build_info gauge' in text and 'slotd_requests_total{op="hold"' in text,
          '/metrics is the Prometheus text with the requests by op: %r' % text[:300])
    st, _, body2 = get(p, '/metrics')
    tcp_text = Conn(srv.port)
    m = json.loads(tcp_text.ask_raw({'op': 'metrics'}))
    tcp_text.close()
    check(st == 200 and 'slotd_requests_total{op="metrics"' in m['text'],
          'the metrics op and GET /metrics render the same families: %r' % m.get('text', '')[:200])
    st, _, body = get(p, '/nowhere')
    check(st == 404, 'an unknown path: %d' % st)
    st, _, body = get(p, '/v1/events/e1/x')
    check(st == 404 and body.startswith(b'not found'), 'a path below an event is no path of ours: %d %r' % (st, body))

    # 503 shutting_down (with Retry-After): a draining TCP client keeps the server stopping
    keep = http.client.HTTPConnection('127.0.0.1', p, timeout=30)
    st, _, _ = post(p, 'stats', {}, conn=keep)
    drain = Conn(srv.port)
    drain.ask_raw({'op': 'stats'})
    srv.signal(signal.SIGTERM)
    drain.sock.settimeout(10)
    check(drain.sock.recv(1) == b'', 'the server drains its TCP clients when it stops')
    st, hd, body = post(p, 'hold', {'event': 'e1', 'user': 'u1', 'qty': 1, 'request': 'k8'}, conn=keep)
    want = b'{"ok":false,"error":"shutting_down","message":"the server is stopping; nothing was changed"}\n'
    check(st == 503 and body == want, 'shutting_down: %d %r' % (st, body))
    check(hd.get('Retry-After') == '1', '503 has Retry-After: %r' % hd)
    keep.close()
    drain.close()
    t.close()
    rc, err = srv.stop(), srv.stderr_text()
    check(rc == 0, 'plain server exit status %d: %s' % (rc, err))

    # 401 and 403 with tokens; Bearer plays hello's part
    tokens = os.path.join(tmp, 'token-file')
    with open(tokens, 'w') as f:
        f.write('frontend ftok\nadmin atok\n')
    os.chmod(tokens, 0o600)
    srv = start(binary, tmp, 'tokens', ['--token-file', tokens])
    p = srv.http_port
    st, _, body = post(p, 'create_event', {'event': 'e2', 'capacity': 5}, {'Authorization': 'Bearer atok'})
    check(st == 200, 'admin bearer create_event: %d %r' % (st, body))
    same(srv, 'hold', {'event': 'e2', 'user': 'u', 'qty': 1, 'request': 'a'}, 401, None, 'no bearer: unauthenticated')
    st, _, body = post(p, 'hold', {'event': 'e2', 'user': 'u', 'qty': 1, 'request': 'a'},
                       {'Authorization': 'Bearer wrong'})
    check(st == 401, 'a wrong bearer: %d %r' % (st, body))
    ft = Conn(srv.port)
    ft.ask_raw({'op': 'hello', 'token': 'ftok'})
    same(srv, 'create_event', {'event': 'e3', 'capacity': 5}, 403, ft, 'frontend: forbidden',
         {'Authorization': 'Bearer ftok'})
    st, _, body = post(p, 'hold', {'event': 'e2', 'user': 'u', 'qty': 1, 'request': 'a'},
                       {'Authorization': 'Bearer ftok'})
    check(st == 200 and json.loads(body)['status'] == 'held', 'frontend bearer hold: %d %r' % (st, body))
    for path in ('/health', '/primary', '/metrics'):
        st, _, body = get(p, path)
        check(st == 200, '%s needs no token: %d' % (path, st))
    ft.close()
    rc, err = srv.stop(), srv.stderr_text()
    check(rc == 0, 'token server exit status %d' % rc)
    check('ftok' not in err and 'atok' not in err, 'no token in the log')

    # 500 internal and 507 storage_full, from the failpoint build
    for fp, extra, want_status, name in (('commit_fail@1*2', [], 500, 'internal'),
                                         ('map_full*1000', ['--map-size-max', '64M'], 507, 'storage_full')):
        srv = start(fp_binary, tmp, 'fp-' + name, extra, {'SLOT_FAILPOINTS': fp})
        st, _, body = post(srv.http_port, 'create_event', {'event': 'e4', 'capacity': 5})
        check(st == 200, '%s: create_event first: %d %r' % (name, st, body))
        st, _, body = same(srv, 'hold', {'event': 'e4', 'user': 'u', 'qty': 1, 'request': 'z'}, want_status,
                           None, name)
        check(json.loads(body).get('error') == name, '%s: %r' % (name, body))
        srv.stop()


def raw(port, data, timeout=30):
    """Sends data on a new connection; reads until the server closes it (or
    timeout s pass): the bytes, and whether the server closed it."""
    s = socket.create_connection(('127.0.0.1', port), timeout=timeout)
    s.sendall(data)
    got, closed = b'', False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        got += chunk
    s.close()
    return got, closed


def status_of(resp):
    """The status of the first response in resp bytes, or 0."""
    try:
        return int(resp.split(b' ', 2)[1])
    except (IndexError, ValueError):
        return 0


def head_over_the_limit_is_json(p, host):
    """A head over 32 KiB is answered 431 in JSON (line_too_long, the shape of
    every other error), its connection closed, its body not run; one just
    under it is served. (A head too big even for libmicrohttpd's 64 KiB of
    connection memory, as the 100,000-byte one above, gets its own page.)"""
    for method, path, body in ((b'GET', b'/health', b''), (b'GET', b'/v1/events/b1', b''),
                               (b'POST', b'/v1/hold', b'{"event":"b1","user":"big","qty":1,"request":"big"}')):
        got, closed = raw(p, method + b' ' + path + b' HTTP/1.1\r\n' + host + b'X-Big: ' + b'a' * 40000 +
                          b'\r\nContent-Length: %d\r\n\r\n' % len(body) + body)
        head, _, reply = got.partition(b'\r\n\r\n')
        ok = status_of(got) == 431 and closed and b'\r\nContent-Type: application/json\r\n' in head + b'\r\n'
        try:
            r = json.loads(reply)
            ok = ok and r['ok'] is False and r['error'] == 'line_too_long' and 'head' in r['message']
            ok = ok and reply.endswith(b'\n') and reply.count(b'\n') == 1
        except (ValueError, KeyError):
            ok = False
        check(ok, 'a %s %s head over 32 KiB is a JSON 431: %r' % (method, path, got[:400]))
    st, _, held = post(p, 'hold', {'event': 'b1', 'user': 'big', 'qty': 1, 'request': 'big'})
    check(st == 200 and 'replay' not in json.loads(held), 'the refused head\'s hold never ran: %r' % held)
    got, _ = raw(p, b'GET /health HTTP/1.1\r\n' + host + b'X-Big: ' + b'a' * 30000 + b'\r\nConnection: close\r\n\r\n')
    check(status_of(got) == 200, 'a head under 32 KiB is served: %r' % got[:200])


def tcp_hold_works(srv, key):
    t = Conn(srv.port)
    r = json.loads(t.ask_raw({'op': 'hold', 'event': 'b1', 'user': 'tcp', 'qty': 1, 'request': key}))
    t.close()
    return r.get('ok') is True


def bad_http(binary, tmp):
    config = os.path.join(tmp, 'bad.conf')
    with open(config, 'w') as f:
        f.write('# --http from the config file\nhttp = 127.0.0.1:0\n')
    srv = start(binary, tmp, 'bad', ['--config', config, '--max-connections', '64'])
    p = srv.http_port
    post(p, 'create_event', {'event': 'b1', 'capacity': 1000, 'max_per_user': 1000, 'max_per_request': 100})
    host = b'Host: 127.0.0.1\r\n'
    # no Content-Length: an empty body ({}), so the fields are missing
    got, _ = raw(p, b'POST /v1/hold HTTP/1.1\r\n' + host + b'Connection: close\r\n\r\n')
    check(status_of(got) == 400 and b'invalid_argument' in got, 'POST without Content-Length: %r' % got[:200])
    # chunked: the body in pieces
    body = b'{"event":"b1","user":"c","qty":1,"request":"ch1"}'
    chunked = b'%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n' % (10, body[:10], len(body) - 10, body[10:])
    got, _ = raw(p, b'POST /v1/hold HTTP/1.1\r\n' + host + b'Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n' +
                 chunked)
    check(status_of(got) == 200 and b'"held"' in got, 'a chunked body: %r' % got[:300])
    # a chunked body over --max-line: 413, the connection closed
    big = b'x' * (MAX_LINE + 100)
    got, closed = raw(p, b'POST /v1/hold HTTP/1.1\r\n' + host + b'Transfer-Encoding: chunked\r\n\r\n' +
                      b'%x\r\n%s\r\n0\r\n\r\n' % (len(big), big))
    check(status_of(got) == 413 and b'line_too_long' in got and closed, 'a chunked body over the limit: %r' % got[:300])
    # Content-Length over --max-line, body never sent: answered at once
    got, closed = raw(p, b'POST /v1/hold HTTP/1.1\r\n' + host + b'Content-Length: 100000000\r\n\r\n{"event"')
    check(status_of(got) == 413 and closed, 'Content-Length over the limit: %r' % got[:300])
    # a huge head: refused (431) or dropped, never served
    got, closed = raw(p, b'GET /health HTTP/1.1\r\n' + host + b'X-Big: ' + b'a' * 100000 + b'\r\n\r\n')
    check(status_of(got) == 431 and closed, 'a huge header: %r' % got[:200])
    head_over_the_limit_is_json(p, host)
    # slow headers: a head that stops coming is dropped after the timeout (1 s here)
    got, closed = raw(p, b'POST /v1/hold HTTP/1.1\r\n' + host + b'Content-Le', timeout=60)
    check(closed, 'an unfinished head is dropped after the timeout (got %r)' % got[:200])
    # a body that stops coming: the same
    got, closed = raw(p, b'POST /v1/hold HTTP/1.1\r\n' + host + b'Content-Length: 50\r\n\r\n{"ev', timeout=60)
    check(closed, 'an unfinished body is dropped after the timeout (got %r)' % got[:200])
    # pipelined: three requests in one send, three answers in order
    reqs = b''
    for i in range(3):
        b = json.dumps({'event': 'b1', 'user': 'pipe', 'qty': 1, 'request': 'p%d' % i}).encode()
        reqs += b'POST /v1/hold HTTP/1.1\r\n' + host + b'Content-Length: %d\r\n\r\n' % len(b) + b
    reqs += b'GET /v1/events/b1 HTTP/1.1\r\n' + host + b'Connection: close\r\n\r\n'
    got, _ = raw(p, reqs)
    check(got.count(b'HTTP/1.1 200') == 4 and got.count(b'"status":"held"') == 3 and got.rfind(b'"status":"held"') < got.find(b'"available"'),
          'pipelined requests answered in order: %r' % got)
    # HTTP/1.0: answered, then closed
    got, closed = raw(p, b'GET /v1/events/b1 HTTP/1.0\r\n\r\n')
    check(status_of(got) == 200 and b'"available"' in got and closed, 'HTTP/1.0: %r' % got[:300])
    # HEAD: the GET's status and headers, no body
    got, _ = raw(p, b'HEAD /v1/events/b1 HTTP/1.1\r\n' + host + b'Connection: close\r\n\r\n')
    check(status_of(got) == 200 and got.endswith(b'\r\n\r\n') and b'Content-Length: ' in got, 'HEAD: %r' % got[:300])
    # wrong methods: 405 with Allow
    for method, path, allow in ((b'PUT', b'/v1/hold', b'POST'), (b'GET', b'/v1/hold', b'POST'),
                                (b'DELETE', b'/health', b'GET, HEAD'), (b'POST', b'/v1/events/b1', b'GET, HEAD')):
        got, _ = raw(p, method + b' ' + path + b' HTTP/1.1\r\n' + host + b'Content-Length: 0\r\nConnection: close\r\n\r\n')
        check(status_of(got) == 405 and b'Allow: ' + allow in got, '%s %s: %r' % (method, path, got[:300]))
    # garbage and a bad request line
    got, closed = raw(p, b'\x00\x01garbage\r\n\r\n')
    check(closed, 'garbage is dropped: %r' % got[:200])
    got, closed = raw(p, b'POST /v1/hold HTTP/9.9\r\n' + host + b'\r\n')
    check(closed, 'an unknown HTTP version is refused: %r' % got[:200])
    # many connections at once, past --max-connections 64: served or closed, never a crash
    socks = []
    for _ in range(100):
        try:
            socks.append(socket.create_connection(('127.0.0.1', p), timeout=5))
        except OSError:
            break
    check(tcp_hold_works(srv, 'during-flood'), 'a TCP hold while HTTP connections pile up')
    for s in socks:
        s.close()
    # the server is alive and serves both protocols afterwards
    check(srv.alive(), 'slotd is alive after the bad HTTP')
    # (connections the flood closed still count until slotd has read their end: refused till then)
    for _ in range(100):
        try:
            st, _, body = post(p, 'hold', {'event': 'b1', 'user': 'after', 'qty': 1, 'request': 'after'})
            break
        except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected):
            st, body = 0, b''
            time.sleep(0.1)
    check(st == 200 and b'"held"' in body, 'an HTTP hold after the bad HTTP: %d %r' % (st, body))
    check(tcp_hold_works(srv, 'after'), 'a TCP hold after the bad HTTP')
    rc, err = srv.stop(), srv.stderr_text()
    check(rc == 0, 'exit status %d after the bad HTTP: %s' % (rc, err[-2000:]))


def main():
    if len(sys.argv) != 3:
        sys.exit('usage: test_http.py SLOTD SLOTD_FAILPOINTS')
    binary, fp_binary = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        try:
            statuses(binary, fp_binary, tmp)
            bad_http(binary, tmp)
        finally:
            stop_all()
    finish()


if __name__ == '__main__':
    main()
