/*
 * store_place.c — an event's placement record and its keys as one unit, for
 * moves between replica sets (slot/store.h, "Placement"; docs/design.md,
 * "Moving an event"):
 *
 *   waitlist  name(E) + 'p'   u8 version (1), u8 state, u64 gen, name(peer)
 *
 * and the walk over every key of E in the databases that hold them by the
 * event's name (events, shards, holds, users, waitlist; not the expiry
 * index, which is ordered by time, and not E's placement record), in that
 * order and in key order: place_export's chunks, place_stage's records,
 * place_purge's deletes. The commit thread (writes) or a read transaction's
 * thread.
 */
#include <errno.h>

#include "store_int.h"

#define PLACE_TAG 'p'
#define PLACE_REC_VERSION 1
#define PLACE_DEL 0xFFFFFFFFu /* a record's vlen: delete the key */

static const int place_dbs[] = {DB_EVENTS, DB_SHARDS, DB_HOLDS, DB_USERS, DB_WAITLIST};
enum { PLACE_NDBS = sizeof(place_dbs) / sizeof(place_dbs[0]) };

static void place_key(key *k, const char *ev, size_t ev_len)
{
    key_event(k, ev, ev_len);
    put_u8(&k->b, PLACE_TAG);
}

int slot_store_place_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_place_rec *out)
{
    key k;
    place_key(&k, ev, ev_len);
    MDB_val kv = key_val(&k), v;
    memset(out, 0, sizeof(*out));
    int rc = mdb_get(txn, st->dbi[DB_WAITLIST], &kv, &v);
    if (rc != 0)
        return rc;
    buf b = {.p = v.mv_data, .cap = v.mv_size};
    if (get_u8(&b) != PLACE_REC_VERSION)
        return MDB_CORRUPTED;
    out->state = get_u8(&b);
    out->gen = get_be(&b, 8);
    out->peer_len = (uint8_t)get_name(&b, out->peer, sizeof out->peer);
    if (b.bad || b.len != b.cap || out->state < SLOT_PLACE_OWNED || out->state > SLOT_PLACE_ABORTED)
        return MDB_CORRUPTED;
    return 0;
}

int slot_store_place_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_place_rec *rec)
{
    SLOT_ASSERT(rec->state >= SLOT_PLACE_OWNED && rec->state <= SLOT_PLACE_ABORTED);
    SLOT_ASSERT(rec->peer_len <= SLOT_CLUSTER_NAME_BYTES_MAX);
    key k;
    place_key(&k, ev, ev_len);
    uint8_t raw[2 + 8 + 1 + SLOT_CLUSTER_NAME_BYTES_MAX];
    buf b = {.p = raw, .cap = sizeof raw};
    put_u8(&b, PLACE_REC_VERSION);
    put_u8(&b, rec->state);
    put_be(&b, rec->gen, 8);
    put_name(&b, rec->peer, rec->peer_len);
    SLOT_ASSERT(!b.bad);
    MDB_val kv = key_val(&k), v = {b.len, raw};
    return store_put(st, txn, DB_WAITLIST, &kv, &v, 0);
}

/* Whether key kv of database db is one of E's keys that move (not its record). */
static bool key_of(int db, const MDB_val *kv, const key *prefix, const key *rec)
{
    if (db == DB_EVENTS)
        return kv->mv_size == prefix->b.len && memcmp(kv->mv_data, prefix->raw, prefix->b.len) == 0;
    if (kv->mv_size < prefix->b.len || memcmp(kv->mv_data, prefix->raw, prefix->b.len) != 0)
        return false;
    return !(db == DB_WAITLIST && kv->mv_size == rec->b.len && memcmp(kv->mv_data, rec->raw, rec->b.len) == 0);
}

static int db_index(int db)
{
    for (int i = 0; i < PLACE_NDBS; i++)
        if (place_dbs[i] == db)
            return i;
    return -1;
}

/* The walk: fn(ctx, db, key, value) for each of E's keys from (db, after)
 * on (after NULL: the database's first key of E; a key equal to after is
 * skipped). fn returns 0 to go on, 1 to stop (returned), else an error. */
typedef int (*walk_fn)(void *ctx, int db, const MDB_val *k, const MDB_val *v);

static int walk(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, int from_db, const MDB_val *after,
                walk_fn fn, void *ctx)
{
    key prefix, rec;
    key_event(&prefix, ev, ev_len);
    place_key(&rec, ev, ev_len);
    int start = from_db < 0 ? 0 : db_index(from_db);
    if (start < 0)
        return EINVAL;
    for (int i = start; i < PLACE_NDBS; i++) {
        int db = place_dbs[i];
        MDB_cursor *cur;
        int rc = mdb_cursor_open(txn, st->dbi[db], &cur);
        if (rc != 0)
            return rc;
        MDB_val k = (i == start && after) ? *after : key_val(&prefix), v;
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        if (rc == 0 && i == start && after && k.mv_size == after->mv_size &&
            memcmp(k.mv_data, after->mv_data, k.mv_size) == 0)
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        while (rc == 0) {
            if (k.mv_size < prefix.b.len || memcmp(k.mv_data, prefix.raw, prefix.b.len) != 0)
                break; /* past E's keys in this database */
            if (key_of(db, &k, &prefix, &rec)) {
                rc = fn(ctx, db, &k, &v);
                if (rc != 0)
                    break;
            }
            if (db == DB_EVENTS)
                break; /* one key */
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        }
        mdb_cursor_close(cur);
        if (rc == MDB_NOTFOUND)
            rc = 0;
        if (rc != 0)
            return rc;
    }
    return 0;
}

typedef struct export_ctx {
    uint8_t *out;
    size_t cap, used;
    uint32_t count;
    int last_db;
    uint8_t last_key[KEY_BYTES_MAX];
    size_t last_len;
    bool full;
} export_ctx;

static int export_one(void *ctx, int db, const MDB_val *k, const MDB_val *v)
{
    export_ctx *x = ctx;
    size_t need = 1 + 2 + k->mv_size + 4 + v->mv_size;
    if (k->mv_size > SLOT_WSET_KEY_BYTES_MAX || v->mv_size >= PLACE_DEL)
        return MDB_CORRUPTED;
    if (x->used + need > x->cap) {
        x->full = true;
        return x->count ? 1 : ENOSPC; /* one record larger than a chunk: never in this store */
    }
    buf b = {.p = x->out + x->used, .cap = need};
    put_u8(&b, (uint8_t)db);
    put_be(&b, k->mv_size, 2);
    memcpy(b.p + b.len, k->mv_data, k->mv_size);
    b.len += k->mv_size;
    put_be(&b, v->mv_size, 4);
    memcpy(b.p + b.len, v->mv_data, v->mv_size);
    b.len += v->mv_size;
    SLOT_ASSERT(!b.bad && b.len == need);
    x->used += need;
    x->count++;
    x->last_db = db;
    memcpy(x->last_key, k->mv_data, k->mv_size);
    x->last_len = k->mv_size;
    return 0;
}

int slot_store_place_export(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const uint8_t *cursor,
                            size_t cursor_len, uint8_t *out, size_t cap, size_t *used, uint32_t *count,
                            uint8_t *next, size_t *next_len)
{
    export_ctx *x = calloc(1, sizeof(*x));
    if (!x)
        return ENOMEM;
    x->out = out;
    x->cap = cap;
    int from_db = -1;
    MDB_val after = {0, NULL}, *ap = NULL;
    if (cursor_len > 0) {
        if (cursor_len < 2 || cursor_len - 1 > KEY_BYTES_MAX || db_index(cursor[0]) < 0) {
            free(x);
            return EINVAL;
        }
        from_db = cursor[0];
        after = (MDB_val){cursor_len - 1, (void *)(cursor + 1)};
        ap = &after;
    }
    int rc = walk(st, txn, ev, ev_len, from_db, ap, export_one, x);
    if (rc == 1)
        rc = 0;
    if (rc == 0) {
        *used = x->used;
        *count = x->count;
        *next_len = 0;
        if (x->full) { /* more after the last record sent */
            next[0] = (uint8_t)x->last_db;
            memcpy(next + 1, x->last_key, x->last_len);
            *next_len = 1 + x->last_len;
        }
    }
    free(x);
    return rc;
}

int slot_store_place_apply(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const uint8_t *data,
                           size_t len, uint32_t *count)
{
    key prefix, rec;
    key_event(&prefix, ev, ev_len);
    place_key(&rec, ev, ev_len);
    *count = 0;
    size_t off = 0;
    /* Every record is checked before the first write: a bad chunk changes nothing. */
    for (int pass = 0; pass < 2; pass++) {
        for (off = 0; off < len;) {
            if (len - off < 3)
                return EINVAL;
            int db = data[off];
            size_t klen = ((size_t)data[off + 1] << 8) | data[off + 2];
            off += 3;
            if (db_index(db) < 0 || klen < 1 || klen > SLOT_WSET_KEY_BYTES_MAX || len - off < klen + 4)
                return EINVAL;
            MDB_val k = {klen, (void *)(data + off)};
            off += klen;
            uint32_t vlen = (uint32_t)load_be64((const uint8_t[8]){0, 0, 0, 0, data[off], data[off + 1],
                                                                   data[off + 2], data[off + 3]});
            off += 4;
            if (vlen != PLACE_DEL && len - off < vlen)
                return EINVAL;
            if (!key_of(db, &k, &prefix, &rec))
                return EINVAL; /* a key of another event, or E's placement record */
            MDB_val v = {vlen == PLACE_DEL ? 0 : vlen, (void *)(data + off)};
            if (vlen != PLACE_DEL)
                off += vlen;
            if (pass == 0)
                continue;
            int rc = vlen == PLACE_DEL ? store_del(st, txn, db, &k) : store_put(st, txn, db, &k, &v, 0);
            if (rc == MDB_NOTFOUND)
                rc = 0; /* a delete of a key the stage never had: the tail names what the source dropped */
            if (rc != 0)
                return rc;
            (*count)++;
        }
    }
    return 0;
}

static int any_one(void *ctx, int db, const MDB_val *k, const MDB_val *v)
{
    (void)db, (void)k, (void)v;
    *(bool *)ctx = true;
    return 1;
}

int slot_store_place_any(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, bool *any)
{
    *any = false;
    int rc = walk(st, txn, ev, ev_len, -1, NULL, any_one, any);
    return rc == 1 ? 0 : rc;
}

typedef struct purge_ctx {
    uint32_t max, n;
    uint8_t db[SLOT_PLACE_PURGE_KEYS];
    uint16_t klen[SLOT_PLACE_PURGE_KEYS];
    uint8_t (*keys)[KEY_BYTES_MAX];
} purge_ctx;

static int purge_collect(void *ctx, int db, const MDB_val *k, const MDB_val *v)
{
    (void)v;
    purge_ctx *x = ctx;
    if (x->n >= x->max)
        return 1;
    x->db[x->n] = (uint8_t)db;
    x->klen[x->n] = (uint16_t)k->mv_size;
    memcpy(x->keys[x->n], k->mv_data, k->mv_size);
    x->n++;
    return 0;
}

int slot_store_place_purge(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint32_t max,
                           uint32_t *deleted, bool *more)
{
    if (max > SLOT_PLACE_PURGE_KEYS)
        max = SLOT_PLACE_PURGE_KEYS;
    purge_ctx *x = calloc(1, sizeof(*x));
    if (x)
        x->keys = malloc((size_t)max * KEY_BYTES_MAX);
    if (!x || !x->keys) {
        if (x)
            free(x);
        return ENOMEM;
    }
    x->max = max;
    /* Collected first, deleted after: no cursor walks a database being written. */
    int rc = walk(st, txn, ev, ev_len, -1, NULL, purge_collect, x);
    *more = rc == 1;
    if (rc == 1)
        rc = 0;
    for (uint32_t i = 0; rc == 0 && i < x->n; i++) {
        MDB_val k = {x->klen[i], x->keys[i]};
        rc = store_del(st, txn, x->db[i], &k);
    }
    *deleted = rc == 0 ? x->n : 0;
    free(x->keys);
    free(x);
    return rc;
}
