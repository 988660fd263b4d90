"""slotd — the Python client of slotd (standard library only, Python >= 3.9).

    import slotd
    with slotd.Client(["127.0.0.1:7420"], token="T") as c:
        r = c.hold("gig", "ann", 2)          # {"ok":true,"status":"held","hold":...} or sold_out
        c.confirm("gig", r["hold"], "ann")

    async with slotd.AsyncClient(["127.0.0.1:7420"]) as c:   # pipelined over one connection
        rs = await asyncio.gather(*(c.hold("gig", "u%d" % i, 1) for i in range(100)))

An ok:false reply raises SlotError (.code, .reply). Retries follow
clients/fixtures/README.md's rule: not_primary / wrong_set followed, moving waited,
unavailable and lost connections retried with the same request key, everything else
returned at once; after `retries` the client's own SlotError('unavailable').
"""
from ._async import AsyncClient, AsyncFeed, AsyncFeedEntry
from ._core import KEYED_OPS, Options, Reply, SlotError, Stats, new_key
from ._sync import Client, Feed, FeedEntry

__version__ = '0.1.0'
__all__ = ['AsyncClient', 'AsyncFeed', 'AsyncFeedEntry', 'Client', 'Feed', 'FeedEntry', 'KEYED_OPS', 'Options',
           'Reply', 'SlotError', 'Stats', 'new_key', '__version__']
