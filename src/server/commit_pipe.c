/* The pipelined group commit (--durability pipelined; docs/design.md, "Pipelined group
 * commit"): the flusher thread, held replies, LMDB's open write transaction committed every
 * few milliseconds, the start-up replay of the batch log. Split from commit.c, whose batch
 * loop calls it. */
#include "commit.h"
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include "loop.h"
#include "slot/feed.h"
#include "slot/assert.h"
#include "slot/failpoint.h"

/* The fsync-error rule: a flush of the batch log (or the LMDB commit of the
 * open state) that failed may have lost pages a later flush would not bring
 * back, so slotd stops here, answering nothing more; the next start replays
 * the log as it is on disk. Any thread. */
static _Noreturn void pipe_fatal(const char *step, int err)
{
    slot__log(SLOT__LOG_ERROR, "stopping: the batch log could not be made durable (fsync-error rule)",
              SLOT__LF_S("step", step), SLOT__LF_S("error", slot_strerror(err)));
    _exit(1);
}

/* Wakes the loop (pipe_on_async) unless it is closing its handles. */
static void pipe_notify(slot__pipe *p)
{
    pthread_mutex_lock(&p->mu);
    if (p->async_open)
        uv_async_send(&p->async);
    pthread_mutex_unlock(&p->mu);
}

/* Whether the flusher has work: records appended since its last flush, and,
 * on a set, this node sells (a follower's appends are flushed, and acked,
 * by the replica path: a detach then would mark them clean unflushed). mu. */
static bool flush_wanted(const slot__pipe *p)
{
    return p->appended > p->durable && (!p->set || p->selling);
}

/* The flusher thread: flushes the log whenever records were appended since
 * its last flush, then publishes how far that flush reached. */
static void *flusher_thread(void *arg)
{
    server *s = arg;
    pthread_setname_np(pthread_self(), "slotd-flush"); /* for top -H, perf and bench/compare.sh (at most 15 bytes) */
    slot__pipe *p = s->pipe;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && !flush_wanted(p))
            pthread_cond_wait(&p->cv, &p->mu);
        if (!flush_wanted(p))
            break; /* stopping, and everything appended is flushed (a set: or not ours to flush) */
        int fd = -1, dir_fd = -1;
        uint64_t seq = 0, gen = p->gen;
        if (p->rlog_mu) /* a set: the log is the cluster's too (lock order: mu, then rlog_mu) */
            pthread_mutex_lock(p->rlog_mu);
        int rc = slot_rlog_sync_detach(p->rlog, &fd, &dir_fd, &seq);
        if (p->rlog_mu)
            pthread_mutex_unlock(p->rlog_mu);
        pthread_mutex_unlock(&p->mu);
        if (rc != 0)
            pipe_fatal("detach", rc);
        if (!SLOT_ARMED(NO_FLUSH)) { /* the planted fault (slot/failpoint.h) flushes nothing */
            if (fd >= 0 && fdatasync(fd) != 0)
                pipe_fatal("fdatasync", errno);
            if (dir_fd >= 0 && fsync(dir_fd) != 0)
                pipe_fatal("fsync of DATA/rlog", errno);
        }
        if (fd >= 0)
            close(fd);
        if (dir_fd >= 0)
            close(dir_fd);
        pthread_mutex_lock(&p->mu);
        if (gen == p->gen && seq > p->durable) /* a take-back since makes this flush count for nothing */
            p->durable = seq;
        pthread_cond_broadcast(&p->cv);
        if (p->async_open)
            uv_async_send(&p->async);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Commit thread: seals the batch's write set as record seq and appends it
 * to the log (not flushed: the flusher does that). 0 or an error for the
 * batch (the log unchanged). */
static int pipe_append(server *s, uint64_t seq)
{
    slot__pipe *p = s->pipe;
    const uint8_t *rec = NULL;
    size_t n = 0;
    pthread_mutex_lock(&p->mu);
    uint64_t durable = p->durable; /* every record up to it was flushed: what the log's open trusts */
    pthread_mutex_unlock(&p->mu);
    slot_wset_hdr h = {.epoch = 0,
                       .seq = seq,
                       .prev_epoch = 0,
                       .commit_seq = durable < seq ? durable : seq - 1,
                       .timestamp_ms = slot__wall_ms()};
    int rc = slot_wset_finish(&p->wset, &h, &rec, &n);
    if (rc != 0)
        return rc == -ENOMEM ? ENOMEM : EIO;
    pthread_mutex_lock(&p->mu);
    SLOT_ASSERT(seq == p->appended + 1); /* the log follows the open state's seq, without a gap */
    rc = slot_rlog_append(p->rlog, rec, n);
    if (rc == 0) {
        p->appended = seq;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    if (rc != 0) {
        slot__log(SLOT__LOG_ERROR, "batch log append failed", SLOT__LF_S("error", slot_strerror(rc)));
        return rc == -ENOSPC || rc == -EDQUOT ? -rc : EIO;
    }
    return 0;
}

/* Takes back record seq (its batch failed after the append): the log ends
 * at seq - 1 again, durably; a flush in flight no longer counts. On a set
 * the cluster takes its record back (it was never sent: the loop sends only
 * what was handed back). */
static void pipe_unappend(server *s, uint64_t seq)
{
    slot__pipe *p = s->pipe;
    pthread_mutex_lock(&p->mu);
    int rc = 0;
    uint64_t last = seq - 1;
    if (p->set) {
        s->clu_up->batch_unrecord(s); /* takes rlog_mu (after mu, as the flusher); a no-op with no record */
        pthread_mutex_lock(p->rlog_mu);
        slot_rlog_last(p->rlog, NULL, &last);
        pthread_mutex_unlock(p->rlog_mu);
    } else {
        rc = slot_rlog_truncate_after(p->rlog, seq - 1);
    }
    SLOT_ASSERT(last <= p->appended); /* the log ends at or below what the open state held before this batch */
    p->gen++; /* a flush in flight no longer counts (it may have covered the record taken back) */
    p->appended = last;
    if (p->durable > last)
        p->durable = last;
    pthread_mutex_unlock(&p->mu);
    if (rc != 0)
        pipe_fatal("take back a record", rc);
}

/* Commit thread: the open state is aborted (a set's primary stepped down or
 * stops: it holds batches that may never commit; LMDB keeps what it had). */
static void pipe_abort(server *s)
{
    slot__pipe *p = s->pipe;
    SLOT_ASSERT(p->set); /* a standalone server never drops what it answered from */
    if (p->txn) {
        mdb_txn_abort(p->txn);
        p->txn = NULL;
        p->txn_batches = 0;
        slot__log(SLOT__LOG_INFO, "pipelined: the open state was dropped (not primary any more)");
    }
    p->commit_due = false;
}

void slot__pipe_before(server *s, bool job)
{
    slot__pipe *p = s->pipe;
    if (!p || !p->set)
        return;
    pthread_mutex_lock(&p->mu);
    bool drop = p->drop;
    p->drop = false;
    pthread_mutex_unlock(&p->mu);
    if (drop)
        pipe_abort(s);
    else if (p->txn && (job || p->commit_due))
        slot__pipe_commit(s, false); /* every batch in it was handed back, so shipped: the acks can come */
}

/* Commit thread: commits the open state once the log holds it durably
 * (LMDB is never ahead of the durable log), with MDB_NOMETASYNC; then trims
 * the log below what LMDB holds durably (the commit before this one).
 * in_batch: called while a batch runs (its sync time counts the commit). */
void slot__pipe_commit(server *s, bool in_batch)
{
    slot__pipe *p = s->pipe;
    if (!p->txn)
        return;
    uint64_t seq = 0;
    int rc = slot_store_seq_get(s->store, p->txn, &seq, NULL);
    if (rc != 0)
        pipe_fatal("read the open state's seq", rc);
    pthread_mutex_lock(&p->mu);
    SLOT_ASSERT(seq == p->appended); /* every batch that wrote is in the log */
    /* A set's LMDB holds only committed batches: it waits for the commit point too, or a drop. */
    while ((p->durable < seq || p->point < seq) && !p->drop)
        pthread_cond_wait(&p->cv, &p->mu);
    bool drop = p->drop;
    p->drop = false;
    pthread_mutex_unlock(&p->mu);
    if (drop) {
        pipe_abort(s);
        return;
    }
    p->commit_due = false;
    uint64_t t0_ns = uv_hrtime();
    rc = mdb_txn_commit(p->txn);
    if (in_batch) /* the batch's numbers (handed back under batch.mu); an idle commit counts in none */
        s->batch.sync_ns += uv_hrtime() - t0_ns;
    p->txn = NULL;
    p->txn_batches = 0;
    if (rc != 0) /* its batches were answered from the log: the start-up replay rebuilds LMDB */
        pipe_fatal("commit of the open state", rc);
    uint64_t trim_below = p->lmdb_prev + 1;
    pthread_mutex_lock(&p->mu);
    p->lmdb_prev = p->lmdb_seq;
    p->lmdb_seq = seq;
    if (p->set) /* flushed in full (no MDB_NOMETASYNC on a set); the cluster trims its own log */
        p->lmdb_prev = seq;
    rc = trim_below > 1 && !p->set ? slot_rlog_trim_before(p->rlog, trim_below) : 0;
    if (p->async_open)
        uv_async_send(&p->async);
    pthread_mutex_unlock(&p->mu);
    if (rc != 0)
        slot__log(SLOT__LOG_WARN, "batch log trim failed (the log keeps its old segments)",
                  SLOT__LF_S("error", slot_strerror(rc)));
}

/* One try of the batch in a nested transaction of the open state: its
 * write set appended to the log when it wrote; a failure aborts only the
 * nested transaction. 0 or an error. */
int slot__pipe_attempt(server *s, uint64_t now_ms)
{
    slot__pipe *p = s->pipe;
    MDB_env *env = slot_store_env(s->store);
    int rc = 0;
    if (p->set) {
        pthread_mutex_lock(&p->mu);
        bool selling = p->selling;
        pthread_mutex_unlock(&p->mu);
        if (!selling) /* dispatched before a step-down: no open state is begun on a follower's LMDB */
            return SLOT_SERVER_E_NOT_SELLING;
    }
    if (!p->txn) {
        rc = mdb_txn_begin(env, NULL, 0, &p->txn);
        if (rc != 0) {
            p->txn = NULL;
            return rc;
        }
        p->txn_batches = 0;
        p->txn_since_ms = now_ms;
    }
    MDB_txn *txn = NULL;
    uint64_t seq0 = 0, seq1 = 0;
    bool logged = false;
    rc = mdb_txn_begin(env, p->txn, 0, &txn);
    if (rc == 0)
        rc = slot_store_seq_get(s->store, txn, &seq0, NULL);
    if (rc == 0)
        rc = slot__batch_ops(s, txn, now_ms);
    if (rc == 0 && SLOT_FAIL(BEFORE_COMMIT))
        rc = EIO;
    if (rc == 0)
        rc = slot_store_seq_get(s->store, txn, &seq1, NULL);
    if (rc == 0 && seq1 != seq0 && p->set) { /* the cluster's batch_record appended it (unflushed) */
        pthread_mutex_lock(&p->mu);
        SLOT_ASSERT(seq1 == p->appended + 1); /* the log follows the open state's seq, without a gap */
        p->appended = seq1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        logged = true;
    } else if (rc == 0 && seq1 != seq0)
        logged = (rc = pipe_append(s, seq1)) == 0;
    if (rc == 0 && SLOT_FAIL(COMMIT_FAIL))
        rc = EIO;
    if (rc == 0)
        rc = mdb_txn_commit(txn); /* into the open state; frees txn */
    else if (txn)
        mdb_txn_abort(txn);
    if (rc != 0 && (logged || p->set)) /* a set: a record appended before a later step failed */
        pipe_unappend(s, seq1);
    if (rc != 0)
        return rc;
    p->txn_batches++;
    pthread_mutex_lock(&s->batch.mu);
    bool asked = s->batch.commit_asked;
    s->batch.commit_asked = false;
    pthread_mutex_unlock(&s->batch.mu);
    bool due = asked || p->txn_batches >= SLOT_PIPE_COMMIT_BATCHES || now_ms - p->txn_since_ms >= SLOT_PIPE_COMMIT_MS;
    if (due && p->set) /* this batch's record goes out only once handed back: commit after that */
        p->commit_due = true;
    else if (due)
        slot__pipe_commit(s, true);
    return 0;
}

/* Commit thread, with batch.mu held: waits for a batch, committing the open
 * state when it is SLOT_PIPE_COMMIT_MS old or a read asks for it. */
void slot__pipe_idle_wait(server *s)
{
    slot__pipe *p = s->pipe;
    if (p->set) {
        pthread_mutex_lock(&p->mu);
        bool drop = p->drop;
        pthread_mutex_unlock(&p->mu);
        if (drop || p->txn) { /* a step-down's drop; else idle with an open state: nothing to overlap, commit it
                                 (LMDB then holds what was answered: the sold-out read path and reads need it) */
            p->commit_due = p->txn != NULL;
            pthread_mutex_unlock(&s->batch.mu);
            slot__pipe_before(s, false);
            pthread_mutex_lock(&s->batch.mu);
            return;
        }
    }
    if (!p->txn) {
        if (s->batch.commit_asked) { /* nothing open: LMDB already holds every batch */
            s->batch.commit_asked = false;
            pthread_mutex_unlock(&s->batch.mu);
            pipe_notify(p);
            pthread_mutex_lock(&s->batch.mu);
            return;
        }
        pthread_cond_wait(&s->batch.cv, &s->batch.mu);
        return;
    }
    uint64_t now = slot__wall_ms(), due = p->txn_since_ms + SLOT_PIPE_COMMIT_MS;
    if (s->batch.commit_asked || now >= due) {
        s->batch.commit_asked = false;
        pthread_mutex_unlock(&s->batch.mu);
        slot__pipe_commit(s, false);
        pthread_mutex_lock(&s->batch.mu);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + (due - now) * 1000000u;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    pthread_cond_timedwait(&s->batch.cv, &s->batch.mu, &ts);
}

/* Loop: the held batches whose tag the log's flush reached (a set: the
 * commit point) are answered; after an LMDB commit the feed is pumped and
 * waiting reads run. */
void slot__pipe_release(server *s)
{
    slot__pipe *p = s->pipe;
    pthread_mutex_lock(&p->mu);
    uint64_t durable = p->set ? p->point : p->durable, lmdb = p->lmdb_seq;
    SLOT_ASSERT(!p->set || p->point <= p->durable); /* the commit point is durable here too */
    pthread_mutex_unlock(&p->mu);
    if (SLOT_ARMED(EARLY_REPLY)) /* the planted fault (slot/failpoint.h): answers before the flush */
        durable = UINT64_MAX;
    bool sweep_again = false, parked = false, any = false;
    while (p->held_n > 0 && p->held[p->held_head].tag <= durable) {
        slot__pipe_held *h = &p->held[p->held_head];
        slot__entries_finish(s, h->items, h->n, SLOT_E_OK, NULL, &sweep_again, &parked);
        s->stats.commits++;
        slot_hist_record(s->stats.batch_sizes, h->n);
        if (h->tag > p->released)
            p->released = h->tag;
        h->n = 0;
        p->held_head = (p->held_head + 1) % SLOT_PIPE_DEPTH;
        p->held_n--;
        any = true;
    }
    bool committed = lmdb != p->lmdb_seen;
    p->lmdb_seen = lmdb;
    if (any) {
        if (sweep_again && !s->stopping)
            slot__sweep_enqueue(s);
        slot__park_after_batch(s, parked);
    }
    slot__dispatch(s);
    slot__flush_dirty(s);
    if (committed)
        s->conn_up.feed(s); /* the feed reads LMDB: its entries are durable */
    if (any || committed)
        slot__reads_resume(s);
}

static void pipe_on_async(uv_async_t *h)
{
    server *s = h->data;
    if (s->pipe->set)
        s->clu_up->pipe_moved(s); /* the commit point may rise with durable; it releases */
    else
        slot__pipe_release(s);
}

/* Loop: a batch that ran is held until the log's flush reaches its tag. */
void slot__pipe_hold(server *s, uint64_t tag)
{
    slot__pipe *p = s->pipe;
    SLOT_ASSERT(p->held_n < SLOT_PIPE_DEPTH); /* slot__dispatch sends no batch past the depth */
    slot__pipe_held *h = &p->held[(p->held_head + p->held_n) % SLOT_PIPE_DEPTH];
    memcpy(h->items, s->batch.items, s->batch.n * sizeof(entry *));
    h->n = s->batch.n;
    h->tag = tag;
    p->held_n++;
    if (tag > p->ran)
        p->ran = tag;
    s->batch.n = 0;
    s->batch.busy = false;
    slot__pipe_release(s);
}

static void pipe_ask_commit(server *s)
{
    pthread_mutex_lock(&s->batch.mu);
    s->batch.commit_asked = true;
    pthread_cond_signal(&s->batch.cv);
    pthread_mutex_unlock(&s->batch.mu);
}

bool slot__pipe_fresh(server *s)
{
    if (!s->pipe || s->pipe->lmdb_seen >= s->pipe->released)
        return true;
    pipe_ask_commit(s);
    return false;
}

slot__read_gate slot__pipe_read_gate(server *s, MDB_txn *rtxn)
{
    uint64_t seq = 0;
    if (slot_store_seq_get(s->store, rtxn, &seq, NULL) != 0 || seq >= s->pipe->released)
        return SLOT__READ_GO; /* an error is the read's own to report */
    pipe_ask_commit(s);
    return SLOT__READ_WAIT;
}

/* The batch log's lines (what its open repaired or found damaged). */
static void pipe_rlog_line(void *ctx, const char *msg)
{
    (void)ctx;
    slot__log(SLOT__LOG_WARN, "batch log", SLOT__LF_S("detail", msg));
}

int slot__pipe_replay(server *s, bool keep)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/rlog", s->opts.data_dir);
    struct stat st;
    if (!keep && stat(dir, &st) != 0)
        return 0; /* never pipelined here: nothing to replay */
    slot__pipe *p = calloc(1, sizeof(*p));
    if (!p)
        return -1;
    slot_rlog_opts ro = {.log = pipe_rlog_line};
    slot_rlog_open_info info;
    int rc = slot_rlog_open(dir, &ro, &p->rlog, &info);
    if (rc != 0) {
        slot__log(SLOT__LOG_ERROR, "cannot open the batch log", SLOT__LF_S("path", dir),
                  SLOT__LF_S("error", slot_strerror(rc)));
        free(p);
        return -1;
    }
    MDB_env *env = slot_store_env(s->store);
    MDB_txn *txn = NULL;
    uint64_t seq = 0, last = 0, last_epoch = 0, first = slot_rlog_first(p->rlog), applied = 0;
    slot_rlog_last(p->rlog, &last_epoch, &last);
    const char *why = NULL;
    rc = mdb_txn_begin(env, NULL, 0, &txn);
    if (rc == 0)
        rc = slot_store_seq_get(s->store, txn, &seq, NULL);
    if (rc == 0 && last_epoch != 0)
        why = "it is a replica set's log (epoch above 0)";
    else if (rc == 0 && first > seq + 1)
        why = "it starts above the store's seq + 1 (records are missing)";
    for (uint64_t q = seq + 1; rc == 0 && !why && q <= last; q++) {
        const uint8_t *rec = NULL;
        size_t n = 0;
        slot_wset_rec r;
        if ((rc = slot_rlog_read(p->rlog, q, &rec, &n)) == 0 && (rc = slot_wset_decode(rec, n, &r)) == 0 &&
            (rc = slot_store_apply(s->store, txn, &r)) == 0)
            applied++;
    }
    if (rc == 0 && !why && applied > 0)
        rc = mdb_txn_commit(txn) ? EIO : mdb_env_sync(env, 1); /* durable before anything new is written */
    else if (txn)
        mdb_txn_abort(txn);
    if (rc == 0 && !why && last < seq) /* a sync run since: LMDB holds more than the log */
        rc = slot_rlog_reset(p->rlog, seq + 1, 0);
    if (rc != 0 || why) {
        slot__log(SLOT__LOG_ERROR, "cannot replay the batch log", SLOT__LF_S("path", dir),
                  SLOT__LF_S("error", why ? why : slot_strerror(rc)), SLOT__LF_U("store_seq", seq),
                  SLOT__LF_U("log_first", first), SLOT__LF_U("log_last", last));
        slot_rlog_close(p->rlog);
        free(p);
        return -1;
    }
    if (applied > 0 || keep)
        slot__log(SLOT__LOG_INFO, "batch log replayed", SLOT__LF_U("records", applied), SLOT__LF_U("from", seq + 1),
                  SLOT__LF_U("seq", seq + applied));
    if (!keep) {
        slot_rlog_close(p->rlog);
        free(p);
        return 0;
    }
    if ((rc = slot_wset_init(&p->wset, SLOT_PIPE_WSET_BYTES)) != 0) {
        slot_rlog_close(p->rlog);
        free(p);
        return -1;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    slot_rlog_last(p->rlog, NULL, &p->appended);
    p->durable = p->appended; /* the open fdatasynced the last segment */
    p->lmdb_seq = p->lmdb_prev = p->lmdb_seen = p->released = p->ran = p->appended;
    p->lmdb_prev = seq; /* the replay's own commit was flushed; the one before it surely */
    p->point = UINT64_MAX; /* standalone: LMDB commits wait for durable alone (a set's wait for its commit point) */
    p->on = true;
    s->pipe = p;
    s->batch.wset = &p->wset;
    return 0;
}

int slot__pipe_start(server *s)
{
    slot__pipe *p = s->pipe;
    uv_async_init(s->loop, &p->async, pipe_on_async);
    p->async.data = s;
    p->async_open = true;
    int rc = pthread_create(&p->flusher, NULL, flusher_thread, s);
    p->flusher_started = rc == 0;
    return rc;
}

void slot__pipe_quiesce(server *s)
{
    slot__pipe *p = s->pipe;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->async_open = false;
    pthread_mutex_unlock(&p->mu);
}

void slot__pipe_free(server *s)
{
    slot__pipe *p = s->pipe;
    if (!p)
        return;
    if (p->flusher_started) {
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->flusher, NULL);
    }
    if (!p->set) { /* a set's log and capture are the cluster's */
        slot_rlog_close(p->rlog);
        slot_wset_free(&p->wset);
        s->batch.wset = NULL;
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    s->pipe = NULL;
    free(p);
}
