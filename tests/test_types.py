#!/usr/bin/env python3
"""test_types.py — ticket types over TCP and HTTP (docs/protocol.md, "Ticket
types"): events that share a parent's capacity, on a real slotd.

    test_types.py SLOTD

1. Race: 64 connections hold at once, through 8 different children, the last
   units of a parent (a venue of 50 with 40 held on it directly): exactly the
   10 free units are held, every other answer is sold_out naming the parent
   as short, and check is clean.
2. Bad input, each a clear error with nothing changed (the digest is the same
   before and after): a parent that does not exist (unknown_event), an event
   as its own parent (the only cycle a create can make), a 4th level, a parent
   given to an event with children (invalid_argument).
3. Rules along the chain: not_on_sale of an ancestor names it and carries its
   times; an ancestor's max_per_user counts the user's units of all its
   children (user_limit); set_capacity of a parent below what its children
   hold is capacity_below_allocated; effective_available on a child; a cart
   over one family counts the shared units once per item.
4. waitlist_join from a block: held at once when the block has the units,
   else waiting and offered from the block when its units come back or
   allocate adds to it; an unknown block refused, nothing changed.
5. The feed's hold entries carry "chain" (the event, then its ancestors), and
   none for an event without a parent.
6. HTTP: create_event with parent, a child's sold_out with short, the child's
   view: the same bodies TCP gives.
7. A restart keeps the family's counts (the store's own records).
The server listens on 127.0.0.1:0 in a temporary folder and is stopped by PID.
"""
import http.client
import json
import os
import sys
import tempfile
import threading

from slotd_kit import Conn, Server, check, finish, require, stop_all

RACERS = 64
CHILDREN = 8


def ok(c, **req):
    r = c.ask(req)
    require(r.get('ok') is True, '%s %s' % (req.get('op'), req.get('event', '')), r)
    return r


def clean(c, what):
    r = c.ask({'op': 'check'})
    check(r.get('ok') and r.get('violations') == [], 'check clean after ' + what, r)


def race(port):
    c = Conn(port)
    ok(c, op='create_event', event='venue', capacity=50, shards=8)
    for i in range(CHILDREN):
        ok(c, op='create_event', event='area%d' % i, capacity=20, shards=4, parent='venue')
    for i in range(4):
        r = ok(c, op='hold', event='venue', user='box', request='b%d' % i, qty=10)
        require(r.get('status') == 'held', 'the venue held directly (%d)' % i, r)
    conns = [Conn(port) for _ in range(RACERS)]
    go = threading.Barrier(RACERS)
    answers = [None] * RACERS

    def one(i):
        go.wait(timeout=30)
        answers[i] = conns[i].ask({'op': 'hold', 'event': 'area%d' % (i % CHILDREN), 'user': 'u%d' % i,
                                   'request': 'k', 'qty': 1})

    threads = [threading.Thread(target=one, args=(i,)) for i in range(RACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    held = [a for a in answers if a and a.get('status') == 'held']
    sold = [a for a in answers if a and a.get('status') == 'sold_out']
    check(len(held) == 10, 'race: exactly the 10 free units are held, got %d' % len(held), answers)
    check(len(sold) == RACERS - 10, 'race: the others are sold_out (%d)' % len(sold))
    check(all(a.get('short') == 'venue' and a.get('available') == 0 for a in sold),
          'race: every sold_out names the venue as short with available 0', sold[:3])
    v = ok(c, op='event', event='venue')
    check(v['held'] == 50 and v['available'] == 0, 'race: the venue counts its children\'s units', v)
    kids = sum(ok(c, op='event', event='area%d' % i)['held'] for i in range(CHILDREN))
    check(kids == 10, 'race: the children hold 10 between them, got %d' % kids)
    clean(c, 'the race')
    for x in conns:
        x.close()
    c.close()


def bad_input(port):
    c = Conn(port)
    ok(c, op='create_event', event='g0', capacity=10)
    ok(c, op='create_event', event='g1', capacity=10, parent='g0')
    ok(c, op='create_event', event='g2', capacity=10, parent='g1')
    cases = (
        ({'event': 'x1', 'capacity': 5, 'parent': 'nosuch'}, 'unknown_event', 'an unknown parent'),
        ({'event': 'x2', 'capacity': 5, 'parent': 'x2'}, 'invalid_argument', 'an event as its own parent'),
        ({'event': 'x3', 'capacity': 5, 'parent': 'g2'}, 'invalid_argument', 'a 4th level'),
        ({'event': 'g0', 'capacity': 10, 'parent': 'g2'}, 'invalid_argument', 'a parent for an event with children'),
        ({'event': 'g1', 'capacity': 10, 'parent': 'x9'}, 'invalid_argument', 'another parent for a middle event'),
        ({'event': 'x4', 'capacity': 5, 'parent': 7}, 'invalid_argument', 'a parent that is not a name'),
    )
    for body, err, what in cases:
        before = ok(c, op='digest')
        req = dict(body)
        req['op'] = 'create_event'
        r = c.ask(req)
        check(r.get('ok') is False and r.get('error') == err, 'bad input, %s: %s' % (what, err), r)
        check('parent' in r.get('message', ''), 'bad input, %s: the message names parent' % what, r)
        after = ok(c, op='digest')
        check(before['digest'] == after['digest'], 'bad input, %s: nothing changed' % what)
    r = ok(c, op='create_event', event='g1', capacity=10, parent='g0')
    check(r.get('replay') is True, 'create_event of a middle event with its own parent is a replay', r)
    clean(c, 'bad input')
    c.close()


def rules(port):
    c = Conn(port)
    ok(c, op='create_event', event='fest', capacity=6, max_per_user=3)
    ok(c, op='create_event', event='day', capacity=5, parent='fest')
    ok(c, op='create_event', event='week', capacity=5, parent='fest')
    r = ok(c, op='set_sale_window', event='fest', opens_at=4102444800000, closes_at=0)
    r = c.ask({'op': 'hold', 'event': 'day', 'user': 'a', 'request': 'k', 'qty': 1})
    check(r.get('error') == 'not_on_sale' and r.get('event') == 'fest' and r.get('opens_at') == 4102444800000,
          'not_on_sale of an ancestor names it and carries its times', r)
    ok(c, op='set_sale_window', event='fest', opens_at=0, closes_at=0)
    r = ok(c, op='hold', event='day', user='a', request='k1', qty=2)
    check(r.get('status') == 'held', 'a hold on a child', r)
    r = c.ask({'op': 'hold', 'event': 'week', 'user': 'a', 'request': 'k2', 'qty': 2})
    check(r.get('error') == 'user_limit', 'the parent\'s max_per_user counts the user\'s units of every child', r)
    r = ok(c, op='hold', event='week', user='b', request='k1', qty=3)
    v = ok(c, op='event', event='week')
    check(v.get('parent') == 'fest' and v.get('available') == 2 and v.get('effective_available') == 1,
          'a child\'s view: parent, its own available, effective_available the least over the chain', v)
    r = c.ask({'op': 'set_capacity', 'event': 'fest', 'capacity': 4})
    check(r.get('error') == 'capacity_below_allocated', 'set_capacity of a parent below its children\'s units', r)
    r = ok(c, op='hold_many', user='c', request='cart1', items=[{'event': 'day', 'qty': 1}, {'event': 'week', 'qty': 1}])
    check(r.get('status') == 'sold_out' and r.get('short') == 'fest' and r.get('available') == 1,
          'a cart of one family counts the shared units once per item', r)
    r = ok(c, op='hold_many', user='c', request='cart2', items=[{'event': 'day', 'qty': 1}])
    check(r.get('status') == 'held', 'the last unit by a cart', r)
    v = ok(c, op='event', event='fest')
    check(v['held'] == 6 and v['available'] == 0, 'the parent counts every child\'s units', v)
    clean(c, 'the rules')
    c.close()


def feed(port):
    c = Conn(port)
    ok(c, op='create_event', event='solo', capacity=3)
    ok(c, op='hold', event='solo', user='f', request='k', qty=1)
    ok(c, op='create_event', event='hall', capacity=3)
    ok(c, op='create_event', event='seat', capacity=3, parent='hall')
    ok(c, op='create_event', event='vip', capacity=3, parent='seat')
    ok(c, op='hold', event='vip', user='f', request='k', qty=1)
    w = Conn(port)
    r = w.ask({'op': 'subscribe', 'consumer': 'types', 'from': 'start'})
    require(r.get('ok') is True, 'subscribe', r)
    chains = {}
    for _ in range(2000):
        e = w.line()
        if e.get('type') == 'hold.held':
            chains[e['event']] = e.get('chain')
        if 'vip' in chains:
            break
    check(chains.get('vip') == ['vip', 'seat', 'hall'], 'a grandchild\'s hold.held carries its chain', chains)
    check('solo' in chains and chains['solo'] is None, 'an event without a parent has no chain', chains.get('solo'))
    areas = [e for e in chains if e.startswith('area')]  # the race's holds
    check(areas and all(chains[e] == [e, 'venue'] for e in areas), 'a child\'s hold.held carries its chain', chains)
    w.close()
    c.close()


def allocations(port):
    """Allocations (docs/protocol.md, "Allocations") on a child of a family."""
    c = Conn(port)
    ok(c, op='create_event', event='arena', capacity=20)
    ok(c, op='create_event', event='pit', capacity=15, parent='arena')
    for body, what in (({'qty': 16}, 'a block larger than the free units'),):
        before = ok(c, op='digest')
        r = ok(c, op='allocate', event='pit', allocation='fans', **body)
        check(r.get('status') == 'sold_out' and r.get('available') == 15, 'allocate, %s: sold_out' % what, r)
        check(ok(c, op='digest')['digest'] == before['digest'], 'allocate, %s: nothing changed' % what)
    r = ok(c, op='allocate', event='pit', allocation='fans', qty=6, max_per_user=2)
    check(r.get('allocation') == 'fans' and r.get('qty') == 6 and r.get('remaining') == 6, 'allocate', r)
    v = ok(c, op='event', event='arena')
    check(v['allocated'] == 6 and v['available'] == 14, 'the parent counts its child\'s block in allocated', v)
    before = ok(c, op='digest')
    r = c.ask({'op': 'hold', 'event': 'pit', 'user': 'a', 'request': 'k0', 'qty': 1, 'allocation': 'nosuch'})
    check(r.get('error') == 'invalid_argument' and 'allocation' in r.get('message', ''),
          'a hold from an unknown block: invalid_argument naming allocation', r)
    r = c.ask({'op': 'hold', 'event': 'pit', 'user': 'a', 'request': 'k0', 'qty': 3, 'allocation': 'fans'})
    check(r.get('error') == 'user_limit', 'the block\'s max_per_user', r)
    check(ok(c, op='digest')['digest'] == before['digest'], 'refused block holds change nothing')
    held = []
    for u in ('a', 'b', 'c'):
        r = ok(c, op='hold', event='pit', user=u, request='k', qty=2, allocation='fans')
        check(r.get('status') == 'held', 'a hold from the block (%s)' % u, r)
        held.append(r)
    r = ok(c, op='hold', event='pit', user='d', request='k', qty=1, allocation='fans')
    check(r.get('status') == 'sold_out' and r.get('remaining') == 0, 'qty over the block\'s remaining: sold_out', r)
    v = ok(c, op='event', event='pit')
    fans = v.get('allocations', {}).get('fans', {})
    check(v['held'] == 6 and v['allocated'] == 0 and v['available'] == 9 and
          fans == {'qty': 6, 'remaining': 0, 'held': 6, 'confirmed': 0}, 'the view of the block\'s holds', v)
    ok(c, op='release', event='pit', hold=held[0]['hold'], user='a')
    ok(c, op='confirm', event='pit', hold=held[1]['hold'], user='b')
    v = ok(c, op='event', event='pit')
    check(v['allocations']['fans'] == {'qty': 6, 'remaining': 2, 'held': 2, 'confirmed': 2} and v['allocated'] == 2,
          'a released block hold goes back to the block', v)
    r = c.ask({'op': 'set_capacity', 'event': 'pit', 'capacity': 5})
    check(r.get('error') == 'capacity_below_allocated', 'set_capacity below held + confirmed + allocated', r)
    r = c.ask({'op': 'deallocate', 'event': 'pit', 'allocation': 'fans', 'qty': 3})
    check(r.get('error') == 'invalid_argument', 'deallocate more than remains: invalid_argument', r)
    r = ok(c, op='deallocate', event='pit', allocation='fans', qty=1)
    check(r.get('qty') == 5 and r.get('remaining') == 1, 'deallocate a part', r)
    r = ok(c, op='deallocate', event='pit', allocation='fans')
    v = ok(c, op='event', event='pit')
    check('allocations' not in v and v['allocated'] == 0 and v['available'] == 11,
          'deallocate without qty removes the block', v)
    ok(c, op='release', event='pit', hold=held[2]['hold'], user='c')
    v = ok(c, op='event', event='arena')
    check(v['available'] == 18 and v['allocated'] == 0, 'a removed block\'s hold comes back to the free shards', v)
    clean(c, 'allocations')
    c.close()


def cart_blocks(port):
    """hold_many items with "allocation" (docs/protocol.md, "Allocations"): an item takes from
    its block, all or nothing with the cart; sold_out with remaining; the block's max_per_user."""
    c = Conn(port)
    ok(c, op='create_event', event='expo', capacity=10)
    ok(c, op='create_event', event='stage', capacity=10, parent='expo')
    ok(c, op='create_event', event='balcony', capacity=10, parent='expo')
    ok(c, op='allocate', event='stage', allocation='club', qty=3, max_per_user=2)
    r = c.ask({'op': 'hold_many', 'user': 'u', 'request': 'b0',
               'items': [{'event': 'stage', 'qty': 1, 'allocation': 'nosuch'}, {'event': 'balcony', 'qty': 1}]})
    check(r.get('error') == 'invalid_argument' and 'allocation' in r.get('message', ''),
          'a cart item from an unknown block: invalid_argument naming allocation', r)
    before = ok(c, op='digest')
    r = c.ask({'op': 'hold_many', 'user': 'u', 'request': 'b1',
               'items': [{'event': 'stage', 'qty': 3, 'allocation': 'club'}, {'event': 'balcony', 'qty': 1}]})
    check(r.get('error') == 'user_limit', 'a cart item over the block\'s max_per_user: user_limit', r)
    check(ok(c, op='digest')['digest'] == before['digest'], 'cart over the block\'s max_per_user: nothing changed')
    r = ok(c, op='hold_many', user='u', request='b2',
           items=[{'event': 'stage', 'qty': 2, 'allocation': 'club'}, {'event': 'balcony', 'qty': 6}])
    check(r.get('status') == 'held' and len(r.get('holds', [])) == 2, 'a cart with a block item: held', r)
    v = ok(c, op='event', event='stage')
    check(v['allocations']['club'] == {'qty': 3, 'remaining': 1, 'held': 2, 'confirmed': 0} and v['available'] == 7,
          'the block item took from its block, not the free shards', v)
    before = ok(c, op='digest')
    r = ok(c, op='hold_many', user='w', request='b3',
           items=[{'event': 'balcony', 'qty': 1}, {'event': 'stage', 'qty': 2, 'allocation': 'club'}])
    check(r.get('status') == 'sold_out' and r.get('remaining') == 1, 'a cart item over the block\'s remaining', r)
    check(ok(c, op='digest')['digest'] == before['digest'], 'a cart sold out on its block item: nothing changed')
    r = ok(c, op='hold_many', user='w', request='b4',
           items=[{'event': 'balcony', 'qty': 1}, {'event': 'stage', 'qty': 1, 'allocation': 'club'}])
    check(len(r.get('holds', [])) == 2, 'the block\'s last unit in a cart', r)
    v = ok(c, op='event', event='expo')
    check(v['available'] == 0 and v['allocated'] == 0 and v['held'] == 10, 'the venue counts the cart', v)
    clean(c, 'cart blocks')
    c.close()


def block_waitlist(port):
    """waitlist_join with "allocation" (docs/protocol.md, "Allocations"): held at once from the
    block when it has the units; otherwise it waits, and is offered a hold from the block when
    the block's units come back (a release) or allocate adds to it; an unknown block is
    invalid_argument with nothing changed; deallocate makes its entries wait for free units."""
    c = Conn(port)
    ok(c, op='create_event', event='club', capacity=10, waitlist_max=10)
    ok(c, op='allocate', event='club', allocation='fans', qty=2)
    before = ok(c, op='digest')
    r = c.ask({'op': 'waitlist_join', 'event': 'club', 'user': 'x', 'request': 'j', 'qty': 1, 'allocation': 'nosuch'})
    check(r.get('error') == 'invalid_argument' and 'allocation' in r.get('message', ''),
          'a join from an unknown block: invalid_argument naming allocation', r)
    check(ok(c, op='digest')['digest'] == before['digest'], 'a join from an unknown block: nothing changed')
    r = ok(c, op='waitlist_join', event='club', user='a', request='j', qty=2, allocation='fans')
    check(r.get('status') == 'held', 'a join the block can meet: held', r)
    first = r['hold']
    r = ok(c, op='waitlist_join', event='club', user='b', request='j', qty=1, allocation='fans')
    check(r.get('status') == 'waiting' and r.get('position') == 1, 'the block is empty: the join waits', r)
    v = ok(c, op='event', event='club')
    check(v['available'] == 8 and v['allocations']['fans']['remaining'] == 0,
          'a block\'s waiter does not take the free units', v)
    ok(c, op='release', event='club', hold=first, user='a', request='r')
    r = ok(c, op='waitlist', event='club', user='b', request='j')
    check(r.get('status') == 'offered' and r.get('hold_status') == 'held', 'the released block units: offered to b', r)
    v = ok(c, op='event', event='club')
    fans = v['allocations']['fans']
    check(fans['held'] == 1 and fans['remaining'] == 1 and v['available'] == 8,
          'the offer came from the block, the free units untouched', v)
    r = ok(c, op='waitlist_join', event='club', user='d', request='j', qty=2, allocation='fans')
    check(r.get('status') == 'waiting', 'd waits for 2 of the block (1 left)', r)
    r = ok(c, op='allocate', event='club', allocation='fans', qty=1)
    check(r.get('remaining') == 0, 'allocate adds to the block and serves d: nothing left', r)
    r = ok(c, op='waitlist', event='club', user='d', request='j')
    check(r.get('status') == 'offered', 'allocate served the block\'s waiter', r)
    r = ok(c, op='waitlist_join', event='club', user='e', request='j', qty=1, allocation='fans')
    check(r.get('status') == 'waiting', 'e waits on the empty block', r)
    ok(c, op='deallocate', event='club', allocation='fans')
    r = ok(c, op='waitlist', event='club', user='e', request='j')
    check(r.get('status') == 'offered', 'the block removed: its waiter is served from the free units', r)
    clean(c, 'block waitlists')
    c.close()


def post(port, op, body):
    h = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
    h.request('POST', '/v1/' + op, body=json.dumps(body).encode(), headers={'Content-Type': 'application/json'})
    r = h.getresponse()
    out = (r.status, r.read())
    h.close()
    return out


def over_http(srv):
    c = Conn(srv.port)
    st, body = post(srv.http_port, 'create_event', {'event': 'web', 'capacity': 2})
    check(st == 200, 'HTTP create_event of a root', body)
    st, body = post(srv.http_port, 'create_event', {'event': 'webkid', 'capacity': 5, 'parent': 'web'})
    v = json.loads(body)
    check(st == 200 and v.get('parent') == 'web' and v.get('effective_available') == 2,
          'HTTP create_event with parent: the child\'s view', body)
    st, body = post(srv.http_port, 'create_event', {'event': 'webx', 'capacity': 5, 'parent': 'nosuch'})
    check(st == 404 and json.loads(body).get('error') == 'unknown_event', 'HTTP an unknown parent: 404', body)
    st, body = post(srv.http_port, 'hold', {'event': 'webkid', 'user': 'h', 'request': 'k', 'qty': 3})
    r = json.loads(body)
    check(st == 200 and r.get('status') == 'sold_out' and r.get('short') == 'web' and r.get('available') == 2,
          'HTTP a child\'s sold_out names short', body)
    st, body = post(srv.http_port, 'event', {'event': 'webkid'})
    want = c.ask_raw({'op': 'event', 'event': 'webkid'})
    check(st == 200 and body == want, 'HTTP the child\'s view is the TCP body', (body, want))
    c.close()


def restart(binary, data, srv):
    c = Conn(srv.port)
    before = {e: ok(c, op='event', event=e) for e in ('venue', 'area0', 'fest', 'week')}
    c.close()
    check(srv.stop() == 0, 'slotd stops cleanly')
    srv2 = Server(binary, data, http=True)
    c = Conn(srv2.port)
    for e, v in before.items():
        a = ok(c, op='event', event=e)
        check((a['held'], a['confirmed'], a['available'], a.get('effective_available')) ==
              (v['held'], v['confirmed'], v['available'], v.get('effective_available')),
              'a restart keeps %s\'s family counts' % e, (v, a))
    clean(c, 'a restart')
    c.close()
    srv2.stop()


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: test_types.py SLOTD')
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        try:
            data = os.path.join(tmp, 'data')
            srv = Server(binary, data, http=True, stderr_path=os.path.join(tmp, 'stderr'))
            c = Conn(srv.port)
            r = ok(c, op='hello')
            require('types' in r.get('features', []) and 'allocations' in r.get('features', []),
                    'hello lists types and allocations', r)
            c.close()
            race(srv.port)
            bad_input(srv.port)
            rules(srv.port)
            feed(srv.port)
            allocations(srv.port)
            cart_blocks(srv.port)
            block_waitlist(srv.port)
            over_http(srv)
            restart(binary, data, srv)
        finally:
            stop_all()
    finish()


if __name__ == '__main__':
    main()
