/*
 * loop.c — the loop thread's core (loop.h): entries, the write queue and
 * its dispatch, the read transaction, the sold-out read path, the sweeper
 * and the counters. The read ops' answers (hello, stats, metrics, backup,
 * cluster) are above it in reads.c; it reaches the connections only
 * through s->conn_up, and calls no other module of the server.
 */
#include "loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slot/feed.h"
#include "slot/assert.h"
#include "slot_config.h"

entry *slot__entry_get(server *s)
{
    entry *e = s->pool.free;
    if (e)
        s->pool.free = e->next;
    else if (!(e = malloc(sizeof(*e))))
        return NULL;
    s->pool.live++;
    memset(e, 0, offsetof(entry, req));
    memset(&e->res, 0, sizeof(e->res));
    e->req.seat_map = NULL; /* a fresh entry's req is not zeroed; slot__entry_put frees them */
    e->req.place = NULL;
    e->req.op = SLOT_OP__COUNT;
    e->req.id.kind = SLOT_ID_NONE;
    return e;
}

void slot__entry_put(server *s, entry *e)
{
    SLOT_ASSERT(s->pool.live > 0);
    slot_res_clear(&e->res);
    slot_req_clear(&e->req);
    s->pool.live--;
    e->next = s->pool.free;
    s->pool.free = e;
}

/* Appends a write request to the queue the next batch is taken from. */
void slot__queue_push(server *s, entry *e)
{
    e->state = ENTRY_QUEUED;
    e->qnext = NULL;
    if (s->queue.tail)
        s->queue.tail->qnext = e;
    else
        s->queue.head = e;
    s->queue.tail = e;
    s->queue.len++;
}

/* Hands the queued write requests (at most SLOT_BATCH_REQUESTS_MAX) to the
 * commit thread when it is idle. Called at the end of every loop turn and
 * when a batch completes, so a batch is whatever arrived meanwhile. */
void slot__dispatch(server *s)
{
    if (s->batch.busy || s->queue.len == 0 || (s->pipe && s->pipe->held_n >= SLOT_PIPE_DEPTH))
        return; /* pipelined: at most SLOT_PIPE_DEPTH batches wait for the log's flush */
    if (s->clu && s->clu_up->write_pause(s))
        return; /* a switchover drains what is in flight; the queue waits (bounded by --queue-max) */
    if (s->clu && s->clu_up->write_gate(s, NULL)) {
        slot__queue_refuse(s);
        return;
    }
    SLOT_ASSERT(s->batch.n == 0); /* the last batch was completed and emptied */
    size_t n = 0;
    while (s->queue.head && n < SLOT_BATCH_REQUESTS_MAX) {
        entry *e = s->queue.head;
        SLOT_ASSERT(e->state == ENTRY_QUEUED);
        s->queue.head = e->qnext;
        e->qnext = NULL;
        s->batch.items[n++] = e;
    }
    if (!s->queue.head)
        s->queue.tail = NULL;
    SLOT_ASSERT(n >= 1);
    SLOT_ASSERT(n <= s->queue.len);
    s->queue.len -= (uint32_t)n;
    SLOT_ASSERT((s->queue.len == 0) == (s->queue.head == NULL)); /* len counts the queue */
    s->batch.busy = true;
    pthread_mutex_lock(&s->batch.mu);
    s->batch.n = n;
    s->batch.ready = true;
    pthread_cond_signal(&s->batch.cv);
    pthread_mutex_unlock(&s->batch.mu);
}

/* The parked writes go back in front of the queue (they arrived before
 * what it holds): queue work, so the core does it (park.c calls it too). */
void slot__park_requeue(server *s)
{
    if (!s->park.head)
        return;
    uint32_t n = 0;
    for (entry *e = s->park.head; e; e = e->qnext) {
        SLOT_ASSERT(e->state == ENTRY_PARKED);
        e->state = ENTRY_QUEUED;
        if (e->conn) {
            SLOT_ASSERT(e->conn->parked > 0);
            e->conn->parked--;
        }
        n++;
    }
    SLOT_ASSERT(n == s->park.n);
    /* In front of what is queued: they arrived before it. */
    s->park.tail->qnext = s->queue.head;
    if (!s->queue.head)
        s->queue.tail = s->park.tail;
    s->queue.head = s->park.head;
    s->queue.len += n;
    s->park.head = s->park.tail = NULL;
    s->park.n = 0;
}

void slot__queue_refuse(server *s)
{
    slot__park_requeue(s); /* what waits for a cold event's keys is refused alike */
    for (entry *e = s->queue.head, *next; e; e = next) {
        next = e->qnext;
        e->qnext = NULL;
        if (e->sweep || e->cold_step || !e->conn) {
            if (e->sweep)
                s->sweep_pending = false;
            if (e->cold_step)
                s->park.step_pending = false;
            slot__entry_put(s, e);
            continue;
        }
        slot_res_clear(&e->res);
        if (!s->clu || !s->clu_up->write_gate(s, &e->res))
            slot_res_error(&e->res, SLOT_E_UNAVAILABLE, NULL);
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
    while (s->dirty) {
        conn *c = s->dirty;
        s->dirty = c->dirty_next;
        c->dirty = false;
        s->conn_up.flush(c);
    }
}

void slot__reads_resume(server *s)
{
    if (!s->reads_waiting)
        return;
    s->reads_waiting = false;
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->head && c->head->state == ENTRY_READ_WAIT)
            s->conn_up.flush(c);
    }
    for (conn *c = s->http.conns, *next; c; c = next) {
        next = c->next;
        if (c->head && c->head->state == ENTRY_READ_WAIT)
            s->conn_up.flush(c);
    }
}

void slot__count_error(server *s, slot_err err)
{
    s->stats.errors++;
    s->stats.errors_by_code[(unsigned)err < SLOT_E__COUNT ? err : SLOT_E_INTERNAL]++;
}

void slot__count_reply(server *s, const entry *e)
{
    unsigned op = e->parsed && (unsigned)e->req.op < SLOT_OP__COUNT ? (unsigned)e->req.op : SLOT_OP__COUNT;
    slot__outcome o = e->res.err != SLOT_E_OK ? SLOT__OUTCOME_ERROR
                      : e->res.sold_out       ? SLOT__OUTCOME_SOLD_OUT
                                              : SLOT__OUTCOME_OK;
    s->stats.replies[op][o]++;
}

void slot__count_result(server *s, const entry *e)
{
    if (e->res.err != SLOT_E_OK)
        slot__count_error(s, e->res.err);
    else if (e->req.op == SLOT_OP_HOLD && e->res.sold_out)
        s->stats.sold_out++;
    else if (e->req.op == SLOT_OP_HOLD && !e->res.replay)
        s->stats.holds++;
}

/* End of every loop turn: hand the collected requests to the commit thread;
 * and when reading paused for lack of entries, resume once half are back. */
void slot__on_check(uv_check_t *h)
{
    server *s = h->data;
    slot__dispatch(s);
    if (s->pool.mem_paused && s->pool.live < SLOT_ENTRIES_MAX / 2) {
        s->pool.mem_paused = false;
        for (conn *c = s->conns; c; c = c->next)
            s->conn_up.pace(c);
    }
}

/* The loop thread's read transaction (loop.h). */
int slot__read_begin(server *s)
{
    pthread_rwlock_rdlock(&s->map_lock);
    int rc = s->rtxn ? mdb_txn_renew(s->rtxn) : mdb_txn_begin(slot_store_env(s->store), NULL, MDB_RDONLY, &s->rtxn);
    s->rtxn_live = rc == 0;
    return rc;
}

void slot__read_end(server *s)
{
    if (s->rtxn_live)
        mdb_txn_reset(s->rtxn);
    s->rtxn_live = false;
    pthread_rwlock_unlock(&s->map_lock);
}

bool slot__hold_read(server *s, entry *e)
{
    if (s->opts.no_read_path || e->req.op != SLOT_OP_HOLD || s->batch.busy || s->queue.len > 0 || s->park.n > 0 ||
        s->stopping ||
        (s->pipe && (s->pipe->held_n > 0 || s->pipe->lmdb_seen < (s->pipe->set ? s->pipe->ran_state : s->pipe->ran))))
        return false; /* a parked write is a pending write too (condition 1); pipelined: answers held, or
                       * batches that ran not yet in LMDB (docs/design.md, "Pipelined group commit") */
    if (s->clu && (s->clu_up->write_pause(s) || s->clu_up->write_gate(s, NULL)))
        return false; /* the write path answers (unavailable, not_primary) or waits */
    bool fast = false;
    if (slot__read_begin(s) == 0) {
        slot_res gate_res;
        memset(&gate_res, 0, sizeof(gate_res));
        slot__read_gate gate = s->clu ? s->clu_up->read_gate(s, s->rtxn, &gate_res) : SLOT__READ_GO;
        slot_res_clear(&gate_res);
        /* batch.busy is false: the commit thread is idle, and the hand-back's
         * mutex ordered its last change of the index before this read. */
        fast = gate == SLOT__READ_GO &&
               slot_alloc_sold_out_peek(&s->write_alloc, s->rtxn, &e->req, slot__wall_ms(), &e->res);
    }
    slot__read_end(s);
    if (!fast)
        return false;
    e->state = ENTRY_DONE;
    s->stats.sold_out_fast++;
    slot__count_result(s, e);
    return true;
}

void slot__sweep_enqueue(server *s)
{
    if (s->sweep_pending)
        return;
    entry *e = slot__entry_get(s);
    if (!e)
        return;
    e->sweep = true;
    slot__queue_push(s, e);
    s->sweep_pending = true;
}

/* Whether any held hold has expired by now, or feed entries may be trimmed
 * (slot/feed.h), from a read transaction: an idle server then runs no write
 * transaction at all. On a storage error: true
 * (the sweep's own transaction reports it). */
static bool sweep_due(server *s)
{
    uint64_t first = 0;
    int rc = slot__read_begin(s);
    if (rc == 0)
        rc = slot_store_expiry_first(s->store, s->rtxn, &first);
    bool trim = (rc == 0 || rc == MDB_NOTFOUND) &&
                slot_feed_trim_due(s->store, s->rtxn, slot__wall_ms(), s->opts.feed_retention_ms);
    slot__read_end(s);
    if (rc == MDB_NOTFOUND)
        return trim;
    return rc != 0 || trim || first <= slot__wall_ms();
}

void slot__on_room_timer(uv_timer_t *t)
{
    server *s = t->data;
    if (s->sweep_pending || s->stopping)
        return;
    bool due = true;
    if (slot__read_begin(s) == 0)
        due = slot_alloc_admit_pending(s->store, s->rtxn, slot__wall_ms());
    slot__read_end(s);
    if (due)
        slot__sweep_enqueue(s);
}

void slot__on_sweep_timer(uv_timer_t *t)
{
    server *s = t->data;
    if (!s->sweep_pending && sweep_due(s))
        slot__sweep_enqueue(s);
    s->conn_up.reap(s);
}
