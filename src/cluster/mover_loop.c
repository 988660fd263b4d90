/*
 * mover_loop.c — the loop side of the mover (mover.h): one mover thread at
 * a time, started for a move_event entry or by the recovery timer; the
 * thread's result comes back through a uv_async_t and the entry, waiting
 * READ_WAIT at its connection's head, is answered from it. Loop thread
 * only, except mover_main (the thread's body). docs/design.md, "The mover".
 *
 * A job's hand-over: the loop fills it, then only the thread touches it
 * until the thread sets its state to DONE and signals the async; then only
 * the loop. When the server stops while a thread runs, the loop marks the
 * job ABANDONED and detaches the thread, which frees the job itself when it
 * ends (nothing of the server's is touched by it; the move it ran is left
 * to recovery, which every step allows).
 */
#include "mover.h"

#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mover_move.h"
#include "server/loop.h"
#include "slot/assert.h"

enum { JOB_RUNNING = 0, JOB_DONE = 1, JOB_ABANDONED = 2 };

struct slot__mover {
    clu *c;
    uv_async_t async;
    uv_timer_t recover;
    bool open;
    uv_thread_t th;
    bool thread_live; /* started and not joined */
    mv_job *job;      /* the thread's job (running, or done and not yet collected) */
    atomic_int job_state;
    uint64_t tag; /* the move_event entry's place_tag (0: a recovery pass) */
    uint64_t tags;
    uint64_t done_ms;        /* loop time the job came back */
    bool check_done;         /* the next recovery pass looks for relinquished records too */
    uint64_t tenure_seen;    /* the tenure whose first pass ran */
    slot_repl_secret secret; /* the cluster secret (c->place_secret), copied into each job */
};

static void job_free(mv_job *j)
{
    if (!j)
        return;
    free(j->fields);
    free(j->endpoints);
    slot_repl_secret_clear(&j->secret);
    free(j);
}

static void mover_main(void *arg)
{
    slot__mover *m = arg;
    mv_job *j = m->job;
    mv_ctx x;
    int rc = mv_ctx_open(&x, j);
    if (rc != 0) {
        mv_fail(j, SLOT_E_UNAVAILABLE, "the mover's etcd client could not start (%s)", slot_etcd_err_name(rc));
    } else {
        if (j->mode == MV_MOVE)
            mv_run_move(&x);
        else
            mv_run_resolve(&x);
        mv_ctx_close(&x);
    }
    int was = atomic_exchange(&m->job_state, JOB_DONE);
    if (was == JOB_ABANDONED) { /* the server stopped: nobody collects it */
        job_free(j);
        return;
    }
    uv_async_send(&m->async);
}

/* This server's client port as the mover reaches it: the bound address,
 * the loopback one for a wildcard. */
static void self_addr(server *s, char *host, size_t n, uint16_t *port)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    memset(&ss, 0, sizeof ss);
    uv_tcp_getsockname(&s->listener, (struct sockaddr *)&ss, &len);
    bool v6 = ss.ss_family == AF_INET6;
    uv_ip_name((struct sockaddr *)&ss, host, n);
    *port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
    if (strcmp(host, "0.0.0.0") == 0)
        snprintf(host, n, "127.0.0.1");
    else if (strcmp(host, "::") == 0)
        snprintf(host, n, "::1");
}

/* A job with this node's inputs; NULL when out of memory. */
static mv_job *job_new(slot__mover *m, int mode)
{
    clu *c = m->c;
    server *s = c->s;
    mv_job *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->mode = mode;
    j->endpoints = strdup(s->opts.etcd);
    if (!j->endpoints) {
        free(j);
        return NULL;
    }
    snprintf(j->set, sizeof j->set, "%s", s->opts.cluster);
    snprintf(j->node, sizeof j->node, "%s", c->self);
    snprintf(j->prefix, sizeof j->prefix, "/slotd/placement/%s/", s->opts.placement);
    self_addr(s, j->self_host, sizeof j->self_host, &j->self_port);
    j->secret = m->secret;
    return j;
}

static int job_start(slot__mover *m, mv_job *j, uint64_t tag)
{
    SLOT_ASSERT(!m->job && !m->thread_live);
    m->job = j;
    m->tag = tag;
    atomic_store(&m->job_state, JOB_RUNNING);
    if (uv_thread_create(&m->th, mover_main, m) != 0) {
        m->job = NULL;
        return -1;
    }
    m->thread_live = true;
    return 0;
}

/* The job is back: the thread is joined; a recovery pass's outcome is kept
 * in the state, a move's waits for its entry. */
static void on_async(uv_async_t *a)
{
    slot__mover *m = a->data;
    if (!m->thread_live || atomic_load(&m->job_state) != JOB_DONE)
        return;
    uv_thread_join(&m->th);
    m->thread_live = false;
    m->done_ms = uv_now(m->c->s->loop);
    mv_job *j = m->job;
    if (j->want_check)
        m->check_done = true;
    if (j->mode == MV_RESOLVE) {
        if (j->resolved)
            SLOT__CLU_LOG(m->c, SLOT__LOG_INFO, "recovery resolved moves a dead mover left",
                          SLOT__LF_U("moves", j->resolved));
        job_free(j);
        m->job = NULL;
        return;
    }
    slot__reads_resume(m->c->s); /* the move_event entry collects it */
}

static void on_recover(uv_timer_t *t)
{
    slot__mover *m = t->data;
    clu *c = m->c;
    if (m->job && !m->thread_live && m->tag &&
        uv_now(c->s->loop) - m->done_ms > SLOT_PLACE_STEP_KEEP_MS) { /* its entry went away */
        job_free(m->job);
        m->job = NULL;
    }
    if (m->job || c->stopping || !c->etcd || c->role != CLU_PRIMARY)
        return;
    if (m->tenure_seen != c->tenure) { /* a new primary looks at every moved event once */
        m->tenure_seen = c->tenure;
        m->check_done = true;
    }
    mv_job *j = job_new(m, MV_RESOLVE);
    if (!j)
        return;
    j->check_done = m->check_done;
    m->check_done = false;
    if (job_start(m, j, 0) != 0) {
        m->check_done = j->check_done;
        job_free(j);
    }
}

int slot__mover_start(clu *c)
{
    slot__mover *m = calloc(1, sizeof(*m));
    if (!m) {
        slot__log(SLOT__LOG_ERROR, "out of memory");
        return -1;
    }
    m->secret = c->place_secret; /* each job gets a copy: the thread never reads c */
    m->c = c;
    uv_async_init(c->s->loop, &m->async, on_async);
    m->async.data = m;
    uv_timer_init(c->s->loop, &m->recover);
    m->recover.data = m;
    uv_timer_start(&m->recover, on_recover, SLOT_PLACE_RECOVER_MS, SLOT_PLACE_RECOVER_MS);
    m->open = true;
    c->mover = m;
    return 0;
}

void slot__mover_stop(clu *c)
{
    slot__mover *m = c->mover;
    if (!m || !m->open)
        return;
    if (m->thread_live) {
        if (atomic_exchange(&m->job_state, JOB_ABANDONED) == JOB_DONE) {
            uv_thread_join(&m->th); /* it ended: its async signal is all it had left */
            job_free(m->job);
        } else {
            pthread_detach(m->th); /* it frees the job when it ends (uv_thread_t is a pthread_t) */
        }
        m->job = NULL;
        m->thread_live = false;
    }
    uv_close((uv_handle_t *)&m->async, NULL);
    uv_close((uv_handle_t *)&m->recover, NULL);
    m->open = false;
}

void slot__mover_free(clu *c)
{
    slot__mover *m = c->mover;
    if (!m)
        return;
    job_free(m->job);
    slot_repl_secret_clear(&m->secret);
    free(m);
    c->mover = NULL;
}

/* ---- the move_event entry */

/* move_event's "to" (proto_place.c parses it into req.place->set); NULL when absent. */
static const char *move_target(const entry *e)
{
    const slot_place_args *p = e->req.place;
    return p && p->set_len ? p->set : NULL;
}

static slot__place_state collect(slot__mover *m, entry *e)
{
    mv_job *j = m->job;
    if (j->err != SLOT_E_OK)
        slot_res_error(&e->res, j->err, "%s", j->msg);
    if (j->err == SLOT_E_MOVING && !j->fields) {
        char f[64];
        int n = snprintf(f, sizeof f, ",\"retry_after_ms\":%" PRIu64, j->retry_after_ms);
        j->fields = strdup(f);
        j->fields_len = j->fields ? (size_t)n : 0;
    }
    e->res.fields = j->fields;
    e->res.fields_len = j->fields_len;
    j->fields = NULL;
    job_free(j);
    m->job = NULL;
    m->tag = 0;
    return SLOT__PLACE_ANSWERED;
}

static void moving_now(entry *e, const char *why)
{
    slot_res_error(&e->res, SLOT_E_MOVING, "%s; retry", why);
    char f[64];
    int n = snprintf(f, sizeof f, ",\"retry_after_ms\":%u", (unsigned)SLOT_PLACE_BUSY_RETRY_MS);
    e->res.fields = strdup(f);
    e->res.fields_len = e->res.fields ? (size_t)n : 0;
}

slot__place_state slot__mover_run(server *s, entry *e)
{
    slot__mover *m = s->clu ? s->clu->mover : NULL;
    if (!m) {
        slot_res_error(&e->res, SLOT_E_INVALID_ARGUMENT, "this server is not a member of a placement (--placement)");
        return SLOT__PLACE_ANSWERED;
    }
    if (e->place_tag) {
        if (!m->open) { /* stopped while its thread ran: the thread was let go */
            slot_res_error(&e->res, SLOT_E_UNAVAILABLE,
                           "the server is stopping; the move is finished or undone by recovery when it is back");
            return SLOT__PLACE_ANSWERED;
        }
        if (!m->job || m->tag != e->place_tag) {
            slot_res_error(&e->res, SLOT_E_INTERNAL, "the move's state was lost");
            return SLOT__PLACE_ANSWERED;
        }
        if (m->thread_live || atomic_load(&m->job_state) != JOB_DONE)
            return SLOT__PLACE_RUNNING;
        return collect(m, e);
    }
    const char *to = move_target(e);
    if (!to || !to[0]) {
        slot_res_error(&e->res, SLOT_E_INVALID_ARGUMENT, "move_event needs \"to\": the replica set to move to");
        return SLOT__PLACE_ANSWERED;
    }
    if (strcmp(to, s->opts.cluster) == 0) {
        slot_res_error(&e->res, SLOT_E_INVALID_ARGUMENT, "event %s: %s is this replica set (the move's source)",
                       e->req.event, to);
        return SLOT__PLACE_ANSWERED;
    }
    if (slot__clu_write_gate(s, &e->res)) /* not_primary (with its address), or unavailable */
        return SLOT__PLACE_ANSWERED;
    if (m->job) {
        moving_now(e,
                   m->job->mode == MV_MOVE ? "another move runs on this set" : "recovery of a move runs on this set");
        return SLOT__PLACE_ANSWERED;
    }
    mv_job *j = job_new(m, MV_MOVE);
    if (!j) {
        slot_res_error(&e->res, SLOT_E_INTERNAL, "out of memory");
        return SLOT__PLACE_ANSWERED;
    }
    snprintf(j->event, sizeof j->event, "%s", e->req.event);
    snprintf(j->to, sizeof j->to, "%s", to);
    uint64_t tag = ++m->tags | (1ull << 63); /* apart from placement.c's step tags */
    if (job_start(m, j, tag) != 0) {
        job_free(j);
        slot_res_error(&e->res, SLOT_E_INTERNAL, "the mover thread could not start");
        return SLOT__PLACE_ANSWERED;
    }
    e->place_tag = tag;
    return SLOT__PLACE_RUNNING;
}
