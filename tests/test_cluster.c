/*
 * tests/test_cluster.c — replica sets end to end (docs/design.md, "Replica
 * sets"): a private etcd (tests/etcd_fixture.c) and three slotd nodes on
 * ephemeral loopback ports with temporary folders, stopped by PID. Every wait
 * is bounded by count and time; nothing asserts a duration.
 */
#include <errno.h>
#include <jansson.h>
#include <lmdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "etcd_fixture.h"
#include "harness.h"

TEST_DECLARE(cluster_hot_release)
TEST_DECLARE(cluster_kill9_primary)
TEST_DECLARE(cluster_sigstop_primary)
TEST_DECLARE(cluster_tenure_record_reaches_members_joining_during_promote)

TEST_LIST_START
    TEST_ENTRY(cluster_hot_release)
    TEST_ENTRY(cluster_kill9_primary)
    TEST_ENTRY(cluster_sigstop_primary)
    TEST_ENTRY(cluster_tenure_record_reaches_members_joining_during_promote)
TEST_LIST_END

#define NODES 3
#define EVENT "sale"
#define WAIT_LONG_MS 30000

/* ---- a line client: one request, one reply, with a timeout */

typedef struct line_conn {
    int fd, port;
    char buf[65536];
    size_t len;
} line_conn;

static int lc_open(line_conn *c, int port)
{
    c->len = 0;
    c->port = port;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (c->fd >= 0)
            close(c->fd);
        c->fd = -1;
        return -1;
    }
    return 0;
}

static void lc_close(line_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* Sends line (none when it is ""), returns the parsed reply (NULL: the connection failed or timed out; it is closed). */
static json_t *lc_call(line_conn *c, const char *line, int timeout_ms)
{
    if (c->fd < 0)
        return NULL;
    size_t n = strlen(line);
    char out[2048];
    snprintf(out, sizeof(out), "%s\n", line);
    if (n > 0 && write(c->fd, out, n + 1) != (ssize_t)(n + 1)) {
        lc_close(c);
        return NULL;
    }
    uint64_t end = slot_test_now_ms() + (uint64_t)timeout_ms;
    for (;;) {
        char *nl = memchr(c->buf, '\n', c->len);
        if (nl) {
            json_error_t err;
            json_t *j = json_loadb(c->buf, (size_t)(nl - c->buf), JSON_REJECT_DUPLICATES, &err);
            size_t used = (size_t)(nl - c->buf) + 1;
            memmove(c->buf, nl + 1, c->len - used);
            c->len -= used;
            return j;
        }
        uint64_t now = slot_test_now_ms();
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (now >= end || poll(&p, 1, (int)(end - now)) <= 0 || c->len == sizeof(c->buf)) {
            lc_close(c);
            return NULL;
        }
        ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
        if (r <= 0) {
            lc_close(c);
            return NULL;
        }
        c->len += (size_t)r;
    }
}

/* One request on a new connection. */
static json_t *call1(int port, const char *line)
{
    line_conn c;
    if (lc_open(&c, port) != 0)
        return NULL;
    json_t *j = lc_call(&c, line, 5000);
    lc_close(&c);
    return j;
}

static const char *jstr(json_t *j, const char *k)
{
    const char *v = json_string_value(json_object_get(j, k));
    return v ? v : "";
}

static bool jok(json_t *j)
{
    return json_is_true(json_object_get(j, "ok"));
}

static uint64_t ju64(json_t *j, const char *k)
{
    return (uint64_t)json_integer_value(json_object_get(j, k));
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the set */

typedef struct node {
    char id[8];
    char dir[300];
    slot_test_server srv;
    bool up, stopped;
} node;

static etcd_srv etcd;
static node nodes[NODES];
static char secret_path[300], base_dir[256];
/* Each node's --failover-timeout-ms; a case may make one node never campaign. */
static const char *failover_ms[NODES] = {"600", "600", "600"};

static void node_start(node *n)
{
    char etcd_url[64];
    snprintf(etcd_url, sizeof(etcd_url), "http://127.0.0.1:%d", etcd.cport);
    const char *extra[] = {"--cluster", "t", "--node", n->id, "--etcd", etcd_url, "--cluster-secret-file", secret_path,
                           "--heartbeat-ms", "50", "--failover-timeout-ms", failover_ms[n - nodes], "--repl-timeout-ms", "600",
                           "--durability", "nosync", NULL};
    memset(&n->srv, 0, sizeof(n->srv));
    slot_test_server_start(&n->srv, n->dir, extra);
    n->up = true;
    n->stopped = false;
}

static void set_start(void)
{
    etcd_start(&etcd);
    char *d = slot_test_tmpdir();
    snprintf(base_dir, sizeof(base_dir), "%s", d);
    free(d);
    snprintf(secret_path, sizeof(secret_path), "%s/secret", base_dir);
    FILE *f = fopen(secret_path, "w");
    ASSERT(f);
    fputs("a-cluster-secret-of-some-length\n", f);
    fclose(f);
    ASSERT_EQ(chmod(secret_path, 0600), 0);
    for (int i = 0; i < NODES; i++) {
        snprintf(nodes[i].id, sizeof(nodes[i].id), "n%d", i + 1);
        snprintf(nodes[i].dir, sizeof(nodes[i].dir), "%s/%s", base_dir, nodes[i].id);
        node_start(&nodes[i]);
        if (i == 0)
            sleep_ms(300); /* n1 founds the set */
    }
}

static void set_end(void)
{
    for (int i = 0; i < NODES; i++) {
        if (nodes[i].stopped)
            kill(nodes[i].srv.pid, SIGCONT);
        if (nodes[i].up)
            slot_test_server_kill9(&nodes[i].srv);
        nodes[i].up = false;
    }
    etcd_end(&etcd);
    slot_test_rmdir(base_dir);
}

/* The node whose cluster op says primary and that takes a write; -1 after max_ms. */
static int find_primary(int max_ms)
{
    uint64_t end = slot_test_now_ms() + (uint64_t)max_ms;
    while (slot_test_now_ms() < end) {
        for (int i = 0; i < NODES; i++) {
            if (!nodes[i].up || nodes[i].stopped)
                continue;
            json_t *j = call1(nodes[i].srv.port, "{\"op\":\"cluster\"}");
            bool prim = j && strcmp(jstr(j, "role"), "primary") == 0;
            json_decref(j);
            if (!prim)
                continue;
            j = call1(nodes[i].srv.port, "{\"op\":\"create_event\",\"event\":\"probe\",\"capacity\":1,\"shards\":1}");
            bool ok = j && jok(j);
            json_decref(j);
            if (ok)
                return i;
        }
        sleep_ms(50);
    }
    return -1;
}

/* Every live node answers the cluster op with `want` members and its role is
 * primary or replica; false after max_ms. */
static bool wait_members(int want, int max_ms)
{
    uint64_t end = slot_test_now_ms() + (uint64_t)max_ms;
    while (slot_test_now_ms() < end) {
        bool all = true;
        for (int i = 0; i < NODES && all; i++) {
            if (!nodes[i].up || nodes[i].stopped)
                continue;
            json_t *j = call1(nodes[i].srv.port, "{\"op\":\"cluster\"}");
            const char *role = j ? jstr(j, "role") : "";
            all = j && (int)json_array_size(json_object_get(j, "members")) == want &&
                  (strcmp(role, "primary") == 0 || strcmp(role, "replica") == 0);
            json_decref(j);
        }
        if (all)
            return true;
        sleep_ms(100);
    }
    return false;
}

/* Every live node has the same seq and digest; false after max_ms. */
static bool wait_converged(int max_ms, char *digest_out)
{
    uint64_t end = slot_test_now_ms() + (uint64_t)max_ms;
    while (slot_test_now_ms() < end) {
        char first[80] = "";
        uint64_t seq0 = 0;
        bool same = true;
        int seen = 0;
        for (int i = 0; i < NODES && same; i++) {
            if (!nodes[i].up || nodes[i].stopped)
                continue;
            json_t *j = call1(nodes[i].srv.port, "{\"op\":\"digest\"}");
            if (!j || !jok(j)) {
                same = false;
            } else if (seen++ == 0) {
                snprintf(first, sizeof(first), "%s", jstr(j, "digest"));
                seq0 = ju64(j, "seq");
            } else {
                same = strcmp(first, jstr(j, "digest")) == 0 && seq0 == ju64(j, "seq");
            }
            json_decref(j);
        }
        if (same && seen > 0) {
            if (digest_out)
                strcpy(digest_out, first);
            return true;
        }
        sleep_ms(100);
    }
    return false;
}

/* check is clean and held + confirmed + available = capacity on node i. */
static void assert_invariants(int i, uint64_t capacity)
{
    json_t *j = call1(nodes[i].srv.port, "{\"op\":\"check\"}");
    ASSERT(j && jok(j));
    ASSERT_EQ(ju64(j, "violations_total"), 0);
    json_decref(j);
    j = call1(nodes[i].srv.port, "{\"op\":\"event\",\"event\":\"" EVENT "\"}");
    ASSERT(j && jok(j));
    ASSERT_EQ(ju64(j, "capacity"), capacity);
    ASSERT_EQ(ju64(j, "held") + ju64(j, "confirmed") + ju64(j, "available"), capacity);
    json_decref(j);
}

/* ---- load: client threads that hold one unit at a time through the primary */

#define HOLDS_MAX 200000
typedef struct acked {
    char hold[40];
    char user[24];
} acked;

static acked acks[HOLDS_MAX];
static atomic_int nacks;
static atomic_int primary_port;
static atomic_bool load_stop;
static atomic_int load_retries;
static pthread_mutex_t acks_mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct loader {
    pthread_t t;
    int id, holds_max;
    int pause_ms; /* between holds: the failover loops keep their load going over every round */
} loader;

static void *load_main(void *arg)
{
    loader *l = arg;
    line_conn c = {.fd = -1};
    for (int k = 0; k < l->holds_max && !atomic_load(&load_stop); k++) {
        if (l->pause_ms)
            sleep_ms(l->pause_ms);
        char line[256], user[24];
        snprintf(user, sizeof(user), "u%d-%d", l->id, k);
        snprintf(line, sizeof(line), "{\"op\":\"hold\",\"event\":\"" EVENT "\",\"user\":\"%s\",\"request\":\"r%d\",\"qty\":1}",
                 user, k);
        for (int attempt = 0; attempt < 2000 && !atomic_load(&load_stop); attempt++) {
            int port = atomic_load(&primary_port);
            if (c.fd < 0 || c.port != port) {
                lc_close(&c);
                if (lc_open(&c, port) != 0) {
                    sleep_ms(20);
                    continue;
                }
            }
            json_t *j = lc_call(&c, line, 5000);
            if (j && jok(j) && strcmp(jstr(j, "status"), "held") == 0) {
                pthread_mutex_lock(&acks_mu);
                int n = atomic_load(&nacks);
                if (n < HOLDS_MAX) {
                    snprintf(acks[n].hold, sizeof(acks[n].hold), "%s", jstr(j, "hold"));
                    snprintf(acks[n].user, sizeof(acks[n].user), "%s", user);
                    atomic_store(&nacks, n + 1);
                }
                pthread_mutex_unlock(&acks_mu);
                json_decref(j);
                break;
            }
            bool sold_out = j && jok(j);
            json_decref(j);
            if (sold_out)
                break;
            atomic_fetch_add(&load_retries, 1);
            lc_close(&c);
            sleep_ms(20); /* not_primary, unavailable or a lost connection: the same request again */
        }
    }
    lc_close(&c);
    return NULL;
}

static void load_start(loader *ls, int n, int holds_each, int pause_ms)
{
    atomic_store(&load_stop, false);
    for (int i = 0; i < n; i++) {
        ls[i].id = i;
        ls[i].holds_max = holds_each;
        ls[i].pause_ms = pause_ms;
        ASSERT_EQ(pthread_create(&ls[i].t, NULL, load_main, &ls[i]), 0);
    }
}

static void load_join(loader *ls, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(ls[i].t, NULL);
}

/* Every acknowledged hold is on node i, held; asked 128 at a time (pipelined). */
static void assert_holds_on(int i)
{
    line_conn c;
    ASSERT_EQ(lc_open(&c, nodes[i].srv.port), 0);
    pthread_mutex_lock(&acks_mu);
    int n = atomic_load(&nacks);
    pthread_mutex_unlock(&acks_mu);
    for (int k0 = 0; k0 < n; k0 += 128) {
        int k1 = k0 + 128 < n ? k0 + 128 : n;
        static char out[128 * 160];
        size_t len = 0;
        for (int k = k0; k < k1; k++)
            len += (size_t)snprintf(out + len, sizeof(out) - len,
                                    "{\"op\":\"get_hold\",\"event\":\"" EVENT "\",\"hold\":\"%s\",\"user\":\"%s\"}\n",
                                    acks[k].hold, acks[k].user);
        ASSERT_EQ(write(c.fd, out, len), (ssize_t)len);
        for (int k = k0; k < k1; k++) {
            json_t *j = lc_call(&c, "", 5000); /* "": sends nothing, reads the next reply */
            if (!j || !jok(j) || strcmp(jstr(j, "status"), "held") != 0)
                T_FAIL_("acknowledged hold %s of %s is not held on %s: %s", acks[k].hold, acks[k].user, nodes[i].id,
                        j ? json_dumps(j, JSON_COMPACT) : "(no reply)");
            json_decref(j);
        }
    }
    lc_close(&c);
}

static void create_event(int p, uint64_t capacity)
{
    char line[256];
    snprintf(line, sizeof(line),
             "{\"op\":\"create_event\",\"event\":\"" EVENT "\",\"capacity\":%" PRIu64 ",\"shards\":8,\"hold_ttl_ms\":3600000}",
             capacity);
    json_t *j = call1(nodes[p].srv.port, line);
    ASSERT(j && jok(j));
    json_decref(j);
}

/* ---- cases */

TEST_IMPL(cluster_hot_release)
{
    set_start();
    int p = find_primary(WAIT_LONG_MS);
    ASSERT(p >= 0);
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    create_event(p, 100000);
    json_t *h = call1(nodes[p].srv.port, "{\"op\":\"hello\"}"); /* one "features", "cluster" in it */
    ASSERT(h && jok(h));
    json_t *f = json_object_get(h, "features");
    ASSERT_EQ(json_array_size(f), 8u);
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 7)), "cluster");
    json_decref(h);
    atomic_store(&primary_port, nodes[p].srv.port);
    loader ls[6];
    load_start(ls, 6, 500, 0);
    load_join(ls, 6);
    ASSERT_EQ(atomic_load(&nacks), 3000);
    char digest[80];
    ASSERT(wait_converged(WAIT_LONG_MS, digest));
    for (int i = 0; i < NODES; i++) {
        assert_invariants(i, 100000);
        assert_holds_on(i);
    }
    for (int i = 0; i < NODES; i++) { /* a write to a replica: not_primary, naming the primary */
        if (i == p)
            continue;
        json_t *j = call1(nodes[i].srv.port, "{\"op\":\"hold\",\"event\":\"" EVENT "\",\"user\":\"x\",\"request\":\"x\",\"qty\":1}");
        ASSERT(j && !jok(j));
        ASSERT_STR_EQ(jstr(j, "error"), "not_primary");
        char want[32];
        snprintf(want, sizeof(want), "127.0.0.1:%u", nodes[p].srv.port);
        ASSERT_STR_EQ(jstr(j, "primary"), want);
        json_decref(j);
    }
    set_end();
}

/* Kill -9 (or SIGSTOP, stop = true) the primary `rounds` times under load. */
static void failover_rounds(int rounds, bool stop)
{
    set_start();
    int p = find_primary(WAIT_LONG_MS);
    ASSERT(p >= 0);
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    const uint64_t capacity = 1000000;
    create_event(p, capacity);
    atomic_store(&primary_port, nodes[p].srv.port);
    loader ls[4];
    load_start(ls, 4, HOLDS_MAX / 4, 2);
    unsigned seed = (unsigned)slot_test_now_ms();
    for (int round = 0; round < rounds; round++) {
        sleep_ms(100 + (int)(rand_r(&seed) % 400));
        int old = p;
        if (stop) {
            ASSERT_EQ(kill(nodes[old].srv.pid, SIGSTOP), 0);
            nodes[old].stopped = true;
        } else {
            slot_test_server_kill9(&nodes[old].srv);
            nodes[old].up = false;
        }
        p = find_primary(WAIT_LONG_MS);
        if (p < 0)
            T_FAIL_("round %d: no new primary after %s of %s", round, stop ? "SIGSTOP" : "kill -9", nodes[old].id);
        ASSERT(p != old);
        atomic_store(&primary_port, nodes[p].srv.port);
        assert_holds_on(p);
        assert_invariants(p, capacity);
        if (stop) {
            ASSERT_EQ(kill(nodes[old].srv.pid, SIGCONT), 0);
            nodes[old].stopped = false;
            /* The old primary acknowledges nothing now: a write is refused, never held. */
            json_t *j = call1(nodes[old].srv.port,
                              "{\"op\":\"hold\",\"event\":\"" EVENT "\",\"user\":\"old\",\"request\":\"old\",\"qty\":1}");
            if (j && jok(j))
                T_FAIL_("round %d: the old primary answered a write: %s", round, json_dumps(j, JSON_COMPACT));
            json_decref(j);
        } else {
            node_start(&nodes[old]);
        }
        if (!wait_members(NODES, WAIT_LONG_MS))
            T_FAIL_("round %d: %s did not rejoin", round, nodes[old].id);
    }
    atomic_store(&load_stop, true);
    load_join(ls, 4);
    ASSERT(atomic_load(&nacks) > 0);
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    for (int i = 0; i < NODES; i++) {
        assert_invariants(i, capacity);
        assert_holds_on(i);
    }
    fprintf(stderr, "%d rounds: %d holds acknowledged, %d retries\n", rounds, atomic_load(&nacks),
            atomic_load(&load_retries));
    set_end();
}

TEST_IMPL(cluster_kill9_primary)
{
    failover_rounds(20, false);
}

TEST_IMPL(cluster_sigstop_primary)
{
    failover_rounds(5, true);
}

/* The member's seq in node i's cluster answer (0 when absent); the answer's role into role_out. */
static uint64_t member_seq(int i, const char *member, char *role_out, size_t role_cap)
{
    json_t *j = call1(nodes[i].srv.port, "{\"op\":\"cluster\"}");
    snprintf(role_out, role_cap, "%s", j ? jstr(j, "role") : "");
    uint64_t seq = 0;
    json_t *m = j ? json_object_get(j, "members") : NULL;
    for (size_t k = 0; k < json_array_size(m); k++) {
        json_t *e = json_array_get(m, k);
        if (strcmp(jstr(e, "node"), member) == 0)
            seq = ju64(e, "seq");
    }
    json_decref(j);
    return seq;
}

/*
 * A new primary sends its tenure record to members that connect while its
 * promote job runs. The job is held up for certain: the test takes LMDB's
 * writer lock of n2's store (another process may, LMDB's lock is shared)
 * before n1, the primary, is killed; n3 never campaigns (a failover timeout
 * longer than the case), so n2 takes over and its promote job waits in
 * mdb_txn_begin. Once n2's cluster answer shows n3 connected (its seq, the
 * position n3 announced when its stream became ready, is no longer 0) the
 * lock is let go. The job then appends the first record of n2's tenure,
 * which must reach n3: n2 becomes a primary that takes writes, and n3 holds
 * the same records. Before the fix n3 was never sent the record, and n2
 * stayed unavailable.
 */
TEST_IMPL(cluster_tenure_record_reaches_members_joining_during_promote)
{
    failover_ms[2] = "600000";
    set_start();
    int p = find_primary(WAIT_LONG_MS);
    ASSERT_EQ(p, 0); /* n1 founded the set */
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    create_event(p, 1000);
    for (int k = 0; k < 20; k++) {
        char line[256];
        snprintf(line, sizeof(line),
                 "{\"op\":\"hold\",\"event\":\"" EVENT "\",\"user\":\"u%d\",\"request\":\"r%d\",\"qty\":1}", k, k);
        json_t *j = call1(nodes[p].srv.port, line);
        ASSERT(j && jok(j));
        json_decref(j);
    }
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    /* n2 answers a read only once the commit point it heard covers its state:
     * then it knows a commit point above 0, and n3's seq can show below. */
    bool read_ok = false;
    uint64_t end = slot_test_now_ms() + WAIT_LONG_MS;
    while (!read_ok && slot_test_now_ms() < end) {
        json_t *r = call1(nodes[1].srv.port, "{\"op\":\"event\",\"event\":\"" EVENT "\"}");
        read_ok = r && jok(r);
        json_decref(r);
        if (!read_ok)
            sleep_ms(50);
    }
    ASSERT(read_ok);
    char role[32];

    MDB_env *env = NULL;
    MDB_txn *lock = NULL;
    ASSERT_EQ(mdb_env_create(&env), 0);
    ASSERT_EQ(mdb_env_open(env, nodes[1].dir, MDB_NOTLS | MDB_NORDAHEAD, 0600), 0);
    ASSERT_EQ(mdb_txn_begin(env, NULL, 0, &lock), 0); /* n2's writer lock, until the abort below */

    slot_test_server_kill9(&nodes[0].srv);
    nodes[0].up = false;
    bool joined = false;
    end = slot_test_now_ms() + WAIT_LONG_MS;
    while (!joined && slot_test_now_ms() < end) {
        uint64_t seq = member_seq(1, "n3", role, sizeof(role));
        joined = strcmp(role, "primary") == 0 && seq > 0; /* taking over ("primary"), n3's stream ready */
        if (!joined)
            sleep_ms(50);
    }
    mdb_txn_abort(lock);
    mdb_env_close(env);
    if (!joined)
        T_FAIL_("%s did not take over with n3 connected while its promote job waited", nodes[1].id);

    p = find_primary(WAIT_LONG_MS);
    if (p != 1)
        T_FAIL_("no primary that takes writes after n2's promote job (found %d)", p);
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    assert_invariants(1, 1000);
    assert_invariants(2, 1000);
    set_end();
    failover_ms[2] = "600";
}
