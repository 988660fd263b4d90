/*
 * cluster_replica.c — a replica's data path (docs/design.md, "The replica's
 * rule", "Failover"): records from the primary's stream go to the batch log
 * (a record the log already holds with the same tenure is the same record,
 * by log matching, and is kept; one of another tenure cuts the log back
 * there), the log is synced and acked once per loop turn, committed records
 * are applied to LMDB on the commit thread; and the gates that keep writes
 * off a node that is not a writable primary, and reads off state that is
 * not known to be committed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "slot/assert.h"

/* What we trust: committed (the commit point we know) and agreed with the
 * stream's primary (verified). A new stream starts from there. */
static uint64_t trusted(const clu *c)
{
    return c->commit_seq < c->verified ? c->commit_seq : c->verified;
}

void slot__clu_stream_reset(clu *c)
{
    uint64_t p = trusted(c);
    /* Below our log's base (a snapshot installed beyond the commit point we
     * know): the base is the earliest position we can name; a primary that
     * does not hold it sends a snapshot. */
    pthread_mutex_lock(&c->rlog_mu);
    uint64_t base = slot_rlog_first(c->rlog) - 1;
    pthread_mutex_unlock(&c->rlog_mu);
    if (p < base)
        p = base;
    SLOT_ASSERT(p >= base);
    uint64_t t = p ? slot__clu_epoch_of(c, p) : 0;
    c->verified = p;
    c->unsynced_seq = 0;
    if (c->need_snap)
        t = p = 0; /* "empty": the primary sends a snapshot */
    slot_repl_set_log_last(c->repl, t, p);
}

int slot__clu_on_record(void *ctx, const char *from, const uint8_t *rec, size_t rec_bytes, const slot_wset_rec *dec)
{
    clu *c = ctx;
    (void)from;
    if (c->role == CLU_PRIMARY || c->role == CLU_PROMOTING || c->stopping)
        return -1;
    uint64_t k = dec->hdr.seq, last = 0, e = 0;
    SLOT_ASSERT(k >= 1 && dec->hdr.commit_seq <= k && dec->hdr.prev_epoch <= dec->hdr.epoch); /* slot_wset_decode
                                                                                          checked the header */
    int rc = 0;
    bool append = true;
    pthread_mutex_lock(&c->rlog_mu);
    slot_rlog_last(c->rlog, NULL, &last);
    if (k <= last) {
        if (slot_rlog_epoch_of(c->rlog, k, &e) == 0 && e == dec->hdr.epoch) {
            append = false; /* the same record (log matching) */
        } else {
            /* What LMDB may hold: c->applied moves on the loop only when the commit
             * thread hands a batch (or an apply job) back, so while one is out
             * (s->batch.busy) LMDB may already hold up to the log's last record --
             * a deposed primary's own batch, committed but not yet handed back when
             * the new primary's records arrive (regression: cluster_sigstop_primary
             * under load, invariant 7 on the old primary). The log is never behind
             * LMDB, so `last` bounds it. */
            uint64_t may_hold = c->s->batch.busy ? last : c->applied;
            if (k - 1 < may_hold && slot_rlog_first(c->rlog) > 1) {
                /* LMDB holds what the log would lose, and the log no longer
                 * starts at seq 1 to rebuild it from: take a snapshot. */
                pthread_mutex_unlock(&c->rlog_mu);
                SLOT__CLU_LOG(c, SLOT__LOG_INFO,
                              "a record differs below what LMDB applied and the log is trimmed: "
                              "asking for a snapshot",
                              SLOT__LF_S("peer", from), SLOT__LF_U("seq", k), SLOT__LF_U("applied", may_hold));
                c->need_snap = true;
                return -1;
            }
            rc = slot_rlog_truncate_after(c->rlog, k - 1);
            if (rc == 0 && k - 1 < may_hold)
                c->rebuild = true; /* LMDB holds (or may hold) what the log no longer has */
            if (rc == 0)
                SLOT__CLU_LOG(c, SLOT__LOG_WARN, "cut the batch log: the primary's log differs there",
                              SLOT__LF_S("peer", from), SLOT__LF_U("seq", k - 1), SLOT__LF_U("log_seq", last));
        }
    }
    if (rc == 0 && append)
        rc = slot_rlog_append(c->rlog, rec, rec_bytes);
    if (rc == 0 && append) { /* the record just taken is the log's last (the channel checked k follows) */
        uint64_t now_last = 0;
        slot_rlog_last(c->rlog, NULL, &now_last);
        SLOT_ASSERT(now_last == k);
    }
    pthread_mutex_unlock(&c->rlog_mu);
    if (rc != 0) {
        SLOT__CLU_LOG(c, SLOT__LOG_ERROR, "cannot take a record", SLOT__LF_U("seq", k),
                      SLOT__LF_S("error", slot_strerror(rc)));
        return -1;
    }
    c->unsynced_seq = k;
    c->verified = k;
    return 0;
}

void slot__clu_on_commit(void *ctx, uint64_t commit_seq)
{
    clu *c = ctx;
    if (c->role == CLU_PRIMARY || c->role == CLU_PROMOTING)
        return;
    if (commit_seq > c->commit_seq)
        c->commit_seq = commit_seq;
    SLOT_ASSERT(c->commit_seq >= commit_seq); /* the commit point known never goes back */
    slot__clu_apply_kick(c);
}

/* Once per loop turn: what this turn's records appended is synced, then acked. */
void slot__clu_on_sync_check(uv_check_t *h)
{
    clu *c = h->data;
    if (c->snap_fd >= 0)
        slot__clu_snap_tick(c); /* a snapshot being sent goes on as its queue drains */
    if (!c->unsynced_seq || c->stopping)
        return;
    uint64_t seq = c->unsynced_seq;
    c->unsynced_seq = 0;
    pthread_mutex_lock(&c->rlog_mu);
    int rc = slot_rlog_sync(c->rlog);
    pthread_mutex_unlock(&c->rlog_mu);
    if (rc != 0) {
        SLOT__CLU_LOG(c, SLOT__LOG_ERROR, "batch log sync failed: not acking", SLOT__LF_U("seq", seq),
                      SLOT__LF_S("error", slot_strerror(rc)));
        return;
    }
    int a = slot_repl_ack(c->repl, seq);
    if (a != 0 && a != -ENOTCONN)
        SLOT__CLU_LOG(c, SLOT__LOG_WARN, "ack failed", SLOT__LF_U("seq", seq), SLOT__LF_S("error", uv_strerror(a)));
}

void slot__clu_apply_kick(clu *c)
{
    if (c->role == CLU_PRIMARY || c->role == CLU_PROMOTING || c->job != CLU_JOB_NONE || c->stopping || c->snap_recv ||
        c->need_snap)
        return;
    uint64_t target = trusted(c);
    if (!c->rebuild && target <= c->applied)
        return;
    SLOT_ASSERT(target <= c->commit_seq && target <= c->verified); /* only what is committed and agreed */
    c->job_target = target;
    slot__clu_job_start(c, CLU_JOB_APPLY);
}

int slot__clu_apply_range(clu *c, MDB_txn *txn, uint64_t to, uint64_t *applied)
{
    server *s = c->s;
    uint64_t seq = 0;
    int rc = slot_store_seq_get(s->store, txn, &seq, NULL);
    uint8_t *copy = NULL;
    size_t cap = 0;
    for (uint64_t n = 0; rc == 0 && seq < to && n < SLOT_CLUSTER_APPLY_RECORDS_MAX; n++) {
        const uint8_t *rec;
        size_t len = 0;
        pthread_mutex_lock(&c->rlog_mu);
        rc = slot_rlog_read(c->rlog, seq + 1, &rec, &len);
        if (rc == 0 && len > cap) {
            uint8_t *p = realloc(copy, len);
            if (p) {
                copy = p;
                cap = len;
            } else {
                rc = ENOMEM;
            }
        }
        if (rc == 0)
            memcpy(copy, rec, len);
        pthread_mutex_unlock(&c->rlog_mu);
        slot_wset_rec dec;
        if (rc == 0)
            rc = slot_wset_decode(copy, len, &dec);
        if (rc == 0)
            rc = slot_store_apply(s->store, txn, &dec);
        if (rc == 0)
            seq++;
    }
    free(copy);
    *applied = seq;
    return rc;
}

int slot__clu_job_apply(clu *c)
{
    server *s = c->s;
    for (int attempt = 0; attempt < SLOT_MAP_GROW_ATTEMPTS_MAX; attempt++) {
        MDB_txn *txn = NULL;
        uint64_t applied = 0;
        int rc = mdb_txn_begin(slot_store_env(s->store), NULL, 0, &txn);
        if (rc == 0 && c->job_rebuild)
            rc = slot_store_clear_data(s->store, txn);
        if (rc == 0)
            rc = slot__clu_apply_range(c, txn, c->job_target, &applied);
        if (rc == 0)
            rc = mdb_txn_commit(txn);
        else if (txn)
            mdb_txn_abort(txn);
        if (rc == 0) {
            c->job_applied = applied;
            return 0;
        }
        if (rc != MDB_MAP_FULL)
            return rc;
        pthread_rwlock_wrlock(&s->map_lock);
        int g = slot_store_grow(s->store);
        pthread_rwlock_unlock(&s->map_lock);
        if (g != 0)
            return MDB_MAP_FULL;
    }
    return MDB_MAP_FULL;
}

/* not_primary's "primary": the client address of the configuration's primary. */
static void not_primary(clu *c, slot_res *res)
{
    const char *addr = "";
    clu_node *n = c->cfg.found ? slot__clu_node(c, c->cfg.primary, false) : NULL;
    if (n && n->live && strcmp(c->cfg.primary, c->self) != 0)
        addr = n->addr;
    slot_res_error(res, SLOT_E_NOT_PRIMARY, NULL);
    snprintf(res->primary, sizeof res->primary, "%s", addr); /* proto writes it as "primary" when not "" */
}

bool slot__clu_write_gate(server *s, slot_res *res)
{
    clu *c = s->clu;
    bool primary = c->role == CLU_PRIMARY;
    SLOT_ASSERT(!primary || (c->tenure >= 1 && c->cfg.found));
    size_t replicas = c->cfg.nmembers ? c->cfg.nmembers - 1 : 0;
    if (primary && !c->unavailable && replicas >= c->min_replicas && !c->stopping)
        return false;
    if (!res)
        return true;
    if (c->role == CLU_PRIMARY || c->role == CLU_PROMOTING) {
        const char *why = c->role == CLU_PROMOTING ? "this node is taking over as primary; retry shortly"
                          : c->unavailable         ? "the replicas have not acknowledged the last batch; retry"
                                                   : "fewer replicas than --min-replicas are in the replica set";
        slot_res_error(res, SLOT_E_UNAVAILABLE, "%s", why);
    } else {
        not_primary(c, res);
    }
    return true;
}

slot__read_gate slot__clu_read_gate(server *s, MDB_txn *rtxn, slot_res *res)
{
    clu *c = s->clu;
    uint64_t seq = 0;
    if (slot_store_seq_get(s->store, rtxn, &seq, NULL) != 0)
        return SLOT__READ_GO; /* the read itself reports the storage error */
    if (c->role == CLU_PRIMARY || c->role == CLU_PROMOTING) {
        if (seq <= c->commit_seq)
            return SLOT__READ_GO;
        if ((c->pending_seq && !c->unavailable) || s->batch.busy)
            return SLOT__READ_WAIT;
        slot_res_error(res, SLOT_E_UNAVAILABLE, "this node's state is not acknowledged by its replicas yet");
        return SLOT__READ_ANSWERED;
    }
    if (seq <= trusted(c))
        return SLOT__READ_GO;
    slot_res_error(res, SLOT_E_UNAVAILABLE, "this replica's state is not yet known to be committed; retry");
    return SLOT__READ_ANSWERED;
}
