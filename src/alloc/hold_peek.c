/*
 * hold_peek.c — the sold-out read path's decision (slot/alloc.h,
 * slot_alloc_sold_out_peek; docs/design.md, "The sold-out read path"):
 * op_hold's order of decisions (alloc.c) replayed on a read transaction,
 * giving up at the first step whose outcome is not certainly "go on".
 */
#include <string.h>

#include "alloc_int.h"

bool slot_alloc_sold_out_peek(const slot_alloc *a, MDB_txn *rtxn, const slot_req *req, uint64_t now_ms, slot_res *res)
{
    if (req->op != SLOT_OP_HOLD || !a->idem || req->alloc_len > 0) /* a block's hold: the write path */
        return false; /* no index yet: the first hold builds it on the write path */
    slot_store *st = a->store;
    slot_event_rec e;
    if (slot_store_event_get(st, rtxn, req->event, req->event_len, &e) != 0)
        return false; /* unknown_event (or a storage error) comes from the write path */
    if (e.seated)
        return false; /* seats: "taken" and max_adjacent are the write path's (docs/protocol.md, "Seated events") */
    /* 3. replay / idempotency_conflict: the key must be certainly unknown. */
    if (slot__idem_peek(a->idem, req->event, req->event_len, req->user, req->user_len, req->request,
                        req->request_len) != -1)
        return false;
    if (e.waitlist_max > 0) {
        slot_wait_rec w;
        if (slot_store_wait_key_get(st, rtxn, req->event, req->event_len, req->user, req->user_len, req->request,
                                    req->request_len, &w) != MDB_NOTFOUND)
            return false;
    }
    /* rate_limited comes before sold_out and a bucket is the writer's: a
     * client-limited hold takes the write path. */
    if (req->client_len > 0 && (e.max_active_per_client > 0 || e.client_rate > 0))
        return false;
    /* 4., 5.: max_per_request and the sale window (alloc_core.c's slot__on_sale). */
    if (req->qty > e.max_per_request || e.status != SLOT_EVENT_ON_SALE)
        return false;
    if ((e.opens_at_ms && now_ms < e.opens_at_ms) || (e.closes_at_ms && now_ms >= e.closes_at_ms))
        return false;
    /* 6. user_limit: with no due hold the write path's second look equals the first. */
    if (e.max_per_user > 0) {
        uint64_t user_qty = 0;
        if (slot_store_user_get(st, rtxn, req->event, req->event_len, req->user, req->user_len, &user_qty) != 0 ||
            user_qty + req->qty > e.max_per_user)
            return false;
    }
    /* The write path expires the event's due holds before it answers sold_out;
     * when no held hold of any event is due there is nothing to expire. */
    uint64_t first_ms = 0;
    int rc = slot_store_expiry_first(st, rtxn, &first_ms);
    if (rc != MDB_NOTFOUND && (rc != 0 || first_ms <= now_ms))
        return false;
    /* The chain (docs/protocol.md, "Ticket types"): every ancestor on sale and
     * within its max_per_user, as slot__hold_admit checks them; then sold_out
     * over the chain, naming the nearest event that lacked. */
    slot__alloc_ctx c = {NULL, st, rtxn, req->event, req->event_len, now_ms};
    slot__chain ch;
    ch.n = 0;
    if (e.parent_len > 0 && slot__chain_load(&c, &e, &ch) != 0)
        return false;
    for (uint8_t i = 0; i < ch.n; i++) {
        const slot_event_rec *p = &ch.anc[i].rec;
        if (p->status != SLOT_EVENT_ON_SALE || (p->opens_at_ms && now_ms < p->opens_at_ms) ||
            (p->closes_at_ms && now_ms >= p->closes_at_ms))
            return false;
        uint64_t u = 0;
        if (p->max_per_user > 0 &&
            (slot_store_user_get(st, rtxn, ch.anc[i].name, ch.anc[i].len, req->user, req->user_len, &u) != 0 ||
             u + req->qty > p->max_per_user))
            return false;
    }
    /* 7. sold_out, as slot__hold_admit decides it (waiting people come first). */
    char short_ev[SLOT_EVENT_BYTES_MAX + 1];
    uint64_t avail = 0;
    if (slot__chain_free(&c, &e, req->qty, &avail, short_ev) != 0)
        return false;
    if (avail >= req->qty && e.waiting == 0)
        return false;
    res->sold_out = true;
    res->available = avail;
    memcpy(res->short_event, short_ev, sizeof(res->short_event));
    return true;
}
