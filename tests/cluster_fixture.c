/*
 * tests/cluster_fixture.c — what the replica-set tests share
 * (cluster_fixture.h): a line client, the set of three nodes on a private
 * etcd, the waits, the invariants and the load threads.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster_fixture.h"

/* ---- a line client: one request, one reply, with a timeout */

int lc_open(line_conn *c, int i)
{
    c->len = 0;
    c->node = i;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    /* the load thread calls this while the main thread restarts a node (a new
     * port): an atomic read of what slot_test_server_start publishes (TSan found it) */
    uint16_t port = __atomic_load_n(&nodes[i].srv.port, __ATOMIC_ACQUIRE);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, nodes[i].host, &a.sin_addr) != 1) {
        if (c->fd >= 0)
            close(c->fd);
        c->fd = -1;
        return -1;
    }
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (c->fd >= 0)
            close(c->fd);
        c->fd = -1;
        return -1;
    }
    return 0;
}

void lc_close(line_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* Sends line (none when it is ""), returns the parsed reply (NULL: the connection failed or timed out; it is closed). */
json_t *lc_call(line_conn *c, const char *line, int timeout_ms)
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
json_t *call1(int i, const char *line)
{
    line_conn c;
    if (lc_open(&c, i) != 0)
        return NULL;
    json_t *j = lc_call(&c, line, 5000);
    lc_close(&c);
    return j;
}

const char *jstr(json_t *j, const char *k)
{
    const char *v = json_string_value(json_object_get(j, k));
    return v ? v : "";
}

bool jok(json_t *j)
{
    return json_is_true(json_object_get(j, "ok"));
}

uint64_t ju64(json_t *j, const char *k)
{
    return (uint64_t)json_integer_value(json_object_get(j, k));
}

void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the set */

etcd_srv etcd;
node nodes[NODES];
char secret_path[300], base_dir[256];
/* Each node's --failover-timeout-ms; a case may make one node never campaign. */
const char *failover_ms[NODES] = {"600", "600", "600"};

bool node_logs;
char etcd_host[32] = "127.0.0.1";

/* The durability of the set's nodes: SLOT_TEST_SET_DURABILITY (sync, nosync,
 * pipelined: the cluster tests on that path), else nosync (the tests' speed;
 * a node's own extra flags come later and win). */
static const char *set_durability(void)
{
    const char *d = getenv("SLOT_TEST_SET_DURABILITY");
    return d && *d ? d : "nosync";
}

void node_start(node *n)
{
    char etcd_url[64];
    snprintf(etcd_url, sizeof(etcd_url), "http://%s:%d", etcd_host, etcd.cport);
    const char *extra[32] = {"--cluster",
                             "t",
                             "--node",
                             n->id,
                             "--etcd",
                             etcd_url,
                             "--cluster-secret-file",
                             secret_path,
                             "--heartbeat-ms",
                             "50",
                             "--failover-timeout-ms",
                             failover_ms[n - nodes],
                             "--repl-timeout-ms",
                             "600",
                             "--durability",
                             set_durability(),
                             NULL};
    size_t k = 16;
    for (size_t e = 0; n->extra[e] && k < 31; e++)
        extra[k++] = n->extra[e];
    extra[k] = NULL;
    free(n->srv.dir); /* the copy of n->dir a previous start made (a restart after a kill) */
    memset(&n->srv, 0, sizeof(n->srv));
    /* The child inherits this thread's stderr and network namespace at fork. */
    int saved_err = -1, saved_ns = -1;
    if (node_logs) {
        snprintf(n->log, sizeof(n->log), "%s/%s.log", base_dir, n->id);
        int fd = open(n->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        ASSERT(fd >= 0);
        fflush(stderr);
        saved_err = dup(STDERR_FILENO);
        ASSERT(saved_err >= 0);
        ASSERT(dup2(fd, STDERR_FILENO) == STDERR_FILENO);
        close(fd);
    }
    if (n->netns_fd > 0) {
        saved_ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        ASSERT(saved_ns >= 0);
        ASSERT_EQ(setns(n->netns_fd, CLONE_NEWNET), 0);
    }
    slot_test_server_start(&n->srv, n->dir, extra);
    if (saved_ns >= 0) {
        ASSERT_EQ(setns(saved_ns, CLONE_NEWNET), 0);
        close(saved_ns);
    }
    if (saved_err >= 0) {
        dup2(saved_err, STDERR_FILENO);
        close(saved_err);
    }
    n->up = true;
    n->stopped = false;
}

bool node_log_has(int i, const char *needle, const char *needle2)
{
    FILE *f = fopen(nodes[i].log, "r");
    if (!f)
        return false;
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, needle) != NULL && (!needle2 || strstr(line, needle2) != NULL);
    fclose(f);
    return found;
}

void set_start(void)
{
    if (!etcd.pid)
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
        if (!nodes[i].host[0])
            snprintf(nodes[i].host, sizeof(nodes[i].host), "127.0.0.1");
        node_start(&nodes[i]);
        if (i == 0)
            sleep_ms(300); /* n1 founds the set */
    }
}

void set_end(void)
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
int find_primary(int max_ms)
{
    uint64_t end = slot_test_now_ms() + (uint64_t)max_ms;
    while (slot_test_now_ms() < end) {
        for (int i = 0; i < NODES; i++) {
            if (!nodes[i].up || nodes[i].stopped)
                continue;
            json_t *j = call1(i, "{\"op\":\"cluster\"}");
            bool prim = j && strcmp(jstr(j, "role"), "primary") == 0;
            json_decref(j);
            if (!prim)
                continue;
            j = call1(i, "{\"op\":\"create_event\",\"event\":\"probe\",\"capacity\":1,\"shards\":1}");
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
bool wait_members(int want, int max_ms)
{
    uint64_t end = slot_test_now_ms() + (uint64_t)max_ms;
    while (slot_test_now_ms() < end) {
        bool all = true;
        for (int i = 0; i < NODES && all; i++) {
            if (!nodes[i].up || nodes[i].stopped)
                continue;
            json_t *j = call1(i, "{\"op\":\"cluster\"}");
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
bool wait_converged(int max_ms, char *digest_out)
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
            json_t *j = call1(i, "{\"op\":\"digest\"}");
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
void assert_invariants(int i, uint64_t capacity)
{
    json_t *j = call1(i, "{\"op\":\"check\"}");
    ASSERT(j && jok(j));
    ASSERT_EQ(ju64(j, "violations_total"), 0);
    json_decref(j);
    j = call1(i, "{\"op\":\"event\",\"event\":\"" EVENT "\"}");
    ASSERT(j && jok(j));
    ASSERT_EQ(ju64(j, "capacity"), capacity);
    ASSERT_EQ(ju64(j, "held") + ju64(j, "confirmed") + ju64(j, "available"), capacity);
    json_decref(j);
}

/* ---- load: client threads that hold one unit at a time through the primary */

acked acks[HOLDS_MAX];
atomic_int nacks;
atomic_int primary_node;
atomic_bool load_stop;
atomic_int load_retries;
atomic_bool load_follow;
pthread_mutex_t acks_mu = PTHREAD_MUTEX_INITIALIZER;

void *load_main(void *arg)
{
    loader *l = arg;
    line_conn c = {.fd = -1};
    int told = -1; /* load_follow: the node a not_primary named */
    for (int k = 0; k < l->holds_max && !atomic_load(&load_stop); k++) {
        if (l->pause_ms)
            sleep_ms(l->pause_ms);
        char line[256], user[24];
        snprintf(user, sizeof(user), "u%d-%d", l->id, k);
        snprintf(line, sizeof(line),
                 "{\"op\":\"hold\",\"event\":\"" EVENT "\",\"user\":\"%s\",\"request\":\"r%d\",\"qty\":1}", user, k);
        for (int attempt = 0; attempt < 2000 && !atomic_load(&load_stop); attempt++) {
            int pn = told >= 0 ? told : atomic_load(&primary_node);
            if (c.fd < 0 || c.node != pn) {
                lc_close(&c);
                if (lc_open(&c, pn) != 0) {
                    told = -1;
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
                    acks[n].at_ms = slot_test_now_ms();
                    atomic_store(&nacks, n + 1);
                }
                pthread_mutex_unlock(&acks_mu);
                json_decref(j);
                break;
            }
            bool sold_out = j && jok(j);
            if (atomic_load(&load_follow) && j && strcmp(jstr(j, "error"), "not_primary") == 0)
                told = node_by_addr(jstr(j, "primary"));
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

int node_by_addr(const char *addr)
{
    for (int i = 0; i < NODES; i++) {
        char a[64];
        snprintf(a, sizeof(a), "%s:%u", nodes[i].host, nodes[i].srv.port);
        if (strcmp(a, addr) == 0)
            return i;
    }
    return -1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t ack_gap_ms(uint64_t from_ms, uint64_t to_ms)
{
    static uint64_t at[HOLDS_MAX];
    size_t n = 0;
    pthread_mutex_lock(&acks_mu);
    int total = atomic_load(&nacks);
    for (int k = 0; k < total; k++)
        if (acks[k].at_ms >= from_ms && acks[k].at_ms <= to_ms)
            at[n++] = acks[k].at_ms;
    pthread_mutex_unlock(&acks_mu);
    qsort(at, n, sizeof(at[0]), cmp_u64);
    uint64_t gap = 0;
    for (size_t k = 1; k < n; k++)
        if (at[k] - at[k - 1] > gap)
            gap = at[k] - at[k - 1];
    return gap;
}

void load_start(loader *ls, int n, int holds_each, int pause_ms)
{
    atomic_store(&load_stop, false);
    for (int i = 0; i < n; i++) {
        ls[i].id = i;
        ls[i].holds_max = holds_each;
        ls[i].pause_ms = pause_ms;
        ASSERT_EQ(pthread_create(&ls[i].t, NULL, load_main, &ls[i]), 0);
    }
}

void load_join(loader *ls, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(ls[i].t, NULL);
}

/* Every acknowledged hold is on node i, held; asked 128 at a time (pipelined). */
void assert_holds_on(int i)
{
    line_conn c;
    ASSERT_EQ(lc_open(&c, i), 0);
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

void create_event(int p, uint64_t capacity)
{
    char line[256];
    snprintf(line, sizeof(line),
             "{\"op\":\"create_event\",\"event\":\"" EVENT "\",\"capacity\":%" PRIu64
             ",\"shards\":8,\"hold_ttl_ms\":3600000}",
             capacity);
    json_t *j = call1(p, line);
    ASSERT(j && jok(j));
    json_decref(j);
}
