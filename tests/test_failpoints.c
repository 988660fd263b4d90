/*
 * test_failpoints.c — faults at each step of the write path (slot/failpoint.h)
 * against a real slotd: the whole batch rolls back, every request in it gets
 * an error and changes nothing (counters and records before and after), and
 * the server serves the next batch.
 */
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "slot/client.h"

TEST_DECLARE(failpoint_after_shard_update)
TEST_DECLARE(failpoint_after_hold_insert)
TEST_DECLARE(failpoint_after_idempotency_insert)
TEST_DECLARE(failpoint_before_commit)
TEST_DECLARE(failpoint_commit_fail)
TEST_DECLARE(failpoint_map_full_grows_and_retries)
TEST_DECLARE(failpoint_map_full_at_max_is_storage_full)
TEST_DECLARE(failpoint_bad_spec_refuses_to_start)
TEST_DECLARE(failpoint_aborted_batch_leaves_no_feed_entry)

TEST_LIST_START
TEST_ENTRY(failpoint_after_shard_update)
TEST_ENTRY(failpoint_after_hold_insert)
TEST_ENTRY(failpoint_after_idempotency_insert)
TEST_ENTRY(failpoint_before_commit)
TEST_ENTRY(failpoint_commit_fail)
TEST_ENTRY(failpoint_map_full_grows_and_retries)
TEST_ENTRY(failpoint_map_full_at_max_is_storage_full)
TEST_ENTRY(failpoint_bad_spec_refuses_to_start)
TEST_ENTRY(failpoint_aborted_batch_leaves_no_feed_entry)
TEST_LIST_END

#define TIMEOUT_MS 10000
#define N 40 /* holds sent in one write, so they share a batch */

static slot_test_server srv;

static slot_reply view(slot_client *c)
{
    slot_req q;
    slot_reply r;
    slot_req_event(&q, SLOT_OP_CHECK, "fp");
    q.has |= SLOT_HAS_EVENT;
    slot_test_call(c, &q, &r);
    ASSERT(r.ok);
    ASSERT_EQ(r.nviolations, 0);
    slot_reply_clear(&r);
    slot_req_event(&q, SLOT_OP_EVENT, "fp");
    slot_test_call(c, &q, &r);
    ASSERT(r.ok);
    ASSERT_EQ(r.available + r.held + r.confirmed, r.capacity);
    return r;
}

/* Starts slotd with the failpoint armed, creates the event, sends N holds
 * at once and checks what the failed batch left: nothing. Returns the number
 * of requests answered with want_err. */
static int run(const char *spec, const char *want_err, const char *const *extra)
{
    memset(&srv, 0, sizeof(srv));
    setenv("SLOT_FAILPOINTS", spec, 1);
    slot_test_server_start(&srv, NULL, extra);
    unsetenv("SLOT_FAILPOINTS");
    slot_client *c = slot_test_dial(&srv);
    slot_req q;
    slot_reply r;
    slot_req_event(&q, SLOT_OP_CREATE_EVENT, "fp");
    q.capacity = 1000;
    q.shards = 8;
    q.hold_ttl_ms = 600000;
    q.max_per_request = 10;
    slot_test_call(c, &q, &r);
    ASSERT(r.ok);
    slot_reply_clear(&r);
    slot_reply before = view(c);

    char buf[N * 128];
    size_t len = 0;
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(
            buf + len, sizeof(buf) - len,
            "{\"id\":%d,\"op\":\"hold\",\"event\":\"fp\",\"user\":\"u%d\",\"request\":\"r\",\"qty\":2}\n", i, i);
    ASSERT_EQ(slot_client_send_raw(c, buf, len), 0);
    bool failed[N];
    int nfailed = 0;
    uint64_t held = 0;
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(slot_client_recv(c, &r, TIMEOUT_MS), 0);
        ASSERT_EQ(r.id.i, i);
        failed[i] = !r.ok;
        if (r.ok) {
            ASSERT_STR_EQ(r.status, "held");
            held += r.qty;
        } else {
            ASSERT_STR_EQ(r.error, want_err);
            nfailed++;
        }
        slot_reply_clear(&r);
    }
    slot_reply after = view(c);
    ASSERT_EQ(after.held, before.held + held); /* the failed batch left no unit taken */
    ASSERT_EQ(after.available, before.available - held);
    slot_reply_clear(&before);
    slot_reply_clear(&after);
    /* A failed request left no record: retried, it makes a new hold, no replay. */
    for (int i = 0; i < N; i++) {
        char user[16];
        snprintf(user, sizeof(user), "u%d", i);
        slot_req_hold(&q, "fp", user, "r", 2);
        slot_test_call(c, &q, &r);
        ASSERT(r.ok);
        ASSERT_STR_EQ(r.status, "held");
        ASSERT_EQ(r.replay, !failed[i]);
        slot_reply_clear(&r);
    }
    after = view(c);
    ASSERT_EQ(after.held, 2 * N);
    slot_reply_clear(&after);
    if (nfailed)
        ASSERT_GE(slot_test_stat(&srv, "commit_failures"), 1);
    slot_client_close(c);
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    slot_test_server_free(&srv);
    return nfailed;
}

TEST_IMPL(failpoint_after_shard_update)
{
    ASSERT_GE(run("after_shard_update@3", "internal", NULL), 1);
}

TEST_IMPL(failpoint_after_hold_insert)
{
    ASSERT_GE(run("after_hold_insert@5", "internal", NULL), 1);
}

/* The index entry written before the failure must not make the retry a replay. */
TEST_IMPL(failpoint_after_idempotency_insert)
{
    ASSERT_GE(run("after_idempotency_insert@7", "internal", NULL), 1);
}

/* before_commit and commit_fail: skip the create_event batch. */
TEST_IMPL(failpoint_before_commit)
{
    ASSERT_GE(run("before_commit@1", "internal", NULL), 1);
}

TEST_IMPL(failpoint_commit_fail)
{
    ASSERT_GE(run("commit_fail@1", "internal", NULL), 1);
}

/* Map full with room to grow: the map grows and the batch is retried. */
TEST_IMPL(failpoint_map_full_grows_and_retries)
{
    ASSERT_EQ(run("map_full@2", "none", NULL), 0);
}

/* Map full at --map-size-max: storage_full, nothing changed. */
TEST_IMPL(failpoint_map_full_at_max_is_storage_full)
{
    const char *extra[] = {"--map-size-max", "64M", NULL};
    ASSERT_GE(run("map_full@2", "storage_full", extra), 1);
}

TEST_IMPL(failpoint_bad_spec_refuses_to_start)
{
    setenv("SLOT_FAILPOINTS", "no_such_point", 1);
    const char *bin = getenv("SLOTD");
    ASSERT(bin != NULL);
    char *dir = slot_test_tmpdir();
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s --data %s --listen 127.0.0.1:0 >/dev/null 2>&1", bin, dir);
    int st = system(cmd);
    unsetenv("SLOT_FAILPOINTS");
    slot_test_rmdir(dir);
    free(dir);
    ASSERT(WIFEXITED(st) && WEXITSTATUS(st) != 0);
}

/* The feed (slot/feed.h) is written in the batch's transaction: a batch that
 * fails before its commit leaves no entry, and seq goes on with no gap. */
TEST_IMPL(failpoint_aborted_batch_leaves_no_feed_entry)
{
    memset(&srv, 0, sizeof(srv));
    setenv("SLOT_FAILPOINTS", "before_commit@1*1", 1); /* the batch after create_event */
    slot_test_server_start(&srv, NULL, NULL);
    unsetenv("SLOT_FAILPOINTS");
    slot_client *c = slot_test_dial(&srv);
    static const char create[] = "{\"op\":\"create_event\",\"event\":\"fp\",\"capacity\":100}\n";
    ASSERT_EQ(slot_client_send_raw(c, create, sizeof create - 1), 0);
    const char *line;
    ASSERT_GT(slot_client_recv_line(c, &line, TIMEOUT_MS), 0);
    char buf[N * 128];
    size_t len = 0;
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len,
                                "{\"op\":\"hold\",\"event\":\"fp\",\"user\":\"u%d\",\"request\":\"r\",\"qty\":1}\n", i);
    ASSERT_EQ(slot_client_send_raw(c, buf, len), 0);
    int ok = 0;
    for (int i = 0; i < N; i++) {
        ASSERT_GT(slot_client_recv_line(c, &line, TIMEOUT_MS), 0);
        ok += strstr(line, "\"ok\":true") != NULL;
    }
    ASSERT_LT(ok, N); /* a batch of them failed */
    static const char one[] = "{\"op\":\"hold\",\"event\":\"fp\",\"user\":\"late\",\"request\":\"r\",\"qty\":1}\n";
    ASSERT_EQ(slot_client_send_raw(c, one, sizeof one - 1), 0);
    ASSERT_GT(slot_client_recv_line(c, &line, TIMEOUT_MS), 0);
    ASSERT(strstr(line, "\"ok\":true") != NULL);
    static const char sub[] = "{\"op\":\"subscribe\",\"consumer\":\"fp\",\"from\":\"start\"}\n";
    ASSERT_EQ(slot_client_send_raw(c, sub, sizeof sub - 1), 0);
    ASSERT_GT(slot_client_recv_line(c, &line, TIMEOUT_MS), 0);
    char want[64];
    snprintf(want, sizeof want, "\"head\":%d", 1 + ok + 1); /* the event, the holds that committed, the late one */
    ASSERT(strstr(line, want) != NULL);
    for (int q = 1; q <= 2 + ok; q++) {
        ASSERT_GT(slot_client_recv_line(c, &line, TIMEOUT_MS), 0);
        snprintf(want, sizeof want, "{\"feed\":%d,", q);
        ASSERT(strncmp(line, want, strlen(want)) == 0);
        if (q == 2 + ok)
            ASSERT(strstr(line, "\"user\":\"late\"") != NULL);
    }
    slot_client_close(c);
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    slot_test_server_free(&srv);
}
