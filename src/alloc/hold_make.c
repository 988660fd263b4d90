/*
 * hold_make.c — a new held hold (docs/design.md, "The allocation rule"): the
 * units taken from the shards and the writes of the hold, its idempotency
 * and expiry entries, the user's total and its feed entry. One writer for
 * every way a hold is born: a plain hold (alloc.c), each item of a cart
 * (cart.c) and a waitlist join or offer (waitlist.c).
 */
#include <errno.h>
#include <string.h>

#include "alloc_int.h"
#include "idem.h"
#include "slot/assert.h"
#include "slot/failpoint.h"
#include "slot/feed.h"

typedef slot__alloc_ctx ctx;

/* Takes qty units: random start shard, then the others in turn (docs/design.md,
 * "The allocation rule"). The caller has checked that the event's free units
 * (capacity - held - confirmed, equal to the sum over shards by invariant 1)
 * are at least qty. */
int slot__units_take(ctx *c, const slot_event_rec *e, slot_hold_rec *h)
{
    uint32_t n = e->shards;
    uint32_t start = (uint32_t)(slot__rng_next(c->a) % n);
    uint32_t taken = 0;
    h->nparts = 0;
    for (uint32_t i = 0; i < n && taken < h->qty; i++) {
        uint16_t s = (uint16_t)((start + i) % n);
        uint64_t f;
        int rc = slot_store_shard_get(c->st, c->txn, c->ev, c->ev_len, s, &f);
        if (rc != 0)
            return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
        if (f == 0)
            continue;
        uint32_t want = h->qty - taken;
        uint32_t take = f < want ? (uint32_t)f : want;
        rc = slot_store_shard_put(c->st, c->txn, c->ev, c->ev_len, s, f - take);
        if (rc != 0)
            return rc;
        h->parts[h->nparts].shard = s;
        h->parts[h->nparts].qty = (uint16_t)take;
        h->nparts++;
        taken += take;
    }
    return taken == h->qty ? 0 : MDB_CORRUPTED; /* shards held fewer than the counters said */
}

void slot__hold_new(slot_hold_rec *h, const char *user, size_t user_len, const char *request, size_t request_len,
                    uint32_t qty)
{
    h->seq = h->tag = h->origin = 0;
    h->nparts = h->extensions = h->returned = 0;
    h->replaced_by_seq = h->replaced_by_tag = h->replaces_seq = h->replaces_tag = 0;
    h->status = SLOT_HOLD_HELD;
    h->qty = (uint16_t)qty;
    h->user_len = (uint8_t)user_len;
    memcpy(h->user, user, user_len);
    h->user[user_len] = 0;
    h->request_len = (uint8_t)request_len;
    memcpy(h->request, request, request_len);
    h->request[request_len] = 0;
    h->kind = SLOT_HOLD_KIND_PLAIN;
}

/* The writes of a new held hold (docs/design.md, "The allocation rule"): its
 * seq, tag and times, the shards, the hold, the idempotency entry, the expiry
 * entry, the user's total (user_total: the new total, with max_per_user;
 * UINT64_MAX leaves the row alone) and e's counters. The caller writes e. */
int slot__hold_make(ctx *c, slot_event_rec *e, slot_hold_rec *h, uint64_t user_total)
{
    h->seq = e->next_seq++;
    h->tag = slot__rng_next(c->a);
    h->created_at_ms = c->now_ms;
    h->expires_at_ms = c->now_ms + e->hold_ttl_ms;
    int rc = slot__units_take(c, e, h);
    e->held += h->qty;
    if (rc == 0 && SLOT_FAIL(AFTER_SHARD_UPDATE))
        rc = EIO;
    if (rc == 0)
        rc = slot_store_hold_add(c->st, c->txn, c->ev, c->ev_len, h);
    if (rc == 0 && SLOT_FAIL(AFTER_HOLD_INSERT))
        rc = EIO;
    /* The caller's slot__request_find found no entry for this key (or dropped
     * a stale one), and nothing since added one: add without looking again. */
    bool offer = h->kind == SLOT_HOLD_KIND_WAITLIST && h->origin != 0; /* its key was never looked up here */
    SLOT_ASSERT(!slot__idem_cold(c->a->idem, c->ev, c->ev_len)); /* slot__idem_event_ready ran */
    if (rc == 0 && (offer ? slot__idem_put : slot__idem_add)(c->a->idem, c->ev, c->ev_len, h->user, h->user_len,
                                                            h->request, h->request_len, h->seq) != 0)
        rc = ENOMEM; /* the batch aborts; the entry, if any, is dropped as stale later */
    if (rc == 0 && SLOT_FAIL(AFTER_IDEMPOTENCY_INSERT))
        rc = EIO; /* leaves a stale index entry: slot__request_find must see through it */
    if (rc == 0 && SLOT_FAIL(MAP_FULL))
        rc = MDB_MAP_FULL;
    if (rc == 0)
        rc = slot_store_expiry_put(c->st, c->txn, h->expires_at_ms, c->ev, c->ev_len, h->seq);
    if (rc == 0 && e->max_per_user > 0 && user_total != UINT64_MAX)
        rc = slot_store_user_put(c->st, c->txn, c->ev, c->ev_len, h->user, h->user_len, user_total);
    if (rc == 0 && !offer) /* an offer's entry is hold.offered, written by the waitlist */
        rc = slot__hold_feed(c, h, SLOT_FEED_HOLD_HELD);
    return rc;
}
