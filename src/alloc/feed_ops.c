/*
 * feed_ops.c — the feed ops on a transaction (slot_feed_run in slot/feed.h):
 * subscribe's position, ack, feed_forget and feed_consumers; and the feed
 * part of check (slot_feed_check_holds). The connection side — who is
 * subscribed where, pushes, the window — is slotd's (src/server/feed_sub.c).
 */
#include "slot/feed.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "base/jsonw.h"
#include "slot/assert.h"

/*
 * subscribe (docs/protocol.md, "Feed" and its clarifications): the first seq
 * sent is the consumer's stored ack + 1 (acked, known), the oldest kept
 * (start, or acked for a consumer not yet known) or the number given; one
 * older than the oldest kept is feed_truncated (with "oldest"). A new
 * consumer is stored positioned just before that first seq; a known one
 * keeps its position (positions never move back). The window counts from
 * the later of the stored ack and the entry before the first seq.
 */
static int op_subscribe(slot_store *st, MDB_txn *txn, const slot_req *req, uint64_t now_ms, slot_res *res)
{
    uint64_t oldest, head, acked = 0;
    int rc = slot_feed_bounds(st, txn, &oldest, &head);
    if (rc != 0)
        return rc;
    if (oldest == 0)
        oldest = head + 1; /* an empty feed: the next entry is the oldest */
    rc = slot_feed_consumer_get(st, txn, req->consumer, req->consumer_len, &acked);
    bool known = rc == 0;
    if (rc != 0 && rc != MDB_NOTFOUND)
        return rc;
    uint64_t from = oldest;
    if (req->from == SLOT_FEED_FROM_SEQ)
        from = req->feed_seq;
    else if (req->from == SLOT_FEED_FROM_ACKED && known)
        from = acked + 1;
    if (from < oldest) {
        res->feed_from = oldest;
        slot_res_error(res, SLOT_E_FEED_TRUNCATED, "from %llu is older than the oldest entry kept, %llu",
                       (unsigned long long)from, (unsigned long long)oldest);
        return 0;
    }
    if (!known) {
        acked = from - 1;
        rc = slot_feed_consumer_put(st, txn, req->consumer, req->consumer_len, acked, now_ms);
        if (rc != 0)
            return rc;
    }
    res->feed_from = from;
    res->feed_head = head;
    res->feed_acked = acked > from - 1 ? acked : from - 1;
    return 0;
}

/* ack: the position moves forward only; the server checked already that the
 * connection is subscribed as this consumer and was sent req->feed_seq. A
 * consumer forgotten meanwhile is known again from its ack. */
static int op_ack(slot_store *st, MDB_txn *txn, const slot_req *req, uint64_t now_ms, slot_res *res)
{
    uint64_t acked = 0;
    int rc = slot_feed_consumer_get(st, txn, req->consumer, req->consumer_len, &acked);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return rc;
    if (rc == MDB_NOTFOUND || req->feed_seq > acked) {
        acked = rc == MDB_NOTFOUND || req->feed_seq > acked ? req->feed_seq : acked;
        rc = slot_feed_consumer_put(st, txn, req->consumer, req->consumer_len, acked, now_ms);
        if (rc != 0)
            return rc;
    }
    res->feed_acked = acked;
    return 0;
}

static int op_forget(slot_store *st, MDB_txn *txn, const slot_req *req, slot_res *res)
{
    int rc = slot_feed_consumer_del(st, txn, req->consumer, req->consumer_len);
    if (rc == MDB_NOTFOUND) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "consumer: no consumer \"%s\" is known", req->consumer);
        return 0;
    }
    res->done = rc == 0;
    return rc;
}

/* feed_consumers' list: counted, then copied into res->consumers (the same
 * transaction reads the same list twice), at most SLOT_FEED_CONSUMERS_MAX. */
typedef struct list_ctx {
    slot_consumer_pos *out; /* NULL: only count */
    uint32_t n;
} list_ctx;

static int list_one(void *p, const char *name, size_t len, uint64_t acked)
{
    list_ctx *l = p;
    if (l->n == SLOT_FEED_CONSUMERS_MAX)
        return 1;
    if (l->out) {
        SLOT_ASSERT(len <= SLOT_CONSUMER_BYTES_MAX);
        memcpy(l->out[l->n].name, name, len);
        l->out[l->n].name[len] = 0;
        l->out[l->n].acked = acked;
    }
    l->n++;
    return 0;
}

static int op_consumers(slot_store *st, MDB_txn *txn, slot_res *res)
{
    uint64_t oldest, head;
    int rc = slot_feed_bounds(st, txn, &oldest, &head);
    list_ctx l = {NULL, 0};
    if (rc == 0)
        rc = slot_feed_consumers_scan(st, txn, list_one, &l);
    if (rc == 1)
        rc = 0;
    if (rc != 0)
        return rc;
    res->feed_head = head;
    if (l.n == 0)
        return 0;
    if (!(res->consumers = calloc(l.n, sizeof(*res->consumers))))
        return ENOMEM;
    uint32_t counted = l.n;
    l = (list_ctx){res->consumers, 0};
    rc = slot_feed_consumers_scan(st, txn, list_one, &l);
    if (rc == 1)
        rc = 0;
    SLOT_ASSERT(rc != 0 || l.n == counted); /* the same transaction reads the same list */
    res->nconsumers = l.n;
    return rc;
}

int slot_feed_run(slot_store *st, MDB_txn *txn, const slot_req *req, uint64_t now_ms, slot_res *res)
{
    res->err = SLOT_E_OK;
    switch (req->op) {
    case SLOT_OP_SUBSCRIBE:
        return op_subscribe(st, txn, req, now_ms, res);
    case SLOT_OP_ACK:
        return op_ack(st, txn, req, now_ms, res);
    case SLOT_OP_FEED_FORGET:
        return op_forget(st, txn, req, res);
    case SLOT_OP_FEED_CONSUMERS:
        return op_consumers(st, txn, res);
    default:
        slot_res_error(res, SLOT_E_INTERNAL, "op %s is not the feed's", slot_op_name(req->op));
        return 0;
    }
}

/* ---- check: each hold's newest kept entry agrees with its status */

typedef struct seen {
    uint8_t key[1 + SLOT_EVENT_BYTES_MAX + 8]; /* event length, event, hold seq */
    uint64_t seq;                              /* the hold's */
    uint8_t ev_len;
    char ev[SLOT_EVENT_BYTES_MAX + 1];
    slot_feed_type last;
    bool born; /* its hold.held / hold.offered is kept */
    UT_hash_handle hh;
} seen;

typedef struct check_ctx {
    seen *by_hold; /* uthash, keyed by key */
    const char *only;
    size_t only_len;
} check_ctx;

static size_t seen_key(uint8_t *key, const char *ev, uint8_t ev_len, uint64_t seq)
{
    key[0] = ev_len;
    memcpy(key + 1, ev, ev_len);
    for (int i = 0; i < 8; i++)
        key[1 + ev_len + i] = (uint8_t)(seq >> (56 - 8 * i));
    return 1u + ev_len + 8u;
}

/* Forgets what was collected of one event (its entries up to a hand-over). */
static void check_forget_event(check_ctx *k, const char *ev, uint8_t ev_len)
{
    seen *s, *tmp;
    HASH_ITER(hh, k->by_hold, s, tmp)
    {
        if (s->ev_len == ev_len && memcmp(s->ev, ev, ev_len) == 0) {
            HASH_DEL(k->by_hold, s);
            free(s);
        }
    }
}

/* The feed in seq order: each hold's newest type, and whether its first entry is kept.
 * An event.moved or event.arrived ends what this set's feed says about the event's
 * holds: after a move away (moved) the holds are the other set's, and a later
 * target_clean may purge them here; after a move here (arrived) they are the copy
 * that came, in the states the source left them. So only the entries since the
 * event's last arrival count, and none while it is away (docs/design.md, "Moving
 * an event"; found by tests/test_placement_kill_loop.py: a target killed while
 * staging an event it once owned had its old copy purged, its feed still naming it). */
static int check_collect(void *p, const slot_feed_entry *e)
{
    check_ctx *k = p;
    if (k->only && (e->event_len != k->only_len || memcmp(e->event, k->only, k->only_len) != 0))
        return 0;
    if (e->type == SLOT_FEED_EVENT_MOVED || e->type == SLOT_FEED_EVENT_ARRIVED) {
        check_forget_event(k, e->event, e->event_len);
        return 0;
    }
    if (e->type == SLOT_FEED_EVENT_CREATED || e->type == SLOT_FEED_EVENT_CHANGED)
        return 0;
    uint8_t key[sizeof(((seen *)0)->key)];
    size_t klen = seen_key(key, e->event, e->event_len, e->hold_seq);
    seen *s = NULL;
    HASH_FIND(hh, k->by_hold, key, klen, s);
    if (s) {
        if (e->type != SLOT_FEED_HOLD_EXTENDED)
            s->last = e->type;
        return 0;
    }
    if (!(s = calloc(1, sizeof(*s))))
        return ENOMEM;
    memcpy(s->key, key, klen);
    s->seq = e->hold_seq;
    s->ev_len = e->event_len;
    memcpy(s->ev, e->event, e->event_len + 1u);
    s->last = e->type;
    s->born = e->type == SLOT_FEED_HOLD_HELD || e->type == SLOT_FEED_HOLD_OFFERED ||
              (e->type == SLOT_FEED_HOLD_CONFIRMED && e->replaces_seq != 0);
    HASH_ADD(hh, k->by_hold, key, klen, s);
    return 0;
}

static slot_hold_status status_of(slot_feed_type t)
{
    switch (t) {
    case SLOT_FEED_HOLD_CONFIRMED:
        return SLOT_HOLD_CONFIRMED;
    case SLOT_FEED_HOLD_RELEASED:
        return SLOT_HOLD_RELEASED;
    case SLOT_FEED_HOLD_EXPIRED:
        return SLOT_HOLD_EXPIRED;
    case SLOT_FEED_HOLD_CANCELLED:
        return SLOT_HOLD_CANCELLED;
    default:
        return SLOT_HOLD_HELD;
    }
}

int slot_feed_check_holds(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_feed_violation_fn fn,
                          void *ctx)
{
    check_ctx k = {.only = ev, .only_len = ev_len};
    int rc = slot_feed_scan(st, txn, 1, 0, check_collect, &k);
    seen *s, *tmp;
    HASH_ITER(hh, k.by_hold, s, tmp)
    {
        slot_hold_rec h;
        char detail[160];
        int g = rc == 0 ? slot_store_hold_get(st, txn, s->ev, s->ev_len, s->seq, &h) : rc;
        if (g == MDB_NOTFOUND) {
            snprintf(detail, sizeof(detail), "the feed names hold seq %llu, which does not exist",
                     (unsigned long long)s->seq);
            fn(ctx, s->ev, detail);
        } else if (g != 0) {
            rc = g;
        } else if (s->born && status_of(s->last) != h.status) {
            snprintf(detail, sizeof(detail), "hold seq %llu is %s, its newest feed entry says %s",
                     (unsigned long long)s->seq, slot_hold_status_name(h.status), slot_feed_type_name(s->last));
            fn(ctx, s->ev, detail);
        }
        HASH_DEL(k.by_hold, s);
        free(s);
    }
    return rc;
}
