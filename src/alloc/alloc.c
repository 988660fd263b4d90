/*
 * alloc.c — the allocator: the ops of docs/protocol.md on one LMDB transaction.
 * slot_alloc_run is the dispatcher, the one caller of the op files (cart.c,
 * confirm.c, waitlist.c); this file also holds the event ops and the plain
 * hold. What the ops share is in alloc_core.c, the hold's writers in hold.c
 * (alloc_int.h has the layers).
 *
 * Every op reads and validates first and writes only when it will succeed,
 * so a failed request changes nothing even though it shares its write
 * transaction (group commit) with others. Units move only through
 * slot__hold_finish(), which is guarded by the hold state machine, so a hold's units
 * come back at most once (invariant 7).
 */
#include "slot/alloc.h"
#include "slot/check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_int.h"
#include "seat_int.h"
#include "slot/assert.h"

typedef slot__alloc_ctx ctx;

void slot_alloc_close(slot_alloc *a)
{
    slot__idem_free(a->idem);
    a->idem = NULL;
    slot__cold_free(a);
    slot__client_buckets_free(a);
}

int slot_alloc_init(slot_alloc *a, slot_store *store)
{
    a->store = store;
    a->idem = NULL;
    a->cold = NULL;
    a->buckets = NULL;
    return slot__rng_init(a);
}

/* ---- the event ops and the plain hold's */

/* Writes free units spread evenly over shards 0..n-1 (largest minus smallest
 * at most 1), as set_capacity and reshard require. O(n). */
static int shards_spread(ctx *c, uint32_t n, uint64_t free_units)
{
    SLOT_ASSERT(n >= 1);
    SLOT_ASSERT(n <= SLOT_SHARDS_MAX);
    uint64_t base = free_units / n, extra = free_units % n;
    for (uint32_t i = 0; i < n; i++) {
        int rc = slot_store_shard_put(c->st, c->txn, c->ev, c->ev_len, (uint16_t)i, base + (i < extra ? 1 : 0));
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Replay of a known (event, user, request): the original hold with its current status. */
static int hold_replay(ctx *c, const slot_req *req, slot_event_rec *e, slot_hold_rec *h, slot_res *res)
{
    uint32_t asked = (uint32_t)h->qty + h->returned; /* a partial confirm keeps what was first asked */
    if (asked != req->qty) {
        slot_res_error(res, SLOT_E_IDEMPOTENCY_CONFLICT, "request \"%s\" was used with qty %u", req->request,
                       (unsigned)asked);
        return 0;
    }
    bool same = true; /* a seat hold's replay names the same seats in the same order ("Clarifications of v1.2") */
    int rc = e->seated && (req->has & SLOT_HAS_SEATS) ? slot__seat_same(c, req, h, &same) : 0;
    if (rc == 0 && !same) {
        slot_res_error(res, SLOT_E_IDEMPOTENCY_CONFLICT, "request \"%s\" was used with other seats", req->request);
        return 0;
    }
    if (rc == 0)
        rc = slot__hold_settle(c, e, h);
    slot__res_hold(res, h, h->status);
    res->replay = true;
    if (rc == 0 && e->seated)
        rc = slot__seat_res(c, h, res);
    return rc;
}

static int op_hold(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    int rc = slot__event_load(c, &e, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    slot_hold_rec hold, *h = &hold;
    rc = slot__request_find(c, req->user, req->user_len, req->request, req->request_len, h);
    bool clash = rc == 0 && h->kind != SLOT_HOLD_KIND_PLAIN; /* a cart's or a waitlist's key */
    if (rc == 0 && !clash)
        return hold_replay(c, req, &e, h, res);
    if (rc == MDB_NOTFOUND && e.waitlist_max > 0)
        clash = (rc = slot__waitlist_key_used(c, req->user, req->user_len, req->request, req->request_len)) == 0;
    if (clash) {
        slot__key_conflict(res, req->request, c->ev);
        return 0;
    }
    if (rc != MDB_NOTFOUND)
        return rc;
    slot__seat_ask ask; /* unknown seats, categories and sections come with unknown blocks (seat_int.h) */
    if ((rc = slot__seat_resolve(c, req, &e, &ask, res)) != 0)
        return slot__answered_ok(rc);
    /* an unknown block comes before max_per_request ("Clarifications of v1.2", Hold decision order) */
    if (req->alloc_len > 0 && (rc = slot__block_known(c, req, res)) != 0)
        return slot__answered_ok(rc);
    if (req->qty > e.max_per_request) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "qty: %u is above the event's max_per_request %u",
                       (unsigned)req->qty, (unsigned)e.max_per_request);
        return 0;
    }
    if (!slot__on_sale(c, &e, res))
        return 0;
    uint64_t grant_seq = 0; /* admission_required comes after not_on_sale, before user_limit */
    rc = slot__grant_check(c, req, req->grant, &e, &grant_seq, res);
    if (rc != 0 || res->err != SLOT_E_OK)
        return rc;
    uint64_t user_qty = 0;
    rc = slot__hold_admit(c, req, &e, &user_qty, res);
    if (rc == 0 && res->err == SLOT_E_OK && res->sold_out && ask.mode == SLOT__SEAT_NAMED) {
        /* Named seats short of free units: at least one of them is not free, and
         * that answer is "taken" with those seats (docs/protocol.md, "Seated
         * events"); only seats that are all free stay sold_out (a waitlist). */
        slot__seat_list probe;
        res->sold_out = false;
        rc = slot__seat_pick(c, &e, &ask, req->qty, &probe, res);
        if (rc != 0)
            return slot__answered_ok(rc);
        res->sold_out = true;
    }
    if (rc == 0 && res->err == SLOT_E_OK && res->sold_out && ask.mode != SLOT__SEAT_NONE)
        rc = slot__answered_ok(slot__seat_sold_out(c, &e, &ask, res)); /* with max_adjacent */
    if (rc != 0 || res->err != SLOT_E_OK || res->sold_out)
        return rc;
    slot__seat_list chosen;
    if (ask.mode != SLOT__SEAT_NONE && (rc = slot__seat_pick(c, &e, &ask, req->qty, &chosen, res)) != 0)
        return slot__answered_ok(rc); /* taken, or sold_out: no N adjacent (of the filter) anywhere */
    slot__hold_new(h, req->user, req->user_len, req->request, req->request_len, req->qty);
    h->alloc_len = req->alloc_len;
    memcpy(h->alloc, req->alloc, req->alloc_len + 1u);
    slot__client_note(h, req, &e);
    c->seats = ask.mode != SLOT__SEAT_NONE ? &chosen : NULL;
    rc = slot__hold_make(c, &e, h, user_qty + h->qty);
    c->seats = NULL;
    if (rc == 0 && e.seated)
        rc = slot__seat_res(c, h, res);
    if (rc == 0)
        rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, &e);
    if (rc == 0)
        rc = slot__grant_use(c, grant_seq);
    if (rc == 0)
        slot__res_hold(res, h, SLOT_HOLD_HELD);
    return rc;
}

/* release (the buyer's own hold) and cancel (admin, any user's, also confirmed). */
static int op_give_back(ctx *c, const slot_req *req, slot_res *res, bool cancel)
{
    slot_event_rec e;
    slot_hold_rec h;
    int rc = slot__hold_open(c, req, cancel ? NULL : req->user, true, &e, &h, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    bool may = h.status == SLOT_HOLD_HELD || (cancel && h.status == SLOT_HOLD_CONFIRMED);
    if (may)
        rc = slot__hold_finish(c, &e, &h, cancel ? SLOT_HOLD_CANCELLED : SLOT_HOLD_RELEASED);
    if (rc == 0) {
        slot__res_hold(res, &h, h.status);
        res->done = may;
    }
    if (rc == 0 && e.seated)
        rc = slot__seat_res(c, &h, res);
    return rc;
}

/* get_hold runs on a read transaction: a due hold is shown as expired
 * without being written (the next write op or the sweeper expires it). */
static int op_get_hold(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    slot_hold_rec h;
    int rc = slot__hold_open(c, req, req->user_len ? req->user : NULL, false, &e, &h, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    slot__res_hold(res, &h, slot__hold_due(&h, c->now_ms) ? SLOT_HOLD_EXPIRED : h.status);
    return e.seated ? slot__seat_res(c, &h, res) : 0;
}

/* The event view of record e into res, with a child's effective_available. */
static int view_put(ctx *c, slot_res *res, const slot_event_rec *e)
{
    slot__view_fill(&res->view, c->ev, c->ev_len, e);
    int rc = slot__view_family(c, &res->view, e);
    if (rc == 0)
        rc = slot__view_blocks(c, &res->view);
    if (rc == 0 && e->seated) {
        free(res->extra); /* the view is put once per reply; an edit's first try may have put one */
        res->extra = NULL;
        res->extra_len = 0;
        rc = slot__seat_view(c, e, res);
    }
    return rc;
}

static int op_event(ctx *c, slot_res *res)
{
    slot_event_rec e;
    int rc = slot__event_load(c, &e, res);
    if (rc == 0)
        rc = view_put(c, res, &e);
    return slot__answered_ok(rc);
}

/* create_event's parent (docs/protocol.md, "Ticket types"; "Clarifications
 * of v1.2", Types): an existing event, not the event itself, with at most
 * SLOT_FAMILY_DEPTH_MAX - 1 levels above the new one. p receives the
 * parent's record. 0, SLOT__ANSWERED (unknown_event, invalid_argument) or an
 * LMDB error. */
static int parent_check(ctx *c, const slot_req *req, slot_event_rec *p, slot_res *res)
{
    if (req->parent_len == c->ev_len && memcmp(req->parent, c->ev, c->ev_len) == 0) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "parent: an event cannot be its own parent");
        return SLOT__ANSWERED;
    }
    int rc = slot_store_event_get(c->st, c->txn, req->parent, req->parent_len, p);
    if (rc == MDB_NOTFOUND) {
        slot_res_error(res, SLOT_E_UNKNOWN_EVENT, "parent: no event \"%s\"", req->parent);
        return SLOT__ANSWERED;
    }
    if (rc != 0)
        return rc;
    if (p->seated) { /* "Clarifications of v1.2", Types */
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "parent: \"%s\" is a seated event, which cannot have children",
                       req->parent);
        return SLOT__ANSWERED;
    }
    if (p->children >= SLOT_CHILDREN_MAX) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "parent: \"%s\" has %d children, the most an event may have",
                       req->parent, SLOT_CHILDREN_MAX);
        return SLOT__ANSWERED;
    }
    ctx pc = {c->a, c->st, c->txn, req->parent, req->parent_len, c->now_ms};
    slot__chain ch;
    rc = slot__chain_load(&pc, p, &ch);
    if (rc == 0 && ch.n + 1u > SLOT_ANCESTORS_MAX) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT,
                       "parent: \"%s\" is at level %u; a family is at most %d levels deep", req->parent,
                       (unsigned)ch.n + 1u, SLOT_FAMILY_DEPTH_MAX);
        return SLOT__ANSWERED;
    }
    return rc;
}

static int op_create_event(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    int rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, &e);
    uint64_t max_hold_ms = req->max_hold_ms ? req->max_hold_ms : 2ull * req->hold_ttl_ms;
    bool same_parent = rc == 0 && e.parent_len == req->parent_len && memcmp(e.parent, req->parent, e.parent_len) == 0;
    if (rc == 0 && req->parent_len > 0 && e.children > 0 && !same_parent) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "parent: event \"%s\" has children and cannot be given a parent",
                       c->ev);
        return 0;
    }
    if (rc == 0) {
        if (!same_parent || e.seated != (req->seat_map != NULL) || e.capacity != req->capacity || e.shards != req->shards ||
            e.hold_ttl_ms != req->hold_ttl_ms || e.max_per_user != req->max_per_user ||
            e.max_per_request != req->max_per_request || e.opens_at_ms != req->opens_at_ms ||
            e.closes_at_ms != req->closes_at_ms || e.max_extensions != req->max_extensions ||
            e.max_hold_ms != max_hold_ms || e.waitlist_max != req->waitlist_max ||
            e.max_active_per_client != req->max_active_per_client || e.client_rate != req->client_rate ||
            e.admission != req->admission || e.admit_per_s != req->admit_per_s || e.grant_ttl_ms != req->grant_ttl_ms ||
            e.queue_opens_at_ms != req->queue_opens_at_ms) {
            slot_res_error(res, SLOT_E_EVENT_EXISTS, "event \"%s\" exists with other settings", c->ev);
            return 0;
        }
        res->replay = true;
        return view_put(c, res, &e);
    }
    if (rc != MDB_NOTFOUND)
        return rc;
    slot_event_rec p;
    if (req->parent_len > 0 && req->seat_map) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "parent: a seated event with a parent is not supported");
        return 0;
    }
    if (req->parent_len > 0) {
        rc = parent_check(c, req, &p, res);
        if (rc != 0)
            return slot__answered_ok(rc);
    }
    memset(&e, 0, sizeof(e));
    e.parent_len = req->parent_len;
    memcpy(e.parent, req->parent, req->parent_len);
    e.parent[e.parent_len] = 0;
    e.fam_next_join = 1;
    e.status = SLOT_EVENT_ON_SALE;
    e.shards = (uint16_t)req->shards;
    e.max_per_request = (uint16_t)req->max_per_request;
    e.hold_ttl_ms = req->hold_ttl_ms;
    e.capacity = req->capacity;
    e.max_per_user = req->max_per_user;
    e.next_seq = 1;
    e.created_at_ms = c->now_ms;
    e.opens_at_ms = req->opens_at_ms;
    e.closes_at_ms = req->closes_at_ms;
    e.max_extensions = (uint16_t)req->max_extensions;
    e.max_hold_ms = max_hold_ms;
    e.waitlist_max = req->waitlist_max;
    e.next_join = 1;
    e.max_active_per_client = req->max_active_per_client;
    e.client_rate = req->client_rate;
    e.admission = req->admission;
    e.admit_per_s = req->admit_per_s;
    e.grant_ttl_ms = req->grant_ttl_ms;
    e.queue_opens_at_ms = req->queue_opens_at_ms;
    e.seated = req->seat_map != NULL;
    rc = e.seated ? slot__seat_create(c, &e, req->seat_map) : shards_spread(c, e.shards, e.capacity);
    if (rc == 0)
        rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, &e);
    if (rc == 0 && req->parent_len > 0) {
        p.children++;
        rc = slot_store_event_put(c->st, c->txn, req->parent, req->parent_len, &p);
    }
    if (rc == 0)
        rc = view_put(c, res, &e);
    if (rc == 0)
        rc = slot__event_feed(c, &res->view, SLOT_FEED_EVENT_CREATED);
    return rc;
}

/* set_capacity, reshard, set_status, set_sale_window: change the event, then show it. Due
 * holds are expired first so they neither block a capacity cut nor get
 * spread as held units. */
static int op_edit_event(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    int rc = slot__event_load(c, &e, res);
    if (rc == 0 && req->op != SLOT_OP_SET_STATUS && req->op != SLOT_OP_SET_SALE_WINDOW)
        rc = slot__expire_event_due(c, &e);
    if (rc != 0)
        return slot__answered_ok(rc);
    slot_event_rec before = e;
    /* held and confirmed count the descendants' units; allocated the unused
     * units of blocks (docs/protocol.md, "Ticket types", "Allocations") */
    uint64_t allocated = e.held + e.confirmed + e.allocated;
    switch (req->op) {
    case SLOT_OP_SET_CAPACITY:
        if (e.seated) { /* "Clarifications of v1.2", Seats: the seat map is the capacity */
            slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "capacity: event \"%.*s\" is seated; its seats are its capacity",
                           (int)c->ev_len, c->ev);
            return 0;
        }
        if (req->capacity < allocated) {
            slot_res_error(res, SLOT_E_CAPACITY_BELOW_ALLOCATED,
                           "capacity %llu is below held + confirmed + allocated %llu (descendants included)",
                           (unsigned long long)req->capacity, (unsigned long long)allocated);
            return 0;
        }
        e.capacity = req->capacity;
        rc = shards_spread(c, e.shards, e.capacity - allocated);
        if (rc == 0)
            rc = slot__waitlist_serve(c, &e); /* a capacity increase hands out to those waiting */
        break;
    case SLOT_OP_RESHARD:
        for (uint32_t s = req->shards; rc == 0 && s < e.shards; s++)
            rc = slot_store_shard_del(c->st, c->txn, c->ev, c->ev_len, (uint16_t)s);
        if (rc == 0)
            rc = shards_spread(c, req->shards, e.capacity - allocated);
        e.shards = (uint16_t)req->shards;
        if (rc == 0 && e.seated) /* rows regroup: row i in shard i mod shards */
            rc = slot__seat_reshard(c, &e, before.shards);
        break;
    case SLOT_OP_SET_STATUS:
        e.status = req->status;
        break;
    case SLOT_OP_SET_SALE_WINDOW:
        e.opens_at_ms = req->opens_at_ms;
        e.closes_at_ms = req->closes_at_ms;
        break;
    default:
        SLOT_ASSERT(!"op_edit_event: not an edit op");
    }
    if (rc == 0)
        rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, &e);
    if (rc == 0)
        rc = view_put(c, res, &e);
    /* Only a change of the event's settings makes an entry (docs/protocol.md,
     * "Clarifications of v1.1", "Feed entries"). */
    if (rc == 0 && (before.capacity != e.capacity || before.shards != e.shards || before.status != e.status ||
                    before.opens_at_ms != e.opens_at_ms || before.closes_at_ms != e.closes_at_ms))
        rc = slot__event_feed(c, &res->view, SLOT_FEED_EVENT_CHANGED);
    return rc;
}

static int op_shards(ctx *c, slot_res *res)
{
    slot_event_rec e;
    int rc = slot__event_load(c, &e, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    res->shard_free = calloc(e.shards, sizeof(uint64_t));
    if (!res->shard_free)
        return ENOMEM;
    res->nshards = e.shards;
    for (uint16_t s = 0; rc == 0 && s < e.shards; s++)
        rc = slot_store_shard_get(c->st, c->txn, c->ev, c->ev_len, s, &res->shard_free[s]);
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

int slot_alloc_run(slot_alloc *a, MDB_txn *txn, const slot_req *req, uint64_t now_ms, slot_res *res)
{
    ctx c = {a, a->store, txn, req->event, req->event_len, now_ms};
    res->err = SLOT_E_OK;
    if (slot_op_internal(req->op))
        return slot__op_place(&c, req, res);
    /* The fence (docs/design.md, "Moving an event"): an event is served only
     * while this set's committed state says it owns it. */
    int frc = 0;
    if (req->op == SLOT_OP_HOLD_MANY)
        frc = slot__place_cart_fence(a, txn, req, now_ms, res);
    else if (req->event_len > 0 && req->op != SLOT_OP_CREATE_EVENT && req->op != SLOT_OP_PLACEMENT)
        frc = slot__place_fence(&c, slot_op_writes(req->op), res);
    if (frc != 0)
        return slot__answered_ok(frc);
    switch (req->op) {
    case SLOT_OP_HOLD:
        return op_hold(&c, req, res);
    case SLOT_OP_CONFIRM:
        return slot__op_confirm(&c, req, res);
    case SLOT_OP_EXTEND:
        return slot__op_extend(&c, req, res);
    case SLOT_OP_RELEASE:
        return op_give_back(&c, req, res, false);
    case SLOT_OP_CANCEL:
        return op_give_back(&c, req, res, true);
    case SLOT_OP_GET_HOLD:
        return op_get_hold(&c, req, res);
    case SLOT_OP_EVENT:
        return op_event(&c, res);
    case SLOT_OP_CREATE_EVENT:
        return op_create_event(&c, req, res);
    case SLOT_OP_SET_CAPACITY:
    case SLOT_OP_RESHARD:
    case SLOT_OP_SET_STATUS:
    case SLOT_OP_SET_SALE_WINDOW:
        return op_edit_event(&c, req, res);
    case SLOT_OP_SEAT_MAP:
        return slot__seat_map_op(&c, res);
    case SLOT_OP_SHARDS:
        return op_shards(&c, res);
    case SLOT_OP_EXPIRE:
        return slot_alloc_expire_due(a, txn, now_ms, SLOT_EXPIRE_OP_MAX, &res->expired);
    case SLOT_OP_CHECK:
        return slot_check(a->store, txn, (req->has & SLOT_HAS_EVENT) ? req->event : NULL,
                          (req->has & SLOT_HAS_EVENT) ? req->event_len : 0, res);
    case SLOT_OP_DIGEST:
        return slot_store_digest(a->store, txn, &res->seq, res->digest);
    case SLOT_OP_HOLD_MANY:
        return slot__op_hold_many(a, txn, req, now_ms, res);
    case SLOT_OP_ALLOCATE:
        return slot__op_allocate(&c, req, res);
    case SLOT_OP_DEALLOCATE:
        return slot__op_deallocate(&c, req, res);
    case SLOT_OP_JOIN:
        return slot__op_join(&c, req, res);
    case SLOT_OP_ADMISSION:
        return slot__op_admission(&c, req, res);
    case SLOT_OP_SET_ADMISSION:
        return slot__op_set_admission(&c, req, res);
    case SLOT_OP_WAITLIST_JOIN:
    case SLOT_OP_WAITLIST_LEAVE:
    case SLOT_OP_WAITLIST:
    case SLOT_OP_WAITLIST_ENTRIES:
        return slot__op_waitlist(&c, req, res);
    case SLOT_OP_SUBSCRIBE:
    case SLOT_OP_ACK:
    case SLOT_OP_FEED_FORGET:
    case SLOT_OP_FEED_CONSUMERS:
        return slot_feed_run(a->store, txn, req, now_ms, res);
    case SLOT_OP_HELLO:
    case SLOT_OP_STATS:
    default:
        /* hello and stats are answered by the server, never by the allocator. */
        slot_res_error(res, SLOT_E_INTERNAL, "op %s is not the allocator's", slot_op_name(req->op));
        return 0;
    }
}
