/*
 * test_route.c — the client library routing by the placement (slot_route_*,
 * slot/client.h) against fake replica sets: loopback listeners on threads
 * (127.0.0.1, port 0), one per set, each its set's primary. A "world" says
 * which set truly owns each event; the placement op answers a map that the
 * case sets (it may lag the world, as a cached map does); a hold of an event
 * the fake's set owns keeps one hold per request key (a repeat is a replay),
 * and a hold of another set's event is wrong_set naming the owner (with or
 * without its primary), or unknown_event for a fake without the fence.
 */
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

TEST_DECLARE(route_sends_each_event_to_its_owner)
TEST_DECLARE(route_stale_map_follows_wrong_set)
TEST_DECLARE(route_wrong_set_without_primary_reads_the_map)
TEST_DECLARE(route_unknown_event_reads_the_map_once)
TEST_DECLARE(route_moving_waits_then_sends_again)
TEST_DECLARE(route_wrong_set_loop_is_bounded)
TEST_DECLARE(route_without_placement_uses_the_seed)
TEST_DECLARE(route_cart_goes_by_its_first_item)
TEST_DECLARE(route_line_without_event_follows_the_answer)

TEST_LIST_START
TEST_ENTRY(route_sends_each_event_to_its_owner)
TEST_ENTRY(route_stale_map_follows_wrong_set)
TEST_ENTRY(route_wrong_set_without_primary_reads_the_map)
TEST_ENTRY(route_unknown_event_reads_the_map_once)
TEST_ENTRY(route_moving_waits_then_sends_again)
TEST_ENTRY(route_wrong_set_loop_is_bounded)
TEST_ENTRY(route_without_placement_uses_the_seed)
TEST_ENTRY(route_cart_goes_by_its_first_item)
TEST_ENTRY(route_line_without_event_follows_the_answer)
TEST_LIST_END

/* ---------------------------------------------------------------- the fake sets */

#define FAKES 2
#define WORLD_EVENTS 8
#define KEYS_MAX 64
#define LOG_MAX 256

typedef struct fake {
    int id; /* 0: set s1, 1: set s2 */
    int lfd;
    uint16_t port;
    pthread_t th;
    volatile int stop;
    bool no_fence;     /* another set's event: unknown_event instead of wrong_set */
    bool no_primary;   /* wrong_set without "primary" */
    bool no_placement; /* the placement op is an error (a server without --placement) */
    int moving_left;   /* writes still to answer moving */
    const char *liar;  /* wrong_set names this set whatever the world says (NULL: the truth) */
} fake;

static struct {
    pthread_mutex_t mu;
    fake *fakes[FAKES];
    struct {
        char event[32];
        int set; /* the owner in truth */
    } owner[WORLD_EVENTS];
    int nowner;
    char map[1024]; /* what the placement op answers, without the outer braces' "ok" */
    char keys[FAKES][KEYS_MAX][80];
    int nkeys[FAKES];
    struct {
        int node;
        char line[512];
    } log[LOG_MAX];
    int nlog;
} world = {.mu = PTHREAD_MUTEX_INITIALIZER};

static const char *set_name(int i)
{
    return i == 0 ? "s1" : "s2";
}

/* The owner in truth of event; -1: no such event. Called with world.mu held. */
static int owner_of(const char *event)
{
    for (int i = 0; i < world.nowner; i++)
        if (strcmp(world.owner[i].event, event) == 0)
            return world.owner[i].set;
    return -1;
}

static void world_reset(void)
{
    pthread_mutex_lock(&world.mu);
    world.nowner = 0;
    world.map[0] = 0;
    memset(world.nkeys, 0, sizeof(world.nkeys));
    world.nlog = 0;
    pthread_mutex_unlock(&world.mu);
}

static void world_own(const char *event, int set)
{
    pthread_mutex_lock(&world.mu);
    snprintf(world.owner[world.nowner].event, sizeof(world.owner[0].event), "%s", event);
    world.owner[world.nowner++].set = set;
    pthread_mutex_unlock(&world.mu);
}

/* The map the placement op answers: events as "E:S" pairs ("e1:s1,e2:s2"), and s1's
 * addresses, and s2's when both_sets. */
static void world_map_sets(const char *pairs, bool both_sets)
{
    char ev[512] = "";
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", pairs);
    for (char *save = NULL, *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(p, ':');
        *colon = 0;
        snprintf(ev + strlen(ev), sizeof(ev) - strlen(ev), "%s\"%s\":{\"set\":\"%s\",\"gen\":1,\"state\":\"serving\"}",
                 ev[0] ? "," : "", p, colon + 1);
    }
    pthread_mutex_lock(&world.mu);
    char s2[128] = "";
    if (both_sets)
        snprintf(s2, sizeof(s2), ",\"s2\":{\"primary\":\"127.0.0.1:%u\",\"http\":\"127.0.0.1:2\"}",
                 (unsigned)world.fakes[1]->port);
    snprintf(world.map, sizeof(world.map),
             "\"events\":{%s},\"sets\":{\"s1\":{\"primary\":\"127.0.0.1:%u\",\"http\":\"127.0.0.1:1\"}%s}", ev,
             (unsigned)world.fakes[0]->port, s2);
    pthread_mutex_unlock(&world.mu);
}

static void world_map(const char *pairs)
{
    world_map_sets(pairs, true);
}

/* The answer of fk to one request line into out. Called with world.mu held. */
static void fake_answer(fake *fk, const char *line, char *out, size_t cap)
{
    if (world.nlog < LOG_MAX) {
        world.log[world.nlog].node = fk->id;
        snprintf(world.log[world.nlog].line, sizeof(world.log[0].line), "%s", line);
        world.nlog++;
    }
    json_t *req = json_loads(line, 0, NULL);
    const char *op = json_string_value(json_object_get(req, "op"));
    const char *event = json_string_value(json_object_get(req, "event"));
    const char *key = json_string_value(json_object_get(req, "request"));
    if (op && strcmp(op, "hold_many") == 0)
        event = json_string_value(json_object_get(json_array_get(json_object_get(req, "items"), 0), "event"));
    int own = event ? owner_of(event) : -1;
    if (!op) {
        snprintf(out, cap, "{\"ok\":false,\"error\":\"invalid_argument\",\"message\":\"no op\"}\n");
    } else if (strcmp(op, "placement") == 0) {
        if (fk->no_placement)
            snprintf(out, cap, "{\"ok\":false,\"error\":\"invalid_argument\",\"message\":\"no placement\"}\n");
        else
            snprintf(out, cap, "{\"ok\":true,%s}\n", world.map);
    } else if (!event) {
        snprintf(out, cap, "{\"ok\":true,\"node\":\"%s\"}\n", set_name(fk->id));
    } else if (own < 0 || (own != fk->id && fk->no_fence)) {
        snprintf(out, cap, "{\"ok\":false,\"error\":\"unknown_event\",\"message\":\"no such event\"}\n");
    } else if (own != fk->id || fk->liar) {
        int to = fk->liar ? (strcmp(fk->liar, "s1") == 0 ? 0 : 1) : own;
        char primary[64] = "";
        if (!fk->no_primary)
            snprintf(primary, sizeof(primary), ",\"primary\":\"127.0.0.1:%u\"", (unsigned)world.fakes[to]->port);
        snprintf(out, cap,
                 "{\"ok\":false,\"error\":\"wrong_set\",\"message\":\"placed elsewhere\",\"event\":\"%s\","
                 "\"set\":\"%s\",\"gen\":2%s}\n",
                 event, set_name(to), primary);
    } else if (fk->moving_left > 0) {
        fk->moving_left--;
        snprintf(out, cap, "{\"ok\":false,\"error\":\"moving\",\"message\":\"cut-over\",\"retry_after_ms\":30}\n");
    } else {
        int i = 0;
        while (key && i < world.nkeys[fk->id] && strcmp(world.keys[fk->id][i], key) != 0)
            i++;
        bool replay = key && i < world.nkeys[fk->id];
        if (key && !replay && world.nkeys[fk->id] < KEYS_MAX)
            snprintf(world.keys[fk->id][world.nkeys[fk->id]++], sizeof(world.keys[0][0]), "%s", key);
        snprintf(out, cap, "{\"ok\":true,\"status\":\"held\",\"hold\":\"%s-h%d\",\"qty\":1%s}\n", set_name(fk->id), i,
                 replay ? ",\"replay\":true" : "");
    }
    json_decref(req);
}

static void *fake_main(void *arg)
{
    fake *fk = arg;
    struct pollfd pfd[9] = {{.fd = fk->lfd, .events = POLLIN}};
    static __thread char bufs[8][4096];
    size_t lens[8] = {0};
    int n = 1;
    while (!fk->stop) {
        if (poll(pfd, (nfds_t)n, 20) <= 0)
            continue;
        if ((pfd[0].revents & POLLIN) && n < 9) {
            int fd = accept(fk->lfd, NULL, NULL);
            if (fd >= 0) {
                pfd[n] = (struct pollfd){.fd = fd, .events = POLLIN};
                lens[n - 1] = 0;
                n++;
            }
        }
        for (int i = 1; i < n; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLHUP)))
                continue;
            char *buf = bufs[i - 1];
            ssize_t got = read(pfd[i].fd, buf + lens[i - 1], sizeof(bufs[0]) - lens[i - 1] - 1);
            bool keep = got > 0;
            if (keep)
                lens[i - 1] += (size_t)got;
            char *start = buf, *nl;
            while (keep && (nl = memchr(start, '\n', (size_t)(buf + lens[i - 1] - start))) != NULL) {
                *nl = 0;
                char reply[2048];
                pthread_mutex_lock(&world.mu);
                fake_answer(fk, start, reply, sizeof(reply));
                pthread_mutex_unlock(&world.mu);
                size_t rl = strlen(reply);
                keep = send(pfd[i].fd, reply, rl, MSG_NOSIGNAL) == (ssize_t)rl;
                start = nl + 1;
            }
            if (keep) {
                lens[i - 1] = (size_t)(buf + lens[i - 1] - start);
                memmove(buf, start, lens[i - 1]);
                continue;
            }
            close(pfd[i].fd);
            n--;
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

static void fake_start(fake *fk, int id)
{
    memset(fk, 0, sizeof(*fk));
    fk->id = id;
    world.fakes[id] = fk;
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

/* Two fake sets; the route seeded with s1's address only. */
static slot_route *two_sets(fake *a, fake *b)
{
    world_reset();
    fake_start(a, 0);
    fake_start(b, 1);
    char seed[32];
    snprintf(seed, sizeof(seed), "127.0.0.1:%u", (unsigned)a->port);
    slot_follow_opts o;
    slot_follow_opts_default(&o);
    o.deadline_ms = 3000;
    slot_route *r = NULL;
    char err[200];
    int rc = slot_route_new(seed, &o, &r, err, sizeof(err));
    if (rc != 0)
        T_FAIL_("slot_route_new(%s) = %d: %s", seed, rc, err);
    return r;
}

static void done(slot_route *r, fake *a, fake *b)
{
    slot_route_free(r);
    fake_stop(a);
    fake_stop(b);
}

/* Lines naming key that node received. */
static int lines_at(int node, const char *key)
{
    char want[100];
    snprintf(want, sizeof(want), "\"request\":\"%s\"", key);
    int n = 0;
    pthread_mutex_lock(&world.mu);
    for (int i = 0; i < world.nlog; i++)
        n += world.log[i].node == node && strstr(world.log[i].line, want) != NULL;
    pthread_mutex_unlock(&world.mu);
    return n;
}

static int placement_reads_at(int node)
{
    int n = 0;
    pthread_mutex_lock(&world.mu);
    for (int i = 0; i < world.nlog; i++)
        n += world.log[i].node == node && strstr(world.log[i].line, "\"op\":\"placement\"") != NULL;
    pthread_mutex_unlock(&world.mu);
    return n;
}

/* A hold of event with key through r; the answer's hold id into hold (cap 32). Returns the rc. */
static int hold(slot_route *r, const char *event, const char *key, slot_reply *rep)
{
    slot_req req;
    ASSERT_EQ(slot_req_hold(&req, event, "alice", key, 1), 0);
    return slot_route_call(r, &req, rep);
}

/* ---------------------------------------------------------------- cases */

TEST_IMPL(route_sends_each_event_to_its_owner)
{
    fake a, b;
    slot_route *r = two_sets(&a, &b);
    world_own("e1", 0);
    world_own("e2", 1);
    world_map("e1:s1,e2:s2");
    slot_reply rep;
    ASSERT_EQ(hold(r, "e2", "k2", &rep), 0);
    ASSERT(rep.ok);
    ASSERT_STR_EQ(rep.hold, "s2-h0");
    slot_reply_clear(&rep);
    ASSERT_EQ(hold(r, "e1", "k1", &rep), 0);
    ASSERT_STR_EQ(rep.hold, "s1-h0");
    slot_reply_clear(&rep);
    /* Each hold went to its owner only, once: the map sent it there, no wrong_set. */
    ASSERT_EQ(lines_at(1, "k2"), 1);
    ASSERT_EQ(lines_at(0, "k2"), 0);
    ASSERT_EQ(lines_at(0, "k1"), 1);
    ASSERT_EQ(lines_at(1, "k1"), 0);
    ASSERT_EQ(placement_reads_at(0), 1); /* the map, read once through the seed */
    ASSERT_EQ(placement_reads_at(1), 0);
    char set[16];
    uint64_t gen = 0;
    const char *primary = NULL, *http = NULL;
    ASSERT_EQ(slot_route_owner(r, "e2", set, sizeof(set), &gen, &primary, &http), 1);
    ASSERT_STR_EQ(set, "s2");
    ASSERT_U64_EQ(gen, 1);
    ASSERT_STR_EQ(http, "127.0.0.1:2");
    ASSERT_EQ(slot_route_owner(r, "nosuch", set, sizeof(set), &gen, NULL, NULL), 0);
    ASSERT_EQ(slot_route_nsets(r), 2);
    /* A request without an event goes to the seed. */
    slot_req req;
    slot_req_init(&req, SLOT_OP_STATS);
    ASSERT_EQ(slot_route_call(r, &req, &rep), 0);
    ASSERT(strstr(rep.line, "\"node\":\"s1\"") != NULL);
    slot_reply_clear(&rep);
    slot_route_stats st;
    slot_route_stats_get(r, &st);
    ASSERT_U64_EQ(st.calls, 3);
    ASSERT_U64_EQ(st.wrong_set, 0);
    ASSERT_U64_EQ(st.map_reads, 1);
    done(r, &a, &b);
}

TEST_IMPL(route_stale_map_follows_wrong_set)
{
    fake a, b;
    slot_route *r = two_sets(&a, &b);
    world_own("e2", 1);
    world_map("e2:s1"); /* stale: e2 has moved to s2 */
    slot_reply rep;
    ASSERT_EQ(hold(r, "e2", "k1", &rep), 0);
    ASSERT(rep.ok);
    ASSERT_STR_EQ(rep.hold, "s2-h0");
    ASSERT(!rep.replay);
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_at(0, "k1"), 1); /* s1: wrong_set */
    ASSERT_EQ(lines_at(1, "k1"), 1); /* s2: the same line, held */
    pthread_mutex_lock(&world.mu);
    const char *first = NULL, *second = NULL;
    for (int i = 0; i < world.nlog; i++)
        if (strstr(world.log[i].line, "\"request\":\"k1\""))
            *(first ? &second : &first) = world.log[i].line;
    ASSERT(first && second);
    ASSERT_STR_EQ(first, second); /* byte for byte: the same key, so a resend is a replay */
    pthread_mutex_unlock(&world.mu);
    /* The answer taught the route: the next hold of e2 goes straight to s2. */
    ASSERT_EQ(hold(r, "e2", "k2", &rep), 0);
    ASSERT_STR_EQ(rep.hold, "s2-h1");
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_at(0, "k2"), 0);
    slot_route_stats st;
    slot_route_stats_get(r, &st);
    ASSERT_U64_EQ(st.wrong_set, 1);
    ASSERT_U64_EQ(st.map_reads, 1); /* the answer named the owner's primary: no re-read */
    done(r, &a, &b);
}

TEST_IMPL(route_wrong_set_without_primary_reads_the_map)
{
    fake a, b;
    slot_route *r = two_sets(&a, &b);
    a.no_primary = true;
    world_own("e1", 0);
    world_own("e2", 1);
    world_map_sets("e1:s1", false); /* s2 not published yet */
    slot_reply rep;
    ASSERT_EQ(hold(r, "e1", "k0", &rep), 0); /* the first call reads the stale map */
    slot_reply_clear(&rep);
    world_map("e1:s1,e2:s2"); /* s2 publishes its primary */
    ASSERT_EQ(hold(r, "e2", "k1", &rep), 0);
    ASSERT(rep.ok);
    ASSERT_STR_EQ(rep.hold, "s2-h0");
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_at(0, "k1"), 1);
    ASSERT_EQ(lines_at(1, "k1"), 1);
    ASSERT_EQ(placement_reads_at(0), 2); /* the first read, then the one wrong_set asked for */
    done(r, &a, &b);
}

TEST_IMPL(route_unknown_event_reads_the_map_once)
{
    fake a, b;
    slot_route *r = two_sets(&a, &b);
    a.no_fence = true; /* s1 does not know the map: unknown_event for s2's events */
    world_own("e1", 0);
    world_map("e1:s1");
    slot_reply rep;
    ASSERT_EQ(hold(r, "e1", "k0", &rep), 0);
    slot_reply_clear(&rep);
    world_own("e3", 1); /* created on s2 after the map was read */
    world_map("e1:s1,e3:s2");
    ASSERT_EQ(hold(r, "e3", "k1", &rep), 0);
    ASSERT(rep.ok);
    ASSERT_STR_EQ(rep.hold, "s2-h0");
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_at(0, "k1"), 1); /* the seed: unknown_event */
    ASSERT_EQ(lines_at(1, "k1"), 1);
    /* A name no set holds: unknown_event, after one more read of the map only. */
    ASSERT_EQ(hold(r, "nosuch", "k2", &rep), 0);
    ASSERT(!rep.ok);
    ASSERT_EQ(rep.err, SLOT_E_UNKNOWN_EVENT);
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_at(0, "k2") + lines_at(1, "k2"), 1);
    slot_route_stats st;
    slot_route_stats_get(r, &st);
    ASSERT_U64_EQ(st.map_reads, 3);
    ASSERT_U64_EQ(st.unknown_rerouted, 1);
    done(r, &a, &b);
}

TEST_IMPL(route_moving_waits_then_sends_again)
{
    fake a, b;
    slot_route *r = two_sets(&a, &b);
    world_own("e2", 1);
    world_map("e2:s2");
    b.moving_left = 2;
    slot_reply rep;
    ASSERT_EQ(hold(r, "e2", "k1", &rep), 0);
    ASSERT(rep.ok);
    ASSERT_STR_EQ(rep.hold, "s2-h0");
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_at(1, "k1"), 3); /* moving, moving, held: the same key each time */
    ASSERT_EQ(lines_at(0, "k1"), 0);
    done(r, &a, &b);
}

TEST_IMPL(route_wrong_set_loop_is_bounded)
{
    fake a, b;
    slot_route *r = two_sets(&a, &b);
    world_own("e2", 1);
    world_map("e2:s2");
    b.liar = "s1"; /* each set says the other owns it: the route must stop */
    a.liar = "s2";
    world_own("e1", 0);
    slot_reply rep;
    int rc = hold(r, "e2", "k1", &rep);
    ASSERT_EQ(rc, -EAGAIN);
    ASSERT_EQ(rep.err, SLOT_E_WRONG_SET);
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_at(0, "k1") + lines_at(1, "k1"), SLOT_ROUTE_REDIRECTS_MAX + 1);
    ASSERT(strstr(slot_route_error(r), "wrong_set") != NULL);
    done(r, &a, &b);
}

TEST_IMPL(route_without_placement_uses_the_seed)
{
    fake a, b;
    slot_route *r = two_sets(&a, &b);
    a.no_placement = true;
    world_own("e1", 0);
    slot_reply rep;
    ASSERT_EQ(hold(r, "e1", "k1", &rep), 0);
    ASSERT(rep.ok);
    ASSERT_STR_EQ(rep.hold, "s1-h0");
    slot_reply_clear(&rep);
    ASSERT_EQ(slot_route_refresh(r), -EPROTO);
    ASSERT(strstr(slot_route_error(r), "no placement") != NULL);
    ASSERT_EQ(slot_route_nsets(r), 0);
    done(r, &a, &b);
}

TEST_IMPL(route_cart_goes_by_its_first_item)
{
    fake a, b;
    slot_route *r = two_sets(&a, &b);
    world_own("e1", 0);
    world_own("e2", 1);
    world_map("e1:s1,e2:s2");
    slot_req req;
    ASSERT_EQ(slot_req_hold_many(&req, "alice", "cart-1"), 0);
    ASSERT_EQ(slot_req_cart_add(&req, "e2", 1), 0);
    ASSERT_EQ(slot_req_cart_add(&req, "e1", 1), 0);
    slot_reply rep;
    ASSERT_EQ(slot_route_call(r, &req, &rep), 0);
    ASSERT(rep.ok);
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_at(1, "cart-1"), 1);
    ASSERT_EQ(lines_at(0, "cart-1"), 0);
    done(r, &a, &b);
}

/* A line sent without naming its event goes to the seed; the seed's wrong_set names the
 * event and its owner, and the same line goes there. */
TEST_IMPL(route_line_without_event_follows_the_answer)
{
    fake a, b;
    slot_route *r = two_sets(&a, &b);
    world_own("e2", 1);
    world_map("e2:s2");
    const char *line = "{\"op\":\"hold\",\"event\":\"e2\",\"user\":\"u\",\"qty\":1,\"request\":\"k1\"}\n";
    slot_reply rep;
    ASSERT_EQ(slot_route_call_line(r, NULL, line, strlen(line), &rep), 0);
    ASSERT(rep.ok);
    ASSERT_STR_EQ(rep.hold, "s2-h0");
    slot_reply_clear(&rep);
    ASSERT_EQ(lines_at(0, "k1"), 1);
    ASSERT_EQ(lines_at(1, "k1"), 1);
    ASSERT_EQ(slot_route_call_line(r, NULL, "{\"op\":\"hold\"", 14, &rep), -EMSGSIZE); /* no newline */
    slot_reply_clear(&rep);
    done(r, &a, &b);
}
