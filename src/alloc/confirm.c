/*
 * confirm.c — the ops that act on a buyer's hold while it is being paid:
 * confirm (whole or partial, docs/protocol.md "confirm" and "Partial
 * confirm"), confirm with reacquire (the late payment, "Reacquire") and
 * extend ("extend"). Internal to libslot; the other ops are in alloc.c and
 * units move only through hold.c's writers.
 */
#include <string.h>

#include "alloc_int.h"
#include "seat_int.h"
#include "slot/assert.h"

typedef slot__alloc_ctx ctx;

/* hold_not_active with the hold's status (docs/protocol.md, "Error codes"). */
static void not_active(slot_res *res, const slot_hold_rec *h)
{
    slot__res_hold(res, h, h->status);
    slot_res_error(res, SLOT_E_HOLD_NOT_ACTIVE, "hold is %s", slot_hold_status_name(h->status));
}

/*
 * A repeated reacquire of hold h: the new hold it made, with its current
 * status, replay:true (docs/protocol.md, "Reacquire"; "Clarifications").
 */
static int reacquire_replay(ctx *c, const slot_hold_rec *h, slot_res *res)
{
    slot_hold_rec n;
    int rc = slot_store_hold_get(c->st, c->txn, c->ev, c->ev_len, h->replaced_by_seq, &n);
    if (rc == MDB_NOTFOUND || (rc == 0 && (n.tag != h->replaced_by_tag || n.replaces_seq != h->seq)))
        return MDB_CORRUPTED; /* the two links are written in one transaction */
    if (rc == 0) {
        slot__res_hold(res, &n, n.status);
        res->replay = true;
    }
    return rc;
}

/*
 * Reacquire for an expired or released hold h: in this transaction, a new
 * hold for qty units taken under the rules of a new hold (window,
 * max_per_request, max_per_user, shards and fallback), confirmed at once;
 * h records replaced_by, the new hold replaces. sold_out changes nothing.
 * The new hold keeps h's request key but is not in the idempotency index:
 * a replay of the original hold request still finds h.
 */
static int reacquire(ctx *c, const slot_req *req, slot_event_rec *e, slot_hold_rec *h, slot_res *res)
{
    if (h->replaced_by_seq != 0)
        return reacquire_replay(c, h, res);
    slot_req take = *req;
    take.qty = (req->has & SLOT_HAS_QTY) ? req->qty : h->qty;
    if (take.qty > e->max_per_request) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "qty: %u is above the event's max_per_request %u",
                       (unsigned)take.qty, (unsigned)e->max_per_request);
        return 0;
    }
    if (!slot__on_sale(c, e, res))
        return 0;
    uint64_t user_qty = 0;
    int rc = slot__hold_admit(c, &take, e, &user_qty, res);
    if (rc != 0 || res->err != SLOT_E_OK || res->sold_out)
        return rc;

    slot_hold_rec fresh, *n = &fresh;
    n->seq = e->next_seq++;
    n->tag = slot__rng_next(c->a);
    n->status = SLOT_HOLD_CONFIRMED;
    n->qty = (uint16_t)take.qty;
    n->created_at_ms = c->now_ms;
    n->expires_at_ms = c->now_ms + e->hold_ttl_ms;
    n->user_len = h->user_len;
    memcpy(n->user, h->user, h->user_len + 1u);
    n->request_len = h->request_len;
    memcpy(n->request, h->request, h->request_len + 1u);
    n->extensions = n->returned = 0;
    n->replaced_by_seq = n->replaced_by_tag = 0;
    n->replaces_seq = h->seq;
    n->replaces_tag = h->tag;
    n->kind = SLOT_HOLD_KIND_PLAIN; /* its key stays the replaced hold's (not in the index) */
    n->origin = 0;
    n->nanc = 0;
    n->alloc_len = 0;
    n->alloc[0] = 0;
    n->client_len = 0; /* a reacquire is not client-limited ("Clarifications of v1.2") */
    n->client[0] = 0;
    rc = slot__units_take(c, e, n, SLOT_HOLD_CONFIRMED);
    e->confirmed += n->qty;
    if (rc == 0)
        rc = slot_store_hold_add(c->st, c->txn, c->ev, c->ev_len, n);
    if (rc == 0 && e->max_per_user > 0)
        rc = slot_store_user_put(c->st, c->txn, c->ev, c->ev_len, h->user, h->user_len, user_qty + n->qty);
    h->replaced_by_seq = n->seq;
    h->replaced_by_tag = n->tag;
    if (rc == 0)
        rc = slot_store_hold_put(c->st, c->txn, c->ev, c->ev_len, h);
    if (rc == 0)
        rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, e);
    if (rc == 0) /* one hold.confirmed with replaces, and no hold.held (docs/protocol.md, "Feed") */
        rc = slot__hold_feed_seated(c, n, SLOT_FEED_HOLD_CONFIRMED, e->seated);
    if (rc == 0)
        slot__res_hold(res, n, SLOT_HOLD_CONFIRMED);
    if (rc == 0 && e->seated) /* best available seats (slot__seat_take) */
        rc = slot__seat_res(c, n, res);
    return rc;
}

/*
 * confirm. Decision order: field syntax (proto: qty 0 is invalid_argument
 * even on a replay) -> unknown_event -> unknown_hold -> lazy expiry ->
 * a confirmed hold is a replay with its first outcome, whatever qty says ->
 * a held hold is confirmed (qty above the hold's: invalid_argument) ->
 * reacquire for expired or released -> hold_not_active.
 */
int slot__op_confirm(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    slot_hold_rec h;
    int rc = slot__hold_open(c, req, req->user, true, &e, &h, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    if (!e.seated && (req->has & SLOT_HAS_SEATS)) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "seats: event \"%s\" has no seat map", req->event);
        return 0;
    }
    if (h.status == SLOT_HOLD_CONFIRMED) {
        slot__res_hold(res, &h, SLOT_HOLD_CONFIRMED);
        res->replay = true;
        return e.seated ? slot__seat_res(c, &h, res) : 0;
    }
    if (h.status == SLOT_HOLD_HELD) {
        uint32_t keep = (req->has & SLOT_HAS_QTY) ? req->qty : h.qty;
        if (keep > h.qty) {
            slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "qty: %u is above the hold's qty %u", (unsigned)keep,
                           (unsigned)h.qty);
            return 0;
        }
        /* a seated hold's partial confirm may name the seats it keeps; they move to the list's front */
        if (e.seated && (rc = slot__seat_keep(c, req, &h, &keep, res)) != 0)
            return slot__answered_ok(rc);
        rc = slot__hold_confirm(c, &e, &h, keep);
        if (rc == 0)
            slot__res_hold(res, &h, SLOT_HOLD_CONFIRMED);
        if (rc == 0 && e.seated)
            rc = slot__seat_res(c, &h, res);
        return rc;
    }
    if (req->reacquire && (h.status == SLOT_HOLD_EXPIRED || h.status == SLOT_HOLD_RELEASED))
        return reacquire(c, req, &e, &h, res);
    not_active(res, &h);
    return 0;
}

/*
 * extend. Decision order (docs/protocol.md, "Clarifications of v1.1"):
 * field syntax -> unknown_event -> unknown_hold -> hold_not_active (after
 * lazy expiry: a hold whose expires_at has come is expired here, so an
 * extend and the sweeper at the same instant give one outcome) ->
 * extend_limit (max_extensions, then created_at + max_hold_ms).
 */
int slot__op_extend(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    slot_hold_rec h;
    int rc = slot__hold_open(c, req, req->user, true, &e, &h, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    if (h.status != SLOT_HOLD_HELD) {
        not_active(res, &h);
        return 0;
    }
    if ((uint32_t)h.extensions + 1 > e.max_extensions) {
        slot_res_error(res, SLOT_E_EXTEND_LIMIT, "hold has had %u of max_extensions %u", (unsigned)h.extensions,
                       (unsigned)e.max_extensions);
        return 0;
    }
    if (h.expires_at_ms + req->by_ms > h.created_at_ms + e.max_hold_ms) {
        slot_res_error(res, SLOT_E_EXTEND_LIMIT, "expires_at would pass created_at + max_hold_ms (%llu ms)",
                       (unsigned long long)e.max_hold_ms);
        return 0;
    }
    rc = slot__hold_extend(c, &h, req->by_ms);
    if (rc == 0)
        slot__res_hold(res, &h, SLOT_HOLD_HELD);
    return rc;
}
