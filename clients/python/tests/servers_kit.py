"""Starts clients/fixtures/servers.py for a test: a real slotd (or etcd + a 3-node set),
stopped at the end. The slotd binary is $SLOTD (meson sets it), etcd /usr/bin/etcd."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SERVERS = os.path.join(HERE, '..', '..', 'fixtures', 'servers.py')
ETCD = os.environ.get('ETCD', '/usr/bin/etcd')


def slotd_bin():
    """$SLOTD, or None (the tests that need it skip)."""
    b = os.environ.get('SLOTD')
    return b if b and os.access(b, os.X_OK) else None


class Servers:
    def __init__(self, nodes=1, token=True, durability='sync'):
        argv = [sys.executable, SERVERS, '--slotd', slotd_bin(), '--durability', durability]
        if nodes > 1:
            argv += ['--nodes', str(nodes), '--etcd', ETCD]
        if not token:
            argv += ['--no-token']
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if not line:
            self.p.wait(30)
            raise RuntimeError('servers.py did not start (exit %s)' % self.p.returncode)
        self.view = json.loads(line)
        self.hosts = self.view['hosts']
        self.token = self.view['token']
        self.primary = self.view['primary']

    def kill_primary(self):
        """kill -9 of the primary; the new view (its "primary" the new one)."""
        self.p.stdin.write('kill-primary\n')
        self.p.stdin.flush()
        v = json.loads(self.p.stdout.readline())
        if 'error' in v:
            raise RuntimeError('kill-primary: %s' % v['error'])
        self.primary = v['primary']
        return v

    def stop(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.write('stop\n')
                self.p.stdin.close()
            except OSError:
                pass
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                self.p.kill()  # by its PID; its own children are stopped by its signal handler
                self.p.wait()
        self.p.stdout.close()
