/*
 * block.c — allocations (docs/protocol.md, "Allocations"; "Clarifications of
 * v1.2", Allocations): allocate moves free units of an event (and of each
 * ancestor, as a hold would) into a named block, deallocate gives unused ones
 * back to the shards, and the event view lists the event's blocks. A hold
 * from a block is admitted in alloc_core.c and moved in hold.c. Internal to
 * libslot; see alloc_int.h.
 *
 * Counters: a block's remaining units are counted in the `allocated` of its
 * event and of every ancestor, so free = capacity - held - confirmed -
 * allocated stays the sum of the shards' free units on every event.
 */
#include <string.h>

#include "alloc_int.h"
#include "slot/assert.h"

typedef slot__alloc_ctx ctx;

/* Takes n free units out of event ev's shards (record e): from a random
 * shard on, each as much as it has. The caller checked e has n free. */
static int shards_drain(ctx *c, const char *ev, size_t ev_len, const slot_event_rec *e, uint64_t n)
{
    uint32_t start = (uint32_t)(slot__rng_next(c->a) % e->shards);
    for (uint32_t i = 0; n > 0 && i < e->shards; i++) {
        uint16_t s = (uint16_t)((start + i) % e->shards);
        uint64_t f = 0;
        int rc = slot_store_shard_get(c->st, c->txn, ev, ev_len, s, &f);
        if (rc != 0)
            return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
        uint64_t take = f < n ? f : n;
        if (take > 0 && (rc = slot_store_shard_put(c->st, c->txn, ev, ev_len, s, f - take)) != 0)
            return rc;
        n -= take;
    }
    return n == 0 ? 0 : MDB_CORRUPTED; /* the shards held fewer than the counters said */
}

/* Gives n units to event ev's shards (record e), spread evenly from a random shard on. */
static int shards_fill(ctx *c, const char *ev, size_t ev_len, const slot_event_rec *e, uint64_t n)
{
    uint32_t m = e->shards, start = (uint32_t)(slot__rng_next(c->a) % m);
    for (uint32_t i = 0; n > 0 && i < m; i++) {
        uint64_t share = n / (m - i) + (n % (m - i) ? 1 : 0);
        uint16_t s = (uint16_t)((start + i) % m);
        uint64_t f = 0;
        int rc = slot_store_shard_get(c->st, c->txn, ev, ev_len, s, &f);
        if (rc == 0)
            rc = slot_store_shard_put(c->st, c->txn, ev, ev_len, s, f + share);
        if (rc != 0)
            return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
        n -= share;
    }
    return 0;
}

/* Moves n units between the free shards and `allocated` on c's event (e,
 * written by the caller) and on every ancestor (written here): into blocks
 * (take) or back out of them. */
static int chain_move(ctx *c, slot_event_rec *e, uint64_t n, bool take)
{
    int rc = take ? shards_drain(c, c->ev, c->ev_len, e, n) : shards_fill(c, c->ev, c->ev_len, e, n);
    if (rc != 0)
        return rc;
    if (!take && e->allocated < n)
        return MDB_CORRUPTED;
    e->allocated = take ? e->allocated + n : e->allocated - n;
    slot__chain ch;
    rc = slot__chain_load(c, e, &ch);
    for (uint8_t i = 0; rc == 0 && i < ch.n; i++) {
        slot__anc *an = &ch.anc[i];
        if (!take && an->rec.allocated < n)
            return MDB_CORRUPTED;
        rc = take ? shards_drain(c, an->name, an->len, &an->rec, n) : shards_fill(c, an->name, an->len, &an->rec, n);
        an->rec.allocated = take ? an->rec.allocated + n : an->rec.allocated - n;
        if (rc == 0)
            rc = slot_store_event_put(c->st, c->txn, an->name, an->len, &an->rec);
    }
    return rc;
}

typedef struct count_ctx {
    uint32_t n;
} count_ctx;

static int count_block(void *p, const slot_block_rec *b)
{
    ((count_ctx *)p)->n += !b->closed;
    return 0;
}

/* The event view after an allocation change, its entry in the feed (event.changed), the reply. */
static int block_done(ctx *c, slot_event_rec *e, const slot_block_rec *b, slot_res *res)
{
    int rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, e);
    if (rc == 0) {
        slot__view_fill(&res->view, c->ev, c->ev_len, e);
        rc = slot__view_family(c, &res->view, e);
    }
    if (rc == 0)
        rc = slot__view_blocks(c, &res->view);
    if (rc == 0)
        rc = slot__event_feed(c, &res->view, SLOT_FEED_EVENT_CHANGED);
    res->block = true;
    memcpy(res->block_name, b->name, b->name_len + 1u);
    res->block_qty = b->qty;
    res->block_remaining = b->remaining;
    return rc;
}

int slot__op_allocate(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    int rc = slot__event_load(c, &e, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    if (e.seated) { /* a block of a seated event would be seats in state 'x': not built (seat_int.h) */
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT,
                       "allocation: event \"%s\" is seated; blocks of seats are not supported by this server", c->ev);
        return 0;
    }
    /* Not held back by the waitlist ("Clarifications of v1.2"); due holds are expired first, as a
     * hold's would, before the block is read: an expired hold of a closed block may end it. */
    uint64_t avail = 0;
    rc = slot__chain_free(c, &e, 0, &avail, NULL);
    if (rc == 0 && avail < req->alloc_qty) {
        rc = slot__expire_event_due(c, &e);
        if (rc == 0)
            rc = slot__chain_free(c, &e, 0, &avail, NULL);
    }
    if (rc != 0)
        return rc;
    if (avail < req->alloc_qty) {
        res->sold_out = true;
        res->available = avail;
        return 0;
    }
    slot_block_rec b;
    rc = slot_store_block_get(c->st, c->txn, c->ev, c->ev_len, req->alloc, req->alloc_len, &b);
    if (rc == MDB_NOTFOUND) {
        count_ctx n = {0};
        rc = slot_store_blocks_scan(c->st, c->txn, c->ev, c->ev_len, count_block, &n);
        if (rc == 0 && n.n >= SLOT_BLOCKS_MAX) {
            slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "allocation: event \"%s\" has %d blocks, the most it may have",
                           c->ev, SLOT_BLOCKS_MAX);
            return 0;
        }
        memset(&b, 0, sizeof(b));
        memcpy(b.name, req->alloc, req->alloc_len + 1u);
        b.name_len = req->alloc_len;
    }
    if (rc == 0 && b.closed) { /* deallocated, its holds still active: open again */
        count_ctx n = {0};
        rc = slot_store_blocks_scan(c->st, c->txn, c->ev, c->ev_len, count_block, &n);
        if (rc == 0 && n.n >= SLOT_BLOCKS_MAX) {
            slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "allocation: event \"%s\" has %d blocks, the most it may have",
                           c->ev, SLOT_BLOCKS_MAX);
            return 0;
        }
        b.closed = false;
        b.max_per_user = 0;
    }
    if (rc != 0)
        return rc;
    rc = chain_move(c, &e, req->alloc_qty, true);
    b.qty += req->alloc_qty;
    b.remaining += req->alloc_qty;
    if (req->has & SLOT_HAS_MAX_PER_USER)
        b.max_per_user = req->max_per_user;
    if (rc == 0)
        rc = slot_store_block_put(c->st, c->txn, c->ev, c->ev_len, &b);
    if (rc == 0 && e.waiting > 0) { /* entries waiting on this block may be met now */
        rc = slot__waitlist_serve(c, &e);
        if (rc == 0) /* the reply's remaining is what the hand-out left */
            rc = slot_store_block_get(c->st, c->txn, c->ev, c->ev_len, req->alloc, req->alloc_len, &b);
    }
    return rc == 0 ? block_done(c, &e, &b, res) : rc;
}

int slot__op_deallocate(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    int rc = slot__event_load(c, &e, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    slot_block_rec b;
    rc = slot_store_block_get(c->st, c->txn, c->ev, c->ev_len, req->alloc, req->alloc_len, &b);
    if (rc == MDB_NOTFOUND || (rc == 0 && b.closed)) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "allocation: event \"%s\" has no block \"%s\"", c->ev, req->alloc);
        return 0;
    }
    if (rc != 0)
        return rc;
    bool all = !(req->has & SLOT_HAS_ALLOC_QTY);
    uint64_t n = all ? b.remaining : req->alloc_qty;
    if (n > b.remaining) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "qty: %llu is above allocation \"%s\"'s remaining %llu",
                       (unsigned long long)n, req->alloc, (unsigned long long)b.remaining);
        return 0;
    }
    rc = n > 0 ? chain_move(c, &e, n, false) : 0;
    b.qty -= n;
    b.remaining -= n;
    /* Without qty the block goes: its holds' units then come back to the free shards. While it
     * has holds it stays, closed, so that their counts stay right until the last one ends. */
    b.closed = all;
    if (rc == 0)
        rc = all && b.held + b.confirmed == 0
                 ? slot_store_block_del(c->st, c->txn, c->ev, c->ev_len, b.name, b.name_len)
                 : slot_store_block_put(c->st, c->txn, c->ev, c->ev_len, &b);
    /* The units given back serve the waitlist as a release would; a block
     * removed makes its waiting entries wait for the free units instead. */
    if (rc == 0 && (n > 0 || all)) {
        rc = slot__waitlist_serve(c, &e);
        /* The reply's remaining is what the hand-out left: a block kept open may
         * have met its own waiting entries (model seed 1796283277713573550). */
        if (rc == 0 && !all)
            rc = slot_store_block_get(c->st, c->txn, c->ev, c->ev_len, req->alloc, req->alloc_len, &b);
    }
    return rc == 0 ? block_done(c, &e, &b, res) : rc;
}

/* ---- the view's "allocations" */

static int view_block(void *p, const slot_block_rec *b)
{
    slot_event_view *v = p;
    if (b->closed)
        return 0; /* deallocated: no longer the event's */
    if (v->nblocks >= SLOT_BLOCKS_MAX)
        return MDB_CORRUPTED; /* allocate refuses more */
    memcpy(v->blocks[v->nblocks].name, b->name, b->name_len + 1u);
    v->blocks[v->nblocks].qty = b->qty;
    v->blocks[v->nblocks].remaining = b->remaining;
    v->blocks[v->nblocks].held = b->held;
    v->blocks[v->nblocks].confirmed = b->confirmed;
    v->nblocks++;
    return 0;
}

int slot__view_blocks(ctx *c, slot_event_view *v)
{
    v->nblocks = 0;
    return slot_store_blocks_scan(c->st, c->txn, c->ev, c->ev_len, view_block, v);
}

int slot__block_known(ctx *c, const slot_req *req, slot_res *res)
{
    slot_block_rec b;
    int rc = slot_store_block_get(c->st, c->txn, c->ev, c->ev_len, req->alloc, req->alloc_len, &b);
    if (rc == MDB_NOTFOUND || (rc == 0 && b.closed)) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "allocation: event \"%s\" has no block \"%s\"", c->ev, req->alloc);
        return SLOT__ANSWERED;
    }
    return rc;
}
