/*
 * test_client_fixtures.c — the shared client fixtures (clients/fixtures/README.md) through
 * the C client's follower (slot_follow_*, slot/client.h): for every case in
 * $SLOT_FIXTURES/cases, python3 peer.py plays the scripted peers; the calls go one after the
 * other through slot_follow_call_line with the case's options (retries + 1 attempts, each
 * timeoutMs); each outcome is compared by subset with the case's result, and peer.py's
 * verdict must be {"ok":true} (every request as the script expects, none more).
 *
 * The C client leaves the idempotency key to its caller (slot_req_set_request): the runner
 * makes one per call of a keyed op, as a caller does once per purchase attempt. A negative
 * return (the bound reached, outcome unknown) compares as the fixtures' client error
 * {"ok":false,"error":"unavailable","client":true,...}.
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

TEST_DECLARE(client_fixtures_cases_present)
TEST_DECLARE(client_fixtures_every_case)

TEST_LIST_START
TEST_ENTRY(client_fixtures_cases_present)
TEST_ENTRY(client_fixtures_every_case)
TEST_LIST_END

#define CASES_MAX 256
#define PEER_LINE_MAX 65536
#define PEERS_MAX 8

/* $SLOT_FIXTURES (meson sets it to clients/fixtures); the case skips without it. */
static const char *fixtures_dir(void)
{
    const char *d = getenv("SLOT_FIXTURES");
    if (!d || !*d)
        SLOT_TEST_SKIP("$SLOT_FIXTURES is not set (meson test sets it to clients/fixtures)\n");
    return d;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The case files (paths, sorted, malloc'd) into names; their count. */
static int list_cases(const char *dir, char **names)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/cases", dir);
    DIR *d = opendir(path);
    ASSERT_NOT_NULL(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < CASES_MAX) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0) {
            names[n] = malloc(strlen(path) + len + 2);
            ASSERT_NOT_NULL(names[n]);
            sprintf(names[n], "%s/%s", path, e->d_name);
            n++;
        }
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(names[0]), by_name);
    return n;
}

/* A running peer.py: its pid, our ends of its stdin and stdout. */
typedef struct peer_proc {
    pid_t pid;
    FILE *in, *out;
} peer_proc;

/* The python3 interpreter itself ($PYTHON3 or python3 may be a wrapper, such as pyenv's
 * shim, that takes far longer to start than the interpreter: asked once, by sys.executable). */
static const char *python3(void)
{
    static char exe[4096];
    if (exe[0])
        return exe;
    const char *py = getenv("PYTHON3");
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "'%s' -c 'import sys; print(sys.executable)'", py && *py ? py : "python3");
    FILE *f = popen(cmd, "r");
    ASSERT_NOT_NULL(f);
    if (!fgets(exe, sizeof(exe), f))
        exe[0] = 0;
    pclose(f);
    exe[strcspn(exe, "\n")] = 0;
    if (!exe[0])
        snprintf(exe, sizeof(exe), "%s", py && *py ? py : "python3");
    return exe;
}

static void peer_start(peer_proc *p, const char *dir, const char *case_path)
{
    int to[2], from[2];
    ASSERT_EQ(pipe(to), 0);
    ASSERT_EQ(pipe(from), 0);
    char peer[4096];
    snprintf(peer, sizeof(peer), "%s/peer.py", dir);
    const char *py = python3();
    p->pid = fork();
    ASSERT(p->pid >= 0);
    if (p->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]), close(to[1]), close(from[0]), close(from[1]);
        execlp(py, py, peer, case_path, (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    p->in = fdopen(to[1], "w");
    p->out = fdopen(from[0], "r");
    ASSERT_NOT_NULL(p->in);
    ASSERT_NOT_NULL(p->out);
}

/* One line of peer.py's stdout, parsed (NULL at EOF or for a line that is not JSON). */
static json_t *peer_line(peer_proc *p)
{
    static char line[PEER_LINE_MAX];
    if (!fgets(line, sizeof(line), p->out))
        return NULL;
    return json_loads(line, 0, NULL);
}

/* Closes peer.py's stdin, reads its verdict, reaps it (by its pid). */
static json_t *peer_finish(peer_proc *p)
{
    fclose(p->in);
    json_t *v = peer_line(p);
    fclose(p->out);
    int st = 0;
    if (!v)
        kill(p->pid, SIGKILL);
    waitpid(p->pid, &st, 0);
    return v;
}

/* Subset match (clients/fixtures/README.md): every key of want in got, equal; objects recursively. */
static bool subset(json_t *want, json_t *got)
{
    if (json_is_object(want)) {
        if (!json_is_object(got))
            return false;
        const char *k;
        json_t *v;
        json_object_foreach(want, k, v)
        {
            if (!subset(v, json_object_get(got, k)))
                return false;
        }
        return true;
    }
    return got && json_equal(want, got);
}

static bool keyed_op(const char *op)
{
    return strcmp(op, "hold") == 0 || strcmp(op, "hold_many") == 0 || strcmp(op, "waitlist_join") == 0;
}

/* One call of a case through f: its outcome as an object (a reply, or the client error). */
static json_t *do_call(slot_follow *f, json_t *call, int nth)
{
    const char *op = json_string_value(json_object_get(call, "op"));
    ASSERT_NOT_NULL(op);
    json_t *req = json_object();
    json_object_set_new(req, "op", json_string(op));
    json_object_update(req, json_object_get(call, "args"));
    if (keyed_op(op) && !json_object_get(req, "request")) {
        char key[64];
        snprintf(key, sizeof(key), "c-%d-%ld-%d", (int)getpid(), (long)random(), nth);
        json_object_set_new(req, "request", json_string(key));
    }
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    ASSERT_NOT_NULL(text);
    size_t len = strlen(text);
    char *line = malloc(len + 2);
    ASSERT_NOT_NULL(line);
    memcpy(line, text, len);
    line[len] = '\n';
    line[len + 1] = 0;
    free(text);
    slot_reply r;
    int rc = slot_follow_call_line(f, line, len + 1, &r);
    free(line);
    json_t *out;
    if (rc == 0) {
        out = json_loads(r.line, 0, NULL);
        ASSERT_NOT_NULL(out);
    } else {
        out = json_pack("{s:b,s:s,s:s,s:b}", "ok", 0, "error", "unavailable", "message", slot_follow_error(f), "client",
                        1);
    }
    slot_reply_clear(&r);
    return out;
}

/* Plays one case; "" when it passed, else why (into why, cap bytes). */
static void run_case(const char *dir, const char *path, char *why, size_t cap)
{
    why[0] = 0;
    json_error_t jerr;
    json_t *c = json_load_file(path, 0, &jerr);
    if (!c) {
        snprintf(why, cap, "cannot read: %s", jerr.text);
        return;
    }
    peer_proc p;
    peer_start(&p, dir, path);
    json_t *hello = peer_line(&p);
    json_t *peers = json_object_get(hello, "peers");
    char addrs[PEERS_MAX * 32] = "";
    for (size_t i = 0; i < json_array_size(peers) && i < PEERS_MAX; i++) {
        if (i)
            strcat(addrs, ",");
        strncat(addrs, json_string_value(json_array_get(peers, i)), 31);
    }
    json_t *o = json_object_get(c, "options");
    json_int_t timeout_ms = json_integer_value(json_object_get(o, "timeoutMs"));
    json_int_t retries = json_object_get(o, "retries") ? json_integer_value(json_object_get(o, "retries")) : 8;
    slot_follow_opts fo;
    slot_follow_opts_default(&fo);
    fo.attempts_max = (uint32_t)retries + 1;
    fo.connect_timeout_ms = fo.reply_timeout_ms = timeout_ms > 0 ? (int)timeout_ms : 5000;
    fo.deadline_ms = (int)(fo.attempts_max * (uint32_t)fo.reply_timeout_ms) + 10000;
    slot_follow *f = NULL;
    char err[200];
    if (!addrs[0] || slot_follow_new(addrs, &fo, &f, err, sizeof(err)) != 0) {
        snprintf(why, cap, "peer.py said %s; slot_follow_new: %s", hello ? "no peers" : "nothing",
                 addrs[0] ? err : "-");
    } else {
        json_t *calls = json_object_get(c, "calls"), *want = json_object_get(c, "results");
        for (size_t i = 0; i < json_array_size(calls); i++) {
            json_t *got = do_call(f, json_array_get(calls, i), (int)i);
            if (!why[0] && !subset(json_array_get(want, i), got)) {
                char *w = json_dumps(json_array_get(want, i), JSON_COMPACT), *g = json_dumps(got, JSON_COMPACT);
                snprintf(why, cap, "call %zu: want %s, got %s", i, w, g);
                free(w);
                free(g);
            }
            json_decref(got);
        }
    }
    slot_follow_free(f); /* the connection closes before the verdict */
    json_t *v = peer_finish(&p);
    if (!why[0] && !json_is_true(json_object_get(v, "ok"))) {
        char *t = v ? json_dumps(v, JSON_COMPACT) : NULL;
        snprintf(why, cap, "peer.py verdict: %s", t ? t : "(none)");
        free(t);
    }
    json_decref(v);
    json_decref(hello);
    json_decref(c);
}

TEST_IMPL(client_fixtures_cases_present)
{
    char *names[CASES_MAX];
    int n = list_cases(fixtures_dir(), names);
    ASSERT_GE(n, 12);
    for (int i = 0; i < n; i++)
        free(names[i]);
}

TEST_IMPL(client_fixtures_every_case)
{
    const char *dir = fixtures_dir();
    char *names[CASES_MAX];
    int n = list_cases(dir, names), failed = 0;
    for (int i = 0; i < n; i++) {
        char why[2048];
        run_case(dir, names[i], why, sizeof(why));
        const char *base = strrchr(names[i], '/') + 1;
        if (why[0]) {
            failed++;
            printf("  FAIL %s: %s\n", base, why);
        } else {
            printf("  ok %s\n", base);
        }
        free(names[i]);
    }
    fflush(stdout);
    ASSERT_EQ(failed, 0);
}
