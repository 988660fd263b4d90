/*
 * server.c — slotd's start and stop (server.h): the listening socket,
 * signals, the data folder's lock, the store, running the loop, and the
 * orderly stop. The work itself is in conn.c, auth.c, loop.c, commit.c and
 * http.c (server_int.h has the map).
 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "commit.h"
#include "conn.h"
#include "feed_sub.h"
#include "http.h"
#include "loop.h"
#include "server_int.h"
#include "slot/failpoint.h"
#include "slot_config.h"

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
        slot__conn_close(h->data);
        return;
    }
    uv_close(h, NULL);
}

/* Every SLOT_STOP_POLL_MS while stopping: once the batch in flight has committed,
 * connections with every answer written are drained; when none is left (or
 * SLOT_SHUTDOWN_FLUSH_MS passed) everything is closed and uv_run returns. */
static void on_stop_timer(uv_timer_t *t)
{
    server *s = t->data;
    if (s->batch.busy || (s->pipe && s->pipe->held_n > 0))
        return; /* never close the loop under the commit thread, nor with answers waiting for the log */
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->state == CONN_OPEN && !c->head && c->out_len == 0)
            slot__conn_drain(c);
    }
    slot__conns_reap(s);
    if ((s->conns || slot__http_busy(s)) && slot__wall_ms() < s->stop_deadline_ms)
        return;
    slot__pipe_quiesce(s);
    uv_walk(s->loop, close_handle, s);
}

/* SIGINT/SIGTERM: stop accepting and reading, answer what is queued (and not
 * yet in a batch) with shutting_down, let the batch in flight finish. */
static void begin_stop(server *s)
{
    if (s->stopping)
        return;
    s->stopping = true;
    if (s->hooks.stopping)
        s->hooks.stopping();
    slot__log(SLOT__LOG_INFO, "stopping", SLOT__LF_U("connections", s->nconns), SLOT__LF_U("queued", s->queue.len));
    if (s->hooks.cluster_stop)
        s->hooks.cluster_stop(s);
    if (s->listener_open) {
        uv_close((uv_handle_t *)&s->listener, NULL);
        s->listener_open = false;
    }
    slot__http_quiesce(s);
    uv_timer_stop(&s->sweep_timer);
    uv_timer_stop(&s->room_timer);
    slot__park_requeue(s); /* writes waiting for a cold event's keys are answered alike */
    for (entry *e = s->queue.head, *next; e; e = next) {
        next = e->qnext;
        e->qnext = NULL;
        if (e->sweep || e->cold_step || !e->conn) {
            slot__entry_put(s, e);
            continue;
        }
        slot_res_error(&e->res, SLOT_E_SHUTTING_DOWN, NULL);
        e->state = ENTRY_DONE;
    }
    s->queue.head = s->queue.tail = NULL;
    s->queue.len = 0;
    s->sweep_pending = false;
    s->park.step_pending = false;
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->reading) {
            uv_read_stop((uv_stream_t *)&c->tcp);
            c->reading = false;
        }
        slot__conn_flush(c);
    }
    for (conn *c = s->http.conns, *next; c; c = next) {
        next = c->next;
        slot__http_flush(c);
    }
    s->stop_deadline_ms = slot__wall_ms() + SLOT_SHUTDOWN_FLUSH_MS;
    uv_timer_start(&s->stop_timer, on_stop_timer, 0, SLOT_STOP_POLL_MS);
}

static void on_signal(uv_signal_t *h, int signum)
{
    (void)signum;
    begin_stop(h->data);
}

/* host:port of flag into ss (slotd.c has refused a non-loopback address
 * without tokens or --insecure: a usage error). */
static int addr_parse(const char *flag, const char *host, uint16_t port, struct sockaddr_storage *ss)
{
    int rc = uv_ip4_addr(host, port, (struct sockaddr_in *)ss);
    if (rc != 0)
        rc = uv_ip6_addr(host, port, (struct sockaddr_in6 *)ss);
    if (rc != 0) {
        slot__log(SLOT__LOG_ERROR, "not a numeric IPv4 or IPv6 address", SLOT__LF_S("flag", flag),
                  SLOT__LF_S("host", host), SLOT__LF_U("port", port));
        return -1;
    }
    return 0;
}

/* --http: libmicrohttpd on the loop (http.c). */
static int http_start(server *s)
{
    struct sockaddr_storage ss;
    if (!s->opts.http)
        return 0;
    if (addr_parse("--http", s->opts.http_host, s->opts.http_port, &ss) != 0)
        return -1;
    return slot__http_start(s, (struct sockaddr *)&ss);
}

/* Every stand-in of an HTTP request goes to http.c; a TCP connection to conn.c. */
static void conn_flush_any(conn *c)
{
    if (c->http)
        slot__http_flush(c);
    else
        slot__conn_flush(c);
}

static int listen_start(server *s)
{
    struct sockaddr_storage ss;
    int rc = 0;
    if (addr_parse("--listen", s->opts.host, s->opts.port, &ss) != 0)
        return -1;
    uv_tcp_init(s->loop, &s->listener);
    s->listener.data = s;
    s->listener_open = true;
    rc = uv_tcp_bind(&s->listener, (struct sockaddr *)&ss, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&s->listener, SLOT_LISTEN_BACKLOG, slot__on_connection);
    if (rc != 0) {
        slot__log(SLOT__LOG_ERROR, "cannot listen", SLOT__LF_S("host", s->opts.host), SLOT__LF_U("port", s->opts.port),
                  SLOT__LF_S("error", uv_strerror(rc)));
        return -1;
    }
    return 0;
}

/* The first line on stdout, once the server is ready: tests and scripts wait
 * for it; systemd hears the same as READY=1 (daemon_int.h). */
static void listen_announce(server *s)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    char name[64] = "?";
    uv_tcp_getsockname(&s->listener, (struct sockaddr *)&ss, &len);
    uv_ip_name((struct sockaddr *)&ss, name, sizeof(name));
    unsigned port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
    char line[96];
    snprintf(line, sizeof(line), ss.ss_family == AF_INET6 ? "listening on [%s]:%u" : "listening on %s:%u", name, port);
    printf("%s\n", line);
    if (s->http.listener)
        printf("http listening on %s\n", s->http.addr); /* the second line, so the first stays the same */
    fflush(stdout);
    slot__log(SLOT__LOG_INFO, "listening", SLOT__LF_S("addr", line + strlen("listening on ")),
              SLOT__LF_S("tokens", s->auth.ntokens ? "required" : "none"));
    if (s->hooks.ready)
        s->hooks.ready(s->loop, line);
}

/*
 * One slotd per data folder: LMDB would let two processes share the files,
 * but the idempotency index lives in the writer's memory (src/alloc/alloc_int.h), so a
 * second writer would grant a second hold for a replayed key. An flock on
 * DIR/slotd.lock (released by the kernel when the process dies, kill -9
 * included) keeps the second one out.
 */
/* mkdir -p with mode 0700: --data is "created when missing", parents too.
 * With sync (not --durability nosync), each folder it makes has its parent
 * fsynced (slot_store_mkdir), so the whole new chain of names is durable
 * before the store in it (docs/design.md, "Durability and stopping").
 * Returns 0, or -errno of the first folder that could not be made or synced. */
static int mkdir_parents(const char *dir, bool sync)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof(path))
        return -ENAMETOOLONG;
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        char c = path[i];
        path[i] = '\0';
        if (mkdir(path, 0700) == 0) {
            int rc = sync ? slot_store_mkdir(path) : 0; /* made now: it finds it there and syncs the parent */
            if (rc != 0)
                return rc;
        } else if (errno != EEXIST) {
            return -errno;
        }
        path[i] = c;
    }
    return 0;
}

static int data_lock(server *s)
{
    const char *dir = s->opts.data_dir;
    int rc = mkdir_parents(dir, !s->opts.nosync);
    if (rc != 0) {
        slot__log(SLOT__LOG_ERROR, "--data: mkdir failed", SLOT__LF_S("data", dir), SLOT__LF_S("error", strerror(-rc)));
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/slotd.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        slot__log(SLOT__LOG_ERROR, "--data: cannot open the lock file", SLOT__LF_S("data", dir),
                  SLOT__LF_S("path", path), SLOT__LF_S("error", strerror(errno)));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
        pid[n > 0 ? n : 0] = 0;
        pid[strcspn(pid, "\n")] = 0;
        slot__log(SLOT__LOG_ERROR, "--data is in use by another slotd", SLOT__LF_S("data", dir),
                  SLOT__LF_S("pid", pid[0] ? pid : "?"));
        close(fd);
        return -1;
    }
    char line[32];
    int len = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)len, 0) != len)
        slot__log(SLOT__LOG_WARN, "--data: could not write the pid", SLOT__LF_S("data", dir), SLOT__LF_S("path", path),
                  SLOT__LF_S("error", strerror(errno)));
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
    slot_store_opts so = {.dir = s->opts.data_dir,
                          .nosync = s->opts.nosync,
                          .nometasync = s->opts.pipelined && !s->opts.cluster, /* a set flushes every commit */
                          .map_bytes_max = s->opts.map_bytes_max};
    int rc = slot_store_open(&so, &s->store, err, sizeof(err));
    if (rc != 0) {
        slot__log(SLOT__LOG_ERROR, "cannot open the store", SLOT__LF_S("data", s->opts.data_dir),
                  SLOT__LF_S("error", err));
        return -1;
    }
    /* Standalone: the batch log's records above the store's seq go in first
     * (docs/design.md, "Pipelined group commit"), so the index sees them. */
    if (!s->opts.cluster && slot__pipe_replay(s, s->opts.pipelined) != 0)
        return -1;
    if (slot_alloc_init(&s->read_alloc, s->store) != 0 || slot_alloc_init(&s->write_alloc, s->store) != 0) {
        slot__log(SLOT__LOG_ERROR, "getrandom failed", SLOT__LF_S("error", strerror(errno)));
        return -1;
    }
    MDB_txn *txn = NULL;
    rc = mdb_txn_begin(slot_store_env(s->store), NULL, MDB_RDONLY, &txn);
    if (rc == 0)
        rc = slot_alloc_load(&s->write_alloc, txn);
    if (txn)
        mdb_txn_abort(txn);
    if (rc != 0) {
        slot__log(SLOT__LOG_ERROR, "cannot read the holds", SLOT__LF_S("data", s->opts.data_dir),
                  SLOT__LF_S("error", mdb_strerror(rc)));
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
        slot__log(SLOT__LOG_ERROR, "SLOT_FAILPOINTS refused", SLOT__LF_S("error", err));
        return -1;
    }
#endif
    if (s->opts.token_file && slot__tokens_load(s, s->opts.token_file) != 0)
        return -1;
    s->conn_up = (slot__conn_upcalls){.flush = conn_flush_any,
                                      .pace = slot__conn_pace,
                                      .reap = slot__conns_reap,
                                      .feed = slot__feed_pump,
                                      .feed_admit = slot__feed_admit,
                                      .feed_answered = slot__feed_answered,
                                      .feed_fill = slot__feed_fill,
                                      .feed_gone = slot__feed_conn_gone};
    s->loop = uv_default_loop();
    s->loop->data = s;
    if (listen_start(s) != 0 || http_start(s) != 0 || store_start(s) != 0 ||
        (s->hooks.cluster_start && s->hooks.cluster_start(s) != 0))
        return -1;
    uv_async_init(s->loop, &s->async, slot__batch_complete);
    s->async.data = s;
    uv_check_init(s->loop, &s->check);
    s->check.data = s;
    uv_check_start(&s->check, slot__on_check);
    uv_timer_init(s->loop, &s->sweep_timer);
    s->sweep_timer.data = s;
    uv_timer_start(&s->sweep_timer, slot__on_sweep_timer, s->opts.sweep_interval_ms, s->opts.sweep_interval_ms);
    uv_timer_init(s->loop, &s->room_timer);
    s->room_timer.data = s;
    uv_timer_start(&s->room_timer, slot__on_room_timer, SLOT_ROOM_TICK_MS, SLOT_ROOM_TICK_MS);
    uv_timer_init(s->loop, &s->stop_timer);
    s->stop_timer.data = s;
    uv_signal_init(s->loop, &s->sigint);
    uv_signal_init(s->loop, &s->sigterm);
    s->sigint.data = s->sigterm.data = s;
    uv_signal_start(&s->sigint, on_signal, SIGINT);
    uv_signal_start(&s->sigterm, on_signal, SIGTERM);
    if (s->pipe && (errno = slot__pipe_start(s)) != 0) {
        slot__log(SLOT__LOG_ERROR, "cannot start the batch log's flusher", SLOT__LF_S("error", strerror(errno)));
        return -1;
    }
    int rc = slot__commit_start(s);
    if (rc != 0) {
        slot__log(SLOT__LOG_ERROR, "cannot start the commit thread", SLOT__LF_S("error", strerror(rc)));
        return -1;
    }
    listen_announce(s);
    return 0;
}

static void server_free(server *s)
{
    if (s->hooks.cluster_stop)
        s->hooks.cluster_stop(s); /* a start that failed half way; after a stop, nothing */
    slot__commit_stop(s);
    slot__pipe_quiesce(s);
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
    slot__pipe_free(s); /* after the commit thread's last commit and the loop's handles */
    if (s->hooks.cluster_free)
        s->hooks.cluster_free(s);
    if (s->rtxn)
        mdb_txn_abort(s->rtxn);
    slot__feed_free(s);
    slot__http_free(s); /* its requests' entries go back to the pool first */
    slot_alloc_close(&s->read_alloc);
    slot_alloc_close(&s->write_alloc);
    while (s->pool.free) {
        entry *e = s->pool.free;
        s->pool.free = e->next;
        free(e);
    }
    slot_store_close(s->store);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    pthread_rwlock_destroy(&s->map_lock);
    pthread_mutex_destroy(&s->batch.mu);
    pthread_cond_destroy(&s->batch.cv);
    free(s->stats.latency_us);
    free(s->stats.batch_sizes);
    free(s->stats.commit_ns);
    free(s->stats.sync_ns);
    free(s);
}

int slot__server_run(const slot__server_opts *opts, const slot__server_hooks *hooks)
{
    signal(SIGPIPE, SIG_IGN); /* a peer that went away is an error return, not a signal */
    server *s = calloc(1, sizeof(*s));
    if (!s) {
        slot__log(SLOT__LOG_ERROR, "out of memory");
        return 1;
    }
    s->opts = *opts;
    s->hooks = *hooks;
    s->lock_fd = -1;
    slot__log(SLOT__LOG_INFO, "starting", SLOT__LF_S("version", SLOT_VERSION), SLOT__LF_I("pid", getpid()),
              SLOT__LF_S("data", opts->data_dir),
              SLOT__LF_S("durability", opts->nosync      ? "nosync"
                                       : opts->pipelined ? "pipelined"
                                                         : "sync"),
              SLOT__LF_S("cluster", opts->cluster ? opts->cluster : ""));
    pthread_rwlock_init(&s->map_lock, NULL);
    pthread_mutex_init(&s->batch.mu, NULL);
    pthread_cond_init(&s->batch.cv, NULL);
    s->stats.latency_us = malloc(sizeof(slot_hist));
    s->stats.batch_sizes = malloc(sizeof(slot_hist));
    s->stats.commit_ns = malloc(sizeof(slot_hist));
    s->stats.sync_ns = malloc(sizeof(slot_hist));
    if (!s->stats.latency_us || !s->stats.batch_sizes || !s->stats.commit_ns || !s->stats.sync_ns) {
        slot__log(SLOT__LOG_ERROR, "out of memory");
        server_free(s);
        return 1;
    }
    slot_hist_reset(s->stats.latency_us);
    slot_hist_reset(s->stats.batch_sizes);
    slot_hist_reset(s->stats.commit_ns);
    slot_hist_reset(s->stats.sync_ns);
    s->start_ms = slot__wall_ms();
    int status = 0;
    if (server_start(s) == 0) {
        uv_run(s->loop, UV_RUN_DEFAULT);
        slot__log(SLOT__LOG_INFO, "stopped", SLOT__LF_U("commits", s->stats.commits),
                  SLOT__LF_U("connections_total", s->stats.conns_total));
    } else {
        status = 1;
    }
    server_free(s);
    return status;
}
