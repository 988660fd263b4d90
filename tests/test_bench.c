/*
 * test_bench.c — slot-bench end to end: every scenario for a few seconds
 * against a real slotd with its verification passing; the report files
 * (JSON parsed with jansson, CSV columns, SVG well-formed); usage errors and
 * --help; a lying server that verification must catch (one that oversells, one whose
 * waitlist serves the last joiner first); and, when
 * redis-server is installed, the same scenario against Redis+Lua; churn's
 * v1.1 buyers (extend, partial confirm, late payment with reacquire); the waitlist scenario
 * (offers in join order, the waits reported).
 * $SLOT_BENCH is the slot-bench under test.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

TEST_DECLARE(bench_usage_and_help)
TEST_DECLARE(bench_hot_release_reports)
TEST_DECLARE(bench_open_loop)
TEST_DECLARE(bench_churn)
TEST_DECLARE(bench_churn_extend_partial_late)
TEST_DECLARE(bench_sold_out)
TEST_DECLARE(bench_multi_event)
TEST_DECLARE(bench_hot_release_cart)
TEST_DECLARE(bench_hot_release_types)
TEST_DECLARE(bench_waitlist)
TEST_DECLARE(bench_warmup_and_bounds)
TEST_DECLARE(bench_verification_catches_a_lying_server)
TEST_DECLARE(bench_redis_target)
TEST_DECLARE(bench_bounded_run_verifies_what_happened)
TEST_DECLARE(bench_ping)
TEST_DECLARE(bench_threads)
TEST_DECLARE(bench_redis_min_peer)

TEST_LIST_START
TEST_ENTRY(bench_usage_and_help)
TEST_ENTRY(bench_hot_release_reports)
TEST_ENTRY(bench_open_loop)
TEST_ENTRY(bench_churn)
TEST_ENTRY(bench_churn_extend_partial_late)
TEST_ENTRY(bench_sold_out)
TEST_ENTRY(bench_multi_event)
TEST_ENTRY(bench_hot_release_cart)
TEST_ENTRY(bench_hot_release_types)
TEST_ENTRY(bench_waitlist)
TEST_ENTRY(bench_warmup_and_bounds)
TEST_ENTRY(bench_verification_catches_a_lying_server)
TEST_ENTRY(bench_redis_target)
TEST_ENTRY(bench_bounded_run_verifies_what_happened)
TEST_ENTRY(bench_ping)
TEST_ENTRY(bench_threads)
TEST_ENTRY(bench_redis_min_peer)
TEST_LIST_END

#define BENCH_RUN_TIMEOUT_MS 60000 /* one slot-bench run; the scenarios here take seconds */
#define FAKE_CONNS_MAX 16
#define OUT_BYTES (64u << 10)

static slot_test_server srv;
static char *tmp;

static const char *bench_path(void)
{
    const char *p = getenv("SLOT_BENCH");
    if (!p || !*p)
        T_FAIL_("%s", "SLOT_BENCH is not set (run through meson test)");
    return p;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Run slot-bench with args; stdout and stderr into out (NUL-terminated, cut at
 * OUT_BYTES). Returns the exit status; aborts the test after BENCH_RUN_TIMEOUT_MS. */
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
            T_FAIL_("slot-bench %s ran longer than %d ms", args[0], BENCH_RUN_TIMEOUT_MS);
        }
        sleep_ms(20);
    }
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(out, 1, OUT_BYTES - 1, f) : 0;
    out[got] = 0;
    if (f)
        fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A run that must pass: exit 0 and "verification: passed". */
static void expect_pass(const char *const *args)
{
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    int rc = run_bench(args, out);
    if (rc != 0 || !strstr(out, "verification: passed"))
        T_FAIL_("slot-bench %s exited %d:\n%s", args[0], rc, out);
    printf("  %s: %s", args[0], strstr(out, "  requests") ? strstr(out, "  requests") + 2 : "\n");
    free(out);
}

static const char *port_arg(uint16_t port)
{
    static char buf[16];
    snprintf(buf, sizeof(buf), "%u", (unsigned)port);
    return buf;
}

static void start(void)
{
    slot_test_start(&srv, NULL);
    tmp = slot_test_tmpdir();
}

static void stop(void)
{
    slot_test_stop(&srv);
    slot_test_rmdir(tmp);
    free(tmp);
}

/* ---------------------------------------------------------------- usage */

TEST_IMPL(bench_usage_and_help)
{
    tmp = slot_test_tmpdir();
    char *out = malloc(OUT_BYTES);
    static const char *const scenarios[] = {"hot-release", "open-loop", "churn", "sold-out", "multi-event", "waitlist"};
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
        const char *help[] = {scenarios[i], "--help", NULL};
        ASSERT_EQ(run_bench(help, out), 0);
        ASSERT(strstr(out, "Exit status") && strstr(out, "--duration") && strstr(out, "--requests"));
    }
    const char *bad_opt[] = {"hot-release", "--no-such-option", NULL};
    ASSERT_EQ(run_bench(bad_opt, out), 64);
    const char *bad_num[] = {"churn", "--capacity", "lots", NULL};
    ASSERT_EQ(run_bench(bad_num, out), 64);
    ASSERT(strstr(out, "--capacity"));
    const char *wrong_scenario[] = {"hot-release", "--rate", "5", NULL};
    ASSERT_EQ(run_bench(wrong_scenario, out), 64);
    const char *pcts[] = {"churn", "--confirm", "50", "--release", "50", "--abandon", "10", NULL};
    ASSERT_EQ(run_bench(pcts, out), 64);
    /* churn's v1.1 shares: each 0..100, and --partial + --late (both shares of the confirms) at most 100. */
    static const char *const shares[] = {"--extend", "--partial", "--late"};
    for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++) {
        const char *over[] = {"churn", shares[i], "101", NULL};
        ASSERT_EQ(run_bench(over, out), 64);
        ASSERT(strstr(out, shares[i]) && strstr(out, "0..100"));
        const char *word[] = {"churn", shares[i], "some", NULL};
        ASSERT_EQ(run_bench(word, out), 64);
        const char *elsewhere[] = {"hot-release", shares[i], "10", NULL};
        ASSERT_EQ(run_bench(elsewhere, out), 64);
    }
    const char *both[] = {"churn", "--partial", "60", "--late", "41", NULL};
    ASSERT_EQ(run_bench(both, out), 64);
    ASSERT(strstr(out, "--partial 60 + --late 41"));
    /* The Lua peer has no extend, partial confirm or reacquire: given for redis, refused (before connecting). */
    const char *redis_late[] = {"churn", "--target", "redis://127.0.0.1:1", "--late", "5", NULL};
    ASSERT_EQ(run_bench(redis_late, out), 64);
    const char *churn_help[] = {"churn", "--help", NULL};
    ASSERT_EQ(run_bench(churn_help, out), 0);
    ASSERT(strstr(out, "--extend PCT") && strstr(out, "--partial PCT") && strstr(out, "--late PCT"));
    /* Each option is one line of --help (the --opens-in text once broke its line). */
    const char *hr_help[] = {"hot-release", "--help", NULL};
    ASSERT_EQ(run_bench(hr_help, out), 0);
    const char *opens = strstr(out, "--opens-in S");
    ASSERT(opens);
    char line[600];
    snprintf(line, sizeof(line), "%.*s", (int)strcspn(opens, "\n"), opens);
    ASSERT(strstr(line, "not_on_sale") && strstr(line, "default 0"));
    const char *remote[] = {"hot-release", "--host", "192.0.2.1", NULL};
    ASSERT_EQ(run_bench(remote, out), 64);
    ASSERT(strstr(out, "loopback"));
    const char *unknown[] = {"warp-speed", NULL};
    ASSERT_EQ(run_bench(unknown, out), 64);
    const char *nothing_there[] = {"hot-release", "--port", "1", NULL};
    ASSERT_EQ(run_bench(nothing_there, out), 2);
    /* A report file that cannot be written is a usage error before the run
     * (found by trial: it used to fail only after a whole run, with exit 1). */
    const char *no_folder[] = {"hot-release", "--port", "1", "--json", "/nonexistent-slot-dir/x.json", NULL};
    ASSERT_EQ(run_bench(no_folder, out), 64);
    ASSERT(strstr(out, "--json"));
    free(out);
    slot_test_rmdir(tmp);
    free(tmp);
}

/* ---------------------------------------------------------------- report files */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ASSERT(f);
    char *buf = malloc(8u << 20);
    ASSERT(buf);
    size_t n = fread(buf, 1, (8u << 20) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void check_json(const char *path, uint64_t capacity)
{
    json_error_t e;
    json_t *root = json_load_file(path, 0, &e);
    if (!root)
        T_FAIL_("%s: line %d column %d: %s", path, e.line, e.column, e.text);
    ASSERT_STR_EQ(json_string_value(json_object_get(root, "tool")), "slot-bench");
    json_t *cfg = json_object_get(root, "config"), *res = json_object_get(root, "results");
    ASSERT_STR_EQ(json_string_value(json_object_get(cfg, "scenario")), "hot-release");
    ASSERT_EQ(json_integer_value(json_object_get(cfg, "capacity")), capacity);
    ASSERT_EQ(json_integer_value(json_object_get(res, "held_units")), capacity);
    ASSERT(json_real_value(json_object_get(res, "requests_per_s")) > 0);
    ASSERT(json_real_value(json_object_get(json_object_get(res, "latency_ms"), "p99")) > 0);
    ASSERT(json_is_true(json_object_get(json_object_get(root, "verification"), "passed")));
    json_t *machine = json_object_get(root, "machine");
    ASSERT_GE(json_integer_value(json_object_get(machine, "nproc")), 1);
    ASSERT(json_is_string(json_object_get(machine, "kernel")) && json_is_string(json_object_get(machine, "cpu_model")));
    ASSERT_GT(json_integer_value(json_object_get(machine, "memory_bytes")), 0);
    json_t *server = json_object_get(json_object_get(root, "target"), "server");
    ASSERT(json_is_string(json_object_get(server, "version")));
    json_t *after = json_object_get(json_object_get(root, "server_stats"), "after");
    ASSERT(json_is_object(json_object_get(after, "batch_size")));
    ASSERT_GT(json_array_size(json_object_get(root, "series")), 0);
    ASSERT_EQ(json_integer_value(
                  json_object_get(json_object_get(json_object_get(root, "verification"), "ledger"), "holds")),
              capacity);
    json_decref(root);
}

/* Header, seven numeric columns, time increasing, the last row sold out. */
static void check_csv(const char *path, uint64_t capacity)
{
    char *text = slurp(path);
    const char *header = "t_ms,sent,held,sold_out,errors,units_left,p99_ms\n";
    ASSERT(strncmp(text, header, strlen(header)) == 0);
    long prev_t = -1, rows = 0;
    unsigned long long last_held = 0, last_left = 1;
    for (char *save = NULL, *line = strtok_r(text + strlen(header), "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        long t;
        unsigned long long sent, held, so, err, left;
        double p99;
        char tail;
        int n = sscanf(line, "%ld,%llu,%llu,%llu,%llu,%llu,%lf%c", &t, &sent, &held, &so, &err, &left, &p99, &tail);
        if (n != 7)
            T_FAIL_("%s: not 7 numeric columns: '%s'", path, line);
        ASSERT_GT(t, prev_t);
        ASSERT_GE(sent, held);
        prev_t = t;
        last_held = held;
        last_left = left;
        rows++;
    }
    ASSERT_GT(rows, 0);
    ASSERT_EQ(last_held, capacity);
    ASSERT_EQ(last_left, 0);
    free(text);
}

/* Well-formed enough for any XML parser: every tag closed in order, quotes balanced. */
static void check_svg_tags(const char *path)
{
    char *text = slurp(path);
    ASSERT(strncmp(text, "<?xml", 5) == 0 && strstr(text, "<svg ") && strstr(text, "</svg>"));
    char stack[32][32];
    int depth = 0, roots = 0;
    for (char *p = strchr(text, '<'); p; p = strchr(p + 1, '<')) {
        char *end = strchr(p, '>');
        ASSERT(end);
        if (p[1] == '?' || p[1] == '!')
            continue;
        bool closing = p[1] == '/', self = end[-1] == '/';
        char name[32];
        ASSERT_EQ(sscanf(p + 1 + closing, "%31[a-zA-Z]", name), 1);
        if (closing) {
            ASSERT_GT(depth, 0);
            ASSERT_STR_EQ(stack[--depth], name);
        } else if (!self) {
            ASSERT_LT(depth, 32);
            roots += depth == 0;
            strcpy(stack[depth++], name);
        }
    }
    ASSERT_EQ(depth, 0);
    ASSERT_EQ(roots, 1);
    ASSERT(strstr(text, "units left") && strstr(text, "requests/s") && strstr(text, "latency (ms)"));
    free(text);
}

static void check_svg(const char *path)
{
    check_svg_tags(path);
    if (system("command -v python3 >/dev/null 2>&1") != 0) {
        printf("  python3 not installed: the SVG was checked by the built-in tag check only\n");
        return;
    }
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' '%s'", path);
    ASSERT_EQ(system(cmd), 0);
}

TEST_IMPL(bench_hot_release_reports)
{
    start();
    char json[512], csv[512], svg[512];
    snprintf(json, sizeof(json), "%s/r.json", tmp);
    snprintf(csv, sizeof(csv), "%s/r.csv", tmp);
    snprintf(svg, sizeof(svg), "%s/r.svg", tmp);
    const char *args[] = {"hot-release", "--port",     port_arg(srv.port),
                          "--capacity",  "3000",       "--connections",
                          "16",          "--pipeline", "4",
                          "--tail",      "500",        "--seed",
                          "7",           "--json",     json,
                          "--csv",       csv,          "--svg",
                          svg,           NULL};
    expect_pass(args);
    check_json(json, 3000);
    check_csv(csv, 3000);
    check_svg(svg);
    stop();
}

/* ---------------------------------------------------------------- each scenario, briefly */

TEST_IMPL(bench_open_loop)
{
    start();
    const char *args[] = {"open-loop",     "--port", port_arg(srv.port), "--rate", "3000", "--duration", "1.5",
                          "--connections", "8",      "--pipeline",       "16",     NULL};
    expect_pass(args);
    stop();
}

TEST_IMPL(bench_churn)
{
    start();
    const char *args[] = {"churn",
                          "--port",
                          port_arg(srv.port),
                          "--duration",
                          "2",
                          "--capacity",
                          "400",
                          "--connections",
                          "8",
                          "--pipeline",
                          "4",
                          "--hold-ttl-ms",
                          "1000",
                          "--think-ms",
                          "5:30",
                          "--max-per-user",
                          "3",
                          "--users",
                          "200",
                          "--qty",
                          "1:80,2:20",
                          NULL};
    expect_pass(args);
    stop();
}

static json_int_t churn_count(json_t *churn, const char *name)
{
    json_t *v = json_object_get(churn, name);
    if (!json_is_integer(v))
        T_FAIL_("the JSON report's results.churn has no integer \"%s\"", name);
    return json_integer_value(v);
}

/* Buyers who extend (some twice, past max_extensions 1), confirm fewer units than held and
 * pay late with reacquire, against a real slotd: the run verifies (every hold's status,
 * qty, returned, extensions, expires_at and links by get_hold; each event's counters), and
 * the report counts each kind. A second run on a small event makes late payers meet
 * sold_out as well (whatever happens, it must verify). */
TEST_IMPL(bench_churn_extend_partial_late)
{
    start();
    char json[600];
    snprintf(json, sizeof(json), "%s/churn.json", tmp);
    const char *args[] = {"churn",
                          "--port",
                          port_arg(srv.port),
                          "--duration",
                          "2.5",
                          "--capacity",
                          "5000",
                          "--connections",
                          "8",
                          "--pipeline",
                          "4",
                          "--hold-ttl-ms",
                          "1000",
                          "--think-ms",
                          "5:30",
                          "--qty",
                          "1:40,2:30,4:30",
                          "--confirm",
                          "60",
                          "--release",
                          "20",
                          "--abandon",
                          "20",
                          "--extend",
                          "50",
                          "--partial",
                          "50",
                          "--late",
                          "40",
                          "--json",
                          json,
                          NULL};
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    int rc = run_bench(args, out);
    if (rc != 0 || !strstr(out, "verification: passed"))
        T_FAIL_("slot-bench churn with extend, partial, late exited %d:\n%s", rc, out);
    ASSERT(strstr(out, "  extend ") && strstr(out, "  partial confirm ") && strstr(out, "  late payment "));
    json_error_t e;
    json_t *root = json_load_file(json, 0, &e);
    if (!root)
        T_FAIL_("%s: line %d: %s", json, e.line, e.text);
    json_t *cfg = json_object_get(root, "config"), *churn = json_object_get(json_object_get(root, "results"), "churn");
    ASSERT_EQ(json_integer_value(json_object_get(cfg, "extend_pct")), 50);
    ASSERT_EQ(json_integer_value(json_object_get(cfg, "partial_pct")), 50);
    ASSERT_EQ(json_integer_value(json_object_get(cfg, "late_pct")), 40);
    ASSERT_GT(churn_count(churn, "extends"), 0);
    ASSERT_GT(churn_count(churn, "partial_confirms"), 0);
    ASSERT_GE(churn_count(churn, "returned_units"), churn_count(churn, "partial_confirms"));
    json_int_t late = churn_count(churn, "late");
    ASSERT_GT(late, 0);
    ASSERT_GT(churn_count(churn, "late_reacquired"), 0); /* 5000 units: a fresh hold is always there */
    ASSERT_EQ(churn_count(churn, "late_reacquired") + churn_count(churn, "late_sold_out") +
                  churn_count(churn, "late_user_limit") + churn_count(churn, "late_still_held"),
              late);
    ASSERT_GE(churn_count(churn, "extend_limit"), 0);
    json_t *ledger = json_object_get(json_object_get(root, "verification"), "ledger");
    ASSERT_EQ(json_integer_value(json_object_get(ledger, "mismatches")), 0);
    ASSERT_GT(json_integer_value(json_object_get(ledger, "holds")), 0);
    json_decref(root);
    printf("  churn v1.1: %s", strstr(out, "  extend") + 2);
    const char *tight[] = {"churn",
                           "--port",
                           port_arg(srv.port),
                           "--duration",
                           "2.5",
                           "--capacity",
                           "30",
                           "--connections",
                           "8",
                           "--pipeline",
                           "4",
                           "--hold-ttl-ms",
                           "1000",
                           "--think-ms",
                           "5:30",
                           "--users",
                           "40",
                           "--max-per-user",
                           "4",
                           "--confirm",
                           "60",
                           "--release",
                           "20",
                           "--abandon",
                           "20",
                           "--extend",
                           "50",
                           "--partial",
                           "30",
                           "--late",
                           "60",
                           NULL};
    expect_pass(tight);
    free(out);
    stop();
}

TEST_IMPL(bench_sold_out)
{
    start();
    const char *args[] = {"sold-out",      "--port", port_arg(srv.port), "--capacity", "300", "--duration", "1",
                          "--connections", "8",      "--pipeline",       "8",          NULL};
    expect_pass(args);
    stop();
}

TEST_IMPL(bench_multi_event)
{
    start();
    const char *args[] = {"multi-event", "--port",     port_arg(srv.port),
                          "--events",    "4",          "--capacity",
                          "300",         "--qty",      "1:70,2:20,4:10",
                          "--tail",      "200",        "--connections",
                          "16",          "--pipeline", "2",
                          NULL};
    expect_pass(args);
    stop();
}

/* hot-release --types 4 (docs/protocol.md, "Ticket types"): four types of a 3-level family
 * whose capacities add up to twice the venue's 400; the types' held units add up to exactly
 * 400, none above its own capacity, and verification (the venue's and area's views) passes. */
TEST_IMPL(bench_hot_release_types)
{
    start();
    char json[600];
    snprintf(json, sizeof(json), "%s/types.json", tmp);
    const char *args[] = {"hot-release", "--port", port_arg(srv.port), "--types", "4",      "--capacity", "400",
                          "--event",     "ty",     "--connections",    "16",      "--json", json,         NULL};
    expect_pass(args);
    json_error_t e;
    json_t *root = json_load_file(json, 0, &e);
    if (!root)
        T_FAIL_("%s: line %d: %s", json, e.line, e.text);
    ASSERT_EQ(json_integer_value(json_object_get(json_object_get(root, "config"), "types")), 4);
    json_t *events = json_object_get(root, "events");
    ASSERT_EQ(json_array_size(events), 4);
    json_int_t sum = 0;
    for (size_t i = 0; i < 4; i++) {
        json_t *ev = json_array_get(events, i);
        json_int_t held = json_integer_value(json_object_get(ev, "held_units"));
        ASSERT(held <= 2 * 400 / 4 + 1);
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(ev, "server"), "held")), held);
        sum += held;
    }
    ASSERT_EQ(sum, 400);
    json_decref(root);
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    const char *with_cart[] = {"hot-release", "--port", port_arg(srv.port), "--types", "2", "--cart", "2", NULL};
    ASSERT_EQ(run_bench(with_cart, out), 64);
    free(out);
    stop();
}

/* hot-release --cart 2: every cart one hold_many of two events; each event sells exactly its
 * capacity, a cart holds both items (carts x 2 = holds), and verification passes. */
TEST_IMPL(bench_hot_release_cart)
{
    start();
    char json[600];
    snprintf(json, sizeof(json), "%s/cart.json", tmp);
    const char *args[] = {"hot-release", "--port", port_arg(srv.port), "--cart", "2",          "--capacity", "500",
                          "--event",     "cart",   "--connections",    "16",     "--pipeline", "2",          "--json",
                          json,          NULL};
    expect_pass(args);
    json_error_t e;
    json_t *root = json_load_file(json, 0, &e);
    if (!root)
        T_FAIL_("%s: line %d: %s", json, e.line, e.text);
    json_t *res = json_object_get(root, "results");
    ASSERT_EQ(json_integer_value(json_object_get(json_object_get(root, "config"), "cart")), 2);
    ASSERT_EQ(json_integer_value(json_object_get(json_object_get(res, "carts"), "held")), 500);
    ASSERT_EQ(json_integer_value(json_object_get(res, "holds")), 1000);
    json_t *events = json_object_get(root, "events");
    ASSERT_EQ(json_array_size(events), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *ev = json_array_get(events, i);
        char name[16];
        snprintf(name, sizeof(name), "cart-%zu", i);
        const char *got = json_string_value(json_object_get(ev, "event"));
        ASSERT(got && strcmp(got, name) == 0);
        ASSERT_EQ(json_integer_value(json_object_get(ev, "held_units")), 500);
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(ev, "server"), "held")), 500);
    }
    json_t *ledger = json_object_get(json_object_get(root, "verification"), "ledger");
    ASSERT_EQ(json_integer_value(json_object_get(ledger, "holds")), 1000);
    ASSERT_EQ(json_integer_value(json_object_get(ledger, "mismatches")), 0);
    json_decref(root);
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    const char *too_many[] = {"hot-release", "--port", port_arg(srv.port), "--cart", "17", NULL};
    ASSERT_EQ(run_bench(too_many, out), 64);
    const char *none[] = {"hot-release", "--port", port_arg(srv.port), "--cart", "0", NULL};
    ASSERT_EQ(run_bench(none, out), 64);
    const char *not_here[] = {"multi-event", "--port", port_arg(srv.port), "--cart", "2", NULL};
    ASSERT_EQ(run_bench(not_here, out), 64);
    free(out);
    stop();
}

/* waitlist: 100 waiters for a sold-out event of 10 units; releases and expiries hand the units
 * round until every waiter was offered a hold, in join order; the report gives the waits of the
 * first, median and last waiter and offers/s. Then its usage errors. */
TEST_IMPL(bench_waitlist)
{
    static const char *const fast_sweep[] = {"--sweep-interval-ms", "100", NULL};
    slot_test_start(&srv, fast_sweep); /* abandoned holds come back soon after their TTL */
    tmp = slot_test_tmpdir();
    char json[600];
    snprintf(json, sizeof(json), "%s/waitlist.json", tmp);
    const char *args[] = {"waitlist",
                          "--port",
                          port_arg(srv.port),
                          "--waiters",
                          "100",
                          "--capacity",
                          "10",
                          "--qty",
                          "1:80,2:20",
                          "--connections",
                          "8",
                          "--release",
                          "85",
                          "--abandon",
                          "10",
                          "--confirm",
                          "5",
                          "--poll-ms",
                          "5",
                          "--duration",
                          "40",
                          "--event",
                          "wl",
                          "--json",
                          json,
                          NULL};
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    int rc = run_bench(args, out);
    if (rc != 0 || !strstr(out, "verification: passed"))
        T_FAIL_("slot-bench waitlist exited %d:\n%s", rc, out);
    static const char *const lines[] = {
        "\n  waitlist          100 of 100 waiters joined (positions 1..K in join order)",
        "\n  offers            ",
        " offers/s ",
        "\n  waited ms         first ",
        "  median ",
        "  last ",
        "\n  waitlist churn    prefill holds ",
        "\n  join order        every offer in join order\n"};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        if (!strstr(out, lines[i]))
            T_FAIL_("no \"%s\" in:\n%s", lines[i], out);
    json_error_t e;
    json_t *root = json_load_file(json, 0, &e);
    if (!root)
        T_FAIL_("%s: line %d: %s", json, e.line, e.text);
    json_t *wl = json_object_get(json_object_get(root, "results"), "waitlist");
    ASSERT_EQ(json_integer_value(json_object_get(wl, "waiters")), 100);
    ASSERT_EQ(json_integer_value(json_object_get(wl, "joined")), 100);
    ASSERT_EQ(json_integer_value(json_object_get(wl, "order_violations")), 0);
    ASSERT(json_is_true(json_object_get(wl, "in_order")) && json_is_true(json_object_get(wl, "positions_exact")));
    ASSERT(json_real_value(json_object_get(wl, "offers_per_s")) > 0);
    /* Units go round unless confirmed: every waiter is served, or the confirmed units left too few. */
    json_int_t served = json_integer_value(json_object_get(wl, "served"));
    const char *stopped = json_string_value(json_object_get(root, "stopped"));
    ASSERT(stopped);
    if (served != 100)
        ASSERT(strstr(stopped, "cannot meet the first waiter's qty"));
    ASSERT_GE(served, 10);
    json_t *waits = json_object_get(wl, "wait_ms");
    ASSERT_LE(json_integer_value(json_object_get(waits, "first")), json_integer_value(json_object_get(waits, "last")));
    ASSERT_EQ(json_integer_value(json_array_get(json_object_get(wl, "wait_waiters"), 0)), 1);
    ASSERT(json_is_true(json_object_get(json_object_get(root, "verification"), "passed")));
    json_decref(root);
    /* A bound before everyone is served: those still waiting leave; verification still passes. */
    const char *bounded[] = {"waitlist",      "--port", port_arg(srv.port), "--waiters", "200",     "--capacity", "5",
                             "--connections", "4",      "--duration",       "0.3",       "--event", "wl-bound",   NULL};
    rc = run_bench(bounded, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "every offer in join order"))
        T_FAIL_("slot-bench waitlist (bounded) exited %d:\n%s", rc, out);
    const char *help[] = {"waitlist", "--help", NULL};
    ASSERT_EQ(run_bench(help, out), 0);
    ASSERT(strstr(out, "--waiters K") && strstr(out, "--poll-ms MS") && strstr(out, "--abandon PCT"));
    const char *redis[] = {"waitlist", "--target", "redis://127.0.0.1:1", NULL};
    ASSERT_EQ(run_bench(redis, out), 64);
    const char *no_waiters[] = {"waitlist", "--port", port_arg(srv.port), "--waiters", "0", NULL};
    ASSERT_EQ(run_bench(no_waiters, out), 64);
    const char *pool[] = {"waitlist", "--port", port_arg(srv.port), "--users", "10", NULL};
    ASSERT_EQ(run_bench(pool, out), 64);
    const char *too_big[] = {"waitlist", "--port", port_arg(srv.port), "--capacity", "2", "--qty", "4", NULL};
    ASSERT_EQ(run_bench(too_big, out), 64);
    const char *pcts[] = {"waitlist", "--port", port_arg(srv.port), "--release", "50", NULL};
    ASSERT_EQ(run_bench(pcts, out), 64);
    const char *elsewhere[] = {"churn", "--waiters", "10", NULL};
    ASSERT_EQ(run_bench(elsewhere, out), 64);
    free(out);
    stop();
}

TEST_IMPL(bench_warmup_and_bounds)
{
    start();
    const char *warm[] = {"hot-release",   "--port", port_arg(srv.port), "--capacity", "500", "--warmup", "0.5",
                          "--connections", "8",      "--tail",           "100",        NULL};
    expect_pass(warm);
    /* Stopped by --requests before the sell-out: verified for what it did, and it says why it stopped. */
    char *out = malloc(OUT_BYTES);
    const char *bounded[] = {"hot-release", "--port", port_arg(srv.port), "--capacity", "1000",
                             "--requests",  "100",    "--connections",    "4",          NULL};
    ASSERT_EQ(run_bench(bounded, out), 0);
    ASSERT(strstr(out, "verification: passed") && strstr(out, "--requests"));
    free(out);
    stop();
}

/* ---------------------------------------------------------------- a lying server */

#define FAKE_WAITERS_MAX 64

typedef struct fake {
    int listener;
    uint16_t port;
    volatile int stop;
    uint64_t next_hold;
    /* waitlist mode: a server that hands returned units to the LAST joiner first */
    bool waitlist;
    int capacity, held, nwaiters, waitlist_max;
    uint64_t expires_at_ms;               /* of every hold it makes */
    char waiter[FAKE_WAITERS_MAX][32];    /* users, in join order */
    uint64_t offer_seq[FAKE_WAITERS_MAX]; /* 0: waiting */
} fake;

/* Waitlist mode: one unit came back; the latest joiner still waiting gets it. */
static void fake_offer(fake *fk)
{
    for (int i = fk->nwaiters - 1; i >= 0; i--)
        if (fk->offer_seq[i] == 0) {
            fk->offer_seq[i] = ++fk->next_hold;
            return;
        }
}

/* Waitlist mode: the answer, or false for an op answered as in the other mode. */
static bool fake_wl_answer(fake *fk, json_t *req, const char *op, char *out, size_t cap)
{
    const char *user = json_string_value(json_object_get(req, "user"));
    if (fk->expires_at_ms == 0)
        fk->expires_at_ms = slot_test_now_ms() + 600000;
    uint64_t exp = fk->expires_at_ms;
    int w = -1;
    for (int i = 0; user && i < fk->nwaiters; i++)
        if (strcmp(fk->waiter[i], user) == 0)
            w = i;
    if (strcmp(op, "create_event") == 0 || strcmp(op, "event") == 0) {
        if (strcmp(op, "create_event") == 0) {
            fk->capacity = (int)json_integer_value(json_object_get(req, "capacity"));
            fk->waitlist_max = (int)json_integer_value(json_object_get(req, "waitlist_max"));
        }
        snprintf(out, cap,
                 "{\"ok\":true,\"event\":\"%s\",\"status\":\"on_sale\",\"capacity\":%d,\"available\":%d,"
                 "\"held\":0,\"confirmed\":0,\"shards\":1,\"waitlist_max\":%d,\"waiting\":0,\"waiting_qty\":0}\n",
                 json_string_value(json_object_get(req, "event")), fk->capacity, fk->capacity, fk->waitlist_max);
    } else if (strcmp(op, "hold") == 0 && fk->held >= fk->capacity) {
        snprintf(out, cap, "{\"ok\":true,\"status\":\"sold_out\",\"available\":0}\n");
    } else if (strcmp(op, "hold") == 0) {
        fk->held++;
        snprintf(out, cap,
                 "{\"ok\":true,\"status\":\"held\",\"hold\":\"%016" PRIx64 "0000000000000001\",\"qty\":1,"
                 "\"expires_at\":%" PRIu64 "}\n",
                 ++fk->next_hold, exp);
    } else if (strcmp(op, "waitlist_join") == 0 && fk->nwaiters < FAKE_WAITERS_MAX && user) {
        snprintf(fk->waiter[fk->nwaiters], sizeof(fk->waiter[0]), "%s", user);
        fk->offer_seq[fk->nwaiters++] = 0;
        snprintf(out, cap, "{\"ok\":true,\"status\":\"waiting\",\"position\":%d,\"qty\":1}\n", fk->nwaiters);
    } else if (strcmp(op, "waitlist") == 0 && w >= 0 && fk->offer_seq[w] == 0) {
        snprintf(out, cap, "{\"ok\":true,\"status\":\"waiting\",\"position\":1,\"qty\":1}\n");
    } else if (strcmp(op, "waitlist") == 0 && w >= 0) {
        snprintf(out, cap,
                 "{\"ok\":true,\"status\":\"offered\",\"hold_status\":\"held\",\"hold\":\"%016" PRIx64
                 "0000000000000001\",\"qty\":1,\"expires_at\":%" PRIu64 "}\n",
                 fk->offer_seq[w], exp);
    } else if (strcmp(op, "release") == 0) {
        fake_offer(fk);
        snprintf(out, cap, "{\"ok\":true,\"released\":true,\"status\":\"released\"}\n");
    } else if (strcmp(op, "get_hold") == 0) {
        snprintf(out, cap,
                 "{\"ok\":true,\"hold\":\"%s\",\"status\":\"released\",\"qty\":1,\"expires_at\":%" PRIu64 "}\n",
                 json_string_value(json_object_get(req, "hold")), exp);
    } else if (strcmp(op, "waitlist_leave") == 0) {
        snprintf(out, cap, "{\"ok\":true,\"left\":false}\n");
    } else if (strcmp(op, "expire") == 0) {
        snprintf(out, cap, "{\"ok\":true,\"expired\":0}\n");
    } else {
        return false;
    }
    return true;
}

/* The answer of a server that grants every hold and shows an untouched event. */
static void fake_answer(fake *fk, const char *line, char *out, size_t cap)
{
    json_t *req = json_loads(line, 0, NULL);
    const char *op = json_string_value(json_object_get(req, "op"));
    const char *ev = json_string_value(json_object_get(req, "event"));
    json_int_t cap_units = json_integer_value(json_object_get(req, "capacity"));
    if (op && fk->waitlist && fake_wl_answer(fk, req, op, out, cap))
        ; /* answered */
    else if (op && strcmp(op, "hold") == 0)
        snprintf(out, cap,
                 "{\"ok\":true,\"status\":\"held\",\"hold\":\"h%" PRIu64 "\",\"qty\":%d,\"expires_at\":%" PRIu64 "}\n",
                 fk->next_hold++, (int)json_integer_value(json_object_get(req, "qty")), slot_test_now_ms() + 600000);
    else if (op && (strcmp(op, "create_event") == 0 || strcmp(op, "event") == 0))
        snprintf(out, cap,
                 "{\"ok\":true,\"event\":\"%s\",\"status\":\"on_sale\",\"capacity\":%d,\"available\":%d,"
                 "\"held\":0,\"confirmed\":0,\"shards\":1}\n",
                 ev ? ev : "?", (int)(cap_units ? cap_units : 100), (int)(cap_units ? cap_units : 100));
    else if (op && strcmp(op, "get_hold") == 0)
        snprintf(out, cap, "{\"ok\":true,\"hold\":\"%s\",\"status\":\"held\",\"qty\":1}\n",
                 json_string_value(json_object_get(req, "hold")));
    else if (op && strcmp(op, "check") == 0)
        snprintf(out, cap, "{\"ok\":true,\"events\":1,\"holds\":0,\"violations\":[]}\n");
    else
        snprintf(out, cap, "{\"ok\":true,\"server\":\"slotd\",\"version\":\"0.0.0-fake\",\"protocol\":1}\n");
    json_decref(req);
}

/* Serve lines on one connection's buffer; false when it closed. */
static bool fake_serve(fake *fk, int fd, char *buf, size_t *len)
{
    ssize_t n = read(fd, buf + *len, 65536 - *len - 1);
    if (n <= 0)
        return false;
    *len += (size_t)n;
    char *start = buf, *nl;
    while ((nl = memchr(start, '\n', (size_t)(buf + *len - start))) != NULL) {
        *nl = 0;
        char reply[512];
        fake_answer(fk, start, reply, sizeof(reply));
        ASSERT_EQ(write(fd, reply, strlen(reply)), (ssize_t)strlen(reply));
        start = nl + 1;
    }
    *len = (size_t)(buf + *len - start);
    memmove(buf, start, *len);
    return true;
}

static void *fake_main(void *arg)
{
    fake *fk = arg;
    struct pollfd pfd[FAKE_CONNS_MAX + 1] = {{.fd = fk->listener, .events = POLLIN}};
    static char bufs[FAKE_CONNS_MAX][65536];
    size_t lens[FAKE_CONNS_MAX] = {0};
    int n = 1;
    while (!fk->stop) {
        if (poll(pfd, (nfds_t)n, 100) <= 0)
            continue;
        if ((pfd[0].revents & POLLIN) && n <= FAKE_CONNS_MAX) {
            pfd[n] = (struct pollfd){.fd = accept(fk->listener, NULL, NULL), .events = POLLIN};
            lens[n - 1] = 0;
            n += pfd[n].fd >= 0;
        }
        for (int i = 1; i < n; i++)
            if ((pfd[i].revents & (POLLIN | POLLHUP)) && !fake_serve(fk, pfd[i].fd, bufs[i - 1], &lens[i - 1])) {
                close(pfd[i].fd);
                pfd[i].fd = -1; /* poll skips it */
            }
    }
    return NULL;
}

TEST_IMPL(bench_verification_catches_a_lying_server)
{
    tmp = slot_test_tmpdir();
    fake fk = {0};
    fk.listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    ASSERT_EQ(bind(fk.listener, (struct sockaddr *)&a, sizeof(a)), 0);
    ASSERT_EQ(listen(fk.listener, 16), 0);
    ASSERT_EQ(getsockname(fk.listener, (struct sockaddr *)&a, &alen), 0);
    fk.port = ntohs(a.sin_port);
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, fake_main, &fk), 0);
    char *out = malloc(OUT_BYTES);
    const char *args[] = {"hot-release", "--port",     port_arg(fk.port),
                          "--capacity",  "100",        "--connections",
                          "2",           "--pipeline", "4",
                          "--tail",      "0",          "--duration",
                          "5",           NULL};
    int rc = run_bench(args, out);
    if (rc != 1 || !strstr(out, "verification: FAILED") || !strstr(out, "oversold") || !strstr(out, "shows capacity"))
        T_FAIL_("a server that oversells: exit %d:\n%s", rc, out);
    fk.stop = 1;
    pthread_join(th, NULL);
    /* A waitlist that hands units to the last joiner first: offers out of join order, and
     * nothing else wrong (every hold as answered, the event's list as created). */
    fk.stop = 0;
    fk.waitlist = true;
    fk.next_hold = 0;
    ASSERT_EQ(pthread_create(&th, NULL, fake_main, &fk), 0);
    const char *lifo[] = {"waitlist",
                          "--port",
                          port_arg(fk.port),
                          "--capacity",
                          "4",
                          "--waiters",
                          "12",
                          "--connections",
                          "2",
                          "--release",
                          "100",
                          "--abandon",
                          "0",
                          "--poll-ms",
                          "2",
                          "--duration",
                          "10",
                          NULL};
    rc = run_bench(lifo, out);
    if (rc != 1 || !strstr(out, "verification: FAILED: 11 offers out of join order") ||
        !strstr(out, "who joined before it") || strstr(out, "differ;") || strstr(out, "shows waitlist_max"))
        T_FAIL_("a waitlist served last joiner first: exit %d:\n%s", rc, out);
    fk.stop = 1;
    pthread_join(th, NULL);
    close(fk.listener);
    free(out);
    slot_test_rmdir(tmp);
    free(tmp);
}

/* ---------------------------------------------------------------- the Redis peer */

static uint16_t free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* redis-server on a free loopback port, data in tmp; waits until it answers PING. */
static pid_t redis_start(uint16_t port)
{
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        execlp("redis-server", "redis-server", "--port", port_arg(port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "yes", "--appendfsync", "always", "--dir", tmp, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons(port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        char pong[8] = "";
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && write(fd, "PING\r\n", 6) == 6 &&
            read(fd, pong, sizeof(pong) - 1) > 0 && strncmp(pong, "+PONG", 5) == 0) {
            close(fd);
            return pid;
        }
        close(fd);
        sleep_ms(50);
    }
    kill(pid, SIGKILL);
    T_FAIL_("redis-server on port %u did not answer PING", (unsigned)port);
}

TEST_IMPL(bench_redis_target)
{
    if (system("command -v redis-server >/dev/null 2>&1") != 0) {
        printf("  skipped: redis-server is not installed (apt-get install redis-server)\n");
        return;
    }
    tmp = slot_test_tmpdir();
    char *out = malloc(OUT_BYTES);
    const char *version[] = {"--version", NULL};
    ASSERT_EQ(run_bench(version, out), 0);
    if (!strstr(out, "redis")) {
        printf("  skipped: this slot-bench was built without hiredis (apt-get install libhiredis-dev)\n");
        free(out);
        return;
    }
    uint16_t port = free_port();
    pid_t pid = redis_start(port);
    char target[64];
    snprintf(target, sizeof(target), "redis://127.0.0.1:%u", (unsigned)port);
    const char *hr[] = {"hot-release", "--target",   target, "--capacity", "1500", "--connections",
                        "8",           "--pipeline", "4",    "--tail",     "300",  NULL};
    expect_pass(hr);
    const char *churn[] = {"churn", "--target",      target, "--duration", "2", "--capacity",
                           "300",   "--connections", "4",    "--pipeline", "4", "--hold-ttl-ms",
                           "1000",  "--think-ms",    "5:30", NULL};
    expect_pass(churn);
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    free(out);
    slot_test_rmdir(tmp);
    free(tmp);
}

/* Regression: a run stopped by its --duration (or --requests) bound before the
 * sell-out failed verification with "not sold out" and exited 1. It verifies
 * what happened instead: here multi-event on events too large to sell out. */
TEST_IMPL(bench_bounded_run_verifies_what_happened)
{
    start();
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    const char *timed[] = {
        "multi-event", "--port", port_arg(srv.port), "--events", "4",          "--capacity", "1000000000",
        "--duration",  "1",      "--connections",    "8",        "--pipeline", "4",          NULL};
    int rc = run_bench(timed, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "--duration"))
        T_FAIL_("multi-event stopped by --duration: exit %d:\n%s", rc, out);
    const char *counted[] = {"hot-release", "--port", port_arg(srv.port), "--capacity", "1000",
                             "--requests",  "100",    "--connections",    "4",          NULL};
    rc = run_bench(counted, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "--requests"))
        T_FAIL_("hot-release stopped by --requests: exit %d:\n%s", rc, out);
    const char *prefilled[] = {"sold-out",   "--port", port_arg(srv.port), "--capacity", "300",
                               "--requests", "50",     "--connections",    "4",          NULL};
    rc = run_bench(prefilled, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "--requests"))
        T_FAIL_("sold-out with --requests below its capacity: exit %d:\n%s", rc, out);
    free(out);
    stop();
}

/* ping against slotd: a hello per request through the same engine; every request
 * answered, the report gives requests/s, latency and the bench's CPU per answer,
 * and no server batch or commit rows (a hello is no write). */
TEST_IMPL(bench_ping)
{
    start();
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    const char *ping[] = {"ping",          "--port", port_arg(srv.port), "--requests", "2000",
                          "--connections", "8",      "--pipeline",       "4",          NULL};
    int rc = run_bench(ping, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "2000 answered of 2000 sent") ||
        !strstr(out, "requests/s") || !strstr(out, "latency ms        p50") || !strstr(out, "bench cpu") ||
        !strstr(out, "hello") || !strstr(out, "server latency us"))
        T_FAIL_("ping against slotd: exit %d:\n%s", rc, out);
    /* hellos run in no batch and no commit: the report has no rows of them */
    if (strstr(out, "server batches") || strstr(out, "server commits"))
        T_FAIL_("ping's report has batch or commit rows:\n%s", out);
    const char *threaded[] = {"ping",          "--port", port_arg(srv.port), "--requests", "3001",
                              "--connections", "6",      "--threads",        "3",          NULL};
    rc = run_bench(threaded, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "3001 answered of 3001 sent") ||
        !strstr(out, "3 threads"))
        T_FAIL_("ping --threads 3: exit %d:\n%s", rc, out);
    const char *timed[] = {"ping", "--port", port_arg(srv.port), "--duration", "0.5", "--connections", "4", NULL};
    rc = run_bench(timed, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "--duration"))
        T_FAIL_("ping --duration: exit %d:\n%s", rc, out);
    /* ping makes no event: the options of events are not its own */
    const char *cap[] = {"ping", "--port", port_arg(srv.port), "--capacity", "10", NULL};
    ASSERT_EQ(run_bench(cap, out), 64);
    free(out);
    stop();
}

/* --threads: the connections spread over loops, the report merged, and the
 * verification (every hold by get_hold, the counters, check) of one run. */
TEST_IMPL(bench_threads)
{
    start();
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    const char *hr[] = {"hot-release",   "--port", port_arg(srv.port), "--threads", "2",     "--capacity", "3000",
                        "--connections", "8",      "--pipeline",       "4",         "--qty", "1:50,2:50",  "--tail",
                        "200",           NULL};
    int rc = run_bench(hr, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "(3000 units)") || !strstr(out, "0 differ") ||
        !strstr(out, "2 threads"))
        T_FAIL_("hot-release --threads 2: exit %d:\n%s", rc, out);
    const char *so[] = {"sold-out",      "--port", port_arg(srv.port), "--threads", "2", "--capacity", "500",
                        "--connections", "5",      "--requests",       "1000",      NULL};
    rc = run_bench(so, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "sold_out          1000"))
        T_FAIL_("sold-out --threads 2: exit %d:\n%s", rc, out);
    const char *me[] = {"multi-event", "--port", port_arg(srv.port), "--threads", "2",      "--events", "3",
                        "--capacity",  "400",    "--connections",    "6",         "--tail", "100",      NULL};
    expect_pass(me);
    const char *too_many[] = {"ping", "--port", port_arg(srv.port), "--threads", "3", "--connections", "2", NULL};
    ASSERT_EQ(run_bench(too_many, out), 64);
    const char *churn[] = {"churn", "--port", port_arg(srv.port), "--threads", "2", NULL};
    ASSERT_EQ(run_bench(churn, out), 64);
    const char *peer[] = {"hot-release", "--port", port_arg(srv.port), "--peer", "min", NULL};
    ASSERT_EQ(run_bench(peer, out), 64);
    free(out);
    stop();
}

/* The redis target with the minimal Lua peer (bench/peers/slot_hold_min.lua) and
 * PING; only where redis-server and a slot-bench with hiredis are installed. */
TEST_IMPL(bench_redis_min_peer)
{
    if (system("command -v redis-server >/dev/null 2>&1") != 0) {
        printf("  skipped: redis-server is not installed (apt-get install redis-server)\n");
        return;
    }
    tmp = slot_test_tmpdir();
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    const char *version[] = {"--version", NULL};
    ASSERT_EQ(run_bench(version, out), 0);
    if (!strstr(out, "redis")) {
        printf("  skipped: this slot-bench was built without hiredis (apt-get install libhiredis-dev)\n");
        free(out);
        slot_test_rmdir(tmp);
        free(tmp);
        return;
    }
    uint16_t port = free_port();
    pid_t pid = redis_start(port);
    char target[64];
    snprintf(target, sizeof(target), "redis://127.0.0.1:%u", (unsigned)port);
    const char *hr[] = {"hot-release", "--target",      target, "--peer",     "min", "--capacity",
                        "1500",        "--connections", "8",    "--pipeline", "4",   "--qty",
                        "1:50,3:50",   "--tail",        "300",  NULL};
    int rc = run_bench(hr, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "(1500 units)") || !strstr(out, "0 differ"))
        T_FAIL_("hot-release --peer min: exit %d:\n%s", rc, out);
    const char *hr2[] = {"hot-release", "--target", target,          "--peer", "min",    "--threads", "2",
                         "--capacity",  "1000",     "--connections", "8",      "--tail", "100",       NULL};
    expect_pass(hr2);
    const char *so[] = {"sold-out", "--target",      target, "--peer",     "min", "--capacity",
                        "200",      "--connections", "4",    "--requests", "400", NULL};
    expect_pass(so);
    const char *ping[] = {"ping", "--target",   target, "--requests", "2000", "--connections",
                          "8",    "--pipeline", "8",    "--threads",  "2",    NULL};
    rc = run_bench(ping, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "2000 answered of 2000 sent") ||
        !strstr(out, "PING"))
        T_FAIL_("ping --target redis: exit %d:\n%s", rc, out);
    const char *per_user[] = {"hot-release", "--target", target, "--peer", "min", "--max-per-user", "2", NULL};
    ASSERT_EQ(run_bench(per_user, out), 64);
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    free(out);
    slot_test_rmdir(tmp);
    free(tmp);
}
