/*
 * test_follow_e2e.c — slotctl and slot-bench following the primary, against
 * a real slotd and a fake node in front of it (a loopback listener on a
 * thread that answers every line with not_primary naming the real server):
 * slotctl cluster on a standalone server, slotctl writes through a list
 * whose first node is not the primary, slot-bench with two --host values
 * (the fake first) verifying every hold through the primary, and slot-bench
 * across a kill -9 and restart of its server (connections closed mid-request:
 * the requests in flight go again with the same keys, each key counted once),
 * and slot-bench verifying on the primary although its admin connection fell
 * back on a stale replica (the fake answering cluster and event reads).
 * $SLOTCTL and $SLOT_BENCH are the programs under test.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

TEST_DECLARE(follow_e2e_slotctl_cluster_on_standalone)
TEST_DECLARE(follow_e2e_slotctl_cluster_table)
TEST_DECLARE(follow_e2e_slotctl_writes_follow_not_primary)
TEST_DECLARE(follow_e2e_bench_two_hosts_follows_and_verifies)
TEST_DECLARE(follow_e2e_bench_across_a_restart_counts_each_key_once)
TEST_DECLARE(follow_e2e_bench_verifies_on_the_primary_not_a_stale_replica)

TEST_LIST_START
TEST_ENTRY(follow_e2e_slotctl_cluster_on_standalone)
TEST_ENTRY(follow_e2e_slotctl_cluster_table)
TEST_ENTRY(follow_e2e_slotctl_writes_follow_not_primary)
TEST_ENTRY(follow_e2e_bench_two_hosts_follows_and_verifies)
TEST_ENTRY(follow_e2e_bench_across_a_restart_counts_each_key_once)
TEST_ENTRY(follow_e2e_bench_verifies_on_the_primary_not_a_stale_replica)
TEST_LIST_END

#define RUN_TIMEOUT_MS 90000 /* one slotctl or slot-bench run */
#define OUT_BYTES (64u << 10)
#define FAKE_CONNS 32

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/* ---------------------------------------------------------------- a node that is not the primary */

typedef struct fake {
    int lfd;
    uint16_t port;
    pthread_t th;
    volatile int stop;
    char primary[64];
    const char *answer; /* when set: every line is answered with it (a line ending in "\n") */
    bool stale; /* a replica that applied nothing: cluster, stats, check, event answered, the rest not_primary */
    volatile int clusters; /* cluster ops answered (stale) */
    volatile int lines;    /* lines answered */
    char first[512];       /* the first line that was not hello */
} fake;

static bool fake_serve(fake *fk, int fd, char *buf, size_t *len)
{
    ssize_t n = read(fd, buf + *len, 8192 - *len - 1);
    if (n <= 0)
        return false;
    *len += (size_t)n;
    char *start = buf, *nl;
    while ((nl = memchr(start, '\n', (size_t)(buf + *len - start))) != NULL) {
        *nl = 0;
        if (!fk->first[0] && !strstr(start, "\"op\":\"hello\""))
            snprintf(fk->first, sizeof(fk->first), "%.500s", start);
        char reply[1024];
        if (fk->answer) {
            snprintf(reply, sizeof(reply), "%s", fk->answer);
        } else if (fk->stale && strstr(start, "\"op\":\"cluster\"")) {
            snprintf(reply, sizeof(reply),
                     "{\"ok\":true,\"cluster\":\"sale\",\"node\":\"n2\",\"role\":\"replica\",\"epoch\":1,"
                     "\"primary\":\"%s\",\"seq\":0,\"members\":[]}\n",
                     fk->primary);
            fk->clusters++;
        } else if (fk->stale && strstr(start, "\"op\":\"stats\"")) {
            snprintf(reply, sizeof(reply),
                     "{\"ok\":true,\"requests\":{\"hold\":0},\"commits\":0,\"batch_size\":{\"count\":0,\"mean\":0.0,"
                     "\"p50\":0,\"p99\":0,\"max\":0},\"latency_us\":{\"count\":0,\"p50\":0,\"p99\":0,\"p999\":0,"
                     "\"max\":0}}\n");
        } else if (fk->stale && strstr(start, "\"op\":\"check\"")) {
            snprintf(reply, sizeof(reply),
                     "{\"ok\":true,\"events\":0,\"holds\":0,\"violations\":[],\"violations_total\":0}\n");
        } else if (fk->stale && strstr(start, "\"op\":\"event\"")) {
            snprintf(
                reply, sizeof(reply),
                "{\"ok\":true,\"event\":\"stale\",\"status\":\"on_sale\",\"capacity\":1000000,\"available\":1000000,"
                "\"held\":0,\"confirmed\":0,\"shards\":1,\"hold_ttl_ms\":30000,\"max_per_user\":4,"
                "\"max_per_request\":4,\"opens_at\":0,\"closes_at\":0,\"max_extensions\":1,\"max_hold_ms\":60000}\n");
        } else
            snprintf(reply, sizeof(reply),
                     "{\"ok\":false,\"error\":\"not_primary\",\"message\":\"a replica\",\"primary\":\"%s\"}\n",
                     fk->primary);
        if (send(fd, reply, strlen(reply), MSG_NOSIGNAL) != (ssize_t)strlen(reply))
            return false;
        fk->lines++;
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
    static char bufs[FAKE_CONNS][8192];
    size_t lens[FAKE_CONNS] = {0};
    int n = 1;
    while (!fk->stop) {
        if (poll(pfd, (nfds_t)n, 20) <= 0)
            continue;
        if ((pfd[0].revents & POLLIN) && n <= FAKE_CONNS) {
            int fd = accept(fk->lfd, NULL, NULL);
            if (fd >= 0) {
                pfd[n] = (struct pollfd){.fd = fd, .events = POLLIN};
                lens[n - 1] = 0;
                n++;
            }
        }
        for (int i = 1; i < n; i++)
            if ((pfd[i].revents & (POLLIN | POLLHUP)) && !fake_serve(fk, pfd[i].fd, bufs[i - 1], &lens[i - 1])) {
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

static void fake_start(fake *fk, uint16_t primary_port)
{
    memset(fk, 0, sizeof(*fk));
    snprintf(fk->primary, sizeof(fk->primary), "127.0.0.1:%u", (unsigned)primary_port);
    fk->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    ASSERT_EQ(bind(fk->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    ASSERT_EQ(listen(fk->lfd, 64), 0);
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

/* ---------------------------------------------------------------- running the tools */

typedef struct proc {
    pid_t pid;
    char path[512]; /* stdout and stderr */
} proc;

static void proc_start(proc *p, const char *dir, const char *const *argv)
{
    snprintf(p->path, sizeof(p->path), "%s/out-%d.txt", dir, (int)getpid());
    fflush(NULL);
    p->pid = fork();
    ASSERT(p->pid >= 0);
    if (p->pid == 0) {
        int fd = open(p->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
}

/* Wait for p (aborting after RUN_TIMEOUT_MS); its output into out. Returns the exit status. */
static int proc_wait(proc *p, char *out)
{
    int st = 0;
    uint64_t t0 = slot_test_now_ms();
    while (waitpid(p->pid, &st, WNOHANG) == 0) {
        if (slot_test_now_ms() - t0 > RUN_TIMEOUT_MS) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &st, 0);
            T_FAIL_("%s ran longer than %d ms", p->path, RUN_TIMEOUT_MS);
        }
        sleep_ms(20);
    }
    FILE *f = fopen(p->path, "r");
    size_t got = f ? fread(out, 1, OUT_BYTES - 1, f) : 0;
    out[got] = 0;
    if (f)
        fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run_tool(const char *dir, const char *const *argv, char *out)
{
    proc p;
    proc_start(&p, dir, argv);
    return proc_wait(&p, out);
}

static const char *env_path(const char *name)
{
    const char *p = getenv(name);
    if (!p || !*p)
        T_FAIL_("%s is not set (run through meson test)", name);
    return p;
}

static const char *addr_of(char *buf, size_t cap, uint16_t port)
{
    snprintf(buf, cap, "127.0.0.1:%u", (unsigned)port);
    return buf;
}

/* ---------------------------------------------------------------- slotctl */

TEST_IMPL(follow_e2e_slotctl_cluster_on_standalone)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    char a[64], *out = malloc(OUT_BYTES);
    ASSERT(out);
    const char *argv[] = {env_path("SLOTCTL"), "--host", addr_of(a, sizeof(a), srv.port), "cluster", NULL};
    int rc = run_tool(srv.dir, argv, out);
    /* Whether this slotd answers the cluster op (role standalone) or not (unknown_op), slotctl says standalone. */
    if (rc != 0 || !strstr(out, "standalone"))
        T_FAIL_("slotctl cluster exited %d:\n%s", rc, out);
    printf("  %s", out);
    const char *jargv[] = {env_path("SLOTCTL"), "--json", "--host", a, "cluster", NULL};
    rc = run_tool(srv.dir, jargv, out);
    const char *line = strchr(out, '{'); /* the reply line; slotctl's message on stderr may come first */
    json_t *j = line ? json_loads(line, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
    ASSERT_NOT_NULL(j);
    const char *role = json_string_value(json_object_get(j, "role"));
    const char *err = json_string_value(json_object_get(j, "error"));
    if (!((rc == 0 && role && strcmp(role, "standalone") == 0) || (rc == 1 && err && strcmp(err, "unknown_op") == 0)))
        T_FAIL_("slotctl --json cluster exited %d:\n%s", rc, out);
    json_decref(j);
    free(out);
    slot_test_stop(&srv);
}

/* A node of a replica set answers the cluster op: slotctl prints the table. */
TEST_IMPL(follow_e2e_slotctl_cluster_table)
{
    fake fk;
    fake_start(&fk, 1);
    fk.answer = "{\"ok\":true,\"cluster\":\"sale\",\"node\":\"n2\",\"role\":\"replica\",\"epoch\":4,"
                "\"primary\":\"127.0.0.1:7421\",\"seq\":1093,\"members\":[{\"node\":\"n1\",\"addr\":"
                "\"127.0.0.1:7421\",\"role\":\"primary\",\"seq\":1093,\"lag_ms\":0},{\"node\":\"n2\",\"addr\":"
                "\"127.0.0.1:7422\",\"role\":\"replica\",\"seq\":1090,\"lag_ms\":7}]}\n";
    char *tmp = slot_test_tmpdir(), a[64], *out = malloc(OUT_BYTES);
    const char *argv[] = {env_path("SLOTCTL"), "--host", addr_of(a, sizeof(a), fk.port), "cluster", NULL};
    int rc = run_tool(tmp, argv, out);
    if (rc != 0 || !strstr(out, "cluster sale: node n2 is replica, epoch 4, seq 1093, primary 127.0.0.1:7421") ||
        !strstr(out, "n1               127.0.0.1:7421           primary          1093          0") ||
        !strstr(out, "n2               127.0.0.1:7422           replica          1090          7"))
        T_FAIL_("slotctl cluster exited %d:\n%s", rc, out);
    const char *jargv[] = {env_path("SLOTCTL"), "--json", "--host", a, "cluster", NULL};
    rc = run_tool(tmp, jargv, out);
    ASSERT_EQ(rc, 0);
    ASSERT_STR_EQ(out, fk.answer); /* the raw line */
    fake_stop(&fk);
    free(out);
    slot_test_rmdir(tmp);
    free(tmp);
}

TEST_IMPL(follow_e2e_slotctl_writes_follow_not_primary)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    fake fk;
    fake_start(&fk, srv.port);
    char list[128], *out = malloc(OUT_BYTES);
    snprintf(list, sizeof(list), "127.0.0.1:%u,127.0.0.1:%u", (unsigned)fk.port, (unsigned)srv.port);
    const char *argv[] = {env_path("SLOTCTL"), "--host", list, "create", "followed", "--capacity", "7", NULL};
    int rc = run_tool(srv.dir, argv, out);
    if (rc != 0 || !strstr(out, "capacity         7"))
        T_FAIL_("slotctl create through a replica exited %d:\n%s", rc, out);
    ASSERT(strstr(fk.first, "\"op\":\"create_event\"") != NULL); /* the replica was asked first */
    /* The same through $SLOTD_ADDR, and a bare host taking --port. */
    setenv("SLOTD_ADDR", list, 1);
    const char *eargv[] = {env_path("SLOTCTL"), "show", "followed", NULL};
    rc = run_tool(srv.dir, eargv, out);
    unsetenv("SLOTD_ADDR");
    if (rc != 0 || !strstr(out, "available        7"))
        T_FAIL_("slotctl show via $SLOTD_ADDR exited %d:\n%s", rc, out);
    char port[16];
    snprintf(port, sizeof(port), "%u", (unsigned)srv.port);
    const char *pargv[] = {env_path("SLOTCTL"), "--host", "127.0.0.1", "--port", port, "check", NULL};
    ASSERT_EQ(run_tool(srv.dir, pargv, out), 0);
    /* Only replicas that name a primary nobody can reach: a clear error, exit 2. */
    fake_stop(&fk);
    fake lone;
    fake_start(&lone, 1); /* port 1: nothing listens there */
    char a[64];
    const char *largv[] = {env_path("SLOTCTL"), "--host", addr_of(a, sizeof(a), lone.port), "stats", NULL};
    rc = run_tool(srv.dir, largv, out);
    if (rc != 2 || !strstr(out, "gave up after"))
        T_FAIL_("slotctl with no primary exited %d:\n%s", rc, out);
    const char *bargv[] = {env_path("SLOTCTL"), "--host", "127.0.0.1:1,", "stats", NULL};
    ASSERT_EQ(run_tool(srv.dir, bargv, out), 64);
    fake_stop(&lone);
    free(out);
    slot_test_stop(&srv);
}

/* ---------------------------------------------------------------- slot-bench */

/* The --json report's "results" (the measured phase); aborts when the file is not a report. */
static json_t *report_counters(const char *path, json_t **root)
{
    *root = json_load_file(path, 0, NULL);
    ASSERT_NOT_NULL(*root);
    json_t *c = json_object_get(*root, "results");
    ASSERT_NOT_NULL(c);
    return c;
}

TEST_IMPL(follow_e2e_bench_two_hosts_follows_and_verifies)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    fake fk;
    fake_start(&fk, srv.port);
    char a[64], b[64], json_path[512], *out = malloc(OUT_BYTES);
    snprintf(json_path, sizeof(json_path), "%s/report.json", srv.dir);
    const char *argv[] = {env_path("SLOT_BENCH"),
                          "hot-release",
                          "--host",
                          addr_of(a, sizeof(a), fk.port),
                          "--host",
                          addr_of(b, sizeof(b), srv.port),
                          "--capacity",
                          "400",
                          "--connections",
                          "4",
                          "--pipeline",
                          "4",
                          "--tail",
                          "20",
                          "--json",
                          json_path,
                          NULL};
    int rc = run_tool(srv.dir, argv, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "following "))
        T_FAIL_("slot-bench with a replica first exited %d:\n%s", rc, out);
    ASSERT_GE(fk.lines, 1); /* it was asked, and sent the bench on */
    json_t *root, *c = report_counters(json_path, &root);
    ASSERT(json_is_integer(json_object_get(c, "failovers")));
    ASSERT(json_is_integer(json_object_get(c, "retries")));
    ASSERT(json_is_number(json_object_get(c, "ack_gap_max_ms")));
    ASSERT_EQ(json_integer_value(json_object_get(c, "failovers")), 0); /* one primary all along */
    json_decref(root);
    fake_stop(&fk);
    free(out);
    slot_test_stop(&srv);
}

/* The server is killed with -9 mid-run and started again on the same port and
 * folder: every connection is closed mid-request, the bench reconnects and
 * sends what was in flight again with the same keys; verification (held units
 * = the ledger's, each hold by get_hold) shows no key counted twice or lost. */
TEST_IMPL(follow_e2e_bench_across_a_restart_counts_each_key_once)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    char a[64], json_path[512], listen_at[64], *out = malloc(OUT_BYTES);
    snprintf(json_path, sizeof(json_path), "%s/report.json", srv.dir);
    const char *argv[] = {env_path("SLOT_BENCH"),
                          "hot-release",
                          "--host",
                          addr_of(a, sizeof(a), srv.port),
                          "--capacity",
                          "1000000",
                          "--connections",
                          "8",
                          "--pipeline",
                          "8",
                          "--duration",
                          "4",
                          "--json",
                          json_path,
                          NULL};
    proc p;
    proc_start(&p, srv.dir, argv);
    sleep_ms(1500);
    uint16_t port = srv.port;
    slot_test_server_kill9(&srv);
    snprintf(listen_at, sizeof(listen_at), "127.0.0.1:%u", (unsigned)port);
    const char *const again[] = {"--listen", listen_at, NULL};
    slot_test_server srv2 = {0};
    slot_test_server_start(&srv2, srv.dir, again);
    ASSERT_EQ(srv2.port, port);
    int rc = proc_wait(&p, out);
    if (rc != 0 || !strstr(out, "verification: passed"))
        T_FAIL_("slot-bench across a restart exited %d:\n%s", rc, out);
    json_t *root, *c = report_counters(json_path, &root);
    ASSERT_GE(json_integer_value(json_object_get(c, "retries")), 1); /* 64 requests were in flight */
    ASSERT_EQ(json_integer_value(json_object_get(c, "replays")), 0); /* every replay was of a request sent again */
    printf("  retries %" PRId64 ", longest without an acknowledged write %.0f ms\n",
           (int64_t)json_integer_value(json_object_get(c, "retries")),
           json_number_value(json_object_get(c, "ack_gap_max_ms")));
    json_decref(root);
    ASSERT_EQ(slot_test_server_stop(&srv2), 0);
    slot_test_server_free(&srv2);
    slot_test_server_free(&srv); /* removes the folder */
    free(out);
}

/* The admin connection is closed by the primary's --idle-timeout-ms during the
 * load and opens again on the next --host: the fake, a replica that answers
 * stats, check and event from a state that has no holds. Before verifying, slot-bench asks
 * cluster, moves to the primary it names, and verifies there. */
TEST_IMPL(follow_e2e_bench_verifies_on_the_primary_not_a_stale_replica)
{
    slot_test_server srv;
    const char *const extra[] = {"--idle-timeout-ms", "300", NULL};
    slot_test_start(&srv, extra);
    fake fk;
    fake_start(&fk, srv.port);
    fk.stale = true;
    char a[64], b[64], json_path[512], *out = malloc(OUT_BYTES);
    snprintf(json_path, sizeof(json_path), "%s/report.json", srv.dir);
    const char *argv[] = {env_path("SLOT_BENCH"),
                          "hot-release",
                          "--host",
                          addr_of(a, sizeof(a), fk.port),
                          "--host",
                          addr_of(b, sizeof(b), srv.port),
                          "--capacity",
                          "1000000",
                          "--connections",
                          "2",
                          "--pipeline",
                          "2",
                          "--duration",
                          "2",
                          "--json",
                          json_path,
                          NULL};
    int rc = run_tool(srv.dir, argv, out);
    if (rc != 0 || !strstr(out, "verification: passed"))
        T_FAIL_("slot-bench with a stale replica first exited %d:\n%s", rc, out);
    ASSERT_GE(fk.clusters, 1); /* the replica was asked who the primary is */
    ASSERT(strstr(out, "server commits    -") == NULL);
    json_t *root = json_load_file(json_path, 0, NULL);
    ASSERT_NOT_NULL(root);
    ASSERT(json_is_object(json_object_get(json_object_get(root, "server_stats"), "after")));
    json_decref(root);
    fake_stop(&fk);
    free(out);
    slot_test_stop(&srv);
}
