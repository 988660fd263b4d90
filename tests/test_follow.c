/*
 * test_follow.c — the client library following a replica set's primary
 * (slot_follow_*, slot/client.h) against fake nodes: small loopback
 * listeners on threads (127.0.0.1, port 0) that answer not_primary with or
 * without an address, close the connection mid-request, answer unavailable
 * once, stay silent, or act as a primary that keeps one hold per request key
 * (a repeat is a replay, as slotd's idempotency does). Also the parsing of
 * not_primary and cluster replies, and slot_addr_split.
 */
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

TEST_DECLARE(follow_addr_split)
TEST_DECLARE(follow_parses_not_primary_and_cluster)
TEST_DECLARE(follow_new_refuses_bad_lists)
TEST_DECLARE(follow_redirect_sends_the_same_key)
TEST_DECLARE(follow_learns_a_primary_not_in_the_list)
TEST_DECLARE(follow_no_address_tries_the_next_node)
TEST_DECLARE(follow_closed_mid_request_is_a_replay)
TEST_DECLARE(follow_unavailable_then_replay)
TEST_DECLARE(follow_refused_and_silent_nodes_are_skipped)
TEST_DECLARE(follow_gives_up_after_its_attempts)
TEST_DECLARE(follow_gives_up_at_its_deadline)
TEST_DECLARE(follow_says_hello_after_each_connect)
TEST_DECLARE(follow_final_errors_are_not_retried)

TEST_LIST_START
TEST_ENTRY(follow_addr_split)
TEST_ENTRY(follow_parses_not_primary_and_cluster)
TEST_ENTRY(follow_new_refuses_bad_lists)
TEST_ENTRY(follow_redirect_sends_the_same_key)
TEST_ENTRY(follow_learns_a_primary_not_in_the_list)
TEST_ENTRY(follow_no_address_tries_the_next_node)
TEST_ENTRY(follow_closed_mid_request_is_a_replay)
TEST_ENTRY(follow_unavailable_then_replay)
TEST_ENTRY(follow_refused_and_silent_nodes_are_skipped)
TEST_ENTRY(follow_gives_up_after_its_attempts)
TEST_ENTRY(follow_gives_up_at_its_deadline)
TEST_ENTRY(follow_says_hello_after_each_connect)
TEST_ENTRY(follow_final_errors_are_not_retried)
TEST_LIST_END

/* ---------------------------------------------------------------- the fake nodes */

typedef enum fake_mode {
    F_PRIMARY,      /* one hold per request key; a repeat is a replay */
    F_REDIRECT,     /* not_primary naming `target` */
    F_NO_ADDR,      /* not_primary without an address */
    F_CLOSE_ONCE,   /* the first request: kept, then the connection closed unanswered; then F_PRIMARY */
    F_UNAVAIL_ONCE, /* the first request: kept, answered unavailable; then F_PRIMARY */
    F_UNAVAIL,      /* unavailable, always, keeping nothing */
    F_SILENT,       /* reads, never answers */
} fake_mode;

#define FAKE_CONNS 8
#define KEYS_MAX 64
#define LOG_MAX 256

/* What the fake primary keeps: request keys, one hold each. Shared by the fakes of a case. */
static struct {
    pthread_mutex_t mu;
    char keys[KEYS_MAX][80];
    int nkeys;
    struct {
        int node;
        char line[256];
    } log[LOG_MAX]; /* every request line received, in order */
    int nlog;
} book = {.mu = PTHREAD_MUTEX_INITIALIZER};

typedef struct fake {
    int id;
    int lfd;
    uint16_t port;
    pthread_t th;
    volatile int stop;
    fake_mode mode;
    char target[64]; /* F_REDIRECT: "127.0.0.1:P" */
    int requests;    /* lines answered or dropped (the fake's own thread) */
    int accepted;    /* connections */
} fake;

/* The hold a primary keeps for key: its id and whether it is a replay. */
static int keep_hold(const char *key, bool *replay)
{
    pthread_mutex_lock(&book.mu);
    int i = 0;
    while (i < book.nkeys && strcmp(book.keys[i], key) != 0)
        i++;
    *replay = i < book.nkeys;
    if (!*replay && book.nkeys < KEYS_MAX)
        snprintf(book.keys[book.nkeys++], sizeof(book.keys[0]), "%s", key);
    pthread_mutex_unlock(&book.mu);
    return i;
}

static void log_line(int node, const char *line)
{
    pthread_mutex_lock(&book.mu);
    if (book.nlog < LOG_MAX) {
        book.log[book.nlog].node = node;
        snprintf(book.log[book.nlog].line, sizeof(book.log[0].line), "%.255s", line);
        book.nlog++;
    }
    pthread_mutex_unlock(&book.mu);
}

/* A primary's answer to line into out. */
static void primary_answer(const char *line, char *out, size_t cap)
{
    json_t *req = json_loads(line, 0, NULL);
    const char *op = json_string_value(json_object_get(req, "op"));
    const char *key = json_string_value(json_object_get(req, "request"));
    if (op && strcmp(op, "hold") == 0 && key) {
        bool replay = false;
        int h = keep_hold(key, &replay);
        snprintf(out, cap, "{\"ok\":true,\"status\":\"held\",\"hold\":\"h%d\",\"qty\":%d%s}\n", h,
                 (int)json_integer_value(json_object_get(req, "qty")), replay ? ",\"replay\":true" : "");
    } else if (op && strcmp(op, "hello") == 0) {
        snprintf(out, cap, "{\"ok\":true,\"role\":\"admin\",\"protocol\":1}\n");
    } else if (op && strcmp(op, "event") == 0) {
        snprintf(out, cap, "{\"ok\":false,\"error\":\"unknown_event\",\"message\":\"no such event\"}\n");
    } else {
        snprintf(out, cap, "{\"ok\":true}\n");
    }
    json_decref(req);
}

/* The answer of fk to one line; false: close the connection without one. */
static bool fake_answer(fake *fk, const char *line, char *out, size_t cap)
{
    log_line(fk->id, line);
    int nth = fk->requests++;
    bool hello = strstr(line, "\"op\":\"hello\"") != NULL;
    switch (fk->mode) {
    case F_REDIRECT:
        snprintf(out, cap,
                 "{\"ok\":false,\"error\":\"not_primary\",\"message\":\"ask the primary\",\"primary\":\"%s\"}\n",
                 fk->target);
        return true;
    case F_NO_ADDR:
        snprintf(out, cap, "{\"ok\":false,\"error\":\"not_primary\",\"message\":\"no primary known\"}\n");
        return true;
    case F_UNAVAIL:
        snprintf(out, cap, "{\"ok\":false,\"error\":\"unavailable\",\"message\":\"replicas silent\"}\n");
        return true;
    case F_SILENT:
        out[0] = 0;
        return true;
    case F_CLOSE_ONCE:
    case F_UNAVAIL_ONCE:
        primary_answer(line, out, cap); /* the write is kept either way: the outcome is what is lost */
        if (nth == 0 && !hello && fk->mode == F_CLOSE_ONCE)
            return false;
        if (nth == 0 && !hello)
            snprintf(out, cap, "{\"ok\":false,\"error\":\"unavailable\",\"message\":\"not durable in time\"}\n");
        return true;
    case F_PRIMARY:
        break;
    }
    primary_answer(line, out, cap);
    return true;
}

/* Serve what one connection sent; false when it is to be closed. */
static bool fake_serve(fake *fk, int fd, char *buf, size_t *len)
{
    ssize_t n = read(fd, buf + *len, 8192 - *len - 1);
    if (n <= 0)
        return false;
    *len += (size_t)n;
    char *start = buf, *nl;
    while ((nl = memchr(start, '\n', (size_t)(buf + *len - start))) != NULL) {
        *nl = 0;
        char reply[512];
        if (!fake_answer(fk, start, reply, sizeof(reply)))
            return false;
        size_t rl = strlen(reply);
        if (rl && send(fd, reply, rl, MSG_NOSIGNAL) != (ssize_t)rl)
            return false;
        start = nl + 1;
    }
    *len = (size_t)(buf + *len - start);
    memmove(buf, start, *len);
    return true;
}

static void *fake_main(void *arg)
{
    fake *fk = arg;
    struct pollfd pfd[FAKE_CONNS + 1] = {{.fd = fk->lfd, .events = POLLIN}};
    static __thread char bufs[FAKE_CONNS][8192];
    size_t lens[FAKE_CONNS] = {0};
    int n = 1;
    while (!fk->stop) {
        if (poll(pfd, (nfds_t)n, 20) <= 0)
            continue;
        if ((pfd[0].revents & POLLIN) && n <= FAKE_CONNS) {
            int fd = accept(fk->lfd, NULL, NULL);
            if (fd >= 0) {
                fk->accepted++;
                pfd[n] = (struct pollfd){.fd = fd, .events = POLLIN};
                lens[n - 1] = 0;
                n++;
            }
        }
        for (int i = 1; i < n; i++)
            if ((pfd[i].revents & (POLLIN | POLLHUP)) && !fake_serve(fk, pfd[i].fd, bufs[i - 1], &lens[i - 1])) {
                close(pfd[i].fd);
                n--; /* the last connection takes its place, so the slots never run out */
                pfd[i] = pfd[n];
                memcpy(bufs[i - 1], bufs[n - 1], lens[n - 1]);
                lens[i - 1] = lens[n - 1];
                i--;
            }
    }
    for (int i = 1; i < n; i++)
        close(pfd[i].fd);
    return NULL;
}

static void fake_start(fake *fk, int id, fake_mode mode, const fake *target)
{
    memset(fk, 0, sizeof(*fk));
    fk->id = id;
    fk->mode = mode;
    if (target)
        snprintf(fk->target, sizeof(fk->target), "127.0.0.1:%u", (unsigned)target->port);
    fk->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fk->lfd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    ASSERT_EQ(bind(fk->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    ASSERT_EQ(listen(fk->lfd, 16), 0);
    ASSERT_EQ(getsockname(fk->lfd, (struct sockaddr *)&a, &al), 0);
    fk->port = ntohs(a.sin_port);
    ASSERT_EQ(pthread_create(&fk->th, NULL, fake_main, fk), 0);
}

static void fake_stop(fake *fk)
{
    fk->stop = 1;
    ASSERT_EQ(pthread_join(fk->th, NULL), 0);
    close(fk->lfd);
}

/* A loopback port nobody listens on: bound, then closed. */
static uint16_t dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void book_reset(void)
{
    pthread_mutex_lock(&book.mu);
    book.nkeys = 0;
    book.nlog = 0;
    pthread_mutex_unlock(&book.mu);
}

/* Every logged hold line carried key: the same request each time. Returns how many there were. */
static int lines_with_key(const char *key)
{
    char want[100];
    snprintf(want, sizeof(want), "\"request\":\"%s\"", key);
    int n = 0;
    pthread_mutex_lock(&book.mu);
    for (int i = 0; i < book.nlog; i++)
        if (strstr(book.log[i].line, "\"op\":\"hold\"")) {
            ASSERT(strstr(book.log[i].line, want) != NULL);
            n++;
        }
    pthread_mutex_unlock(&book.mu);
    return n;
}

static slot_follow *follow_of(const char *list, const slot_follow_opts *o)
{
    slot_follow *f = NULL;
    char err[200];
    int rc = slot_follow_new(list, o, &f, err, sizeof(err));
    if (rc != 0)
        T_FAIL_("slot_follow_new(%s) = %d: %s", list, rc, err);
    return f;
}

static char *list_of(const fake *a, const fake *b, const fake *c)
{
    static char buf[200];
    const fake *all[] = {a, b, c};
    buf[0] = 0;
    for (int i = 0; i < 3 && all[i]; i++)
        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s127.0.0.1:%u", i ? "," : "", (unsigned)all[i]->port);
    return buf;
}

static void hold_req(slot_req *req, const char *key)
{
    ASSERT_EQ(slot_req_hold(req, "E", "alice", key, 2), 0);
}

/* ---------------------------------------------------------------- parsing */

TEST_IMPL(follow_addr_split)
{
    char host[64];
    uint16_t port = 0;
    ASSERT_EQ(slot_addr_split("127.0.0.1:7000", 14, host, sizeof(host), &port), 0);
    ASSERT_STR_EQ(host, "127.0.0.1");
    ASSERT_EQ(port, 7000);
    ASSERT_EQ(slot_addr_split("[::1]:65535", 11, host, sizeof(host), &port), 0);
    ASSERT_STR_EQ(host, "::1");
    ASSERT_EQ(port, 65535);
    ASSERT_EQ(slot_addr_split("node-a:1,rest", 8, host, sizeof(host), &port), 0); /* len bounds it */
    ASSERT_STR_EQ(host, "node-a");
    const char *bad[] = {"", ":7000", "h:", "h:0", "h:65536", "h:7x", "[::1:7000", "[::1]7000", "h:123456", "h"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (slot_addr_split(bad[i], strlen(bad[i]), host, sizeof(host), &port) != -EINVAL)
            T_FAIL_("'%s' was taken as an address", bad[i]);
    ASSERT_EQ(slot_addr_split("abcdefgh:1", 10, host, 8, &port), -EINVAL); /* host does not fit */
}

TEST_IMPL(follow_parses_not_primary_and_cluster)
{
    const char *np = "{\"ok\":false,\"error\":\"not_primary\",\"message\":\"m\",\"primary\":\"10.0.0.2:7000\"}";
    slot_reply r;
    ASSERT_EQ(slot_reply_parse(np, strlen(np), &r), 0);
    ASSERT_EQ(r.err, SLOT_E_NOT_PRIMARY);
    ASSERT_STR_EQ(r.primary, "10.0.0.2:7000");
    slot_reply_clear(&r);
    const char *un = "{\"ok\":false,\"error\":\"unavailable\",\"message\":\"m\"}";
    ASSERT_EQ(slot_reply_parse(un, strlen(un), &r), 0);
    ASSERT_EQ(r.err, SLOT_E_UNAVAILABLE);
    ASSERT_STR_EQ(r.primary, "");
    slot_reply_clear(&r);

    const char *cl =
        "{\"ok\":true,\"cluster\":\"sale\",\"node\":\"n2\",\"role\":\"replica\",\"epoch\":7,"
        "\"primary\":\"127.0.0.1:7001\",\"seq\":42,\"members\":[{\"node\":\"n1\",\"addr\":\"127.0.0.1:7001\","
        "\"role\":\"primary\",\"seq\":42,\"lag_ms\":0},{\"node\":\"n2\",\"addr\":\"127.0.0.1:7002\",\"role\":"
        "\"replica\",\"seq\":40,\"lag_ms\":12},7,{\"node\":\"n3\",\"addr\":\"127.0.0.1:7003\",\"role\":\"joining\"}]}";
    ASSERT_EQ(slot_reply_parse(cl, strlen(cl), &r), 0);
    ASSERT_STR_EQ(r.cluster, "sale");
    ASSERT_STR_EQ(r.node, "n2");
    ASSERT_STR_EQ(r.role, "replica");
    ASSERT_U64_EQ(r.epoch, 7);
    ASSERT_U64_EQ(r.seq, 42);
    ASSERT_STR_EQ(r.primary, "127.0.0.1:7001");
    ASSERT_EQ(r.nmembers_total, 4); /* the 7 is listed, not kept */
    ASSERT_EQ(r.nmembers, 3);
    ASSERT_STR_EQ(r.members[1].node, "n2");
    ASSERT_STR_EQ(r.members[1].addr, "127.0.0.1:7002");
    ASSERT_STR_EQ(r.members[1].role, "replica");
    ASSERT_U64_EQ(r.members[1].seq, 40);
    ASSERT_U64_EQ(r.members[1].lag_ms, 12);
    ASSERT_STR_EQ(r.members[2].role, "joining");
    ASSERT_U64_EQ(r.members[2].lag_ms, 0);
    slot_reply_clear(&r);

    /* More members than the bound: the first SLOT_CLUSTER_MEMBERS_MAX are kept. */
    char big[8192] = "{\"ok\":true,\"members\":[";
    for (int i = 0; i < SLOT_CLUSTER_MEMBERS_MAX + 5; i++)
        snprintf(big + strlen(big), sizeof(big) - strlen(big), "%s{\"node\":\"n%d\"}", i ? "," : "", i);
    strcat(big, "]}");
    ASSERT_EQ(slot_reply_parse(big, strlen(big), &r), 0);
    ASSERT_EQ(r.nmembers, SLOT_CLUSTER_MEMBERS_MAX);
    ASSERT_EQ(r.nmembers_total, SLOT_CLUSTER_MEMBERS_MAX + 5);
    slot_reply_clear(&r);
}

TEST_IMPL(follow_new_refuses_bad_lists)
{
    slot_follow *f = NULL;
    char err[200];
    const char *bad[] = {"", "127.0.0.1", "127.0.0.1:1,", ",127.0.0.1:1", "127.0.0.1:1, 127.0.0.1:2", "a:1,b:0"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (slot_follow_new(bad[i], NULL, &f, err, sizeof(err)) != -EINVAL || f != NULL)
            T_FAIL_("list '%s' was taken", bad[i]);
        ASSERT(strstr(err, "HOST:PORT") != NULL);
    }
    char many[2048] = "";
    for (int i = 0; i <= SLOT_FOLLOW_NODES_MAX; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sh:%d", i ? "," : "", 1000 + i);
    ASSERT_EQ(slot_follow_new(many, NULL, &f, err, sizeof(err)), -EINVAL);
    ASSERT(strstr(err, "more than") != NULL);
    slot_follow_opts o;
    slot_follow_opts_default(&o);
    o.attempts_max = 0;
    ASSERT_EQ(slot_follow_new("h:1", &o, &f, err, sizeof(err)), -EINVAL);
    slot_follow_opts_default(&o);
    o.backoff_ms = o.backoff_max_ms + 1;
    ASSERT_EQ(slot_follow_new("h:1", &o, &f, err, sizeof(err)), -EINVAL);
    ASSERT_EQ(slot_follow_new("h:1,h:1", NULL, &f, err, sizeof(err)), 0); /* a repeat is kept once */
    ASSERT_STR_EQ(slot_follow_node(f), "h:1");
    slot_follow_free(f);
    slot_follow_free(NULL);
}

/* ---------------------------------------------------------------- following */

TEST_IMPL(follow_redirect_sends_the_same_key)
{
    book_reset();
    fake p, r1, r2;
    fake_start(&p, 0, F_PRIMARY, NULL);
    fake_start(&r1, 1, F_REDIRECT, &p);
    fake_start(&r2, 2, F_REDIRECT, &p);
    slot_follow *f = follow_of(list_of(&r1, &r2, &p), NULL);
    slot_req req;
    hold_req(&req, "k-1");
    slot_reply rep;
    ASSERT_EQ(slot_follow_call(f, &req, &rep), 0);
    ASSERT(rep.ok);
    ASSERT_STR_EQ(rep.hold, "h0");
    ASSERT(!rep.replay);
    char want[32];
    snprintf(want, sizeof(want), "127.0.0.1:%u", (unsigned)p.port);
    ASSERT_STR_EQ(slot_follow_node(f), want);
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_with_key("k-1"), 2); /* r1 (not_primary), then p */
    ASSERT_EQ(book.log[0].node, 1);
    ASSERT_EQ(book.log[1].node, 0);
    ASSERT_STR_EQ(book.log[0].line, book.log[1].line); /* byte for byte */
    /* The next call goes straight to the primary: no more redirects. */
    hold_req(&req, "k-2");
    ASSERT_EQ(slot_follow_call(f, &req, &rep), 0);
    ASSERT_STR_EQ(rep.hold, "h1");
    slot_reply_clear(&rep);
    slot_follow_stats st;
    slot_follow_stats_get(f, &st);
    ASSERT_U64_EQ(st.calls, 2);
    ASSERT_U64_EQ(st.sends, 3);
    ASSERT_U64_EQ(st.retries, 1);
    ASSERT_U64_EQ(st.redirects, 1);
    ASSERT_U64_EQ(st.connects, 2);
    ASSERT_U64_EQ(st.primary_changes, 0);
    ASSERT_EQ(book.nkeys, 2);
    ASSERT_EQ(r2.requests, 0);
    slot_follow_free(f);
    fake_stop(&p);
    fake_stop(&r1);
    fake_stop(&r2);
}

TEST_IMPL(follow_learns_a_primary_not_in_the_list)
{
    book_reset();
    fake p, r;
    fake_start(&p, 0, F_PRIMARY, NULL);
    fake_start(&r, 1, F_REDIRECT, &p);
    slot_follow_opts o;
    slot_follow_opts_default(&o);
    o.backoff_ms = 1;
    o.backoff_max_ms = 10;
    slot_follow *f = follow_of(list_of(&r, NULL, NULL), &o); /* only the replica is known */
    slot_req req;
    hold_req(&req, "k-1");
    slot_reply rep;
    ASSERT_EQ(slot_follow_call(f, &req, &rep), 0);
    ASSERT(rep.ok && !rep.replay);
    slot_reply_clear(&rep);
    /* The primary dies: its connection closes and it refuses; the list leads back to the
     * replica, which still names the dead primary: the call gives up, a clear error. */
    fake_stop(&p);
    hold_req(&req, "k-2");
    int rc = slot_follow_call(f, &req, &rep);
    ASSERT_EQ(rc, -EAGAIN);
    ASSERT(strstr(slot_follow_error(f), "gave up after") != NULL);
    slot_reply_clear(&rep);
    ASSERT_EQ(book.nkeys, 1);
    slot_follow_free(f);
    fake_stop(&r);
}

TEST_IMPL(follow_no_address_tries_the_next_node)
{
    book_reset();
    fake a, b, p;
    fake_start(&a, 1, F_NO_ADDR, NULL);
    fake_start(&b, 2, F_NO_ADDR, NULL);
    fake_start(&p, 0, F_PRIMARY, NULL);
    slot_follow *f = follow_of(list_of(&a, &b, &p), NULL);
    slot_req req;
    hold_req(&req, "k-9");
    slot_reply rep;
    ASSERT_EQ(slot_follow_call(f, &req, &rep), 0);
    ASSERT(rep.ok && !rep.replay);
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_with_key("k-9"), 3);
    ASSERT_EQ(a.requests, 1);
    ASSERT_EQ(b.requests, 1);
    ASSERT_EQ(book.nkeys, 1);
    slot_follow_free(f);
    fake_stop(&a);
    fake_stop(&b);
    fake_stop(&p);
}

TEST_IMPL(follow_closed_mid_request_is_a_replay)
{
    book_reset();
    fake p;
    fake_start(&p, 0, F_CLOSE_ONCE, NULL);
    slot_follow *f = follow_of(list_of(&p, NULL, NULL), NULL);
    slot_req req;
    hold_req(&req, "k-c");
    slot_reply rep;
    ASSERT_EQ(slot_follow_call(f, &req, &rep), 0);
    /* The first send was kept by the node, then its reply was lost: the resend is a
     * replay of the same hold, and the node holds one, not two. */
    ASSERT(rep.ok);
    ASSERT(rep.replay);
    ASSERT_STR_EQ(rep.hold, "h0");
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_with_key("k-c"), 2);
    ASSERT_EQ(book.nkeys, 1);
    ASSERT_EQ(p.accepted, 2);
    slot_follow_free(f);
    fake_stop(&p);
}

TEST_IMPL(follow_unavailable_then_replay)
{
    book_reset();
    fake p;
    fake_start(&p, 0, F_UNAVAIL_ONCE, NULL);
    slot_follow *f = follow_of(list_of(&p, NULL, NULL), NULL);
    slot_req req;
    hold_req(&req, "k-u");
    slot_req_set_id_int(&req, 77);
    slot_reply rep;
    ASSERT_EQ(slot_follow_call(f, &req, &rep), 0);
    ASSERT(rep.ok && rep.replay);
    ASSERT_STR_EQ(rep.hold, "h0");
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_with_key("k-u"), 2);
    ASSERT(strstr(book.log[1].line, "\"id\":77") != NULL);
    ASSERT_EQ(book.nkeys, 1);
    slot_follow_stats st;
    slot_follow_stats_get(f, &st);
    ASSERT_U64_EQ(st.retries, 1);
    ASSERT_U64_EQ(st.redirects, 0);
    slot_follow_free(f);
    fake_stop(&p);
}

TEST_IMPL(follow_refused_and_silent_nodes_are_skipped)
{
    book_reset();
    fake s, p;
    fake_start(&s, 1, F_SILENT, NULL);
    fake_start(&p, 0, F_PRIMARY, NULL);
    char list[200];
    snprintf(list, sizeof(list), "127.0.0.1:%u,127.0.0.1:%u,127.0.0.1:%u", (unsigned)dead_port(), (unsigned)s.port,
             (unsigned)p.port);
    slot_follow_opts o;
    slot_follow_opts_default(&o);
    o.reply_timeout_ms = 300;
    slot_follow *f = follow_of(list, &o);
    slot_req req;
    hold_req(&req, "k-s");
    slot_reply rep;
    ASSERT_EQ(slot_follow_call(f, &req, &rep), 0);
    ASSERT(rep.ok && !rep.replay);
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_with_key("k-s"), 2); /* the silent node, then the primary */
    ASSERT_EQ(book.nkeys, 1);
    slot_follow_stats st;
    slot_follow_stats_get(f, &st);
    ASSERT_U64_EQ(st.connects, 2);
    ASSERT_U64_EQ(st.retries, 2);
    slot_follow_free(f);
    fake_stop(&s);
    fake_stop(&p);
}

TEST_IMPL(follow_gives_up_after_its_attempts)
{
    book_reset();
    fake a, b;
    fake_start(&a, 1, F_UNAVAIL, NULL);
    fake_start(&b, 2, F_NO_ADDR, NULL);
    slot_follow_opts o;
    slot_follow_opts_default(&o);
    o.attempts_max = 5;
    o.backoff_ms = 1;
    o.backoff_max_ms = 4;
    slot_follow *f = follow_of(list_of(&a, &b, NULL), &o);
    slot_req req;
    hold_req(&req, "k-g");
    slot_reply rep;
    ASSERT_EQ(slot_follow_call(f, &req, &rep), -EAGAIN);
    ASSERT_EQ(rep.err, SLOT_E_UNAVAILABLE); /* the last answer: a, the 5th send */
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_with_key("k-g"), 5);
    ASSERT_EQ(a.requests, 3);
    ASSERT_EQ(b.requests, 2);
    const char *e = slot_follow_error(f);
    if (!strstr(e, "gave up after 5 attempts") || !strstr(e, "attempt bound") || !strstr(e, "unavailable"))
        T_FAIL_("error: %s", e);
    ASSERT_EQ(book.nkeys, 0);
    /* Refused everywhere: the same bound, the connect's error named. */
    char list[100];
    snprintf(list, sizeof(list), "127.0.0.1:%u", (unsigned)dead_port());
    slot_follow *g = follow_of(list, &o);
    ASSERT_EQ(slot_follow_call(g, &req, &rep), -EAGAIN);
    slot_reply_clear(&rep);
    if (!strstr(slot_follow_error(g), "refused"))
        T_FAIL_("error: %s", slot_follow_error(g));
    slot_follow_free(g);
    slot_follow_free(f);
    fake_stop(&a);
    fake_stop(&b);
}

TEST_IMPL(follow_gives_up_at_its_deadline)
{
    book_reset();
    fake s;
    fake_start(&s, 1, F_SILENT, NULL);
    slot_follow_opts o;
    slot_follow_opts_default(&o);
    o.deadline_ms = 400;
    o.reply_timeout_ms = 5000; /* the deadline cuts the wait for a reply short */
    o.backoff_max_ms = 100;
    slot_follow *f = follow_of(list_of(&s, NULL, NULL), &o);
    slot_req req;
    hold_req(&req, "k-d");
    slot_reply rep;
    ASSERT_EQ(slot_follow_call(f, &req, &rep), -ETIMEDOUT);
    slot_reply_clear(&rep);
    const char *e = slot_follow_error(f);
    if (!strstr(e, "gave up after 1 attempt ") || !strstr(e, "deadline") || !strstr(e, "no answer in time"))
        T_FAIL_("error: %s", e);
    slot_follow_free(f);
    fake_stop(&s);
}

TEST_IMPL(follow_says_hello_after_each_connect)
{
    book_reset();
    fake p, r;
    fake_start(&p, 0, F_PRIMARY, NULL);
    fake_start(&r, 1, F_REDIRECT, &p);
    slot_follow_opts o;
    slot_follow_opts_default(&o);
    o.token = "sekrit";
    slot_follow *f = follow_of(list_of(&r, &p, NULL), &o);
    slot_req req;
    hold_req(&req, "k-h");
    slot_reply rep;
    ASSERT_EQ(slot_follow_call(f, &req, &rep), 0);
    ASSERT(rep.ok);
    slot_reply_clear(&rep);
    /* r answers hello with not_primary too (a fake's simplicity): that is not the
     * call's answer, so the hold goes on to p, which gets hello first. */
    ASSERT(book.nlog >= 2);
    int hellos_p = 0;
    for (int i = 0; i < book.nlog; i++)
        if (book.log[i].node == 0 && strstr(book.log[i].line, "\"token\":\"sekrit\""))
            hellos_p++;
    ASSERT_EQ(hellos_p, 1);
    ASSERT(strstr(book.log[book.nlog - 1].line, "\"request\":\"k-h\"") != NULL);
    ASSERT_EQ(book.log[book.nlog - 1].node, 0);
    slot_follow_free(f);
    fake_stop(&p);
    fake_stop(&r);
}

TEST_IMPL(follow_final_errors_are_not_retried)
{
    book_reset();
    fake p;
    fake_start(&p, 0, F_PRIMARY, NULL);
    slot_follow *f = follow_of(list_of(&p, NULL, NULL), NULL);
    slot_req req;
    ASSERT_EQ(slot_req_event(&req, SLOT_OP_EVENT, "nope"), 0);
    slot_reply rep;
    ASSERT_EQ(slot_follow_call(f, &req, &rep), 0);
    ASSERT_EQ(rep.err, SLOT_E_UNKNOWN_EVENT);
    ASSERT_STR_EQ(slot_follow_error(f), "");
    slot_reply_clear(&rep);
    ASSERT_EQ(p.requests, 1);
    /* A raw line (the cluster op's way). */
    ASSERT_EQ(slot_follow_call_line(f, SLOT_CLUSTER_REQ_LINE, strlen(SLOT_CLUSTER_REQ_LINE), &rep), 0);
    ASSERT(rep.ok);
    slot_reply_clear(&rep);
    ASSERT_EQ(slot_follow_call_line(f, "{\"op\":\"stats\"}", 14, &rep), -EMSGSIZE); /* no "\n" */
    slot_reply_clear(&rep);
    slot_follow_free(f);
    fake_stop(&p);
}
