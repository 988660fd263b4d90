#!/usr/bin/env python3
"""scdoc_man.py SCDOC IN OUT: render the scdoc page IN to the man(7) page OUT.

scdoc(1) opens every block with a paragraph macro (.P), also right after a
section heading and right before the end of an indented block, where it
does nothing; mandoc -Tlint reports each of those as a warning ("skipping
paragraph macro"). The page is otherwise scdoc's own output: this drops
only the paragraph macros that do nothing, so the pages lint clean (the
test tests/test_man.py runs mandoc -Tlint -W warning on them).
"""
import subprocess
import sys

# A paragraph break right after these, or right before these (or at the
# end), does nothing.
AFTER = ('.SH', '.SS', '.TH', '.P', '.RS')
BEFORE = ('.SH', '.SS', '.P', '.RE')


def tidy(text):
    lines = text.split('\n')
    # ".P" ".RE" (a break at the end of an indented block) becomes ".RE" ".P":
    # the same blank line, now between the block and what follows.
    for i in range(len(lines) - 1):
        if lines[i] == '.P' and lines[i + 1].startswith('.RE'):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
    out = []
    for i, line in enumerate(lines):
        if line == '.P':
            prev = next((l for l in reversed(out) if l.strip() and not l.startswith('.\\"')), '')
            nxt = next((l for l in lines[i + 1:] if l.strip()), '')
            if prev.startswith(AFTER) or not nxt or nxt.startswith(BEFORE):
                continue
        out.append(line)
    return '\n'.join(out)


def main():
    if len(sys.argv) != 4:
        sys.exit('usage: scdoc_man.py SCDOC IN OUT')
    scdoc, src, dst = sys.argv[1:]
    with open(src, 'rb') as f:
        page = subprocess.run([scdoc], stdin=f, stdout=subprocess.PIPE, check=True).stdout
    with open(dst, 'w', encoding='utf-8') as f:
        f.write(tidy(page.decode('utf-8')))


if __name__ == '__main__':
    main()
