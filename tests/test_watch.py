#!/usr/bin/env python3
"""test_watch.py — `slotctl watch` on a pseudo-terminal against a real slotd.

    test_watch.py SLOTD SLOTCTL

Starts slotd on 127.0.0.1:0 with a temporary data folder, creates an event
and takes some holds (over the protocol), then drives `slotctl watch EVENT`
on a pty (Python's pty module): frames appear, show the event's units left,
and `q` ends it with exit 0 and the cursor shown again; Ctrl-C ends it the
same way; `--once` (no terminal) prints one frame; when slotd is stopped
under a running watch it says the server went away and exits 2. slotd is
stopped by its PID.
"""
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from slotd_kit import Server, call, require, stop_all

SLOTD, SLOTCTL = sys.argv[1], sys.argv[2]
WAIT_S = 20


def spawn_pty(argv):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ['TERM'] = 'xterm'
        os.execv(argv[0], argv)
    return pid, fd


def read_until(fd, pattern, timeout=WAIT_S):
    """What the pty printed until `pattern` (a regex) matched; fails on timeout or EOF."""
    out, end = b'', time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if not r:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the pty
            break
        if not chunk:
            break
        out += chunk
        if re.search(pattern, out.decode(errors='replace')):
            return out.decode(errors='replace')
    sys.exit('FAIL: no %r within %d s; got:\n%s' % (pattern, timeout, out.decode(errors='replace')))


def drain(fd):
    out = b''
    while True:
        r, _, _ = select.select([fd], [], [], 0.2)
        if not r:
            return out.decode(errors='replace')
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return out.decode(errors='replace')
        if not chunk:
            return out.decode(errors='replace')
        out += chunk


def wait_child(pid, timeout=WAIT_S):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    sys.exit('FAIL: slotctl watch did not exit within %d s' % timeout)


def main():
    tmp = tempfile.mkdtemp(prefix='slot-watch-')
    try:
        p = Server(SLOTD, os.path.join(tmp, 'data'))
        port = p.port
        host = '127.0.0.1:%d' % port
        holds = [{'op': 'hold', 'event': 'w', 'user': 'u%d' % i, 'request': 'r%d' % i, 'qty': 3} for i in range(10)]
        r = call(port, [{'op': 'create_event', 'event': 'w', 'capacity': 1000}] + holds, WAIT_S)
        require(all(x.get('ok') for x in r), 'event w created and 10 holds of 3 taken', r)

        # On a terminal: frames with the units left (1000 - 30), then q.
        pid, fd = spawn_pty([SLOTCTL, '--host', host, 'watch', 'w', '--interval', '200'])
        out = read_until(fd, r'units left\s+970 / 1000(?:.|\n)*?connections')
        require('holds/s' in out and 'p99' in out and 'connections' in out, 'the frame has rates, latency, connections', out)
        call(port, [{'op': 'hold', 'event': 'w', 'user': 'x', 'request': 'x', 'qty': 5}], WAIT_S)
        out = read_until(fd, r'units left\s+965 / 1000')
        require(out.count('\x1b[H\x1b[2J') >= 1, 'frames are redrawn in place', out)
        os.write(fd, b'q')
        rc = wait_child(pid)
        rest = drain(fd)
        os.close(fd)
        require(rc == 0, 'q ends watch with exit 0', 'exit %s' % rc)
        require('\x1b[?25h' in out + rest, 'the cursor is shown again on the way out', rest)

        # Ctrl-C (the pty's line discipline sends SIGINT) ends it the same way.
        pid, fd = spawn_pty([SLOTCTL, '--host', host, 'watch', 'w', '--interval', '200'])
        read_until(fd, r'units left')
        os.write(fd, b'\x03')
        rc = wait_child(pid)
        rest = drain(fd)
        os.close(fd)
        require(rc == 0, 'Ctrl-C ends watch with exit 0', 'exit %s' % rc)
        require('\x1b[?25h' in rest, 'the terminal is restored after Ctrl-C', rest)

        # --once, no terminal: one frame, for scripts.
        cp = subprocess.run([SLOTCTL, '--host', host, 'watch', 'w', '--once', '--interval', '100'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=WAIT_S)
        require(cp.returncode == 0, 'watch --once exits 0', cp.stderr)
        require(re.search(r'units left\s+965 / 1000', cp.stdout) is not None and cp.stdout.count('holds/s') == 1,
              'watch --once prints one frame with the units left', cp.stdout)
        require('\x1b[' not in cp.stdout, 'watch --once writes no terminal escapes', repr(cp.stdout))
        # An event with a waiting room: its counts in the frame (docs/protocol.md, "Admission").
        import time
        joins = [{'op': 'join', 'event': 'wr', 'user': 'j%d' % i, 'request': 'j'} for i in range(7)]
        r = call(port, [{'op': 'create_event', 'event': 'wr', 'capacity': 100, 'admission': 'queue',
                         'admit_per_s': 5, 'opens_at': int(time.time() * 1000) + 3600000}] + joins, WAIT_S)
        require(all(x.get('ok') for x in r), 'event wr with a room and 7 joins', r)
        cp = subprocess.run([SLOTCTL, '--host', host, 'watch', 'wr', '--once', '--interval', '100'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=WAIT_S)
        require(cp.returncode == 0 and re.search(r'room \(queue, 5/s\)\s+joined 7\s+waiting 7\s+admitted 0\s+open grants 0',
                                                 cp.stdout) is not None and 'admissions/s' in cp.stdout,
                'watch shows the room: mode, rate, joined, waiting, admitted, open grants', cp.stdout)
        # A seated event: its rows' seats in the frame (docs/protocol.md, "Seated events").
        house = {'sections': [{'name': 'A', 'rows': [{'name': '1', 'from': 1, 'to': 6}]}]}
        r = call(port, [{'op': 'create_event', 'event': 'ws', 'seats': house},
                        {'op': 'hold', 'event': 'ws', 'user': 'u', 'request': 'r', 'seats': ['A-1-2', 'A-1-3']}], WAIT_S)
        require(all(x.get('ok') for x in r), 'seated event ws with a hold of 2 seats', r)
        cp = subprocess.run([SLOTCTL, '--host', host, 'watch', 'ws', '--once', '--interval', '100'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=WAIT_S)
        require(cp.returncode == 0 and re.search(r'A-1\s+\.hh\.\.\.', cp.stdout) is not None,
                'watch shows a seated event\'s rows', cp.stdout)
        cp = subprocess.run([SLOTCTL, '--host', host, 'watch', 'nosuch', '--once'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=WAIT_S)
        require(cp.returncode == 1 and 'unknown_event' in cp.stderr, 'an unknown event: exit 1, unknown_event', cp.stderr)
        cp = subprocess.run([SLOTCTL, '--host', host, 'watch', '--interval', '5'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=WAIT_S)
        require(cp.returncode == 64, '--interval out of range: exit 64', cp.stderr)

        # The server goes away under a running watch: a message, exit 2, terminal restored.
        pid, fd = spawn_pty([SLOTCTL, '--host', host, 'watch', 'w', '--interval', '200'])
        read_until(fd, r'units left')
        p.stop(WAIT_S)
        out = read_until(fd, r'went away')
        rc = wait_child(pid)
        rest = drain(fd)
        os.close(fd)
        require(rc == 2, 'watch exits 2 when the server goes away', 'exit %s\n%s' % (rc, out + rest))
        require('\x1b[?25h' in out + rest, 'the terminal is restored when the server goes away', out + rest)
    finally:
        stop_all()
        shutil.rmtree(tmp, ignore_errors=True)


main()
