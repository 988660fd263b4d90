/*
 * slot/backup.h — backups of a store: a consistent, compacted hot copy of a
 * running store in one file, restoring it into a data folder offline,
 * verifying a backup file, and installing one into a live store (a replica
 * set's snapshot join) (src/store/store_backup.c; docs/operations.md,
 * "Backups", defines the file; docs/design.md, "Backups", says why it is
 * made as it is).
 *
 * The file: a SLOT_BACKUP_HEADER_BYTES header, then the LMDB data (a
 * compacted data.mdb, as mdb_env_copyfd2(MDB_CP_COMPACT) writes it). The
 * header (big-endian integers):
 *
 *   offset bytes  field
 *   0      8      magic "SLOTBAK1"
 *   8      4      format version (SLOT_BACKUP_VERSION)
 *   12     4      header bytes (SLOT_BACKUP_HEADER_BYTES)
 *   16     8      seq the copy was taken at (slot_store_seq_get of the copy)
 *   24     8      epoch of that seq (0 on a standalone server)
 *   32     8      data bytes (the LMDB data after the header)
 *   40     8      created_at, ms since the Unix epoch
 *   48     32     digest (slot_store_digest of the copy; the digest op's hex, as bytes)
 *   80     32     SHA-256 of the data bytes
 *   112    12     zero
 *   124    4      CRC-32 (zlib's) of bytes 0..123
 *
 * Errors: every function returns 0, a SLOT_BACKUP_E_* value below, a
 * negative errno (-ENOENT, -EACCES, -ENOSPC, ...), or an LMDB error
 * (positive), and writes a human message naming the file into err.
 * slot_strerror (slot/error.h) names the code alone.
 */
#ifndef SLOT_BACKUP_H
#define SLOT_BACKUP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slot/limits.h"
#include "slot/ops.h"
#include "slot/store.h"

#define SLOT_BACKUP_MAGIC "SLOTBAK1"     /* 8 bytes at offset 0 */
#define SLOT_BACKUP_VERSION 1u           /* a newer file is refused */
#define SLOT_BACKUP_HEADER_BYTES 128u    /* the data starts here */
#define SLOT_BACKUP_PATH_BYTES_MAX 1023u /* the backup op's "path": longer ones are invalid_argument */
#define SLOT_BACKUP_IO_BYTES (1u << 20)  /* one read/write of a stream copy (a heap buffer) */

/*
 * Errors, in the registry of slot/error.h (SLOT_RC_MAP, the BACKUP range):
 *   SLOT_BACKUP_E_MAGIC     not a slotd backup (magic)
 *   SLOT_BACKUP_E_VERSION   written by a newer slotd
 *   SLOT_BACKUP_E_HEADER    the header's CRC-32 or its fields are wrong
 *   SLOT_BACKUP_E_LENGTH    the file is shorter or longer than the header says
 *   SLOT_BACKUP_E_CHECKSUM  the data's SHA-256 is not the header's
 *   SLOT_BACKUP_E_DIGEST    the data's seq, epoch or digest is not the header's
 *   SLOT_BACKUP_E_NOT_EMPTY restore: the data folder holds a store (and no force)
 *   SLOT_BACKUP_E_IN_USE    restore: a slotd has the data folder (its slotd.lock)
 *   SLOT_BACKUP_E_SHORT     a file ended before the bytes its header or size promised
 */

/* What a backup was taken at; filled by each function below. */
typedef struct slot_backup_info {
    uint64_t seq, epoch;                    /* the store's seq and its epoch in the copy */
    char digest[SLOT_DIGEST_HEX_BYTES + 1]; /* slot_store_digest of the copy, lowercase hex */
    uint64_t data_bytes;                    /* LMDB data after the header */
    uint64_t file_bytes;                    /* header + data */
    uint64_t created_at_ms;                 /* when the copy was taken, ms since the Unix epoch */
    uint64_t copy_ms;                       /* slot_store_backup*: time the LMDB copy took (ms) */
    uint64_t total_ms;                      /* slot_store_backup*: the whole call (ms) */
} slot_backup_info;

/*
 * slot_store_backup_fd — a hot backup of st, header then data, written to
 * fd in one sequential pass (fd may be a file, a pipe or a socket; it is
 * neither synced nor closed). How: mdb_env_copyfd2(MDB_CP_COMPACT) into a
 * scratch file under scratch_dir (one LMDB read transaction: the store as
 * of one commit, free pages left out), then that copy is opened read-only
 * and its seq (meta, committed in the same transaction as each batch) and
 * digest are read from it, so they describe exactly the data; then header
 * and data go to fd. The scratch file is unlinked as soon as it is made
 * (opened again as /proc/self/fd/N), so a killed process leaves none. Commits go on
 * meanwhile; the copy's reader keeps the pages of its snapshot from reuse
 * until it ends (data.mdb may grow a little).
 *   st: open (not read_only is fine, either); borrowed.
 *   scratch_dir: an existing folder with room for one more copy of the data.
 *   map_lock: the rwlock that the store's map growth (slot_store_grow)
 *     write-locks, read-locked here during the LMDB copy only; NULL when
 *     nothing grows the map meanwhile.
 *   out: the backup's header fields (may be NULL). err/errlen: a message.
 * Returns 0 or an error (see the top); on an error fd may hold part of a
 * backup. Cost: the copy, a read of the copy (digest), a copy to fd: O(data).
 * Thread: any but the one that holds the store's write transaction or a
 * read transaction of map_lock (both would deadlock a grow).
 */
int slot_store_backup_fd(slot_store *st, const char *scratch_dir, int fd, pthread_rwlock_t *map_lock,
                         slot_backup_info *out, char *err, size_t errlen);

/*
 * slot_store_backup — slot_store_backup_fd into PATH.tmp (created 0600,
 * replacing a stale one; the scratch copy also goes beside PATH), fsync,
 * rename to path, fsync its folder: path is either the whole backup or
 * untouched (an older file of that name stays until the rename).
 *   path: the backup file; its folder must exist and be writable.
 * Returns 0 or an error (PATH.tmp is removed then). Thread: as above.
 */
int slot_store_backup(slot_store *st, const char *path, pthread_rwlock_t *map_lock, slot_backup_info *out, char *err,
                      size_t errlen);

/*
 * slot_backup_read_header — read and check file's header: magic, version,
 * header bytes, CRC-32, and that the file's size is header + data bytes.
 * The data is not read (slot_backup_verify does that).
 *   out: the header's fields (copy_ms, total_ms: 0). Returns 0 or an error.
 */
int slot_backup_read_header(const char *file, slot_backup_info *out, char *err, size_t errlen);

/* Flags of slot_backup_restore. */
#define SLOT_BACKUP_RESTORE_FORCE 1u /* replace a store already in the folder (not one in use) */
#define SLOT_BACKUP_RESTORE_LOCK_HELD \
    2u /* the caller is the slotd that holds the folder's slotd.lock
                                            (and has closed its store): do not take the lock */

/*
 * slot_backup_restore — offline restore: put file's data in data_dir as its
 * data.mdb. Refused (nothing changed) when the header or the data's SHA-256
 * or its seq, epoch or digest do not match, when a slotd has data_dir (its
 * slotd.lock is locked: SLOT_BACKUP_E_IN_USE, always), or when data_dir
 * holds anything but slotd.lock and flags lacks SLOT_BACKUP_RESTORE_FORCE
 * (SLOT_BACKUP_E_NOT_EMPTY). Holds data_dir's slotd.lock while it runs, so
 * no slotd starts on the folder meanwhile (with SLOT_BACKUP_RESTORE_LOCK_HELD
 * the caller already holds it: a slotd replacing its own, closed store). Writes data.mdb.restore, checks
 * it, then removes lock.mdb and renames it to data.mdb and syncs the folder;
 * with force, other files (an rlog/ folder) are left as they are.
 *   data_dir: created (0700) when missing, its parent then fsynced
 *   (slot_store_mkdir); its parent must exist.
 *   out: the header's fields (may be NULL). Returns 0 or an error (a failed
 *   fsync of data_dir or its parent included: the restore is then not durable).
 * Thread: any. Cost: O(data) (a copy and a digest).
 */
int slot_backup_restore(const char *file, const char *data_dir, unsigned flags, slot_backup_info *out, char *err,
                        size_t errlen);

/*
 * slot_backup_verify — check a backup without restoring it: the header, the
 * data's SHA-256, then a copy of the data (a scratch file under
 * scratch_dir, removed before the return) opened read-only, its seq, epoch
 * and digest compared with the header's, and inspect run on it.
 *   inspect: called once with the opened copy and its read transaction
 *     (both valid only during the call), and arg; its non-zero return is
 *     this call's. slot_check_backup_copy (slot/check.h) runs slot_check
 *     (every event, the feed) with arg a slot_res. May be NULL (none run).
 *     The store wing does not check the allocator's invariants itself: the
 *     caller, above it, brings the check.
 * Returns 0 when the file is intact (what inspect found, if anything, is in
 * its arg), or an error. Thread: any. Cost: O(data).
 */
typedef int (*slot_backup_inspect_fn)(slot_store *copy, MDB_txn *txn, void *arg);
int slot_backup_verify(const char *file, const char *scratch_dir, slot_backup_info *out, slot_backup_inspect_fn inspect,
                       void *arg, char *err, size_t errlen);

/*
 * slot_backup_install — replace the data of a live store by a backup's, in
 * the write transaction txn (not captured; the caller commits or aborts
 * it): the checks of slot_backup_verify first (header, the data's SHA-256,
 * then the data copied to a scratch file under scratch_dir, removed before
 * the return, opened read-only, and its seq, epoch and digest compared with
 * the header's; not slot_check), and only then every data database emptied
 * and filled with the copy's entries, and seq set to the header's (seq,
 * epoch); meta's other records stay. So a damaged file changes nothing, and
 * the state installed is the one the header names. Used by a replica set's
 * snapshot join (docs/design.md, "Joining by snapshot"). Atomic with txn's
 * commit: until then the store is as before.
 *   st: open read-write; borrowed. file: a backup file (slot_store_backup*).
 *   scratch_dir: an existing folder with room for one more copy of the data.
 *   out: the header's fields, the state installed (may be NULL).
 * Returns 0, an error as above (a refusal: slot_backup_refused; txn is
 * untouched then), or an LMDB error while filling txn (MDB_MAP_FULL: grow
 * the map and install again); the caller aborts txn on any error.
 * Thread: the write transaction's. Cost: O(data) (a copy, a digest, the puts).
 */
int slot_backup_install(slot_store *st, MDB_txn *txn, const char *file, const char *scratch_dir, slot_backup_info *out,
                        char *err, size_t errlen);

/*
 * slot_backup_refused — true when rc (a return value above) says the file is
 * at fault, not the machine: not a backup, a newer format, a damaged header,
 * the wrong length, a SHA-256 or a seq/epoch/digest that does not match
 * (SLOT_BACKUP_E_MAGIC..SLOT_BACKUP_E_DIGEST). Pure; any thread.
 */
bool slot_backup_refused(int rc);

#endif
