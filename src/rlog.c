/* rlog.c — the batch log on disk; see slot/rlog.h. */
#include "slot/rlog.h"

#include "slot/assert.h"
#include "slot/wset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define SEG_NAME_BYTES 21 /* 16 hex digits + ".seg" + NUL */
#define SEG_SUFFIX ".seg"
#define TMP_SUFFIX ".seg.tmp"

typedef struct seg {
    uint64_t first_seq;
    uint64_t prev_epoch;  /* epoch of record first_seq-1 */
    uint64_t count;       /* records */
    uint64_t size;        /* file bytes: header + records */
    uint64_t idx;         /* index of its first record in log->offs */
} seg;

typedef struct run {
    uint64_t seq;   /* first seq with this epoch */
    uint64_t epoch;
} run;

struct slot_rlog {
    char *dir;
    int dirfd;
    uint64_t seg_bytes;
    slot_rlog_log_fn logfn;
    void *log_ctx;
    seg *segs;            /* sorted by first_seq, contiguous; the last one is active */
    size_t nsegs, segs_cap;
    uint32_t *offs;       /* offs[i]: offset of record first+i in its segment */
    uint64_t noffs, offs_cap;
    run *runs;            /* epoch changes, by seq */
    size_t nruns, runs_cap;
    int wfd;              /* the active segment, or -1 when there is none */
    bool wdirty;          /* written since its last fdatasync */
    bool dir_dirty;       /* a segment was created since the last directory fsync */
    bool broken;
    int rfd;              /* a cached read fd of an older segment */
    uint64_t rfd_first;
    uint8_t *rbuf;
    size_t rcap;
};

static void logf_(slot_rlog *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(slot_rlog *log, const char *fmt, ...)
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

const char *slot_rlog_strerror(int rc)
{
    switch (rc) {
#define SLOT__RLOG_ERR_MSG(name, value, msg) \
    case value:                              \
        return msg;
        SLOT_RLOG_ERR_MAP(SLOT__RLOG_ERR_MSG)
#undef SLOT__RLOG_ERR_MSG
    default:
        return slot_wset_strerror(rc);
    }
}

/* ---- little helpers ---------------------------------------------------- */

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | ((uint64_t)get32(p + 4) << 32); }
static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static void seg_name(char out[SEG_NAME_BYTES], uint64_t first_seq)
{
    snprintf(out, SEG_NAME_BYTES, "%016" PRIx64 SEG_SUFFIX, first_seq);
}

/* "0123456789abcdef.seg" -> 0 and *first; anything else -> -1. */
static int parse_seg_name(const char *name, uint64_t *first)
{
    if (strlen(name) != SEG_NAME_BYTES - 1 || strcmp(name + 16, SEG_SUFFIX) != 0)
        return -1;
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char c = name[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *first = v;
    return 0;
}

static void seg_header(uint8_t h[SLOT_RLOG_SEG_HEADER_BYTES], uint64_t first_seq, uint64_t prev_epoch)
{
    memset(h, 0, SLOT_RLOG_SEG_HEADER_BYTES);
    put32(h, SLOT_RLOG_SEG_MAGIC);
    h[4] = SLOT_RLOG_SEG_VERSION;
    put64(h + 8, first_seq);
    put64(h + 16, prev_epoch);
    put32(h + 28, (uint32_t)crc32(crc32(0L, Z_NULL, 0), h, 28));
}

static bool seg_header_ok(const uint8_t *h, uint64_t *first_seq, uint64_t *prev_epoch)
{
    if (get32(h) != SLOT_RLOG_SEG_MAGIC || h[4] != SLOT_RLOG_SEG_VERSION || h[5] || h[6] || h[7] ||
        get32(h + 24) != 0)
        return false;
    if (get32(h + 28) != (uint32_t)crc32(crc32(0L, Z_NULL, 0), h, 28))
        return false;
    *first_seq = get64(h + 8);
    *prev_epoch = get64(h + 16);
    return true;
}

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
    const uint8_t *p = buf;
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
static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
    uint8_t *p = buf;
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

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
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

static int grow_offs(slot_rlog *log, uint64_t need)
{
    size_t cap = (size_t)log->offs_cap;
    int rc = grow((void **)&log->offs, &cap, (size_t)need, sizeof(uint32_t));
    log->offs_cap = cap;
    return rc;
}

static uint64_t log_first(const slot_rlog *log) { return log->nsegs ? log->segs[0].first_seq : 1; }

static uint64_t last_epoch(const slot_rlog *log)
{
    if (log->noffs)
        return log->runs[log->nruns - 1].epoch;
    return log->nsegs ? log->segs[0].prev_epoch : 0;
}

/* Record the epoch of the record just indexed at seq. */
static void note_epoch(slot_rlog *log, uint64_t seq, uint64_t epoch)
{
    if (log->nruns && log->runs[log->nruns - 1].epoch == epoch)
        return;
    SLOT_ASSERT(log->nruns < log->runs_cap);
    log->runs[log->nruns++] = (run){seq, epoch};
}

static int fsync_dir(slot_rlog *log)
{
    if (fsync(log->dirfd) < 0)
        return -errno;
    log->dir_dirty = false;
    return 0;
}

static void close_rfd(slot_rlog *log)
{
    if (log->rfd >= 0)
        close(log->rfd);
    log->rfd = -1;
}

static int open_seg(slot_rlog *log, uint64_t first_seq, int flags)
{
    char name[SEG_NAME_BYTES];
    seg_name(name, first_seq);
    int fd = openat(log->dirfd, name, flags | O_CLOEXEC, 0600);
    return fd < 0 ? -errno : fd;
}

static int unlink_seg(slot_rlog *log, uint64_t first_seq)
{
    char name[SEG_NAME_BYTES];
    seg_name(name, first_seq);
    if (unlinkat(log->dirfd, name, 0) < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

/* ---- open: scan and validate ------------------------------------------- */

typedef struct scan_file {
    uint64_t first_seq;
    bool tmp;
    char name[64];
} scan_file;

static int cmp_scan(const void *a, const void *b)
{
    uint64_t x = ((const scan_file *)a)->first_seq, y = ((const scan_file *)b)->first_seq;
    return x < y ? -1 : x > y;
}

/* The segment files (sorted) and the leftover temporaries of the directory. */
static int list_dir(slot_rlog *log, scan_file **files, size_t *n)
{
    int fd = dup(log->dirfd);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = -errno;
        close(fd);
        return e;
    }
    rewinddir(d);
    size_t cap = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        uint64_t first = 0;
        bool tmp = len > strlen(TMP_SUFFIX) && len < sizeof((*files)->name) &&
                   strcmp(de->d_name + len - strlen(TMP_SUFFIX), TMP_SUFFIX) == 0;
        if (!tmp && parse_seg_name(de->d_name, &first) != 0)
            continue;
        if ((rc = grow((void **)files, &cap, *n + 1, sizeof(scan_file))))
            break;
        scan_file *f = &(*files)[(*n)++];
        f->first_seq = first;
        f->tmp = tmp;
        snprintf(f->name, sizeof(f->name), "%s", de->d_name);
    }
    closedir(d);
    if (rc == 0 && *n)
        qsort(*files, *n, sizeof(scan_file), cmp_scan);
    return rc;
}

/* Is there a whole, valid record anywhere in map[from, size)? Only called on
 * the failure path, over at most one record's worth of bytes. */
static bool valid_record_after(const uint8_t *map, uint64_t from, uint64_t size)
{
    for (uint64_t p = from; p + SLOT_WSET_HEADER_BYTES <= size; p++) {
        if (get32(map + p) != SLOT_WSET_MAGIC)
            continue;
        slot_wset_rec r;
        if (slot_wset_decode(map + p, (size_t)(size - p), &r) == 0)
            return true;
    }
    return false;
}

typedef struct scan_result {
    bool drop_file;       /* last segment whose header was torn */
    uint64_t cut_at;      /* last segment: truncate to this size (== size: nothing) */
} scan_result;

/* Validate one segment's records, appending them to the index. */
static int scan_records(slot_rlog *log, seg *s, const uint8_t *map, bool last, scan_result *res,
                        const char *name)
{
    uint64_t off = SLOT_RLOG_SEG_HEADER_BYTES;
    uint64_t expect = s->first_seq;
    uint64_t epoch = s->prev_epoch;
    while (off < s->size) {
        slot_wset_rec r;
        int rc = slot_wset_decode(map + off, (size_t)(s->size - off), &r);
        if (rc != 0) {
            uint64_t tail = s->size - off;
            if (!last || tail > SLOT_WSET_RECORD_BYTES_MAX || valid_record_after(map, off + 1, s->size)) {
                logf_(log, "rlog: %s: record at offset %" PRIu64 " (seq %" PRIu64 "): %s, with more "
                      "after it: corrupt", name, off, expect, slot_wset_strerror(rc));
                return SLOT_RLOG_E_CORRUPT;
            }
            logf_(log, "rlog: %s: torn tail at offset %" PRIu64 " (seq %" PRIu64 ", %" PRIu64
                  " bytes: %s): cutting it off", name, off, expect, tail, slot_wset_strerror(rc));
            res->cut_at = off;
            break;
        }
        if (r.hdr.seq != expect || r.hdr.prev_epoch != epoch) {
            logf_(log, "rlog: %s: record at offset %" PRIu64 " has seq %" PRIu64 " prev_epoch %" PRIu64
                  ", expected seq %" PRIu64 " prev_epoch %" PRIu64 ": corrupt", name, off, r.hdr.seq,
                  r.hdr.prev_epoch, expect, epoch);
            return SLOT_RLOG_E_CORRUPT;
        }
        int grc = grow_offs(log, log->noffs + 1);
        if (!grc)
            grc = grow((void **)&log->runs, &log->runs_cap, log->nruns + 1, sizeof(run));
        if (grc)
            return grc;
        log->offs[log->noffs++] = (uint32_t)off;
        note_epoch(log, expect, r.hdr.epoch);
        s->count++;
        expect++;
        epoch = r.hdr.epoch;
        off += r.record_bytes;
    }
    return 0;
}

/* Validate segment file f (index i of n); on success it is in log->segs. */
static int scan_seg(slot_rlog *log, const scan_file *f, bool last, scan_result *res)
{
    int fd = openat(log->dirfd, f->name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    uint64_t size = (uint64_t)st.st_size;
    res->drop_file = false;
    res->cut_at = size;
    uint8_t *map = NULL;
    if (size > (uint64_t)SLOT_RLOG_SEGMENT_BYTES_MAX + 2u * SLOT_WSET_RECORD_BYTES_MAX) {
        logf_(log, "rlog: %s: %" PRIu64 " bytes, more than a segment can hold: corrupt", f->name, size);
        close(fd);
        return SLOT_RLOG_E_CORRUPT;
    }
    if (size > 0) {
        map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int e = -errno;
            close(fd);
            return e;
        }
    }
    close(fd);
    uint64_t first = 0, prev_epoch = 0;
    int rc = 0;
    if (size < SLOT_RLOG_SEG_HEADER_BYTES || !seg_header_ok(map, &first, &prev_epoch) ||
        first != f->first_seq) {
        if (last && size <= SLOT_RLOG_SEG_HEADER_BYTES) {
            logf_(log, "rlog: %s: torn segment header (%" PRIu64 " bytes): removing it", f->name, size);
            res->drop_file = true;
        } else {
            logf_(log, "rlog: %s: bad segment header: corrupt", f->name);
            rc = SLOT_RLOG_E_CORRUPT;
        }
        goto out;
    }
    if (log->nsegs) {
        const seg *p = &log->segs[log->nsegs - 1];
        if (first != p->first_seq + p->count || prev_epoch != last_epoch(log)) {
            logf_(log, "rlog: %s: starts at seq %" PRIu64 " prev_epoch %" PRIu64 ", expected seq %"
                  PRIu64 " prev_epoch %" PRIu64 ": corrupt", f->name, first, prev_epoch,
                  p->first_seq + p->count, last_epoch(log));
            rc = SLOT_RLOG_E_CORRUPT;
            goto out;
        }
    } else if (first == 0) {
        logf_(log, "rlog: %s: first seq 0: corrupt", f->name);
        rc = SLOT_RLOG_E_CORRUPT;
        goto out;
    }
    if ((rc = grow((void **)&log->segs, &log->segs_cap, log->nsegs + 1, sizeof(seg))))
        goto out;
    seg *s = &log->segs[log->nsegs];
    *s = (seg){.first_seq = first, .prev_epoch = prev_epoch, .size = size, .idx = log->noffs};
    if ((rc = scan_records(log, s, map, last, res, f->name)) == 0) {
        s->size = res->cut_at;
        log->nsegs++;
    }
out:
    if (map)
        munmap(map, (size_t)size);
    return rc;
}

/* Everything is validated: now cut the torn tail, drop leftovers. */
static int repair(slot_rlog *log, const scan_file *files, size_t n, const scan_result *lastres,
                  slot_rlog_open_info *info)
{
    bool dir_changed = false;
    for (size_t i = 0; i < n; i++) {
        if (!files[i].tmp)
            continue;
        logf_(log, "rlog: removing %s (an unfinished reset)", files[i].name);
        if (unlinkat(log->dirfd, files[i].name, 0) < 0 && errno != ENOENT)
            return -errno;
        info->removed_files++;
        dir_changed = true;
    }
    if (lastres->drop_file) {
        SLOT_ASSERT(n > 0);
        const scan_file *f = NULL;
        for (size_t i = n; i-- > 0;)
            if (!files[i].tmp) {
                f = &files[i];
                break;
            }
        SLOT_ASSERT(f != NULL);
        if (unlinkat(log->dirfd, f->name, 0) < 0)
            return -errno;
        info->removed_files++;
        dir_changed = true;
    }
    if (log->nsegs) {
        seg *s = &log->segs[log->nsegs - 1];
        int fd = open_seg(log, s->first_seq, O_RDWR);
        if (fd < 0)
            return fd;
        log->wfd = fd;
        struct stat st;
        if (fstat(fd, &st) < 0)
            return -errno;
        if ((uint64_t)st.st_size != s->size) {
            SLOT_ASSERT((uint64_t)st.st_size > s->size);
            info->truncated_bytes = (uint64_t)st.st_size - s->size;
            if (ftruncate(fd, (off_t)s->size) < 0 || fdatasync(fd) < 0)
                return -errno;
        }
    }
    if (dir_changed)
        return fsync_dir(log);
    return 0;
}

static int open_dir(slot_rlog *log, const char *dir)
{
    bool created = false;
    if (mkdir(dir, 0700) == 0)
        created = true;
    else if (errno != EEXIST)
        return -errno;
    log->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (log->dirfd < 0)
        return -errno;
    if (!created)
        return 0;
    /* A new directory's own entry must be durable too. */
    char *parent = strdup(dir);
    if (!parent)
        return -ENOMEM;
    char *slash = strrchr(parent, '/');
    if (!slash)
        snprintf(parent, strlen(dir) + 1, ".");
    else if (slash == parent)
        slash[1] = '\0';
    else
        *slash = '\0';
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(parent);
    if (pfd < 0)
        return -errno;
    int rc = fsync(pfd) < 0 ? -errno : 0;
    close(pfd);
    return rc;
}

int slot_rlog_open(const char *dir, const slot_rlog_opts *opts, slot_rlog **out,
                   slot_rlog_open_info *info)
{
    *out = NULL;
    slot_rlog_opts o = {0};
    if (opts)
        o = *opts;
    if (o.segment_bytes == 0)
        o.segment_bytes = SLOT_RLOG_SEGMENT_BYTES_DEFAULT;
    if (o.segment_bytes < SLOT_RLOG_SEGMENT_BYTES_MIN || o.segment_bytes > SLOT_RLOG_SEGMENT_BYTES_MAX ||
        dir == NULL || dir[0] == '\0')
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
    scan_file *files = NULL;
    size_t n = 0;
    int rc = log->dir ? open_dir(log, dir) : -ENOMEM;
    if (!rc)
        rc = list_dir(log, &files, &n);
    size_t nseg = 0;
    for (size_t i = 0; i < n; i++)
        nseg += !files[i].tmp;
    scan_result res = {0}, lastres = {0};
    for (size_t i = 0, k = 0; rc == 0 && i < n; i++) {
        if (files[i].tmp)
            continue;
        k++;
        rc = scan_seg(log, &files[i], k == nseg, &res);
        if (k == nseg)
            lastres = res;
    }
    if (!rc)
        rc = repair(log, files, n, &lastres, &inf);
    free(files);
    if (rc) {
        slot_rlog_close(log);
        return rc;
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
    logf_(log, "rlog: %s of %s failed: %s; the log refuses writes until reopened", what, log->dir,
          strerror(-rc));
    log->broken = true;
    return rc;
}

/* Create the next segment (the old active one was synced) and make it active. */
static int new_segment(slot_rlog *log, uint64_t first_seq, uint64_t prev_epoch)
{
    uint8_t h[SLOT_RLOG_SEG_HEADER_BYTES];
    seg_header(h, first_seq, prev_epoch);
    int fd = open_seg(log, first_seq, O_RDWR | O_CREAT | O_EXCL);
    if (fd < 0)
        return fd;
    int rc = pwrite_all(fd, h, sizeof(h), 0);
    if (rc) {
        close(fd);
        unlink_seg(log, first_seq);
        return rc;
    }
    if (log->wfd >= 0)
        close(log->wfd);
    log->wfd = fd;
    log->wdirty = true;
    log->dir_dirty = true;
    log->segs[log->nsegs++] = (seg){.first_seq = first_seq, .prev_epoch = prev_epoch,
                                    .size = SLOT_RLOG_SEG_HEADER_BYTES, .idx = log->noffs};
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
        if (r.hdr.prev_epoch != last_epoch(log))
            return SLOT_RLOG_E_EPOCH;
    }
    /* Room in every array first, so nothing can fail after the write. */
    if ((rc = grow_offs(log, log->noffs + 1)) ||
        (rc = grow((void **)&log->runs, &log->runs_cap, log->nruns + 1, sizeof(run))) ||
        (rc = grow((void **)&log->segs, &log->segs_cap, log->nsegs + 1, sizeof(seg))))
        return rc;
    seg *s = log->nsegs ? &log->segs[log->nsegs - 1] : NULL;
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
            logf_(log, "rlog: append of seq %" PRIu64 " failed (%s) and cutting it off failed too (%s)",
                  r.hdr.seq, strerror(-rc), strerror(errno));
            log->broken = true;
        }
        return rc;
    }
    log->offs[log->noffs++] = (uint32_t)s->size;
    note_epoch(log, r.hdr.seq, r.hdr.epoch);
    s->size += rec_bytes;
    s->count++;
    log->wdirty = true;
    return 0;
}

int slot_rlog_sync(slot_rlog *log)
{
    if (log->broken)
        return SLOT_RLOG_E_BROKEN;
    if (log->wfd >= 0 && log->wdirty) {
        if (fdatasync(log->wfd) < 0)
            return sync_failed(log, "fdatasync");
        log->wdirty = false;
    }
    if (log->dir_dirty && fsync_dir(log) < 0)
        return sync_failed(log, "directory fsync");
    return 0;
}

/* ---- reading ----------------------------------------------------------- */

void slot_rlog_last(const slot_rlog *log, uint64_t *epoch, uint64_t *seq)
{
    if (epoch)
        *epoch = last_epoch(log);
    if (seq)
        *seq = log->nsegs ? log_first(log) + log->noffs - 1 : 0;
}

uint64_t slot_rlog_first(const slot_rlog *log) { return log_first(log); }

uint64_t slot_rlog_count(const slot_rlog *log) { return log->noffs; }

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
    const seg *s = &log->segs[seg_of(log, i)];
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
            if ((fd = open_seg(log, s->first_seq, O_RDONLY)) < 0)
                return fd;
            log->rfd = fd;
            log->rfd_first = s->first_seq;
        }
        fd = log->rfd;
    }
    if ((rc = pread_all(fd, log->rbuf, len, off)) < 0)
        return rc;
    slot_wset_rec r;
    if (rc == 1 || slot_wset_decode(log->rbuf, len, &r) != 0 || r.record_bytes != len ||
        r.hdr.seq != seq) {
        logf_(log, "rlog: seq %" PRIu64 " at offset %" PRIu64 " of segment %016" PRIx64
              " no longer reads back: corrupt", seq, off, s->first_seq);
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
        const seg *s = &log->segs[log->nsegs - 1];
        if ((rc = unlink_seg(log, s->first_seq)))
            goto fail;
        logf_(log, "rlog: truncate_after %" PRIu64 ": removed segment %016" PRIx64, seq, s->first_seq);
        log->nsegs--;
        log->dir_dirty = true;
        if (log->wfd >= 0) {
            close(log->wfd);
            log->wfd = -1;
        }
    }
    seg *s = &log->segs[k];
    uint64_t size = keep < s->idx + s->count ? log->offs[keep] : s->size;
    if (log->wfd < 0 && (log->wfd = open_seg(log, s->first_seq, O_RDWR)) < 0) {
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
    if (log->dir_dirty && (rc = fsync_dir(log)))
        goto fail;
    return 0;
fail:
    logf_(log, "rlog: truncate_after %" PRIu64 " failed: %s; reopen the log", seq, strerror(-rc));
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
        if ((rc = unlink_seg(log, log->segs[done].first_seq)))
            break;
        logf_(log, "rlog: trim_before %" PRIu64 ": removed segment %016" PRIx64, seq,
              log->segs[done].first_seq);
    }
    if (done) {
        /* Shift the index down by the records of the deleted segments. */
        uint64_t gone = log->segs[done].idx;
        uint64_t new_first = log->segs[done].first_seq;
        memmove(log->offs, log->offs + gone, (size_t)(log->noffs - gone) * sizeof(uint32_t));
        log->noffs -= gone;
        memmove(log->segs, log->segs + done, (log->nsegs - done) * sizeof(seg));
        log->nsegs -= done;
        for (size_t i = 0; i < log->nsegs; i++)
            log->segs[i].idx -= gone;
        size_t r = 0; /* the last run that starts at or before new_first stays */
        while (r + 1 < log->nruns && log->runs[r + 1].seq <= new_first)
            r++;
        memmove(log->runs, log->runs + r, (log->nruns - r) * sizeof(run));
        log->nruns -= r;
        if (log->noffs == 0)
            log->nruns = 0;
        if (log->nruns && log->runs[0].seq < new_first)
            log->runs[0].seq = new_first;
        log->dir_dirty = true;
    }
    int src = fsync_dir(log);
    return rc ? rc : src;
}

int slot_rlog_reset(slot_rlog *log, uint64_t start_seq, uint64_t prev_epoch)
{
    if (start_seq == 0)
        return -EINVAL;
    int rc = grow((void **)&log->segs, &log->segs_cap, 1, sizeof(seg));
    if (rc)
        return rc;
    close_rfd(log);
    if (log->wfd >= 0)
        close(log->wfd);
    log->wfd = -1;
    log->broken = true; /* until the new segment is in place */
    while (log->nsegs) {
        if ((rc = unlink_seg(log, log->segs[0].first_seq)))
            goto fail;
        uint64_t gone = log->segs[0].count;
        memmove(log->offs, log->offs + gone, (size_t)(log->noffs - gone) * sizeof(uint32_t));
        log->noffs -= gone;
        memmove(log->segs, log->segs + 1, (log->nsegs - 1) * sizeof(seg));
        log->nsegs--;
        for (size_t i = 0; i < log->nsegs; i++)
            log->segs[i].idx -= gone;
    }
    SLOT_ASSERT(log->noffs == 0);
    log->nruns = 0;
    char name[SEG_NAME_BYTES], tmp[SEG_NAME_BYTES + 4];
    seg_name(name, start_seq);
    snprintf(tmp, sizeof(tmp), "%s.tmp", name);
    uint8_t h[SLOT_RLOG_SEG_HEADER_BYTES];
    seg_header(h, start_seq, prev_epoch);
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
    log->segs[0] = (seg){.first_seq = start_seq, .prev_epoch = prev_epoch,
                         .size = SLOT_RLOG_SEG_HEADER_BYTES, .idx = 0};
    log->nsegs = 1;
    if ((rc = fsync_dir(log)))
        goto fail;
    log->broken = false;
    logf_(log, "rlog: reset: empty, next seq %" PRIu64 ", prev_epoch %" PRIu64, start_seq, prev_epoch);
    return 0;
fail:
    logf_(log, "rlog: reset to %" PRIu64 " failed: %s; reopen the log", start_seq, strerror(-rc));
    return rc;
}
