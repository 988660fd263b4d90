"""slotd.AsyncClient: the asyncio client, pipelined over one connection."""
import asyncio
import collections
from typing import Any, AsyncIterator, Awaitable, Deque, Dict, List, Optional, Sequence, Union

from . import _core
from ._core import ConnectionLost, Options, Reply, SlotError
from ._ops import Ops


class _AConn:
    """One connection: requests are written as calls come; a reader task gives each reply
    line to the oldest waiting call (replies come in request order). `pending` is bounded by
    the client's max_in_flight (and one hello)."""

    def __init__(self, addr: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, epoch: int) -> None:
        self.addr = addr
        self.reader = reader
        self.writer = writer
        self.epoch = epoch
        self.pending: Deque['asyncio.Future[Reply]'] = collections.deque()
        self.closed = False
        self.why = ''
        self.task = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        why = 'connection closed'
        try:
            while True:
                line = await self.reader.readuntil(b'\n')
                reply = _core.parse_reply(line)
                if not self.pending:
                    why = 'a reply to no request'
                    break
                fut = self.pending.popleft()
                if not fut.done():
                    fut.set_result(reply)
        except asyncio.IncompleteReadError:
            why = 'connection closed'
        except asyncio.LimitOverrunError:
            why = 'a reply line over %d bytes' % _core.LINE_MAX
        except ConnectionLost as e:
            why = str(e)
        except (OSError, ValueError) as e:
            why = 'recv: %s' % e
        except asyncio.CancelledError:
            why = 'closed by the client'
        self.fail(why)

    def send(self, line: bytes) -> 'asyncio.Future[Reply]':
        if self.closed:
            raise ConnectionLost(self.why)
        fut: 'asyncio.Future[Reply]' = asyncio.get_running_loop().create_future()
        self.pending.append(fut)
        self.writer.write(line)
        return fut

    def fail(self, why: str) -> None:
        """Closes the connection; every call waiting on it sees ConnectionLost(why)."""
        if self.closed:
            return
        self.closed = True
        self.why = why
        try:
            self.writer.close()
        except (OSError, RuntimeError):
            pass
        while self.pending:
            fut = self.pending.popleft()
            if not fut.done():
                fut.set_exception(ConnectionLost(why))
                fut.exception()  # retrieved here too: a call that timed out no longer waits on it
        if not self.task.done() and asyncio.current_task() is not self.task:
            self.task.cancel()


def _expire(conn: _AConn, fut: 'asyncio.Future[Reply]') -> None:
    """A call's reply did not come in time: the connection counts as lost (the replies
    behind it cannot be matched any more), so every call on it is retried."""
    if not fut.done():
        conn.fail('no reply in time')


async def _open(addr: str, timeout_s: float, token: Optional[str], epoch: int) -> _AConn:
    host, port = _core.split_addr(addr)
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, limit=_core.LINE_MAX),
                                                timeout_s)
    except asyncio.TimeoutError:
        raise ConnectionLost('connect: no answer in time') from None
    except OSError as e:
        raise ConnectionLost('connect: %s' % (e.strerror or e)) from None
    conn = _AConn(addr, reader, writer, epoch)
    if token is not None:
        try:
            reply = await asyncio.wait_for(conn.send(_core.encode(_core.hello_request(token))), timeout_s)
        except asyncio.TimeoutError:
            conn.fail('hello: no reply in time')
            raise ConnectionLost('hello: no reply in time') from None
        if reply.get('ok') is not True:
            conn.fail('hello refused')
        _core.check_hello(reply)
    return conn


class AsyncClient(Ops[Awaitable[Reply]]):
    """The asyncio slotd client: `async with AsyncClient(["127.0.0.1:7420"]) as c:
    r = await c.hold("E", "ann", 2)`.

    Every op is a coroutine method. Calls made at once are pipelined on one connection
    (at most max_in_flight sent and unanswered; the others wait), their replies matched in
    order. Each call follows the primary and retries by clients/fixtures/README.md's rule
    with its own request line (the same key on every retry) and its own bound."""

    def __init__(self, hosts: Union[str, Sequence[str]], token: Optional[str] = None, *, timeout_ms: int = 5000,
                 retries: int = 8, max_in_flight: int = 1024, **kw: Any) -> None:
        self.opts = Options(hosts=list(hosts) if not isinstance(hosts, str) else hosts,  # type: ignore[arg-type]
                            token=token, timeout_ms=timeout_ms, retries=retries, max_in_flight=max_in_flight, **kw)
        self.opts.check()
        self.hosts = _core.Hosts(self.opts.hosts)
        self._conn: Optional[_AConn] = None
        self._epoch = 0  # +1 each time the client moves to another host
        self._conn_error: Optional[ConnectionLost] = None  # the failed connect of this epoch
        self._lock: Optional[asyncio.Lock] = None
        self._sem: Optional[asyncio.Semaphore] = None
        self._closed = False
        self.stats = _core.Stats()

    async def __aenter__(self) -> 'AsyncClient':
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    @property
    def node(self) -> str:
        """The address calls go to now."""
        return self.hosts.current()

    async def close(self) -> None:
        """Closes the connection; calls still waiting fail with SlotError('unavailable')."""
        self._closed = True
        if self._conn is not None:
            self._conn.fail('closed by the client')
            try:
                await self._conn.task
            except asyncio.CancelledError:
                pass
            self._conn = None

    def _sync_prims(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
            self._sem = asyncio.Semaphore(self.opts.max_in_flight)

    async def _get_conn(self) -> _AConn:
        c = self._conn
        if c is not None and not c.closed:
            return c
        assert self._lock is not None
        async with self._lock:
            c = self._conn
            if c is not None and not c.closed:
                return c
            if self._conn_error is not None:  # this epoch's host failed already: move first
                raise self._conn_error
            epoch = self._epoch
            try:
                c = await _open(self.hosts.current(), self.opts.timeout_ms / 1000.0, self.opts.token, epoch)
            except ConnectionLost as e:
                if self._epoch == epoch:
                    self._conn_error = e
                raise
            if self._epoch != epoch:  # moved while connecting
                c.fail('moved')
                raise ConnectionLost('moved')
            self._conn = c
            return c

    def _move(self, epoch: int, action: str, addr: Optional[str]) -> None:
        """Moves to another host unless someone already moved since `epoch`."""
        if self._epoch != epoch:
            return
        if action == _core.FOLLOW_ADDR and addr is not None:
            self.hosts.go(addr)
        elif action == _core.NEXT:
            self.hosts.advance()
        else:
            return
        self._epoch += 1
        self._conn_error = None
        if self._conn is not None:
            self._conn.fail('moved to %s' % self.hosts.current())
            self._conn = None

    async def request(self, op: str, fields: Optional[Dict[str, Any]] = None, **kw: Any) -> Reply:
        """Any op: await request("hold", {"event": "E", ...}) or request("hold", event="E", ...)."""
        if self._closed:
            raise SlotError('unavailable', {'ok': False, 'error': 'unavailable', 'client': True,
                                            'message': 'the client is closed'})
        self._sync_prims()
        assert self._sem is not None
        att = _core.Attempt(_core.build(op, dict(fields or {}, **kw)), self.opts)
        timeout_s = self.opts.timeout_ms / 1000.0
        self.stats.calls += 1
        async with self._sem:
            while True:
                att.sends += 1
                self.stats.attempt(att)
                epoch = self._epoch
                addr = self.hosts.current()
                try:
                    conn = await self._get_conn()
                    epoch, addr = conn.epoch, conn.addr
                    fut = conn.send(att.line)
                    timer = asyncio.get_running_loop().call_later(timeout_s, _expire, conn, fut)
                    try:
                        reply = await fut  # ConnectionLost when the connection fails (or the timer fires)
                    finally:
                        timer.cancel()
                    action, to, wait_s = att.on_reply(addr, reply)
                    if action == _core.RETURN:
                        return reply
                except ConnectionLost as e:
                    if self._closed:
                        raise SlotError('unavailable', {'ok': False, 'error': 'unavailable', 'client': True,
                                                        'message': 'the client is closed'}) from None
                    action, to, wait_s = att.on_lost(addr, str(e))
                if action == _core.FOLLOW_ADDR:
                    self.stats.follows += 1
                if wait_s > 0:
                    await asyncio.sleep(wait_s)
                self._move(epoch, action, to)

    async def gather(self, calls: Sequence[Any], return_errors: bool = False) -> List[Any]:
        """Several calls [(op, fields), ...] at once (pipelined); their replies in order, a
        SlotError in place of a failed one with return_errors (else the first is raised)."""
        return list(await asyncio.gather(*(self.request(op, f) for op, f in calls), return_exceptions=return_errors))

    def feed(self, consumer: str, from_: _core.FeedFrom = 'acked', window: Optional[int] = None) -> 'AsyncFeed':
        """A feed consumer on a connection of its own: `async for e in c.feed("mail"): ...;
        await e.ack()`. Resubscribes after a lost connection or failover (from the stored
        ack) and skips entries it already gave (by seq)."""
        return AsyncFeed(self, consumer, from_, window)


class AsyncFeedEntry(dict):  # type: ignore[type-arg]
    """One pushed feed entry; `seq` is its "feed" number."""

    def __init__(self, feed: 'AsyncFeed', obj: Reply) -> None:
        super().__init__(obj)
        self._feed = feed
        self.seq: int = obj['feed']
        self.type: str = obj.get('type', '')

    async def ack(self) -> Reply:
        return await self._feed.ack(self.seq)


class AsyncFeed:
    """The asyncio feed consumer of AsyncClient.feed()."""

    def __init__(self, client: AsyncClient, consumer: str, from_: _core.FeedFrom, window: Optional[int]) -> None:
        self.opts = client.opts
        self.hosts = _core.Hosts(client.hosts.addrs)
        self.hosts.index = client.hosts.index
        self.consumer = consumer
        self.from_ = from_
        self.window = window
        self.reader: Optional[asyncio.StreamReader] = None
        self.writer: Optional[asyncio.StreamWriter] = None
        self.last_seq = 0
        self.entries: Deque[Reply] = collections.deque()
        self.replies: 'asyncio.Queue[Reply]' = asyncio.Queue()
        self.subscribed: Optional[Reply] = None
        self.task: Optional['asyncio.Task[None]'] = None
        self.wake = asyncio.Event()
        self.lost = True

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.task is not None:
            self.task.cancel()
            try:
                await self.task
            except asyncio.CancelledError:
                pass

    async def __aenter__(self) -> 'AsyncFeed':
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _subscribe(self) -> None:
        from_ = self.from_ if self.subscribed is None else 'acked'
        att = _core.Attempt(_core.build('subscribe', _core.subscribe_request(self.consumer, from_, self.window),
                                        allow_feed=True), self.opts)
        timeout_s = self.opts.timeout_ms / 1000.0
        while True:
            att.sends += 1
            addr = self.hosts.current()
            writer = None
            try:
                host, port = _core.split_addr(addr)
                try:
                    reader, writer = await asyncio.wait_for(
                        asyncio.open_connection(host, port, limit=_core.LINE_MAX), timeout_s)
                    lines = [_core.encode(_core.hello_request(self.opts.token))] if self.opts.token else []
                    writer.write(b''.join(lines) + att.line)
                    if lines:
                        _core.check_hello(_core.parse_reply(
                            await asyncio.wait_for(reader.readuntil(b'\n'), timeout_s)))
                    reply = _core.parse_reply(await asyncio.wait_for(reader.readuntil(b'\n'), timeout_s))
                except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as e:
                    raise ConnectionLost('subscribe: %s' % (e or type(e).__name__)) from None
                action, to, wait_s = att.on_reply(addr, reply)
                if action == _core.RETURN:
                    self.subscribed = reply
                    self.reader, self.writer = reader, writer
                    self.lost = False
                    self.task = asyncio.ensure_future(self._read(reader))
                    return
                writer.close()
            except ConnectionLost as e:
                if writer is not None:
                    writer.close()
                action, to, wait_s = att.on_lost(addr, str(e))
            except SlotError:
                if writer is not None:
                    writer.close()
                raise
            if action == _core.FOLLOW_ADDR and to:
                self.hosts.go(to)
            else:
                await asyncio.sleep(wait_s)
                if action == _core.NEXT:
                    self.hosts.advance()

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                obj = _core.parse_line(await reader.readuntil(b'\n'))
                if _core.is_feed_entry(obj):
                    self.entries.append(obj)
                    self.wake.set()
                elif isinstance(obj.get('ok'), bool):
                    self.replies.put_nowait(obj)
                else:
                    break
        except (OSError, ConnectionLost, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self.lost = True
            self.wake.set()
            self.replies.put_nowait({'ok': False, 'error': 'unavailable', 'client': True,
                                     'message': 'the feed connection was lost'})

    def __aiter__(self) -> AsyncIterator[AsyncFeedEntry]:
        return self

    async def __anext__(self) -> AsyncFeedEntry:
        """The next entry not given before (resubscribing when the connection was lost)."""
        while True:
            while self.entries:
                obj = self.entries.popleft()
                if obj['feed'] <= self.last_seq:
                    continue
                self.last_seq = obj['feed']
                return AsyncFeedEntry(self, obj)
            if self.lost:
                if self.writer is not None:
                    self.writer.close()
                self.replies = asyncio.Queue()
                await self._subscribe()
                continue
            self.wake.clear()
            if not self.entries and not self.lost:
                await self.wake.wait()

    async def ack(self, seq: int) -> Reply:
        """ack seq (durable when it returns); SlotError('unavailable') when the connection
        was lost first (iterate on: the consumer resumes from its stored ack)."""
        if self.lost or self.writer is None:
            raise SlotError('unavailable', {'ok': False, 'error': 'unavailable', 'client': True,
                                            'message': 'the feed connection was lost'})
        self.writer.write(_core.encode({'op': 'ack', 'consumer': self.consumer, 'seq': seq}))
        try:
            reply = await asyncio.wait_for(self.replies.get(), self.opts.timeout_ms / 1000.0)
        except asyncio.TimeoutError:
            self.writer.close()
            raise SlotError('unavailable', {'ok': False, 'error': 'unavailable', 'client': True,
                                            'message': 'ack: no reply in time'}) from None
        if reply.get('ok') is not True:
            raise SlotError(str(reply.get('error')), reply)
        return reply
