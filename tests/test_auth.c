/*
 * test_auth.c — tokens and roles against a real slotd (docs/protocol.md, "hello"
 * and "Admin ops"): --token-file, hello first, frontend and admin roles, the
 * refusal to listen beyond loopback without tokens, and holds that only
 * their owner can see or change, named by ids nobody can guess.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "slot/client.h"
#include "slot_config.h"

TEST_DECLARE(auth_hello_must_come_first)
TEST_DECLARE(auth_nothing_runs_after_a_refused_hello)
TEST_DECLARE(auth_frontend_cannot_run_admin_ops)
TEST_DECLARE(auth_later_hello)
TEST_DECLARE(auth_pipelined_hellos_report_their_own_role)
TEST_DECLARE(auth_failed_hello_logged_without_token)
TEST_DECLARE(auth_token_file_readable_by_others_refused)
TEST_DECLARE(auth_token_file_malformed_lines_refused)
TEST_DECLARE(auth_non_loopback_without_tokens_refused)
TEST_DECLARE(auth_non_loopback_with_insecure_starts)
TEST_DECLARE(auth_host_name_is_a_usage_error)
TEST_DECLARE(auth_no_tokens_every_connection_admin)
TEST_DECLARE(auth_hold_of_another_user_is_unknown)
TEST_DECLARE(auth_hold_ids_not_guessable)

TEST_LIST_START
TEST_ENTRY(auth_hello_must_come_first)
TEST_ENTRY(auth_nothing_runs_after_a_refused_hello)
TEST_ENTRY(auth_frontend_cannot_run_admin_ops)
TEST_ENTRY(auth_later_hello)
TEST_ENTRY(auth_pipelined_hellos_report_their_own_role)
TEST_ENTRY(auth_failed_hello_logged_without_token)
TEST_ENTRY(auth_token_file_readable_by_others_refused)
TEST_ENTRY(auth_token_file_malformed_lines_refused)
TEST_ENTRY(auth_non_loopback_without_tokens_refused)
TEST_ENTRY(auth_non_loopback_with_insecure_starts)
TEST_ENTRY(auth_host_name_is_a_usage_error)
TEST_ENTRY(auth_no_tokens_every_connection_admin)
TEST_ENTRY(auth_hold_of_another_user_is_unknown)
TEST_ENTRY(auth_hold_ids_not_guessable)
TEST_LIST_END

#define TIMEOUT_MS 10000
#define FRONTEND_TOKEN "fe-7c1f0b9e2d4a6c8e"
#define ADMIN_TOKEN "ad-93e5a1f7c2b4d608"
#define WRONG_TOKEN "wrong-5d2e8a1c7f3b"

static slot_test_server srv;
static char *token_path;
static char *log_dir, *log_file; /* every case's server log (stderr), checked by stop() */

/* A token file with the given mode (the server checks it before reading). */
static char *token_file(const char *dir, mode_t mode)
{
    char *path = NULL;
    ASSERT(asprintf(&path, "%s/tokens", dir) > 0);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT(fd >= 0);
    static const char text[] = "# slotd tokens: ROLE TOKEN\n"
                               "frontend " FRONTEND_TOKEN "\n"
                               "\n"
                               "admin " ADMIN_TOKEN "\n";
    ASSERT_EQ(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    ASSERT_EQ(fchmod(fd, mode), 0);
    close(fd);
    return path;
}

/* slotd with tokens, logging at --log-level debug; its stderr (the log)
 * goes to log_path when given, else to a file of its own; stop() checks
 * that no token appears in it. */
static void start_with_tokens(const char *log_path)
{
    memset(&srv, 0, sizeof srv);
    char *dir = slot_test_tmpdir();
    token_path = token_file(dir, 0600);
    const char *extra[] = {"--token-file", token_path, "--log-level", "debug", NULL};
    if (!log_path) {
        log_dir = slot_test_tmpdir();
        ASSERT(asprintf(&log_file, "%s/slotd.log", log_dir) > 0);
        log_path = log_file;
    }
    int saved = -1;
    if (log_path) {
        /* The server inherits our stderr: point it at the log for the fork. */
        fflush(stderr);
        saved = dup(STDERR_FILENO);
        int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ASSERT(fd >= 0 && saved >= 0);
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
    slot_test_server_start(&srv, NULL, extra);
    if (saved >= 0) {
        dup2(saved, STDERR_FILENO);
        close(saved);
    }
    slot_test_rmdir(dir);
    free(dir);
}

/* The whole file as a heap string (the caller frees). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ASSERT(f != NULL);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    ASSERT(buf != NULL);
    size_t got;
    while ((got = fread(buf + n, 1, cap - 1 - n, f)) > 0) {
        n += got;
        if (n == cap - 1) {
            cap *= 2;
            buf = realloc(buf, cap);
            ASSERT(buf != NULL);
        }
    }
    fclose(f);
    buf[n] = 0;
    return buf;
}

/* No token, right or wrong, in any line of a log. */
static void assert_no_token_in(const char *path)
{
    char *text = slurp(path);
    ASSERT(strstr(text, "listening") != NULL); /* it is the server's log */
    static const char *const secrets[] = {FRONTEND_TOKEN, ADMIN_TOKEN, WRONG_TOKEN};
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++)
        if (strstr(text, secrets[i]))
            T_FAIL_("token %s in the log:\n%s", secrets[i], text);
    free(text);
}

static void stop(void)
{
    slot_test_stop(&srv);
    free(token_path);
    token_path = NULL;
    if (log_file) {
        assert_no_token_in(log_file);
        slot_test_rmdir(log_dir);
        free(log_dir);
        free(log_file);
        log_dir = log_file = NULL;
    }
}

static void send_line(slot_client *c, const char *line)
{
    ASSERT_EQ(slot_client_send_raw(c, line, strlen(line)), 0);
}

/* The next reply must be the error `code`. */
static void expect_error(slot_client *c, const char *code)
{
    slot_reply r;
    ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), 0);
    if (r.ok || strcmp(r.error, code) != 0)
        T_FAIL_("want error %s, got %s", code, r.line);
    slot_reply_clear(&r);
}

/* The server closed the connection: nothing more comes. */
static void expect_closed(slot_client *c)
{
    const char *line = NULL;
    long rc = slot_client_recv_line(c, &line, TIMEOUT_MS);
    if (rc >= 0)
        T_FAIL_("connection still open; got \"%s\"", line);
    ASSERT(rc == -ECONNRESET || rc == -EPIPE);
}

/* A first line that is not a valid hello: unauthenticated, then closed. */
static void expect_refused_first(const char *line)
{
    slot_client *c = slot_test_dial(&srv);
    send_line(c, line);
    expect_error(c, "unauthenticated");
    expect_closed(c);
    slot_client_close(c);
}

static slot_reply hello(slot_client *c, const char *token)
{
    slot_req q;
    slot_reply r;
    slot_req_init(&q, SLOT_OP_HELLO);
    ASSERT_EQ(slot_req_set_token(&q, token), 0);
    ASSERT_EQ(slot_client_call(c, &q, &r, TIMEOUT_MS), 0);
    return r;
}

static slot_client *dial_as(const char *token, const char *role)
{
    slot_client *c = slot_test_dial(&srv);
    slot_reply r = hello(c, token);
    if (!r.ok || strcmp(r.role, role) != 0)
        T_FAIL_("hello as %s: %s", role, r.line);
    slot_reply_clear(&r);
    return c;
}

static slot_reply call_line(slot_client *c, const char *line)
{
    slot_reply r;
    send_line(c, line);
    ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), 0);
    return r;
}

static void expect_ok_line(slot_client *c, const char *line)
{
    slot_reply r = call_line(c, line);
    if (!r.ok)
        T_FAIL_("%s -> %s", line, r.line);
    slot_reply_clear(&r);
}

/* ---- hello first */

TEST_IMPL(auth_hello_must_come_first)
{
    start_with_tokens(NULL);
    expect_refused_first("{\"op\":\"event\",\"event\":\"e\"}\n");
    expect_refused_first("{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1}\n");
    expect_refused_first("{\"op\":\"hello\",\"token\":\"" WRONG_TOKEN "\"}\n");
    expect_refused_first("{\"op\":\"hello\"}\n");
    expect_refused_first("{\"op\":\"hello\",\"token\":\"\"}\n");
    expect_refused_first("{not json\n");
    expect_refused_first("{\"op\":\"nope\"}\n");
    /* Tokens compare whole: a prefix, an extension or another case is wrong. */
    expect_refused_first("{\"op\":\"hello\",\"token\":\"" ADMIN_TOKEN "x\"}\n");
    expect_refused_first("{\"op\":\"hello\",\"token\":\"ad-93e5a1f7c2b4d60\"}\n");
    expect_refused_first("{\"op\":\"hello\",\"token\":\"AD-93E5A1F7C2B4D608\"}\n");
    expect_refused_first("   \n");                                             /* only spaces: bad_json */
    expect_refused_first("{\"op\":\"hold\",\"event\":\"e\",\"qty\":\"1\"}\n"); /* invalid_argument */
    /* The refusal echoes the request's id, like every reply. */
    slot_client *c = slot_test_dial(&srv);
    send_line(c, "{\"id\":77,\"op\":\"event\",\"event\":\"e\"}\n");
    slot_reply r;
    ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), 0);
    ASSERT_STR_EQ(r.error, "unauthenticated");
    ASSERT_EQ(r.id.kind, SLOT_ID_INT);
    ASSERT_EQ(r.id.i, 77);
    slot_reply_clear(&r);
    expect_closed(c);
    slot_client_close(c);
    /* An empty line is no request (no reply): hello still comes first. */
    c = slot_test_dial(&srv);
    send_line(c, "\n\r\n");
    r = hello(c, FRONTEND_TOKEN);
    ASSERT(r.ok);
    ASSERT_STR_EQ(r.role, "frontend");
    ASSERT_EQ(r.protocol, 1);
    ASSERT_STR_EQ(r.version, SLOT_VERSION);
    slot_reply_clear(&r);
    slot_client_close(c);
    c = dial_as(ADMIN_TOKEN, "admin");
    slot_client_close(c);
    stop();
}

/* Lines pipelined behind a refused first line are never run, even a valid
 * hello and an admin op (the connection is closed after the refusal). */
TEST_IMPL(auth_nothing_runs_after_a_refused_hello)
{
    start_with_tokens(NULL);
    slot_client *c = slot_test_dial(&srv);
    send_line(c, "{\"op\":\"hello\",\"token\":\"" WRONG_TOKEN "\"}\n"
                 "{\"op\":\"hello\",\"token\":\"" ADMIN_TOKEN "\"}\n"
                 "{\"op\":\"create_event\",\"event\":\"sneak\",\"capacity\":5}\n");
    expect_error(c, "unauthenticated");
    expect_closed(c);
    slot_client_close(c);
    c = dial_as(ADMIN_TOKEN, "admin");
    slot_reply r = call_line(c, "{\"op\":\"event\",\"event\":\"sneak\"}\n");
    if (r.ok || strcmp(r.error, "unknown_event") != 0)
        T_FAIL_("a create_event sent behind a refused hello ran: %s", r.line);
    slot_reply_clear(&r);
    slot_client_close(c);
    stop();
}

/* ---- roles */

static const char *const admin_lines[] = {
    "{\"op\":\"create_event\",\"event\":\"fe-made\",\"capacity\":5}\n",
    "{\"op\":\"set_capacity\",\"event\":\"roles\",\"capacity\":50}\n",
    "{\"op\":\"reshard\",\"event\":\"roles\",\"shards\":2}\n",
    "{\"op\":\"set_status\",\"event\":\"roles\",\"status\":\"closed\"}\n",
    "{\"op\":\"cancel\",\"event\":\"roles\",\"hold\":\"00000000000000010000000000000000\"}\n",
    "{\"op\":\"shards\",\"event\":\"roles\"}\n",
    "{\"op\":\"check\"}\n",
    "{\"op\":\"expire\"}\n",
    "{\"op\":\"stats\"}\n",
};

TEST_IMPL(auth_frontend_cannot_run_admin_ops)
{
    start_with_tokens(NULL);
    slot_client *admin = dial_as(ADMIN_TOKEN, "admin");
    expect_ok_line(admin, "{\"op\":\"create_event\",\"event\":\"roles\",\"capacity\":10,\"shards\":4}\n");
    slot_client *fe = dial_as(FRONTEND_TOKEN, "frontend");
    for (size_t i = 0; i < sizeof admin_lines / sizeof admin_lines[0]; i++) {
        send_line(fe, admin_lines[i]);
        expect_error(fe, "forbidden"); /* and the connection stays open */
    }
    /* Nothing of it happened. */
    slot_reply r = call_line(admin, "{\"op\":\"event\",\"event\":\"roles\"}\n");
    ASSERT(r.ok);
    ASSERT_EQ(r.capacity, 10);
    ASSERT_EQ(r.shards, 4);
    ASSERT_STR_EQ(r.status, "on_sale");
    slot_reply_clear(&r);
    r = call_line(admin, "{\"op\":\"event\",\"event\":\"fe-made\"}\n");
    ASSERT_STR_EQ(r.error, "unknown_event");
    slot_reply_clear(&r);
    /* The frontend ops work for the frontend. */
    r = call_line(fe, "{\"op\":\"hold\",\"event\":\"roles\",\"user\":\"u\",\"request\":\"r\",\"qty\":2}\n");
    ASSERT(r.ok);
    ASSERT_STR_EQ(r.status, "held");
    char line[256];
    snprintf(line, sizeof line, "{\"op\":\"confirm\",\"event\":\"roles\",\"user\":\"u\",\"hold\":\"%s\"}\n", r.hold);
    slot_reply_clear(&r);
    expect_ok_line(fe, line);
    expect_ok_line(fe, "{\"op\":\"event\",\"event\":\"roles\"}\n");
    /* An admin may run every op, frontend ones too. */
    for (size_t i = 1; i < sizeof admin_lines / sizeof admin_lines[0]; i++) {
        r = call_line(admin, admin_lines[i]);
        if (!r.ok && strcmp(r.error, "unknown_hold") != 0)
            T_FAIL_("admin: %s -> %s", admin_lines[i], r.line);
        slot_reply_clear(&r);
    }
    slot_client_close(fe);
    slot_client_close(admin);
    stop();
}

/* A later hello re-authenticates; a later one with a wrong token closes. */
TEST_IMPL(auth_later_hello)
{
    start_with_tokens(NULL);
    slot_client *c = dial_as(FRONTEND_TOKEN, "frontend");
    send_line(c, "{\"op\":\"check\"}\n");
    expect_error(c, "forbidden");
    slot_reply r = hello(c, ADMIN_TOKEN);
    ASSERT(r.ok);
    ASSERT_STR_EQ(r.role, "admin");
    slot_reply_clear(&r);
    expect_ok_line(c, "{\"op\":\"check\"}\n");
    r = hello(c, FRONTEND_TOKEN);
    ASSERT_STR_EQ(r.role, "frontend");
    slot_reply_clear(&r);
    send_line(c, "{\"op\":\"check\"}\n");
    expect_error(c, "forbidden");
    /* Wrong token later: unauthenticated, closed, and what was pipelined
     * behind it does not run. */
    send_line(c, "{\"op\":\"hello\",\"token\":\"" WRONG_TOKEN "\"}\n"
                 "{\"op\":\"event\",\"event\":\"x\"}\n");
    expect_error(c, "unauthenticated");
    expect_closed(c);
    slot_client_close(c);
    stop();
}

/* Regression (found by trial): hello's reply showed the connection's role at
 * the time it was encoded, so a hello pipelined behind another reported the
 * later one's role ("frontend" for an admin token, or "none"). */
TEST_IMPL(auth_pipelined_hellos_report_their_own_role)
{
    start_with_tokens(NULL);
    slot_client *c = slot_test_dial(&srv);
    send_line(c, "{\"op\":\"hello\",\"token\":\"" ADMIN_TOKEN "\"}\n"
                 "{\"op\":\"hello\",\"token\":\"" FRONTEND_TOKEN "\"}\n"
                 "{\"op\":\"hello\",\"token\":\"" ADMIN_TOKEN "\"}\n"
                 "{\"op\":\"hello\",\"token\":\"" WRONG_TOKEN "\"}\n");
    static const char *const want[] = {"admin", "frontend", "admin"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        slot_reply r;
        ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), 0);
        ASSERT(r.ok);
        ASSERT_STR_EQ(r.role, want[i]);
        slot_reply_clear(&r);
    }
    expect_error(c, "unauthenticated");
    expect_closed(c);
    slot_client_close(c);
    stop();
}

static bool file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    ASSERT(f != NULL);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, needle) != NULL;
}

/* A failed hello is logged, without the token that was tried. */
TEST_IMPL(auth_failed_hello_logged_without_token)
{
    char *dir = slot_test_tmpdir();
    char *log = NULL;
    ASSERT(asprintf(&log, "%s/slotd.log", dir) > 0);
    start_with_tokens(log);
    expect_refused_first("{\"op\":\"hello\",\"token\":\"" WRONG_TOKEN "\"}\n");
    slot_client *c = dial_as(ADMIN_TOKEN, "admin"); /* a round trip after the failure: it is logged by now */
    slot_client_close(c);
    stop();
    assert_no_token_in(log);
    ASSERT(file_has(log, "hello"));
    ASSERT(!file_has(log, WRONG_TOKEN));
    ASSERT(!file_has(log, ADMIN_TOKEN));
    ASSERT(!file_has(log, FRONTEND_TOKEN));
    slot_test_rmdir(dir);
    free(dir);
    free(log);
}

/* ---- refusals to start */

TEST_IMPL(auth_token_file_readable_by_others_refused)
{
    char *dir = slot_test_tmpdir();
    char data[512], err[1024];
    snprintf(data, sizeof data, "%s/data", dir);
    static const mode_t modes[] = {0640, 0604, 0660, 0644};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        char *path = token_file(dir, modes[i]);
        const char *args[] = {"--listen", "127.0.0.1:0", "--data", data, "--token-file", path, NULL};
        ASSERT_NE(slot_test_run_refused(args, err, sizeof err), 0);
        if (!strstr(err, "token-file"))
            T_FAIL_("mode %03o: no message naming --token-file: \"%s\"", (unsigned)modes[i], err);
        ASSERT(strstr(err, FRONTEND_TOKEN) == NULL);
        free(path);
    }
    slot_test_rmdir(dir);
    free(dir);
}

/* Lines that are not exactly "ROLE TOKEN" are refused, not read in part
 * (found by tests/fuzz/fuzz_config): a pass phrase used to become its first
 * word, the tail of a long comment a token line of its own, and a token
 * line cut at a NUL byte its prefix. */
TEST_IMPL(auth_token_file_malformed_lines_refused)
{
    char *dir = slot_test_tmpdir();
    char data[512], path[600], err[1024], comment[400];
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(path, sizeof path, "%s/tokens", dir);
    memset(comment, 'x', sizeof comment);
    comment[0] = '#';
    /* 319 bytes of comment, then what fgets would have read as the next line */
    memcpy(comment + SLOT_TOKEN_LINE_BYTES_MAX, " admin tail-token\n", 19);
    static const char phrase[] = "admin correct horse battery\n";
    static const char nul[] = "admin " ADMIN_TOKEN "\0x\n";
    const struct {
        const char *what, *text;
        size_t len;
    } files[] = {
        {"a token of several words", phrase, sizeof phrase - 1},
        {"a comment longer than a line", comment, SLOT_TOKEN_LINE_BYTES_MAX + 18},
        {"a NUL byte in a token line", nul, sizeof nul - 1},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ASSERT(fd >= 0);
        ASSERT_EQ(write(fd, files[i].text, files[i].len), (ssize_t)files[i].len);
        close(fd);
        const char *args[] = {"--listen", "127.0.0.1:0", "--data", data, "--token-file", path, NULL};
        if (slot_test_run_refused(args, err, sizeof err) == 0)
            T_FAIL_("%s: slotd started", files[i].what);
        if (!strstr(err, "token-file"))
            T_FAIL_("%s: no message naming --token-file: \"%s\"", files[i].what, err);
        ASSERT(strstr(err, "horse") == NULL && strstr(err, "tail-token") == NULL);
    }
    slot_test_rmdir(dir);
    free(dir);
}

/* Without a token file, a non-loopback address (--listen or --http) needs
 * --insecure: a usage error, exit 64 (EX_USAGE), before anything starts. */
TEST_IMPL(auth_non_loopback_without_tokens_refused)
{
    char *dir = slot_test_tmpdir();
    char err[1024];
    static const struct {
        const char *flag, *addr;
    } cases[] = {{"--listen", "0.0.0.0:0"}, {"--listen", "[::]:0"}, {"--http", "0.0.0.0:0"}, {"--http", "[::]:0"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {"--listen", "127.0.0.1:0", cases[i].flag, cases[i].addr, "--data", dir, NULL};
        ASSERT_EQ(slot_test_run_refused(args, err, sizeof err), 64);
        if (!strstr(err, "--insecure") || !strstr(err, "--token-file") || !strstr(err, cases[i].flag))
            T_FAIL_("%s %s: the message should name the flag, --token-file and --insecure: \"%s\"", cases[i].flag,
                    cases[i].addr, err);
    }
    slot_test_rmdir(dir);
    free(dir);
}

/* A host name where an address belongs (--listen localhost:7420) is a usage
 * error that says so, with or without --insecure: not "non-loopback". */
TEST_IMPL(auth_host_name_is_a_usage_error)
{
    char *dir = slot_test_tmpdir();
    char err[1024];
    static const char *cases[][6] = {{"--listen", "localhost:0", NULL},
                                     {"--listen", "localhost:0", "--insecure", NULL},
                                     {"--listen", "127.0.0.1:0", "--http", "localhost:0", NULL}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[8];
        size_t n = 0;
        for (size_t k = 0; cases[i][k]; k++)
            args[n++] = cases[i][k];
        args[n++] = "--data";
        args[n++] = dir;
        args[n] = NULL;
        ASSERT_EQ(slot_test_run_refused(args, err, sizeof err), 64);
        if (!strstr(err, "numeric") || strstr(err, "non-loopback"))
            T_FAIL_("case %zu: the message should say the host must be numeric: \"%s\"", i, err);
    }
    slot_test_rmdir(dir);
    free(dir);
}

/* With --insecure it starts (and is stopped at once: no traffic). */
TEST_IMPL(auth_non_loopback_with_insecure_starts)
{
    const char *extra[] = {"--listen", "0.0.0.0:0", "--insecure", NULL};
    memset(&srv, 0, sizeof srv);
    slot_test_server_start(&srv, NULL, extra);
    ASSERT_GT(srv.port, 0);
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    slot_test_server_free(&srv);
}

/* Development mode (no tokens, loopback): hello optional, any token, admin. */
TEST_IMPL(auth_no_tokens_every_connection_admin)
{
    memset(&srv, 0, sizeof srv);
    slot_test_server_start(&srv, NULL, NULL);
    slot_client *c = slot_test_dial(&srv);
    expect_ok_line(c, "{\"op\":\"check\"}\n");
    slot_reply r = hello(c, "anything");
    ASSERT(r.ok);
    ASSERT_STR_EQ(r.role, "admin");
    slot_reply_clear(&r);
    slot_client_close(c);
    c = dial_as(WRONG_TOKEN, "admin");
    slot_client_close(c);
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    slot_test_server_free(&srv);
}

/* ---- holds belong to their user; ids cannot be guessed */

static slot_reply on_hold_as(slot_client *c, const char *op, const char *hold, const char *user)
{
    char line[512];
    snprintf(line, sizeof line, "{\"op\":\"%s\",\"event\":\"own\",\"hold\":\"%s\",\"user\":\"%s\"}\n", op, hold, user);
    return call_line(c, line);
}

/* The message with the hold id taken out: an unknown_hold about another
 * user's hold must read like one about no hold at all. */
static void message_without(const char *msg, const char *id, char *out, size_t cap)
{
    const char *at = strstr(msg, id);
    if (!at)
        snprintf(out, cap, "%s", msg);
    else
        snprintf(out, cap, "%.*s<id>%s", (int)(at - msg), msg, at + strlen(id));
}

static void expect_unknown_hold(slot_client *c, const char *op, const char *hold, const char *user,
                                const char *like_msg)
{
    slot_reply r = on_hold_as(c, op, hold, user);
    if (r.ok || strcmp(r.error, "unknown_hold") != 0)
        T_FAIL_("%s of %s as %s: %s", op, hold, user, r.line);
    ASSERT(r.status[0] == 0); /* nothing about the hold is told */
    if (like_msg) {
        char a[512];
        message_without(r.message, hold, a, sizeof a);
        if (strcmp(a, like_msg) != 0)
            T_FAIL_("unknown_hold messages differ: \"%s\" vs \"%s\"", a, like_msg);
    }
    slot_reply_clear(&r);
}

TEST_IMPL(auth_hold_of_another_user_is_unknown)
{
    start_with_tokens(NULL);
    slot_client *admin = dial_as(ADMIN_TOKEN, "admin");
    expect_ok_line(admin, "{\"op\":\"create_event\",\"event\":\"own\",\"capacity\":10}\n");
    slot_client *fe = dial_as(FRONTEND_TOKEN, "frontend");
    slot_reply h = call_line(fe,
                             "{\"op\":\"hold\",\"event\":\"own\",\"user\":\"alice\",\"request\":\"r1\",\"qty\":3}\n");
    ASSERT(h.ok);
    ASSERT_STR_EQ(h.status, "held");
    /* How unknown_hold reads for a hold that does not exist. */
    char none[SLOT_HOLD_ID_BYTES + 1], like[512];
    ASSERT_EQ(strlen(h.hold), SLOT_HOLD_ID_BYTES);
    memcpy(none, h.hold, sizeof none);
    none[SLOT_HOLD_ID_BYTES - 1] = none[SLOT_HOLD_ID_BYTES - 1] == '0' ? '1' : '0';
    slot_reply r = on_hold_as(fe, "get_hold", none, "alice");
    ASSERT_STR_EQ(r.error, "unknown_hold");
    message_without(r.message, none, like, sizeof like);
    slot_reply_clear(&r);
    static const char *const ops[] = {"get_hold", "confirm", "release"};
    static const char *const others[] = {"bob", "Alice", "alice ", "alic"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        for (size_t k = 0; k < sizeof others / sizeof others[0]; k++)
            expect_unknown_hold(fe, ops[i], h.hold, others[k], like);
    /* Leaving the user out is no way around it. */
    static const char *const no_user[] = {"get_hold", "confirm", "release"};
    for (size_t i = 0; i < sizeof no_user / sizeof no_user[0]; i++) {
        char line[256];
        snprintf(line, sizeof line, "{\"op\":\"%s\",\"event\":\"own\",\"hold\":\"%s\"}\n", no_user[i], h.hold);
        r = call_line(fe, line);
        if (r.ok)
            T_FAIL_("%s without a user: %s", no_user[i], r.line);
        slot_reply_clear(&r);
    }
    /* Nothing changed: alice's hold is held, the units still held. */
    r = on_hold_as(fe, "get_hold", h.hold, "alice");
    ASSERT(r.ok);
    ASSERT_STR_EQ(r.status, "held");
    ASSERT_STR_EQ(r.user, "alice");
    slot_reply_clear(&r);
    r = call_line(fe, "{\"op\":\"event\",\"event\":\"own\"}\n");
    ASSERT_EQ(r.held, 3);
    ASSERT_EQ(r.available, 7);
    slot_reply_clear(&r);
    /* And her own release works. */
    r = on_hold_as(fe, "release", h.hold, "alice");
    ASSERT(r.ok && r.released);
    slot_reply_clear(&r);
    slot_reply_clear(&h);
    slot_client_close(fe);
    slot_client_close(admin);
    stop();
}

#define ID_HOLDS 256

static uint64_t tag_of(const char *id)
{
    uint64_t v = 0;
    ASSERT_EQ(strlen(id), SLOT_HOLD_ID_BYTES);
    for (int i = 16; i < SLOT_HOLD_ID_BYTES; i++) {
        char ch = id[i];
        ASSERT((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'));
        v = (v << 4) | (uint64_t)(ch <= '9' ? ch - '0' : ch - 'a' + 10);
    }
    return v;
}

/* Hold ids are a sequence number and 64 random bits: the random parts of
 * holds made one after another look unrelated, and an id one hex digit away
 * from a real one names nothing. */
TEST_IMPL(auth_hold_ids_not_guessable)
{
    start_with_tokens(NULL);
    slot_client *admin = dial_as(ADMIN_TOKEN, "admin");
    expect_ok_line(admin, "{\"op\":\"create_event\",\"event\":\"own\",\"capacity\":1000}\n");
    slot_client *fe = dial_as(FRONTEND_TOKEN, "frontend");
    static char ids[ID_HOLDS][SLOT_HOLD_ID_BYTES + 1];
    uint64_t tags[ID_HOLDS], ones = 0;
    for (int i = 0; i < ID_HOLDS; i++) {
        char line[256];
        snprintf(line, sizeof line,
                 "{\"op\":\"hold\",\"event\":\"own\",\"user\":\"u%d\",\"request\":\"r\",\"qty\":1}\n", i);
        slot_reply r = call_line(fe, line);
        ASSERT(r.ok);
        ASSERT_EQ(strlen(r.hold), SLOT_HOLD_ID_BYTES);
        memcpy(ids[i], r.hold, SLOT_HOLD_ID_BYTES + 1);
        tags[i] = tag_of(ids[i]);
        ones += (uint64_t)__builtin_popcountll(tags[i]);
        slot_reply_clear(&r);
    }
    for (int i = 1; i < ID_HOLDS; i++) {
        /* Two random 64-bit words differ in 32 bits on average; fewer than 8
         * happens with probability below 1e-10. */
        if (__builtin_popcountll(tags[i] ^ tags[i - 1]) < 8)
            T_FAIL_("random parts of consecutive ids too alike: %s %s", ids[i - 1], ids[i]);
        for (int k = 0; k < i; k++)
            ASSERT_NE(tags[i], tags[k]);
    }
    ASSERT_GT(ones, ID_HOLDS * 64 * 45 / 100); /* about half the bits set: 64 bits of entropy, not a counter */
    ASSERT_LT(ones, ID_HOLDS * 64 * 55 / 100);
    /* Every single-digit change of a real id: unknown_hold, for its owner too. */
    static const char *const ops[] = {"get_hold", "confirm", "release"};
    for (int pos = 0; pos < SLOT_HOLD_ID_BYTES; pos++) {
        char id[SLOT_HOLD_ID_BYTES + 1];
        memcpy(id, ids[7], sizeof id);
        id[pos] = id[pos] == 'f' ? '0' : id[pos] == '9' ? 'a' : (char)(id[pos] + 1);
        expect_unknown_hold(fe, ops[pos % 3], id, "u7", NULL);
    }
    slot_reply r = on_hold_as(fe, "get_hold", ids[7], "u7");
    ASSERT(r.ok);
    ASSERT_STR_EQ(r.status, "held");
    slot_reply_clear(&r);
    slot_client_close(fe);
    slot_client_close(admin);
    stop();
}
