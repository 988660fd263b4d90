/*
 * test_backup.c — backups end to end (docs/operations.md, "Backups";
 * docs/protocol.md, "backup"): a backup taken while slot-bench runs a hot
 * release against a real slotd restores to a store whose check is clean and
 * whose seq and digest are the server's at the backup's seq (the load
 * paused by SIGSTOP around one backup, so the server's digest op can be
 * compared; another backup under full load, restored by slotd --restore
 * and served, holds only holds the server has too); damaged files are
 * refused by verify-backup and restore; restore refuses a non-empty or an
 * in-use folder; a file the server cannot write is backup_failed and the
 * server goes on selling; a second backup while one runs is busy.
 * $SLOTD, $SLOTCTL, $SLOT_BENCH are the programs under test.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "slot/backup.h"
#include "slot/check.h"
#include "slot/client.h"
#include "slot/store.h"

TEST_DECLARE(backup_e2e_hot_release)
TEST_DECLARE(backup_e2e_damaged_files_refused)
TEST_DECLARE(backup_e2e_restore_folders)
TEST_DECLARE(backup_e2e_unwritable_path)
TEST_DECLARE(backup_e2e_one_at_a_time)

TEST_LIST_START
TEST_ENTRY(backup_e2e_hot_release)
TEST_ENTRY(backup_e2e_damaged_files_refused)
TEST_ENTRY(backup_e2e_restore_folders)
TEST_ENTRY(backup_e2e_unwritable_path)
TEST_ENTRY(backup_e2e_one_at_a_time)
TEST_LIST_END

#define RUN_TIMEOUT_MS 120000 /* one slotctl or slot-bench run */
#define OUT_BYTES (64u << 10)
#define PIPELINE 256 /* get_hold requests in flight while the holds are compared */
#define PATH_BYTES 1024

static const char *env_path(const char *name)
{
    const char *p = getenv(name);
    if (!p || !*p)
        T_FAIL_("%s is not set (run through meson test)", name);
    return p;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Starts argv (NULL-ended) with stdout and stderr into the file log. */
static pid_t spawn(const char *const *argv, const char *log)
{
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Waits for pid (up to RUN_TIMEOUT_MS, then kills it and fails); its exit status. */
static int wait_exit(pid_t pid, const char *what)
{
    int st = 0;
    uint64_t t0 = slot_test_now_ms();
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (slot_test_now_ms() - t0 > RUN_TIMEOUT_MS) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            T_FAIL_("%s ran longer than %d ms", what, RUN_TIMEOUT_MS);
        }
        sleep_ms(10);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void read_file(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(out, 1, cap - 1, f) : 0;
    out[got] = 0;
    if (f)
        fclose(f);
}

/* Runs a program to its end; its output (stdout + stderr) into out; its exit status. */
static int run(const char *dir, const char *const *argv, char *out)
{
    char log[PATH_BYTES];
    snprintf(log, sizeof log, "%s/run.log", dir);
    int rc = wait_exit(spawn(argv, log), argv[0]);
    read_file(log, out, OUT_BYTES);
    return rc;
}

/* The backup op to path; the reply (caller clears). */
static void backup(slot_client *c, const char *path, slot_reply *r)
{
    slot_req q;
    ASSERT_EQ(slot_req_backup(&q, path), 0);
    slot_test_call(c, &q, r);
}

static slot_test_digest backup_ok(slot_client *c, const char *path)
{
    slot_reply r;
    backup(c, path, &r);
    if (!r.ok)
        T_FAIL_("backup %s: %s", path, r.line);
    slot_test_digest d = {.seq = r.seq};
    memcpy(d.hex, r.digest, sizeof d.hex);
    ASSERT_EQ(strlen(d.hex), SLOT_DIGEST_HEX_BYTES);
    ASSERT(strstr(r.line, "\"bytes\":") != NULL);
    slot_reply_clear(&r);
    return d;
}

/* A hold of one event, for tests that need the server to sell. */
static void hold_one(slot_client *c, const char *ev, const char *request)
{
    slot_req q;
    ASSERT_EQ(slot_req_hold(&q, ev, "u", request, 1), 0);
    slot_reply r;
    slot_test_call(c, &q, &r);
    if (!r.ok || strcmp(r.status, "held") != 0)
        T_FAIL_("hold: %s", r.line);
    slot_reply_clear(&r);
}

/* ---- every hold of the restored store is one the server has */

typedef struct hold_list {
    size_t n, cap;
    slot_hold_rec *h;
} hold_list;

static int collect(void *ctx, const slot_hold_rec *rec)
{
    hold_list *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->h = realloc(l->h, l->cap * sizeof(*l->h));
        ASSERT(l->h != NULL);
    }
    l->h[l->n++] = *rec;
    return 0;
}

/* Reads every hold of event ev in the store in dir (read-only; a slotd may run on it). */
static hold_list holds_of(const char *dir, const char *ev)
{
    slot_store_opts o = {.dir = dir, .read_only = true};
    slot_store *st;
    char err[256];
    if (slot_store_open(&o, &st, err, sizeof err) != 0)
        T_FAIL_("open %s: %s", dir, err);
    MDB_txn *txn;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(st), NULL, MDB_RDONLY, &txn), 0);
    hold_list l = {0};
    ASSERT_EQ(slot_store_holds_scan(st, txn, ev, strlen(ev), collect, &l), 0);
    mdb_txn_abort(txn);
    slot_store_close(st);
    return l;
}

/* get_hold on c (admin: any user's) for every hold of l, PIPELINE at a time:
 * each must be known with the same user and qty. */
static void expect_server_has(slot_client *c, const char *ev, const hold_list *l)
{
    for (size_t i = 0; i < l->n; i += PIPELINE) {
        size_t end = i + PIPELINE < l->n ? i + PIPELINE : l->n;
        for (size_t j = i; j < end; j++) {
            char id[SLOT_HOLD_ID_BYTES + 1];
            snprintf(id, sizeof id, "%016llx%016llx", (unsigned long long)l->h[j].seq, (unsigned long long)l->h[j].tag);
            slot_req q;
            ASSERT_EQ(slot_req_hold_op(&q, SLOT_OP_GET_HOLD, ev, id, NULL), 0);
            ASSERT_EQ(slot_client_send(c, &q), 0);
        }
        for (size_t j = i; j < end; j++) {
            slot_reply r;
            ASSERT_EQ(slot_client_recv(c, &r, 10000), 0);
            if (!r.ok || strcmp(r.user, l->h[j].user) != 0 || r.qty != l->h[j].qty)
                T_FAIL_("hold seq %llu of the backup (user %s, qty %u): the server says %s",
                        (unsigned long long)l->h[j].seq, l->h[j].user, (unsigned)l->h[j].qty, r.line);
            slot_reply_clear(&r);
        }
    }
}

/* No scratch copy is left in dir (they are unlinked as soon as they are made). */
static void expect_no_scratch(const char *dir)
{
    DIR *d = opendir(dir);
    ASSERT(d != NULL);
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        if (strncmp(de->d_name, ".slot-", 6) == 0)
            T_FAIL_("scratch file %s left in %s", de->d_name, dir);
    closedir(d);
}

/* ---------------------------------------------------------------- the cases */

TEST_IMPL(backup_e2e_hot_release)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    char *tmp = slot_test_tmpdir();
    slot_client *c = slot_test_dial(&srv);
    char port[16], paused[PATH_BYTES], load[PATH_BYTES], log[PATH_BYTES], r1[PATH_BYTES], r2[PATH_BYTES];
    snprintf(port, sizeof port, "%u", (unsigned)srv.port);
    snprintf(paused, sizeof paused, "%s/paused.bak", tmp);
    snprintf(load, sizeof load, "%s/load.bak", tmp);
    snprintf(log, sizeof log, "%s/bench.log", tmp);
    snprintf(r1, sizeof r1, "%s/r1", tmp);
    snprintf(r2, sizeof r2, "%s/r2", tmp);

    const char *bench[] = {env_path("SLOT_BENCH"),
                           "hot-release",
                           "--port",
                           port,
                           "--event",
                           "hr",
                           "--capacity",
                           "60000",
                           "--connections",
                           "16",
                           "--pipeline",
                           "4",
                           "--tail",
                           "2000",
                           "--seed",
                           "11",
                           NULL};
    pid_t pid = spawn(bench, log);
    /* Some holds first, so the backups are taken mid-sale. */
    uint64_t t0 = slot_test_now_ms();
    while (slot_test_stat(&srv, "holds") < 3000 && slot_test_now_ms() - t0 < RUN_TIMEOUT_MS)
        sleep_ms(5);
    uint64_t holds_at_pause = slot_test_stat(&srv, "holds");
    ASSERT_U64_LE(3000, holds_at_pause);

    /* Paused: the requests in flight end, then digest, backup, digest
     * agree once no commit fell between them. */
    ASSERT_EQ(kill(pid, SIGSTOP), 0);
    slot_test_digest before, b1, after;
    int tries = 0;
    do {
        before = slot_test_digest_of(c);
        b1 = backup_ok(c, paused);
        after = slot_test_digest_of(c);
        ASSERT_LT(++tries, 100);
    } while (before.seq != after.seq);
    slot_test_digest_same(&b1, &before);
    ASSERT_EQ(kill(pid, SIGCONT), 0);

    /* Under full load, a third of the way into the sale (it sells all 60000). */
    while (slot_test_stat(&srv, "holds") < 20000)
        sleep_ms(5);
    slot_test_digest b2 = backup_ok(c, load);
    uint64_t holds_at_b2 = slot_test_stat(&srv, "holds");
    int rc = wait_exit(pid, "slot-bench");
    char *out = malloc(OUT_BYTES);
    ASSERT(out != NULL);
    read_file(log, out, OUT_BYTES);
    if (rc != 0 || !strstr(out, "verification: passed"))
        T_FAIL_("slot-bench exited %d:\n%s", rc, out);
    printf("  backups at %llu and %llu holds (seq %llu, %llu) of 60000; final seq %llu\n",
           (unsigned long long)holds_at_pause, (unsigned long long)holds_at_b2, (unsigned long long)b1.seq,
           (unsigned long long)b2.seq, (unsigned long long)slot_test_digest_of(c).seq);
    ASSERT_U64_LE(b1.seq, b2.seq);

    /* verify-backup: intact, clean, the same seq and digest. */
    const char *verify[] = {env_path("SLOTCTL"), "--json", "verify-backup", load, NULL};
    rc = run(tmp, verify, out);
    if (rc != 0 || !strstr(out, "\"violations\":0") || !strstr(out, b2.hex))
        T_FAIL_("verify-backup exited %d:\n%s", rc, out);

    /* The paused backup, restored by slotctl and served: the server's seq and digest then. */
    const char *restore[] = {env_path("SLOTCTL"), "restore", paused, "--data", r1, NULL};
    rc = run(tmp, restore, out);
    if (rc != 0 || !strstr(out, b1.hex))
        T_FAIL_("restore exited %d:\n%s", rc, out);
    slot_test_server s1 = {0};
    slot_test_server_start(&s1, r1, NULL);
    slot_client *c1 = slot_test_dial(&s1);
    slot_test_digest d1 = slot_test_digest_of(c1);
    slot_test_digest_same(&d1, &b1);
    ASSERT_U64_LE(3000, slot_test_check_clean(c1, NULL));
    slot_client_close(c1);
    ASSERT_EQ(slot_test_server_stop(&s1), 0);
    slot_test_server_free(&s1);

    /* The one under load, by slotd --restore: its header's seq and digest,
     * clean, and every hold in it one the server has (same user, qty). */
    const char *const flags[] = {"--restore", load, NULL};
    slot_test_server s2 = {0};
    slot_test_server_start(&s2, r2, flags);
    slot_client *c2 = slot_test_dial(&s2);
    slot_test_digest d2 = slot_test_digest_of(c2);
    slot_test_digest_same(&d2, &b2);
    ASSERT_U64_LE(3000, slot_test_check_clean(c2, NULL));
    hold_list l = holds_of(r2, "hr");
    ASSERT_U64_LE(20000, l.n);
    expect_server_has(c, "hr", &l);
    printf("  %zu holds of the backup under load found on the server\n", l.n);
    free(l.h);
    slot_client_close(c2);
    ASSERT_EQ(slot_test_server_stop(&s2), 0);
    slot_test_server_free(&s2);

    free(out);
    slot_client_close(c);
    slot_test_stop(&srv);
    expect_no_scratch(tmp);
    slot_test_rmdir(tmp);
    free(tmp);
}

/* Flips one byte of path at offset. */
static void flip(const char *path, off_t at)
{
    int fd = open(path, O_RDWR);
    ASSERT(fd >= 0);
    unsigned char b;
    ASSERT_EQ(pread(fd, &b, 1, at), 1);
    b ^= 0x40;
    ASSERT_EQ(pwrite(fd, &b, 1, at), 1);
    close(fd);
}

static void copy_file(const char *from, const char *to)
{
    char cmd[3 * PATH_BYTES];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    ASSERT_EQ(system(cmd), 0);
}

/* verify-backup and restore both refuse file with a message containing want; nothing restored. */
static void expect_refused(const char *tmp, const char *file, const char *want)
{
    char *out = malloc(OUT_BYTES);
    ASSERT(out != NULL);
    const char *verify[] = {env_path("SLOTCTL"), "verify-backup", file, NULL};
    int rc = run(tmp, verify, out);
    if (rc != 1 || !strstr(out, want))
        T_FAIL_("verify-backup %s exited %d (want 1, \"%s\"):\n%s", file, rc, want, out);
    char dir[PATH_BYTES], mdb[PATH_BYTES + 16];
    snprintf(dir, sizeof dir, "%s/refused", tmp);
    snprintf(mdb, sizeof mdb, "%s/data.mdb", dir);
    const char *restore[] = {env_path("SLOTCTL"), "restore", file, "--data", dir, NULL};
    rc = run(tmp, restore, out);
    if (rc != 1 || !strstr(out, want))
        T_FAIL_("restore %s exited %d (want 1, \"%s\"):\n%s", file, rc, want, out);
    struct stat sb;
    ASSERT(stat(mdb, &sb) != 0); /* nothing put in place */
    free(out);
}

TEST_IMPL(backup_e2e_damaged_files_refused)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    char *tmp = slot_test_tmpdir();
    slot_client *c = slot_test_dial(&srv);
    slot_test_create_event(c, "e", 100, NULL, NULL);
    hold_one(c, "e", "r1");
    char good[PATH_BYTES], bad[PATH_BYTES];
    snprintf(good, sizeof good, "%s/good.bak", tmp);
    snprintf(bad, sizeof bad, "%s/bad.bak", tmp);
    backup_ok(c, good);
    slot_client_close(c);
    slot_test_stop(&srv);

    slot_backup_info bi;
    char err[512];
    ASSERT_EQ(slot_backup_read_header(good, &bi, err, sizeof err), 0);
    ASSERT_U64_EQ(bi.file_bytes, bi.data_bytes + SLOT_BACKUP_HEADER_BYTES);

    copy_file(good, bad);
    flip(bad, SLOT_BACKUP_HEADER_BYTES + (off_t)bi.data_bytes / 2); /* a data byte */
    expect_refused(tmp, bad, "does not match its SHA-256");
    copy_file(good, bad);
    flip(bad, 20); /* seq, in the header */
    expect_refused(tmp, bad, "header is damaged");
    copy_file(good, bad);
    flip(bad, 0); /* the magic */
    expect_refused(tmp, bad, "not a slotd backup");
    copy_file(good, bad);
    ASSERT_EQ(truncate(bad, (off_t)bi.file_bytes - 1), 0);
    expect_refused(tmp, bad, "truncated");
    char missing[PATH_BYTES];
    snprintf(missing, sizeof missing, "%s/none.bak", tmp);
    expect_refused(tmp, missing, "No such file");

    /* The good one passes, in-process too. */
    slot_res check;
    memset(&check, 0, sizeof check);
    ASSERT_EQ(slot_backup_verify(good, tmp, &bi, slot_check_backup_copy, &check, err, sizeof err), 0);
    ASSERT_EQ(check.nviolations, 0);
    ASSERT_U64_EQ(check.holds_checked, 1);
    slot_res_clear(&check);
    slot_test_rmdir(tmp);
    free(tmp);
}

TEST_IMPL(backup_e2e_restore_folders)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    char *tmp = slot_test_tmpdir();
    slot_client *c = slot_test_dial(&srv);
    slot_test_create_event(c, "e", 100, NULL, NULL);
    hold_one(c, "e", "r1");
    char file[PATH_BYTES], dir[PATH_BYTES];
    snprintf(file, sizeof file, "%s/b.bak", tmp);
    snprintf(dir, sizeof dir, "%s/d", tmp);
    slot_test_digest b = backup_ok(c, file);
    char *out = malloc(OUT_BYTES);
    ASSERT(out != NULL);

    /* A running slotd's folder: refused, with --force too. */
    const char *in_use[] = {env_path("SLOTCTL"), "restore", file, "--data", srv.dir, "--force", NULL};
    int rc = run(tmp, in_use, out);
    if (rc != 1 || !strstr(out, "in use by a slotd"))
        T_FAIL_("restore into a running slotd's folder exited %d:\n%s", rc, out);
    hold_one(c, "e", "r2"); /* and that slotd goes on */
    slot_client_close(c);
    slot_test_stop(&srv);

    /* A non-empty folder: refused, then replaced with --force. */
    ASSERT_EQ(mkdir(dir, 0700), 0);
    char stray[PATH_BYTES + 16];
    snprintf(stray, sizeof stray, "%s/data.mdb", dir);
    FILE *f = fopen(stray, "w");
    ASSERT(f != NULL);
    fputs("not a store", f);
    fclose(f);
    const char *plain[] = {env_path("SLOTCTL"), "restore", file, "--data", dir, NULL};
    rc = run(tmp, plain, out);
    if (rc != 1 || !strstr(out, "is not empty"))
        T_FAIL_("restore into a non-empty folder exited %d:\n%s", rc, out);
    const char *refused[] = {"--restore", file, "--data", dir, NULL};
    char err[1024];
    ASSERT_EQ(slot_test_run_refused(refused, err, sizeof err), 1);
    ASSERT(strstr(err, "is not empty") != NULL);
    const char *force[] = {env_path("SLOTCTL"), "restore", file, "--data", dir, "--force", NULL};
    rc = run(tmp, force, out);
    if (rc != 0)
        T_FAIL_("restore --force exited %d:\n%s", rc, out);
    slot_test_server s = {0};
    slot_test_server_start(&s, dir, NULL);
    c = slot_test_dial(&s);
    slot_test_digest d = slot_test_digest_of(c);
    slot_test_digest_same(&d, &b);
    ASSERT_U64_LE(1, slot_test_check_clean(c, NULL));
    slot_client_close(c);
    ASSERT_EQ(slot_test_server_stop(&s), 0);
    slot_test_server_free(&s);

    /* In-process, as a slotd replacing its own (closed) store would: the
     * folder's lock held by this process on another descriptor. */
    char own[PATH_BYTES], lockp[PATH_BYTES + 16];
    snprintf(own, sizeof own, "%s/own", tmp);
    ASSERT_EQ(mkdir(own, 0700), 0);
    snprintf(lockp, sizeof lockp, "%s/slotd.lock", own);
    int lfd = open(lockp, O_RDWR | O_CREAT, 0600);
    ASSERT(lfd >= 0);
    ASSERT_EQ(flock(lfd, LOCK_EX | LOCK_NB), 0);
    slot_backup_info bi;
    ASSERT_EQ(slot_backup_restore(file, own, SLOT_BACKUP_RESTORE_FORCE, &bi, err, sizeof err), SLOT_BACKUP_E_IN_USE);
    ASSERT_EQ(slot_backup_restore(file, own, SLOT_BACKUP_RESTORE_LOCK_HELD, &bi, err, sizeof err), 0);
    ASSERT_U64_EQ(bi.seq, b.seq);
    ASSERT_STR_EQ(bi.digest, b.hex);
    close(lfd);

    /* Usage: --data is required. */
    const char *usage[] = {env_path("SLOTCTL"), "restore", file, NULL};
    ASSERT_EQ(run(tmp, usage, out), 64);
    free(out);
    slot_test_rmdir(tmp);
    free(tmp);
}

TEST_IMPL(backup_e2e_unwritable_path)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    char *tmp = slot_test_tmpdir();
    slot_client *c = slot_test_dial(&srv);
    slot_test_create_event(c, "e", 100, NULL, NULL);
    char path[PATH_BYTES], under_file[PATH_BYTES + 16];
    snprintf(path, sizeof path, "%s/no/such/folder/b.bak", tmp);
    slot_reply r;
    backup(c, path, &r);
    ASSERT(!r.ok);
    ASSERT_STR_EQ(r.error, "backup_failed");
    ASSERT(strstr(r.message, "No such file or directory") != NULL);
    slot_reply_clear(&r);
    /* A folder that is a file. */
    snprintf(path, sizeof path, "%s/plain", tmp);
    FILE *f = fopen(path, "w");
    ASSERT(f != NULL);
    fclose(f);
    snprintf(under_file, sizeof under_file, "%s/x.bak", path);
    backup(c, under_file, &r);
    ASSERT_STR_EQ(r.error, "backup_failed");
    ASSERT(strstr(r.message, "Not a directory") != NULL);
    slot_reply_clear(&r);
    /* A folder without write permission (root writes anyway: only as another user). */
    if (geteuid() != 0) {
        char ro[PATH_BYTES], ro_file[PATH_BYTES + 16];
        snprintf(ro, sizeof ro, "%s/ro", tmp);
        ASSERT_EQ(mkdir(ro, 0500), 0);
        snprintf(ro_file, sizeof ro_file, "%s/x.bak", ro);
        backup(c, ro_file, &r);
        ASSERT_STR_EQ(r.error, "backup_failed");
        ASSERT(strstr(r.message, "Permission denied") != NULL);
        slot_reply_clear(&r);
        ASSERT_EQ(chmod(ro, 0700), 0);
    }
    /* A relative path is the client's mistake: invalid_argument, nothing written. */
    const char *rel = "{\"op\":\"backup\",\"path\":\"b.bak\"}\n";
    ASSERT_EQ(slot_client_send_raw(c, rel, strlen(rel)), 0);
    ASSERT_EQ(slot_client_recv(c, &r, 10000), 0);
    ASSERT_STR_EQ(r.error, "invalid_argument");
    slot_reply_clear(&r);
    /* The server goes on selling, and a later backup works. */
    hold_one(c, "e", "after");
    snprintf(path, sizeof path, "%s/ok.bak", tmp);
    backup_ok(c, path);
    /* slotctl says why, exit 1. */
    char *out = malloc(OUT_BYTES);
    ASSERT(out != NULL);
    char port[16];
    snprintf(port, sizeof port, "127.0.0.1:%u", (unsigned)srv.port);
    const char *ctl[] = {env_path("SLOTCTL"), "--host", port, "backup", under_file, NULL};
    int rc = run(tmp, ctl, out);
    if (rc != 1 || !strstr(out, "backup_failed") || !strstr(out, "Not a directory"))
        T_FAIL_("slotctl backup exited %d:\n%s", rc, out);
    free(out);
    slot_client_close(c);
    slot_test_stop(&srv);
    slot_test_rmdir(tmp);
    free(tmp);
}

/* The first backup writes into a FIFO (its PATH.tmp) that nobody reads yet,
 * so it is still running, deterministically, when the second one comes. */
static void *drain(void *arg)
{
    int fd = open(arg, O_RDONLY);
    char buf[65536];
    while (fd >= 0 && read(fd, buf, sizeof buf) > 0) {
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

TEST_IMPL(backup_e2e_one_at_a_time)
{
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    char *tmp = slot_test_tmpdir();
    slot_client *c = slot_test_dial(&srv), *c2 = slot_test_dial(&srv);
    slot_test_create_event(c, "e", 100, NULL, NULL);
    char first[PATH_BYTES], fifo[PATH_BYTES + 8], second[PATH_BYTES];
    snprintf(first, sizeof first, "%s/first.bak", tmp);
    snprintf(fifo, sizeof fifo, "%s.tmp", first);
    snprintf(second, sizeof second, "%s/second.bak", tmp);
    ASSERT_EQ(mkfifo(fifo, 0600), 0);
    slot_req q;
    ASSERT_EQ(slot_req_backup(&q, first), 0);
    ASSERT_EQ(slot_client_send(c, &q), 0); /* blocks in open() on the FIFO, on the worker */
    while (slot_test_stat(&srv, "backups_running") == 0)
        sleep_ms(5);
    slot_reply r;
    backup(c2, second, &r);
    ASSERT(!r.ok);
    ASSERT_STR_EQ(r.error, "busy");
    ASSERT(strstr(r.message, first) != NULL);
    slot_reply_clear(&r);
    hold_one(c2, "e", "meanwhile"); /* the loop and the commit thread go on */
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, drain, fifo), 0);
    ASSERT_EQ(slot_client_recv(c, &r, 10000), 0);
    ASSERT(r.ok || strcmp(r.error, "backup_failed") == 0); /* a FIFO takes the bytes, not the fsync */
    slot_reply_clear(&r);
    pthread_join(t, NULL);
    backup_ok(c2, second); /* the next one runs */
    expect_no_scratch(tmp);
    ASSERT_U64_EQ(slot_test_stat(&srv, "backups_running"), 0);
    slot_client_close(c);
    slot_client_close(c2);
    slot_test_stop(&srv);
    slot_test_rmdir(tmp);
    free(tmp);
}
