/*
 * test_digest_e2e.c — the digest op against a real slotd (docs/protocol.md,
 * "digest"): seq counts the write batches that changed state, so reads,
 * sold_out answers, replays, refusals and an idle server (its sweeper
 * running) leave (seq, digest) alone while a hold moves both; the pair
 * survives a restart and a kill -9; slotctl prints it; the frontend role is
 * refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "slot/client.h"

TEST_DECLARE(digest_e2e_seq_counts_writing_batches)
TEST_DECLARE(digest_e2e_survives_restart)
TEST_DECLARE(digest_e2e_slotctl)
TEST_DECLARE(digest_e2e_roles)

TEST_LIST_START
TEST_ENTRY(digest_e2e_seq_counts_writing_batches)
TEST_ENTRY(digest_e2e_survives_restart)
TEST_ENTRY(digest_e2e_slotctl)
TEST_ENTRY(digest_e2e_roles)
TEST_LIST_END

#define FRONTEND_TOKEN "fe-41d9c07be5a2f836"
#define ADMIN_TOKEN "ad-0be7d2c95f13a648"

static const char *const fast_sweep[] = {"--sweep-interval-ms", "10", NULL};

/* A request whose answer must be ok (status want_status when given). */
static void call_ok(slot_client *c, const slot_req *q, const char *want_status, bool replay)
{
    slot_reply r;
    slot_test_call(c, q, &r);
    if (!r.ok || (want_status && strcmp(r.status, want_status) != 0) || r.replay != replay)
        T_FAIL_("%s: %s", slot_op_name(q->op), r.line);
    slot_reply_clear(&r);
}

/* create_event of ev (every default setting); replay: whether the answer must be a replay. */
static void create_again(slot_client *c, const char *ev, uint64_t cap, bool replay)
{
    slot_reply r;
    slot_test_create_event(c, ev, cap, NULL, &r);
    if (r.replay != replay)
        T_FAIL_("create_event %s: %s", ev, r.line);
    slot_reply_clear(&r);
}

static void hold(slot_client *c, const char *ev, const char *key, const char *want_status, bool replay)
{
    slot_req q;
    ASSERT_EQ(slot_req_hold(&q, ev, "ana", key, 1), 0);
    call_ok(c, &q, want_status, replay);
}

/* Lets the server's timers (the sweeper every 10 ms) run a while. Nothing is
 * asserted about time: only that what follows sees no change. */
static void idle(void)
{
    usleep(200 * 1000);
}

TEST_IMPL(digest_e2e_seq_counts_writing_batches)
{
    slot_test_server srv;
    slot_test_start(&srv, fast_sweep);
    slot_client *c = slot_test_dial(&srv);
    slot_test_digest d0 = slot_test_digest_of(c);
    ASSERT_U64_EQ(d0.seq, 0);
    idle();
    slot_test_digest d1 = slot_test_digest_of(c);
    slot_test_digest_same(&d0, &d1);

    create_again(c, "show", 1, false);
    slot_test_digest d2 = slot_test_digest_of(c);
    ASSERT_U64_EQ(d2.seq, 1);
    ASSERT(strcmp(d2.hex, d1.hex) != 0);

    hold(c, "show", "k1", "held", false);
    slot_test_digest d3 = slot_test_digest_of(c);
    ASSERT_U64_EQ(d3.seq, 2);
    ASSERT(strcmp(d3.hex, d2.hex) != 0);

    /* answers that change nothing: sold_out, a replay, a create replay, reads, errors */
    hold(c, "show", "k2", "sold_out", false);
    hold(c, "show", "k1", "held", true);
    create_again(c, "show", 1, true);
    slot_req q;
    slot_req_event(&q, SLOT_OP_EVENT, "show");
    call_ok(c, &q, NULL, false);
    slot_reply r;
    ASSERT_EQ(slot_req_hold(&q, "nosuch", "ana", "k3", 1), 0);
    slot_test_call(c, &q, &r);
    ASSERT(!r.ok);
    ASSERT_STR_EQ(r.error, "unknown_event");
    slot_reply_clear(&r);
    idle();
    slot_test_digest d4 = slot_test_digest_of(c);
    slot_test_digest_same(&d3, &d4);

    /* a write after them counts again, by one */
    hold(c, "show", "k1", "held", true);
    slot_req_event(&q, SLOT_OP_SET_CAPACITY, "show");
    q.capacity = 3;
    call_ok(c, &q, NULL, false);
    slot_test_digest d5 = slot_test_digest_of(c);
    ASSERT_U64_EQ(d5.seq, 3);
    ASSERT(strcmp(d5.hex, d4.hex) != 0);
    slot_client_close(c);
    slot_test_stop(&srv);
}

TEST_IMPL(digest_e2e_survives_restart)
{
    slot_test_server srv;
    slot_test_start(&srv, fast_sweep);
    slot_client *c = slot_test_dial(&srv);
    create_again(c, "gig", 10, false);
    hold(c, "gig", "a", "held", false);
    hold(c, "gig", "b", "held", false);
    slot_test_digest before = slot_test_digest_of(c);
    ASSERT_U64_EQ(before.seq, 3);
    slot_client_close(c);

    ASSERT_EQ(slot_test_server_stop(&srv), 0);      /* SIGTERM: a clean stop */
    slot_test_server_start(&srv, NULL, fast_sweep); /* same folder */
    c = slot_test_dial(&srv);
    idle();
    slot_test_digest after = slot_test_digest_of(c);
    slot_test_digest_same(&before, &after);
    hold(c, "gig", "c", "held", false);
    slot_test_digest more = slot_test_digest_of(c);
    ASSERT_U64_EQ(more.seq, 4);
    slot_client_close(c);

    slot_test_server_kill9(&srv); /* what committed stays, seq with it */
    slot_test_server_start(&srv, NULL, fast_sweep);
    c = slot_test_dial(&srv);
    slot_test_digest again = slot_test_digest_of(c);
    slot_test_digest_same(&more, &again);
    slot_client_close(c);
    slot_test_stop(&srv);
}

TEST_IMPL(digest_e2e_slotctl)
{
    const char *ctl = getenv("SLOTCTL");
    ASSERT(ctl != NULL);
    slot_test_server srv;
    slot_test_start(&srv, NULL);
    slot_client *c = slot_test_dial(&srv);
    create_again(c, "ctl", 5, false);
    slot_test_digest d = slot_test_digest_of(c);
    slot_client_close(c);
    char cmd[1024], want[256], got[256] = "";
    snprintf(cmd, sizeof cmd, "'%s' --port %u digest", ctl, (unsigned)srv.port);
    FILE *p = popen(cmd, "r");
    ASSERT(p != NULL);
    ASSERT(fgets(got, sizeof got, p) != NULL);
    ASSERT_EQ(pclose(p), 0);
    snprintf(want, sizeof want, "seq %" PRIu64 " digest %s\n", d.seq, d.hex);
    ASSERT_STR_EQ(got, want);
    slot_test_stop(&srv);
}

/* digest is an admin op: a frontend connection gets forbidden, an admin one the answer. */
TEST_IMPL(digest_e2e_roles)
{
    char *dir = slot_test_tmpdir();
    char *path = NULL;
    ASSERT(asprintf(&path, "%s/tokens", dir) > 0);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT(fd >= 0);
    static const char text[] = "frontend " FRONTEND_TOKEN "\nadmin " ADMIN_TOKEN "\n";
    ASSERT_EQ(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    const char *extra[] = {"--token-file", path, NULL};
    slot_test_server srv;
    slot_test_start(&srv, extra);

    slot_client *fe = slot_test_dial(&srv), *ad = slot_test_dial(&srv);
    slot_req q;
    slot_reply r;
    slot_req_init(&q, SLOT_OP_HELLO);
    ASSERT_EQ(slot_req_set_token(&q, FRONTEND_TOKEN), 0);
    call_ok(fe, &q, NULL, false);
    slot_req_init(&q, SLOT_OP_HELLO);
    ASSERT_EQ(slot_req_set_token(&q, ADMIN_TOKEN), 0);
    call_ok(ad, &q, NULL, false);

    slot_req_init(&q, SLOT_OP_DIGEST);
    slot_test_call(fe, &q, &r);
    ASSERT(!r.ok);
    ASSERT_STR_EQ(r.error, "forbidden");
    ASSERT_U64_EQ(r.seq, 0);
    ASSERT_STR_EQ(r.digest, "");
    slot_reply_clear(&r);
    slot_test_digest d = slot_test_digest_of(ad);
    ASSERT_U64_EQ(d.seq, 0);

    slot_client_close(fe);
    slot_client_close(ad);
    slot_test_stop(&srv);
    slot_test_rmdir(dir);
    free(dir);
    free(path);
}
