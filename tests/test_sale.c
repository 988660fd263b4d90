/*
 * test_sale.c — the v1.1 ops of the allocator (docs/protocol.md, "Sale
 * windows", "extend", "Partial confirm", "Reacquire"): on real LMDB
 * transactions with a clock the test moves by hand (the allocator's now_ms),
 * so instants such as "1 ms before opens_at" are exact. After each step the
 * counters, the shards' free sum and a full slot_check are looked at.
 */
#include <string.h>

#include "alloc_fixture.h"

TEST_DECLARE(sale_window_edges)
TEST_DECLARE(sale_window_other_ops_work_outside)
TEST_DECLARE(sale_window_closed_status_wins)
TEST_DECLARE(sale_window_view_replay_and_records)
TEST_DECLARE(sale_extend_up_to_the_limits)
TEST_DECLARE(sale_extend_max_hold_ms)
TEST_DECLARE(sale_extend_expired_and_not_held)
TEST_DECLARE(sale_extend_and_sweeper_at_the_expiry_instant)
TEST_DECLARE(sale_extend_moves_the_expiry)
TEST_DECLARE(sale_partial_confirm_every_qty)
TEST_DECLARE(sale_partial_confirm_bad_qty_replay_expired)
TEST_DECLARE(sale_partial_confirm_max_per_user)
TEST_DECLARE(sale_reacquire_units_free)
TEST_DECLARE(sale_reacquire_none_free)
TEST_DECLARE(sale_reacquire_user_limit_and_window)
TEST_DECLARE(sale_reacquire_refused_and_ignored)
TEST_DECLARE(sale_reacquire_repeated)
TEST_DECLARE(sale_reacquire_keeps_the_hold_replay)
TEST_DECLARE(sale_version_1_records_still_read)

TEST_LIST_START
TEST_ENTRY(sale_window_edges)
TEST_ENTRY(sale_window_other_ops_work_outside)
TEST_ENTRY(sale_window_closed_status_wins)
TEST_ENTRY(sale_window_view_replay_and_records)
TEST_ENTRY(sale_extend_up_to_the_limits)
TEST_ENTRY(sale_extend_max_hold_ms)
TEST_ENTRY(sale_extend_expired_and_not_held)
TEST_ENTRY(sale_extend_and_sweeper_at_the_expiry_instant)
TEST_ENTRY(sale_extend_moves_the_expiry)
TEST_ENTRY(sale_partial_confirm_every_qty)
TEST_ENTRY(sale_partial_confirm_bad_qty_replay_expired)
TEST_ENTRY(sale_partial_confirm_max_per_user)
TEST_ENTRY(sale_reacquire_units_free)
TEST_ENTRY(sale_reacquire_none_free)
TEST_ENTRY(sale_reacquire_user_limit_and_window)
TEST_ENTRY(sale_reacquire_refused_and_ignored)
TEST_ENTRY(sale_reacquire_repeated)
TEST_ENTRY(sale_reacquire_keeps_the_hold_replay)
TEST_ENTRY(sale_version_1_records_still_read)
TEST_LIST_END

#define HOUR_MS UINT64_C(3600000)

static void window(fx *f, const char *ev, uint64_t opens, uint64_t closes)
{
    slot_req q = slot_test_req(SLOT_OP_SET_SALE_WINDOW, ev);
    q.opens_at_ms = opens;
    q.closes_at_ms = closes;
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_U64_EQ(r.view.opens_at_ms, opens);
    ASSERT_U64_EQ(r.view.closes_at_ms, closes);
    slot_res_clear(&r);
}

/* A not_on_sale answer that carries the window. */
static void hold_not_on_sale(fx *f, const char *ev, const char *user, const char *key, uint64_t opens, uint64_t closes)
{
    slot_req q = req_hold(ev, user, key, 1);
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, SLOT_E_NOT_ON_SALE);
    ASSERT_U64_EQ(r.opens_at_ms, opens);
    ASSERT_U64_EQ(r.closes_at_ms, closes);
    slot_res_clear(&r);
}

static slot_req req_confirm(const char *ev, const char *hold, const char *user, uint32_t qty, bool reacquire)
{
    slot_req q = req_on(SLOT_OP_CONFIRM, ev, hold, user);
    if (qty) {
        q.qty = qty;
        q.has |= SLOT_HAS_QTY;
    }
    q.reacquire = reacquire;
    return q;
}

static void extend(fx *f, const char *ev, const char *hold, uint32_t by_ms, slot_res *r)
{
    slot_req q = req_on(SLOT_OP_EXTEND, ev, hold, "u");
    q.by_ms = by_ms;
    run(f, &q, r);
}

static uint64_t expiry_first(fx *f)
{
    uint64_t at = 0;
    ASSERT_EQ(slot_store_expiry_first(f->st, fx_txn(f), &at), 0);
    return at;
}

/* ---- windows */

TEST_IMPL(sale_window_edges)
{
    fx f;
    fx_open(&f);
    uint64_t opens = T0 + HOUR_MS, closes = T0 + 2 * HOUR_MS;
    slot_req c = req_create("E", 10);
    c.opens_at_ms = opens;
    c.closes_at_ms = closes;
    slot_res r = {0};
    run(&f, &c, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_U64_EQ(r.view.opens_at_ms, opens);
    ASSERT_U64_EQ(r.view.closes_at_ms, closes);
    ASSERT_EQ(r.view.status, SLOT_EVENT_ON_SALE); /* the window is shown beside the status */
    slot_res_clear(&r);
    f.now = opens - 1;
    hold_not_on_sale(&f, "E", "u", "a", opens, closes);
    f.now = opens;
    hold_ok(&f, "E", "u", "b", 1, NULL);
    f.now = closes - 1;
    hold_ok(&f, "E", "u", "c", 1, NULL);
    f.now = closes;
    hold_not_on_sale(&f, "E", "u", "d", opens, closes);
    /* Only an opening, only a closing, then none. */
    window(&f, "E", opens, 0);
    f.now = closes + HOUR_MS;
    hold_ok(&f, "E", "u", "e", 1, NULL);
    window(&f, "E", 0, closes);
    hold_not_on_sale(&f, "E", "u", "f", 0, closes);
    window(&f, "E", 0, 0);
    hold_ok(&f, "E", "u", "f", 1, NULL);
    expect_counts(&f, "E", 6, 4, 0);
    fx_close(&f);
}

TEST_IMPL(sale_window_other_ops_work_outside)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 2);
    char a[SLOT_HOLD_ID_BYTES + 1], b[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "E", "u", "a", 2, a);
    hold_ok(&f, "E", "u", "b", 3, b);
    window(&f, "E", 0, f.now + 1);
    f.now += 1; /* closed by its window now */
    hold_not_on_sale(&f, "E", "u", "c", 0, f.now);
    slot_res r = {0};
    /* A replay is answered outside the window. */
    slot_req q = req_hold("E", "u", "a", 2);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.replay);
    ASSERT_STR_EQ(r.hold, a);
    on(&f, SLOT_OP_CONFIRM, "E", a, "u", &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CONFIRMED);
    on(&f, SLOT_OP_GET_HOLD, "E", b, "u", &r);
    expect_err(&r, SLOT_E_OK);
    on(&f, SLOT_OP_RELEASE, "E", b, "u", &r);
    ASSERT(r.done);
    expect_counts(&f, "E", 8, 0, 2);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(sale_window_closed_status_wins)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 2);
    window(&f, "E", T0 - HOUR_MS, T0 + HOUR_MS); /* the window says open */
    set_status(&f, "E", SLOT_EVENT_CLOSED);
    hold_not_on_sale(&f, "E", "u", "a", T0 - HOUR_MS, T0 + HOUR_MS);
    set_status(&f, "E", SLOT_EVENT_ON_SALE);
    hold_ok(&f, "E", "u", "a", 1, NULL);
    fx_close(&f);
}

TEST_IMPL(sale_window_view_replay_and_records)
{
    fx f;
    fx_open(&f);
    slot_req c = req_create("E", 10);
    c.opens_at_ms = T0 + 5;
    c.max_extensions = 3;
    c.max_hold_ms = 5000;
    slot_res r = {0};
    run(&f, &c, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.view.max_extensions, 3);
    ASSERT_U64_EQ(r.view.max_hold_ms, 5000);
    fx_commit(&f);
    /* The same settings are a replay; another window, max_extensions or max_hold_ms is event_exists. */
    run(&f, &c, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.replay);
    for (int i = 0; i < 4; i++) {
        slot_req o = c;
        if (i == 0)
            o.opens_at_ms = 0;
        if (i == 1)
            o.closes_at_ms = T0 + 99;
        if (i == 2)
            o.max_extensions = 1;
        if (i == 3)
            o.max_hold_ms = 0; /* the default, 2 x hold_ttl_ms */
        run(&f, &o, &r);
        expect_err(&r, SLOT_E_EVENT_EXISTS);
    }
    /* Defaults: max_extensions 1, max_hold_ms 2 x hold_ttl_ms. */
    slot_req d = req_create("D", 1);
    d.hold_ttl_ms = 7000;
    run(&f, &d, &r);
    ASSERT_EQ(r.view.max_extensions, 1);
    ASSERT_U64_EQ(r.view.max_hold_ms, 14000);
    slot_req ev = slot_test_req(SLOT_OP_EVENT, "E");
    run(&f, &ev, &r);
    ASSERT_U64_EQ(r.view.opens_at_ms, T0 + 5);
    ASSERT_U64_EQ(r.view.closes_at_ms, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

/* ---- extend */

TEST_IMPL(sale_extend_up_to_the_limits)
{
    fx f;
    fx_open(&f);
    slot_req c = req_create("E", 10);
    c.hold_ttl_ms = 10000;
    c.max_extensions = 3;
    c.max_hold_ms = 1000000;
    slot_res r = {0};
    run(&f, &c, &r);
    char h[SLOT_HOLD_ID_BYTES + 1];
    uint64_t exp = hold_ok(&f, "E", "u", "a", 1, h);
    for (uint32_t i = 1; i <= 3; i++) {
        extend(&f, "E", h, 2000, &r);
        expect_err(&r, SLOT_E_OK);
        ASSERT_EQ(r.hold_status, SLOT_HOLD_HELD);
        ASSERT_STR_EQ(r.hold, h);
        ASSERT_U64_EQ(r.expires_at_ms, exp + 2000 * i);
        ASSERT_EQ(r.extensions, i);
    }
    extend(&f, "E", h, 2000, &r); /* one past max_extensions */
    expect_err(&r, SLOT_E_EXTEND_LIMIT);
    on(&f, SLOT_OP_GET_HOLD, "E", h, "u", &r);
    ASSERT_U64_EQ(r.expires_at_ms, exp + 6000);
    ASSERT_EQ(r.extensions, 3);
    /* max_extensions 0: no extension at all. */
    slot_req z = req_create("Z", 10);
    z.max_extensions = 0;
    run(&f, &z, &r);
    hold_ok(&f, "Z", "u", "a", 1, h);
    extend(&f, "Z", h, 1000, &r);
    expect_err(&r, SLOT_E_EXTEND_LIMIT);
    expect_counts(&f, "E", 9, 1, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(sale_extend_max_hold_ms)
{
    fx f;
    fx_open(&f);
    slot_req c = req_create("E", 10);
    c.hold_ttl_ms = 10000;
    c.max_extensions = 100;
    c.max_hold_ms = 15000; /* created_at + 15 s at most */
    slot_res r = {0};
    run(&f, &c, &r);
    char h[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "E", "u", "a", 1, h);
    extend(&f, "E", h, 4000, &r);
    expect_err(&r, SLOT_E_OK);
    extend(&f, "E", h, 1001, &r); /* one ms past created_at + max_hold_ms */
    expect_err(&r, SLOT_E_EXTEND_LIMIT);
    extend(&f, "E", h, 1000, &r); /* exactly to it */
    expect_err(&r, SLOT_E_OK);
    ASSERT_U64_EQ(r.expires_at_ms, T0 + 15000);
    /* The default (2 x hold_ttl_ms) and max_hold_ms below hold_ttl_ms. */
    slot_req d = req_create("D", 10);
    d.hold_ttl_ms = 10000;
    run(&f, &d, &r);
    hold_ok(&f, "D", "u", "a", 1, h);
    extend(&f, "D", h, 10000, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_U64_EQ(r.expires_at_ms, T0 + 20000);
    slot_req s = req_create("S", 10);
    s.hold_ttl_ms = 10000;
    s.max_hold_ms = 5000;
    run(&f, &s, &r);
    hold_ok(&f, "S", "u", "a", 1, h);
    extend(&f, "S", h, 1000, &r);
    expect_err(&r, SLOT_E_EXTEND_LIMIT);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(sale_extend_expired_and_not_held)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 2);
    char a[SLOT_HOLD_ID_BYTES + 1], b[SLOT_HOLD_ID_BYTES + 1];
    uint64_t exp = hold_ok(&f, "E", "u", "a", 2, a);
    hold_ok(&f, "E", "u", "b", 1, b);
    slot_res r = {0};
    on(&f, SLOT_OP_CONFIRM, "E", b, "u", &r);
    extend(&f, "E", b, 1000, &r);
    expect_err(&r, SLOT_E_HOLD_NOT_ACTIVE);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CONFIRMED);
    /* Order: unknown_event, unknown_hold (also another user's), then hold_not_active. */
    extend(&f, "X", a, 1000, &r);
    expect_err(&r, SLOT_E_UNKNOWN_EVENT);
    slot_req q = req_on(SLOT_OP_EXTEND, "E", a, "v");
    q.by_ms = 1000;
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_UNKNOWN_HOLD);
    /* At expires_at the hold is expired first (lazy expiry), then hold_not_active. */
    f.now = exp;
    extend(&f, "E", a, 60000, &r);
    expect_err(&r, SLOT_E_HOLD_NOT_ACTIVE);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_EXPIRED);
    expect_counts(&f, "E", 9, 0, 1);
    slot_res_clear(&r);
    fx_close(&f);
}

/* extend and the sweeper at the same instant, in both orders, in one batch
 * and in two: one outcome, the units back once. */
TEST_IMPL(sale_extend_and_sweeper_at_the_expiry_instant)
{
    for (int order = 0; order < 4; order++) {
        fx f;
        fx_open(&f);
        create(&f, "E", 4, 2);
        char h[SLOT_HOLD_ID_BYTES + 1];
        uint64_t exp = hold_ok(&f, "E", "u", "a", 3, h);
        fx_commit(&f);
        f.now = exp;
        uint64_t n = 0;
        slot_res r = {0};
        if (order % 2 == 0) {
            ASSERT_EQ(slot_alloc_expire_due(&f.a, fx_txn(&f), f.now, 100, &n), 0);
            ASSERT_EQ(n, 1);
            if (order == 2)
                fx_commit(&f);
            extend(&f, "E", h, 1000, &r);
            expect_err(&r, SLOT_E_HOLD_NOT_ACTIVE);
            ASSERT_EQ(r.hold_status, SLOT_HOLD_EXPIRED);
        } else {
            extend(&f, "E", h, 1000, &r);
            expect_err(&r, SLOT_E_HOLD_NOT_ACTIVE); /* now >= expires_at: expired, not extended */
            if (order == 3)
                fx_commit(&f);
            ASSERT_EQ(slot_alloc_expire_due(&f.a, fx_txn(&f), f.now, 100, &n), 0);
            ASSERT_EQ(n, 0);
        }
        expect_counts(&f, "E", 4, 0, 0);
        /* One ms earlier the extend wins and the sweeper finds nothing due. */
        char g[SLOT_HOLD_ID_BYTES + 1];
        uint64_t e2 = hold_ok(&f, "E", "u", "b", 2, g);
        f.now = e2 - 1;
        extend(&f, "E", g, 1000, &r);
        expect_err(&r, SLOT_E_OK);
        f.now = e2;
        ASSERT_EQ(slot_alloc_expire_due(&f.a, fx_txn(&f), f.now, 100, &n), 0);
        ASSERT_EQ(n, 0);
        expect_counts(&f, "E", 2, 2, 0);
        slot_res_clear(&r);
        fx_close(&f);
    }
}

TEST_IMPL(sale_extend_moves_the_expiry)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 2);
    char h[SLOT_HOLD_ID_BYTES + 1];
    uint64_t exp = hold_ok(&f, "E", "u", "a", 2, h);
    slot_res r = {0};
    extend(&f, "E", h, 5000, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_U64_EQ(expiry_first(&f), exp + 5000);
    ASSERT_EQ(slot_store_expiry_has(f.st, fx_txn(&f), exp, "E", 1, seq_of(h)), MDB_NOTFOUND);
    fx_commit(&f);
    /* The sweeper and lazy expiry use the new time. */
    uint64_t n = 9;
    ASSERT_EQ(slot_alloc_expire_due(&f.a, fx_txn(&f), exp + 4999, 100, &n), 0);
    ASSERT_EQ(n, 0);
    f.now = exp + 4999;
    on(&f, SLOT_OP_GET_HOLD, "E", h, "u", &r);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_HELD);
    ASSERT_EQ(slot_alloc_expire_due(&f.a, fx_txn(&f), exp + 5000, 100, &n), 0);
    ASSERT_EQ(n, 1);
    expect_counts(&f, "E", 10, 0, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

/* ---- partial confirm */

TEST_IMPL(sale_partial_confirm_every_qty)
{
    fx f;
    fx_open(&f);
    slot_req c = req_create("E", 100);
    c.shards = 7;
    c.max_per_user = 100;
    slot_res r = {0};
    run(&f, &c, &r);
    uint64_t confirmed = 0;
    for (uint32_t q = 1; q <= 10; q++) {
        char key[16], h[SLOT_HOLD_ID_BYTES + 1];
        snprintf(key, sizeof key, "k%u", q);
        /* Take 10 from a few shards (the units of 100 spread over 7: 14 or 15 each). */
        hold_ok(&f, "E", "u", key, 10, h);
        slot_req cq = req_confirm("E", h, "u", q, false);
        run(&f, &cq, &r);
        expect_err(&r, SLOT_E_OK);
        ASSERT_EQ(r.hold_status, SLOT_HOLD_CONFIRMED);
        ASSERT_EQ(r.qty, q);
        ASSERT_EQ(r.returned, 10 - q);
        confirmed += q;
        slot_hold_rec rec;
        hold_rec(&f, "E", h, &rec);
        uint32_t parts = 0;
        for (uint16_t i = 0; i < rec.nparts; i++) {
            ASSERT(rec.parts[i].qty > 0);
            parts += rec.parts[i].qty;
        }
        ASSERT_EQ(parts, q);
        ASSERT_EQ(rec.returned, 10 - q);
        on(&f, SLOT_OP_GET_HOLD, "E", h, "u", &r);
        ASSERT_EQ(r.qty, q);
        ASSERT_EQ(r.returned, 10 - q);
        expect_counts(&f, "E", 100 - confirmed, 0, confirmed);
        ASSERT_U64_EQ(user_rec(&f, "E", "u"), confirmed);
        if (q % 3 == 0)
            fx_commit(&f);
    }
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(sale_partial_confirm_bad_qty_replay_expired)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 3);
    char h[SLOT_HOLD_ID_BYTES + 1], g[SLOT_HOLD_ID_BYTES + 1];
    uint64_t exp = hold_ok(&f, "E", "u", "a", 4, h);
    hold_ok(&f, "E", "u", "b", 2, g);
    slot_res r = {0};
    slot_req above = req_confirm("E", h, "u", 5, false);
    run(&f, &above, &r);
    expect_err(&r, SLOT_E_INVALID_ARGUMENT);
    expect_counts(&f, "E", 4, 6, 0); /* nothing changed */
    slot_req three = req_confirm("E", h, "u", 3, false);
    run(&f, &three, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.returned, 1);
    /* A replay answers the first outcome whatever qty it carries (also none, or above). */
    slot_req replays[] = {req_confirm("E", h, "u", 1, false), req_confirm("E", h, "u", 0, false),
                          req_confirm("E", h, "u", 9, false), req_confirm("E", h, "u", 3, true)};
    for (size_t i = 0; i < sizeof replays / sizeof replays[0]; i++) {
        run(&f, &replays[i], &r);
        expect_err(&r, SLOT_E_OK);
        ASSERT(r.replay);
        ASSERT_EQ(r.qty, 3);
        ASSERT_EQ(r.returned, 1);
    }
    expect_counts(&f, "E", 5, 2, 3);
    /* On an expired hold: hold_not_active (expired), its units back once. */
    f.now = exp;
    slot_req late = req_confirm("E", g, "u", 1, false);
    run(&f, &late, &r);
    expect_err(&r, SLOT_E_HOLD_NOT_ACTIVE);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_EXPIRED);
    expect_counts(&f, "E", 7, 0, 3);
    /* Cancel of a partially confirmed hold gives back the confirmed part only. */
    slot_req cancel = req_on(SLOT_OP_CANCEL, "E", h, NULL);
    run(&f, &cancel, &r);
    ASSERT(r.done);
    expect_counts(&f, "E", 10, 0, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(sale_partial_confirm_max_per_user)
{
    fx f;
    fx_open(&f);
    create_full(&f, "E", 20, 2, 4, 10, TTL_DEFAULT);
    char h[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "E", "u", "a", 4, h);
    hold_err(&f, "E", "u", "b", 1, SLOT_E_USER_LIMIT);
    slot_res r = {0};
    slot_req one = req_confirm("E", h, "u", 1, false);
    run(&f, &one, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_U64_EQ(user_rec(&f, "E", "u"), 1);
    hold_ok(&f, "E", "u", "b", 3, NULL); /* the confirmed quantity counts, no more */
    hold_err(&f, "E", "u", "c", 1, SLOT_E_USER_LIMIT);
    expect_counts(&f, "E", 16, 3, 1);
    slot_res_clear(&r);
    fx_close(&f);
}

/* ---- reacquire */

TEST_IMPL(sale_reacquire_units_free)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 5, 2);
    char h[SLOT_HOLD_ID_BYTES + 1];
    uint64_t exp = hold_ok(&f, "E", "u", "a", 2, h);
    fx_commit(&f);
    f.now = exp + 10; /* the payment came late */
    slot_res r = {0};
    slot_req q = req_confirm("E", h, "u", 0, true);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CONFIRMED);
    ASSERT_EQ(r.qty, 2);
    ASSERT(!r.replay);
    ASSERT_STR_EQ(r.replaces, h);
    ASSERT(strcmp(r.hold, h) != 0);
    char n[SLOT_HOLD_ID_BYTES + 1];
    memcpy(n, r.hold, sizeof n);
    expect_counts(&f, "E", 3, 0, 2);
    on(&f, SLOT_OP_GET_HOLD, "E", h, "u", &r);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_EXPIRED); /* keeps its status */
    ASSERT_STR_EQ(r.replaced_by, n);
    on(&f, SLOT_OP_GET_HOLD, "E", n, "u", &r);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CONFIRMED);
    ASSERT_STR_EQ(r.replaces, h);
    fx_commit(&f);
    /* After a release, with a qty of its own. */
    char g[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "E", "v", "a", 1, g);
    on(&f, SLOT_OP_RELEASE, "E", g, "v", &r);
    slot_req q3 = req_confirm("E", g, "v", 3, true);
    run(&f, &q3, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.qty, 3);
    expect_counts(&f, "E", 0, 0, 5);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(sale_reacquire_none_free)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 3, 2);
    char h[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "E", "u", "a", 2, h);
    slot_res r = {0};
    on(&f, SLOT_OP_RELEASE, "E", h, "u", &r);
    hold_ok(&f, "E", "v", "b", 2, NULL);
    fx_commit(&f);
    uint64_t writes = slot_store_writes(f.st);
    slot_req q = req_confirm("E", h, "u", 0, true);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.sold_out);
    ASSERT_EQ(r.available, 1);
    ASSERT_U64_EQ(slot_store_writes(f.st), writes); /* nothing changed */
    on(&f, SLOT_OP_GET_HOLD, "E", h, "u", &r);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_RELEASED);
    ASSERT_STR_EQ(r.replaced_by, "");
    /* One unit is enough for a qty of 1, and then the hold is linked. */
    slot_req one = req_confirm("E", h, "u", 1, true);
    run(&f, &one, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.sold_out);
    ASSERT_EQ(r.qty, 1);
    expect_counts(&f, "E", 0, 2, 1);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(sale_reacquire_user_limit_and_window)
{
    fx f;
    fx_open(&f);
    create_full(&f, "E", 20, 2, 3, 4, TTL_DEFAULT);
    char h[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "E", "u", "a", 2, h);
    slot_res r = {0};
    on(&f, SLOT_OP_RELEASE, "E", h, "u", &r);
    hold_ok(&f, "E", "u", "b", 2, NULL);
    slot_req q = req_confirm("E", h, "u", 0, true);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_USER_LIMIT); /* 2 held + 2 > 3 */
    slot_req big = req_confirm("E", h, "u", 5, true);
    run(&f, &big, &r);
    expect_err(&r, SLOT_E_INVALID_ARGUMENT); /* above max_per_request 4 */
    window(&f, "E", 0, f.now);
    slot_req one = req_confirm("E", h, "u", 1, true);
    run(&f, &one, &r);
    expect_err(&r, SLOT_E_NOT_ON_SALE);
    window(&f, "E", 0, 0);
    run(&f, &one, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_U64_EQ(user_rec(&f, "E", "u"), 3);
    expect_counts(&f, "E", 17, 2, 1);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(sale_reacquire_refused_and_ignored)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 2);
    char h[SLOT_HOLD_ID_BYTES + 1], g[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "E", "u", "a", 2, h);
    hold_ok(&f, "E", "u", "b", 3, g);
    slot_res r = {0};
    slot_req cancel = req_on(SLOT_OP_CANCEL, "E", h, NULL);
    run(&f, &cancel, &r);
    slot_req q = req_confirm("E", h, "u", 0, true);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_HOLD_NOT_ACTIVE);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CANCELLED);
    /* For a live held hold it is an ordinary confirm (the same hold, qty partial). */
    slot_req live = req_confirm("E", g, "u", 2, true);
    run(&f, &live, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_STR_EQ(r.hold, g);
    ASSERT_STR_EQ(r.replaces, "");
    ASSERT_EQ(r.qty, 2);
    ASSERT_EQ(r.returned, 1);
    /* Without reacquire an expired or released hold stays hold_not_active. */
    char k[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "E", "u", "c", 1, k);
    on(&f, SLOT_OP_RELEASE, "E", k, "u", &r);
    on(&f, SLOT_OP_CONFIRM, "E", k, "u", &r);
    expect_err(&r, SLOT_E_HOLD_NOT_ACTIVE);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_RELEASED);
    expect_counts(&f, "E", 8, 0, 2);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(sale_reacquire_repeated)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 2);
    char h[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "E", "u", "a", 2, h);
    slot_res r = {0};
    on(&f, SLOT_OP_RELEASE, "E", h, "u", &r);
    slot_req q = req_confirm("E", h, "u", 0, true);
    run(&f, &q, &r);
    char n[SLOT_HOLD_ID_BYTES + 1];
    memcpy(n, r.hold, sizeof n);
    fx_commit(&f);
    for (int i = 0; i < 3; i++) {
        slot_req again = req_confirm("E", h, "u", (uint32_t)i, true); /* whatever qty it carries */
        run(&f, &again, &r);
        expect_err(&r, SLOT_E_OK);
        ASSERT(r.replay);
        ASSERT_STR_EQ(r.hold, n);
        ASSERT_STR_EQ(r.replaces, h);
        ASSERT_EQ(r.hold_status, SLOT_HOLD_CONFIRMED);
        ASSERT_EQ(r.qty, 2);
    }
    expect_counts(&f, "E", 8, 0, 2);
    /* The new hold's current status: after a cancel, cancelled. */
    slot_req cancel = req_on(SLOT_OP_CANCEL, "E", n, NULL);
    run(&f, &cancel, &r);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.replay);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_CANCELLED);
    expect_counts(&f, "E", 10, 0, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

/* The original hold request still finds the replaced hold, also after the
 * idempotency index is rebuilt from the store (a restart). */
TEST_IMPL(sale_reacquire_keeps_the_hold_replay)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 2);
    char h[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "E", "u", "a", 2, h);
    slot_res r = {0};
    on(&f, SLOT_OP_RELEASE, "E", h, "u", &r);
    slot_req q = req_confirm("E", h, "u", 0, true);
    run(&f, &q, &r);
    fx_commit(&f);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            slot_alloc_close(&f.a);
            ASSERT_EQ(slot_alloc_init(&f.a, f.st), 0);
        }
        slot_req again = req_hold("E", "u", "a", 2);
        run(&f, &again, &r);
        expect_err(&r, SLOT_E_OK);
        ASSERT(r.replay);
        ASSERT_STR_EQ(r.hold, h);
        ASSERT_EQ(r.hold_status, SLOT_HOLD_RELEASED);
    }
    slot_res_clear(&r);
    fx_close(&f);
}

/* A store written before v1.1 (version-1 event and hold records) reads with
 * the defaults: no window, one extension, max_hold_ms 2 x hold_ttl_ms. */
TEST_IMPL(sale_version_1_records_still_read)
{
    fx f;
    fx_open(&f);
    MDB_txn *t = fx_txn(&f);
    MDB_dbi ev, holds;
    ASSERT_EQ(mdb_dbi_open(t, "events", 0, &ev), 0);
    ASSERT_EQ(mdb_dbi_open(t, "holds", 0, &holds), 0);
    /* event "E": v1, on sale, 1 shard, max_per_request 10, ttl 10000, capacity 5, held 2, confirmed 0,
     * max_per_user 0, next_seq 2, created_at T0; 58 bytes. */
    uint8_t e1[58] = {1, 0, 0, 1, 0, 10, 0, 0, 0x27, 0x10};
    e1[17] = 5;
    e1[25] = 2;
    e1[49] = 2;
    for (int i = 0; i < 8; i++)
        e1[50 + i] = (uint8_t)(T0 >> (56 - 8 * i));
    uint8_t k[2] = {1, 'E'};
    MDB_val kv = {2, k}, vv = {sizeof e1, e1};
    ASSERT_EQ(mdb_put(t, ev, &kv, &vv, 0), 0);
    /* hold seq 1: v1, held, qty 2, 1 part, tag 7, created T0, expires T0 + 10000, user "u", request "a", part (0, 2). */
    uint8_t h1[64] = {1, 0, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7};
    size_t n = 14;
    for (int i = 0; i < 8; i++)
        h1[n++] = (uint8_t)(T0 >> (56 - 8 * i));
    for (int i = 0; i < 8; i++)
        h1[n++] = (uint8_t)((T0 + 10000) >> (56 - 8 * i));
    h1[n++] = 1, h1[n++] = 'u', h1[n++] = 1, h1[n++] = 'a';
    h1[n++] = 0, h1[n++] = 0, h1[n++] = 0, h1[n++] = 2;
    uint8_t hk[10] = {1, 'E', 0, 0, 0, 0, 0, 0, 0, 1};
    MDB_val hkv = {10, hk}, hvv = {n, h1};
    ASSERT_EQ(mdb_put(t, holds, &hkv, &hvv, 0), 0);
    ASSERT_EQ(slot_store_shard_put(f.st, t, "E", 1, 0, 3), 0);
    ASSERT_EQ(slot_store_expiry_put(f.st, t, T0 + 10000, "E", 1, 1), 0);
    fx_commit(&f);
    slot_req q = slot_test_req(SLOT_OP_EVENT, "E");
    slot_res r = {0};
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.view.max_extensions, 1);
    ASSERT_U64_EQ(r.view.max_hold_ms, 20000);
    ASSERT_U64_EQ(r.view.opens_at_ms, 0);
    const char *id = "00000000000000010000000000000007";
    extend(&f, "E", id, 10000, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_U64_EQ(r.expires_at_ms, T0 + 20000);
    slot_req c = req_confirm("E", id, "u", 1, false);
    run(&f, &c, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.returned, 1);
    expect_counts(&f, "E", 4, 0, 1);
    slot_res_clear(&r);
    fx_close(&f);
}
