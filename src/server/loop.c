/*
 * loop.c — the loop thread's core (loop.h): entries, the write queue and
 * its dispatch, the read-only ops, the sweeper and stats.
 */
#include "loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"
#include "metrics.h"
#include "server_backup.h"
#include "slot/feed.h"
#include "slot/assert.h"
#include "slot_config.h"

entry *slot__entry_get(server *s)
{
    entry *e = s->free_entries;
    if (e)
        s->free_entries = e->next;
    else if (!(e = malloc(sizeof(*e))))
        return NULL;
    s->entries_live++;
    memset(e, 0, offsetof(entry, req));
    memset(&e->res, 0, sizeof(e->res));
    e->req.op = SLOT_OP__COUNT;
    e->req.id.kind = SLOT_ID_NONE;
    return e;
}

void slot__entry_put(server *s, entry *e)
{
    SLOT_ASSERT(s->entries_live > 0);
    slot_res_clear(&e->res);
    s->entries_live--;
    e->next = s->free_entries;
    s->free_entries = e;
}

/* Appends a write request to the queue the next batch is taken from. */
void slot__queue_push(server *s, entry *e)
{
    e->state = ENTRY_QUEUED;
    e->qnext = NULL;
    if (s->q_tail)
        s->q_tail->qnext = e;
    else
        s->q_head = e;
    s->q_tail = e;
    s->q_len++;
}

/* Hands the queued write requests (at most SLOT_BATCH_REQUESTS_MAX) to the
 * commit thread when it is idle. Called at the end of every loop turn and
 * when a batch completes, so a batch is whatever arrived meanwhile. */
void slot__dispatch(server *s)
{
    if (s->batch_busy || s->q_len == 0)
        return;
    if (s->clu && s->clu_up->write_pause(s))
        return; /* a switchover drains what is in flight; the queue waits (bounded by --queue-max) */
    if (s->clu && s->clu_up->write_gate(s, NULL)) {
        slot__queue_refuse(s);
        return;
    }
    SLOT_ASSERT(s->batch_n == 0); /* the last batch was completed and emptied */
    size_t n = 0;
    while (s->q_head && n < SLOT_BATCH_REQUESTS_MAX) {
        entry *e = s->q_head;
        SLOT_ASSERT(e->state == ENTRY_QUEUED);
        s->q_head = e->qnext;
        e->qnext = NULL;
        s->batch[n++] = e;
    }
    if (!s->q_head)
        s->q_tail = NULL;
    SLOT_ASSERT(n >= 1);
    SLOT_ASSERT(n <= s->q_len);
    s->q_len -= (uint32_t)n;
    SLOT_ASSERT((s->q_len == 0) == (s->q_head == NULL)); /* q_len counts the queue */
    s->batch_busy = true;
    pthread_mutex_lock(&s->mu);
    s->batch_n = n;
    s->batch_ready = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void slot__queue_refuse(server *s)
{
    slot__park_requeue(s); /* what waits for a cold event's keys is refused alike */
    for (entry *e = s->q_head, *next; e; e = next) {
        next = e->qnext;
        e->qnext = NULL;
        if (e->sweep || e->cold_step || !e->conn) {
            if (e->sweep)
                s->sweep_pending = false;
            if (e->cold_step)
                s->cold_step_pending = false;
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
    s->q_head = s->q_tail = NULL;
    s->q_len = 0;
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
    for (conn *c = s->http_conns, *next; c; c = next) {
        next = c->next;
        if (c->head && c->head->state == ENTRY_READ_WAIT)
            s->conn_up.flush(c);
    }
}

void slot__count_error(server *s, slot_err err)
{
    s->errors++;
    s->errors_by_code[(unsigned)err < SLOT_E__COUNT ? err : SLOT_E_INTERNAL]++;
}

void slot__count_reply(server *s, const entry *e)
{
    unsigned op = e->parsed && (unsigned)e->req.op < SLOT_OP__COUNT ? (unsigned)e->req.op : SLOT_OP__COUNT;
    slot__outcome o = e->res.err != SLOT_E_OK ? SLOT__OUTCOME_ERROR
                      : e->res.sold_out       ? SLOT__OUTCOME_SOLD_OUT
                                              : SLOT__OUTCOME_OK;
    s->replies[op][o]++;
}

void slot__count_result(server *s, const entry *e)
{
    if (e->res.err != SLOT_E_OK)
        slot__count_error(s, e->res.err);
    else if (e->req.op == SLOT_OP_HOLD && e->res.sold_out)
        s->sold_out++;
    else if (e->req.op == SLOT_OP_HOLD && !e->res.replay)
        s->holds++;
}

/* End of every loop turn: hand the collected requests to the commit thread;
 * and when reading paused for lack of entries, resume once half are back. */
void slot__on_check(uv_check_t *h)
{
    server *s = h->data;
    slot__dispatch(s);
    if (s->mem_paused && s->entries_live < SLOT_ENTRIES_MAX / 2) {
        s->mem_paused = false;
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
    if (s->opts.no_read_path || e->req.op != SLOT_OP_HOLD || s->batch_busy || s->q_len > 0 || s->park_n > 0 ||
        s->stopping)
        return false; /* a parked write is a pending write too (condition 1) */
    if (s->clu && (s->clu_up->write_pause(s) || s->clu_up->write_gate(s, NULL)))
        return false; /* the write path answers (unavailable, not_primary) or waits */
    bool fast = false;
    if (slot__read_begin(s) == 0) {
        slot_res gate_res;
        memset(&gate_res, 0, sizeof(gate_res));
        slot__read_gate gate = s->clu ? s->clu_up->read_gate(s, s->rtxn, &gate_res) : SLOT__READ_GO;
        slot_res_clear(&gate_res);
        /* batch_busy is false: the commit thread is idle, and the hand-back's
         * mutex ordered its last change of the index before this read. */
        fast = gate == SLOT__READ_GO &&
               slot_alloc_sold_out_peek(&s->write_alloc, s->rtxn, &e->req, slot__wall_ms(), &e->res);
    }
    slot__read_end(s);
    if (!fast)
        return false;
    e->state = ENTRY_DONE;
    s->sold_out_fast++;
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

void slot__on_sweep_timer(uv_timer_t *t)
{
    server *s = t->data;
    if (!s->sweep_pending && sweep_due(s))
        slot__sweep_enqueue(s);
    s->conn_up.reap(s);
}

/* A real number as jansson's JSON_COMPACT writes one (the stats reply
 * was encoded by jansson before; its text stays the same): "%.17g", with
 * ".0" added when that reads as an integer. */
static void jw_real(slot__jw *w, double v)
{
    char num[32];
    int n = snprintf(num, sizeof(num), "%.17g", v);
    SLOT_ASSERT(n > 0);
    SLOT_ASSERT((size_t)n < sizeof(num));
    slot__jw_mem(w, num, (size_t)n);
    if (!strpbrk(num, ".eE"))
        SLOT__JW_LIT(w, ".0");
}

/* The stats object (docs/protocol.md, "stats") into w. */
static void stats_write(server *s, slot__jw *w)
{
    const slot_hist *l = s->latency_us, *b = s->batch_sizes;
    SLOT__JW_LIT(w, "{\"connections\":");
    slot__jw_u64(w, s->nconns);
    slot__jw_key_u64(w, "connections_total", s->conns_total);
    slot__jw_key(w, "requests");
    for (int op = 0; op < SLOT_OP__COUNT; op++) {
        const char *name = slot_op_name((slot_op)op);
        slot__jw_mem(w, op == 0 ? "{" : ",", 1);
        slot__jw_str(w, name, strlen(name), SLOT__JW_STR_STRICT);
        SLOT__JW_LIT(w, ":");
        slot__jw_u64(w, s->requests[op]);
    }
    SLOT__JW_LIT(w, "}");
    slot__jw_key_u64(w, "bad_lines", s->bad_lines);
    slot__jw_key_u64(w, "holds", s->holds);
    slot__jw_key_u64(w, "sold_out", s->sold_out);
    slot__jw_key_u64(w, "sold_out_fast", s->sold_out_fast);
    slot__jw_key_u64(w, "cold_parked", s->cold_parked);
    slot__jw_key_u64(w, "cold_waiting", s->park_n);
    slot__jw_key_u64(w, "cold_loading", s->cold_loading);
    slot__jw_key_u64(w, "cold_loaded", s->cold_loaded);
    slot__jw_key_u64(w, "cold_walked", s->cold_walked);
    slot__jw_key_u64(w, "cold_slices", s->cold_slices);
    slot__jw_key_u64(w, "errors", s->errors);
    slot__jw_key_u64(w, "commits", s->commits);
    slot__jw_key_u64(w, "commit_failures", s->commit_failures);
    SLOT__JW_LIT(w, ",\"batch_size\":{\"count\":");
    slot__jw_u64(w, b->count);
    slot__jw_key(w, "mean");
    jw_real(w, slot_hist_mean(b));
    slot__jw_key_u64(w, "p50", slot_hist_percentile(b, 50));
    slot__jw_key_u64(w, "p99", slot_hist_percentile(b, 99));
    slot__jw_key_u64(w, "max", slot_hist_percentile(b, 100));
    SLOT__JW_LIT(w, "},\"latency_us\":{\"count\":");
    slot__jw_u64(w, l->count);
    slot__jw_key_u64(w, "p50", slot_hist_percentile(l, 50));
    slot__jw_key_u64(w, "p99", slot_hist_percentile(l, 99));
    slot__jw_key_u64(w, "p999", slot_hist_percentile(l, 99.9));
    slot__jw_key_u64(w, "max", slot_hist_percentile(l, 100));
    SLOT__JW_LIT(w, "}");
    slot__jw_key_u64(w, "queue", s->q_len);
    slot__jw_key_u64(w, "db_bytes", slot_store_used_bytes(s->store));
    slot__jw_key_u64(w, "map_bytes", slot_store_map_bytes(s->store));
    slot__jw_key(w, "durability");
    if (s->opts.nosync)
        SLOT__JW_LIT(w, "\"nosync\"");
    else
        SLOT__JW_LIT(w, "\"sync\"");
    slot__jw_key_u64(w, "reads_paused", s->reads_paused);
    slot__jw_key_u64(w, "accepts_paused", s->accepts_paused);
    slot__jw_key_u64(w, "connections_timed_out", s->conns_timed_out);
    slot__jw_key_u64(w, "commit_busy_us", s->commit_busy_ns / 1000u);
    slot__jw_key_u64(w, "commit_sync_us", s->commit_sync_ns / 1000u);
    slot__jw_key_u64(w, "backups", s->backups);
    slot__jw_key_u64(w, "backups_running", s->backup_busy ? 1 : 0); /* a gauge: one backup at a time */
    SLOT__JW_LIT(w, "}");
}

/* The stats object as heap text (res->extra); NULL when out of memory. The
 * first pass only counts (jsonw keeps counting past its buffer). */
static char *stats_json(server *s)
{
    slot__jw w;
    slot__jw_init(&w, NULL, 0);
    stats_write(s, &w);
    size_t need = slot__jw_finish(&w) + 1;
    char *text = malloc(need);
    if (!text)
        return NULL;
    slot__jw_init(&w, text, need);
    stats_write(s, &w);
    size_t n = slot__jw_finish(&w);
    SLOT_ASSERT(n < need); /* nothing changed between the passes: same thread */
    return text;
}

/* The metrics op's {"text":"..."}: the Prometheus text (metrics.c) as one
 * JSON string; NULL when out of memory. The text escapes to at most twice
 * its length (only '\n', '"' and '\\' need escapes, two bytes each), so one
 * pass is enough; a second, sized by the first, covers anything else. */
static char *metrics_json(server *s)
{
    size_t len = 0;
    char *text = slot__metrics_text(s, &len);
    if (!text)
        return NULL;
    size_t cap = 2 * len + 16;
    char *out = NULL;
    for (int pass = 0; pass < 2; pass++) {
        free(out);
        if (!(out = malloc(cap)))
            break;
        slot__jw w;
        slot__jw_init(&w, out, cap);
        SLOT__JW_LIT(&w, "{\"text\":");
        slot__jw_str(&w, text, len, SLOT__JW_STR_SHORT_ESC);
        SLOT__JW_LIT(&w, "}");
        size_t n = slot__jw_finish(&w);
        if (n < cap)
            break;
        SLOT_ASSERT(pass == 0); /* the second pass has the size the first counted */
        cap = n + 1;
    }
    free(text);
    return out;
}

/* hello's server facts: {"version":"..."}; NULL when out of memory. */
static char *hello_json(void)
{
    static const char version[] = SLOT_VERSION;
    char buf[sizeof(version) * 6 + 32];
    slot__jw w;
    slot__jw_init(&w, buf, sizeof(buf));
    SLOT__JW_LIT(&w, "{\"version\":");
    slot__jw_str(&w, version, sizeof(version) - 1, SLOT__JW_STR_STRICT);
    SLOT__JW_LIT(&w, "}");
    size_t n = slot__jw_finish(&w);
    SLOT_ASSERT(n < sizeof(buf)); /* 2 + 6 bytes per byte of the version at most */
    return strdup(buf);
}

/* The cluster op of a standalone server (docs/protocol.md, "Clients following the primary"):
 * role standalone, the store's seq, no members. 0 or an LMDB error. */
static int standalone_cluster(server *s, slot_res *res)
{
    uint64_t seq = 0;
    int rc = slot_store_seq_get(s->store, s->rtxn, &seq, NULL);
    if (rc != 0)
        return rc;
    char buf[160];
    snprintf(buf, sizeof(buf),
             "{\"cluster\":\"\",\"node\":\"\",\"role\":\"standalone\",\"epoch\":0,\"primary\":\"\",\"seq\":%llu,"
             "\"members\":[]}",
             (unsigned long long)seq);
    res->extra = strdup(buf);
    return res->extra ? 0 : ENOMEM;
}

/* Runs a read-only op now: every earlier entry of its connection is answered,
 * so the read sees every write acknowledged before it (docs/protocol.md, "Ordering"). */
void slot__run_read(server *s, entry *e)
{
    slot_res *res = &e->res;
    e->state = ENTRY_DONE;
    if (e->req.op == SLOT_OP_HELLO) {
        /* The role this hello granted (set by slot__authorize when the line
         * was parsed), not the connection's role now: hellos pipelined behind
         * it may have changed that. Without tokens every connection is admin. */
        if (res->role == SLOT_ROLE_NONE)
            res->role = e->conn->role;
        res->cluster = s->clu != NULL; /* "features" adds "cluster" (docs/protocol.md, "hello") */
        res->http = s->http != NULL;   /* and "http" with --http */
        res->extra = hello_json();
        if (!res->extra)
            slot_res_error(res, SLOT_E_INTERNAL, "out of memory");
        return;
    }
    if (e->req.op == SLOT_OP_STATS) {
        res->extra = stats_json(s);
        if (!res->extra)
            slot_res_error(res, SLOT_E_INTERNAL, "out of memory");
        return;
    }
    if (e->req.op == SLOT_OP_METRICS) {
        res->extra = metrics_json(s);
        if (!res->extra)
            slot_res_error(res, SLOT_E_INTERNAL, "out of memory");
        return;
    }
    if (e->req.op == SLOT_OP_BACKUP) {
        slot__backup_start(s, e);
        return;
    }
    if (e->req.op == SLOT_OP_CLUSTER && s->clu) {
        res->extra = s->clu_up->cluster_json(s);
        if (!res->extra)
            slot_res_error(res, SLOT_E_INTERNAL, "out of memory");
        return;
    }
    if (e->req.op == SLOT_OP_CLUSTER_CHANGE) {
        if (!s->clu)
            slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "this server is not a member of a replica set (--cluster)");
        else if (s->clu_up->change(s, e) == SLOT__CHANGE_RUNNING) {
            e->state = ENTRY_READ_WAIT;
            s->reads_waiting = true;
            return;
        }
        slot__count_result(s, e);
        return;
    }
    int rc = slot__read_begin(s);
    slot__read_gate gate = rc == 0 && s->clu ? s->clu_up->read_gate(s, s->rtxn, res) : SLOT__READ_GO;
    if (gate == SLOT__READ_WAIT) { /* the state it would read is not committed yet: run it later */
        slot__read_end(s);
        e->state = ENTRY_READ_WAIT;
        s->reads_waiting = true;
        return;
    }
    if (rc == 0 && gate == SLOT__READ_GO && e->req.op == SLOT_OP_CLUSTER)
        rc = standalone_cluster(s, res);
    else if (rc == 0 && gate == SLOT__READ_GO)
        rc = slot_alloc_run(&s->read_alloc, s->rtxn, &e->req, slot__wall_ms(), res);
    slot__read_end(s);
    if (rc != 0) {
        slot__log(SLOT__LOG_ERROR, "read transaction failed; answered internal", SLOT__LF_S("op", slot_op_name(e->req.op)),
                  SLOT__LF_S("error", mdb_strerror(rc)));
        slot_res_clear(res);
        slot_res_error(res, SLOT_E_INTERNAL, "storage error");
    }
    slot__count_result(s, e);
}
