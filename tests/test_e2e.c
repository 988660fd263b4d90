/*
 * test_e2e.c — end-to-end tests: a real slotd on an ephemeral loopback port,
 * driven through the client library. Races, durability across kill -9,
 * ordering, framing, shutdown.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include "harness.h"
#include "slot/client.h"

TEST_DECLARE(slotd_race_for_last_units)
TEST_DECLARE(slotd_confirm_races_expiry)
TEST_DECLARE(slotd_two_releases_return_units_once)
TEST_DECLARE(slotd_twenty_identical_holds_make_one)
TEST_DECLARE(slotd_acknowledged_holds_survive_kill9)
TEST_DECLARE(slotd_pipelined_mixed_requests_keep_order)
TEST_DECLARE(slotd_stats_names_its_durability)
TEST_DECLARE(slotd_framing_and_line_limit)
TEST_DECLARE(slotd_sigterm_answers_everything)
TEST_DECLARE(slotd_reshard_while_selling)
TEST_DECLARE(slotd_bench_and_slotctl_against_server)
TEST_DECLARE(slotd_second_slotd_on_same_folder_is_refused)
TEST_DECLARE(slotd_stats_time_the_commits)
TEST_DECLARE(slotd_sweeper_commits_only_when_due)
TEST_DECLARE(slotd_data_folder_made_with_its_parents)

TEST_LIST_START
TEST_ENTRY(slotd_race_for_last_units)
TEST_ENTRY(slotd_confirm_races_expiry)
TEST_ENTRY(slotd_two_releases_return_units_once)
TEST_ENTRY(slotd_twenty_identical_holds_make_one)
TEST_ENTRY(slotd_acknowledged_holds_survive_kill9)
TEST_ENTRY(slotd_pipelined_mixed_requests_keep_order)
TEST_ENTRY(slotd_stats_names_its_durability)
TEST_ENTRY(slotd_framing_and_line_limit)
TEST_ENTRY(slotd_sigterm_answers_everything)
TEST_ENTRY(slotd_reshard_while_selling)
TEST_ENTRY(slotd_bench_and_slotctl_against_server)
TEST_ENTRY(slotd_second_slotd_on_same_folder_is_refused)
TEST_ENTRY(slotd_stats_time_the_commits)
TEST_ENTRY(slotd_sweeper_commits_only_when_due)
TEST_ENTRY(slotd_data_folder_made_with_its_parents)
TEST_LIST_END

#define TIMEOUT_MS 10000

static slot_test_server srv;

static void hold(slot_client *c, const char *ev, const char *user, const char *key, uint32_t qty, slot_reply *r)
{
    slot_req q;
    ASSERT_EQ(slot_req_hold(&q, ev, user, key, qty), 0);
    slot_test_call(c, &q, r);
}

/* ---- 64 clients racing for the last few units, many rounds */

#define RACERS 64

typedef struct racer {
    pthread_barrier_t *go;
    const char *ev;
    int i;
    slot_client *c;
    slot_reply r;
} racer;

static void *race_one(void *p)
{
    racer *x = p;
    char user[32];
    snprintf(user, sizeof(user), "u%d", x->i);
    slot_req q;
    slot_req_hold(&q, x->ev, user, "r", 1);
    pthread_barrier_wait(x->go);
    if (slot_client_call(x->c, &q, &x->r, TIMEOUT_MS) != 0)
        x->r.ok = false;
    return NULL;
}

TEST_IMPL(slotd_race_for_last_units)
{
    slot_test_start(&srv, NULL);
    slot_client *admin = slot_test_dial(&srv);
    racer rs[RACERS];
    for (int i = 0; i < RACERS; i++)
        rs[i].c = slot_test_dial(&srv);
    for (int round = 0; round < 25; round++) {
        char ev[32];
        uint64_t cap = 1 + (uint64_t)round % 7;
        snprintf(ev, sizeof(ev), "race%d", round);
        slot_event_settings set = {.shards = 1 + (uint32_t)round % 5, .hold_ttl_ms = 600000};
        slot_test_create_event(admin, ev, cap, &set, NULL);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, RACERS);
        pthread_t th[RACERS];
        for (int i = 0; i < RACERS; i++) {
            rs[i] = (racer){.go = &go, .ev = ev, .i = i, .c = rs[i].c};
            pthread_create(&th[i], NULL, race_one, &rs[i]);
        }
        uint64_t held = 0, sold = 0;
        for (int i = 0; i < RACERS; i++) {
            pthread_join(th[i], NULL);
            ASSERT(rs[i].r.ok);
            if (strcmp(rs[i].r.status, "held") == 0)
                held++;
            else if (strcmp(rs[i].r.status, "sold_out") == 0)
                sold++;
            slot_reply_clear(&rs[i].r);
        }
        pthread_barrier_destroy(&go);
        ASSERT_EQ(held, cap);
        ASSERT_EQ(sold, RACERS - cap);
        slot_reply v = slot_test_view_checked(admin, ev);
        ASSERT_EQ(v.available, 0);
        ASSERT_EQ(v.held, cap);
        slot_reply_clear(&v);
    }
    for (int i = 0; i < RACERS; i++)
        slot_client_close(rs[i].c);
    slot_client_close(admin);
    slot_test_stop(&srv);
}

/* ---- a confirm racing the hold's expiry (and the sweeper, every 10 ms) */

TEST_IMPL(slotd_confirm_races_expiry)
{
    const char *extra[] = {"--sweep-interval-ms", "10", NULL};
    slot_test_start(&srv, extra);
    slot_client *c = slot_test_dial(&srv);
    enum { N = 60 };
    slot_test_create_event(c, "ttl", N, &(slot_event_settings){.shards = 4, .hold_ttl_ms = 1000}, NULL);
    char ids[N][SLOT_HOLD_ARG_BYTES_MAX + 1];
    uint64_t exp[N];
    for (int i = 0; i < N; i++) {
        char user[16];
        slot_reply r;
        snprintf(user, sizeof(user), "u%d", i);
        hold(c, "ttl", user, "k", 1, &r);
        ASSERT_STR_EQ(r.status, "held");
        snprintf(ids[i], sizeof(ids[i]), "%s", r.hold);
        exp[i] = r.expires_at_ms;
        slot_reply_clear(&r);
    }
    int confirmed = 0, expired = 0;
    bool won[N];
    for (int i = 0; i < N; i++) {
        /* aim at expires_at - 3 .. + 3 ms of the server clock (same machine) */
        int64_t target = (int64_t)exp[i] + (i % 7) - 3;
        int64_t wait = target - (int64_t)slot_test_now_ms();
        if (wait > 0)
            usleep((useconds_t)wait * 1000);
        char user[16];
        snprintf(user, sizeof(user), "u%d", i);
        slot_req q;
        slot_reply r;
        slot_req_hold_op(&q, SLOT_OP_CONFIRM, "ttl", ids[i], user);
        slot_test_call(c, &q, &r);
        won[i] = r.ok;
        if (r.ok) {
            ASSERT_STR_EQ(r.status, "confirmed");
            confirmed++;
        } else {
            ASSERT_STR_EQ(r.error, "hold_not_active");
            ASSERT_STR_EQ(r.status, "expired");
            expired++;
        }
        slot_reply_clear(&r);
    }
    ASSERT_EQ(confirmed + expired, N);
    usleep(300 * 1000); /* the sweeper has expired whatever was left */
    for (int i = 0; i < N; i++) {
        char user[16];
        snprintf(user, sizeof(user), "u%d", i);
        slot_req q;
        slot_reply r;
        slot_req_hold_op(&q, SLOT_OP_GET_HOLD, "ttl", ids[i], user);
        slot_test_call(c, &q, &r);
        ASSERT_STR_EQ(r.status, won[i] ? "confirmed" : "expired");
        slot_reply_clear(&r);
    }
    slot_reply v = slot_test_view_checked(c, "ttl");
    ASSERT_EQ(v.confirmed, (uint64_t)confirmed);
    ASSERT_EQ(v.held, 0);
    ASSERT_EQ(v.available, (uint64_t)expired); /* each expired hold's unit came back exactly once */
    slot_reply_clear(&v);
    slot_client_close(c);
    slot_test_stop(&srv);
}

/* ---- two concurrent releases of one hold */

typedef struct releaser {
    pthread_barrier_t *go;
    slot_client *c;
    const char *hold;
    slot_reply r;
} releaser;

static void *release_one(void *p)
{
    releaser *x = p;
    slot_req q;
    slot_req_hold_op(&q, SLOT_OP_RELEASE, "rel", x->hold, "u");
    pthread_barrier_wait(x->go);
    if (slot_client_call(x->c, &q, &x->r, TIMEOUT_MS) != 0)
        x->r.ok = false;
    return NULL;
}

TEST_IMPL(slotd_two_releases_return_units_once)
{
    slot_test_start(&srv, NULL);
    slot_client *admin = slot_test_dial(&srv);
    slot_test_create_event(admin, "rel", 10, &(slot_event_settings){.shards = 3, .hold_ttl_ms = 600000}, NULL);
    releaser rs[2] = {{.c = slot_test_dial(&srv)}, {.c = slot_test_dial(&srv)}};
    for (int round = 0; round < 40; round++) {
        char key[16];
        slot_reply h;
        snprintf(key, sizeof(key), "k%d", round);
        hold(admin, "rel", "u", key, 2, &h);
        ASSERT_STR_EQ(h.status, "held");
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        pthread_t th[2];
        for (int i = 0; i < 2; i++) {
            rs[i].go = &go;
            rs[i].hold = h.hold;
            pthread_create(&th[i], NULL, release_one, &rs[i]);
        }
        int released = 0;
        for (int i = 0; i < 2; i++) {
            pthread_join(th[i], NULL);
            ASSERT(rs[i].r.ok);
            ASSERT_STR_EQ(rs[i].r.status, "released");
            released += rs[i].r.released;
            slot_reply_clear(&rs[i].r);
        }
        pthread_barrier_destroy(&go);
        slot_reply_clear(&h);
        ASSERT_EQ(released, 1);
        slot_reply v = slot_test_view_checked(admin, "rel");
        ASSERT_EQ(v.available, 10);
        slot_reply_clear(&v);
    }
    slot_client_close(rs[0].c);
    slot_client_close(rs[1].c);
    slot_client_close(admin);
    slot_test_stop(&srv);
}

/* ---- twenty identical holds at once: one hold, twenty replies with its id */

typedef struct twin {
    pthread_barrier_t *go;
    slot_client *c;
    slot_reply r;
} twin;

static void *twin_hold(void *p)
{
    twin *x = p;
    slot_req q;
    slot_req_hold(&q, "twins", "alice", "same-key", 3);
    pthread_barrier_wait(x->go);
    if (slot_client_call(x->c, &q, &x->r, TIMEOUT_MS) != 0)
        x->r.ok = false;
    return NULL;
}

TEST_IMPL(slotd_twenty_identical_holds_make_one)
{
    slot_test_start(&srv, NULL);
    slot_client *admin = slot_test_dial(&srv);
    slot_test_create_event(admin, "twins", 100, &(slot_event_settings){.shards = 16, .hold_ttl_ms = 600000}, NULL);
    enum { N = 20 };
    twin ts[N];
    pthread_t th[N];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, N);
    for (int i = 0; i < N; i++) {
        ts[i] = (twin){.go = &go, .c = slot_test_dial(&srv)};
        pthread_create(&th[i], NULL, twin_hold, &ts[i]);
    }
    int fresh = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        ASSERT(ts[i].r.ok);
        ASSERT_STR_EQ(ts[i].r.status, "held");
        ASSERT_STR_EQ(ts[i].r.hold, ts[0].r.hold);
        ASSERT_EQ(ts[i].r.qty, 3);
        fresh += !ts[i].r.replay;
    }
    ASSERT_EQ(fresh, 1);
    for (int i = 0; i < N; i++) {
        slot_reply_clear(&ts[i].r);
        slot_client_close(ts[i].c);
    }
    pthread_barrier_destroy(&go);
    slot_reply v = slot_test_view_checked(admin, "twins");
    ASSERT_EQ(v.held, 3);
    ASSERT_EQ(v.available, 97);
    slot_reply_clear(&v);
    slot_client_close(admin);
    slot_test_stop(&srv);
}

/* ---- kill -9 right after holds were acknowledged */

TEST_IMPL(slotd_acknowledged_holds_survive_kill9)
{
    slot_test_start(&srv, NULL);
    slot_client *c = slot_test_dial(&srv);
    enum { SENT = 3000, READ = 1500 };
    slot_test_create_event(c, "durable", 5000, &(slot_event_settings){.shards = 16, .hold_ttl_ms = 600000}, NULL);
    /* Pipeline SENT holds, read READ replies, then kill -9 at once: the
     * acknowledged ones must all be there after a restart. */
    char line[256];
    for (int i = 0; i < SENT; i++) {
        int n = snprintf(line, sizeof(line),
                         "{\"op\":\"hold\",\"event\":\"durable\",\"user\":\"u%d\",\"request\":\"r\",\"qty\":1}\n", i);
        ASSERT_EQ(slot_client_send_raw(c, line, (size_t)n), 0);
    }
    static char ids[READ][SLOT_HOLD_ARG_BYTES_MAX + 1];
    for (int i = 0; i < READ; i++) {
        slot_reply r;
        ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), 0);
        ASSERT_STR_EQ(r.status, "held");
        snprintf(ids[i], sizeof(ids[i]), "%s", r.hold);
        slot_reply_clear(&r);
    }
    slot_test_server_kill9(&srv);
    slot_client_close(c);

    slot_test_server_start(&srv, NULL, NULL); /* same folder */
    c = slot_test_dial(&srv);
    for (int i = 0; i < READ; i++) {
        char user[16];
        snprintf(user, sizeof(user), "u%d", i);
        slot_req q;
        slot_reply r;
        slot_req_hold_op(&q, SLOT_OP_GET_HOLD, "durable", ids[i], user);
        slot_test_call(c, &q, &r);
        if (!r.ok || strcmp(r.status, "held") != 0)
            T_FAIL_("acknowledged hold %d (%s) lost after kill -9: %s", i, ids[i], r.line);
        slot_reply_clear(&r);
    }
    slot_reply v = slot_test_view_checked(c, "durable");
    ASSERT_GE(v.held, READ);
    ASSERT_LE(v.held, SENT);
    slot_reply_clear(&v);
    slot_client_close(c);
    slot_test_stop(&srv);
}

/* ---- replies in request order, reads see earlier writes of the connection */

/* stats' "durability" is the mode the server runs (--durability sync, nosync, pipelined). */
TEST_IMPL(slotd_stats_names_its_durability)
{
    static const char *const modes[] = {"sync", "nosync", "pipelined"};
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        const char *flags[] = {"--durability", modes[m], NULL};
        slot_test_start(&srv, flags);
        slot_client *c = slot_test_dial(&srv);
        static const char req[] = "{\"op\":\"stats\"}\n";
        ASSERT_EQ(slot_client_send_raw(c, req, sizeof(req) - 1), 0);
        const char *line = NULL;
        ASSERT(slot_client_recv_line(c, &line, TIMEOUT_MS) > 0);
        char want[48];
        snprintf(want, sizeof(want), "\"durability\":\"%s\"", modes[m]);
        if (!strstr(line, want))
            T_FAIL_("--durability %s: stats says %s", modes[m], line);
        slot_client_close(c);
        slot_test_stop(&srv);
    }
}

TEST_IMPL(slotd_pipelined_mixed_requests_keep_order)
{
    slot_test_start(&srv, NULL);
    slot_client *c = slot_test_dial(&srv);
    slot_test_create_event(c, "pipe", 1000, &(slot_event_settings){.shards = 8, .hold_ttl_ms = 600000}, NULL);
    enum { N = 600 };
    char line[256];
    for (int i = 0; i < N; i++) {
        int n;
        switch (i % 4) {
        case 0:
        case 1:
            n = snprintf(
                line, sizeof(line),
                "{\"id\":%d,\"op\":\"hold\",\"event\":\"pipe\",\"user\":\"u%d\",\"request\":\"r\",\"qty\":1}\n", i, i);
            break;
        case 2:
            n = snprintf(line, sizeof(line), "{\"id\":%d,\"op\":\"event\",\"event\":\"pipe\"}\n", i);
            break;
        default:
            n = snprintf(line, sizeof(line), "{\"id\":\"s%d\",\"op\":\"nope\"}\n", i);
            break;
        }
        ASSERT_EQ(slot_client_send_raw(c, line, (size_t)n), 0);
        if (i % 50 == 49)
            ASSERT_EQ(slot_client_send_raw(c, "{not json\n", 10), 0);
    }
    uint64_t holds_before = 0;
    for (int i = 0; i < N; i++) {
        slot_reply r;
        ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), 0);
        if (i % 4 == 3) {
            char want[16];
            snprintf(want, sizeof(want), "s%d", i);
            ASSERT_EQ(r.id.kind, SLOT_ID_STR);
            ASSERT_STR_EQ(r.id.s, want);
            ASSERT_STR_EQ(r.error, "unknown_op");
        } else {
            ASSERT_EQ(r.id.kind, SLOT_ID_INT);
            ASSERT_EQ(r.id.i, i);
        }
        if (i % 4 < 2) {
            ASSERT_STR_EQ(r.status, "held");
            holds_before++;
        }
        if (i % 4 == 2) /* the event read sees every hold acknowledged before it on this connection
                           (and may see later ones that committed meanwhile) */
            ASSERT_GE(r.held, holds_before);
        slot_reply_clear(&r);
        if (i % 50 == 49) {
            ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), 0);
            ASSERT_STR_EQ(r.error, "bad_json");
            ASSERT_EQ(r.id.kind, SLOT_ID_NONE);
            slot_reply_clear(&r);
        }
    }
    slot_client_close(c);
    slot_test_stop(&srv);
}

/* ---- framing: bytes one at a time, \r\n, empty lines, the line limit */

TEST_IMPL(slotd_framing_and_line_limit)
{
    const char *extra[] = {"--max-line", "1024", NULL};
    slot_test_start(&srv, extra);
    slot_client *c = slot_test_dial(&srv);
    const char *req = "{\"op\":\"event\",\"event\":\"none\",\"id\":\"x\"}\r\n";
    for (size_t i = 0; req[i]; i++)
        ASSERT_EQ(slot_client_send_raw(c, &req[i], 1), 0);
    ASSERT_EQ(slot_client_send_raw(c, "\n\r\n\n", 4), 0); /* empty lines: no reply */
    slot_reply r;
    ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), 0);
    ASSERT_STR_EQ(r.error, "unknown_event");
    ASSERT_STR_EQ(r.id.s, "x");
    slot_reply_clear(&r);
    ASSERT_EQ(slot_client_send_raw(c, "   \n", 4), 0); /* spaces only: bad_json, connection stays */
    ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), 0);
    ASSERT_STR_EQ(r.error, "bad_json");
    slot_reply_clear(&r);
    /* exactly 1024 bytes + \r\n is accepted */
    char big[1100];
    const char *head = "{\"op\":\"hello\",\"pad\":\"";
    size_t hl = strlen(head);
    memcpy(big, head, hl);
    memset(big + hl, 'a', 1024 - hl - 2);
    memcpy(big + 1022, "\"}\r\n", 4);
    ASSERT_EQ(slot_client_send_raw(c, big, 1026), 0);
    ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), 0);
    ASSERT(r.ok);
    slot_reply_clear(&r);
    /* 1025 bytes without a newline: line_too_long, then the server closes */
    memset(big, 'a', 1025);
    ASSERT_EQ(slot_client_send_raw(c, big, 1025), 0);
    ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), 0);
    ASSERT_STR_EQ(r.error, "line_too_long");
    slot_reply_clear(&r);
    ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), -ECONNRESET);
    slot_client_close(c);
    slot_test_stop(&srv);
}

/* ---- SIGTERM with requests in flight: answered or shutting_down, exit 0 */

TEST_IMPL(slotd_sigterm_answers_everything)
{
    slot_test_start(&srv, NULL);
    slot_client *c = slot_test_dial(&srv);
    slot_test_create_event(c, "stop", 100000, &(slot_event_settings){.shards = 16, .hold_ttl_ms = 600000}, NULL);
    enum { N = 4000 };
    char line[256];
    for (int i = 0; i < N; i++) {
        int n = snprintf(line, sizeof(line),
                         "{\"op\":\"hold\",\"event\":\"stop\",\"user\":\"u%d\",\"request\":\"r\",\"qty\":1}\n", i);
        ASSERT_EQ(slot_client_send_raw(c, line, (size_t)n), 0);
    }
    kill(srv.pid, SIGTERM);
    uint64_t held = 0, refused = 0;
    for (int i = 0; i < N; i++) {
        slot_reply r;
        int rc = slot_client_recv(c, &r, TIMEOUT_MS);
        if (rc == -ECONNRESET)
            break; /* requests the server had not read yet get no answer */
        ASSERT_EQ(rc, 0);
        if (r.ok && strcmp(r.status, "held") == 0)
            held++;
        else if (!r.ok && strcmp(r.error, "shutting_down") == 0)
            refused++;
        else
            T_FAIL_("unexpected reply while stopping: %s", r.line);
        slot_reply_clear(&r);
    }
    slot_client_close(c);
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    slot_test_server_start(&srv, NULL, NULL);
    c = slot_test_dial(&srv);
    slot_reply v = slot_test_view_checked(c, "stop");
    ASSERT_EQ(v.held, held); /* every held answer was committed, nothing else was */
    slot_reply_clear(&v);
    slot_client_close(c);
    (void)refused;
    slot_test_stop(&srv);
}

/* ---- an admin reshards and edits capacity while the event is selling */

typedef struct seller {
    slot_client *c;
    int id;
    uint64_t held;
} seller;

static void *sell(void *p)
{
    seller *x = p;
    for (int i = 0; i < 400; i++) {
        char user[32];
        snprintf(user, sizeof(user), "s%d-%d", x->id, i);
        slot_req q;
        slot_reply r;
        slot_req_hold(&q, "busy", user, "r", 1 + (uint32_t)(i % 3));
        if (slot_client_call(x->c, &q, &r, TIMEOUT_MS) != 0)
            break;
        if (r.ok && strcmp(r.status, "held") == 0) {
            x->held += r.qty;
            if (i % 5 == 0) { /* give some back so units move between shards */
                slot_req_hold_op(&q, SLOT_OP_RELEASE, "busy", r.hold, user);
                slot_reply_clear(&r);
                if (slot_client_call(x->c, &q, &r, TIMEOUT_MS) == 0 && r.released)
                    x->held -= (uint64_t)(1 + (i % 3));
            }
        }
        slot_reply_clear(&r);
    }
    return NULL;
}

TEST_IMPL(slotd_reshard_while_selling)
{
    slot_test_start(&srv, NULL);
    slot_client *admin = slot_test_dial(&srv);
    slot_test_create_event(admin, "busy", 3000, &(slot_event_settings){.shards = 16, .hold_ttl_ms = 600000}, NULL);
    enum { SELLERS = 8 };
    seller ss[SELLERS];
    pthread_t th[SELLERS];
    for (int i = 0; i < SELLERS; i++) {
        ss[i] = (seller){.c = slot_test_dial(&srv), .id = i};
        pthread_create(&th[i], NULL, sell, &ss[i]);
    }
    static const uint32_t layouts[] = {1, 7, 64, 3, 1024, 16, 2, 31};
    for (int round = 0; round < 40; round++) {
        slot_req q;
        slot_reply r;
        slot_req_event(&q, SLOT_OP_RESHARD, "busy");
        q.shards = layouts[round % 8];
        slot_test_call(admin, &q, &r);
        ASSERT(r.ok);
        ASSERT_EQ(r.shards, layouts[round % 8]);
        slot_reply_clear(&r);
        slot_reply v = slot_test_view_checked(admin, "busy");
        slot_reply_clear(&v);
    }
    uint64_t held = 0;
    for (int i = 0; i < SELLERS; i++) {
        pthread_join(th[i], NULL);
        held += ss[i].held;
        slot_client_close(ss[i].c);
    }
    slot_reply v = slot_test_view_checked(admin, "busy");
    ASSERT_EQ(v.held, held);
    slot_reply_clear(&v);
    slot_client_close(admin);
    slot_test_stop(&srv);
}

/* ---- slot-bench and slotctl against a real server */

static int run_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int run_cmd(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    fflush(NULL);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

TEST_IMPL(slotd_bench_and_slotctl_against_server)
{
    const char *bench = getenv("SLOT_BENCH"), *ctl = getenv("SLOTCTL");
    ASSERT(bench && ctl);
    slot_test_start(&srv, NULL);
    ASSERT_EQ(run_cmd("%s hot-release --port %u --capacity 3000 --connections 32 --tail 300 >/dev/null", bench,
                      srv.port),
              0);
    ASSERT_EQ(run_cmd("%s --port %u create tool-ev --capacity 50 --shards 4 >/dev/null", ctl, srv.port), 0);
    ASSERT_EQ(run_cmd("%s --port %u reshard tool-ev --shards 9 >/dev/null", ctl, srv.port), 0);
    ASSERT_EQ(run_cmd("%s --port %u check >/dev/null", ctl, srv.port), 0);
    ASSERT_NE(run_cmd("%s --port %u show no-such-event 2>/dev/null >/dev/null", ctl, srv.port), 0);
    slot_client *c = slot_test_dial(&srv);
    slot_reply v = slot_test_view_checked(c, "tool-ev");
    ASSERT_EQ(v.shards, 9);
    ASSERT_EQ(v.available, 50);
    slot_reply_clear(&v);
    slot_client_close(c);
    slot_test_stop(&srv);
}

/* Regression: a second slotd on the same folder started silently and, with
 * its own idempotency index, granted a second hold for a replayed key. */
TEST_IMPL(slotd_second_slotd_on_same_folder_is_refused)
{
    slot_test_start(&srv, NULL);
    const char *bin = getenv("SLOTD");
    ASSERT(bin != NULL);
    ASSERT_EQ(run_cmd("%s --data %s --listen 127.0.0.1:0 >/dev/null 2>&1", bin, srv.dir), 1);
    slot_client *c = slot_test_dial(&srv); /* the first one is unharmed */
    slot_test_create_event(c, "still", 1, &(slot_event_settings){.shards = 1, .hold_ttl_ms = 600000}, NULL);
    slot_client_close(c);
    slot_test_stop(&srv);
}

/* stats: commits and the commit thread's time — in the transaction and in
 * mdb_txn_commit (its writes and fsync) — grow with the writes, and the
 * part is never more than the whole. Reads commit nothing. */
TEST_IMPL(slotd_stats_time_the_commits)
{
    const char *const slow_sweep[] = {"--sweep-interval-ms", "60000", NULL}; /* no sweep commits meanwhile */
    slot_test_start(&srv, slow_sweep);
    slot_client *c = slot_test_dial(&srv);
    slot_test_create_event(c, "timed", 100, &(slot_event_settings){.shards = 4, .hold_ttl_ms = 600000}, NULL);
    uint64_t commits0 = slot_test_stat(&srv, "commits");
    ASSERT_GE(commits0, 1); /* create_event */
    for (int i = 0; i < 20; i++) {
        char key[16];
        slot_reply r;
        snprintf(key, sizeof(key), "k%d", i);
        hold(c, "timed", key, key, 1, &r);
        if (!r.ok || strcmp(r.status, "held") != 0)
            T_FAIL_("hold %s: %s %s", key, r.error, r.message);
        slot_reply_clear(&r);
    }
    uint64_t commits = slot_test_stat(&srv, "commits");
    uint64_t busy = slot_test_stat(&srv, "commit_busy_us"), sync = slot_test_stat(&srv, "commit_sync_us");
    ASSERT_GE(commits, commits0 + 20); /* one call at a time: a commit each */
    ASSERT_GE(sync, 1);                /* sync durability: 21 fsyncs take well over 1 us */
    ASSERT_GE(busy, sync);
    slot_reply v = slot_test_view_checked(c, "timed");
    ASSERT_EQ(v.held, 20);
    slot_reply_clear(&v);
    ASSERT_EQ(slot_test_stat(&srv, "commits"), commits);
    slot_client_close(c);
    slot_test_stop(&srv);
}

/* The sweeper runs a write transaction only when a held hold is due: an idle
 * server commits nothing, and a due hold is still expired by the timer. */
TEST_IMPL(slotd_sweeper_commits_only_when_due)
{
    const char *const fast_sweep[] = {"--sweep-interval-ms", "10", NULL};
    slot_test_start(&srv, fast_sweep);
    slot_client *c = slot_test_dial(&srv);
    slot_test_create_event(c, "idle", 10, &(slot_event_settings){.shards = 2, .hold_ttl_ms = 1000}, NULL);
    slot_reply r;
    hold(c, "idle", "ann", "k1", 3, &r);
    if (!r.ok || strcmp(r.status, "held") != 0)
        T_FAIL_("hold: %s %s", r.error, r.message);
    slot_reply_clear(&r);
    uint64_t commits = slot_test_stat(&srv, "commits");
    usleep(300 * 1000); /* ~30 ticks, the hold not due yet (1 s) */
    ASSERT_EQ(slot_test_stat(&srv, "commits"), commits);
    slot_reply v = {0};
    for (int i = 0; i < 100; i++) { /* due after 1 s; bounded at 5 s */
        usleep(50 * 1000);
        slot_reply_clear(&v);
        v = slot_test_view_checked(c, "idle");
        if (v.available == 10)
            break;
    }
    ASSERT_EQ(v.available, 10);
    ASSERT_EQ(v.held, 0);
    slot_reply_clear(&v);
    uint64_t after = slot_test_stat(&srv, "commits");
    ASSERT_GE(after, commits + 1);
    usleep(300 * 1000); /* nothing held: idle again */
    ASSERT_EQ(slot_test_stat(&srv, "commits"), after);
    slot_client_close(c);
    slot_test_stop(&srv);
}

/* Regression (found by trial): --data is "created when missing", but only its
 * last component was made, so a folder whose parent was missing failed. */
TEST_IMPL(slotd_data_folder_made_with_its_parents)
{
    char *top = slot_test_tmpdir();
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/a/b/c", top);
    memset(&srv, 0, sizeof srv);
    slot_test_server_start(&srv, dir, NULL);
    slot_client *c = slot_test_dial(&srv);
    slot_test_create_event(c, "nested", 10, &(slot_event_settings){.shards = 1, .hold_ttl_ms = 60000}, NULL);
    slot_client_close(c);
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    struct stat st;
    ASSERT_EQ(stat(dir, &st), 0);
    ASSERT_EQ((int)(st.st_mode & 0777), 0700);
    slot_test_server_free(&srv);
    slot_test_rmdir(top);
    free(top);
}
