#!/usr/bin/env python3
"""test_room.py — the waiting room on a real slotd (docs/protocol.md,
"Admission").

    test_room.py SLOTD

1. Queue: 30 users join; a join by a user with another key is the same
   entry with replay:true; positions are 1..30 in join order; every entry is
   admitted once, in join order exactly (ranks read from the admission
   answers' order of first sight never run backwards), each with a grant.
2. Grants: a hold without a grant, with a forged grant, with another user's
   grant, with a grant of another event: admission_required, nothing
   changed; with the user's grant: held; the same grant serves a second hold
   of its user; a replay needs no grant; an unused grant expires
   ("expired"), a used one still shows admitted.
3. The stop rule: 2 units, 6 joins, a fast rate: only 2 grants are open at
   any moment sampled while nobody holds; after both hold and confirm, the
   room is sold_out for those waiting and a new join makes no entry.
4. Lottery: 40 joins before opens_at get position null with draw_at; after
   the draw every entry is admitted exactly once; the order is a
   permutation of the 40 (not checked for randomness here: slot-bench's
   chi-square does that), later joins come after them in join order.
5. Bad input: admit_per_s 0 and 1,000,001, grant_ttl_ms 999, admission
   "fifo", join on an event without a room, admission with an unknown
   ticket, join before queue_opens_at (not_on_sale with queue_opens_at):
   clear errors, the digest unchanged.
6. A restart goes on from the same place: the room's counts and the
   positions are the same, and admission resumes.
The server listens on 127.0.0.1:0 in a temporary folder and is stopped by PID.
"""
import os
import sys
import tempfile
import time

from slotd_kit import Conn, Server, check, finish, require, stop_all

WAIT_S = 20  # the longest any admission is waited for (bounded loops)


def ok(c, **req):
    r = c.ask(req)
    require(r.get('ok') is True, '%s %s' % (req.get('op'), req.get('event', '')), r)
    return r


def now_ms():
    return int(time.time() * 1000)


def wait_admitted(c, ev, tickets):
    """Polls until every ticket is admitted (bounded); returns the order first seen."""
    order, seen = [], set()
    deadline = time.time() + WAIT_S
    while len(seen) < len(tickets) and time.time() < deadline:
        for t in tickets:
            if t in seen:
                continue
            a = ok(c, op='admission', event=ev, ticket=t)
            if a['status'] == 'admitted':
                seen.add(t)
                order.append(t)
        time.sleep(0.01)
    return order


def queue(port):
    c = Conn(port)
    ok(c, op='create_event', event='q', capacity=1000, admission='queue', admit_per_s=200,
       opens_at=now_ms() + 1500)
    tickets = []
    for i in range(30):
        j = ok(c, op='join', event='q', user='u%d' % i, request='j')
        check(j['status'] == 'waiting' and j['position'] == i + 1, 'queue: join %d has position %d' % (i, i + 1), j)
        tickets.append(j['ticket'])
    again = ok(c, op='join', event='q', user='u3', request='other-key')
    check(again.get('replay') is True and again['ticket'] == tickets[3] and again['position'] == 4,
          'one place per user: another key answers the entry with replay', again)
    v = ok(c, op='event', event='q')
    check(v.get('admission') == 'queue' and v['room'] == {'joined': 30, 'admitted': 0, 'waiting': 30,
                                                            'open_grants': 0}, 'the view\'s room before opens_at', v)
    r = c.ask({'op': 'hold', 'event': 'q', 'user': 'u0', 'request': 'h', 'qty': 1})
    check(r.get('error') in ('not_on_sale', 'admission_required'), 'no hold before the sale opens', r)
    # admitted in join order exactly: read from the last ticket back, the admitted are a prefix of the
    # join order at every poll, and the grants' expires_at (admitted_at + grant_ttl_ms) never decrease
    deadline = time.time() + WAIT_S
    states = []
    while time.time() < deadline:
        states = [ok(c, op='admission', event='q', ticket=t) for t in reversed(tickets)][::-1]
        n = sum(1 for s in states if s['status'] == 'admitted')
        prefix = all(s['status'] == 'admitted' for s in states[:n])
        check(prefix, 'queue: the admitted are always a prefix of the join order', [s['status'] for s in states])
        if not prefix or n == 30:
            break
        time.sleep(0.02)
    exp = [s.get('expires_at', 0) for s in states]
    check(len(states) == 30 and all(s['status'] == 'admitted' for s in states), 'queue: all 30 are admitted')
    check(exp == sorted(exp), 'queue: admitted in join order (expires_at never decreases)', exp)
    v = ok(c, op='event', event='q')
    check(v['room']['admitted'] == 30 and v['room']['waiting'] == 0 and v['room']['open_grants'] == 30,
          'the view counts 30 admitted, 30 open grants', v)
    c.close()
    return tickets


def grants(port, tickets):
    c = Conn(port)
    g3 = ok(c, op='admission', event='q', ticket=tickets[3])['grant']
    g4 = ok(c, op='admission', event='q', ticket=tickets[4])['grant']
    ok(c, op='create_event', event='q2', capacity=5, admission='queue', admit_per_s=1000)
    j = ok(c, op='join', event='q2', user='u3', request='j')
    deadline = time.time() + WAIT_S
    while j['status'] != 'admitted' and time.time() < deadline:
        time.sleep(0.02)
        j = ok(c, op='admission', event='q2', ticket=j['ticket'])
    v0 = ok(c, op='event', event='q')
    for what, g in (('no grant', None), ('a forged grant', 'f' * 32), ('a grant of another shape', 'abc'),
                    ('another user\'s grant', g4), ('a grant of another event', j.get('grant')),
                    ('the ticket as a grant', tickets[3])):
        req = {'op': 'hold', 'event': 'q', 'user': 'u3', 'request': 'h', 'qty': 1}
        if g is not None:
            req['grant'] = g
        r = c.ask(req)
        check(r.get('error') == 'admission_required', 'a hold with %s is admission_required' % what, r)
    r = c.ask({'op': 'hold_many', 'user': 'u3', 'request': 'cart', 'items': [{'event': 'q', 'qty': 1}]})
    check(r.get('error') == 'admission_required', 'a cart item without a grant is admission_required', r)
    v1 = ok(c, op='event', event='q')
    check(v0 == v1, 'refused holds changed nothing (the event and its room)', (v0, v1))
    h = ok(c, op='hold', event='q', user='u3', request='h', qty=1, grant=g3)
    check(h['status'] == 'held', 'the user\'s own grant holds', h)
    h2 = ok(c, op='hold', event='q', user='u3', request='h2', qty=2, grant=g3)
    check(h2['status'] == 'held', 'a grant serves several holds of its user', h2)
    hc = ok(c, op='hold_many', user='u3', request='cart2', items=[{'event': 'q', 'qty': 1, 'grant': g3}])
    check(hc.get('status') == 'held', 'a cart item with its own grant holds', hc)
    hc = ok(c, op='hold_many', user='u3', request='cart3', grant=g3, items=[{'event': 'q', 'qty': 1}])
    check(hc.get('status') == 'held', 'a cart\'s grant serves its items', hc)
    rp = ok(c, op='hold', event='q', user='u3', request='h', qty=1)
    check(rp.get('replay') is True and rp['hold'] == h['hold'], 'a replay needs no grant', rp)
    v = ok(c, op='event', event='q')
    check(v['room']['open_grants'] == 29, 'a used grant is no longer open', v)
    # expiry: a room with 1 s grants
    ok(c, op='create_event', event='qx', capacity=5, admission='queue', admit_per_s=1000, grant_ttl_ms=1000)
    a = ok(c, op='join', event='qx', user='a', request='j')
    b = ok(c, op='join', event='qx', user='b', request='j')
    tk = {'a': a['ticket'], 'b': b['ticket']}
    wait_admitted(c, 'qx', list(tk.values()))
    ga = ok(c, op='admission', event='qx', ticket=tk['a'])['grant']
    ok(c, op='hold', event='qx', user='a', request='h', qty=1, grant=ga)
    deadline = time.time() + WAIT_S
    sb = ok(c, op='admission', event='qx', ticket=tk['b'])
    while sb['status'] != 'expired' and time.time() < deadline:
        time.sleep(0.05)
        sb = ok(c, op='admission', event='qx', ticket=tk['b'])
    check(sb['status'] == 'expired', 'an unused grant expires', sb)
    sa = ok(c, op='admission', event='qx', ticket=tk['a'])
    check(sa['status'] == 'admitted', 'a used grant shows admitted after its expires_at', sa)
    gb = c.ask({'op': 'admission', 'event': 'qx', 'ticket': tk['b']})
    r = c.ask({'op': 'hold', 'event': 'qx', 'user': 'b', 'request': 'h', 'qty': 1, 'grant': ga})
    check(r.get('error') == 'admission_required', 'an expired grant (of another user) holds nothing', (gb, r))
    c.close()


def stop_rule(port):
    c = Conn(port)
    ok(c, op='create_event', event='s', capacity=2, admission='queue', admit_per_s=1000, opens_at=now_ms() + 300)
    tickets = [ok(c, op='join', event='s', user='s%d' % i, request='j')['ticket'] for i in range(6)]
    deadline = time.time() + 1.5
    most = 0
    while time.time() < deadline:
        v = ok(c, op='event', event='s')
        most = max(most, v['room']['open_grants'])
        check(v['room']['open_grants'] <= v['available'], 'stop rule: open grants <= available', v)
        time.sleep(0.02)
    check(most == 2, 'stop rule: exactly 2 admitted for 2 units', most)
    for i in range(2):
        a = ok(c, op='admission', event='s', ticket=tickets[i])
        h = ok(c, op='hold', event='s', user='s%d' % i, request='h', qty=1, grant=a['grant'])
        ok(c, op='confirm', event='s', hold=h['hold'], user='s%d' % i)
    w = ok(c, op='admission', event='s', ticket=tickets[4])
    check(w['status'] == 'sold_out', 'the room is sold_out for those waiting', w)
    j = ok(c, op='join', event='s', user='late', request='j')
    check(j['status'] == 'sold_out' and 'ticket' not in j, 'a join into a sold-out room makes no entry', j)
    c.close()


def lottery(port):
    c = Conn(port)
    opens = now_ms() + 1500
    ok(c, op='create_event', event='l', capacity=1000, admission='lottery', admit_per_s=500, opens_at=opens)
    tickets = []
    for i in range(40):
        j = ok(c, op='join', event='l', user='l%d' % i, request='j')
        check(j['status'] == 'waiting' and j.get('position', 0) is None and j.get('draw_at') == opens,
              'lottery: before the draw position is null with draw_at', j)
        tickets.append(j['ticket'])
    order = wait_admitted(c, 'l', tickets)
    check(sorted(order) == sorted(tickets), 'lottery: every entry of the draw is admitted exactly once', len(order))
    late = [ok(c, op='join', event='l', user='late%d' % i, request='j')['ticket'] for i in range(5)]
    # in join order: read from the last ticket back (as the queue's case), so that one sweep
    # admitting several of them between two reads cannot look like a later one going first
    # (the order of first sight could: a CI run saw late4 before late1, all admitted by one sweep)
    deadline = time.time() + WAIT_S
    states = []
    while time.time() < deadline:
        states = [ok(c, op='admission', event='l', ticket=t) for t in reversed(late)][::-1]
        n = sum(1 for st in states if st['status'] == 'admitted')
        prefix = all(st['status'] == 'admitted' for st in states[:n])
        check(prefix, 'lottery: the later joins admitted are always a prefix of their join order',
              [st['status'] for st in states])
        if not prefix or n == len(late):
            break
        time.sleep(0.01)
    exp = [st.get('expires_at', 0) for st in states]
    check(len(states) == 5 and all(st['status'] == 'admitted' for st in states) and exp == sorted(exp),
          'lottery: later joins come after, in join order (expires_at never decreases)', exp)
    v = ok(c, op='event', event='l')
    check(v['room']['admitted'] == 45, 'lottery: 45 admitted', v)
    c.close()


def bad_input(port):
    c = Conn(port)
    ok(c, op='create_event', event='plain', capacity=3)
    ok(c, op='create_event', event='later', capacity=3, admission='queue', queue_opens_at=now_ms() + 3600000)
    # the rooms admit in the background (grant expiry too), so not the digest: the events named
    before = {e: ok(c, op='event', event=e) for e in ('q', 'plain', 'later')}
    for what, req in (('admit_per_s 0', {'admit_per_s': 0}), ('admit_per_s 1,000,001', {'admit_per_s': 1000001}),
                      ('grant_ttl_ms 999', {'grant_ttl_ms': 999}), ('admission "fifo"', {'admission': 'fifo'})):
        r = c.ask(dict(dict(op='create_event', event='bad', capacity=1, admission='queue'), **req))
        check(r.get('error') == 'invalid_argument', 'create_event with %s' % what, r)
        r = c.ask(dict(op='set_admission', event='q', **dict({'admission': 'queue'}, **req)))
        check(r.get('error') == 'invalid_argument', 'set_admission with %s' % what, r)
    r = c.ask({'op': 'join', 'event': 'plain', 'user': 'x', 'request': 'j'})
    check(r.get('error') == 'invalid_argument', 'join on an event without a room', r)
    r = c.ask({'op': 'join', 'event': 'later', 'user': 'x', 'request': 'j'})
    check(r.get('error') == 'not_on_sale' and r.get('queue_opens_at', 0) > now_ms(),
          'join before queue_opens_at is not_on_sale with queue_opens_at', r)
    for t in ('0' * 32, 'zz', 'f' * 32):
        r = c.ask({'op': 'admission', 'event': 'q', 'ticket': t})
        check(r.get('error') == 'unknown_hold', 'admission of an unknown ticket %s' % t[:4], r)
    r = c.ask({'op': 'join', 'event': 'q', 'user': 'x' * 129, 'request': 'j'})
    check(r.get('error') == 'invalid_argument', 'join with a user of 129 bytes', r)
    after = {e: ok(c, op='event', event=e) for e in ('q', 'plain', 'later')}
    check(before == after, 'bad input changed nothing', (before, after))
    r = c.ask({'op': 'event', 'event': 'bad'})
    check(r.get('error') == 'unknown_event', 'no bad event was made', r)
    c.close()


def restart(binary, data, srv):
    c = Conn(srv.port)
    ok(c, op='create_event', event='r', capacity=1000, admission='queue', admit_per_s=20, opens_at=now_ms() + 200)
    tickets = [ok(c, op='join', event='r', user='r%d' % i, request='j')['ticket'] for i in range(60)]
    time.sleep(0.6)
    before = ok(c, op='event', event='r')['room']
    c.close()
    check(srv.stop() == 0, 'slotd stops cleanly')
    srv2 = Server(binary, data)
    c = Conn(srv2.port)
    after = ok(c, op='event', event='r')['room']
    check(after['joined'] == 60 and after['admitted'] >= before['admitted'],
          'a restart keeps the room (%d admitted before, %d after)' % (before['admitted'], after['admitted']),
          (before, after))
    states = [ok(c, op='admission', event='r', ticket=t) for t in reversed(tickets)][::-1]
    n = sum(1 for s in states if s['status'] == 'admitted')
    check(all(s['status'] == 'admitted' for s in states[:n]), 'after the restart: the admitted are a prefix', n)
    order = wait_admitted(c, 'r', tickets)
    check(len(order) == 60, 'admission goes on after the restart to the last entry', len(order))
    r = c.ask({'op': 'check'})
    check(r.get('ok') and r.get('violations') == [], 'check clean', r)
    c.close()
    srv2.stop()


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: test_room.py SLOTD')
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        try:
            data = os.path.join(tmp, 'data')
            srv = Server(binary, data, stderr_path=os.path.join(tmp, 'stderr'))
            c = Conn(srv.port)
            r = ok(c, op='hello')
            require('admission' in r.get('features', []), 'hello lists admission', r)
            c.close()
            tickets = queue(srv.port)
            grants(srv.port, tickets)
            stop_rule(srv.port)
            lottery(srv.port)
            bad_input(srv.port)
            restart(binary, data, srv)
        finally:
            stop_all()
    finish()


if __name__ == '__main__':
    main()
