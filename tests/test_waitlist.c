/*
 * test_waitlist.c — the waitlist of an event (docs/protocol.md, "Waitlist"
 * and "Clarifications of v1.1"), on the allocator with real LMDB
 * transactions and a clock moved by hand: joins, leaves, replays, positions
 * (from the tree of leaves, never a scan), and the hand-out in join order in
 * the commit that returns units (release, expiry by the sweeper or lazily,
 * cancel, capacity increase, partial confirm). Every commit is followed by a
 * clean slot_check, which verifies the list as well.
 */
#include <string.h>

#include "alloc_fixture.h"

TEST_DECLARE(waitlist_join_when_free_is_a_hold)
TEST_DECLARE(waitlist_join_leave_replay)
TEST_DECLARE(waitlist_release_hands_to_the_head)
TEST_DECLARE(waitlist_head_blocks_those_behind)
TEST_DECLARE(waitlist_expiry_and_cancel_hand_out)
TEST_DECLARE(waitlist_capacity_increase_and_partial_confirm)
TEST_DECLARE(waitlist_full_and_disabled)
TEST_DECLARE(waitlist_user_limit_counts_waiting)
TEST_DECLARE(waitlist_positions_after_leaves)
TEST_DECLARE(waitlist_offers_whatever_the_status)

TEST_LIST_START
TEST_ENTRY(waitlist_join_when_free_is_a_hold)
TEST_ENTRY(waitlist_join_leave_replay)
TEST_ENTRY(waitlist_release_hands_to_the_head)
TEST_ENTRY(waitlist_head_blocks_those_behind)
TEST_ENTRY(waitlist_expiry_and_cancel_hand_out)
TEST_ENTRY(waitlist_capacity_increase_and_partial_confirm)
TEST_ENTRY(waitlist_full_and_disabled)
TEST_ENTRY(waitlist_user_limit_counts_waiting)
TEST_ENTRY(waitlist_positions_after_leaves)
TEST_ENTRY(waitlist_offers_whatever_the_status)
TEST_LIST_END

static void create_wl(fx *f, const char *ev, uint64_t cap, uint32_t wmax, uint64_t mpu)
{
    slot_req q = req_create(ev, cap);
    q.shards = 2;
    q.waitlist_max = wmax;
    q.max_per_user = mpu;
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.view.waitlist_max, wmax);
    slot_res_clear(&r);
}

static slot_req req_wait(slot_op op, const char *ev, const char *user, const char *request, uint32_t qty)
{
    slot_req q = req_hold(ev, user, request, qty);
    q.op = op;
    return q;
}

/* waitlist_join that must be answered waiting at `pos`. */
static void join_waiting(fx *f, const char *ev, const char *user, const char *request, uint32_t qty, uint64_t pos)
{
    slot_req q = req_wait(SLOT_OP_WAITLIST_JOIN, ev, user, request, qty);
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.sold_out);
    ASSERT_EQ(r.wait_state, SLOT_WAIT_WAITING);
    ASSERT_U64_EQ(r.position, pos);
    slot_res_clear(&r);
}

/* The waitlist op's answer for the key, into r (the caller clears it). */
static void state(fx *f, const char *ev, const char *user, const char *request, slot_res *r)
{
    slot_req q = req_wait(SLOT_OP_WAITLIST, ev, user, request, 0);
    run(f, &q, r);
    expect_err(r, SLOT_E_OK);
}

static void expect_waiting(fx *f, const char *ev, uint64_t n, uint64_t qty)
{
    slot_req q = slot_test_req(SLOT_OP_EVENT, ev);
    slot_res r = {0};
    run(f, &q, &r);
    ASSERT_U64_EQ(r.view.waiting, n);
    ASSERT_U64_EQ(r.view.waiting_qty, qty);
    slot_res_clear(&r);
}

/* The entry must be offered a held hold of qty units; its id into hold (may be NULL). */
static void expect_offered(fx *f, const char *ev, const char *user, const char *request, uint32_t qty, char *hold)
{
    slot_res r = {0};
    state(f, ev, user, request, &r);
    ASSERT_EQ(r.wait_state, SLOT_WAIT_OFFERED);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_HELD);
    ASSERT_EQ(r.qty, qty);
    ASSERT_U64_EQ(r.expires_at_ms, f->now + TTL_DEFAULT);
    if (hold)
        memcpy(hold, r.hold, SLOT_HOLD_ID_BYTES + 1);
    slot_res_clear(&r);
}

static void expect_state(fx *f, const char *ev, const char *user, const char *request, slot_wait_state want)
{
    slot_res r = {0};
    state(f, ev, user, request, &r);
    ASSERT_EQ(r.wait_state, want);
    slot_res_clear(&r);
}

TEST_IMPL(waitlist_join_when_free_is_a_hold)
{
    fx f;
    fx_open(&f);
    create_wl(&f, "e", 3, 10, 0);
    slot_req q = req_wait(SLOT_OP_WAITLIST_JOIN, "e", "u", "k", 2);
    slot_res r = {0};
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.wait_state, SLOT_WAIT_NONE);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_HELD);
    ASSERT_EQ(r.qty, 2);
    char h[SLOT_HOLD_ID_BYTES + 1];
    memcpy(h, r.hold, sizeof h);
    run(&f, &q, &r); /* replay */
    ASSERT(r.replay);
    ASSERT_STR_EQ(r.hold, h);
    expect_state(&f, "e", "u", "k", SLOT_WAIT_NONE);             /* held at once: no entry */
    hold_err(&f, "e", "u", "k", 2, SLOT_E_IDEMPOTENCY_CONFLICT); /* one key space per (event, user) */
    expect_counts(&f, "e", 1, 2, 0);
    expect_waiting(&f, "e", 0, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(waitlist_join_leave_replay)
{
    fx f;
    fx_open(&f);
    create_wl(&f, "e", 1, 10, 0);
    hold_ok(&f, "e", "a", "k", 1, NULL);
    join_waiting(&f, "e", "b", "k", 1, 1);
    join_waiting(&f, "e", "c", "k", 1, 2);
    join_waiting(&f, "e", "b", "k", 1, 1); /* replay */
    slot_req q = req_wait(SLOT_OP_WAITLIST_JOIN, "e", "b", "k", 2);
    slot_res r = {0};
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_IDEMPOTENCY_CONFLICT);                 /* other qty */
    hold_err(&f, "e", "b", "k", 1, SLOT_E_IDEMPOTENCY_CONFLICT); /* a plain hold with an entry's key */
    hold_sold_out(&f, "e", "d", "k", 1, 0);
    expect_waiting(&f, "e", 2, 2);
    fx_commit(&f);

    slot_req leave = req_wait(SLOT_OP_WAITLIST_LEAVE, "e", "b", "k", 0);
    run(&f, &leave, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.done);
    run(&f, &leave, &r);
    ASSERT(!r.done); /* twice: left:false */
    slot_req none = req_wait(SLOT_OP_WAITLIST_LEAVE, "e", "nobody", "k", 0);
    run(&f, &none, &r);
    ASSERT(!r.done);
    expect_state(&f, "e", "b", "k", SLOT_WAIT_LEFT);
    expect_state(&f, "e", "nobody", "k", SLOT_WAIT_NONE);
    slot_req back = req_wait(SLOT_OP_WAITLIST_JOIN, "e", "b", "k", 1);
    run(&f, &back, &r); /* the key is spent */
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.wait_state, SLOT_WAIT_LEFT);
    ASSERT(r.replay);
    join_waiting(&f, "e", "c", "k", 1, 1); /* c moved up */
    expect_waiting(&f, "e", 1, 1);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(waitlist_release_hands_to_the_head)
{
    fx f;
    fx_open(&f);
    create_wl(&f, "e", 2, 10, 0);
    char h[SLOT_HOLD_ID_BYTES + 1], o[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "e", "a", "k", 2, h);
    join_waiting(&f, "e", "b", "k", 1, 1);
    join_waiting(&f, "e", "c", "k", 1, 2);
    join_waiting(&f, "e", "d", "k", 1, 3);
    fx_commit(&f);
    f.now += 10;
    slot_res r = {0};
    on(&f, SLOT_OP_RELEASE, "e", h, "a", &r);
    ASSERT(r.done);
    expect_offered(&f, "e", "b", "k", 1, o);
    expect_offered(&f, "e", "c", "k", 1, NULL);
    join_waiting(&f, "e", "d", "k", 1, 1);
    expect_counts(&f, "e", 0, 2, 0);
    expect_waiting(&f, "e", 1, 1);
    /* The offered hold is an ordinary hold: the join's replay shows it, confirm works. */
    slot_req j = req_wait(SLOT_OP_WAITLIST_JOIN, "e", "b", "k", 1);
    run(&f, &j, &r);
    ASSERT(r.replay);
    ASSERT_STR_EQ(r.hold, o);
    ASSERT_EQ(r.wait_state, SLOT_WAIT_OFFERED);
    slot_hold_rec rec;
    hold_rec(&f, "e", o, &rec);
    ASSERT_EQ(rec.kind, SLOT_HOLD_KIND_WAITLIST);
    on(&f, SLOT_OP_CONFIRM, "e", o, "b", &r);
    expect_err(&r, SLOT_E_OK);
    expect_counts(&f, "e", 0, 1, 1);
    fx_commit(&f);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(waitlist_head_blocks_those_behind)
{
    fx f;
    fx_open(&f);
    create_wl(&f, "e", 3, 10, 0);
    char h1[SLOT_HOLD_ID_BYTES + 1], h2[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "e", "a", "k1", 1, h1);
    hold_ok(&f, "e", "a", "k2", 2, h2);
    join_waiting(&f, "e", "big", "k", 3, 1);
    join_waiting(&f, "e", "small", "k", 1, 2);
    slot_res r = {0};
    on(&f, SLOT_OP_RELEASE, "e", h1, "a", &r); /* 1 free: big cannot be met, small must not go first */
    expect_state(&f, "e", "big", "k", SLOT_WAIT_WAITING);
    expect_state(&f, "e", "small", "k", SLOT_WAIT_WAITING);
    hold_sold_out(&f, "e", "z", "k", 1, 1); /* plain holds wait their turn */
    expect_counts(&f, "e", 1, 2, 0);
    fx_commit(&f);
    on(&f, SLOT_OP_RELEASE, "e", h2, "a", &r); /* 3 free: big first */
    expect_offered(&f, "e", "big", "k", 3, NULL);
    join_waiting(&f, "e", "small", "k", 1, 1);
    expect_counts(&f, "e", 0, 3, 0);
    fx_commit(&f);
    /* The head leaves: whoever behind it can be met is served at once. */
    create_wl(&f, "g", 2, 10, 0);
    hold_ok(&f, "g", "a", "k1", 1, h1);
    hold_ok(&f, "g", "a", "k2", 1, h2);
    join_waiting(&f, "g", "big", "k", 2, 1);
    join_waiting(&f, "g", "small", "k", 1, 2);
    on(&f, SLOT_OP_RELEASE, "g", h1, "a", &r);
    expect_state(&f, "g", "small", "k", SLOT_WAIT_WAITING);
    slot_req leave = req_wait(SLOT_OP_WAITLIST_LEAVE, "g", "big", "k", 0);
    run(&f, &leave, &r);
    ASSERT(r.done);
    expect_offered(&f, "g", "small", "k", 1, NULL);
    expect_counts(&f, "g", 0, 2, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(waitlist_expiry_and_cancel_hand_out)
{
    fx f;
    fx_open(&f);
    create_wl(&f, "e", 2, 10, 0);
    char h1[SLOT_HOLD_ID_BYTES + 1], h2[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "e", "a", "k1", 1, h1);
    f.now += 1000;
    hold_ok(&f, "e", "a", "k2", 1, h2);
    join_waiting(&f, "e", "b", "k", 1, 1);
    join_waiting(&f, "e", "c", "k", 1, 2);
    join_waiting(&f, "e", "d", "k", 1, 3);
    fx_commit(&f);
    /* The sweeper expires h1: b is offered in the same transaction. */
    f.now = T0 + TTL_DEFAULT;
    uint64_t n = 0;
    ASSERT_EQ(slot_alloc_expire_due(&f.a, fx_txn(&f), f.now, SLOT_SWEEP_BATCH_MAX, &n), 0);
    ASSERT_EQ(n, 1);
    expect_offered(&f, "e", "b", "k", 1, NULL);
    fx_commit(&f);
    /* Lazily: h2 is due; a release of it finds it expired, and c is offered. */
    f.now += 1000;
    slot_res r = {0};
    on(&f, SLOT_OP_RELEASE, "e", h2, "a", &r);
    ASSERT(!r.done);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_EXPIRED);
    char o[SLOT_HOLD_ID_BYTES + 1];
    expect_offered(&f, "e", "c", "k", 1, o);
    fx_commit(&f);
    /* An admin cancels c's offered hold: d is next. */
    on(&f, SLOT_OP_CONFIRM, "e", o, "c", &r);
    expect_err(&r, SLOT_E_OK);
    on(&f, SLOT_OP_CANCEL, "e", o, NULL, &r);
    ASSERT(r.done);
    expect_offered(&f, "e", "d", "k", 1, NULL);
    expect_waiting(&f, "e", 0, 0);
    expect_counts(&f, "e", 0, 2, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(waitlist_capacity_increase_and_partial_confirm)
{
    fx f;
    fx_open(&f);
    create_wl(&f, "e", 3, 10, 0);
    char h[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "e", "a", "k", 3, h);
    join_waiting(&f, "e", "b", "k", 2, 1);
    join_waiting(&f, "e", "c", "k", 1, 2);
    join_waiting(&f, "e", "d", "k", 2, 3);
    slot_req cap = slot_test_req(SLOT_OP_SET_CAPACITY, "e");
    cap.capacity = 6;
    slot_res r = {0};
    run(&f, &cap, &r);
    expect_err(&r, SLOT_E_OK);
    expect_offered(&f, "e", "b", "k", 2, NULL);
    expect_offered(&f, "e", "c", "k", 1, NULL);
    join_waiting(&f, "e", "d", "k", 2, 1);
    fx_commit(&f);
    /* A reshard frees nothing and changes nothing for those waiting. */
    reshard(&f, "e", 5);
    join_waiting(&f, "e", "d", "k", 2, 1);
    /* a confirms 1 of 3: the 2 given back go to d. */
    slot_req c = req_on(SLOT_OP_CONFIRM, "e", h, "a");
    c.qty = 1;
    c.has |= SLOT_HAS_QTY;
    run(&f, &c, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.returned, 2);
    expect_offered(&f, "e", "d", "k", 2, NULL);
    expect_counts(&f, "e", 0, 5, 1);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(waitlist_full_and_disabled)
{
    fx f;
    fx_open(&f);
    create_wl(&f, "e", 1, 2, 0);
    create_wl(&f, "none", 1, 0, 0);
    hold_ok(&f, "e", "a", "k", 1, NULL);
    hold_ok(&f, "none", "a", "k", 1, NULL);
    join_waiting(&f, "e", "b", "k", 1, 1);
    join_waiting(&f, "e", "c", "k", 1, 2);
    slot_req q = req_wait(SLOT_OP_WAITLIST_JOIN, "e", "d", "k", 1);
    slot_res r = {0};
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.sold_out);
    ASSERT(r.waitlist_full);
    ASSERT_EQ(r.available, 0);
    q = req_wait(SLOT_OP_WAITLIST_JOIN, "none", "d", "k", 1);
    run(&f, &q, &r);
    ASSERT(r.sold_out);
    ASSERT(r.waitlist_full);
    expect_state(&f, "e", "d", "k", SLOT_WAIT_NONE); /* nothing queued */
    expect_waiting(&f, "e", 2, 2);
    expect_waiting(&f, "none", 0, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(waitlist_user_limit_counts_waiting)
{
    fx f;
    fx_open(&f);
    create_wl(&f, "e", 2, 10, 3);
    char h[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "e", "a", "k", 2, h);
    join_waiting(&f, "e", "u", "k1", 2, 1);
    ASSERT_U64_EQ(user_rec(&f, "e", "u"), 2);
    slot_req q = req_wait(SLOT_OP_WAITLIST_JOIN, "e", "u", "k2", 2);
    slot_res r = {0};
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_USER_LIMIT); /* 2 waiting + 2 > 3 */
    join_waiting(&f, "e", "u", "k3", 1, 2);
    ASSERT_U64_EQ(user_rec(&f, "e", "u"), 3);
    on(&f, SLOT_OP_RELEASE, "e", h, "a", &r); /* u's first entry gets both units */
    ASSERT_U64_EQ(user_rec(&f, "e", "u"), 3);
    slot_req leave = req_wait(SLOT_OP_WAITLIST_LEAVE, "e", "u", "k3", 0);
    run(&f, &leave, &r);
    ASSERT(r.done);
    ASSERT_U64_EQ(user_rec(&f, "e", "u"), 2);
    expect_counts(&f, "e", 0, 2, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(waitlist_positions_after_leaves)
{
    fx f;
    fx_open(&f);
    create_wl(&f, "e", 1, 1000, 0);
    char h[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "e", "a", "k", 1, h);
    char user[16];
    for (int i = 0; i < 300; i++) {
        snprintf(user, sizeof user, "u%d", i);
        join_waiting(&f, "e", user, "k", 1, (uint64_t)i + 1);
    }
    fx_commit(&f);
    slot_res r = {0};
    for (int i = 0; i < 300; i += 3) { /* every third leaves */
        snprintf(user, sizeof user, "u%d", i);
        slot_req leave = req_wait(SLOT_OP_WAITLIST_LEAVE, "e", user, "k", 0);
        run(&f, &leave, &r);
        ASSERT(r.done);
    }
    fx_commit(&f);
    on(&f, SLOT_OP_RELEASE, "e", h, "a", &r); /* u1 is offered */
    expect_offered(&f, "e", "u1", "k", 1, NULL);
    uint64_t pos = 0;
    for (int i = 2; i < 300; i++) {
        if (i % 3 == 0)
            continue;
        snprintf(user, sizeof user, "u%d", i);
        join_waiting(&f, "e", user, "k", 1, ++pos);
    }
    expect_waiting(&f, "e", pos, pos);
    slot_req show = slot_test_req(SLOT_OP_WAITLIST_ENTRIES, "e");
    show.limit = 3;
    run(&f, &show, &r);
    ASSERT_EQ(r.nentries, 3);
    ASSERT_STR_EQ(r.entries[0].user, "u2");
    ASSERT_STR_EQ(r.entries[1].user, "u4");
    ASSERT_U64_EQ(r.entries[2].position, 3);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(waitlist_offers_whatever_the_status)
{
    fx f;
    fx_open(&f);
    create_wl(&f, "e", 1, 10, 0);
    char h[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "e", "a", "k", 1, h);
    join_waiting(&f, "e", "b", "k", 1, 1);
    set_status(&f, "e", SLOT_EVENT_CLOSED);
    slot_req q = req_wait(SLOT_OP_WAITLIST_JOIN, "e", "c", "k", 1);
    slot_res r = {0};
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_NOT_ON_SALE);    /* a join is decided like a hold */
    join_waiting(&f, "e", "b", "k", 1, 1); /* a replay answers while closed */
    on(&f, SLOT_OP_RELEASE, "e", h, "a", &r);
    expect_offered(&f, "e", "b", "k", 1, NULL); /* those waiting joined while it was selling */
    slot_res_clear(&r);
    fx_close(&f);
}
