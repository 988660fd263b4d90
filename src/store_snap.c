/*
 * store_snap.c — snapshots of the store for a replica set's joiners
 * (slot/store.h, "Snapshots"; docs/design.md, "Joining by snapshot"): a
 * compacted hot copy (mdb_env_copyfd2 with MDB_CP_COMPACT, one read
 * transaction) written to a file, and installing such a file into a live
 * store in one write transaction.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_int.h"

/* Opens the snapshot file at path read-only (no lock file: nothing else uses it). */
static int snap_open(const char *path, MDB_env **out)
{
    MDB_env *env = NULL;
    int rc = mdb_env_create(&env);
    if (rc == 0)
        rc = mdb_env_set_maxdbs(env, SLOT_STORE_DBS);
    if (rc == 0)
        rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS, 0600);
    if (rc != 0 && env) {
        mdb_env_close(env);
        env = NULL;
    }
    *out = env;
    return rc;
}

int slot_store_snap_info(const char *path, uint64_t *seq, uint64_t *epoch)
{
    MDB_env *env = NULL;
    MDB_txn *txn = NULL;
    MDB_dbi meta;
    int rc = snap_open(path, &env);
    if (rc == 0)
        rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (rc == 0)
        rc = mdb_dbi_open(txn, slot__store_db_names[DB_META], 0, &meta);
    MDB_val k = {3, "seq"}, v;
    if (rc == 0)
        rc = mdb_get(txn, meta, &k, &v);
    if (rc == 0 && v.mv_size != 16)
        rc = MDB_CORRUPTED;
    if (rc == 0) {
        *seq = load_be64(v.mv_data);
        *epoch = load_be64((const uint8_t *)v.mv_data + 8);
    }
    if (txn)
        mdb_txn_abort(txn);
    if (env)
        mdb_env_close(env);
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

int slot_store_snap_copy(slot_store *st, const char *path, uint64_t *seq, uint64_t *epoch, uint64_t *bytes)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno;
    int rc = mdb_env_copyfd2(st->env, fd, MDB_CP_COMPACT);
    if (rc == 0 && fsync(fd) != 0)
        rc = errno;
    struct stat sb;
    if (rc == 0 && fstat(fd, &sb) != 0)
        rc = errno;
    if (close(fd) != 0 && rc == 0)
        rc = errno;
    if (rc == 0)
        rc = slot_store_snap_info(path, seq, epoch);
    if (rc == 0 && bytes)
        *bytes = (uint64_t)sb.st_size;
    if (rc != 0)
        unlink(path);
    return rc;
}

int slot_store_snap_install(slot_store *st, MDB_txn *txn, const char *path, uint64_t *seq, uint64_t *epoch)
{
    MDB_env *env = NULL;
    MDB_txn *from = NULL;
    int rc = snap_open(path, &env);
    if (rc == 0)
        rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &from);
    if (rc == 0)
        rc = slot_store_clear_data(st, txn);
    uint64_t n = 0;
    for (int db = DB_META + 1; rc == 0 && db < SLOT_STORE_DBS; db++) {
        MDB_dbi dbi;
        rc = mdb_dbi_open(from, slot__store_db_names[db], 0, &dbi);
        if (rc == MDB_NOTFOUND) {
            rc = MDB_CORRUPTED; /* every database exists in a store's copy */
            break;
        }
        MDB_cursor *cur = NULL;
        if (rc == 0)
            rc = mdb_cursor_open(from, dbi, &cur);
        MDB_val k, v;
        int g = rc == 0 ? mdb_cursor_get(cur, &k, &v, MDB_FIRST) : rc;
        while (rc == 0 && g == 0) {
            rc = mdb_put(txn, st->dbi[db], &k, &v, MDB_APPEND); /* a copy is in key order */
            n++;
            if (rc == 0)
                g = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        }
        if (rc == 0 && g != MDB_NOTFOUND)
            rc = g;
        if (cur)
            mdb_cursor_close(cur);
    }
    uint64_t s = 0, e = 0;
    if (from)
        mdb_txn_abort(from);
    if (env)
        mdb_env_close(env);
    if (rc == 0)
        rc = slot_store_snap_info(path, &s, &e);
    if (rc == 0)
        rc = slot__store_seq_set(st, txn, s, e);
    if (rc == 0) {
        st->writes += n;
        *seq = s;
        *epoch = e;
    }
    return rc;
}
