/*
 * test_metrics.c — the metrics op against a real slotd: after a hot release
 * (slot-bench) its counters equal the stats op's, the text passes `promtool
 * check metrics`, events on sale and feed consumers get their series, and
 * the example Prometheus files (examples/prometheus) pass `promtool check
 * config` / `check rules` and name only metrics slotd has. The promtool
 * steps skip (77) when promtool (Debian: prometheus) is missing.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

TEST_DECLARE(metrics_counters_equal_stats_after_hot_release)
TEST_DECLARE(metrics_events_on_sale_and_consumers)
TEST_DECLARE(metrics_families_and_blocks)
TEST_DECLARE(metrics_waiting_rooms)
TEST_DECLARE(metrics_refused_to_a_frontend)
TEST_DECLARE(metrics_examples_pass_promtool)

TEST_LIST_START
TEST_ENTRY(metrics_counters_equal_stats_after_hot_release)
TEST_ENTRY(metrics_events_on_sale_and_consumers)
TEST_ENTRY(metrics_families_and_blocks)
TEST_ENTRY(metrics_waiting_rooms)
TEST_ENTRY(metrics_refused_to_a_frontend)
TEST_ENTRY(metrics_examples_pass_promtool)
TEST_LIST_END

#define TIMEOUT_MS 10000

static const char PROMTOOL[] = "/usr/bin/promtool";

static int run_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int run_cmd(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    fflush(NULL);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* One raw request line on c and its reply line, parsed; the caller decrefs. */
static json_t *call_json(slot_client *c, const char *line)
{
    ASSERT_EQ(slot_client_send_raw(c, line, strlen(line)), 0);
    const char *reply = NULL;
    long n = slot_client_recv_line(c, &reply, TIMEOUT_MS);
    ASSERT(n > 0);
    json_error_t e;
    json_t *v = json_loadb(reply, (size_t)n, 0, &e);
    if (!v)
        T_FAIL_("not JSON: %.200s", reply);
    return v;
}

/* The metrics op's text on c (heap; the caller frees). */
static char *metrics_text(slot_client *c)
{
    json_t *v = call_json(c, "{\"op\":\"metrics\"}\n");
    ASSERT(json_is_true(json_object_get(v, "ok")));
    json_t *t = json_object_get(v, "text");
    ASSERT(json_is_string(t));
    char *text = strdup(json_string_value(t));
    ASSERT_NOT_NULL(text);
    json_decref(v);
    return text;
}

/* The value of the sample `series` (name, or name{labels} exactly as
 * written); aborts when the text has no such line. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    T_FAIL_("no sample %s in the metrics", series);
}

static bool has_series(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, prefix, n) == 0)
            return true;
    return false;
}

/* The sum of every sample of family `name` with labels. */
static double sum_of(const char *text, const char *name)
{
    size_t n = strlen(name);
    double sum = 0;
    int seen = 0;
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == '{') {
            const char *sp = strchr(p, ' ');
            ASSERT_NOT_NULL(sp);
            sum += strtod(sp + 1, NULL);
            seen++;
        }
    ASSERT_GT(seen, 0);
    return sum;
}

static uint64_t stat_u64(json_t *stats, const char *key)
{
    json_t *v = json_object_get(stats, key);
    if (!json_is_integer(v))
        T_FAIL_("stats has no integer %s", key);
    return (uint64_t)json_integer_value(v);
}

static uint64_t stat_sub(json_t *stats, const char *obj, const char *key)
{
    json_t *v = json_object_get(json_object_get(stats, obj), key);
    if (!json_is_integer(v))
        T_FAIL_("stats has no integer %s.%s", obj, key);
    return (uint64_t)json_integer_value(v);
}

#define ASSERT_METRIC(text, series, want)                                       \
    do {                                                                        \
        double got_ = sample((text), (series));                                 \
        uint64_t want_ = (want);                                                \
        if (got_ != (double)want_)                                              \
            T_FAIL_("%s is %.17g, stats says %" PRIu64, (series), got_, want_); \
    } while (0)

/* Writes text to DIR/metrics.txt and runs promtool check metrics on it. */
static void promtool_check(const char *text)
{
    if (access(PROMTOOL, X_OK) != 0)
        SLOT_TEST_SKIP("%s is missing (Debian: prometheus)", PROMTOOL);
    char *dir = slot_test_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/metrics.txt", dir);
    FILE *f = fopen(path, "w");
    ASSERT_NOT_NULL(f);
    ASSERT_EQ(fwrite(text, 1, strlen(text), f), strlen(text));
    ASSERT_EQ(fclose(f), 0);
    int rc = run_cmd("%s check metrics < %s", PROMTOOL, path);
    if (rc != 0)
        T_FAIL_("promtool check metrics: exit %d on:\n%s", rc, text);
    slot_test_rmdir(dir);
    free(dir);
}

/* After a hot release (and a few errors), every counter the metrics show
 * equals stats' taken right after on the same connection. Between the two
 * only the stats request itself is counted (its parse) and the metrics
 * reply's latency. */
TEST_IMPL(metrics_counters_equal_stats_after_hot_release)
{
    const char *bench = getenv("SLOT_BENCH");
    ASSERT_NOT_NULL(bench);
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    ASSERT_EQ(run_cmd("%s hot-release --port %u --capacity 3000 --connections 32 --tail 300 >/dev/null", bench,
                      srv.port),
              0);
    slot_client *c = slot_test_dial(&srv);
    json_decref(call_json(c, "not json\n"));
    json_decref(call_json(c, "{\"op\":\"event\",\"event\":\"no-such-event\"}\n"));
    json_decref(
        call_json(c, "{\"op\":\"hold\",\"event\":\"no-such-event\",\"user\":\"u\",\"request\":\"r\",\"qty\":1}\n"));
    char *text = metrics_text(c);
    json_t *st = call_json(c, "{\"op\":\"stats\"}\n");

    json_t *req = json_object_get(st, "requests");
    const char *op;
    json_t *v;
    size_t nops = 0;
    json_object_foreach(req, op, v)
    {
        char series[128];
        snprintf(series, sizeof series, "slotd_requests_total{op=\"%s\"}", op);
        uint64_t want = (uint64_t)json_integer_value(v) - (strcmp(op, "stats") == 0); /* itself */
        ASSERT_METRIC(text, series, want);
        nops++;
    }
    ASSERT_GT(nops, 20);
    ASSERT_METRIC(text, "slotd_bad_lines_total", stat_u64(st, "bad_lines"));
    ASSERT_METRIC(text, "slotd_holds_total", stat_u64(st, "holds"));
    ASSERT_METRIC(text, "slotd_sold_out_total", stat_u64(st, "sold_out"));
    ASSERT_METRIC(text, "slotd_sold_out_fast_total", stat_u64(st, "sold_out_fast"));
    ASSERT(stat_u64(st, "sold_out_fast") <= stat_u64(st, "sold_out"));
    ASSERT_GE(stat_u64(st, "holds"), 3000);
    ASSERT_GT(stat_u64(st, "sold_out"), 0);
    ASSERT_GE(stat_u64(st, "errors"), 3);
    ASSERT(sum_of(text, "slotd_errors_total") == (double)stat_u64(st, "errors"));
    ASSERT(sample(text, "slotd_errors_total{code=\"bad_json\"}") >= 1);
    ASSERT(sample(text, "slotd_errors_total{code=\"unknown_event\"}") >= 2);
    ASSERT_METRIC(text, "slotd_commits_total", stat_u64(st, "commits"));
    ASSERT_METRIC(text, "slotd_commit_failures_total", stat_u64(st, "commit_failures"));
    ASSERT_METRIC(text, "slotd_connections", stat_u64(st, "connections"));
    ASSERT_METRIC(text, "slotd_connections_accepted_total", stat_u64(st, "connections_total"));
    ASSERT_METRIC(text, "slotd_connections_timed_out_total", stat_u64(st, "connections_timed_out"));
    ASSERT_METRIC(text, "slotd_reads_paused_total", stat_u64(st, "reads_paused"));
    ASSERT_METRIC(text, "slotd_accepts_paused_total", stat_u64(st, "accepts_paused"));
    ASSERT_METRIC(text, "slotd_queue_requests", stat_u64(st, "queue"));
    ASSERT_METRIC(text, "slotd_db_used_bytes", stat_u64(st, "db_bytes"));
    ASSERT_METRIC(text, "slotd_map_size_bytes", stat_u64(st, "map_bytes"));
    ASSERT_METRIC(text, "slotd_batch_size_requests_count", stat_sub(st, "batch_size", "count"));
    ASSERT_METRIC(text, "slotd_batch_size_requests_bucket{le=\"+Inf\"}", stat_sub(st, "batch_size", "count"));
    ASSERT_METRIC(text, "slotd_commit_duration_seconds_count", stat_u64(st, "commits"));
    ASSERT_METRIC(text, "slotd_commit_fsync_duration_seconds_count", stat_u64(st, "commits"));
    /* the metrics reply's own latency was recorded after its text was made */
    ASSERT_METRIC(text, "slotd_request_duration_seconds_count", stat_sub(st, "latency_us", "count") - 1);
    /* sums: the same nanoseconds, in seconds here and whole microseconds there */
    double busy_us = sample(text, "slotd_commit_duration_seconds_sum") * 1e6;
    double sync_us = sample(text, "slotd_commit_fsync_duration_seconds_sum") * 1e6;
    ASSERT(fabs(busy_us - (double)stat_u64(st, "commit_busy_us")) <= 1.0);
    ASSERT(fabs(sync_us - (double)stat_u64(st, "commit_sync_us")) <= 1.0);
    /* replies by outcome: every hold answered was a hold or a sold_out */
    ASSERT(sample(text, "slotd_replies_total{op=\"hold\",outcome=\"ok\"}") >= (double)stat_u64(st, "holds"));
    ASSERT(sample(text, "slotd_replies_total{op=\"hold\",outcome=\"sold_out\"}") == (double)stat_u64(st, "sold_out"));
    ASSERT(sample(text, "slotd_replies_total{op=\"invalid\",outcome=\"error\"}") >= 1);
    ASSERT(sample(text, "slotd_cluster_role{role=\"standalone\"}") == 1);
    ASSERT(sample(text, "slotd_cluster_role{role=\"primary\"}") == 0);
    ASSERT(has_series(text, "slotd_build_info{version=\""));
    json_decref(st);
    slot_client_close(c);
    slot_test_stop(&srv);
    promtool_check(text);
    free(text);
}

/* Events on sale get series (closed ones and those outside their window do
 * not); a known feed consumer gets its lag behind the head. */
TEST_IMPL(metrics_events_on_sale_and_consumers)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    slot_client *c = slot_test_dial(&srv);
    static const char *const setup[] = {
        "{\"op\":\"create_event\",\"event\":\"m-open\",\"capacity\":10}\n",
        "{\"op\":\"create_event\",\"event\":\"m-closed\",\"capacity\":5}\n",
        "{\"op\":\"set_status\",\"event\":\"m-closed\",\"status\":\"closed\"}\n",
        "{\"op\":\"create_event\",\"event\":\"m-later\",\"capacity\":5,\"opens_at\":4102444800000}\n",
        "{\"op\":\"hold\",\"event\":\"m-open\",\"user\":\"u1\",\"request\":\"r1\",\"qty\":3}\n",
        "{\"op\":\"subscribe\",\"consumer\":\"mail\",\"from\":\"start\"}\n",
    };
    for (size_t i = 0; i < sizeof setup / sizeof setup[0]; i++) {
        json_t *v = call_json(c, setup[i]);
        if (!json_is_true(json_object_get(v, "ok")))
            T_FAIL_("setup %zu (%s) refused", i, setup[i]);
        json_decref(v);
    }
    slot_client_close(c); /* the subscription ends; the consumer stays known */
    c = slot_test_dial(&srv);
    char *text = metrics_text(c);
    ASSERT(sample(text, "slotd_event_capacity_units{event=\"m-open\",family=\"m-open\"}") == 10);
    ASSERT(sample(text, "slotd_event_held_units{event=\"m-open\",family=\"m-open\"}") == 3);
    ASSERT(sample(text, "slotd_event_available_units{event=\"m-open\",family=\"m-open\"}") == 7);
    ASSERT(sample(text, "slotd_event_confirmed_units{event=\"m-open\",family=\"m-open\"}") == 0);
    ASSERT(sample(text, "slotd_event_allocated_units{event=\"m-open\",family=\"m-open\"}") == 0);
    ASSERT(sample(text, "slotd_allocation_blocks_shown") == 0);
    ASSERT(sample(text, "slotd_events_on_sale_shown") == 1);
    ASSERT(!has_series(text, "slotd_event_held_units{event=\"m-closed\"}"));
    ASSERT(!has_series(text, "slotd_event_held_units{event=\"m-later\"}"));
    double head = sample(text, "slotd_feed_head_seq");
    ASSERT(head >= 4); /* three events created and a hold */
    ASSERT(sample(text, "slotd_feed_consumers") == 1);
    ASSERT(sample(text, "slotd_feed_consumer_lag_entries{consumer=\"mail\"}") == head);
    slot_client_close(c);
    slot_test_stop(&srv);
    promtool_check(text);
    free(text);
}

/* The per-event series of event ev (of family fam) agree with the server's
 * view of it: available = capacity - held - confirmed - allocated, and each
 * equals the view's field. */
static void event_series_match_view(slot_client *c, const char *text, const char *ev, const char *fam)
{
    char line[200];
    snprintf(line, sizeof line, "{\"op\":\"event\",\"event\":\"%s\"}\n", ev);
    json_t *v = call_json(c, line);
    ASSERT(json_is_true(json_object_get(v, "ok")));
    static const char *const fields[] = {"capacity", "available", "held", "confirmed", "allocated"};
    double got[5];
    for (size_t i = 0; i < 5; i++) {
        char series[200];
        snprintf(series, sizeof series, "slotd_event_%s_units{event=\"%s\",family=\"%s\"}", fields[i], ev, fam);
        got[i] = sample(text, series);
        double want = (double)json_integer_value(json_object_get(v, fields[i]));
        if (got[i] != want)
            T_FAIL_("%s is %.17g, the view's %s %.17g", series, got[i], fields[i], want);
    }
    if (got[1] != got[0] - got[2] - got[3] - got[4])
        T_FAIL_("%s: available %.17g != capacity - held - confirmed - allocated", ev, got[1]);
    json_decref(v);
}

/* A 3-level family (venue > area > tt): every event's series carry the
 * root's name as family; after an allocate on the area and a hold from its
 * block, allocated and available count the block, and the block has its
 * remaining and held series. */
TEST_IMPL(metrics_families_and_blocks)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    slot_client *c = slot_test_dial(&srv);
    static const char *const setup[] = {
        "{\"op\":\"create_event\",\"event\":\"venue\",\"capacity\":20,\"shards\":2}\n",
        "{\"op\":\"create_event\",\"event\":\"area\",\"capacity\":12,\"shards\":2,\"parent\":\"venue\"}\n",
        "{\"op\":\"create_event\",\"event\":\"tt\",\"capacity\":6,\"shards\":2,\"parent\":\"area\"}\n",
        "{\"op\":\"create_event\",\"event\":\"solo\",\"capacity\":4}\n",
        "{\"op\":\"hold\",\"event\":\"tt\",\"user\":\"u2\",\"request\":\"r1\",\"qty\":2}\n",
        "{\"op\":\"allocate\",\"event\":\"area\",\"allocation\":\"fans\",\"qty\":5}\n",
        "{\"op\":\"allocate\",\"event\":\"area\",\"allocation\":\"press\",\"qty\":1}\n",
        "{\"op\":\"hold\",\"event\":\"area\",\"user\":\"u3\",\"request\":\"r1\",\"qty\":2,\"allocation\":\"fans\"}\n",
    };
    for (size_t i = 0; i < sizeof setup / sizeof setup[0]; i++) {
        json_t *v = call_json(c, setup[i]);
        const char *status = json_string_value(json_object_get(v, "status"));
        if (!json_is_true(json_object_get(v, "ok")) || (status && strcmp(status, "sold_out") == 0))
            T_FAIL_("setup %zu (%s) refused", i, setup[i]);
        json_decref(v);
    }
    char *text = metrics_text(c);
    /* the family label: the root's name, a root's own */
    ASSERT(sample(text, "slotd_event_capacity_units{event=\"tt\",family=\"venue\"}") == 6);
    ASSERT(sample(text, "slotd_event_capacity_units{event=\"area\",family=\"venue\"}") == 12);
    ASSERT(sample(text, "slotd_event_capacity_units{event=\"venue\",family=\"venue\"}") == 20);
    ASSERT(sample(text, "slotd_event_capacity_units{event=\"solo\",family=\"solo\"}") == 4);
    /* area: held 2 through tt + 2 from its block; 6 allocated, 2 of them held: 4 unused */
    ASSERT(sample(text, "slotd_event_held_units{event=\"area\",family=\"venue\"}") == 4);
    ASSERT(sample(text, "slotd_event_allocated_units{event=\"area\",family=\"venue\"}") == 4);
    ASSERT(sample(text, "slotd_event_available_units{event=\"area\",family=\"venue\"}") == 12 - 4 - 4);
    ASSERT(sample(text, "slotd_event_allocated_units{event=\"venue\",family=\"venue\"}") == 4);
    ASSERT(sample(text, "slotd_event_available_units{event=\"venue\",family=\"venue\"}") == 20 - 4 - 4);
    ASSERT(sample(text, "slotd_event_allocated_units{event=\"tt\",family=\"venue\"}") == 0);
    event_series_match_view(c, text, "venue", "venue");
    event_series_match_view(c, text, "area", "venue");
    event_series_match_view(c, text, "tt", "venue");
    event_series_match_view(c, text, "solo", "solo");
    /* the blocks, in name order */
    ASSERT(sample(text, "slotd_allocation_blocks_shown") == 2);
    ASSERT(sample(text, "slotd_allocation_remaining_units{event=\"area\",allocation=\"fans\"}") == 3);
    ASSERT(sample(text, "slotd_allocation_held_units{event=\"area\",allocation=\"fans\"}") == 2);
    ASSERT(sample(text, "slotd_allocation_remaining_units{event=\"area\",allocation=\"press\"}") == 1);
    ASSERT(sample(text, "slotd_allocation_held_units{event=\"area\",allocation=\"press\"}") == 0);
    ASSERT(!has_series(text, "slotd_allocation_remaining_units{event=\"venue\""));
    slot_client_close(c);
    slot_test_stop(&srv);
    promtool_check(text);
    free(text);
}

/*
 * The waiting rooms (docs/protocol.md, "Admission"): a room before its sale
 * opens is shown (its joins), a room whose sale opened shows admissions, open
 * grants and the last admission's wait; an event without a room has none.
 */
TEST_IMPL(metrics_waiting_rooms)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    slot_client *c = slot_test_dial(&srv);
    char line[300];
    snprintf(line, sizeof line,
             "{\"op\":\"create_event\",\"event\":\"later\",\"capacity\":10,\"admission\":\"queue\","
             "\"admit_per_s\":100,\"opens_at\":%llu}\n",
             (unsigned long long)(slot_test_now_ms() + 3600000));
    json_decref(call_json(c, line));
    snprintf(line, sizeof line,
             "{\"op\":\"create_event\",\"event\":\"now\",\"capacity\":3,\"admission\":\"queue\","
             "\"admit_per_s\":1000,\"opens_at\":%llu}\n",
             (unsigned long long)(slot_test_now_ms() + 200));
    json_decref(call_json(c, line));
    json_decref(call_json(c, "{\"op\":\"create_event\",\"event\":\"plain\",\"capacity\":3}\n"));
    for (int i = 0; i < 5; i++) {
        snprintf(line, sizeof line, "{\"op\":\"join\",\"event\":\"later\",\"user\":\"u%d\",\"request\":\"j\"}\n", i);
        json_decref(call_json(c, line));
        snprintf(line, sizeof line, "{\"op\":\"join\",\"event\":\"now\",\"user\":\"u%d\",\"request\":\"j\"}\n", i);
        json_decref(call_json(c, line));
    }
    char *text = NULL;
    for (int tries = 0; tries < 250; tries++) { /* admissions of "now": 3 (the stop rule: 3 units) */
        free(text);
        text = metrics_text(c);
        if (has_series(text, "slotd_room_admissions_total{event=\"now\"} 3"))
            break;
        usleep(20 * 1000);
    }
    ASSERT(sample(text, "slotd_rooms_shown") == 2);
    ASSERT(sample(text, "slotd_room_joins_total{event=\"later\"}") == 5);
    ASSERT(sample(text, "slotd_room_admissions_total{event=\"later\"}") == 0);
    ASSERT(sample(text, "slotd_room_waiting_entries{event=\"later\"}") == 5);
    ASSERT(!has_series(text, "slotd_room_last_wait_seconds{event=\"later\"}"));
    ASSERT(sample(text, "slotd_room_joins_total{event=\"now\"}") == 5);
    ASSERT(sample(text, "slotd_room_admissions_total{event=\"now\"}") == 3);
    ASSERT(sample(text, "slotd_room_waiting_entries{event=\"now\"}") == 2);
    ASSERT(sample(text, "slotd_room_open_grants{event=\"now\"}") == 3);
    ASSERT(sample(text, "slotd_room_last_wait_seconds{event=\"now\"}") > 0); /* joined before the opening */
    ASSERT(!has_series(text, "slotd_room_joins_total{event=\"plain\"}"));
    slot_client_close(c);
    slot_test_stop(&srv);
    promtool_check(text);
    free(text);
}

/* With tokens, metrics is an admin op like stats. */
TEST_IMPL(metrics_refused_to_a_frontend)
{
    char *dir = slot_test_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/tokens", dir);
    FILE *f = fopen(path, "w");
    ASSERT_NOT_NULL(f);
    fputs("frontend metrics-test-frontend-token\nadmin metrics-test-admin-token\n", f);
    ASSERT_EQ(fclose(f), 0);
    ASSERT_EQ(chmod(path, 0600), 0);
    const char *extra[] = {"--token-file", path, NULL};
    slot_test_server srv;
    slot_test_start(&srv, extra);
    slot_client *c = slot_test_dial(&srv);
    json_decref(call_json(c, "{\"op\":\"hello\",\"token\":\"metrics-test-frontend-token\"}\n"));
    json_t *v = call_json(c, "{\"op\":\"metrics\"}\n");
    ASSERT_STR_EQ(json_string_value(json_object_get(v, "error")), "forbidden");
    json_decref(v);
    slot_client_close(c);
    c = slot_test_dial(&srv);
    json_decref(call_json(c, "{\"op\":\"hello\",\"token\":\"metrics-test-admin-token\"}\n"));
    char *text = metrics_text(c);
    ASSERT(sample(text, "slotd_errors_total{code=\"forbidden\"}") == 1);
    free(text);
    slot_client_close(c);
    slot_test_stop(&srv);
    slot_test_rmdir(dir);
    free(dir);
}

/* Every slotd_ name in s (a rule's expression), without the histogram
 * suffixes, must be a family of text ("# TYPE NAME "). */
static void names_exist(const char *rules, const char *text)
{
    int checked = 0;
    for (const char *p = strstr(rules, "slotd_"); p; p = strstr(p, "slotd_")) {
        size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
        char name[128];
        ASSERT_LT(n, sizeof name);
        memcpy(name, p, n);
        name[n] = 0;
        p += n;
        static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
        for (size_t i = 0; i < 3; i++) {
            size_t k = strlen(suffixes[i]);
            if (n > k && strcmp(name + n - k, suffixes[i]) == 0) {
                name[n - k] = 0;
                break;
            }
        }
        char want[160];
        snprintf(want, sizeof want, "# TYPE %s ", name);
        if (!strstr(text, want))
            T_FAIL_("alerts.yml names %s, which slotd's metrics do not have", name);
        checked++;
    }
    ASSERT_GT(checked, 5);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        T_FAIL_("%s: %s", path, strerror(errno));
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strdup(buf);
}

/* The example scrape config and alert rules pass promtool's offline checks,
 * and every metric the rules use is one slotd serves. */
TEST_IMPL(metrics_examples_pass_promtool)
{
    const char *src = getenv("SLOT_SOURCE_ROOT");
    ASSERT_NOT_NULL(src);
    char cfg[600], rules[600];
    snprintf(cfg, sizeof cfg, "%s/examples/prometheus/prometheus.yml", src);
    snprintf(rules, sizeof rules, "%s/examples/prometheus/alerts.yml", src);
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    slot_client *c = slot_test_dial(&srv);
    char *text = metrics_text(c);
    slot_client_close(c);
    slot_test_stop(&srv);
    char *r = read_file(rules);
    names_exist(r, text);
    free(r);
    free(text);
    if (access(PROMTOOL, X_OK) != 0)
        SLOT_TEST_SKIP("%s is missing (Debian: prometheus)", PROMTOOL);
    /* check config reads the rule file it names relative to itself */
    ASSERT_EQ(run_cmd("%s check config %s >/dev/null", PROMTOOL, cfg), 0);
    ASSERT_EQ(run_cmd("%s check rules %s >/dev/null", PROMTOOL, rules), 0);
}
