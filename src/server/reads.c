/*
 * reads.c — the read ops' answers (reads.h): hello, stats, metrics, backup,
 * cluster and cluster_change, and the allocator's reads on the loop's read
 * transaction. Above the loop core (loop.c), which it calls; the
 * connections (conn.c, http.c) call it when a read reaches their head.
 */
#include "reads.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"
#include "loop.h"
#include "metrics.h"
#include "server_backup.h"
#include "slot/assert.h"
#include "slot_config.h"

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
    const slot_hist *l = s->stats.latency_us, *b = s->stats.batch_sizes;
    SLOT__JW_LIT(w, "{\"connections\":");
    slot__jw_u64(w, s->nconns);
    slot__jw_key_u64(w, "connections_total", s->stats.conns_total);
    slot__jw_key(w, "requests");
    for (int op = 0; op < SLOT_OP__COUNT; op++) {
        const char *name = slot_op_name((slot_op)op);
        slot__jw_mem(w, op == 0 ? "{" : ",", 1);
        slot__jw_str(w, name, strlen(name), SLOT__JW_STR_STRICT);
        SLOT__JW_LIT(w, ":");
        slot__jw_u64(w, s->stats.requests[op]);
    }
    SLOT__JW_LIT(w, "}");
    slot__jw_key_u64(w, "bad_lines", s->stats.bad_lines);
    slot__jw_key_u64(w, "holds", s->stats.holds);
    slot__jw_key_u64(w, "sold_out", s->stats.sold_out);
    slot__jw_key_u64(w, "sold_out_fast", s->stats.sold_out_fast);
    slot__jw_key_u64(w, "cold_parked", s->stats.cold_parked);
    slot__jw_key_u64(w, "cold_waiting", s->park.n);
    slot__jw_key_u64(w, "cold_loading", s->park.loading);
    slot__jw_key_u64(w, "cold_loaded", s->stats.cold_loaded);
    slot__jw_key_u64(w, "cold_walked", s->stats.cold_walked);
    slot__jw_key_u64(w, "cold_slices", s->stats.cold_slices);
    slot__jw_key_u64(w, "errors", s->stats.errors);
    slot__jw_key_u64(w, "commits", s->stats.commits);
    slot__jw_key_u64(w, "commit_failures", s->stats.commit_failures);
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
    slot__jw_key_u64(w, "queue", s->queue.len);
    slot__jw_key_u64(w, "db_bytes", slot_store_used_bytes(s->store));
    slot__jw_key_u64(w, "map_bytes", slot_store_map_bytes(s->store));
    slot__jw_key(w, "durability");
    if (s->opts.nosync)
        SLOT__JW_LIT(w, "\"nosync\"");
    else
        SLOT__JW_LIT(w, "\"sync\"");
    slot__jw_key_u64(w, "reads_paused", s->stats.reads_paused);
    slot__jw_key_u64(w, "accepts_paused", s->stats.accepts_paused);
    slot__jw_key_u64(w, "connections_timed_out", s->stats.conns_timed_out);
    slot__jw_key_u64(w, "commit_busy_us", s->stats.commit_busy_ns / 1000u);
    slot__jw_key_u64(w, "commit_sync_us", s->stats.commit_sync_ns / 1000u);
    slot__jw_key_u64(w, "backups", s->backup.written);
    slot__jw_key_u64(w, "backups_running", s->backup.busy ? 1 : 0); /* a gauge: one backup at a time */
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
        res->http = s->http.listener != NULL;   /* and "http" with --http */
        res->version = SLOT_VERSION; /* static text; proto writes it as "version" */
        return;
    }
    if (e->req.op == SLOT_OP_STATS) {
        res->extra = stats_json(s);
        if (!res->extra)
            slot_res_error(res, SLOT_E_INTERNAL, "out of memory");
        return;
    }
    if (e->req.op == SLOT_OP_METRICS) {
        res->text = slot__metrics_text(s, &res->text_len); /* proto writes it as one JSON string */
        if (!res->text)
            slot_res_error(res, SLOT_E_INTERNAL, "out of memory");
        return;
    }
    if (e->req.op == SLOT_OP_BACKUP) {
        slot__backup_start(s, e);
        return;
    }
    if (e->req.op == SLOT_OP_CLUSTER && s->clu) {
        res->extra = s->clu_up.cluster_json(s);
        if (!res->extra)
            slot_res_error(res, SLOT_E_INTERNAL, "out of memory");
        return;
    }
    if (e->req.op == SLOT_OP_CLUSTER_CHANGE) {
        if (!s->clu)
            slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "this server is not a member of a replica set (--cluster)");
        else if (s->clu_up.change(s, e) == 1) {
            e->state = ENTRY_READ_WAIT;
            s->reads_waiting = true;
            return;
        }
        slot__count_result(s, e);
        return;
    }
    int rc = slot__read_begin(s);
    int gate = rc == 0 && s->clu ? s->clu_up.read_gate(s, s->rtxn, res) : 0;
    if (gate == 1) { /* the state it would read is not committed yet: run it later */
        slot__read_end(s);
        e->state = ENTRY_READ_WAIT;
        s->reads_waiting = true;
        return;
    }
    if (rc == 0 && gate == 0 && e->req.op == SLOT_OP_CLUSTER)
        rc = standalone_cluster(s, res);
    else if (rc == 0 && gate == 0)
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
