/*
 * test_bench_seated.c — slot-bench hot-release --seated end to end
 * (docs/protocol.md, "Seated events"): against a fresh slotd, the seated
 * event made from bench/maps/arena.json (20,000 seats), buyers asking for
 * 1..6 adjacent seats until the sell-out, and buyers naming seats (a bounded
 * number of requests); each run must pass its verification (exit 0: no seat
 * in two holds, get_hold's seats = the answers', seat_map agrees, every
 * sold_out possible), and its --json report must carry the seat numbers
 * (singles left, the offline model's without the orphan rule). The server,
 * asked directly afterwards, must show the same held count and a clean
 * check. Usage errors of the options, and their --help lines.
 * $SLOT_BENCH is the slot-bench under test, $SLOT_SOURCE_ROOT the source tree.
 */
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

TEST_DECLARE(bench_seated_adjacent)
TEST_DECLARE(bench_seated_named)
TEST_DECLARE(bench_seated_usage)

TEST_LIST_START
TEST_ENTRY(bench_seated_adjacent)
TEST_ENTRY(bench_seated_named)
TEST_ENTRY(bench_seated_usage)
TEST_LIST_END

#define BENCH_RUN_TIMEOUT_MS 60000 /* one slot-bench run; these take about a second */
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

static void arena_path(char *buf, size_t n)
{
    const char *root = getenv("SLOT_SOURCE_ROOT");
    if (!root || !*root)
        T_FAIL_("%s", "SLOT_SOURCE_ROOT is not set (run through meson test)");
    snprintf(buf, n, "%s/bench/maps/arena.json", root);
}

/* The report of a --seated run: results.seats, checked for what every seated run must show;
 * the event's held count from the server equals the seats the report saw held. */
static json_t *seats_report(const char *json, slot_test_server *srv, const char *event, json_t **root)
{
    json_error_t e;
    *root = json_load_file(json, 0, &e);
    if (!*root)
        T_FAIL_("%s: line %d: %s", json, e.line, e.text);
    json_t *s = json_object_get(json_object_get(*root, "results"), "seats");
    ASSERT(json_is_object(s));
    json_t *ch = json_object_get(s, "checks");
    ASSERT_EQ(jint(s, "bad_held", NULL), 0);
    ASSERT_EQ(jint(s, "bad_taken", NULL), 0);
    ASSERT_EQ(jint(s, "bad_sold_out", NULL), 0);
    ASSERT_EQ(jint(ch, "duplicates", NULL), 0);
    ASSERT_EQ(jint(ch, "get_hold_differ", NULL), 0);
    ASSERT_EQ(jint(ch, "held_not_owned", NULL), 0);
    ASSERT_EQ(jint(ch, "owned_not_held", NULL), 0);
    ASSERT_EQ(jint(ch, "taken_not_held", NULL), 0);
    ASSERT_EQ(jint(ch, "map_held", NULL) + jint(ch, "map_free", NULL), 20000);
    ASSERT_EQ(jint(ch, "get_hold", NULL), jint(json_object_get(*root, "results"), "holds", NULL));
    ASSERT(jint(s, "seat_map", "bytes") > 20000); /* one letter a seat, and the row names */

    slot_client *c = slot_test_dial(srv);
    slot_test_check_clean(c, event);
    slot_req q = slot_test_req(SLOT_OP_EVENT, event);
    slot_reply rep;
    slot_test_call(c, &q, &rep);
    ASSERT(rep.ok && rep.line);
    json_t *view = json_loads(rep.line, 0, NULL);
    ASSERT(view);
    ASSERT_EQ(jint(view, "capacity", NULL), 20000);
    ASSERT_EQ(jint(view, "held", NULL), jint(ch, "map_held", NULL));
    json_decref(view);
    slot_reply_clear(&rep);
    slot_client_close(c);
    return s;
}

/* Adjacent: 8 connections x 8 until sold out and 30 sold_out answers more. Parties of 2..6 (no
 * single buyer to fill the single seats), so singles are left and the orphan rule shows. */
TEST_IMPL(bench_seated_adjacent)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    tmp = slot_test_tmpdir();
    char port[16], json[600], map[600];
    snprintf(port, sizeof(port), "%u", (unsigned)srv.port);
    snprintf(json, sizeof(json), "%s/adjacent.json", tmp);
    arena_path(map, sizeof(map));
    const char *args[] = {"hot-release",
                          "--port",
                          port,
                          "--seated",
                          map,
                          "--adjacent",
                          "--qty",
                          "2:40,3:10,4:40,5:5,6:5",
                          "--event",
                          "arena",
                          "--connections",
                          "8",
                          "--pipeline",
                          "8",
                          "--tail",
                          "30",
                          "--seed",
                          "7",
                          "--duration",
                          "30",
                          "--json",
                          json,
                          NULL};
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    int rc = run_bench(args, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "without the rule"))
        T_FAIL_("slot-bench hot-release --seated --adjacent exited %d:\n%s", rc, out);
    if (!strstr(out, "sold out, and the tail of sold_out answers came back"))
        T_FAIL_("the run did not end at the sell-out:\n%s", out);
    json_t *root;
    json_t *s = seats_report(json, &srv, "arena", &root);
    ASSERT(strcmp(json_string_value(json_object_get(s, "mode")), "adjacent") == 0);
    ASSERT_EQ(jint(s, "taken", NULL), 0);
    /* sold out: the final map has no free run of 2 (the smallest party) */
    ASSERT(jint(s, "longest_free", NULL) < 2);
    ASSERT(jint(json_object_get(root, "results"), "sold_out", NULL) >= 30);
    json_t *model = json_object_get(s, "without_orphan_rule");
    ASSERT(json_is_object(model));
    ASSERT(jint(model, "singles", NULL) >= 0 && jint(s, "singles", NULL) >= 0);
    json_decref(root);
    free(out);
    slot_test_stop(&srv);
    slot_test_rmdir(tmp);
    free(tmp);
}

/* Named: 4 connections x 8, 5,000 requests of 1..6 seats named at random: many meet a seat
 * already held (taken), and every seat a taken answer named must be held at the end. */
TEST_IMPL(bench_seated_named)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    tmp = slot_test_tmpdir();
    char port[16], json[600], map[600];
    snprintf(port, sizeof(port), "%u", (unsigned)srv.port);
    snprintf(json, sizeof(json), "%s/named.json", tmp);
    arena_path(map, sizeof(map));
    const char *args[] = {
        "hot-release",   "--port", port,         "--seated", map,          "--named", "--event", "arena",
        "--connections", "4",      "--pipeline", "8",        "--requests", "5000",    "--seed",  "11",
        "--json",        json,     NULL};
    char *out = malloc(OUT_BYTES);
    ASSERT(out);
    int rc = run_bench(args, out);
    if (rc != 0 || !strstr(out, "verification: passed") || !strstr(out, "seats             named"))
        T_FAIL_("slot-bench hot-release --seated --named exited %d:\n%s", rc, out);
    json_t *root;
    json_t *s = seats_report(json, &srv, "arena", &root);
    ASSERT(strcmp(json_string_value(json_object_get(s, "mode")), "named") == 0);
    ASSERT(jint(s, "taken", NULL) > 0); /* 5,000 picks of up to 6 among 20,000 seats collide */
    ASSERT_EQ(jint(json_object_get(root, "results"), "sold_out", NULL), 0);
    ASSERT(json_object_get(s, "without_orphan_rule") == NULL); /* named holds pick their seats */
    json_decref(root);
    free(out);
    slot_test_stop(&srv);
    slot_test_rmdir(tmp);
    free(tmp);
}

/* The combinations refused before anything is sent (exit 64), and the lines in --help. */
TEST_IMPL(bench_seated_usage)
{
    tmp = slot_test_tmpdir();
    char *out = malloc(OUT_BYTES), map[600], bad[700];
    ASSERT(out);
    arena_path(map, sizeof(map));
    snprintf(bad, sizeof(bad), "%s/bad.json", tmp);
    FILE *f = fopen(bad, "w");
    ASSERT(f);
    fputs("{\"sections\":[{\"name\":\"A\",\"rows\":[{\"name\":\"1\",\"from\":5,\"to\":2}]}]}\n", f);
    fclose(f);
    const char *help[] = {"hot-release", "--help", NULL};
    ASSERT_EQ(run_bench(help, out), 0);
    ASSERT(strstr(out, "--seated FILE") && strstr(out, "--adjacent") && strstr(out, "--named"));
    const char *alone[] = {"hot-release", "--adjacent", NULL};
    ASSERT_EQ(run_bench(alone, out), 64);
    ASSERT(strstr(out, "--adjacent needs --seated FILE"));
    const char *named_alone[] = {"hot-release", "--named", NULL};
    ASSERT_EQ(run_bench(named_alone, out), 64);
    const char *both[] = {"hot-release", "--seated", map, "--adjacent", "--named", NULL};
    ASSERT_EQ(run_bench(both, out), 64);
    ASSERT(strstr(out, "--adjacent and --named"));
    const char *no_mode[] = {"hot-release", "--seated", map, NULL};
    ASSERT_EQ(run_bench(no_mode, out), 64);
    const char *missing[] = {"hot-release", "--seated", "/nonexistent/map.json", "--adjacent", NULL};
    ASSERT_EQ(run_bench(missing, out), 64);
    ASSERT(strstr(out, "/nonexistent/map.json"));
    const char *range[] = {"hot-release", "--seated", bad, "--adjacent", NULL};
    ASSERT_EQ(run_bench(range, out), 64);
    ASSERT(strstr(out, "row A-1"));
    const char *cap[] = {"hot-release", "--seated", map, "--adjacent", "--capacity", "100", NULL};
    ASSERT_EQ(run_bench(cap, out), 64);
    const char *qty[] = {"hot-release", "--seated", map, "--adjacent", "--qty", "17", NULL};
    ASSERT_EQ(run_bench(qty, out), 64);
    const char *threads[] = {"hot-release", "--seated", map, "--named", "--threads", "2", NULL};
    ASSERT_EQ(run_bench(threads, out), 64);
    const char *churn[] = {"churn", "--seated", map, "--adjacent", NULL};
    ASSERT_EQ(run_bench(churn, out), 64);
    free(out);
    slot_test_rmdir(tmp);
    free(tmp);
}
