/*
 * test_store.c — the LMDB schema (slot/store.h): open and its refusals,
 * record round trips, scans, and map growth. Each case runs on its own
 * temporary environment.
 */
#include <errno.h>
#include <lmdb.h>
#include <sys/stat.h>

#include "harness.h"
#include "slot/store.h"

TEST_DECLARE(store_hold_add_in_and_out_of_order)
TEST_DECLARE(store_open_creates_folder_and_schema)
TEST_DECLARE(store_reopen_keeps_records)
TEST_DECLARE(store_open_read_only_missing_folder_fails)
TEST_DECLARE(store_open_missing_parent_fails)
TEST_DECLARE(store_open_refuses_newer_schema)
TEST_DECLARE(store_open_refuses_foreign_magic)
TEST_DECLARE(store_open_refuses_other_lmdb_file)
TEST_DECLARE(store_open_refuses_other_lmdb_with_named_dbs)
TEST_DECLARE(store_open_refuses_non_lmdb_file)
TEST_DECLARE(store_event_roundtrip)
TEST_DECLARE(store_shard_roundtrip)
TEST_DECLARE(store_hold_roundtrip_many_parts_max_user)
TEST_DECLARE(store_expiry_roundtrip)
TEST_DECLARE(store_user_roundtrip_zero_deletes)
TEST_DECLARE(store_events_scan_key_order)
TEST_DECLARE(store_holds_scan_one_event_only)
TEST_DECLARE(store_expiry_scan_bound)
TEST_DECLARE(store_expiry_first)
TEST_DECLARE(store_map_grows_once_then_full)
TEST_DECLARE(store_map_growth_refused_at_max)
TEST_DECLARE(store_map_grow_doubles_then_caps)
TEST_DECLARE(store_map_max_below_initial)
TEST_DECLARE(store_state_names)

TEST_LIST_START
TEST_ENTRY(store_hold_add_in_and_out_of_order)
TEST_ENTRY(store_open_creates_folder_and_schema)
TEST_ENTRY(store_reopen_keeps_records)
TEST_ENTRY(store_open_read_only_missing_folder_fails)
TEST_ENTRY(store_open_missing_parent_fails)
TEST_ENTRY(store_open_refuses_newer_schema)
TEST_ENTRY(store_open_refuses_foreign_magic)
TEST_ENTRY(store_open_refuses_other_lmdb_file)
TEST_ENTRY(store_open_refuses_other_lmdb_with_named_dbs)
TEST_ENTRY(store_open_refuses_non_lmdb_file)
TEST_ENTRY(store_event_roundtrip)
TEST_ENTRY(store_shard_roundtrip)
TEST_ENTRY(store_hold_roundtrip_many_parts_max_user)
TEST_ENTRY(store_expiry_roundtrip)
TEST_ENTRY(store_user_roundtrip_zero_deletes)
TEST_ENTRY(store_events_scan_key_order)
TEST_ENTRY(store_holds_scan_one_event_only)
TEST_ENTRY(store_expiry_scan_bound)
TEST_ENTRY(store_expiry_first)
TEST_ENTRY(store_map_grows_once_then_full)
TEST_ENTRY(store_map_growth_refused_at_max)
TEST_ENTRY(store_map_grow_doubles_then_caps)
TEST_ENTRY(store_map_max_below_initial)
TEST_ENTRY(store_state_names)
TEST_LIST_END

#define ERRBUF 256

/* ---- helpers */

typedef struct fixture {
    char *dir;
    slot_store *st;
    MDB_env *env;
} fixture;

static void fx_open_opts(fixture *f, const slot_store_opts *opts)
{
    char err[ERRBUF];
    int rc = slot_store_open(opts, &f->st, err, sizeof err);
    if (rc != 0)
        T_FAIL_("slot_store_open(%s): %d %s", opts->dir, rc, err);
    f->env = slot_store_env(f->st);
}

static void fx_open(fixture *f)
{
    f->dir = slot_test_tmpdir();
    slot_store_opts o = {.dir = f->dir, .nosync = true};
    fx_open_opts(f, &o);
}

static void fx_close(fixture *f)
{
    slot_store_close(f->st);
    slot_test_rmdir(f->dir);
    free(f->dir);
    f->st = NULL;
    f->dir = NULL;
}

static MDB_txn *txn_w(fixture *f)
{
    MDB_txn *t = NULL;
    ASSERT_EQ(mdb_txn_begin(f->env, NULL, 0, &t), 0);
    return t;
}

static MDB_txn *txn_r(fixture *f)
{
    MDB_txn *t = NULL;
    ASSERT_EQ(mdb_txn_begin(f->env, NULL, MDB_RDONLY, &t), 0);
    return t;
}

#define S(str) (str), strlen(str)

/* A path under the fixture's folder (heap). */
static char *subdir(const char *dir, const char *name)
{
    char *p = NULL;
    ASSERT(asprintf(&p, "%s/%s", dir, name) > 0);
    return p;
}

/* Opens a raw LMDB environment on dir (for writing records slotd never would). */
static MDB_env *raw_env(const char *dir)
{
    MDB_env *env = NULL;
    ASSERT_EQ(mdb_env_create(&env), 0);
    ASSERT_EQ(mdb_env_set_maxdbs(env, 16), 0);
    ASSERT_EQ(mdb_env_open(env, dir, MDB_NOSYNC, 0600), 0);
    return env;
}

static void raw_put(MDB_env *env, const char *db, const void *key, size_t klen, const void *val, size_t vlen)
{
    MDB_txn *t;
    MDB_dbi dbi;
    ASSERT_EQ(mdb_txn_begin(env, NULL, 0, &t), 0);
    ASSERT_EQ(mdb_dbi_open(t, db, db ? MDB_CREATE : 0, &dbi), 0);
    MDB_val k = {klen, (void *)key}, v = {vlen, (void *)val};
    ASSERT_EQ(mdb_put(t, dbi, &k, &v, 0), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);
}

/* Expects slot_store_open to refuse dir with a message containing `want`. */
static void expect_refused(const char *dir, const char *want)
{
    slot_store *st = (slot_store *)1;
    char err[ERRBUF] = "";
    slot_store_opts o = {.dir = dir, .nosync = true};
    int rc = slot_store_open(&o, &st, err, sizeof err);
    ASSERT_NE(rc, 0);
    ASSERT(st == NULL);
    if (!strstr(err, want))
        T_FAIL_("message \"%s\" lacks \"%s\"", err, want);
}

static void event_sample(slot_event_rec *e)
{
    memset(e, 0, sizeof *e);
    e->status = SLOT_EVENT_CLOSED;
    e->shards = 1024;
    e->max_per_request = 1000;
    e->hold_ttl_ms = 86400000;
    e->capacity = UINT64_C(1) << 40;
    e->held = 123456789;
    e->confirmed = 987654321;
    e->max_per_user = (UINT64_C(1) << 40) - 1;
    e->next_seq = UINT64_C(0x0102030405060708);
    e->created_at_ms = UINT64_C(1764500000123);
}

static void event_assert_eq(const slot_event_rec *a, const slot_event_rec *b)
{
    ASSERT_EQ(a->status, b->status);
    ASSERT_EQ(a->shards, b->shards);
    ASSERT_EQ(a->max_per_request, b->max_per_request);
    ASSERT_EQ(a->hold_ttl_ms, b->hold_ttl_ms);
    ASSERT_EQ(a->capacity, b->capacity);
    ASSERT_EQ(a->held, b->held);
    ASSERT_EQ(a->confirmed, b->confirmed);
    ASSERT_EQ(a->max_per_user, b->max_per_user);
    ASSERT_EQ(a->next_seq, b->next_seq);
    ASSERT_EQ(a->created_at_ms, b->created_at_ms);
}

/* A hold record; user and request NUL-terminated strings. */
static void hold_sample(slot_hold_rec *h, uint64_t seq, const char *user, const char *request, uint16_t qty)
{
    memset(h, 0, sizeof *h);
    h->seq = seq;
    h->tag = UINT64_C(0xfedcba9876543210) ^ seq;
    h->status = SLOT_HOLD_HELD;
    h->qty = qty;
    h->created_at_ms = 1000 + seq;
    h->expires_at_ms = 601000 + seq;
    h->user_len = (uint8_t)strlen(user);
    memcpy(h->user, user, h->user_len + 1u);
    h->request_len = (uint8_t)strlen(request);
    memcpy(h->request, request, h->request_len + 1u);
    h->nparts = 1;
    h->parts[0].shard = 0;
    h->parts[0].qty = qty;
}

static void hold_assert_eq(const slot_hold_rec *a, const slot_hold_rec *b)
{
    ASSERT_EQ(a->seq, b->seq);
    ASSERT_EQ(a->tag, b->tag);
    ASSERT_EQ(a->status, b->status);
    ASSERT_EQ(a->qty, b->qty);
    ASSERT_EQ(a->created_at_ms, b->created_at_ms);
    ASSERT_EQ(a->expires_at_ms, b->expires_at_ms);
    ASSERT_EQ(a->user_len, b->user_len);
    ASSERT_EQ(memcmp(a->user, b->user, a->user_len), 0);
    ASSERT_EQ(a->user[a->user_len], 0);
    ASSERT_EQ(a->request_len, b->request_len);
    ASSERT_EQ(memcmp(a->request, b->request, a->request_len), 0);
    ASSERT_EQ(a->request[a->request_len], 0);
    ASSERT_EQ(a->nparts, b->nparts);
    for (uint16_t i = 0; i < a->nparts; i++) {
        ASSERT_EQ(a->parts[i].shard, b->parts[i].shard);
        ASSERT_EQ(a->parts[i].qty, b->parts[i].qty);
    }
}

/* A 128-byte user of two-byte UTF-8 characters (U+00E9). */
static void max_user(char out[SLOT_USER_BYTES_MAX + 1])
{
    for (int i = 0; i < SLOT_USER_BYTES_MAX; i += 2) {
        out[i] = (char)0xc3;
        out[i + 1] = (char)0xa9;
    }
    out[SLOT_USER_BYTES_MAX] = 0;
}

/* ---- open */

TEST_IMPL(store_open_creates_folder_and_schema)
{
    char *base = slot_test_tmpdir();
    char *dir = subdir(base, "data");
    struct stat sb;
    ASSERT_NE(stat(dir, &sb), 0);
    fixture f = {.dir = dir};
    slot_store_opts o = {.dir = dir};
    fx_open_opts(&f, &o);
    ASSERT_EQ(stat(dir, &sb), 0);
    ASSERT(S_ISDIR(sb.st_mode));
    ASSERT_EQ(sb.st_mode & 0777, 0700);
    ASSERT_EQ(slot_store_map_bytes(f.st), SLOT_MAP_BYTES_INITIAL);
    ASSERT_GT(slot_store_used_bytes(f.st), 0);
    ASSERT_EQ(slot_store_sync(f.st), 0);
    slot_store_close(f.st);

    /* The schema record is there, in the meta database: magic + version 1. */
    MDB_env *env = raw_env(dir);
    MDB_txn *t;
    MDB_dbi dbi;
    ASSERT_EQ(mdb_txn_begin(env, NULL, MDB_RDONLY, &t), 0);
    static const char *const dbs[] = {"meta", "events", "shards", "holds", "expiry", "users", "waitlist"};
    for (size_t i = 0; i < sizeof dbs / sizeof dbs[0]; i++)
        ASSERT_EQ(mdb_dbi_open(t, dbs[i], 0, &dbi), 0);
    ASSERT_EQ(mdb_dbi_open(t, "meta", 0, &dbi), 0);
    MDB_val k = {6, "schema"}, v;
    ASSERT_EQ(mdb_get(t, dbi, &k, &v), 0);
    ASSERT_EQ(v.mv_size, 12);
    ASSERT_EQ(memcmp(v.mv_data, SLOT_SCHEMA_MAGIC, 8), 0);
    const uint8_t *p = (const uint8_t *)v.mv_data + 8;
    ASSERT_EQ(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3], SLOT_SCHEMA_VERSION);
    mdb_txn_abort(t);
    mdb_env_close(env);
    slot_test_rmdir(base);
    free(dir);
    free(base);
}

TEST_IMPL(store_reopen_keeps_records)
{
    fixture f;
    fx_open(&f);
    slot_event_rec e, got;
    event_sample(&e);
    MDB_txn *t = txn_w(&f);
    ASSERT_EQ(slot_store_event_put(f.st, t, S("ev1"), &e), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);
    slot_store_close(f.st);

    slot_store_opts o = {.dir = f.dir, .nosync = true};
    fx_open_opts(&f, &o);
    t = txn_r(&f);
    ASSERT_EQ(slot_store_event_get(f.st, t, S("ev1"), &got), 0);
    event_assert_eq(&got, &e);
    mdb_txn_abort(t);
    slot_store_close(f.st);

    /* Read-only (the tools' way) sees the same. */
    o.read_only = true;
    fx_open_opts(&f, &o);
    t = txn_r(&f);
    ASSERT_EQ(slot_store_event_get(f.st, t, S("ev1"), &got), 0);
    event_assert_eq(&got, &e);
    mdb_txn_abort(t);
    fx_close(&f);
}

TEST_IMPL(store_open_read_only_missing_folder_fails)
{
    char *base = slot_test_tmpdir();
    char *dir = subdir(base, "nothing-here");
    slot_store *st = (slot_store *)1;
    char err[ERRBUF] = "";
    slot_store_opts o = {.dir = dir, .read_only = true};
    ASSERT_NE(slot_store_open(&o, &st, err, sizeof err), 0);
    ASSERT(st == NULL);
    ASSERT(err[0] != 0);
    struct stat sb;
    ASSERT_NE(stat(dir, &sb), 0); /* read-only never creates */
    slot_test_rmdir(base);
    free(dir);
    free(base);
}

TEST_IMPL(store_open_missing_parent_fails)
{
    char *base = slot_test_tmpdir();
    char *dir = subdir(base, "no/such/parent");
    slot_store *st = (slot_store *)1;
    char err[ERRBUF] = "";
    slot_store_opts o = {.dir = dir};
    ASSERT_EQ(slot_store_open(&o, &st, err, sizeof err), -ENOENT);
    ASSERT(st == NULL);
    if (!strstr(err, "mkdir") || !strstr(err, dir))
        T_FAIL_("message \"%s\" should name mkdir and the folder", err);
    slot_test_rmdir(base);
    free(dir);
    free(base);
}

/* Overwrites meta["schema"] of a slotd store with raw bytes. */
static void schema_overwrite(const char *dir, const void *val, size_t len)
{
    MDB_env *env = raw_env(dir);
    raw_put(env, "meta", "schema", 6, val, len);
    mdb_env_close(env);
}

TEST_IMPL(store_open_refuses_newer_schema)
{
    fixture f;
    fx_open(&f);
    slot_store_close(f.st);
    uint8_t raw[12];
    memcpy(raw, SLOT_SCHEMA_MAGIC, 8);
    raw[8] = 0, raw[9] = 0, raw[10] = 0, raw[11] = 99;
    schema_overwrite(f.dir, raw, sizeof raw);
    expect_refused(f.dir, "newer slotd (schema 99)");
    /* A version the store can read is still fine. */
    raw[11] = 1;
    schema_overwrite(f.dir, raw, sizeof raw);
    slot_store_opts o = {.dir = f.dir, .nosync = true};
    fx_open_opts(&f, &o);
    fx_close(&f);
}

TEST_IMPL(store_open_refuses_foreign_magic)
{
    fixture f;
    fx_open(&f);
    slot_store_close(f.st);
    uint8_t raw[12] = {'O', 'T', 'H', 'E', 'R', 'D', 'B', '1', 0, 0, 0, 1};
    schema_overwrite(f.dir, raw, sizeof raw);
    expect_refused(f.dir, "bad schema magic");
    /* Right magic, wrong length. */
    schema_overwrite(f.dir, SLOT_SCHEMA_MAGIC, 8);
    expect_refused(f.dir, "bad schema magic");
    f.st = NULL;
    fx_close(&f);
}

TEST_IMPL(store_open_refuses_other_lmdb_file)
{
    char *dir = slot_test_tmpdir();
    MDB_env *env = raw_env(dir);
    raw_put(env, NULL, "foo", 3, "bar", 3);
    mdb_env_close(env);
    expect_refused(dir, "not a slotd store");

    /* Nothing was added to the foreign file. */
    env = raw_env(dir);
    MDB_txn *t;
    MDB_dbi dbi;
    MDB_stat ms;
    ASSERT_EQ(mdb_txn_begin(env, NULL, MDB_RDONLY, &t), 0);
    ASSERT_EQ(mdb_dbi_open(t, NULL, 0, &dbi), 0);
    ASSERT_EQ(mdb_stat(t, dbi, &ms), 0);
    ASSERT_EQ(ms.ms_entries, 1);
    ASSERT_EQ(mdb_dbi_open(t, "meta", 0, &dbi), MDB_NOTFOUND);
    mdb_txn_abort(t);
    mdb_env_close(env);
    slot_test_rmdir(dir);
    free(dir);
}

TEST_IMPL(store_open_refuses_other_lmdb_with_named_dbs)
{
    /* Another program's named databases, none of them ours. */
    char *dir = slot_test_tmpdir();
    MDB_env *env = raw_env(dir);
    raw_put(env, "accounts", "k", 1, "v", 1);
    mdb_env_close(env);
    expect_refused(dir, "not a slotd store");
    slot_test_rmdir(dir);
    free(dir);

    /* A plain key named like one of our databases. */
    dir = slot_test_tmpdir();
    env = raw_env(dir);
    raw_put(env, NULL, "meta", 4, "plain", 5);
    mdb_env_close(env);
    expect_refused(dir, "not a slotd store");
    slot_test_rmdir(dir);
    free(dir);
}

TEST_IMPL(store_open_refuses_non_lmdb_file)
{
    char *dir = slot_test_tmpdir();
    char *file = subdir(dir, "data.mdb");
    FILE *fp = fopen(file, "w");
    ASSERT(fp != NULL);
    for (int i = 0; i < 4096; i++)
        fputc('x', fp);
    fclose(fp);
    slot_store *st = (slot_store *)1;
    char err[ERRBUF] = "";
    slot_store_opts o = {.dir = dir, .nosync = true};
    ASSERT_NE(slot_store_open(&o, &st, err, sizeof err), 0);
    ASSERT(st == NULL);
    ASSERT(err[0] != 0);
    slot_test_rmdir(dir);
    free(file);
    free(dir);
}

/* ---- record round trips */

TEST_IMPL(store_event_roundtrip)
{
    fixture f;
    fx_open(&f);
    char ev[SLOT_EVENT_BYTES_MAX + 1];
    memset(ev, 'e', SLOT_EVENT_BYTES_MAX);
    ev[SLOT_EVENT_BYTES_MAX] = 0;
    slot_event_rec e, got;
    event_sample(&e);
    MDB_txn *t = txn_w(&f);
    ASSERT_EQ(slot_store_event_get(f.st, t, S(ev), &got), MDB_NOTFOUND);
    ASSERT_EQ(slot_store_event_put(f.st, t, S(ev), &e), 0);
    ASSERT_EQ(slot_store_event_get(f.st, t, S(ev), &got), 0);
    event_assert_eq(&got, &e);
    e.status = SLOT_EVENT_ON_SALE;
    e.held = 0;
    ASSERT_EQ(slot_store_event_put(f.st, t, S(ev), &e), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);
    t = txn_r(&f);
    memset(&got, 0xff, sizeof got);
    ASSERT_EQ(slot_store_event_get(f.st, t, S(ev), &got), 0);
    event_assert_eq(&got, &e);
    /* A name that differs only in length is another event. */
    ASSERT_EQ(slot_store_event_get(f.st, t, ev, SLOT_EVENT_BYTES_MAX - 1, &got), MDB_NOTFOUND);
    mdb_txn_abort(t);
    fx_close(&f);
}

TEST_IMPL(store_shard_roundtrip)
{
    fixture f;
    fx_open(&f);
    MDB_txn *t = txn_w(&f);
    uint64_t v = 7;
    ASSERT_EQ(slot_store_shard_get(f.st, t, S("ev"), 0, &v), MDB_NOTFOUND);
    for (uint16_t s = 0; s < 300; s++)
        ASSERT_EQ(slot_store_shard_put(f.st, t, S("ev"), s, (uint64_t)s * 1000003u), 0);
    ASSERT_EQ(slot_store_shard_put(f.st, t, S("ev"), 1023, UINT64_MAX), 0);
    ASSERT_EQ(slot_store_shard_put(f.st, t, S("ev2"), 0, 5), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);
    t = txn_w(&f);
    for (uint16_t s = 0; s < 300; s++) {
        ASSERT_EQ(slot_store_shard_get(f.st, t, S("ev"), s, &v), 0);
        ASSERT_EQ(v, (uint64_t)s * 1000003u);
    }
    ASSERT_EQ(slot_store_shard_get(f.st, t, S("ev"), 1023, &v), 0);
    ASSERT(v == UINT64_MAX);
    uint32_t n = 0;
    ASSERT_EQ(slot_store_shards_count(f.st, t, S("ev"), &n), 0);
    ASSERT_EQ(n, 301);
    ASSERT_EQ(slot_store_shards_count(f.st, t, S("ev2"), &n), 0);
    ASSERT_EQ(n, 1);
    ASSERT_EQ(slot_store_shards_count(f.st, t, S("none"), &n), 0);
    ASSERT_EQ(n, 0);
    ASSERT_EQ(slot_store_shard_del(f.st, t, S("ev"), 1023), 0);
    ASSERT_EQ(slot_store_shard_del(f.st, t, S("ev"), 1023), MDB_NOTFOUND);
    ASSERT_EQ(slot_store_shard_get(f.st, t, S("ev"), 1023, &v), MDB_NOTFOUND);
    ASSERT_EQ(slot_store_shards_count(f.st, t, S("ev"), &n), 0);
    ASSERT_EQ(n, 300);
    ASSERT_EQ(mdb_txn_commit(t), 0);
    fx_close(&f);
}

TEST_IMPL(store_hold_roundtrip_many_parts_max_user)
{
    fixture f;
    fx_open(&f);
    char user[SLOT_USER_BYTES_MAX + 1];
    max_user(user);
    char req[SLOT_REQUEST_BYTES_MAX + 1];
    memset(req, 'r', SLOT_REQUEST_BYTES_MAX);
    req[SLOT_REQUEST_BYTES_MAX] = 0;

    slot_hold_rec h, got;
    hold_sample(&h, UINT64_C(0x1122334455667788), user, req, SLOT_PARTS_MAX);
    h.status = SLOT_HOLD_CONFIRMED;
    h.nparts = SLOT_PARTS_MAX;
    for (uint16_t i = 0; i < h.nparts; i++) {
        h.parts[i].shard = (uint16_t)(1023 - i);
        h.parts[i].qty = 1;
    }
    slot_hold_rec small;
    hold_sample(&small, 1, "u", "r", 3);
    small.status = SLOT_HOLD_CANCELLED;

    MDB_txn *t = txn_w(&f);
    ASSERT_EQ(slot_store_hold_get(f.st, t, S("ev"), h.seq, &got), MDB_NOTFOUND);
    ASSERT_EQ(slot_store_hold_put(f.st, t, S("ev"), &h), 0);
    ASSERT_EQ(slot_store_hold_put(f.st, t, S("ev"), &small), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);

    t = txn_r(&f);
    memset(&got, 0x55, sizeof got);
    ASSERT_EQ(slot_store_hold_get(f.st, t, S("ev"), h.seq, &got), 0);
    hold_assert_eq(&got, &h);
    ASSERT_EQ(got.user_len, SLOT_USER_BYTES_MAX);
    memset(&got, 0x55, sizeof got);
    ASSERT_EQ(slot_store_hold_get(f.st, t, S("ev"), 1, &got), 0);
    hold_assert_eq(&got, &small);
    ASSERT_EQ(slot_store_hold_get(f.st, t, S("ev"), 2, &got), MDB_NOTFOUND);
    ASSERT_EQ(slot_store_hold_get(f.st, t, S("ev2"), 1, &got), MDB_NOTFOUND);
    mdb_txn_abort(t);

    /* Every status survives the round trip. */
    t = txn_w(&f);
    for (int s = 0; s < SLOT_HOLD__COUNT; s++) {
        small.status = (slot_hold_status)s;
        ASSERT_EQ(slot_store_hold_put(f.st, t, S("ev"), &small), 0);
        ASSERT_EQ(slot_store_hold_get(f.st, t, S("ev"), 1, &got), 0);
        ASSERT_EQ(got.status, s);
    }
    /* More parts than a hold can have is refused, not truncated. */
    h.nparts = SLOT_PARTS_MAX + 1;
    ASSERT_NE(slot_store_hold_put(f.st, t, S("ev"), &h), 0);
    mdb_txn_abort(t);
    fx_close(&f);
}

TEST_IMPL(store_expiry_roundtrip)
{
    fixture f;
    fx_open(&f);
    MDB_txn *t = txn_w(&f);
    ASSERT_EQ(slot_store_expiry_has(f.st, t, 100, S("ev"), 1), MDB_NOTFOUND);
    ASSERT_EQ(slot_store_expiry_put(f.st, t, 100, S("ev"), 1), 0);
    ASSERT_EQ(slot_store_expiry_has(f.st, t, 100, S("ev"), 1), 0);
    ASSERT_EQ(slot_store_expiry_has(f.st, t, 101, S("ev"), 1), MDB_NOTFOUND);
    ASSERT_EQ(slot_store_expiry_has(f.st, t, 100, S("ev"), 2), MDB_NOTFOUND);
    ASSERT_EQ(slot_store_expiry_has(f.st, t, 100, S("ev2"), 1), MDB_NOTFOUND);
    ASSERT_EQ(mdb_txn_commit(t), 0);
    t = txn_w(&f);
    ASSERT_EQ(slot_store_expiry_has(f.st, t, 100, S("ev"), 1), 0);
    ASSERT_EQ(slot_store_expiry_del(f.st, t, 100, S("ev"), 1), 0);
    ASSERT_EQ(slot_store_expiry_has(f.st, t, 100, S("ev"), 1), MDB_NOTFOUND);
    ASSERT_EQ(slot_store_expiry_del(f.st, t, 100, S("ev"), 1), MDB_NOTFOUND);
    ASSERT_EQ(mdb_txn_commit(t), 0);
    fx_close(&f);
}

TEST_IMPL(store_user_roundtrip_zero_deletes)
{
    fixture f;
    fx_open(&f);
    char user[SLOT_USER_BYTES_MAX + 1];
    max_user(user);
    MDB_txn *t = txn_w(&f);
    uint64_t q = 99;
    ASSERT_EQ(slot_store_user_get(f.st, t, S("ev"), S(user), &q), 0); /* missing reads as 0 */
    ASSERT_EQ(q, 0);
    ASSERT_EQ(slot_store_user_put(f.st, t, S("ev"), S(user), SLOT_CAPACITY_MAX), 0);
    ASSERT_EQ(slot_store_user_put(f.st, t, S("ev"), S("bob"), 3), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);

    t = txn_w(&f);
    ASSERT_EQ(slot_store_user_get(f.st, t, S("ev"), S(user), &q), 0);
    ASSERT_EQ(q, SLOT_CAPACITY_MAX);
    ASSERT_EQ(slot_store_user_get(f.st, t, S("ev"), S("bob"), &q), 0);
    ASSERT_EQ(q, 3);
    ASSERT_EQ(slot_store_user_put(f.st, t, S("ev"), S("bob"), 0), 0);
    ASSERT_EQ(slot_store_user_put(f.st, t, S("ev"), S("bob"), 0), 0); /* deleting a missing one is fine */
    ASSERT_EQ(slot_store_user_put(f.st, t, S("ev"), S("nobody"), 0), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);

    /* The zero was a delete: the record is gone from the scan, not stored as 0. */
    t = txn_r(&f);
    MDB_dbi dbi;
    MDB_stat ms;
    ASSERT_EQ(mdb_dbi_open(t, "users", 0, &dbi), 0);
    ASSERT_EQ(mdb_stat(t, dbi, &ms), 0);
    ASSERT_EQ(ms.ms_entries, 1);
    ASSERT_EQ(slot_store_user_get(f.st, t, S("ev"), S("bob"), &q), 0);
    ASSERT_EQ(q, 0);
    mdb_txn_abort(t);
    fx_close(&f);
}

/* ---- scans */

typedef struct seen {
    int n;
    char names[16][SLOT_EVENT_BYTES_MAX + 1];
    uint64_t nums[64];
    int stop_after; /* 0: never */
} seen;

static int event_cb(void *p, const char *ev, size_t ev_len, const slot_event_rec *rec)
{
    seen *s = p;
    ASSERT_LT(s->n, 16);
    memcpy(s->names[s->n], ev, ev_len);
    s->names[s->n][ev_len] = 0;
    s->nums[s->n] = rec->capacity;
    s->n++;
    return s->stop_after && s->n == s->stop_after ? 42 : 0;
}

TEST_IMPL(store_events_scan_key_order)
{
    fixture f;
    fx_open(&f);
    /* Keys are length byte + name, so the order is by length, then bytes. */
    static const char *const put_order[] = {"zz", "b", "ab", "a", "abc"};
    static const char *const want[] = {"a", "b", "ab", "zz", "abc"};
    MDB_txn *t = txn_w(&f);
    for (int i = 0; i < 5; i++) {
        slot_event_rec e;
        event_sample(&e);
        e.capacity = strlen(put_order[i]) * 100 + (uint64_t)put_order[i][0];
        ASSERT_EQ(slot_store_event_put(f.st, t, S(put_order[i]), &e), 0);
    }
    ASSERT_EQ(mdb_txn_commit(t), 0);
    t = txn_r(&f);
    seen s = {0};
    ASSERT_EQ(slot_store_events_scan(f.st, t, event_cb, &s), 0);
    ASSERT_EQ(s.n, 5);
    for (int i = 0; i < 5; i++) {
        ASSERT_STR_EQ(s.names[i], want[i]);
        ASSERT_EQ(s.nums[i], strlen(want[i]) * 100 + (uint64_t)want[i][0]);
    }
    /* A callback's non-zero value stops the scan and is returned. */
    seen s2 = {.stop_after = 2};
    ASSERT_EQ(slot_store_events_scan(f.st, t, event_cb, &s2), 42);
    ASSERT_EQ(s2.n, 2);
    mdb_txn_abort(t);
    fx_close(&f);
}

static int hold_cb(void *p, const slot_hold_rec *h)
{
    seen *s = p;
    ASSERT_LT(s->n, 64);
    s->nums[s->n++] = h->seq;
    ASSERT_EQ(h->user[h->user_len], 0);
    return s->stop_after && s->n == s->stop_after ? 7 : 0;
}

static int user_cb(void *p, const char *user, size_t user_len, uint64_t qty)
{
    seen *s = p;
    ASSERT_LT(s->n, 16);
    memcpy(s->names[s->n], user, user_len);
    s->names[s->n][user_len] = 0;
    s->nums[s->n] = qty;
    s->n++;
    return 0;
}

TEST_IMPL(store_holds_scan_one_event_only)
{
    fixture f;
    fx_open(&f);
    MDB_txn *t = txn_w(&f);
    /* "a" is a prefix of "ab" and "a" + seq bytes could look like "ab"'s key
     * if names were not length-prefixed: seq 0x62... starts with 'b'. */
    static const uint64_t seq_a[] = {3, 1, UINT64_C(0x6200000000000001), 2};
    for (int i = 0; i < 4; i++) {
        slot_hold_rec h;
        hold_sample(&h, seq_a[i], "ua", "r", 1);
        ASSERT_EQ(slot_store_hold_put(f.st, t, S("a"), &h), 0);
    }
    for (uint64_t q = 1; q <= 3; q++) {
        slot_hold_rec h;
        hold_sample(&h, 100 + q, "uab", "r", 1);
        ASSERT_EQ(slot_store_hold_put(f.st, t, S("ab"), &h), 0);
        hold_sample(&h, 200 + q, "u", "r", 1);
        ASSERT_EQ(slot_store_hold_put(f.st, t, S("b"), &h), 0);
    }
    ASSERT_EQ(slot_store_user_put(f.st, t, S("a"), S("x"), 1), 0);
    ASSERT_EQ(slot_store_user_put(f.st, t, S("a"), S("bx"), 2), 0);
    ASSERT_EQ(slot_store_user_put(f.st, t, S("ab"), S("x"), 3), 0);
    ASSERT_EQ(slot_store_user_put(f.st, t, S("b"), S("y"), 4), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);

    t = txn_r(&f);
    seen s = {0};
    ASSERT_EQ(slot_store_holds_scan(f.st, t, S("a"), hold_cb, &s), 0);
    ASSERT_EQ(s.n, 4);
    ASSERT_EQ(s.nums[0], 1); /* sequence order */
    ASSERT_EQ(s.nums[1], 2);
    ASSERT_EQ(s.nums[2], 3);
    ASSERT(s.nums[3] == UINT64_C(0x6200000000000001));
    s = (seen){0};
    ASSERT_EQ(slot_store_holds_scan(f.st, t, S("ab"), hold_cb, &s), 0);
    ASSERT_EQ(s.n, 3);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(s.nums[i], 101 + i);
    s = (seen){0};
    ASSERT_EQ(slot_store_holds_scan(f.st, t, S("b"), hold_cb, &s), 0);
    ASSERT_EQ(s.n, 3);
    ASSERT_EQ(s.nums[0], 201);
    s = (seen){0};
    ASSERT_EQ(slot_store_holds_scan(f.st, t, S("abc"), hold_cb, &s), 0);
    ASSERT_EQ(s.n, 0);
    s = (seen){.stop_after = 1};
    ASSERT_EQ(slot_store_holds_scan(f.st, t, S("a"), hold_cb, &s), 7);
    ASSERT_EQ(s.n, 1);

    s = (seen){0};
    ASSERT_EQ(slot_store_users_scan(f.st, t, S("a"), user_cb, &s), 0);
    ASSERT_EQ(s.n, 2);
    ASSERT_STR_EQ(s.names[0], "x"); /* length-prefixed: "x" before "bx" */
    ASSERT_EQ(s.nums[0], 1);
    ASSERT_STR_EQ(s.names[1], "bx");
    ASSERT_EQ(s.nums[1], 2);
    s = (seen){0};
    ASSERT_EQ(slot_store_users_scan(f.st, t, S("ab"), user_cb, &s), 0);
    ASSERT_EQ(s.n, 1);
    ASSERT_STR_EQ(s.names[0], "x");
    ASSERT_EQ(s.nums[0], 3);
    mdb_txn_abort(t);
    fx_close(&f);
}

typedef struct exp_seen {
    int n;
    uint64_t at[16], seq[16];
    char ev[16][SLOT_EVENT_BYTES_MAX + 1];
} exp_seen;

static int expiry_cb(void *p, uint64_t at, const char *ev, size_t ev_len, uint64_t seq)
{
    exp_seen *s = p;
    ASSERT_LT(s->n, 16);
    s->at[s->n] = at;
    s->seq[s->n] = seq;
    memcpy(s->ev[s->n], ev, ev_len);
    s->ev[s->n][ev_len] = 0;
    s->n++;
    return 0;
}

TEST_IMPL(store_expiry_scan_bound)
{
    fixture f;
    fx_open(&f);
    MDB_txn *t = txn_w(&f);
    ASSERT_EQ(slot_store_expiry_put(f.st, t, 300, S("b"), 1), 0);
    ASSERT_EQ(slot_store_expiry_put(f.st, t, 100, S("a"), 5), 0);
    ASSERT_EQ(slot_store_expiry_put(f.st, t, 200, S("ab"), 2), 0);
    ASSERT_EQ(slot_store_expiry_put(f.st, t, 200, S("a"), 9), 0);
    ASSERT_EQ(slot_store_expiry_put(f.st, t, UINT64_C(1) << 56, S("z"), 1), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);

    t = txn_r(&f);
    exp_seen s = {0};
    ASSERT_EQ(slot_store_expiry_scan(f.st, t, 99, expiry_cb, &s), 0);
    ASSERT_EQ(s.n, 0);
    s = (exp_seen){0};
    ASSERT_EQ(slot_store_expiry_scan(f.st, t, 100, expiry_cb, &s), 0); /* bound is inclusive */
    ASSERT_EQ(s.n, 1);
    ASSERT_EQ(s.at[0], 100);
    ASSERT_STR_EQ(s.ev[0], "a");
    ASSERT_EQ(s.seq[0], 5);
    s = (exp_seen){0};
    ASSERT_EQ(slot_store_expiry_scan(f.st, t, 299, expiry_cb, &s), 0);
    ASSERT_EQ(s.n, 3);
    ASSERT_EQ(s.at[1], 200);
    ASSERT_STR_EQ(s.ev[1], "a");
    ASSERT_EQ(s.seq[1], 9);
    ASSERT_EQ(s.at[2], 200);
    ASSERT_STR_EQ(s.ev[2], "ab");
    ASSERT_EQ(s.seq[2], 2);
    s = (exp_seen){0};
    ASSERT_EQ(slot_store_expiry_scan(f.st, t, UINT64_MAX, expiry_cb, &s), 0);
    ASSERT_EQ(s.n, 5);
    ASSERT_EQ(s.at[3], 300);
    ASSERT(s.at[4] == UINT64_C(1) << 56);
    mdb_txn_abort(t);
    fx_close(&f);
}

/* expiry_first: none, then the earliest time whatever the insertion order. */
TEST_IMPL(store_expiry_first)
{
    fixture f;
    fx_open(&f);
    MDB_txn *t = txn_w(&f);
    uint64_t at = 7;
    ASSERT_EQ(slot_store_expiry_first(f.st, t, &at), MDB_NOTFOUND);
    ASSERT_EQ(at, 7); /* untouched */
    ASSERT_EQ(slot_store_expiry_put(f.st, t, UINT64_C(1) << 40, S("b"), 1), 0);
    ASSERT_EQ(slot_store_expiry_first(f.st, t, &at), 0);
    ASSERT(at == UINT64_C(1) << 40);
    ASSERT_EQ(slot_store_expiry_put(f.st, t, 300, S("z"), 9), 0);
    ASSERT_EQ(slot_store_expiry_put(f.st, t, 301, S("a"), 1), 0);
    ASSERT_EQ(slot_store_expiry_first(f.st, t, &at), 0);
    ASSERT_EQ(at, 300);
    ASSERT_EQ(slot_store_expiry_del(f.st, t, 300, S("z"), 9), 0);
    ASSERT_EQ(slot_store_expiry_first(f.st, t, &at), 0);
    ASSERT_EQ(at, 301);
    mdb_txn_abort(t);
    fx_close(&f);
}

/* ---- map growth */

/* Puts big hold records (4 KiB of parts each, overflow pages) from seq
 * `from` on until MDB_MAP_FULL or `count` puts. Returns the puts made. */
static uint64_t fill(fixture *f, MDB_txn *t, uint64_t from, uint64_t count, int *rc_out)
{
    static slot_hold_rec h;
    hold_sample(&h, 0, "filler", "r", SLOT_PARTS_MAX);
    h.nparts = SLOT_PARTS_MAX;
    for (uint16_t i = 0; i < h.nparts; i++) {
        h.parts[i].shard = i;
        h.parts[i].qty = 1;
    }
    uint64_t n = 0;
    int rc = 0;
    for (; n < count; n++) {
        h.seq = from + n;
        rc = slot_store_hold_put(f->st, t, S("big"), &h);
        if (rc != 0)
            break;
    }
    *rc_out = rc;
    return n;
}

TEST_IMPL(store_map_grows_once_then_full)
{
    fixture f = {.dir = slot_test_tmpdir()};
    slot_store_opts o = {.dir = f.dir, .nosync = true, .map_bytes_max = 2 * SLOT_MAP_BYTES_INITIAL};
    fx_open_opts(&f, &o);
    ASSERT_EQ(slot_store_map_bytes(f.st), SLOT_MAP_BYTES_INITIAL);

    /* Fill the initial map: one txn until MDB_MAP_FULL, then abort. */
    int rc;
    MDB_txn *t = txn_w(&f);
    uint64_t n1 = fill(&f, t, 1, UINT64_MAX, &rc);
    ASSERT_EQ(rc, MDB_MAP_FULL);
    ASSERT_GT(n1, 1000);
    mdb_txn_abort(t);

    /* Grow (one doubling) and retry the same work: it fits now. */
    ASSERT_EQ(slot_store_grow(f.st), 0);
    ASSERT_EQ(slot_store_map_bytes(f.st), 2 * SLOT_MAP_BYTES_INITIAL);
    t = txn_w(&f);
    ASSERT_EQ(fill(&f, t, 1, n1 + 1, &rc), n1 + 1);
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);
    ASSERT_GT(slot_store_used_bytes(f.st), SLOT_MAP_BYTES_INITIAL / 2);

    /* Fill the rest; at map_bytes_max growth is refused. */
    t = txn_w(&f);
    fill(&f, t, n1 + 2, UINT64_MAX, &rc);
    ASSERT_EQ(rc, MDB_MAP_FULL);
    mdb_txn_abort(t);
    ASSERT_EQ(slot_store_grow(f.st), MDB_MAP_FULL);
    ASSERT_EQ(slot_store_map_bytes(f.st), 2 * SLOT_MAP_BYTES_INITIAL);

    /* What was committed is all there, and a reopen keeps the grown map. */
    slot_store_close(f.st);
    fx_open_opts(&f, &o);
    ASSERT_EQ(slot_store_map_bytes(f.st), 2 * SLOT_MAP_BYTES_INITIAL);
    t = txn_r(&f);
    slot_hold_rec got;
    ASSERT_EQ(slot_store_hold_get(f.st, t, S("big"), n1 + 1, &got), 0);
    ASSERT_EQ(got.nparts, SLOT_PARTS_MAX);
    ASSERT_EQ(slot_store_hold_get(f.st, t, S("big"), n1 + 2, &got), MDB_NOTFOUND);
    mdb_txn_abort(t);
    fx_close(&f);
}

TEST_IMPL(store_map_growth_refused_at_max)
{
    fixture f = {.dir = slot_test_tmpdir()};
    slot_store_opts o = {.dir = f.dir, .nosync = true, .map_bytes_max = SLOT_MAP_BYTES_INITIAL};
    fx_open_opts(&f, &o);
    int rc;
    MDB_txn *t = txn_w(&f);
    fill(&f, t, 1, UINT64_MAX, &rc);
    ASSERT_EQ(rc, MDB_MAP_FULL);
    mdb_txn_abort(t);
    ASSERT_EQ(slot_store_grow(f.st), MDB_MAP_FULL);
    ASSERT_EQ(slot_store_map_bytes(f.st), SLOT_MAP_BYTES_INITIAL);
    /* The store is still usable after the aborted txn. */
    t = txn_w(&f);
    ASSERT_EQ(slot_store_shard_put(f.st, t, S("ev"), 0, 1), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);
    fx_close(&f);
}

TEST_IMPL(store_map_grow_doubles_then_caps)
{
    /* 64 MiB -> 128 MiB (doubling) -> 192 MiB (the bound) -> MDB_MAP_FULL. */
    fixture f = {.dir = slot_test_tmpdir()};
    slot_store_opts o = {.dir = f.dir, .nosync = true, .map_bytes_max = 3 * SLOT_MAP_BYTES_INITIAL};
    fx_open_opts(&f, &o);
    ASSERT_EQ(slot_store_grow(f.st), 0);
    ASSERT_EQ(slot_store_map_bytes(f.st), 2 * SLOT_MAP_BYTES_INITIAL);
    ASSERT_EQ(slot_store_grow(f.st), 0);
    ASSERT_EQ(slot_store_map_bytes(f.st), 3 * SLOT_MAP_BYTES_INITIAL);
    ASSERT_EQ(slot_store_grow(f.st), MDB_MAP_FULL);
    ASSERT_EQ(slot_store_map_bytes(f.st), 3 * SLOT_MAP_BYTES_INITIAL);
    MDB_envinfo info;
    ASSERT_EQ(mdb_env_info(f.env, &info), 0);
    ASSERT_EQ(info.me_mapsize, 3 * SLOT_MAP_BYTES_INITIAL);
    /* Writes still work on the grown map. */
    MDB_txn *t = txn_w(&f);
    ASSERT_EQ(slot_store_shard_put(f.st, t, S("ev"), 0, 1), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);
    fx_close(&f);
}

TEST_IMPL(store_map_max_below_initial)
{
    /* A bound below the initial map caps the map at the bound. */
    fixture f = {.dir = slot_test_tmpdir()};
    slot_store_opts o = {.dir = f.dir, .nosync = true, .map_bytes_max = 8ull << 20};
    fx_open_opts(&f, &o);
    ASSERT_EQ(slot_store_map_bytes(f.st), 8ull << 20);
    ASSERT_EQ(slot_store_grow(f.st), MDB_MAP_FULL);
    int rc;
    MDB_txn *t = txn_w(&f);
    uint64_t n = fill(&f, t, 1, UINT64_MAX, &rc);
    ASSERT_EQ(rc, MDB_MAP_FULL);
    ASSERT_LT(n, 2048); /* 8 MiB of 8 KiB records */
    mdb_txn_abort(t);
    fx_close(&f);
}

TEST_IMPL(store_state_names)
{
    ASSERT_STR_EQ(slot_hold_status_name(SLOT_HOLD_HELD), "held");
    ASSERT_STR_EQ(slot_hold_status_name(SLOT_HOLD_CONFIRMED), "confirmed");
    ASSERT_STR_EQ(slot_hold_status_name(SLOT_HOLD_RELEASED), "released");
    ASSERT_STR_EQ(slot_hold_status_name(SLOT_HOLD_EXPIRED), "expired");
    ASSERT_STR_EQ(slot_hold_status_name(SLOT_HOLD_CANCELLED), "cancelled");
    ASSERT_STR_EQ(slot_hold_status_name(SLOT_HOLD__COUNT), "?");
    ASSERT_STR_EQ(slot_event_status_name(SLOT_EVENT_ON_SALE), "on_sale");
    ASSERT_STR_EQ(slot_event_status_name(SLOT_EVENT_CLOSED), "closed");
    /* The state machine's edges, all 25 pairs. */
    for (int from = 0; from < SLOT_HOLD__COUNT; from++)
        for (int to = 0; to < SLOT_HOLD__COUNT; to++) {
            bool want = (from == SLOT_HOLD_HELD && to != SLOT_HOLD_HELD) ||
                        (from == SLOT_HOLD_CONFIRMED && to == SLOT_HOLD_CANCELLED);
            ASSERT_EQ(slot_hold_transition_ok((slot_hold_status)from, (slot_hold_status)to), want);
        }
}

/* hold_add appends when the key is the database's last and falls back to an
 * ordinary put otherwise (another event's holds sort after, or the key is
 * already there): every record reads back either way. */
TEST_IMPL(store_hold_add_in_and_out_of_order)
{
    fixture f;
    fx_open(&f);
    slot_hold_rec h, got;
    MDB_txn *t = txn_w(&f);
    for (uint64_t seq = 1; seq <= 300; seq++) {
        hold_sample(&h, seq, "u", "r", 1);
        ASSERT_EQ(slot_store_hold_add(f.st, t, S("b"), &h), 0);
    }
    for (uint64_t seq = 1; seq <= 300; seq++) { /* "a" sorts before "b": not appends */
        hold_sample(&h, seq, "v", "q", 2);
        ASSERT_EQ(slot_store_hold_add(f.st, t, S("a"), &h), 0);
    }
    hold_sample(&h, 150, "w", "x", 3); /* an existing key: replaced */
    ASSERT_EQ(slot_store_hold_add(f.st, t, S("b"), &h), 0);
    ASSERT_EQ(slot_store_expiry_put(f.st, t, 2000, S("b"), 1), 0);
    ASSERT_EQ(slot_store_expiry_put(f.st, t, 1000, S("b"), 2), 0); /* earlier: not an append */
    ASSERT_EQ(mdb_txn_commit(t), 0);
    t = txn_r(&f);
    for (uint64_t seq = 1; seq <= 300; seq++) {
        ASSERT_EQ(slot_store_hold_get(f.st, t, S("b"), seq, &got), 0);
        ASSERT_EQ(got.qty, seq == 150 ? 3 : 1);
        ASSERT_EQ(slot_store_hold_get(f.st, t, S("a"), seq, &got), 0);
        ASSERT_EQ(got.qty, 2);
    }
    ASSERT_EQ(slot_store_expiry_has(f.st, t, 1000, S("b"), 2), 0);
    ASSERT_EQ(slot_store_expiry_has(f.st, t, 2000, S("b"), 1), 0);
    mdb_txn_abort(t);
    fx_close(&f);
}
