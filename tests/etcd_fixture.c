/* etcd_fixture.c — see etcd_fixture.h. */
#include "etcd_fixture.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* libcurl's global set-up, once per case (each case is a new process);
 * the client does its own too, reference-counted by libcurl. */
static void curl_init_once(void)
{
    static bool done;
    if (!done)
        ASSERT_EQ(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
    done = true;
}

/* ---- the loop */

uv_loop_t test_loop;
static uv_timer_t tick; /* keeps UV_RUN_ONCE from blocking past a deadline */

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

void loop_open(void)
{
    curl_init_once();
    ASSERT_EQ(uv_loop_init(&test_loop), 0);
    ASSERT_EQ(uv_timer_init(&test_loop, &tick), 0);
}

/* Run the loop until *flag or max_ms; returns *flag. */
bool run_until(const bool *flag, uint64_t max_ms)
{
    uv_update_time(&test_loop);
    uint64_t end = uv_now(&test_loop) + max_ms;
    uv_timer_start(&tick, on_tick, 10, 10);
    while (!*flag) {
        uv_update_time(&test_loop);
        if (uv_now(&test_loop) >= end)
            break;
        uv_run(&test_loop, UV_RUN_ONCE);
    }
    uv_timer_stop(&tick);
    return *flag;
}

void run_for(uint64_t ms)
{
    bool never = false;
    run_until(&never, ms);
}

/* Close the test's handles and check the loop has none left (the client
 * freed its own). */
void loop_finish(void)
{
    uv_close((uv_handle_t *)&tick, NULL);
    for (int i = 0; i < 1000 && uv_loop_alive(&test_loop); i++)
        uv_run(&test_loop, UV_RUN_NOWAIT);
    ASSERT_EQ(uv_loop_close(&test_loop), 0);
}

/* ---- etcd, started and stopped by PID */

int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* A socket that accepts connections (the kernel's backlog) and never answers. */
int blackhole(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ASSERT_EQ(listen(fd, 64), 0);
    socklen_t len = sizeof a;
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static size_t health_write(char *p, size_t size, size_t n, void *ud)
{
    char *buf = ud;
    size_t have = strlen(buf), add = size * n;
    if (have + add < 256) {
        memcpy(buf + have, p, add);
        buf[have + add] = '\0';
    }
    return size * n;
}

static bool etcd_healthy(const etcd_srv *s)
{
    CURL *e = curl_easy_init();
    ASSERT(e);
    char url[128], body[256] = "";
    snprintf(url, sizeof url, "%s/health", s->url);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 1000L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, health_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)body);
    CURLcode rc = curl_easy_perform(e);
    curl_easy_cleanup(e);
    return rc == CURLE_OK && strstr(body, "\"health\":\"true\"") != NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Start etcd on s's ports and data folder; true once /health says so,
 * false when it exited (a port clash) or never became healthy (then it is
 * killed). */
const char *etcd_fixture_host;

static bool etcd_spawn(etcd_srv *s)
{
    char client[64], peer[64], cluster[96];
    const char *h = etcd_fixture_host ? etcd_fixture_host : "127.0.0.1";
    snprintf(s->url, sizeof s->url, "http://%s:%d", h, s->cport);
    snprintf(client, sizeof client, "http://%s:%d", h, s->cport);
    snprintf(peer, sizeof peer, "http://%s:%d", h, s->pport);
    snprintf(cluster, sizeof cluster, "t=%s", peer);
    fflush(NULL);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
        FILE *log = fopen(s->log, "a");
        if (log) {
            dup2(fileno(log), 1);
            dup2(fileno(log), 2);
        }
        execl(ETCD_BIN, "etcd", "--name", "t", "--data-dir", s->data, "--listen-client-urls", client,
              "--advertise-client-urls", client, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
              "--initial-cluster", cluster, (char *)NULL);
        _exit(127);
    }
    s->pid = pid;
    for (int i = 0; i < 200; i++) { /* 20 s at most */
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            s->pid = 0;
            return false;
        }
        if (etcd_healthy(s))
            return true;
        sleep_ms(100);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    s->pid = 0;
    return false;
}

/* A failing case (T_FAIL_ aborts) prints the tail of etcd's log and says
 * where the folder was kept; only async-signal-safe calls from here. */
static char abort_log[300], abort_dir[256];

static void put_stderr(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, p, n);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void on_case_abort(int sig)
{
    int fd = open(abort_log, O_RDONLY);
    if (fd >= 0) {
        off_t size = lseek(fd, 0, SEEK_END);
        lseek(fd, size > 4000 ? size - 4000 : 0, SEEK_SET);
        static const char head[] = "--- etcd log (tail) ---\n", tail[] = "\n---\n";
        put_stderr(head, sizeof head - 1);
        char buf[4000];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0)
            put_stderr(buf, (size_t)n);
        put_stderr(tail, sizeof tail - 1);
        close(fd);
    }
    static const char kept[] = "etcd's folder kept: ";
    put_stderr(kept, sizeof kept - 1);
    put_stderr(abort_dir, strlen(abort_dir));
    put_stderr("\n", 1);
    raise(sig); /* SA_RESETHAND: now the default action */
}

void etcd_start(etcd_srv *s)
{
    if (access(ETCD_BIN, X_OK) != 0)
        SLOT_TEST_SKIP("%s not found (install Debian's etcd-server)", ETCD_BIN);
    memset(s, 0, sizeof *s);
    curl_init_once(); /* etcd_healthy uses curl before any client exists */
    char *dir = slot_test_tmpdir();
    ASSERT(strlen(dir) < sizeof s->dir);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    free(dir);
    snprintf(s->data, sizeof s->data, "%s/etcd-data", s->dir);
    snprintf(s->log, sizeof s->log, "%s/etcd.log", s->dir);
    snprintf(abort_log, sizeof abort_log, "%s", s->log);
    snprintf(abort_dir, sizeof abort_dir, "%s", s->dir);
    struct sigaction sa = {.sa_handler = on_case_abort, .sa_flags = SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGABRT, &sa, NULL), 0);
    for (int attempt = 0; attempt < 5; attempt++) { /* a port taken between probe and bind: new ports */
        s->cport = free_port();
        s->pport = free_port();
        if (s->cport != s->pport && etcd_spawn(s))
            return;
    }
    fprintf(stderr, "etcd did not start; its log is %s\n", s->log);
    ASSERT(!"etcd started");
}

/* Start it again on the same ports and data. */
void etcd_restart(etcd_srv *s)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        if (etcd_spawn(s))
            return;
        sleep_ms(200);
    }
    ASSERT(!"etcd restarted");
}

void etcd_stop(etcd_srv *s)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGTERM);
    for (int i = 0; i < 100; i++) { /* 10 s, then SIGKILL */
        if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
            s->pid = 0;
            return;
        }
        sleep_ms(100);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
}

void etcd_end(etcd_srv *s)
{
    etcd_stop(s);
    signal(SIGABRT, SIG_DFL);
    slot_test_rmdir(s->dir);
}

/* ---- synchronous wrappers: what a callback saw, copied */

static void copy_kv(res *r, const slot_etcd_kv *kv)
{
    r->mod_rev = kv->mod_revision;
    r->create_rev = kv->create_revision;
    r->version = kv->version;
    r->lease = kv->lease;
    ASSERT(kv->value_len <= sizeof r->value);
    memcpy(r->value, kv->value, kv->value_len);
    r->value_len = kv->value_len;
    ASSERT_EQ(kv->value[kv->value_len], 0); /* NUL-terminated for convenience */
}

void on_get(slot_etcd *c, int status, const slot_etcd_get_result *g, void *data)
{
    (void)c;
    res *r = data;
    r->calls++;
    r->done = true;
    r->status = status;
    ASSERT(g);
    r->found = g->found;
    r->revision = g->revision;
    if (g->found)
        copy_kv(r, &g->kv);
}

void on_range(slot_etcd *c, int status, const slot_etcd_range_result *g, void *data)
{
    (void)c;
    res *r = data;
    r->calls++;
    r->done = true;
    r->status = status;
    r->revision = g->revision;
    r->count = g->count;
    r->more = g->more;
    for (size_t i = 0; i < g->count && i < 8; i++) {
        ASSERT(g->kvs[i].key_len < sizeof r->keys[i]);
        memcpy(r->keys[i], g->kvs[i].key, g->kvs[i].key_len + 1);
    }
}

void on_cas(slot_etcd *c, int status, const slot_etcd_cas_result *g, void *data)
{
    (void)c;
    res *r = data;
    r->calls++;
    r->done = true;
    r->status = status;
    r->revision = g->revision;
    r->succeeded = g->succeeded;
    r->found = g->found;
    if (g->found)
        copy_kv(r, &g->current);
}

void on_write(slot_etcd *c, int status, const slot_etcd_write_result *g, void *data)
{
    (void)c;
    res *r = data;
    r->calls++;
    r->done = true;
    r->status = status;
    r->revision = g->revision;
    r->deleted = g->deleted;
}

void on_lease(slot_etcd *c, int status, const slot_etcd_lease_result *g, void *data)
{
    (void)c;
    res *r = data;
    r->calls++;
    r->done = true;
    r->status = status;
    r->id = g->id;
    r->ttl = g->ttl_s;
}

res get_sync(slot_etcd *c, const char *key)
{
    res r = {0};
    ASSERT_ETCD_ST(slot_etcd_get(c, key, on_get, &r), 0);
    ASSERT(run_until(&r.done, WAIT_MS));
    ASSERT_EQ(r.calls, 1);
    return r;
}

res put_sync(slot_etcd *c, const char *key, const void *v, size_t n, int64_t lease)
{
    res r = {0};
    ASSERT_ETCD_ST(slot_etcd_put(c, key, v, n, lease, on_write, &r), 0);
    ASSERT(run_until(&r.done, WAIT_MS));
    return r;
}

res cas_sync(slot_etcd *c, const char *key, int64_t expect, const char *v, int64_t lease)
{
    res r = {0};
    ASSERT_ETCD_ST(slot_etcd_cas(c, key, expect, v, strlen(v), lease, on_cas, &r), 0);
    ASSERT(run_until(&r.done, WAIT_MS));
    return r;
}

res del_sync(slot_etcd *c, const char *key)
{
    res r = {0};
    ASSERT_ETCD_ST(slot_etcd_del(c, key, on_write, &r), 0);
    ASSERT(run_until(&r.done, WAIT_MS));
    return r;
}

res lease_sync(slot_etcd *c, int op, int64_t arg)
{
    res r = {0};
    int rc = op == 0   ? slot_etcd_lease_grant(c, arg, on_lease, &r)
             : op == 1 ? slot_etcd_lease_keepalive(c, arg, on_lease, &r)
                       : slot_etcd_lease_revoke(c, arg, on_lease, &r);
    ASSERT_ETCD_ST(rc, 0);
    ASSERT(run_until(&r.done, WAIT_MS));
    return r;
}

slot_etcd *client(const char *endpoints, uint32_t timeout_ms, uint32_t inflight_max)
{
    slot_etcd_opts o = {.timeout_ms = timeout_ms, .inflight_max = inflight_max};
    slot_etcd *c = NULL;
    ASSERT_ETCD_ST(slot_etcd_new(&test_loop, endpoints, &o, &c), 0);
    ASSERT(c);
    return c;
}

void client_close(slot_etcd *c)
{
    slot_etcd_close(c);
    loop_finish();
}

/* ---- watch capture */

void on_event(slot_etcd_watch *w, const slot_etcd_event *ev, void *data)
{
    watch_log *l = data;
    ASSERT(w == l->w);
    ASSERT(!l->ended);
    ASSERT(l->n < EVENTS_MAX);
    l->type[l->n] = ev->type;
    l->rev[l->n] = ev->kv.mod_revision;
    ASSERT(ev->kv.key_len < 64 && ev->kv.value_len < 64);
    memcpy(l->key[l->n], ev->kv.key, ev->kv.key_len + 1);
    memcpy(l->value[l->n], ev->kv.value, ev->kv.value_len + 1);
    l->n++;
    if (l->cancel_after && l->n == l->cancel_after) {
        slot_etcd_watch_cancel(w);
        ASSERT(!l->ended); /* deferred until this callback returns */
    }
}

void on_watch_end(slot_etcd_watch *w, int status, int64_t last_rev, void *data)
{
    watch_log *l = data;
    ASSERT(w == l->w);
    l->ended = true;
    l->end_calls++;
    l->end_status = status;
    l->last_rev = last_rev;
    slot_etcd_watch_cancel(w); /* from end_cb: does nothing */
}

void watch(slot_etcd *c, watch_log *l, const char *key, bool prefix, int64_t from)
{
    int cancel_after = l->cancel_after;
    memset(l, 0, sizeof *l);
    l->cancel_after = cancel_after;
    ASSERT_ETCD_ST(slot_etcd_watch_start(c, key, prefix, from, on_event, on_watch_end, l, &l->w), 0);
}

bool wait_events(watch_log *l, int n)
{
    uv_update_time(&test_loop);
    uint64_t end = uv_now(&test_loop) + WAIT_MS;
    while (l->n < n && !l->ended && uv_now(&test_loop) < end) {
        bool never = false;
        run_until(&never, 50);
    }
    return l->n >= n;
}

/* ---- a fake etcd that answers badly */

typedef struct fake_conn {
    uv_tcp_t tcp;
    fake *f;
    char in[8192];
    size_t in_len;
    bool replied;
    uv_write_t wr;
} fake_conn;

static void fake_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    (void)hint;
    fake_conn *fc = h->data;
    b->base = fc->in + fc->in_len;
    b->len = sizeof fc->in - fc->in_len - 1;
    if (b->len == 0) { /* drop what we have read: only its end matters now */
        fc->in_len = 0;
        b->base = fc->in;
        b->len = sizeof fc->in - 1;
    }
}

static void fake_closed(uv_handle_t *h)
{
    free(h->data);
}

static void fake_written(uv_write_t *w, int status)
{
    (void)status;
    uv_close((uv_handle_t *)w->handle, fake_closed);
}

/* Reply once the request's headers and body (Content-Length) are in. */
static void fake_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    (void)b;
    fake_conn *fc = s->data;
    if (n < 0) {
        if (!fc->replied)
            uv_close((uv_handle_t *)s, fake_closed);
        return;
    }
    fc->in_len += (size_t)n;
    fc->in[fc->in_len] = '\0';
    char *hdr_end = strstr(fc->in, "\r\n\r\n");
    if (fc->replied || !hdr_end)
        return;
    const char *cl = strcasestr(fc->in, "Content-Length:");
    size_t body = cl ? strtoul(cl + 15, NULL, 10) : 0;
    if ((size_t)(fc->in + fc->in_len - (hdr_end + 4)) < body)
        return;
    fc->replied = true;
    uv_read_stop(s);
    uv_buf_t out = uv_buf_init((char *)fc->f->reply, (unsigned)fc->f->reply_len);
    ASSERT_EQ(uv_write(&fc->wr, s, &out, 1, fake_written), 0);
}

static void fake_accept(uv_stream_t *server, int status)
{
    ASSERT_EQ(status, 0);
    fake_conn *fc = calloc(1, sizeof *fc);
    ASSERT(fc);
    fc->f = server->data;
    ASSERT_EQ(uv_tcp_init(&test_loop, &fc->tcp), 0);
    fc->tcp.data = fc;
    ASSERT_EQ(uv_accept(server, (uv_stream_t *)&fc->tcp), 0);
    ASSERT_EQ(uv_read_start((uv_stream_t *)&fc->tcp, fake_alloc, fake_read), 0);
}

void fake_start(fake *f)
{
    ASSERT_EQ(uv_tcp_init(&test_loop, &f->server), 0);
    f->server.data = f;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    ASSERT_EQ(uv_tcp_bind(&f->server, (struct sockaddr *)&a, 0), 0);
    ASSERT_EQ(uv_listen((uv_stream_t *)&f->server, 16, fake_accept), 0);
    int len = sizeof a;
    ASSERT_EQ(uv_tcp_getsockname(&f->server, (struct sockaddr *)&a, &len), 0);
    f->port = ntohs(a.sin_port);
}
