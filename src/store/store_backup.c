/*
 * store_backup.c — backups of a store (slot/backup.h): the hot copy with
 * its header, restore into a data folder, verify, and install into a live
 * store (a replica set's snapshot join sends a backup file: docs/design.md,
 * "Joining by snapshot").
 *
 * LMDB 0.9 has no copy from a caller's read transaction (mdb_env_copyfd2
 * begins its own), so seq and digest are not read from the live store
 * beside the copy: they are read from the copy itself, after it is written
 * (docs/design.md, "Backups"). Since the commit thread raises seq in the
 * transaction of the batch that wrote (slot_store_seq_bump, on a
 * standalone server too), the copy's meta["seq"] and its data are one
 * commit's, and the header's seq and digest describe the data exactly.
 *
 * The file's format (the header, streaming through SHA-256, the scratch
 * files) is in store_backup_file.c (store_int.h).
 */
#include "slot/backup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- a copy's seq, digest and check */

/*
 * Opens the LMDB file `copy` read-only and reads its seq, epoch and digest
 * into info; with inspect, runs inspect(copy, txn, arg) on it too (in the
 * same read transaction: slot_check_backup_copy for slotctl verify-backup). `name` is the file the messages name.
 */
static int copy_inspect(const char *copy, const char *name, slot_backup_info *info, slot_backup_inspect_fn inspect,
                        void *arg, char *err, size_t errlen)
{
    slot_store *cst;
    char why[256];
    int rc = slot__store_open_copy(copy, &cst, why, sizeof why);
    if (rc != 0) {
        snprintf(err, errlen, "%s: the data is not a slotd store: %s", name, why);
        return rc;
    }
    MDB_txn *txn = NULL;
    rc = mdb_txn_begin(slot_store_env(cst), NULL, MDB_RDONLY, &txn);
    uint64_t seq = 0;
    if (rc == 0)
        rc = slot_store_seq_get(cst, txn, &info->seq, &info->epoch);
    if (rc == 0)
        rc = slot_store_digest(cst, txn, &seq, info->digest);
    if (rc == 0 && inspect)
        rc = inspect(cst, txn, arg);
    if (rc == 0)
        SLOT_ASSERT(seq == info->seq);
    else
        snprintf(err, errlen, "%s: reading the data: %s", name, slot_strerror(rc));
    if (txn)
        mdb_txn_abort(txn);
    slot_store_close(cst);
    return rc;
}

/* ---- backup */

int slot_store_backup_fd(slot_store *st, const char *scratch_dir, int fd, pthread_rwlock_t *map_lock,
                         slot_backup_info *out, char *err, size_t errlen)
{
    uint64_t t0 = mono_ms();
    backup_header h = {0};
    char scratch[PATH_BYTES];
    int sfd;
    bool linked;
    int rc = slot__backup_scratch_open(scratch_dir, ".slot-backup-", &sfd, scratch, sizeof scratch, &linked, err,
                                       errlen);
    if (rc != 0)
        return rc;
    h.info.created_at_ms = wall_ms();
    if (map_lock)
        pthread_rwlock_rdlock(map_lock);
    rc = mdb_env_copyfd2(slot_store_env(st), sfd, MDB_CP_COMPACT);
    if (map_lock)
        pthread_rwlock_unlock(map_lock);
    h.info.copy_ms = mono_ms() - t0;
    if (rc != 0)
        snprintf(err, errlen, "copying the store to %s: %s", scratch_dir, mdb_strerror(rc));
    if (rc == 0)
        rc = copy_inspect(scratch, scratch_dir, &h.info, NULL, NULL, err, errlen);
    struct stat sb;
    if (rc == 0 && fstat(sfd, &sb) != 0) {
        rc = -errno;
        snprintf(err, errlen, "stat of the scratch copy in %s: %s", scratch_dir, strerror(-rc));
    }
    if (rc == 0) {
        h.info.data_bytes = (uint64_t)sb.st_size;
        h.info.file_bytes = h.info.data_bytes + SLOT_BACKUP_HEADER_BYTES;
        if (lseek(sfd, 0, SEEK_SET) != 0 || (rc = slot__backup_stream(sfd, -1, h.info.data_bytes, h.data_sha)) != 0) {
            rc = rc ? rc : -errno;
            snprintf(err, errlen, "reading the scratch copy in %s: %s", scratch_dir, slot_strerror(rc));
        }
    }
    if (rc == 0) {
        uint8_t raw[SLOT_BACKUP_HEADER_BYTES];
        slot__backup_header_pack(&h, raw);
        uint8_t again[SHA_BYTES];
        rc = slot__backup_write_all(fd, raw, sizeof raw);
        if (rc == 0 && lseek(sfd, 0, SEEK_SET) != 0)
            rc = -errno;
        if (rc == 0)
            rc = slot__backup_stream(sfd, fd, h.info.data_bytes, again);
        if (rc == 0 && memcmp(again, h.data_sha, SHA_BYTES) != 0) /* the scratch file changed under us */
            rc = SLOT_BACKUP_E_CHECKSUM;
        if (rc != 0)
            snprintf(err, errlen, "writing the backup: %s", slot_strerror(rc));
    }
    slot__backup_scratch_close(sfd, scratch, linked);
    h.info.total_ms = mono_ms() - t0;
    if (out)
        *out = h.info;
    return rc;
}

/* The folder part of path ("." when there is none) into dir. */
static void dir_of(const char *path, char *dir, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, cap, ".");
    else if (slash == path)
        snprintf(dir, cap, "/");
    else
        snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

int slot_store_backup(slot_store *st, const char *path, pthread_rwlock_t *map_lock, slot_backup_info *out, char *err,
                      size_t errlen)
{
    char tmp[PATH_BYTES], dir[PATH_BYTES];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        snprintf(err, errlen, "backup file name too long");
        return -ENAMETOOLONG;
    }
    dir_of(path, dir, sizeof dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(e));
        return -e;
    }
    int rc = slot_store_backup_fd(st, dir, fd, map_lock, out, err, errlen);
    if (rc == 0 && fsync(fd) != 0) {
        rc = -errno;
        snprintf(err, errlen, "fsync %s: %s", tmp, strerror(-rc));
    }
    if (close(fd) != 0 && rc == 0) {
        rc = -errno;
        snprintf(err, errlen, "close %s: %s", tmp, strerror(-rc));
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -errno;
        snprintf(err, errlen, "rename %s to %s: %s", tmp, path, strerror(-rc));
    }
    if (rc == 0 && (rc = slot_store_fsync_dir(dir)) != 0)
        snprintf(err, errlen, "fsync %s: %s", dir, strerror(-rc));
    if (rc != 0)
        unlink(tmp);
    return rc;
}

/* ---- restore and verify */

/*
 * The data of the backup open on fd (at its first data byte) into out_fd,
 * checked against the header's SHA-256, then synced (unless !durable: an
 * unlinked scratch copy read back at once needs no fsync); then the written
 * copy (named copy) inspected: its seq, epoch and digest must be the header's.
 */
static int extract(int fd, const backup_header *h, const char *file, int out_fd, const char *copy, bool durable,
                   slot_backup_inspect_fn inspect, void *arg, char *err, size_t errlen)
{
    uint8_t sha[SHA_BYTES];
    int rc = slot__backup_stream(fd, out_fd, h->info.data_bytes, sha);
    if (rc != 0) {
        snprintf(err, errlen, "copying the data of %s to %s: %s", file, copy, slot_strerror(rc));
        return rc;
    }
    if (memcmp(sha, h->data_sha, SHA_BYTES) != 0) {
        snprintf(err, errlen, "%s: %s (the file is damaged)", file, slot_strerror(SLOT_BACKUP_E_CHECKSUM));
        return SLOT_BACKUP_E_CHECKSUM;
    }
    if (durable && fsync(out_fd) != 0) {
        rc = -errno;
        snprintf(err, errlen, "fsync %s: %s", copy, strerror(-rc));
        return rc;
    }
    slot_backup_info seen = h->info;
    rc = copy_inspect(copy, file, &seen, inspect, arg, err, errlen);
    if (rc == 0 &&
        (seen.seq != h->info.seq || seen.epoch != h->info.epoch || strcmp(seen.digest, h->info.digest) != 0)) {
        rc = SLOT_BACKUP_E_DIGEST;
        snprintf(err, errlen,
                 "%s: %s (data: seq %" PRIu64 " epoch %" PRIu64 " digest %s; header: seq %" PRIu64 " epoch %" PRIu64
                 " digest %s)",
                 file, slot_strerror(rc), seen.seq, seen.epoch, seen.digest, h->info.seq, h->info.epoch,
                 h->info.digest);
    }
    return rc;
}

int slot_backup_verify(const char *file, const char *scratch_dir, slot_backup_info *out, slot_backup_inspect_fn inspect,
                       void *arg, char *err, size_t errlen)
{
    backup_header h;
    int fd;
    int rc = slot__backup_header_open(file, &fd, &h, err, errlen);
    if (out)
        *out = h.info;
    if (rc != 0)
        return rc;
    char scratch[PATH_BYTES];
    int sfd;
    bool linked;
    rc = slot__backup_scratch_open(scratch_dir, ".slot-verify-", &sfd, scratch, sizeof scratch, &linked, err, errlen);
    if (rc == 0) {
        rc = extract(fd, &h, file, sfd, scratch, true, inspect, arg, err, errlen);
        slot__backup_scratch_close(sfd, scratch, linked);
    }
    close(fd);
    return rc;
}

/*
 * Replaces st's data databases by those of the checked LMDB copy `copy`
 * (every entry, in key order: MDB_APPEND) and its seq by info's, in txn.
 * `name` is the file the messages name.
 */
static int copy_install(slot_store *st, MDB_txn *txn, const char *copy, const char *name, const slot_backup_info *info,
                        char *err, size_t errlen)
{
    slot_store *cst;
    char why[256];
    int rc = slot__store_open_copy(copy, &cst, why, sizeof why);
    if (rc != 0) {
        snprintf(err, errlen, "%s: the data is not a slotd store: %s", name, why);
        return rc;
    }
    MDB_txn *from = NULL;
    rc = mdb_txn_begin(cst->env, NULL, MDB_RDONLY, &from);
    if (rc == 0)
        rc = slot_store_clear_data(st, txn);
    uint64_t n = 0;
    for (int db = DB_META + 1; rc == 0 && db < SLOT_STORE_DBS; db++) {
        MDB_cursor *cur = NULL;
        rc = mdb_cursor_open(from, cst->dbi[db], &cur);
        MDB_val k, v;
        int g = rc == 0 ? mdb_cursor_get(cur, &k, &v, MDB_FIRST) : rc;
        while (rc == 0 && g == 0) {
            rc = mdb_put(txn, st->dbi[db], &k, &v, MDB_APPEND);
            n++;
            if (rc == 0)
                g = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        }
        if (rc == 0 && g != MDB_NOTFOUND)
            rc = g;
        if (cur)
            mdb_cursor_close(cur);
    }
    if (rc == 0)
        rc = slot__store_seq_set(st, txn, info->seq, info->epoch);
    if (from)
        mdb_txn_abort(from);
    slot_store_close(cst);
    if (rc == 0)
        st->writes += n;
    else
        snprintf(err, errlen, "installing %s: %s", name, slot_strerror(rc));
    return rc;
}

int slot_backup_install(slot_store *st, MDB_txn *txn, const char *file, const char *scratch_dir, slot_backup_info *out,
                        char *err, size_t errlen)
{
    backup_header h;
    int fd;
    int rc = slot__backup_header_open(file, &fd, &h, err, errlen);
    if (out)
        *out = h.info;
    if (rc != 0)
        return rc;
    char scratch[PATH_BYTES];
    int sfd;
    bool linked;
    rc = slot__backup_scratch_open(scratch_dir, ".slot-install-", &sfd, scratch, sizeof scratch, &linked, err, errlen);
    if (rc == 0) {
        rc = extract(fd, &h, file, sfd, scratch, false, NULL, NULL, err,
                     errlen); /* txn is untouched until this passed */
        if (rc == 0)
            rc = copy_install(st, txn, scratch, file, &h.info, err, errlen);
        slot__backup_scratch_close(sfd, scratch, linked);
    }
    close(fd);
    return rc;
}

bool slot_backup_refused(int rc)
{
    return rc <= SLOT_BACKUP_E_MAGIC && rc >= SLOT_BACKUP_E_DIGEST;
}

/*
 * Takes data_dir's slotd.lock (as slotd does: flock LOCK_EX|LOCK_NB) into
 * *lock_fd (-1 with lock_held: the caller has it), and checks that the folder may take a restore: nothing but
 * slotd.lock in it, unless force (then anything but a lock held by slotd).
 */
static int dir_claim(const char *data_dir, bool force, bool lock_held, int *lock_fd, char *err, size_t errlen)
{
    *lock_fd = -1;
    int mk = slot_store_mkdir(data_dir); /* its name durable before the store renamed into it */
    if (mk != 0) {
        snprintf(err, errlen, "cannot create the data folder %s (or fsync its parent): %s", data_dir, strerror(-mk));
        return mk;
    }
    char path[PATH_BYTES];
    if ((size_t)snprintf(path, sizeof path, "%s/slotd.lock", data_dir) >= sizeof path) {
        snprintf(err, errlen, "data folder name too long");
        return -ENAMETOOLONG;
    }
    int fd = -1; /* with lock_held, the caller's lock stands for ours */
    if (!lock_held && (fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
        return -e;
    }
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
        pid[n > 0 ? n : 0] = 0;
        pid[strcspn(pid, "\n")] = 0;
        snprintf(err, errlen, "the data folder %s is in use by a slotd (pid %s); stop it first", data_dir,
                 pid[0] ? pid : "?");
        close(fd);
        return SLOT_BACKUP_E_IN_USE;
    }
    DIR *d = opendir(data_dir);
    if (!d) {
        int e = errno;
        snprintf(err, errlen, "cannot read the data folder %s: %s", data_dir, strerror(e));
        if (fd >= 0)
            close(fd);
        return -e;
    }
    int rc = 0;
    for (struct dirent *de; rc == 0 && (de = readdir(d)) != NULL;) {
        const char *n = de->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strcmp(n, "slotd.lock") == 0 || force)
            continue;
        rc = SLOT_BACKUP_E_NOT_EMPTY;
        snprintf(err, errlen,
                 "the data folder %s is not empty (it has %s); restore into an empty folder, or "
                 "force it to replace the store (slotctl restore --force)",
                 data_dir, n);
    }
    closedir(d);
    if (rc != 0) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    *lock_fd = fd;
    return 0;
}

int slot_backup_restore(const char *file, const char *data_dir, unsigned flags, slot_backup_info *out, char *err,
                        size_t errlen)
{
    backup_header h;
    int fd;
    int rc = slot__backup_header_open(file, &fd, &h, err, errlen);
    if (out)
        *out = h.info;
    if (rc != 0)
        return rc;
    int lock_fd;
    rc = dir_claim(data_dir, (flags & SLOT_BACKUP_RESTORE_FORCE) != 0, (flags & SLOT_BACKUP_RESTORE_LOCK_HELD) != 0,
                   &lock_fd, err, errlen);
    char tmp[PATH_BYTES], dst[PATH_BYTES], lockmdb[PATH_BYTES];
    if (rc == 0 && ((size_t)snprintf(tmp, sizeof tmp, "%s/data.mdb.restore", data_dir) >= sizeof tmp ||
                    (size_t)snprintf(dst, sizeof dst, "%s/data.mdb", data_dir) >= sizeof dst ||
                    (size_t)snprintf(lockmdb, sizeof lockmdb, "%s/lock.mdb", data_dir) >= sizeof lockmdb)) {
        rc = -ENAMETOOLONG;
        snprintf(err, errlen, "data folder name too long");
    }
    int out_fd = -1;
    if (rc == 0 && (out_fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(-rc));
    }
    if (rc == 0)
        rc = extract(fd, &h, file, out_fd, tmp, true, NULL, NULL, err, errlen);
    if (out_fd >= 0)
        close(out_fd);
    /* lock.mdb describes the readers of the old data.mdb: LMDB rebuilds it. */
    if (rc == 0 && unlink(lockmdb) != 0 && errno != ENOENT) {
        rc = -errno;
        snprintf(err, errlen, "cannot remove %s: %s", lockmdb, strerror(-rc));
    }
    if (rc == 0 && rename(tmp, dst) != 0) {
        rc = -errno;
        snprintf(err, errlen, "rename %s to %s: %s", tmp, dst, strerror(-rc));
    }
    if (rc == 0 && (rc = slot_store_fsync_dir(data_dir)) != 0)
        snprintf(err, errlen, "fsync %s: %s", data_dir, strerror(-rc));
    if (rc != 0 && out_fd >= 0)
        unlink(tmp);
    if (lock_fd >= 0)
        close(lock_fd);
    close(fd);
    return rc;
}
