/*
 * cold.c — building the idempotency index (alloc_int.h) from the holds database,
 * and the loading of cold events (docs/design.md, "The idempotency index,
 * and why it is in memory", "Cold events load in slices").
 *
 * At start every event's keys are put, less those of closed, settled events,
 * which are marked cold. A cold event's keys come in one of two ways:
 *
 * - in slices (slotd): slot_alloc_cold_need, asked before a request runs,
 *   says the request must wait and queues its event for loading;
 *   slot_alloc_cold_step, run once per batch, walks at most a slice of the
 *   queued events' holds and puts their keys; the event stops being cold
 *   when its walk is complete. The queue's states, per event: absent ->
 *   queued (next_seq 1) -> walking (next_seq > 1) -> loaded (popped, the
 *   event no longer cold). Nothing adds a key of a cold event meanwhile (the
 *   only writer of keys, slot__hold_make, asserts the event is not cold), so
 *   a walk spread over many transactions still finds exactly the event's
 *   keys.
 * - at once (slot__idem_event_ready, called before every lookup): for a
 *   caller that did not ask slot_alloc_cold_need (the library's own users,
 *   slotd with --no-cold-park) or for a path that needs the keys in the
 *   middle of an op (a hand-out, which a settled event never has).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc_int.h"
#include "slot/assert.h"

typedef slot__alloc_ctx ctx;

/* Index building walks every event, then every hold of it; c->ev names the
 * event being walked and c->a->idem the index being filled. */
static int idem_add(void *p, const slot_hold_rec *h)
{
    ctx *c = p;
    if (h->replaces_seq != 0)
        return 0; /* a reacquire's hold: its request key stays the replaced hold's */
    int rc = slot__idem_put_deferred(c->a->idem, c->ev, c->ev_len, h->user, h->user_len, h->request, h->request_len,
                                     h->seq); /* applied by the walk's slot__idem_flush */
    return rc == 0 ? 0 : ENOMEM;
}

/* An event that takes no new hold now and has nothing held or waiting:
 * closed by set_status or past its closes_at (docs/protocol.md, "Sale
 * windows"). Nothing of its own changes its keys until a request names it
 * again, so its keys may stay on disk until then (a replay still finds them:
 * slot__idem_event_ready loads them first). */
static bool event_settled(const slot_event_rec *e, uint64_t now_ms)
{
    bool closed = e->status == SLOT_EVENT_CLOSED || (e->closes_at_ms != 0 && now_ms >= e->closes_at_ms);
    return closed && e->held == 0 && e->waiting == 0;
}

/* An upper bound of the keys the build will put: the holds made on the
 * events it loads (seqs from 1, so next_seq - 1 of each; reacquires and
 * offers counted too). */
typedef struct idem_count {
    uint64_t now_ms, holds;
} idem_count;

static int idem_count_event(void *p, const char *ev, size_t ev_len, const slot_event_rec *e)
{
    idem_count *n = p;
    (void)ev;
    (void)ev_len;
    if (!event_settled(e, n->now_ms) && e->next_seq > 0)
        n->holds += e->next_seq - 1;
    return 0;
}

static int idem_add_event(void *p, const char *ev, size_t ev_len, const slot_event_rec *e)
{
    ctx *c = p;
    if (event_settled(e, c->now_ms))
        return slot__idem_cold_add(c->a->idem, ev, ev_len) == 0 ? 0 : ENOMEM;
    c->ev = ev;
    c->ev_len = ev_len;
    return slot_store_holds_scan(c->st, c->txn, ev, ev_len, idem_add, c);
}

/* Builds the idempotency index from the holds database (alloc_int.h says why it
 * is in memory): every event's keys, less those of events settled at now_ms
 * (marked cold, loaded on first use). O(holds of the other events), once
 * per allocator. */
static int idem_build(ctx *c, uint64_t now_ms)
{
    if (c->a->idem)
        return 0;
    ctx walk = {.a = c->a, .st = c->st, .txn = c->txn, .now_ms = now_ms};
    if (!(c->a->idem = slot__idem_new()))
        return ENOMEM;
    /* Sized first (one pass over the events, not the holds), so the load
     * never doubles the table: no key is moved, no lookup reads two tables.
     * Without the room the table just grows as it goes. */
    idem_count n = {.now_ms = now_ms};
    int rc = slot_store_events_scan(c->st, c->txn, idem_count_event, &n);
    if (rc == 0)
        (void)slot__idem_reserve(c->a->idem, n.holds);
    if (rc == 0)
        rc = slot_store_events_scan(c->st, c->txn, idem_add_event, &walk);
    if (slot__idem_flush(c->a->idem) != 0 && rc == 0)
        rc = ENOMEM;
    if (rc != 0) {
        slot__idem_free(c->a->idem);
        c->a->idem = NULL;
    }
    return rc;
}

int slot__idem_ensure(ctx *c)
{
    return idem_build(c, c->now_ms);
}

/* Makes c's event's keys present: a cold event's holds are walked now and
 * their keys put (O(holds of that event), once; the event then stays loaded).
 * A walk cut short leaves the event cold, and the next call walks it again
 * (put replaces, so nothing is doubled). */
int slot__idem_event_ready(ctx *c)
{
    int rc = slot__idem_ensure(c);
    if (rc != 0 || !slot__idem_cold(c->a->idem, c->ev, c->ev_len))
        return rc;
    ctx walk = *c;
    rc = slot_store_holds_scan(c->st, c->txn, c->ev, c->ev_len, idem_add, &walk);
    if (slot__idem_flush(c->a->idem) != 0 && rc == 0)
        rc = ENOMEM;
    if (rc == 0)
        slot__idem_cold_del(c->a->idem, c->ev, c->ev_len);
    return rc;
}

int slot_alloc_load(slot_alloc *a, MDB_txn *txn)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now_ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    ctx c = {.a = a, .st = a->store, .txn = txn};
    return idem_build(&c, now_ms);
}

/* ---- the load queue: a ring of at most SLOT_COLD_LOADS_MAX events */

typedef struct cold_load {
    char ev[SLOT_EVENT_BYTES_MAX];
    uint8_t ev_len;
    uint64_t next_seq; /* the first hold not walked yet; 1 = not begun */
} cold_load;

struct slot__cold {
    cold_load q[SLOT_COLD_LOADS_MAX];
    uint32_t head, n;
    uint64_t loaded; /* events whose walk completed (or that were found loaded), since init */
};

void slot__cold_free(slot_alloc *a)
{
    free(a->cold);
    a->cold = NULL;
}

static bool cold_queued(const struct slot__cold *q, const char *ev, size_t ev_len)
{
    for (uint32_t i = 0; i < q->n; i++) {
        const cold_load *l = &q->q[(q->head + i) % SLOT_COLD_LOADS_MAX];
        if (l->ev_len == ev_len && memcmp(l->ev, ev, ev_len) == 0)
            return true;
    }
    return false;
}

/* Queues ev for loading unless it is queued already. 0, ENOMEM, or EBUSY
 * (the queue is full). */
static int cold_enqueue(slot_alloc *a, const char *ev, size_t ev_len)
{
    SLOT_ASSERT(ev_len >= 1);
    SLOT_ASSERT(ev_len <= SLOT_EVENT_BYTES_MAX);
    if (!a->cold && !(a->cold = calloc(1, sizeof(*a->cold))))
        return ENOMEM;
    struct slot__cold *q = a->cold;
    if (cold_queued(q, ev, ev_len))
        return 0;
    if (q->n == SLOT_COLD_LOADS_MAX)
        return EBUSY;
    cold_load *l = &q->q[(q->head + q->n) % SLOT_COLD_LOADS_MAX];
    memcpy(l->ev, ev, ev_len);
    l->ev_len = (uint8_t)ev_len;
    l->next_seq = 1;
    q->n++;
    return 0;
}

static void cold_pop(struct slot__cold *q)
{
    SLOT_ASSERT(q->n > 0);
    q->head = (q->head + 1) % SLOT_COLD_LOADS_MAX;
    q->n--;
    q->loaded++;
}

/* One event the request names: whether it waits (cold), queued if so. */
static int need_one(slot_alloc *a, const char *ev, size_t ev_len, bool *wait)
{
    if (!slot__idem_cold(a->idem, ev, ev_len))
        return 0;
    *wait = true;
    return cold_enqueue(a, ev, ev_len);
}

int slot_alloc_cold_need(slot_alloc *a, MDB_txn *txn, const slot_req *req, uint64_t now_ms, bool *wait)
{
    *wait = false;
    if (req->op != SLOT_OP_HOLD && req->op != SLOT_OP_HOLD_MANY && req->op != SLOT_OP_WAITLIST_JOIN)
        return 0; /* the only ops that look a key up (slot__request_find) */
    ctx c = {.a = a, .st = a->store, .txn = txn, .now_ms = now_ms};
    int rc = slot__idem_ensure(&c);
    if (rc != 0 || slot__idem_cold_count(a->idem) == 0)
        return rc;
    if (req->op != SLOT_OP_HOLD_MANY)
        return need_one(a, req->event, req->event_len, wait);
    SLOT_ASSERT(req->nitems <= SLOT_CART_ITEMS_MAX);
    for (uint32_t i = 0; rc == 0 && i < req->nitems; i++)
        rc = need_one(a, req->items[i].event, req->items[i].event_len, wait);
    return rc;
}

/* The walk's callback: idem_add, counting the holds visited. */
typedef struct slice_walk {
    ctx c;
    uint32_t seen;
} slice_walk;

static int slice_add(void *p, const slot_hold_rec *h)
{
    slice_walk *w = p;
    w->seen++;
    return idem_add(&w->c, h);
}

int slot_alloc_cold_step(slot_alloc *a, MDB_txn *txn, uint32_t holds_max, uint32_t *walked)
{
    SLOT_ASSERT(holds_max >= 1);
    *walked = 0;
    struct slot__cold *q = a->cold;
    int rc = 0;
    while (rc == 0 && q && q->n > 0 && *walked < holds_max) {
        cold_load *l = &q->q[q->head];
        SLOT_ASSERT(a->idem != NULL); /* queued by slot_alloc_cold_need, which built it */
        if (!slot__idem_cold(a->idem, l->ev, l->ev_len)) {
            cold_pop(q); /* loaded at once meanwhile (slot__idem_event_ready) */
            continue;
        }
        SLOT_ASSERT(l->next_seq >= 1);
        slice_walk w = {.c = {.a = a, .st = a->store, .txn = txn, .ev = l->ev, .ev_len = l->ev_len}};
        uint64_t next = 0;
        rc = slot_store_holds_scan_from(a->store, txn, l->ev, l->ev_len, l->next_seq, holds_max - *walked, slice_add,
                                        &w, &next);
        /* No deferred put outlives the slice: the loop's slot__idem_peek
         * between batches must see an index with none waiting. */
        if (slot__idem_flush(a->idem) != 0 && rc == 0)
            rc = ENOMEM;
        SLOT_ASSERT(w.seen <= holds_max - *walked);
        *walked += w.seen;
        if (rc != 0)
            break; /* next_seq unchanged: the slice is walked again (put replaces) */
        SLOT_ASSERT(next == 0 || next > l->next_seq);
        if (next != 0) {
            l->next_seq = next;
            continue; /* the budget is spent */
        }
        slot__idem_cold_del(a->idem, l->ev, l->ev_len);
        cold_pop(q);
    }
    return rc;
}

uint32_t slot_alloc_cold_loading(const slot_alloc *a)
{
    return a->cold ? a->cold->n : 0;
}

uint64_t slot_alloc_cold_loaded(const slot_alloc *a)
{
    return a->cold ? a->cold->loaded : 0;
}
