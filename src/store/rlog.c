/* rlog.c — the batch log's API: open and close, append and sync, reading,
 * truncate_after, trim_before and reset, over the in-memory index; see
 * slot/rlog.h. The segment files themselves (names, header, open's scan and
 * repair) are rlog_seg.c's (store_int.h). */
#include "store_int.h"

#include "slot/assert.h"
#include "slot/failpoint.h"
#include "slot/wset.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void slot__rlog_logf(slot_rlog *log, const char *fmt, ...)
{
    if (!log->logfn)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    log->logfn(log->log_ctx, line);
}

/* ---- little helpers ---------------------------------------------------- */

static int pwrite_all(int fd, const void *data, size_t len, uint64_t off)
{
    const uint8_t *p = data;
    while (len) {
        ssize_t n = pwrite(fd, p, len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        SLOT_ASSERT(n > 0);
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

/* Returns 0, -errno, or 1 when the file ended first. */
static int pread_all(int fd, void *data, size_t len, uint64_t off)
{
    uint8_t *p = data;
    while (len) {
        ssize_t n = pread(fd, p, len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return 1;
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

int slot__rlog_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *p = realloc(*arr, c * elem);
    if (!p)
        return -ENOMEM;
    *arr = p;
    *cap = c;
    return 0;
}

int slot__rlog_grow_offs(slot_rlog *log, uint64_t need)
{
    size_t cap = (size_t)log->offs_cap;
    int rc = slot__rlog_grow((void **)&log->offs, &cap, (size_t)need, sizeof(uint32_t));
    log->offs_cap = cap;
    return rc;
}

static uint64_t log_first(const slot_rlog *log)
{
    return log->nsegs ? log->segs[0].first_seq : 1;
}

uint64_t slot__rlog_last_epoch(const slot_rlog *log)
{
    if (log->noffs)
        return log->runs[log->nruns - 1].epoch;
    return log->nsegs ? log->segs[0].prev_epoch : 0;
}

/* Record the epoch of the record just indexed at seq. */
void slot__rlog_note_epoch(slot_rlog *log, uint64_t seq, uint64_t epoch)
{
    if (log->nruns && log->runs[log->nruns - 1].epoch == epoch)
        return;
    SLOT_ASSERT(log->nruns < log->runs_cap);
    log->runs[log->nruns++] = (slot__rlog_run){seq, epoch};
}

static void close_rfd(slot_rlog *log)
{
    if (log->rfd >= 0)
        close(log->rfd);
    log->rfd = -1;
}

/* ---- open and close --------------------------------------------------- */

int slot_rlog_open(const char *dir, const slot_rlog_opts *opts, slot_rlog **out, slot_rlog_open_info *info)
{
    *out = NULL;
    slot_rlog_opts o = {0};
    if (opts)
        o = *opts;
    if (o.segment_bytes == 0)
        o.segment_bytes = SLOT_RLOG_SEGMENT_BYTES_DEFAULT;
    if (o.segment_bytes < SLOT_RLOG_SEGMENT_BYTES_MIN || o.segment_bytes > SLOT_RLOG_SEGMENT_BYTES_MAX || dir == NULL ||
        dir[0] == '\0')
        return -EINVAL;
    slot_rlog *log = calloc(1, sizeof(*log));
    if (!log)
        return -ENOMEM;
    log->dirfd = log->wfd = log->rfd = -1;
    log->seg_bytes = o.segment_bytes;
    log->logfn = o.log;
    log->log_ctx = o.log_ctx;
    log->dir = strdup(dir);
    slot_rlog_open_info inf = {0};
    int rc = log->dir ? slot__rlog_recover(log, &inf) : -ENOMEM;
    if (rc) {
        slot_rlog_close(log);
        return rc;
    }
    /* What a killed run appended may still be only in the page cache: the
     * last segment is made durable by the first slot_rlog_sync, before any of
     * it is acknowledged again (earlier segments were synced at their rollover). */
    if (log->nsegs > 0) {
        int fd = slot__rlog_open_seg(log, log->segs[log->nsegs - 1].first_seq, O_RDONLY);
        if (fd < 0 || fdatasync(fd) < 0) {
            rc = fd < 0 ? fd : -errno;
            if (fd >= 0)
                close(fd);
            slot__rlog_logf(log, "rlog: open: cannot sync the last segment: %s", strerror(-rc));
            slot_rlog_close(log);
            return rc;
        }
        close(fd);
    }
    inf.records = log->noffs;
    inf.segments = log->nsegs;
    if (info)
        *info = inf;
    *out = log;
    return 0;
}

void slot_rlog_close(slot_rlog *log)
{
    if (!log)
        return;
    close_rfd(log);
    if (log->wfd >= 0)
        close(log->wfd);
    if (log->dirfd >= 0)
        close(log->dirfd);
    free(log->segs);
    free(log->offs);
    free(log->runs);
    free(log->rbuf);
    free(log->dir);
    free(log);
}

/* ---- append and sync --------------------------------------------------- */

/* A failed fdatasync may have dropped the dirty pages it could not write
 * (and a second call would then succeed with the data lost), so the log
 * trusts nothing written since the last good sync: it refuses further work
 * until it is reopened, which reads back what is really on disk. */
static int sync_failed(slot_rlog *log, const char *what)
{
    int rc = -errno;
    slot__rlog_logf(log, "rlog: %s of %s failed: %s; the log refuses writes until reopened", what, log->dir,
                    strerror(-rc));
    log->broken = true;
    return rc;
}

/* Create the next segment (the old active one was synced) and make it active. */
static int new_segment(slot_rlog *log, uint64_t first_seq, uint64_t prev_epoch)
{
    uint8_t h[SLOT_RLOG_SEG_HEADER_BYTES];
    slot__rlog_seg_header(h, first_seq, prev_epoch);
    int fd = slot__rlog_open_seg(log, first_seq, O_RDWR | O_CREAT | O_EXCL);
    if (fd < 0)
        return fd;
    int rc = pwrite_all(fd, h, sizeof(h), 0);
    if (rc) {
        close(fd);
        slot__rlog_unlink_seg(log, first_seq);
        return rc;
    }
    if (log->wfd >= 0)
        close(log->wfd);
    log->wfd = fd;
    log->wdirty = true;
    log->dir_dirty = true;
    log->segs[log->nsegs++] = (slot__rlog_seg){.first_seq = first_seq,
                                               .prev_epoch = prev_epoch,
                                               .size = SLOT_RLOG_SEG_HEADER_BYTES,
                                               .idx = log->noffs};
    return 0;
}

int slot_rlog_append(slot_rlog *log, const void *rec, size_t rec_bytes)
{
    if (log->broken)
        return SLOT_RLOG_E_BROKEN;
    slot_wset_rec r;
    int rc = slot_wset_decode(rec, rec_bytes, &r);
    if (rc)
        return rc;
    if (r.record_bytes != rec_bytes)
        return SLOT_WSET_E_TRAILING;
    if (log->nsegs) {
        if (r.hdr.seq != log_first(log) + log->noffs)
            return SLOT_RLOG_E_SEQ;
        if (r.hdr.prev_epoch != slot__rlog_last_epoch(log))
            return SLOT_RLOG_E_EPOCH;
    }
    /* Room in every array first, so nothing can fail after the write. */
    if ((rc = slot__rlog_grow_offs(log, log->noffs + 1)) ||
        (rc = slot__rlog_grow((void **)&log->runs, &log->runs_cap, log->nruns + 1, sizeof(slot__rlog_run))) ||
        (rc = slot__rlog_grow((void **)&log->segs, &log->segs_cap, log->nsegs + 1, sizeof(slot__rlog_seg))))
        return rc;
    slot__rlog_seg *s = log->nsegs ? &log->segs[log->nsegs - 1] : NULL;
    if (!s || (s->count > 0 && s->size + rec_bytes > log->seg_bytes)) {
        if (s && log->wdirty) {
            if (fdatasync(log->wfd) < 0)
                return sync_failed(log, "fdatasync");
            log->wdirty = false;
        }
        if ((rc = new_segment(log, r.hdr.seq, r.hdr.prev_epoch)))
            return rc;
        s = &log->segs[log->nsegs - 1];
    }
    SLOT_ASSERT(s->size + rec_bytes < UINT32_MAX);
    if ((rc = pwrite_all(log->wfd, rec, rec_bytes, s->size))) {
        if (ftruncate(log->wfd, (off_t)s->size) < 0) {
            slot__rlog_logf(log,
                            "rlog: append of seq %" PRIu64 " failed (%s) and cutting it off "
                            "failed too (%s)",
                            r.hdr.seq, strerror(-rc), strerror(errno));
            log->broken = true;
        }
        return rc;
    }
    log->offs[log->noffs++] = (uint32_t)s->size;
    slot__rlog_note_epoch(log, r.hdr.seq, r.hdr.epoch);
    s->size += rec_bytes;
    s->count++;
    log->wdirty = true;
    return 0;
}

int slot_rlog_sync(slot_rlog *log)
{
    if (log->broken)
        return SLOT_RLOG_E_BROKEN;
    if (SLOT_ARMED(NO_FLUSH)) /* the planted fault (slot/failpoint.h): nothing reaches the disk */
        return 0;
    if (log->wfd >= 0 && log->wdirty) {
        if (fdatasync(log->wfd) < 0)
            return sync_failed(log, "fdatasync");
        log->wdirty = false;
    }
    if (log->dir_dirty && slot__rlog_fsync_dir(log) < 0)
        return sync_failed(log, "directory fsync");
    return 0;
}

int slot_rlog_sync_detach(slot_rlog *log, int *fd, int *dir_fd, uint64_t *seq)
{
    *fd = *dir_fd = -1;
    slot_rlog_last(log, NULL, seq);
    if (log->broken)
        return SLOT_RLOG_E_BROKEN;
    if (log->wfd >= 0 && log->wdirty && (*fd = fcntl(log->wfd, F_DUPFD_CLOEXEC, 0)) < 0)
        return -errno;
    if (log->dir_dirty && (*dir_fd = fcntl(log->dirfd, F_DUPFD_CLOEXEC, 0)) < 0) {
        int rc = -errno;
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        return rc;
    }
    log->wdirty = false;
    log->dir_dirty = false;
    return 0;
}

/* ---- reading ----------------------------------------------------------- */

void slot_rlog_last(const slot_rlog *log, uint64_t *epoch, uint64_t *seq)
{
    if (epoch)
        *epoch = slot__rlog_last_epoch(log);
    if (seq)
        *seq = log->nsegs ? log_first(log) + log->noffs - 1 : 0;
}

uint64_t slot_rlog_first(const slot_rlog *log)
{
    return log_first(log);
}

uint64_t slot_rlog_count(const slot_rlog *log)
{
    return log->noffs;
}

int slot_rlog_epoch_of(const slot_rlog *log, uint64_t seq, uint64_t *epoch)
{
    if (!log->nsegs)
        return -ENOENT;
    uint64_t first = log_first(log);
    if (seq == first - 1) {
        *epoch = log->segs[0].prev_epoch;
        return 0;
    }
    if (seq < first || seq - first >= log->noffs)
        return -ENOENT;
    size_t lo = 0, hi = log->nruns; /* the last run with runs[].seq <= seq */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (log->runs[mid].seq <= seq)
            lo = mid;
        else
            hi = mid;
    }
    SLOT_ASSERT(log->runs[lo].seq <= seq);
    *epoch = log->runs[lo].epoch;
    return 0;
}

/* The segment holding record index i. */
static size_t seg_of(const slot_rlog *log, uint64_t i)
{
    size_t lo = 0, hi = log->nsegs;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (log->segs[mid].idx <= i)
            lo = mid;
        else
            hi = mid;
    }
    /* Empty segments share idx with the next; the one that holds i is the last such. */
    SLOT_ASSERT(i >= log->segs[lo].idx && i < log->segs[lo].idx + log->segs[lo].count);
    return lo;
}

int slot_rlog_read(slot_rlog *log, uint64_t seq, const uint8_t **rec, size_t *rec_bytes)
{
    uint64_t first = log_first(log);
    if (!log->nsegs || seq < first || seq - first >= log->noffs)
        return -ENOENT;
    uint64_t i = seq - first;
    const slot__rlog_seg *s = &log->segs[seg_of(log, i)];
    uint64_t off = log->offs[i];
    uint64_t end = i + 1 < s->idx + s->count ? log->offs[i + 1] : s->size;
    size_t len = (size_t)(end - off);
    int rc;
    if (len > log->rcap) {
        uint8_t *b = realloc(log->rbuf, len);
        if (!b)
            return -ENOMEM;
        log->rbuf = b;
        log->rcap = len;
    }
    int fd = log->wfd;
    if (s != &log->segs[log->nsegs - 1]) {
        if (log->rfd < 0 || log->rfd_first != s->first_seq) {
            close_rfd(log);
            if ((fd = slot__rlog_open_seg(log, s->first_seq, O_RDONLY)) < 0)
                return fd;
            log->rfd = fd;
            log->rfd_first = s->first_seq;
        }
        fd = log->rfd;
    }
    if ((rc = pread_all(fd, log->rbuf, len, off)) < 0)
        return rc;
    slot_wset_rec r;
    if (rc == 1 || slot_wset_decode(log->rbuf, len, &r) != 0 || r.record_bytes != len || r.hdr.seq != seq) {
        slot__rlog_logf(log,
                        "rlog: seq %" PRIu64 " at offset %" PRIu64 " of segment %016" PRIx64
                        " no longer reads back: corrupt",
                        seq, off, s->first_seq);
        return SLOT_RLOG_E_CORRUPT;
    }
    *rec = log->rbuf;
    *rec_bytes = len;
    return 0;
}

/* ---- truncate, trim, reset --------------------------------------------- */

/* Forget the index from record index i on (records first+i.. are gone). */
static void drop_index_from(slot_rlog *log, uint64_t i)
{
    uint64_t first = log_first(log);
    log->noffs = i;
    while (log->nruns && log->runs[log->nruns - 1].seq >= first + i)
        log->nruns--;
}

int slot_rlog_truncate_after(slot_rlog *log, uint64_t seq)
{
    if (log->broken)
        return SLOT_RLOG_E_BROKEN;
    if (!log->nsegs)
        return 0;
    uint64_t first = log_first(log);
    if (seq < first - 1)
        return -ERANGE;
    if (seq - (first - 1) >= log->noffs)
        return 0;
    uint64_t keep = seq - (first - 1); /* records kept */
    close_rfd(log);
    /* The segment that keeps the last kept record (or the first, emptied). */
    size_t k = keep ? seg_of(log, keep - 1) : 0;
    int rc = 0;
    while (log->nsegs > k + 1) {
        const slot__rlog_seg *s = &log->segs[log->nsegs - 1];
        if ((rc = slot__rlog_unlink_seg(log, s->first_seq)))
            goto fail;
        slot__rlog_logf(log, "rlog: truncate_after %" PRIu64 ": removed segment %016" PRIx64, seq, s->first_seq);
        log->nsegs--;
        log->dir_dirty = true;
        if (log->wfd >= 0) {
            close(log->wfd);
            log->wfd = -1;
        }
    }
    slot__rlog_seg *s = &log->segs[k];
    uint64_t size = keep < s->idx + s->count ? log->offs[keep] : s->size;
    if (log->wfd < 0 && (log->wfd = slot__rlog_open_seg(log, s->first_seq, O_RDWR)) < 0) {
        rc = log->wfd;
        log->wfd = -1;
        goto fail;
    }
    if (ftruncate(log->wfd, (off_t)size) < 0 || fdatasync(log->wfd) < 0) {
        rc = -errno;
        goto fail;
    }
    s->size = size;
    s->count = keep - s->idx;
    drop_index_from(log, keep);
    log->wdirty = false;
    if (log->dir_dirty && (rc = slot__rlog_fsync_dir(log)))
        goto fail;
    return 0;
fail:
    slot__rlog_logf(log, "rlog: truncate_after %" PRIu64 " failed: %s; reopen the log", seq, strerror(-rc));
    log->broken = true;
    return rc;
}

int slot_rlog_trim_before(slot_rlog *log, uint64_t seq)
{
    if (log->broken)
        return SLOT_RLOG_E_BROKEN;
    size_t j = 0; /* segments to delete: all of segs[0..j) lie below seq */
    while (j + 1 < log->nsegs && log->segs[j + 1].first_seq <= seq)
        j++;
    if (j == 0)
        return 0;
    close_rfd(log);
    size_t done = 0;
    int rc = 0;
    for (; done < j; done++) {
        if ((rc = slot__rlog_unlink_seg(log, log->segs[done].first_seq)))
            break;
        slot__rlog_logf(log, "rlog: trim_before %" PRIu64 ": removed segment %016" PRIx64, seq,
                        log->segs[done].first_seq);
    }
    if (done) {
        /* Shift the index down by the records of the deleted segments. */
        uint64_t gone = log->segs[done].idx;
        uint64_t new_first = log->segs[done].first_seq;
        memmove(log->offs, log->offs + gone, (size_t)(log->noffs - gone) * sizeof(uint32_t));
        log->noffs -= gone;
        memmove(log->segs, log->segs + done, (log->nsegs - done) * sizeof(slot__rlog_seg));
        log->nsegs -= done;
        for (size_t i = 0; i < log->nsegs; i++)
            log->segs[i].idx -= gone;
        size_t r = 0; /* the last run that starts at or before new_first stays */
        while (r + 1 < log->nruns && log->runs[r + 1].seq <= new_first)
            r++;
        memmove(log->runs, log->runs + r, (log->nruns - r) * sizeof(slot__rlog_run));
        log->nruns -= r;
        if (log->noffs == 0)
            log->nruns = 0;
        if (log->nruns && log->runs[0].seq < new_first)
            log->runs[0].seq = new_first;
        log->dir_dirty = true;
    }
    int src = slot__rlog_fsync_dir(log);
    return rc ? rc : src;
}

int slot_rlog_reset(slot_rlog *log, uint64_t start_seq, uint64_t prev_epoch)
{
    if (start_seq == 0)
        return -EINVAL;
    int rc = slot__rlog_grow((void **)&log->segs, &log->segs_cap, 1, sizeof(slot__rlog_seg));
    if (rc)
        return rc;
    close_rfd(log);
    if (log->wfd >= 0)
        close(log->wfd);
    log->wfd = -1;
    log->broken = true; /* until the new segment is in place */
    while (log->nsegs) {
        if ((rc = slot__rlog_unlink_seg(log, log->segs[0].first_seq)))
            goto fail;
        uint64_t gone = log->segs[0].count;
        memmove(log->offs, log->offs + gone, (size_t)(log->noffs - gone) * sizeof(uint32_t));
        log->noffs -= gone;
        memmove(log->segs, log->segs + 1, (log->nsegs - 1) * sizeof(slot__rlog_seg));
        log->nsegs--;
        for (size_t i = 0; i < log->nsegs; i++)
            log->segs[i].idx -= gone;
    }
    SLOT_ASSERT(log->noffs == 0);
    log->nruns = 0;
    char name[SLOT__RLOG_SEG_NAME_BYTES], tmp[SLOT__RLOG_SEG_NAME_BYTES + 4];
    slot__rlog_seg_name(name, start_seq);
    snprintf(tmp, sizeof(tmp), "%s.tmp", name);
    uint8_t h[SLOT_RLOG_SEG_HEADER_BYTES];
    slot__rlog_seg_header(h, start_seq, prev_epoch);
    int fd = openat(log->dirfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = -errno;
        goto fail;
    }
    rc = pwrite_all(fd, h, sizeof(h), 0);
    if (!rc && fdatasync(fd) < 0)
        rc = -errno;
    if (!rc && renameat(log->dirfd, tmp, log->dirfd, name) < 0)
        rc = -errno;
    if (rc) {
        close(fd);
        unlinkat(log->dirfd, tmp, 0);
        goto fail;
    }
    log->wfd = fd;
    log->wdirty = false;
    log->segs[0] = (slot__rlog_seg){.first_seq = start_seq,
                                    .prev_epoch = prev_epoch,
                                    .size = SLOT_RLOG_SEG_HEADER_BYTES,
                                    .idx = 0};
    log->nsegs = 1;
    if ((rc = slot__rlog_fsync_dir(log)))
        goto fail;
    log->broken = false;
    slot__rlog_logf(log, "rlog: reset: empty, next seq %" PRIu64 ", prev_epoch %" PRIu64, start_seq, prev_epoch);
    return 0;
fail:
    slot__rlog_logf(log, "rlog: reset to %" PRIu64 " failed: %s; reopen the log", start_seq, strerror(-rc));
    return rc;
}
