/*
 * test_bench_alloc.c — slot-bench hot-release --allocation end to end
 * (docs/protocol.md, "Allocations"): against a fresh slotd, a block of N
 * units beside the public sale, the presale share of the connections
 * holding from it; the run must pass its verification (exit 0), the
 * report must count the parts apart (public held = capacity - N, block
 * held = N), and the server, asked directly afterwards, must show the
 * block sold out and the event's check clean. Usage errors of the two
 * options, and their --help lines. $SLOT_BENCH is the slot-bench under test.
 */
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

TEST_DECLARE(bench_allocation_sells_both_parts)
TEST_DECLARE(bench_allocation_usage)

TEST_LIST_START
TEST_ENTRY(bench_allocation_sells_both_parts)
TEST_ENTRY(bench_allocation_usage)
TEST_LIST_END

#define BENCH_RUN_TIMEOUT_MS 60000 /* one slot-bench run; these take well under a second */
#define OUT_BYTES (64u << 10)

static char *tmp;

static const char *bench_path(void)
{
    const char *p = getenv("SLOT_BENCH");
    if (!p || !*p)
        T_FAIL_("%s", "SLOT_BENCH is not set (run through meson test)");
    return p;
}

/* Run slot-bench with args (NULL-ended); stdout and stderr into out (NUL-terminated,
 * cut at OUT_BYTES). Returns the exit status; kills it and fails after BENCH_RUN_TIMEOUT_MS. */
static int run_bench(const char *const *args, char *out)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/bench-out.txt", tmp);
    const char *argv[64] = {bench_path()};
    size_t n = 1;
    for (; args[n - 1] && n < 63; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    uint64_t t0 = slot_test_now_ms();
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (slot_test_now_ms() - t0 > BENCH_RUN_TIMEOUT_MS) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            T_FAIL_("slot-bench %s ran longer than %d ms", args[0], BENCH_RUN_TIMEOUT_MS);
        }
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(out, 1, OUT_BYTES - 1, f) : 0;
    out[got] = 0;
    if (f)
        fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static json_int_t jint(json_t *o, const char *a, const char *b)
{
    json_t *x = json_object_get(o, a);
    if (b)
        x = json_object_get(x, b);
    if (!json_is_integer(x))
        T_FAIL_("no integer %s%s%s in the report", a, b ? "." : "", b ? b : "");
    return json_integer_value(x);
}

/* 2000 units, 500 of them in the block, 8 connections (2 of them presale: 25 %), quantities
 * 1, 2 and 4: both parts sell out exactly (the smallest qty is 1, so no remainder). */
TEST_IMPL(bench_allocation_sells_both_parts)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    tmp = slot_test_tmpdir();
    char port[16], json[600];
    snprintf(port, sizeof(port), "%u", (unsigned)srv.port);
    snprintf(json, sizeof(json), "%s/alloc.json", tmp);
    const char *args[] = {"hot-release",
                          "--port",
                          port,
                          "--capacity",
                          "2000",
                          "--allocation",
                          "500",
                          "--event",
                          "pre",
                          "--connections",
                          "8",
                          "--qty",
                          "1:70,2:20,4:10",
                          "--tail",
                          "50",
                          "--duration",
                          "30",
                          "--requests",
                          "20000",
                          "--json",
                          json,
                          NULL};
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    int rc = run_bench(args, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "presale block"))
        T_FAIL_("slot-bench hot-release --allocation exited %d:\n%s", rc, out);
    if (!strstr(out, "sold out, and the tail of sold_out answers came back"))
        T_FAIL_("the run did not end at the sell-out:\n%s", out);

    json_error_t e;
    json_t *root = json_load_file(json, 0, &e);
    if (!root)
        T_FAIL_("%s: line %d: %s", json, e.line, e.text);
    json_t *cfg = json_object_get(root, "config");
    ASSERT_EQ(jint(cfg, "allocation", NULL), 500);
    ASSERT_EQ(jint(cfg, "presale_connections", NULL), 2);
    json_t *parts = json_object_get(json_object_get(root, "results"), "allocation");
    ASSERT_EQ(jint(parts, "public", "capacity"), 1500);
    ASSERT_EQ(jint(parts, "public", "held_units"), 1500);
    ASSERT_EQ(jint(parts, "presale", "capacity"), 500);
    ASSERT_EQ(jint(parts, "presale", "held_units"), 500);
    ASSERT_EQ(jint(parts, "presale", "remaining"), 0);
    ASSERT_EQ(jint(parts, "bad_sold_out", NULL), 0);
    ASSERT(jint(parts, "public", "holds") > 0 && jint(parts, "presale", "holds") > 0);
    /* every presale connection keeps asking until the block is short of its qty */
    ASSERT(jint(parts, "presale", "sold_out") > 0);
    ASSERT_EQ(jint(parts, "public", "holds") + jint(parts, "presale", "holds"),
              jint(json_object_get(root, "results"), "holds", NULL));
    json_decref(root);

    /* The server, asked directly: the block sold out, the event's held its whole capacity. */
    slot_client *c = slot_test_dial(&srv);
    slot_test_check_clean(c, "pre");
    slot_req q = slot_test_req(SLOT_OP_EVENT, "pre");
    slot_reply rep;
    slot_test_call(c, &q, &rep);
    ASSERT(rep.ok && rep.line);
    json_t *view = json_loads(rep.line, 0, NULL);
    ASSERT(view);
    ASSERT_EQ(jint(view, "held", NULL), 2000);
    ASSERT_EQ(jint(view, "available", NULL), 0);
    ASSERT_EQ(jint(view, "allocated", NULL), 0);
    json_t *blk = json_object_get(json_object_get(view, "allocations"), "presale");
    ASSERT_EQ(jint(blk, "qty", NULL), 500);
    ASSERT_EQ(jint(blk, "held", NULL), 500);
    ASSERT_EQ(jint(blk, "remaining", NULL), 0);
    json_decref(view);
    slot_reply_clear(&rep);
    slot_client_close(c);
    free(out);
    slot_test_stop(&srv);
    slot_test_rmdir(tmp);
    free(tmp);
}

/* The options' ranges and the combinations refused before anything is sent (exit 64),
 * and their lines in --help. */
TEST_IMPL(bench_allocation_usage)
{
    tmp = slot_test_tmpdir();
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    const char *help[] = {"hot-release", "--help", NULL};
    ASSERT_EQ(run_bench(help, out), 0);
    ASSERT(strstr(out, "--allocation N") && strstr(out, "--presale-share PCT"));
    const char *above[] = {"hot-release", "--capacity", "10", "--allocation", "11", NULL};
    ASSERT_EQ(run_bench(above, out), 64);
    ASSERT(strstr(out, "--allocation 11 is above --capacity 10"));
    const char *threads[] = {"hot-release", "--allocation", "10", "--threads", "2", NULL};
    ASSERT_EQ(run_bench(threads, out), 64);
    const char *cart[] = {"hot-release", "--allocation", "10", "--cart", "2", NULL};
    ASSERT_EQ(run_bench(cart, out), 64);
    const char *share[] = {"hot-release", "--presale-share", "30", NULL};
    ASSERT_EQ(run_bench(share, out), 64);
    const char *share_range[] = {"hot-release", "--allocation", "10", "--presale-share", "100", NULL};
    ASSERT_EQ(run_bench(share_range, out), 64);
    const char *one_conn[] = {"hot-release", "--allocation", "10", "--connections", "1", NULL};
    ASSERT_EQ(run_bench(one_conn, out), 64);
    const char *churn[] = {"churn", "--allocation", "10", NULL};
    ASSERT_EQ(run_bench(churn, out), 64);
    free(out);
    slot_test_rmdir(tmp);
    free(tmp);
}
