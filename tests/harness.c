/* harness.c — see harness.h. */
#include "harness.h"
#include "slot/client.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *slot_test_current;
const char *const *slot_test_wrapper;
bool slot_test_start_soft;

#define WRAPPER_ARGS_MAX 31

/* argv := slot_test_wrapper's entries, then bin; returns how many went in. */
static int wrapper_argv(const char **argv, const char *bin)
{
    int argc = 0;
    for (int i = 0; slot_test_wrapper && slot_test_wrapper[i]; i++) {
        ASSERT_LT(i, WRAPPER_ARGS_MAX);
        argv[argc++] = slot_test_wrapper[i];
    }
    argv[argc++] = bin;
    return argc;
}

/* In a sanitizer build a UBSan report fails the case (the runtime's default
 * is to print and go on, which a passing test would hide). Unused otherwise. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
    return "halt_on_error=1:print_stacktrace=1";
}

/* LeakSanitizer's own check runs at exit(), which a case's _exit() skips:
 * the runner calls it by hand as the case's last step when the sanitizer is
 * linked in (weak: absent otherwise). */
extern void __lsan_do_leak_check(void) __attribute__((weak));

static int run_case(const slot_test_case *c)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        setpgid(0, 0); /* the case and the servers it starts: one group to stop */
        slot_test_current = c->name;
        const char *limit = getenv("SLOT_TEST_CASE_TIMEOUT_S");
        alarm(limit ? (unsigned)atoi(limit) : 240); /* a hung case fails alone, with its name */
        c->fn();
        fflush(NULL);
        if (__lsan_do_leak_check)
            __lsan_do_leak_check();
        _exit(0);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    kill(-pid, SIGKILL); /* a failed case may leave its servers behind: they are ours, in its group */
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == SLOT_TEST_SKIPPED)
        return SLOT_TEST_SKIPPED;
    if (WIFSIGNALED(st))
        fprintf(stderr, "  %s: killed by signal %d%s\n", c->name, WTERMSIG(st),
                WTERMSIG(st) == SIGALRM ? " (timed out: SLOT_TEST_CASE_TIMEOUT_S)" : "");
    else
        fprintf(stderr, "  %s: exit status %d\n", c->name, WEXITSTATUS(st));
    return 1;
}

static bool named(int argc, char **argv, const char *name)
{
    if (argc < 2)
        return true;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    for (int i = 1; i < argc; i++) {
        bool known = false;
        for (const slot_test_case *c = slot_test_list; c->name && !known; c++)
            known = strcmp(c->name, argv[i]) == 0;
        if (!known) {
            fprintf(stderr, "%s: no case named \"%s\"; the cases:\n", argv[0], argv[i]);
            for (const slot_test_case *c = slot_test_list; c->name; c++)
                fprintf(stderr, "  %s\n", c->name);
            printf("0 passed, 1 failed\n");
            return 2;
        }
    }
    unsigned passed = 0, failed = 0, skipped = 0;
    const char *failed_names[64];
    for (const slot_test_case *c = slot_test_list; c->name; c++) {
        if (!named(argc, argv, c->name))
            continue;
        uint64_t t0 = slot_test_now_ms();
        int bad = run_case(c);
        uint64_t ms = slot_test_now_ms() - t0;
        if (bad == SLOT_TEST_SKIPPED) {
            printf("SKIP %s (%" PRIu64 " ms)\n", c->name, ms);
            skipped++;
            continue;
        }
        printf("%s %s (%" PRIu64 " ms)\n", bad ? "FAIL" : "PASS", c->name, ms);
        fflush(stdout);
        if (bad) {
            if (failed < sizeof failed_names / sizeof failed_names[0])
                failed_names[failed] = c->name;
            failed++;
        } else {
            passed++;
        }
    }
    if (failed) {
        printf("failed:");
        for (unsigned i = 0; i < failed && i < sizeof failed_names / sizeof failed_names[0]; i++)
            printf(" %s", failed_names[i]);
        printf("\n");
    }
    if (skipped)
        printf("%u passed, %u failed, %u skipped\n", passed, failed, skipped);
    else
        printf("%u passed, %u failed\n", passed, failed);
    if (failed)
        return 1;
    return passed == 0 && skipped > 0 ? SLOT_TEST_SKIPPED : 0; /* meson: all skipped */
}

char *slot_test_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    char *path = NULL;
    if (asprintf(&path, "%s/slot-test-XXXXXX", base) < 0)
        abort();
    if (!mkdtemp(path)) {
        perror("mkdtemp");
        abort();
    }
    return path;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void slot_test_rmdir(const char *dir)
{
    if (dir)
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

uint64_t slot_test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void slot_test_server_start(slot_test_server *s, const char *dir, const char *const *extra)
{
    const char *bin = getenv("SLOTD");
    if (!bin)
        bin = "./slotd";
    if (s->dir == NULL) {
        if (dir) {
            s->dir = strdup(dir);
            s->own_dir = false;
        } else {
            s->dir = slot_test_tmpdir();
            s->own_dir = true;
        }
    }
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    const char *argv[64 + WRAPPER_ARGS_MAX];
    int argc = wrapper_argv(argv, bin);
    argv[argc++] = "--listen";
    argv[argc++] = "127.0.0.1:0";
    argv[argc++] = "--data";
    argv[argc++] = s->dir;
    const char *dur = getenv("SLOT_TEST_DURABILITY"); /* the path under test; a case's own flag comes later and wins */
    if (dur && *dur) {
        argv[argc++] = "--durability";
        argv[argc++] = dur;
    }
    for (int i = 0; extra && extra[i] && argc < 62 + WRAPPER_ARGS_MAX; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        dup2(out[1], STDOUT_FILENO);
        close(out[0]);
        close(out[1]);
        execv(argv[0], (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(out[1]);
    s->pid = pid;
    __atomic_store_n(&s->port, 0, __ATOMIC_RELEASE); /* a load thread may read it (cluster_fixture.c's lc_open) */
    char buf[512];
    size_t used = 0;
    uint64_t deadline = slot_test_now_ms() + 10000;
    while (s->port == 0 && slot_test_now_ms() < deadline) {
        struct pollfd p = {.fd = out[0], .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = read(out[0], buf + used, sizeof(buf) - 1 - used);
        if (n <= 0)
            break;
        used += (size_t)n;
        buf[used] = 0;
        char *nl = strchr(buf, '\n');
        if (nl) {
            unsigned port = 0;
            char *colon = strrchr(buf, ':');
            if (strncmp(buf, "listening on ", 13) == 0 && colon && colon < nl && sscanf(colon + 1, "%u", &port) == 1)
                __atomic_store_n(&s->port, (uint16_t)port, __ATOMIC_RELEASE);
            break;
        }
    }
    /* The server's later stdout goes nowhere: keep the pipe's read end open
     * would block it when full, so hand stdout to /dev/null by closing ours
     * (the server ignores SIGPIPE and writes nothing more to stdout). */
    close(out[0]);
    if (s->port == 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
        if (slot_test_start_soft)
            return;
        T_FAIL_("slotd did not print 'listening on' (got \"%.*s\")", (int)used, buf);
    }
}

int slot_test_server_stop(slot_test_server *s)
{
    if (s->pid <= 0)
        return -1;
    kill(s->pid, SIGTERM);
    int st = 0;
    uint64_t deadline = slot_test_now_ms() + 10000;
    for (;;) {
        pid_t r = waitpid(s->pid, &st, WNOHANG);
        if (r == s->pid)
            break;
        if (slot_test_now_ms() > deadline) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &st, 0);
            break;
        }
        usleep(10000);
    }
    s->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void slot_test_server_kill9(slot_test_server *s)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
}

void slot_test_server_free(slot_test_server *s)
{
    if (s->pid > 0)
        slot_test_server_stop(s);
    if (s->own_dir)
        slot_test_rmdir(s->dir);
    free(s->dir);
    s->dir = NULL;
}

void slot_test_start(slot_test_server *s, const char *const *extra)
{
    memset(s, 0, sizeof *s);
    slot_test_server_start(s, NULL, extra);
}

void slot_test_stop(slot_test_server *s)
{
    ASSERT_EQ(slot_test_server_stop(s), 0);
    slot_test_server_free(s);
}

void slot_test_call(slot_client *c, const slot_req *q, slot_reply *rep)
{
    int rc = slot_client_call(c, q, rep, 10000);
    if (rc != 0)
        T_FAIL_("slot_client_call(%s): %d (%s)", slot_op_name(q->op), rc, strerror(rc < 0 ? -rc : rc));
}

void slot_test_create_event(slot_client *c, const char *ev, uint64_t capacity, const slot_event_settings *s,
                            slot_reply *out)
{
    slot_req q;
    ASSERT_EQ(slot_req_create_event(&q, ev, capacity, s), 0);
    slot_reply r;
    slot_test_call(c, &q, &r);
    if (!r.ok)
        T_FAIL_("create_event %s: %s", ev, r.line);
    if (out)
        *out = r;
    else
        slot_reply_clear(&r);
}

slot_test_digest slot_test_digest_of(slot_client *c)
{
    slot_req q;
    slot_req_init(&q, SLOT_OP_DIGEST);
    slot_reply r;
    slot_test_call(c, &q, &r);
    if (!r.ok)
        T_FAIL_("digest: %s", r.line);
    ASSERT_EQ(strlen(r.digest), SLOT_DIGEST_HEX_BYTES);
    ASSERT_EQ(strspn(r.digest, "0123456789abcdef"), SLOT_DIGEST_HEX_BYTES);
    slot_test_digest d = {.seq = r.seq};
    memcpy(d.hex, r.digest, sizeof d.hex);
    slot_reply_clear(&r);
    return d;
}

void slot_test_digest_same(const slot_test_digest *a, const slot_test_digest *b)
{
    ASSERT_U64_EQ(a->seq, b->seq);
    ASSERT_STR_EQ(a->hex, b->hex);
}

uint64_t slot_test_check_clean(slot_client *c, const char *ev)
{
    slot_req q;
    ASSERT_EQ(slot_req_event(&q, SLOT_OP_CHECK, ev), 0);
    slot_reply r;
    slot_test_call(c, &q, &r);
    if (!r.ok || r.nviolations != 0)
        T_FAIL_("check %s: %s", ev ? ev : "(all)", r.line);
    uint64_t holds = r.holds;
    slot_reply_clear(&r);
    return holds;
}

slot_reply slot_test_view_checked(slot_client *c, const char *ev)
{
    slot_test_check_clean(c, ev);
    slot_req q;
    ASSERT_EQ(slot_req_event(&q, SLOT_OP_EVENT, ev), 0);
    slot_reply r;
    slot_test_call(c, &q, &r);
    if (!r.ok)
        T_FAIL_("event %s: %s", ev, r.line);
    ASSERT_U64_EQ(r.available + r.held + r.confirmed, r.capacity);
    return r;
}

void slot_test_set_name(char *dst, uint8_t *len, size_t cap, const char *src)
{
    size_t n = strlen(src);
    ASSERT_LT(n, cap);
    ASSERT_LE(n, UINT8_MAX);
    memcpy(dst, src, n + 1);
    *len = (uint8_t)n;
}

slot_req slot_test_req(slot_op op, const char *ev)
{
    slot_req q;
    memset(&q, 0, sizeof q);
    q.op = op;
    if (ev) {
        slot_test_set_name(q.event, &q.event_len, sizeof q.event, ev);
        q.has |= SLOT_HAS_EVENT;
    }
    return q;
}

slot_client *slot_test_dial(const slot_test_server *s)
{
    slot_client *c = NULL;
    int rc = slot_client_connect("127.0.0.1", s->port, 5000, &c);
    if (rc != 0)
        T_FAIL_("connect to 127.0.0.1:%u: %s", (unsigned)s->port, strerror(-rc));
    return c;
}

uint64_t slot_test_stat(const slot_test_server *s, const char *name)
{
    slot_client *c = slot_test_dial(s);
    slot_req q;
    slot_reply r;
    slot_req_init(&q, SLOT_OP_STATS);
    ASSERT_EQ(slot_client_call(c, &q, &r, 10000), 0);
    char key[64];
    snprintf(key, sizeof(key), "\"%s\":", name);
    const char *p = strstr(r.line, key);
    if (!p)
        T_FAIL_("stats has no %s: %s", name, r.line);
    uint64_t v = strtoull(p + strlen(key), NULL, 10);
    slot_reply_clear(&r);
    slot_client_close(c);
    return v;
}

/* See harness.h. */
#define SLOT_TEST_REFUSED_WAIT_MS 10000
int slot_test_run_refused(const char *const *args, char *err, size_t errlen)
{
    const char *bin = getenv("SLOTD");
    const char *argv[16 + WRAPPER_ARGS_MAX];
    int argc = wrapper_argv(argv, bin ? bin : "./slotd");
    for (int i = 0; args[i] && argc < 15 + WRAPPER_ARGS_MAX; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    int out[2], errp[2];
    ASSERT_EQ(pipe(out), 0);
    ASSERT_EQ(pipe(errp), 0);
    fflush(NULL);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        dup2(out[1], STDOUT_FILENO);
        dup2(errp[1], STDERR_FILENO);
        close(out[0]);
        close(errp[0]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    close(errp[1]);
    char buf[256];
    struct pollfd p = {.fd = out[0], .events = POLLIN};
    int ready = poll(&p, 1, SLOT_TEST_REFUSED_WAIT_MS);
    if (ready <= 0 || read(out[0], buf, sizeof buf) > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        T_FAIL_("slotd %s %s %s instead of refusing", args[0], args[1] ? args[1] : "",
                ready <= 0 ? "neither exited nor listened" : "started");
    }
    int st = 0;
    waitpid(pid, &st, 0);
    size_t got = 0;
    ssize_t n;
    while (got + 1 < errlen && (n = read(errp[0], err + got, errlen - 1 - got)) > 0)
        got += (size_t)n;
    err[got] = 0;
    close(out[0]);
    close(errp[0]);
    ASSERT(WIFEXITED(st));
    return WEXITSTATUS(st);
}
