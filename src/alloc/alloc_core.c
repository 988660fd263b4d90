/*
 * alloc_core.c — what the allocator's ops share (alloc.c, cart.c, confirm.c,
 * waitlist.c): the hold id's text, loading the event and the hold a request
 * names, a hold or an event into the reply, the sale window, the admission of
 * a new hold (user_limit, sold_out), lazy expiry and the key checks. It calls
 * down into hold.c (the hold's life) and the store, never into an op file.
 * Internal to libslot; see alloc_int.h.
 */
#include <stdbool.h>
#include <string.h>

#include "alloc_int.h"
#include "slot/assert.h"

typedef slot__alloc_ctx ctx;

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

/* ---- the event and the hold a request names */

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
    if (rc == 0 &&
        (h->tag != tag || (user && (h->user_len != req->user_len || memcmp(h->user, user, h->user_len) != 0))))
        rc = MDB_NOTFOUND;
    if (rc == MDB_NOTFOUND) {
        slot_res_error(res, SLOT_E_UNKNOWN_HOLD, "no hold \"%s\"%s in event \"%s\"", req->hold,
                       user ? " for this user" : "", c->ev);
        return SLOT__ANSWERED;
    }
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

/* A hold that is due counts as expired for every op: on the write path it is
 * expired here, returning its units, before the op looks at it. */
int slot__hold_settle(ctx *c, slot_event_rec *e, slot_hold_rec *h)
{
    if (!slot__hold_due(h, c->now_ms))
        return 0;
    return slot__hold_finish(c, e, h, SLOT_HOLD_EXPIRED);
}

/* ---- answers */

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

void slot__view_fill(slot_event_view *v, const char *ev, size_t ev_len, const slot_event_rec *e)
{
    memcpy(v->event, ev, ev_len);
    v->event[ev_len] = 0;
    v->status = e->status;
    v->capacity = e->capacity;
    v->held = e->held;
    v->confirmed = e->confirmed;
    v->available = slot__free_units(e);
    v->allocated = e->allocated;
    memcpy(v->parent, e->parent, e->parent_len);
    v->parent[e->parent_len] = 0;
    v->effective_available = v->available;
    v->children = e->children;
    v->holds_made = e->next_seq > 0 ? e->next_seq - 1 : 0;
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
    v->max_active_per_client = e->max_active_per_client;
    v->client_rate = e->client_rate;
    v->admission = e->admission;
    v->admit_per_s = e->admit_per_s;
    v->grant_ttl_ms = e->grant_ttl_ms;
    v->queue_opens_at_ms = e->queue_opens_at_ms;
    v->room_joined = e->room_joined;
    v->room_admitted = e->room_admitted;
    v->room_waiting = e->room_joined - e->room_admitted;
    v->room_open = e->room_open;
}

int slot__view_family(ctx *c, slot_event_view *v, const slot_event_rec *e)
{
    if (e->parent_len == 0)
        return 0;
    return slot__chain_free(c, e, 0, &v->effective_available, NULL);
}

/* ---- the checks of a new hold */

/* Why a hold may not be taken on record e now, or NULL when it may. */
static const char *sale_why(const ctx *c, const slot_event_rec *e)
{
    if (e->status != SLOT_EVENT_ON_SALE)
        return "is closed";
    if (e->opens_at_ms && c->now_ms < e->opens_at_ms)
        return "has not opened yet";
    if (e->closes_at_ms && c->now_ms >= e->closes_at_ms)
        return "has closed its sale window";
    return NULL;
}

static void not_on_sale(slot_res *res, const char *ev, const slot_event_rec *e, const char *why)
{
    slot_res_error(res, SLOT_E_NOT_ON_SALE, "event \"%s\" %s (opens_at %llu, closes_at %llu)", ev, why,
                   (unsigned long long)e->opens_at_ms, (unsigned long long)e->closes_at_ms);
    res->opens_at_ms = e->opens_at_ms;
    res->closes_at_ms = e->closes_at_ms;
}

bool slot__on_sale(ctx *c, const slot_event_rec *e, slot_res *res)
{
    const char *why = sale_why(c, e);
    if (!why)
        return true;
    not_on_sale(res, c->ev, e, why);
    return false;
}

/* Expires the due holds of c's event and rereads the event record. An event
 * of a family expires every due hold (a sibling's or a parent's holds free
 * the shared units too): a sold_out is never caused by expired holds. */
int slot__expire_event_due(ctx *c, slot_event_rec *e)
{
    uint64_t n = 0;
    bool family = e->parent_len > 0 || e->children > 0;
    int rc = slot__expire_due(c->a, c->txn, family ? NULL : c->ev, family ? 0 : c->ev_len, c->now_ms,
                              SLOT_EXPIRE_OP_MAX, &n);
    if (rc == 0 && n > 0)
        rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, e);
    return rc;
}

/* The ancestors' side of a new hold's checks (docs/protocol.md, "Ticket
 * types"; "Clarifications of v1.2", "Hold decision order"): every ancestor
 * on sale (not_on_sale carries the ancestor's name and times), then each
 * ancestor's max_per_user over the units the user holds through all its
 * descendants. Due holds are expired before a user_limit (as for the event's
 * own). res->err set when refused. */
static int chain_admit(ctx *c, const slot_req *req, slot_event_rec *e, slot_res *res)
{
    slot__chain ch;
    int rc = slot__chain_load(c, e, &ch);
    for (uint8_t i = 0; rc == 0 && i < ch.n; i++) {
        const char *why = sale_why(c, &ch.anc[i].rec);
        if (why) {
            not_on_sale(res, ch.anc[i].name, &ch.anc[i].rec, why);
            memcpy(res->sale_event, ch.anc[i].name, ch.anc[i].len + 1u);
            return 0;
        }
    }
    bool settled = false;
    for (uint8_t i = 0; rc == 0 && i < ch.n; i++) {
        slot__anc *an = &ch.anc[i];
        if (an->rec.max_per_user == 0)
            continue;
        uint64_t u = 0;
        rc = slot_store_user_get(c->st, c->txn, an->name, an->len, req->user, req->user_len, &u);
        if (rc == 0 && u + req->qty > an->rec.max_per_user && !settled) {
            settled = true;
            rc = slot__expire_event_due(c, e);
            if (rc == 0)
                rc = slot_store_user_get(c->st, c->txn, an->name, an->len, req->user, req->user_len, &u);
        }
        if (rc == 0 && u + req->qty > an->rec.max_per_user) {
            slot_res_error(res, SLOT_E_USER_LIMIT, "user has %llu of event \"%s\"'s max_per_user %llu",
                           (unsigned long long)u, an->name, (unsigned long long)an->rec.max_per_user);
            return 0;
        }
    }
    return rc;
}

/* A hold from block req->alloc (docs/protocol.md, "Allocations"): the
 * block's max_per_user (user_limit) counts the user's units held or
 * confirmed from it; sold_out with "remaining" when fewer than qty are left
 * (after due holds were expired: theirs come back to the block). The free
 * shards and the waitlist play no part. The block exists (op_hold checked). */
static int block_admit(ctx *c, const slot_req *req, slot_event_rec *e, uint64_t *user_qty, slot_res *res)
{
    slot_block_rec b;
    uint64_t u = 0;
    int rc = slot_store_block_get(c->st, c->txn, c->ev, c->ev_len, req->alloc, req->alloc_len, &b);
    for (int pass = 0; rc == 0 && pass < 2; pass++) {
        bool over = false;
        if (b.max_per_user > 0) {
            rc = slot_store_block_user_get(c->st, c->txn, c->ev, c->ev_len, req->alloc, req->alloc_len, req->user,
                                           req->user_len, &u);
            over = u + req->qty > b.max_per_user;
        }
        if (rc != 0 || (!over && b.remaining >= req->qty))
            break;
        if (pass == 1) {
            if (over) {
                slot_res_error(res, SLOT_E_USER_LIMIT, "user has %llu of allocation \"%s\"'s max_per_user %llu",
                               (unsigned long long)u, req->alloc, (unsigned long long)b.max_per_user);
            } else {
                res->sold_out = true;
                res->block = true;
                res->block_remaining = b.remaining;
                res->available = b.remaining;
            }
            return 0;
        }
        rc = slot__expire_event_due(c, e); /* due holds of the block give their units back first */
        if (rc == 0)
            rc = slot_store_block_get(c->st, c->txn, c->ev, c->ev_len, req->alloc, req->alloc_len, &b);
        if (rc == 0 && e->max_per_user > 0)
            rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, user_qty);
    }
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

/* The block's max_per_user alone (block_admit decides it again with the
 * remaining): user_limit after expiring due holds when over. Runs before the
 * client limits, which come after every user_limit. */
static int block_user_admit(ctx *c, const slot_req *req, slot_event_rec *e, slot_res *res)
{
    slot_block_rec b;
    int rc = slot_store_block_get(c->st, c->txn, c->ev, c->ev_len, req->alloc, req->alloc_len, &b);
    if (rc != 0)
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc; /* slot__block_known ran */
    if (b.max_per_user == 0)
        return 0;
    uint64_t u = 0;
    for (int pass = 0; pass < 2; pass++) {
        rc = slot_store_block_user_get(c->st, c->txn, c->ev, c->ev_len, req->alloc, req->alloc_len, req->user,
                                       req->user_len, &u);
        if (rc != 0 || u + req->qty <= b.max_per_user)
            return rc;
        if (pass == 0 && (rc = slot__expire_event_due(c, e)) != 0)
            return rc;
    }
    slot_res_error(res, SLOT_E_USER_LIMIT, "user has %llu of allocation \"%s\"'s max_per_user %llu",
                   (unsigned long long)u, req->alloc, (unsigned long long)b.max_per_user);
    return 0;
}

/* Decides not_on_sale of the ancestors, user_limit and sold_out (over the
 * event's chain) after expiring due holds when that could change the
 * answer. Returns 0 and leaves res->err OK when the hold may go on. */
int slot__hold_admit(ctx *c, const slot_req *req, slot_event_rec *e, uint64_t *user_qty, slot_res *res)
{
    int rc = 0;
    bool settled = false;
    *user_qty = 0;
    if (e->max_per_user > 0) {
        rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, user_qty);
        if (rc == 0 && *user_qty + req->qty > e->max_per_user) {
            settled = true;
            rc = slot__expire_event_due(c, e);
            if (rc == 0)
                rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, user_qty);
        }
    }
    /* not_on_sale of an ancestor comes before every user_limit (the decision order) */
    if (rc == 0 && e->parent_len > 0) {
        rc = chain_admit(c, req, e, res);
        if (rc != 0 || res->err != SLOT_E_OK)
            return rc;
        /* its expiry may have returned this user's own units: read the total again */
        if (e->max_per_user > 0)
            rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, user_qty);
    }
    if (rc == 0 && e->max_per_user > 0 && *user_qty + req->qty > e->max_per_user) {
        slot_res_error(res, SLOT_E_USER_LIMIT, "user has %llu of max_per_user %llu", (unsigned long long)*user_qty,
                       (unsigned long long)e->max_per_user);
        return 0;
    }
    /* rate_limited comes after every user_limit, the block's too, before sold_out ("Hold
     * decision order"): a block's max_per_user is decided here, its remaining after. */
    if (rc == 0 && req->alloc_len > 0 && req->client_len > 0) {
        rc = block_user_admit(c, req, e, res);
        if (rc != 0 || res->err != SLOT_E_OK)
            return rc;
        if (e->max_per_user > 0) /* its expiry may have returned the user's units */
            rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, user_qty);
    }
    if (rc == 0 && req->client_len > 0) {
        rc = slot__client_admit(c, req, e, res);
        if (rc != 0 || res->err != SLOT_E_OK)
            return rc;
        if (e->max_per_user > 0) /* its expiry may have returned the user's units */
            rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, user_qty);
    }
    if (rc == 0 && req->alloc_len > 0) /* a hold from a block: its own max_per_user and remaining */
        return block_admit(c, req, e, user_qty, res);
    /* While people wait, units go to them first (docs/protocol.md, "Waitlist"):
     * a new hold is sold_out, after due holds were expired (they may serve
     * the whole list). Only the event's own waitlist counts ("Clarifications
     * of v1.2", Types). */
    uint64_t avail = 0;
    if (rc == 0)
        rc = slot__chain_free(c, e, req->qty, &avail, res->short_event);
    if (rc == 0 && (avail < req->qty || e->waiting > 0) && !settled) {
        rc = slot__expire_event_due(c, e);
        if (rc == 0)
            rc = slot__chain_free(c, e, req->qty, &avail, res->short_event);
        /* Expiring may have returned this user's own units: the quantity
         * read above is stale, and op_hold writes user_qty + qty. */
        if (rc == 0 && e->max_per_user > 0)
            rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, user_qty);
    }
    if (rc == 0 && (avail < req->qty || e->waiting > 0)) {
        res->sold_out = true;
        res->available = avail;
    } else {
        res->short_event[0] = 0;
    }
    return rc;
}

/* The answer to a key already used in another way (docs/protocol.md,
 * "Clarifications of v1.1", Keys): one key space per (event, user). */
void slot__key_conflict(slot_res *res, const char *request, const char *ev)
{
    slot_res_error(res, SLOT_E_IDEMPOTENCY_CONFLICT, "request \"%s\" was used otherwise on event \"%s\"", request, ev);
}

int slot__waitlist_key_used(ctx *c, const char *user, size_t user_len, const char *request, size_t request_len)
{
    slot_wait_rec w;
    return slot_store_wait_key_get(c->st, c->txn, c->ev, c->ev_len, user, user_len, request, request_len, &w);
}
