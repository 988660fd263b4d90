"""One method per op of docs/protocol.md, shared by Client (returning the reply) and
AsyncClient (returning an awaitable of it). Each builds the op's fields and calls
request(); `**extra` passes fields the method does not name (newer ones, v1.2's
`client`, `grant`, `allocation`, `seats`...) as they are."""
from typing import Any, Dict, Generic, List, Optional, TypeVar

R = TypeVar('R')


class Ops(Generic[R]):
    def request(self, op: str, fields: Optional[Dict[str, Any]] = None, **kw: Any) -> R:
        raise NotImplementedError

    # ---- frontend ops
    def hello(self, token: Optional[str] = None) -> R:
        """hello: who this connection is. The client sends it itself after each connect when
        it has a token; this sends one more on the current connection."""
        return self.request('hello', {'token': token})

    def hold(self, event: str, user: str, qty: Optional[int] = None, *, request: Optional[str] = None,
             ttl_ms: Optional[int] = None, **extra: Any) -> R:
        """hold qty units (or extra seats=[...]) of event for user. `request` is the
        idempotency key: made once per call when None and kept across its retries. Returns
        {"status":"held",...} or {"status":"sold_out",...} (an answer, not an error)."""
        return self.request('hold', dict(extra, event=event, user=user, qty=qty, request=request, ttl_ms=ttl_ms))

    def confirm(self, event: str, hold: str, user: Optional[str] = None, *, qty: Optional[int] = None,
                reacquire: Optional[bool] = None, **extra: Any) -> R:
        """confirm (the buyer paid); qty for a partial confirm, reacquire for a late payment."""
        return self.request('confirm', dict(extra, event=event, hold=hold, user=user, qty=qty, reacquire=reacquire))

    def release(self, event: str, hold: str, user: Optional[str] = None, **extra: Any) -> R:
        """release (the buyer gave up): {"released":true|false,"status":...}."""
        return self.request('release', dict(extra, event=event, hold=hold, user=user))

    def extend(self, event: str, hold: str, user: Optional[str], by_ms: int, **extra: Any) -> R:
        """extend a held hold by by_ms (1000..86400000)."""
        return self.request('extend', dict(extra, event=event, hold=hold, user=user, by_ms=by_ms))

    def get_hold(self, event: str, hold: str, user: Optional[str] = None, **extra: Any) -> R:
        """get_hold: the hold's status, qty, expires_at, created_at."""
        return self.request('get_hold', dict(extra, event=event, hold=hold, user=user))

    def event(self, event: str, **extra: Any) -> R:
        """event: the event view (capacity, available, held, confirmed, ...)."""
        return self.request('event', dict(extra, event=event))

    def hold_many(self, user: str, items: List[Dict[str, Any]], *, request: Optional[str] = None,
                  **extra: Any) -> R:
        """hold_many: a cart of items [{"event":E,"qty":N},...], all or nothing; keyed as hold."""
        return self.request('hold_many', dict(extra, user=user, items=items, request=request))

    def waitlist_join(self, event: str, user: str, qty: int, *, request: Optional[str] = None,
                      **extra: Any) -> R:
        """waitlist_join: {"status":"waiting","position":N}, or a hold. Keyed as hold; the
        entry is named by its key in waitlist and waitlist_leave, so pass your own `request`."""
        return self.request('waitlist_join', dict(extra, event=event, user=user, qty=qty, request=request))

    def waitlist_leave(self, event: str, user: str, request: str, **extra: Any) -> R:
        """waitlist_leave: the entry of (event, user, request) leaves: {"left":true|false}."""
        return self.request('waitlist_leave', dict(extra, event=event, user=user, request=request))

    def waitlist(self, event: str, user: str, request: str, **extra: Any) -> R:
        """waitlist: the state of the entry of (event, user, request)."""
        return self.request('waitlist', dict(extra, event=event, user=user, request=request))

    def cluster(self) -> R:
        """cluster: this node's view of its replica set (any role)."""
        return self.request('cluster', {})

    # ---- admin ops
    def create_event(self, event: str, capacity: Optional[int] = None, **settings: Any) -> R:
        """create_event (admin): shards, hold_ttl_ms, max_per_user, max_per_request, opens_at,
        closes_at, max_extensions, max_hold_ms, waitlist_max as keywords."""
        return self.request('create_event', dict(settings, event=event, capacity=capacity))

    def set_capacity(self, event: str, capacity: int) -> R:
        return self.request('set_capacity', {'event': event, 'capacity': capacity})

    def reshard(self, event: str, shards: int) -> R:
        return self.request('reshard', {'event': event, 'shards': shards})

    def set_status(self, event: str, status: str) -> R:
        """set_status: "on_sale" or "closed"."""
        return self.request('set_status', {'event': event, 'status': status})

    def set_sale_window(self, event: str, opens_at: int, closes_at: int) -> R:
        """set_sale_window: ms since the epoch, 0 = none."""
        return self.request('set_sale_window', {'event': event, 'opens_at': opens_at, 'closes_at': closes_at})

    def cancel(self, event: str, hold: str) -> R:
        return self.request('cancel', {'event': event, 'hold': hold})

    def shards(self, event: str) -> R:
        return self.request('shards', {'event': event})

    def check(self, event: Optional[str] = None) -> R:
        """check: a full scan of the invariants; {"violations":[]} when all hold."""
        return self.request('check', {'event': event})

    def expire(self) -> R:
        return self.request('expire', {})

    def stats(self) -> R:
        return self.request('stats', {})

    def metrics(self) -> R:
        return self.request('metrics', {})

    def digest(self) -> R:
        return self.request('digest', {})

    def backup(self, path: str) -> R:
        """backup: the server writes a backup of its store to path (absolute, on its machine)."""
        return self.request('backup', {'path': path})

    def waitlist_entries(self, event: str, limit: Optional[int] = None) -> R:
        return self.request('waitlist_entries', {'event': event, 'limit': limit})

    def feed_consumers(self) -> R:
        return self.request('feed_consumers', {})

    def feed_forget(self, consumer: str) -> R:
        return self.request('feed_forget', {'consumer': consumer})

    def cluster_change(self, change: str, node: str) -> R:
        """cluster_change: "add", "remove" or "promote" of member node."""
        return self.request('cluster_change', {'change': change, 'node': node})
