/*
 * cluster_primary.c — a primary's data path (docs/design.md, "The primary's
 * rule", "Failover", "Joining"): every batch's write set becomes a record,
 * appended to the batch log and synced before the LMDB commit; the loop
 * sends each record to every member it tracks, from that member's own
 * position; a batch is answered once every member that must ack has acked
 * it, or after a CAS dropped the silent ones; a joiner caught up to the
 * commit point is waited for, then added by a CAS. Taking over: the promote
 * job applies the whole log and appends the first record of the new tenure.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "server/commit.h"
#include "server/feed_sub.h"
#include "server/loop.h"
#include "slot/assert.h"

static bool is_primary(const clu *c)
{
    return c->role == CLU_PRIMARY || c->role == CLU_PROMOTING;
}

/* A batch log error as the commit thread's internal error convention. */
static int log_err(int rc)
{
    return rc == -ENOSPC || rc == -EDQUOT ? -rc : EIO;
}

/* Seals the write set as record seq of our tenure and appends it to the
 * log, made durable there when sync (pipelined batches: the flusher does
 * it). Commit thread; rlog_mu taken here. */
static int append_record(clu *c, uint64_t seq, uint64_t commit_seq, bool sync)
{
    uint64_t prev_t = 0, last = 0;
    pthread_mutex_lock(&c->rlog_mu);
    slot_rlog_last(c->rlog, &prev_t, &last);
    int rc = 0;
    if (seq != last + 1) {
        slot__log(SLOT__LOG_ERROR, "cluster: the store's seq does not follow the batch log's", SLOT__LF_U("seq", seq),
                  SLOT__LF_U("log_seq", last));
        rc = EIO;
    }
    const uint8_t *rec = NULL;
    size_t n = 0;
    slot_wset_hdr h = {.epoch = c->tenure,
                       .seq = seq,
                       .prev_epoch = prev_t,
                       .commit_seq = commit_seq < seq ? commit_seq : seq - 1,
                       .timestamp_ms = slot__wall_ms()};
    SLOT_ASSERT(h.epoch >= 1 && h.seq >= 1 && h.commit_seq < h.seq); /* a record never commits itself */
    if (rc == 0 && (rc = slot_wset_finish(&c->wset, &h, &rec, &n)) != 0)
        rc = rc == -ENOMEM ? ENOMEM : EIO;
    if (rc == 0 && (rc = slot_rlog_append(c->rlog, rec, n)) != 0) {
        slot__log(SLOT__LOG_ERROR, "cluster: batch log append failed", SLOT__LF_S("error", slot_strerror(rc)));
        rc = log_err(rc);
    }
    if (rc == 0 && sync && (rc = slot_rlog_sync(c->rlog)) != 0) {
        slot__log(SLOT__LOG_ERROR, "cluster: batch log sync failed", SLOT__LF_S("error", slot_strerror(rc)));
        slot_rlog_truncate_after(c->rlog, seq - 1);
        rc = log_err(rc);
    }
    pthread_mutex_unlock(&c->rlog_mu);
    if (rc == 0) {
        c->batch_seq = seq;
        c->batch_prev_tenure = prev_t;
    }
    SLOT_ASSERT(rc != 0 || c->batch_seq == seq);
    return rc;
}

int slot__clu_batch_record(server *s, MDB_txn *txn)
{
    clu *c = s->clu;
    uint64_t seq = 0;
    c->batch_seq = 0;
    int rc = slot_store_seq_bump(s->store, txn, c->tenure, &seq);
    /* pipelined: the commit point as published (this thread must not read the loop's) */
    if (rc == 0)
        rc = append_record(c, seq, s->pipe ? slot__pipe_point(s) : c->commit_seq, !s->pipe);
    return rc;
}

void slot__clu_batch_unrecord(server *s)
{
    clu *c = s->clu;
    if (!c->batch_seq)
        return;
    pthread_mutex_lock(&c->rlog_mu);
    int rc = slot_rlog_truncate_after(c->rlog, c->batch_seq - 1);
    pthread_mutex_unlock(&c->rlog_mu);
    if (rc != 0)
        slot__log(SLOT__LOG_ERROR, "cluster: could not take back a record", SLOT__LF_U("seq", c->batch_seq),
                  SLOT__LF_S("error", slot_strerror(rc)));
    c->batch_seq = 0;
}

bool slot__clu_batch_hold(server *s)
{
    if (s->pipe)
        return slot__clu_pipe_hold(s);
    clu *c = s->clu;
    uint64_t seq = c->batch_seq;
    c->batch_seq = 0;
    if (!seq)
        return false;              /* nothing was written, nothing was logged: the errors go out now */
    SLOT_ASSERT(seq > c->applied); /* the batch's record follows what LMDB held (no job ran meanwhile) */
    SLOT_ASSERT(!c->batch_held);   /* one batch in flight */
    c->applied = seq;
    if (c->role != CLU_PRIMARY) {
        slot__batch_finish(s, SLOT_E_UNAVAILABLE, "this node stopped being primary; the outcome is unknown");
        return true;
    }
    c->pending_seq = seq;
    c->pending_since_ms = uv_now(s->loop);
    c->batch_held = true;
    for (size_t i = 0; i < c->nnodes; i++)
        slot__clu_pump(c, &c->nodes[i]);
    slot__clu_commit_check(c);
    return true;
}

void slot__clu_pump(clu *c, clu_node *n)
{
    if (!n->ready || !is_primary(c) || n->snap != CLU_SNAP_NONE)
        return; /* a joiner by snapshot gets records once it acked the snapshot's seq */
    /* the window: acked < next_send <= applied + 1 */
    SLOT_ASSERT(n->next_send >= 1 && n->next_send <= c->applied + 1);
    SLOT_ASSERT(n->acked < n->next_send);
    while (n->next_send <= c->applied) {
        const uint8_t *rec;
        size_t len;
        pthread_mutex_lock(&c->rlog_mu);
        int rc = slot_rlog_read(c->rlog, n->next_send, &rec, &len);
        if (rc == 0)
            rc = slot_repl_send_to(c->repl, n->id, rec, len);
        pthread_mutex_unlock(&c->rlog_mu);
        if (rc == -EAGAIN)
            return; /* its window is full: on_ack pumps again */
        if (rc < 0) {
            SLOT__CLU_LOG(c, SLOT__LOG_WARN, "sending a record failed", SLOT__LF_S("peer", n->id),
                          SLOT__LF_U("seq", n->next_send),
                          SLOT__LF_S("error", rc < -4095 ? slot_strerror(rc) : uv_strerror(rc)));
            slot_repl_disconnect(c->repl, n->id);
            return;
        }
        n->next_send++;
    }
    SLOT_ASSERT(n->next_send == c->applied + 1);
}

/* The members of cfg, other than this node, that have not acked seq. */
static size_t unacked_in(clu *c, const clu_config *cfg, uint64_t seq)
{
    size_t n_unacked = 0;
    for (size_t i = 0; i < cfg->nmembers; i++) {
        if (strcmp(cfg->members[i], c->self) == 0)
            continue;
        clu_node *n = slot__clu_node(c, cfg->members[i], false);
        n_unacked += !n || n->acked < seq;
    }
    return n_unacked;
}

/* Whether every node whose acks count has acked seq: the configuration's
 * members, the counted joiners, and the members a CAS in doubt may have added. */
static bool all_acked(clu *c, uint64_t seq)
{
    if (unacked_in(c, &c->cfg, seq) != 0)
        return false;
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].counted && c->nodes[i].acked < seq)
            return false;
    return !c->doubt || unacked_in(c, &c->doubt_cfg, seq) == 0;
}

void slot__clu_commit_check(clu *c)
{
    if (c->s->pipe) {
        slot__clu_pipe_commit_check(c);
        return;
    }
    if (!is_primary(c) || !c->pending_seq || c->job != CLU_JOB_NONE)
        return;
    if (!all_acked(c, c->pending_seq))
        return;
    /* applied >= pending_seq >= commit_seq: the commit point only rises, and never past LMDB */
    SLOT_ASSERT(c->pending_seq <= c->applied && c->pending_seq >= c->commit_seq);
    c->commit_seq = c->pending_seq;
    c->pending_seq = 0;
    c->unavailable = false;
    slot_repl_set_commit(c->repl, c->commit_seq);
    if (c->role == CLU_PROMOTING) {
        slot__clu_set_role(c, CLU_PRIMARY);
        SLOT__CLU_LOG(c, SLOT__LOG_INFO, "primary", SLOT__LF_U("tenure", c->tenure), SLOT__LF_U("seq", c->commit_seq));
        slot__clu_node_put(c);
    }
    if (c->batch_held) {
        c->batch_held = false;
        slot__batch_finish(c->s, SLOT_E_OK, NULL);
    } else {
        slot__reads_resume(c->s);
        slot__dispatch(c->s);
    }
}

void slot__clu_on_ack(void *ctx, const char *node_id, uint64_t seq)
{
    clu *c = ctx;
    clu_node *n = slot__clu_node(c, node_id, false);
    if (!n || !is_primary(c))
        return;
    if (n->snap != CLU_SNAP_NONE && !slot__clu_snap_acked(c, n, seq))
        return;
    if (seq > n->acked)
        n->acked = seq;
    /* the channel refuses an ack beyond the last record it sent (repl_proto.c) */
    SLOT_ASSERT(!n->ready || n->snap != CLU_SNAP_NONE || n->acked < n->next_send);
    n->last_ack_ms = uv_now(c->s->loop);
    slot__clu_pump(c, n);
    slot__clu_commit_check(c);
    if (c->switching)
        slot__clu_change_step(c); /* the switchover may be drained now */
}

void slot__clu_on_ready_primary(clu *c, const slot_repl_peer *peer)
{
    clu_node *n = slot__clu_node(c, peer->node_id, true);
    if (!n || !is_primary(c)) {
        slot_repl_disconnect(c->repl, peer->node_id);
        return;
    }
    n->dialing = false;
    if (slot__clu_is_removed(&c->cfg, n->id)) {
        slot_repl_disconnect(c->repl, peer->node_id);
        return;
    }
    if (slot__clu_snap_wanted(c, n, peer)) {
        n->ready = true; /* slot__clu_snap_tick makes and sends it; not waited for meanwhile */
        n->acked = 0;
        n->next_send = 0;
        n->last_ack_ms = uv_now(c->s->loop);
        return;
    }
    if (peer->last_seq > c->applied || (peer->last_seq && slot__clu_epoch_of(c, peer->last_seq) != peer->last_tenure)) {
        /* A member names its log's base when that is above the commit point
         * it knows (a snapshot it was sent beyond it): a position we do not
         * hold means its state is not a prefix of ours: it gets ours. */
        SLOT__CLU_LOG(c, SLOT__LOG_WARN, "a node starts where our log does not hold: it gets a snapshot",
                      SLOT__LF_S("peer", n->id), SLOT__LF_U("peer_tenure", peer->last_tenure),
                      SLOT__LF_U("peer_seq", peer->last_seq), SLOT__LF_U("applied", c->applied));
        slot__clu_snap_set(n, CLU_SNAP_WANT);
        n->snap_seq = 0;
        n->ready = true;
        n->acked = 0;
        n->next_send = 0;
        n->last_ack_ms = uv_now(c->s->loop);
        return;
    }
    n->ready = true;
    n->next_send = peer->last_seq + 1;
    n->acked = peer->last_seq;
    n->last_ack_ms = uv_now(c->s->loop);
    SLOT_ASSERT(n->acked <= c->applied && n->next_send == n->acked + 1);
    slot__clu_pump(c, n);
    slot__clu_commit_check(c);
}

void slot__clu_step_down(clu *c)
{
    server *s = c->s;
    slot__clu_set_role(c, CLU_REPLICA);
    c->pending_seq = 0;
    c->unavailable = false;
    if (c->batch_held) {
        c->batch_held = false;
        slot__batch_finish(s, SLOT_E_UNAVAILABLE, "this node stopped being primary; the outcome is unknown");
    }
    if (s->pipe && s->pipe->active) {
        /* Pipelined: the held batches read state that may never commit; the
         * open state is aborted, so LMDB holds only committed batches: from
         * lmdb (<= commit_seq) on, this node applies as a replica does. */
        slot__pipe_fail_held(s, SLOT_E_UNAVAILABLE, "this node stopped being primary; the outcome is unknown");
        uint64_t lmdb = slot__pipe_drop(s);
        SLOT_ASSERT(lmdb <= c->commit_seq);
        c->applied = lmdb;
    }
    for (size_t i = 0; i < c->nnodes; i++) {
        clu_node *n = &c->nodes[i];
        slot__clu_snap_drop(c, n);
        if (n->ready || n->dialing)
            slot_repl_disconnect(c->repl, n->id);
        n->ready = n->dialing = n->counted = false;
    }
    SLOT_ASSERT(c->role == CLU_REPLICA && !c->batch_held && c->pending_seq == 0);
    c->verified = c->commit_seq;
    slot__clu_stream_reset(c);
    /* A replica answers subscribe and ack with not_primary: the consumers
     * must go to the new primary, whose feed is the one that counts. */
    slot__feed_end_all(s, "stepping down");
    slot__reads_resume(s);
}

void slot__clu_promote(clu *c)
{
    /* a configuration as cluster_cfg.c parses them: 1 <= tenure <= epoch */
    SLOT_ASSERT(c->cfg.found && c->cfg.tenure >= 1 && c->cfg.tenure <= c->cfg.epoch);
    c->doubt = false; /* our takeover CAS won past any revision an older CAS compared */
    c->tenure = c->cfg.tenure;
    slot__clu_set_role(c, CLU_PROMOTING);
    c->pending_seq = 0;
    c->unavailable = false;
    slot_repl_set_config(c->repl, c->cfg.epoch, c->cfg.tenure, c->self); /* no other stream is accepted */
    for (size_t i = 0; i < c->nnodes; i++) {
        c->nodes[i].ready = c->nodes[i].dialing = false;
        c->nodes[i].counted = slot__clu_is_member(&c->cfg, c->nodes[i].id);
        c->nodes[i].last_dial_ms = 0;
    }
    SLOT__CLU_LOG(c, SLOT__LOG_INFO, "won the configuration: taking over", SLOT__LF_U("tenure", c->tenure),
                  SLOT__LF_U("commit_seq", c->commit_seq));
    c->job_target = c->commit_seq;
    c->promote_wanted = true;
    slot__clu_job_start(c, CLU_JOB_PROMOTE); /* when the commit thread is busy, the tick tries again */
    slot__clu_node_put(c);
}

int slot__clu_job_promote(clu *c)
{
    server *s = c->s;
    uint64_t last = 0, applied = 0, seq = 0;
    slot__clu_log_last(c, NULL, &last);
    MDB_txn *txn = NULL;
    int rc = mdb_txn_begin(slot_store_env(s->store), NULL, 0, &txn);
    if (rc == 0 && c->job_rebuild)
        rc = slot_store_clear_data(s->store, txn);
    while (rc == 0 && applied < last) {
        rc = slot__clu_apply_range(c, txn, last, &applied);
        if (rc == 0 && applied < last && applied % SLOT_CLUSTER_APPLY_RECORDS_MAX != 0)
            rc = EIO;
    }
    c->batch_seq = 0;
    slot_wset_clear(&c->wset);
    if (rc == 0)
        rc = slot_store_seq_bump(s->store, txn, c->tenure, &seq);
    if (rc == 0)
        rc = append_record(c, seq, c->job_target, true);
    if (rc == 0) {
        rc = mdb_txn_commit(txn);
        if (rc != 0)
            slot__clu_batch_unrecord(s);
    } else if (txn) {
        mdb_txn_abort(txn);
    }
    c->batch_seq = 0;
    if (rc != 0)
        return rc;
    /* The idempotency index, from the holds as they are now. */
    slot_alloc_close(&s->write_alloc);
    rc = slot_alloc_init(&s->write_alloc, s->store);
    if (rc == 0 && (rc = mdb_txn_begin(slot_store_env(s->store), NULL, MDB_RDONLY, &txn)) == 0) {
        rc = slot_alloc_load(&s->write_alloc, txn);
        mdb_txn_abort(txn);
    }
    c->job_applied = seq;
    return rc < 0 ? EIO : rc;
}

void slot__clu_promote_done(clu *c)
{
    if (c->role != CLU_PROMOTING)
        return;
    if (c->job_rc != 0) {
        SLOT__CLU_LOG(c, SLOT__LOG_WARN, "could not take over; following the configuration",
                      SLOT__LF_S("error", slot_strerror(c->job_rc)));
        slot__clu_follow(c);
        return;
    }
    SLOT_ASSERT(c->job == CLU_JOB_NONE && c->pending_seq == 0 && !c->batch_held);
    if (c->s->pipe) /* pipelined: the open state starts on the tenure record */
        slot__pipe_reset(c->s, c->applied, c->commit_seq);
    c->pending_seq = c->applied; /* the tenure record */
    c->pending_since_ms = uv_now(c->s->loop);
    for (size_t i = 0; i < c->nnodes; i++) /* members that connected while the job ran */
        slot__clu_pump(c, &c->nodes[i]);
    slot__clu_primary_tick(c);
    slot__clu_commit_check(c);
}

/* The record pending acks timed out: drop the silent members by a CAS while
 * --min-replicas allow, else answer it unavailable. */
static void ack_timeout(clu *c)
{
    SLOT_ASSERT(c->pending_seq != 0 && c->job == CLU_JOB_NONE);
    /* the record whose acks are late: pipelined, the oldest one not committed */
    uint64_t need = c->s->pipe ? c->commit_seq + 1 : c->pending_seq;
    SLOT_ASSERT(need >= 1 && need <= c->pending_seq);
    clu_config next = c->cfg;
    next.nmembers = 0;
    size_t silent = 0;
    for (size_t i = 0; i < c->nnodes; i++) /* joiners that fell silent are simply waited for no more */
        if (c->nodes[i].counted && !slot__clu_is_member(&c->cfg, c->nodes[i].id) && c->nodes[i].acked < need)
            c->nodes[i].counted = false;
    for (size_t i = 0; i < c->cfg.nmembers; i++) {
        const char *id = c->cfg.members[i];
        clu_node *n = slot__clu_node(c, id, false);
        if (strcmp(id, c->self) != 0 && (!n || n->acked < need)) {
            silent++;
            if (n)
                n->counted = false;
            continue;
        }
        memcpy(next.members[next.nmembers++], id, SLOT_CLUSTER_NAME_BYTES);
    }
    SLOT_ASSERT(next.nmembers + silent == c->cfg.nmembers); /* each member kept or counted silent */
    /* A member a CAS in doubt may have added, silent too: a CAS on the
     * configuration (the drop, even of nobody) settles what etcd holds. */
    if (c->doubt)
        silent += unacked_in(c, &c->doubt_cfg, need);
    slot__clu_commit_check(c);
    if (!c->pending_seq || silent == 0)
        return;
    /* A primary that hears from no replica at all is more likely the one
     * cut off than they are: it drops nobody (unless --min-replicas 0 lets it
     * sell alone), so the members that still reach each other can take over
     * with every member of the configuration (docs/design.md, "Partitions").
     * Dropping one of two silent replicas here once left a caught-up member
     * outside the configuration and the other two wedged. */
    bool heard = c->min_replicas == 0;
    slot_repl_peer_info pi[SLOT_CLUSTER_MEMBERS_MAX];
    size_t np = slot_repl_peers(c->repl, pi, SLOT_CLUSTER_MEMBERS_MAX);
    for (size_t k = 0; k < np && k < SLOT_CLUSTER_MEMBERS_MAX && !heard; k++) {
        /* heard: it acked the pending record and has answered since (an ack
         * that came just before a cut proves nothing about now: dropping the
         * other replica on it once left the two that still reached each
         * other without a configuration they could use) */
        clu_node *n = slot__clu_node(c, pi[k].node_id, false);
        heard = n && pi[k].ready && slot__clu_is_member(&c->cfg, n->id) && n->acked >= need &&
                pi[k].silence_ms < c->repl_to_ms;
    }
    if (heard && next.nmembers - 1 >= c->min_replicas && !c->cas_busy) {
        next.epoch = c->cfg.epoch + 1;
        c->pending_since_ms = uv_now(c->s->loop); /* the CAS gets one more timeout */
        c->cas_drop = true;
        slot__clu_cas(c, &next, "drop silent members");
        return;
    }
    slot__clu_unavailable(c);
}

void slot__clu_unavailable(clu *c)
{
    if (!is_primary(c) || !c->pending_seq)
        return;
    if (!c->unavailable) {
        SLOT__CLU_LOG(c, SLOT__LOG_ERROR,
                      "a record not acknowledged in time and no member could be dropped: unavailable",
                      SLOT__LF_U("seq", c->pending_seq));
        for (size_t i = 0; i < c->nnodes; i++) {
            const clu_node *n = &c->nodes[i];
            SLOT__CLU_LOG(c, SLOT__LOG_ERROR, "unavailable: a node", SLOT__LF_S("peer", n->id),
                          SLOT__LF_U("live", n->live), SLOT__LF_U("ready", n->ready), SLOT__LF_U("dialing", n->dialing),
                          SLOT__LF_U("acked", n->acked), SLOT__LF_S("repl", n->repl));
        }
        c->unavailable = true;
    }
    if (c->batch_held) {
        c->batch_held = false;
        slot__batch_finish(c->s, SLOT_E_UNAVAILABLE,
                           "the replicas did not acknowledge in time; the outcome is unknown");
    }
    if (c->s->pipe) /* every held batch read the oldest one's writes */
        slot__pipe_fail_held(c->s, SLOT_E_UNAVAILABLE, "the replicas did not acknowledge in time; the outcome is unknown");
}

void slot__clu_primary_tick(clu *c)
{
    uint64_t now = uv_now(c->s->loop);
    if (c->role == CLU_PROMOTING && c->promote_wanted)
        slot__clu_job_start(c, CLU_JOB_PROMOTE);
    /* Taking over, the tenure record waits for every member: dial them every
     * tick (a member that refused us may have read the configuration since). */
    uint64_t redial_ms = c->role == CLU_PROMOTING ? c->hb_ms : SLOT_CLUSTER_REDIAL_MS;
    /* A connection that has carried nothing back for twice --repl-timeout-ms
     * (heartbeats are answered every --heartbeat-ms) is closed and dialled
     * anew: after a partition heals, a fresh connection gets through at once,
     * where the old one would wait out TCP's retransmission backoff (seconds
     * after a long cut). Not while a snapshot streams (its chunks may hold up
     * the answers of a slow link). */
    slot_repl_peer_info pi[SLOT_CLUSTER_MEMBERS_MAX];
    size_t np = slot_repl_peers(c->repl, pi, SLOT_CLUSTER_MEMBERS_MAX);
    for (size_t k = 0; k < np && k < SLOT_CLUSTER_MEMBERS_MAX; k++) {
        clu_node *n = slot__clu_node(c, pi[k].node_id, false);
        if (!n || !pi[k].ready || !n->ready || n->snap != CLU_SNAP_NONE ||
            pi[k].silence_ms <= 2 * (uint64_t)c->repl_to_ms)
            continue;
        SLOT__CLU_LOG(c, SLOT__LOG_WARN, "a node answered nothing: dialling it anew", SLOT__LF_S("peer", n->id),
                      SLOT__LF_U("silence_ms", pi[k].silence_ms));
        slot_repl_disconnect(c->repl, n->id); /* on_close: not ready; dialled again below or at the next tick */
    }
    for (size_t i = 0; i < c->nnodes; i++) {
        clu_node *n = &c->nodes[i];
        bool member = slot__clu_is_member(&c->cfg, n->id);
        if (n->ready || n->dialing || !n->live || !n->repl[0] || now - n->last_dial_ms < redial_ms)
            continue;
        if (!member && (strcmp(n->role, "primary") == 0 || slot__clu_is_removed(&c->cfg, n->id)))
            continue;
        char host[64];
        int port = 0;
        if (slot__clu_split_addr(n->repl, host, sizeof(host), &port) != 0)
            continue;
        n->last_dial_ms = now;
        n->dialing = slot_repl_connect(c->repl, n->id, host, port) == 0;
    }
    if (c->pending_seq && c->job == CLU_JOB_NONE && now - c->pending_since_ms >= c->repl_to_ms)
        ack_timeout(c);
    /* Joiners caught up to the commit point: wait for their acks from now on,
     * then add them -- also while the set is unavailable (a pending record
     * the members do not ack) and while taking over, so that a member dropped
     * earlier helps the set back as soon as it can (docs/design.md,
     * "Partitions"). Taking over, what the old primary acknowledged may be
     * anywhere in our log below the tenure record, so a joiner must hold the
     * tenure record itself (c->applied once the promote job ran). */
    if (c->cas_busy || (c->role == CLU_PROMOTING && (c->promote_wanted || c->job == CLU_JOB_PROMOTE)))
        return;
    uint64_t caught_up = c->role == CLU_PROMOTING ? c->applied : c->commit_seq;
    SLOT_ASSERT(c->commit_seq <= c->applied);
    clu_config next = c->cfg;
    bool add = false;
    for (size_t i = 0; i < c->nnodes; i++) {
        clu_node *n = &c->nodes[i];
        bool answering = false; /* a member just dropped may still look ready while it is cut off */
        for (size_t k = 0; k < np && k < SLOT_CLUSTER_MEMBERS_MAX; k++)
            if (strcmp(pi[k].node_id, n->id) == 0)
                answering = pi[k].ready && pi[k].silence_ms < c->repl_to_ms;
        if (!n->ready || !answering || n->snap != CLU_SNAP_NONE || slot__clu_is_member(&c->cfg, n->id) ||
            n->acked < caught_up || slot__clu_is_removed(&c->cfg, n->id) || next.nmembers == SLOT_CLUSTER_MEMBERS_MAX)
            continue;
        n->counted = true;
        memcpy(next.members[next.nmembers++], n->id, SLOT_CLUSTER_NAME_BYTES);
        add = true;
    }
    SLOT_ASSERT(next.nmembers <= SLOT_CLUSTER_MEMBERS_MAX);
    if (add) {
        next.epoch = c->cfg.epoch + 1;
        slot__clu_cas(c, &next, "add caught-up nodes");
    }
}
