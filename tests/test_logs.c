/*
 * test_logs.c — slotd's log lines (docs/operations.md, "Logs") from a real
 * server run: start, a failed hello, clients dropped (a line too long, the
 * idle timeout), stop. With --log-format json every line is one JSON object
 * with ts, level and msg; with text every line starts "TIME slotd LEVEL: ";
 * --log-level error leaves the info lines out; no token in any line.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

TEST_DECLARE(logs_json_every_line_parses)
TEST_DECLARE(logs_text_lines_have_time_and_level)
TEST_DECLARE(logs_level_error_leaves_info_out)
TEST_DECLARE(logs_bad_flags_refused)
TEST_DECLARE(logs_format_from_the_config_file)

TEST_LIST_START
TEST_ENTRY(logs_json_every_line_parses)
TEST_ENTRY(logs_text_lines_have_time_and_level)
TEST_ENTRY(logs_level_error_leaves_info_out)
TEST_ENTRY(logs_bad_flags_refused)
TEST_ENTRY(logs_format_from_the_config_file)
TEST_LIST_END

#define TIMEOUT_MS 10000
#define ADMIN_TOKEN "logs-admin-4b1d9e7a2c"
#define WRONG_TOKEN "logs-wrong-8f3a6c0d5e"

typedef struct run {
    char *dir, *log;
    slot_test_server srv;
} run;

/* slotd with a token file and `flags` (NULL-ended, at most 8), its stderr
 * into r->log. */
static void run_start(run *r, const char *const *flags)
{
    r->dir = slot_test_tmpdir();
    char tokens[600];
    snprintf(tokens, sizeof tokens, "%s/tokens", r->dir);
    FILE *f = fopen(tokens, "w");
    ASSERT(f != NULL);
    fputs("admin " ADMIN_TOKEN "\n", f);
    ASSERT_EQ(fclose(f), 0);
    ASSERT_EQ(chmod(tokens, 0600), 0);
    ASSERT(asprintf(&r->log, "%s/slotd.log", r->dir) > 0);
    const char *extra[16] = {"--token-file",      tokens, "--max-line",          "1024",
                             "--idle-timeout-ms", "200",  "--sweep-interval-ms", "50"};
    size_t n = 8;
    for (size_t i = 0; flags && flags[i]; i++) {
        ASSERT_LT(n, 15);
        extra[n++] = flags[i];
    }
    extra[n] = NULL;
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    int fd = open(r->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT(fd >= 0 && saved >= 0);
    dup2(fd, STDERR_FILENO);
    close(fd);
    memset(&r->srv, 0, sizeof r->srv);
    slot_test_server_start(&r->srv, NULL, extra);
    dup2(saved, STDERR_FILENO);
    close(saved);
}

static void send_line(slot_client *c, const char *line, size_t len)
{
    ASSERT_EQ(slot_client_send_raw(c, line, len), 0);
}

/* The connection ends: the server closed it (after an answer or not). */
static void expect_closed(slot_client *c)
{
    const char *line = NULL;
    long rc;
    while ((rc = slot_client_recv_line(c, &line, TIMEOUT_MS)) >= 0) {
    }
    ASSERT(rc == -ECONNRESET || rc == -EPIPE);
}

/* Traffic that makes a line of each kind: a failed hello (wrong token), a
 * line over --max-line, a client left idle past --idle-timeout-ms. */
static void traffic(run *r)
{
    slot_client *c = slot_test_dial(&r->srv);
    static const char hello[] = "{\"op\":\"hello\",\"token\":\"" WRONG_TOKEN "\"}\n";
    send_line(c, hello, sizeof hello - 1);
    expect_closed(c);
    slot_client_close(c);

    c = slot_test_dial(&r->srv);
    static const char ok[] = "{\"op\":\"hello\",\"token\":\"" ADMIN_TOKEN "\"}\n";
    send_line(c, ok, sizeof ok - 1);
    char big[2048];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\n';
    send_line(c, big, sizeof big);
    expect_closed(c);
    slot_client_close(c);

    c = slot_test_dial(&r->srv);
    send_line(c, ok, sizeof ok - 1);
    expect_closed(c); /* the idle timeout */
    slot_client_close(c);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ASSERT(f != NULL);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strdup(buf);
}

static void run_stop(run *r, char **text)
{
    slot_test_stop(&r->srv);
    *text = slurp(r->log);
    if (strstr(*text, ADMIN_TOKEN) || strstr(*text, WRONG_TOKEN))
        T_FAIL_("a token in the log:\n%s", *text);
    slot_test_rmdir(r->dir);
    free(r->dir);
    free(r->log);
}

/* Every line is a JSON object with ts (RFC 3339 UTC), level and msg; the
 * run's events are all there, with their fields. */
TEST_IMPL(logs_json_every_line_parses)
{
    run r;
    const char *flags[] = {"--log-format", "json", NULL};
    run_start(&r, flags);
    traffic(&r);
    char *text;
    run_stop(&r, &text);
    static const char *const want[] = {"starting",         "listening", "failed hello (token not shown)",
                                       "dropped a client", "stopping",  "stopped"};
    bool seen[6] = {false};
    bool dropped_long = false, dropped_idle = false;
    int lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t e;
        json_t *o = json_loads(line, 0, &e);
        if (!json_is_object(o))
            T_FAIL_("not a JSON object: %s", line);
        const char *ts = json_string_value(json_object_get(o, "ts"));
        const char *level = json_string_value(json_object_get(o, "level"));
        const char *msg = json_string_value(json_object_get(o, "msg"));
        if (!ts || !level || !msg)
            T_FAIL_("ts, level or msg missing: %s", line);
        ASSERT_EQ(strlen(ts), 24);
        ASSERT(ts[10] == 'T' && ts[23] == 'Z');
        ASSERT(strcmp(level, "error") == 0 || strcmp(level, "warn") == 0 || strcmp(level, "info") == 0 ||
               strcmp(level, "debug") == 0);
        for (size_t i = 0; i < 6; i++)
            seen[i] |= strcmp(msg, want[i]) == 0;
        const char *reason = json_string_value(json_object_get(o, "reason"));
        if (strcmp(msg, "dropped a client") == 0) {
            ASSERT_STR_EQ(level, "warn");
            ASSERT(json_string_value(json_object_get(o, "peer")) != NULL);
            ASSERT(reason != NULL);
            dropped_long |= strcmp(reason, "line_too_long") == 0;
            dropped_idle |= strcmp(reason, "idle_timeout") == 0;
        }
        if (strcmp(msg, "listening") == 0)
            ASSERT(strstr(json_string_value(json_object_get(o, "addr")), "127.0.0.1:") != NULL);
        json_decref(o);
        lines++;
    }
    for (size_t i = 0; i < 6; i++)
        if (!seen[i])
            T_FAIL_("no line \"%s\" in the log", want[i]);
    ASSERT(dropped_long);
    ASSERT(dropped_idle);
    ASSERT_GE(lines, 7);
    free(text);
}

/* Text: "2026-12-01T12:00:00.123Z slotd LEVEL: MESSAGE key=value ...". */
TEST_IMPL(logs_text_lines_have_time_and_level)
{
    run r;
    run_start(&r, NULL);
    traffic(&r);
    char *text;
    run_stop(&r, &text);
    if (!strstr(text, "dropped a client") || !strstr(text, "reason=line_too_long") ||
        !strstr(text, "reason=idle_timeout") || !strstr(text, "failed hello"))
        T_FAIL_("a dropped client or the failed hello is missing:\n%s", text);
    int lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        ASSERT(strlen(line) > 32);
        if (line[10] != 'T' || line[23] != 'Z' || strncmp(line + 24, " slotd ", 7) != 0)
            T_FAIL_("not \"TIME slotd LEVEL: ...\": %s", line);
        const char *level = line + 31;
        ASSERT(strncmp(level, "error: ", 7) == 0 || strncmp(level, "warn: ", 6) == 0 ||
               strncmp(level, "info: ", 6) == 0 || strncmp(level, "debug: ", 7) == 0);
        lines++;
    }
    ASSERT_GE(lines, 7);
    free(text);
}

/* --log-level error: a clean run writes nothing at all. */
TEST_IMPL(logs_level_error_leaves_info_out)
{
    run r;
    const char *flags[] = {"--log-level", "error", NULL};
    run_start(&r, flags);
    traffic(&r);
    char *text;
    run_stop(&r, &text);
    if (text[0])
        T_FAIL_("lines below error were written:\n%s", text);
    free(text);
}

TEST_IMPL(logs_bad_flags_refused)
{
    char err[1024];
    static const char *const bad[][2] = {{"--log-format", "xml"},
                                         {"--log-level", "verbose"},
                                         {"--slow-commit-ms", "-1"},
                                         {"--slow-commit-ms", "3600001"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *args[] = {"--listen", "127.0.0.1:0", bad[i][0], bad[i][1], NULL};
        ASSERT_EQ(slot_test_run_refused(args, err, sizeof err), 64);
        if (!strstr(err, bad[i][0]))
            T_FAIL_("%s %s: the message should name the flag: \"%s\"", bad[i][0], bad[i][1], err);
    }
}

/* --config: log-format and log-level are settings like the others. */
TEST_IMPL(logs_format_from_the_config_file)
{
    char *dir = slot_test_tmpdir();
    char conf[600];
    snprintf(conf, sizeof conf, "%s/slotd.conf", dir);
    FILE *f = fopen(conf, "w");
    ASSERT(f != NULL);
    fputs("log-format = json\nlog-level = debug\nslow-commit-ms = 250\n", f);
    ASSERT_EQ(fclose(f), 0);
    run r;
    const char *flags[] = {"--config", conf, NULL};
    run_start(&r, flags);
    slot_client *c = slot_test_dial(&r.srv); /* a debug line: accepted a client */
    static const char ok[] = "{\"op\":\"hello\",\"token\":\"" ADMIN_TOKEN "\"}\n";
    send_line(c, ok, sizeof ok - 1);
    const char *reply = NULL;
    ASSERT(slot_client_recv_line(c, &reply, TIMEOUT_MS) > 0); /* accepted by now */
    slot_client_close(c);
    char *text;
    run_stop(&r, &text);
    ASSERT(strstr(text, "\"msg\":\"accepted a client\"") != NULL);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t e;
        json_t *o = json_loads(line, 0, &e);
        if (!json_is_object(o))
            T_FAIL_("not a JSON object: %s", line);
        json_decref(o);
    }
    free(text);
    slot_test_rmdir(dir);
    free(dir);
}
