/*
 * test_ops.c — the allocator (slot/alloc.h): every transition and every
 * error code of the ops of docs/protocol.md, on real LMDB transactions with a
 * clock the test moves by hand. After every step the tests look at the
 * event's counters, the shards' free sum and a full slot_alloc_check (no
 * violations).
 */
#include "alloc_fixture.h"

TEST_DECLARE(alloc_create_event_defaults_and_even_spread)
TEST_DECLARE(alloc_create_event_exists_with_other_settings)
TEST_DECLARE(alloc_unknown_event_everywhere)
TEST_DECLARE(alloc_hold_held)
TEST_DECLARE(alloc_hold_draws_from_several_shards)
TEST_DECLARE(alloc_hold_random_start_then_next_shards)
TEST_DECLARE(alloc_hold_sold_out_with_available)
TEST_DECLARE(alloc_hold_replay_every_status)
TEST_DECLARE(alloc_hold_idempotency_conflict_and_other_user)
TEST_DECLARE(alloc_hold_order_of_decisions)
TEST_DECLARE(alloc_hold_not_on_sale_then_on_sale)
TEST_DECLARE(alloc_user_limit)
TEST_DECLARE(alloc_user_count_after_lazy_expiry_on_sold_out_path)
TEST_DECLARE(alloc_confirm)
TEST_DECLARE(alloc_confirm_not_active)
TEST_DECLARE(alloc_confirm_one_ms_before_expiry)
TEST_DECLARE(alloc_unknown_hold)
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
    TEST_ENTRY(alloc_create_event_defaults_and_even_spread)
    TEST_ENTRY(alloc_create_event_exists_with_other_settings)
    TEST_ENTRY(alloc_unknown_event_everywhere)
    TEST_ENTRY(alloc_hold_held)
    TEST_ENTRY(alloc_hold_draws_from_several_shards)
    TEST_ENTRY(alloc_hold_random_start_then_next_shards)
    TEST_ENTRY(alloc_hold_sold_out_with_available)
    TEST_ENTRY(alloc_hold_replay_every_status)
    TEST_ENTRY(alloc_hold_idempotency_conflict_and_other_user)
    TEST_ENTRY(alloc_hold_order_of_decisions)
    TEST_ENTRY(alloc_hold_not_on_sale_then_on_sale)
    TEST_ENTRY(alloc_user_limit)
    TEST_ENTRY(alloc_user_count_after_lazy_expiry_on_sold_out_path)
    TEST_ENTRY(alloc_confirm)
    TEST_ENTRY(alloc_confirm_not_active)
    TEST_ENTRY(alloc_confirm_one_ms_before_expiry)
    TEST_ENTRY(alloc_unknown_hold)
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


/* ---- create_event */

TEST_IMPL(alloc_create_event_defaults_and_even_spread)
{
    fx f;
    fx_open(&f);
    slot_req q = req_create("E", 100);
    slot_res r = {0};
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.replay);
    ASSERT_STR_EQ(r.view.event, "E");
    ASSERT_EQ(r.view.status, SLOT_EVENT_ON_SALE);
    ASSERT_EQ(r.view.capacity, 100);
    ASSERT_EQ(r.view.available, 100);
    ASSERT_EQ(r.view.held, 0);
    ASSERT_EQ(r.view.confirmed, 0);
    ASSERT_EQ(r.view.shards, 16);
    ASSERT_EQ(r.view.hold_ttl_ms, 600000);
    ASSERT_EQ(r.view.max_per_user, 0);
    ASSERT_EQ(r.view.max_per_request, 10);
    expect_counts(&f, "E", 100, 0, 0);
    expect_even(&f, "E");
    uint64_t fr[16];
    ASSERT_EQ(shards_free(&f, NULL, "E", fr, 16), 16);
    for (int i = 0; i < 16; i++)
        ASSERT(fr[i] == 6 || fr[i] == 7);

    /* Fewer units than shards, none at all, and the biggest event. */
    create(&f, "few", 5, 16);
    expect_counts(&f, "few", 5, 0, 0);
    expect_even(&f, "few");
    create(&f, "none", 0, 3);
    expect_counts(&f, "none", 0, 0, 0);
    create(&f, "big", SLOT_CAPACITY_MAX, SLOT_SHARDS_MAX);
    expect_counts(&f, "big", SLOT_CAPACITY_MAX, 0, 0);
    expect_even(&f, "big");
    create(&f, "one", 7, 1);
    expect_counts(&f, "one", 7, 0, 0);
    fx_commit(&f);

    /* The same settings again: a replay that changes nothing. */
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.replay);
    ASSERT_EQ(r.view.capacity, 100);
    ASSERT_EQ(r.view.shards, 16);
    expect_counts(&f, "E", 100, 0, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_create_event_exists_with_other_settings)
{
    fx f;
    fx_open(&f);
    create_full(&f, "E", 10, 4, 2, 5, 2000);
    hold_ok(&f, "E", "u", "r1", 1, NULL);
    fx_commit(&f);

    slot_req base = req_create("E", 10);
    base.shards = 4;
    base.max_per_user = 2;
    base.max_per_request = 5;
    base.hold_ttl_ms = 2000;
    slot_res r = {0};
    run(&f, &base, &r);
    ASSERT(r.replay);
    ASSERT_EQ(r.view.held, 1);
    ASSERT_EQ(r.view.available, 9);

    for (int which = 0; which < 5; which++) {
        slot_req q = base;
        switch (which) {
        case 0: q.capacity = 11; break;
        case 1: q.shards = 16; break;
        case 2: q.max_per_user = 0; break;
        case 3: q.max_per_request = 10; break;
        default: q.hold_ttl_ms = 600000; break;
        }
        run(&f, &q, &r);
        expect_err(&r, SLOT_E_EVENT_EXISTS);
        ASSERT(!r.replay);
        expect_counts(&f, "E", 9, 1, 0);
    }
    /* Defaults filled in differ from the event's settings. */
    slot_req d = req_create("E", 10);
    run(&f, &d, &r);
    expect_err(&r, SLOT_E_EVENT_EXISTS);

    /* "The settings the event has now": after set_capacity the new capacity replays. */
    slot_req c = slot_test_req(SLOT_OP_SET_CAPACITY, "E");
    c.capacity = 20;
    run(&f, &c, &r);
    expect_err(&r, SLOT_E_OK);
    slot_req now20 = base;
    now20.capacity = 20;
    run(&f, &now20, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.replay);
    run(&f, &base, &r);
    expect_err(&r, SLOT_E_EVENT_EXISTS);
    expect_counts(&f, "E", 19, 1, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_unknown_event_everywhere)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 2);
    char id[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "E", "u", "r", 1, id);
    fx_commit(&f);
    static const slot_op ops[] = {SLOT_OP_CONFIRM, SLOT_OP_RELEASE, SLOT_OP_GET_HOLD, SLOT_OP_CANCEL,
                                  SLOT_OP_EVENT,   SLOT_OP_SHARDS,  SLOT_OP_SET_CAPACITY, SLOT_OP_RESHARD,
                                  SLOT_OP_SET_STATUS};
    slot_res r = {0};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        slot_req q = req_on(ops[i], "EE", id, "u");
        q.shards = 4;
        q.capacity = 100;
        run(&f, &q, &r);
        expect_err(&r, SLOT_E_UNKNOWN_EVENT);
    }
    /* hold: unknown_event comes before any other decision (qty above every max). */
    hold_err(&f, "nope", "u", "r", 1000, SLOT_E_UNKNOWN_EVENT);
    hold_err(&f, "e", "u", "r", 1, SLOT_E_UNKNOWN_EVENT);
    /* check of one unknown event. */
    slot_req c = slot_test_req(SLOT_OP_CHECK, "nope");
    run(&f, &c, &r);
    expect_err(&r, SLOT_E_UNKNOWN_EVENT);
    expect_counts(&f, "E", 9, 1, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

/* ---- hold */

TEST_IMPL(alloc_hold_held)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 4);
    char id[SLOT_HOLD_ID_BYTES + 1];
    uint64_t exp = hold_ok(&f, "E", "alice", "r1", 2, id);
    ASSERT_EQ(exp, T0 + TTL_DEFAULT);
    for (int i = 0; i < SLOT_HOLD_ID_BYTES; i++)
        ASSERT((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'));
    expect_counts(&f, "E", 8, 2, 0);
    fx_commit(&f);

    slot_res r = {0};
    f.now += 5;
    on(&f, SLOT_OP_GET_HOLD, "E", id, "alice", &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_STR_EQ(r.hold, id);
    ASSERT_STR_EQ(r.user, "alice");
    ASSERT_EQ(r.hold_status, SLOT_HOLD_HELD);
    ASSERT_EQ(r.qty, 2);
    ASSERT_EQ(r.created_at_ms, T0);
    ASSERT_EQ(r.expires_at_ms, T0 + TTL_DEFAULT);

    /* The record: parts add up, expiry entry present. */
    slot_hold_rec h;
    hold_rec(&f, "E", id, &h);
    ASSERT_EQ(h.status, SLOT_HOLD_HELD);
    ASSERT_GE(h.nparts, 1);
    uint32_t sum = 0;
    for (int i = 0; i < h.nparts; i++)
        sum += h.parts[i].qty;
    ASSERT_EQ(sum, 2);
    ASSERT_EQ(slot_store_expiry_has(f.st, fx_txn(&f), h.expires_at_ms, "E", 1, h.seq), 0);

    /* A second hold gets another id. */
    char id2[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "E", "alice", "r2", 1, id2);
    ASSERT(strcmp(id, id2) != 0);
    expect_counts(&f, "E", 7, 3, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_hold_draws_from_several_shards)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 4, 4);
    char id[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "E", "u", "r", 4, id);
    expect_counts(&f, "E", 0, 4, 0);
    uint64_t fr[4];
    ASSERT_EQ(shards_free(&f, NULL, "E", fr, 4), 4);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(fr[i], 0);
    slot_hold_rec h;
    hold_rec(&f, "E", id, &h);
    ASSERT_EQ(h.nparts, 4);
    unsigned seen = 0;
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(h.parts[i].qty, 1);
        ASSERT_LT(h.parts[i].shard, 4);
        seen |= 1u << h.parts[i].shard;
    }
    ASSERT_EQ(seen, 0xf);
    hold_sold_out(&f, "E", "u", "r2", 1, 0);
    fx_commit(&f);

    /* Uneven shards (3,3,2,2): one hold takes all ten. */
    create(&f, "F", 10, 4);
    hold_ok(&f, "F", "u", "r", 10, id);
    expect_counts(&f, "F", 0, 10, 0);
    hold_rec(&f, "F", id, &h);
    ASSERT_EQ(h.nparts, 4);
    fx_close(&f);
}

/* docs/design.md's rule: a random start shard, take what it can, then the next
 * shards in turn. Seeded, so the outcome repeats. */
TEST_IMPL(alloc_hold_random_start_then_next_shards)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 800, 8); /* 100 per shard */
    unsigned starts = 0;
    slot_hold_rec h;
    for (int i = 0; i < 64; i++) {
        char key[16], id[33];
        snprintf(key, sizeof key, "k%d", i);
        hold_ok(&f, "E", "u", key, 3, id);
        hold_rec(&f, "E", id, &h);
        ASSERT_EQ(h.nparts, 1); /* the start shard had enough */
        ASSERT_EQ(h.parts[0].qty, 3);
        starts |= 1u << h.parts[0].shard;
    }
    ASSERT_GE(__builtin_popcount(starts), 6); /* not always the same shard */
    expect_counts(&f, "E", 608, 192, 0);

    /* 2 free in each of 4 shards, qty 5: start, start+1, start+2 (mod 4). */
    create(&f, "F", 8, 4);
    char id[33];
    hold_ok(&f, "F", "u", "k", 5, id);
    hold_rec(&f, "F", id, &h);
    ASSERT_EQ(h.nparts, 3);
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(h.parts[i].shard, (h.parts[0].shard + i) % 4);
        ASSERT_EQ(h.parts[i].qty, i < 2 ? 2 : 1);
    }
    expect_counts(&f, "F", 3, 5, 0);
    fx_close(&f);
}

TEST_IMPL(alloc_hold_sold_out_with_available)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 5, 4);
    char a[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "E", "u1", "r", 3, a);
    hold_sold_out(&f, "E", "u2", "r", 3, 2);
    expect_counts(&f, "E", 2, 3, 0);
    fx_commit(&f);
    /* No shard has 2 alone (free is spread 1,1 or so) but all together do. */
    hold_ok(&f, "E", "u2", "r2", 2, NULL);
    expect_counts(&f, "E", 0, 5, 0);
    hold_sold_out(&f, "E", "u3", "r", 1, 0);
    fx_commit(&f);

    /* A sold-out answer is not remembered: after units come back, the same key
     * (even with another qty) is a new hold, not a replay or a conflict. */
    slot_res r = {0};
    on(&f, SLOT_OP_RELEASE, "E", a, "u1", &r);
    ASSERT(r.done);
    hold_ok(&f, "E", "u2", "r", 2, NULL);
    expect_counts(&f, "E", 1, 4, 0);
    hold_ok(&f, "E", "u3", "r", 1, NULL);
    expect_counts(&f, "E", 0, 5, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

/* A replay of (event, user, request) answers the hold's current status. */
static void expect_replay(fx *f, const char *ev, const char *user, const char *request, uint32_t qty,
                          const char *id, slot_hold_status st)
{
    slot_req q = req_hold(ev, user, request, qty);
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.replay);
    ASSERT(!r.sold_out);
    ASSERT_STR_EQ(r.hold, id);
    ASSERT_EQ(r.qty, qty);
    if (r.hold_status != st)
        T_FAIL_("replay status %s, want %s", slot_hold_status_name(r.hold_status), slot_hold_status_name(st));
    slot_res_clear(&r);
}

TEST_IMPL(alloc_hold_replay_every_status)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 20, 4);
    char h1[33], h2[33], h3[33], h4[33], h5[33];
    uint64_t exp1 = hold_ok(&f, "E", "u", "k1", 2, h1);
    hold_ok(&f, "E", "u", "k2", 2, h2);
    hold_ok(&f, "E", "u", "k3", 2, h3);
    hold_ok(&f, "E", "u", "k4", 2, h4);
    f.now += 1000;
    hold_ok(&f, "E", "u", "k5", 2, h5);
    fx_commit(&f);
    expect_counts(&f, "E", 10, 10, 0);

    /* held: same id, expires_at kept, nothing changes. */
    slot_req q = req_hold("E", "u", "k1", 2);
    slot_res r = {0};
    run(&f, &q, &r);
    ASSERT(r.replay);
    ASSERT_STR_EQ(r.hold, h1);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_HELD);
    ASSERT_EQ(r.expires_at_ms, exp1);
    ASSERT_EQ(r.created_at_ms, T0);
    expect_counts(&f, "E", 10, 10, 0);

    on(&f, SLOT_OP_CONFIRM, "E", h2, "u", &r);
    expect_err(&r, SLOT_E_OK);
    on(&f, SLOT_OP_RELEASE, "E", h3, "u", &r);
    ASSERT(r.done);
    on(&f, SLOT_OP_CANCEL, "E", h4, NULL, &r);
    ASSERT(r.done);
    fx_commit(&f);
    expect_counts(&f, "E", 14, 4, 2);
    expect_replay(&f, "E", "u", "k2", 2, h2, SLOT_HOLD_CONFIRMED);
    expect_replay(&f, "E", "u", "k3", 2, h3, SLOT_HOLD_RELEASED);
    expect_replay(&f, "E", "u", "k4", 2, h4, SLOT_HOLD_CANCELLED);
    expect_counts(&f, "E", 14, 4, 2);

    /* expired: at expires_at the replay shows expired and the units are back. */
    f.now = exp1;
    expect_replay(&f, "E", "u", "k1", 2, h1, SLOT_HOLD_EXPIRED);
    expect_counts(&f, "E", 16, 2, 2);
    expect_replay(&f, "E", "u", "k1", 2, h1, SLOT_HOLD_EXPIRED);
    expect_counts(&f, "E", 16, 2, 2);
    expect_replay(&f, "E", "u", "k5", 2, h5, SLOT_HOLD_HELD); /* not due yet */
    fx_commit(&f);

    /* A replay is answered even when the event is closed. */
    set_status(&f, "E", SLOT_EVENT_CLOSED);
    expect_replay(&f, "E", "u", "k5", 2, h5, SLOT_HOLD_HELD);
    expect_replay(&f, "E", "u", "k2", 2, h2, SLOT_HOLD_CONFIRMED);
    expect_counts(&f, "E", 16, 2, 2);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_hold_idempotency_conflict_and_other_user)
{
    fx f;
    fx_open(&f);
    create_full(&f, "E", 20, 4, 0, 3, TTL_DEFAULT);
    char h1[33], h2[33];
    hold_ok(&f, "E", "u", "k", 2, h1);
    hold_err(&f, "E", "u", "k", 1, SLOT_E_IDEMPOTENCY_CONFLICT);
    hold_err(&f, "E", "u", "k", 3, SLOT_E_IDEMPOTENCY_CONFLICT);
    /* The conflict comes before "qty above max_per_request". */
    hold_err(&f, "E", "u", "k", 50, SLOT_E_IDEMPOTENCY_CONFLICT);
    expect_counts(&f, "E", 18, 2, 0);
    /* Another user may use the same key: an own hold. */
    hold_ok(&f, "E", "v", "k", 2, h2);
    ASSERT(strcmp(h1, h2) != 0);
    expect_counts(&f, "E", 16, 4, 0);
    /* The same key on another event is another key too. */
    create(&f, "F", 5, 1);
    hold_ok(&f, "F", "u", "k", 1, NULL);
    expect_counts(&f, "F", 4, 1, 0);
    fx_commit(&f);
    /* The conflict is answered even when the event is closed. */
    set_status(&f, "E", SLOT_EVENT_CLOSED);
    hold_err(&f, "E", "u", "k", 1, SLOT_E_IDEMPOTENCY_CONFLICT);
    expect_replay(&f, "E", "v", "k", 2, h2, SLOT_HOLD_HELD);
    expect_counts(&f, "E", 16, 4, 0);
    fx_close(&f);
}

/* docs/protocol.md's order: unknown_event -> replay/conflict -> qty above max ->
 * not_on_sale -> user_limit -> sold_out/held. Each pair is set up so that
 * both errors apply and the earlier one must win. */
TEST_IMPL(alloc_hold_order_of_decisions)
{
    fx f;
    fx_open(&f);
    create_full(&f, "E", 4, 2, 2, 3, TTL_DEFAULT);
    char h1[33];
    hold_ok(&f, "E", "u", "k1", 2, h1); /* u at its limit of 2 */
    hold_ok(&f, "E", "v", "k1", 2, NULL); /* sold out now */
    fx_commit(&f);
    expect_counts(&f, "E", 0, 4, 0);

    /* user_limit before sold_out. */
    hold_err(&f, "E", "u", "k2", 1, SLOT_E_USER_LIMIT);
    /* sold_out for a user under the limit. */
    hold_sold_out(&f, "E", "w", "k2", 1, 0);
    /* qty above max_per_request before user_limit and sold_out. */
    hold_err(&f, "E", "u", "k3", 4, SLOT_E_INVALID_ARGUMENT);
    hold_err(&f, "E", "w", "k3", 1000, SLOT_E_INVALID_ARGUMENT);
    /* A replay of a sold-out event's hold. */
    expect_replay(&f, "E", "u", "k1", 2, h1, SLOT_HOLD_HELD);
    fx_commit(&f);

    set_status(&f, "E", SLOT_EVENT_CLOSED);
    /* not_on_sale before user_limit and sold_out. */
    hold_err(&f, "E", "u", "k4", 1, SLOT_E_NOT_ON_SALE);
    hold_err(&f, "E", "w", "k4", 1, SLOT_E_NOT_ON_SALE);
    /* qty above max before not_on_sale. */
    hold_err(&f, "E", "w", "k4", 4, SLOT_E_INVALID_ARGUMENT);
    /* replay / conflict before qty above max and not_on_sale. */
    expect_replay(&f, "E", "u", "k1", 2, h1, SLOT_HOLD_HELD);
    hold_err(&f, "E", "u", "k1", 4, SLOT_E_IDEMPOTENCY_CONFLICT);
    /* unknown_event first of all. */
    hold_err(&f, "X", "u", "k1", 4, SLOT_E_UNKNOWN_EVENT);
    expect_counts(&f, "E", 0, 4, 0);
    fx_commit(&f);

    /* Failed requests stored no request key: the same keys are free to use. */
    set_status(&f, "E", SLOT_EVENT_ON_SALE);
    slot_res r = {0};
    on(&f, SLOT_OP_RELEASE, "E", h1, "u", &r);
    ASSERT(r.done);
    hold_ok(&f, "E", "w", "k4", 1, NULL);
    hold_ok(&f, "E", "u", "k2", 1, NULL);
    expect_counts(&f, "E", 0, 4, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_hold_not_on_sale_then_on_sale)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 2);
    set_status(&f, "E", SLOT_EVENT_CLOSED);
    hold_err(&f, "E", "u", "k", 1, SLOT_E_NOT_ON_SALE);
    expect_counts(&f, "E", 10, 0, 0);
    fx_commit(&f);
    slot_req q = slot_test_req(SLOT_OP_EVENT, "E");
    slot_res r = {0};
    run(&f, &q, &r);
    ASSERT_EQ(r.view.status, SLOT_EVENT_CLOSED);
    set_status(&f, "E", SLOT_EVENT_ON_SALE);
    run(&f, &q, &r);
    ASSERT_EQ(r.view.status, SLOT_EVENT_ON_SALE);
    hold_ok(&f, "E", "u", "k", 1, NULL);
    expect_counts(&f, "E", 9, 1, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_user_limit)
{
    fx f;
    fx_open(&f);
    create_full(&f, "E", 100, 4, 4, 10, 10000);
    char a[33], b[33], c[33];
    hold_ok(&f, "E", "u", "k1", 3, a);
    ASSERT_EQ(user_rec(&f, "E", "u"), 3);
    hold_err(&f, "E", "u", "k2", 2, SLOT_E_USER_LIMIT);
    hold_ok(&f, "E", "u", "k3", 1, b); /* exactly at the limit */
    ASSERT_EQ(user_rec(&f, "E", "u"), 4);
    hold_err(&f, "E", "u", "k4", 1, SLOT_E_USER_LIMIT);
    hold_ok(&f, "E", "other", "k4", 4, NULL); /* per user */
    expect_counts(&f, "E", 92, 8, 0);
    fx_commit(&f);

    /* Releasing frees the limit. */
    slot_res r = {0};
    on(&f, SLOT_OP_RELEASE, "E", b, "u", &r);
    ASSERT(r.done);
    ASSERT_EQ(user_rec(&f, "E", "u"), 3);
    hold_ok(&f, "E", "u", "k5", 1, c);
    /* Confirmed units count too. */
    on(&f, SLOT_OP_CONFIRM, "E", a, "u", &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(user_rec(&f, "E", "u"), 4);
    hold_err(&f, "E", "u", "k6", 1, SLOT_E_USER_LIMIT);
    /* Cancel of a confirmed hold frees it. */
    on(&f, SLOT_OP_CANCEL, "E", a, NULL, &r);
    ASSERT(r.done);
    ASSERT_EQ(user_rec(&f, "E", "u"), 1);
    expect_counts(&f, "E", 95, 5, 0);
    fx_commit(&f);

    /* An expired-but-unswept hold no longer counts: at its expires_at the
     * user may hold again, in the same transaction. */
    hold_ok(&f, "E", "u", "k7", 3, NULL); /* u: 1 + 3 = 4 */
    hold_err(&f, "E", "u", "k8", 1, SLOT_E_USER_LIMIT);
    fx_commit(&f);
    f.now = T0 + 10000; /* c (made at T0) and k7 are due */
    hold_ok(&f, "E", "u", "k8", 4, NULL);
    ASSERT_EQ(user_rec(&f, "E", "u"), 4);
    /* c, k7 and other's 4 (all made at T0) were expired on the way. */
    expect_counts(&f, "E", 96, 4, 0);
    ASSERT_EQ(user_rec(&f, "E", "other"), 0);
    slot_res_clear(&r);
    fx_close(&f);
}

/* Regression: the sold-out path expired due holds (returning a user's units)
 * but kept the user's quantity read before it, so the new hold wrote a users
 * record that still counted the expired hold (invariant 4). */
TEST_IMPL(alloc_user_count_after_lazy_expiry_on_sold_out_path)
{
    fx f;
    fx_open(&f);
    create_full(&f, "E", 4, 2, 10, 10, 10000);
    hold_ok(&f, "E", "u", "k1", 2, NULL); /* due at T0 + 10000 */
    f.now = T0 + 1;
    hold_ok(&f, "E", "v", "k1", 2, NULL); /* due a ms later */
    fx_commit(&f);
    expect_counts(&f, "E", 0, 4, 0);
    f.now = T0 + 10000;
    /* u is under its limit (2 + 2 <= 10) but the event looks sold out until
     * u's own due hold is expired on the hold path. */
    hold_ok(&f, "E", "u", "k2", 2, NULL);
    ASSERT_EQ(user_rec(&f, "E", "u"), 2);
    expect_counts(&f, "E", 0, 4, 0);
    fx_close(&f);
}

/* ---- confirm */

TEST_IMPL(alloc_confirm)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 4);
    create(&f, "F", 10, 4);
    char a[33], other_ev[33];
    hold_ok(&f, "E", "u", "k1", 2, a);
    hold_ok(&f, "F", "u", "k1", 2, other_ev);
    fx_commit(&f);

    slot_res r = {0};
    on(&f, SLOT_OP_CONFIRM, "E", a, "u", &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.replay);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CONFIRMED);
    ASSERT_STR_EQ(r.hold, a);
    ASSERT_EQ(r.qty, 2);
    expect_counts(&f, "E", 8, 0, 2);
    fx_commit(&f);
    slot_hold_rec h;
    hold_rec(&f, "E", a, &h);
    ASSERT_EQ(slot_store_expiry_has(f.st, fx_txn(&f), h.expires_at_ms, "E", 1, h.seq), MDB_NOTFOUND);

    /* Confirming again: a replay; past the hold's expires_at it stays confirmed. */
    f.now = T0 + TTL_DEFAULT + 5;
    on(&f, SLOT_OP_CONFIRM, "E", a, "u", &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.replay);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CONFIRMED);
    ASSERT_EQ(r.qty, 2);
    expect_counts(&f, "E", 8, 0, 2);
    fx_commit(&f);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_confirm_not_active)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 4);
    char rel[33], can[33], exp[33];
    hold_ok(&f, "E", "u", "k1", 1, rel);
    hold_ok(&f, "E", "u", "k2", 1, can);
    f.now += 1;
    uint64_t due = hold_ok(&f, "E", "u", "k3", 1, exp);
    slot_res r = {0};
    on(&f, SLOT_OP_RELEASE, "E", rel, "u", &r);
    on(&f, SLOT_OP_CANCEL, "E", can, NULL, &r);
    fx_commit(&f);
    expect_counts(&f, "E", 9, 1, 0);

    on(&f, SLOT_OP_CONFIRM, "E", rel, "u", &r);
    expect_err(&r, SLOT_E_HOLD_NOT_ACTIVE);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_RELEASED);
    on(&f, SLOT_OP_CONFIRM, "E", can, "u", &r);
    expect_err(&r, SLOT_E_HOLD_NOT_ACTIVE);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CANCELLED);
    expect_counts(&f, "E", 9, 1, 0);

    /* At expires_at the hold is expired: confirm expires it, returning its
     * unit, once. */
    f.now = due;
    on(&f, SLOT_OP_CONFIRM, "E", exp, "u", &r);
    expect_err(&r, SLOT_E_HOLD_NOT_ACTIVE);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_EXPIRED);
    expect_counts(&f, "E", 10, 0, 0);
    on(&f, SLOT_OP_CONFIRM, "E", exp, "u", &r);
    expect_err(&r, SLOT_E_HOLD_NOT_ACTIVE);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_EXPIRED);
    expect_counts(&f, "E", 10, 0, 0);
    fx_commit(&f);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_confirm_one_ms_before_expiry)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 4);
    char a[33];
    uint64_t due = hold_ok(&f, "E", "u", "k1", 3, a);
    fx_commit(&f);
    f.now = due - 1;
    slot_res r = {0};
    on(&f, SLOT_OP_CONFIRM, "E", a, "u", &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CONFIRMED);
    expect_counts(&f, "E", 7, 0, 3);
    fx_commit(&f);
    /* The sweeper never touches a confirmed hold. */
    f.now = due + 1000;
    uint64_t n = 99;
    ASSERT_EQ(slot_alloc_expire_due(&f.a, fx_txn(&f), f.now, 100, &n), 0);
    ASSERT_EQ(n, 0);
    expect_counts(&f, "E", 7, 0, 3);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(alloc_unknown_hold)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 4);
    create(&f, "F", 10, 4);
    char a[33], fa[33];
    hold_ok(&f, "E", "u", "k1", 1, a);
    hold_ok(&f, "F", "u", "k1", 1, fa);
    fx_commit(&f);

    char wrong_tag[33], wrong_seq[33], upper[33];
    memcpy(wrong_tag, a, 33);
    wrong_tag[31] = wrong_tag[31] == '0' ? '1' : '0';
    memcpy(wrong_seq, a, 33);
    wrong_seq[15] = wrong_seq[15] == '9' ? '8' : '9';
    memcpy(upper, a, 33);
    for (int i = 0; i < 32; i++)
        if (upper[i] >= 'a' && upper[i] <= 'f')
            upper[i] = (char)(upper[i] - 'a' + 'A');
    int has_letter = strcmp(upper, a) != 0;
    char longer[40];
    snprintf(longer, sizeof longer, "%s0", a);
    char shorter[33];
    memcpy(shorter, a, 31);
    shorter[31] = 0;
    const char *bad[] = {wrong_tag, wrong_seq, longer, shorter, "x", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
                         "0000000000000000000000000000000-", has_letter ? upper : "g", fa};
    static const slot_op ops[] = {SLOT_OP_CONFIRM, SLOT_OP_RELEASE, SLOT_OP_GET_HOLD, SLOT_OP_CANCEL};
    slot_res r = {0};
    for (size_t o = 0; o < 4; o++) {
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            /* fa is a real hold of event F: unknown in E. */
            on(&f, ops[o], "E", bad[i], "u", &r);
            expect_err(&r, SLOT_E_UNKNOWN_HOLD);
            ASSERT(!r.done);
        }
        /* Another user's hold looks the same as no hold (cancel is any user's). */
        if (ops[o] != SLOT_OP_CANCEL) {
            on(&f, ops[o], "E", a, "v", &r);
            expect_err(&r, SLOT_E_UNKNOWN_HOLD);
            on(&f, ops[o], "E", a, "uu", &r);
            expect_err(&r, SLOT_E_UNKNOWN_HOLD);
        }
    }
    expect_counts(&f, "E", 9, 1, 0);
    expect_counts(&f, "F", 9, 1, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

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

