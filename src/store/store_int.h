/*
 * store_int.h — what the store's files share (store.c: open, records;
 * store_scan.c: the scans; store_repl.c: write-set capture, seq, apply,
 * digest): the store's struct, the database numbers, the one put and the one
 * delete every write of a data database goes through, and the byte packing
 * of keys and records (slot/store.h has the schema). Internal to libslot.
 */
#ifndef SLOT_STORE_INT_H
#define SLOT_STORE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "slot/assert.h"
#include "slot/store.h"
#include "slot/wset.h"

#define KEY_BYTES_MAX 512 /* LMDB's default mdb_env_get_maxkeysize() is 511 */
/* The longest key (users: two names, each a length byte plus its bytes). */
_Static_assert(2 + SLOT_EVENT_BYTES_MAX + SLOT_USER_BYTES_MAX <= 511, "keys fit LMDB's key size");

/* A database's number is its index in the dbi table and its id in a write
 * set's ops (slot/wset.h). meta is node-local: never captured, never applied. */
enum { DB_META, DB_EVENTS, DB_SHARDS, DB_HOLDS, DB_EXPIRY, DB_USERS, DB_FEED, DB_CONSUMERS, DB_WAITLIST };
/* Ids are stable (write sets and the digest name them): a new database takes the next id. */
_Static_assert(DB_FEED == 6 && DB_CONSUMERS == 7 && DB_WAITLIST == 8 && SLOT_STORE_DBS == DB_WAITLIST + 1,
               "database ids never change");
_Static_assert(SLOT_STORE_DBS <= SLOT_WSET_DBS_MAX, "every database has a write-set id");

/* The databases' names, by number (store.c). */
extern const char *const slot__store_db_names[SLOT_STORE_DBS];
/* meta's seq record := (seq, epoch) in txn (store_repl.c). 0 or an LMDB error. */
int slot__store_seq_set(slot_store *st, MDB_txn *txn, uint64_t seq, uint64_t epoch);

struct slot_store {
    MDB_env *env;
    MDB_dbi dbi[SLOT_STORE_DBS];
    uint64_t map_bytes, map_bytes_max;
    /* The write transaction's thread only (there is one write txn at a time): */
    slot_wset *capture; /* slot_store_capture_begin's set, or NULL */
    uint64_t writes;    /* data-database puts and deletes that succeeded, since open */
};

/* ---- the writes: every put and delete of a data database goes through these
 *      two, which count it and, while a capture set is on, append it to the
 *      set (store_repl.c). Only writes that succeeded are counted and captured. */

/* slot__store_capture — append the op to st->capture. 0 or a SLOT_WSET_E_* /
 * -errno value (the caller then fails, and its transaction must be aborted). */
int slot__store_capture(slot_store *st, uint8_t type, int db, const MDB_val *k, const MDB_val *v);

static inline int store_put(slot_store *st, MDB_txn *txn, int db, MDB_val *k, MDB_val *v, unsigned flags)
{
    SLOT_ASSERT(db > DB_META && db < SLOT_STORE_DBS);
    int rc = mdb_put(txn, st->dbi[db], k, v, flags);
    if (rc != 0)
        return rc;
    st->writes++;
    return st->capture ? slot__store_capture(st, SLOT_WSET_PUT, db, k, v) : 0;
}

static inline int store_del(slot_store *st, MDB_txn *txn, int db, MDB_val *k)
{
    SLOT_ASSERT(db > DB_META && db < SLOT_STORE_DBS);
    int rc = mdb_del(txn, st->dbi[db], k, NULL);
    if (rc != 0)
        return rc;
    st->writes++;
    return st->capture ? slot__store_capture(st, SLOT_WSET_DEL, db, k, NULL) : 0;
}

/* slot__store_meta_put — the node-local meta database's one writer (the
 * schema record at open, seq): never counted, never captured. */
int slot__store_meta_put(slot_store *st, MDB_txn *txn, const char *name, const void *val, size_t len);

/* slot__store_open_copy — open one LMDB file (not a folder: MDB_NOSUBDIR),
 * read-only and without a lock file (MDB_NOLOCK), as a store: a backup's
 * scratch copy, which nothing else opens (src/store/store_backup.c). Checks the
 * schema like slot_store_open. Close with slot_store_close. Returns as
 * slot_store_open does. */
int slot__store_open_copy(const char *file, slot_store **out, char *errbuf, size_t errlen);

/* ---- byte packing */

typedef struct buf {
    uint8_t *p;
    size_t len, cap;
    bool bad; /* a read past the end or a write past cap */
} buf;

static inline void put_u8(buf *b, uint8_t v)
{
    if (b->len + 1 > b->cap) {
        b->bad = true;
        return;
    }
    b->p[b->len++] = v;
}

static inline void put_be(buf *b, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--)
        put_u8(b, (uint8_t)(v >> (8 * i)));
}

static inline void put_name(buf *b, const char *s, size_t len)
{
    if (len > 255 || b->len + 1 + len > b->cap) {
        b->bad = true;
        return;
    }
    b->p[b->len++] = (uint8_t)len;
    memcpy(b->p + b->len, s, len);
    b->len += len;
}

static inline uint8_t get_u8(buf *b)
{
    if (b->len + 1 > b->cap) {
        b->bad = true;
        return 0;
    }
    return b->p[b->len++];
}

static inline uint64_t get_be(buf *b, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = (v << 8) | get_u8(b);
    return v;
}

/* Reads a name into out (capacity outcap including the NUL). */
static inline size_t get_name(buf *b, char *out, size_t outcap)
{
    size_t len = get_u8(b);
    if (b->bad || len + 1 > outcap || b->len + len > b->cap) {
        b->bad = true;
        return 0;
    }
    memcpy(out, b->p + b->len, len);
    out[len] = 0;
    b->len += len;
    return len;
}

static inline uint64_t load_be64(const void *p)
{
    buf b = {.p = (uint8_t *)p, .cap = 8};
    return get_be(&b, 8);
}

/* ---- keys */

typedef struct key {
    uint8_t raw[KEY_BYTES_MAX];
    buf b;
} key;

static inline MDB_val key_val(key *k)
{
    MDB_val v = {k->b.len, k->raw};
    return v;
}

static inline void key_init(key *k)
{
    k->b = (buf){.p = k->raw, .cap = sizeof(k->raw)};
}

/* key_event — a key that starts with event name ev. Names reach the store
 * checked (proto, or a record already in it): a length out of 1..64 is a
 * programmer error. */
static inline void key_event(key *k, const char *ev, size_t ev_len)
{
    SLOT_ASSERT(ev_len >= 1);
    SLOT_ASSERT(ev_len <= SLOT_EVENT_BYTES_MAX);
    key_init(k);
    put_name(&k->b, ev, ev_len);
}

/* slot__store_hold_decode — unpack a holds record (value v of key seq) into
 * out. Returns 0, or MDB_CORRUPTED when it is not a version-1 record. */
int slot__store_hold_decode(const MDB_val *v, uint64_t seq, slot_hold_rec *out);

#endif
