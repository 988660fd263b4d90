/*
 * store_seat.c — the seat map's rows in the waitlist database (slot/store.h,
 * "Seat maps"; docs/design.md, "Seats"). The store only keys and copies the
 * bytes; src/alloc/seat.c owns their layout. Every write goes through the
 * store's one put, so write sets, the digest and backups carry the rows.
 */
#include <string.h>

#include "slot/store.h"

#include "store_int.h"

#define SEAT_SUB_BYTES_MAX 400 /* the longest sub-key: a name of "SECTION-ROW" (33) or a u64 */

static void seat_key(key *k, const char *ev, size_t ev_len, char type, const void *sub, size_t sub_len)
{
    SLOT_ASSERT(type == 'M' || type == 'R' || type == 'N' || type == 'S' || type == 'P');
    SLOT_ASSERT(sub_len <= SEAT_SUB_BYTES_MAX);
    key_event(k, ev, ev_len);
    put_u8(&k->b, (uint8_t)type);
    if (k->b.len + sub_len > k->b.cap) {
        k->b.bad = true;
    } else if (sub_len > 0) { /* sub may be NULL when empty (memcpy's arguments must not be) */
        memcpy(k->b.p + k->b.len, sub, sub_len);
        k->b.len += sub_len;
    }
    SLOT_ASSERT(!k->b.bad);
}

int slot_store_seat_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, char type, const void *sub,
                        size_t sub_len, void *out, size_t cap, size_t *len)
{
    key k;
    seat_key(&k, ev, ev_len, type, sub, sub_len);
    MDB_val kv = key_val(&k), v;
    int rc = mdb_get(txn, st->dbi[DB_WAITLIST], &kv, &v);
    if (rc != 0)
        return rc;
    if (v.mv_size > cap)
        return MDB_CORRUPTED;
    memcpy(out, v.mv_data, v.mv_size);
    *len = v.mv_size;
    return 0;
}

int slot_store_seat_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, char type, const void *sub,
                        size_t sub_len, const void *val, size_t val_len)
{
    key k;
    seat_key(&k, ev, ev_len, type, sub, sub_len);
    MDB_val kv = key_val(&k), v = {val_len, (void *)val};
    return store_put(st, txn, DB_WAITLIST, &kv, &v, 0);
}

int slot_store_seat_del(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, char type, const void *sub,
                        size_t sub_len)
{
    key k;
    seat_key(&k, ev, ev_len, type, sub, sub_len);
    MDB_val kv = key_val(&k);
    return store_del(st, txn, DB_WAITLIST, &kv);
}
