/*
 * slot/rlog.h — the batch log on disk: the replication records (slot/wset.h)
 * of a member, numbered by seq without gaps, in a directory of segments.
 *
 * A replica appends each record it receives, syncs, acks, and applies
 * committed records to its LMDB later; the primary logs its own records the
 * same way so it can send them to a lagging replica (docs/design.md, "Beyond
 * one machine"). The log checks what Raft's log matching needs: a record's
 * seq is the last one + 1 and its prev_epoch is the epoch of the record
 * before it (or of the log's base).
 *
 * On disk: one directory, segment files named by their first seq as 16
 * lower-case hex digits, "0000000000000001.seg". A segment is a 32-byte
 * header, then whole records back to back:
 *
 *   offset size  field (little-endian, as records are)
 *        0    4  magic        SLOT_RLOG_SEG_MAGIC ("SLSG")
 *        4    2  version      1
 *        6    2  flags        0
 *        8    8  first_seq    seq of the segment's first record (= the name)
 *       16    8  prev_epoch   epoch of record first_seq-1 (0: none known)
 *       24    4  reserved     0
 *       28    4  crc          CRC-32 (zlib's) of bytes 0..27
 *
 * A new segment starts when the active one holds at least one record and the
 * next record would take it past segment_bytes; a record larger than that
 * gets a segment of its own. Other files in the directory are left alone,
 * except "*.seg.tmp" (a reset that did not finish), which open removes.
 *
 * Crash safety: records reach the disk in append order; after a crash the
 * last segment may end in a torn record (a prefix of one, or zeros), which
 * open cuts off. Damage anywhere else — a bad record followed by a good one,
 * a bad record in an older segment, a gap or a non-increasing seq between
 * records or segments — is corruption: open refuses the log with
 * SLOT_RLOG_E_CORRUPT and changes nothing, so no acknowledged record is ever
 * dropped silently. A bad last record cannot be told from a torn one; open
 * cuts it off and reports it (slot_rlog_open_info, the log callback). The
 * test for "followed by a good record" looks for a valid record at every
 * byte offset after the bad one (at most one record's worth of bytes, and
 * only on this failure path); a torn record whose payload happens to hold a
 * whole valid record is therefore refused as corrupt rather than cut: the
 * error goes the safe way.
 *
 * Memory: 4 bytes per record (its offset in its segment; the array grows by
 * doubling, so up to 8), about 64 bytes per segment, 16 bytes per change of
 * epoch, and one read buffer as large as the largest record read (at most
 * SLOT_WSET_RECORD_BYTES_MAX). trim_before bounds all of it.
 *
 * Errors: 0 or a negative value: -errno from the file system (-ENOSPC is
 * passed through as it is, so the caller can answer storage_full), a
 * SLOT_WSET_E_* for a record that does not decode, or a SLOT_RLOG_E_* below;
 * slot_strerror (slot/error.h) names each.
 * After a failed write the log is as before the call (a partial record is cut
 * off again); if even that fails, the log refuses further appends with
 * SLOT_RLOG_E_BROKEN until it is reopened. A failed fdatasync or directory
 * fsync breaks the log the same way (the kernel may have dropped the pages it
 * could not write, so a retried sync proves nothing; PostgreSQL's lesson):
 * the caller must not ack, answers storage_full for -ENOSPC, and reopens.
 *
 * Threads: a log belongs to one thread at a time (the replication thread);
 * no function takes a lock. It may move to another thread between calls with
 * the usual happens-before (a mutex or a queue hand-off).
 */
#ifndef SLOT_RLOG_H
#define SLOT_RLOG_H

#include <stddef.h>
#include <stdint.h>

#include "slot/error.h"

#define SLOT_RLOG_SEG_MAGIC 0x47534c53u /* bytes "SLSG" */
#define SLOT_RLOG_SEG_VERSION 1
#define SLOT_RLOG_SEG_HEADER_BYTES 32
#define SLOT_RLOG_SEGMENT_BYTES_DEFAULT (64u << 20) /* 64 MiB: trim_before frees this much at a time */
#define SLOT_RLOG_SEGMENT_BYTES_MIN 64u             /* tests use tiny segments; real logs want MiBs */
#define SLOT_RLOG_SEGMENT_BYTES_MAX (1u << 30)      /* offsets in a segment are 32-bit */

_Static_assert((uint64_t)SLOT_RLOG_SEGMENT_BYTES_MAX + 2u * (64u << 20) < UINT32_MAX,
               "a segment (limit + one oversized record) must fit 32-bit offsets");

/* Log errors: SLOT_RLOG_E_CORRUPT, _SEQ, _EPOCH and _BROKEN, defined with their
 * messages in the registry of slot/error.h (SLOT_RC_MAP, the RLOG range). */

typedef struct slot_rlog slot_rlog;

/* A log line from the log (what open repaired, or what it found damaged).
 * msg is NUL-terminated and valid during the call only. */
typedef void (*slot_rlog_log_fn)(void *ctx, const char *msg);

typedef struct slot_rlog_opts {
    uint64_t segment_bytes; /* SLOT_RLOG_SEGMENT_BYTES_MIN..MAX; 0 = the default */
    slot_rlog_log_fn log;   /* NULL: no log lines */
    void *log_ctx;
} slot_rlog_opts;

/* What open found and repaired. */
typedef struct slot_rlog_open_info {
    uint64_t records;         /* records in the log after open */
    uint64_t segments;        /* segment files after open */
    uint64_t truncated_bytes; /* bytes of torn tail cut off (0: the log was clean) */
    uint64_t removed_files;   /* empty torn last segments and leftover *.seg.tmp removed */
} slot_rlog_open_info;

/*
 * slot_rlog_open — open (creating it, mode 0700, if missing) the log in dir,
 * validate every record of every segment, build the index and repair a torn
 * tail (see the header comment). dir's parent and dir itself are fsynced
 * (also when nothing changed: names a crashed run made may not be on disk
 * yet), so every segment the log holds keeps its name through a power cut,
 * and the last segment is fdatasynced (a killed run's appends may be only in
 * the page cache: synced here, before they can be acknowledged again);
 * a failed fsync fails the open.
 *   dir: a directory path, NUL-terminated; copied.
 *   opts: NULL for the defaults. info: NULL, or filled on success.
 *   *out: the log on success (close it with slot_rlog_close); NULL on error.
 *   Returns 0; -EINVAL for bad options; SLOT_RLOG_E_CORRUPT (the files are
 *   left exactly as they were, and the callback says where); -errno.
 *   Cost: reads every segment once.
 */
int slot_rlog_open(const char *dir, const slot_rlog_opts *opts, slot_rlog **out, slot_rlog_open_info *info);

/* slot_rlog_close — close the files and free the log (NULL-safe). Does not
 * sync: call slot_rlog_sync first for what must be durable. */
void slot_rlog_close(slot_rlog *log);

/*
 * slot_rlog_append — append one record (slot/wset.h) after the last one.
 *   rec: rec_bytes bytes of exactly one record; validated completely (crc
 *     included) before anything is written; copied to the file.
 *   The record's seq must be last + 1, or any seq >= 1 when the log is empty
 *   and has no base (new, never reset). Its prev_epoch must equal the epoch
 *   of record seq-1 (the base's epoch for the first record after a reset).
 *   Returns 0; a SLOT_WSET_E_* (not a record, or trailing bytes:
 *   SLOT_WSET_E_TRAILING); SLOT_RLOG_E_SEQ; SLOT_RLOG_E_EPOCH; -ENOSPC and
 *   other -errno (the log unchanged); SLOT_RLOG_E_BROKEN.
 *   Not durable until slot_rlog_sync returns 0.
 */
int slot_rlog_append(slot_rlog *log, const void *rec, size_t rec_bytes);

/*
 * slot_rlog_sync — make every appended record durable: fdatasync of the
 * active segment (an earlier segment was synced when the log rolled over),
 * then an fsync of the directory if a segment was created since the last sync.
 *   Returns 0; -errno (then nothing is known to be durable beyond the last
 *   successful sync; the caller must not ack, and the log is broken until
 *   reopened); SLOT_RLOG_E_BROKEN.
 */
int slot_rlog_sync(slot_rlog *log);

/*
 * slot_rlog_sync_detach — slot_rlog_sync's work handed to another thread (a
 * standalone slotd's flusher, --durability pipelined), so that appends go on
 * while the flush runs: marks the log clean and returns what a flush of
 * everything appended so far must cover.
 *   *fd: a duplicate of the active segment's descriptor to fdatasync, or -1
 *     (nothing written since the last flush); *dir_fd: a duplicate of the
 *     directory's to fsync, or -1 (no segment created since). The caller
 *     closes both. *seq: the last record's seq, durable once both succeeded.
 *   A failed flush of either means the log may have lost pages: the caller
 *   must not make anything more durable through it (slotd stops; the next
 *   open reads what is really on disk).
 *   Returns 0; -errno (dup failed; nothing marked); SLOT_RLOG_E_BROKEN.
 *   Thread: the log's (under the caller's lock); the flush itself anywhere.
 */
int slot_rlog_sync_detach(slot_rlog *log, int *fd, int *dir_fd, uint64_t *seq);

/*
 * slot_rlog_read — the record numbered seq, checked again (crc included)
 * after reading it.
 *   *rec, *rec_bytes: the record, in a buffer the log owns, valid until the
 *     next call on this log other than last, first and epoch_of.
 *   Returns 0; -ENOENT when seq is not in the log; SLOT_RLOG_E_CORRUPT when
 *   the file no longer holds what was validated; -errno.
 */
int slot_rlog_read(slot_rlog *log, uint64_t seq, const uint8_t **rec, size_t *rec_bytes);

/*
 * slot_rlog_last — the last record's epoch and seq; for an empty log its
 * base: (prev_epoch, start_seq - 1) after slot_rlog_reset, (0, 0) for a new log.
 * Either pointer may be NULL.
 */
void slot_rlog_last(const slot_rlog *log, uint64_t *epoch, uint64_t *seq);

/* slot_rlog_first — the first record's seq; for an empty log, the seq the
 * next append must have (1 for a new log, where any seq is accepted). */
uint64_t slot_rlog_first(const slot_rlog *log);

/* slot_rlog_count — records in the log. */
uint64_t slot_rlog_count(const slot_rlog *log);

/*
 * slot_rlog_epoch_of — the epoch of record seq, for the prevLogTerm check.
 *   seq: first-1 .. last; first-1 answers from the segment header (the
 *   base after a reset or trim), which is 0 when nothing is known.
 *   Returns 0 with *epoch set; -ENOENT for any other seq (a new, empty log
 *   knows none).
 */
int slot_rlog_epoch_of(const slot_rlog *log, uint64_t seq, uint64_t *epoch);

/*
 * slot_rlog_truncate_after — drop every record after seq (a divergent tail),
 * across segments: later segments are deleted newest first (so a crash in
 * between leaves a shorter, still contiguous log), the containing one is cut.
 * Durable on return (files and directory synced).
 *   seq: first-1 .. any; seq >= last changes nothing; seq = first-1 leaves an
 *   empty log with the same base.
 *   Returns 0; -ERANGE for seq < first-1 (use reset); -errno (then the log
 *   holds a contiguous prefix between seq and its old last; reopen it).
 */
int slot_rlog_truncate_after(slot_rlog *log, uint64_t seq);

/*
 * slot_rlog_trim_before — delete whole segments whose records are all below
 * seq (after a checkpoint: the applied state covers them). The active segment
 * is never deleted, so at most one segment's worth below seq remains, and
 * epoch_of(first-1) still answers from the first kept segment's header.
 * Oldest first; directory synced on return.
 *   Returns 0 (also when nothing could go) or -errno.
 */
int slot_rlog_trim_before(slot_rlog *log, uint64_t seq);

/*
 * slot_rlog_reset — empty the log and give it a base (after installing a
 * snapshot that covers start_seq-1): the next append must have seq
 * start_seq and prev_epoch equal to prev_epoch.
 *   start_seq: >= 1. prev_epoch: the epoch of record start_seq-1 (0: none).
 *   Old segments are deleted oldest first, then a new empty segment is made
 *   (written as *.seg.tmp, synced, renamed, directory synced). A crash in
 *   between leaves a suffix of the old log or an empty one; repeating the
 *   reset is safe. Returns 0, -EINVAL (start_seq 0) or -errno.
 */
int slot_rlog_reset(slot_rlog *log, uint64_t start_seq, uint64_t prev_epoch);

#endif
