/*
 * test_notify.c — slotd under systemd's Type=notify protocol (sd_notify(3);
 * docs/operations.md, "systemd"): the test binds the unix datagram socket a
 * service manager would, points $NOTIFY_SOCKET at it, and reads what slotd
 * sends: READY=1 (with STATUS=listening on ...) once it listens, STOPPING=1
 * after SIGTERM, WATCHDOG=1 pings when $WATCHDOG_USEC (and $WATCHDOG_PID,
 * this slotd's pid) ask for them, and none when $WATCHDOG_PID names another
 * process. Skipped when slotd was built without libsystemd.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "slot_config.h"

TEST_DECLARE(notify_ready_then_stopping)
TEST_DECLARE(notify_watchdog_pings)
TEST_DECLARE(notify_watchdog_of_another_pid_silent)

TEST_LIST_START
TEST_ENTRY(notify_ready_then_stopping)
TEST_ENTRY(notify_watchdog_pings)
TEST_ENTRY(notify_watchdog_of_another_pid_silent)
TEST_LIST_END

#define TIMEOUT_MS 10000

/* The socket a service manager listens on; $NOTIFY_SOCKET names it. */
static int notify_socket(const char *dir)
{
#ifndef SLOT_HAVE_LIBSYSTEMD
    (void)dir;
    SLOT_TEST_SKIP("slotd was built without libsystemd (meson -Dsystemd): it sends no notifications");
#else
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int n = snprintf(sa.sun_path, sizeof sa.sun_path, "%s/notify", dir);
    ASSERT(n > 0 && (size_t)n < sizeof sa.sun_path);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT(fd >= 0);
    ASSERT_EQ(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    ASSERT_EQ(setenv("NOTIFY_SOCKET", sa.sun_path, 1), 0);
    return fd;
#endif
}

/* The next datagram (NUL-ended in buf), waiting up to TIMEOUT_MS. */
static void recv_msg(int fd, char *buf, size_t cap)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, TIMEOUT_MS) != 1)
        T_FAIL_("no notification within %d ms", TIMEOUT_MS);
    ssize_t n = recv(fd, buf, cap - 1, 0);
    ASSERT_GT(n, 0);
    buf[n] = 0;
}

/* Reads datagrams until one holds `want`; fails at the timeout. */
static void expect_msg(int fd, const char *want, char *buf, size_t cap)
{
    for (;;) {
        recv_msg(fd, buf, cap);
        if (strstr(buf, want))
            return;
    }
}

/*
 * Starts $SLOTD on 127.0.0.1:0 with its environment's $WATCHDOG_PID set to
 * its own pid when own_pid (so sd_watchdog_enabled says yes), or left as it
 * is; waits for "listening on" and fills s.
 */
static void start_slotd(slot_test_server *s, bool own_pid)
{
    const char *bin = getenv("SLOTD");
    memset(s, 0, sizeof *s);
    s->dir = slot_test_tmpdir();
    s->own_dir = true;
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    fflush(NULL);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        char self[32];
        snprintf(self, sizeof self, "%ld", (long)getpid());
        if (own_pid)
            setenv("WATCHDOG_PID", self, 1);
        dup2(out[1], STDOUT_FILENO);
        close(out[0]);
        close(out[1]);
        execl(bin ? bin : "./slotd", "slotd", "--listen", "127.0.0.1:0", "--data", s->dir, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    s->pid = pid;
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
    close(out[0]);
    unsigned port = 0;
    ASSERT_EQ(sscanf(line, "listening on 127.0.0.1:%u", &port), 1);
    s->port = (uint16_t)port;
}

TEST_IMPL(notify_ready_then_stopping)
{
    char *dir = slot_test_tmpdir();
    int fd = notify_socket(dir);
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    slot_test_server srv = {0};
    slot_test_start(&srv, NULL);
    char msg[512], want[128];
    recv_msg(fd, msg, sizeof msg); /* the first thing slotd says */
    ASSERT(strstr(msg, "READY=1") != NULL);
    snprintf(want, sizeof want, "STATUS=listening on 127.0.0.1:%u", srv.port);
    if (!strstr(msg, want))
        T_FAIL_("READY without \"%s\": \"%s\"", want, msg);
    ASSERT_EQ(slot_test_server_stop(&srv), 0); /* SIGTERM; it has exited */
    recv_msg(fd, msg, sizeof msg);             /* the next thing: no watchdog was asked for */
    if (!strstr(msg, "STOPPING=1"))
        T_FAIL_("after SIGTERM, want STOPPING=1, got \"%s\"", msg);
    slot_test_server_free(&srv);
    close(fd);
    slot_test_rmdir(dir);
    free(dir);
}

/* WATCHDOG_USEC=200000 with this slotd's pid: a ping with READY and more
 * from the timer (every 100 ms) until it stops. */
TEST_IMPL(notify_watchdog_pings)
{
    char *dir = slot_test_tmpdir();
    int fd = notify_socket(dir);
    ASSERT_EQ(setenv("WATCHDOG_USEC", "200000", 1), 0);
    slot_test_server srv;
    start_slotd(&srv, true);
    char msg[512];
    expect_msg(fd, "READY=1", msg, sizeof msg);
    for (int i = 0; i < 3; i++) {
        recv_msg(fd, msg, sizeof msg);
        if (strcmp(msg, "WATCHDOG=1") != 0)
            T_FAIL_("ping %d: want WATCHDOG=1, got \"%s\"", i, msg);
    }
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    expect_msg(fd, "STOPPING=1", msg, sizeof msg);
    slot_test_server_free(&srv);
    close(fd);
    slot_test_rmdir(dir);
    free(dir);
}

/* WATCHDOG_PID of another process (this test's): the watchdog is not
 * slotd's, so READY=1 is followed by STOPPING=1 and nothing between. */
TEST_IMPL(notify_watchdog_of_another_pid_silent)
{
    char *dir = slot_test_tmpdir();
    int fd = notify_socket(dir);
    char other[32];
    snprintf(other, sizeof other, "%ld", (long)getpid());
    ASSERT_EQ(setenv("WATCHDOG_USEC", "200000", 1), 0);
    ASSERT_EQ(setenv("WATCHDOG_PID", other, 1), 0);
    slot_test_server srv;
    start_slotd(&srv, false);
    char msg[512];
    recv_msg(fd, msg, sizeof msg);
    ASSERT(strstr(msg, "READY=1") != NULL);
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    recv_msg(fd, msg, sizeof msg);
    if (!strstr(msg, "STOPPING=1"))
        T_FAIL_("want STOPPING=1 right after READY=1, got \"%s\"", msg);
    slot_test_server_free(&srv);
    close(fd);
    slot_test_rmdir(dir);
    free(dir);
}
