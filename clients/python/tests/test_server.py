"""slotd.Client and slotd.AsyncClient against a real standalone slotd ($SLOTD), started by
clients/fixtures/servers.py with an admin token on an ephemeral loopback port."""
import asyncio
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import slotd  # noqa: E402
import servers_kit  # noqa: E402

SRV = None


def setUpModule():
    global SRV
    if servers_kit.slotd_bin() is None:
        raise unittest.SkipTest('$SLOTD is not set to a slotd binary (meson test sets it)')
    SRV = servers_kit.Servers(nodes=1)


def tearDownModule():
    if SRV is not None:
        SRV.stop()


class Sync(unittest.TestCase):
    def setUp(self):
        self.c = slotd.Client(SRV.hosts, token=SRV.token, timeout_ms=5000)

    def tearDown(self):
        self.c.close()

    def test_hold_confirm_release_and_replay(self):
        c = self.c
        ev = c.create_event('sync-gig', 5, shards=2, max_per_request=10)
        self.assertEqual(ev['capacity'], 5)
        h = c.hold('sync-gig', 'ann', 2, request='ann-1')
        self.assertEqual((h['ok'], h['status'], h['qty']), (True, 'held', 2))
        again = c.hold('sync-gig', 'ann', 2, request='ann-1')  # the same key: a replay, not a second hold
        self.assertEqual((again['hold'], again.get('replay')), (h['hold'], True))
        with self.assertRaises(slotd.SlotError) as e:
            c.hold('sync-gig', 'ann', 3, request='ann-1')
        self.assertEqual(e.exception.code, 'idempotency_conflict')
        self.assertEqual(e.exception.reply['error'], 'idempotency_conflict')
        self.assertEqual(c.get_hold('sync-gig', h['hold'], 'ann')['status'], 'held')
        self.assertEqual(c.confirm('sync-gig', h['hold'], 'ann')['status'], 'confirmed')
        b = c.hold('sync-gig', 'bob', 3)
        self.assertEqual(b['status'], 'held')
        self.assertEqual(c.hold('sync-gig', 'cy', 1)['status'], 'sold_out')  # an answer, not an error
        r = c.release('sync-gig', b['hold'], 'bob')
        self.assertEqual((r['released'], r['status']), (True, 'released'))
        v = c.event('sync-gig')
        self.assertEqual((v['capacity'], v['available'], v['held'], v['confirmed']), (5, 3, 0, 2))
        self.assertEqual(c.check('sync-gig')['violations'], [])

    def test_errors_are_slot_errors(self):
        with self.assertRaises(slotd.SlotError) as e:
            self.c.hold('no-such-event', 'ann', 1)
        self.assertEqual(e.exception.code, 'unknown_event')
        with self.assertRaises(slotd.SlotError) as e:
            self.c.request('no_such_op', {})
        self.assertEqual(e.exception.code, 'unknown_op')

    def test_wrong_token_is_not_retried(self):
        with slotd.Client(SRV.hosts, token='wrong', retries=3) as c:
            with self.assertRaises(slotd.SlotError) as e:
                c.event('sync-gig')
            self.assertEqual(e.exception.code, 'unauthenticated')

    def test_call_after_close_is_refused(self):
        # a call after close() must not quietly open a new connection (AsyncClient and the
        # Node client refuse it too): the client's own unavailable, nothing sent
        c = slotd.Client(SRV.hosts, token=SRV.token)
        c.create_event('sync-closed', 3)
        c.close()
        with self.assertRaises(slotd.SlotError) as e:
            c.hold('sync-closed', 'ann', 1)
        self.assertEqual((e.exception.code, e.exception.reply.get('client')), ('unavailable', True))
        self.assertEqual(self.c.event('sync-closed')['available'], 3)

    def test_pipeline(self):
        c = self.c
        c.create_event('pipe', 100, shards=4)
        rs = c.pipeline([('hold', {'event': 'pipe', 'user': 'u%d' % i, 'qty': 1}) for i in range(50)])
        self.assertEqual([r['status'] for r in rs], ['held'] * 50)
        self.assertEqual(len({r['hold'] for r in rs}), 50)
        self.assertEqual(c.event('pipe')['held'], 50)

    def test_feed_resumes_after_ack(self):
        c = self.c
        c.create_event('fd', 10, shards=1)
        h = c.hold('fd', 'ann', 1)
        with c.feed('sync-mail', from_='start') as f:
            seen = []
            while True:
                e = f.next_entry(10)
                self.assertIsNotNone(e, 'a feed entry within 10 s')
                seen.append(e)
                if e.type == 'hold.held' and e.get('hold') == h['hold']:
                    break
            self.assertEqual([e.seq for e in seen], list(range(seen[0].seq, seen[0].seq + len(seen))))
            self.assertEqual(seen[-1].ack()['acked'], seen[-1].seq)
            last = seen[-1].seq
        c.confirm('fd', h['hold'], 'ann')
        with c.feed('sync-mail') as f:  # "acked": resumes after the stored position
            e = f.next_entry(10)
            self.assertEqual((e.seq, e.type, e['hold']), (last + 1, 'hold.confirmed', h['hold']))
            e.ack()


    def test_feed_resubscribes_and_skips_what_it_gave(self):
        c = self.c
        c.create_event('fd2', 10, shards=1)
        with c.feed('sync-forgot', from_='start', window=10000) as f:
            first = f.next_entry(10)
            self.assertIsNotNone(first)
            while True:  # up to the head
                e = f.next_entry(0.3)
                if e is None:
                    break
                last = e
            c.feed_forget('sync-forgot')  # its subscription ends: the server closes that connection
            h = c.hold('fd2', 'ann', 1)
            # The consumer resubscribes (forgotten: from the oldest entry kept) and gives only
            # what it had not given: the new hold.held, nothing again.
            e = f.next_entry(10)
            self.assertIsNotNone(e)
            self.assertEqual((e.seq, e.type, e.get('hold')), (last.seq + 1, 'hold.held', h['hold']))
            self.assertEqual(f.subscribes, 2)


class Async(unittest.TestCase):
    def test_concurrent_holds_sell_exactly_capacity(self):
        async def go():
            async with slotd.AsyncClient(SRV.hosts, token=SRV.token, max_in_flight=64) as c:
                await c.create_event('rush', 150, shards=8)
                rs = await asyncio.gather(*(c.hold('rush', 'u%d' % i, 1) for i in range(200)))
                v = await c.event('rush')
                chk = await c.check('rush')
                return rs, v, chk
        rs, v, chk = asyncio.run(go())
        held = [r for r in rs if r['status'] == 'held']
        self.assertEqual(len(held), 150)
        self.assertEqual(len({r['hold'] for r in held}), 150)
        self.assertEqual(sum(1 for r in rs if r['status'] == 'sold_out'), 50)
        self.assertEqual((v['held'], v['available']), (150, 0))
        self.assertEqual(chk['violations'], [])

    def test_errors_and_keys(self):
        async def go():
            async with slotd.AsyncClient(SRV.hosts, token=SRV.token) as c:
                await c.create_event('akeys', 10)
                a = await c.hold('akeys', 'ann', 1, request='k1')
                b = await c.hold('akeys', 'ann', 1, request='k1')
                try:
                    await c.get_hold('akeys', 'nope', 'ann')
                except slotd.SlotError as e:
                    err = e
                return a, b, err
        a, b, err = asyncio.run(go())
        self.assertEqual((b['hold'], b.get('replay')), (a['hold'], True))
        self.assertEqual(err.code, 'unknown_hold')

    def test_feed(self):
        async def go():
            async with slotd.AsyncClient(SRV.hosts, token=SRV.token) as c:
                await c.create_event('afd', 10, shards=1)
                h = await c.hold('afd', 'ann', 2)
                got = []
                async with c.feed('async-mail', from_='start') as f:
                    async def read():
                        async for e in f:
                            got.append(e)
                            if e.type == 'hold.held' and e['hold'] == h['hold']:
                                return await e.ack()
                    ack = await asyncio.wait_for(read(), 10)
                return h, got, ack
        h, got, ack = asyncio.run(go())
        self.assertEqual(ack['acked'], got[-1].seq)
        self.assertEqual((got[-1]['qty'], got[-1]['user']), (2, 'ann'))

    def test_feed_resubscribes_and_skips_what_it_gave(self):
        async def go():
            async with slotd.AsyncClient(SRV.hosts, token=SRV.token) as c:
                await c.create_event('afd2', 10, shards=1)
                h1 = await c.hold('afd2', 'ann', 1)
                async with c.feed('async-forgot', from_='start', window=10000) as f:
                    it = f.__aiter__()
                    while True:
                        e = await asyncio.wait_for(it.__anext__(), 10)
                        if e.type == 'hold.held' and e['hold'] == h1['hold']:
                            break
                    await c.feed_forget('async-forgot')
                    h2 = await c.hold('afd2', 'bob', 1)
                    nxt = await asyncio.wait_for(it.__anext__(), 10)
                    return e, nxt, h2, f.subscribes
        e, nxt, h2, subs = asyncio.run(go())
        self.assertEqual((nxt.seq, nxt.type, nxt.get('hold')), (e.seq + 1, 'hold.held', h2['hold']))
        self.assertEqual(subs, 2)


if __name__ == '__main__':
    unittest.main()
