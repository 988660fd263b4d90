/*
 * test_alloc.c — the allocator (slot/alloc.h): every transition and every
 * error code of PROTOCOL.md's ops, on real LMDB transactions with a clock the
 * test moves by hand. After every step the tests look at the event's counters,
 * the shards' free sum and a full slot_alloc_check (no violations).
 */
#include <lmdb.h>
#include <signal.h>
#include <unistd.h>

#include "harness.h"
#include "slot/alloc.h"
#include "slot/store.h"
#include "src/idem.h" /* the allocator's in-memory idempotency index, tested directly */

/* In a sanitizer build a UBSan report fails the case (the runtime's default
 * is to print and go on, which a passing test would hide). Unused otherwise. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
    return "halt_on_error=1:print_stacktrace=1";
}

#define T0 UINT64_C(1764500000000) /* the tests' epoch, ms */
#define TTL_DEFAULT SLOT_HOLD_TTL_MS_DEFAULT

/* ---- fixture: a store, an allocator, the open write txn, the clock */

typedef struct fx {
    char *dir;
    slot_store *st;
    slot_alloc a;
    MDB_txn *txn; /* the batch being built, or NULL */
    uint64_t now;
} fx;

static void fx_open(fx *f)
{
    memset(f, 0, sizeof *f);
    f->dir = slot_test_tmpdir();
    slot_store_opts o = {.dir = f->dir, .nosync = true};
    char err[256];
    int rc = slot_store_open(&o, &f->st, err, sizeof err);
    if (rc != 0)
        T_FAIL_("slot_store_open: %d %s", rc, err);
    ASSERT_EQ(slot_alloc_init(&f->a, f->st), 0);
    slot_alloc_seed(&f->a, 1);
    f->now = T0;
}

static MDB_txn *fx_txn(fx *f)
{
    if (!f->txn)
        ASSERT_EQ(mdb_txn_begin(slot_store_env(f->st), NULL, 0, &f->txn), 0);
    return f->txn;
}

static void check_clean_on(fx *f, MDB_txn *txn)
{
    slot_res r = {0};
    ASSERT_EQ(slot_alloc_check(&f->a, txn, NULL, 0, &r), 0);
    ASSERT_EQ(r.err, SLOT_E_OK);
    for (uint32_t i = 0; i < r.nviolations && i < SLOT_CHECK_VIOLATIONS_MAX; i++)
        fprintf(stderr, "  violation %d in \"%s\": %s\n", r.violations[i].invariant, r.violations[i].event,
                r.violations[i].detail);
    ASSERT_EQ(r.nviolations, 0);
    slot_res_clear(&r);
}

/* Commits the batch, then checks the committed state on a read txn. */
static void fx_commit(fx *f)
{
    if (f->txn) {
        ASSERT_EQ(mdb_txn_commit(f->txn), 0);
        f->txn = NULL;
    }
    MDB_txn *r;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(f->st), NULL, MDB_RDONLY, &r), 0);
    check_clean_on(f, r);
    mdb_txn_abort(r);
}

static void fx_close(fx *f)
{
    if (f->txn)
        fx_commit(f);
    slot_alloc_close(&f->a);
    slot_store_close(f->st);
    slot_test_rmdir(f->dir);
    free(f->dir);
}

/* ---- requests, filled the way proto fills them */

static void set_name(char *dst, uint8_t *len, size_t cap, const char *src)
{
    size_t n = strlen(src);
    ASSERT_LT(n, cap);
    memcpy(dst, src, n + 1);
    *len = (uint8_t)n;
}

static slot_req req_of(slot_op op, const char *ev)
{
    slot_req q;
    memset(&q, 0, sizeof q);
    q.op = op;
    if (ev) {
        set_name(q.event, &q.event_len, sizeof q.event, ev);
        q.has |= SLOT_HAS_EVENT;
    }
    return q;
}

/* create_event with the defaults a parser fills in for absent fields. */
static slot_req req_create(const char *ev, uint64_t capacity)
{
    slot_req q = req_of(SLOT_OP_CREATE_EVENT, ev);
    q.capacity = capacity;
    q.shards = SLOT_SHARDS_DEFAULT;
    q.hold_ttl_ms = SLOT_HOLD_TTL_MS_DEFAULT;
    q.max_per_user = 0;
    q.max_per_request = SLOT_MAX_PER_REQUEST_DEFAULT;
    return q;
}

static slot_req req_hold(const char *ev, const char *user, const char *request, uint32_t qty)
{
    slot_req q = req_of(SLOT_OP_HOLD, ev);
    set_name(q.user, &q.user_len, sizeof q.user, user);
    set_name(q.request, &q.request_len, sizeof q.request, request);
    q.qty = qty;
    return q;
}

/* confirm, release, get_hold, cancel: (event, hold, user). user NULL: none (cancel). */
static slot_req req_on(slot_op op, const char *ev, const char *hold, const char *user)
{
    slot_req q = req_of(op, ev);
    set_name(q.hold, &q.hold_len, sizeof q.hold, hold);
    if (user)
        set_name(q.user, &q.user_len, sizeof q.user, user);
    return q;
}

/* Runs q on the batch (or on txn when given); res is cleared first. */
static void run_on(fx *f, MDB_txn *txn, const slot_req *q, slot_res *res)
{
    slot_res_clear(res);
    int rc = slot_alloc_run(&f->a, txn ? txn : fx_txn(f), q, f->now, res);
    if (rc != 0)
        T_FAIL_("slot_alloc_run(%s): %d %s", slot_op_name(q->op), rc, mdb_strerror(rc));
}

static void run(fx *f, const slot_req *q, slot_res *res)
{
    run_on(f, NULL, q, res);
}

static void expect_err(const slot_res *r, slot_err want)
{
    if (r->err != want)
        T_FAIL_("error %s, want %s (message \"%s\")", slot_err_name(r->err), slot_err_name(want), r->message);
}

/* ---- shortcuts with their checks */

static void create_full(fx *f, const char *ev, uint64_t cap, uint32_t shards, uint64_t mpu, uint32_t mpr, uint32_t ttl)
{
    slot_req q = req_create(ev, cap);
    q.shards = shards;
    q.max_per_user = mpu;
    q.max_per_request = mpr;
    q.hold_ttl_ms = ttl;
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.replay);
    ASSERT_EQ(r.view.capacity, cap);
    ASSERT_EQ(r.view.available, cap);
    ASSERT_EQ(r.view.shards, shards);
    slot_res_clear(&r);
}

static void create(fx *f, const char *ev, uint64_t cap, uint32_t shards)
{
    create_full(f, ev, cap, shards, 0, SLOT_MAX_PER_REQUEST_DEFAULT, TTL_DEFAULT);
}

/* Per-shard free units (shards op) into out; returns the shard count. */
static uint32_t shards_free(fx *f, MDB_txn *txn, const char *ev, uint64_t *out, uint32_t cap)
{
    slot_req q = req_of(SLOT_OP_SHARDS, ev);
    slot_res r = {0};
    run_on(f, txn, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_LE(r.nshards, cap);
    ASSERT(r.shard_free != NULL);
    memcpy(out, r.shard_free, r.nshards * sizeof(uint64_t));
    uint32_t n = r.nshards;
    slot_res_clear(&r);
    return n;
}

static uint64_t sum_of(const uint64_t *v, uint32_t n)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += v[i];
    return s;
}

/* Asserts that free units are spread evenly: largest minus smallest at most 1. */
static void expect_even(fx *f, const char *ev)
{
    static uint64_t fr[SLOT_SHARDS_MAX];
    uint32_t n = shards_free(f, NULL, ev, fr, SLOT_SHARDS_MAX);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < n; i++) {
        lo = fr[i] < lo ? fr[i] : lo;
        hi = fr[i] > hi ? fr[i] : hi;
    }
    ASSERT_LE(hi - lo, 1);
}

/* The event's view, shards' free sum and a clean check, on the batch. */
static void expect_counts(fx *f, const char *ev, uint64_t avail, uint64_t held, uint64_t confirmed)
{
    slot_req q = req_of(SLOT_OP_EVENT, ev);
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_STR_EQ(r.view.event, ev);
    ASSERT_EQ(r.view.available, avail);
    ASSERT_EQ(r.view.held, held);
    ASSERT_EQ(r.view.confirmed, confirmed);
    ASSERT_EQ(r.view.capacity, avail + held + confirmed);
    static uint64_t fr[SLOT_SHARDS_MAX];
    uint32_t n = shards_free(f, NULL, ev, fr, SLOT_SHARDS_MAX);
    ASSERT_EQ(n, r.view.shards);
    ASSERT_EQ(sum_of(fr, n), avail);
    slot_res_clear(&r);
    check_clean_on(f, fx_txn(f));
}

/* A hold that must succeed; its id into id_out (may be NULL). Returns the result's expires_at. */
static uint64_t hold_ok(fx *f, const char *ev, const char *user, const char *request, uint32_t qty,
                        char id_out[SLOT_HOLD_ID_BYTES + 1])
{
    slot_req q = req_hold(ev, user, request, qty);
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.sold_out);
    ASSERT(!r.replay);
    ASSERT_EQ(r.hold_status, SLOT_HOLD_HELD);
    ASSERT_EQ(r.qty, qty);
    ASSERT_EQ(strlen(r.hold), SLOT_HOLD_ID_BYTES);
    ASSERT_STR_EQ(r.user, user);
    ASSERT_EQ(r.created_at_ms, f->now);
    if (id_out)
        memcpy(id_out, r.hold, SLOT_HOLD_ID_BYTES + 1);
    uint64_t exp = r.expires_at_ms;
    slot_res_clear(&r);
    return exp;
}

/* A hold that must be answered sold_out with `available`. */
static void hold_sold_out(fx *f, const char *ev, const char *user, const char *request, uint32_t qty, uint64_t available)
{
    slot_req q = req_hold(ev, user, request, qty);
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.sold_out);
    ASSERT_EQ(r.available, available);
    ASSERT_EQ(r.hold[0], 0);
    slot_res_clear(&r);
}

static void hold_err(fx *f, const char *ev, const char *user, const char *request, uint32_t qty, slot_err want)
{
    slot_req q = req_hold(ev, user, request, qty);
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, want);
    ASSERT(!r.sold_out);
    ASSERT(r.message[0] != 0);
    slot_res_clear(&r);
}

/* confirm/release/cancel/get_hold; the result stays in *r (caller clears). */
static void on(fx *f, slot_op op, const char *ev, const char *hold, const char *user, slot_res *r)
{
    slot_req q = req_on(op, ev, hold, user);
    run(f, &q, r);
}

static void set_status(fx *f, const char *ev, slot_event_status s)
{
    slot_req q = req_of(SLOT_OP_SET_STATUS, ev);
    q.status = s;
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.view.status, s);
    slot_res_clear(&r);
}

static void reshard(fx *f, const char *ev, uint32_t n)
{
    slot_req q = req_of(SLOT_OP_RESHARD, ev);
    q.shards = n;
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.view.shards, n);
    slot_res_clear(&r);
}

static uint64_t seq_of(const char *hold)
{
    char hex[17];
    memcpy(hex, hold, 16);
    hex[16] = 0;
    return strtoull(hex, NULL, 16);
}

static void hold_rec(fx *f, const char *ev, const char *hold, slot_hold_rec *out)
{
    ASSERT_EQ(slot_store_hold_get(f->st, fx_txn(f), ev, strlen(ev), seq_of(hold), out), 0);
}

static uint64_t user_rec(fx *f, const char *ev, const char *user)
{
    uint64_t q = 99;
    ASSERT_EQ(slot_store_user_get(f->st, fx_txn(f), ev, strlen(ev), user, strlen(user), &q), 0);
    return q;
}

/* ---- create_event */

static void test_create_event_defaults_and_even_spread(void)
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

static void test_create_event_exists_with_other_settings(void)
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
    slot_req c = req_of(SLOT_OP_SET_CAPACITY, "E");
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

static void test_unknown_event_everywhere(void)
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
    slot_req c = req_of(SLOT_OP_CHECK, "nope");
    run(&f, &c, &r);
    expect_err(&r, SLOT_E_UNKNOWN_EVENT);
    expect_counts(&f, "E", 9, 1, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

/* ---- hold */

static void test_hold_held(void)
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

static void test_hold_draws_from_several_shards(void)
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

/* DESIGN.md's rule: a random start shard, take what it can, then the next
 * shards in turn. Seeded, so the outcome repeats. */
static void test_hold_random_start_then_next_shards(void)
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

static void test_hold_sold_out_with_available(void)
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

static void test_hold_replay_every_status(void)
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

static void test_hold_idempotency_conflict_and_other_user(void)
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

/* PROTOCOL.md's order: unknown_event -> replay/conflict -> qty above max ->
 * not_on_sale -> user_limit -> sold_out/held. Each pair is set up so that
 * both errors apply and the earlier one must win. */
static void test_hold_order_of_decisions(void)
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

static void test_hold_not_on_sale_then_on_sale(void)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 2);
    set_status(&f, "E", SLOT_EVENT_CLOSED);
    hold_err(&f, "E", "u", "k", 1, SLOT_E_NOT_ON_SALE);
    expect_counts(&f, "E", 10, 0, 0);
    fx_commit(&f);
    slot_req q = req_of(SLOT_OP_EVENT, "E");
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

static void test_user_limit(void)
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
static void test_user_count_after_lazy_expiry_on_sold_out_path(void)
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

static void test_confirm(void)
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

static void test_confirm_not_active(void)
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

static void test_confirm_one_ms_before_expiry(void)
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

static void test_unknown_hold(void)
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

static void test_release(void)
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

static void test_release_confirmed_and_due(void)
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

static void test_cancel(void)
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

static void test_get_hold_read_only_shows_expired_without_writing(void)
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
    slot_req ev = req_of(SLOT_OP_EVENT, "E");
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

static void test_expire_due_limit_oldest_first(void)
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
    slot_req q = req_of(SLOT_OP_EXPIRE, NULL);
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

static void test_expire_due_many_chunks(void)
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
    slot_req q = req_of(SLOT_OP_SET_CAPACITY, "A");
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

static void test_sold_out_never_from_expired_holds(void)
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

static void test_set_capacity(void)
{
    fx f;
    fx_open(&f);
    create(&f, "E", 10, 4);
    char a[33];
    hold_ok(&f, "E", "u", "k1", 3, a);
    fx_commit(&f);
    slot_req q = req_of(SLOT_OP_SET_CAPACITY, "E");
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

static void test_reshard_down_and_up(void)
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

static void test_reshard_up_units_go_back_to_same_shard(void)
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

static void test_reshard_down_units_spread(void)
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

static void test_reshard_expires_due_first(void)
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

static void test_shards_op(void)
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

static void test_batch_in_one_txn(void)
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

static void test_seeded_ids_repeat(void)
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

static void test_ops_not_the_allocators(void)
{
    fx f;
    fx_open(&f);
    slot_res r = {0};
    slot_req q = req_of(SLOT_OP_HELLO, NULL);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_INTERNAL);
    q = req_of(SLOT_OP_STATS, NULL);
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_INTERNAL);
    slot_res_clear(&r);
    /* The op table agrees with PROTOCOL.md's roles. */
    ASSERT_EQ(slot_op_from_name("hold", 4), SLOT_OP_HOLD);
    ASSERT_EQ(slot_op_from_name("holds", 5), SLOT_OP__COUNT);
    ASSERT(slot_op_writes(SLOT_OP_HOLD) && !slot_op_admin(SLOT_OP_HOLD));
    ASSERT(!slot_op_writes(SLOT_OP_GET_HOLD) && !slot_op_admin(SLOT_OP_GET_HOLD));
    ASSERT(slot_op_writes(SLOT_OP_CANCEL) && slot_op_admin(SLOT_OP_CANCEL));
    ASSERT(!slot_op_writes(SLOT_OP_CHECK) && slot_op_admin(SLOT_OP_CHECK));
    ASSERT(slot_op_writes(SLOT_OP_EXPIRE) && slot_op_admin(SLOT_OP_EXPIRE));
    fx_close(&f);
}

/* ---- check finds corruption */

/* Runs check (of all events, or of one) and asserts that invariant `inv` is
 * among the violations, and that every violation is about event `ev`. */
static void expect_violation(fx *f, const char *only, const char *ev, int inv)
{
    slot_res r = {0};
    ASSERT_EQ(slot_alloc_check(&f->a, fx_txn(f), only, only ? strlen(only) : 0, &r), 0);
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

static void test_check_detects_shard_free_changed(void)
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
    ASSERT_EQ(slot_alloc_check(&f.a, fx_txn(&f), "D", 1, &r), 0);
    ASSERT_EQ(r.nviolations, 0);
    ASSERT_EQ(r.events_checked, 1);
    ASSERT_EQ(r.holds_checked, 1);
    slot_res_clear(&r);
    mdb_txn_abort(f.txn);
    f.txn = NULL;
    fx_close(&f);
}

static void test_check_detects_shard_missing_or_extra(void)
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

static void test_check_detects_event_counters(void)
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

static void test_check_detects_hold_parts(void)
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

static void test_check_detects_hold_status_changed(void)
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

static void test_check_detects_expiry_index(void)
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

static void test_check_detects_users_record(void)
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

static void test_check_users_record_without_any_active_hold(void)
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

static void test_check_counts_and_caps_violations(void)
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
    slot_req q = req_of(SLOT_OP_CHECK, NULL);
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
    q = req_of(SLOT_OP_CHECK, "C");
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

/* ---- randomized: many ops against a model of PROTOCOL.md */

#define R_EVENTS 2
#define R_USERS 6
#define R_KEYS 300
#define R_HOLDS_MAX 16384

typedef struct mhold {
    char id[SLOT_HOLD_ID_BYTES + 1];
    int ev, user;
    uint32_t qty;
    slot_hold_status st; /* as the protocol sees it: due held holds are expired */
    uint64_t exp;
} mhold;

typedef struct mevent {
    const char *name;
    uint64_t cap, mpu;
    uint32_t shards, ttl, mpr;
    slot_event_status status;
    int key[R_USERS][R_KEYS]; /* hold index + 1; 0 = unused key */
} mevent;

typedef struct model {
    mevent ev[R_EVENTS];
    mhold *h;
    size_t nh;
    uint64_t rng;
} model;

static volatile uint64_t r_seed; /* printed when a randomized case fails */

static void on_abort(int sig)
{
    char msg[96];
    int n = snprintf(msg, sizeof msg, "randomized test failed with seed %llu (SLOT_TEST_SEED=%llu)\n",
                     (unsigned long long)r_seed, (unsigned long long)r_seed);
    if (n > 0 && write(STDERR_FILENO, msg, (size_t)n) < 0) {
        /* nothing more to do while failing */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static uint64_t rnd(model *m)
{
    uint64_t z = (m->rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint32_t rnd_below(model *m, uint32_t n)
{
    return (uint32_t)(rnd(m) % n);
}

static const char *const r_users[R_USERS] = {"alice", "bob", "carol", "dave", "\xc3\xa9ve", "frank"};

/* Marks the holds the protocol now sees as expired. */
static void model_settle(model *m, uint64_t now)
{
    for (size_t i = 0; i < m->nh; i++)
        if (m->h[i].st == SLOT_HOLD_HELD && now >= m->h[i].exp)
            m->h[i].st = SLOT_HOLD_EXPIRED;
}

static uint64_t model_sum(const model *m, int ev, int user, bool held, bool confirmed)
{
    uint64_t s = 0;
    for (size_t i = 0; i < m->nh; i++) {
        const mhold *h = &m->h[i];
        if (h->ev != ev || (user >= 0 && h->user != user))
            continue;
        if ((held && h->st == SLOT_HOLD_HELD) || (confirmed && h->st == SLOT_HOLD_CONFIRMED))
            s += h->qty;
    }
    return s;
}

/* Event view and shards against the model, after any op. exact: every due
 * hold of the event has been expired in the store too. */
static void model_expect_event(fx *f, const model *m, int ev, bool exact)
{
    const mevent *me = &m->ev[ev];
    uint64_t held = model_sum(m, ev, -1, true, false), conf = model_sum(m, ev, -1, false, true);
    slot_req q = req_of(SLOT_OP_EVENT, me->name);
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.view.capacity, me->cap);
    ASSERT_EQ(r.view.shards, me->shards);
    ASSERT_EQ(r.view.status, me->status);
    ASSERT_EQ(r.view.confirmed, conf);
    ASSERT_EQ(r.view.available + r.view.held + r.view.confirmed, me->cap);
    if (exact)
        ASSERT_EQ(r.view.held, held);
    else
        ASSERT_GE(r.view.held, held); /* due holds not yet expired still count */
    static uint64_t fr[SLOT_SHARDS_MAX];
    ASSERT_EQ(shards_free(f, NULL, me->name, fr, SLOT_SHARDS_MAX), me->shards);
    ASSERT_EQ(sum_of(fr, me->shards), r.view.available);
    slot_res_clear(&r);
}

typedef struct store_cmp {
    const model *m;
    int ev;
    uint64_t now;
    size_t n;
} store_cmp;

static int cmp_hold(void *p, const slot_hold_rec *h)
{
    store_cmp *c = p;
    char id[SLOT_HOLD_ID_BYTES + 1];
    snprintf(id, sizeof id, "%016llx%016llx", (unsigned long long)h->seq, (unsigned long long)h->tag);
    const mhold *mh = NULL;
    for (size_t i = 0; i < c->m->nh && !mh; i++)
        if (c->m->h[i].ev == c->ev && strcmp(c->m->h[i].id, id) == 0)
            mh = &c->m->h[i];
    if (!mh)
        T_FAIL_("hold %s in the store is not in the model", id);
    slot_hold_status st = h->status == SLOT_HOLD_HELD && c->now >= h->expires_at_ms ? SLOT_HOLD_EXPIRED : h->status;
    if (st != mh->st)
        T_FAIL_("hold %s: store %s, model %s", id, slot_hold_status_name(st), slot_hold_status_name(mh->st));
    ASSERT_EQ(h->qty, mh->qty);
    ASSERT_EQ(h->expires_at_ms, mh->exp);
    ASSERT_STR_EQ(h->user, r_users[mh->user]);
    c->n++;
    return 0;
}

/* Every stored hold against the model, on a read txn of the committed state. */
static void model_expect_store(fx *f, const model *m)
{
    MDB_txn *ro;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(f->st), NULL, MDB_RDONLY, &ro), 0);
    for (int ev = 0; ev < R_EVENTS; ev++) {
        store_cmp c = {m, ev, f->now, 0};
        ASSERT_EQ(slot_store_holds_scan(f->st, ro, m->ev[ev].name, strlen(m->ev[ev].name), cmp_hold, &c), 0);
        size_t want = 0;
        for (size_t i = 0; i < m->nh; i++)
            want += m->h[i].ev == ev;
        ASSERT_EQ(c.n, want);
    }
    mdb_txn_abort(ro);
}

static void r_hold(fx *f, model *m)
{
    int ev = (int)rnd_below(m, R_EVENTS), u = (int)rnd_below(m, R_USERS);
    mevent *me = &m->ev[ev];
    int k = (int)rnd_below(m, R_KEYS);
    /* Reuse a key this user has used, now and then, for replays and conflicts. */
    if (rnd_below(m, 100) < 20) {
        for (int tries = 0; tries < 20 && me->key[u][k] == 0; tries++)
            k = (int)rnd_below(m, R_KEYS);
    }
    uint32_t qty = 1 + rnd_below(m, rnd_below(m, 10) == 0 ? me->mpr + 2 : 3);
    if (me->key[u][k] && rnd_below(m, 100) < 75)
        qty = m->h[me->key[u][k] - 1].qty;
    char key[16];
    snprintf(key, sizeof key, "k%d", k);
    slot_req q = req_hold(me->name, r_users[u], key, qty);
    slot_res r = {0};
    run(f, &q, &r);

    if (me->key[u][k]) {
        mhold *h = &m->h[me->key[u][k] - 1];
        if (h->qty != qty) {
            expect_err(&r, SLOT_E_IDEMPOTENCY_CONFLICT);
        } else {
            expect_err(&r, SLOT_E_OK);
            ASSERT(r.replay);
            ASSERT_STR_EQ(r.hold, h->id);
            ASSERT_EQ(r.hold_status, h->st);
        }
        slot_res_clear(&r);
        return;
    }
    uint64_t held = model_sum(m, ev, -1, true, false), conf = model_sum(m, ev, -1, false, true);
    uint64_t avail = me->cap - held - conf;
    if (qty > me->mpr) {
        expect_err(&r, SLOT_E_INVALID_ARGUMENT);
    } else if (me->status != SLOT_EVENT_ON_SALE) {
        expect_err(&r, SLOT_E_NOT_ON_SALE);
    } else if (me->mpu > 0 && model_sum(m, ev, u, true, true) + qty > me->mpu) {
        expect_err(&r, SLOT_E_USER_LIMIT);
    } else if (avail < qty) {
        /* Invariant 5: sold out only when fewer than qty are free, due holds expired. */
        expect_err(&r, SLOT_E_OK);
        ASSERT(r.sold_out);
        ASSERT_EQ(r.available, avail);
    } else {
        expect_err(&r, SLOT_E_OK);
        ASSERT(!r.sold_out);
        ASSERT(!r.replay);
        ASSERT_EQ(r.hold_status, SLOT_HOLD_HELD);
        ASSERT_EQ(r.expires_at_ms, f->now + me->ttl);
        ASSERT_LT(m->nh, R_HOLDS_MAX);
        mhold *h = &m->h[m->nh++];
        memcpy(h->id, r.hold, sizeof h->id);
        h->ev = ev;
        h->user = u;
        h->qty = qty;
        h->st = SLOT_HOLD_HELD;
        h->exp = r.expires_at_ms;
        me->key[u][k] = (int)m->nh;
    }
    slot_res_clear(&r);
}

/* confirm, release, cancel or get_hold of a random known hold (or a bad id). */
static void r_on_hold(fx *f, model *m, slot_op op)
{
    if (m->nh == 0)
        return;
    mhold *h = &m->h[rnd_below(m, (uint32_t)m->nh)];
    const mevent *me = &m->ev[h->ev];
    int pick = (int)rnd_below(m, 20);
    int user = h->user;
    char id[SLOT_HOLD_ID_BYTES + 1];
    memcpy(id, h->id, sizeof id);
    bool unknown = false;
    if (pick == 0 && op != SLOT_OP_CANCEL) {
        user = (h->user + 1 + (int)rnd_below(m, R_USERS - 1)) % R_USERS;
        unknown = true;
    } else if (pick == 1) {
        id[31] = id[31] == 'f' ? '0' : 'f';
        unknown = true;
    }
    slot_req q = req_on(op, me->name, id, op == SLOT_OP_CANCEL ? NULL : r_users[user]);
    slot_res r = {0};
    run(f, &q, &r);
    if (unknown) {
        expect_err(&r, SLOT_E_UNKNOWN_HOLD);
        slot_res_clear(&r);
        return;
    }
    slot_hold_status st = h->st;
    switch (op) {
    case SLOT_OP_CONFIRM:
        if (st == SLOT_HOLD_HELD || st == SLOT_HOLD_CONFIRMED) {
            expect_err(&r, SLOT_E_OK);
            ASSERT_EQ(r.replay, st == SLOT_HOLD_CONFIRMED);
            ASSERT_EQ(r.hold_status, SLOT_HOLD_CONFIRMED);
            h->st = SLOT_HOLD_CONFIRMED;
        } else {
            expect_err(&r, SLOT_E_HOLD_NOT_ACTIVE);
            ASSERT_EQ(r.hold_status, st);
        }
        break;
    case SLOT_OP_RELEASE:
    case SLOT_OP_CANCEL: {
        bool may = st == SLOT_HOLD_HELD || (op == SLOT_OP_CANCEL && st == SLOT_HOLD_CONFIRMED);
        expect_err(&r, SLOT_E_OK);
        ASSERT_EQ(r.done, may);
        if (may)
            h->st = op == SLOT_OP_CANCEL ? SLOT_HOLD_CANCELLED : SLOT_HOLD_RELEASED;
        ASSERT_EQ(r.hold_status, h->st);
        break;
    }
    default:
        expect_err(&r, SLOT_E_OK);
        ASSERT_EQ(r.hold_status, st);
        ASSERT_EQ(r.qty, h->qty);
        break;
    }
    ASSERT_STR_EQ(r.hold, h->id);
    slot_res_clear(&r);
}

static void r_admin(fx *f, model *m, int what)
{
    int ev = (int)rnd_below(m, R_EVENTS);
    mevent *me = &m->ev[ev];
    slot_res r = {0};
    uint64_t allocated = model_sum(m, ev, -1, true, true);
    if (what == 0) {
        slot_req q = req_of(SLOT_OP_RESHARD, me->name);
        q.shards = 1 + rnd_below(m, 9);
        run(f, &q, &r);
        expect_err(&r, SLOT_E_OK);
        me->shards = q.shards;
        expect_even(f, me->name);
        model_expect_event(f, m, ev, true);
    } else if (what == 1) {
        slot_req q = req_of(SLOT_OP_SET_CAPACITY, me->name);
        q.capacity = allocated + rnd_below(m, 40);
        q.capacity = q.capacity >= 3 ? q.capacity - 3 : 0;
        run(f, &q, &r);
        if (q.capacity < allocated) {
            expect_err(&r, SLOT_E_CAPACITY_BELOW_ALLOCATED);
        } else {
            expect_err(&r, SLOT_E_OK);
            me->cap = q.capacity;
            expect_even(f, me->name);
            model_expect_event(f, m, ev, true);
        }
    } else if (what == 2) {
        me->status = me->status == SLOT_EVENT_ON_SALE ? SLOT_EVENT_CLOSED : SLOT_EVENT_ON_SALE;
        set_status(f, me->name, me->status);
    } else {
        uint64_t limit = rnd_below(m, 3) == 0 ? SLOT_EXPIRE_OP_MAX : 1 + rnd_below(m, 4);
        uint64_t n = 0;
        ASSERT_EQ(slot_alloc_expire_due(&f->a, fx_txn(f), f->now, limit, &n), 0);
        ASSERT_LE(n, limit);
        if (limit == SLOT_EXPIRE_OP_MAX)
            for (int e = 0; e < R_EVENTS; e++)
                model_expect_event(f, m, e, true);
    }
    slot_res_clear(&r);
}

static void randomized(uint64_t seed, int ops)
{
    r_seed = seed;
    signal(SIGABRT, on_abort);
    fx f;
    fx_open(&f);
    slot_alloc_seed(&f.a, seed);
    model *m = calloc(1, sizeof *m);
    ASSERT(m != NULL);
    m->h = calloc(R_HOLDS_MAX, sizeof(mhold));
    ASSERT(m->h != NULL);
    m->rng = seed;
    static const char *const names[R_EVENTS] = {"a", "ab"}; /* one a prefix of the other */
    for (int ev = 0; ev < R_EVENTS; ev++) {
        mevent *me = &m->ev[ev];
        me->name = names[ev];
        me->cap = 20 + rnd_below(m, 30);
        me->shards = 1 + rnd_below(m, 6);
        me->ttl = 1000 + rnd_below(m, 3000);
        me->mpr = 2 + rnd_below(m, 4);
        me->mpu = ev == 0 ? 4 + rnd_below(m, 4) : 0;
        me->status = SLOT_EVENT_ON_SALE;
        create_full(&f, me->name, me->cap, me->shards, me->mpu, me->mpr, me->ttl);
    }
    fx_commit(&f);
    /* The model as it was at the start of the batch, for batches that abort. */
    model *snap = malloc(sizeof *snap);
    mhold *snap_h = malloc(R_HOLDS_MAX * sizeof(mhold));
    ASSERT(snap != NULL && snap_h != NULL);
    *snap = *m;
    int batch = 0, batch_len = 1 + (int)rnd_below(m, 16);
    for (int i = 0; i < ops; i++) {
        if (batch == 0) {
            *snap = *m;
            memcpy(snap_h, m->h, m->nh * sizeof(mhold));
        }
        f.now += rnd_below(m, 120);
        if (rnd_below(m, 50) == 0)
            f.now += 1000 + rnd_below(m, 2000);
        model_settle(m, f.now);
        uint32_t dice = rnd_below(m, 100);
        if (dice < 45)
            r_hold(&f, m);
        else if (dice < 60)
            r_on_hold(&f, m, SLOT_OP_CONFIRM);
        else if (dice < 72)
            r_on_hold(&f, m, SLOT_OP_RELEASE);
        else if (dice < 78)
            r_on_hold(&f, m, SLOT_OP_CANCEL);
        else if (dice < 84)
            r_on_hold(&f, m, SLOT_OP_GET_HOLD);
        else if (dice < 90)
            r_admin(&f, m, 3);
        else if (dice < 93)
            r_admin(&f, m, 0);
        else if (dice < 97)
            r_admin(&f, m, 1);
        else if (dice < 98)
            r_admin(&f, m, 2);
        for (int ev = 0; ev < R_EVENTS; ev++)
            model_expect_event(&f, m, ev, false);
        if (++batch >= batch_len) {
            if (rnd_below(m, 20) == 0) {
                /* An aborted batch leaves nothing behind: back to the model
                 * of its start (the clock and the random streams go on). */
                mdb_txn_abort(f.txn);
                f.txn = NULL;
                uint64_t rng = m->rng;
                mhold *h = m->h;
                *m = *snap;
                m->h = h;
                m->rng = rng;
                memcpy(m->h, snap_h, m->nh * sizeof(mhold));
                model_settle(m, f.now);
            }
            fx_commit(&f); /* and slot_alloc_check on the committed state */
            model_expect_store(&f, m);
            for (int ev = 0; ev < R_EVENTS; ev++)
                model_expect_event(&f, m, ev, false);
            batch = 0;
            batch_len = 1 + (int)rnd_below(m, 16);
        }
    }
    fx_commit(&f);
    model_expect_store(&f, m);
    free(snap_h);
    free(snap);
    free(m->h);
    free(m);
    fx_close(&f);
}

static void test_randomized(void)
{
    const char *s = getenv("SLOT_TEST_SEED");
    const char *o = getenv("SLOT_TEST_OPS");
    int ops = o ? atoi(o) : 2500;
    if (s) {
        randomized(strtoull(s, NULL, 0), ops);
        return;
    }
    static const uint64_t seeds[] = {1, 2, 3, 0x5eed};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        randomized(seeds[i], ops);
}

/* The idempotency index on its own, with enough keys that every part of it
 * doubles its buckets several times: what was put is found with its latest
 * seq, deleted keys are gone, a key differing in any one name is another key. */
static void test_idem_index_many_keys(void)
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

static const slot_test_case cases[] = {
    {"idem_index_many_keys", test_idem_index_many_keys},
    {"create_event_defaults_and_even_spread", test_create_event_defaults_and_even_spread},
    {"create_event_exists_with_other_settings", test_create_event_exists_with_other_settings},
    {"unknown_event_everywhere", test_unknown_event_everywhere},
    {"hold_held", test_hold_held},
    {"hold_draws_from_several_shards", test_hold_draws_from_several_shards},
    {"hold_random_start_then_next_shards", test_hold_random_start_then_next_shards},
    {"hold_sold_out_with_available", test_hold_sold_out_with_available},
    {"hold_replay_every_status", test_hold_replay_every_status},
    {"hold_idempotency_conflict_and_other_user", test_hold_idempotency_conflict_and_other_user},
    {"hold_order_of_decisions", test_hold_order_of_decisions},
    {"hold_not_on_sale_then_on_sale", test_hold_not_on_sale_then_on_sale},
    {"user_limit", test_user_limit},
    {"user_count_after_lazy_expiry_on_sold_out_path", test_user_count_after_lazy_expiry_on_sold_out_path},
    {"confirm", test_confirm},
    {"confirm_not_active", test_confirm_not_active},
    {"confirm_one_ms_before_expiry", test_confirm_one_ms_before_expiry},
    {"unknown_hold", test_unknown_hold},
    {"release", test_release},
    {"release_confirmed_and_due", test_release_confirmed_and_due},
    {"cancel", test_cancel},
    {"get_hold_read_only_shows_expired_without_writing", test_get_hold_read_only_shows_expired_without_writing},
    {"expire_due_limit_oldest_first", test_expire_due_limit_oldest_first},
    {"expire_due_many_chunks", test_expire_due_many_chunks},
    {"sold_out_never_from_expired_holds", test_sold_out_never_from_expired_holds},
    {"set_capacity", test_set_capacity},
    {"reshard_down_and_up", test_reshard_down_and_up},
    {"reshard_up_units_go_back_to_same_shard", test_reshard_up_units_go_back_to_same_shard},
    {"reshard_down_units_spread", test_reshard_down_units_spread},
    {"reshard_expires_due_first", test_reshard_expires_due_first},
    {"shards_op", test_shards_op},
    {"batch_in_one_txn", test_batch_in_one_txn},
    {"seeded_ids_repeat", test_seeded_ids_repeat},
    {"ops_not_the_allocators", test_ops_not_the_allocators},
    {"check_detects_shard_free_changed", test_check_detects_shard_free_changed},
    {"check_detects_shard_missing_or_extra", test_check_detects_shard_missing_or_extra},
    {"check_detects_event_counters", test_check_detects_event_counters},
    {"check_detects_hold_parts", test_check_detects_hold_parts},
    {"check_detects_hold_status_changed", test_check_detects_hold_status_changed},
    {"check_detects_expiry_index", test_check_detects_expiry_index},
    {"check_detects_users_record", test_check_detects_users_record},
    {"check_users_record_without_any_active_hold", test_check_users_record_without_any_active_hold},
    {"check_counts_and_caps_violations", test_check_counts_and_caps_violations},
    {"randomized", test_randomized},
};

int main(int argc, char **argv)
{
    return slot_test_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
