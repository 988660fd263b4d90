/*
 * cluster.c — the replica-set layer's start and stop, its hooks table for
 * the server, the commit thread's jobs, its etcd side (the node key under a
 * lease, polls and the watch of the configuration, the node keys) and the
 * channel's callbacks that are not the data path's (docs/design.md,
 * "Replica sets"). The roles and the CAS are in cluster_role.c;
 * cluster_int.h has the map.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "placement.h"
#include "server/commit.h"
#include "server/loop.h"
#include "slot/assert.h"

clu_node *slot__clu_node(clu *c, const char *id, bool add)
{
    SLOT_ASSERT(c->nnodes <= SLOT_CLUSTER_MEMBERS_MAX);
    for (size_t i = 0; i < c->nnodes; i++)
        if (strcmp(c->nodes[i].id, id) == 0)
            return &c->nodes[i];
    if (!add || c->nnodes == SLOT_CLUSTER_MEMBERS_MAX)
        return NULL;
    clu_node *n = &c->nodes[c->nnodes++];
    memset(n, 0, sizeof(*n));
    snprintf(n->id, sizeof(n->id), "%s", id);
    return n;
}

bool slot__clu_is_member(const clu_config *cfg, const char *id)
{
    for (size_t i = 0; i < cfg->nmembers; i++)
        if (strcmp(cfg->members[i], id) == 0)
            return true;
    return false;
}

void slot__clu_log_last(clu *c, uint64_t *tenure, uint64_t *seq)
{
    pthread_mutex_lock(&c->rlog_mu);
    slot_rlog_last(c->rlog, tenure, seq);
    pthread_mutex_unlock(&c->rlog_mu);
}

uint64_t slot__clu_epoch_of(clu *c, uint64_t seq)
{
    uint64_t e = 0;
    pthread_mutex_lock(&c->rlog_mu);
    if (slot_rlog_epoch_of(c->rlog, seq, &e) != 0)
        e = 0;
    pthread_mutex_unlock(&c->rlog_mu);
    return e;
}

/* ---- the commit thread's jobs */

static void job_run(server *s)
{
    clu *c = s->clu;
    SLOT_ASSERT(c->job != CLU_JOB_NONE); /* slot__clu_job_start set it before the hand-over */
    c->job_rc = c->job == CLU_JOB_PROMOTE ? slot__clu_job_promote(c)
                : c->job == CLU_JOB_SNAP  ? slot__clu_job_snap(c)
                                          : slot__clu_job_apply(c);
}

static void job_done(server *s)
{
    clu *c = s->clu;
    clu_job job = c->job;
    SLOT_ASSERT(job != CLU_JOB_NONE);
    c->job = CLU_JOB_NONE;
    if (c->job_rc != 0)
        SLOT__CLU_LOG(c, SLOT__LOG_ERROR, "a commit-thread job failed",
                      SLOT__LF_S("job", job == CLU_JOB_PROMOTE ? "promote"
                                        : job == CLU_JOB_SNAP  ? "snapshot_install"
                                                               : "apply"),
                      SLOT__LF_S("error", slot_strerror(c->job_rc)));
    else
        c->applied = c->job_applied;
    if (c->job_rc == 0 && c->job_rebuild)
        c->rebuild = false;
    if (job == CLU_JOB_PROMOTE)
        c->promote_wanted = false;
    if (c->stopping)
        return;
    if (job == CLU_JOB_PROMOTE)
        slot__clu_promote_done(c);
    else if (job == CLU_JOB_SNAP)
        slot__clu_snap_done(c);
    slot__clu_apply_kick(c);
    slot__reads_resume(s);
}

void slot__clu_job_start(clu *c, clu_job job)
{
    SLOT_ASSERT(job == CLU_JOB_APPLY || job == CLU_JOB_PROMOTE || job == CLU_JOB_SNAP);
    /* a primary's only job is its promote; a replica's never is */
    SLOT_ASSERT((job == CLU_JOB_PROMOTE) == (c->role == CLU_PROMOTING));
    if (c->job != CLU_JOB_NONE || c->stopping)
        return;
    c->job = job;
    c->job_rebuild = c->rebuild;
    if (!slot__job_dispatch(c->s))
        c->job = CLU_JOB_NONE;
}

/* The calls the server makes into this layer (server_int.h): one table for
 * the process's life, pointed to by s->clu_up while s->clu is set. */
static const slot__cluster_hooks clu_hooks = {
    .write_gate = slot__clu_write_gate,
    .batch_record = slot__clu_batch_record,
    .batch_unrecord = slot__clu_batch_unrecord,
    .batch_hold = slot__clu_batch_hold,
    .pipe_moved = slot__clu_pipe_moved,
    .read_gate = slot__clu_read_gate,
    .job_run = job_run,
    .job_done = job_done,
    .cluster_view = slot__clu_cluster_view,
    .metrics = slot__clu_metrics_get,
    .change = slot__clu_change,
    .write_pause = slot__clu_write_pause,
    .is_primary = slot__clu_is_primary,
    .primary_http = slot__clu_primary_http,
};

/* The same, with the placement's steps (--placement; placement.c). */
static const slot__cluster_hooks clu_hooks_place = {
    .write_gate = slot__clu_write_gate,
    .batch_record = slot__clu_batch_record,
    .batch_unrecord = slot__clu_batch_unrecord,
    .batch_hold = slot__clu_batch_hold,
    .pipe_moved = slot__clu_pipe_moved,
    .read_gate = slot__clu_read_gate,
    .job_run = job_run,
    .job_done = job_done,
    .cluster_view = slot__clu_cluster_view,
    .metrics = slot__clu_metrics_get,
    .change = slot__clu_change,
    .write_pause = slot__clu_write_pause,
    .is_primary = slot__clu_is_primary,
    .primary_http = slot__clu_primary_http,
    .place_admit = slot__place_admit,
    .place_auth = slot__place_auth,
    .place_run = slot__place_run,
    .place_answered = slot__place_answered,
};

/* ---- etcd: the lease and our node key */

static void on_node_put(slot_etcd *e, int status, const slot_etcd_write_result *r, void *data)
{
    (void)e, (void)r;
    clu *c = data;
    c->node_put_busy = false;
    if (status == SLOT_ETCD_ENOTFOUND)
        c->lease = 0; /* the lease expired (etcd was away, or we were paused): a new one */
}

void slot__clu_node_put(clu *c)
{
    if (c->stopping || !c->lease || c->node_put_busy)
        return;
    char v[512];
    size_t n = slot__clu_node_json(c, v, sizeof(v));
    if (n && slot_etcd_put(c->etcd, c->key_node, v, n, c->lease, on_node_put, c) == 0) {
        c->node_put_busy = true;
        c->node_put_ms = uv_now(c->s->loop);
    }
}

static void on_lease(slot_etcd *e, int status, const slot_etcd_lease_result *r, void *data)
{
    (void)e;
    clu *c = data;
    c->lease_busy = false;
    if (status != 0 || c->stopping)
        return;
    if (!c->lease && r->id > 0) {
        c->lease = r->id;
        slot__clu_node_put(c);
    } else if (r->ttl_s == 0) {
        c->lease = 0; /* gone: granted anew on the next tick */
    }
}

static void lease_tick(clu *c)
{
    if (c->lease_busy || (c->lease && uv_now(c->s->loop) - c->lease_ms < SLOT_CLUSTER_LEASE_KEEPALIVE_MS))
        return;
    c->lease_ms = uv_now(c->s->loop);
    int rc = c->lease ? slot_etcd_lease_keepalive(c->etcd, c->lease, on_lease, c)
                      : slot_etcd_lease_grant(c->etcd, SLOT_CLUSTER_LEASE_TTL_S, on_lease, c);
    c->lease_busy = rc == 0;
}

/* ---- etcd: polls */

static void on_nodes(slot_etcd *e, int status, const slot_etcd_range_result *r, void *data)
{
    (void)e;
    clu *c = data;
    c->poll_nodes_busy = false;
    if (status != 0 || c->stopping)
        return;
    for (size_t i = 0; i < c->nnodes; i++)
        c->nodes[i].live = false;
    size_t plen = strlen(c->key_node_prefix);
    for (size_t i = 0; i < r->count; i++) {
        const slot_etcd_kv *kv = &r->kvs[i];
        if (kv->key_len <= plen || strcmp(kv->key + plen, c->self) == 0)
            continue;
        clu_node tmp = {0};
        if (slot__clu_node_parse(kv->value, kv->value_len, &tmp) != 0)
            continue;
        clu_node *n = slot__clu_node(c, kv->key + plen, true);
        if (!n)
            continue;
        bool moved = strcmp(n->repl, tmp.repl) != 0;
        memcpy(n->addr, tmp.addr, sizeof(n->addr));
        memcpy(n->repl, tmp.repl, sizeof(n->repl));
        memcpy(n->role, tmp.role, sizeof(n->role));
        memcpy(n->http, tmp.http, sizeof(n->http));
        n->tenure = tmp.tenure;
        n->seq = tmp.seq;
        n->applied = tmp.applied;
        n->live = true;
        if (moved && (n->ready || n->dialing) && (c->role == CLU_PRIMARY || c->role == CLU_PROMOTING))
            slot_repl_disconnect(c->repl, n->id); /* it restarted elsewhere: dial the new address */
    }
}

static void on_config(slot_etcd *e, int status, const slot_etcd_get_result *r, void *data);
static void watch_arm(clu *c);

/* The configuration is polled every tick while it is not watched, and every
 * SLOT_CLUSTER_POLL_WATCHED_MS while it is (the poll stays: a watch can lag
 * behind a silently dead etcd connection, and it re-arms only from the tick). */

static void poll(clu *c)
{
    uint64_t now = uv_now(c->s->loop);
    if (!c->watch)
        watch_arm(c);
    if (!c->poll_cfg_busy && (!c->watch || now - c->poll_cfg_ms >= SLOT_CLUSTER_POLL_WATCHED_MS) &&
        slot_etcd_get(c->etcd, c->key_config, on_config, c) == 0) {
        c->poll_cfg_busy = true;
        c->poll_cfg_ms = now;
    }
    if (!c->poll_nodes_busy &&
        slot_etcd_get_prefix(c->etcd, c->key_node_prefix, SLOT_CLUSTER_MEMBERS_MAX * 4, on_nodes, c) == 0)
        c->poll_nodes_busy = true;
}

static void on_config(slot_etcd *e, int status, const slot_etcd_get_result *r, void *data)
{
    (void)e;
    clu *c = data;
    c->poll_cfg_busy = false;
    if (status != 0 || c->stopping)
        return;
    if (!r->found) {
        /* No configuration yet: found one. Also after a bootstrap CAS that was lost or got
         * no answer (its node then follows nobody, JOINING with no configuration seen). */
        if ((c->role == CLU_INIT || (c->role == CLU_JOINING && !c->cfg.found)) && !c->campaigning)
            slot__clu_bootstrap(c);
        return;
    }
    clu_config cfg = {.mod_rev = r->kv.mod_revision};
    if (slot__clu_config_parse(r->kv.value, r->kv.value_len, &cfg) != 0) {
        char value[256]; /* the value is not NUL-ended; its start is enough to tell what it is */
        snprintf(value, sizeof(value), "%.*s", (int)r->kv.value_len, r->kv.value);
        SLOT__CLU_LOG(c, SLOT__LOG_ERROR, "the configuration key holds something else", SLOT__LF_S("value", value));
        return;
    }
    slot__clu_config_seen(c, &cfg);
}

/* ---- the configuration's watch: a change is seen within a round trip of
 *      etcd, not at the next poll (a switchover's target, the members after a
 *      takeover). Events are handled as a poll's answer would be. */

static void on_watch_event(slot_etcd_watch *w, const slot_etcd_event *ev, void *data)
{
    (void)w;
    clu *c = data;
    if (c->stopping || ev->type != SLOT_ETCD_EVENT_PUT)
        return; /* a delete: the next poll decides */
    clu_config cfg = {.mod_rev = ev->kv.mod_revision};
    if (slot__clu_config_parse(ev->kv.value, ev->kv.value_len, &cfg) != 0)
        return; /* on_config logs it at the next poll */
    slot__clu_config_seen(c, &cfg);
}

static void on_watch_end(slot_etcd_watch *w, int status, int64_t last_rev, void *data)
{
    (void)w;
    clu *c = data;
    c->watch = NULL;
    /* Re-armed from the tick (at most once per tick while etcd is away), from
     * the next revision; compacted away: from now on (the poll covers the gap). */
    c->watch_rev = status == SLOT_ETCD_ECOMPACTED || last_rev <= 0 ? 0 : last_rev + 1;
}

static void watch_arm(clu *c)
{
    if (c->stopping || c->watch)
        return;
    if (slot_etcd_watch_start(c->etcd, c->key_config, false, c->watch_rev, on_watch_event, on_watch_end, c,
                              &c->watch) != 0)
        c->watch = NULL;
}

static void on_tick(uv_timer_t *t)
{
    clu *c = t->data;
    if (c->stopping)
        return;
    lease_tick(c);
    poll(c);
    if (uv_now(c->s->loop) - c->node_put_ms >= SLOT_CLUSTER_NODE_PUT_MS)
        slot__clu_node_put(c);
    if (c->role == CLU_PRIMARY || c->role == CLU_PROMOTING)
        slot__clu_primary_tick(c);
    else
        slot__clu_failover_tick(c);
    slot__clu_change_step(c);
    slot__clu_snap_tick(c);
    slot__clu_apply_kick(c);
}

/* ---- the channel's callbacks that are not the data path's */

static void on_ready(void *ctx, const slot_repl_peer *peer)
{
    clu *c = ctx;
    if (peer->inbound) {
        c->stream_open = true;
        snprintf(c->stream_from, sizeof(c->stream_from), "%s", peer->node_id);
        return;
    }
    if (c->role != CLU_PRIMARY && c->role != CLU_PROMOTING) {
        clu_node *n = slot__clu_node(c, peer->node_id, false); /* a pre-vote's dial: it is reachable */
        if (n)
            n->reach_ms = uv_now(c->s->loop);
        slot_repl_disconnect(c->repl, peer->node_id);
        return;
    }
    slot__clu_on_ready_primary(c, peer);
}

static void on_close(void *ctx, const slot_repl_close_info *info)
{
    clu *c = ctx;
    /* A pre-vote's dial that the peer refused after the handshake began
     * (not_primary, stale_tenure, busy...) reached a member of this cluster. */
    if (!info->inbound && info->by_peer && c->role != CLU_PRIMARY && c->role != CLU_PROMOTING &&
        info->reason != SLOT_REPL_R_WRONG_CLUSTER && info->reason != SLOT_REPL_R_WRONG_NODE &&
        info->reason != SLOT_REPL_R_BAD_SECRET) {
        clu_node *n = slot__clu_node(c, info->node_id, false);
        if (n)
            n->reach_ms = uv_now(c->s->loop);
    }
    if (info->inbound) {
        if (c->stream_open && strcmp(info->node_id, c->stream_from) == 0) {
            c->stream_open = false;
            slot__clu_snap_stream_end(c);
            slot__clu_stream_reset(c);
        }
        return;
    }
    clu_node *n = slot__clu_node(c, info->node_id, false);
    if (n) {
        slot__clu_snap_drop(c, n);
        n->ready = n->dialing = false;
        if (!slot__clu_is_member(&c->cfg, n->id))
            n->counted = false; /* a joiner that went away is waited for no more */
    }
}

static void on_repl_log(void *ctx, const char *msg)
{
    clu *c = ctx;
    SLOT__CLU_LOG(c, SLOT__LOG_WARN, "replication", SLOT__LF_S("detail", msg)); /* the channel formats its own text */
}

/* The batch log's warnings: from whichever thread uses it under rlog_mu
 * (the loop, the commit thread, the flusher), so no loop fields. */
static void rlog_log(void *ctx, const char *msg)
{
    clu *c = ctx;
    SLOT__CLU_TLOG(c, SLOT__LOG_WARN, "batch log", SLOT__LF_S("detail", msg)); /* the log formats its own text */
}

/* ---- start and stop */

/* Opens DATA/rlog and reads where LMDB is; -1 when the two disagree. */
static int log_open(clu *c)
{
    server *s = c->s;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/rlog", s->opts.data_dir);
    slot_rlog_opts ro = {.segment_bytes = s->opts.log_segment_bytes, .log = rlog_log, .log_ctx = c};
    int rc = slot_rlog_open(dir, &ro, &c->rlog, NULL);
    if (rc == 0)
        rc = slot_rlog_sync(c->rlog); /* what a crash left in the page cache is on disk before we ack it */
    if (rc != 0) {
        SLOT__CLU_LOG(c, SLOT__LOG_ERROR, "cannot open the batch log", SLOT__LF_S("path", dir),
                      SLOT__LF_S("error", slot_strerror(rc)));
        return -1;
    }
    if (slot__clu_snap_recover(c) != 0)
        return -1;
    MDB_txn *txn = NULL;
    rc = mdb_txn_begin(slot_store_env(s->store), NULL, MDB_RDONLY, &txn);
    if (rc == 0)
        rc = slot_store_seq_get(s->store, txn, &c->applied, NULL);
    if (txn)
        mdb_txn_abort(txn);
    uint64_t last_t = 0, last = 0;
    slot_rlog_last(c->rlog, &last_t, &last);
    if (rc != 0 || c->applied > last) {
        SLOT__CLU_LOG(c, SLOT__LOG_ERROR,
                      "the store is ahead of its batch log: this data folder was not made by a member "
                      "of a replica set",
                      SLOT__LF_U("seq", c->applied), SLOT__LF_U("log_seq", last));
        return -1;
    }
    /* What is surely committed: the commit point the last record carried. */
    uint64_t trusted = 0;
    if (last) {
        const uint8_t *rec;
        size_t n;
        slot_wset_rec dec;
        if (slot_rlog_count(c->rlog) == 0)
            trusted = 0; /* an empty log's base is an installed snapshot's seq, which may be beyond the
                          * commit point (a member's snapshot, cluster_snap.c): the stream tells */
        else if (slot_rlog_read(c->rlog, last, &rec, &n) == 0 && slot_wset_decode(rec, n, &dec) == 0)
            trusted = dec.hdr.commit_seq;
    }
    c->commit_seq = trusted;
    c->verified = trusted;
    return 0;
}

static int names_and_addrs(clu *c)
{
    server *s = c->s;
    const slot__server_opts *o = &s->opts;
    snprintf(c->self, sizeof(c->self), "%s", o->node_id);
    if (o->adv_port)
        snprintf(c->adv, sizeof(c->adv), strchr(o->adv_host, ':') ? "[%s]:%u" : "%s:%u", o->adv_host, o->adv_port);
    else {
        struct sockaddr_storage ss;
        int len = sizeof(ss);
        char name[64] = "?";
        uv_tcp_getsockname(&s->listener, (struct sockaddr *)&ss, &len);
        uv_ip_name((struct sockaddr *)&ss, name, sizeof(name));
        unsigned port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                       : ((struct sockaddr_in *)&ss)->sin_port);
        snprintf(c->adv, sizeof(c->adv), ss.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", name, port);
    }
    /* the HTTP address others' 307s name: --advertise's host with the bound port, or the bound address */
    const char *hport = strrchr(s->http.addr, ':');
    if (s->http.addr[0] && o->adv_port && hport)
        snprintf(c->http_addr, sizeof(c->http_addr), strchr(o->adv_host, ':') ? "[%s]%s" : "%s%s", o->adv_host, hport);
    else
        snprintf(c->http_addr, sizeof(c->http_addr), "%s", s->http.addr);
    snprintf(c->key_config, sizeof(c->key_config), "/slotd/%s/config", o->cluster);
    snprintf(c->key_node_prefix, sizeof(c->key_node_prefix), "/slotd/%s/node/", o->cluster);
    snprintf(c->key_node, sizeof(c->key_node), "%s%s", c->key_node_prefix, c->self);
    return 0;
}

static int repl_start(clu *c, const slot_repl_secret *secret)
{
    server *s = c->s;
    const slot__server_opts *o = &s->opts;
    slot_repl_opts ro = {
        .cluster = o->cluster,
        .node_id = c->self,
        .secret = secret->bytes,
        .secret_bytes = secret->len,
        .heartbeat_ms = o->heartbeat_ms,
        .cbs = {.ctx = c,
                .on_ready = on_ready,
                .on_record = slot__clu_on_record,
                .on_commit = slot__clu_on_commit,
                .on_ack = slot__clu_on_ack,
                .on_close = on_close,
                .on_snap = slot__clu_on_snap,
                .log = on_repl_log},
    };
    int rc = slot_repl_new(s->loop, &ro, &c->repl);
    if (rc != 0) {
        SLOT__CLU_LOG(c, SLOT__LOG_ERROR, "cannot set up replication", SLOT__LF_S("error", uv_strerror(rc)));
        return -1;
    }
    const char *host = o->repl_host[0] ? o->repl_host : o->host;
    int port = 0;
    rc = slot_repl_listen(c->repl, host, o->repl_host[0] ? o->repl_port : 0, &port);
    if (rc != 0) {
        SLOT__CLU_LOG(c, SLOT__LOG_ERROR, "--repl-listen: cannot listen", SLOT__LF_S("host", host),
                      SLOT__LF_U("port", o->repl_port), SLOT__LF_S("error", uv_strerror(rc)));
        return -1;
    }
    snprintf(c->repl_addr, sizeof(c->repl_addr), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    slot_repl_set_config(c->repl, 0, 0, "");
    slot__clu_stream_reset(c);
    return 0;
}

int slot__cluster_start(server *s)
{
    const slot__server_opts *o = &s->opts;
    if (!o->cluster)
        return 0;
    clu *c = calloc(1, sizeof(*c));
    if (!c) {
        slot__log(SLOT__LOG_ERROR, "out of memory");
        return -1;
    }
    c->s = s;
    s->clu = c;
    pthread_mutex_init(&c->rlog_mu, NULL);
    c->hb_ms = o->heartbeat_ms;
    c->failover_ms = o->failover_timeout_ms;
    c->repl_to_ms = o->repl_timeout_ms;
    c->min_replicas = o->min_replicas;
    c->keep_records = o->log_keep_records;
    c->snap_fd = c->snap_in_fd = -1;
    names_and_addrs(c);
    slot_repl_secret secret;
    char err[256];
    int rc = slot_repl_secret_load(o->secret_file, &secret, err, sizeof(err));
    if (rc != 0) {
        slot__log(SLOT__LOG_ERROR, err); /* it names the flag and the path; never the secret */
        return -1;
    }
    if (slot_wset_init(&c->wset, 0) != 0 || log_open(c) != 0 || repl_start(c, &secret) != 0) {
        slot_repl_secret_clear(&secret);
        return -1;
    }
    c->place_secret = secret; /* the placement's internal ops are signed with it (placement.c) */
    slot_repl_secret_clear(&secret);
    slot_etcd_opts eo = {.timeout_ms = SLOT_CLUSTER_ETCD_TIMEOUT_MS};
    rc = slot_etcd_new(s->loop, o->etcd, &eo, &c->etcd);
    if (rc != 0) {
        slot__log(SLOT__LOG_ERROR, "--etcd: cannot start the etcd client", SLOT__LF_S("etcd", o->etcd),
                  SLOT__LF_S("error", slot_strerror(rc)));
        return -1;
    }
    s->batch.wset = &c->wset;
    s->clu_up = o->placement ? &clu_hooks_place : &clu_hooks;
    if (s->opts.pipelined && slot__pipe_attach_set(s, c->rlog, &c->rlog_mu) != 0) {
        slot__log(SLOT__LOG_ERROR, "--durability pipelined: out of memory");
        return -1;
    }
    if (slot__place_start(c) != 0)
        return -1;
    uv_timer_init(s->loop, &c->tick);
    c->tick.data = c;
    c->tick_open = true;
    uint32_t every = c->hb_ms < 100 ? c->hb_ms : 100;
    SLOT_ASSERT(every >= 1); /* --heartbeat-ms is at least SLOT_REPL_HEARTBEAT_MS_MIN: a repeating timer */
    uv_timer_start(&c->tick, on_tick, 0, every);
    uv_check_init(s->loop, &c->sync_check);
    c->sync_check.data = c;
    c->check_open = true;
    uv_check_start(&c->sync_check, slot__clu_on_sync_check);
    SLOT__CLU_LOG(c, SLOT__LOG_INFO, "replica set node started", SLOT__LF_S("cluster", o->cluster),
                  SLOT__LF_S("addr", c->adv), SLOT__LF_S("repl", c->repl_addr), SLOT__LF_U("seq", c->verified),
                  SLOT__LF_U("applied", c->applied));
    return 0;
}

void slot__cluster_stop(server *s)
{
    clu *c = s->clu;
    if (!c || c->stopping)
        return;
    if (c->batch_held) {
        c->batch_held = false;
        slot__batch_finish(s, SLOT_E_UNAVAILABLE, "the server is stopping; the outcome is unknown");
    }
    if (s->pipe) { /* pipelined: what is held may never commit; the open state is not committed */
        slot__pipe_fail_held(s, SLOT_E_UNAVAILABLE, "the server is stopping; the outcome is unknown");
        slot__pipe_drop(s);
    }
    c->stopping = true;
    slot__clu_snap_stop(c);
    slot__place_stop(c);
    if (c->tick_open)
        uv_close((uv_handle_t *)&c->tick, NULL);
    if (c->check_open)
        uv_close((uv_handle_t *)&c->sync_check, NULL);
    c->tick_open = c->check_open = false;
    slot_repl_free(c->repl);
    c->repl = NULL;
    slot_etcd_close(c->etcd);
    c->etcd = NULL;
}

void slot__cluster_free(server *s)
{
    clu *c = s->clu;
    if (!c)
        return;
    if (c->rlog) {
        slot_rlog_sync(c->rlog);
        slot_rlog_close(c->rlog);
    }
    slot_wset_free(&c->wset);
    slot__place_free(c);
    slot_repl_secret_clear(&c->place_secret);
    pthread_mutex_destroy(&c->rlog_mu);
    s->batch.wset = NULL;
    s->clu = NULL;
    free(c);
}
