/*
 * test_ops_hold.c — the allocator (slot/alloc.h), the buyer's way in:
 * create_event, hold (shards, sold out, replays, conflicts, the order of
 * decisions, per-user limits) and confirm, with every error code of
 * docs/protocol.md, on real LMDB transactions with a clock the test moves by
 * hand. After every step the tests look at the event's counters, the shards'
 * free sum and a full slot_check (no violations). The rest: test_ops_admin.c.
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
        case 0:
            q.capacity = 11;
            break;
        case 1:
            q.shards = 16;
            break;
        case 2:
            q.max_per_user = 0;
            break;
        case 3:
            q.max_per_request = 10;
            break;
        default:
            q.hold_ttl_ms = 600000;
            break;
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
    static const slot_op ops[] = {SLOT_OP_CONFIRM,      SLOT_OP_RELEASE, SLOT_OP_GET_HOLD,
                                  SLOT_OP_CANCEL,       SLOT_OP_EVENT,   SLOT_OP_SHARDS,
                                  SLOT_OP_SET_CAPACITY, SLOT_OP_RESHARD, SLOT_OP_SET_STATUS};
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
    hold_ok(&f, "E", "u", "k1", 2, h1);   /* u at its limit of 2 */
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
    const char *bad[] = {wrong_tag,
                         wrong_seq,
                         longer,
                         shorter,
                         "x",
                         "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
                         "0000000000000000000000000000000-",
                         has_letter ? upper : "g",
                         fa};
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
