/*
 * park.c — the writes that wait for a cold event's keys (loop.h, "Parking";
 * docs/design.md, "Cold events load in slices"). Loop thread only.
 *
 * The commit thread decides, request by request, that a write needs the
 * keys of a cold event (slot_alloc_cold_need) and leaves it out of the
 * batch; the hand-back brings it here. Nothing here waits on anything: the
 * list is bounded (SLOT_COLD_PARKED_MAX, then overloaded), and the loader's
 * own entry (e->cold_step) rides in the batches, one slice each, until the
 * commit thread says no event loads any more.
 */
#include "loop.h"

#include "slot/assert.h"

static void park_append(server *s, entry *e)
{
    e->state = ENTRY_PARKED;
    e->qnext = NULL;
    if (s->park.tail)
        s->park.tail->qnext = e;
    else
        s->park.head = e;
    s->park.tail = e;
    s->park.n++;
    s->stats.cold_parked++;
    if (e->conn)
        e->conn->parked++;
}

void slot__park_push(server *s, entry *e)
{
    SLOT_ASSERT(e->state == ENTRY_QUEUED);
    SLOT_ASSERT(e->cold_park);
    SLOT_ASSERT(!e->sweep && !e->cold_step);
    /* A batch's own entries are parked whatever the bound: they were
     * admitted already (the bound holds back new ones, slot__park_admit). */
    park_append(s, e);
}

bool slot__park_admit(server *s, conn *c, entry *e)
{
    if (c->parked == 0)
        return false;
    if (s->park.n >= SLOT_COLD_PARKED_MAX) {
        slot_res_error(&e->res, SLOT_E_OVERLOADED, "%u requests wait for closed events' keys; retry later", s->park.n);
        slot__count_error(s, SLOT_E_OVERLOADED);
        return true;
    }
    park_append(s, e);
    return true;
}

/* The queued writes of connections that have parked ones move behind
 * them, in queue order (which is their arrival order). O(queue), only after
 * a batch that parked something. */
static void park_followers(server *s)
{
    entry *keep_head = NULL, *keep_tail = NULL;
    uint32_t kept = 0;
    for (entry *e = s->queue.head, *next; e; e = next) {
        next = e->qnext;
        SLOT_ASSERT(e->state == ENTRY_QUEUED);
        if (e->conn && e->conn->parked > 0 && !e->sweep && !e->cold_step) {
            park_append(s, e);
            continue;
        }
        e->qnext = NULL;
        if (keep_tail)
            keep_tail->qnext = e;
        else
            keep_head = e;
        keep_tail = e;
        kept++;
    }
    s->queue.head = keep_head;
    s->queue.tail = keep_tail;
    s->queue.len = kept;
}

/* Stopping: a write the batch in flight parked is answered shutting_down,
 * as the queue was when the stop began (server.c). The caller flushes. */
static void park_refuse_stopping(server *s)
{
    slot__park_requeue(s);
    for (entry *e = s->queue.head, *next; e; e = next) {
        next = e->qnext;
        e->qnext = NULL;
        if (e->sweep || e->cold_step || !e->conn) {
            s->sweep_pending = s->sweep_pending && !e->sweep;
            slot__entry_put(s, e);
            continue;
        }
        slot_res_clear(&e->res);
        slot_res_error(&e->res, SLOT_E_SHUTTING_DOWN, NULL);
        e->state = ENTRY_DONE;
        slot__count_result(s, e);
        if (!e->conn->dirty) {
            e->conn->dirty = true;
            e->conn->dirty_next = s->dirty;
            s->dirty = e->conn;
        }
    }
    s->queue.head = s->queue.tail = NULL;
    s->queue.len = 0;
}

void slot__park_after_batch(server *s, bool parked)
{
    if (s->stopping) {
        if (s->park.n > 0)
            park_refuse_stopping(s);
        return;
    }
    if (parked)
        park_followers(s);
    if (s->park.unpark || (s->park.loading == 0 && s->park.n > 0)) {
        s->park.unpark = false;
        slot__park_requeue(s);
    }
    if (s->park.loading > 0 && !s->park.step_pending && !s->stopping) {
        entry *e = slot__entry_get(s);
        if (!e)
            return; /* out of memory: the next hand-back tries again */
        e->cold_step = true;
        slot__queue_push(s, e);
        s->park.step_pending = true;
    }
}
