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
#include "slot/rlog.h"
#include "slot/backup.h"

/* ==== from store_int.h ======================================================= */
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

/* ==== from rlog_int.h ======================================================== */
/*
 * rlog_int.h — what the two halves of the batch log share (internal; the
 * public API is slot/rlog.h). rlog_seg.c owns the segment files: their
 * names, their 32-byte header, and open's scan, validation and torn-tail
 * repair. rlog.c owns the log API on top: append, sync, read, truncate_after,
 * trim_before, reset, and the in-memory index both halves fill.
 *
 * Threads: as slot/rlog.h — a log belongs to one thread at a time.
 */
/* A segment's file name: 16 lower-case hex digits + ".seg" + NUL. */
#define SLOT__RLOG_SEG_NAME_BYTES 21

/* One segment file, as the index knows it. */
typedef struct slot__rlog_seg {
    uint64_t first_seq;
    uint64_t prev_epoch; /* epoch of record first_seq-1 */
    uint64_t count;      /* records */
    uint64_t size;       /* file bytes: header + records */
    uint64_t idx;        /* index of its first record in log->offs */
} slot__rlog_seg;

/* A change of epoch: from seq on (up to the next run), records have epoch. */
typedef struct slot__rlog_run {
    uint64_t seq; /* first seq with this epoch */
    uint64_t epoch;
} slot__rlog_run;

struct slot_rlog {
    char *dir;
    int dirfd;
    uint64_t seg_bytes;
    slot_rlog_log_fn logfn;
    void *log_ctx;
    slot__rlog_seg *segs; /* sorted by first_seq, contiguous; the last one is active */
    size_t nsegs, segs_cap;
    uint32_t *offs; /* offs[i]: offset of record first+i in its segment */
    uint64_t noffs, offs_cap;
    slot__rlog_run *runs; /* epoch changes, by seq */
    size_t nruns, runs_cap;
    int wfd;        /* the active segment, or -1 when there is none */
    bool wdirty;    /* written since its last fdatasync */
    bool dir_dirty; /* a segment was created since the last directory fsync */
    bool broken;
    int rfd; /* a cached read fd of an older segment */
    uint64_t rfd_first;
    uint8_t *rbuf;
    size_t rcap;
};

/* ---- rlog.c: the log's messages and its in-memory index ---------------- */

/* slot__rlog_logf — format one line (at most 511 bytes, cut beyond) and pass
 * it to the log's callback (slot_rlog_opts.log); nothing when there is none. */
void slot__rlog_logf(slot_rlog *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* slot__rlog_grow — make *arr (of elem-byte elements, capacity *cap) hold at
 * least need elements, doubling from 16. Returns 0 or -ENOMEM (then *arr and
 * *cap are as they were). */
int slot__rlog_grow(void **arr, size_t *cap, size_t need, size_t elem);

/* slot__rlog_grow_offs — room for need record offsets in log->offs; 0 or -ENOMEM. */
int slot__rlog_grow_offs(slot_rlog *log, uint64_t need);

/* slot__rlog_last_epoch — the epoch of the last record, or the log's base
 * epoch (its first segment's prev_epoch) when it holds none; 0 for no segment. */
uint64_t slot__rlog_last_epoch(const slot_rlog *log);

/* slot__rlog_note_epoch — note that the record just indexed at seq has
 * epoch; a new run when it differs from the last one. The caller has made
 * room for one more run (slot__rlog_grow). */
void slot__rlog_note_epoch(slot_rlog *log, uint64_t seq, uint64_t epoch);

/* ---- rlog_seg.c: segment files ----------------------------------------- */

/* slot__rlog_seg_name — the file name of the segment that starts at first_seq. */
void slot__rlog_seg_name(char out[SLOT__RLOG_SEG_NAME_BYTES], uint64_t first_seq);

/* slot__rlog_seg_header — the 32-byte segment header (layout: slot/rlog.h)
 * for a segment starting at first_seq after a record of epoch prev_epoch. */
void slot__rlog_seg_header(uint8_t h[SLOT_RLOG_SEG_HEADER_BYTES], uint64_t first_seq, uint64_t prev_epoch);

/* slot__rlog_open_seg — openat(2) the segment that starts at first_seq in the
 * log's directory with flags (| O_CLOEXEC, mode 0600). Returns the fd (the
 * caller's to close) or -errno. */
int slot__rlog_open_seg(slot_rlog *log, uint64_t first_seq, int flags);

/* slot__rlog_unlink_seg — remove that segment's file; a missing one is not
 * an error. Returns 0 or -errno. The directory still needs an fsync. */
int slot__rlog_unlink_seg(slot_rlog *log, uint64_t first_seq);

/* slot__rlog_fsync_dir — fsync the log's directory and clear log->dir_dirty.
 * Returns 0 or -errno (dir_dirty then stays set). */
int slot__rlog_fsync_dir(slot_rlog *log);

/*
 * slot__rlog_recover — open's work on disk, for a log whose fields
 * slot_rlog_open has set (dir, seg_bytes, logfn, the fds at -1) and whose
 * index is empty: create log->dir when missing (slot_store_mkdir: its parent
 * is fsynced either way), read every segment, validate it record by record
 * into the index, then — only once everything validated — remove leftover
 * "*.seg.tmp" files and a last segment with a torn header, cut a torn tail
 * off the last segment, open that segment as log->wfd, and fsync log->dir. Counts what it removed and cut in
 * info->removed_files and info->truncated_bytes.
 * Returns 0, -errno, -ENOMEM, or SLOT_RLOG_E_CORRUPT (then nothing on disk was changed);
 * on error the caller closes the log (slot_rlog_close frees what was built).
 */
int slot__rlog_recover(slot_rlog *log, slot_rlog_open_info *info);

/* ==== from store_backup_int.h ================================================ */
/*
 * store_backup_int.h — what store_backup.c (taking, verifying, installing
 * and restoring backups) and store_backup_file.c (the backup file's header,
 * its bytes and the scratch files) share; not seen outside src/store/. The
 * format is slot/backup.h's: a SLOT_BACKUP_HEADER_BYTES header, then the
 * LMDB copy (docs/design.md, "Backups"). Any thread: nothing here keeps
 * state between calls.
 */
#define SHA_BYTES 32    /* a SHA-256 */
#define PATH_BYTES 4096 /* a path the backup code builds (scratch files, the data folder's files) */

/* A backup file's header, as read or to be written. */
typedef struct backup_header {
    slot_backup_info info;       /* seq, epoch, data_bytes, created_at_ms, digest (file_bytes: when read) */
    uint8_t data_sha[SHA_BYTES]; /* the SHA-256 of the data after the header */
} backup_header;

/* slot__backup_write_all — writes n bytes of p to fd, again after EINTR. 0 or -errno. */
int slot__backup_write_all(int fd, const void *p, size_t n);

/* slot__backup_read_all — reads exactly n bytes from fd into p. 0, -EPIPE (the end came first) or -errno. */
int slot__backup_read_all(int fd, void *p, size_t n);

/* slot__backup_hex_of — n bytes of raw as 2n lowercase hex digits and a NUL into hex (room for 2n + 1). */
void slot__backup_hex_of(const uint8_t *raw, size_t n, char *hex);

/*
 * slot__backup_stream — copies n bytes from in (at its offset) to out (-1:
 * nowhere), hashing them into sha. A buffer of SLOT_BACKUP_IO_BYTES from
 * the heap. 0, -EPIPE (in ended early), -ENOMEM, -errno, or EIO (libcrypto
 * failed).
 */
int slot__backup_stream(int in, int out, uint64_t n, uint8_t sha[SHA_BYTES]);

/*
 * slot__backup_header_pack — h as the file's SLOT_BACKUP_HEADER_BYTES bytes
 * (big-endian fields, the CRC-32 last) into raw. h->info.digest must be 64
 * lowercase hex digits (slot_store_digest's); asserted.
 */
void slot__backup_header_pack(const backup_header *h, uint8_t raw[SLOT_BACKUP_HEADER_BYTES]);

/*
 * slot__backup_header_open — opens file and reads its header into h,
 * checking it (magic, version, CRC-32, fields, the file's length). Returns 0
 * with *fd_out at the data's first byte (the caller closes it); else -errno
 * or a SLOT_BACKUP_E_* code, *fd_out = -1, and err[errlen] says why.
 */
int slot__backup_header_open(const char *file, int *fd_out, backup_header *h, char *err, size_t errlen);

/*
 * slot__backup_scratch_open — a scratch file in dir (prefix names it,
 * "XXXXXX" is appended), open on *fd_out; name[cap] gets the path to open
 * it by. Where /proc/self/fd is there (Linux), the file is unlinked at once
 * and name is /proc/self/fd/N, so a killed slotd or slotctl leaves no
 * scratch file behind (*linked = false); elsewhere it keeps its name until
 * slot__backup_scratch_close (*linked = true). 0, or -errno with err set.
 */
int slot__backup_scratch_open(const char *dir, const char *prefix, int *fd_out, char *name, size_t cap, bool *linked,
                              char *err, size_t errlen);

/* slot__backup_scratch_close — closes fd (unless -1) and, when linked, removes the file name. */
void slot__backup_scratch_close(int fd, const char *name, bool linked);

#endif
