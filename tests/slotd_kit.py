"""slotd_kit.py — what the Python tests that run a real slotd share
(test_cold.py, test_http.py, test_sold_out.py, test_watch.py): a slotd on an
ephemeral loopback port with a data folder of the test's, its "listening on
HOST:PORT" line read for the port, NDJSON connections, a stop by PID, and
checks that are counted.

The tests import it as a sibling module: python runs a test by its path, so
sys.path[0] is this folder (tests/meson.build passes the scripts by path).
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile

LOOPBACK = '127.0.0.1'
STOP_TIMEOUT_S = 30  # a SIGTERM'd slotd that has not exited by then is killed

FAILURES = []  # the checks that failed, in order
STARTED = []   # every slotd started here, killed by PID (stop_all) when a test ends early


def check(cond, what, detail=''):
    """Counts a failed check and prints it at once ("FAIL: what", then detail
    when given); the run goes on. Returns cond."""
    if not cond:
        FAILURES.append(what)
        print('FAIL: ' + what + ('\n' + str(detail) if detail else ''), flush=True)
    return cond


def require(cond, what, detail=''):
    """A check the rest of the run depends on: a failure ends the run
    (exit 1, "FAIL: what" and detail); a pass prints "ok: what"."""
    if not cond:
        sys.exit('FAIL: %s\n%s' % (what, detail))
    print('ok: ' + what, flush=True)


def _port_of(line, prefix):
    """The port of a "PREFIX HOST:PORT" line; None when it is not one."""
    if not line.startswith(prefix):
        return None
    try:
        return int(line.rsplit(':', 1)[1])
    except ValueError:
        return None


class Server:
    """One slotd: BINARY --data DATA --listen 127.0.0.1:0 [--http 127.0.0.1:0]
    EXTRA..., started at once; port (and http_port with http) are read from
    its first stdout lines. stderr goes to stderr_path (a file kept), or to a
    temporary file; stderr_text() reads it back. env: variables added to this
    process's environment. Exits the test (sys.exit) when slotd does not
    announce its listeners."""

    def __init__(self, binary, data, extra=(), http=False, env=None, stderr_path=None):
        self.err = open(stderr_path, 'w+') if stderr_path else tempfile.TemporaryFile(mode='w+')
        argv = [binary, '--data', data, '--listen', LOOPBACK + ':0']
        dur = os.environ.get('SLOT_TEST_DURABILITY', '')
        if dur:  # the commit path under test (tests/harness.h); the test's own flags come later and win
            argv += ['--durability', dur]
        if http:
            argv += ['--http', LOOPBACK + ':0']
        argv += list(extra)
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.err, env=full_env, text=True)
        STARTED.append(self.proc)
        self.pid = self.proc.pid
        first = self.proc.stdout.readline()
        self.port = _port_of(first, 'listening on ')
        self.http_port = None
        second = ''
        if http:
            second = self.proc.stdout.readline()
            self.http_port = _port_of(second, 'http listening on ')
        if self.port is None or (http and self.http_port is None):
            self.kill()
            sys.exit('%s did not announce its listeners: %r %r' % (binary, first, second))

    def alive(self):
        return self.proc.poll() is None

    def signal(self, sig):
        """Sends sig to this slotd by its PID (while it runs)."""
        if self.alive():
            os.kill(self.pid, sig)

    def stop(self, timeout=STOP_TIMEOUT_S):
        """SIGTERM by PID, then its exit status; SIGKILL after timeout s (the
        status is then -9)."""
        self.signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return self.kill()

    def kill(self):
        """SIGKILL by PID and reap; the exit status."""
        self.signal(signal.SIGKILL)
        return self.proc.wait()

    def stderr_text(self):
        """What slotd wrote to stderr so far."""
        self.err.flush()
        self.err.seek(0)
        return self.err.read()


def stop_all():
    """Kills (by PID) and reaps every slotd started here that still runs: a
    test's finally, so a failed run leaves no daemon behind."""
    for proc in STARTED:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def finish():
    """Ends the run: exit 1 with the count when a check failed, else "ok"."""
    if FAILURES:
        print('%d failed' % len(FAILURES))
        sys.exit(1)
    print('ok')


class Conn:
    """One NDJSON connection to 127.0.0.1:port (timeout s per socket call)."""

    def __init__(self, port, timeout=30):
        self.sock = socket.create_connection((LOOPBACK, port), timeout=timeout)
        self.buf = b''

    def raw_line(self):
        """The next line as bytes, with its "\\n"; ConnectionError at EOF."""
        while b'\n' not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError('connection closed')
            self.buf += chunk
        line, self.buf = self.buf.split(b'\n', 1)
        return line + b'\n'

    def line(self):
        """The next line, parsed."""
        return json.loads(self.raw_line())

    def send(self, *objs):
        """Sends the requests (dicts) as one write, a compact JSON line each."""
        self.sock.sendall(b''.join(json.dumps(o, separators=(',', ':')).encode() + b'\n' for o in objs))

    def ask(self, obj):
        """One request and its reply, parsed."""
        self.send(obj)
        return self.line()

    def ask_raw(self, obj):
        """One request and its reply line as bytes (with "\\n")."""
        self.send(obj)
        return self.raw_line()

    def close(self):
        self.sock.close()


def call(port, reqs, timeout=30):
    """Sends the requests on a new connection in one write; their replies,
    parsed (fewer when the connection closes first)."""
    c = Conn(port, timeout)
    try:
        c.send(*reqs)
        out = []
        for _ in reqs:
            try:
                out.append(c.line())
            except ConnectionError:
                break
        return out
    finally:
        c.close()
