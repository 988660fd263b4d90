/*
 * fuzz_conn.c — libFuzzer target for random byte streams over a connection.
 *
 * The framing, limits and dispatch live in slotd's event loop, so this
 * target starts a real slotd once ($SLOTD, ideally a sanitizer build; see
 * tests/fuzz/run.sh) on 127.0.0.1 and, for each input, opens a connection,
 * writes the input as it is, then a newline (ending any partial line) and a
 * sentinel hello whose reply says every earlier reply has arrived (replies
 * come in request order). Every line the server sends must be one JSON
 * object with "ok"; the sentinel must be answered unless the server closed
 * the connection (line_too_long); and after each input the server must
 * still be alive and answer a hello on a fresh connection. At exit the
 * server is stopped with SIGTERM and must exit 0 (a sanitizer report in it,
 * a leak included, makes that fail).
 */
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "slot/error.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLY_WAIT_MS 5000        /* every request is answered well within this */
#define MAX_LINE "1024"           /* slotd's smallest --max-line, so inputs reach line_too_long */
#define READ_BYTES_MAX (8u << 20) /* replies to one input: far below this */

static pid_t server_pid;
static uint16_t server_port;
static char server_dir[256];
static unsigned long sentinel_no;

static void die(const char *what)
{
    fprintf(stderr, "fuzz_conn: %s\n", what);
    abort();
}

/* The server must not have exited (a crash, an abort, a sanitizer report). */
static void expect_alive(void)
{
    int st = 0;
    if (waitpid(server_pid, &st, WNOHANG) == server_pid) {
        fprintf(stderr, "fuzz_conn: slotd died: %s %d\n", WIFSIGNALED(st) ? "signal" : "exit status",
                WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        server_pid = 0;
        abort();
    }
}

static void stop_server(void)
{
    if (server_pid <= 0)
        return;
    kill(server_pid, SIGTERM);
    int st = 0;
    waitpid(server_pid, &st, 0);
    server_pid = 0;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", server_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz_conn: could not remove %s\n", server_dir);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "fuzz_conn: slotd did not exit cleanly on SIGTERM (%s %d)\n",
                WIFSIGNALED(st) ? "signal" : "exit status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        _exit(1);
    }
}

/* Reads "listening on HOST:PORT" from the server's stdout. */
static uint16_t read_port(int fd)
{
    char buf[256];
    size_t used = 0;
    while (used < sizeof buf - 1) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, 10000);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        ssize_t n = read(fd, buf + used, sizeof buf - 1 - used);
        if (n <= 0)
            break;
        used += (size_t)n;
        buf[used] = 0;
        const char *colon = strrchr(buf, ':');
        if (strchr(buf, '\n') && strncmp(buf, "listening on ", 13) == 0 && colon)
            return (uint16_t)atoi(colon + 1);
    }
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    signal(SIGPIPE, SIG_IGN);
    const char *bin = getenv("SLOTD");
    if (!bin)
        die("set SLOTD to the slotd to fuzz (tests/fuzz/run.sh does)");
    const char *tmp = getenv("TMPDIR");
    snprintf(server_dir, sizeof server_dir, "%s/slot-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(server_dir))
        die("mkdtemp");
    int out[2];
    if (pipe(out) != 0)
        die("pipe");
    server_pid = fork();
    if (server_pid < 0)
        die("fork");
    if (server_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlive the fuzzer */
        dup2(out[1], STDOUT_FILENO);
        close(out[0]);
        close(out[1]);
        execl(bin, bin, "--listen", "127.0.0.1:0", "--data", server_dir, "--durability", "nosync", "--max-line",
              MAX_LINE, "--sweep-interval-ms", "10", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    server_port = read_port(out[0]);
    close(out[0]); /* slotd writes nothing more to stdout */
    if (server_port == 0) {
        kill(server_pid, SIGKILL);
        die("slotd did not print its port");
    }
    atexit(stop_server);
    return 0;
}

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(server_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* Close with a reset: a connection per input would otherwise leave
     * tens of thousands in TIME_WAIT and run out of local ports. */
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    if (rc != 0 && errno == EINTR) {
        /* libFuzzer's timeout alarm interrupted the wait, not the connect,
         * which goes on: wait for it to finish and take its result. */
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        socklen_t elen = sizeof rc;
        while (poll(&p, 1, REPLY_WAIT_MS) < 0 && errno == EINTR) {
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &rc, &elen) != 0 || rc != 0)
            errno = rc ? rc : errno;
    }
    if (rc != 0) {
        int e = errno;
        expect_alive();
        fprintf(stderr, "fuzz_conn: connect: %s\n", strerror(e));
        die("cannot connect to slotd while it runs");
    }
    return fd;
}

/* Writes it all; false when the server has closed the connection. */
static bool write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* The server runs in its own process, out of libFuzzer's sight: a branch
 * per error code here lets inputs that reach a new kind of answer count as
 * new coverage, so the fuzzer keeps them. */
static void note_answer(const char *error)
{
    static volatile unsigned seen[SLOT_E__COUNT];
    switch (error ? slot_err_from_name(error) : SLOT_E_OK) {
#define NOTE_CASE(name, code, msg) \
    case SLOT_E_##name:            \
        seen[SLOT_E_##name]++;     \
        break;
        SLOT_ERR_MAP(NOTE_CASE)
#undef NOTE_CASE
    default:
        fprintf(stderr, "fuzz_conn: error code \"%s\" is not in docs/protocol.md's closed set\n", error);
        abort();
    }
}

/* One reply line: one JSON object with a boolean "ok". Returns 1 when it
 * answers the sentinel (its "id" is `sentinel`), 2 for line_too_long (the
 * server closes next), else 0. */
static int check_line(const char *line, size_t len, const char *sentinel)
{
    json_error_t jerr;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o || !json_is_object(o) || !json_is_boolean(json_object_get(o, "ok"))) {
        fprintf(stderr, "fuzz_conn: slotd sent a line that is not a reply (%s): %.*s\n", o ? "shape" : jerr.text,
                (int)len, line);
        abort();
    }
    json_t *id = json_object_get(o, "id"), *err = json_object_get(o, "error");
    note_answer(json_is_string(err) ? json_string_value(err) : NULL);
    int kind = json_is_string(id) && strcmp(json_string_value(id), sentinel) == 0            ? 1
               : json_is_string(err) && strcmp(json_string_value(err), "line_too_long") == 0 ? 2
                                                                                             : 0;
    json_decref(o);
    return kind;
}

/* Reads replies until the sentinel's, or until the server closes the
 * connection, which it may only do after line_too_long (a reset may cost
 * us that reply, so only an orderly close is held to it). */
static void read_replies(int fd, const char *sentinel)
{
    static char buf[READ_BYTES_MAX];
    size_t used = 0, start = 0;
    bool too_long = false;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, REPLY_WAIT_MS);
        if (r < 0 && errno == EINTR)
            continue; /* libFuzzer's alarm; the wait starts again */
        if (r == 0) {
            expect_alive();
            die("slotd did not answer within the wait (the sentinel hello got no reply)");
        }
        ssize_t n = recv(fd, buf + used, sizeof buf - used, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return; /* reset: the server closed with our bytes unread */
        if (n == 0) {
            if (!too_long)
                die("slotd closed the connection without line_too_long and without answering");
            return;
        }
        used += (size_t)n;
        for (char *nl; (nl = memchr(buf + start, '\n', used - start)) != NULL; start = (size_t)(nl - buf) + 1) {
            int kind = check_line(buf + start, (size_t)(nl - buf) - start, sentinel);
            if (kind == 1)
                return;
            too_long |= kind == 2;
        }
        if (used == sizeof buf)
            die("more reply bytes than one input can cause");
    }
}

/* The server still serves: a hello on a connection of our own (kept
 * across inputs) is answered. */
static void probe(void)
{
    static int fd = -1;
    static unsigned long n;
    char line[96], id[32];
    expect_alive();
    if (fd < 0)
        fd = dial();
    snprintf(id, sizeof id, "probe-%lu", ++n);
    int len = snprintf(line, sizeof line, "{\"op\":\"hello\",\"id\":\"%s\"}\n", id);
    if (!write_all(fd, line, (size_t)len))
        die("probe: slotd closed the probe connection");
    read_replies(fd, id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char sentinel[64], tail[128];
    snprintf(sentinel, sizeof sentinel, "fz-end-%lu", ++sentinel_no);
    int len = snprintf(tail, sizeof tail, "\n{\"op\":\"hello\",\"id\":\"%s\"}\n", sentinel);
    int fd = dial();
    if (write_all(fd, data, size))
        write_all(fd, tail, (size_t)len); /* a failed write: the server closed; read what came */
    read_replies(fd, sentinel);
    close(fd);
    probe();
    return 0;
}
