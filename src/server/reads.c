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

#include "loop.h"
#include "commit.h"
#include "metrics.h"
#include "server_backup.h"
#include "slot/assert.h"
#include "slot_config.h"

/* The stats op's numbers (docs/protocol.md, "stats"); proto writes them. */
static void stats_fill(server *s, slot_stats *o)
{
    const slot_hist *l = s->stats.latency_us, *b = s->stats.batch_sizes;
    o->connections = s->nconns;
    o->connections_total = s->stats.conns_total;
    for (int op = 0; op < SLOT_OP__COUNT; op++)
        o->requests[op] = s->stats.requests[op];
    o->bad_lines = s->stats.bad_lines;
    o->holds = s->stats.holds;
    o->sold_out = s->stats.sold_out;
    o->sold_out_fast = s->stats.sold_out_fast;
    o->cold_parked = s->stats.cold_parked;
    o->cold_waiting = s->park.n;
    o->cold_loading = s->park.loading;
    o->cold_loaded = s->stats.cold_loaded;
    o->cold_walked = s->stats.cold_walked;
    o->cold_slices = s->stats.cold_slices;
    o->errors = s->stats.errors;
    o->commits = s->stats.commits;
    o->commit_failures = s->stats.commit_failures;
    o->batch_count = b->count;
    o->batch_mean = slot_hist_mean(b);
    o->batch_p50 = slot_hist_percentile(b, 50);
    o->batch_p99 = slot_hist_percentile(b, 99);
    o->batch_max = slot_hist_percentile(b, 100);
    o->latency_count = l->count;
    o->latency_p50 = slot_hist_percentile(l, 50);
    o->latency_p99 = slot_hist_percentile(l, 99);
    o->latency_p999 = slot_hist_percentile(l, 99.9);
    o->latency_max = slot_hist_percentile(l, 100);
    o->queue = s->queue.len;
    o->db_bytes = slot_store_used_bytes(s->store);
    o->map_bytes = slot_store_map_bytes(s->store);
    o->nosync = s->opts.nosync;
    o->pipelined = s->opts.pipelined;
    o->reads_paused = s->stats.reads_paused;
    o->accepts_paused = s->stats.accepts_paused;
    o->connections_timed_out = s->stats.conns_timed_out;
    o->commit_busy_us = s->stats.commit_busy_ns / 1000u;
    o->commit_sync_us = s->stats.commit_sync_ns / 1000u;
    o->backups = s->backup.written;
    o->backups_running = s->backup.busy ? 1 : 0; /* a gauge: one backup at a time */
}

/* The cluster op of a standalone server (docs/protocol.md, "Clients following the primary"):
 * role standalone, the store's seq, no members. 0 or an LMDB error. */
static int standalone_cluster(server *s, slot_res *res)
{
    uint64_t seq = 0;
    int rc = slot_store_seq_get(s->store, s->rtxn, &seq, NULL);
    if (rc != 0)
        return rc;
    slot_cluster_view *v = calloc(1, sizeof(*v)); /* cluster, node, primary "", epoch 0, no members */
    if (!v)
        return ENOMEM;
    v->role = "standalone";
    v->seq = seq;
    res->cluster_view = v;
    return 0;
}

/* A --placement node's deferred write (it waited to reach its connection's
 * head) or the placement op: the replica-set layer's steps, then queued as a
 * write, answered, or left waiting (src/cluster/placement.c). */
static void run_placed(server *s, entry *e)
{
    if (!s->clu || !s->clu_up->place_run) {
        slot_res_error(&e->res, SLOT_E_INVALID_ARGUMENT, "this server is not a member of a placement (--placement)");
        slot__count_result(s, e);
        return;
    }
    slot__place_state st = s->clu_up->place_run(s, e);
    if (st == SLOT__PLACE_RUNNING) {
        e->state = ENTRY_READ_WAIT;
        s->reads_waiting = true;
        return;
    }
    if (st == SLOT__PLACE_ANSWERED) {
        slot__count_result(s, e);
        return;
    }
    /* At its connection's head: every earlier entry is answered, so queueing
     * it now keeps the connection's order (nothing of it is parked). */
    if (s->stopping) {
        slot_res_error(&e->res, SLOT_E_SHUTTING_DOWN, NULL);
        slot__count_error(s, SLOT_E_SHUTTING_DOWN);
        return;
    }
    if (s->queue.len >= s->opts.queue_max) {
        slot_res_error(&e->res, SLOT_E_OVERLOADED, "server queue holds %u requests; retry later", s->queue.len);
        slot__count_error(s, SLOT_E_OVERLOADED);
        return;
    }
    e->owner = (uintptr_t)e->conn;
    slot__queue_push(s, e);
}

/* Runs a read-only op now: every earlier entry of its connection is answered,
 * so the read sees every write acknowledged before it (docs/protocol.md, "Ordering"). */
void slot__run_read(server *s, entry *e)
{
    slot_res *res = &e->res;
    e->state = ENTRY_DONE;
    if (e->place_step == SLOT__PLACE_DEFER || e->req.op == SLOT_OP_PLACEMENT || e->req.op == SLOT_OP_MOVE_EVENT) {
        run_placed(s, e);
        return;
    }
    if (e->req.op == SLOT_OP_HELLO) {
        /* The role this hello granted (set by slot__authorize when the line
         * was parsed), not the connection's role now: hellos pipelined behind
         * it may have changed that. Without tokens every connection is admin. */
        if (res->role == SLOT_ROLE_NONE)
            res->role = e->conn->role;
        res->cluster = s->clu != NULL;        /* "features" adds "cluster" (docs/protocol.md, "hello") */
        res->http = s->http.listener != NULL; /* and "http" with --http */
        res->placement = s->clu && s->opts.placement; /* and "placement" with --placement */
        res->version = SLOT_VERSION;          /* static text; proto writes it as "version" */
        return;
    }
    if (e->req.op == SLOT_OP_STATS) {
        res->stats = malloc(sizeof(*res->stats));
        if (res->stats)
            stats_fill(s, res->stats);
        else
            slot_res_error(res, SLOT_E_INTERNAL, "out of memory");
        return;
    }
    if (e->req.op == SLOT_OP_METRICS) {
        if (!slot__pipe_fresh(s)) { /* it reads the store's snapshot: one with every answered write */
            e->state = ENTRY_READ_WAIT;
            s->reads_waiting = true;
            return;
        }
        res->text = slot__metrics_text(s, &res->text_len); /* proto writes it as one JSON string */
        if (!res->text)
            slot_res_error(res, SLOT_E_INTERNAL, "out of memory");
        return;
    }
    if (e->req.op == SLOT_OP_BACKUP) {
        if (!slot__pipe_fresh(s)) { /* the copy must hold every write answered so far */
            e->state = ENTRY_READ_WAIT;
            s->reads_waiting = true;
            return;
        }
        slot__backup_start(s, e);
        return;
    }
    if (e->req.op == SLOT_OP_CLUSTER && s->clu) {
        res->cluster_view = s->clu_up->cluster_view(s);
        if (!res->cluster_view)
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
    slot__read_gate gate = rc == 0 && s->clu    ? s->clu_up->read_gate(s, s->rtxn, res)
                           : rc == 0 && s->pipe ? slot__pipe_read_gate(s, s->rtxn)
                                                : SLOT__READ_GO;
    if (gate == SLOT__READ_GO && rc == 0 && s->clu && s->pipe && s->pipe->active)
        gate = slot__pipe_read_gate(s, s->rtxn); /* a pipelined primary's LMDB may lag what it answered */
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
        slot__log(SLOT__LOG_ERROR, "read transaction failed; answered internal",
                  SLOT__LF_S("op", slot_op_name(e->req.op)), SLOT__LF_S("error", mdb_strerror(rc)));
        slot_res_clear(res);
        slot_res_error(res, SLOT_E_INTERNAL, "storage error");
    }
    slot__count_result(s, e);
}
