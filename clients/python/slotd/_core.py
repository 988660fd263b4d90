"""The part of the slotd client that does no I/O, shared by Client and AsyncClient.

Request building (one request line per call, its idempotency key made once), reply
parsing, and the retry/follow rule of clients/fixtures/README.md: what to do after
each reply or lost attempt, and when to give up.
"""
import itertools
import json
import secrets
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

Reply = Dict[str, Any]

LINE_MAX = 4 << 20  # a reply line longer than this is refused (the connection is dropped), as the C client
KEY_BYTES = 16  # a generated request key: "py-" + 32 hex digits (the `request` alphabet)

# Ops that take an idempotency key: the client makes one per call unless the caller gives one.
KEYED_OPS = frozenset({'hold', 'hold_many', 'waitlist_join'})
# Ops of a subscribed connection: only through Client.feed / AsyncClient.feed.
FEED_OPS = frozenset({'subscribe', 'ack', 'unsubscribe'})

# The rule (clients/fixtures/README.md, "The retry rule").
FOLLOW = frozenset({'not_primary', 'wrong_set'})  # with "primary": go there at once
NEXT_HOST = frozenset({'unavailable', 'shutting_down'})  # the next host, after a pause
SAME_HOST = frozenset({'moving', 'overloaded'})  # the same host, after retry_after_ms or a pause

RETURN, FOLLOW_ADDR, NEXT, SAME = 'return', 'follow', 'next', 'same'


class SlotError(Exception):
    """An ok:false reply (`code` is its "error", `reply` the whole reply object), or the
    client's own `unavailable` after its retries ran out (reply["client"] is True: the
    outcome of a write is unknown, retry later with the same `request` key)."""

    def __init__(self, code: str, reply: Reply, message: Optional[str] = None) -> None:
        self.code = code
        self.reply = reply
        self.message = message if message is not None else str(reply.get('message', code))
        super().__init__('%s: %s' % (code, self.message))


class ConnectionLost(Exception):
    """An attempt ended without a reply: connect failed, connection closed or reset, no
    reply in time, or a line that is not a reply. Internal: such attempts are retried."""


@dataclass
class Options:
    """How a client connects and retries (clients/fixtures/README.md, "Bounds").

    hosts: "host:port" addresses, tried in order (the first first); a not_primary or
    wrong_set naming another address adds it. token: sent in hello after every connect
    (None: no hello). timeout_ms: one attempt (connect, hello, reply), ms > 0. retries: sends
    of a call after its first, 0..1000. backoff_ms, backoff_max_ms: the pause before a retry
    on another host, doubling. moving_wait_max_ms: the longest wait a `moving` reply's
    retry_after_ms gets. max_in_flight: AsyncClient's bound on calls sent and not answered
    on its one connection (later calls wait to be sent)."""
    hosts: List[str]
    token: Optional[str] = None
    timeout_ms: int = 5000
    retries: int = 8
    backoff_ms: int = 20
    backoff_max_ms: int = 500
    moving_wait_max_ms: int = 5000
    max_in_flight: int = 1024
    extra: Dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        if isinstance(self.hosts, str):
            self.hosts = [h.strip() for h in self.hosts.split(',') if h.strip()]
        if not self.hosts:
            raise ValueError('hosts: at least one "host:port"')
        for h in self.hosts:
            split_addr(h)
        if self.timeout_ms <= 0:
            raise ValueError('timeout_ms: must be > 0')
        if not 0 <= self.retries <= 1000:
            raise ValueError('retries: 0..1000')
        if not 0 <= self.backoff_ms <= self.backoff_max_ms:
            raise ValueError('backoff_ms: 0..backoff_max_ms')
        if self.max_in_flight < 1:
            raise ValueError('max_in_flight: must be >= 1')


def split_addr(addr: str) -> Tuple[str, int]:
    """"host:port" or "[v6]:port" -> (host, port); ValueError otherwise."""
    host, sep, port = addr.rpartition(':')
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError('not a "host:port" address: %r' % addr)
    if host.startswith('[') and host.endswith(']'):
        host = host[1:-1]
    return host, int(port)


_KEY_PREFIX = 'py-%s-' % secrets.token_hex(KEY_BYTES // 2)  # this process's: random, so keys never collide
_key_seq = itertools.count(1)


def new_key() -> str:
    """A fresh idempotency key in the `request` alphabet: this process's random prefix (64
    bits) and a counter, so never the same twice (at most 40 bytes)."""
    return '%s%x' % (_KEY_PREFIX, next(_key_seq))


def encode(obj: Reply) -> bytes:
    """One request line: compact JSON, UTF-8, "\\n"."""
    return json.dumps(obj, separators=(',', ':'), ensure_ascii=False, allow_nan=False).encode('utf-8') + b'\n'


def parse_reply(line: bytes) -> Reply:
    """A reply line (with or without "\\n") -> the reply object; ConnectionLost when it is
    not a JSON object with a boolean "ok" (the stream cannot be trusted after it)."""
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise ConnectionLost('a reply that is not JSON: %s' % e) from None
    if not isinstance(obj, dict) or not isinstance(obj.get('ok'), bool):
        raise ConnectionLost('a line that is not a reply: %.200r' % line)
    return obj


def parse_line(line: bytes) -> Reply:
    """Any line of the server (a reply or a pushed feed entry) -> its object; ConnectionLost
    when it is not a JSON object."""
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise ConnectionLost('a line that is not JSON: %s' % e) from None
    if not isinstance(obj, dict):
        raise ConnectionLost('a line that is not an object: %.200r' % line)
    return obj


def is_feed_entry(obj: Reply) -> bool:
    """A pushed feed entry ({"feed":SEQ,"type":...}), not a reply."""
    seq = obj.get('feed')
    return 'ok' not in obj and isinstance(seq, int) and not isinstance(seq, bool)


def build(op: str, fields: Dict[str, Any], allow_feed: bool = False) -> Reply:
    """The request object of one call: op first, the fields (None values left out), and a
    new `request` key for a keyed op without one."""
    if not isinstance(op, str) or not op:
        raise ValueError('op: a non-empty string')
    if op in FEED_OPS and not allow_feed:
        raise ValueError('%s: use feed() (a subscribed connection is the feed consumer\'s own)' % op)
    req: Reply = {'op': op}
    for k, v in fields.items():
        if k == 'op':
            continue
        if v is not None:
            req[k] = v
    if op in KEYED_OPS and 'request' not in req:
        req['request'] = new_key()
    return req


@dataclass
class Stats:
    """What a client did, summed over its calls (as the C client's slot_follow_stats)."""
    calls: int = 0  # calls made
    sends: int = 0  # attempts: first sends and retries
    retries: int = 0  # attempts after a call's first
    follows: int = 0  # not_primary / wrong_set answers whose primary was followed

    def attempt(self, att: 'Attempt') -> None:
        self.sends += 1
        if att.sends > 1:
            self.retries += 1


class Hosts:
    """The address list and which one the connection goes to."""

    def __init__(self, hosts: Sequence[str]) -> None:
        self.addrs = list(hosts)
        self.index = 0

    def current(self) -> str:
        return self.addrs[self.index]

    def advance(self) -> str:
        self.index = (self.index + 1) % len(self.addrs)
        return self.current()

    def go(self, addr: str) -> str:
        """Point at addr, added to the list when new (a bounded list: at most 64)."""
        if addr not in self.addrs:
            if len(self.addrs) >= 64:
                self.addrs.pop()
            self.addrs.append(addr)
        self.index = self.addrs.index(addr)
        return addr


class Attempt:
    """One call across its attempts: the request line (the same on every send) and what the
    rule says after each outcome."""

    def __init__(self, req: Reply, opts: Options) -> None:
        self.req = req
        self.line = encode(req)
        self.opts = opts
        self.sends = 0
        self.pause_ms = float(opts.backoff_ms)
        self.last_reply: Optional[Reply] = None
        self.last_what = ''

    def _pause(self) -> float:
        p = min(self.pause_ms, float(self.opts.backoff_max_ms))
        self.pause_ms = min(self.pause_ms * 2, float(self.opts.backoff_max_ms)) if self.pause_ms else 0
        return p / 1000.0

    def _retry(self, action: str, addr: Optional[str], wait_s: float) -> Tuple[str, Optional[str], float]:
        if self.sends > self.opts.retries:
            raise self.exhausted()
        return action, addr, wait_s

    def on_reply(self, addr: str, reply: Reply) -> Tuple[str, Optional[str], float]:
        """After a reply from addr: (RETURN, None, 0), (FOLLOW_ADDR, primary, 0),
        (NEXT, None, pause_s) or (SAME, None, wait_s); raises SlotError for an ok:false
        reply that is the server's decision, and the client's unavailable when the retries
        ran out."""
        if reply.get('ok') is True:
            return RETURN, None, 0.0
        code = reply.get('error')
        code = code if isinstance(code, str) else 'internal'
        if code not in FOLLOW and code not in NEXT_HOST and code not in SAME_HOST:
            raise SlotError(code, reply)
        self.last_reply = reply
        self.last_what = '%s: %s' % (addr, code)
        primary = reply.get('primary')
        if code in FOLLOW and isinstance(primary, str) and primary and primary != addr:
            try:
                split_addr(primary)
                return self._retry(FOLLOW_ADDR, primary, 0.0)
            except ValueError:
                pass
        if code == 'moving':
            after = reply.get('retry_after_ms')
            if isinstance(after, int) and not isinstance(after, bool) and after >= 0:
                return self._retry(SAME, None, min(after, self.opts.moving_wait_max_ms) / 1000.0)
            return self._retry(SAME, None, self._pause())
        if code == 'overloaded':
            return self._retry(SAME, None, self._pause())
        return self._retry(NEXT, None, self._pause())

    def on_lost(self, addr: str, why: str) -> Tuple[str, Optional[str], float]:
        """After an attempt to addr without a reply: (NEXT, None, pause_s), or the client's
        unavailable when the retries ran out."""
        self.last_what = '%s: %s' % (addr, why)
        self.last_reply = None
        return self._retry(NEXT, None, self._pause())

    def exhausted(self) -> SlotError:
        msg = 'gave up after %d attempts; last: %s' % (self.sends, self.last_what)
        reply: Reply = {'ok': False, 'error': 'unavailable', 'message': msg, 'client': True,
                        'attempts': self.sends}
        if self.last_reply is not None:
            reply['last'] = self.last_reply
        return SlotError('unavailable', reply, msg)


def result(reply: Reply) -> Reply:
    """The value a call returns for a final reply (ok:false ones were raised already)."""
    return reply


def hello_request(token: Optional[str]) -> Reply:
    return {'op': 'hello', 'token': token} if token is not None else {'op': 'hello'}


def check_hello(reply: Reply) -> None:
    """A hello answered ok:false is final (unauthenticated: a wrong token is not retried)."""
    if reply.get('ok') is not True:
        code = reply.get('error') if isinstance(reply.get('error'), str) else 'unauthenticated'
        raise SlotError(code, reply)


FeedFrom = Union[str, int]


def subscribe_request(consumer: str, from_: FeedFrom, window: Optional[int]) -> Reply:
    req: Reply = {'op': 'subscribe', 'consumer': consumer, 'from': from_}
    if window is not None:
        req['window'] = window
    return req
