/* alloc_fixture.c — see alloc_fixture.h. */
#include "alloc_fixture.h"

/* ---- fixture: a store, an allocator, the open write txn, the clock */

void fx_open(fx *f)
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

MDB_txn *fx_txn(fx *f)
{
    if (!f->txn)
        ASSERT_EQ(mdb_txn_begin(slot_store_env(f->st), NULL, 0, &f->txn), 0);
    return f->txn;
}

void check_clean_on(fx *f, MDB_txn *txn)
{
    slot_res r = {0};
    ASSERT_EQ(slot_check(f->a.store, txn, NULL, 0, &r), 0);
    ASSERT_EQ(r.err, SLOT_E_OK);
    for (uint32_t i = 0; i < r.nviolations && i < SLOT_CHECK_VIOLATIONS_MAX; i++)
        fprintf(stderr, "  violation %d in \"%s\": %s\n", r.violations[i].invariant, r.violations[i].event,
                r.violations[i].detail);
    ASSERT_EQ(r.nviolations, 0);
    slot_res_clear(&r);
}

/* Commits the batch, then checks the committed state on a read txn. */
void fx_commit(fx *f)
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

void fx_close(fx *f)
{
    if (f->txn)
        fx_commit(f);
    slot_alloc_close(&f->a);
    slot_store_close(f->st);
    slot_test_rmdir(f->dir);
    free(f->dir);
}

/* ---- requests, filled the way proto fills them */

/* create_event with the defaults a parser fills in for absent fields. */
slot_req req_create(const char *ev, uint64_t capacity)
{
    slot_req q = slot_test_req(SLOT_OP_CREATE_EVENT, ev);
    q.capacity = capacity;
    q.shards = SLOT_SHARDS_DEFAULT;
    q.hold_ttl_ms = SLOT_HOLD_TTL_MS_DEFAULT;
    q.max_per_user = 0;
    q.max_per_request = SLOT_MAX_PER_REQUEST_DEFAULT;
    q.max_extensions = SLOT_MAX_EXTENSIONS_DEFAULT;
    return q;
}

slot_req req_hold(const char *ev, const char *user, const char *request, uint32_t qty)
{
    slot_req q = slot_test_req(SLOT_OP_HOLD, ev);
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, user);
    slot_test_set_name(q.request, &q.request_len, sizeof q.request, request);
    q.qty = qty;
    return q;
}

/* confirm, release, get_hold, cancel: (event, hold, user). user NULL: none (cancel). */
slot_req req_on(slot_op op, const char *ev, const char *hold, const char *user)
{
    slot_req q = slot_test_req(op, ev);
    slot_test_set_name(q.hold, &q.hold_len, sizeof q.hold, hold);
    if (user)
        slot_test_set_name(q.user, &q.user_len, sizeof q.user, user);
    return q;
}

/* Runs q on the batch (or on txn when given); res is cleared first. */
void run_on(fx *f, MDB_txn *txn, const slot_req *q, slot_res *res)
{
    slot_res_clear(res);
    int rc = slot_alloc_run(&f->a, txn ? txn : fx_txn(f), q, f->now, res);
    if (rc != 0)
        T_FAIL_("slot_alloc_run(%s): %d %s", slot_op_name(q->op), rc, mdb_strerror(rc));
}

void run(fx *f, const slot_req *q, slot_res *res)
{
    run_on(f, NULL, q, res);
}

void expect_err(const slot_res *r, slot_err want)
{
    if (r->err != want)
        T_FAIL_("error %s, want %s (message \"%s\")", slot_err_name(r->err), slot_err_name(want), r->message);
}

/* ---- shortcuts with their checks */

void create_full(fx *f, const char *ev, uint64_t cap, uint32_t shards, uint64_t mpu, uint32_t mpr, uint32_t ttl)
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

void create(fx *f, const char *ev, uint64_t cap, uint32_t shards)
{
    create_full(f, ev, cap, shards, 0, SLOT_MAX_PER_REQUEST_DEFAULT, TTL_DEFAULT);
}

/* Per-shard free units (shards op) into out; returns the shard count. */
uint32_t shards_free(fx *f, MDB_txn *txn, const char *ev, uint64_t *out, uint32_t cap)
{
    slot_req q = slot_test_req(SLOT_OP_SHARDS, ev);
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

uint64_t sum_of(const uint64_t *v, uint32_t n)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += v[i];
    return s;
}

/* Asserts that free units are spread evenly: largest minus smallest at most 1. */
void expect_even(fx *f, const char *ev)
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
void expect_counts(fx *f, const char *ev, uint64_t avail, uint64_t held, uint64_t confirmed)
{
    slot_req q = slot_test_req(SLOT_OP_EVENT, ev);
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
uint64_t hold_ok(fx *f, const char *ev, const char *user, const char *request, uint32_t qty,
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
void hold_sold_out(fx *f, const char *ev, const char *user, const char *request, uint32_t qty, uint64_t available)
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

void hold_err(fx *f, const char *ev, const char *user, const char *request, uint32_t qty, slot_err want)
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
void on(fx *f, slot_op op, const char *ev, const char *hold, const char *user, slot_res *r)
{
    slot_req q = req_on(op, ev, hold, user);
    run(f, &q, r);
}

void set_status(fx *f, const char *ev, slot_event_status s)
{
    slot_req q = slot_test_req(SLOT_OP_SET_STATUS, ev);
    q.status = s;
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.view.status, s);
    slot_res_clear(&r);
}

void reshard(fx *f, const char *ev, uint32_t n)
{
    slot_req q = slot_test_req(SLOT_OP_RESHARD, ev);
    q.shards = n;
    slot_res r = {0};
    run(f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.view.shards, n);
    slot_res_clear(&r);
}

uint64_t seq_of(const char *hold)
{
    char hex[17];
    memcpy(hex, hold, 16);
    hex[16] = 0;
    return strtoull(hex, NULL, 16);
}

void hold_rec(fx *f, const char *ev, const char *hold, slot_hold_rec *out)
{
    ASSERT_EQ(slot_store_hold_get(f->st, fx_txn(f), ev, strlen(ev), seq_of(hold), out), 0);
}

uint64_t user_rec(fx *f, const char *ev, const char *user)
{
    uint64_t q = 99;
    ASSERT_EQ(slot_store_user_get(f->st, fx_txn(f), ev, strlen(ev), user, strlen(user), &q), 0);
    return q;
}

void expect_replay(fx *f, const char *ev, const char *user, const char *request, uint32_t qty, const char *id,
                   slot_hold_status st)
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
