/*
 * commit.c — the commit thread (commit.h). A reply that says
 * held/confirmed/released is encoded only after the commit of its batch
 * returned (invariant 6): write entries become DONE only in
 * slot__batch_complete(), which runs after mdb_txn_commit.
 */
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

/* Answers every request of the batch with the same error; nothing was committed. */
static void batch_fail(server *s, slot_err err, const char *why)
{
    for (size_t i = 0; i < s->batch.n; i++) {
        s->batch.items[i]->cold_park = false; /* it did not run either: it gets the batch's answer */
        slot_res_clear(&s->batch.items[i]->res);
        slot_res_error(&s->batch.items[i]->res, err, "%s", why);
    }
}

/* ---- parking (docs/design.md, "Cold events load in slices"): the set of
 *      the batch's owners with a parked entry, so that their later entries
 *      in the batch park too and a connection's writes keep their order. */

static size_t owner_slot(uintptr_t owner)
{
    return (size_t)(((uint64_t)owner * UINT64_C(0x9e3779b97f4a7c15)) >> 40) & (SLOT_COLD_CONN_SET_SLOTS - 1);
}

static bool owner_parked(const server *s, uintptr_t owner)
{
    for (size_t i = owner_slot(owner);; i = (i + 1) & (SLOT_COLD_CONN_SET_SLOTS - 1)) {
        if (s->batch.cold_conns[i] == owner)
            return true;
        if (s->batch.cold_conns[i] == 0)
            return false; /* the set is never full (limits.h), so an empty slot ends the probe */
    }
}

static void owner_park(server *s, uintptr_t owner)
{
    SLOT_ASSERT(owner != 0);
    SLOT_ASSERT(s->batch.cold_conns_n < SLOT_BATCH_REQUESTS_MAX); /* one per entry at most */
    size_t i = owner_slot(owner);
    while (s->batch.cold_conns[i] != 0 && s->batch.cold_conns[i] != owner)
        i = (i + 1) & (SLOT_COLD_CONN_SET_SLOTS - 1);
    if (s->batch.cold_conns[i] == 0) {
        s->batch.cold_conns[i] = owner;
        s->batch.cold_conns_n++;
    }
}

/*
 * Whether e runs now (*run) or waits: parked (e->cold_park) when it needs
 * the keys of a cold event (slot_alloc_cold_need queues the event's load) or
 * when an earlier entry of its connection in this batch parked; answered
 * overloaded when the load queue is full. With --no-cold-park it always runs
 * (the event's keys then load at once, in the op). 0 or an LMDB error.
 */
static int cold_gate(server *s, MDB_txn *txn, entry *e, uint64_t now_ms, bool *run)
{
    *run = true;
    e->cold_park = false;
    if (s->opts.no_cold_park)
        return 0;
    bool wait = s->batch.cold_conns_n > 0 && owner_parked(s, e->owner);
    if (!wait) {
        int rc = slot_alloc_cold_need(&s->write_alloc, txn, &e->req, now_ms, &wait);
        if (rc == EBUSY) {
            slot_res_error(&e->res, SLOT_E_OVERLOADED, "%u closed events are loading their keys; retry later",
                           SLOT_COLD_LOADS_MAX);
            *run = false;
            return 0;
        }
        if (rc != 0)
            return rc;
    }
    if (wait) {
        e->cold_park = true;
        owner_park(s, e->owner);
        *run = false;
    }
    return 0;
}

/*
 * Runs the batch's requests on txn, with the write set captured into
 * s->batch.wset when there is one, and then, when they wrote anything, raises
 * the store's seq in the same transaction (slot/store.h: seq counts the
 * batches that changed state, so one that only answered sold_out, replays
 * or errors leaves it). Returns 0 or the first storage error.
 */
int slot__batch_ops(server *s, MDB_txn *txn, uint64_t now_ms)
{
    uint64_t writes0 = slot_store_writes(s->store);
    if (s->batch.wset) {
        slot_wset_clear(s->batch.wset);
        slot_store_capture_begin(s->store, s->batch.wset);
    }
    int rc = 0;
    if (s->batch.cold_conns_n > 0) { /* the last attempt's set (a retry decides again) */
        memset(s->batch.cold_conns, 0, sizeof(s->batch.cold_conns));
        s->batch.cold_conns_n = 0;
    }
    s->batch.cold_walked = 0;
    for (size_t i = 0; rc == 0 && i < s->batch.n; i++) {
        entry *e = s->batch.items[i];
        slot_res_clear(&e->res);
        bool run = true;
        if (e->cold_step) {
            uint32_t walked = 0;
            rc = slot_alloc_cold_step(&s->write_alloc, txn, s->opts.cold_load_keys, &walked);
            s->batch.cold_walked += walked;
        } else if (e->sweep) {
            rc = slot_alloc_expire_due(&s->write_alloc, txn, now_ms, SLOT_SWEEP_BATCH_MAX, &e->res.expired);
            uint64_t admitted = 0; /* the waiting rooms' admissions, committed with the sweep ("Admission") */
            if (rc == 0)
                rc = slot_alloc_admit_due(&s->write_alloc, txn, now_ms, &admitted);
            if (rc == 0) /* retention: a bounded trim in the sweeper's commit (slot/feed.h) */
                rc = slot_feed_trim(s->store, txn, now_ms, s->opts.feed_retention_ms, SLOT_FEED_TRIM_BATCH_MAX,
                                    &e->res.feed_trimmed);
        } else if ((rc = cold_gate(s, txn, e, now_ms, &run)) == 0 && run)
            rc = slot_alloc_run(&s->write_alloc, txn, &e->req, now_ms, &e->res);
    }
    slot_store_capture_end(s->store);
    s->batch.wrote = slot_store_writes(s->store) != writes0; /* before a set's record raises seq */
    if (rc == 0 && s->clu) /* every batch of a primary ships a record (docs/design.md, "The primary's rule") */
        rc = s->clu_up->batch_record(s, txn);
    else if (rc == 0 && slot_store_writes(s->store) != writes0)
        rc = slot_store_seq_bump(s->store, txn, 0, NULL);
    return rc;
}

/*
 * Runs the batch in one write transaction and commits it. MDB_MAP_FULL —
 * from a put or from the commit — aborts, grows the map (with the loop's
 * readers held off) and retries the whole batch, until --map-size-max;
 * then every request gets storage_full. A full disk (ENOSPC, EDQUOT, or
 * EIO on a full file system: from a put, the commit's page writes or the
 * file's growth; see disk_full) is storage_full as well — an operating condition, not a fault of ours; writes work again
 * once space is freed. A write set past its bound (SLOT_WSET_E_FULL, only
 * while s->batch.wset captures) is storage_full too: the batch cannot travel as
 * one record. Any other LMDB error: internal. Either way nothing of a
 * failed batch is kept.
 */
/* Whether a failed write transaction's rc means the disk (or quota) is
 * full. ENOSPC and EDQUOT say so; LMDB turns a short page write — what a
 * file system that fills mid-write gives — into EIO, so EIO counts too when
 * the data folder's file system has less than SLOT_DISK_FULL_BYTES free. */
static bool disk_full(const server *s, int rc)
{
    if (rc == ENOSPC || rc == EDQUOT)
        return true;
    struct statvfs fs;
    if (rc != EIO || statvfs(s->opts.data_dir, &fs) != 0)
        return false;
    return (uint64_t)fs.f_bavail * fs.f_frsize < SLOT_DISK_FULL_BYTES;
}

/* One try of the batch on its own transaction, committed with LMDB's
 * flushes (sync, nosync, a replica set's primary). 0 or an error; nothing
 * of a failed try is kept. */
static int attempt_sync(server *s, uint64_t now_ms)
{
    MDB_txn *txn = NULL;
    int rc = mdb_txn_begin(slot_store_env(s->store), NULL, 0, &txn);
    if (rc == 0)
        rc = slot__batch_ops(s, txn, now_ms);
    if (rc == 0 && SLOT_FAIL(BEFORE_COMMIT))
        rc = EIO;
    if (rc == 0 && SLOT_FAIL(COMMIT_FAIL)) {
        mdb_txn_abort(txn); /* as a commit that failed: the txn is gone, nothing kept */
        txn = NULL;
        rc = EIO;
    }
    if (rc == 0) {
        uint64_t t0_ns = uv_hrtime();
        rc = mdb_txn_commit(txn); /* frees txn, also when it fails */
        s->batch.sync_ns += uv_hrtime() - t0_ns;
    } else if (txn)
        mdb_txn_abort(txn);
    if (rc != 0 && s->clu)
        s->clu_up->batch_unrecord(s);
    return rc;
}

static void batch_run(server *s)
{
    SLOT_ASSERT(s->batch.n >= 1);
    SLOT_ASSERT(s->batch.n <= SLOT_BATCH_REQUESTS_MAX);
    for (int attempt = 0; attempt < SLOT_MAP_GROW_ATTEMPTS_MAX; attempt++) {
        uint64_t now_ms = slot__wall_ms();
        int rc = s->pipe ? slot__pipe_attempt(s, now_ms) : attempt_sync(s, now_ms);
        if (rc != 0)
            s->batch.failures++;
        if (rc == 0 && SLOT_FAIL(SLOW_HANDBACK))
            uv_sleep(SLOT_FP_SLOW_HANDBACK_MS); /* committed; the loop hears of it late */
        if (rc == 0)
            return;
        if (rc == SLOT_SERVER_E_NOT_SELLING) {
            batch_fail(s, SLOT_E_UNAVAILABLE, "this node is not the primary any more; nothing was changed");
            return;
        }
        if (rc == MDB_MAP_FULL) {
            if (s->pipe)
                slot__pipe_commit(s, true); /* the map grows only with no write transaction open */
            pthread_rwlock_wrlock(&s->map_lock);
            int g = slot_store_grow(s->store);
            pthread_rwlock_unlock(&s->map_lock);
            if (g == 0) {
                slot__log(SLOT__LOG_INFO, "storage grew: the map doubled, the batch is retried",
                          SLOT__LF_U("map_bytes", slot_store_map_bytes(s->store)),
                          SLOT__LF_U("map_size_max", s->opts.map_bytes_max), SLOT__LF_U("requests", s->batch.n));
                continue;
            }
            slot__log(SLOT__LOG_ERROR, "storage full: the map is at --map-size-max; answered storage_full",
                      SLOT__LF_S("reason", "map_size_max"), SLOT__LF_U("map_size_max", s->opts.map_bytes_max),
                      SLOT__LF_U("requests", s->batch.n));
            batch_fail(s, SLOT_E_STORAGE_FULL, "the database is full (--map-size-max); nothing was changed");
            return;
        }
        if (rc == SLOT_WSET_E_FULL) {
            slot__log(SLOT__LOG_ERROR, "storage full: the batch's write set passed its bound; answered storage_full",
                      SLOT__LF_S("reason", "write_set"), SLOT__LF_U("bound_bytes", s->batch.wset->payload_max),
                      SLOT__LF_U("requests", s->batch.n));
            batch_fail(s, SLOT_E_STORAGE_FULL,
                       "the batch writes more than one replication record holds; nothing was changed");
            return;
        }
        if (disk_full(s, rc)) {
            slot__log(SLOT__LOG_ERROR, "storage full: the disk is full; answered storage_full",
                      SLOT__LF_S("reason", "disk"), SLOT__LF_S("error", strerror(rc)),
                      SLOT__LF_U("requests", s->batch.n));
            batch_fail(s, SLOT_E_STORAGE_FULL, "the disk is full; nothing was changed");
            return;
        }
        slot__log(SLOT__LOG_ERROR, "write transaction failed; answered internal",
                  SLOT__LF_S("error", slot_strerror(rc)), SLOT__LF_U("requests", s->batch.n));
        batch_fail(s, SLOT_E_INTERNAL, "storage error; nothing was changed");
        return;
    }
    batch_fail(s, SLOT_E_STORAGE_FULL, "the database could not grow; nothing was changed");
}

/* ---- --durability pipelined: commit_pipe.c */

static void *commit_thread(void *arg)
{
    server *s = arg;
    pthread_setname_np(pthread_self(), "slotd-commit"); /* for top -H, perf and bench/compare.sh (at most 15 bytes) */
    pthread_mutex_lock(&s->batch.mu);
    for (;;) {
        while (!s->batch.ready && !s->batch.stop) {
            if (s->pipe)
                slot__pipe_idle_wait(s);
            else
                pthread_cond_wait(&s->batch.cv, &s->batch.mu);
        }
        if (!s->batch.ready)
            break;
        s->batch.ready = false;
        bool job = s->batch.job_cluster;
        pthread_mutex_unlock(&s->batch.mu);
        uint64_t t0_ns = uv_hrtime();
        s->batch.failures = 0;
        s->batch.sync_ns = 0;
        slot__pipe_before(s, job); /* a set's primary: a drop, a deferred commit, no open state under a job */
        if (job)
            s->clu_up->job_run(s);
        else
            batch_run(s);
        uint32_t loading = slot_alloc_cold_loading(&s->write_alloc);
        uint64_t loaded = slot_alloc_cold_loaded(&s->write_alloc);
        uint64_t tag = 0;
        if (s->pipe) { /* what the batch's answers read: every record appended so far */
            pthread_mutex_lock(&s->pipe->mu);
            tag = s->pipe->appended;
            pthread_mutex_unlock(&s->pipe->mu);
        }
        pthread_mutex_lock(&s->batch.mu);
        s->batch.tag = tag;
        s->batch.tag_wrote = s->batch.wrote;
        s->batch.run_ns = uv_hrtime() - t0_ns;
        s->batch.cold_loading = loading;
        s->batch.cold_loaded = loaded;
        s->batch.done = true;
        uv_async_send(&s->async);
    }
    pthread_mutex_unlock(&s->batch.mu);
    if (s->pipe)
        slot__pipe_commit(s, false); /* stopping: the open state into LMDB */
    return NULL;
}

/* A batch whose commit took --slow-commit-ms or more gets a warning line; at
 * most one a second, the next one counting those left out (a slow disk would
 * otherwise log every batch). Loop thread. */
static void slow_commit_log(server *s, uint64_t run_ns, uint64_t sync_ns)
{
    if (s->opts.slow_commit_ms == 0 || run_ns < (uint64_t)s->opts.slow_commit_ms * 1000000u)
        return;
    uint64_t now_ms = uv_now(s->loop);
    if (s->stats.slow_logged_ms && now_ms - s->stats.slow_logged_ms < 1000u) {
        s->stats.slow_unlogged++;
        return;
    }
    slot__log(SLOT__LOG_WARN, "slow commit", SLOT__LF_U("duration_ms", run_ns / 1000000u),
              SLOT__LF_U("fsync_ms", sync_ns / 1000000u), SLOT__LF_U("requests", s->batch.n),
              SLOT__LF_U("threshold_ms", s->opts.slow_commit_ms), SLOT__LF_U("not_logged", s->stats.slow_unlogged));
    s->stats.slow_logged_ms = now_ms;
    s->stats.slow_unlogged = 0;
}

/* The loop's side of a finished batch: results become answers (the commit has
 * returned), the next batch goes, connections with new answers are flushed. */
void slot__batch_complete(uv_async_t *h)
{
    server *s = h->data;
    pthread_mutex_lock(&s->batch.mu);
    bool done = s->batch.done;
    s->batch.done = false;
    bool job = s->batch.job_cluster;
    uint64_t failures = s->batch.failures;
    uint64_t run_ns = s->batch.run_ns, sync_ns = s->batch.sync_ns;
    uint64_t walked = s->batch.cold_walked;
    uint64_t tag = s->batch.tag;
    bool tag_wrote = s->batch.tag_wrote;
    s->park.loading = s->batch.cold_loading; /* the loop's copies: batch_finish reads them */
    uint64_t loaded = s->batch.cold_loaded;
    if (done && job) {
        s->batch.job_cluster = false;
    } else if (done) { /* a wake-up without a finished batch must not count the last one again */
        s->stats.commit_busy_ns += run_ns;
        s->stats.commit_sync_ns += sync_ns;
    }
    pthread_mutex_unlock(&s->batch.mu);
    if (!done)
        return;
    if (!job && walked > 0) {
        s->stats.cold_walked += walked;
        s->stats.cold_slices++;
    }
    if (loaded != s->park.loaded_seen) {
        if (loaded > s->park.loaded_seen)
            s->stats.cold_loaded += loaded - s->park.loaded_seen;
        s->park.loaded_seen = loaded;
        s->park.unpark = true; /* events came in: what waits is tried again */
    }
    if (!job) { /* the metrics' histograms: read under mu above, kept by this thread */
        slot_hist_record(s->stats.commit_ns, run_ns);
        slot_hist_record(s->stats.sync_ns, sync_ns);
        slow_commit_log(s, run_ns, sync_ns);
    }
    SLOT_ASSERT(s->batch.busy);
    if (job) {
        s->batch.busy = false;
        s->clu_up->job_done(s);
        slot__park_after_batch(s, false);
        slot__dispatch(s);
        return;
    }
    s->stats.commit_failures += failures;
    if (s->pipe && !s->pipe->set) {
        slot__pipe_hold(s, tag); /* answered once the log's flush reaches tag: slot__pipe_release */
        return;
    }
    if (s->pipe && tag_wrote && tag > s->pipe->ran_state)
        s->pipe->ran_state = tag; /* a set: the sold-out read path waits for LMDB to hold it */
    if (s->clu && s->clu_up->batch_hold(s))
        return; /* answered once its acks are in: slot__batch_finish */
    slot__batch_finish(s, SLOT_E_OK, NULL);
}

/* The loop's side of a batch that is done with (committed, or, pipelined,
 * durable in the log): results become answers (err replaces each when not
 * SLOT_E_OK), parked and sweep entries go their ways. */
void slot__entries_finish(server *s, entry **items, size_t n, slot_err err, const char *why, bool *sweep_again,
                          bool *parked)
{
    for (size_t i = 0; i < n; i++) {
        entry *e = items[i];
        SLOT_ASSERT(e->state == ENTRY_QUEUED); /* nothing answers a batched entry but this */
        if (e->cold_step) {
            s->park.step_pending = false;
            slot__entry_put(s, e);
            continue;
        }
        if (e->cold_park && err == SLOT_E_OK) { /* not run: it waits for its event's keys */
            SLOT_ASSERT(!e->sweep);
            slot__park_push(s, e);
            *parked = true;
            continue;
        }
        if (e->sweep) {
            s->sweep_pending = false;
            *sweep_again = *sweep_again ||
                           (e->res.err == SLOT_E_OK && (e->res.expired >= SLOT_SWEEP_BATCH_MAX ||
                                                        e->res.feed_trimmed >= SLOT_FEED_TRIM_BATCH_MAX));
            slot__entry_put(s, e);
            continue;
        }
        if (!e->conn) { /* its connection closed meanwhile; what committed stays committed */
            slot__entry_put(s, e);
            continue;
        }
        e->state = ENTRY_DONE;
        if (err != SLOT_E_OK) {
            slot_res_clear(&e->res);
            slot_res_error(&e->res, err, "%s", why);
        }
        slot__count_result(s, e);
        if (!e->conn->dirty) {
            e->conn->dirty = true;
            e->conn->dirty_next = s->dirty;
            s->dirty = e->conn;
        }
    }
}

/* Writes the connections with new answers. */
void slot__flush_dirty(server *s)
{
    while (s->dirty) {
        conn *c = s->dirty;
        s->dirty = c->dirty_next;
        c->dirty = false;
        s->conn_up.flush(c);
    }
}

void slot__batch_finish(server *s, slot_err err, const char *why)
{
    /* The batch is the loop's again: it was dispatched, whole and in bounds. */
    SLOT_ASSERT(s->batch.busy);
    SLOT_ASSERT(s->batch.n >= 1);
    SLOT_ASSERT(s->batch.n <= SLOT_BATCH_REQUESTS_MAX);
    bool sweep_again = false, parked = false;
    slot__entries_finish(s, s->batch.items, s->batch.n, err, why, &sweep_again, &parked);
    s->stats.commits++;
    slot_hist_record(s->stats.batch_sizes, s->batch.n);
    s->batch.n = 0;
    s->batch.busy = false;
    if (sweep_again && !s->stopping)
        slot__sweep_enqueue(s);
    slot__park_after_batch(s, parked);
    /* The next batch goes before the answers are written, so the commit
     * thread works while this thread does the write syscalls. */
    slot__dispatch(s);
    slot__flush_dirty(s);
    s->conn_up.feed(s); /* the batch's feed entries, to the consumers following */
    slot__reads_resume(s);
}

bool slot__job_dispatch(server *s)
{
    if (s->batch.busy)
        return false;
    SLOT_ASSERT(s->batch.n == 0);
    s->batch.busy = true;
    pthread_mutex_lock(&s->batch.mu);
    s->batch.job_cluster = true;
    s->batch.ready = true;
    pthread_cond_signal(&s->batch.cv);
    pthread_mutex_unlock(&s->batch.mu);
    return true;
}

int slot__commit_start(server *s)
{
    SLOT_ASSERT(!s->batch.thread_started);
    int rc = pthread_create(&s->batch.thread, NULL, commit_thread, s);
    s->batch.thread_started = rc == 0;
    return rc;
}

void slot__commit_stop(server *s)
{
    if (!s->batch.thread_started)
        return;
    pthread_mutex_lock(&s->batch.mu);
    s->batch.stop = true;
    pthread_cond_signal(&s->batch.cv);
    pthread_mutex_unlock(&s->batch.mu);
    pthread_join(s->batch.thread, NULL);
    s->batch.thread_started = false;
}
