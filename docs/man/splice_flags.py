#!/usr/bin/env python3
"""splice_flags.py SLOTD IN OUT: slotd(8)'s page IN with the line
@SLOTD_FLAGS@ replaced by `SLOTD --help-man`, the OPTIONS list that slotd
writes from its flag table (src/daemon/flags.c), into OUT. The page's flags
then cannot drift from the ones slotd reads (tests/test_man.py checks the
rendered page against --help as well).
"""
import subprocess
import sys

MARK = '@SLOTD_FLAGS@'


def main():
    if len(sys.argv) != 4:
        sys.exit('usage: splice_flags.py SLOTD IN OUT')
    slotd, src, dst = sys.argv[1:]
    flags = subprocess.run([slotd, '--help-man'], stdout=subprocess.PIPE, check=True, text=True).stdout
    with open(src, encoding='utf-8') as f:
        page = f.read()
    if page.count(MARK + '\n') != 1:
        sys.exit('%s: want one line %s' % (src, MARK))
    with open(dst, 'w', encoding='utf-8') as f:
        f.write(page.replace(MARK + '\n', flags))


if __name__ == '__main__':
    main()
