/*
 * alloc_idem.c — the ops' lookup in the idempotency index (alloc_int.h): the hold
 * made earlier for a key, checked against the store. The index is built and
 * its cold events loaded by cold.c (slot__idem_event_ready). Internal to
 * libslot; see alloc_int.h.
 */
#include <string.h>

#include "alloc_int.h"

typedef slot__alloc_ctx ctx;

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
