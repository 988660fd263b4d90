/*
 * waitlist.c — the waitlist of an event (docs/protocol.md, "Waitlist";
 * docs/design.md, "Waitlists"): join, leave, the entry's state, the first
 * entries (admin). The hand-out of returned units in join order
 * (slot__waitlist_serve) is part of the hold's life, in hold.c. Internal to
 * libslot; see alloc_int.h.
 *
 * A position is answered without walking the list: offers are made strictly
 * in join order, so every entry offered precedes every entry waiting, and
 * position(join) = join - served - (entries that left with a smaller join
 * seq), the last from a Fenwick tree in the waitlist database (<= 40 reads).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_int.h"
#include "slot/assert.h"
#include "slot/failpoint.h"

typedef slot__alloc_ctx ctx;

#define JOIN_SEQ_END (UINT64_C(1) << SLOT_JOIN_SEQ_BITS) /* join seqs are 1..JOIN_SEQ_END-1 */

static int position_of(ctx *c, const slot_event_rec *e, uint64_t join, uint64_t *pos)
{
    uint64_t left = 0;
    int rc = slot_store_wait_left_count(c->st, c->txn, c->ev, c->ev_len, join - 1, &left);
    if (rc == 0 && join <= e->served + left)
        rc = MDB_CORRUPTED; /* a waiting entry has a position of at least 1 */
    if (rc == 0)
        *pos = join - e->served - left;
    return rc;
}

/* ---- answers */

static void res_waiting(slot_res *res, const slot_wait_rec *w, uint64_t pos)
{
    res->wait_state = SLOT_WAIT_WAITING;
    res->position = pos;
    res->qty = w->qty;
}

/* The entry's state for the waitlist op and for a join's replay: waiting
 * with its position, the hold it was offered (current status; a due hold
 * reads as expired without being written), or left. */
static int res_entry(ctx *c, const slot_event_rec *e, const slot_wait_rec *w, slot_res *res)
{
    res->wait_state = w->state;
    if (w->state == SLOT_WAIT_WAITING) {
        uint64_t pos = 0;
        int rc = position_of(c, e, w->join, &pos);
        if (rc == 0)
            res_waiting(res, w, pos);
        return rc;
    }
    if (w->state == SLOT_WAIT_OFFERED) {
        slot_hold_rec h;
        int rc = slot_store_hold_get(c->st, c->txn, c->ev, c->ev_len, w->hold_seq, &h);
        if (rc == 0 && h.tag != w->hold_tag)
            rc = MDB_CORRUPTED;
        if (rc == 0)
            slot__res_hold(res, &h, slot__hold_due(&h, c->now_ms) ? SLOT_HOLD_EXPIRED : h.status);
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    }
    return 0;
}

/* ---- ops */

/* A join's replay, or a key used another way: SLOT__ANSWERED with res set,
 * MDB_NOTFOUND for a new key, or an LMDB error. */
static int join_known(ctx *c, const slot_req *req, slot_event_rec *e, slot_res *res)
{
    slot_hold_rec h;
    int rc = slot__request_find(c, req->user, req->user_len, req->request, req->request_len, &h);
    if (rc == 0) {
        if (h.kind != SLOT_HOLD_KIND_WAITLIST)
            slot__key_conflict(res, req->request, c->ev);
        else if ((uint32_t)h.qty + h.returned != req->qty)
            slot_res_error(res, SLOT_E_IDEMPOTENCY_CONFLICT, "request \"%s\" joined with qty %u", req->request,
                           (unsigned)(h.qty + h.returned));
        else if ((rc = slot__hold_settle(c, e, &h)) == 0) {
            slot__res_hold(res, &h, h.status);
            res->wait_state = h.origin ? SLOT_WAIT_OFFERED : SLOT_WAIT_NONE;
            res->replay = true;
        }
        return rc == 0 ? SLOT__ANSWERED : rc;
    }
    if (rc != MDB_NOTFOUND)
        return rc;
    slot_wait_rec w;
    rc = slot_store_wait_key_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, req->request,
                                 req->request_len, &w);
    if (rc != 0)
        return rc;
    if (w.state == SLOT_WAIT_LEFT) { /* the key is spent (docs/protocol.md, "Clarifications of v1.1") */
        res->wait_state = SLOT_WAIT_LEFT;
        res->replay = true;
        return SLOT__ANSWERED;
    }
    if (w.qty != req->qty) {
        slot_res_error(res, SLOT_E_IDEMPOTENCY_CONFLICT, "request \"%s\" joined with qty %u", req->request,
                       (unsigned)w.qty);
        return SLOT__ANSWERED;
    }
    rc = res_entry(c, e, &w, res);
    res->replay = true;
    return rc == 0 ? SLOT__ANSWERED : rc;
}

/* Queues req at the tail: the entry, its key, the user's row (a join counts
 * against max_per_user), the event's counters. */
static int join_queue(ctx *c, const slot_req *req, slot_event_rec *e, uint64_t user_qty, slot_res *res)
{
    slot_wait_rec w;
    memset(&w, 0, sizeof(w));
    w.join = e->next_join++;
    w.state = SLOT_WAIT_WAITING;
    w.qty = (uint16_t)req->qty;
    w.joined_at_ms = c->now_ms;
    w.user_len = req->user_len;
    memcpy(w.user, req->user, req->user_len + 1u);
    w.request_len = req->request_len;
    memcpy(w.request, req->request, req->request_len + 1u);
    w.alloc_len = req->alloc_len; /* served from its block (docs/protocol.md, "Allocations") */
    memcpy(w.alloc, req->alloc, req->alloc_len + 1u);
    e->waiting++;
    e->waiting_qty += w.qty;
    int rc = slot__family_note(c, e, 1, &w.order); /* the family's one join order */
    if (rc == 0)
        rc = slot_store_wait_put(c->st, c->txn, c->ev, c->ev_len, &w);
    if (rc == 0)
        rc = slot_store_wait_key_put(c->st, c->txn, c->ev, c->ev_len, &w);
    if (rc == 0 && e->max_per_user > 0)
        rc = slot_store_user_put(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, user_qty + w.qty);
    if (rc == 0) /* the ancestors' max_per_user counts the waiting units too */
        rc = slot__chain_users(c, e, req->user, req->user_len, w.qty, 0);
    uint64_t pos = 0;
    if (rc == 0)
        rc = position_of(c, e, w.join, &pos);
    if (rc == 0)
        rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, e);
    if (rc == 0)
        res_waiting(res, &w, pos);
    return rc;
}

/*
 * waitlist_join. Decision order, as a hold's: field syntax -> unknown_event
 * -> replay or idempotency_conflict -> max_per_request -> not_on_sale ->
 * user_limit (the waiting units count) -> held when units are free and
 * nobody waits -> waiting -> sold_out with waitlist_full when the list is
 * full or the event has none. With `allocation`, an unknown block comes
 * before max_per_request, and "units are free" means the block has them (a
 * block's holds never wait behind the waitlist, as a hold from it does not).
 */
static int op_join(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    int rc = slot__event_load(c, &e, res);
    if (rc == 0)
        rc = join_known(c, req, &e, res);
    if (rc != MDB_NOTFOUND)
        return slot__answered_ok(rc);
    /* an unknown block before max_per_request, as for a hold ("Allocations") */
    if (req->alloc_len > 0 && (rc = slot__block_known(c, req, res)) != 0)
        return slot__answered_ok(rc);
    if (req->qty > e.max_per_request) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "qty: %u is above the event's max_per_request %u",
                       (unsigned)req->qty, (unsigned)e.max_per_request);
        return 0;
    }
    if (!slot__on_sale(c, &e, res))
        return 0;
    uint64_t grant_seq = 0; /* a room's waitlist_join carries a grant too ("Admission") */
    rc = slot__grant_check(c, req, req->grant, &e, &grant_seq, res);
    if (rc != 0 || res->err != SLOT_E_OK)
        return rc;
    uint64_t user_qty = 0;
    rc = slot__hold_admit(c, req, &e, &user_qty, res);
    if (rc != 0 || res->err != SLOT_E_OK)
        return rc;
    if (!res->sold_out) {
        slot_hold_rec h;
        slot__hold_new(&h, req->user, req->user_len, req->request, req->request_len, req->qty);
        h.kind = SLOT_HOLD_KIND_WAITLIST;
        h.alloc_len = req->alloc_len; /* from the block: its units (block_take) */
        memcpy(h.alloc, req->alloc, req->alloc_len + 1u);
        rc = slot__hold_make(c, &e, &h, user_qty + h.qty);
        if (rc == 0)
            rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, &e);
        if (rc == 0)
            slot__res_hold(res, &h, SLOT_HOLD_HELD);
        return rc;
    }
    if (e.waiting >= e.waitlist_max || e.next_join >= JOIN_SEQ_END) {
        res->waitlist_full = true; /* answered like a hold; nothing queued */
        return 0;
    }
    res->sold_out = false;
    res->available = 0;
    return join_queue(c, req, &e, user_qty, res);
}

/* waitlist_leave: a waiting entry leaves (its key is spent) and, since the
 * head may have left, the hand-out runs; any other state answers left:false. */
static int op_leave(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    int rc = slot__event_load(c, &e, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    slot_wait_rec w;
    rc = slot_store_wait_key_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, req->request,
                                 req->request_len, &w);
    if (rc == MDB_NOTFOUND || (rc == 0 && w.state != SLOT_WAIT_WAITING))
        return 0; /* left:false, nothing changes */
    if (rc != 0)
        return rc;
    if (e.waiting == 0 || e.waiting_qty < w.qty)
        return MDB_CORRUPTED;
    e.waiting--;
    e.waiting_qty -= w.qty;
    w.state = SLOT_WAIT_LEFT;
    rc = slot__family_note(c, &e, -1, NULL);
    if (rc == 0)
        rc = slot_store_wait_del(c->st, c->txn, c->ev, c->ev_len, w.join);
    if (rc == 0)
        rc = slot_store_wait_key_put(c->st, c->txn, c->ev, c->ev_len, &w);
    if (rc == 0)
        rc = slot_store_wait_left_add(c->st, c->txn, c->ev, c->ev_len, w.join);
    if (rc == 0 && e.max_per_user > 0) {
        uint64_t u = 0;
        rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, &u);
        if (rc == 0 && u < w.qty)
            rc = MDB_CORRUPTED;
        if (rc == 0)
            rc = slot_store_user_put(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, u - w.qty);
    }
    if (rc == 0)
        rc = slot__chain_users(c, &e, req->user, req->user_len, 0, w.qty);
    if (rc == 0)
        rc = slot__waitlist_serve(c, &e);
    if (rc == 0)
        rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, &e);
    if (rc == 0)
        res->done = true;
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

/* waitlist: the key's entry state, on any transaction (a read). */
static int op_state(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    int rc = slot__event_load(c, &e, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    slot_wait_rec w;
    rc = slot_store_wait_key_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, req->request,
                                 req->request_len, &w);
    if (rc == MDB_NOTFOUND) {
        res->wait_state = SLOT_WAIT_NONE;
        return 0;
    }
    if (rc == 0)
        rc = res_entry(c, &e, &w, res);
    return rc;
}

typedef struct shown {
    ctx *c;
    const slot_event_rec *e;
    slot_res *res;
    uint32_t limit;
} shown;

static int show_one(void *p, const slot_wait_rec *w)
{
    shown *s = p;
    slot_wait_entry *out = &s->res->entries[s->res->nentries];
    int rc = position_of(s->c, s->e, w->join, &out->position);
    if (rc != 0)
        return rc;
    out->qty = w->qty;
    out->joined_at_ms = w->joined_at_ms;
    memcpy(out->user, w->user, w->user_len + 1u);
    memcpy(out->request, w->request, w->request_len + 1u);
    return ++s->res->nentries == s->limit ? 1 : 0;
}

/* waitlist_entries (admin, a read): the first `limit` waiting entries, in join
 * order, with their positions; the view carries the list's length and units. */
static int op_entries(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    int rc = slot__event_load(c, &e, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    uint32_t limit = req->limit ? req->limit : 10;
    SLOT_ASSERT(limit <= SLOT_WAITLIST_SHOW_MAX);
    res->entries = calloc(limit, sizeof(*res->entries));
    if (!res->entries)
        return ENOMEM;
    shown s = {c, &e, res, limit};
    rc = slot_store_wait_scan(c->st, c->txn, c->ev, c->ev_len, 0, show_one, &s);
    res->view.waiting = e.waiting;
    res->view.waiting_qty = e.waiting_qty;
    res->view.waitlist_max = e.waitlist_max;
    return rc == 1 ? 0 : rc;
}

int slot__op_waitlist(ctx *c, const slot_req *req, slot_res *res)
{
    switch (req->op) {
    case SLOT_OP_WAITLIST_JOIN:
        return op_join(c, req, res);
    case SLOT_OP_WAITLIST_LEAVE:
        return op_leave(c, req, res);
    case SLOT_OP_WAITLIST:
        return op_state(c, req, res);
    case SLOT_OP_WAITLIST_ENTRIES:
        return op_entries(c, req, res);
    default:
        SLOT_ASSERT(!"slot__op_waitlist: not a waitlist op");
        return 0;
    }
}
