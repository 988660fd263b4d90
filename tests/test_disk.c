/*
 * test_disk.c — a full disk against a real slotd (docs/protocol.md,
 * "storage_full"): with its data folder on a 3 MiB tmpfs filled up, holds
 * are answered storage_full and change nothing; replays, reads and releases
 * go on being served; once space is freed, holds succeed again.
 *
 * Needs root (it mounts the tmpfs); otherwise, or when the mount is refused,
 * it says it skipped and exits 77 (meson: skipped). The case runs in a
 * forked child so that, whatever happens to it, the parent stops the slotd
 * it started (by PID) and unmounts.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "slot/client.h"

TEST_DECLARE(disk_full_answers_storage_full)

TEST_LIST_START
TEST_ENTRY(disk_full_answers_storage_full)
TEST_LIST_END

#define TIMEOUT_MS 10000
#define TMPFS_OPTS "size=3m"
#define HOLDS_BEFORE 20     /* holds made while there is room */
#define HOLDS_TRY_MAX 50000 /* holds tried before the disk must have filled */

static volatile pid_t case_pid; /* the forked case, for on_stop_signal */

/* SIGTERM/SIGINT (meson's timeout, ^C): end the case now, so that the
 * cleanup after waitpid still stops slotd and unmounts. */
static void on_stop_signal(int sig)
{
    (void)sig;
    if (case_pid > 0)
        kill(case_pid, SIGKILL);
}

static int pid_pipe[2] = {-1, -1}; /* child -> parent: the slotd PID, to stop it whatever happens */

static void call(slot_client *c, const slot_req *req, slot_reply *rep)
{
    slot_reply_clear(rep);
    ASSERT_EQ(slot_client_call(c, req, rep, TIMEOUT_MS), 0);
}

static void hold(slot_client *c, const char *user, const char *request, slot_reply *rep)
{
    slot_req req;
    ASSERT_EQ(slot_req_hold(&req, "e", user, request, 1), 0);
    call(c, &req, rep);
}

/* Fills the file system of dir: a file written until the kernel says ENOSPC. */
static void fill(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT(fd >= 0);
    static char chunk[64 << 10];
    memset(chunk, 'x', sizeof chunk);
    for (size_t n = sizeof chunk; n >= 1; n /= 16) {
        while (write(fd, chunk, n) == (ssize_t)n) {
        }
    }
    ASSERT_EQ(errno, ENOSPC);
    close(fd);
}

static void disk_full_case(const char *mnt)
{
    char data[4096], filler[4096];
    snprintf(data, sizeof data, "%s/data", mnt);
    snprintf(filler, sizeof filler, "%s/filler", mnt);
    slot_test_server srv;
    slot_test_server_start(&srv, data, NULL);
    ASSERT_EQ(write(pid_pipe[1], &srv.pid, sizeof srv.pid), (ssize_t)sizeof srv.pid);
    slot_client *c = slot_test_dial(&srv);
    slot_reply rep = {0};
    slot_req req;

    ASSERT_EQ(slot_req_event(&req, SLOT_OP_CREATE_EVENT, "e"), 0);
    req.capacity = 1000000;
    call(c, &req, &rep);
    ASSERT(rep.ok);

    char holds[HOLDS_BEFORE][SLOT_HOLD_ARG_BYTES_MAX + 1];
    for (int i = 0; i < HOLDS_BEFORE; i++) {
        char user[32];
        snprintf(user, sizeof user, "u%d", i);
        hold(c, user, "first", &rep);
        ASSERT(rep.ok);
        snprintf(holds[i], sizeof holds[i], "%s", rep.hold);
    }

    fill(filler);
    uint64_t held = HOLDS_BEFORE;
    int tried = 0;
    for (;; tried++) {
        ASSERT_LT(tried, HOLDS_TRY_MAX);
        char user[32], request[32];
        snprintf(user, sizeof user, "v%d", tried);
        snprintf(request, sizeof request, "r%d", tried);
        hold(c, user, request, &rep);
        if (!rep.ok)
            break;
        held++;
    }
    if (rep.err != SLOT_E_STORAGE_FULL)
        fprintf(stderr, "a hold on a full disk was answered %s: %s\n", rep.error, rep.message);
    ASSERT_EQ(rep.err, SLOT_E_STORAGE_FULL);
    fprintf(stderr, "disk full after %d more holds\n", tried);

    /* Nothing changed: the event counts exactly the holds answered held. */
    ASSERT_EQ(slot_req_event(&req, SLOT_OP_EVENT, "e"), 0);
    call(c, &req, &rep);
    ASSERT(rep.ok);
    ASSERT_EQ(rep.held, held);

    /* A replay is served: the hold it made, replay:true. */
    hold(c, "u0", "first", &rep);
    ASSERT(rep.ok);
    ASSERT(rep.replay);
    ASSERT_STR_EQ(rep.hold, holds[0]);

    /* Reads are served. */
    ASSERT_EQ(slot_req_hold_op(&req, SLOT_OP_GET_HOLD, "e", holds[1], "u1"), 0);
    call(c, &req, &rep);
    ASSERT(rep.ok);
    ASSERT_STR_EQ(rep.status, "held");

    /* A release is served (its pages come from LMDB's free list), or, when
     * even that has no room, refused as storage_full — never internal. */
    ASSERT_EQ(slot_req_hold_op(&req, SLOT_OP_RELEASE, "e", holds[2], "u2"), 0);
    call(c, &req, &rep);
    if (!rep.ok)
        ASSERT_EQ(rep.err, SLOT_E_STORAGE_FULL);
    bool released = rep.ok;
    fprintf(stderr, "release on the full disk: %s\n", released ? "released" : "storage_full");

    /* Space freed: writes work again. */
    ASSERT_EQ(unlink(filler), 0);
    hold(c, "w", "after", &rep);
    ASSERT(rep.ok);
    ASSERT_STR_EQ(rep.status, "held");
    if (!released) {
        ASSERT_EQ(slot_req_hold_op(&req, SLOT_OP_RELEASE, "e", holds[2], "u2"), 0);
        call(c, &req, &rep);
        ASSERT(rep.ok);
    }

    ASSERT_EQ(slot_req_event(&req, SLOT_OP_CHECK, NULL), 0);
    call(c, &req, &rep);
    ASSERT(rep.ok);
    ASSERT_EQ(rep.nviolations, 0);

    slot_reply_clear(&rep);
    slot_client_close(c);
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    pid_t none = 0; /* stopped and reaped: nothing left for the parent to stop */
    ASSERT_EQ(write(pid_pipe[1], &none, sizeof none), (ssize_t)sizeof none);
    slot_test_server_free(&srv);
}

TEST_IMPL(disk_full_answers_storage_full)
{
    if (geteuid() != 0) {
        SLOT_TEST_SKIP("needs root to mount a tmpfs");
    }
    char *mnt = slot_test_tmpdir();
    if (mount("tmpfs", mnt, "tmpfs", 0, TMPFS_OPTS) != 0) {
        int err = errno;
        rmdir(mnt);
        free(mnt);
        SLOT_TEST_SKIP("mount -t tmpfs -o %s: %s", TMPFS_OPTS, strerror(err));
    }
    ASSERT_EQ(pipe2(pid_pipe, O_CLOEXEC), 0); /* slotd must not hold the write end */
    /* A slotd orphaned by a failed case is reparented here, so it can be reaped. */
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    pid_t child = fork();
    ASSERT(child >= 0);
    if (child == 0) {
        close(pid_pipe[0]);
        disk_full_case(mnt);
        _exit(0);
    }
    case_pid = child;
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    close(pid_pipe[1]);
    int st = 0;
    while (waitpid(child, &st, 0) < 0 && errno == EINTR) {
    }
    /* The slotd the case started, if the case did not stop it. */
    pid_t server = 0, got;
    while (read(pid_pipe[0], &got, sizeof got) == (ssize_t)sizeof got)
        server = got; /* the last word: its PID, or 0 once stopped */
    if (server > 0 && kill(server, SIGKILL) == 0)
        waitpid(server, NULL, 0);
    close(pid_pipe[0]);
    int rc = umount(mnt);
    if (rc != 0)
        rc = umount2(mnt, MNT_DETACH);
    if (rc != 0)
        fprintf(stderr, "umount %s: %s\n", mnt, strerror(errno));
    slot_test_rmdir(mnt);
    free(mnt);
    ASSERT(WIFEXITED(st));
    ASSERT_EQ(WEXITSTATUS(st), 0);
}
