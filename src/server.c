/*
 * server.c — slotd's network side and group commit (DESIGN.md, "Data flows
 * one way" and "Threads").
 *
 *   loop thread:   accept, read, frame lines, parse (proto), queue writes,
 *                  answer read-only ops from an LMDB read transaction,
 *                  encode replies in request order, write.
 *   commit thread: takes the batch the loop collected in one turn, runs it
 *                  in ONE write transaction (alloc), commits (one fsync), and
 *                  wakes the loop (uv_async). While it commits batch N the
 *                  loop collects batch N+1: that is group commit.
 *
 * A reply that says held/confirmed/released is encoded only after the commit
 * of its batch returned (invariant 6), because write entries become DONE only
 * in batch_complete(), which runs after mdb_txn_commit.
 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>
#include <uv.h>

#include "slot/alloc.h"
#include "slot/assert.h"
#include "slot/failpoint.h"
#include "slot/hist.h"
#include "slot/proto.h"
#include "slot/store.h"
#include "slot_config.h"

#define READ_BUF_BYTES (64u << 10)      /* one shared read buffer: the loop reads one socket at a time */
#define SHUTDOWN_FLUSH_MS 5000          /* on stop, how long slow clients get to take their replies */
#define TOKENS_MAX 64                   /* lines in --token-file */
#define LISTEN_BACKLOG 1024
#define ENTRIES_MAX (256u << 10)       /* requests alive at once (~1.3 KiB each): reading pauses above */
#define DRAIN_MS 2000                   /* how long a closing connection's unread input is discarded */

/* ---- entries: one request from arrival to reply */

typedef enum entry_state {
    ENTRY_QUEUED,    /* a write op waiting for, or in, a batch */
    ENTRY_READ_WAIT, /* a read op waiting for the earlier entries of its connection */
    ENTRY_DONE,      /* res is the answer; encode when it reaches the head */
} entry_state;

typedef struct conn conn;

typedef struct entry {
    struct entry *next;  /* the connection's FIFO, or the free list */
    struct entry *qnext; /* the write queue */
    conn *conn;          /* NULL: the sweeper's, or its connection went away */
    entry_state state;
    bool parsed;         /* false: an error for a line that is not a request (no id unless parsed) */
    bool sweep;
    uint64_t t0_ns;
    slot_req req;
    slot_res res;
} entry;

/* ---- connections */

/* open -> draining (replies written, FIN sent, unread input discarded until
 * EOF or DRAIN_MS) -> closing. Closing a socket whose input was not read
 * sends RST, and the peer's kernel may then drop replies it had received. */
typedef enum conn_state { CONN_OPEN, CONN_DRAINING, CONN_CLOSING } conn_state;

struct conn {
    uv_tcp_t tcp;
    struct server *srv;
    conn *prev, *next;        /* all connections */
    conn *dirty_next;         /* has entries that became DONE this batch */
    bool dirty;
    conn_state state;
    bool reading;             /* uv_read_start in effect */
    bool close_after_flush;   /* line_too_long, unauthenticated */
    bool writing;             /* a uv_write is in flight */
    uint64_t drain_deadline_ms;
    uint64_t last_read_ms;    /* loop time (uv_now) of the last bytes read */
    uint64_t partial_since_ms; /* when the unfinished line started */
    uint64_t write_since_ms;  /* when the uv_write in flight started */
    uv_shutdown_t sreq;
    slot_role role;
    entry *head, *tail;
    uint32_t pending;         /* entries in the FIFO */
    char *partial;            /* bytes of a line not ended yet */
    size_t partial_len, partial_cap;
    char *out;                /* replies being collected */
    size_t out_len, out_cap;
    char *wbuf;               /* replies being written */
    size_t wbuf_cap;
    uv_write_t wreq;
};

typedef struct token {
    slot_role role;
    size_t len;
    char value[SLOT_TOKEN_BYTES_MAX + 1];
} token;

typedef struct server {
    slot__server_opts opts;
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_signal_t sigint, sigterm;
    uv_check_t check;
    uv_async_t async;
    uv_timer_t sweep_timer, stop_timer;
    slot_store *store;
    slot_alloc read_alloc, write_alloc;
    MDB_txn *rtxn;                 /* the loop's read transaction, reset between uses */
    bool rtxn_live;                /* rtxn is renewed: between read_begin and read_end */
    pthread_rwlock_t map_lock;     /* read: a read txn is active; write: the map grows */

    uint64_t entries_live;         /* entries taken from the pool and not yet back */
    bool mem_paused;               /* some connection stopped reading at ENTRIES_MAX */
    entry *q_head, *q_tail;        /* write queue (loop thread) */
    uint32_t q_len;
    entry *free_entries;
    conn *conns;
    conn *dirty;
    uint32_t nconns;
    bool stopping, listener_open, sweep_pending, loop_done;
    bool accept_paused;            /* a connection waits in libuv until one closes */
    int lock_fd;                   /* flock on DATA/slotd.lock; -1 before data_lock */
    uint64_t stop_deadline_ms;

    /* batch hand-off; fields below are shared with the commit thread under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool thread_started;
    entry *batch[SLOT_BATCH_REQUESTS_MAX];
    size_t batch_n;
    bool batch_busy;               /* loop: a batch is with the commit thread */
    bool batch_ready, batch_done, thread_stop;
    uint64_t batch_run_ns;         /* commit thread: time of the last run (alloc + commit) */
    uint64_t batch_sync_ns;        /* commit thread: of that, in mdb_txn_commit (writes + fsync) */
    uint64_t batch_failures;       /* commit thread: failed attempts of the last run */

    token tokens[TOKENS_MAX];
    size_t ntokens;

    /* counters (loop thread) */
    uint64_t conns_total, requests[SLOT_OP__COUNT], bad_lines, holds, sold_out, errors;
    uint64_t reads_paused, accepts_paused, conns_timed_out;
    uint64_t commits, commit_failures, batches_retried;
    uint64_t commit_busy_ns, commit_sync_ns; /* sums of batch_run_ns, batch_sync_ns */
    slot_hist *latency_us, *batch_sizes;
    char read_buf[READ_BUF_BYTES];
} server;

static void conn_flush(conn *c);
static void conn_close(conn *c);
static void conn_drain(conn *c);
static void conn_pace(conn *c);
static bool accept_one(struct server *s);
static void dispatch(server *s);

static void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void log_msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("slotd: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- entry pool: entries are reused, never freed while the server runs */

static entry *entry_get(server *s)
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

static void entry_put(server *s, entry *e)
{
    slot_res_clear(&e->res);
    s->entries_live--;
    e->next = s->free_entries;
    s->free_entries = e;
}

/* ---- the commit thread */

/* Answers every request of the batch with the same error; nothing was committed. */
static void batch_fail(server *s, slot_err err, const char *why)
{
    for (size_t i = 0; i < s->batch_n; i++) {
        slot_res_clear(&s->batch[i]->res);
        slot_res_error(&s->batch[i]->res, err, "%s", why);
    }
}

/*
 * Runs the batch in one write transaction and commits it. MDB_MAP_FULL —
 * from a put or from the commit — aborts, grows the map (with the loop's
 * readers held off) and retries the whole batch, until --map-size-max;
 * then every request gets storage_full. Any other LMDB error: internal.
 * Either way nothing of a failed batch is kept.
 */
static void batch_run(server *s)
{
    MDB_env *env = slot_store_env(s->store);
    for (int attempt = 0; attempt < 64; attempt++) {
        uint64_t now = now_ms();
        MDB_txn *txn = NULL;
        int rc = mdb_txn_begin(env, NULL, 0, &txn);
        for (size_t i = 0; rc == 0 && i < s->batch_n; i++) {
            entry *e = s->batch[i];
            slot_res_clear(&e->res);
            if (e->sweep)
                rc = slot_alloc_expire_due(&s->write_alloc, txn, now, SLOT_SWEEP_BATCH_MAX, &e->res.expired);
            else
                rc = slot_alloc_run(&s->write_alloc, txn, &e->req, now, &e->res);
        }
        if (rc == 0 && SLOT_FAIL(BEFORE_COMMIT))
            rc = EIO;
        if (rc == 0 && SLOT_FAIL(COMMIT_FAIL)) {
            mdb_txn_abort(txn); /* as a commit that failed: the txn is gone, nothing kept */
            txn = NULL;
            rc = EIO;
        }
        if (rc == 0) {
            uint64_t t0 = uv_hrtime();
            rc = mdb_txn_commit(txn); /* frees txn, also when it fails */
            s->batch_sync_ns += uv_hrtime() - t0;
        } else if (txn)
            mdb_txn_abort(txn);
        if (rc != 0)
            s->batch_failures++;
        if (rc == 0)
            return;
        if (rc == MDB_MAP_FULL) {
            pthread_rwlock_wrlock(&s->map_lock);
            int g = slot_store_grow(s->store);
            pthread_rwlock_unlock(&s->map_lock);
            if (g == 0) {
                log_msg("map full: grew the map to %" PRIu64 " bytes, retrying the batch of %zu",
                        slot_store_map_size(s->store), s->batch_n);
                continue;
            }
            log_msg("map full at --map-size-max %" PRIu64 " bytes: %zu requests answered storage_full",
                    s->opts.map_size_max, s->batch_n);
            batch_fail(s, SLOT_E_STORAGE_FULL, "the database is full (--map-size-max); nothing was changed");
            return;
        }
        log_msg("write transaction failed: %s; %zu requests answered internal", mdb_strerror(rc), s->batch_n);
        batch_fail(s, SLOT_E_INTERNAL, "storage error; nothing was changed");
        return;
    }
    batch_fail(s, SLOT_E_STORAGE_FULL, "the database could not grow; nothing was changed");
}

static void *commit_thread(void *arg)
{
    server *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->batch_ready && !s->thread_stop)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->batch_ready)
            break;
        s->batch_ready = false;
        pthread_mutex_unlock(&s->mu);
        uint64_t t0 = uv_hrtime();
        s->batch_failures = 0;
        s->batch_sync_ns = 0;
        batch_run(s);
        pthread_mutex_lock(&s->mu);
        s->batch_run_ns = uv_hrtime() - t0;
        s->batch_done = true;
        uv_async_send(&s->async);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Hands the queued write requests (at most SLOT_BATCH_REQUESTS_MAX) to the
 * commit thread when it is idle. Called at the end of every loop turn and
 * when a batch completes, so a batch is whatever arrived meanwhile. */
static void dispatch(server *s)
{
    if (s->batch_busy || s->q_len == 0)
        return;
    size_t n = 0;
    while (s->q_head && n < SLOT_BATCH_REQUESTS_MAX) {
        entry *e = s->q_head;
        s->q_head = e->qnext;
        e->qnext = NULL;
        s->batch[n++] = e;
    }
    if (!s->q_head)
        s->q_tail = NULL;
    s->q_len -= (uint32_t)n;
    s->batch_busy = true;
    pthread_mutex_lock(&s->mu);
    s->batch_n = n;
    s->batch_ready = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Appends a write request to the queue the next batch is taken from. */
static void queue_push(server *s, entry *e)
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

static void count_result(server *s, const entry *e)
{
    if (e->res.err != SLOT_E_OK)
        s->errors++;
    else if (e->req.op == SLOT_OP_HOLD && e->res.sold_out)
        s->sold_out++;
    else if (e->req.op == SLOT_OP_HOLD && !e->res.replay)
        s->holds++;
}

static void sweep_enqueue(server *s);

/* The loop's side of a finished batch: results become answers (the commit has
 * returned), the next batch goes, connections with new answers are flushed. */
static void batch_complete(uv_async_t *h)
{
    server *s = h->data;
    pthread_mutex_lock(&s->mu);
    bool done = s->batch_done;
    s->batch_done = false;
    uint64_t failures = s->batch_failures;
    if (done) { /* a wake-up without a finished batch must not count the last one again */
        s->commit_busy_ns += s->batch_run_ns;
        s->commit_sync_ns += s->batch_sync_ns;
    }
    pthread_mutex_unlock(&s->mu);
    if (!done)
        return;
    bool sweep_again = false;
    for (size_t i = 0; i < s->batch_n; i++) {
        entry *e = s->batch[i];
        if (e->sweep) {
            s->sweep_pending = false;
            sweep_again = e->res.err == SLOT_E_OK && e->res.expired >= SLOT_SWEEP_BATCH_MAX;
            entry_put(s, e);
            continue;
        }
        if (!e->conn) { /* its connection closed meanwhile; what committed stays committed */
            entry_put(s, e);
            continue;
        }
        e->state = ENTRY_DONE;
        count_result(s, e);
        if (!e->conn->dirty) {
            e->conn->dirty = true;
            e->conn->dirty_next = s->dirty;
            s->dirty = e->conn;
        }
    }
    s->commit_failures += failures;
    s->commits++;
    slot_hist_record(s->batch_sizes, s->batch_n);
    s->batch_n = 0;
    s->batch_busy = false;
    if (sweep_again && !s->stopping)
        sweep_enqueue(s);
    /* The next batch goes before the answers are written, so the commit
     * thread works while this thread does the write syscalls. */
    dispatch(s);
    while (s->dirty) {
        conn *c = s->dirty;
        s->dirty = c->dirty_next;
        c->dirty = false;
        conn_flush(c);
    }
}

/* End of every loop turn: hand the collected requests to the commit thread;
 * and when reading paused for lack of entries, resume once half are back. */
static void on_check(uv_check_t *h)
{
    server *s = h->data;
    dispatch(s);
    if (s->mem_paused && s->entries_live < ENTRIES_MAX / 2) {
        s->mem_paused = false;
        for (conn *c = s->conns; c; c = c->next)
            conn_pace(c);
    }
}

/* ---- the sweeper: a loop timer that queues "expire due holds" work */

/* The loop thread's read transaction (s->rtxn, reused): read_begin holds off
 * map growth and renews it (0 or an LMDB error); read_end resets it, if the
 * renew worked, and lets growth go on. Every read_begin has its read_end. */
static int read_begin(server *s)
{
    pthread_rwlock_rdlock(&s->map_lock);
    int rc = s->rtxn ? mdb_txn_renew(s->rtxn) : mdb_txn_begin(slot_store_env(s->store), NULL, MDB_RDONLY, &s->rtxn);
    s->rtxn_live = rc == 0;
    return rc;
}

static void read_end(server *s)
{
    if (s->rtxn_live)
        mdb_txn_reset(s->rtxn);
    s->rtxn_live = false;
    pthread_rwlock_unlock(&s->map_lock);
}

static void sweep_enqueue(server *s)
{
    if (s->sweep_pending)
        return;
    entry *e = entry_get(s);
    if (!e)
        return;
    e->sweep = true;
    queue_push(s, e);
    s->sweep_pending = true;
}

static void conns_reap(server *s);

/* Whether any held hold has expired by now, from a read transaction: an idle
 * server then runs no write transaction at all. On a storage error: true
 * (the sweep's own transaction reports it). */
static bool sweep_due(server *s)
{
    uint64_t first = 0;
    int rc = read_begin(s);
    if (rc == 0)
        rc = slot_store_expiry_first(s->store, s->rtxn, &first);
    read_end(s);
    if (rc == MDB_NOTFOUND)
        return false;
    return rc != 0 || first <= now_ms();
}

static void on_sweep_timer(uv_timer_t *t)
{
    server *s = t->data;
    if (!s->sweep_pending && sweep_due(s))
        sweep_enqueue(s);
    conns_reap(s);
}

/* ---- read-only ops, on the loop thread */

static char *stats_json(server *s)
{
    json_t *req = json_object();
    for (int op = 0; op < SLOT_OP__COUNT; op++)
        json_object_set_new(req, slot_op_name((slot_op)op), json_integer((json_int_t)s->requests[op]));
    const slot_hist *l = s->latency_us, *b = s->batch_sizes;
    json_t *o = json_pack(
        "{s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I,"
        " s:{s:I, s:f, s:I, s:I, s:I},"
        " s:{s:I, s:I, s:I, s:I, s:I},"
        " s:I, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:I}",
        "connections", (json_int_t)s->nconns, "connections_total", (json_int_t)s->conns_total, "requests", req,
        "bad_lines", (json_int_t)s->bad_lines, "holds", (json_int_t)s->holds, "sold_out", (json_int_t)s->sold_out,
        "errors", (json_int_t)s->errors, "commits", (json_int_t)s->commits, "commit_failures",
        (json_int_t)s->commit_failures, "batch_size", "count", (json_int_t)b->count, "mean", slot_hist_mean(b), "p50",
        (json_int_t)slot_hist_percentile(b, 50), "p99", (json_int_t)slot_hist_percentile(b, 99), "max",
        (json_int_t)slot_hist_percentile(b, 100), "latency_us", "count", (json_int_t)l->count, "p50",
        (json_int_t)slot_hist_percentile(l, 50), "p99", (json_int_t)slot_hist_percentile(l, 99), "p999",
        (json_int_t)slot_hist_percentile(l, 99.9), "max", (json_int_t)slot_hist_percentile(l, 100), "queue",
        (json_int_t)s->q_len, "db_bytes", (json_int_t)slot_store_used_bytes(s->store), "map_bytes",
        (json_int_t)slot_store_map_size(s->store), "durability", s->opts.nosync ? "nosync" : "sync",
        "reads_paused", (json_int_t)s->reads_paused, "accepts_paused", (json_int_t)s->accepts_paused,
        "connections_timed_out", (json_int_t)s->conns_timed_out, "commit_busy_us",
        (json_int_t)(s->commit_busy_ns / 1000u), "commit_sync_us", (json_int_t)(s->commit_sync_ns / 1000u));
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* Runs a read-only op now: every earlier entry of its connection is answered,
 * so the read sees every write acknowledged before it (PROTOCOL.md). */
static void run_read(server *s, entry *e)
{
    slot_res *res = &e->res;
    e->state = ENTRY_DONE;
    if (e->req.op == SLOT_OP_HELLO) {
        res->role = e->conn->role;
        json_t *o = json_pack("{s:s}", "version", SLOT_VERSION);
        res->extra = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        return;
    }
    if (e->req.op == SLOT_OP_STATS) {
        res->extra = stats_json(s);
        if (!res->extra)
            slot_res_error(res, SLOT_E_INTERNAL, "out of memory");
        return;
    }
    int rc = read_begin(s);
    if (rc == 0)
        rc = slot_alloc_run(&s->read_alloc, s->rtxn, &e->req, now_ms(), res);
    read_end(s);
    if (rc != 0) {
        log_msg("read transaction for %s failed: %s", slot_op_name(e->req.op), mdb_strerror(rc));
        slot_res_clear(res);
        slot_res_error(res, SLOT_E_INTERNAL, "storage error");
    }
    count_result(s, e);
}

/* ---- tokens and roles */

/* Constant-time comparison: the time taken does not depend on where the
 * first difference is, only on the lengths. */
static bool token_equal(const char *a, size_t alen, const char *b, size_t blen)
{
    unsigned char diff = (unsigned char)(alen != blen);
    size_t n = alen < blen ? alen : blen;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

static slot_role token_role(server *s, const slot_req *req)
{
    slot_role role = SLOT_ROLE_NONE;
    for (size_t i = 0; i < s->ntokens; i++)
        if (token_equal(s->tokens[i].value, s->tokens[i].len, req->token, req->token_len))
            role = s->tokens[i].role;
    return role;
}

/* Decides what a parsed request may do on this connection. Returns false
 * when e was answered with an error here. */
static bool authorize(server *s, conn *c, entry *e)
{
    if (s->ntokens == 0)
        return true; /* development mode: loopback only, every connection admin */
    if (e->req.op == SLOT_OP_HELLO) {
        slot_role role = (e->req.has & SLOT_HAS_TOKEN) ? token_role(s, &e->req) : SLOT_ROLE_NONE;
        if (role == SLOT_ROLE_NONE) {
            char peer[64] = "?";
            struct sockaddr_storage ss;
            int len = sizeof(ss);
            if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0)
                uv_ip_name((struct sockaddr *)&ss, peer, sizeof(peer));
            log_msg("failed hello from %s (token not shown)", peer);
            c->role = SLOT_ROLE_NONE;
            slot_res_error(&e->res, SLOT_E_UNAUTHENTICATED, "invalid token");
            c->close_after_flush = true;
            return false;
        }
        c->role = role;
        return true;
    }
    if (c->role == SLOT_ROLE_NONE) {
        slot_res_error(&e->res, SLOT_E_UNAUTHENTICATED, "send hello with a valid token first");
        c->close_after_flush = true;
        return false;
    }
    if (slot_op_admin(e->req.op) && c->role != SLOT_ROLE_ADMIN) {
        slot_res_error(&e->res, SLOT_E_FORBIDDEN, "op %s needs role admin", slot_op_name(e->req.op));
        return false;
    }
    return true;
}

/* ---- request intake */

static void conn_push(conn *c, entry *e)
{
    e->conn = c;
    e->next = NULL;
    if (c->tail)
        c->tail->next = e;
    else
        c->head = e;
    c->tail = e;
    c->pending++;
}

/* Decides where a line goes: an answer now (errors), the write queue, or a
 * read that runs once the connection's earlier entries are answered. */
static void handle_line(server *s, conn *c, const char *line, size_t len)
{
    entry *e = entry_get(s);
    if (!e) {
        log_msg("out of memory for a request; closing the connection");
        conn_close(c);
        return;
    }
    e->t0_ns = uv_hrtime();
    conn_push(c, e);
    e->state = ENTRY_DONE;
    char msg[sizeof(e->res.message)];
    slot_err err = slot_proto_parse(line, len, &e->req, msg, sizeof(msg));
    if (err != SLOT_E_OK) {
        s->bad_lines++;
        s->errors++;
        if (s->ntokens && c->role == SLOT_ROLE_NONE) {
            slot_res_error(&e->res, SLOT_E_UNAUTHENTICATED, "send hello with a valid token first");
            c->close_after_flush = true;
            return;
        }
        slot_res_error(&e->res, err, "%s", msg);
        return;
    }
    e->parsed = true;
    s->requests[e->req.op]++;
    if (!authorize(s, c, e)) {
        s->errors++;
        return;
    }
    if (!slot_op_writes(e->req.op)) {
        e->state = ENTRY_READ_WAIT;
        return;
    }
    if (s->stopping) {
        slot_res_error(&e->res, SLOT_E_SHUTTING_DOWN, NULL);
        s->errors++;
        return;
    }
    if (s->q_len >= s->opts.queue_max) {
        slot_res_error(&e->res, SLOT_E_OVERLOADED, "server queue holds %u requests; retry later", s->q_len);
        s->errors++;
        return;
    }
    queue_push(s, e);
}

/* line_too_long: answered, then the connection closes (PROTOCOL.md). */
static void line_too_long(server *s, conn *c)
{
    entry *e = entry_get(s);
    c->partial_len = 0;
    c->close_after_flush = true;
    if (c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
    if (!e) {
        conn_close(c);
        return;
    }
    e->t0_ns = uv_hrtime();
    conn_push(c, e);
    e->state = ENTRY_DONE;
    s->bad_lines++;
    s->errors++;
    slot_res_error(&e->res, SLOT_E_LINE_TOO_LONG, "line longer than %u bytes", s->opts.max_line);
}

static bool partial_append(conn *c, const char *data, size_t n)
{
    if (c->partial_len + n > c->partial_cap) {
        size_t cap = c->partial_cap ? c->partial_cap : 1024;
        while (cap < c->partial_len + n)
            cap *= 2;
        char *p = realloc(c->partial, cap);
        if (!p)
            return false;
        c->partial = p;
        c->partial_cap = cap;
    }
    memcpy(c->partial + c->partial_len, data, n);
    c->partial_len += n;
    return true;
}

/* Splits what was read into lines. Complete lines are parsed straight from
 * the read buffer; only an unfinished tail is copied, bounded by --max-line.
 * The bytes that count against --max-line are the line's without its \r\n;
 * a trailing \r without its \n yet may be the first half of that ending. */
static void conn_feed(server *s, conn *c, const char *data, size_t n)
{
    size_t max = s->opts.max_line;
    while (n > 0 && !c->close_after_flush && c->state == CONN_OPEN) {
        const char *nl = memchr(data, '\n', n);
        size_t seg = nl ? (size_t)(nl - data) : n;
        size_t total = c->partial_len + seg;
        char last = seg ? data[seg - 1] : (c->partial_len ? c->partial[c->partial_len - 1] : 0);
        if (total - (last == '\r' ? 1 : 0) > max) {
            line_too_long(s, c);
            return;
        }
        if (!nl) {
            if (c->partial_len == 0)
                c->partial_since_ms = uv_now(s->loop);
            if (!partial_append(c, data, seg))
                conn_close(c);
            return;
        }
        const char *line = data;
        size_t len = seg;
        if (c->partial_len) {
            if (!partial_append(c, data, seg)) {
                conn_close(c);
                return;
            }
            line = c->partial;
            len = c->partial_len;
        }
        if (len > 0 && line[len - 1] == '\r')
            len--;
        if (len > 0)
            handle_line(s, c, line, len);
        c->partial_len = 0;
        data = nl + 1;
        n -= seg + 1;
    }
}

/* ---- replies */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    conn *c = h->data;
    buf->base = c->srv->read_buf;
    buf->len = sizeof(c->srv->read_buf);
}

static bool out_reserve(conn *c, size_t need)
{
    if (c->out_len + need <= c->out_cap)
        return true;
    size_t cap = c->out_cap ? c->out_cap : 4096;
    while (cap < c->out_len + need)
        cap *= 2;
    char *p = realloc(c->out, cap);
    if (!p)
        return false;
    c->out = p;
    c->out_cap = cap;
    return true;
}

/* Encodes one answer at the end of the output buffer. */
static bool out_encode(conn *c, const entry *e)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        char *dst = c->out ? c->out + c->out_len : NULL; /* no arithmetic on a NULL buffer */
        size_t room = c->out_cap - c->out_len;
        size_t n = e->parsed ? slot_proto_encode(&e->req, &e->res, dst, room)
                             : slot_proto_encode_error(&e->req.id, e->res.err, e->res.message[0] ? e->res.message : NULL,
                                                       dst, room);
        if (n < room) {
            c->out_len += n;
            return true;
        }
        if (!out_reserve(c, n + 1))
            return false;
    }
    return false;
}

static void on_write(uv_write_t *req, int status);

/* Writes what is collected: directly when the socket takes it all, else
 * through one uv_write with the buffers swapped so collecting goes on. */
static void conn_write(conn *c)
{
    if (c->writing || c->out_len == 0 || c->state != CONN_OPEN)
        return;
    uv_buf_t b = uv_buf_init(c->out, (unsigned)c->out_len);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (n == (int)c->out_len) {
        c->out_len = 0;
        return;
    }
    if (n < 0 && n != UV_EAGAIN) {
        conn_close(c);
        return;
    }
    size_t done = n > 0 ? (size_t)n : 0;
    size_t rest = c->out_len - done;
    char *w = c->wbuf;
    size_t wcap = c->wbuf_cap;
    c->wbuf = c->out;
    c->wbuf_cap = c->out_cap;
    c->out = w;
    c->out_cap = wcap;
    c->out_len = 0;
    memmove(c->wbuf, c->wbuf + done, rest);
    b = uv_buf_init(c->wbuf, (unsigned)rest);
    c->writing = true;
    c->write_since_ms = uv_now(c->srv->loop);
    c->wreq.data = c;
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
        c->writing = false;
        conn_close(c);
    }
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

/* Reading pauses while a connection has too many unanswered requests or
 * too many unsent reply bytes (PROTOCOL.md: slowed, never refused). */
static void conn_pace(conn *c)
{
    server *s = c->srv;
    if (c->state != CONN_OPEN || c->close_after_flush || s->stopping)
        return;
    bool starved = s->entries_live >= ENTRIES_MAX;
    bool full = starved || c->pending >= s->opts.conn_inflight_max || c->out_len > s->opts.out_bytes_max;
    s->mem_paused = s->mem_paused || (starved && c->reading);
    if (full && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
        s->reads_paused++;
    } else if (!full && !c->reading && c->pending <= s->opts.conn_inflight_max / 2) {
        if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
            c->reading = true;
    }
}

static void on_write(uv_write_t *req, int status)
{
    conn *c = req->data;
    c->writing = false;
    if (status < 0) {
        conn_close(c);
        return;
    }
    conn_flush(c);
}

/* Answers the connection's entries in request order, as far as they are
 * answered: a read runs when it reaches the head, a queued write stops it. */
static void conn_flush(conn *c)
{
    server *s = c->srv;
    uint64_t now = uv_hrtime();
    while (c->head && c->state == CONN_OPEN) {
        entry *e = c->head;
        if (e->state == ENTRY_READ_WAIT)
            run_read(s, e);
        if (e->state != ENTRY_DONE)
            break;
        if (!out_encode(c, e)) {
            log_msg("out of memory for a reply; closing the connection");
            conn_close(c);
            return;
        }
        slot_hist_record(s->latency_us, (now - e->t0_ns) / 1000u);
        c->head = e->next;
        if (!c->head)
            c->tail = NULL;
        c->pending--;
        entry_put(s, e);
    }
    if (c->state != CONN_OPEN)
        return;
    conn_write(c);
    if (c->close_after_flush && !c->head && c->out_len == 0) {
        conn_drain(c);
        return;
    }
    conn_pace(c);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    conn *c = stream->data;
    if (nread < 0) {
        conn_close(c); /* EOF or reset: what was committed stays committed */
        return;
    }
    if (c->state != CONN_OPEN)
        return; /* draining: input after the last answer is discarded */
    c->last_read_ms = uv_now(c->srv->loop);
    if (nread == 0)
        return;
    conn_feed(c->srv, c, buf->base, (size_t)nread);
    if (c->state == CONN_OPEN)
        conn_flush(c);
}

/* ---- connection lifetime */

static void on_conn_closed(uv_handle_t *h)
{
    conn *c = h->data;
    server *s = c->srv;
    /* Entries still queued for a batch outlive the connection: they commit,
     * and batch_complete() drops their answers. */
    for (entry *e = c->head, *next; e; e = next) {
        next = e->next;
        if (e->state == ENTRY_QUEUED)
            e->conn = NULL;
        else
            entry_put(s, e);
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    if (s->accept_paused && s->listener_open && s->nconns < s->opts.conns_max) {
        s->accept_paused = false;
        accept_one(s); /* also makes libuv poll the listener again */
    }
    free(c->partial);
    free(c->out);
    free(c->wbuf);
    free(c);
}

static void conn_close(conn *c)
{
    if (c->state == CONN_CLOSING)
        return;
    c->state = CONN_CLOSING;
    if (c->dirty) { /* drop it from the dirty list: it must not be flushed after close */
        conn **p = &c->srv->dirty;
        while (*p && *p != c)
            p = &(*p)->dirty_next;
        if (*p)
            *p = c->dirty_next;
        c->dirty = false;
    }
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    conn *c = req->data;
    if (c->state != CONN_DRAINING)
        return;
    if (status < 0 || uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0)
        conn_close(c);
    else
        c->reading = true;
}

/* Ends a connection politely: the replies queued are written, then FIN;
 * what the peer still sends is read and dropped until its EOF, or until
 * DRAIN_MS have passed (conns_reap). */
static void conn_drain(conn *c)
{
    if (c->state != CONN_OPEN)
        return;
    c->state = CONN_DRAINING;
    if (c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
    c->drain_deadline_ms = uv_now(c->srv->loop) + DRAIN_MS;
    c->sreq.data = c;
    if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) != 0)
        conn_close(c);
}

/* Why a connection should be dropped now, or NULL. Every bound here is a
 * flag; times are loop times (uv_now, monotonic ms). */
static const char *conn_overdue(server *s, conn *c, uint64_t now)
{
    const slot__server_opts *o = &s->opts;
    if (c->state == CONN_DRAINING)
        return now >= c->drain_deadline_ms ? "did not close after its last answer" : NULL;
    if (c->state != CONN_OPEN)
        return NULL;
    if (c->writing && now - c->write_since_ms >= o->write_timeout_ms)
        return "took none of its replies within --write-timeout-ms";
    if (c->partial_len > 0 && now - c->partial_since_ms >= o->line_timeout_ms)
        return "left a line unfinished past --line-timeout-ms";
    if (o->idle_timeout_ms && !c->head && !c->writing && c->out_len == 0 && c->partial_len == 0 &&
        now - c->last_read_ms >= o->idle_timeout_ms)
        return "was idle past --idle-timeout-ms";
    return NULL;
}

/* Closes the connections that passed one of their time bounds. O(connections);
 * runs on the sweeper's timer and while stopping. */
static void conns_reap(server *s)
{
    uint64_t now = uv_now(s->loop);
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        const char *why = conn_overdue(s, c, now);
        if (!why)
            continue;
        if (c->state == CONN_OPEN) {
            s->conns_timed_out++;
            log_msg("closing a connection that %s", why);
        }
        conn_close(c);
    }
}

static void on_unaccepted_closed(uv_handle_t *h)
{
    free(h->data);
}

/* Takes the connection libuv has waiting. Returns false when it could not. */
static bool accept_one(server *s)
{
    conn *c = calloc(1, sizeof(*c));
    if (!c) {
        log_msg("accept: out of memory for a connection");
        return false;
    }
    c->srv = s;
    c->role = s->ntokens ? SLOT_ROLE_NONE : SLOT_ROLE_ADMIN;
    c->last_read_ms = uv_now(s->loop);
    uv_tcp_init(s->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, on_unaccepted_closed);
        return false;
    }
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    s->conns_total++;
    uv_tcp_nodelay(&c->tcp, 1);
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
        c->reading = true;
    else
        conn_close(c);
    return true;
}

/*
 * At --max-connections, the new connection is left in libuv: while one is
 * waiting un-accepted, libuv stops polling the listener, so accepting pauses
 * without spinning, and on_conn_closed resumes it. When descriptors run out
 * (EMFILE) libuv sheds the connection itself (its reserve-fd trick) and
 * reports the error here; the server goes on.
 */
static void on_connection(uv_stream_t *listener, int status)
{
    server *s = listener->data;
    if (status < 0) {
        log_msg("accept: %s", uv_strerror(status));
        return;
    }
    if (s->nconns >= s->opts.conns_max) {
        if (!s->accept_paused)
            log_msg("connection limit %u reached: accepting paused", s->opts.conns_max);
        s->accept_paused = true;
        s->accepts_paused++;
        return;
    }
    accept_one(s);
}

/* ---- stopping */

static void close_handle(uv_handle_t *h, void *arg)
{
    server *s = arg;
    if (uv_is_closing(h))
        return;
    if (h->type == UV_SIGNAL && !s->loop_done) {
        /* Stay registered (a second SIGTERM while stopping changes nothing)
         * but let uv_run return; server_free closes them with signals blocked. */
        uv_unref(h);
        return;
    }
    if (h->type == UV_TCP && h != (uv_handle_t *)&s->listener) {
        conn_close(h->data);
        return;
    }
    uv_close(h, NULL);
}

/* Every 10 ms while stopping: once the batch in flight has committed,
 * connections with every answer written are drained; when none is left (or
 * SHUTDOWN_FLUSH_MS passed) everything is closed and uv_run returns. */
static void on_stop_timer(uv_timer_t *t)
{
    server *s = t->data;
    if (s->batch_busy)
        return; /* never close the loop under the commit thread */
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->state == CONN_OPEN && !c->head && c->out_len == 0)
            conn_drain(c);
    }
    conns_reap(s);
    if (s->conns && now_ms() < s->stop_deadline_ms)
        return;
    uv_walk(s->loop, close_handle, s);
}

/* SIGINT/SIGTERM: stop accepting and reading, answer what is queued (and not
 * yet in a batch) with shutting_down, let the batch in flight finish. */
static void begin_stop(server *s)
{
    if (s->stopping)
        return;
    s->stopping = true;
    log_msg("stopping: %u connections, %u queued requests", s->nconns, s->q_len);
    if (s->listener_open) {
        uv_close((uv_handle_t *)&s->listener, NULL);
        s->listener_open = false;
    }
    uv_timer_stop(&s->sweep_timer);
    for (entry *e = s->q_head, *next; e; e = next) {
        next = e->qnext;
        e->qnext = NULL;
        if (e->sweep || !e->conn) {
            entry_put(s, e);
            continue;
        }
        slot_res_error(&e->res, SLOT_E_SHUTTING_DOWN, NULL);
        e->state = ENTRY_DONE;
    }
    s->q_head = s->q_tail = NULL;
    s->q_len = 0;
    s->sweep_pending = false;
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->reading) {
            uv_read_stop((uv_stream_t *)&c->tcp);
            c->reading = false;
        }
        conn_flush(c);
    }
    s->stop_deadline_ms = now_ms() + SHUTDOWN_FLUSH_MS;
    uv_timer_start(&s->stop_timer, on_stop_timer, 0, 10);
}

static void on_signal(uv_signal_t *h, int signum)
{
    (void)signum;
    begin_stop(h->data);
}

/* ---- start */

/* Reads --token-file: lines "ROLE TOKEN" (frontend or admin), # comments.
 * The file must not be readable or writable by group or others. */
static int tokens_load(server *s, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        log_msg("--token-file %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || (st.st_mode & 077) != 0) {
        log_msg("--token-file %s: readable by group or others (mode %03o); chmod 600 it", path,
                (unsigned)(st.st_mode & 0777));
        fclose(f);
        return -1;
    }
    char line[SLOT_TOKEN_BYTES_MAX + 64];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        char role[32], value[SLOT_TOKEN_BYTES_MAX + 2];
        char *p = line + strspn(line, " \t");
        if (*p == '#' || *p == '\n' || *p == 0)
            continue;
        if (sscanf(p, "%31s %257s", role, value) != 2 || strlen(value) > SLOT_TOKEN_BYTES_MAX ||
            (strcmp(role, "frontend") != 0 && strcmp(role, "admin") != 0) || s->ntokens == TOKENS_MAX) {
            log_msg("--token-file %s:%d: want \"frontend TOKEN\" or \"admin TOKEN\" (token 1..%d bytes, at most %d lines)",
                    path, lineno, SLOT_TOKEN_BYTES_MAX, TOKENS_MAX);
            rc = -1;
            break;
        }
        token *t = &s->tokens[s->ntokens++];
        t->role = strcmp(role, "admin") == 0 ? SLOT_ROLE_ADMIN : SLOT_ROLE_FRONTEND;
        t->len = strlen(value);
        memcpy(t->value, value, t->len + 1);
    }
    fclose(f);
    if (rc == 0 && s->ntokens == 0) {
        log_msg("--token-file %s: no tokens in it", path);
        rc = -1;
    }
    return rc;
}

static bool is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        static const unsigned char lo[16] = {[15] = 1};
        return memcmp(a, lo, 16) == 0;
    }
    return false;
}

static int listen_start(server *s)
{
    struct sockaddr_storage ss;
    int rc = uv_ip4_addr(s->opts.host, s->opts.port, (struct sockaddr_in *)&ss);
    if (rc != 0)
        rc = uv_ip6_addr(s->opts.host, s->opts.port, (struct sockaddr_in6 *)&ss);
    if (rc != 0) {
        log_msg("--listen %s:%u: not a numeric IPv4 or IPv6 address", s->opts.host, s->opts.port);
        return -1;
    }
    if (!is_loopback((struct sockaddr *)&ss) && s->ntokens == 0 && !s->opts.insecure) {
        log_msg("refusing to listen on non-loopback %s without --token-file (or pass --insecure)", s->opts.host);
        return -1;
    }
    uv_tcp_init(s->loop, &s->listener);
    s->listener.data = s;
    s->listener_open = true;
    rc = uv_tcp_bind(&s->listener, (struct sockaddr *)&ss, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&s->listener, LISTEN_BACKLOG, on_connection);
    if (rc != 0) {
        log_msg("listen on %s:%u: %s", s->opts.host, s->opts.port, uv_strerror(rc));
        return -1;
    }
    return 0;
}

/* The first line on stdout, once the server is ready: tests and scripts wait for it. */
static void listen_announce(server *s)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    char name[64] = "?";
    uv_tcp_getsockname(&s->listener, (struct sockaddr *)&ss, &len);
    uv_ip_name((struct sockaddr *)&ss, name, sizeof(name));
    unsigned port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
    printf(ss.ss_family == AF_INET6 ? "listening on [%s]:%u\n" : "listening on %s:%u\n", name, port);
    fflush(stdout);
}

/*
 * One slotd per data folder: LMDB would let two processes share the files,
 * but the idempotency index lives in the writer's memory (src/idem.h), so a
 * second writer would grant a second hold for a replayed key. An flock on
 * DIR/slotd.lock (released by the kernel when the process dies, kill -9
 * included) keeps the second one out.
 */
static int data_lock(server *s)
{
    const char *dir = s->opts.data_dir;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        log_msg("--data %s: mkdir: %s", dir, strerror(errno));
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/slotd.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        log_msg("--data %s: %s: %s", dir, path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
        pid[n > 0 ? n : 0] = 0;
        pid[strcspn(pid, "\n")] = 0;
        log_msg("--data %s is in use by another slotd (pid %s)", dir, pid[0] ? pid : "?");
        close(fd);
        return -1;
    }
    char line[32];
    int len = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)len, 0) != len)
        log_msg("--data %s: could not write the pid to %s: %s", dir, path, strerror(errno));
    s->lock_fd = fd; /* held until exit */
    return 0;
}

/* Opens the store (in a folder this process has locked) and builds the
 * writer's idempotency index now, so restart time includes it. */
static int store_start(server *s)
{
    char err[256];
    if (data_lock(s) != 0)
        return -1;
    slot_store_opts so = {.dir = s->opts.data_dir, .nosync = s->opts.nosync, .map_size_max = s->opts.map_size_max};
    int rc = slot_store_open(&so, &s->store, err, sizeof(err));
    if (rc != 0) {
        log_msg("cannot open the store in %s: %s", s->opts.data_dir, err);
        return -1;
    }
    if (slot_alloc_init(&s->read_alloc, s->store) != 0 || slot_alloc_init(&s->write_alloc, s->store) != 0) {
        log_msg("getrandom: %s", strerror(errno));
        return -1;
    }
    MDB_txn *txn = NULL;
    rc = mdb_txn_begin(slot_store_env(s->store), NULL, MDB_RDONLY, &txn);
    if (rc == 0)
        rc = slot_alloc_load(&s->write_alloc, txn);
    if (txn)
        mdb_txn_abort(txn);
    if (rc != 0) {
        log_msg("cannot read the holds in %s: %s", s->opts.data_dir, mdb_strerror(rc));
        return -1;
    }
    return 0;
}

/* Starts every handle and the commit thread. The listening socket is bound
 * first (a taken port fails before anything is written), and announced last. */
static int server_start(server *s)
{
#ifdef SLOT_FAILPOINTS
    char err[256];
    if (slot_failpoints_parse(getenv("SLOT_FAILPOINTS"), err, sizeof(err)) != 0) {
        log_msg("%s", err);
        return -1;
    }
#endif
    if (s->opts.token_file && tokens_load(s, s->opts.token_file) != 0)
        return -1;
    s->loop = uv_default_loop();
    s->loop->data = s;
    if (listen_start(s) != 0 || store_start(s) != 0)
        return -1;
    uv_async_init(s->loop, &s->async, batch_complete);
    s->async.data = s;
    uv_check_init(s->loop, &s->check);
    s->check.data = s;
    uv_check_start(&s->check, on_check);
    uv_timer_init(s->loop, &s->sweep_timer);
    s->sweep_timer.data = s;
    uv_timer_start(&s->sweep_timer, on_sweep_timer, s->opts.sweep_interval_ms, s->opts.sweep_interval_ms);
    uv_timer_init(s->loop, &s->stop_timer);
    s->stop_timer.data = s;
    uv_signal_init(s->loop, &s->sigint);
    uv_signal_init(s->loop, &s->sigterm);
    s->sigint.data = s->sigterm.data = s;
    uv_signal_start(&s->sigint, on_signal, SIGINT);
    uv_signal_start(&s->sigterm, on_signal, SIGTERM);
    if (pthread_create(&s->thread, NULL, commit_thread, s) != 0) {
        log_msg("pthread_create: %s", strerror(errno));
        return -1;
    }
    s->thread_started = true;
    listen_announce(s);
    return 0;
}

static void server_free(server *s)
{
    if (s->thread_started) {
        pthread_mutex_lock(&s->mu);
        s->thread_stop = true;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
    }
    if (s->loop) {
        sigset_t stop_signals;
        sigemptyset(&stop_signals);
        sigaddset(&stop_signals, SIGINT);
        sigaddset(&stop_signals, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &stop_signals, NULL); /* closing the handles would restore SIG_DFL */
        s->loop_done = true;
        uv_walk(s->loop, close_handle, s);
        uv_run(s->loop, UV_RUN_DEFAULT);
        uv_loop_close(s->loop);
    }
    if (s->rtxn)
        mdb_txn_abort(s->rtxn);
    slot_alloc_close(&s->read_alloc);
    slot_alloc_close(&s->write_alloc);
    while (s->free_entries) {
        entry *e = s->free_entries;
        s->free_entries = e->next;
        free(e);
    }
    slot_store_close(s->store);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    pthread_rwlock_destroy(&s->map_lock);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->latency_us);
    free(s->batch_sizes);
    free(s);
}

int slot__server_run(const slot__server_opts *opts)
{
    signal(SIGPIPE, SIG_IGN); /* a peer that went away is an error return, not a signal */
    server *s = calloc(1, sizeof(*s));
    if (!s) {
        log_msg("out of memory");
        return 1;
    }
    s->opts = *opts;
    s->lock_fd = -1;
    pthread_rwlock_init(&s->map_lock, NULL);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->latency_us = malloc(sizeof(slot_hist));
    s->batch_sizes = malloc(sizeof(slot_hist));
    if (!s->latency_us || !s->batch_sizes) {
        log_msg("out of memory");
        server_free(s);
        return 1;
    }
    slot_hist_reset(s->latency_us);
    slot_hist_reset(s->batch_sizes);
    int status = 0;
    if (server_start(s) == 0) {
        uv_run(s->loop, UV_RUN_DEFAULT);
        log_msg("stopped after %" PRIu64 " commits", s->commits);
    } else {
        status = 1;
    }
    server_free(s);
    return status;
}
