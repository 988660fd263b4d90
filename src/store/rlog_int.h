/*
 * rlog_int.h — what the two halves of the batch log share (internal; the
 * public API is slot/rlog.h). rlog_seg.c owns the segment files: their
 * names, their 32-byte header, and open's scan, validation and torn-tail
 * repair. rlog.c owns the log API on top: append, sync, read, truncate_after,
 * trim_before, reset, and the in-memory index both halves fill.
 *
 * Threads: as slot/rlog.h — a log belongs to one thread at a time.
 */
#ifndef SLOT_RLOG_INT_H
#define SLOT_RLOG_INT_H

#include "slot/rlog.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
