/*
 * store_repl.c — the store's replication groundwork (slot/store.h,
 * "Replication groundwork"): write-set capture behind the one put and one
 * delete of store_int.h, the seq record in meta, applying a record, and the
 * digest of the logical state.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "store_int.h"

#define SEQ_REC_BYTES 16            /* u64 seq, u64 epoch */
#define DIGEST_TAG "slotd-digest-1" /* hashed first, so another layout never collides */

/* ---- capture */

int slot__store_capture(slot_store *st, uint8_t type, int db, const MDB_val *k, const MDB_val *v)
{
    SLOT_ASSERT(st->capture != NULL);
    if (type == SLOT_WSET_PUT)
        return slot_wset_put(st->capture, (uint8_t)db, k->mv_data, k->mv_size, v->mv_data, v->mv_size);
    return slot_wset_del(st->capture, (uint8_t)db, k->mv_data, k->mv_size);
}

void slot_store_capture_begin(slot_store *st, slot_wset *ws)
{
    SLOT_ASSERT(st->capture == NULL);
    SLOT_ASSERT(ws != NULL);
    st->capture = ws;
}

void slot_store_capture_end(slot_store *st)
{
    st->capture = NULL;
}

uint64_t slot_store_writes(const slot_store *st)
{
    return st->writes;
}

/* ---- meta: the node-local records (schema, seq) */

int slot__store_meta_put(slot_store *st, MDB_txn *txn, const char *name, const void *val, size_t len)
{
    MDB_val k = {strlen(name), (void *)name}, v = {len, (void *)val};
    return mdb_put(txn, st->dbi[DB_META], &k, &v, 0);
}

int slot_store_seq_get(slot_store *st, MDB_txn *txn, uint64_t *seq, uint64_t *epoch)
{
    MDB_val k = {3, "seq"}, v;
    uint64_t e = 0;
    *seq = 0;
    int rc = mdb_get(txn, st->dbi[DB_META], &k, &v);
    if (rc == 0) {
        if (v.mv_size != SEQ_REC_BYTES)
            return MDB_CORRUPTED;
        *seq = load_be64(v.mv_data);
        e = load_be64((const uint8_t *)v.mv_data + 8);
    } else if (rc != MDB_NOTFOUND) {
        return rc;
    }
    if (epoch)
        *epoch = e;
    return 0;
}

int slot__store_seq_set(slot_store *st, MDB_txn *txn, uint64_t seq, uint64_t epoch)
{
    uint8_t raw[SEQ_REC_BYTES];
    buf b = {.p = raw, .cap = sizeof(raw)};
    put_be(&b, seq, 8);
    put_be(&b, epoch, 8);
    SLOT_ASSERT(!b.bad);
    return slot__store_meta_put(st, txn, "seq", raw, sizeof(raw));
}

int slot_store_seq_bump(slot_store *st, MDB_txn *txn, uint64_t epoch, uint64_t *seq_out)
{
    uint64_t seq;
    int rc = slot_store_seq_get(st, txn, &seq, NULL);
    if (rc == 0)
        rc = slot__store_seq_set(st, txn, seq + 1, epoch);
    if (rc == 0 && seq_out)
        *seq_out = seq + 1;
    return rc;
}

int slot_store_clear_data(slot_store *st, MDB_txn *txn)
{
    for (int db = DB_META + 1; db < SLOT_STORE_DBS; db++) {
        int rc = mdb_drop(txn, st->dbi[db], 0);
        if (rc != 0)
            return rc;
    }
    return slot__store_seq_set(st, txn, 0, 0);
}

/* ---- apply */

int slot_store_apply(slot_store *st, MDB_txn *txn, const slot_wset_rec *rec)
{
    uint64_t seq;
    int rc = slot_store_seq_get(st, txn, &seq, NULL);
    if (rc != 0)
        return rc;
    if (rec->hdr.seq != seq + 1)
        return SLOT_STORE_E_SEQ;
    slot_wset_iter it;
    slot_wset_op op;
    /* Every db id first, so a record naming one we lack writes nothing. */
    slot_wset_iter_init(&it, rec);
    while (slot_wset_next(&it, &op))
        if (op.db_id == DB_META || op.db_id >= SLOT_STORE_DBS)
            return SLOT_STORE_E_DB;
    slot_wset_iter_init(&it, rec);
    while (rc == 0 && slot_wset_next(&it, &op)) {
        MDB_val k = {op.klen, (void *)op.key};
        if (op.type == SLOT_WSET_PUT) {
            MDB_val v = {op.vlen, (void *)op.val};
            rc = store_put(st, txn, op.db_id, &k, &v, 0);
        } else {
            rc = store_del(st, txn, op.db_id, &k);
        }
    }
    if (rc == 0)
        rc = slot__store_seq_set(st, txn, rec->hdr.seq, rec->hdr.epoch);
    return rc;
}

/* ---- digest */

static void put_u32_be(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Hashes every entry of database db: id u8, klen u32, key, vlen u32, value. */
static int digest_db(slot_store *st, MDB_txn *txn, int db, EVP_MD_CTX *md)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, st->dbi[db], &cur);
    if (rc != 0)
        return rc;
    MDB_val k, v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    while (rc == 0) {
        uint8_t head[5];
        head[0] = (uint8_t)db;
        put_u32_be(head + 1, (uint32_t)k.mv_size);
        uint8_t vlen[4];
        put_u32_be(vlen, (uint32_t)v.mv_size); /* LMDB values here are records of < 4 GiB */
        if (!EVP_DigestUpdate(md, head, sizeof head) || !EVP_DigestUpdate(md, k.mv_data, k.mv_size) ||
            !EVP_DigestUpdate(md, vlen, sizeof vlen) || !EVP_DigestUpdate(md, v.mv_data, v.mv_size)) {
            rc = EIO;
            break;
        }
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int slot_store_digest(slot_store *st, MDB_txn *txn, uint64_t *seq, char hex[SLOT_DIGEST_HEX_BYTES + 1])
{
    hex[0] = 0;
    int rc = slot_store_seq_get(st, txn, seq, NULL);
    if (rc != 0)
        return rc;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md)
        return ENOMEM;
    uint8_t seq_be[8];
    buf b = {.p = seq_be, .cap = sizeof seq_be};
    put_be(&b, *seq, 8);
    if (!EVP_DigestInit_ex(md, EVP_sha256(), NULL) || !EVP_DigestUpdate(md, DIGEST_TAG, sizeof DIGEST_TAG) ||
        !EVP_DigestUpdate(md, seq_be, sizeof seq_be))
        rc = EIO;
    for (int db = DB_EVENTS; rc == 0 && db < SLOT_STORE_DBS; db++)
        rc = digest_db(st, txn, db, md);
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (rc == 0 && (!EVP_DigestFinal_ex(md, out, &n) || n * 2 != SLOT_DIGEST_HEX_BYTES))
        rc = EIO;
    EVP_MD_CTX_free(md);
    if (rc != 0)
        return rc;
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < n; i++) {
        hex[2 * i] = digits[out[i] >> 4];
        hex[2 * i + 1] = digits[out[i] & 15];
    }
    hex[SLOT_DIGEST_HEX_BYTES] = 0;
    return 0;
}
