/*
 * hold.c — the hold state machine's one writer (slot__hold_finish) and the
 * expiry of due holds (the sweeper and the "expire" op): the part of the
 * allocator that gives units back. Internal to libslot; see alloc_int.h.
 */
#include <stddef.h>
#include <string.h>

#include "alloc_int.h"
#include "slot/assert.h"

typedef slot__alloc_ctx ctx;

bool slot__hold_due(const slot_hold_rec *h, uint64_t now_ms)
{
    return h->status == SLOT_HOLD_HELD && now_ms >= h->expires_at_ms;
}

static int shard_add(ctx *c, uint16_t shard, uint64_t units)
{
    uint64_t f;
    int rc = slot_store_shard_get(c->st, c->txn, c->ev, c->ev_len, shard, &f);
    if (rc == 0)
        rc = slot_store_shard_put(c->st, c->txn, c->ev, c->ev_len, shard, f + units);
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

/* Gives a hold's units back: each part to the shard it came from when that
 * shard still exists, the rest spread over the current shards starting at
 * one picked by the hold's sequence number (docs/protocol.md, "reshard"). */
static int units_return(ctx *c, const slot_event_rec *e, const slot_hold_rec *h)
{
    uint64_t leftover = 0;
    for (uint16_t i = 0; i < h->nparts; i++) {
        if (h->parts[i].shard < e->shards) {
            int rc = shard_add(c, h->parts[i].shard, h->parts[i].qty);
            if (rc != 0)
                return rc;
        } else {
            leftover += h->parts[i].qty;
        }
    }
    uint32_t n = e->shards;
    for (uint32_t i = 0; leftover > 0 && i < n; i++) {
        uint64_t share = leftover / (n - i) + (leftover % (n - i) ? 1 : 0);
        int rc = shard_add(c, (uint16_t)((h->seq + i) % n), share);
        if (rc != 0)
            return rc;
        leftover -= share;
    }
    return 0;
}

/*
 * hold_finish — the one place a hold changes state. Moves the hold's units
 * (back to the shards, or from held to confirmed), fixes the event and user
 * counters, drops the expiry entry when it leaves "held", and writes the hold
 * and the event. Counters that would go negative mean the store is corrupt:
 * MDB_CORRUPTED, and the batch is aborted.
 */
int slot__hold_finish(ctx *c, slot_event_rec *e, slot_hold_rec *h, slot_hold_status to)
{
    SLOT_ASSERT(slot_hold_transition_ok(h->status, to));
    slot_hold_status from = h->status;
    uint64_t *counter = from == SLOT_HOLD_HELD ? &e->held : &e->confirmed;
    if (*counter < h->qty)
        return MDB_CORRUPTED;
    *counter -= h->qty;
    int rc = 0;
    if (to == SLOT_HOLD_CONFIRMED) {
        e->confirmed += h->qty;
    } else {
        rc = units_return(c, e, h);
        if (rc == 0 && e->max_per_user > 0) {
            uint64_t u;
            rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, h->user, h->user_len, &u);
            if (rc == 0 && u < h->qty)
                rc = MDB_CORRUPTED;
            if (rc == 0)
                rc = slot_store_user_put(c->st, c->txn, c->ev, c->ev_len, h->user, h->user_len, u - h->qty);
        }
    }
    if (rc == 0 && from == SLOT_HOLD_HELD) {
        rc = slot_store_expiry_del(c->st, c->txn, h->expires_at_ms, c->ev, c->ev_len, h->seq);
        if (rc == MDB_NOTFOUND)
            rc = MDB_CORRUPTED;
    }
    h->status = to;
    if (rc == 0)
        rc = slot_store_hold_put(c->st, c->txn, c->ev, c->ev_len, h);
    if (rc == 0)
        rc = slot__hold_feed(c, h, slot_feed_type_of_status(to));
    /* The units that came back go to those waiting, in this commit; their
     * hold.offered entries follow the move that freed the units. */
    if (rc == 0 && to != SLOT_HOLD_CONFIRMED)
        rc = slot__waitlist_serve(c, e);
    if (rc == 0)
        rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, e);
    return rc;
}

/*
 * The partial confirm (docs/protocol.md, "Partial confirm"): the last parts
 * of the hold give back qty - keep units to their shards, the user's total
 * and the event's held count drop by as much, and the kept part moves from
 * held to confirmed through slot__hold_finish, all in the caller's
 * transaction. The hold's parts then add up to its (confirmed) qty, and
 * `returned` records what went back, so a replay tells the first outcome.
 */
int slot__hold_confirm(ctx *c, slot_event_rec *e, slot_hold_rec *h, uint32_t keep)
{
    SLOT_ASSERT(h->status == SLOT_HOLD_HELD);
    SLOT_ASSERT(keep >= 1 && keep <= h->qty);
    uint32_t back = h->qty - keep;
    if (back > 0) {
        slot_hold_rec give; /* only seq and the parts given back are read */
        give.seq = h->seq;
        give.nparts = 0;
        for (uint32_t need = back; need > 0;) {
            SLOT_ASSERT(h->nparts > 0); /* the parts add up to qty (invariant 3) */
            slot_hold_part *p = &h->parts[h->nparts - 1];
            uint16_t take = p->qty <= need ? p->qty : (uint16_t)need;
            give.parts[give.nparts].shard = p->shard;
            give.parts[give.nparts++].qty = take;
            p->qty = (uint16_t)(p->qty - take);
            if (p->qty == 0)
                h->nparts--;
            need -= take;
        }
        if (e->held < back)
            return MDB_CORRUPTED;
        e->held -= back;
        int rc = units_return(c, e, &give);
        if (rc == 0 && e->max_per_user > 0) {
            uint64_t u;
            rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, h->user, h->user_len, &u);
            if (rc == 0 && u < back)
                rc = MDB_CORRUPTED;
            if (rc == 0)
                rc = slot_store_user_put(c->st, c->txn, c->ev, c->ev_len, h->user, h->user_len, u - back);
        }
        if (rc != 0)
            return rc;
        h->qty = (uint16_t)keep;
        h->returned = (uint16_t)back;
    }
    int rc = slot__hold_finish(c, e, h, SLOT_HOLD_CONFIRMED);
    /* The units given back go to those waiting, after the hold.confirmed entry. */
    if (rc == 0 && back > 0 && e->waiting > 0) {
        rc = slot__waitlist_serve(c, e);
        if (rc == 0)
            rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, e);
    }
    return rc;
}

int slot__hold_extend(ctx *c, slot_hold_rec *h, uint64_t by_ms)
{
    SLOT_ASSERT(h->status == SLOT_HOLD_HELD);
    int rc = slot_store_expiry_del(c->st, c->txn, h->expires_at_ms, c->ev, c->ev_len, h->seq);
    if (rc == MDB_NOTFOUND)
        return MDB_CORRUPTED; /* every held hold has its expiry entry */
    h->expires_at_ms += by_ms;
    h->extensions++;
    if (rc == 0)
        rc = slot_store_expiry_put(c->st, c->txn, h->expires_at_ms, c->ev, c->ev_len, h->seq);
    if (rc == 0)
        rc = slot_store_hold_put(c->st, c->txn, c->ev, c->ev_len, h);
    if (rc == 0)
        rc = slot__hold_feed(c, h, SLOT_FEED_HOLD_EXTENDED);
    return rc;
}

/* ---- the feed's entries (slot/feed.h), in the change's own transaction */

int slot__hold_feed(ctx *c, const slot_hold_rec *h, slot_feed_type type)
{
    slot_feed_entry f;
    memset(&f, 0, offsetof(slot_feed_entry, view));
    f.type = type;
    f.at_ms = c->now_ms;
    f.event_len = (uint8_t)c->ev_len;
    memcpy(f.event, c->ev, c->ev_len);
    f.hold_seq = h->seq;
    f.hold_tag = h->tag;
    f.user_len = h->user_len;
    memcpy(f.user, h->user, h->user_len);
    f.request_len = h->request_len;
    memcpy(f.request, h->request, h->request_len);
    f.qty = h->qty; /* after a partial confirm: the confirmed part */
    f.expires_at_ms = h->expires_at_ms;
    f.returned = h->returned;
    f.replaces_seq = h->replaces_seq; /* a reacquire's hold: the hold it replaced */
    f.replaces_tag = h->replaces_tag;
    return slot_feed_append(c->st, c->txn, &f);
}

int slot__event_feed(ctx *c, const slot_event_view *v, slot_feed_type type)
{
    slot_feed_entry f;
    memset(&f, 0, sizeof(f));
    f.type = type;
    f.at_ms = c->now_ms;
    f.event_len = (uint8_t)c->ev_len;
    memcpy(f.event, c->ev, c->ev_len);
    f.view = *v;
    return slot_feed_append(c->st, c->txn, &f);
}

/* ---- expiry */

typedef struct due {
    uint64_t at, seq;
    uint8_t ev_len;
    char ev[SLOT_EVENT_BYTES_MAX + 1];
} due;

typedef struct due_list {
    due items[SLOT_EXPIRE_CHUNK];
    size_t n;
    const char *only_ev; /* NULL: every event */
    size_t only_len;
} due_list;

static int due_collect(void *p, uint64_t at, const char *ev, size_t ev_len, uint64_t seq)
{
    due_list *l = p;
    if (l->only_ev && (ev_len != l->only_len || memcmp(ev, l->only_ev, ev_len) != 0))
        return 0;
    due *d = &l->items[l->n++];
    d->at = at;
    d->seq = seq;
    d->ev_len = (uint8_t)ev_len;
    memcpy(d->ev, ev, ev_len);
    d->ev[ev_len] = 0;
    return l->n == SLOT_EXPIRE_CHUNK ? 1 : 0; /* 1 stops the scan: the chunk is full */
}

/* Expires one due hold named by the expiry index. */
static int expire_one(slot_alloc *a, MDB_txn *txn, const due *d, uint64_t now_ms)
{
    slot__alloc_ctx c = {a, a->store, txn, d->ev, d->ev_len, now_ms};
    slot_event_rec e;
    slot_hold_rec hold, *h = &hold;
    int rc = slot_store_event_get(c.st, txn, d->ev, d->ev_len, &e);
    if (rc == 0)
        rc = slot_store_hold_get(c.st, txn, d->ev, d->ev_len, d->seq, h);
    if (rc == 0 && (h->status != SLOT_HOLD_HELD || h->expires_at_ms != d->at))
        rc = MDB_CORRUPTED; /* the index names only held holds, at their expiry */
    if (rc == 0)
        rc = slot__hold_finish(&c, &e, h, SLOT_HOLD_EXPIRED);
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

/* Expires due holds (of one event, or all when ev is NULL), oldest first, at
 * most `limit`, in chunks of SLOT_EXPIRE_CHUNK. Each chunk is collected before it
 * is changed, so no cursor walks a database being written. */
int slot__expire_due(slot_alloc *a, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t now_ms, uint64_t limit,
                      uint64_t *expired)
{
    due_list list, *l = &list;
    int rc = 0;
    *expired = 0;
    while (*expired < limit) {
        l->n = 0;
        l->only_ev = ev;
        l->only_len = ev_len;
        rc = slot_store_expiry_scan(a->store, txn, now_ms, due_collect, l);
        if (rc == 1)
            rc = 0;
        for (size_t i = 0; rc == 0 && i < l->n && *expired < limit; i++) {
            rc = expire_one(a, txn, &l->items[i], now_ms);
            if (rc == 0)
                (*expired)++;
        }
        if (rc != 0 || l->n < SLOT_EXPIRE_CHUNK)
            break;
    }
    return rc;
}

int slot_alloc_expire_due(slot_alloc *a, MDB_txn *txn, uint64_t now_ms, uint64_t limit, uint64_t *expired)
{
    return slot__expire_due(a, txn, NULL, 0, now_ms, limit, expired);
}

