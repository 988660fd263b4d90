#!/usr/bin/env python3
"""test_man.py — the man pages (docs/man/*.scd, rendered by the build) lint
clean and say what the programs' --help says.

    test_man.py PROGRAM BINARY PAGE [PROGRAM BINARY PAGE ...]

For each program: `mandoc -Tlint -W warning PAGE` reports nothing; every
--flag in the program's --help (and, for slotctl and slot-bench, in each
command's or scenario's --help) appears in the page, and every --flag of the
page appears in some --help; a "Global options:" list (slotctl's) is on the
--help's usage line; slotctl's commands and slot-bench's scenarios
are the items of the page's COMMANDS / SCENARIOS section, no more, no less.
Exits 77 (skipped) without mandoc (Debian: mandoc).
"""
import re
import shutil
import subprocess
import sys

FLAG = re.compile(r'(?<![\w-])--[a-z][a-z0-9-]*')
# The --help section listing subcommands, and the page's section of them.
SUBCOMMANDS = {'slotctl': ('Commands:', 'COMMANDS'), 'slot-bench': ('Scenarios:', 'SCENARIOS')}

failures = []


def fail(msg):
    failures.append(msg)
    print('FAIL ' + msg)


def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def help_text(binary, *args):
    rc, out, err = run([binary, *args, '--help'])
    if rc != 0:
        fail('%s %s --help: exit %d: %s' % (binary, ' '.join(args), rc, err.strip()))
    return out


def help_subcommands(text, heading):
    """Names listed under `heading` in a --help text, up to the next blank line."""
    names, inside = [], False
    for line in text.splitlines():
        if line.strip() == heading or line.strip().endswith(heading):
            inside = True
            continue
        if inside:
            if not line.strip():
                break
            m = re.match(r'^  ([a-z][a-z-]*)\s{2,}\S', line)
            if m:
                names.append(m.group(1))
    return names


def render(page):
    """The page as a reader sees it (mandoc, wide enough that no line wraps)."""
    rc, out, err = run(['mandoc', '-T', 'utf8', '-O', 'width=1000', page])
    if rc != 0:
        fail('mandoc %s: exit %d: %s' % (page, rc, err.strip()))
    return re.sub('.\b', '', out)


def page_items(text, section):
    """The terms of the definition list in `section` of a rendered page: lines
    at the section's body indent followed by a more indented line."""
    lines = text.splitlines()
    items, inside = [], False
    for i, line in enumerate(lines):
        if re.match(r'^[A-Z][A-Z ]+$', line):
            inside = line.strip() == section
            continue
        if not inside or not re.match(r'^ {7}\S', line):
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ''
        if re.match(r'^ {8,}\S', nxt):
            items.append(line.split()[0])
    return items


def usage_names_global_options(program, top):
    """A --help with a "Global options:" list (slotctl's) names each of them,
    --help and --version aside, on its usage line."""
    lines = top.splitlines()
    if 'Global options:' not in lines:
        return
    usage = set(FLAG.findall(lines[0]))
    block = '\n'.join(lines[lines.index('Global options:') + 1:]).split('\n\n', 1)[0]
    for f in sorted(set(FLAG.findall(block)) - usage - {'--help', '--version'}):
        fail('%s --help: its usage line leaves out the global option %s' % (program, f))


def check(program, binary, page):
    rc, out, err = run(['mandoc', '-Tlint', '-W', 'warning', page])
    if rc != 0 or out.strip() or err.strip():
        fail('%s: mandoc -Tlint -W warning: exit %d\n%s%s' % (page, rc, out, err))
    text = render(page)
    top = help_text(binary)
    usage_names_global_options(program, top)
    helps = [top]
    if program in SUBCOMMANDS:
        heading, section = SUBCOMMANDS[program]
        subs = help_subcommands(top, heading)
        if not subs:
            fail('%s --help: no %s list' % (program, heading))
        for sub in subs:
            helps.append(help_text(binary, sub))
        in_page = page_items(text, section)
        for sub in subs:
            if sub not in in_page:
                fail('%s: "%s" of --help is not an item of the page\'s %s' % (page, sub, section))
        for sub in in_page:
            if sub not in subs:
                fail('%s: %s lists "%s", which --help does not' % (page, section, sub))
    help_flags = set(FLAG.findall('\n'.join(helps)))
    page_flags = set(FLAG.findall(text))
    for f in sorted(help_flags - page_flags):
        fail('%s: %s of %s --help is not in the page' % (page, f, program))
    for f in sorted(page_flags - help_flags):
        fail('%s: the page has %s, which no --help of %s has' % (page, f, program))
    print('%s: %d flags, checked against %s' % (program, len(help_flags), page))


def main():
    args = sys.argv[1:]
    if not args or len(args) % 3:
        sys.exit('usage: test_man.py PROGRAM BINARY PAGE [...]')
    if not shutil.which('mandoc'):
        print('skipped: mandoc is not installed (Debian: apt-get install mandoc)')
        sys.exit(77)
    for i in range(0, len(args), 3):
        check(*args[i:i + 3])
    print('%d failed' % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
