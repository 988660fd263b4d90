"""slotd.AsyncClient and slotd.Client against a 3-node replica set (etcd + three slotd,
clients/fixtures/servers.py) whose primary is killed with kill -9 in the middle of a
sale: every acknowledged hold is found afterwards, and no purchase is made twice by a
retry (the units held are exactly those acknowledged). Skipped without $SLOTD or etcd."""
import asyncio
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import slotd  # noqa: E402
import servers_kit  # noqa: E402

BUYERS = 32  # concurrent buyers, one call at a time each, all pipelined on one connection
BEFORE = 150  # acknowledged holds before the kill
AFTER = 150  # acknowledged holds after the new primary answered
RUN_S = 60  # the whole sale gives up after this (a failure)


class Failover(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if servers_kit.slotd_bin() is None:
            raise unittest.SkipTest('$SLOTD is not set to a slotd binary (meson test sets it)')
        if not os.access(servers_kit.ETCD, os.X_OK):
            raise unittest.SkipTest('%s is missing (Debian package etcd-server)' % servers_kit.ETCD)
        cls.srv = servers_kit.Servers(nodes=3)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def test_kill_primary_mid_sale(self):
        srv = self.srv
        # the primary last in the list: the client meets not_primary first and follows it
        hosts = [h for h in srv.hosts if h != srv.primary] + [srv.primary]
        acked = {}  # request key -> (hold id, qty) of every hold the client was answered held
        unknown = []  # (user, key, qty) of calls that gave up (outcome unknown)

        async def sale():
            async with slotd.AsyncClient(hosts, token=srv.token, timeout_ms=2000, retries=40) as c:
                await c.create_event('fo', 100000, shards=8, hold_ttl_ms=3600000)
                killed = asyncio.Event()
                done = asyncio.Event()
                after = [0]
                n = [0]

                async def buyer(b):
                    while not done.is_set():
                        n[0] += 1
                        user, key, qty = 'b%d' % b, 'fo-%d-%d' % (b, n[0]), 1 + n[0] % 3
                        try:
                            r = await c.hold('fo', user, qty, request=key)
                        except slotd.SlotError as e:
                            self.assertEqual(e.code, 'unavailable', e.reply)
                            unknown.append((user, key, qty))
                            continue
                        self.assertEqual(r['status'], 'held', r)
                        self.assertNotIn(key, acked)
                        acked[key] = (r['hold'], qty, user)
                        if killed.is_set():
                            after[0] += 1
                            if after[0] >= AFTER:
                                done.set()

                tasks = [asyncio.ensure_future(buyer(b)) for b in range(BUYERS)]
                for _ in range(RUN_S * 100):
                    if len(acked) >= BEFORE:
                        break
                    await asyncio.sleep(0.01)
                view = await asyncio.get_running_loop().run_in_executor(None, srv.kill_primary)
                killed.set()
                await asyncio.wait_for(done.wait(), RUN_S)
                await asyncio.gather(*tasks)
                return view, c.stats

        view, st = asyncio.run(sale())
        print('\nkilled %s, new primary %s; %d holds acknowledged, %d calls gave up (retried after); client: %s' % (
            view['killed'], view['primary'], len(acked), len(unknown), st), flush=True)
        self.assertGreater(st.follows, 0, 'the first host is a replica: its not_primary was followed')
        self.assertGreater(st.retries, st.follows, 'calls in flight at the kill were sent again')
        self.assertNotEqual(view['primary'], view['killed'])
        self.assertGreaterEqual(len(acked), BEFORE + AFTER)
        with slotd.Client(srv.hosts, token=srv.token, retries=40) as c:
            # Calls that gave up: their key tells (a replay when they had committed).
            for user, key, qty in unknown:
                r = c.hold('fo', user, qty, request=key)
                acked[key] = (r['hold'], qty, user)
            for key, (hold, qty, user) in acked.items():
                g = c.get_hold('fo', hold, user)
                self.assertEqual((g['status'], g['qty']), ('held', qty), key)
                r = c.hold('fo', user, qty, request=key)  # the same key again: the same hold
                self.assertEqual((r['hold'], r.get('replay')), (hold, True), key)
            v = c.event('fo')
            units = sum(q for _, q, _ in acked.values())
            # exactly the acknowledged units: a retry that made a second hold would show here
            self.assertEqual(v['held'], units)
            self.assertEqual(v['available'], 100000 - units)
            self.assertEqual(c.check('fo')['violations'], [])
            self.assertEqual(c.node, view['primary'])


if __name__ == '__main__':
    unittest.main()
