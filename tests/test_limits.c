/*
 * test_limits.c — the server's bounds against hostile and broken clients:
 * connection limit (accept pauses and resumes), requests in flight per
 * connection, a client that does not read, idle and unfinished-line
 * timeouts, the global queue bound (overloaded), and resets mid-stream.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "slot/client.h"

TEST_DECLARE(limits_accept_pauses_at_connection_limit)
TEST_DECLARE(limits_inflight_bound_pauses_reading)
TEST_DECLARE(limits_client_that_does_not_read_is_dropped)
TEST_DECLARE(limits_idle_and_unfinished_lines_time_out)
TEST_DECLARE(limits_overloaded_changes_nothing)
TEST_DECLARE(limits_reset_after_many_requests_keeps_serving)

TEST_LIST_START
TEST_ENTRY(limits_accept_pauses_at_connection_limit)
TEST_ENTRY(limits_inflight_bound_pauses_reading)
TEST_ENTRY(limits_client_that_does_not_read_is_dropped)
TEST_ENTRY(limits_idle_and_unfinished_lines_time_out)
TEST_ENTRY(limits_overloaded_changes_nothing)
TEST_ENTRY(limits_reset_after_many_requests_keeps_serving)
TEST_LIST_END

#define TIMEOUT_MS 10000

static slot_test_server srv;

static void hello_ok(slot_client *c)
{
    slot_req q;
    slot_reply r;
    slot_req_init(&q, SLOT_OP_HELLO);
    ASSERT_EQ(slot_client_call(c, &q, &r, TIMEOUT_MS), 0);
    ASSERT(r.ok);
    slot_reply_clear(&r);
}

/* create_event of ev on a connection of its own; the settings are the server's defaults. */
static void create(const char *ev, uint64_t capacity)
{
    slot_client *c = slot_test_dial(&srv);
    slot_test_create_event(c, ev, capacity, NULL, NULL);
    slot_client_close(c);
}

/* The event view after a clean check (harness.h), on a connection of its own. */
static slot_reply checked(const char *ev)
{
    slot_client *c = slot_test_dial(&srv);
    slot_reply r = slot_test_view_checked(c, ev);
    slot_client_close(c);
    return r;
}

TEST_IMPL(limits_accept_pauses_at_connection_limit)
{
    const char *extra[] = {"--max-connections", "3", NULL};
    slot_test_start(&srv, extra);
    slot_client *a[3];
    for (int i = 0; i < 3; i++) {
        a[i] = slot_test_dial(&srv);
        hello_ok(a[i]);
    }
    slot_client *late = slot_test_dial(&srv); /* the kernel completes the handshake; slotd does not accept it yet */
    slot_req q;
    slot_reply r;
    slot_req_init(&q, SLOT_OP_HELLO);
    ASSERT_EQ(slot_client_send(late, &q), 0);
    ASSERT_EQ(slot_client_recv(late, &r, 300), -ETIMEDOUT);
    slot_client_close(a[0]); /* one leaves: accepting resumes */
    ASSERT_EQ(slot_client_recv(late, &r, TIMEOUT_MS), 0);
    ASSERT(r.ok);
    slot_reply_clear(&r);
    slot_client_close(a[1]); /* room for the stats connection */
    ASSERT_GE(slot_test_stat(&srv, "accepts_paused"), 1);
    slot_client_close(a[2]);
    slot_client_close(late);
    slot_test_stop(&srv);
}

TEST_IMPL(limits_inflight_bound_pauses_reading)
{
    const char *extra[] = {"--max-inflight", "8", NULL};
    slot_test_start(&srv, extra);
    create("pipe", 5000);
    slot_client *c = slot_test_dial(&srv);
    enum { N = 3000 };
    char line[160];
    for (int i = 0; i < N; i++) {
        int n = snprintf(
            line, sizeof(line),
            "{\"id\":%d,\"op\":\"hold\",\"event\":\"pipe\",\"user\":\"u%d\",\"request\":\"r\",\"qty\":1}\n", i, i);
        ASSERT_EQ(slot_client_send_raw(c, line, (size_t)n), 0);
    }
    for (int i = 0; i < N; i++) {
        slot_reply r;
        ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), 0);
        ASSERT_EQ(r.id.i, i); /* slowed, never refused, in order */
        ASSERT_STR_EQ(r.status, "held");
        slot_reply_clear(&r);
    }
    slot_client_close(c);
    ASSERT_GE(slot_test_stat(&srv, "reads_paused"), 1);
    slot_reply v = checked("pipe");
    ASSERT_EQ(v.held, N);
    slot_reply_clear(&v);
    slot_test_stop(&srv);
}

/* A raw socket, so nothing reads replies behind the test's back. */
static int raw_dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(srv.port), .sin_addr.s_addr = htonl(0x7f000001)};
    ASSERT_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

/* True when the server closed fd (EOF or reset) within ms. */
static bool closed_within(int fd, int ms)
{
    uint64_t deadline = slot_test_now_ms() + (uint64_t)ms;
    char buf[65536];
    while (slot_test_now_ms() < deadline) {
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            return true;
        if (n < 0)
            usleep(10000);
    }
    return false;
}

TEST_IMPL(limits_client_that_does_not_read_is_dropped)
{
    const char *extra[] = {"--max-output", "65536", "--write-timeout-ms", "300", "--sweep-interval-ms", "50", NULL};
    slot_test_start(&srv, extra);
    int fd = raw_dial();
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    fcntl(fd, F_SETFL, O_NONBLOCK);
    const char *req = "{\"op\":\"stats\"}\n"; /* a ~900-byte reply for 15 bytes sent */
    size_t len = strlen(req);
    uint64_t deadline = slot_test_now_ms() + 5000;
    for (int i = 0; i < 200000 && slot_test_now_ms() < deadline; i++)
        if (send(fd, req, len, MSG_NOSIGNAL) < 0)
            break; /* the server stopped reading: our send buffer is full */
    /* The write timeout (300 ms) and the sweep (50 ms) drop it: wait for the
     * counter (a loaded machine may take longer than the timeouts say). */
    uint64_t until = slot_test_now_ms() + 10000;
    while (slot_test_stat(&srv, "connections_timed_out") < 1 && slot_test_now_ms() < until)
        usleep(50 * 1000);
    ASSERT_GE(slot_test_stat(&srv, "connections_timed_out"), 1);
    ASSERT(closed_within(fd, 3000));
    close(fd);
    slot_client *c = slot_test_dial(&srv); /* the server goes on */
    hello_ok(c);
    slot_client_close(c);
    slot_test_stop(&srv);
}

TEST_IMPL(limits_idle_and_unfinished_lines_time_out)
{
    const char *extra[] = {"--idle-timeout-ms", "300", "--line-timeout-ms", "300", "--sweep-interval-ms", "50", NULL};
    slot_test_start(&srv, extra);
    int idle = raw_dial();
    int partial = raw_dial();
    ASSERT_EQ(send(partial, "{\"op\":", 6, MSG_NOSIGNAL), 6);
    slot_client *busy = slot_test_dial(&srv);
    uint64_t t0 = slot_test_now_ms();
    bool idle_closed = false, partial_closed = false;
    while (slot_test_now_ms() - t0 < 3000 && !(idle_closed && partial_closed)) {
        hello_ok(busy); /* a connection that talks within the bound stays */
        idle_closed = idle_closed || closed_within(idle, 100);
        partial_closed = partial_closed || closed_within(partial, 1);
    }
    ASSERT(idle_closed);
    ASSERT(partial_closed);
    ASSERT_GE(slot_test_now_ms() - t0, 250);
    hello_ok(busy);
    close(idle);
    close(partial);
    slot_client_close(busy);
    slot_test_stop(&srv);
}

TEST_IMPL(limits_overloaded_changes_nothing)
{
    const char *extra[] = {"--max-queue", "1", NULL};
    slot_test_start(&srv, extra);
    create("crowd", 100000);
    enum { CONNS = 8, EACH = 300 };
    slot_client *cs[CONNS];
    char line[160];
    for (int k = 0; k < CONNS; k++) {
        cs[k] = slot_test_dial(&srv);
        for (int i = 0; i < EACH; i++) {
            int n = snprintf(line, sizeof(line),
                             "{\"op\":\"hold\",\"event\":\"crowd\",\"user\":\"u%d-%d\",\"request\":\"r\",\"qty\":1}\n",
                             k, i);
            ASSERT_EQ(slot_client_send_raw(cs[k], line, (size_t)n), 0);
        }
    }
    uint64_t held = 0, overloaded = 0;
    for (int k = 0; k < CONNS; k++) {
        for (int i = 0; i < EACH; i++) {
            slot_reply r;
            ASSERT_EQ(slot_client_recv(cs[k], &r, TIMEOUT_MS), 0);
            if (r.ok && strcmp(r.status, "held") == 0)
                held++;
            else if (!r.ok && strcmp(r.error, "overloaded") == 0)
                overloaded++;
            else
                T_FAIL_("unexpected reply: %s", r.line);
            slot_reply_clear(&r);
        }
        slot_client_close(cs[k]);
    }
    ASSERT_GT(overloaded, 0);
    ASSERT_EQ(held + overloaded, CONNS * EACH);
    slot_reply v = checked("crowd");
    ASSERT_EQ(v.held, held); /* an overloaded request changed nothing */
    slot_reply_clear(&v);
    slot_test_stop(&srv);
}

TEST_IMPL(limits_reset_after_many_requests_keeps_serving)
{
    slot_test_start(&srv, NULL);
    create("reset", 100000);
    for (int round = 0; round < 5; round++) {
        int fd = raw_dial();
        char line[160];
        for (int i = 0; i < 3000; i++) {
            int n = snprintf(line, sizeof(line),
                             "{\"op\":\"hold\",\"event\":\"reset\",\"user\":\"r%d-%d\",\"request\":\"r\",\"qty\":1}\n",
                             round, i);
            if (send(fd, line, (size_t)n, MSG_NOSIGNAL) != n)
                break;
        }
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        close(fd); /* RST, with requests in flight and replies unread */
    }
    usleep(200 * 1000);
    slot_client *c = slot_test_dial(&srv);
    hello_ok(c);
    slot_client_close(c);
    slot_reply v = checked("reset"); /* what committed stays committed, and adds up */
    ASSERT_LE(v.held, 15000);
    slot_reply_clear(&v);
    slot_test_stop(&srv);
}
