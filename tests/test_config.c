/*
 * test_config.c — slotd --config FILE against the real daemon
 * (docs/operations.md, "The config file"): settings in the file take effect,
 * comments, blank lines and quotes are read as documented, the command line
 * wins over the file, and every malformed file is a usage error (exit 64)
 * that names the file and the line.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "slot/client.h"

TEST_DECLARE(config_settings_take_effect)
TEST_DECLARE(config_command_line_wins)
TEST_DECLARE(config_comments_blank_lines_quotes)
TEST_DECLARE(config_boolean_last_line_counts)
TEST_DECLARE(config_errors_name_file_and_line)
TEST_DECLARE(config_unreadable_file_is_usage_error)
TEST_DECLARE(config_cluster_flags)

TEST_LIST_START
TEST_ENTRY(config_settings_take_effect)
TEST_ENTRY(config_command_line_wins)
TEST_ENTRY(config_comments_blank_lines_quotes)
TEST_ENTRY(config_boolean_last_line_counts)
TEST_ENTRY(config_errors_name_file_and_line)
TEST_ENTRY(config_unreadable_file_is_usage_error)
TEST_ENTRY(config_cluster_flags)
TEST_LIST_END

#define TIMEOUT_MS 10000

static slot_test_server srv;

/* Writes text to DIR/name; returns the heap path. */
static char *write_file(const char *dir, const char *name, const char *text)
{
    char *path = NULL;
    ASSERT(asprintf(&path, "%s/%s", dir, name) > 0);
    FILE *f = fopen(path, "w");
    ASSERT_NOT_NULL(f);
    ASSERT_EQ(fputs(text, f) >= 0, 1);
    ASSERT_EQ(fclose(f), 0);
    return path;
}

static bool file_exists(const char *dir, const char *name)
{
    char *path = NULL;
    struct stat st;
    ASSERT(asprintf(&path, "%s/%s", dir, name) > 0);
    bool found = stat(path, &st) == 0;
    free(path);
    return found;
}

/* Sends `{"op":"check"` padded with spaces to total_bytes (with its newline)
 * and reads the reply: true when the server answered line_too_long. */
static bool line_too_long(const slot_test_server *s, size_t total_bytes)
{
    char *line = malloc(total_bytes);
    ASSERT_NOT_NULL(line);
    static const char head[] = "{\"op\":\"check\"";
    memset(line, ' ', total_bytes);
    memcpy(line, head, sizeof head - 1);
    line[total_bytes - 2] = '}';
    line[total_bytes - 1] = '\n';
    slot_client *c = slot_test_dial(s);
    ASSERT_EQ(slot_client_send_raw(c, line, total_bytes), 0);
    slot_reply r;
    ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), 0);
    bool too_long = !r.ok && strcmp(r.error, "line_too_long") == 0;
    if (!too_long && !r.ok)
        T_FAIL_("a %zu-byte check line: unexpected error %s", total_bytes, r.error);
    slot_reply_clear(&r);
    slot_client_close(c);
    free(line);
    return too_long;
}

/* Settings the command line does not give: max-line from the file bounds lines. */
TEST_IMPL(config_settings_take_effect)
{
    char *dir = slot_test_tmpdir();
    char *conf = write_file(dir, "slotd.conf", "max-line = 1024\nmax-connections = 1K\n");
    const char *extra[] = {"--config", conf, NULL};
    memset(&srv, 0, sizeof srv);
    slot_test_server_start(&srv, NULL, extra);
    ASSERT(line_too_long(&srv, 2048));
    ASSERT(!line_too_long(&srv, 1000));
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    slot_test_server_free(&srv);
    slot_test_rmdir(dir);
    free(conf);
    free(dir);
}

/* The same settings on the command line win, before or after --config; the
 * file's --data loses to the command line's (the harness passes --data). */
TEST_IMPL(config_command_line_wins)
{
    char *dir = slot_test_tmpdir();
    char text[1024];
    snprintf(text, sizeof text, "data = %s/from-file\nmax-line = 1024\n", dir);
    char *conf = write_file(dir, "slotd.conf", text);
    const char *after[] = {"--config", conf, "--max-line", "4096", NULL};
    const char *before[] = {"--max-line", "4096", "--config", conf, NULL};
    const char *const *orders[] = {after, before};
    for (size_t i = 0; i < 2; i++) {
        memset(&srv, 0, sizeof srv);
        slot_test_server_start(&srv, NULL, orders[i]);
        ASSERT(!line_too_long(&srv, 2048));
        ASSERT(line_too_long(&srv, 8192));
        ASSERT(file_exists(srv.dir, "slotd.lock"));
        ASSERT(!file_exists(dir, "from-file"));
        ASSERT_EQ(slot_test_server_stop(&srv), 0);
        slot_test_server_free(&srv);
    }
    slot_test_rmdir(dir);
    free(conf);
    free(dir);
}

/* Comments (whole lines and after a blank), blank lines, CRLF, quoted values
 * with '#' and spaces, blanks around '='; the folder named by the file is
 * the one used when the command line names none. */
TEST_IMPL(config_comments_blank_lines_quotes)
{
    char *dir = slot_test_tmpdir();
    char text[2048];
    snprintf(text, sizeof text,
             "# slotd settings\n"
             "\n"
             "   # an indented comment\n"
             "listen=127.0.0.1:0\n"
             "data = \"%s/a #b c\"   # the data folder\r\n"
             "\t max-line\t=\t1024 # bytes\n"
             "durability = nosync\n",
             dir);
    char *conf = write_file(dir, "slotd.conf", text);
    /* Started by hand: the harness would pass --data and --listen itself. */
    const char *bin = getenv("SLOTD");
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    fflush(NULL);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        dup2(out[1], STDOUT_FILENO);
        close(out[0]);
        close(out[1]);
        execl(bin ? bin : "./slotd", "slotd", "--config", conf, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    char line[256] = "";
    size_t got = 0;
    while (got + 1 < sizeof line && !strchr(line, '\n')) {
        struct pollfd p = {.fd = out[0], .events = POLLIN};
        ASSERT_EQ(poll(&p, 1, TIMEOUT_MS), 1);
        ssize_t n = read(out[0], line + got, sizeof line - 1 - got);
        ASSERT_GT(n, 0);
        got += (size_t)n;
        line[got] = 0;
    }
    unsigned port = 0;
    ASSERT_EQ(sscanf(line, "listening on 127.0.0.1:%u", &port), 1);
    slot_test_server s = {.pid = pid, .port = (uint16_t)port};
    ASSERT(line_too_long(&s, 2048));
    ASSERT(file_exists(dir, "a #b c/slotd.lock"));
    ASSERT_EQ(slot_test_server_stop(&s), 0);
    close(out[0]);
    slot_test_rmdir(dir);
    free(conf);
    free(dir);
}

/* A flag without a value is `name = true|false`, and its last line counts:
 * insecure = true lets a non-loopback address start without tokens, a later
 * insecure = false takes it back. */
TEST_IMPL(config_boolean_last_line_counts)
{
    char *dir = slot_test_tmpdir();
    char *on = write_file(dir, "on.conf", "insecure = false\ninsecure = true\n");
    char *off = write_file(dir, "off.conf", "insecure = true\ninsecure = false\n");
    const char *extra[] = {"--listen", "0.0.0.0:0", "--config", on, NULL};
    memset(&srv, 0, sizeof srv);
    slot_test_server_start(&srv, NULL, extra);
    ASSERT_GT(srv.port, 0);
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    slot_test_server_free(&srv);

    char data[1024], err[2048];
    snprintf(data, sizeof data, "%s/data", dir);
    const char *args[] = {"--listen", "0.0.0.0:0", "--data", data, "--config", off, NULL};
    ASSERT_EQ(slot_test_run_refused(args, err, sizeof err), 64); /* a usage error */
    if (!strstr(err, "insecure"))
        T_FAIL_("no message naming --insecure: \"%s\"", err);
    slot_test_rmdir(dir);
    free(on);
    free(off);
    free(dir);
}

/* Each malformed file: exit 64, and stderr names FILE:LINE (and the setting). */
TEST_IMPL(config_errors_name_file_and_line)
{
    static const struct {
        const char *text;
        unsigned line;
        const char *says; /* a word the message must hold */
    } cases[] = {
        {"max-line = 1024\n# fine so far\n\nno-such-flag = 1\n", 4, "no-such-flag"},
        {"max-line = 1024\nmax-line = 12\n", 2, "max-line"},
        {"max-queue = lots\n", 1, "max-queue"},
        {"durability = maybe\n", 1, "durability"},
        {"insecure = yes\n", 1, "true or false"},
        {"insecure\n", 1, "name = value"},
        {"listen 127.0.0.1:0\n", 1, "name = value"},
        {"--listen = 127.0.0.1:0\n", 1, "without their dashes"},
        {"Max-Line = 2048\n", 1, "name = value"},
        {"data =\n", 1, "needs a value"},
        {"data = # nothing\n", 1, "needs a value"},
        {"data = \"unclosed\n", 1, "quote"},
        {"data = \"a\" b\n", 1, "quote"},
        {"\n\nhelp = true\n", 3, "help"},
        {"version = true\n", 1, "version"},
        {"config = other.conf\n", 1, "config"},
        {"min-replicas = 99\n", 1, "min-replicas"},
        {"cluster = bad/name\n", 1, "cluster"},
    };
    char *dir = slot_test_tmpdir();
    char data[1024];
    snprintf(data, sizeof data, "%s/data", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *conf = write_file(dir, "bad.conf", cases[i].text);
        char want[1100], err[4096];
        snprintf(want, sizeof want, "%s:%u:", conf, cases[i].line);
        const char *args[] = {"--listen", "127.0.0.1:0", "--data", data, "--config", conf, NULL};
        int rc = slot_test_run_refused(args, err, sizeof err);
        if (rc != 64 || !strstr(err, want) || !strstr(err, cases[i].says))
            T_FAIL_("file \"%s\": exit %d (want 64), stderr \"%s\" (want \"%s\" and \"%s\")", cases[i].text, rc, err,
                    want, cases[i].says);
        ASSERT(!file_exists(data, "data.mdb")); /* nothing was opened */
        free(conf);
    }
    slot_test_rmdir(dir);
    free(dir);
}

/* A missing file, a folder, a binary file and an oversized one: exit 64 naming --config. */
TEST_IMPL(config_unreadable_file_is_usage_error)
{
    char *dir = slot_test_tmpdir();
    char missing[1024], data[1024], err[4096];
    snprintf(missing, sizeof missing, "%s/missing.conf", dir);
    snprintf(data, sizeof data, "%s/data", dir);
    char *binary = write_file(dir, "nul.conf", "max-line = 1024\n");
    FILE *f = fopen(binary, "a");
    ASSERT_NOT_NULL(f);
    ASSERT_EQ(fputc(0, f), 0);
    ASSERT_EQ(fclose(f), 0);
    char *big = write_file(dir, "big.conf", "");
    f = fopen(big, "w");
    ASSERT_NOT_NULL(f);
    for (int i = 0; i < 10000; i++)
        ASSERT(fputs("# a comment line\n", f) >= 0);
    ASSERT_EQ(fclose(f), 0);
    const char *paths[] = {missing, dir, binary, big};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        const char *args[] = {"--listen", "127.0.0.1:0", "--data", data, "--config", paths[i], NULL};
        int rc = slot_test_run_refused(args, err, sizeof err);
        char want[1100];
        snprintf(want, sizeof want, "--config %s", paths[i]);
        if (rc != 64 || !strstr(err, want))
            T_FAIL_("--config %s: exit %d (want 64), stderr \"%s\"", paths[i], rc, err);
    }
    slot_test_rmdir(dir);
    free(binary);
    free(big);
    free(dir);
}

/* The replica-set flags come from the file as from the command line: a
 * cluster flag without --cluster is refused once everything is read, and a
 * complete set from the file (with --cluster on the command line) reaches the
 * server, which names the file's secret path when it cannot read it. */
TEST_IMPL(config_cluster_flags)
{
    char *dir = slot_test_tmpdir();
    char data[1024], err[4096], text[2048], secret[1100];
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(secret, sizeof secret, "%s/no-such-secret", dir);

    char *conf = write_file(dir, "lone.conf", "node = n1\nheartbeat-ms = 50\n");
    const char *args[] = {"--listen", "127.0.0.1:0", "--data", data, "--config", conf, NULL};
    int rc = slot_test_run_refused(args, err, sizeof err);
    if (rc != 64 || !strstr(err, "need --cluster"))
        T_FAIL_("cluster flags without --cluster: exit %d (want 64), stderr \"%s\"", rc, err);
    ASSERT(!file_exists(data, "data.mdb"));
    free(conf);

    snprintf(text, sizeof text, "node = n1\netcd = http://127.0.0.1:1\ncluster-secret-file = %s\nmin-replicas = 0\n",
             secret);
    conf = write_file(dir, "set.conf", text);
    const char *args2[] = {"--listen", "127.0.0.1:0", "--data", data, "--config", conf, "--cluster", "t", NULL};
    rc = slot_test_run_refused(args2, err, sizeof err);
    if (rc != 1 || !strstr(err, "--cluster-secret-file") || !strstr(err, secret))
        T_FAIL_("cluster flags from the file: exit %d (want 1), stderr \"%s\" (want the secret's path)", rc, err);
    free(conf);
    slot_test_rmdir(dir);
    free(dir);
}
