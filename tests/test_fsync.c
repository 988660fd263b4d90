/*
 * test_fsync.c — the folders' own fsyncs (docs/design.md, "Durability and
 * stopping"; issue 25): slotd runs under strace, and its trace shows that
 * every file or folder created, renamed or removed in the data folder (and
 * in DATA/rlog on a replica-set node) before a hold is answered `held` was
 * followed by an fsync of that folder, also before the answer. A file's own
 * fdatasync does not make its name durable on every file system, so without
 * that fsync a power cut may take data.mdb (or a batch log segment) away
 * with every acknowledged hold in it.
 *
 * strace -D runs the tracer as a grandchild, so the harness still starts,
 * stops and reaps slotd by its own PID (slot_test_wrapper). Each case skips
 * when strace is missing or may not trace here (ptrace refused); the replica
 * set case also without /usr/bin/etcd.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster_fixture.h"
#include "harness.h"
#include "slot/client.h"

TEST_DECLARE(data_folder_fsynced_after_data_mdb_and_before_the_first_held)
TEST_DECLARE(data_folder_fsync_failure_refuses_to_start)
TEST_DECLARE(rlog_folder_fsynced_after_its_segment_and_before_the_first_held)
TEST_DECLARE(rlog_last_segment_synced_at_open_before_its_first_write)
TEST_DECLARE(pipelined_log_flush_failure_stops_slotd)

TEST_LIST_START
TEST_ENTRY(data_folder_fsynced_after_data_mdb_and_before_the_first_held)
TEST_ENTRY(data_folder_fsync_failure_refuses_to_start)
TEST_ENTRY(rlog_folder_fsynced_after_its_segment_and_before_the_first_held)
TEST_ENTRY(rlog_last_segment_synced_at_open_before_its_first_write)
TEST_ENTRY(pipelined_log_flush_failure_stops_slotd)
TEST_LIST_END

/* Every call that creates, renames or removes a name, the folder fsyncs,
 * and the writes (one of them is the reply). Names some architectures lack
 * (rename, unlink, mkdir, rmdir on arm64) are marked '?': strace then does
 * not refuse them. -yy prints each fd's path (and a socket's addresses). */
#define TRACE_SET                                                                               \
    "trace=openat,?mkdir,?mkdirat,?rename,?renameat,?renameat2,?unlink,?unlinkat,?rmdir,fsync," \
    "fdatasync,write,writev,pwrite64,?sendmsg,?sendto"
#define TRACE_LINES_MAX 200000
#define TRACE_WAIT_MS 10000 /* for the tracer to write its last line after slotd exited */
#define PATH_BYTES 4096
#define ARG_BYTES 1024 /* one path argument; two of them joined fit in PATH_BYTES */

static char strace_bin[PATH_BYTES];

/* strace on $PATH, and allowed to trace here; else the case skips. */
static void need_strace(void)
{
    const char *path = getenv("PATH");
    char dirs[PATH_BYTES];
    snprintf(dirs, sizeof dirs, "%s", path ? path : "/usr/bin:/bin");
    strace_bin[0] = 0;
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !strace_bin[0]; d = strtok_r(NULL, ":", &save)) {
        char p[PATH_BYTES];
        snprintf(p, sizeof p, "%s/strace", d);
        if (access(p, X_OK) == 0)
            snprintf(strace_bin, sizeof strace_bin, "%s", p);
    }
    if (!strace_bin[0])
        SLOT_TEST_SKIP("strace not found (install Debian's strace)");
    fflush(NULL);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        execl(strace_bin, "strace", "-o", "/dev/null", "true", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        SLOT_TEST_SKIP("strace cannot trace here (ptrace refused?)");
}

/* A new temporary folder by its real path: strace prints fds' paths resolved. */
static char *real_tmpdir(void)
{
    char *d = slot_test_tmpdir();
    char *r = realpath(d, NULL);
    ASSERT_NOT_NULL(r);
    free(d);
    return r;
}

/* slot_test_wrapper := strace writing the trace to trace_path. */
static void trace_into(const char *trace_path)
{
    static const char *wrap[12];
    static char out[PATH_BYTES];
    snprintf(out, sizeof out, "%s", trace_path);
    int k = 0;
    wrap[k++] = strace_bin;
    wrap[k++] = "-D"; /* the tracer a grandchild: slotd keeps the PID the harness forked */
    wrap[k++] = "-f";
    wrap[k++] = "-q";
    wrap[k++] = "-yy";
    wrap[k++] = "-s";
    wrap[k++] = "256";
    wrap[k++] = "-o";
    wrap[k++] = out;
    wrap[k++] = "-e";
    wrap[k++] = TRACE_SET;
    wrap[k] = NULL;
    slot_test_wrapper = wrap;
    /* LeakSanitizer cannot run under ptrace (it dies at exit, and slotd's exit
     * status with it): a sanitizer build's traced slotd runs without it (a
     * later option wins); the untraced runs of the suite still check leaks. */
    static char asan[512];
    const char *was = getenv("ASAN_OPTIONS");
    snprintf(asan, sizeof asan, "%s%sdetect_leaks=0", was ? was : "", was && *was ? ":" : "");
    setenv("ASAN_OPTIONS", asan, 1);
}

/* ---- reading the trace */

typedef struct trace {
    char **line;
    size_t n;
} trace;

/* A trace line's pid, and in *rest what follows it (strace pads the pid to
 * five columns: "123   write(...", "12345 write(..."); -1 when it has none. */
static long line_pid(const char *line, const char **rest)
{
    char *end;
    long pid = strtol(line, &end, 10);
    if (end == line || *end != ' ')
        return -1;
    while (*end == ' ')
        end++;
    *rest = end;
    return pid;
}

/* Whether line is pid's and, after the pid, starts with what. */
static bool line_is(const char *line, long pid, const char *what)
{
    const char *rest = line;
    return line_pid(line, &rest) == pid && strncmp(rest, what, strlen(what)) == 0;
}

static bool has_exit_line(const char *file, pid_t pid)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return false;
    char buf[8192];
    bool found = false;
    while (!found && fgets(buf, sizeof buf, f))
        found = line_is(buf, pid, "+++ exited with");
    fclose(f);
    return found;
}

/* The whole trace, once the tracer wrote slotd's (pid's) exit line. */
static trace trace_read(const char *file, pid_t pid)
{
    uint64_t end = slot_test_now_ms() + TRACE_WAIT_MS;
    while (!has_exit_line(file, pid) && slot_test_now_ms() < end)
        sleep_ms(20);
    ASSERT(has_exit_line(file, pid));
    FILE *f = fopen(file, "r");
    ASSERT_NOT_NULL(f);
    trace t = {calloc(TRACE_LINES_MAX, sizeof(char *)), 0};
    ASSERT_NOT_NULL(t.line);
    char *buf = NULL;
    size_t cap = 0;
    while (getline(&buf, &cap, f) > 0 && t.n < TRACE_LINES_MAX) {
        buf[strcspn(buf, "\n")] = 0;
        t.line[t.n++] = strdup(buf);
    }
    free(buf);
    fclose(f);
    return t;
}

static void trace_free(trace *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->line[i]);
    free(t->line);
}

/* A line "PID name(args..." : its pid, and p past the '('; NULL when the
 * line is no syscall's start (a resumed tail, a signal, an exit). */
static const char *call_of(const char *line, const char *name, long *pid)
{
    const char *end;
    if ((*pid = line_pid(line, &end)) < 0)
        return NULL;
    size_t n = strlen(name);
    if (strncmp(end, name, n) != 0 || end[n] != '(')
        return NULL;
    return end + n + 1;
}

/* Whether the call that starts at line i failed ("= -1 E..."), looking at its
 * "<... name resumed>" line when strace split it. */
static bool call_failed(const trace *t, size_t i, const char *name, long pid)
{
    const char *l = t->line[i];
    if (strstr(l, "<unfinished ...>")) {
        char want[128];
        snprintf(want, sizeof want, "<... %s resumed>", name);
        l = NULL;
        for (size_t j = i + 1; j < t->n && !l; j++)
            if (line_is(t->line[j], pid, want))
                l = t->line[j];
        if (!l)
            return true; /* never returned: it did not happen before anything */
    }
    const char *eq = strrchr(l, '=');
    return eq && strncmp(eq, "= -1 ", 5) == 0;
}

/* An fd argument ("AT_FDCWD</cwd>" or "12</path>"): its path into out
 * (empty when strace printed none). */
static const char *arg_fd(const char *p, char *out, size_t cap)
{
    out[0] = 0;
    while (*p && *p != '<' && *p != ',' && *p != ')')
        p++;
    if (*p == '<') {
        const char *e = p + 1; /* the '>' that ends it ("->" inside a socket's doesn't) */
        while (*e && !(e[0] == '>' && (e[1] == ',' || e[1] == ')' || e[1] == ' ' || e[1] == 0)))
            e++;
        ASSERT(*e == '>');
        snprintf(out, cap, "%.*s", (int)(e - p - 1), p + 1);
        p = e + 1;
    }
    return p;
}

/* A string argument ("..."): its bytes, with strace's \" and \\ undone. */
static const char *arg_str(const char *p, char *out, size_t cap)
{
    while (*p && *p != '"')
        p++;
    ASSERT(*p == '"');
    size_t k = 0;
    for (p++; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1])
            p++;
        if (k + 1 < cap)
            out[k++] = *p;
    }
    out[k] = 0;
    return *p ? p + 1 : p;
}

/* The full path of name, relative to the folder dir when not absolute. */
static void join(char *out, size_t cap, const char *dir, const char *name)
{
    if (name[0] == '/')
        snprintf(out, cap, "%s", name);
    else
        snprintf(out, cap, "%s/%s", dir, name);
}

/* The folder part of path. */
static void folder_of(char *out, size_t cap, const char *path)
{
    snprintf(out, cap, "%s", path);
    char *s = strrchr(out, '/');
    if (s && s != out)
        *s = 0;
}

/* One create, rename or remove: the folder whose entries it changed. */
typedef struct change {
    size_t at; /* its line */
    char what[PATH_BYTES + 32];
    char folder[PATH_BYTES];
} change;

/* The changes of line i (up to 2: a rename changes both folders); 0 when none. */
static int changes_of(const trace *t, size_t i, change out[2])
{
    static const char *const one_path[] = {"mkdir", "unlink", "rmdir"};
    static const char *const fd_path[] = {"openat", "mkdirat", "unlinkat"};
    const char *l = t->line[i], *p;
    long pid;
    char dir[ARG_BYTES], name[ARG_BYTES], path[PATH_BYTES];
    for (size_t k = 0; k < 3; k++) {
        if ((p = call_of(l, one_path[k], &pid)) != NULL) {
            if (call_failed(t, i, one_path[k], pid))
                return 0;
            arg_str(p, path, sizeof path);
            out[0].at = i;
            snprintf(out[0].what, sizeof out[0].what, "%s %s", one_path[k], path);
            folder_of(out[0].folder, sizeof out[0].folder, path);
            return 1;
        }
        if ((p = call_of(l, fd_path[k], &pid)) != NULL) {
            if (k == 0 && !strstr(l, "O_CREAT"))
                return 0; /* an open of a file that exists changes no name */
            if (call_failed(t, i, fd_path[k], pid))
                return 0;
            p = arg_fd(p, dir, sizeof dir);
            arg_str(p, name, sizeof name);
            join(path, sizeof path, dir, name);
            out[0].at = i;
            snprintf(out[0].what, sizeof out[0].what, "%s %s", fd_path[k], path);
            folder_of(out[0].folder, sizeof out[0].folder, path);
            return 1;
        }
    }
    static const char *const renames[] = {"rename", "renameat", "renameat2"};
    for (size_t k = 0; k < 3; k++) {
        if ((p = call_of(l, renames[k], &pid)) == NULL)
            continue;
        if (call_failed(t, i, renames[k], pid))
            return 0;
        for (int side = 0; side < 2; side++) {
            dir[0] = 0;
            if (k > 0)
                p = arg_fd(p, dir, sizeof dir);
            p = arg_str(p, name, sizeof name);
            join(path, sizeof path, dir, name);
            out[side].at = i;
            snprintf(out[side].what, sizeof out[side].what, "%s %s", renames[k], path);
            folder_of(out[side].folder, sizeof out[side].folder, path);
        }
        return 2;
    }
    return 0;
}

/* Whether line i is an fsync of the folder dir. */
static bool is_fsync_of(const trace *t, size_t i, const char *dir)
{
    long pid;
    const char *p = call_of(t->line[i], "fsync", &pid);
    if (!p)
        return false;
    char path[ARG_BYTES];
    arg_fd(p, path, sizeof path);
    return strcmp(path, dir) == 0;
}

/* The first line that writes the `held` reply to a socket; fails when none. */
static size_t held_reply(const trace *t)
{
    static const char *const writes[] = {"write", "writev", "sendmsg", "sendto"};
    for (size_t i = 0; i < t->n; i++) {
        long pid;
        for (size_t k = 0; k < 4; k++)
            if (call_of(t->line[i], writes[k], &pid) && strstr(t->line[i], "\\\"status\\\":\\\"held\\\""))
                return i;
    }
    T_FAIL_("the trace (%zu lines) has no write of a \"held\" reply", t->n);
}

/*
 * The rule: every change of an entry in one of the folders (NULL-ended)
 * before the reply at line `reply` has an fsync of its folder after it and
 * before the reply. Returns how many such changes there were; fails naming
 * the first change without its fsync.
 */
static int assert_fsynced_before(const trace *t, size_t reply, const char *const *folders)
{
    int checked = 0;
    for (size_t i = 0; i < reply; i++) {
        change ch[2];
        int n = changes_of(t, i, ch);
        for (int c = 0; c < n; c++) {
            bool watched = false;
            for (size_t f = 0; folders[f]; f++)
                watched |= strcmp(ch[c].folder, folders[f]) == 0;
            if (!watched)
                continue;
            checked++;
            bool synced = false;
            for (size_t j = i + 1; j < reply && !synced; j++)
                synced = is_fsync_of(t, j, ch[c].folder);
            if (!synced)
                T_FAIL_("%s (trace line %zu) is not followed by an fsync of %s before the held reply (line %zu): %s",
                        ch[c].what, i + 1, ch[c].folder, reply + 1, t->line[i]);
        }
    }
    return checked;
}

/* Whether some change before line `before` is a `kind` ("openat", "mkdir")
 * of a path ending in suffix, in folder. */
static bool saw_change(const trace *t, size_t before, const char *kind, const char *folder, const char *suffix)
{
    for (size_t i = 0; i < before; i++) {
        change ch[2];
        int n = changes_of(t, i, ch);
        for (int c = 0; c < n; c++) {
            size_t wl = strlen(ch[c].what), sl = strlen(suffix);
            if (strcmp(ch[c].folder, folder) == 0 && strncmp(ch[c].what, kind, strlen(kind)) == 0 &&
                ch[c].what[strlen(kind)] == ' ' && wl >= sl && strcmp(ch[c].what + wl - sl, suffix) == 0)
                return true;
        }
    }
    return false;
}

/* ---- the cases */

TEST_IMPL(data_folder_fsynced_after_data_mdb_and_before_the_first_held)
{
    need_strace();
    char *base = real_tmpdir();
    char data[PATH_BYTES], file[PATH_BYTES];
    snprintf(data, sizeof data, "%s/data", base); /* made by slotd: its own mkdir is traced too */
    snprintf(file, sizeof file, "%s/trace", base);
    trace_into(file);
    slot_test_server s = {0};
    slot_test_server_start(&s, data, NULL);
    pid_t pid = s.pid;
    slot_client *c = slot_test_dial(&s);
    slot_req q;
    slot_reply r;
    slot_req_event(&q, SLOT_OP_CREATE_EVENT, "gig");
    q.capacity = 10;
    slot_test_call(c, &q, &r);
    ASSERT(r.ok);
    slot_reply_clear(&r);
    ASSERT_EQ(slot_req_hold(&q, "gig", "ann", "k1", 1), 0);
    slot_test_call(c, &q, &r);
    ASSERT_STR_EQ(r.status, "held");
    slot_reply_clear(&r);
    slot_client_close(c);
    ASSERT_EQ(slot_test_server_stop(&s), 0);
    trace t = trace_read(file, pid);
    size_t reply = held_reply(&t);
    ASSERT(saw_change(&t, reply, "openat", data, "/data.mdb"));
    ASSERT(saw_change(&t, reply, "mkdir", base, "/data"));
    const char *const folders[] = {data, base, NULL};
    int n = assert_fsynced_before(&t, reply, folders);
    printf("  %d creates in %s and its parent before the held reply, each fsynced before it\n", n, data);
    trace_free(&t);
    slot_test_server_free(&s);
    slot_test_rmdir(base);
    free(base);
}

TEST_IMPL(data_folder_fsync_failure_refuses_to_start)
{
    need_strace();
    char *data = real_tmpdir();
    /* EIO for every fsync of the data folder itself (-P: only the calls on that path). */
    const char *wrap[] = {strace_bin, "-D", "-f", "-q",          "-o", "/dev/null",
                          "-P",       data, "-e", "trace=fsync", "-e", "inject=fsync:error=EIO",
                          NULL};
    slot_test_wrapper = wrap;
    const char *args[] = {"--listen", "127.0.0.1:0", "--data", data, NULL};
    char err[2048];
    ASSERT_EQ(slot_test_run_refused(args, err, sizeof err), 1);
    if (!strstr(err, "fsync of the data folder"))
        T_FAIL_("slotd refused, but not for the data folder's fsync: %s", err);
    slot_test_rmdir(data);
    free(data);
}

/* A set of one (it founds it, no replica to wait for), durable like a default
 * node, on a private etcd (the case skips without etcd or strace): node 0,
 * configured, not started. */
static node *one_node_set(void)
{
    need_strace();
    etcd_start(&etcd); /* skips without /usr/bin/etcd */
    char *base = real_tmpdir();
    snprintf(base_dir, sizeof base_dir, "%s", base);
    free(base);
    snprintf(secret_path, sizeof secret_path, "%s/secret", base_dir);
    FILE *f = fopen(secret_path, "w");
    ASSERT_NOT_NULL(f);
    fputs("a-cluster-secret-of-some-length\n", f);
    fclose(f);
    ASSERT_EQ(chmod(secret_path, 0600), 0);
    node *n = &nodes[0];
    snprintf(n->id, sizeof n->id, "n1");
    snprintf(n->dir, sizeof n->dir, "%s/n1", base_dir);
    snprintf(n->host, sizeof n->host, "127.0.0.1");
    n->extra[0] = "--min-replicas";
    n->extra[1] = "0";
    n->extra[2] = "--durability";
    n->extra[3] = "sync";
    n->extra[4] = NULL;
    return n;
}

TEST_IMPL(rlog_folder_fsynced_after_its_segment_and_before_the_first_held)
{
    node *n = one_node_set();
    char file[PATH_BYTES], rlog[PATH_BYTES];
    snprintf(file, sizeof file, "%s/trace", base_dir);
    snprintf(rlog, sizeof rlog, "%s/rlog", n->dir);
    trace_into(file);
    node_start(n);
    pid_t pid = n->srv.pid;
    ASSERT_EQ(find_primary(WAIT_LONG_MS), 0);
    create_event(0, 10);
    json_t *j = call1(0, "{\"op\":\"hold\",\"event\":\"" EVENT "\",\"user\":\"ann\",\"request\":\"k1\",\"qty\":1}");
    ASSERT(j && jok(j));
    ASSERT_STR_EQ(jstr(j, "status"), "held");
    json_decref(j);
    ASSERT_EQ(slot_test_server_stop(&n->srv), 0);
    n->up = false;
    trace t = trace_read(file, pid);
    size_t reply = held_reply(&t);
    ASSERT(saw_change(&t, reply, "mkdir", n->dir, "/rlog"));
    ASSERT(saw_change(&t, reply, "openat", rlog, "/0000000000000001.seg"));
    const char *const folders[] = {n->dir, rlog, NULL};
    int c = assert_fsynced_before(&t, reply, folders);
    printf("  %d creates in %s and %s before the held reply, each fsynced before it\n", c, n->dir, rlog);
    trace_free(&t);
    set_end();
}

/*
 * A node killed with kill -9 may leave its last appends only in the page
 * cache. At the next start the batch log's open fdatasyncs the last segment
 * before anything else is written to it, so what it holds is on disk before
 * a record of it can be acknowledged again (a replica acks records its log
 * already holds without appending them): in the trace of the restart the
 * first fdatasync of that segment comes before the first pwrite to it.
 */
TEST_IMPL(rlog_last_segment_synced_at_open_before_its_first_write)
{
    node *n = one_node_set();
    node_start(n);
    ASSERT_EQ(find_primary(WAIT_LONG_MS), 0);
    create_event(0, 10);
    json_t *j = call1(0, "{\"op\":\"hold\",\"event\":\"" EVENT "\",\"user\":\"ann\",\"request\":\"k1\",\"qty\":1}");
    ASSERT(j && jok(j));
    json_decref(j);
    slot_test_server_kill9(&n->srv);
    n->up = false;
    char file[PATH_BYTES], seg[PATH_BYTES];
    snprintf(file, sizeof file, "%s/trace", base_dir);
    snprintf(seg, sizeof seg, "%s/rlog/0000000000000001.seg", n->dir);
    trace_into(file);
    node_start(n);
    pid_t pid = n->srv.pid;
    ASSERT_EQ(find_primary(WAIT_LONG_MS), 0);
    j = call1(0, "{\"op\":\"hold\",\"event\":\"" EVENT "\",\"user\":\"bob\",\"request\":\"k2\",\"qty\":1}");
    ASSERT(j && jok(j));
    ASSERT_STR_EQ(jstr(j, "status"), "held");
    json_decref(j);
    ASSERT_EQ(slot_test_server_stop(&n->srv), 0);
    n->up = false;
    trace t = trace_read(file, pid);
    size_t first_sync = t.n, first_write = t.n;
    for (size_t i = 0; i < t.n; i++) {
        long lp;
        char path[ARG_BYTES];
        const char *p = call_of(t.line[i], "fdatasync", &lp);
        if (p && first_sync == t.n && arg_fd(p, path, sizeof path) && strcmp(path, seg) == 0 &&
            !call_failed(&t, i, "fdatasync", lp))
            first_sync = i;
        p = call_of(t.line[i], "pwrite64", &lp);
        if (p && first_write == t.n && arg_fd(p, path, sizeof path) && strcmp(path, seg) == 0)
            first_write = i;
    }
    ASSERT(first_write < t.n); /* the second hold's record went there */
    if (first_sync > first_write)
        T_FAIL_("the restart wrote to %s (trace line %zu) before it fdatasynced what the killed run left there", seg,
                first_write + 1);
    printf("  the restart fdatasynced %s at trace line %zu, before its first write at line %zu\n", seg, first_sync + 1,
           first_write + 1);
    trace_free(&t);
    set_end();
}

/*
 * The fsync-error rule of --durability pipelined (docs/design.md,
 * "Pipelined group commit"): every fdatasync of the batch log's segment fails
 * (EIO injected), so the first write's record is never durable: slotd must
 * stop (exit 1) without answering it, rather than answer and flush again.
 */
TEST_IMPL(pipelined_log_flush_failure_stops_slotd)
{
    need_strace();
    char *data = real_tmpdir();
    char seg[PATH_BYTES];
    snprintf(seg, sizeof seg, "%s/rlog/0000000000000001.seg", data);
    const char *wrap[] = {strace_bin, "-D",
                          "-f",       "-q",
                          "-o",       "/dev/null",
                          "-P",       seg,
                          "-e",       "trace=fdatasync",
                          "-e",       "inject=fdatasync:error=EIO",
                          NULL};
    slot_test_wrapper = wrap;
    const char *flags[] = {"--durability", "pipelined", NULL};
    slot_test_server s = {0};
    slot_test_server_start(&s, data, flags);
    slot_client *c = slot_test_dial(&s);
    slot_req q;
    slot_reply r;
    slot_req_event(&q, SLOT_OP_CREATE_EVENT, "gig");
    q.capacity = 10;
    int rc = slot_client_call(c, &q, &r, 10000);
    if (rc == 0 && r.ok)
        T_FAIL_("%s", "create_event was answered ok although its record's flush failed");
    if (rc == 0)
        slot_reply_clear(&r);
    slot_client_close(c);
    int st = 0;
    uint64_t end = slot_test_now_ms() + TRACE_WAIT_MS;
    pid_t got = 0;
    while ((got = waitpid(s.pid, &st, WNOHANG)) == 0 && slot_test_now_ms() < end)
        sleep_ms(20);
    ASSERT_EQ(got, s.pid);
    s.pid = 0;
    ASSERT(WIFEXITED(st));
    ASSERT_EQ(WEXITSTATUS(st), 1);
    printf("  the failed flush of %s stopped slotd (exit 1) before any answer\n", seg);
    slot_test_server_free(&s);
    slot_test_rmdir(data);
    free(data);
}
