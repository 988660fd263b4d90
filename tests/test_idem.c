/*
 * test_idem.c — the allocator's in-memory idempotency index (src/alloc/alloc_int.h) on
 * its own: put, get, delete and replace under enough keys that it doubles
 * several times, checked against a plain array in the middle of every
 * doubling; its cold-event set; and, through the allocator, a restart that
 * leaves a closed, settled event's keys on disk and still answers its
 * replays exactly.
 */
#include "alloc_fixture.h"
#include "harness.h"
#include "slot/client.h"
#include "alloc/alloc_int.h" /* internal to libslot, tested directly */

TEST_DECLARE(idem_index_many_keys)
TEST_DECLARE(idem_incremental_rehash_matches_reference)
TEST_DECLARE(idem_deferred_puts_apply_in_order)
TEST_DECLARE(idem_cold_events)
TEST_DECLARE(idem_reserve_avoids_doublings)
TEST_DECLARE(idem_restart_leaves_closed_event_cold)
TEST_DECLARE(idem_server_restart_replays_closed_event)
TEST_DECLARE(idem_restart_window_past_is_cold_yet_exact)

TEST_LIST_START
TEST_ENTRY(idem_index_many_keys)
TEST_ENTRY(idem_incremental_rehash_matches_reference)
TEST_ENTRY(idem_deferred_puts_apply_in_order)
TEST_ENTRY(idem_cold_events)
TEST_ENTRY(idem_reserve_avoids_doublings)
TEST_ENTRY(idem_restart_leaves_closed_event_cold)
TEST_ENTRY(idem_server_restart_replays_closed_event)
TEST_ENTRY(idem_restart_window_past_is_cold_yet_exact)
TEST_LIST_END

/* The idempotency index on its own, with enough keys that it doubles its
 * buckets several times: what was put is found with its latest
 * seq, deleted keys are gone, a key differing in any one name is another key. */
TEST_IMPL(idem_index_many_keys)
{
    enum { N = 200000 };
    slot__idem *ix = slot__idem_new();
    ASSERT(ix != NULL);
    char user[32], req[32];
    for (uint32_t i = 0; i < N; i++) {
        snprintf(user, sizeof(user), "u%u", i);
        snprintf(req, sizeof(req), "r%u", i % 7);
        const char *ev = i % 2 ? "ev-a" : "ev-b";
        ASSERT_EQ(slot__idem_add(ix, ev, 4, user, strlen(user), req, strlen(req), i), 0);
    }
    ASSERT_EQ(slot__idem_count(ix), N);
    ASSERT(slot__idem_bytes(ix) > 0);
    for (uint32_t i = 0; i < N; i += 2) { /* replace the even ones' seq, delete every 4th */
        snprintf(user, sizeof(user), "u%u", i);
        snprintf(req, sizeof(req), "r%u", i % 7);
        if (i % 4 == 0)
            slot__idem_del(ix, "ev-b", 4, user, strlen(user), req, strlen(req));
        else
            ASSERT_EQ(slot__idem_put(ix, "ev-b", 4, user, strlen(user), req, strlen(req), (uint64_t)i + N), 0);
    }
    ASSERT_EQ(slot__idem_count(ix), N - N / 4);
    for (uint32_t i = 0; i < N; i++) {
        snprintf(user, sizeof(user), "u%u", i);
        snprintf(req, sizeof(req), "r%u", i % 7);
        const char *ev = i % 2 ? "ev-a" : "ev-b";
        uint64_t seq = UINT64_MAX;
        int rc = slot__idem_get(ix, ev, 4, user, strlen(user), req, strlen(req), &seq);
        if (i % 4 == 0) {
            ASSERT_EQ(rc, -1);
            ASSERT(seq == UINT64_MAX);
        } else {
            ASSERT_EQ(rc, 0);
            ASSERT_EQ(seq, i % 2 ? i : (uint64_t)i + N);
        }
        /* the same names under the other event, or another request key: not there */
        ASSERT_EQ(slot__idem_get(ix, i % 2 ? "ev-c" : "ev-d", 4, user, strlen(user), req, strlen(req), &seq), -1);
        ASSERT_EQ(slot__idem_get(ix, ev, 4, user, strlen(user), "other", 5, &seq), -1);
    }
    ASSERT_EQ(slot__idem_add(ix, "ev-b", 4, "u0", 2, "r0", 2, 42), 0); /* a deleted key comes back */
    uint64_t seq = 0;
    ASSERT_EQ(slot__idem_get(ix, "ev-b", 4, "u0", 2, "r0", 2, &seq), 0);
    ASSERT_EQ(seq, 42);
    slot__idem_free(ix);
}

/* ---- against a reference: key i is (ev-<i%3>, u<i>, r<i%5>); ref[i] its seq, NONE when absent */

#define NONE UINT64_MAX

static void ref_key(uint32_t i, char ev[16], char user[16], char req[16])
{
    snprintf(ev, 16, "ev-%u", i % 3);
    snprintf(user, 16, "u%u", i);
    snprintf(req, 16, "r%u", i % 5);
}

/* Keys first, first + stride, ... below n are in ix with their seq, absent
 * ones are not; with stride 1 the counts agree too. */
static void ref_verify_some(slot__idem *ix, const uint64_t *ref, uint32_t n, uint32_t first, uint32_t stride)
{
    size_t present = 0;
    char ev[16], user[16], req[16];
    for (uint32_t i = first; i < n; i += stride) {
        ref_key(i, ev, user, req);
        uint64_t seq = NONE;
        int rc = slot__idem_get(ix, ev, strlen(ev), user, strlen(user), req, strlen(req), &seq);
        if (ref[i] == NONE) {
            ASSERT_EQ(rc, -1);
        } else {
            ASSERT_EQ(rc, 0);
            ASSERT_EQ(seq, ref[i]);
            present++;
        }
    }
    if (stride == 1)
        ASSERT_EQ(slot__idem_count(ix), present);
}

static void ref_verify(slot__idem *ix, const uint64_t *ref, uint32_t n)
{
    ref_verify_some(ix, ref, n, 0, 1);
}

/* Random puts (new and replacing, plain and deferred), adds, gets and dels while the table
 * doubles several times, each checked against the reference as it goes
 * (most of them land while a doubling runs: old and new tables both in
 * use); in the middle of every doubling a sample of 500 keys, and at the
 * end every key, is checked too. */
TEST_IMPL(idem_incremental_rehash_matches_reference)
{
    enum { N = 120000, OPS = 600000 };
    uint64_t *ref = malloc(N * sizeof(*ref));
    ASSERT(ref != NULL);
    for (uint32_t i = 0; i < N; i++)
        ref[i] = NONE;
    slot__idem *ix = slot__idem_new();
    ASSERT(ix != NULL);
    uint64_t x = 88172645463325252ull; /* xorshift64: the same run every time */
    char ev[16], user[16], req[16];
    unsigned mid_checks = 0;
    size_t last_doublings = 0;
    for (uint32_t op = 0; op < OPS; op++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* Keys grow over the run so the index keeps growing: key < op/5 + 1. */
        uint32_t bound = op / 5 + 1 < N ? op / 5 + 1 : N;
        uint32_t i = (uint32_t)((x >> 8) % bound);
        ref_key(i, ev, user, req);
        size_t el = strlen(ev), ul = strlen(user), rl = strlen(req);
        unsigned kind = (unsigned)(x & 15);
        uint64_t seq = NONE;
        if (kind < 4) { /* put: new or replacing */
            ASSERT_EQ(slot__idem_put(ix, ev, el, user, ul, req, rl, op), 0);
            ref[i] = op;
        } else if (kind < 7) { /* the bulk load's put: queued, applied before any other call */
            ASSERT_EQ(slot__idem_put_deferred(ix, ev, el, user, ul, req, rl, op), 0);
            ref[i] = op;
        } else if (kind < 10) { /* add, as the allocator does after a miss */
            if (slot__idem_get(ix, ev, el, user, ul, req, rl, &seq) != 0) {
                ASSERT(ref[i] == NONE);
                ASSERT_EQ(slot__idem_add(ix, ev, el, user, ul, req, rl, op), 0);
                ref[i] = op;
            } else {
                ASSERT_EQ(seq, ref[i]);
            }
        } else if (kind < 12) {
            slot__idem_del(ix, ev, el, user, ul, req, rl);
            ref[i] = NONE;
        } else {
            int rc = slot__idem_get(ix, ev, el, user, ul, req, rl, &seq);
            ASSERT_EQ(rc, ref[i] == NONE ? -1 : 0);
            if (rc == 0)
                ASSERT_EQ(seq, ref[i]);
        }
        /* Once per doubling, as it begins: a sample checked mid-move (each
         * lookup moves a few buckets, so the sample is kept small). */
        if (slot__idem_rehashing(ix) && slot__idem_doublings(ix) != last_doublings) {
            last_doublings = slot__idem_doublings(ix);
            if (slot__idem_count(ix) > 20000) {
                ref_verify_some(ix, ref, N, op % 97, N / 500);
                ASSERT(slot__idem_rehashing(ix)); /* the check itself did not finish the move */
                mid_checks++;
            }
        }
    }
    ASSERT(slot__idem_doublings(ix) >= 4);
    ASSERT(mid_checks >= 1);
    ASSERT_EQ(slot__idem_flush(ix), 0);
    ref_verify(ix, ref, N);
    /* Delete everything, then the index is empty and every key is gone. */
    for (uint32_t i = 0; i < N; i++) {
        ref_key(i, ev, user, req);
        slot__idem_del(ix, ev, strlen(ev), user, strlen(user), req, strlen(req));
        ref[i] = NONE;
    }
    ref_verify(ix, ref, N);
    ASSERT_EQ(slot__idem_count(ix), 0);
    slot__idem_free(ix);
    free(ref);
}

/* Deferred puts: the same key queued several times (more than the queue
 * holds) ends with the last seq; other calls see every queued put; the
 * count is right after a flush. */
TEST_IMPL(idem_deferred_puts_apply_in_order)
{
    slot__idem *ix = slot__idem_new();
    ASSERT(ix != NULL);
    for (uint64_t s = 1; s <= 20; s++)
        ASSERT_EQ(slot__idem_put_deferred(ix, "e", 1, "u", 1, s % 2 ? "a" : "b", 1, s), 0);
    uint64_t seq = 0;
    ASSERT_EQ(slot__idem_get(ix, "e", 1, "u", 1, "a", 1, &seq), 0); /* applies the queue first */
    ASSERT_EQ(seq, 19);
    ASSERT_EQ(slot__idem_put_deferred(ix, "e", 1, "u", 1, "c", 1, 30), 0);
    slot__idem_del(ix, "e", 1, "u", 1, "c", 1); /* the queued put lands before the delete */
    ASSERT_EQ(slot__idem_get(ix, "e", 1, "u", 1, "c", 1, &seq), -1);
    ASSERT_EQ(slot__idem_put_deferred(ix, "e", 1, "u", 1, "d", 1, 40), 0);
    ASSERT_EQ(slot__idem_flush(ix), 0);
    ASSERT_EQ(slot__idem_count(ix), 3);
    ASSERT_EQ(slot__idem_get(ix, "e", 1, "u", 1, "b", 1, &seq), 0);
    ASSERT_EQ(seq, 20);
    ASSERT_EQ(slot__idem_get(ix, "e", 1, "u", 1, "d", 1, &seq), 0);
    ASSERT_EQ(seq, 40);
    slot__idem_free(ix);
}

/* The cold set: marks are per event, idempotent, independent of the keys. */
TEST_IMPL(idem_cold_events)
{
    slot__idem *ix = slot__idem_new();
    ASSERT(ix != NULL);
    ASSERT(!slot__idem_cold(ix, "a", 1));
    ASSERT_EQ(slot__idem_cold_add(ix, "a", 1), 0);
    ASSERT_EQ(slot__idem_cold_add(ix, "a", 1), 0);
    ASSERT_EQ(slot__idem_cold_add(ix, "ab", 2), 0);
    ASSERT_EQ(slot__idem_cold_count(ix), 2);
    ASSERT(slot__idem_cold(ix, "a", 1));
    ASSERT(slot__idem_cold(ix, "ab", 2));
    ASSERT(!slot__idem_cold(ix, "b", 1));
    ASSERT_EQ(slot__idem_count(ix), 0); /* not keys */
    slot__idem_cold_del(ix, "a", 1);
    slot__idem_cold_del(ix, "zz", 2); /* not marked: nothing */
    ASSERT(!slot__idem_cold(ix, "a", 1));
    ASSERT(slot__idem_cold(ix, "ab", 2));
    ASSERT_EQ(slot__idem_cold_count(ix), 1);
    slot__idem_free(ix);
}

/* An index sized for N keys takes N without a doubling; a second reserve
 * (the table exists) changes nothing; the index grows again past N. */
TEST_IMPL(idem_reserve_avoids_doublings)
{
    enum { N = 50000 };
    slot__idem *ix = slot__idem_new();
    ASSERT(ix != NULL);
    ASSERT_EQ(slot__idem_reserve(ix, N), 0);
    char ev[16], user[16], req[16];
    for (uint32_t i = 0; i < N; i++) {
        ref_key(i, ev, user, req);
        ASSERT_EQ(slot__idem_add(ix, ev, strlen(ev), user, strlen(user), req, strlen(req), i), 0);
    }
    ASSERT_EQ(slot__idem_doublings(ix), 0);
    ASSERT_EQ(slot__idem_reserve(ix, 4 * N), 0);
    for (uint32_t i = N; i < 4 * N; i++) {
        snprintf(user, sizeof user, "x%u", i);
        ASSERT_EQ(slot__idem_add(ix, "e", 1, user, strlen(user), "r", 1, i), 0);
    }
    ASSERT(slot__idem_doublings(ix) >= 1);
    for (uint32_t i = 0; i < N; i++) {
        ref_key(i, ev, user, req);
        uint64_t seq = NONE;
        ASSERT_EQ(slot__idem_get(ix, ev, strlen(ev), user, strlen(user), req, strlen(req), &seq), 0);
        ASSERT_EQ(seq, i);
    }
    ASSERT_EQ(slot__idem_count(ix), 4 * N);
    slot__idem_free(ix);
}

/* The allocator's restart: drop it and load a new one from the store, as
 * slotd does at start. */
static void restart(fx *f)
{
    if (f->txn)
        fx_commit(f);
    slot_alloc_close(&f->a);
    ASSERT_EQ(slot_alloc_init(&f->a, f->st), 0);
    MDB_txn *rt = NULL;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(f->st), NULL, MDB_RDONLY, &rt), 0);
    ASSERT_EQ(slot_alloc_load(&f->a, rt), 0);
    mdb_txn_abort(rt);
}

/* A closed event with nothing held is left out of the index at load (its
 * keys stay on disk); a replay of one of its holds is still answered with
 * the original hold and its current status, a fresh key on it is a new
 * request (not_on_sale), and a key of it never seen is not a replay. The
 * event on sale, and a closed one that still has a hold held, are loaded. */
TEST_IMPL(idem_restart_leaves_closed_event_cold)
{
    fx f;
    fx_open(&f);
    create(&f, "open", 100, 2);
    create(&f, "done", 100, 2);
    create(&f, "closing", 100, 2);
    char id_done[4][SLOT_HOLD_ID_BYTES + 1], id_open[SLOT_HOLD_ID_BYTES + 1], id_closing[SLOT_HOLD_ID_BYTES + 1];
    char req[16];
    for (int i = 0; i < 4; i++) {
        snprintf(req, sizeof req, "k%d", i);
        hold_ok(&f, "done", "ann", req, 1, id_done[i]);
    }
    hold_ok(&f, "open", "ann", "k0", 2, id_open);
    hold_ok(&f, "closing", "bob", "k0", 1, id_closing);
    slot_res r = {0};
    on(&f, SLOT_OP_CONFIRM, "done", id_done[0], "ann", &r);
    expect_err(&r, SLOT_E_OK);
    slot_res_clear(&r);
    for (int i = 1; i < 4; i++) { /* settled: released, nothing held */
        on(&f, SLOT_OP_RELEASE, "done", id_done[i], "ann", &r);
        expect_err(&r, SLOT_E_OK);
        slot_res_clear(&r);
    }
    set_status(&f, "done", SLOT_EVENT_CLOSED);
    set_status(&f, "closing", SLOT_EVENT_CLOSED); /* closed, one hold still held */
    restart(&f);
    ASSERT_EQ(slot__idem_cold_count(f.a.idem), 1);
    ASSERT(slot__idem_cold(f.a.idem, "done", 4));
    ASSERT_EQ(slot__idem_count(f.a.idem), 2); /* open's and closing's key; none of done's 4 */

    /* A replay on the cold event: the original hold, its current status. */
    slot_req q = req_hold("done", "ann", "k0", 1);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.replay);
    ASSERT_STR_EQ(r.hold, id_done[0]);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CONFIRMED);
    slot_res_clear(&r);
    ASSERT_EQ(slot__idem_cold_count(f.a.idem), 0); /* loaded by that request */
    ASSERT_EQ(slot__idem_count(f.a.idem), 6);
    q = req_hold("done", "ann", "k2", 1);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.replay);
    ASSERT_STR_EQ(r.hold, id_done[2]);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_RELEASED);
    slot_res_clear(&r);
    /* The same key with another qty is still a conflict, not a new hold. */
    hold_err(&f, "done", "ann", "k1", 3, SLOT_E_IDEMPOTENCY_CONFLICT);
    /* Fresh keys (and a known key of another user) are new requests: not_on_sale. */
    hold_err(&f, "done", "ann", "never-seen", 1, SLOT_E_NOT_ON_SALE);
    hold_err(&f, "done", "bob", "k0", 1, SLOT_E_NOT_ON_SALE);

    /* Again after another restart, the first request on the cold event a fresh key. */
    restart(&f);
    ASSERT_EQ(slot__idem_cold_count(f.a.idem), 1);
    hold_err(&f, "done", "ann", "never-seen", 1, SLOT_E_NOT_ON_SALE);
    ASSERT_EQ(slot__idem_cold_count(f.a.idem), 0);
    q = req_hold("done", "ann", "k3", 1);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.replay);
    ASSERT_STR_EQ(r.hold, id_done[3]);
    slot_res_clear(&r);

    /* Reopened after a restart: new holds take new keys, old keys replay. */
    restart(&f);
    set_status(&f, "done", SLOT_EVENT_ON_SALE);
    q = req_hold("done", "ann", "k1", 1);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.replay);
    ASSERT_STR_EQ(r.hold, id_done[1]);
    slot_res_clear(&r);
    hold_ok(&f, "done", "ann", "k9", 1, NULL);
    q = req_hold("done", "ann", "k9", 1);
    run(&f, &q, &r);
    ASSERT(r.replay);
    slot_res_clear(&r);

    /* The loaded events still replay. */
    q = req_hold("open", "ann", "k0", 2);
    run(&f, &q, &r);
    ASSERT(r.replay);
    ASSERT_STR_EQ(r.hold, id_open);
    slot_res_clear(&r);
    q = req_hold("closing", "bob", "k0", 1);
    run(&f, &q, &r);
    ASSERT(r.replay);
    ASSERT_STR_EQ(r.hold, id_closing);
    slot_res_clear(&r);
    fx_close(&f);
}

/* An event on sale whose closes_at is past on the wall clock at load (the
 * fixture's clock, T0, is a year behind it) and nothing held is left cold;
 * the ops' own clock still sees the window open: a replay replays, and a
 * fresh key makes a new hold that is then found as a replay — the event's
 * keys were loaded before the fresh key was looked up. */
TEST_IMPL(idem_restart_window_past_is_cold_yet_exact)
{
    fx f;
    fx_open(&f);
    ASSERT(slot_test_now_ms() > T0 + 60000); /* the wall clock is past the window */
    slot_req c = req_create("w", 10);
    c.closes_at_ms = T0 + 60000;
    slot_res r = {0};
    run(&f, &c, &r);
    expect_err(&r, SLOT_E_OK);
    slot_res_clear(&r);
    char id[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "w", "ann", "k1", 1, id);
    on(&f, SLOT_OP_CONFIRM, "w", id, "ann", &r);
    expect_err(&r, SLOT_E_OK);
    slot_res_clear(&r);
    restart(&f);
    ASSERT(slot__idem_cold(f.a.idem, "w", 1));
    ASSERT_EQ(slot__idem_count(f.a.idem), 0);
    char id2[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "w", "ann", "k2", 1, id2); /* fresh key, window open at T0 */
    ASSERT(!slot__idem_cold(f.a.idem, "w", 1));
    slot_req q = req_hold("w", "ann", "k1", 1);
    run(&f, &q, &r);
    ASSERT(r.replay);
    ASSERT_STR_EQ(r.hold, id);
    slot_res_clear(&r);
    q = req_hold("w", "ann", "k2", 1);
    run(&f, &q, &r);
    ASSERT(r.replay);
    ASSERT_STR_EQ(r.hold, id2);
    slot_res_clear(&r);
    fx_close(&f);
}

/* ---- the same through slotd: stop, start on the same folder, ask again */

static void srv_hold(slot_client *c, const char *ev, const char *user, const char *key, uint32_t qty, slot_reply *r)
{
    slot_req q;
    ASSERT_EQ(slot_req_hold(&q, ev, user, key, qty), 0);
    slot_test_call(c, &q, r);
}

static void srv_admin(slot_client *c, slot_op op, const char *ev, slot_event_status st, const char *hold,
                      const char *user)
{
    slot_req q;
    slot_reply r;
    if (hold)
        ASSERT_EQ(slot_req_hold_op(&q, op, ev, hold, user), 0);
    else
        ASSERT_EQ(slot_req_event(&q, op, ev), 0);
    if (op == SLOT_OP_CREATE_EVENT)
        q.capacity = 10;
    if (op == SLOT_OP_SET_STATUS)
        q.status = st;
    slot_test_call(c, &q, &r);
    if (!r.ok)
        T_FAIL_("op %d on %s: %s %s", (int)op, ev, r.error, r.message);
    slot_reply_clear(&r);
}

/* A closed event whose holds were all confirmed or released, across two
 * restarts of slotd: its replays carry the original hold id and current
 * status, a fresh key (first request after the restart, or later) is
 * not_on_sale, and the event on sale still replays and sells. */
TEST_IMPL(idem_server_restart_replays_closed_event)
{
    char *dir = slot_test_tmpdir();
    slot_test_server srv;
    memset(&srv, 0, sizeof srv);
    slot_test_server_start(&srv, dir, NULL);
    slot_client *c = slot_test_dial(&srv);
    srv_admin(c, SLOT_OP_CREATE_EVENT, "gone", 0, NULL, NULL);
    srv_admin(c, SLOT_OP_CREATE_EVENT, "live", 0, NULL, NULL);
    slot_reply r;
    char kept[SLOT_HOLD_ARG_BYTES_MAX + 1], freed[SLOT_HOLD_ARG_BYTES_MAX + 1], live[SLOT_HOLD_ARG_BYTES_MAX + 1];
    srv_hold(c, "gone", "ann", "k1", 2, &r);
    ASSERT(r.ok);
    ASSERT_STR_EQ(r.status, "held");
    snprintf(kept, sizeof kept, "%s", r.hold);
    slot_reply_clear(&r);
    srv_hold(c, "gone", "ann", "k2", 1, &r);
    ASSERT(r.ok);
    snprintf(freed, sizeof freed, "%s", r.hold);
    slot_reply_clear(&r);
    srv_hold(c, "live", "bob", "k1", 1, &r);
    ASSERT(r.ok);
    snprintf(live, sizeof live, "%s", r.hold);
    slot_reply_clear(&r);
    srv_admin(c, SLOT_OP_CONFIRM, "gone", 0, kept, "ann");
    srv_admin(c, SLOT_OP_RELEASE, "gone", 0, freed, "ann");
    srv_admin(c, SLOT_OP_SET_STATUS, "gone", SLOT_EVENT_CLOSED, NULL, NULL);
    slot_client_close(c);
    for (int round = 0; round < 2; round++) {
        ASSERT_EQ(slot_test_server_stop(&srv), 0);
        slot_test_server_start(&srv, dir, NULL);
        c = slot_test_dial(&srv);
        if (round == 1) { /* the first request on the closed event after this start: a fresh key */
            srv_hold(c, "gone", "ann", "fresh", 1, &r);
            ASSERT(!r.ok);
            ASSERT_STR_EQ(r.error, "not_on_sale");
            slot_reply_clear(&r);
        }
        srv_hold(c, "gone", "ann", "k1", 2, &r);
        ASSERT(r.ok);
        ASSERT(r.replay);
        ASSERT_STR_EQ(r.hold, kept);
        ASSERT_STR_EQ(r.status, "confirmed");
        slot_reply_clear(&r);
        srv_hold(c, "gone", "ann", "k2", 1, &r);
        ASSERT(r.ok);
        ASSERT(r.replay);
        ASSERT_STR_EQ(r.hold, freed);
        ASSERT_STR_EQ(r.status, "released");
        slot_reply_clear(&r);
        srv_hold(c, "gone", "ann", "k1", 1, &r); /* the key with another qty */
        ASSERT(!r.ok);
        ASSERT_STR_EQ(r.error, "idempotency_conflict");
        slot_reply_clear(&r);
        srv_hold(c, "gone", "bob", "k1", 1, &r); /* another user's k1 was never used here */
        ASSERT(!r.ok);
        ASSERT_STR_EQ(r.error, "not_on_sale");
        slot_reply_clear(&r);
        srv_hold(c, "live", "bob", "k1", 1, &r);
        ASSERT(r.ok);
        ASSERT(r.replay);
        ASSERT_STR_EQ(r.hold, live);
        slot_reply_clear(&r);
        srv_hold(c, "live", "bob", round == 0 ? "k2" : "k3", 1, &r);
        ASSERT(r.ok);
        ASSERT(!r.replay);
        ASSERT_STR_EQ(r.status, "held");
        slot_reply_clear(&r);
        slot_client_close(c);
    }
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    slot_test_server_free(&srv);
    slot_test_rmdir(dir);
    free(dir);
}
