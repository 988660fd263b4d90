/*
 * test_bench_room.c — slot-bench waiting-room end to end (docs/protocol.md,
 * "Admission"): against a fresh slotd, a crowd of 300 joins a queue room
 * (admit_per_s 500) and a lottery room (admit_per_s 100: the opening's burst
 * is then a third of the crowd, and the later ranks are told by positions,
 * so the chi-square test has an order to test); each run must pass its
 * verification (exit 0, "verification: passed"), admit every entry, and the
 * server, asked directly, must show the room's counts and a clean check.
 * Usage errors and --help lines. $SLOT_BENCH is the slot-bench under test.
 */
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

TEST_DECLARE(bench_room_queue)
TEST_DECLARE(bench_room_lottery)
TEST_DECLARE(bench_room_usage)

TEST_LIST_START
TEST_ENTRY(bench_room_queue)
TEST_ENTRY(bench_room_lottery)
TEST_ENTRY(bench_room_usage)
TEST_LIST_END

#define BENCH_RUN_TIMEOUT_MS 60000 /* one slot-bench run; these take a few seconds */
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

/* One waiting-room run of 300 entries in mode at rate; it must pass, and the server agree. */
static void room_run(const char *mode, const char *rate)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    tmp = slot_test_tmpdir();
    char port[16], json[600];
    snprintf(port, sizeof(port), "%u", (unsigned)srv.port);
    snprintf(json, sizeof(json), "%s/room.json", tmp);
    const char *args[] = {"waiting-room", "--port", port, "--crowd", "300", "--admit-per-s", rate, "--mode", mode,
                          "--event", "room", "--duration", "30", "--json", json, NULL};
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    int rc = run_bench(args, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "admissions: 300 of 300"))
        T_FAIL_("slot-bench waiting-room --mode %s exited %d:\n%s", mode, rc, out);
    if (strcmp(mode, "lottery") == 0 && !strstr(out, "(not rejected at 0.001)"))
        T_FAIL_("no chi-square line:\n%s", out);
    json_error_t e;
    json_t *root = json_load_file(json, 0, &e);
    if (!root)
        T_FAIL_("%s: line %d: %s", json, e.line, e.text);
    json_t *res = json_object_get(root, "waiting_room");
    ASSERT(json_is_true(json_object_get(res, "passed")));
    ASSERT_EQ(jint(res, "admitted", NULL), 300);
    ASSERT_EQ(jint(res, "joins", NULL), 300);
    ASSERT_EQ(jint(res, "confirmed", NULL) + jint(res, "released", NULL), 300);
    json_int_t confirmed = jint(res, "confirmed", NULL);
    json_decref(root);

    slot_client *c = slot_test_dial(&srv);
    slot_test_check_clean(c, "room");
    slot_req q = slot_test_req(SLOT_OP_EVENT, "room");
    slot_reply rep;
    slot_test_call(c, &q, &rep);
    ASSERT(rep.ok && rep.line);
    json_t *view = json_loads(rep.line, 0, NULL);
    ASSERT(view);
    ASSERT_EQ(jint(view, "room", "joined"), 300);
    ASSERT_EQ(jint(view, "room", "admitted"), 300);
    ASSERT_EQ(jint(view, "room", "open_grants"), 0);
    ASSERT_EQ(jint(view, "confirmed", NULL), confirmed);
    ASSERT_EQ(jint(view, "held", NULL), 0);
    json_decref(view);
    slot_reply_clear(&rep);
    slot_client_close(c);
    free(out);
    slot_test_stop(&srv);
    slot_test_rmdir(tmp);
    free(tmp);
}

TEST_IMPL(bench_room_queue)
{
    room_run("queue", "500");
}

TEST_IMPL(bench_room_lottery)
{
    room_run("lottery", "100");
}

/* Ranges and options of other scenarios are refused before anything is sent (exit 64); --help lists the options. */
TEST_IMPL(bench_room_usage)
{
    tmp = slot_test_tmpdir();
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    const char *help[] = {"waiting-room", "--help", NULL};
    ASSERT_EQ(run_bench(help, out), 0);
    ASSERT(strstr(out, "--crowd N") && strstr(out, "--admit-per-s R") && strstr(out, "--mode queue|lottery") &&
           strstr(out, "--confirm-share PCT") && strstr(out, "--opens-in S"));
    const char *mode[] = {"waiting-room", "--mode", "fifo", NULL};
    ASSERT_EQ(run_bench(mode, out), 64);
    const char *small[] = {"waiting-room", "--crowd", "9", NULL};
    ASSERT_EQ(run_bench(small, out), 64);
    const char *rate[] = {"waiting-room", "--admit-per-s", "0", NULL};
    ASSERT_EQ(run_bench(rate, out), 64);
    const char *share[] = {"waiting-room", "--confirm-share", "101", NULL};
    ASSERT_EQ(run_bench(share, out), 64);
    const char *other[] = {"waiting-room", "--capacity", "10", NULL};
    ASSERT_EQ(run_bench(other, out), 64);
    const char *redis[] = {"waiting-room", "--target", "redis://127.0.0.1:6379", NULL};
    ASSERT_EQ(run_bench(redis, out), 64);
    free(out);
    slot_test_rmdir(tmp);
    free(tmp);
}
