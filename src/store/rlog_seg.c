/* rlog_seg.c — the batch log's segment files: names, the header, and open's
 * scan, validation and torn-tail repair; see slot/rlog.h (the format) and
 * store_int.h (the split). */
#include "store_int.h"

#include "slot/assert.h"
#include "slot/store.h" /* slot_store_mkdir */
#include "slot/wset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define SEG_SUFFIX ".seg"
#define TMP_SUFFIX ".seg.tmp"

/* ---- names and the header ---------------------------------------------- */

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | ((uint64_t)get32(p + 4) << 32);
}
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

void slot__rlog_seg_name(char out[SLOT__RLOG_SEG_NAME_BYTES], uint64_t first_seq)
{
    snprintf(out, SLOT__RLOG_SEG_NAME_BYTES, "%016" PRIx64 SEG_SUFFIX, first_seq);
}

/* "0123456789abcdef.seg" -> 0 and *first; anything else -> -1. */
static int parse_seg_name(const char *name, uint64_t *first)
{
    if (strlen(name) != SLOT__RLOG_SEG_NAME_BYTES - 1 || strcmp(name + 16, SEG_SUFFIX) != 0)
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

void slot__rlog_seg_header(uint8_t h[SLOT_RLOG_SEG_HEADER_BYTES], uint64_t first_seq, uint64_t prev_epoch)
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
    if (get32(h) != SLOT_RLOG_SEG_MAGIC || h[4] != SLOT_RLOG_SEG_VERSION || h[5] || h[6] || h[7] || get32(h + 24) != 0)
        return false;
    if (get32(h + 28) != (uint32_t)crc32(crc32(0L, Z_NULL, 0), h, 28))
        return false;
    *first_seq = get64(h + 8);
    *prev_epoch = get64(h + 16);
    return true;
}

/* ---- files of the directory ------------------------------------------- */

int slot__rlog_fsync_dir(slot_rlog *log)
{
    if (fsync(log->dirfd) < 0)
        return -errno;
    log->dir_dirty = false;
    return 0;
}

int slot__rlog_open_seg(slot_rlog *log, uint64_t first_seq, int flags)
{
    char name[SLOT__RLOG_SEG_NAME_BYTES];
    slot__rlog_seg_name(name, first_seq);
    int fd = openat(log->dirfd, name, flags | O_CLOEXEC, 0600);
    return fd < 0 ? -errno : fd;
}

int slot__rlog_unlink_seg(slot_rlog *log, uint64_t first_seq)
{
    char name[SLOT__RLOG_SEG_NAME_BYTES];
    slot__rlog_seg_name(name, first_seq);
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
        if ((rc = slot__rlog_grow((void **)files, &cap, *n + 1, sizeof(scan_file))))
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

/*
 * Is there, anywhere in map[from, size), a whole, valid record whose
 * commit_seq says that record seq was durable when it was written? Then a
 * damaged record seq is corruption, not a torn tail. A tail of records
 * written after the last flush may have holes (a disk writes dirty pages in
 * any order: the power-cut test's disk does), and the records after a hole
 * were written before seq was known durable, so they name a smaller
 * commit_seq (a replica set's commit point, or a pipelined server's durable
 * seq: every record up to commit_seq was flushed before it was written).
 * Only called on the failure path; each byte costs a magic compare.
 */
static bool durable_record_after(const uint8_t *map, uint64_t from, uint64_t size, uint64_t seq)
{
    for (uint64_t p = from; p + SLOT_WSET_HEADER_BYTES <= size; p++) {
        if (get32(map + p) != SLOT_WSET_MAGIC)
            continue;
        slot_wset_rec r;
        if (slot_wset_decode(map + p, (size_t)(size - p), &r) == 0 && r.hdr.commit_seq >= seq)
            return true;
    }
    return false;
}

typedef struct scan_result {
    bool drop_file;  /* last segment whose header was torn */
    uint64_t cut_at; /* last segment: truncate to this size (== size: nothing) */
} scan_result;

/* Validate one segment's records, appending them to the index. */
static int scan_records(slot_rlog *log, slot__rlog_seg *s, const uint8_t *map, bool last, scan_result *res,
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
            if (!last || durable_record_after(map, off + 1, s->size, expect)) {
                slot__rlog_logf(log,
                                "rlog: %s: record at offset %" PRIu64 " (seq %" PRIu64 "): %s, "
                                "and a record after it that says it was durable: corrupt",
                                name, off, expect, slot_strerror(rc));
                return SLOT_RLOG_E_CORRUPT;
            }
            slot__rlog_logf(log,
                            "rlog: %s: torn tail at offset %" PRIu64 " (seq %" PRIu64 ", %" PRIu64
                            " bytes: %s): cutting it off",
                            name, off, expect, tail, slot_strerror(rc));
            res->cut_at = off;
            break;
        }
        if (r.hdr.seq != expect || r.hdr.prev_epoch != epoch) {
            slot__rlog_logf(log,
                            "rlog: %s: record at offset %" PRIu64 " has seq %" PRIu64 " prev_epoch %" PRIu64
                            ", expected seq %" PRIu64 " prev_epoch %" PRIu64 ": corrupt",
                            name, off, r.hdr.seq, r.hdr.prev_epoch, expect, epoch);
            return SLOT_RLOG_E_CORRUPT;
        }
        int grc = slot__rlog_grow_offs(log, log->noffs + 1);
        if (!grc)
            grc = slot__rlog_grow((void **)&log->runs, &log->runs_cap, log->nruns + 1, sizeof(slot__rlog_run));
        if (grc)
            return grc;
        log->offs[log->noffs++] = (uint32_t)off;
        slot__rlog_note_epoch(log, expect, r.hdr.epoch);
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
        slot__rlog_logf(log, "rlog: %s: %" PRIu64 " bytes, more than a segment can hold: corrupt", f->name, size);
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
    if (size < SLOT_RLOG_SEG_HEADER_BYTES || !seg_header_ok(map, &first, &prev_epoch) || first != f->first_seq) {
        if (last && size <= SLOT_RLOG_SEG_HEADER_BYTES) {
            slot__rlog_logf(log, "rlog: %s: torn segment header (%" PRIu64 " bytes): removing it", f->name, size);
            res->drop_file = true;
        } else {
            slot__rlog_logf(log, "rlog: %s: bad segment header: corrupt", f->name);
            rc = SLOT_RLOG_E_CORRUPT;
        }
        goto out;
    }
    if (log->nsegs) {
        const slot__rlog_seg *p = &log->segs[log->nsegs - 1];
        if (first != p->first_seq + p->count || prev_epoch != slot__rlog_last_epoch(log)) {
            slot__rlog_logf(log,
                            "rlog: %s: starts at seq %" PRIu64 " prev_epoch %" PRIu64 ", expected seq %" PRIu64
                            " prev_epoch %" PRIu64 ": corrupt",
                            f->name, first, prev_epoch, p->first_seq + p->count, slot__rlog_last_epoch(log));
            rc = SLOT_RLOG_E_CORRUPT;
            goto out;
        }
    } else if (first == 0) {
        slot__rlog_logf(log, "rlog: %s: first seq 0: corrupt", f->name);
        rc = SLOT_RLOG_E_CORRUPT;
        goto out;
    }
    if ((rc = slot__rlog_grow((void **)&log->segs, &log->segs_cap, log->nsegs + 1, sizeof(slot__rlog_seg))))
        goto out;
    slot__rlog_seg *s = &log->segs[log->nsegs];
    *s = (slot__rlog_seg){.first_seq = first, .prev_epoch = prev_epoch, .size = size, .idx = log->noffs};
    if ((rc = scan_records(log, s, map, last, res, f->name)) == 0) {
        s->size = res->cut_at;
        log->nsegs++;
    }
out:
    if (map)
        munmap(map, (size_t)size);
    return rc;
}

/* Everything is validated: now cut the torn tail, drop leftovers, and fsync
 * the directory. */
static int repair(slot_rlog *log, const scan_file *files, size_t n, const scan_result *lastres,
                  slot_rlog_open_info *info)
{
    for (size_t i = 0; i < n; i++) {
        if (!files[i].tmp)
            continue;
        slot__rlog_logf(log, "rlog: removing %s (an unfinished reset)", files[i].name);
        if (unlinkat(log->dirfd, files[i].name, 0) < 0 && errno != ENOENT)
            return -errno;
        info->removed_files++;
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
    }
    if (log->nsegs) {
        slot__rlog_seg *s = &log->segs[log->nsegs - 1];
        int fd = slot__rlog_open_seg(log, s->first_seq, O_RDWR);
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
    /* Always, not only after a removal: the names of segments that a run
     * which crashed before its directory fsync created may be in the page
     * cache only, and the records in them are acknowledged from now on. */
    return slot__rlog_fsync_dir(log);
}

/* The log's folder, made when missing; its parent is fsynced either way
 * (slot_store_mkdir), so the folder's own name is durable before any record
 * in it is acknowledged. */
static int open_dir(slot_rlog *log, const char *dir)
{
    int rc = slot_store_mkdir(dir);
    if (rc)
        return rc;
    log->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return log->dirfd < 0 ? -errno : 0;
}

int slot__rlog_recover(slot_rlog *log, slot_rlog_open_info *info)
{
    scan_file *files = NULL;
    size_t n = 0;
    int rc = open_dir(log, log->dir);
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
        rc = repair(log, files, n, &lastres, info);
    free(files);
    return rc;
}
