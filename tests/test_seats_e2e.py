#!/usr/bin/env python3
"""test_seats_e2e.py — seated events on a real slotd, through the loop
(docs/protocol.md, "Seated events"): what tests/test_seats.c cannot see, since
it drives the allocator without the server.

    test_seats_e2e.py SLOTD

1. The answers of a sold-out seated event come from the write path, not from
   the loop's sold-out read path (which knows only counts): a named hold of a
   seat that is not free is "taken" listing it, also when no seat is free at
   all (it once came back "sold_out" from the read path), and an adjacent
   hold's sold_out carries max_adjacent.
2. Race: 64 connections ask at once for the same 2 seats: exactly one gets
   them, every other answer is "taken" naming both; check is clean.
3. allocate on a seated event is invalid_argument, nothing changed, check
   clean (it once took the units from the shards' counts, not the seats).
4. The feed: a seated hold's entries carry its seats (after a partial
   confirm, the kept ones); a plain hold's carry none.
The server listens on 127.0.0.1:0 in a temporary folder and is stopped by PID.
"""
import os
import sys
import tempfile
import threading

from slotd_kit import Conn, Server, check, finish, require, stop_all

RACERS = 64


def house(c, name, seats_in_row):
    r = c.ask({'op': 'create_event', 'event': name,
               'seats': {'sections': [{'name': 'A', 'rows': [{'name': '1', 'from': 1, 'to': seats_in_row}]}]}})
    require(r.get('ok') is True, 'create_event with seats', r)


def sold_out_answers(port):
    c = Conn(port)
    house(c, 'full', 2)
    r = c.ask({'op': 'hold', 'event': 'full', 'user': 'u', 'request': 'r1', 'seats': ['A-1-1', 'A-1-2']})
    require(r.get('status') == 'held', 'the whole house held', r)
    for i in range(3):  # the read path would answer the second and later
        r = c.ask({'op': 'hold', 'event': 'full', 'user': 'v', 'request': f'n{i}', 'seats': ['A-1-2']})
        check(r.get('status') == 'taken' and r.get('taken') == ['A-1-2'],
              'a named hold on a sold-out seated event is taken, naming the seat', r)
    for i in range(2):
        r = c.ask({'op': 'hold', 'event': 'full', 'user': 'v', 'request': f'a{i}', 'qty': 1, 'adjacent': True})
        check(r.get('status') == 'sold_out' and r.get('max_adjacent') == 0 and r.get('available') == 0,
              'an adjacent hold on a sold-out seated event is sold_out with max_adjacent', r)
    c.close()


def race(port):
    c = Conn(port)
    house(c, 'race', 10)
    c.close()
    conns = [Conn(port) for _ in range(RACERS)]
    answers = [None] * RACERS
    go = threading.Barrier(RACERS)

    def racer(i):
        go.wait()
        answers[i] = conns[i].ask({'op': 'hold', 'event': 'race', 'user': f'u{i}', 'request': f'r{i}',
                                   'seats': ['A-1-4', 'A-1-5']})

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(RACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    held = [a for a in answers if a and a.get('status') == 'held']
    taken = [a for a in answers if a and a.get('status') == 'taken']
    check(len(held) == 1, 'exactly one of 64 racers holds the 2 seats', [a for a in answers if a not in taken])
    check(len(taken) == RACERS - 1 and all(sorted(a.get('taken', [])) == ['A-1-4', 'A-1-5'] for a in taken),
          'every other racer is told both seats are taken', taken[:2])
    if held:
        check(held[0].get('seats') == ['A-1-4', 'A-1-5'], 'the winner holds the very seats', held[0])
    r = conns[0].ask({'op': 'check', 'event': 'race'})
    check(r.get('ok') is True and not r.get('violations'), 'check is clean after the race', r)
    for c in conns:
        c.close()


def no_seat_blocks(port):
    """allocate on a seated event is refused with nothing changed: its units would leave the
    shards' counts while every seat stayed free (check found the shards and rows disagreeing)."""
    c = Conn(port)
    house(c, 'blk', 6)
    before = c.ask({'op': 'digest'})
    r = c.ask({'op': 'allocate', 'event': 'blk', 'allocation': 'p', 'qty': 2})
    check(r.get('error') == 'invalid_argument' and 'seated' in r.get('message', ''),
          'allocate on a seated event: invalid_argument', r)
    check(c.ask({'op': 'digest'}).get('digest') == before.get('digest'), 'a refused allocate changed nothing')
    r = c.ask({'op': 'check'})
    check(r.get('ok') is True and not r.get('violations'), 'check is clean after the refused allocate', r)
    c.close()


def feed_seats(port):
    """Feed entries of a seated hold carry its seats (docs/protocol.md, "Seated events"): the
    held hold's, and after a partial confirm the kept ones; an unseated event's carry none."""
    c = Conn(port)
    house(c, 'fs', 6)
    h = c.ask({'op': 'hold', 'event': 'fs', 'user': 'u', 'request': 'r', 'seats': ['A-1-2', 'A-1-3']})
    require(h.get('status') == 'held', 'a named hold', h)
    r = c.ask({'op': 'confirm', 'event': 'fs', 'user': 'u', 'hold': h['hold'], 'request': 'c', 'seats': ['A-1-3']})
    require(r.get('status') == 'confirmed', 'a partial confirm keeping A-1-3', r)
    r = c.ask({'op': 'create_event', 'event': 'fp', 'capacity': 5})
    require(r.get('ok') is True, 'an unseated event', r)
    p = c.ask({'op': 'hold', 'event': 'fp', 'user': 'u', 'request': 'r', 'qty': 1})
    require(p.get('status') == 'held', 'a plain hold', p)
    sub = Conn(port)
    r = sub.ask({'op': 'subscribe', 'consumer': 'seats-test', 'from': 'start'})
    require(r.get('ok') is True, 'subscribe', r)
    entries = {}
    for _ in range(int(r['head'] - r['from'] + 1)):
        e = sub.line()
        entries.setdefault((e.get('type'), e.get('hold')), e)
    held = entries.get(('hold.held', h['hold']), {})
    check(held.get('seats') == ['A-1-2', 'A-1-3'], 'hold.held carries the hold\'s seats', held)
    conf = entries.get(('hold.confirmed', h['hold']), {})
    check(conf.get('seats') == ['A-1-3'] and conf.get('returned') == 1, 'hold.confirmed carries the kept seats', conf)
    plain = entries.get(('hold.held', p['hold']), {})
    check(plain and 'seats' not in plain, 'a plain hold\'s entry has no seats', plain)
    sub.close()
    c.close()


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: test_seats_e2e.py SLOTD')
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        try:
            srv = Server(binary, os.path.join(tmp, 'data'), stderr_path=os.path.join(tmp, 'stderr'))
            c = Conn(srv.port)
            r = c.ask({'op': 'hello'})
            require('seats' in r.get('features', []), 'hello lists seats', r)
            c.close()
            sold_out_answers(srv.port)
            race(srv.port)
            no_seat_blocks(srv.port)
            feed_seats(srv.port)
        finally:
            stop_all()
    finish()


if __name__ == '__main__':
    main()
