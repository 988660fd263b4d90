/*
 * test_feed.c — the feed against a real slotd (docs/protocol.md, "Feed"):
 * every change makes exactly its entry in commit order, consumers see 1..N
 * with no gap under a mixed load, resume after their last ack across
 * kill -9, windows and back-pressure, retention, roles and bad input.
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "slot/client.h"

TEST_DECLARE(feed_each_change_makes_its_entry)
TEST_DECLARE(feed_mixed_load_seen_in_order_without_gaps)
TEST_DECLARE(feed_kill9_consumer_sees_every_commit_once)
TEST_DECLARE(feed_resume_after_last_ack)
TEST_DECLARE(feed_window_bounds_unacked_entries)
TEST_DECLARE(feed_non_reader_dropped_others_unaffected)
TEST_DECLARE(feed_retention_trims_only_acked_and_old)
TEST_DECLARE(feed_bad_input_changes_nothing)
TEST_DECLARE(feed_second_subscription_closes_first)
TEST_DECLARE(feed_roles_worker_and_frontend)
TEST_DECLARE(feed_sale_ops_make_their_entries)
TEST_DECLARE(feed_cart_and_waitlist_entries)

TEST_LIST_START
TEST_ENTRY(feed_each_change_makes_its_entry)
TEST_ENTRY(feed_mixed_load_seen_in_order_without_gaps)
TEST_ENTRY(feed_kill9_consumer_sees_every_commit_once)
TEST_ENTRY(feed_resume_after_last_ack)
TEST_ENTRY(feed_window_bounds_unacked_entries)
TEST_ENTRY(feed_non_reader_dropped_others_unaffected)
TEST_ENTRY(feed_retention_trims_only_acked_and_old)
TEST_ENTRY(feed_bad_input_changes_nothing)
TEST_ENTRY(feed_second_subscription_closes_first)
TEST_ENTRY(feed_roles_worker_and_frontend)
TEST_ENTRY(feed_sale_ops_make_their_entries)
TEST_ENTRY(feed_cart_and_waitlist_entries)
TEST_LIST_END

#define TIMEOUT_MS 10000
#define PUSHES_MAX 100000

static slot_test_server srv;

/* The pushes a connection received while the test waited for replies. */
typedef struct pushes {
    json_t *v[PUSHES_MAX];
    size_t n;
} pushes;

static pushes got;

static void pushes_clear(pushes *p)
{
    for (size_t i = 0; i < p->n; i++)
        json_decref(p->v[i]);
    p->n = 0;
}

/* The next line of c as JSON; NULL on a timeout or a closed connection. */
static json_t *line_json(slot_client *c, int timeout_ms)
{
    const char *line;
    long n = slot_client_recv_line(c, &line, timeout_ms);
    if (n < 0)
        return NULL;
    json_error_t e;
    json_t *v = json_loadb(line, (size_t)n, 0, &e);
    if (!v)
        T_FAIL_("not JSON: %s", line);
    return v;
}

/* The next reply (a line without "feed"); pushes before it go to p. */
static json_t *reply(slot_client *c, pushes *p)
{
    for (;;) {
        json_t *v = line_json(c, TIMEOUT_MS);
        if (!v)
            T_FAIL_("%s", "no reply");
        if (!json_object_get(v, "feed"))
            return v;
        ASSERT(p->n < PUSHES_MAX);
        p->v[p->n++] = v;
    }
}

__attribute__((format(printf, 2, 3))) static json_t *callf(slot_client *c, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    line[n++] = '\n';
    ASSERT_EQ(slot_client_send_raw(c, line, (size_t)n), 0);
    return reply(c, &got);
}

static bool is_ok(json_t *r)
{
    return json_is_true(json_object_get(r, "ok"));
}

static const char *str(json_t *r, const char *k)
{
    const char *s = json_string_value(json_object_get(r, k));
    return s ? s : "";
}

static uint64_t num(json_t *r, const char *k)
{
    return (uint64_t)json_integer_value(json_object_get(r, k));
}

/* ok, or the case fails naming the reply. */
static json_t *ok(json_t *r)
{
    if (!is_ok(r)) {
        char *t = json_dumps(r, 0);
        T_FAIL_("expected ok: %s", t);
    }
    return r;
}

static void expect_err(json_t *r, const char *code)
{
    if (is_ok(r) || strcmp(str(r, "error"), code) != 0) {
        char *t = json_dumps(r, 0);
        T_FAIL_("expected %s: %s", code, t);
    }
    json_decref(r);
}

/* The events of these cases: 4 shards, holds of 10 minutes or of 1 s. */
static const slot_event_settings ev_10min = {.shards = 4, .hold_ttl_ms = 600000};
static const slot_event_settings ev_1s = {.shards = 4, .hold_ttl_ms = 1000};

/* A hold's id, or "" when sold out; the reply is dropped. */
static void hold(slot_client *c, const char *ev, const char *user, const char *req, int qty, char out[64])
{
    json_t *r = ok(callf(c, "{\"op\":\"hold\",\"event\":\"%s\",\"user\":\"%s\",\"request\":\"%s\",\"qty\":%d}", ev,
                         user, req, qty));
    snprintf(out, 64, "%s", str(r, "hold"));
    json_decref(r);
}

/* Reads pushes on c until `want` have arrived (after what p holds). */
static void pushes_wait(slot_client *c, pushes *p, size_t want)
{
    while (p->n < want) {
        json_t *v = line_json(c, TIMEOUT_MS);
        if (!v)
            T_FAIL_("only %zu of %zu pushes", p->n, want);
        if (!json_object_get(v, "feed")) {
            char *t = json_dumps(v, 0);
            T_FAIL_("a reply where a push was due: %s", t);
        }
        p->v[p->n++] = v;
    }
}

static json_t *subscribe(slot_client *c, const char *name, const char *from_json, int window)
{
    return callf(c, "{\"op\":\"subscribe\",\"consumer\":\"%s\",\"from\":%s,\"window\":%d}", name, from_json, window);
}

static uint64_t head_of(slot_client *admin)
{
    json_t *r = ok(callf(admin, "{\"op\":\"feed_consumers\"}"));
    uint64_t h = num(r, "head");
    json_decref(r);
    return h;
}

/* ---- cases */

TEST_IMPL(feed_each_change_makes_its_entry)
{
    slot_test_start(&srv, NULL);
    slot_client *a = slot_test_dial(&srv), *w = slot_test_dial(&srv);
    json_t *s = ok(subscribe(w, "t", "\"start\"", 100));
    ASSERT_EQ(num(s, "from"), 1);
    ASSERT_EQ(num(s, "head"), 0);
    json_decref(s);
    slot_test_create_event(a, "ev", 10, &ev_1s, NULL);
    char h1[64], h2[64], h3[64], h4[64];
    hold(a, "ev", "u1", "r1", 2, h1);
    json_decref(ok(callf(a, "{\"op\":\"confirm\",\"event\":\"ev\",\"hold\":\"%s\",\"user\":\"u1\"}", h1)));
    hold(a, "ev", "u2", "r2", 1, h2);
    json_decref(ok(callf(a, "{\"op\":\"release\",\"event\":\"ev\",\"hold\":\"%s\",\"user\":\"u2\"}", h2)));
    hold(a, "ev", "u3", "r3", 1, h3);
    json_decref(ok(callf(a, "{\"op\":\"cancel\",\"event\":\"ev\",\"hold\":\"%s\"}", h3)));
    hold(a, "ev", "u4", "r4", 3, h4);
    hold(a, "ev", "u1", "r1", 2, h1); /* a replay: no entry */
    json_decref(ok(callf(a, "{\"op\":\"set_status\",\"event\":\"ev\",\"status\":\"on_sale\"}"))); /* no change: none */
    json_decref(ok(callf(a, "{\"op\":\"set_capacity\",\"event\":\"ev\",\"capacity\":12}")));
    usleep(1100 * 1000);
    json_t *x = ok(callf(a, "{\"op\":\"expire\"}"));
    ASSERT_LE(num(x, "expired"), 1); /* the 1 s sweeper may have taken it first; the feed says hold.expired */
    json_decref(x);
    static const char *const want[] = {"event.created", "hold.held",   "hold.confirmed", "hold.held",
                                       "hold.released", "hold.held",   "hold.cancelled", "hold.held",
                                       "event.changed", "hold.expired"};
    size_t nwant = sizeof(want) / sizeof(want[0]);
    pushes_wait(w, &got, nwant);
    for (size_t i = 0; i < nwant; i++) {
        ASSERT_EQ(num(got.v[i], "feed"), i + 1);
        ASSERT_STR_EQ(str(got.v[i], "type"), want[i]);
        ASSERT_STR_EQ(str(got.v[i], "event"), "ev");
        ASSERT_GT(num(got.v[i], "at"), 0);
    }
    json_t *held = got.v[1];
    ASSERT_STR_EQ(str(held, "hold"), h1);
    ASSERT_STR_EQ(str(held, "user"), "u1");
    ASSERT_STR_EQ(str(held, "request"), "r1");
    ASSERT_EQ(num(held, "qty"), 2);
    ASSERT_GT(num(held, "expires_at"), 0);
    ASSERT(json_is_integer(json_object_get(got.v[2], "returned")));
    ASSERT_EQ(num(got.v[2], "returned"), 0);
    ASSERT_EQ(num(got.v[2], "qty"), 2);
    ASSERT_STR_EQ(str(got.v[6], "hold"), h3);
    ASSERT_STR_EQ(str(got.v[9], "hold"), h4);
    ASSERT_EQ(num(got.v[9], "qty"), 3);
    ASSERT_EQ(num(got.v[8], "capacity"), 12);
    ASSERT_EQ(num(got.v[0], "capacity"), 10);
    ASSERT_STR_EQ(str(got.v[0], "status"), "on_sale");
    /* nothing more came, and check agrees with the history */
    ASSERT(line_json(w, 300) == NULL);
    json_t *ck = ok(callf(a, "{\"op\":\"check\"}"));
    ASSERT_EQ(json_array_size(json_object_get(ck, "violations")), 0);
    json_decref(ck);
    pushes_clear(&got);
    slot_client_close(a);
    slot_client_close(w);
    slot_test_stop(&srv);
}

/* A hot release on several pipelined connections with confirms, releases,
 * cancels and expiries mixed in: the consumer acks every entry and sees
 * 1..N in order, and the counts of each type are what was done. The holds
 * left to expire are on "cold" (1 s TTL); those acted on are on "hot" (10
 * minutes), so however slowly the machine runs, each op meets a held hold. */
TEST_IMPL(feed_mixed_load_seen_in_order_without_gaps)
{
    slot_test_start(&srv, NULL);
    slot_client *a = slot_test_dial(&srv), *w = slot_test_dial(&srv);
    json_decref(ok(subscribe(w, "acker", "\"start\"", 50)));
    slot_test_create_event(a, "hot", 100000, &ev_10min, NULL);
    slot_test_create_event(a, "cold", 100000, &ev_1s, NULL);
    enum { NC = 4, PER = 300 };
    slot_client *cs[NC];
    char line[256];
    for (int k = 0; k < NC; k++) {
        cs[k] = slot_test_dial(&srv);
        for (int i = 0; i < PER; i++) {
            int n = snprintf(line, sizeof(line),
                             "{\"op\":\"hold\",\"event\":\"%s\",\"user\":\"u%d\",\"request\":\"r%d\",\"qty\":1}\n",
                             i % 4 == 3 ? "cold" : "hot", k, i);
            ASSERT_EQ(slot_client_send_raw(cs[k], line, (size_t)n), 0);
        }
    }
    uint64_t held = 0, confirmed = 0, released = 0, cancelled = 0;
    for (int k = 0; k < NC; k++) {
        for (int i = 0; i < PER; i++) {
            json_t *r = ok(reply(cs[k], &got));
            char h[64];
            snprintf(h, sizeof h, "%s", str(r, "hold"));
            json_decref(r);
            held++;
            if (i % 4 == 0) {
                json_decref(
                    ok(callf(a, "{\"op\":\"confirm\",\"event\":\"hot\",\"hold\":\"%s\",\"user\":\"u%d\"}", h, k)));
                confirmed++;
            } else if (i % 4 == 1) {
                json_decref(
                    ok(callf(a, "{\"op\":\"release\",\"event\":\"hot\",\"hold\":\"%s\",\"user\":\"u%d\"}", h, k)));
                released++;
            } else if (i % 4 == 2) {
                json_decref(ok(callf(a, "{\"op\":\"cancel\",\"event\":\"hot\",\"hold\":\"%s\"}", h)));
                cancelled++;
            }
        }
    }
    usleep(1100 * 1000);
    /* Every cold hold is due now: the sweeper took some or all, the expire op the rest. */
    uint64_t expired = held - confirmed - released - cancelled;
    json_t *x = ok(callf(a, "{\"op\":\"expire\"}"));
    ASSERT_LE(num(x, "expired"), expired);
    json_decref(x);
    uint64_t total = 2 + held + confirmed + released + cancelled + expired;
    uint64_t counts[6] = {0};
    static const char *const types[6] = {"event.created", "hold.held",      "hold.confirmed",
                                         "hold.released", "hold.cancelled", "hold.expired"};
    uint64_t seen = 0;
    while (seen < total) {
        json_t *v = line_json(w, TIMEOUT_MS);
        ASSERT_NOT_NULL(v);
        if (!json_object_get(v, "feed")) { /* an ack's reply */
            ok(v);
            json_decref(v);
            continue;
        }
        ASSERT_EQ(num(v, "feed"), seen + 1); /* no gap, no reorder */
        seen++;
        for (int t = 0; t < 6; t++)
            counts[t] += strcmp(str(v, "type"), types[t]) == 0;
        char ack[128];
        int n = snprintf(ack, sizeof ack, "{\"op\":\"ack\",\"consumer\":\"acker\",\"seq\":%llu}\n",
                         (unsigned long long)seen);
        ASSERT_EQ(slot_client_send_raw(w, ack, (size_t)n), 0);
        json_decref(v);
    }
    ASSERT_EQ(counts[0], 2);
    ASSERT_EQ(counts[1], held);
    ASSERT_EQ(counts[2], confirmed);
    ASSERT_EQ(counts[3], released);
    ASSERT_EQ(counts[4], cancelled);
    ASSERT_EQ(counts[5], expired);
    ASSERT_EQ(slot_test_stat(&srv, "holds"), held); /* what the server counted */
    ASSERT_EQ(head_of(a), total);
    for (int k = 0; k < NC; k++)
        slot_client_close(cs[k]);
    pushes_clear(&got);
    slot_client_close(a);
    slot_client_close(w);
    slot_test_stop(&srv);
}

/* kill -9 at random moments while holds are written and a consumer acks in
 * batches; after every restart it resumes from its stored ack. At the end,
 * deduplicated by seq, it has seen every entry of the final feed exactly as
 * stored (nothing it saw was uncommitted), and every acknowledged hold has
 * its hold.held entry. */
TEST_IMPL(feed_kill9_consumer_sees_every_commit_once)
{
    char *dir = slot_test_tmpdir();
    enum { ROUNDS = 10, PER_ROUND = 200, MAX = 4000 };
    static char seen_hold[MAX + 1][40];
    static bool seen[MAX + 1];
    static char acked_holds[ROUNDS * PER_ROUND][40];
    size_t nacked = 0;
    srand(12345);
    memset(&srv, 0, sizeof srv);
    for (int round = 0; round < ROUNDS; round++) {
        slot_test_server_start(&srv, dir, NULL);
        slot_client *a = slot_test_dial(&srv), *w = slot_test_dial(&srv);
        if (round == 0)
            slot_test_create_event(a, "k9", 100000, &ev_10min, NULL);
        json_t *s = ok(subscribe(w, "k9", "\"acked\"", 10000));
        json_decref(s);
        char line[256];
        for (int i = 0; i < PER_ROUND; i++) {
            int n = snprintf(line, sizeof line,
                             "{\"op\":\"hold\",\"event\":\"k9\",\"user\":\"u\",\"request\":\"r%d-%d\",\"qty\":1}\n",
                             round, i);
            ASSERT_EQ(slot_client_send_raw(a, line, (size_t)n), 0);
        }
        int kill_after = rand() % PER_ROUND;
        for (int i = 0; i < kill_after; i++) {
            json_t *r = ok(reply(a, &got));
            snprintf(acked_holds[nacked++], 40, "%s", str(r, "hold"));
            json_decref(r);
        }
        /* read some pushes, ack some of them */
        int take = rand() % 50;
        uint64_t last = 0;
        for (int i = 0; i < take; i++) {
            json_t *v = line_json(w, 200);
            if (!v)
                break;
            uint64_t seq = num(v, "feed");
            if (seq && seq <= MAX) {
                if (seen[seq])
                    ASSERT_STR_EQ(seen_hold[seq], str(v, "hold")); /* a repeat is the same entry */
                seen[seq] = true;
                snprintf(seen_hold[seq], 40, "%s", str(v, "hold"));
                last = seq;
            }
            json_decref(v);
        }
        if (last && rand() % 2) {
            int n = snprintf(line, sizeof line, "{\"op\":\"ack\",\"consumer\":\"k9\",\"seq\":%llu}\n",
                             (unsigned long long)last);
            slot_client_send_raw(w, line, (size_t)n);
        }
        usleep((useconds_t)(rand() % 20000));
        slot_test_server_kill9(&srv);
        slot_client_close(a);
        slot_client_close(w);
        pushes_clear(&got);
    }
    /* the last run: read to the head, then compare with the feed from start */
    slot_test_server_start(&srv, dir, NULL);
    slot_client *a = slot_test_dial(&srv), *w = slot_test_dial(&srv);
    uint64_t head = head_of(a);
    ASSERT_LE(head, MAX);
    json_t *s = ok(subscribe(w, "k9", "\"acked\"", 10000));
    uint64_t from = num(s, "from");
    json_decref(s);
    for (uint64_t q = from; q <= head; q++) {
        json_t *v = line_json(w, TIMEOUT_MS);
        ASSERT_NOT_NULL(v);
        ASSERT_EQ(num(v, "feed"), q);
        if (seen[q])
            ASSERT_STR_EQ(seen_hold[q], str(v, "hold"));
        seen[q] = true;
        snprintf(seen_hold[q], 40, "%s", str(v, "hold"));
        json_decref(v);
    }
    slot_client *all = slot_test_dial(&srv);
    json_decref(ok(subscribe(all, "audit", "\"start\"", 10000)));
    for (uint64_t q = 1; q <= head; q++) {
        json_t *v = line_json(all, TIMEOUT_MS);
        ASSERT_NOT_NULL(v);
        ASSERT_EQ(num(v, "feed"), q);
        ASSERT(seen[q]);                             /* the consumer saw every committed entry */
        ASSERT_STR_EQ(seen_hold[q], str(v, "hold")); /* and what it saw was committed, as stored */
        json_decref(v);
    }
    for (size_t i = 0; i < nacked; i++) { /* every acknowledged hold is in the feed */
        bool found = false;
        for (uint64_t q = 2; q <= head && !found; q++)
            found = strcmp(seen_hold[q], acked_holds[i]) == 0;
        ASSERT(found);
    }
    slot_client_close(a);
    slot_client_close(w);
    slot_client_close(all);
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    slot_test_rmdir(dir);
    free(dir);
}

/* A consumer killed between receiving and acking resumes after its last
 * ack; positions never move back, also across a restart; an ack beyond
 * what was delivered is invalid_argument. */
TEST_IMPL(feed_resume_after_last_ack)
{
    char *dir = slot_test_tmpdir();
    memset(&srv, 0, sizeof srv);
    slot_test_server_start(&srv, dir, NULL);
    slot_client *a = slot_test_dial(&srv), *w = slot_test_dial(&srv);
    slot_test_create_event(a, "ra", 100, &ev_10min, NULL);
    char h[64];
    for (int i = 0; i < 9; i++) {
        char r[16];
        snprintf(r, sizeof r, "r%d", i);
        hold(a, "ra", "u", r, 1, h);
    }
    json_decref(ok(subscribe(w, "m", "\"start\"", 100)));
    pushes_wait(w, &got, 10);
    expect_err(callf(w, "{\"op\":\"ack\",\"consumer\":\"m\",\"seq\":11}"), "invalid_argument");
    json_t *r = ok(callf(w, "{\"op\":\"ack\",\"consumer\":\"m\",\"seq\":6}"));
    ASSERT_EQ(num(r, "acked"), 6);
    json_decref(r);
    r = ok(callf(w, "{\"op\":\"ack\",\"consumer\":\"m\",\"seq\":3}")); /* never back */
    ASSERT_EQ(num(r, "acked"), 6);
    json_decref(r);
    slot_client_close(w); /* killed after receiving 7..10 without acking them */
    pushes_clear(&got);
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    slot_test_server_start(&srv, dir, NULL);
    slot_client_close(a);
    a = slot_test_dial(&srv);
    w = slot_test_dial(&srv);
    r = ok(subscribe(w, "m", "\"acked\"", 100));
    ASSERT_EQ(num(r, "from"), 7);
    ASSERT_EQ(num(r, "head"), 10);
    json_decref(r);
    pushes_wait(w, &got, 4);
    ASSERT_EQ(num(got.v[0], "feed"), 7);
    ASSERT_EQ(num(got.v[3], "feed"), 10);
    json_t *cs = ok(callf(a, "{\"op\":\"feed_consumers\"}"));
    json_t *c0 = json_array_get(json_object_get(cs, "consumers"), 0);
    ASSERT_STR_EQ(str(c0, "consumer"), "m");
    ASSERT_EQ(num(c0, "acked"), 6);
    ASSERT_EQ(num(c0, "lag"), 4);
    json_decref(cs);
    /* a numeric from re-reads from there, the stored position stays */
    json_decref(ok(callf(w, "{\"op\":\"unsubscribe\"}")));
    pushes_clear(&got);
    r = ok(subscribe(w, "m", "2", 100));
    ASSERT_EQ(num(r, "from"), 2);
    json_decref(r);
    pushes_wait(w, &got, 9);
    ASSERT_EQ(num(got.v[0], "feed"), 2);
    pushes_clear(&got);
    slot_client_close(a);
    slot_client_close(w);
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    slot_test_rmdir(dir);
    free(dir);
}

TEST_IMPL(feed_window_bounds_unacked_entries)
{
    slot_test_start(&srv, NULL);
    slot_client *a = slot_test_dial(&srv), *w = slot_test_dial(&srv);
    slot_test_create_event(a, "win", 100, &ev_10min, NULL);
    char h[64];
    for (int i = 0; i < 20; i++) {
        char r[16];
        snprintf(r, sizeof r, "r%d", i);
        hold(a, "win", "u", r, 1, h);
    }
    json_decref(ok(subscribe(w, "w5", "\"start\"", 5)));
    pushes_wait(w, &got, 5);
    ASSERT(line_json(w, 500) == NULL); /* never more than the window */
    json_decref(ok(callf(w, "{\"op\":\"ack\",\"consumer\":\"w5\",\"seq\":3}")));
    pushes_wait(w, &got, 8);
    ASSERT_EQ(num(got.v[7], "feed"), 8);
    ASSERT(line_json(w, 300) == NULL);
    /* new commits arrive as they land once the window has room */
    json_decref(ok(callf(w, "{\"op\":\"ack\",\"consumer\":\"w5\",\"seq\":8}")));
    pushes_wait(w, &got, 13);
    ASSERT_EQ(num(got.v[12], "feed"), 13);
    pushes_clear(&got);
    slot_client_close(a);
    slot_client_close(w);
    slot_test_stop(&srv);
}

/* A consumer that does not read is paused (its output bounded by
 * --max-output), then dropped after --write-timeout-ms; a consumer that
 * reads goes on receiving. */
TEST_IMPL(feed_non_reader_dropped_others_unaffected)
{
    const char *extra[] = {"--write-timeout-ms", "300", "--max-output", "4096", "--sweep-interval-ms", "50", NULL};
    slot_test_start(&srv, extra);
    slot_client *a = slot_test_dial(&srv), *good = slot_test_dial(&srv);
    /* The lazy consumer's socket has a small receive buffer from before its
     * connect, so the kernel does not take the window for it. */
    int lazy = socket(AF_INET, SOCK_STREAM, 0), small = 4096;
    ASSERT_GE(lazy, 0);
    setsockopt(lazy, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(srv.port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(lazy, (struct sockaddr *)&sa, sizeof sa), 0);
    slot_test_create_event(a, "nr", 100000, &ev_10min, NULL);
    static const char sub[] = "{\"op\":\"subscribe\",\"consumer\":\"lazy\",\"from\":\"start\",\"window\":10000}\n";
    ASSERT_EQ(write(lazy, sub, sizeof sub - 1), (ssize_t)(sizeof sub - 1));
    char first[64];
    ASSERT_GT(read(lazy, first, sizeof first), 0); /* the reply has come; from now on it reads nothing */
    json_decref(ok(subscribe(good, "good", "\"start\"", 10000)));
    char user[129];
    memset(user, 'x', 128);
    user[128] = 0;
    char line[512];
    /* Holds in rounds of N until the server has timed the lazy reader out: how
     * much its socket buffers absorb before the output backs up is the kernel's
     * (send-buffer autotuning), so the number needed is not fixed. At most
     * ROUNDS rounds; each ends with a wait of up to 2 s for the sweep. */
    enum { N = 4000, ROUNDS = 8 };
    uint64_t seen = 1; /* the create_event's entry */
    json_t *first_entry = line_json(good, TIMEOUT_MS);
    ASSERT_NOT_NULL(first_entry);
    ASSERT_EQ(num(first_entry, "feed"), 1);
    json_decref(first_entry);
    int sent = 0;
    for (int round = 0; round < ROUNDS && slot_test_stat(&srv, "connections_timed_out") == 0; round++) {
        for (int i = 0; i < N; i++, sent++) {
            int n = snprintf(line, sizeof line,
                             "{\"op\":\"hold\",\"event\":\"nr\",\"user\":\"%s\",\"request\":\"req-%060d\",\"qty\":1}\n",
                             user, sent);
            ASSERT_EQ(slot_client_send_raw(a, line, (size_t)n), 0);
        }
        for (int i = 0; i < N; i++)
            json_decref(ok(reply(a, &got)));
        for (int i = 0; i < N;) {
            json_t *v = line_json(good, TIMEOUT_MS);
            ASSERT_NOT_NULL(v);
            if (!json_object_get(v, "feed")) { /* the reply to an ack */
                json_decref(v);
                continue;
            }
            ASSERT_EQ(num(v, "feed"), ++seen);
            json_decref(v);
            i++;
            if (seen % 1000 == 0) {
                int n = snprintf(line, sizeof line, "{\"op\":\"ack\",\"consumer\":\"good\",\"seq\":%llu}\n",
                                 (unsigned long long)seen);
                slot_client_send_raw(good, line, (size_t)n);
            }
        }
        for (int i = 0; i < 40 && slot_test_stat(&srv, "connections_timed_out") == 0; i++)
            usleep(50 * 1000);
    }
    fprintf(stderr, "non-reader: %d holds sent before the lazy reader was timed out\n", sent);
    ASSERT_GE(slot_test_stat(&srv, "connections_timed_out"), 1);
    /* the lazy one is gone; the good one still gets new entries */
    char h[64];
    hold(a, "nr", "late", "late", 1, h);
    for (;;) {
        json_t *v = line_json(good, TIMEOUT_MS);
        ASSERT_NOT_NULL(v);
        uint64_t q = num(v, "feed");
        json_decref(v);
        if (q == seen + 1)
            break;
    }
    pushes_clear(&got);
    slot_client_close(a);
    close(lazy);
    slot_client_close(good);
    slot_test_stop(&srv);
}

TEST_IMPL(feed_retention_trims_only_acked_and_old)
{
    const char *keep0[] = {"--feed-retention-ms", "0", "--sweep-interval-ms", "20", NULL};
    slot_test_start(&srv, keep0);
    slot_client *a = slot_test_dial(&srv), *w = slot_test_dial(&srv), *w2 = slot_test_dial(&srv);
    json_decref(ok(subscribe(w, "c1", "\"start\"", 100)));
    json_decref(ok(subscribe(w2, "c2", "\"start\"", 100)));
    slot_test_create_event(a, "ret", 100, &ev_10min, NULL);
    char h[64];
    for (int i = 0; i < 9; i++) {
        char r[16];
        snprintf(r, sizeof r, "r%d", i);
        hold(a, "ret", "u", r, 1, h);
    }
    pushes_wait(w, &got, 10);
    pushes_clear(&got);
    json_decref(ok(callf(w, "{\"op\":\"ack\",\"consumer\":\"c1\",\"seq\":8}")));
    pushes_clear(&got);
    pushes_wait(w2, &got, 10);
    pushes_clear(&got);
    json_decref(ok(callf(w2, "{\"op\":\"ack\",\"consumer\":\"c2\",\"seq\":4}")));
    pushes_clear(&got);
    usleep(300 * 1000);
    /* only what both acked (1..4) went */
    slot_client *x = slot_test_dial(&srv);
    json_t *r = subscribe(x, "late", "1", 10);
    ASSERT_STR_EQ(str(r, "error"), "feed_truncated");
    ASSERT_EQ(num(r, "oldest"), 5);
    json_decref(r);
    r = ok(subscribe(x, "late", "\"start\"", 10));
    ASSERT_EQ(num(r, "from"), 5);
    json_decref(r);
    /* every consumer acked the head: the head itself stays (seq goes on) */
    json_decref(ok(callf(w2, "{\"op\":\"ack\",\"consumer\":\"c2\",\"seq\":10}")));
    json_decref(ok(callf(w, "{\"op\":\"ack\",\"consumer\":\"c1\",\"seq\":10}")));
    json_decref(ok(callf(a, "{\"op\":\"feed_forget\",\"consumer\":\"late\"}")));
    pushes_clear(&got);
    usleep(300 * 1000);
    slot_client *y = slot_test_dial(&srv);
    r = subscribe(y, "y", "1", 10);
    ASSERT_STR_EQ(str(r, "error"), "feed_truncated");
    ASSERT_EQ(num(r, "oldest"), 10);
    json_decref(r);
    slot_client_close(x);
    slot_client_close(y);
    slot_client_close(w);
    slot_client_close(w2);
    slot_client_close(a);
    slot_test_stop(&srv);
    /* the default retention (7 days): acked entries are kept */
    const char *fast[] = {"--sweep-interval-ms", "20", NULL};
    slot_test_start(&srv, fast);
    a = slot_test_dial(&srv);
    w = slot_test_dial(&srv);
    json_decref(ok(subscribe(w, "c1", "\"start\"", 100)));
    slot_test_create_event(a, "ret", 100, &ev_10min, NULL);
    pushes_wait(w, &got, 1);
    json_decref(ok(callf(w, "{\"op\":\"ack\",\"consumer\":\"c1\",\"seq\":1}")));
    slot_test_create_event(a, "ret2", 100, &ev_10min, NULL);
    usleep(200 * 1000);
    x = slot_test_dial(&srv);
    r = ok(subscribe(x, "late", "1", 10));
    ASSERT_EQ(num(r, "from"), 1);
    json_decref(r);
    pushes_clear(&got);
    slot_client_close(x);
    slot_client_close(w);
    slot_client_close(a);
    slot_test_stop(&srv);
}

TEST_IMPL(feed_bad_input_changes_nothing)
{
    slot_test_start(&srv, NULL);
    slot_client *a = slot_test_dial(&srv), *w = slot_test_dial(&srv);
    slot_test_create_event(a, "bad", 10, &ev_10min, NULL);
    expect_err(callf(w, "{\"op\":\"ack\",\"consumer\":\"nobody\",\"seq\":1}"), "not_subscribed");
    expect_err(callf(w, "{\"op\":\"unsubscribe\"}"), "not_subscribed");
    expect_err(callf(w, "{\"op\":\"subscribe\",\"consumer\":\"a b\"}"), "invalid_argument");
    expect_err(callf(w, "{\"op\":\"subscribe\",\"consumer\":\"\"}"), "invalid_argument");
    char long_name[80];
    memset(long_name, 'n', 65);
    long_name[65] = 0;
    expect_err(callf(w, "{\"op\":\"subscribe\",\"consumer\":\"%s\"}", long_name), "invalid_argument");
    expect_err(callf(w, "{\"op\":\"subscribe\",\"consumer\":\"ok\",\"from\":1.0}"), "invalid_argument");
    expect_err(callf(w, "{\"op\":\"subscribe\",\"consumer\":\"ok\",\"from\":\"latest\"}"), "invalid_argument");
    expect_err(callf(w, "{\"op\":\"subscribe\",\"consumer\":\"ok\",\"from\":0}"), "invalid_argument");
    expect_err(callf(w, "{\"op\":\"subscribe\",\"consumer\":\"ok\",\"window\":0}"), "invalid_argument");
    expect_err(callf(w, "{\"op\":\"subscribe\",\"consumer\":\"ok\",\"window\":10001}"), "invalid_argument");
    expect_err(callf(w, "{\"op\":\"ack\",\"consumer\":\"ok\",\"seq\":\"1\"}"), "invalid_argument");
    expect_err(callf(a, "{\"op\":\"feed_forget\",\"consumer\":\"nobody\"}"), "invalid_argument");
    json_t *cs = ok(callf(a, "{\"op\":\"feed_consumers\"}"));
    ASSERT_EQ(json_array_size(json_object_get(cs, "consumers")), 0); /* nothing was made known */
    json_decref(cs);
    json_t *r = ok(subscribe(w, "ok", "\"start\"", 10));
    json_decref(r);
    pushes_wait(w, &got, 1);
    expect_err(callf(w, "{\"op\":\"event\",\"event\":\"bad\"}"), "invalid_argument");
    expect_err(callf(w, "{\"op\":\"hold\",\"event\":\"bad\",\"user\":\"u\",\"request\":\"r\",\"qty\":1}"),
               "invalid_argument");
    expect_err(callf(w, "{\"op\":\"subscribe\",\"consumer\":\"other\"}"), "invalid_argument");
    expect_err(callf(w, "{\"op\":\"frobnicate\"}"), "unknown_op");
    expect_err(callf(w, "{\"op\":\"ack\",\"consumer\":\"other\",\"seq\":1}"), "not_subscribed");
    expect_err(callf(w, "{\"op\":\"ack\",\"consumer\":\"ok\",\"seq\":2}"), "invalid_argument");
    json_t *ev = ok(callf(a, "{\"op\":\"event\",\"event\":\"bad\"}"));
    ASSERT_EQ(num(ev, "available"), 10); /* the refused hold changed nothing */
    json_decref(ev);
    /* the connection is still usable */
    r = ok(callf(w, "{\"op\":\"ack\",\"consumer\":\"ok\",\"seq\":1}"));
    ASSERT_EQ(num(r, "acked"), 1);
    json_decref(r);
    r = ok(callf(w, "{\"op\":\"unsubscribe\"}"));
    ASSERT_STR_EQ(str(r, "consumer"), "ok");
    json_decref(r);
    json_decref(ok(callf(w, "{\"op\":\"event\",\"event\":\"bad\"}")));
    pushes_clear(&got);
    slot_client_close(a);
    slot_client_close(w);
    slot_test_stop(&srv);
}

TEST_IMPL(feed_second_subscription_closes_first)
{
    slot_test_start(&srv, NULL);
    slot_client *a = slot_test_dial(&srv), *w1 = slot_test_dial(&srv), *w2 = slot_test_dial(&srv);
    slot_test_create_event(a, "two", 10, &ev_10min, NULL);
    json_decref(ok(subscribe(w1, "dup", "\"start\"", 10)));
    pushes_wait(w1, &got, 1);
    pushes_clear(&got);
    json_decref(ok(subscribe(w2, "dup", "\"start\"", 10)));
    pushes_wait(w2, &got, 1);
    json_t *v;
    while ((v = line_json(w1, 2000)) != NULL) /* closed: EOF after whatever was on the way */
        json_decref(v);
    ASSERT_EQ(slot_client_send_raw(w1, "{\"op\":\"unsubscribe\"}\n", 21) == 0 ? 0 : 0, 0);
    ASSERT(line_json(w1, 500) == NULL);
    pushes_clear(&got);
    slot_client_close(a);
    slot_client_close(w1);
    slot_client_close(w2);
    slot_test_stop(&srv);
}

TEST_IMPL(feed_roles_worker_and_frontend)
{
    char *tdir = slot_test_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/tokens", tdir);
    FILE *f = fopen(path, "w");
    ASSERT_NOT_NULL(f);
    fprintf(f, "admin A-token\nfrontend F-token\nworker W-token\n");
    fclose(f);
    chmod(path, 0600);
    const char *extra[] = {"--token-file", path, NULL};
    slot_test_start(&srv, extra);
    slot_client *a = slot_test_dial(&srv), *fe = slot_test_dial(&srv), *wk = slot_test_dial(&srv);
    json_t *r = ok(callf(a, "{\"op\":\"hello\",\"token\":\"A-token\"}"));
    json_t *features = json_object_get(r, "features");
    bool has_feed = false;
    for (size_t i = 0; i < json_array_size(features); i++)
        has_feed = has_feed || strcmp(json_string_value(json_array_get(features, i)), "feed") == 0;
    ASSERT(has_feed);
    json_decref(r);
    json_decref(ok(callf(fe, "{\"op\":\"hello\",\"token\":\"F-token\"}")));
    r = ok(callf(wk, "{\"op\":\"hello\",\"token\":\"W-token\"}"));
    ASSERT_STR_EQ(str(r, "role"), "worker");
    json_decref(r);
    slot_test_create_event(a, "role", 10, &ev_10min, NULL);
    char h[64];
    hold(fe, "role", "buyer", "r1", 1, h);
    expect_err(callf(fe, "{\"op\":\"subscribe\",\"consumer\":\"f\"}"), "forbidden");
    expect_err(callf(fe, "{\"op\":\"get_hold\",\"event\":\"role\",\"hold\":\"%s\"}", h), "invalid_argument");
    expect_err(callf(wk, "{\"op\":\"hold\",\"event\":\"role\",\"user\":\"u\",\"request\":\"r\",\"qty\":1}"),
               "forbidden");
    expect_err(callf(wk, "{\"op\":\"feed_consumers\"}"), "forbidden");
    r = ok(callf(wk, "{\"op\":\"get_hold\",\"event\":\"role\",\"hold\":\"%s\"}", h)); /* any user's */
    ASSERT_STR_EQ(str(r, "user"), "buyer");
    json_decref(r);
    expect_err(callf(wk, "{\"op\":\"get_hold\",\"event\":\"role\",\"hold\":\"%s\",\"user\":\"other\"}", h),
               "unknown_hold");
    json_decref(ok(callf(wk, "{\"op\":\"event\",\"event\":\"role\"}")));
    json_decref(ok(callf(wk, "{\"op\":\"digest\"}")));
    json_decref(ok(subscribe(wk, "mail", "\"start\"", 10)));
    pushes_wait(wk, &got, 2);
    json_decref(ok(callf(wk, "{\"op\":\"ack\",\"consumer\":\"mail\",\"seq\":2}")));
    pushes_clear(&got);
    slot_client_close(a);
    slot_client_close(fe);
    slot_client_close(wk);
    slot_test_stop(&srv);
    slot_test_rmdir(tdir);
    free(tdir);
}

/* The v1.1 sale ops (docs/protocol.md, "Feed" and its clarifications):
 * every extend makes hold.extended (event, hold, user, expires_at); a
 * confirm's hold.confirmed always carries returned, and after a partial
 * confirm the hold's qty in later entries is the confirmed part; a reacquire
 * makes one hold.confirmed with replaces and no hold.held; set_sale_window
 * is an event.changed with the view's fields, and only when the window
 * changes; refused ops make nothing. */
TEST_IMPL(feed_sale_ops_make_their_entries)
{
    slot_test_start(&srv, NULL);
    slot_client *a = slot_test_dial(&srv), *w = slot_test_dial(&srv);
    json_decref(ok(subscribe(w, "sale", "\"start\"", 100)));
    json_decref(ok(callf(a, "{\"op\":\"create_event\",\"event\":\"sale\",\"capacity\":10,\"shards\":2,"
                            "\"hold_ttl_ms\":60000,\"max_extensions\":2}")));
    char h1[64], h2[64];
    hold(a, "sale", "u1", "r1", 3, h1);
    json_t *r = ok(
        callf(a, "{\"op\":\"extend\",\"event\":\"sale\",\"hold\":\"%s\",\"user\":\"u1\",\"by_ms\":5000}", h1));
    uint64_t exp1 = num(r, "expires_at");
    json_decref(r);
    r = ok(callf(a, "{\"op\":\"extend\",\"event\":\"sale\",\"hold\":\"%s\",\"user\":\"u1\",\"by_ms\":1000}", h1));
    uint64_t exp2 = num(r, "expires_at");
    json_decref(r);
    expect_err(callf(a, "{\"op\":\"extend\",\"event\":\"sale\",\"hold\":\"%s\",\"user\":\"u1\",\"by_ms\":1000}", h1),
               "extend_limit"); /* refused: no entry */
    r = ok(callf(a, "{\"op\":\"confirm\",\"event\":\"sale\",\"hold\":\"%s\",\"user\":\"u1\",\"qty\":2}", h1));
    ASSERT_EQ(num(r, "returned"), 1);
    json_decref(r);
    json_decref(ok(callf(a, "{\"op\":\"cancel\",\"event\":\"sale\",\"hold\":\"%s\"}", h1)));
    hold(a, "sale", "u2", "r2", 2, h2);
    json_decref(ok(callf(a, "{\"op\":\"release\",\"event\":\"sale\",\"hold\":\"%s\",\"user\":\"u2\"}", h2)));
    r = ok(callf(a, "{\"op\":\"confirm\",\"event\":\"sale\",\"hold\":\"%s\",\"user\":\"u2\",\"reacquire\":true}", h2));
    ASSERT_STR_EQ(str(r, "status"), "confirmed");
    ASSERT_STR_EQ(str(r, "replaces"), h2);
    char h3[64];
    snprintf(h3, sizeof h3, "%s", str(r, "hold"));
    json_decref(r);
    r = ok(callf(a, "{\"op\":\"confirm\",\"event\":\"sale\",\"hold\":\"%s\",\"user\":\"u2\",\"reacquire\":true}", h2));
    ASSERT(json_is_true(json_object_get(r, "replay"))); /* a repeat: no entry */
    json_decref(r);
    expect_err(callf(a, "{\"op\":\"extend\",\"event\":\"sale\",\"hold\":\"%s\",\"user\":\"u2\",\"by_ms\":1000}", h3),
               "hold_not_active");
    const uint64_t closes = 4102444800000ull; /* 2100-01-01 */
    json_decref(ok(callf(a, "{\"op\":\"set_sale_window\",\"event\":\"sale\",\"opens_at\":0,\"closes_at\":%llu}",
                         (unsigned long long)closes)));
    json_decref(ok(callf(a, "{\"op\":\"set_sale_window\",\"event\":\"sale\",\"opens_at\":0,\"closes_at\":%llu}",
                         (unsigned long long)closes))); /* the same window: no entry */

    static const char *const want[] = {"event.created",  "hold.held",      "hold.extended", "hold.extended",
                                       "hold.confirmed", "hold.cancelled", "hold.held",     "hold.released",
                                       "hold.confirmed", "event.changed"};
    size_t nwant = sizeof(want) / sizeof(want[0]);
    pushes_wait(w, &got, nwant);
    for (size_t i = 0; i < nwant; i++) {
        ASSERT_EQ(num(got.v[i], "feed"), i + 1);
        ASSERT_STR_EQ(str(got.v[i], "type"), want[i]);
        ASSERT_STR_EQ(str(got.v[i], "event"), "sale");
    }
    ASSERT(line_json(w, 300) == NULL); /* and nothing more */
    /* event.created: the view, with the v1.1 settings */
    ASSERT_EQ(num(got.v[0], "max_extensions"), 2);
    ASSERT_EQ(num(got.v[0], "max_hold_ms"), 120000);
    ASSERT(json_is_integer(json_object_get(got.v[0], "opens_at")));
    ASSERT_EQ(num(got.v[0], "closes_at"), 0);
    /* hold.extended: event, hold, user, expires_at (the new one), nothing of a hold.held's */
    for (int i = 2; i <= 3; i++) {
        ASSERT_STR_EQ(str(got.v[i], "hold"), h1);
        ASSERT_STR_EQ(str(got.v[i], "user"), "u1");
        ASSERT(json_object_get(got.v[i], "qty") == NULL);
        ASSERT(json_object_get(got.v[i], "request") == NULL);
    }
    ASSERT_EQ(num(got.v[2], "expires_at"), exp1);
    ASSERT_EQ(num(got.v[3], "expires_at"), exp2);
    ASSERT_EQ(exp2, exp1 + 1000);
    ASSERT_EQ(num(got.v[1], "expires_at") + 5000, exp1);
    /* the partial confirm: qty is the confirmed part, returned what went back; later entries say 2 */
    ASSERT_STR_EQ(str(got.v[4], "hold"), h1);
    ASSERT_EQ(num(got.v[4], "qty"), 2);
    ASSERT_EQ(num(got.v[4], "returned"), 1);
    ASSERT(json_object_get(got.v[4], "replaces") == NULL);
    ASSERT_STR_EQ(str(got.v[5], "hold"), h1);
    ASSERT_EQ(num(got.v[5], "qty"), 2);
    /* the reacquire: one hold.confirmed of the new hold, with replaces and returned 0 */
    ASSERT_STR_EQ(str(got.v[7], "hold"), h2);
    ASSERT_STR_EQ(str(got.v[8], "hold"), h3);
    ASSERT_STR_EQ(str(got.v[8], "user"), "u2");
    ASSERT_STR_EQ(str(got.v[8], "replaces"), h2);
    ASSERT_EQ(num(got.v[8], "qty"), 2);
    ASSERT(json_is_integer(json_object_get(got.v[8], "returned")));
    ASSERT_EQ(num(got.v[8], "returned"), 0);
    /* set_sale_window: event.changed with the view's fields */
    json_t *ch = got.v[9];
    ASSERT_EQ(num(ch, "opens_at"), 0);
    ASSERT(json_is_integer(json_object_get(ch, "opens_at")));
    ASSERT_EQ(num(ch, "closes_at"), closes);
    ASSERT_EQ(num(ch, "capacity"), 10);
    ASSERT_EQ(num(ch, "confirmed"), 2);
    ASSERT_EQ(num(ch, "available"), 8);
    ASSERT_STR_EQ(str(ch, "status"), "on_sale");
    ASSERT_EQ(num(ch, "max_extensions"), 2);
    /* get_hold agrees, and so does check (invariant 8) */
    r = ok(callf(a, "{\"op\":\"get_hold\",\"event\":\"sale\",\"hold\":\"%s\",\"user\":\"u1\"}", h1));
    ASSERT_EQ(num(r, "qty"), 2);
    json_decref(r);
    json_t *ck = ok(callf(a, "{\"op\":\"check\"}"));
    ASSERT_EQ(json_array_size(json_object_get(ck, "violations")), 0);
    json_decref(ck);
    pushes_clear(&got);
    slot_client_close(a);
    slot_client_close(w);
    slot_test_stop(&srv);
}

/* Carts and waitlists (docs/protocol.md, "Clarifications of v1.1", "Feed
 * entries"): a cart makes one hold.held per item in request order, joins
 * and leaves make none, an offer makes hold.offered (never hold.held) after
 * the entry of the change that freed its units, and the event view carries
 * the waitlist's fields. TTLs are 10 minutes: nothing expires meanwhile. */
TEST_IMPL(feed_cart_and_waitlist_entries)
{
    slot_test_start(&srv, NULL);
    slot_client *a = slot_test_dial(&srv), *w = slot_test_dial(&srv);
    json_decref(ok(subscribe(w, "cw", "\"start\"", 100)));
    json_decref(ok(callf(a, "{\"op\":\"create_event\",\"event\":\"a\",\"capacity\":3,\"shards\":2,"
                            "\"hold_ttl_ms\":600000,\"waitlist_max\":10}")));
    slot_test_create_event(a, "b", 5, &ev_10min, NULL);
    const char *cart = "{\"op\":\"hold_many\",\"user\":\"u1\",\"request\":\"r1\","
                       "\"items\":[{\"event\":\"a\",\"qty\":2},{\"event\":\"b\",\"qty\":1}]}";
    json_t *r = ok(callf(a, "%s", cart));
    ASSERT_STR_EQ(str(r, "status"), "held");
    json_t *holds = json_object_get(r, "holds");
    ASSERT_EQ(json_array_size(holds), 2);
    char ha[64], hb[64];
    snprintf(ha, sizeof ha, "%s", str(json_array_get(holds, 0), "hold"));
    snprintf(hb, sizeof hb, "%s", str(json_array_get(holds, 1), "hold"));
    uint64_t exp_a = num(json_array_get(holds, 0), "expires_at");
    json_decref(r);
    r = ok(callf(a, "%s", cart)); /* a replay: no entry */
    ASSERT(json_is_true(json_object_get(r, "replay")));
    json_decref(r);
    char h3[64];
    hold(a, "a", "u3", "r3", 1, h3); /* "a" is now sold out */
    r = ok(callf(a, "{\"op\":\"waitlist_join\",\"event\":\"a\",\"user\":\"u2\",\"request\":\"j2\",\"qty\":2}"));
    ASSERT_STR_EQ(str(r, "status"), "waiting");
    ASSERT_EQ(num(r, "position"), 1);
    json_decref(r);
    r = ok(callf(a, "{\"op\":\"waitlist_join\",\"event\":\"a\",\"user\":\"u4\",\"request\":\"j4\",\"qty\":1}"));
    ASSERT_STR_EQ(str(r, "status"), "waiting");
    json_decref(r);
    r = ok(callf(a, "{\"op\":\"waitlist_leave\",\"event\":\"a\",\"user\":\"u4\",\"request\":\"j4\"}"));
    ASSERT(json_is_true(json_object_get(r, "left")));
    json_decref(r);
    /* the cart's hold of "a" is released: its 2 units go to u2 */
    json_decref(ok(callf(a, "{\"op\":\"release\",\"event\":\"a\",\"hold\":\"%s\",\"user\":\"u1\"}", ha)));
    r = ok(callf(a, "{\"op\":\"waitlist\",\"event\":\"a\",\"user\":\"u2\",\"request\":\"j2\"}"));
    ASSERT_STR_EQ(str(r, "status"), "offered");
    char h2[64];
    snprintf(h2, sizeof h2, "%s", str(r, "hold"));
    uint64_t exp2 = num(r, "expires_at");
    json_decref(r);
    ASSERT(h2[0] != 0);
    r = ok(callf(a, "{\"op\":\"waitlist_join\",\"event\":\"a\",\"user\":\"u5\",\"request\":\"j5\",\"qty\":1}"));
    ASSERT_STR_EQ(str(r, "status"), "waiting");
    json_decref(r);
    json_decref(ok(callf(a, "{\"op\":\"set_capacity\",\"event\":\"a\",\"capacity\":4}"))); /* serves u5 */

    static const char *const want[] = {"event.created", "event.created", "hold.held",    "hold.held",    "hold.held",
                                       "hold.released", "hold.offered",  "hold.offered", "event.changed"};
    static const char *const evs[] = {"a", "b", "a", "b", "a", "a", "a", "a", "a"};
    size_t nwant = sizeof(want) / sizeof(want[0]);
    pushes_wait(w, &got, nwant);
    for (size_t i = 0; i < nwant; i++) {
        ASSERT_EQ(num(got.v[i], "feed"), i + 1);
        ASSERT_STR_EQ(str(got.v[i], "type"), want[i]);
        ASSERT_STR_EQ(str(got.v[i], "event"), evs[i]);
    }
    ASSERT(line_json(w, 300) == NULL); /* joins, the leave and the replay made none */
    /* the event view carries the waitlist's fields */
    ASSERT_EQ(num(got.v[0], "waitlist_max"), 10);
    ASSERT(json_is_integer(json_object_get(got.v[0], "waiting")));
    ASSERT_EQ(num(got.v[0], "waiting"), 0);
    ASSERT_EQ(num(got.v[1], "waitlist_max"), 0);
    /* the cart: one hold.held per item, in request order, with the cart's key */
    ASSERT_STR_EQ(str(got.v[2], "hold"), ha);
    ASSERT_STR_EQ(str(got.v[2], "user"), "u1");
    ASSERT_STR_EQ(str(got.v[2], "request"), "r1");
    ASSERT_EQ(num(got.v[2], "qty"), 2);
    ASSERT_EQ(num(got.v[2], "expires_at"), exp_a);
    ASSERT_STR_EQ(str(got.v[3], "hold"), hb);
    ASSERT_STR_EQ(str(got.v[3], "request"), "r1");
    ASSERT_EQ(num(got.v[3], "qty"), 1);
    ASSERT_STR_EQ(str(got.v[4], "hold"), h3);
    ASSERT_STR_EQ(str(got.v[5], "hold"), ha);
    /* the offer: event, hold, user, qty, expires_at, request of the entry */
    json_t *of = got.v[6];
    ASSERT_STR_EQ(str(of, "hold"), h2);
    ASSERT_STR_EQ(str(of, "user"), "u2");
    ASSERT_EQ(num(of, "qty"), 2);
    ASSERT_EQ(num(of, "expires_at"), exp2);
    ASSERT_STR_EQ(str(of, "request"), "j2");
    ASSERT_STR_EQ(str(got.v[7], "user"), "u5");
    ASSERT_STR_EQ(str(got.v[7], "request"), "j5");
    ASSERT_EQ(num(got.v[7], "qty"), 1);
    /* after a capacity increase the offers come first; the view counts them */
    ASSERT_EQ(num(got.v[8], "capacity"), 4);
    ASSERT_EQ(num(got.v[8], "held"), 4);
    ASSERT_EQ(num(got.v[8], "waiting"), 0);
    ASSERT_EQ(num(got.v[8], "waiting_qty"), 0);
    /* the offered hold is a hold like any other: its confirm is hold.confirmed */
    json_decref(ok(callf(a, "{\"op\":\"confirm\",\"event\":\"a\",\"hold\":\"%s\",\"user\":\"u2\"}", h2)));
    pushes_wait(w, &got, nwant + 1);
    ASSERT_STR_EQ(str(got.v[nwant], "type"), "hold.confirmed");
    ASSERT_STR_EQ(str(got.v[nwant], "hold"), h2);
    json_t *ck = ok(callf(a, "{\"op\":\"check\"}"));
    ASSERT_EQ(json_array_size(json_object_get(ck, "violations")), 0);
    json_decref(ck);
    pushes_clear(&got);
    slot_client_close(a);
    slot_client_close(w);
    slot_test_stop(&srv);
}
