/*
 * test_etcd.c — the etcd client (slot/etcd.h) against a real etcd.
 *
 * Each test runs in its own child process with its own temporary folder;
 * tests that need etcd start one there on ephemeral loopback ports and stop
 * it by PID (SIGTERM, then SIGKILL after a bound; PR_SET_PDEATHSIG kills it
 * should the test die). A fake HTTP server on the test's own loop serves bad
 * and truncated answers. Exits 77 (skipped) when /usr/bin/etcd is missing.
 * The last line is "N passed, M failed".
 */
#include "slot/etcd.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ETCD_BIN "/usr/bin/etcd"
#define WAIT_MS 30000 /* the bound on any one wait; a pass never comes near it */

/* ---- a tiny harness: a failed check ends the test's process ---- */

#define CHECK(cond)                                                                             \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond);                    \
            fflush(stderr);                                                                     \
            _exit(1);                                                                           \
        }                                                                                       \
    } while (0)

#define CHECK_OP(a, op, b)                                                                      \
    do {                                                                                        \
        int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                                           \
        if (!(a_ op b_)) {                                                                      \
            fprintf(stderr, "%s:%d: FAIL: %s %s %s (%" PRId64 " vs %" PRId64 ")\n", __FILE__, __LINE__, \
                    #a, #op, #b, a_, b_);                                                       \
            fflush(stderr);                                                                     \
            _exit(1);                                                                           \
        }                                                                                       \
    } while (0)
#define CHECK_EQ(a, b) CHECK_OP(a, ==, b)
#define CHECK_GE(a, b) CHECK_OP(a, >=, b)
#define CHECK_GT(a, b) CHECK_OP(a, >, b)
/* A status check that names the codes. */
#define CHECK_ST(got, want)                                                                     \
    do {                                                                                        \
        int g_ = (got), w_ = (want);                                                            \
        if (g_ != w_) {                                                                         \
            fprintf(stderr, "%s:%d: FAIL: %s is %s (%s), want %s\n", __FILE__, __LINE__, #got,   \
                    slot_etcd_err_name(g_), slot_etcd_strerror(g_), slot_etcd_err_name(w_));    \
            fflush(stderr);                                                                     \
            _exit(1);                                                                           \
        }                                                                                       \
    } while (0)

static char test_dir[256]; /* this test's temporary folder */

/* ---- the loop ---- */

static uv_loop_t loop;
static uv_timer_t tick; /* keeps UV_RUN_ONCE from blocking past a deadline */

static void on_tick(uv_timer_t *t) {
    (void)t;
}

static void loop_open(void) {
    CHECK_EQ(uv_loop_init(&loop), 0);
    CHECK_EQ(uv_timer_init(&loop, &tick), 0);
}

/* Run the loop until *flag or max_ms; returns *flag. */
static bool run_until(const bool *flag, uint64_t max_ms) {
    uv_update_time(&loop);
    uint64_t end = uv_now(&loop) + max_ms;
    uv_timer_start(&tick, on_tick, 10, 10);
    while (!*flag) {
        uv_update_time(&loop);
        if (uv_now(&loop) >= end)
            break;
        uv_run(&loop, UV_RUN_ONCE);
    }
    uv_timer_stop(&tick);
    return *flag;
}

static void run_for(uint64_t ms) {
    bool never = false;
    run_until(&never, ms);
}

/* Close the test's handles and check the loop has none left (the client
 * freed its own). */
static void loop_finish(void) {
    uv_close((uv_handle_t *)&tick, NULL);
    for (int i = 0; i < 1000 && uv_loop_alive(&loop); i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    CHECK_EQ(uv_loop_close(&loop), 0);
}

/* ---- etcd, started and stopped by PID ---- */

typedef struct etcd_srv {
    pid_t pid;
    int cport, pport;
    char data[300], log[300], url[64];
} etcd_srv;

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK_EQ(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    CHECK_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* A socket that accepts connections (the kernel's backlog) and never answers. */
static int blackhole(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK_EQ(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_EQ(listen(fd, 64), 0);
    socklen_t len = sizeof a;
    CHECK_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static size_t health_write(char *p, size_t size, size_t n, void *ud) {
    char *buf = ud;
    size_t have = strlen(buf), add = size * n;
    if (have + add < 256) {
        memcpy(buf + have, p, add);
        buf[have + add] = '\0';
    }
    return size * n;
}

static bool etcd_healthy(const etcd_srv *s) {
    CURL *e = curl_easy_init();
    CHECK(e);
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

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Start etcd on s's ports and data folder; true once /health says so,
 * false when it exited (a port clash) or never became healthy (then it is
 * killed). */
static bool etcd_spawn(etcd_srv *s) {
    char client[64], peer[64], cluster[96];
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d", s->cport);
    snprintf(client, sizeof client, "http://127.0.0.1:%d", s->cport);
    snprintf(peer, sizeof peer, "http://127.0.0.1:%d", s->pport);
    snprintf(cluster, sizeof cluster, "t=%s", peer);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
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

static void etcd_start(etcd_srv *s) {
    memset(s, 0, sizeof *s);
    snprintf(s->data, sizeof s->data, "%s/etcd-data", test_dir);
    snprintf(s->log, sizeof s->log, "%s/etcd.log", test_dir);
    for (int attempt = 0; attempt < 5; attempt++) { /* a port taken between probe and bind: new ports */
        s->cport = free_port();
        s->pport = free_port();
        if (s->cport != s->pport && etcd_spawn(s))
            return;
    }
    fprintf(stderr, "etcd did not start; its log is %s\n", s->log);
    CHECK(!"etcd started");
}

/* Start it again on the same ports and data. */
static void etcd_restart(etcd_srv *s) {
    for (int attempt = 0; attempt < 5; attempt++) {
        if (etcd_spawn(s))
            return;
        sleep_ms(200);
    }
    CHECK(!"etcd restarted");
}

static void etcd_stop(etcd_srv *s) {
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

/* ---- synchronous wrappers: what a callback saw, copied ---- */

typedef struct res {
    bool done;
    int calls, status;
    bool found, succeeded, more;
    int64_t revision, mod_rev, create_rev, version, lease, id, ttl, deleted;
    uint8_t value[512];
    size_t value_len, count;
    char keys[8][64];
} res;

static void copy_kv(res *r, const slot_etcd_kv *kv) {
    r->mod_rev = kv->mod_revision;
    r->create_rev = kv->create_revision;
    r->version = kv->version;
    r->lease = kv->lease;
    CHECK(kv->value_len <= sizeof r->value);
    memcpy(r->value, kv->value, kv->value_len);
    r->value_len = kv->value_len;
    CHECK_EQ(kv->value[kv->value_len], 0); /* NUL-terminated for convenience */
}

static void on_get(slot_etcd *c, int status, const slot_etcd_get_result *g, void *data) {
    (void)c;
    res *r = data;
    r->calls++;
    r->done = true;
    r->status = status;
    CHECK(g);
    r->found = g->found;
    r->revision = g->revision;
    if (g->found)
        copy_kv(r, &g->kv);
}

static void on_range(slot_etcd *c, int status, const slot_etcd_range_result *g, void *data) {
    (void)c;
    res *r = data;
    r->calls++;
    r->done = true;
    r->status = status;
    r->revision = g->revision;
    r->count = g->count;
    r->more = g->more;
    for (size_t i = 0; i < g->count && i < 8; i++) {
        CHECK(g->kvs[i].key_len < sizeof r->keys[i]);
        memcpy(r->keys[i], g->kvs[i].key, g->kvs[i].key_len + 1);
    }
}

static void on_cas(slot_etcd *c, int status, const slot_etcd_cas_result *g, void *data) {
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

static void on_write(slot_etcd *c, int status, const slot_etcd_write_result *g, void *data) {
    (void)c;
    res *r = data;
    r->calls++;
    r->done = true;
    r->status = status;
    r->revision = g->revision;
    r->deleted = g->deleted;
}

static void on_lease(slot_etcd *c, int status, const slot_etcd_lease_result *g, void *data) {
    (void)c;
    res *r = data;
    r->calls++;
    r->done = true;
    r->status = status;
    r->id = g->id;
    r->ttl = g->ttl_s;
}

static res get_sync(slot_etcd *c, const char *key) {
    res r = {0};
    CHECK_ST(slot_etcd_get(c, key, on_get, &r), 0);
    CHECK(run_until(&r.done, WAIT_MS));
    CHECK_EQ(r.calls, 1);
    return r;
}

static res put_sync(slot_etcd *c, const char *key, const void *v, size_t n, int64_t lease) {
    res r = {0};
    CHECK_ST(slot_etcd_put(c, key, v, n, lease, on_write, &r), 0);
    CHECK(run_until(&r.done, WAIT_MS));
    return r;
}

static res cas_sync(slot_etcd *c, const char *key, int64_t expect, const char *v, int64_t lease) {
    res r = {0};
    CHECK_ST(slot_etcd_cas(c, key, expect, v, strlen(v), lease, on_cas, &r), 0);
    CHECK(run_until(&r.done, WAIT_MS));
    return r;
}

static res del_sync(slot_etcd *c, const char *key) {
    res r = {0};
    CHECK_ST(slot_etcd_del(c, key, on_write, &r), 0);
    CHECK(run_until(&r.done, WAIT_MS));
    return r;
}

static res lease_sync(slot_etcd *c, int op, int64_t arg) {
    res r = {0};
    int rc = op == 0   ? slot_etcd_lease_grant(c, arg, on_lease, &r)
             : op == 1 ? slot_etcd_lease_keepalive(c, arg, on_lease, &r)
                       : slot_etcd_lease_revoke(c, arg, on_lease, &r);
    CHECK_ST(rc, 0);
    CHECK(run_until(&r.done, WAIT_MS));
    return r;
}

static slot_etcd *client(const char *endpoints, uint32_t timeout_ms, uint32_t inflight_max) {
    slot_etcd_opts o = {.timeout_ms = timeout_ms, .inflight_max = inflight_max};
    slot_etcd *c = NULL;
    CHECK_ST(slot_etcd_new(&loop, endpoints, &o, &c), 0);
    CHECK(c);
    return c;
}

static void client_close(slot_etcd *c) {
    slot_etcd_close(c);
    loop_finish();
}

/* ---- watch capture ---- */

#define EVENTS_MAX 64
typedef struct watch_log {
    slot_etcd_watch *w;
    int n;
    slot_etcd_event_type type[EVENTS_MAX];
    int64_t rev[EVENTS_MAX];
    char key[EVENTS_MAX][64];
    char value[EVENTS_MAX][64];
    bool ended;
    int end_calls, end_status;
    int64_t last_rev;
    int cancel_after; /* cancel from the event callback after this many events (0 = never) */
} watch_log;

static void on_event(slot_etcd_watch *w, const slot_etcd_event *ev, void *data) {
    watch_log *l = data;
    CHECK(w == l->w);
    CHECK(!l->ended);
    CHECK(l->n < EVENTS_MAX);
    l->type[l->n] = ev->type;
    l->rev[l->n] = ev->kv.mod_revision;
    CHECK(ev->kv.key_len < 64 && ev->kv.value_len < 64);
    memcpy(l->key[l->n], ev->kv.key, ev->kv.key_len + 1);
    memcpy(l->value[l->n], ev->kv.value, ev->kv.value_len + 1);
    l->n++;
    if (l->cancel_after && l->n == l->cancel_after) {
        slot_etcd_watch_cancel(w);
        CHECK(!l->ended); /* deferred until this callback returns */
    }
}

static void on_watch_end(slot_etcd_watch *w, int status, int64_t last_rev, void *data) {
    watch_log *l = data;
    CHECK(w == l->w);
    l->ended = true;
    l->end_calls++;
    l->end_status = status;
    l->last_rev = last_rev;
    slot_etcd_watch_cancel(w); /* from end_cb: does nothing */
}

static void watch(slot_etcd *c, watch_log *l, const char *key, bool prefix, int64_t from) {
    int cancel_after = l->cancel_after;
    memset(l, 0, sizeof *l);
    l->cancel_after = cancel_after;
    CHECK_ST(slot_etcd_watch_start(c, key, prefix, from, on_event, on_watch_end, l, &l->w), 0);
}

static bool wait_events(watch_log *l, int n) {
    uv_update_time(&loop);
    uint64_t end = uv_now(&loop) + WAIT_MS;
    while (l->n < n && !l->ended && uv_now(&loop) < end) {
        bool never = false;
        run_until(&never, 50);
    }
    return l->n >= n;
}

/* ---- tests without etcd ---- */

static void test_base64(void) {
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"}; /* RFC 4648 s10 */
    char t[64];
    uint8_t b[64];
    for (int i = 0; i < 7; i++) {
        CHECK_EQ(slot_etcd_b64_encode(plain[i], strlen(plain[i]), t, sizeof t), (long)strlen(coded[i]));
        CHECK(strcmp(t, coded[i]) == 0);
        CHECK_EQ(slot_etcd_b64_decode(coded[i], strlen(coded[i]), b, sizeof b), (long)strlen(plain[i]));
        CHECK(memcmp(b, plain[i], strlen(plain[i])) == 0);
        CHECK_EQ(b[strlen(plain[i])], 0);
    }
    uint8_t all[300], back[301];
    char text[401];
    for (size_t n = 0; n <= sizeof all; n++) {
        for (size_t i = 0; i < n; i++)
            all[i] = (uint8_t)(i * 7 + n);
        long len = slot_etcd_b64_encode(all, n, text, sizeof text);
        CHECK_EQ(len, (long)((n + 2) / 3 * 4));
        CHECK_EQ(slot_etcd_b64_decode(text, (size_t)len, back, sizeof back), (long)n);
        CHECK(memcmp(all, back, n) == 0);
    }
    static const char *const bad[] = {"Zg=", "Zh==", "Zm9=", "Z===", "====", "Zg==Zg==", "Zm9v!A==", "Zm 9", "Zm9\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_ST((int)slot_etcd_b64_decode(bad[i], strlen(bad[i]), b, sizeof b), SLOT_ETCD_EPROTO);
    CHECK_ST((int)slot_etcd_b64_encode("foo", 3, t, 4), SLOT_ETCD_EINVAL); /* no room for the NUL */
    CHECK_ST((int)slot_etcd_b64_decode("Zm9v", 4, b, 3), SLOT_ETCD_EINVAL);
}

static void test_errors_and_arguments(void) {
    CHECK(strcmp(slot_etcd_err_name(SLOT_ETCD_ETIMEDOUT), "ETIMEDOUT") == 0);
    CHECK(strcmp(slot_etcd_err_name(SLOT_ETCD_EFULL), "EFULL") == 0);
    CHECK(strcmp(slot_etcd_err_name(0), "OK") == 0);
    CHECK(strcmp(slot_etcd_err_name(-999), "UNKNOWN") == 0);
    CHECK(strcmp(slot_etcd_strerror(0), "success") == 0);
    for (int e = -1; e >= SLOT_ETCD_ENOMEM; e--) {
        CHECK(strcmp(slot_etcd_err_name(e), "UNKNOWN") != 0);
        CHECK(strcmp(slot_etcd_strerror(e), "unknown etcd client error") != 0);
    }
    loop_open();
    slot_etcd *c = NULL;
    static const char *const bad_eps[] = {"", "127.0.0.1:2379", "http://", "http://a b", "http://a,", ",http://a",
                                          "ftp://a"};
    for (size_t i = 0; i < sizeof bad_eps / sizeof bad_eps[0]; i++)
        CHECK_ST(slot_etcd_new(&loop, bad_eps[i], NULL, &c), SLOT_ETCD_EINVAL);
    char many[2048] = "";
    for (int i = 0; i <= SLOT_ETCD_ENDPOINTS_MAX; i++)
        strcat(many, i ? ",http://127.0.0.1:1" : "http://127.0.0.1:1");
    CHECK_ST(slot_etcd_new(&loop, many, NULL, &c), SLOT_ETCD_EINVAL);
    slot_etcd_opts o = {.inflight_max = SLOT_ETCD_INFLIGHT_MAX + 1};
    CHECK_ST(slot_etcd_new(&loop, "http://127.0.0.1:1", &o, &c), SLOT_ETCD_EINVAL);
    o = (slot_etcd_opts){.body_bytes_max = 100};
    CHECK_ST(slot_etcd_new(&loop, "http://127.0.0.1:1", &o, &c), SLOT_ETCD_EINVAL);
    CHECK(c == NULL);

    c = client("http://127.0.0.1:1/,https://127.0.0.1:2", 0, 0);
    res r = {0};
    char long_key[SLOT_ETCD_KEY_BYTES_MAX + 2];
    memset(long_key, 'k', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = '\0';
    CHECK_ST(slot_etcd_get(c, "", on_get, &r), SLOT_ETCD_EINVAL);
    CHECK_ST(slot_etcd_get(c, long_key, on_get, &r), SLOT_ETCD_EINVAL);
    CHECK_ST(slot_etcd_get(c, NULL, on_get, &r), SLOT_ETCD_EINVAL);
    CHECK_ST(slot_etcd_get_prefix(c, "/p", 0, on_range, &r), SLOT_ETCD_EINVAL);
    CHECK_ST(slot_etcd_cas(c, "/k", -1, "v", 1, 0, on_cas, &r), SLOT_ETCD_EINVAL);
    CHECK_ST(slot_etcd_put(c, "/k", NULL, 5, 0, on_write, &r), SLOT_ETCD_EINVAL);
    CHECK_ST(slot_etcd_put(c, "/k", "v", SLOT_ETCD_VALUE_BYTES_MAX + 1, 0, on_write, &r), SLOT_ETCD_EINVAL);
    CHECK_ST(slot_etcd_lease_grant(c, 0, on_lease, &r), SLOT_ETCD_EINVAL);
    CHECK_ST(slot_etcd_lease_grant(c, SLOT_ETCD_TTL_S_MAX + 1, on_lease, &r), SLOT_ETCD_EINVAL);
    CHECK_ST(slot_etcd_lease_keepalive(c, 0, on_lease, &r), SLOT_ETCD_EINVAL);
    slot_etcd_watch *w = NULL;
    CHECK_ST(slot_etcd_watch_start(c, "/k", false, -1, on_event, on_watch_end, NULL, &w), SLOT_ETCD_EINVAL);
    CHECK(w == NULL);
    run_for(50);
    CHECK_EQ(r.calls, 0); /* a call that failed never calls back */
    client_close(c);
}

/* A request to a peer that accepts and never answers times out in about
 * timeout_ms; with a second such endpoint, each is tried once. */
static void test_timeout_blackhole(void) {
    loop_open();
    int p1, p2;
    int fd1 = blackhole(&p1), fd2 = blackhole(&p2);
    char eps[128];
    snprintf(eps, sizeof eps, "http://127.0.0.1:%d,http://127.0.0.1:%d", p1, p2);
    slot_etcd *c = client(eps, 300, 0);
    res r = {0};
    CHECK_ST(slot_etcd_get(c, "/k", on_get, &r), 0);
    CHECK(run_until(&r.done, WAIT_MS));
    CHECK_ST(r.status, SLOT_ETCD_ETIMEDOUT);
    CHECK_EQ(r.calls, 1);
    CHECK(!r.found);
    /* The same through the watch path: it cannot be set up either. */
    watch_log l = {0};
    snprintf(eps, sizeof eps, "http://127.0.0.1:%d", free_port());
    slot_etcd *dead = client(eps, 300, 0);
    watch(dead, &l, "/k", false, 0);
    CHECK(run_until(&l.ended, WAIT_MS));
    CHECK_ST(l.end_status, SLOT_ETCD_ECONNECT);
    CHECK_EQ(l.n, 0);
    slot_etcd_close(dead);
    client_close(c);
    close(fd1);
    close(fd2);
}

/* Requests on the wire (to a peer that never answers) and requests not yet
 * sent: close runs each callback once, cancelled; calls from those
 * callbacks fail at once. */
static int cancelled_calls;
static slot_etcd *closing_client;
static void on_get_cancelled(slot_etcd *c, int status, const slot_etcd_get_result *g, void *data) {
    (void)g;
    CHECK(c == closing_client);
    on_get(c, status, g, data);
    CHECK_ST(status, SLOT_ETCD_ECANCELLED);
    cancelled_calls++;
    res other = {0};
    CHECK_ST(slot_etcd_get(c, "/again", on_get, &other), SLOT_ETCD_ECANCELLED);
}

static void test_close_pending_blackhole(void) {
    loop_open();
    int port;
    int fd = blackhole(&port);
    char eps[64];
    snprintf(eps, sizeof eps, "http://127.0.0.1:%d", port);
    slot_etcd *c = client(eps, 10000, 0);
    closing_client = c;
    res r[6] = {{0}};
    for (int i = 0; i < 3; i++)
        CHECK_ST(slot_etcd_get(c, "/k", on_get_cancelled, &r[i]), 0);
    watch_log l = {0};
    watch(c, &l, "/k", true, 1);
    run_for(300); /* now connected and waiting */
    for (int i = 3; i < 6; i++) /* not sent yet */
        CHECK_ST(slot_etcd_get(c, "/k", on_get_cancelled, &r[i]), 0);
    CHECK_EQ(cancelled_calls, 0);
    slot_etcd_close(c);
    CHECK_EQ(cancelled_calls, 6);
    for (int i = 0; i < 6; i++)
        CHECK_EQ(r[i].calls, 1);
    CHECK_EQ(l.end_calls, 1);
    CHECK_ST(l.end_status, SLOT_ETCD_ECANCELLED);
    CHECK_EQ(l.last_rev, 0);
    slot_etcd_close(c); /* twice: harmless until the loop frees it */
    loop_finish();
    for (int i = 0; i < 6; i++)
        CHECK_EQ(r[i].calls, 1);
    close(fd);
}

/* ---- a fake etcd that answers badly ---- */

typedef struct fake {
    uv_tcp_t server;
    int port;
    const char *reply; /* the whole HTTP response */
    size_t reply_len;
} fake;

typedef struct fake_conn {
    uv_tcp_t tcp;
    fake *f;
    char in[8192];
    size_t in_len;
    bool replied;
    uv_write_t wr;
} fake_conn;

static void fake_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b) {
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

static void fake_closed(uv_handle_t *h) {
    free(h->data);
}

static void fake_written(uv_write_t *w, int status) {
    (void)status;
    uv_close((uv_handle_t *)w->handle, fake_closed);
}

/* Reply once the request's headers and body (Content-Length) are in. */
static void fake_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
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
    CHECK_EQ(uv_write(&fc->wr, s, &out, 1, fake_written), 0);
}

static void fake_accept(uv_stream_t *server, int status) {
    CHECK_EQ(status, 0);
    fake_conn *fc = calloc(1, sizeof *fc);
    CHECK(fc);
    fc->f = server->data;
    CHECK_EQ(uv_tcp_init(&loop, &fc->tcp), 0);
    fc->tcp.data = fc;
    CHECK_EQ(uv_accept(server, (uv_stream_t *)&fc->tcp), 0);
    CHECK_EQ(uv_read_start((uv_stream_t *)&fc->tcp, fake_alloc, fake_read), 0);
}

static void fake_start(fake *f) {
    CHECK_EQ(uv_tcp_init(&loop, &f->server), 0);
    f->server.data = f;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    CHECK_EQ(uv_tcp_bind(&f->server, (struct sockaddr *)&a, 0), 0);
    CHECK_EQ(uv_listen((uv_stream_t *)&f->server, 16, fake_accept), 0);
    int len = sizeof a;
    CHECK_EQ(uv_tcp_getsockname(&f->server, (struct sockaddr *)&a, &len), 0);
    f->port = ntohs(a.sin_port);
}

#define HTTP_OK "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"

/* Bad, truncated, oversized and error answers: each a clear status, never
 * a crash (the ASan build runs this too). */
static void test_bad_responses(void) {
    static const struct {
        const char *reply;
        int kind; /* 0 get, 1 watch, 2 cas, 3 keepalive, 4 revoke */
        int want;
    } cases[] = {
        {HTTP_OK "not json", 0, SLOT_ETCD_EPROTO},
        {HTTP_OK "{\"header\":{\"revision\":\"3\"},\"kvs\":[{\"key\":\"Zm9v\",\"val", 0, SLOT_ETCD_EPROTO},
        {HTTP_OK "{\"header\":{\"revision\":\"3\"},\"kvs\":[{\"key\":\"Zm9v!\"}]}", 0, SLOT_ETCD_EPROTO},
        {HTTP_OK "{\"header\":{\"revision\":\"x3\"}}", 0, SLOT_ETCD_EPROTO},
        {HTTP_OK "{\"header\":{\"revision\":\"3\"},\"kvs\":{}}", 0, SLOT_ETCD_EPROTO},
        {HTTP_OK "[1,2]", 0, SLOT_ETCD_EPROTO},
        {HTTP_OK "", 0, SLOT_ETCD_EPROTO},
        {"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{\"header\":{", 0, SLOT_ETCD_EDISCONNECT},
        {"garbage\r\n\r\n", 0, SLOT_ETCD_EPROTO},
        {"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n{\"error\":\"x\",\"code\":3}", 0, SLOT_ETCD_ESERVER},
        {"HTTP/1.1 503 Unavailable\r\nConnection: close\r\n\r\n{\"error\":\"no leader\",\"code\":14}", 0,
         SLOT_ETCD_ESERVER},
        {HTTP_OK "{\"header\":{\"revision\":\"3\"},\"responses\":[]}", 2, SLOT_ETCD_EPROTO},
        {HTTP_OK "{\"header\":{\"revision\":\"3\"}}", 2, SLOT_ETCD_EPROTO},
        {HTTP_OK "{\"result\":{\"ID\":\"99\",\"TTL\":\"5\"}}", 3, SLOT_ETCD_EPROTO}, /* not the lease asked */
        {HTTP_OK "{\"ID\":\"7\",\"TTL\":\"5\"}", 3, SLOT_ETCD_EPROTO},
        {HTTP_OK "{\"error\":{\"grpc_code\":14,\"message\":\"transport is closing\"}}", 3, SLOT_ETCD_EDISCONNECT},
        {"HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n{\"error\":\"lease not found\",\"code\":5}", 4,
         SLOT_ETCD_ENOTFOUND},
        {HTTP_OK "{\"result\":{\"header\":{\"revision\":\"3\"},\"created\":true}}\n junk", 1, SLOT_ETCD_EPROTO},
        {HTTP_OK "{\"result\":{\"events\":[{\"type\":\"BOGUS\",\"kv\":{}}]}}\n", 1, SLOT_ETCD_EPROTO},
        {HTTP_OK "{\"result\":{\"events\":[{\"kv\":{\"key\":\"@@@@\"}}]}}\n", 1, SLOT_ETCD_EPROTO},
        {HTTP_OK "{\"result\":{\"canceled\":true,\"compact_revision\":\"9\"}}\n", 1, SLOT_ETCD_ECOMPACTED},
        {HTTP_OK "{\"error\":{\"grpc_code\":14,\"message\":\"x\"}}\n", 1, SLOT_ETCD_EDISCONNECT},
        {HTTP_OK "{\"error\":{\"grpc_code\":9,\"message\":\"x\"}}\n", 1, SLOT_ETCD_ESERVER},
        {HTTP_OK "{\"error\":\"x\"}\n", 1, SLOT_ETCD_EPROTO},
        {HTTP_OK "{\"error\":\"x\"}\n", 1, SLOT_ETCD_EPROTO},
        {HTTP_OK "{\"result\":{\"header\":{\"revision\":\"3\"},\"created\":true}}\n{\"result\":{\"events\":[{\"kv\":{\"key"
                 "\":\"Zm9v\",\"mod_revision\":\"4\"}}]}}\n{\"result\":",
         1, SLOT_ETCD_EDISCONNECT},
    };
    loop_open();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fake f = {.reply = cases[i].reply, .reply_len = strlen(cases[i].reply)};
        fake_start(&f);
        char eps[64];
        snprintf(eps, sizeof eps, "http://127.0.0.1:%d", f.port);
        slot_etcd *c = client(eps, 2000, 0);
        res r = {0};
        watch_log l = {0};
        int status;
        if (cases[i].kind == 1) {
            watch(c, &l, "/k", false, 1);
            CHECK(run_until(&l.ended, WAIT_MS));
            CHECK_EQ(l.end_calls, 1);
            status = l.end_status;
            if (strstr(cases[i].reply, "mod_revision")) { /* the whole message before the cut was delivered */
                CHECK_EQ(l.n, 1);
                CHECK_EQ(l.last_rev, 4);
            }
        } else {
            if (cases[i].kind == 0)
                CHECK_ST(slot_etcd_get(c, "/k", on_get, &r), 0);
            else if (cases[i].kind == 2)
                CHECK_ST(slot_etcd_cas(c, "/k", 3, "v", 1, 0, on_cas, &r), 0);
            else if (cases[i].kind == 3)
                CHECK_ST(slot_etcd_lease_keepalive(c, 7, on_lease, &r), 0);
            else
                CHECK_ST(slot_etcd_lease_revoke(c, 7, on_lease, &r), 0);
            CHECK(run_until(&r.done, WAIT_MS));
            CHECK_EQ(r.calls, 1);
            CHECK(!r.found && r.revision == 0); /* a failed result is all zero */
            status = r.status;
        }
        if (status != cases[i].want)
            fprintf(stderr, "case %zu: %s\n", i, cases[i].reply);
        CHECK_ST(status, cases[i].want);
        slot_etcd_close(c);
        uv_close((uv_handle_t *)&f.server, NULL);
        run_for(20);
    }
    /* A body over the bound. */
    size_t big_len = strlen(HTTP_OK) + 200000;
    char *big = malloc(big_len + 1);
    CHECK(big);
    memset(big, ' ', big_len);
    memcpy(big, HTTP_OK "{\"header\":", strlen(HTTP_OK) + 10);
    fake f = {.reply = big, .reply_len = big_len};
    fake_start(&f);
    char eps[64];
    snprintf(eps, sizeof eps, "http://127.0.0.1:%d", f.port);
    slot_etcd_opts o = {.body_bytes_max = 64 << 10};
    slot_etcd *c = NULL;
    CHECK_ST(slot_etcd_new(&loop, eps, &o, &c), 0);
    res r = {0};
    CHECK_ST(slot_etcd_get(c, "/k", on_get, &r), 0);
    CHECK(run_until(&r.done, WAIT_MS));
    CHECK_ST(r.status, SLOT_ETCD_ETOOBIG);
    watch_log l = {0};
    watch(c, &l, "/k", false, 1);
    CHECK(run_until(&l.ended, WAIT_MS));
    CHECK_ST(l.end_status, SLOT_ETCD_ETOOBIG);
    slot_etcd_close(c);
    uv_close((uv_handle_t *)&f.server, NULL);
    loop_finish();
    free(big);
}

/* ---- tests against etcd ---- */

static void test_get_missing(void) {
    etcd_srv s;
    etcd_start(&s);
    loop_open();
    slot_etcd *c = client(s.url, 0, 0);
    res r = get_sync(c, "/slotd/t/config");
    CHECK_ST(r.status, 0);
    CHECK(!r.found);
    CHECK_GE(r.revision, 1);
    CHECK_EQ(r.value_len, 0);
    client_close(c);
    etcd_stop(&s);
}

static void test_put_get_binary_prefix_del(void) {
    etcd_srv s;
    etcd_start(&s);
    loop_open();
    slot_etcd *c = client(s.url, 0, 0);
    uint8_t v[256];
    for (int i = 0; i < 256; i++)
        v[i] = (uint8_t)i;
    res p = put_sync(c, "/slotd/t/node/a", v, sizeof v, 0);
    CHECK_ST(p.status, 0);
    CHECK_GE(p.revision, 2);
    res g = get_sync(c, "/slotd/t/node/a");
    CHECK_ST(g.status, 0);
    CHECK(g.found);
    CHECK_EQ(g.value_len, 256);
    CHECK(memcmp(g.value, v, 256) == 0);
    CHECK_EQ(g.mod_rev, p.revision);
    CHECK_EQ(g.create_rev, p.revision);
    CHECK_EQ(g.version, 1);
    CHECK_EQ(g.lease, 0);
    CHECK_EQ(g.revision, p.revision);
    res e = put_sync(c, "/slotd/t/empty", "", 0, 0); /* an empty value is a value */
    CHECK_ST(e.status, 0);
    g = get_sync(c, "/slotd/t/empty");
    CHECK(g.found);
    CHECK_EQ(g.value_len, 0);

    CHECK_ST(put_sync(c, "/slotd/t/node/c", "3", 1, 0).status, 0);
    CHECK_ST(put_sync(c, "/slotd/t/node/b", "2", 1, 0).status, 0);
    CHECK_ST(put_sync(c, "/slotd/t/nodeX", "x", 1, 0).status, 0);
    CHECK_ST(put_sync(c, "/slotd/t/node0", "x", 1, 0).status, 0); /* '0' follows '/' */
    res l = {0};
    CHECK_ST(slot_etcd_get_prefix(c, "/slotd/t/node/", 10, on_range, &l), 0);
    CHECK(run_until(&l.done, WAIT_MS));
    CHECK_ST(l.status, 0);
    CHECK_EQ(l.count, 3);
    CHECK(!l.more);
    CHECK(strcmp(l.keys[0], "/slotd/t/node/a") == 0);
    CHECK(strcmp(l.keys[1], "/slotd/t/node/b") == 0);
    CHECK(strcmp(l.keys[2], "/slotd/t/node/c") == 0);
    l = (res){0};
    CHECK_ST(slot_etcd_get_prefix(c, "/slotd/t/node/", 2, on_range, &l), 0);
    CHECK(run_until(&l.done, WAIT_MS));
    CHECK_EQ(l.count, 2);
    CHECK(l.more);
    l = (res){0};
    CHECK_ST(slot_etcd_get_prefix(c, "/nothing/", 2, on_range, &l), 0);
    CHECK(run_until(&l.done, WAIT_MS));
    CHECK_ST(l.status, 0);
    CHECK_EQ(l.count, 0);

    res d = del_sync(c, "/slotd/t/node/a");
    CHECK_ST(d.status, 0);
    CHECK_EQ(d.deleted, 1);
    CHECK_GT(d.revision, p.revision);
    CHECK_EQ(del_sync(c, "/slotd/t/node/a").deleted, 0);
    CHECK(!get_sync(c, "/slotd/t/node/a").found);
    client_close(c);
    etcd_stop(&s);
}

static void test_cas(void) {
    etcd_srv s;
    etcd_start(&s);
    loop_open();
    slot_etcd *c = client(s.url, 0, 0);
    const char *k = "/slotd/t/config";
    /* create-if-absent twice: the second fails and shows the first's value */
    res a = cas_sync(c, k, 0, "{\"epoch\":1}", 0);
    CHECK_ST(a.status, 0);
    CHECK(a.succeeded);
    res b = cas_sync(c, k, 0, "{\"epoch\":99}", 0);
    CHECK_ST(b.status, 0);
    CHECK(!b.succeeded);
    CHECK(b.found);
    CHECK_EQ(b.mod_rev, a.revision);
    CHECK(b.value_len == 11 && memcmp(b.value, "{\"epoch\":1}", 11) == 0);
    /* on the right revision, then on a stale one */
    res r2 = cas_sync(c, k, a.revision, "{\"epoch\":2}", 0);
    CHECK(r2.succeeded);
    CHECK_GT(r2.revision, a.revision);
    res stale = cas_sync(c, k, a.revision, "{\"epoch\":3}", 0);
    CHECK_ST(stale.status, 0);
    CHECK(!stale.succeeded);
    CHECK(stale.found);
    CHECK_EQ(stale.mod_rev, r2.revision);
    CHECK(stale.value_len == 11 && memcmp(stale.value, "{\"epoch\":2}", 11) == 0);
    res r3 = cas_sync(c, k, stale.mod_rev, "{\"epoch\":3}", 0);
    CHECK(r3.succeeded);
    res g = get_sync(c, k);
    CHECK_EQ(g.mod_rev, r3.revision);
    CHECK_EQ(g.version, 3);
    CHECK(g.value_len == 11 && memcmp(g.value, "{\"epoch\":3}", 11) == 0);
    /* an expected revision on a key that does not exist */
    res none = cas_sync(c, "/slotd/t/none", 5, "x", 0);
    CHECK_ST(none.status, 0);
    CHECK(!none.succeeded);
    CHECK(!none.found);
    client_close(c);
    etcd_stop(&s);
}

static void test_lease_expiry_and_watch_delete(void) {
    etcd_srv s;
    etcd_start(&s);
    loop_open();
    slot_etcd *c = client(s.url, 0, 0);
    res gr = lease_sync(c, 0, 2);
    CHECK_ST(gr.status, 0);
    CHECK_GT(gr.id, 0);
    CHECK_GE(gr.ttl, 2);
    res ka = lease_sync(c, 1, gr.id);
    CHECK_ST(ka.status, 0);
    CHECK_EQ(ka.id, gr.id);
    CHECK_GT(ka.ttl, 0);
    const char *k = "/slotd/t/node/n1";
    res put = cas_sync(c, k, 0, "{\"addr\":\"127.0.0.1:1\",\"seq\":0}", gr.id);
    CHECK(put.succeeded);
    res g = get_sync(c, k);
    CHECK(g.found);
    CHECK_EQ(g.lease, gr.id);
    watch_log l = {0};
    watch(c, &l, "/slotd/t/node/", true, put.revision + 1);
    /* no more keep-alives: the lease expires (TTL 2 s) and takes the key */
    CHECK(wait_events(&l, 1));
    CHECK_EQ(l.type[0], SLOT_ETCD_EVENT_DELETE);
    CHECK(strcmp(l.key[0], k) == 0);
    CHECK_GT(l.rev[0], put.revision);
    CHECK(!get_sync(c, k).found);
    res gone = lease_sync(c, 1, gr.id);
    CHECK_ST(gone.status, 0);
    CHECK_EQ(gone.ttl, 0);
    /* a put under a lease that is gone */
    CHECK_ST(put_sync(c, k, "x", 1, gr.id).status, SLOT_ETCD_ENOTFOUND);
    /* revoke: now, then again */
    res g2 = lease_sync(c, 0, 30);
    CHECK_ST(put_sync(c, "/slotd/t/node/n2", "y", 1, g2.id).status, 0);
    CHECK(wait_events(&l, 2));
    CHECK_EQ(l.type[1], SLOT_ETCD_EVENT_PUT);
    res rv = lease_sync(c, 2, g2.id);
    CHECK_ST(rv.status, 0);
    CHECK_EQ(rv.id, g2.id);
    CHECK(wait_events(&l, 3));
    CHECK_EQ(l.type[2], SLOT_ETCD_EVENT_DELETE);
    CHECK(strcmp(l.key[2], "/slotd/t/node/n2") == 0);
    CHECK_ST(lease_sync(c, 2, g2.id).status, SLOT_ETCD_ENOTFOUND);
    slot_etcd_watch_cancel(l.w);
    CHECK_EQ(l.end_calls, 1);
    CHECK_ST(l.end_status, SLOT_ETCD_ECANCELLED);
    CHECK_EQ(l.last_rev, l.rev[2]);
    client_close(c);
    etcd_stop(&s);
}

static void test_watch_from_revision(void) {
    etcd_srv s;
    etcd_start(&s);
    loop_open();
    slot_etcd *c = client(s.url, 0, 0);
    int64_t rev[6];
    for (int i = 0; i < 5; i++) {
        char k[32], v[8];
        snprintf(k, sizeof k, "/w/%d", i);
        snprintf(v, sizeof v, "v%d", i);
        res p = put_sync(c, k, v, strlen(v), 0);
        CHECK_ST(p.status, 0);
        rev[i] = p.revision;
        if (i > 0)
            CHECK_GT(rev[i], rev[i - 1]);
    }
    watch_log all = {0}, late = {0}, single = {0}, once = {.cancel_after = 1};
    watch(c, &all, "/w/", true, rev[0]);
    watch(c, &late, "/w/", true, rev[3]);
    watch(c, &single, "/w/2", false, 1);
    watch(c, &once, "/w/", true, rev[0]);
    CHECK(wait_events(&all, 5));
    for (int i = 0; i < 5; i++) {
        char k[32], v[8];
        snprintf(k, sizeof k, "/w/%d", i);
        snprintf(v, sizeof v, "v%d", i);
        CHECK_EQ(all.type[i], SLOT_ETCD_EVENT_PUT);
        CHECK_EQ(all.rev[i], rev[i]);
        CHECK(strcmp(all.key[i], k) == 0);
        CHECK(strcmp(all.value[i], v) == 0);
    }
    CHECK(wait_events(&late, 2));
    CHECK_EQ(late.rev[0], rev[3]);
    CHECK_EQ(late.rev[1], rev[4]);
    CHECK(wait_events(&single, 1));
    CHECK_EQ(single.rev[0], rev[2]);
    /* cancelled from its own event callback: one event, then the end */
    CHECK(run_until(&once.ended, WAIT_MS));
    CHECK_EQ(once.n, 1);
    CHECK_EQ(once.end_calls, 1);
    CHECK_ST(once.end_status, SLOT_ETCD_ECANCELLED);
    CHECK_EQ(once.last_rev, rev[0]);
    /* live changes after the history */
    res p = put_sync(c, "/w/9", "live", 4, 0);
    rev[5] = p.revision;
    CHECK_ST(del_sync(c, "/w/0").status, 0);
    CHECK(wait_events(&all, 7));
    CHECK_EQ(all.rev[5], rev[5]);
    CHECK(strcmp(all.value[5], "live") == 0);
    CHECK_EQ(all.type[6], SLOT_ETCD_EVENT_DELETE);
    CHECK(strcmp(all.key[6], "/w/0") == 0);
    CHECK_GT(all.rev[6], rev[5]);
    CHECK(wait_events(&late, 4));
    CHECK_EQ(single.n, 1); /* a single-key watch sees only its key */
    CHECK(!all.ended && !late.ended && !single.ended);
    /* a "from now" watch sees only what comes after it started; when that
     * is depends on etcd, so put until it reports one */
    watch_log now = {0};
    watch(c, &now, "/w/", true, 0);
    res q = {0};
    int puts = 0;
    while (now.n == 0 && puts < 100) {
        q = put_sync(c, "/w/1", "again", 5, 0);
        CHECK_ST(q.status, 0);
        puts++;
        bool never = false;
        for (int i = 0; i < 10 && now.n == 0; i++)
            run_until(&never, 20);
    }
    CHECK_GT(now.n, 0);
    CHECK_GT(now.rev[0], all.rev[6]); /* nothing from before it started */
    CHECK_EQ(now.rev[now.n - 1], q.revision);
    CHECK(wait_events(&all, 7 + puts)); /* each watch has its own stream: wait for this one too */
    CHECK_EQ(all.rev[7 + puts - 1], q.revision);
    client_close(c); /* the open watches end cancelled, once each */
    CHECK_EQ(all.end_calls, 1);
    CHECK_ST(all.end_status, SLOT_ETCD_ECANCELLED);
    CHECK_EQ(all.last_rev, q.revision);
    CHECK_EQ(late.end_calls, 1);
    CHECK_EQ(single.end_calls, 1);
    CHECK_EQ(single.last_rev, rev[2]);
    CHECK_EQ(now.end_calls, 1);
    CHECK_EQ(once.end_calls, 1);
    etcd_stop(&s);
}

static void test_endpoints_failover(void) {
    etcd_srv s;
    etcd_start(&s);
    loop_open();
    char eps[160];
    snprintf(eps, sizeof eps, "http://127.0.0.1:%d,%s", free_port(), s.url);
    slot_etcd *c = client(eps, 0, 0);
    for (int i = 0; i < 3; i++) {
        res p = put_sync(c, "/slotd/t/x", "1", 1, 0);
        CHECK_ST(p.status, 0);
        res g = get_sync(c, "/slotd/t/x");
        CHECK_ST(g.status, 0);
        CHECK(g.found);
    }
    watch_log l = {0};
    watch(c, &l, "/slotd/t/x", false, 1);
    CHECK(wait_events(&l, 3));
    slot_etcd_watch_cancel(l.w);
    CHECK_EQ(l.end_calls, 1);
    slot_etcd_close(c);
    /* a first endpoint that accepts and never answers: it times out, the
     * second answers */
    int bport;
    int bfd = blackhole(&bport);
    snprintf(eps, sizeof eps, "http://127.0.0.1:%d,%s", bport, s.url);
    c = client(eps, 1000, 0);
    res g = get_sync(c, "/slotd/t/x");
    CHECK_ST(g.status, 0);
    CHECK(g.found);
    client_close(c);
    close(bfd);
    etcd_stop(&s);
}

static void test_etcd_stopped_and_restarted(void) {
    etcd_srv s;
    etcd_start(&s);
    loop_open();
    slot_etcd *c = client(s.url, 0, 0);
    res p = put_sync(c, "/slotd/t/config", "e1", 2, 0);
    CHECK_ST(p.status, 0);
    watch_log l = {0};
    watch(c, &l, "/slotd/t/", true, p.revision);
    CHECK(wait_events(&l, 1));
    etcd_stop(&s);
    /* the watch reports the loss and the last revision it delivered */
    CHECK(run_until(&l.ended, WAIT_MS));
    CHECK_EQ(l.end_calls, 1);
    CHECK_ST(l.end_status, SLOT_ETCD_EDISCONNECT);
    CHECK_EQ(l.last_rev, p.revision);
    /* requests fail in bounded time, each callback once */
    res r[8] = {{0}};
    for (int i = 0; i < 8; i++)
        CHECK_ST(slot_etcd_get(c, "/slotd/t/config", on_get, &r[i]), 0);
    for (int i = 0; i < 8; i++) {
        CHECK(run_until(&r[i].done, WAIT_MS));
        CHECK_EQ(r[i].calls, 1);
        CHECK(r[i].status == SLOT_ETCD_ECONNECT || r[i].status == SLOT_ETCD_ETIMEDOUT);
    }
    res w = put_sync(c, "/slotd/t/config", "e2", 2, 0);
    CHECK(w.status == SLOT_ETCD_ECONNECT || w.status == SLOT_ETCD_ETIMEDOUT);
    watch_log l2 = {0};
    watch(c, &l2, "/slotd/t/", true, l.last_rev + 1);
    CHECK(run_until(&l2.ended, WAIT_MS));
    CHECK(l2.end_status == SLOT_ETCD_ECONNECT || l2.end_status == SLOT_ETCD_ETIMEDOUT);
    /* back on the same data folder and port: it works again, the data kept */
    etcd_restart(&s);
    res g = get_sync(c, "/slotd/t/config");
    CHECK_ST(g.status, 0);
    CHECK(g.found);
    CHECK(g.value_len == 2 && memcmp(g.value, "e1", 2) == 0);
    CHECK_EQ(g.mod_rev, p.revision);
    res p2 = put_sync(c, "/slotd/t/config", "e3", 2, 0);
    CHECK_ST(p2.status, 0);
    /* re-armed from where the lost watch stopped: nothing missed */
    watch(c, &l2, "/slotd/t/", true, l.last_rev + 1);
    CHECK(wait_events(&l2, 1));
    CHECK_EQ(l2.rev[0], p2.revision);
    CHECK(strcmp(l2.value[0], "e3") == 0);
    client_close(c);
    CHECK_EQ(l2.end_calls, 1);
    etcd_stop(&s);
}

static int full_done;
static void on_get_count(slot_etcd *c, int status, const slot_etcd_get_result *g, void *data) {
    on_get(c, status, g, data);
    full_done++;
}

static void test_inflight_bound(void) {
    etcd_srv s;
    etcd_start(&s);
    loop_open();
    slot_etcd *c = client(s.url, 0, 3);
    res r[4] = {{0}};
    for (int i = 0; i < 3; i++)
        CHECK_ST(slot_etcd_get(c, "/k", on_get_count, &r[i]), 0);
    CHECK_ST(slot_etcd_get(c, "/k", on_get_count, &r[3]), SLOT_ETCD_EFULL);
    watch_log l = {0};
    slot_etcd_watch *w = NULL;
    CHECK_ST(slot_etcd_watch_start(c, "/k", false, 0, on_event, on_watch_end, &l, &w), SLOT_ETCD_EFULL);
    CHECK(w == NULL);
    bool never = false;
    for (int i = 0; i < WAIT_MS / 100 && full_done < 3; i++)
        run_until(&never, 100);
    CHECK_EQ(full_done, 3);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(r[i].calls, 1);
        CHECK_ST(r[i].status, 0);
    }
    CHECK_EQ(r[3].calls, 0);
    /* the bound is free again */
    CHECK_ST(get_sync(c, "/k").status, 0);
    client_close(c);
    etcd_stop(&s);
}

/* close from inside a callback, with a watch, a CAS and gets pending. */
static slot_etcd *inner_client;
static watch_log inner_watch;
static res inner_res[3];
static void on_get_then_close(slot_etcd *c, int status, const slot_etcd_get_result *g, void *data) {
    on_get(c, status, g, data);
    CHECK_ST(status, 0);
    CHECK_ST(slot_etcd_get(c, "/k", on_get, &inner_res[1]), 0); /* still open here */
    slot_etcd_close(c);
    CHECK_EQ(inner_watch.end_calls, 0); /* deferred until this callback returns */
    CHECK_ST(slot_etcd_get(c, "/k", on_get, &inner_res[2]), SLOT_ETCD_ECANCELLED);
}

static void test_close_pending(void) {
    etcd_srv s;
    etcd_start(&s);
    loop_open();
    slot_etcd *c = client(s.url, 0, 0);
    /* close at once: nothing was sent yet */
    res r[5] = {{0}};
    for (int i = 0; i < 4; i++)
        CHECK_ST(slot_etcd_get(c, "/k", on_get, &r[i]), 0);
    CHECK_ST(slot_etcd_cas(c, "/k", 0, "v", 1, 0, on_cas, &r[4]), 0);
    watch_log l = {0};
    watch(c, &l, "/k", false, 0);
    slot_etcd_close(c);
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(r[i].calls, 1);
        CHECK_ST(r[i].status, SLOT_ETCD_ECANCELLED);
    }
    CHECK_EQ(l.end_calls, 1);
    CHECK_ST(l.end_status, SLOT_ETCD_ECANCELLED);
    run_for(100);
    for (int i = 0; i < 5; i++)
        CHECK_EQ(r[i].calls, 1);
    /* the CAS did not reach etcd */
    inner_client = c = client(s.url, 0, 0);
    CHECK(!get_sync(c, "/k").found);
    /* close from a callback while a watch is open */
    watch(c, &inner_watch, "/k", false, 0);
    CHECK_ST(slot_etcd_get(c, "/k", on_get_then_close, &inner_res[0]), 0);
    CHECK(run_until(&inner_res[0].done, WAIT_MS));
    CHECK_EQ(inner_watch.end_calls, 1);
    CHECK_ST(inner_watch.end_status, SLOT_ETCD_ECANCELLED);
    CHECK_EQ(inner_res[1].calls, 1);
    CHECK_ST(inner_res[1].status, SLOT_ETCD_ECANCELLED);
    CHECK_EQ(inner_res[2].calls, 0);
    loop_finish();
    etcd_stop(&s);
}

/* ---- main ---- */

typedef struct test_case {
    const char *name;
    void (*fn)(void);
    bool needs_etcd;
} test_case;

static const test_case tests[] = {
    {"base64", test_base64, false},
    {"errors_and_arguments", test_errors_and_arguments, false},
    {"timeout_blackhole", test_timeout_blackhole, false},
    {"close_pending_blackhole", test_close_pending_blackhole, false},
    {"bad_responses", test_bad_responses, false},
    {"get_missing", test_get_missing, true},
    {"put_get_binary_prefix_del", test_put_get_binary_prefix_del, true},
    {"cas", test_cas, true},
    {"lease_expiry_and_watch_delete", test_lease_expiry_and_watch_delete, true},
    {"watch_from_revision", test_watch_from_revision, true},
    {"endpoints_failover", test_endpoints_failover, true},
    {"etcd_stopped_and_restarted", test_etcd_stopped_and_restarted, true},
    {"inflight_bound", test_inflight_bound, true},
    {"close_pending", test_close_pending, true},
};

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (access(ETCD_BIN, X_OK) != 0) {
        printf("SKIP: %s not found (install Debian's etcd-server)\n", ETCD_BIN);
        return 77;
    }
    const char *only = argc > 1 ? argv[1] : NULL;
    const char *tmp = getenv("TMPDIR");
    int passed = 0, failed = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (only && strcmp(only, tests[i].name) != 0)
            continue;
        snprintf(test_dir, sizeof test_dir, "%s/slot-etcd-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(test_dir)) {
            perror("mkdtemp");
            return 1;
        }
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            curl_global_init(CURL_GLOBAL_DEFAULT);
            tests[i].fn();
            fflush(NULL);
            exit(0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (!ok) {
            char log[300];
            snprintf(log, sizeof log, "%s/etcd.log", test_dir);
            FILE *f = fopen(log, "r");
            if (f) { /* the tail of etcd's log, for the reader */
                fseek(f, 0, SEEK_END);
                long size = ftell(f);
                fseek(f, size > 4000 ? size - 4000 : 0, SEEK_SET);
                char buf[4001];
                size_t n = fread(buf, 1, 4000, f);
                buf[n] = '\0';
                fprintf(stderr, "--- etcd log (tail) ---\n%s\n---\n", buf);
                fclose(f);
            }
        }
        nftw(test_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        printf("%s %s%s\n", ok ? "ok  " : "FAIL", tests[i].name,
               ok ? "" : (WIFSIGNALED(st) ? " (killed by a signal)" : ""));
        fflush(stdout);
        if (ok)
            passed++;
        else
            failed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
