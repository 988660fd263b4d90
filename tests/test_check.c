/*
 * test_check.c — slot_check (the invariant scan) finds each kind of
 * corruption: the tests break one record of a small clean store by hand and
 * expect the matching invariant among the violations, about that event only.
 */
#include "alloc_fixture.h"

TEST_DECLARE(check_detects_shard_free_changed)
TEST_DECLARE(check_detects_shard_missing_or_extra)
TEST_DECLARE(check_detects_event_counters)
TEST_DECLARE(check_detects_hold_parts)
TEST_DECLARE(check_detects_hold_status_changed)
TEST_DECLARE(check_detects_expiry_index)
TEST_DECLARE(check_detects_users_record)
TEST_DECLARE(check_users_record_without_any_active_hold)
TEST_DECLARE(check_counts_and_caps_violations)

TEST_LIST_START
TEST_ENTRY(check_detects_shard_free_changed)
TEST_ENTRY(check_detects_shard_missing_or_extra)
TEST_ENTRY(check_detects_event_counters)
TEST_ENTRY(check_detects_hold_parts)
TEST_ENTRY(check_detects_hold_status_changed)
TEST_ENTRY(check_detects_expiry_index)
TEST_ENTRY(check_detects_users_record)
TEST_ENTRY(check_users_record_without_any_active_hold)
TEST_ENTRY(check_counts_and_caps_violations)
TEST_LIST_END

/* ---- check finds corruption */

/* Runs check (of all events, or of one) and asserts that invariant `inv` is
 * among the violations, and that every violation is about event `ev`. */
static void expect_violation(fx *f, const char *only, const char *ev, int inv)
{
    slot_res r = {0};
    ASSERT_EQ(slot_check(f->a.store, fx_txn(f), only, only ? strlen(only) : 0, &r), 0);
    expect_err(&r, SLOT_E_OK);
    ASSERT_GT(r.nviolations, 0);
    bool found = false;
    for (uint32_t i = 0; i < r.nviolations && i < SLOT_CHECK_VIOLATIONS_MAX; i++) {
        ASSERT_STR_EQ(r.violations[i].event, ev);
        ASSERT(r.violations[i].detail[0] != 0);
        found |= r.violations[i].invariant == inv;
    }
    if (!found)
        T_FAIL_("invariant %d not reported (first: %d %s)", inv, r.violations[0].invariant, r.violations[0].detail);
    slot_res_clear(&r);
}

/* A small clean world: event "C" (max_per_user 5) with a held, a confirmed and
 * a released hold, and a clean event "D" beside it. */
static void corrupt_setup(fx *f, char held[33], char conf[33], char rel[33])
{
    fx_open(f);
    create_full(f, "C", 20, 4, 5, 10, TTL_DEFAULT);
    create(f, "D", 20, 4);
    hold_ok(f, "C", "u", "k1", 3, held);
    hold_ok(f, "C", "v", "k1", 2, conf);
    hold_ok(f, "C", "w", "k1", 1, rel);
    hold_ok(f, "D", "u", "k1", 4, NULL);
    slot_res r = {0};
    on(f, SLOT_OP_CONFIRM, "C", conf, "v", &r);
    on(f, SLOT_OP_RELEASE, "C", rel, "w", &r);
    slot_res_clear(&r);
    fx_commit(f);
    expect_counts(f, "C", 15, 3, 2);
}

TEST_IMPL(check_detects_shard_free_changed)
{
    fx f;
    char h[33], c[33], rl[33];
    corrupt_setup(&f, h, c, rl);
    uint64_t v;
    ASSERT_EQ(slot_store_shard_get(f.st, fx_txn(&f), "C", 1, 2, &v), 0);
    ASSERT_EQ(slot_store_shard_put(f.st, fx_txn(&f), "C", 1, 2, v + 1), 0);
    expect_violation(&f, NULL, "C", 1);
    expect_violation(&f, "C", "C", 1);
    /* Checking only the other event finds nothing. */
    slot_res r = {0};
    ASSERT_EQ(slot_check(f.a.store, fx_txn(&f), "D", 1, &r), 0);
    ASSERT_EQ(r.nviolations, 0);
    ASSERT_EQ(r.events_checked, 1);
    ASSERT_EQ(r.holds_checked, 1);
    slot_res_clear(&r);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    fx_close(&f);
}

TEST_IMPL(check_detects_shard_missing_or_extra)
{
    fx f;
    char h[33], c[33], rl[33];
    corrupt_setup(&f, h, c, rl);
    ASSERT_EQ(slot_store_shard_del(f.st, fx_txn(&f), "C", 1, 3), 0);
    expect_violation(&f, NULL, "C", 1);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    ASSERT_EQ(slot_store_shard_put(f.st, fx_txn(&f), "C", 1, 4, 0), 0); /* a fifth record, 0 free */
    expect_violation(&f, NULL, "C", 1);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    fx_close(&f);
}

TEST_IMPL(check_detects_event_counters)
{
    fx f;
    char h[33], c[33], rl[33];
    corrupt_setup(&f, h, c, rl);
    slot_event_rec e;
    ASSERT_EQ(slot_store_event_get(f.st, fx_txn(&f), "C", 1, &e), 0);
    e.held += 1;
    ASSERT_EQ(slot_store_event_put(f.st, fx_txn(&f), "C", 1, &e), 0);
    expect_violation(&f, NULL, "C", 1);
    expect_violation(&f, NULL, "C", 2);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    /* held and capacity both one up: the sum holds, the holds do not. */
    ASSERT_EQ(slot_store_event_get(f.st, fx_txn(&f), "C", 1, &e), 0);
    e.held += 1;
    e.capacity += 1;
    ASSERT_EQ(slot_store_event_put(f.st, fx_txn(&f), "C", 1, &e), 0);
    expect_violation(&f, NULL, "C", 2);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    /* confirmed one down, a shard one up. */
    ASSERT_EQ(slot_store_event_get(f.st, fx_txn(&f), "C", 1, &e), 0);
    e.confirmed -= 1;
    ASSERT_EQ(slot_store_event_put(f.st, fx_txn(&f), "C", 1, &e), 0);
    uint64_t v;
    ASSERT_EQ(slot_store_shard_get(f.st, fx_txn(&f), "C", 1, 0, &v), 0);
    ASSERT_EQ(slot_store_shard_put(f.st, fx_txn(&f), "C", 1, 0, v + 1), 0);
    expect_violation(&f, NULL, "C", 2);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    /* more allocated than capacity. */
    ASSERT_EQ(slot_store_event_get(f.st, fx_txn(&f), "C", 1, &e), 0);
    e.capacity = 4;
    ASSERT_EQ(slot_store_event_put(f.st, fx_txn(&f), "C", 1, &e), 0);
    expect_violation(&f, NULL, "C", 1);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    fx_close(&f);
}

TEST_IMPL(check_detects_hold_parts)
{
    fx f;
    char h[33], c[33], rl[33];
    corrupt_setup(&f, h, c, rl);
    slot_hold_rec rec;
    hold_rec(&f, "C", h, &rec);
    rec.parts[0].qty += 1;
    ASSERT_EQ(slot_store_hold_put(f.st, fx_txn(&f), "C", 1, &rec), 0);
    expect_violation(&f, NULL, "C", 3);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    /* Also for a hold that is no longer active. */
    hold_rec(&f, "C", rl, &rec);
    rec.nparts = 0;
    ASSERT_EQ(slot_store_hold_put(f.st, fx_txn(&f), "C", 1, &rec), 0);
    expect_violation(&f, NULL, "C", 3);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    fx_close(&f);
}

TEST_IMPL(check_detects_hold_status_changed)
{
    fx f;
    char h[33], c[33], rl[33];
    corrupt_setup(&f, h, c, rl);
    /* A confirmed hold turned held: counters disagree, and it has no expiry entry. */
    slot_hold_rec rec;
    hold_rec(&f, "C", c, &rec);
    rec.status = SLOT_HOLD_HELD;
    ASSERT_EQ(slot_store_hold_put(f.st, fx_txn(&f), "C", 1, &rec), 0);
    expect_violation(&f, NULL, "C", 2);
    expect_violation(&f, NULL, "C", 7);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    fx_close(&f);
}

TEST_IMPL(check_detects_expiry_index)
{
    fx f;
    char h[33], c[33], rl[33];
    corrupt_setup(&f, h, c, rl);
    slot_hold_rec rec;
    hold_rec(&f, "C", h, &rec);
    ASSERT_EQ(slot_store_expiry_del(f.st, fx_txn(&f), rec.expires_at_ms, "C", 1, rec.seq), 0);
    expect_violation(&f, NULL, "C", 7);
    expect_violation(&f, "C", "C", 7);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    /* An entry for a released hold, one for a missing hold, one at the wrong time. */
    hold_rec(&f, "C", rl, &rec);
    ASSERT_EQ(slot_store_expiry_put(f.st, fx_txn(&f), rec.expires_at_ms, "C", 1, rec.seq), 0);
    expect_violation(&f, NULL, "C", 7);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    ASSERT_EQ(slot_store_expiry_put(f.st, fx_txn(&f), T0, "C", 1, 999), 0);
    expect_violation(&f, NULL, "C", 7);
    expect_violation(&f, "C", "C", 7);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    hold_rec(&f, "C", h, &rec);
    ASSERT_EQ(slot_store_expiry_put(f.st, fx_txn(&f), rec.expires_at_ms + 1, "C", 1, rec.seq), 0);
    expect_violation(&f, NULL, "C", 7);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    fx_close(&f);
}

TEST_IMPL(check_detects_users_record)
{
    fx f;
    char h[33], c[33], rl[33];
    corrupt_setup(&f, h, c, rl);
    ASSERT_EQ(slot_store_user_put(f.st, fx_txn(&f), "C", 1, "u", 1, 2), 0); /* holds say 3 */
    expect_violation(&f, NULL, "C", 4);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    ASSERT_EQ(slot_store_user_put(f.st, fx_txn(&f), "C", 1, "v", 1, 0), 0); /* missing */
    expect_violation(&f, NULL, "C", 4);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    ASSERT_EQ(slot_store_user_put(f.st, fx_txn(&f), "C", 1, "w", 1, 1), 0); /* w's hold was released */
    expect_violation(&f, NULL, "C", 4);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    ASSERT_EQ(slot_store_user_put(f.st, fx_txn(&f), "C", 1, "nobody", 6, 1), 0);
    expect_violation(&f, NULL, "C", 4);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    /* Records and holds agree, but above max_per_user. */
    slot_event_rec e;
    ASSERT_EQ(slot_store_event_get(f.st, fx_txn(&f), "C", 1, &e), 0);
    e.max_per_user = 2;
    ASSERT_EQ(slot_store_event_put(f.st, fx_txn(&f), "C", 1, &e), 0);
    expect_violation(&f, NULL, "C", 4);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    fx_close(&f);
}

TEST_IMPL(check_users_record_without_any_active_hold)
{
    /* An event with max_per_user whose only users record has no hold at all. */
    fx f;
    fx_open(&f);
    create_full(&f, "C", 10, 2, 3, 10, TTL_DEFAULT);
    fx_commit(&f);
    ASSERT_EQ(slot_store_user_put(f.st, fx_txn(&f), "C", 1, "ghost", 5, 1), 0);
    expect_violation(&f, NULL, "C", 4);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    fx_close(&f);
}

TEST_IMPL(check_counts_and_caps_violations)
{
    fx f;
    fx_open(&f);
    create_full(&f, "C", 200, 4, 0, 1, TTL_DEFAULT);
    for (int i = 0; i < 150; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        hold_ok(&f, "C", "u", key, 1, NULL);
    }
    fx_commit(&f);
    slot_res r = {0};
    slot_req q = slot_test_req(SLOT_OP_CHECK, NULL);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.nviolations, 0);
    ASSERT_EQ(r.events_checked, 1);
    ASSERT_EQ(r.holds_checked, 150);
    for (uint64_t seq = 1; seq <= 150; seq++) {
        slot_hold_rec rec;
        ASSERT_EQ(slot_store_hold_get(f.st, fx_txn(&f), "C", 1, seq, &rec), 0);
        rec.parts[0].qty = 0;
        ASSERT_EQ(slot_store_hold_put(f.st, fx_txn(&f), "C", 1, &rec), 0);
    }
    q = slot_test_req(SLOT_OP_CHECK, "C");
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.nviolations, 150);
    for (int i = 0; i < SLOT_CHECK_VIOLATIONS_MAX; i++)
        ASSERT_EQ(r.violations[i].invariant, 3);
    slot_res_clear(&r);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    fx_close(&f);
}
