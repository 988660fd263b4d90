/*
 * test_digest.c — the store's replication groundwork (slot/store.h,
 * "Replication groundwork"): write-set capture, seq, slot_store_apply and
 * the digest, without a server.
 *
 * The differential case runs random allocator batches (holds, confirms,
 * releases, cancels, expiry, reshard, set_capacity, set_status, creates;
 * the clock moves so holds expire) on store A with capture on, encodes each
 * batch's write set as a record, decodes it and applies it to store B, which
 * starts empty; after every batch both stores must have the same seq, the
 * same digest and byte-identical databases (every key and value of all eight,
 * meta included). Some batches are aborted on A and must leave no trace.
 * Seeds 1..4 (SLOT_DIGEST_SEED repeats one), SLOT_DIGEST_OPS ops each.
 */
#include <errno.h>
#include <lmdb.h>

#include "alloc_fixture.h"
#include "slot/backup.h"
#include "slot/wset.h"

TEST_DECLARE(digest_new_store_seq_zero)
TEST_DECLARE(digest_same_content_same_digest)
TEST_DECLARE(digest_differential_apply)
TEST_DECLARE(digest_apply_refuses_unknown_db)
TEST_DECLARE(digest_apply_refuses_meta_db)
TEST_DECLARE(digest_apply_refuses_seq_gap)
TEST_DECLARE(digest_apply_missing_key_delete)
TEST_DECLARE(digest_corrupted_record_never_applied)
TEST_DECLARE(digest_capture_overflow_fails_the_write)
TEST_DECLARE(digest_capture_off_counts_writes)

TEST_DECLARE(digest_snapshot_copy_and_install)

TEST_LIST_START
TEST_ENTRY(digest_new_store_seq_zero)
TEST_ENTRY(digest_same_content_same_digest)
TEST_ENTRY(digest_differential_apply)
TEST_ENTRY(digest_apply_refuses_unknown_db)
TEST_ENTRY(digest_apply_refuses_meta_db)
TEST_ENTRY(digest_apply_refuses_seq_gap)
TEST_ENTRY(digest_apply_missing_key_delete)
TEST_ENTRY(digest_corrupted_record_never_applied)
TEST_ENTRY(digest_capture_overflow_fails_the_write)
TEST_ENTRY(digest_capture_off_counts_writes)
TEST_ENTRY(digest_snapshot_copy_and_install)
TEST_LIST_END

#define EPOCH 1          /* the tenure the test's "primary" A writes records in */
#define OPS_DEFAULT 1500 /* per seed */
#define BATCH_MAX 16     /* ops per batch: 1..this */
#define HOLDS_KEPT 64    /* hold ids the random ops pick from */
#define NEVENTS 4

static const char *const db_names[SLOT_STORE_DBS] = {"meta",  "events", "shards",    "holds",   "expiry",
                                                     "users", "feed",   "consumers", "waitlist"};
static const char *const events[NEVENTS] = {"e1", "e1.x", "event-two", "e3"}; /* "e1" is a prefix of "e1.x" */
static const char *const users[] = {"alice", "bob", "carol", "\xc3\xa9ve", "frank", "grace"};
#define NUSERS (sizeof users / sizeof users[0])

/* ---- helpers */

/* A second, plain store on a new folder (B, the "replica"). */
static slot_store *store_new(char **dir)
{
    *dir = slot_test_tmpdir();
    slot_store_opts o = {.dir = *dir, .nosync = true};
    char err[256];
    slot_store *st = NULL;
    int rc = slot_store_open(&o, &st, err, sizeof err);
    if (rc != 0)
        T_FAIL_("slot_store_open: %d %s", rc, err);
    return st;
}

static void store_free(slot_store *st, char *dir)
{
    slot_store_close(st);
    slot_test_rmdir(dir);
    free(dir);
}

/* seq and digest of st's committed state. */
static uint64_t digest_of(slot_store *st, char hex[SLOT_DIGEST_HEX_BYTES + 1])
{
    MDB_txn *r;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(st), NULL, MDB_RDONLY, &r), 0);
    uint64_t seq = 0;
    ASSERT_EQ(slot_store_digest(st, r, &seq, hex), 0);
    mdb_txn_abort(r);
    ASSERT_EQ(strlen(hex), SLOT_DIGEST_HEX_BYTES);
    return seq;
}

/* Every database of a and b holds the same keys with the same values. */
static void expect_same_dbs(slot_store *a, slot_store *b)
{
    MDB_txn *ta, *tb;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(a), NULL, MDB_RDONLY, &ta), 0);
    ASSERT_EQ(mdb_txn_begin(slot_store_env(b), NULL, MDB_RDONLY, &tb), 0);
    for (int d = 0; d < SLOT_STORE_DBS; d++) {
        MDB_dbi da, dbb;
        ASSERT_EQ(mdb_dbi_open(ta, db_names[d], 0, &da), 0);
        ASSERT_EQ(mdb_dbi_open(tb, db_names[d], 0, &dbb), 0);
        MDB_cursor *ca, *cb;
        ASSERT_EQ(mdb_cursor_open(ta, da, &ca), 0);
        ASSERT_EQ(mdb_cursor_open(tb, dbb, &cb), 0);
        MDB_val ka, va, kb, vb;
        int ra = mdb_cursor_get(ca, &ka, &va, MDB_FIRST), rb = mdb_cursor_get(cb, &kb, &vb, MDB_FIRST);
        uint64_t n = 0;
        while (ra == 0 && rb == 0) {
            if (ka.mv_size != kb.mv_size || memcmp(ka.mv_data, kb.mv_data, ka.mv_size) != 0 ||
                va.mv_size != vb.mv_size || (va.mv_size && memcmp(va.mv_data, vb.mv_data, va.mv_size) != 0))
                T_FAIL_("database %s differs at entry %" PRIu64, db_names[d], n);
            n++;
            ra = mdb_cursor_get(ca, &ka, &va, MDB_NEXT);
            rb = mdb_cursor_get(cb, &kb, &vb, MDB_NEXT);
        }
        if (ra != MDB_NOTFOUND || rb != MDB_NOTFOUND)
            T_FAIL_("database %s: %s ends first after %" PRIu64 " entries (%d, %d)", db_names[d],
                    ra == MDB_NOTFOUND ? "A" : "B", n, ra, rb);
        mdb_cursor_close(ca);
        mdb_cursor_close(cb);
    }
    mdb_txn_abort(ta);
    mdb_txn_abort(tb);
}

/* Seals ws as record `seq` (epoch EPOCH) and decodes it into *rec (pointing into ws). */
static void seal(slot_wset *ws, uint64_t seq, slot_wset_rec *rec)
{
    slot_wset_hdr h = {
        .epoch = EPOCH, .seq = seq, .prev_epoch = seq > 1 ? EPOCH : 0, .commit_seq = seq, .timestamp_ms = T0};
    const uint8_t *bytes;
    size_t n;
    ASSERT_EQ(slot_wset_finish(ws, &h, &bytes, &n), 0);
    ASSERT_EQ(slot_wset_decode(bytes, n, rec), 0);
    ASSERT_U64_EQ(rec->hdr.seq, seq);
}

/* Applies rec to st in one transaction; returns apply's rc (committed on 0, else aborted). */
static int apply(slot_store *st, const slot_wset_rec *rec)
{
    MDB_txn *t;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(st), NULL, 0, &t), 0);
    int rc = slot_store_apply(st, t, rec);
    if (rc == 0)
        ASSERT_EQ(mdb_txn_commit(t), 0);
    else
        mdb_txn_abort(t);
    return rc;
}

/* One batch on f's store with capture into ws; seq raised when it wrote.
 * Returns the new seq, or 0 when nothing was written. */
static uint64_t captured_batch(fx *f, slot_wset *ws, const slot_req *q, size_t n)
{
    MDB_txn *t;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(f->st), NULL, 0, &t), 0);
    slot_wset_clear(ws);
    uint64_t w0 = slot_store_writes(f->st);
    slot_store_capture_begin(f->st, ws);
    for (size_t i = 0; i < n; i++) {
        slot_res r = {0};
        run_on(f, t, &q[i], &r);
        slot_res_clear(&r);
    }
    slot_store_capture_end(f->st);
    uint64_t seq = 0;
    if (slot_store_writes(f->st) != w0)
        ASSERT_EQ(slot_store_seq_bump(f->st, t, EPOCH, &seq), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);
    ASSERT_EQ(slot_wset_ops(ws) > 0, seq > 0);
    return seq;
}

/* A store B at seq 1 holding event "b1" (applied from A's first batch). */
typedef struct pair {
    fx a;
    char *bdir;
    slot_store *b;
    slot_wset ws;
} pair;

static void pair_open(pair *p)
{
    fx_open(&p->a);
    p->b = store_new(&p->bdir);
    ASSERT_EQ(slot_wset_init(&p->ws, 0), 0);
    slot_req q = req_create("b1", 10);
    uint64_t seq = captured_batch(&p->a, &p->ws, &q, 1);
    ASSERT_U64_EQ(seq, 1);
    slot_wset_rec rec;
    seal(&p->ws, seq, &rec);
    ASSERT_EQ(apply(p->b, &rec), 0);
    expect_same_dbs(p->a.st, p->b);
}

static void pair_close(pair *p)
{
    slot_wset_free(&p->ws);
    store_free(p->b, p->bdir);
    fx_close(&p->a);
}

/* ---- cases */

TEST_IMPL(digest_new_store_seq_zero)
{
    char *dir;
    slot_store *st = store_new(&dir);
    char h1[SLOT_DIGEST_HEX_BYTES + 1], h2[SLOT_DIGEST_HEX_BYTES + 1];
    ASSERT_U64_EQ(digest_of(st, h1), 0);
    MDB_txn *t;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(st), NULL, MDB_RDONLY, &t), 0);
    uint64_t seq = 9, epoch = 9;
    ASSERT_EQ(slot_store_seq_get(st, t, &seq, &epoch), 0); /* no seq record: 0, 0 */
    ASSERT_U64_EQ(seq, 0);
    ASSERT_U64_EQ(epoch, 0);
    mdb_txn_abort(t);
    ASSERT_EQ(mdb_txn_begin(slot_store_env(st), NULL, 0, &t), 0);
    ASSERT_EQ(slot_store_seq_bump(st, t, 7, &seq), 0);
    ASSERT_U64_EQ(seq, 1);
    ASSERT_EQ(mdb_txn_commit(t), 0);
    /* seq is hashed: the same (empty) data at another seq digests differently */
    ASSERT_U64_EQ(digest_of(st, h2), 1);
    ASSERT(strcmp(h1, h2) != 0);
    /* it survives a reopen, with its epoch */
    slot_store_close(st);
    slot_store_opts o = {.dir = dir, .nosync = true};
    char err[256];
    ASSERT_EQ(slot_store_open(&o, &st, err, sizeof err), 0);
    ASSERT_EQ(mdb_txn_begin(slot_store_env(st), NULL, MDB_RDONLY, &t), 0);
    ASSERT_EQ(slot_store_seq_get(st, t, &seq, &epoch), 0);
    ASSERT_U64_EQ(seq, 1);
    ASSERT_U64_EQ(epoch, 7);
    mdb_txn_abort(t);
    char h3[SLOT_DIGEST_HEX_BYTES + 1];
    ASSERT_U64_EQ(digest_of(st, h3), 1);
    ASSERT_STR_EQ(h2, h3);
    store_free(st, dir);
}

/* Two stores that reach the same entries by different histories, at the same seq. */
TEST_IMPL(digest_same_content_same_digest)
{
    fx a, b;
    fx_open(&a);
    fx_open(&b);
    slot_wset ws;
    ASSERT_EQ(slot_wset_init(&ws, 0), 0);
    slot_req qa[2] = {req_create("x", 5), req_create("y", 7)};
    /* The feed is history too (its entries are state): b makes the same
     * changes in the same order, in one batch instead of two. */
    slot_req qb[2] = {req_create("x", 5), req_create("y", 7)};
    ASSERT_U64_EQ(captured_batch(&a, &ws, &qa[0], 1), 1);
    ASSERT_U64_EQ(captured_batch(&a, &ws, &qa[1], 1), 2);
    ASSERT_U64_EQ(captured_batch(&b, &ws, qb, 2), 1);
    char ha[SLOT_DIGEST_HEX_BYTES + 1], hb[SLOT_DIGEST_HEX_BYTES + 1];
    ASSERT_U64_EQ(digest_of(a.st, ha), 2);
    ASSERT_U64_EQ(digest_of(b.st, hb), 1);
    ASSERT(strcmp(ha, hb) != 0);         /* same data, other seq */
    slot_req again = req_create("x", 5); /* a replay: writes nothing, seq stays */
    ASSERT_U64_EQ(captured_batch(&b, &ws, &again, 1), 0);
    slot_req z = req_create("z", 1);
    /* one more batch on b that rewrites an event without changing it (no feed entry) */
    slot_req same = slot_test_req(SLOT_OP_SET_STATUS, "x");
    same.status = SLOT_EVENT_ON_SALE;
    ASSERT_U64_EQ(captured_batch(&b, &ws, &same, 1), 2);
    ASSERT_U64_EQ(digest_of(b.st, hb), 2);
    ASSERT_STR_EQ(ha, hb);
    expect_same_dbs(a.st, b.st);
    /* and a change shows */
    ASSERT_U64_EQ(captured_batch(&b, &ws, &z, 1), 3);
    ASSERT_U64_EQ(digest_of(b.st, hb), 3);
    ASSERT(strcmp(ha, hb) != 0);
    slot_wset_free(&ws);
    fx_close(&a);
    fx_close(&b);
}

/* ---- the differential run */

typedef struct held {
    char ev[SLOT_EVENT_BYTES_MAX + 1];
    char id[SLOT_HOLD_ID_BYTES + 1];
    char user[SLOT_USER_BYTES_MAX + 1];
} held;

typedef struct drv {
    uint64_t rng;
    held holds[HOLDS_KEPT];
    uint32_t nholds, next; /* ring */
} drv;

static uint64_t rnd(drv *d)
{
    uint64_t z = (d->rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint32_t below(drv *d, uint32_t n)
{
    return (uint32_t)(rnd(d) % n);
}

/* A random request; hold ids come from earlier results (remember()). */
static slot_req random_req(drv *d)
{
    const char *ev = events[below(d, NEVENTS)];
    uint32_t pick = below(d, 100);
    if (pick < 6) {
        slot_req q = req_create(ev, below(d, 120));
        q.shards = 1 + below(d, 8);
        q.max_per_user = below(d, 3) == 0 ? 1 + below(d, 8) : 0;
        q.hold_ttl_ms = SLOT_HOLD_TTL_MS_MIN + below(d, 4000);
        /* two of the events have a small capacity and a waitlist, so the waitlist database travels too */
        if (ev == events[1] || ev == events[3]) {
            q.capacity = 2 + below(d, 6);
            q.waitlist_max = 1 + below(d, 20);
        }
        return q;
    }
    if (pick < 44 && pick >= 38) { /* waitlist joins and leaves; a leave or a return of units serves the list */
        char key[24];
        snprintf(key, sizeof key, "w%u", below(d, 30));
        slot_req q = req_hold(ev, users[below(d, NUSERS)], key, 1 + below(d, 4));
        q.op = below(d, 3) == 0 ? SLOT_OP_WAITLIST_LEAVE : SLOT_OP_WAITLIST_JOIN;
        return q;
    }
    if (pick < 47 && pick >= 44) { /* a cart of two events */
        char key[24];
        snprintf(key, sizeof key, "c%u", below(d, 30));
        slot_req q = slot_test_req(SLOT_OP_HOLD_MANY, NULL);
        slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[below(d, NUSERS)]);
        slot_test_set_name(q.request, &q.request_len, sizeof q.request, key);
        uint32_t first = below(d, NEVENTS);
        for (uint32_t i = 0; i < 2; i++) {
            slot_test_set_name(q.items[i].event, &q.items[i].event_len, sizeof q.items[i].event,
                               events[(first + i) % NEVENTS]);
            q.items[i].qty = (uint16_t)(1 + below(d, 3));
        }
        q.nitems = 2;
        return q;
    }
    if (pick < 50 || d->nholds == 0) {
        char key[24];
        snprintf(key, sizeof key, "k%u", below(d, 60));
        return req_hold(ev, users[below(d, NUSERS)], key, 1 + below(d, 4));
    }
    const held *h = &d->holds[below(d, d->nholds)];
    if (pick < 65)
        return req_on(SLOT_OP_CONFIRM, h->ev, h->id, h->user);
    if (pick < 77)
        return req_on(SLOT_OP_RELEASE, h->ev, h->id, h->user);
    if (pick < 81)
        return req_on(SLOT_OP_CANCEL, h->ev, h->id, NULL);
    if (pick < 84)
        return req_on(SLOT_OP_GET_HOLD, h->ev, h->id, h->user);
    if (pick < 88)
        return slot_test_req(SLOT_OP_EXPIRE, NULL);
    if (pick < 92) {
        slot_req q = slot_test_req(SLOT_OP_RESHARD, ev);
        q.shards = 1 + below(d, 8);
        return q;
    }
    if (pick < 97) {
        slot_req q = slot_test_req(SLOT_OP_SET_CAPACITY, ev);
        q.capacity = below(d, 150);
        return q;
    }
    slot_req q = slot_test_req(SLOT_OP_SET_STATUS, ev);
    q.status = below(d, 4) == 0 ? SLOT_EVENT_CLOSED : SLOT_EVENT_ON_SALE;
    return q;
}

static void remember(drv *d, const slot_req *q, const slot_res *r)
{
    if (q->op != SLOT_OP_HOLD || r->err != SLOT_E_OK || r->sold_out || r->replay)
        return;
    held *h = &d->holds[d->next];
    d->next = (d->next + 1) % HOLDS_KEPT;
    if (d->nholds < HOLDS_KEPT)
        d->nholds++;
    snprintf(h->ev, sizeof h->ev, "%s", q->event);
    snprintf(h->id, sizeof h->id, "%s", r->hold);
    snprintf(h->user, sizeof h->user, "%s", q->user);
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : dflt;
}

typedef struct tally {
    uint64_t batches, records, empty, aborted, ops, writes;
    uint64_t feed_rows, waitlist_rows; /* left in B's feed and waitlist at the end of each seed */
} tally;

static void differential(uint64_t seed, uint64_t ops, tally *n)
{
    fprintf(stderr, "  seed %" PRIu64 " (SLOT_DIGEST_SEED=%" PRIu64 "), %" PRIu64 " ops\n", seed, seed, ops);
    fx a;
    fx_open(&a);
    slot_alloc_seed(&a.a, seed);
    char *bdir;
    slot_store *b = store_new(&bdir);
    slot_wset ws;
    ASSERT_EQ(slot_wset_init(&ws, 0), 0);
    drv d = {.rng = seed};
    uint64_t seq_a = 0;
    for (uint64_t done = 0; done < ops;) {
        a.now += below(&d, 1500); /* holds' TTLs are 1..5 s: some expire between batches */
        bool abort_it = below(&d, 20) == 0;
        uint32_t k = 1 + below(&d, BATCH_MAX);
        MDB_txn *t;
        ASSERT_EQ(mdb_txn_begin(slot_store_env(a.st), NULL, 0, &t), 0);
        slot_wset_clear(&ws);
        uint64_t w0 = slot_store_writes(a.st);
        slot_store_capture_begin(a.st, &ws);
        for (uint32_t i = 0; i < k; i++, done++) {
            slot_req q = random_req(&d);
            slot_res r = {0};
            if (q.op == SLOT_OP_EXPIRE && below(&d, 2)) /* the sweeper's entry, as the commit thread runs it */
                ASSERT_EQ(slot_alloc_expire_due(&a.a, t, a.now, SLOT_SWEEP_BATCH_MAX, &r.expired), 0);
            else
                run_on(&a, t, &q, &r);
            if (!abort_it)
                remember(&d, &q, &r);
            slot_res_clear(&r);
        }
        slot_store_capture_end(a.st);
        n->batches++;
        n->ops += k;
        if (abort_it) {       /* a failed batch: nothing of it may reach B */
            mdb_txn_abort(t); /* the allocator drops what its index kept of it (src/alloc/alloc_int.h) */
            n->aborted++;
            continue;
        }
        bool wrote = slot_store_writes(a.st) != w0;
        ASSERT_EQ(wrote, slot_wset_ops(&ws) > 0);
        if (wrote) {
            uint64_t s;
            ASSERT_EQ(slot_store_seq_bump(a.st, t, EPOCH, &s), 0);
            ASSERT_U64_EQ(s, seq_a + 1);
            seq_a = s;
        }
        ASSERT_EQ(mdb_txn_commit(t), 0);
        if (wrote) {
            slot_wset_rec rec;
            seal(&ws, seq_a, &rec);
            int rc = apply(b, &rec);
            if (rc != 0)
                T_FAIL_("apply of record %" PRIu64 ": %d %s", seq_a, rc, slot_strerror(rc));
            n->records++;
            n->writes += rec.op_count;
        } else {
            n->empty++;
        }
        char ha[SLOT_DIGEST_HEX_BYTES + 1], hb[SLOT_DIGEST_HEX_BYTES + 1];
        ASSERT_U64_EQ(digest_of(a.st, ha), seq_a);
        ASSERT_U64_EQ(digest_of(b, hb), seq_a);
        ASSERT_STR_EQ(ha, hb);
        expect_same_dbs(a.st, b);
    }
    /* What the replicated feed and waitlist databases held at the end (compared above). */
    MDB_txn *rt;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(b), NULL, MDB_RDONLY, &rt), 0);
    MDB_dbi dbi;
    MDB_stat ms;
    ASSERT_EQ(mdb_dbi_open(rt, "feed", 0, &dbi), 0);
    ASSERT_EQ(mdb_stat(rt, dbi, &ms), 0);
    n->feed_rows += ms.ms_entries;
    ASSERT_EQ(mdb_dbi_open(rt, "waitlist", 0, &dbi), 0);
    ASSERT_EQ(mdb_stat(rt, dbi, &ms), 0);
    n->waitlist_rows += ms.ms_entries;
    mdb_txn_abort(rt);
    slot_wset_free(&ws);
    store_free(b, bdir);
    fx_close(&a);
}

TEST_IMPL(digest_differential_apply)
{
    uint64_t ops = env_u64("SLOT_DIGEST_OPS", OPS_DEFAULT);
    uint64_t one = env_u64("SLOT_DIGEST_SEED", 0);
    tally n = {0};
    for (uint64_t seed = 1; seed <= 4; seed++)
        differential(one ? one : seed, ops, &n);
    fprintf(stderr,
            "  %" PRIu64 " ops in %" PRIu64 " batches: %" PRIu64 " records (%" PRIu64 " LMDB ops), %" PRIu64
            " wrote nothing, %" PRIu64 " aborted\n",
            n.ops, n.batches, n.records, n.writes, n.empty, n.aborted);
    /* the run must have exercised both kinds of batch and real traffic */
    ASSERT_GT(n.records, 100);
    ASSERT_GT(n.empty, 0);
    ASSERT_GT(n.aborted, 0);
    if (ops >= OPS_DEFAULT) { /* and the feed and the waitlist travelled in the records */
        ASSERT_GT(n.feed_rows, 0);
        ASSERT_GT(n.waitlist_rows, 0);
    }
}

/* ---- refusals: each leaves B exactly as it was */

static void expect_refused(pair *p, const slot_wset_rec *rec, int want)
{
    char before[SLOT_DIGEST_HEX_BYTES + 1], after[SLOT_DIGEST_HEX_BYTES + 1];
    uint64_t s0 = digest_of(p->b, before);
    int rc = apply(p->b, rec);
    if (rc != want)
        T_FAIL_("apply: %d (%s), want %d (%s)", rc, slot_strerror(rc), want, slot_strerror(want));
    ASSERT_U64_EQ(digest_of(p->b, after), s0);
    ASSERT_STR_EQ(before, after);
    expect_same_dbs(p->a.st, p->b); /* A did not move either */
}

/* A record with one good op, then one into a database id the store lacks. */
TEST_IMPL(digest_apply_refuses_unknown_db)
{
    pair p;
    pair_open(&p);
    slot_wset_clear(&p.ws);
    ASSERT_EQ(slot_wset_put(&p.ws, 1, "\x02zz", 3, "v", 1), 0);
    ASSERT_EQ(slot_wset_put(&p.ws, SLOT_STORE_DBS, "k", 1, "v", 1), 0); /* a valid id for the codec, not ours */
    slot_wset_rec rec;
    seal(&p.ws, 2, &rec);
    expect_refused(&p, &rec, SLOT_STORE_E_DB);
    ASSERT_STR_EQ(slot_strerror(SLOT_STORE_E_DB), "record names a database that is not replicated state");
    pair_close(&p);
}

TEST_IMPL(digest_apply_refuses_meta_db)
{
    pair p;
    pair_open(&p);
    slot_wset_clear(&p.ws);
    ASSERT_EQ(slot_wset_put(&p.ws, 0, "schema", 6, "FOREIGNMAGIC", 12), 0);
    slot_wset_rec rec;
    seal(&p.ws, 2, &rec);
    expect_refused(&p, &rec, SLOT_STORE_E_DB);
    pair_close(&p);
}

TEST_IMPL(digest_apply_refuses_seq_gap)
{
    pair p;
    pair_open(&p);
    slot_req q = req_create("b2", 3);
    ASSERT_U64_EQ(captured_batch(&p.a, &p.ws, &q, 1), 2);
    slot_wset_rec rec;
    seal(&p.ws, 3, &rec); /* B is at 1: record 3 would skip 2 */
    char before[SLOT_DIGEST_HEX_BYTES + 1], after[SLOT_DIGEST_HEX_BYTES + 1];
    ASSERT_U64_EQ(digest_of(p.b, before), 1);
    ASSERT_EQ(apply(p.b, &rec), SLOT_STORE_E_SEQ);
    seal(&p.ws, 1, &rec); /* nor again the one it has */
    ASSERT_EQ(apply(p.b, &rec), SLOT_STORE_E_SEQ);
    ASSERT_U64_EQ(digest_of(p.b, after), 1);
    ASSERT_STR_EQ(before, after);
    seal(&p.ws, 2, &rec); /* the right one goes in */
    ASSERT_EQ(apply(p.b, &rec), 0);
    expect_same_dbs(p.a.st, p.b);
    pair_close(&p);
}

/* A delete of a key B does not have: B has diverged; refused, B unchanged. */
TEST_IMPL(digest_apply_missing_key_delete)
{
    pair p;
    pair_open(&p);
    slot_wset_clear(&p.ws);
    ASSERT_EQ(slot_wset_put(&p.ws, 2, "\x02zz\x00\x01", 5, "\0\0\0\0\0\0\0\1", 8), 0);
    ASSERT_EQ(slot_wset_del(&p.ws, 2, "\x02qq\x00\x01", 5), 0);
    slot_wset_rec rec;
    seal(&p.ws, 2, &rec);
    expect_refused(&p, &rec, MDB_NOTFOUND);
    pair_close(&p);
}

/* A record damaged in transit is refused by the decoder; the good one applies. */
TEST_IMPL(digest_corrupted_record_never_applied)
{
    pair p;
    pair_open(&p);
    slot_req q = req_hold("b1", "alice", "r1", 2);
    ASSERT_U64_EQ(captured_batch(&p.a, &p.ws, &q, 1), 2);
    slot_wset_hdr h = {.epoch = EPOCH, .seq = 2, .prev_epoch = EPOCH, .commit_seq = 2, .timestamp_ms = T0};
    const uint8_t *bytes;
    size_t len;
    ASSERT_EQ(slot_wset_finish(&p.ws, &h, &bytes, &len), 0);
    uint8_t *copy = malloc(len);
    ASSERT(copy != NULL);
    for (size_t at = SLOT_WSET_HEADER_BYTES; at < len; at += 7) {
        memcpy(copy, bytes, len);
        copy[at] ^= 0x40;
        slot_wset_rec rec;
        ASSERT_EQ(slot_wset_decode(copy, len, &rec), SLOT_WSET_E_CRC);
    }
    char hb[SLOT_DIGEST_HEX_BYTES + 1], ha[SLOT_DIGEST_HEX_BYTES + 1];
    ASSERT_U64_EQ(digest_of(p.b, hb), 1);
    memcpy(copy, bytes, len);
    slot_wset_rec rec;
    ASSERT_EQ(slot_wset_decode(copy, len, &rec), 0);
    ASSERT_EQ(apply(p.b, &rec), 0);
    ASSERT_U64_EQ(digest_of(p.b, hb), 2);
    ASSERT_U64_EQ(digest_of(p.a.st, ha), 2);
    ASSERT_STR_EQ(ha, hb);
    expect_same_dbs(p.a.st, p.b);
    free(copy);
    pair_close(&p);
}

/* A write set at its bound fails the write that would pass it; the aborted
 * batch leaves nothing. */
TEST_IMPL(digest_capture_overflow_fails_the_write)
{
    fx a;
    fx_open(&a);
    char h0[SLOT_DIGEST_HEX_BYTES + 1], h1[SLOT_DIGEST_HEX_BYTES + 1];
    ASSERT_U64_EQ(digest_of(a.st, h0), 0);
    slot_wset ws;
    ASSERT_EQ(slot_wset_init(&ws, 256), 0); /* an event record and a few shards, not 16 */
    MDB_txn *t;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(a.st), NULL, 0, &t), 0);
    slot_store_capture_begin(a.st, &ws);
    slot_req q = req_create("big", 1600);
    slot_res r = {0};
    int rc = slot_alloc_run(&a.a, t, &q, a.now, &r);
    ASSERT_EQ(rc, SLOT_WSET_E_FULL);
    ASSERT_STR_EQ(slot_strerror(rc), "the write set would pass its size limit");
    ASSERT_GT(slot_wset_ops(&ws), 0);
    slot_store_capture_end(a.st);
    mdb_txn_abort(t);
    slot_res_clear(&r);
    ASSERT_U64_EQ(digest_of(a.st, h1), 0);
    ASSERT_STR_EQ(h0, h1);
    slot_wset_free(&ws);
    fx_close(&a);
}

/* Without a capture, writes are still counted (the commit thread's test for
 * "this batch changed state"); reads and refusals count nothing. */
TEST_IMPL(digest_capture_off_counts_writes)
{
    fx a;
    fx_open(&a);
    uint64_t w0 = slot_store_writes(a.st);
    create(&a, "c", 4, 2);
    uint64_t w1 = slot_store_writes(a.st);
    ASSERT_U64_EQ(w1, w0 + 4); /* the event, its two shards and its feed entry */
    slot_res r = {0};
    slot_req ev = slot_test_req(SLOT_OP_EVENT, "c");
    run(&a, &ev, &r);
    hold_ok(&a, "c", "u", "k1", 4, NULL);
    uint64_t w2 = slot_store_writes(a.st);
    ASSERT_GT(w2, w1);
    hold_sold_out(&a, "c", "u", "k2", 1, 0);
    slot_req again = req_hold("c", "u", "k1", 4);
    run(&a, &again, &r);
    ASSERT(r.replay);
    ASSERT_U64_EQ(slot_store_writes(a.st), w2);
    slot_res_clear(&r);
    fx_close(&a);
}

/* B's digest through txn (its view, writes of txn included). */
static void digest_in(slot_store *st, MDB_txn *txn, char hex[SLOT_DIGEST_HEX_BYTES + 1])
{
    uint64_t seq = 0;
    ASSERT_EQ(slot_store_digest(st, txn, &seq, hex), 0);
}

/* A copy of the file src at dst with the byte at `at` flipped. */
static void copy_flipped(const char *src, const char *dst, long at)
{
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    ASSERT(in != NULL && out != NULL);
    int ch;
    for (long i = 0; (ch = fgetc(in)) != EOF; i++)
        fputc(i == at ? ch ^ 0x01 : ch, out);
    fclose(in);
    ASSERT_EQ(fclose(out), 0);
}

/* slot_backup_install of `file` into B is refused with `want` and changes
 * nothing: not within its transaction, not after. */
static void install_refused(slot_store *b, const char *file, const char *scratch, int want)
{
    char hb0[SLOT_DIGEST_HEX_BYTES + 1], hb1[SLOT_DIGEST_HEX_BYTES + 1];
    uint64_t before = digest_of(b, hb0);
    uint64_t w0 = slot_store_writes(b);
    MDB_txn *t;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(b), NULL, 0, &t), 0);
    char err[1024] = "";
    int rc = slot_backup_install(b, t, file, scratch, NULL, err, sizeof(err));
    ASSERT_EQ(rc, want);
    ASSERT(slot_backup_refused(rc));
    ASSERT(strstr(err, file) != NULL); /* the message names the file */
    digest_in(b, t, hb1);
    ASSERT_STR_EQ(hb0, hb1);
    mdb_txn_abort(t);
    ASSERT_U64_EQ(slot_store_writes(b), w0);
    ASSERT_U64_EQ(digest_of(b, hb1), before);
    ASSERT_STR_EQ(hb0, hb1);
}

/* A backup file of A (slot_store_backup, as a replica set's snapshot join
 * sends it) installed into B (which held other data) makes B the same as A
 * in every database, seq and digest included; a file that is not a backup,
 * one with a flipped data byte and one with a flipped header byte are
 * refused by slot_backup_install and change nothing (docs/design.md,
 * "Joining by snapshot"). */
TEST_IMPL(digest_snapshot_copy_and_install)
{
    pair p;
    pair_open(&p);
    for (int k = 0; k < 3; k++) {
        char name[16];
        snprintf(name, sizeof(name), "snap%d", k);
        slot_req q = req_create(name, 100 + (uint64_t)k);
        ASSERT(captured_batch(&p.a, &p.ws, &q, 1) > 0);
    }
    char *dir = slot_test_tmpdir();
    char path[600], err[1024] = "";
    snprintf(path, sizeof(path), "%s/snap.bak", dir);
    slot_backup_info info;
    ASSERT_EQ(slot_store_backup(p.a.st, path, NULL, &info, err, sizeof(err)), 0);
    ASSERT_U64_EQ(info.seq, 4);
    ASSERT_U64_EQ(info.epoch, EPOCH);
    ASSERT(info.data_bytes > 0);
    ASSERT_U64_EQ(info.file_bytes, info.data_bytes + SLOT_BACKUP_HEADER_BYTES);
    slot_backup_info hi;
    ASSERT_EQ(slot_backup_read_header(path, &hi, err, sizeof(err)), 0);
    ASSERT_U64_EQ(hi.seq, info.seq);
    ASSERT_U64_EQ(hi.epoch, EPOCH);
    ASSERT_STR_EQ(hi.digest, info.digest);

    char bad[600];
    snprintf(bad, sizeof(bad), "%s/bad.bak", dir);
    FILE *f = fopen(bad, "w");
    ASSERT(f != NULL);
    fputs("not a store", f);
    fclose(f);
    install_refused(p.b, bad, dir, SLOT_BACKUP_E_MAGIC);
    /* One flipped byte in the middle of the data: its SHA-256 is not the header's. */
    copy_flipped(path, bad, (long)(SLOT_BACKUP_HEADER_BYTES + info.data_bytes / 2));
    install_refused(p.b, bad, dir, SLOT_BACKUP_E_CHECKSUM);
    /* One flipped byte of the header's seq: its CRC-32 does not match. */
    copy_flipped(path, bad, 23);
    install_refused(p.b, bad, dir, SLOT_BACKUP_E_HEADER);

    uint64_t w0 = slot_store_writes(p.b);
    MDB_txn *t;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(p.b), NULL, 0, &t), 0);
    slot_backup_info got;
    ASSERT_EQ(slot_backup_install(p.b, t, path, dir, &got, err, sizeof(err)), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);
    ASSERT_U64_EQ(got.seq, info.seq);
    ASSERT_U64_EQ(got.epoch, EPOCH);
    ASSERT(slot_store_writes(p.b) > w0); /* the entries put count as writes */
    expect_same_dbs(p.a.st, p.b);
    char ha[SLOT_DIGEST_HEX_BYTES + 1], hb[SLOT_DIGEST_HEX_BYTES + 1];
    ASSERT_U64_EQ(digest_of(p.a.st, ha), digest_of(p.b, hb));
    ASSERT_STR_EQ(ha, hb);
    ASSERT_STR_EQ(hb, info.digest);
    /* Installing it again (a restart after a crash before the DATA/snap was
     * removed) gives the same state. */
    ASSERT_EQ(mdb_txn_begin(slot_store_env(p.b), NULL, 0, &t), 0);
    ASSERT_EQ(slot_backup_install(p.b, t, path, dir, NULL, err, sizeof(err)), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);
    ASSERT_U64_EQ(digest_of(p.b, hb), info.seq);
    ASSERT_STR_EQ(ha, hb);
    slot_test_rmdir(dir);
    free(dir);
    pair_close(&p);
}
