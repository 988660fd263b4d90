/*
 * test_ops_admin.c — the allocator (slot/alloc.h), after the hold: release,
 * cancel, get_hold on a read-only transaction, expiry, the admin edits
 * (set_capacity, reshard, shards) and group commit, with every error code of
 * docs/protocol.md, on real LMDB transactions with a clock the test moves by
 * hand. After every step the tests look at the event's counters, the shards'
 * free sum and a full slot_check (no violations). create_event, hold and
 * confirm: test_ops_hold.c.
 */
#include "alloc_fixture.h"

TEST_DECLARE(alloc_release)
TEST_DECLARE(alloc_release_confirmed_and_due)
TEST_DECLARE(alloc_cancel)
TEST_DECLARE(alloc_get_hold_read_only_shows_expired_without_writing)
TEST_DECLARE(alloc_expire_due_limit_oldest_first)
TEST_DECLARE(alloc_expire_due_many_chunks)
TEST_DECLARE(alloc_sold_out_never_from_expired_holds)
TEST_DECLARE(alloc_set_capacity)
TEST_DECLARE(alloc_reshard_down_and_up)
TEST_DECLARE(alloc_reshard_up_units_go_back_to_same_shard)
TEST_DECLARE(alloc_reshard_down_units_spread)
TEST_DECLARE(alloc_reshard_expires_due_first)
TEST_DECLARE(alloc_shards_op)
TEST_DECLARE(alloc_batch_in_one_txn)
TEST_DECLARE(alloc_seeded_ids_repeat)
TEST_DECLARE(alloc_ops_not_the_allocators)

TEST_LIST_START
TEST_ENTRY(alloc_release)
TEST_ENTRY(alloc_release_confirmed_and_due)
TEST_ENTRY(alloc_cancel)
TEST_ENTRY(alloc_get_hold_read_only_shows_expired_without_writing)
TEST_ENTRY(alloc_expire_due_limit_oldest_first)
TEST_ENTRY(alloc_expire_due_many_chunks)
TEST_ENTRY(alloc_sold_out_never_from_expired_holds)
TEST_ENTRY(alloc_set_capacity)
TEST_ENTRY(alloc_reshard_down_and_up)
TEST_ENTRY(alloc_reshard_up_units_go_back_to_same_shard)
TEST_ENTRY(alloc_reshard_down_units_spread)
TEST_ENTRY(alloc_reshard_expires_due_first)
TEST_ENTRY(alloc_shards_op)
TEST_ENTRY(alloc_batch_in_one_txn)
TEST_ENTRY(alloc_seeded_ids_repeat)
TEST_ENTRY(alloc_ops_not_the_allocators)
TEST_LIST_END

/* ---- release */

TEST_IMPL(alloc_release)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 4);
    uint64_t before[4], after[4];
    shards_free(&f, NULL, "E", before, 4);
    char a[33];
    hold_ok(&f, "E", "u", "k1", 3, a);
    fx_commit(&f);

    slot_res r = {0};
    on(&f, SLOT_OP_RELEASE, "E", a, "u", &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.done);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_RELEASED);
    expect_counts(&f, "E", 10, 0, 0);
    /* Units went back to the shards they came from. */
    shards_free(&f, NULL, "E", after, 4);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(after[i], before[i]);
    fx_commit(&f);
    on(&f, SLOT_OP_RELEASE, "E", a, "u", &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.done);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_RELEASED);
    expect_counts(&f, "E", 10, 0, 0);
    slot_hold_rec h;
    hold_rec(&f, "E", a, &h);
    ASSERT_EQ(h.status, SLOT_HOLD_RELEASED);
    ASSERT_EQ(slot_store_expiry_has(f.st, fx_txn(&f), h.expires_at_ms, "E", 1, h.seq), MDB_NOTFOUND);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_release_confirmed_and_due)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 4);
    char c[33], d[33];
    hold_ok(&f, "E", "u", "k1", 2, c);
    uint64_t due = hold_ok(&f, "E", "u", "k2", 3, d);
    slot_res r = {0};
    on(&f, SLOT_OP_CONFIRM, "E", c, "u", &r);
    fx_commit(&f);
    expect_counts(&f, "E", 5, 3, 2);

    on(&f, SLOT_OP_RELEASE, "E", c, "u", &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.done);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CONFIRMED);
    expect_counts(&f, "E", 5, 3, 2);

    f.now = due;
    on(&f, SLOT_OP_RELEASE, "E", d, "u", &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.done);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_EXPIRED);
    expect_counts(&f, "E", 8, 0, 2);
    fx_commit(&f);
    on(&f, SLOT_OP_RELEASE, "E", d, "u", &r);
    ASSERT(!r.done);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_EXPIRED);
    expect_counts(&f, "E", 8, 0, 2);
    slot_res_clear(&r);
    fx_close(&f);
}

/* ---- cancel (admin) */

TEST_IMPL(alloc_cancel)
{
    fx f;
    fx_open(&f);
    create_full(&f, "E", 10, 4, 5, 10, TTL_DEFAULT);
    char h[33], c[33], d[33], rel[33];
    hold_ok(&f, "E", "u", "k1", 2, h);
    hold_ok(&f, "E", "v", "k1", 3, c);
    hold_ok(&f, "E", "w", "k1", 1, rel);
    f.now += 1;
    uint64_t due = hold_ok(&f, "E", "w", "k2", 1, d);
    slot_res r = {0};
    on(&f, SLOT_OP_CONFIRM, "E", c, "v", &r);
    on(&f, SLOT_OP_RELEASE, "E", rel, "w", &r);
    fx_commit(&f);
    expect_counts(&f, "E", 4, 3, 3);

    /* held -> cancelled, any user (no user given). */
    on(&f, SLOT_OP_CANCEL, "E", h, NULL, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.done);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CANCELLED);
    ASSERT_STR_EQ(r.user, "u");
    ASSERT_EQ(user_rec(&f, "E", "u"), 0);
    expect_counts(&f, "E", 6, 1, 3);
    /* confirmed -> cancelled, units back. */
    on(&f, SLOT_OP_CANCEL, "E", c, "someone-else", &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.done);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CANCELLED);
    ASSERT_EQ(user_rec(&f, "E", "v"), 0);
    expect_counts(&f, "E", 9, 1, 0);
    fx_commit(&f);
    /* Twice: nothing more. */
    on(&f, SLOT_OP_CANCEL, "E", c, NULL, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.done);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CANCELLED);
    on(&f, SLOT_OP_CANCEL, "E", h, NULL, &r);
    ASSERT(!r.done);
    /* released stays released. */
    on(&f, SLOT_OP_CANCEL, "E", rel, NULL, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.done);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_RELEASED);
    expect_counts(&f, "E", 9, 1, 0);
    /* A due hold: cancelled:false, status expired, its unit back once. */
    f.now = due;
    on(&f, SLOT_OP_CANCEL, "E", d, NULL, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.done);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_EXPIRED);
    expect_counts(&f, "E", 10, 0, 0);
    on(&f, SLOT_OP_CANCEL, "E", d, NULL, &r);
    ASSERT(!r.done);
    expect_counts(&f, "E", 10, 0, 0);
    ASSERT_EQ(user_rec(&f, "E", "w"), 0);
    slot_res_clear(&r);
    fx_close(&f);
}

/* ---- get_hold on a read-only transaction */

TEST_IMPL(alloc_get_hold_read_only_shows_expired_without_writing)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 4);
    char a[33];
    uint64_t due = hold_ok(&f, "E", "u", "k1", 2, a);
    fx_commit(&f);

    MDB_txn *ro;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(f.st), NULL, MDB_RDONLY, &ro), 0);
    slot_req q = req_on(SLOT_OP_GET_HOLD, "E", a, "u");
    slot_res r = {0};
    f.now = due - 1;
    run_on(&f, ro, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_HELD);
    f.now = due;
    run_on(&f, ro, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_EXPIRED);
    ASSERT_EQ(r.qty, 2);
    ASSERT_EQ(r.expires_at_ms, due);
    ASSERT_EQ(r.created_at_ms, T0);
    ASSERT_STR_EQ(r.user, "u");
    /* Other read ops run on a read-only txn too. */
    slot_req ev = slot_test_req(SLOT_OP_EVENT, "E");
    run_on(&f, ro, &ev, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.view.held, 2);
    uint64_t fr[4];
    ASSERT_EQ(shards_free(&f, ro, "E", fr, 4), 4);
    ASSERT_EQ(sum_of(fr, 4), 8);
    slot_req wrong = req_on(SLOT_OP_GET_HOLD, "E", a, "v");
    run_on(&f, ro, &wrong, &r);
    expect_err(&r, SLOT_E_UNKNOWN_HOLD);
    check_clean_on(&f, ro);
    mdb_txn_abort(ro);

    /* Nothing was written: the record is still held, with its expiry entry. */
    slot_hold_rec h;
    hold_rec(&f, "E", a, &h);
    ASSERT_EQ(h.status, SLOT_HOLD_HELD);
    ASSERT_EQ(slot_store_expiry_has(f.st, fx_txn(&f), due, "E", 1, h.seq), 0);
    expect_counts(&f, "E", 8, 2, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

/* ---- expiry */

static slot_hold_status status_of(fx *f, const char *ev, const char *id)
{
    slot_hold_rec h;
    hold_rec(f, ev, id, &h);
    return h.status;
}

TEST_IMPL(alloc_expire_due_limit_oldest_first)
{
    fx f;
    fx_open(&f);
    create(&f, "A", 100, 4);
    create(&f, "B", 100, 4);
    char ids[10][33];
    for (int i = 0; i < 10; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        f.now = T0 + (uint64_t)i * 10;
        hold_ok(&f, i % 2 ? "B" : "A", "u", key, 1, ids[i]);
    }
    fx_commit(&f);
    /* Eight are due (made at T0 .. T0+70), two are not. */
    f.now = T0 + 70 + TTL_DEFAULT;
    uint64_t n = 0;
    ASSERT_EQ(slot_alloc_expire_due(&f.a, fx_txn(&f), f.now, 3, &n), 0);
    ASSERT_EQ(n, 3);
    for (int i = 0; i < 10; i++)
        ASSERT_EQ(status_of(&f, i % 2 ? "B" : "A", ids[i]), i < 3 ? SLOT_HOLD_EXPIRED : SLOT_HOLD_HELD);
    expect_counts(&f, "A", 97, 3, 0); /* 0 and 2 expired; 4, 6, 8 held */
    expect_counts(&f, "B", 96, 4, 0); /* 1 expired; 3, 5, 7, 9 held */
    fx_commit(&f);
    /* The admin op runs the sweeper with its own bound. */
    slot_req q = slot_test_req(SLOT_OP_EXPIRE, NULL);
    slot_res r = {0};
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.expired, 5);
    for (int i = 0; i < 10; i++)
        ASSERT_EQ(status_of(&f, i % 2 ? "B" : "A", ids[i]), i < 8 ? SLOT_HOLD_EXPIRED : SLOT_HOLD_HELD);
    expect_counts(&f, "A", 99, 1, 0);
    expect_counts(&f, "B", 99, 1, 0);
    run(&f, &q, &r);
    ASSERT_EQ(r.expired, 0);
    fx_commit(&f);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_expire_due_many_chunks)
{
    fx f;
    fx_open(&f);
    create_full(&f, "A", 1000, 16, 0, 1, 1000);
    create_full(&f, "B", 1000, 16, 0, 1, 1000);
    /* 600 holds per event, interleaved in time. */
    for (int i = 0; i < 600; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        f.now = T0 + (uint64_t)i;
        hold_ok(&f, "A", "u", key, 1, NULL);
        hold_ok(&f, "B", "u", key, 1, NULL);
    }
    fx_commit(&f);
    f.now = T0 + 599 + 1000;
    uint64_t n = 0;
    ASSERT_EQ(slot_alloc_expire_due(&f.a, fx_txn(&f), f.now, 300, &n), 0);
    ASSERT_EQ(n, 300);
    expect_counts(&f, "A", 550, 450, 0);
    expect_counts(&f, "B", 550, 450, 0);
    fx_commit(&f);
    /* An admin edit expires all of its own event's due holds (more than one
     * chunk of the expiry index), not other events'. */
    slot_req q = slot_test_req(SLOT_OP_SET_CAPACITY, "A");
    q.capacity = 449; /* below allocated until the due ones are gone */
    slot_res r = {0};
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    expect_counts(&f, "A", 449, 0, 0);
    expect_counts(&f, "B", 550, 450, 0);
    ASSERT_EQ(slot_alloc_expire_due(&f.a, fx_txn(&f), f.now, SLOT_EXPIRE_OP_MAX, &n), 0);
    ASSERT_EQ(n, 450);
    expect_counts(&f, "B", 1000, 0, 0);
    fx_commit(&f);

    /* The hold path, sold out by 300 due holds, expires them all first. */
    create_full(&f, "S", 300, 4, 0, 1, 1000);
    for (int i = 0; i < 300; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        hold_ok(&f, "S", "u", key, 1, NULL);
    }
    fx_commit(&f);
    f.now += 1000;
    hold_ok(&f, "S", "v", "k", 1, NULL);
    expect_counts(&f, "S", 299, 1, 0);
    fx_commit(&f);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_sold_out_never_from_expired_holds)
{
    fx f;
    fx_open(&f);
    create_full(&f, "E", 3, 2, 0, 10, 1000);
    create_full(&f, "F", 5, 2, 0, 10, 1000);
    hold_ok(&f, "E", "u", "k1", 2, NULL);
    f.now += 10;
    hold_ok(&f, "E", "v", "k1", 1, NULL);
    hold_ok(&f, "F", "v", "k1", 5, NULL);
    hold_sold_out(&f, "E", "w", "k1", 1, 0);
    fx_commit(&f);
    /* Past the first hold's ttl: its 2 units are free for the next hold. */
    f.now = T0 + 1000;
    hold_ok(&f, "E", "w", "k2", 2, NULL);
    expect_counts(&f, "E", 0, 3, 0);
    /* Sold out again; the answer's available counts after expiry. */
    hold_sold_out(&f, "E", "w", "k3", 1, 0);
    f.now = T0 + 1010;
    hold_sold_out(&f, "E", "w", "k3", 2, 1);
    expect_counts(&f, "E", 1, 2, 0);
    /* Other events' due holds stay until the sweeper or their own ops. */
    expect_counts(&f, "F", 0, 5, 0);
    fx_commit(&f);
    fx_close(&f);
}

/* ---- admin edits */

TEST_IMPL(alloc_set_capacity)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 4);
    char a[33];
    hold_ok(&f, "E", "u", "k1", 3, a);
    fx_commit(&f);
    slot_req q = slot_test_req(SLOT_OP_SET_CAPACITY, "E");
    slot_res r = {0};

    q.capacity = 23;
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.view.capacity, 23);
    ASSERT_EQ(r.view.available, 20);
    expect_counts(&f, "E", 20, 3, 0);
    expect_even(&f, "E");

    q.capacity = 5;
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    expect_counts(&f, "E", 2, 3, 0);
    expect_even(&f, "E");
    fx_commit(&f);

    q.capacity = 2;
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_CAPACITY_BELOW_ALLOCATED);
    expect_counts(&f, "E", 2, 3, 0);
    on(&f, SLOT_OP_CONFIRM, "E", a, "u", &r);
    q.capacity = 2;
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_CAPACITY_BELOW_ALLOCATED);
    q.capacity = 3;
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    expect_counts(&f, "E", 0, 0, 3);
    hold_sold_out(&f, "E", "v", "k1", 1, 0);
    /* Cancel gives the confirmed units back after the cut. */
    on(&f, SLOT_OP_CANCEL, "E", a, NULL, &r);
    ASSERT(r.done);
    expect_counts(&f, "E", 3, 0, 0);
    fx_commit(&f);

    /* Due holds do not block a cut. */
    char d[33];
    uint64_t due = hold_ok(&f, "E", "u", "k2", 3, d);
    fx_commit(&f);
    f.now = due;
    q.capacity = 0;
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    expect_counts(&f, "E", 0, 0, 0);
    ASSERT_EQ(status_of(&f, "E", d), SLOT_HOLD_EXPIRED);
    fx_commit(&f);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_reshard_down_and_up)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 50, 8);
    char a[33];
    hold_ok(&f, "E", "u", "k1", 7, a);
    fx_commit(&f);
    reshard(&f, "E", 3);
    expect_counts(&f, "E", 43, 7, 0);
    expect_even(&f, "E");
    uint32_t count = 0;
    ASSERT_EQ(slot_store_shards_count(f.st, fx_txn(&f), "E", 1, &count), 0);
    ASSERT_EQ(count, 3);
    fx_commit(&f);
    reshard(&f, "E", 16);
    expect_counts(&f, "E", 43, 7, 0);
    expect_even(&f, "E");
    reshard(&f, "E", 16);
    expect_even(&f, "E");
    reshard(&f, "E", 1);
    expect_counts(&f, "E", 43, 7, 0);
    reshard(&f, "E", SLOT_SHARDS_MAX);
    expect_counts(&f, "E", 43, 7, 0);
    expect_even(&f, "E");
    fx_commit(&f);
    /* The hold is unchanged by reshards. */
    slot_res r = {0};
    on(&f, SLOT_OP_GET_HOLD, "E", a, "u", &r);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_HELD);
    ASSERT_EQ(r.qty, 7);
    on(&f, SLOT_OP_RELEASE, "E", a, "u", &r);
    ASSERT(r.done);
    expect_counts(&f, "E", 50, 0, 0);
    fx_commit(&f);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_reshard_up_units_go_back_to_same_shard)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 8, 4); /* 2,2,2,2 */
    char a[33];
    hold_ok(&f, "E", "u", "k1", 8, a); /* 2 from each */
    reshard(&f, "E", 8);
    expect_counts(&f, "E", 0, 8, 0);
    fx_commit(&f);
    slot_res r = {0};
    on(&f, SLOT_OP_RELEASE, "E", a, "u", &r);
    ASSERT(r.done);
    uint64_t fr[8];
    ASSERT_EQ(shards_free(&f, NULL, "E", fr, 8), 8);
    for (int i = 0; i < 8; i++)
        ASSERT_EQ(fr[i], i < 4 ? 2 : 0);
    expect_counts(&f, "E", 8, 0, 0);
    fx_commit(&f);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_reshard_down_units_spread)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 8, 8); /* 1 each */
    char a[33], c[33];
    hold_ok(&f, "E", "u", "k1", 8, a); /* 1 from each of 8 */
    reshard(&f, "E", 3);
    expect_counts(&f, "E", 0, 8, 0);
    fx_commit(&f);
    slot_res r = {0};
    on(&f, SLOT_OP_CANCEL, "E", a, NULL, &r);
    ASSERT(r.done);
    /* Shards 0..2 get their own unit back; the 5 from shards 3..7 are spread
     * over the three: each shard ends with 1 + (1 or 2). */
    uint64_t fr[3];
    ASSERT_EQ(shards_free(&f, NULL, "E", fr, 3), 3);
    for (int i = 0; i < 3; i++)
        ASSERT(fr[i] == 2 || fr[i] == 3);
    expect_counts(&f, "E", 8, 0, 0);
    fx_commit(&f);

    /* A confirmed hold made before a reshard, cancelled after it. */
    hold_ok(&f, "E", "u", "k2", 8, c);
    on(&f, SLOT_OP_CONFIRM, "E", c, "u", &r);
    reshard(&f, "E", 2);
    expect_counts(&f, "E", 0, 0, 8);
    on(&f, SLOT_OP_CANCEL, "E", c, NULL, &r);
    ASSERT(r.done);
    expect_counts(&f, "E", 8, 0, 0);
    fx_commit(&f);
    /* A due hold made before a reshard, expired by the sweeper. */
    reshard(&f, "E", 5);
    uint64_t due = hold_ok(&f, "E", "u", "k3", 8, NULL);
    reshard(&f, "E", 2);
    fx_commit(&f);
    f.now = due;
    uint64_t n = 0;
    ASSERT_EQ(slot_alloc_expire_due(&f.a, fx_txn(&f), f.now, 10, &n), 0);
    ASSERT_EQ(n, 1);
    expect_counts(&f, "E", 8, 0, 0);
    fx_commit(&f);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_reshard_expires_due_first)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 2);
    uint64_t due = hold_ok(&f, "E", "u", "k1", 4, NULL);
    fx_commit(&f);
    f.now = due;
    reshard(&f, "E", 5);
    expect_counts(&f, "E", 10, 0, 0);
    uint64_t fr[5];
    ASSERT_EQ(shards_free(&f, NULL, "E", fr, 5), 5);
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(fr[i], 2);
    fx_commit(&f);
    fx_close(&f);
}

TEST_IMPL(alloc_shards_op)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 11, 3);
    uint64_t fr[3];
    ASSERT_EQ(shards_free(&f, NULL, "E", fr, 3), 3);
    ASSERT_EQ(fr[0], 4);
    ASSERT_EQ(fr[1], 4);
    ASSERT_EQ(fr[2], 3);
    char a[33];
    hold_ok(&f, "E", "u", "k", 5, a);
    slot_hold_rec h;
    hold_rec(&f, "E", a, &h);
    uint64_t want[3] = {4, 4, 3};
    for (int i = 0; i < h.nparts; i++)
        want[h.parts[i].shard] -= h.parts[i].qty;
    ASSERT_EQ(shards_free(&f, NULL, "E", fr, 3), 3);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(fr[i], want[i]);
    expect_counts(&f, "E", 6, 5, 0);
    fx_close(&f);
}

/* ---- group commit: many requests in one txn */

TEST_IMPL(alloc_batch_in_one_txn)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 5, 2);
    char a[33], b[33];
    hold_ok(&f, "E", "u", "k1", 3, a);
    hold_sold_out(&f, "E", "v", "k1", 3, 2);
    hold_err(&f, "E", "u", "k1", 1, SLOT_E_IDEMPOTENCY_CONFLICT);
    expect_replay(&f, "E", "u", "k1", 3, a, SLOT_HOLD_HELD);
    slot_res r = {0};
    on(&f, SLOT_OP_CONFIRM, "E", a, "u", &r);
    expect_err(&r, SLOT_E_OK);
    hold_ok(&f, "E", "v", "k2", 2, b);
    on(&f, SLOT_OP_RELEASE, "E", b, "v", &r);
    ASSERT(r.done);
    on(&f, SLOT_OP_RELEASE, "E", b, "v", &r);
    ASSERT(!r.done);
    expect_counts(&f, "E", 2, 0, 3);
    fx_commit(&f);
    expect_counts(&f, "E", 2, 0, 3);
    fx_commit(&f);

    /* An aborted batch leaves nothing behind. */
    hold_ok(&f, "E", "w", "k1", 2, NULL);
    expect_counts(&f, "E", 0, 2, 3);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    expect_counts(&f, "E", 2, 0, 3);
    hold_ok(&f, "E", "w", "k1", 1, NULL); /* the key was not remembered */
    expect_counts(&f, "E", 1, 1, 3);
    fx_commit(&f);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_seeded_ids_repeat)
{
    char ids[2][3][33];
    for (int run_no = 0; run_no < 2; run_no++) {
        fx f;
        fx_open(&f);
        slot_alloc_seed(&f.a, 42);
        create(&f, "E", 100, 16);
        for (int i = 0; i < 3; i++) {
            char key[4] = {'k', (char)('0' + i), 0};
            hold_ok(&f, "E", "u", key, 5, ids[run_no][i]);
        }
        fx_close(&f);
    }
    for (int i = 0; i < 3; i++) {
        ASSERT_STR_EQ(ids[0][i], ids[1][i]);
        ASSERT_EQ(seq_of(ids[0][i]), (uint64_t)i + 1);
    }
    ASSERT(strcmp(ids[0][0] + 16, ids[0][1] + 16) != 0); /* tags differ */
}

TEST_IMPL(alloc_ops_not_the_allocators)
{
    fx f;
    fx_open(&f);
    slot_res r = {0};
    slot_req q = slot_test_req(SLOT_OP_HELLO, NULL);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_INTERNAL);
    q = slot_test_req(SLOT_OP_STATS, NULL);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_INTERNAL);
    slot_res_clear(&r);
    /* The op table agrees with docs/protocol.md's roles. */
    ASSERT_EQ(slot_op_from_name("hold", 4), SLOT_OP_HOLD);
    ASSERT_EQ(slot_op_from_name("holds", 5), SLOT_OP__COUNT);
    ASSERT(slot_op_writes(SLOT_OP_HOLD) && !slot_op_admin(SLOT_OP_HOLD));
    ASSERT(!slot_op_writes(SLOT_OP_GET_HOLD) && !slot_op_admin(SLOT_OP_GET_HOLD));
    ASSERT(slot_op_writes(SLOT_OP_CANCEL) && slot_op_admin(SLOT_OP_CANCEL));
    ASSERT(!slot_op_writes(SLOT_OP_CHECK) && slot_op_admin(SLOT_OP_CHECK));
    ASSERT(slot_op_writes(SLOT_OP_EXPIRE) && slot_op_admin(SLOT_OP_EXPIRE));
    fx_close(&f);
}
