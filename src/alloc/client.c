/*
 * client.c — the client limits of a new hold (docs/protocol.md, "Client
 * limits"; "Clarifications of v1.2", "Hold decision order", "Client
 * limits"): max_active_per_client from the stored 'c'/'d' rows (so it
 * survives restarts and failovers) and client_rate from token buckets kept in
 * memory by the writing allocator (they may start afresh after a restart).
 * Internal to libslot; see alloc_int.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_int.h"
#include "slot/assert.h"

/* One client key's bucket on one event: a 64-bit hash of (event, key) names
 * it (0 = a free slot); tokens in thousandths, refilled at client_rate per
 * second up to twice that. */
typedef struct bucket {
    uint64_t key;
    uint64_t milli; /* tokens x 1000 */
    uint64_t at_ms; /* when milli was last brought up to date */
} bucket;

struct slot__buckets {
    bucket b[SLOT_CLIENT_BUCKETS];
};

_Static_assert((SLOT_CLIENT_BUCKETS & (SLOT_CLIENT_BUCKETS - 1)) == 0, "a power of two");

static uint64_t fnv(uint64_t h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * UINT64_C(0x100000001b3);
    return h;
}

static uint64_t bucket_key(const char *ev, size_t ev_len, const char *client, size_t client_len)
{
    uint64_t h = fnv(UINT64_C(0xcbf29ce484222325), ev, ev_len);
    h = fnv(h ^ 0xff, client, client_len); /* 0xff is in no name: (ab, c) and (a, bc) differ */
    return h ? h : 1;
}

/* The bucket of key, found or made (full) in its probe run; when the run is
 * full, its least recently used bucket starts afresh (the contract lets a
 * bucket start afresh). NULL only when the table cannot be allocated. */
static bucket *bucket_get(slot_alloc *a, uint64_t key, uint64_t burst_milli, uint64_t now_ms)
{
    if (!a->buckets && !(a->buckets = calloc(1, sizeof(*a->buckets))))
        return NULL;
    bucket *victim = NULL; /* the first free slot of the run, else its least recently used */
    for (uint32_t i = 0; i < SLOT_CLIENT_BUCKET_PROBES; i++) {
        bucket *b = &a->buckets->b[(key + i) & (SLOT_CLIENT_BUCKETS - 1)];
        if (b->key == key)
            return b;
        if (b->key == 0) {
            if (!victim || victim->key != 0)
                victim = b;
        } else if (!victim || (victim->key != 0 && b->at_ms < victim->at_ms)) {
            victim = b;
        }
    }
    *victim = (bucket){key, burst_milli, now_ms};
    return victim;
}

void slot__client_buckets_free(slot_alloc *a)
{
    free(a->buckets);
    a->buckets = NULL;
}

/* The time until the client's first held hold on c's event expires (ms, at
 * least 1), from its 'd' rows (at most SLOT_CLIENT_RETRY_SCAN_MAX read). */
static int first_expiry(slot__alloc_ctx *c, const slot_req *req, uint64_t *retry_ms)
{
    uint64_t *seqs = malloc(SLOT_CLIENT_RETRY_SCAN_MAX * sizeof(*seqs));
    if (!seqs)
        return ENOMEM;
    uint32_t n = 0;
    int rc = slot_store_client_holds(c->st, c->txn, c->ev, c->ev_len, req->client, req->client_len, seqs,
                                     SLOT_CLIENT_RETRY_SCAN_MAX, &n);
    uint64_t first = UINT64_MAX;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        slot_hold_rec h;
        rc = slot_store_hold_get(c->st, c->txn, c->ev, c->ev_len, seqs[i], &h);
        if (rc == 0 && h.status != SLOT_HOLD_HELD)
            rc = MDB_CORRUPTED; /* a 'd' row names a held hold */
        if (rc == 0 && h.expires_at_ms < first)
            first = h.expires_at_ms;
    }
    free(seqs);
    if (rc == MDB_NOTFOUND)
        rc = MDB_CORRUPTED;
    *retry_ms = first != UINT64_MAX && first > c->now_ms ? first - c->now_ms : 1;
    return rc;
}

int slot__client_admit(slot__alloc_ctx *c, const slot_req *req, slot_event_rec *e, slot_res *res)
{
    if (req->client_len == 0 || (req->op != SLOT_OP_HOLD && req->op != SLOT_OP_HOLD_MANY))
        return 0; /* no key (or not a new hold: reacquire is not limited) */
    int rc = 0;
    if (e->max_active_per_client > 0) {
        uint64_t n = 0;
        rc = slot_store_client_get(c->st, c->txn, c->ev, c->ev_len, req->client, req->client_len, &n);
        if (rc == 0 && n + req->qty > e->max_active_per_client) {
            rc = slot__expire_event_due(c, e); /* a due hold of the key no longer counts */
            if (rc == 0)
                rc = slot_store_client_get(c->st, c->txn, c->ev, c->ev_len, req->client, req->client_len, &n);
        }
        if (rc == 0 && n + req->qty > e->max_active_per_client) {
            uint64_t retry = 1;
            rc = first_expiry(c, req, &retry);
            if (rc != 0)
                return rc;
            slot_res_error(res, SLOT_E_RATE_LIMITED, "client key has %llu units held of max_active_per_client %llu",
                           (unsigned long long)n, (unsigned long long)e->max_active_per_client);
            res->limit = "max_active_per_client";
            res->retry_after_ms = retry;
            return 0;
        }
    }
    if (rc != 0 || e->client_rate == 0)
        return rc;
    uint64_t rate = e->client_rate, burst = 2000u * rate; /* milli-tokens */
    bucket *b = bucket_get(c->a, bucket_key(c->ev, c->ev_len, req->client, req->client_len), burst, c->now_ms);
    if (!b)
        return ENOMEM;
    if (c->now_ms > b->at_ms) {
        uint64_t dt = c->now_ms - b->at_ms;
        uint64_t add = dt >= 2000 ? burst : dt * rate; /* ms x tokens/s = milli-tokens; 2 s fill it */
        b->milli = b->milli + add > burst ? burst : b->milli + add;
        b->at_ms = c->now_ms;
    }
    if (b->milli < 1000) {
        slot_res_error(res, SLOT_E_RATE_LIMITED, "client key is over client_rate %llu holds per second",
                       (unsigned long long)rate);
        res->limit = "client_rate";
        res->retry_after_ms = (1000 - b->milli + rate - 1) / rate; /* ms until one whole token */
        if (res->retry_after_ms == 0)
            res->retry_after_ms = 1;
        return 0;
    }
    if (c->rate_defer) { /* a cart item: spent once the cart is answered held or sold_out */
        c->rate_due = true;
        return 0;
    }
    b->milli -= 1000; /* the hold goes on to held, taken or sold_out: it takes its token */
    return 0;
}

int slot__client_spend(slot__alloc_ctx *c, const slot_req *req)
{
    if (!c->rate_due)
        return 0;
    slot_event_rec e;
    int rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, &e);
    if (rc != 0)
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    uint64_t burst = 2000u * e.client_rate;
    bucket *b = bucket_get(c->a, bucket_key(c->ev, c->ev_len, req->client, req->client_len), burst, c->now_ms);
    if (!b)
        return ENOMEM;
    SLOT_ASSERT(b->milli >= 1000); /* slot__client_admit saw a whole token, in this transaction */
    b->milli -= 1000;
    c->rate_due = false;
    return 0;
}

void slot__client_note(slot_hold_rec *h, const slot_req *req, const slot_event_rec *e)
{
    h->client_len = 0;
    h->client[0] = 0;
    if (req->client_len == 0 || e->max_active_per_client == 0)
        return;
    SLOT_ASSERT(req->client_len <= SLOT_CLIENT_BYTES_MAX);
    h->client_len = req->client_len;
    memcpy(h->client, req->client, req->client_len);
    h->client[h->client_len] = 0;
}
