"""The shared client fixtures (clients/fixtures/cases/*.json) through the Python client:
every case three ways (Client one call after another, Client.pipeline, AsyncClient with
every call at once), each against its own peer.py (clients/fixtures/README.md)."""
import asyncio
import glob
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package of this tree, not an installed one

import slotd  # noqa: E402

FIXTURES = os.path.join(HERE, '..', '..', 'fixtures')
PEER = os.path.join(FIXTURES, 'peer.py')
CASES = sorted(glob.glob(os.path.join(FIXTURES, 'cases', '*.json')))
VERDICT_S = 30  # peer.py answers its verdict at once once stdin closes


def subset(want, got):
    """Every key of want in got with an equal value (dicts as subsets, recursively)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and subset(v, got[k]) for k, v in want.items())
    if isinstance(want, bool) or isinstance(got, bool):
        return type(want) is type(got) and want == got
    return want == got


def outcome(r):
    """A call's result as the case compares it: the reply, or a SlotError's reply object."""
    return r.reply if isinstance(r, slotd.SlotError) else r


def run_case(path, mode):
    """Plays the case at path with the client in `mode`; (results, verdict, case)."""
    with open(path, encoding='utf-8') as f:
        case = json.load(f)
    p = subprocess.Popen([sys.executable, PEER, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        peers = json.loads(p.stdout.readline())['peers']
        o = case.get('options', {})
        kw = dict(timeout_ms=o.get('timeoutMs', 5000), retries=o.get('retries', 8))
        calls = [(c['op'], c['args']) for c in case['calls']]
        if mode == 'sync':
            with slotd.Client(peers, **kw) as c:
                results = []
                for op, args in calls:
                    try:
                        results.append(c.request(op, args))
                    except slotd.SlotError as e:
                        results.append(e)
        elif mode == 'pipeline':
            with slotd.Client(peers, token='T', **kw) as c:
                results = c.pipeline(calls, return_errors=True)
        else:
            async def go():
                async with slotd.AsyncClient(peers, **kw) as c:
                    return await c.gather(calls, return_errors=True)
            results = asyncio.run(go())
        p.stdin.close()
        verdict = json.loads(p.stdout.readline() or '{"ok":false,"why":"peer.py said nothing"}')
        p.wait(VERDICT_S)
        return [outcome(r) for r in results], verdict, case
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        if not p.stdin.closed:
            p.stdin.close()


class Fixtures(unittest.TestCase):
    def test_cases_present(self):
        self.assertGreaterEqual(len(CASES), 12, 'clients/fixtures/cases')

    def check(self, mode):
        for path in CASES:
            name = os.path.basename(path)[:-5]
            with self.subTest(case=name, mode=mode):
                results, verdict, case = run_case(path, mode)
                self.assertEqual(verdict, {'ok': True}, '%s (%s): peer.py verdict' % (name, mode))
                self.assertEqual(len(results), len(case['results']))
                for i, (want, got) in enumerate(zip(case['results'], results)):
                    self.assertTrue(subset(want, got), '%s call %d: want %s, got %s' % (name, i, want, got))

    def test_sync(self):
        self.check('sync')

    def test_pipeline(self):
        self.check('pipeline')

    def test_async(self):
        self.check('async')


if __name__ == '__main__':
    unittest.main()
