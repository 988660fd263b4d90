/*
 * fuzz_config.c — libFuzzer target for slotd's two settings readers: the
 * --config FILE reader (src/daemon/daemon_int.h) and the --token-file reader
 * (src/server/auth.h). Byte 0 of the input picks the reader (bit 0) and, for the
 * token file, whether the file is open to group (bit 1); the rest is the
 * file's content.
 *
 * Config file. Whatever the text, nothing may crash, leak or trip a
 * sanitizer, and:
 *   - each line handed to the flag parser is {"slotd", "--name[=value]"},
 *     which getopt_long (slotd's own parser) reads as exactly one flag of the
 *     table with that value and nothing else; a flag without a value is
 *     handed over at most once per file, a refused name (help, version,
 *     config, restore) never;
 *   - when the reader accepts the file, every line of it is blank, a
 *     comment or `name = ...` of a known name (checked here line by line),
 *     and the number of flags handed over is the number of such lines with a
 *     value plus the no-value flags whose last line says true.
 * Token file:
 *   - a file open to group or others is refused, with no token taken;
 *   - an accepted file holds 1..SLOT_TOKENS_MAX tokens, each 1..
 *     SLOT_TOKEN_BYTES_MAX bytes of non-blank text, and they are exactly the
 *     file's "ROLE TOKEN" lines (a reference reading here: a file with a
 *     NUL byte is not text; a line is the bytes up to a newline, at most
 *     SLOT_TOKEN_LINE_BYTES_MAX of them; it is blank, a # comment, or
 *     exactly two words, a role and a token); slot__token_role finds each
 *     token's role (the last line of a token decides);
 *   - a refused file is one the reference refuses too.
 * Built and run by tests/fuzz/run.sh.
 *
 * config.c is compiled into this target (included below) rather than
 * linked: it keeps the argv strings it hands out until the process exits,
 * and the target frees those after each input through config.c's own list,
 * or millions of inputs would hold them all.
 */
#include <ctype.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/daemon/config.c"
#include "server/auth.h"
#include "server/conn.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "fuzz_config: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

/* auth.c's hello and authorize paths need these; the token reader never
 * calls them. */
void slot__conn_peer(conn *c, char *buf, size_t cap)
{
    (void)c;
    snprintf(buf, cap, "?");
}

void slot__conn_dropped(conn *c, const char *reason, const char *detail)
{
    (void)c;
    (void)reason;
    (void)detail;
}

/* A part of slotd's table: flags with a value, flags without, refused ones. */
static const struct option opts[] = {{"data", required_argument, NULL, 'd'},
                                     {"listen", required_argument, NULL, 'l'},
                                     {"max-line", required_argument, NULL, 'm'},
                                     {"token-file", required_argument, NULL, 't'},
                                     {"log-level", required_argument, NULL, 'L'},
                                     {"http", required_argument, NULL, 'H'},
                                     {"insecure", no_argument, NULL, 'i'},
                                     {"no-read-path", no_argument, NULL, 'n'},
                                     {"help", no_argument, NULL, 'h'},
                                     {"version", no_argument, NULL, 'V'},
                                     {"config", required_argument, NULL, 'c'},
                                     {"restore", required_argument, NULL, 'r'},
                                     {NULL, 0, NULL, 0}};
#define NOPTS (sizeof opts / sizeof opts[0] - 1)
static const char *const refused[] = {"config", "restore", "help", "version", NULL};

static char dir[256], path[300];
static kept_arg sentinel; /* the list's end: never empty, so config.c registers no atexit of its own */
static server srv;        /* static: large, and zero but for the tokens */

typedef struct applied {
    unsigned count;
    unsigned flag_count[NOPTS];
} applied;

static int find_opt(const char *name, size_t n)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (strlen(opts[i].name) == n && memcmp(opts[i].name, name, n) == 0)
            return (int)i;
    return -1;
}

/* The flag parser's side: what it is handed must read as one flag. */
static int on_apply(int argc, char **argv, void *ctx)
{
    applied *a = ctx;
    CHECK(argc == 2 && argv[2] == NULL && strcmp(argv[0], "slotd") == 0);
    const char *arg = argv[1];
    CHECK(strncmp(arg, "--", 2) == 0);
    CHECK(strchr(arg, '\n') == NULL);
    const char *eq = strchr(arg, '=');
    size_t nlen = eq ? (size_t)(eq - arg - 2) : strlen(arg) - 2;
    int i = find_opt(arg + 2, nlen);
    CHECK(i >= 0);
    for (size_t k = 0; refused[k]; k++)
        CHECK(strcmp(opts[i].name, refused[k]) != 0);
    CHECK((opts[i].has_arg == no_argument) == (eq == NULL));
    if (eq)
        CHECK(eq[1] != 0 && strlen(eq + 1) < SLOT_CONFIG_LINE_BYTES_MAX);
    /* getopt_long reads it as that flag, with that value, and nothing more. */
    char *copy[3] = {argv[0], argv[1], NULL};
    optind = 0;
    opterr = 0;
    int idx = -1;
    int ch = getopt_long(2, copy, "", opts, &idx);
    CHECK(ch == opts[i].val && idx == i);
    if (eq)
        CHECK(optarg && strcmp(optarg, eq + 1) == 0);
    CHECK(getopt_long(2, copy, "", opts, &idx) == -1 && optind == 2);
    a->count++;
    a->flag_count[i]++;
    if (opts[i].has_arg == no_argument)
        CHECK(a->flag_count[i] == 1);
    return 0;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

/* An accepted file, line by line: blank, comment, or `name = ...` of a
 * known, not refused name. Returns the flags the reader must have handed over. */
static unsigned expected_applies(const char *text, size_t n)
{
    unsigned count = 0;
    int last_true[NOPTS];
    for (size_t i = 0; i < NOPTS; i++)
        last_true[i] = -1;
    for (size_t at = 0; at < n;) {
        const char *nl = memchr(text + at, '\n', n - at);
        size_t end = nl ? (size_t)(nl - text) : n;
        size_t p = at;
        while (p < end && blank(text[p]))
            p++;
        if (p < end && text[p] != '#' && !(text[p] == '\r' && p + 1 == end)) {
            size_t name = p;
            while (p < end && (islower((unsigned char)text[p]) || isdigit((unsigned char)text[p]) || text[p] == '-'))
                p++;
            int o = find_opt(text + name, p - name);
            CHECK(o >= 0);
            while (p < end && blank(text[p]))
                p++;
            CHECK(p < end && text[p] == '=');
            if (opts[o].has_arg == no_argument) {
                p++;
                while (p < end && blank(text[p]))
                    p++;
                if (p < end && text[p] == '"')
                    p++;
                last_true[o] = end - p >= 4 && memcmp(text + p, "true", 4) == 0;
            } else {
                count++;
            }
        }
        at = nl ? end + 1 : n;
    }
    for (size_t i = 0; i < NOPTS; i++)
        count += last_true[i] == 1;
    return count;
}

static void write_file(const uint8_t *p, size_t n, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    CHECK(fchmod(fd, mode) == 0);
    CHECK(write(fd, p, n) == (ssize_t)n);
    CHECK(close(fd) == 0);
}

/* The reader's messages go to stderr: quiet while it runs. */
static int quiet_begin(void)
{
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    CHECK(saved >= 0 && null >= 0);
    dup2(null, STDERR_FILENO);
    close(null);
    return saved;
}

static void quiet_end(int saved)
{
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
}

static void fuzz_config_file(const uint8_t *p, size_t n)
{
    write_file(p, n, 0600);
    applied a;
    memset(&a, 0, sizeof a);
    int q = quiet_begin();
    int rc = slot__config_read(path, opts, refused, on_apply, &a);
    quiet_end(q);
    CHECK(rc == 0 || rc == -1);
    if (rc == 0) {
        CHECK(memchr(p, 0, n) == NULL && n <= SLOT_CONFIG_BYTES_MAX);
        CHECK(a.count == expected_applies((const char *)p, n));
    }
    while (kept != &sentinel) { /* the argv strings of this input */
        kept_arg *k = kept;
        kept = k->next;
        free(k);
    }
}

/* The reference reading of a token file: the tokens it holds in order, or
 * -1 when it is not a token file. */
static int reference_tokens(const uint8_t *p, size_t n, token *out)
{
    int count = 0;
    if (memchr(p, 0, n))
        return -1; /* not a text file */
    for (size_t at = 0; at < n;) {
        const uint8_t *nl = memchr(p + at, '\n', n - at);
        size_t end = nl ? (size_t)(nl - p) : n;
        if (end - at > SLOT_TOKEN_LINE_BYTES_MAX)
            return -1;
        size_t i = at;
        while (i < end && blank((char)p[i]))
            i++;
        at = nl ? end + 1 : n;
        if (i == end || p[i] == '#')
            continue;
        size_t w[2][2], nw = 0;
        while (i < end) {
            if (isspace(p[i])) {
                i++;
                continue;
            }
            size_t s = i;
            while (i < end && !isspace(p[i]))
                i++;
            if (nw == 2)
                return -1;
            w[nw][0] = s;
            w[nw][1] = i - s;
            nw++;
        }
        if (nw != 2 || w[1][1] > SLOT_TOKEN_BYTES_MAX || count == SLOT_TOKENS_MAX)
            return -1;
        const char *role = (const char *)p + w[0][0];
        size_t rl = w[0][1];
        slot_role r = rl == 5 && memcmp(role, "admin", 5) == 0      ? SLOT_ROLE_ADMIN
                      : rl == 6 && memcmp(role, "worker", 6) == 0   ? SLOT_ROLE_WORKER
                      : rl == 8 && memcmp(role, "frontend", 8) == 0 ? SLOT_ROLE_FRONTEND
                                                                    : SLOT_ROLE_NONE;
        if (r == SLOT_ROLE_NONE)
            return -1;
        out[count].role = r;
        out[count].len = w[1][1];
        memcpy(out[count].value, p + w[1][0], w[1][1]);
        out[count].value[w[1][1]] = 0;
        count++;
    }
    return count > 0 ? count : -1;
}

static void fuzz_token_file(const uint8_t *p, size_t n, bool open_to_group)
{
    write_file(p, n, open_to_group ? 0640 : 0600);
    srv.auth.ntokens = 0;
    int q = quiet_begin();
    int rc = slot__tokens_load(&srv, path);
    quiet_end(q);
    CHECK(rc == 0 || rc == -1);
    if (open_to_group) {
        CHECK(rc == -1 && srv.auth.ntokens == 0);
        return;
    }
    static token want[SLOT_TOKENS_MAX];
    int nwant = reference_tokens(p, n, want);
    if (rc != 0) {
        if (nwant >= 0) {
            fprintf(stderr, "fuzz_config: a token file of %d good lines was refused\n", nwant);
            abort();
        }
        return;
    }
    if (nwant != (int)srv.auth.ntokens) {
        fprintf(stderr, "fuzz_config: the reader took %zu tokens, the file's lines say %d\n", srv.auth.ntokens, nwant);
        abort();
    }
    for (size_t i = 0; i < srv.auth.ntokens; i++) {
        const token *t = &srv.auth.tokens[i];
        CHECK(t->len >= 1 && t->len <= SLOT_TOKEN_BYTES_MAX && strlen(t->value) == t->len);
        CHECK(t->role == want[i].role && t->len == want[i].len && memcmp(t->value, want[i].value, t->len) == 0);
        slot_role last = SLOT_ROLE_NONE; /* the last line with this token decides */
        for (size_t k = 0; k < srv.auth.ntokens; k++)
            if (srv.auth.tokens[k].len == t->len && memcmp(srv.auth.tokens[k].value, t->value, t->len) == 0)
                last = srv.auth.tokens[k].role;
        CHECK(slot__token_role(&srv, t->value, t->len) == last);
    }
}

static void remove_files(void)
{
    unlink(path);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/slot-fuzz-config-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/file", dir);
    kept = &sentinel;
    atexit(remove_files);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        fuzz_token_file(data + 1, size - 1, (data[0] & 2) != 0);
    else
        fuzz_config_file(data + 1, size - 1);
    return 0;
}
