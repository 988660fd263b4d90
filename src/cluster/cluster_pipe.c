/*
 * cluster_pipe.c — a primary's data path with --durability pipelined
 * (docs/design.md, "On a replica set's primary"): batch N+1 runs in the
 * open state while N's record is flushed here and acked by the members; the
 * commit point is the largest seq both flushed here and acked by every node
 * whose acks count (a prefix: members ack in order), and a batch's replies
 * leave once it reaches the batch's own record. The timeouts, drops and
 * step-down are cluster_primary.c's; the open state and the held ring are
 * src/server/commit_pipe*.c's.
 */
#include <string.h>

#include "cluster_int.h"
#include "server/commit.h"
#include "server/loop.h"
#include "slot/assert.h"

static bool is_primary_role(const clu *c)
{
    return c->role == CLU_PRIMARY || c->role == CLU_PROMOTING;
}

/* The largest seq <= hi that every node whose acks count has acked: the
 * configuration's members other than this node, the counted joiners, and
 * the members a CAS in doubt may have added (a node not tracked: 0). */
static uint64_t ack_point(clu *c, uint64_t hi)
{
    uint64_t pt = hi;
    for (size_t i = 0; i < c->cfg.nmembers; i++) {
        if (strcmp(c->cfg.members[i], c->self) == 0)
            continue;
        clu_node *n = slot__clu_node(c, c->cfg.members[i], false);
        uint64_t a = n ? n->acked : 0;
        pt = a < pt ? a : pt;
    }
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].counted && c->nodes[i].acked < pt)
            pt = c->nodes[i].acked;
    for (size_t i = 0; c->doubt && i < c->doubt_cfg.nmembers; i++) {
        if (strcmp(c->doubt_cfg.members[i], c->self) == 0)
            continue;
        clu_node *n = slot__clu_node(c, c->doubt_cfg.members[i], false);
        uint64_t a = n ? n->acked : 0;
        pt = a < pt ? a : pt;
    }
    return pt;
}

bool slot__clu_pipe_hold(server *s)
{
    clu *c = s->clu;
    uint64_t seq = c->batch_seq;
    c->batch_seq = 0;
    if (!seq)
        return false; /* the batch failed, nothing was logged: its errors go out now */
    if (c->role != CLU_PRIMARY || !s->pipe->active) {
        /* Not selling any more (stepped down while it ran): the open state it
         * ran in is dropped; its record is an uncommitted tail of our log. */
        slot__batch_finish(s, SLOT_E_UNAVAILABLE, "this node stopped being primary; the outcome is unknown");
        return true;
    }
    SLOT_ASSERT(seq == c->applied + 1); /* the open state's batches follow each other, without a gap */
    c->applied = seq;                   /* on a pipelined primary: the last record the open state holds */
    if (!c->pending_seq)
        c->pending_since_ms = uv_now(s->loop);
    c->pending_seq = seq;
    if (c->unavailable) /* it read the writes of a batch the members did not acknowledge */
        slot__batch_finish(s, SLOT_E_UNAVAILABLE, "the replicas have not acknowledged an earlier batch; the outcome "
                                                  "is unknown");
    else
        slot__pipe_hold(s, seq); /* the next batch goes now; this one's replies wait for the commit point */
    for (size_t i = 0; i < c->nnodes; i++)
        slot__clu_pump(c, &c->nodes[i]);
    slot__clu_commit_check(c);
    return true;
}

void slot__clu_pipe_commit_check(clu *c)
{
    server *s = c->s;
    if (!is_primary_role(c) || !c->pending_seq || c->job != CLU_JOB_NONE)
        return;
    uint64_t durable = slot__pipe_durable(s);
    uint64_t hi = c->pending_seq < durable ? c->pending_seq : durable;
    uint64_t pt = ack_point(c, hi);
    if (pt <= c->commit_seq)
        return;
    /* commit_seq < pt <= pending_seq <= applied: the commit point only rises, never past the log */
    SLOT_ASSERT(pt <= c->applied && c->pending_seq <= c->applied);
    c->commit_seq = pt;
    slot_repl_set_commit(c->repl, pt);
    slot__pipe_set_point(s, pt);
    if (pt == c->pending_seq) {
        c->pending_seq = 0;
        c->unavailable = false;
    } else {
        c->pending_since_ms = uv_now(s->loop); /* progress: the next record gets its own timeout */
    }
    if (c->role == CLU_PROMOTING && !c->pending_seq) {
        slot__clu_set_role(c, CLU_PRIMARY);
        SLOT__CLU_LOG(c, SLOT__LOG_INFO, "primary", SLOT__LF_U("tenure", c->tenure), SLOT__LF_U("seq", c->commit_seq));
        slot__clu_node_put(c);
    }
    slot__pipe_release(s); /* the held batches up to pt; the next batch; the feed */
    slot__reads_resume(s);
}

void slot__clu_pipe_moved(server *s)
{
    clu *c = s->clu;
    slot__clu_commit_check(c);
    slot__pipe_release(s); /* an LMDB commit: the feed and the reads that wait for it */
}
