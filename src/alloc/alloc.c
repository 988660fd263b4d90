/*
 * alloc.c — the allocator: the ops of docs/protocol.md on one LMDB transaction.
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "alloc_int.h"
#include "idem.h"
#include "slot/assert.h"

typedef slot__alloc_ctx ctx;

/* ---- random numbers: xoshiro256** (Blackman and Vigna, 2018) */

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t slot__rng_next(slot_alloc *a)
{
    uint64_t *s = a->rng;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* splitmix64, to spread one seed over the four words of state. */
static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

void slot_alloc_seed(slot_alloc *a, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        a->rng[i] = splitmix(&seed);
}

void slot_alloc_close(slot_alloc *a)
{
    slot__idem_free(a->idem);
    a->idem = NULL;
    slot__cold_free(a);
}

int slot_alloc_init(slot_alloc *a, slot_store *store)
{
    a->store = store;
    a->idem = NULL;
    a->cold = NULL;
    uint64_t seed[4];
    ssize_t n = getrandom(seed, sizeof(seed), 0);
    if (n != (ssize_t)sizeof(seed))
        return n < 0 ? -errno : -EIO;
    memcpy(a->rng, seed, sizeof(seed));
    if ((a->rng[0] | a->rng[1] | a->rng[2] | a->rng[3]) == 0)
        a->rng[0] = 1; /* the one state xoshiro cannot leave */
    return 0;
}

/* ---- hold ids: 16 hex digits of sequence number, 16 of random tag */

void slot__hold_id_format(char out[SLOT_HOLD_ID_BYTES + 1], uint64_t seq, uint64_t tag)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[i] = hex[(seq >> (60 - 4 * i)) & 0xf];
        out[16 + i] = hex[(tag >> (60 - 4 * i)) & 0xf];
    }
    out[SLOT_HOLD_ID_BYTES] = 0;
}

static bool hold_id_parse(const char *s, size_t len, uint64_t *seq, uint64_t *tag)
{
    if (len != SLOT_HOLD_ID_BYTES)
        return false;
    uint64_t v[2] = {0, 0};
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else
            return false;
        v[i / 16] = (v[i / 16] << 4) | d;
    }
    *seq = v[0];
    *tag = v[1];
    return true;
}

/* ---- shared pieces */

static void view_fill(slot_event_view *v, const char *ev, size_t ev_len, const slot_event_rec *e)
{
    memcpy(v->event, ev, ev_len);
    v->event[ev_len] = 0;
    v->status = e->status;
    v->capacity = e->capacity;
    v->held = e->held;
    v->confirmed = e->confirmed;
    v->available = e->capacity - e->held - e->confirmed;
    v->shards = e->shards;
    v->hold_ttl_ms = e->hold_ttl_ms;
    v->max_per_user = e->max_per_user;
    v->max_per_request = e->max_per_request;
    v->opens_at_ms = e->opens_at_ms;
    v->closes_at_ms = e->closes_at_ms;
    v->max_extensions = e->max_extensions;
    v->max_hold_ms = e->max_hold_ms;
    v->waitlist_max = e->waitlist_max;
    v->waiting = e->waiting;
    v->waiting_qty = e->waiting_qty;
}

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

/* Expires the due holds of c's event and rereads the event record. */
static int expire_event_due(ctx *c, slot_event_rec *e)
{
    uint64_t n = 0;
    int rc = slot__expire_due(c->a, c->txn, c->ev, c->ev_len, c->now_ms, SLOT_EXPIRE_OP_MAX, &n);
    if (rc == 0 && n > 0)
        rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, e);
    return rc;
}

/* ---- ops */

bool slot__on_sale(ctx *c, const slot_event_rec *e, slot_res *res)
{
    const char *why = NULL;
    if (e->status != SLOT_EVENT_ON_SALE)
        why = "is closed";
    else if (e->opens_at_ms && c->now_ms < e->opens_at_ms)
        why = "has not opened yet";
    else if (e->closes_at_ms && c->now_ms >= e->closes_at_ms)
        why = "has closed its sale window";
    if (!why)
        return true;
    slot_res_error(res, SLOT_E_NOT_ON_SALE, "event \"%s\" %s (opens_at %llu, closes_at %llu)", c->ev, why,
                   (unsigned long long)e->opens_at_ms, (unsigned long long)e->closes_at_ms);
    res->opens_at_ms = e->opens_at_ms;
    res->closes_at_ms = e->closes_at_ms;
    return false;
}

/* Loads the event of the request into e; SLOT__ANSWERED with res = unknown_event when missing. */
int slot__event_load(ctx *c, slot_event_rec *e, slot_res *res)
{
    int rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, e);
    if (rc == MDB_NOTFOUND) {
        slot_res_error(res, SLOT_E_UNKNOWN_EVENT, "no event \"%s\"", c->ev);
        return SLOT__ANSWERED;
    }
    return rc;
}

/* Loads the hold the request names; SLOT__ANSWERED with res = unknown_hold when there is
 * none, or it belongs to another user (docs/protocol.md: the two look the same).
 * user NULL: any user (cancel). */
static int hold_load(ctx *c, const slot_req *req, const char *user, slot_hold_rec *h, slot_res *res)
{
    uint64_t seq, tag;
    int rc = MDB_NOTFOUND;
    if (hold_id_parse(req->hold, req->hold_len, &seq, &tag))
        rc = slot_store_hold_get(c->st, c->txn, c->ev, c->ev_len, seq, h);
    if (rc == 0 && (h->tag != tag || (user && (h->user_len != req->user_len || memcmp(h->user, user, h->user_len) != 0))))
        rc = MDB_NOTFOUND;
    if (rc == MDB_NOTFOUND) {
        slot_res_error(res, SLOT_E_UNKNOWN_HOLD, "no hold \"%s\"%s in event \"%s\"", req->hold,
                       user ? " for this user" : "", c->ev);
        return SLOT__ANSWERED;
    }
    return rc;
}

void slot__res_hold(slot_res *res, const slot_hold_rec *h, slot_hold_status status)
{
    res->hold_status = status;
    slot__hold_id_format(res->hold, h->seq, h->tag);
    res->qty = h->qty;
    res->expires_at_ms = h->expires_at_ms;
    res->created_at_ms = h->created_at_ms;
    memcpy(res->user, h->user, h->user_len);
    res->user[h->user_len] = 0;
    res->returned = h->returned;
    res->extensions = h->extensions;
    res->replaces[0] = res->replaced_by[0] = 0;
    if (h->replaces_seq)
        slot__hold_id_format(res->replaces, h->replaces_seq, h->replaces_tag);
    if (h->replaced_by_seq)
        slot__hold_id_format(res->replaced_by, h->replaced_by_seq, h->replaced_by_tag);
}

/* A hold that is due counts as expired for every op: on the write path it is
 * expired here, returning its units, before the op looks at it. */
int slot__hold_settle(ctx *c, slot_event_rec *e, slot_hold_rec *h)
{
    if (!slot__hold_due(h, c->now_ms))
        return 0;
    return slot__hold_finish(c, e, h, SLOT_HOLD_EXPIRED);
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
    int rc = slot__hold_settle(c, e, h);
    slot__res_hold(res, h, h->status);
    res->replay = true;
    return rc;
}

/* Finds the hold made earlier for (event, user, request), into h. The index
 * is checked against the hold record: an entry whose hold is missing or
 * names other keys was left by an aborted batch and is dropped. Returns 0
 * (found), MDB_NOTFOUND, or an error. */
int slot__request_find(ctx *c, const char *user, size_t user_len, const char *request, size_t request_len,
                       slot_hold_rec *h)
{
    int rc = slot__idem_event_ready(c);
    uint64_t seq;
    if (rc != 0)
        return rc;
    if (slot__idem_get(c->a->idem, c->ev, c->ev_len, user, user_len, request, request_len, &seq) != 0)
        return MDB_NOTFOUND;
    rc = slot_store_hold_get(c->st, c->txn, c->ev, c->ev_len, seq, h);
    if (rc == 0 && (h->user_len != user_len || memcmp(h->user, user, h->user_len) != 0 ||
                    h->request_len != request_len || memcmp(h->request, request, h->request_len) != 0))
        rc = MDB_NOTFOUND;
    if (rc == MDB_NOTFOUND)
        slot__idem_del(c->a->idem, c->ev, c->ev_len, user, user_len, request, request_len);
    return rc;
}

/* Decides user_limit / sold_out after expiring due holds when that could
 * change the answer. Returns 0 and leaves res->err OK when the hold may go on. */
int slot__hold_admit(ctx *c, const slot_req *req, slot_event_rec *e, uint64_t *user_qty, slot_res *res)
{
    int rc = 0;
    bool settled = false;
    if (e->max_per_user > 0) {
        rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, user_qty);
        if (rc == 0 && *user_qty + req->qty > e->max_per_user) {
            settled = true;
            rc = expire_event_due(c, e);
            if (rc == 0)
                rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, user_qty);
            if (rc == 0 && *user_qty + req->qty > e->max_per_user) {
                slot_res_error(res, SLOT_E_USER_LIMIT, "user has %llu of max_per_user %llu", (unsigned long long)*user_qty,
                               (unsigned long long)e->max_per_user);
                return 0;
            }
        }
    }
    /* While people wait, units go to them first (docs/protocol.md, "Waitlist"):
     * a new hold is sold_out, after due holds were expired (they may serve
     * the whole list). */
    uint64_t avail = e->capacity - e->held - e->confirmed;
    if (rc == 0 && (avail < req->qty || e->waiting > 0) && !settled) {
        rc = expire_event_due(c, e);
        avail = e->capacity - e->held - e->confirmed;
        /* Expiring may have returned this user's own units: the quantity
         * read above is stale, and op_hold writes user_qty + qty. */
        if (rc == 0 && e->max_per_user > 0)
            rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, user_qty);
    }
    if (rc == 0 && (avail < req->qty || e->waiting > 0)) {
        res->sold_out = true;
        res->available = avail;
    }
    return rc;
}

/* The answer to a key already used in another way (docs/protocol.md,
 * "Clarifications of v1.1", Keys): one key space per (event, user). */
void slot__key_conflict(slot_res *res, const char *request, const char *ev)
{
    slot_res_error(res, SLOT_E_IDEMPOTENCY_CONFLICT, "request \"%s\" was used otherwise on event \"%s\"", request, ev);
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
    if (req->qty > e.max_per_request) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "qty: %u is above the event's max_per_request %u",
                       (unsigned)req->qty, (unsigned)e.max_per_request);
        return 0;
    }
    if (!slot__on_sale(c, &e, res))
        return 0;
    uint64_t user_qty = 0;
    rc = slot__hold_admit(c, req, &e, &user_qty, res);
    if (rc != 0 || res->err != SLOT_E_OK || res->sold_out)
        return rc;
    slot__hold_new(h, req->user, req->user_len, req->request, req->request_len, req->qty);
    rc = slot__hold_make(c, &e, h, user_qty + h->qty);
    if (rc == 0)
        rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, &e);
    if (rc == 0)
        slot__res_hold(res, h, SLOT_HOLD_HELD);
    return rc;
}

/* Loads the event and the hold a request names (user NULL: any user's);
 * with settle (the write path) a due hold is expired first. Returns 0, 1 when
 * res already holds the wire error, or an LMDB error. */
int slot__hold_open(ctx *c, const slot_req *req, const char *user, bool settle, slot_event_rec *e, slot_hold_rec *h,
                    slot_res *res)
{
    int rc = slot__event_load(c, e, res);
    if (rc == 0)
        rc = hold_load(c, req, user, h, res);
    if (rc == 0 && settle)
        rc = slot__hold_settle(c, e, h);
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
    return 0;
}

static int op_event(ctx *c, slot_res *res)
{
    slot_event_rec e;
    int rc = slot__event_load(c, &e, res);
    if (rc == 0)
        view_fill(&res->view, c->ev, c->ev_len, &e);
    return slot__answered_ok(rc);
}

static int op_create_event(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    int rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, &e);
    uint64_t max_hold_ms = req->max_hold_ms ? req->max_hold_ms : 2ull * req->hold_ttl_ms;
    if (rc == 0) {
        if (e.capacity != req->capacity || e.shards != req->shards || e.hold_ttl_ms != req->hold_ttl_ms ||
            e.max_per_user != req->max_per_user || e.max_per_request != req->max_per_request ||
            e.opens_at_ms != req->opens_at_ms || e.closes_at_ms != req->closes_at_ms ||
            e.max_extensions != req->max_extensions || e.max_hold_ms != max_hold_ms ||
            e.waitlist_max != req->waitlist_max) {
            slot_res_error(res, SLOT_E_EVENT_EXISTS, "event \"%s\" exists with other settings", c->ev);
            return 0;
        }
        view_fill(&res->view, c->ev, c->ev_len, &e);
        res->replay = true;
        return 0;
    }
    if (rc != MDB_NOTFOUND)
        return rc;
    memset(&e, 0, sizeof(e));
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
    rc = shards_spread(c, e.shards, e.capacity);
    if (rc == 0)
        rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, &e);
    if (rc == 0) {
        view_fill(&res->view, c->ev, c->ev_len, &e);
        rc = slot__event_feed(c, &res->view, SLOT_FEED_EVENT_CREATED);
    }
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
        rc = expire_event_due(c, &e);
    if (rc != 0)
        return slot__answered_ok(rc);
    slot_event_rec before = e;
    uint64_t allocated = e.held + e.confirmed;
    switch (req->op) {
    case SLOT_OP_SET_CAPACITY:
        if (req->capacity < allocated) {
            slot_res_error(res, SLOT_E_CAPACITY_BELOW_ALLOCATED, "capacity %llu is below held + confirmed %llu",
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
        view_fill(&res->view, c->ev, c->ev_len, &e);
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
