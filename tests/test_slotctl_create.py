#!/usr/bin/env python3
"""test_slotctl_create.py — `slotctl create` with the v1.2 settings of
create_event (docs/protocol.md, "Version 1.2") and `slotctl show` of a
ticket type, against a real slotd.

    test_slotctl_create.py SLOTD SLOTCTL

1. --parent: a child of a root and of that child are created (exit 0); show
   prints the child's parent and effective_available, the parent's
   children; the server's view has the parent.
2. Refused by the server, exit 1, its code on stderr, nothing created (the
   event is unknown afterwards and the store's digest is unchanged): an
   unknown parent (unknown_event), a 4th level (invalid_argument).
3. Usage errors, exit 64 with a message naming the option, nothing sent (the
   digest and the count of create_event requests are unchanged): bad
   --parent names, values out of range for every new number option, an
   unknown --admission mode, room settings without a room, --seats with a
   missing, non-JSON or wrong-shaped file, no --capacity without --seats.
4. The other v1.2 settings reach the server: client limits and a waiting
   room show in its view (and in show's output); --seats FILE makes a seated
   event whose capacity is the seat count; the same create again is a
   replay (exit 0), other settings event_exists (exit 1).
5. slotctl seats: the rows' states and the category counts; --svg draws one
   square per seat in map order coloured by state; an unknown event exits 1,
   no EVENT 64.
The server listens on 127.0.0.1:0 in a temporary folder and is stopped by PID.
"""
import json
import os
import subprocess
import sys
import tempfile

from slotd_kit import Conn, Server, check, finish, require, stop_all

SLOTD, SLOTCTL = sys.argv[1], sys.argv[2]


def ctl(port, *args):
    """slotctl --port PORT ARGS...: (exit status, stdout, stderr)."""
    p = subprocess.run([SLOTCTL, '--port', str(port), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def view_lines(out):
    """show's table as {name: rest of the line} (first column, then the value)."""
    rows = {}
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0] not in rows:
            rows[parts[0]] = parts[1]
    return rows


def digest(c):
    r = c.ask({'op': 'digest'})
    require(r.get('ok') is True, 'digest', r)
    return r['digest']


def create_requests(c):
    r = c.ask({'op': 'stats'})
    require(r.get('ok') is True, 'stats', r)
    return r['requests']['create_event']


def parents(port, c):
    rc, out, err = ctl(port, 'create', 'venue', '--capacity', '100', '--shards', '4', '--max-per-request', '100')
    require(rc == 0, 'create venue (a root)', err)
    rc, out, err = ctl(port, 'create', 'stalls', '--capacity', '60', '--parent', 'venue')
    require(rc == 0, 'create stalls --parent venue: exit 0', err)
    rows = view_lines(out)
    check(rows.get('parent') == 'venue', "create's view names the parent", out)
    rc, out, err = ctl(port, 'create', 'stalls-a', '--capacity', '20', '--parent', 'stalls')
    require(rc == 0, 'create stalls-a --parent stalls (the 3rd level): exit 0', err)
    r = c.ask({'op': 'hold', 'event': 'venue', 'user': 'ann', 'request': 'r1', 'qty': 90})
    require(r.get('status') == 'held', 'hold 90 of the venue directly', r)
    rc, out, err = ctl(port, 'show', 'stalls')
    require(rc == 0, 'show stalls: exit 0', err)
    rows = view_lines(out)
    check(rows.get('parent') == 'venue', 'show of a child prints its parent', out)
    check(rows.get('effective_available', '').split()[:1] == ['10'],
          'show of a child prints effective_available (the venue has 10 left)', out)
    check(rows.get('available') == '60', "the child's own available is its own", out)
    check(rows.get('children') == '1', 'show of a parent prints its children', out)
    rc, out, err = ctl(port, 'show', 'venue')
    rows = view_lines(out)
    check(rc == 0 and 'parent' not in rows and rows.get('children') == '1', 'a root has children, no parent', out)
    v = c.ask({'op': 'event', 'event': 'stalls-a'})
    check(v.get('parent') == 'stalls', "the server's view of stalls-a has parent stalls", v)


def refused(port, c):
    before = digest(c)
    cases = [
        (['create', 'orphan', '--capacity', '5', '--parent', 'nosuch'], 'orphan', 'unknown_event'),
        (['create', 'level4', '--capacity', '5', '--parent', 'stalls-a'], 'level4', 'invalid_argument'),
        (['create', 'self', '--capacity', '5', '--parent', 'self'], 'self', None),
    ]
    for args, event, code in cases:
        rc, out, err = ctl(port, *args)
        check(rc == 1, '%s: exit 1 (got %d)' % (' '.join(args), rc), err)
        if code:
            check(('create: %s: parent' % code) in err, '%s: stderr names %s and the field' % (event, code), err)
        check(out == '', '%s: nothing printed on stdout' % event, out)
        v = c.ask({'op': 'event', 'event': event})
        check(v.get('error') == 'unknown_event', '%s was not created' % event, v)
    check(digest(c) == before, 'the refused creates changed nothing (digest)')


def usage_errors(port, c, tmp):
    seats_missing = os.path.join(tmp, 'missing.json')
    not_json = os.path.join(tmp, 'not.json')
    with open(not_json, 'w') as f:
        f.write('{"sections": [')
    wrong_shape = os.path.join(tmp, 'list.json')
    with open(wrong_shape, 'w') as f:
        f.write('[1, 2]')
    cases = [
        (['--parent', 'a b'], '--parent'),
        (['--parent', ''], '--parent'),
        (['--parent', 'x' * 65], '--parent'),
        (['--client-rate', '1000001'], '--client-rate'),
        (['--client-rate', '-1'], '--client-rate'),
        (['--max-active-per-client', '1099511627777'], '--max-active-per-client'),
        (['--max-active-per-client', '3x'], '--max-active-per-client'),
        (['--admission', 'fifo'], '--admission'),
        (['--admission', 'queue', '--admit-per-s', '0'], '--admit-per-s'),
        (['--admission', 'queue', '--admit-per-s', '1000001'], '--admit-per-s'),
        (['--admission', 'lottery', '--grant-ttl-ms', '999'], '--grant-ttl-ms'),
        (['--admission', 'queue', '--queue-opens-at', 'soon'], '--queue-opens-at'),
        (['--admit-per-s', '5'], '--admission'),
        (['--admission', 'none', '--grant-ttl-ms', '5000'], '--admission'),
        (['--seats', seats_missing], '--seats'),
        (['--seats', not_json], '--seats'),
        (['--seats', wrong_shape], '--seats'),
    ]
    before, creates = digest(c), create_requests(c)
    for extra, option in cases:
        rc, out, err = ctl(port, 'create', 'bad', '--capacity', '5', *extra)
        check(rc == 64, 'create %s: exit 64 (got %d)' % (' '.join(extra)[:60], rc), err)
        check(option in err and err.startswith('slotctl: create: '),
              'create %s: the message names %s' % (' '.join(extra)[:60], option), err)
    rc, out, err = ctl(port, 'create', 'bad', '--parent', 'venue')
    check(rc == 64 and '--capacity is required' in err, 'no --capacity (and no --seats): exit 64', err)
    check(create_requests(c) == creates, 'no usage error sent a create_event')
    check(digest(c) == before, 'the usage errors changed nothing (digest)')
    v = c.ask({'op': 'event', 'event': 'bad'})
    check(v.get('error') == 'unknown_event', 'no event "bad" was created', v)


def other_settings(port, c, tmp):
    args = ['create', 'limited', '--capacity', '40', '--max-active-per-client', '3', '--client-rate', '5',
            '--admission', 'queue', '--admit-per-s', '7', '--grant-ttl-ms', '5000', '--queue-opens-at', '0']
    rc, out, err = ctl(port, *args)
    require(rc == 0, 'create with client limits and a queue: exit 0', err)
    rows = view_lines(out)
    check(rows.get('max_active_per_client', '').startswith('3 '), 'the view prints max_active_per_client', out)
    check(rows.get('client_rate', '').startswith('5 '), 'the view prints client_rate', out)
    check(rows.get('admission', '').startswith('queue (admit_per_s 7, grant_ttl_ms 5000'), 'the view prints the room',
          out)
    v = c.ask({'op': 'event', 'event': 'limited'})
    check(v.get('max_active_per_client') == 3 and v.get('client_rate') == 5, 'the server has the client limits', v)
    check(v.get('admission') == 'queue' and v.get('admit_per_s') == 7 and v.get('grant_ttl_ms') == 5000,
          'the server has the room', v)
    rc, out, err = ctl(port, *args)
    check(rc == 0 and view_lines(out).get('replay', '').startswith('yes'), 'the same create again: a replay', err)
    rc, out, err = ctl(port, *(args[:-2] + ['--queue-opens-at', '+1h']))
    check(rc == 1 and 'event_exists' in err, 'other room settings: event_exists, exit 1', err)
    seats = os.path.join(tmp, 'seats.json')
    with open(seats, 'w') as f:
        json.dump({'sections': [{'name': 'A', 'rows': [{'name': '1', 'from': 1, 'to': 8, 'category': 'front'},
                                                      {'name': '2', 'from': 1, 'to': 5}]}]}, f)
    rc, out, err = ctl(port, 'create', 'hall', '--seats', seats, '--shards', '2')
    require(rc == 0, 'create --seats FILE (no --capacity): exit 0', err)
    rows = view_lines(out)
    check(rows.get('capacity') == '13', 'a seated event: capacity is the seat count', out)
    check(rows.get('category', '').startswith('front: capacity 8'), 'the view prints the category', out)
    rc, out, err = ctl(port, 'create', 'hall2', '--seats', seats, '--capacity', '12')
    check(rc == 1 and 'invalid_argument' in err, '--capacity other than the seat count: the server refuses', err)


def seats_picture(port, c, tmp):
    """slotctl seats EVENT prints the seat_map rows and the categories; --svg FILE draws one
    square per seat coloured by its state; an unseated event exits 1."""
    house = {'sections': [{'name': 'A', 'rows': [{'name': '1', 'from': 1, 'to': 5, 'category': 'st'},
                                                 {'name': '2', 'from': 1, 'to': 4, 'category': 'st'}]}]}
    r = c.ask({'op': 'create_event', 'event': 'pic', 'seats': house})
    require(r.get('ok') is True, 'a seated event', r)
    h = c.ask({'op': 'hold', 'event': 'pic', 'user': 'u', 'request': 'r', 'seats': ['A-1-2', 'A-1-3']})
    require(h.get('status') == 'held', 'a hold of A-1-2 and A-1-3', h)
    r = c.ask({'op': 'confirm', 'event': 'pic', 'user': 'u', 'hold': h['hold'], 'request': 'c', 'seats': ['A-1-3']})
    require(r.get('status') == 'confirmed', 'A-1-3 confirmed, A-1-2 back', r)
    h = c.ask({'op': 'hold', 'event': 'pic', 'user': 'v', 'request': 'r', 'seats': ['A-2-4']})
    require(h.get('status') == 'held', 'a hold of A-2-4', h)
    rc, out, err = ctl(port, 'seats', 'pic')
    lines = out.splitlines()
    check(rc == 0 and 'A-1              ..c..' in lines and 'A-2              ...h' in lines,
          'slotctl seats prints each row\'s states', out + err)
    check(any(l.startswith('category st') and 'capacity 9' in l and 'held 1' in l and 'confirmed 1' in l
              for l in lines), 'slotctl seats prints the category counts', out)
    svg = os.path.join(tmp, 'pic.svg')
    rc, out, err = ctl(port, 'seats', 'pic', '--svg', svg)
    check(rc == 0, 'slotctl seats --svg exits 0', err)
    import xml.etree.ElementTree as ET
    root = ET.parse(svg).getroot()
    seats = [e.get('fill') for e in root.iter('{http://www.w3.org/2000/svg}rect')
             if e.get('rx') == '2']  # the seats' squares (the legend's have no rx)
    want = ['#43a047', '#43a047', '#c62828', '#43a047', '#43a047', '#43a047', '#43a047', '#43a047', '#fb8c00']
    check(seats == want, 'the SVG has one square per seat, coloured by state, in map order', seats)
    rc, out, err = ctl(port, 'seats', 'nosuch-seats')
    check(rc == 1 and 'unknown_event' in err, 'slotctl seats of an unknown event: exit 1', err)
    rc, out, err = ctl(port, 'seats')
    check(rc == 64, 'slotctl seats without EVENT: exit 64', err)


def main():
    tmp = tempfile.mkdtemp(prefix='slotctl-create-')
    srv = Server(SLOTD, os.path.join(tmp, 'data'))
    try:
        c = Conn(srv.port)
        parents(srv.port, c)
        refused(srv.port, c)
        usage_errors(srv.port, c, tmp)
        other_settings(srv.port, c, tmp)
        seats_picture(srv.port, c, tmp)
        r = c.ask({'op': 'check'})
        check(r.get('ok') and r.get('violations') == [], 'check clean at the end', r)
        c.close()
        check(srv.stop() == 0, 'slotd stopped cleanly')
    finally:
        stop_all()
        subprocess.run(['rm', '-rf', tmp])
    finish()


if __name__ == '__main__':
    main()
