/* The pipelined group commit on a replica set's primary (--cluster with
 * --durability pipelined; docs/design.md, "On a replica set's primary"): the
 * pipe on the cluster's batch log, the commit point the loop publishes (LMDB
 * commits the open state only up to it), the held batches answered
 * unavailable, and the drop of the open state at step-down. The batch loop
 * and the flusher are commit_pipe.c's; the acks are src/cluster/'s. */
#include "commit.h"
#include <stdint.h>
#include <stdlib.h>
#include "loop.h"
#include "slot/assert.h"

int slot__pipe_attach_set(server *s, slot_rlog *rlog, pthread_mutex_t *rlog_mu)
{
    SLOT_ASSERT(!s->pipe && rlog && rlog_mu);
    slot__pipe *p = calloc(1, sizeof(*p));
    if (!p)
        return -1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->rlog = rlog;
    p->rlog_mu = rlog_mu;
    p->set = true;
    pthread_mutex_lock(rlog_mu);
    slot_rlog_last(rlog, NULL, &p->appended);
    pthread_mutex_unlock(rlog_mu);
    p->durable = p->appended; /* the cluster's open synced its log; nothing is appended by the pipe before a reset */
    p->point = 0;
    p->on = true;
    s->pipe = p; /* s->batch.wset stays the cluster's capture */
    return 0;
}

void slot__pipe_reset(server *s, uint64_t seq, uint64_t commit_seq)
{
    slot__pipe *p = s->pipe;
    SLOT_ASSERT(p && p->set && !s->batch.busy && p->held_n == 0);
    SLOT_ASSERT(commit_seq <= seq);
    pthread_mutex_lock(&p->mu);
    SLOT_ASSERT(!p->txn); /* dropped (or never begun) before the promote job ran */
    p->appended = p->durable = seq; /* the promote job synced the tenure record */
    p->point = commit_seq;
    p->lmdb_seq = p->lmdb_prev = seq; /* the promote job committed LMDB (flushed) up to it */
    p->drop = false;
    p->selling = true;
    p->gen++;
    pthread_mutex_unlock(&p->mu);
    p->lmdb_seen = p->released = p->ran = p->ran_state = seq;
    p->active = true;
}

void slot__pipe_set_point(server *s, uint64_t c)
{
    slot__pipe *p = s->pipe;
    pthread_mutex_lock(&p->mu);
    SLOT_ASSERT(c >= p->point && c <= p->durable); /* it only rises, and never past what is flushed here */
    p->point = c;
    pthread_cond_broadcast(&p->cv); /* a commit of the open state may wait for it */
    pthread_mutex_unlock(&p->mu);
}

uint64_t slot__pipe_point(server *s)
{
    slot__pipe *p = s->pipe;
    pthread_mutex_lock(&p->mu);
    uint64_t c = p->point;
    pthread_mutex_unlock(&p->mu);
    return c;
}

uint64_t slot__pipe_durable(server *s)
{
    slot__pipe *p = s->pipe;
    pthread_mutex_lock(&p->mu);
    uint64_t d = p->durable;
    pthread_mutex_unlock(&p->mu);
    return d;
}

uint64_t slot__pipe_lmdb(server *s)
{
    slot__pipe *p = s->pipe;
    pthread_mutex_lock(&p->mu);
    uint64_t l = p->lmdb_seq;
    pthread_mutex_unlock(&p->mu);
    return l;
}

uint64_t slot__pipe_drop(server *s)
{
    slot__pipe *p = s->pipe;
    SLOT_ASSERT(p->set && p->held_n == 0); /* what was held was answered first */
    pthread_mutex_lock(&p->mu);
    p->drop = true;
    p->selling = false;
    uint64_t l = p->lmdb_seq;
    pthread_cond_broadcast(&p->cv); /* a commit waiting for the commit point aborts instead */
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_lock(&s->batch.mu); /* an idle commit thread does it now */
    pthread_cond_signal(&s->batch.cv);
    pthread_mutex_unlock(&s->batch.mu);
    p->active = false;
    p->ran = p->ran_state = p->released = p->lmdb_seen; /* a follower's reads wait for nothing of ours */
    return l;
}

void slot__pipe_fail_held(server *s, slot_err err, const char *why)
{
    slot__pipe *p = s->pipe;
    SLOT_ASSERT(err != SLOT_E_OK);
    bool sweep_again = false, parked = false;
    while (p->held_n > 0) {
        slot__pipe_held *h = &p->held[p->held_head];
        slot__entries_finish(s, h->items, h->n, err, why, &sweep_again, &parked);
        s->stats.commits++;
        h->n = 0;
        p->held_head = (p->held_head + 1) % SLOT_PIPE_DEPTH;
        p->held_n--;
    }
    SLOT_ASSERT(p->held_n == 0);
    slot__park_after_batch(s, parked);
    slot__flush_dirty(s);
}
