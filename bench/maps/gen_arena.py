#!/usr/bin/env python3
"""gen_arena.py — writes bench/maps/arena.json, the seat map of slot-bench's
seated measurements (docs/protocol.md, "Seated events", create_event's
"seats" format): 40 sections S101..S140 of 20 rows each; row r has
20 + (r-1)//2 seats, one more from row 11 on, so every section has 500 and
the arena 20,000. Sections 1-16 are "lower", 17-40 "upper".

    gen_arena.py [OUT]    (default: arena.json beside this script)
Deterministic: the same file every time.
"""
import json
import os
import sys


def arena():
    sections = []
    for s in range(40):
        rows = []
        for r in range(1, 21):
            rows.append({'name': str(r), 'from': 1, 'to': 20 + (r - 1) // 2 + (r > 10),
                         'category': 'lower' if s < 16 else 'upper'})
        sections.append({'name': 'S%d' % (101 + s), 'rows': rows})
    return {'sections': sections}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), 'arena.json')
    m = arena()
    seats = sum(r['to'] - r['from'] + 1 for s in m['sections'] for r in s['rows'])
    assert seats == 20000, seats
    with open(out, 'w') as f:
        json.dump(m, f, separators=(',', ':'))
        f.write('\n')


if __name__ == '__main__':
    main()
