/*
 * store_scan.c — the store's scans (slot/store.h, "Scans"): cursor walks
 * over a key prefix, decoding each record into caller memory.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/* Walks the records of `dbi` whose key starts with `prefix`, calling fn. */
typedef int (*raw_fn)(void *ctx, const MDB_val *k, const MDB_val *v);

#define SCAN_STOP INT_MIN /* a row function's "enough": the scan ends without error (no callback returns it) */

static int scan_prefix(MDB_txn *txn, MDB_dbi dbi, const uint8_t *prefix, size_t plen, raw_fn fn, void *ctx)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc != 0)
        return rc;
    MDB_val k = {plen, (void *)prefix}, v;
    rc = mdb_cursor_get(cur, &k, &v, plen ? MDB_SET_RANGE : MDB_FIRST);
    while (rc == 0) {
        if (plen && (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0))
            break; /* past the prefix (a whole-database scan has none: no memcmp on NULL) */
        rc = fn(ctx, &k, &v);
        if (rc != 0)
            break;
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND || rc == SCAN_STOP ? 0 : rc;
}

struct scan_ctx {
    void *fn;
    void *ctx;
    size_t skip; /* prefix bytes before what the callback wants */
};

struct event_scan {
    slot_store *st;
    MDB_txn *txn;
    slot_store_event_fn fn;
    void *ctx;
};

static int event_row(void *c, const MDB_val *k, const MDB_val *v)
{
    struct event_scan *es = c;
    (void)v;
    buf b = {.p = k->mv_data, .cap = k->mv_size};
    char ev[SLOT_EVENT_BYTES_MAX + 1];
    size_t len = get_name(&b, ev, sizeof(ev));
    slot_event_rec rec;
    int rc = b.bad ? MDB_CORRUPTED : slot_store_event_get(es->st, es->txn, ev, len, &rec);
    if (rc != 0)
        return rc;
    /* An event this set does not own (a move's stage, or one given up) is
     * not this set's: placement (slot/store.h) */
    slot_place_rec pr;
    rc = slot_store_place_get(es->st, es->txn, ev, len, &pr);
    if (rc == 0 && pr.state != SLOT_PLACE_OWNED)
        return 0;
    if (rc != 0 && rc != MDB_NOTFOUND)
        return rc;
    return es->fn(es->ctx, ev, len, &rec);
}

int slot_store_events_scan(slot_store *st, MDB_txn *txn, slot_store_event_fn fn, void *ctx)
{
    struct event_scan es = {st, txn, fn, ctx};
    return scan_prefix(txn, st->dbi[DB_EVENTS], NULL, 0, event_row, &es);
}

static int hold_row(void *c, const MDB_val *k, const MDB_val *v)
{
    struct scan_ctx *sc = c;
    if (k->mv_size != sc->skip + 8)
        return MDB_CORRUPTED;
    slot_hold_rec *rec = malloc(sizeof(*rec));
    if (!rec)
        return ENOMEM;
    int rc = slot__store_hold_decode(v, load_be64((uint8_t *)k->mv_data + sc->skip), rec);
    if (rc == 0)
        rc = ((slot_store_hold_fn)sc->fn)(sc->ctx, rec);
    free(rec);
    return rc;
}

int slot_store_holds_scan(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_store_hold_fn fn, void *ctx)
{
    key k;
    key_event(&k, ev, ev_len);
    struct scan_ctx sc = {(void *)fn, ctx, k.b.len};
    return scan_prefix(txn, st->dbi[DB_HOLDS], k.raw, k.b.len, hold_row, &sc);
}

int slot_store_holds_scan_from(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t from_seq,
                               uint32_t holds_max, slot_store_hold_fn fn, void *ctx, uint64_t *next_seq)
{
    SLOT_ASSERT(holds_max >= 1);
    key k;
    key_event(&k, ev, ev_len);
    size_t plen = k.b.len;
    put_be(&k.b, from_seq, 8);
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, st->dbi[DB_HOLDS], &cur);
    if (rc != 0)
        return rc;
    struct scan_ctx sc = {(void *)fn, ctx, plen};
    MDB_val kv = key_val(&k), v;
    uint64_t next = 0;
    uint32_t seen = 0;
    rc = mdb_cursor_get(cur, &kv, &v, MDB_SET_RANGE);
    while (rc == 0) {
        if (kv.mv_size < plen || memcmp(kv.mv_data, k.raw, plen) != 0) {
            next = 0; /* past the event's holds: the walk is complete */
            break;
        }
        if (seen == holds_max) { /* one more exists: the next call starts there */
            next = kv.mv_size == plen + 8 ? load_be64((uint8_t *)kv.mv_data + plen) : 0;
            rc = next ? 0 : MDB_CORRUPTED;
            break;
        }
        rc = hold_row(&sc, &kv, &v);
        seen++;
        if (rc == 0)
            rc = mdb_cursor_get(cur, &kv, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    if (rc == MDB_NOTFOUND)
        rc = 0, next = 0;
    if (rc == 0)
        *next_seq = next;
    return rc;
}

static int user_row(void *c, const MDB_val *k, const MDB_val *v)
{
    struct scan_ctx *sc = c;
    buf b = {.p = (uint8_t *)k->mv_data + sc->skip, .cap = k->mv_size - sc->skip};
    char user[SLOT_USER_BYTES_MAX + 1];
    size_t len = get_name(&b, user, sizeof(user));
    if (b.bad || v->mv_size != 8)
        return MDB_CORRUPTED;
    return ((slot_store_user_fn)sc->fn)(sc->ctx, user, len, load_be64(v->mv_data));
}

int slot_store_users_scan(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_store_user_fn fn, void *ctx)
{
    key k;
    key_event(&k, ev, ev_len);
    struct scan_ctx sc = {(void *)fn, ctx, k.b.len};
    return scan_prefix(txn, st->dbi[DB_USERS], k.raw, k.b.len, user_row, &sc);
}

struct expiry_scan {
    uint64_t until_ms;
    slot_store_expiry_fn fn;
    void *ctx;
};

static int expiry_row(void *c, const MDB_val *k, const MDB_val *v)
{
    struct expiry_scan *xs = c;
    (void)v;
    buf b = {.p = k->mv_data, .cap = k->mv_size};
    uint64_t at = get_be(&b, 8);
    if (at > xs->until_ms)
        return SCAN_STOP; /* keys are in time order: nothing later is due */
    char ev[SLOT_EVENT_BYTES_MAX + 1];
    size_t len = get_name(&b, ev, sizeof(ev));
    uint64_t seq = get_be(&b, 8);
    return b.bad ? MDB_CORRUPTED : xs->fn(xs->ctx, at, ev, len, seq);
}

int slot_store_expiry_scan(slot_store *st, MDB_txn *txn, uint64_t until_ms, slot_store_expiry_fn fn, void *ctx)
{
    struct expiry_scan xs = {until_ms, fn, ctx};
    return scan_prefix(txn, st->dbi[DB_EXPIRY], NULL, 0, expiry_row, &xs);
}

static int count_row(void *c, const MDB_val *k, const MDB_val *v)
{
    (void)k;
    (void)v;
    (*(uint32_t *)c)++;
    return 0;
}

int slot_store_shards_count(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint32_t *count)
{
    key k;
    key_event(&k, ev, ev_len);
    *count = 0;
    return scan_prefix(txn, st->dbi[DB_SHARDS], k.raw, k.b.len, count_row, count);
}

int slot_store_expiry_first(slot_store *st, MDB_txn *txn, uint64_t *expires_at_ms)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, st->dbi[DB_EXPIRY], &cur);
    if (rc != 0)
        return rc;
    MDB_val k, v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    if (rc == 0 && k.mv_size < 8)
        rc = MDB_CORRUPTED;
    if (rc == 0)
        *expires_at_ms = load_be64(k.mv_data); /* keys lead with the big-endian time */
    mdb_cursor_close(cur);
    return rc;
}
