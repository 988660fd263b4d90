"""slotd.Client: the blocking client (one connection, one call at a time, thread-safe)."""
import socket
import threading
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import _core
from ._core import ConnectionLost, Options, Reply, SlotError
from ._ops import Ops


class _Conn:
    """One blocking connection with a bounded line buffer."""

    def __init__(self, addr: str, timeout_s: float, token: Optional[str]) -> None:
        self.addr = addr
        host, port = _core.split_addr(addr)
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as e:
            raise ConnectionLost('connect: %s' % (e.strerror or e)) from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b''
        if token is not None:
            try:
                self.send(_core.encode(_core.hello_request(token)))
                _core.check_hello(self.recv(time.monotonic() + timeout_s))
            except (ConnectionLost, SlotError):
                self.close()
                raise

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise ConnectionLost('send: %s' % (e.strerror or e)) from None

    def recv_line(self, deadline: float) -> bytes:
        while True:
            nl = self.buf.find(b'\n')
            if nl >= 0:
                line, self.buf = self.buf[:nl], self.buf[nl + 1:]
                return line
            if len(self.buf) > _core.LINE_MAX:
                raise ConnectionLost('a reply line over %d bytes' % _core.LINE_MAX)
            left = deadline - time.monotonic()
            if left <= 0:
                raise ConnectionLost('no reply in time')
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                raise ConnectionLost('no reply in time') from None
            except OSError as e:
                raise ConnectionLost('recv: %s' % (e.strerror or e)) from None
            if not chunk:
                raise ConnectionLost('connection closed')
            self.buf += chunk

    def recv(self, deadline: float) -> Reply:
        return _core.parse_reply(self.recv_line(deadline))

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class Client(Ops[Reply]):
    """A blocking slotd client: `Client(["127.0.0.1:7420"], token="T")`.

    Every op of docs/protocol.md is a method (snake_case) returning the reply object of an
    ok:true reply (`sold_out` included); an ok:false reply raises SlotError. Calls follow
    the primary and retry by clients/fixtures/README.md's rule (same request, same key).
    One call at a time (a lock makes it safe to share between threads); pipeline() sends
    several at once. Use as a context manager or call close()."""

    def __init__(self, hosts: Union[str, Sequence[str]], token: Optional[str] = None, *, timeout_ms: int = 5000,
                 retries: int = 8, **kw: Any) -> None:
        self.opts = Options(hosts=list(hosts) if not isinstance(hosts, str) else hosts,  # type: ignore[arg-type]
                            token=token, timeout_ms=timeout_ms, retries=retries, **kw)
        self.opts.check()
        self.hosts = _core.Hosts(self.opts.hosts)
        self._conn: Optional[_Conn] = None
        self._lock = threading.Lock()
        self._closed = False
        self.stats = _core.Stats()

    def __enter__(self) -> 'Client':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connection; a call made afterwards raises SlotError('unavailable')
        (client: true) without sending anything, as AsyncClient's and the Node client's do."""
        with self._lock:
            self._closed = True
            self._drop()

    @property
    def node(self) -> str:
        """The address calls go to now."""
        return self.hosts.current()

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connect(self) -> _Conn:
        if self._conn is None:
            self._conn = _Conn(self.hosts.current(), self.opts.timeout_ms / 1000.0, self.opts.token)
        return self._conn

    def _move(self, action: str, addr: Optional[str], wait_s: float) -> None:
        if action == _core.FOLLOW_ADDR and addr is not None:
            self.stats.follows += 1
            self._drop()
            self.hosts.go(addr)
        elif action == _core.NEXT:
            self._drop()
            time.sleep(wait_s)
            self.hosts.advance()
        elif action == _core.SAME:
            time.sleep(wait_s)

    def request(self, op: str, fields: Optional[Dict[str, Any]] = None, **kw: Any) -> Reply:
        """Any op: request("hold", {"event": "E", ...}) or request("hold", event="E", ...)."""
        return self.pipeline([(op, dict(fields or {}, **kw))])[0]

    def pipeline(self, calls: Sequence[Any], return_errors: bool = False) -> List[Any]:
        """Several calls [(op, fields), ...] sent at once on the connection, replies matched
        in order; each is retried on its own as request() would. Returns their replies in
        order; with return_errors a SlotError is returned in its place instead of raised."""
        if self._closed:
            raise SlotError('unavailable', {'ok': False, 'error': 'unavailable', 'client': True,
                                            'message': 'the client is closed'})
        atts = [_core.Attempt(_core.build(op, dict(f)), self.opts) for op, f in calls]
        self.stats.calls += len(atts)
        out: List[Any] = [None] * len(atts)
        pending = list(range(len(atts)))
        with self._lock:
            while pending:
                pending = self._round(atts, pending, out)
        if not return_errors:
            for r in out:
                if isinstance(r, SlotError):
                    raise r
        return out

    def _round(self, atts: List[_core.Attempt], pending: List[int], out: List[Any]) -> List[int]:
        """One attempt of every pending call on the current connection; the ones to send
        again (the connection or host moved for them)."""
        again: List[int] = []
        moves = []
        for i in pending:
            atts[i].sends += 1
            self.stats.attempt(atts[i])
        addr = self.hosts.current()
        got = 0
        try:
            conn = self._connect()
            conn.send(b''.join(atts[i].line for i in pending))
            deadline = time.monotonic() + self.opts.timeout_ms / 1000.0
            for i in pending:
                reply = conn.recv(deadline)
                got += 1
                try:
                    move = atts[i].on_reply(addr, reply)
                except SlotError as e:
                    out[i] = e
                    continue
                if move[0] == _core.RETURN:
                    out[i] = reply
                else:
                    again.append(i)
                    moves.append(move)
        except SlotError as e:  # hello refused: final for every call of the round
            self._drop()
            for i in pending:
                out[i] = e
            return []
        except ConnectionLost as e:
            self._drop()
            rest = pending[got:]
            for i in rest:
                try:
                    moves.append(atts[i].on_lost(addr, str(e)))
                    again.append(i)
                except SlotError as err:
                    out[i] = err
        if moves:
            # One move for the round: following an address wins, then another host, then waiting.
            order = {_core.FOLLOW_ADDR: 0, _core.NEXT: 1, _core.SAME: 2}
            self._move(*min(moves, key=lambda m: order[m[0]]))
        return again

    # ---- the feed
    def feed(self, consumer: str, from_: _core.FeedFrom = 'acked', window: Optional[int] = None) -> 'Feed':
        """A feed consumer on a connection of its own: iterate for entries, ack each (or the
        last of a run) with entry.ack(). It resubscribes after a lost connection or a
        failover (from the stored ack) and skips entries it already gave (by seq)."""
        return Feed(self, consumer, from_, window)


class FeedEntry(dict):  # type: ignore[type-arg]
    """One pushed feed entry (the pushed object; `seq` is its "feed" number)."""

    def __init__(self, feed: 'Feed', obj: Reply) -> None:
        super().__init__(obj)
        self._feed = feed
        self.seq: int = obj['feed']
        self.type: str = obj.get('type', '')

    def ack(self) -> Reply:
        """Stores this entry's seq as the consumer's position (durable when it returns)."""
        return self._feed.ack(self.seq)


class Feed:
    """The blocking feed consumer of Client.feed()."""

    def __init__(self, client: Client, consumer: str, from_: _core.FeedFrom, window: Optional[int]) -> None:
        self.client = client
        self.opts = client.opts
        self.hosts = _core.Hosts(client.hosts.addrs)
        self.hosts.index = client.hosts.index
        self.consumer = consumer
        self.from_ = from_
        self.window = window
        self.conn: Optional[_Conn] = None
        self.last_seq = 0  # the last entry given out
        self.queue: List[Reply] = []  # entries read while waiting for an ack's reply
        self.subscribed: Optional[Reply] = None
        self.subscribes = 0  # subscriptions made: 1, and one more after each lost connection

    def __enter__(self) -> 'Feed':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _subscribe(self) -> _Conn:
        """A subscribed connection, following the primary as any call does."""
        from_ = self.from_ if self.subscribed is None else 'acked'
        att = _core.Attempt(_core.build('subscribe', _core.subscribe_request(self.consumer, from_, self.window),
                                        allow_feed=True), self.opts)
        while True:
            att.sends += 1
            addr = self.hosts.current()
            try:
                conn = _Conn(addr, self.opts.timeout_ms / 1000.0, self.opts.token)
                conn.send(att.line)
                reply = conn.recv(time.monotonic() + self.opts.timeout_ms / 1000.0)
                action, to, wait_s = att.on_reply(addr, reply)
                if action == _core.RETURN:
                    self.subscribed = reply
                    self.subscribes += 1
                    self.conn = conn
                    return conn
                conn.close()
            except ConnectionLost as e:
                action, to, wait_s = att.on_lost(addr, str(e))
            if action == _core.FOLLOW_ADDR and to:
                self.hosts.go(to)
            else:
                time.sleep(wait_s)
                if action == _core.NEXT:
                    self.hosts.advance()

    def __iter__(self) -> Iterator[FeedEntry]:
        return self

    def __next__(self) -> FeedEntry:
        """The next entry not given before; blocks until one is pushed (forever: use
        next_entry(timeout_s) for a bounded wait)."""
        e = self.next_entry(None)
        assert e is not None
        return e

    def next_entry(self, timeout_s: Optional[float]) -> Optional[FeedEntry]:
        """The next entry, or None when none came within timeout_s (None: wait forever)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            if self.queue:
                obj = self.queue.pop(0)
                if obj['feed'] <= self.last_seq:
                    continue
                self.last_seq = obj['feed']
                return FeedEntry(self, obj)
            conn = self.conn or self._subscribe()
            try:
                wait_until = deadline if deadline is not None else time.monotonic() + 3600.0
                line = conn.recv_line(wait_until)
            except ConnectionLost as e:
                if str(e) == 'no reply in time' and deadline is not None and time.monotonic() >= deadline:
                    return None
                if str(e) == 'no reply in time' and deadline is None:
                    continue
                self.close()  # lost: resubscribe from the stored ack
                continue
            try:
                obj = _core.parse_line(line)
            except ConnectionLost:
                self.close()
                continue
            if _core.is_feed_entry(obj):
                self.queue.append(obj)
            # a reply here (an ack answered late) has nobody waiting: dropped

    def ack(self, seq: int) -> Reply:
        """ack seq on the subscribed connection; entries pushed meanwhile are kept for the
        iterator. A lost connection raises SlotError('unavailable') (the position may not be
        stored: ack again after the next entries)."""
        conn = self.conn
        if conn is None:
            raise SlotError('not_subscribed', {'ok': False, 'error': 'not_subscribed', 'client': True,
                                               'message': 'the feed connection was lost; iterate to resubscribe'})
        conn.send(_core.encode({'op': 'ack', 'consumer': self.consumer, 'seq': seq}))
        deadline = time.monotonic() + self.opts.timeout_ms / 1000.0
        try:
            while True:
                obj = _core.parse_line(conn.recv_line(deadline))
                if _core.is_feed_entry(obj):
                    self.queue.append(obj)
                    continue
                if not isinstance(obj.get('ok'), bool):
                    raise ConnectionLost('a line that is neither a reply nor an entry')
                reply = obj
                if not reply.get('ok'):
                    raise SlotError(str(reply.get('error')), reply)
                return reply
        except ConnectionLost as e:
            self.close()
            raise SlotError('unavailable', {'ok': False, 'error': 'unavailable', 'client': True,
                                            'message': 'ack: %s' % e}) from None
