/*
 * test_rlog.c — the batch log of replica sets on disk (slot/rlog.h): append,
 * read and reopen, a torn tail cut at every byte offset, corruption in the
 * middle refused, segment rollover, truncate, trim, reset, failed writes,
 * and a random model. The record codec: test_wset.c.
 *
 * Randomness comes from a fixed seed (rlog_util.h), so a failure reproduces;
 * SLOT_TEST_SEED (a nonzero integer) picks another. Every case starts from
 * the same seed (each runs in its own process), so one case run alone sees
 * what it sees in the whole run.
 */
#include "harness.h"
#include "rlog_util.h"
#include "slot/rlog.h"
#include "slot/wset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

TEST_DECLARE(rlog_append_read_reopen)
TEST_DECLARE(rlog_append_rules)
TEST_DECLARE(rlog_torn_tail_every_offset)
TEST_DECLARE(rlog_torn_segment_header)
TEST_DECLARE(rlog_corrupt_middle)
TEST_DECLARE(rlog_torn_tail_with_holes)
TEST_DECLARE(rlog_rollover)
TEST_DECLARE(rlog_truncate_after)
TEST_DECLARE(rlog_trim_before)
TEST_DECLARE(rlog_reset)
TEST_DECLARE(rlog_failed_write)
TEST_DECLARE(rlog_bad_options)
TEST_DECLARE(rlog_random_model)

TEST_LIST_START
TEST_ENTRY(rlog_append_read_reopen)
TEST_ENTRY(rlog_append_rules)
TEST_ENTRY(rlog_torn_tail_every_offset)
TEST_ENTRY(rlog_torn_segment_header)
TEST_ENTRY(rlog_corrupt_middle)
TEST_ENTRY(rlog_torn_tail_with_holes)
TEST_ENTRY(rlog_rollover)
TEST_ENTRY(rlog_truncate_after)
TEST_ENTRY(rlog_trim_before)
TEST_ENTRY(rlog_reset)
TEST_ENTRY(rlog_failed_write)
TEST_ENTRY(rlog_bad_options)
TEST_ENTRY(rlog_random_model)
TEST_LIST_END

/* ---- helpers ----------------------------------------------------------- */

/* The case's temporary folder (slot_test_tmpdir), made on first use. */
static char *tmp_root;
static int tmp_serial;

/* A path for a log folder that does not exist yet, under the case's folder. */
static void make_dir(char *out, size_t n)
{
    if (!tmp_root)
        tmp_root = slot_test_tmpdir();
    snprintf(out, n, "%s/d%d", tmp_root, tmp_serial++);
}

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    char path[512];
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
    if (tmp_root && rmdir(tmp_root) == 0) { /* the case's last log folder was removed */
        free(tmp_root);
        tmp_root = NULL;
    }
}

static int count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name), s = strlen(suffix);
        if (l > s && strcmp(de->d_name + l - s, suffix) == 0)
            n++;
    }
    closedir(d);
    return n;
}

static void seg_path(char *out, size_t n, const char *dir, uint64_t first)
{
    snprintf(out, n, "%s/%016" PRIx64 ".seg", dir, first);
}

/* The whole file at path, its length in *len (set on every path). A file a
 * case reads is one it wrote: one that cannot be read aborts, as in write_file. */
static uint8_t *read_file(const char *path, size_t *len)
{
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        abort();
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0)
        abort();
    uint8_t *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
        abort();
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void write_file(const char *path, const uint8_t *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, len, f) != len)
        abort();
    fclose(f);
}

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

static int log_lines;
static void count_log(void *ctx, const char *msg)
{
    (void)ctx;
    (void)msg;
    log_lines++;
}

static slot_rlog *open_log(const char *dir, uint64_t seg_bytes, slot_rlog_open_info *info, int *rc_out)
{
    slot_rlog_opts o = {.segment_bytes = seg_bytes, .log = count_log};
    slot_rlog *log = NULL;
    int rc = slot_rlog_open(dir, &o, &log, info);
    if (rc_out)
        *rc_out = rc;
    return log;
}

/* Append records seq from..to (epoch of each from epoch_at), keeping copies. */
static uint64_t epoch_at(uint64_t seq)
{
    return seq <= 30 ? 1 : seq <= 70 ? 2 : 5;
}

static int append_range(slot_rlog *log, rec *keep, uint64_t from, uint64_t to, unsigned max_ops, size_t max_val)
{
    for (uint64_t s = from; s <= to; s++) {
        rec r = make_rec(s, epoch_at(s), s > 1 ? epoch_at(s - 1) : 0, max_ops, max_val);
        int rc = slot_rlog_append(log, r.b, r.len);
        if (rc) {
            free(r.b);
            return rc;
        }
        if (keep) {
            free(keep[s].b);
            keep[s] = r;
        } else {
            free(r.b);
        }
    }
    return 0;
}

static bool read_equals(slot_rlog *log, uint64_t seq, const rec *want)
{
    const uint8_t *p;
    size_t n;
    int rc = slot_rlog_read(log, seq, &p, &n);
    if (rc) {
        fprintf(stderr, "  read %" PRIu64 ": %s\n", seq, slot_strerror(rc));
        return false;
    }
    return n == want->len && memcmp(p, want->b, n) == 0;
}

static void free_recs(rec *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(r[i].b);
}

/* ---- the log ----------------------------------------------------------- */

TEST_IMPL(rlog_append_read_reopen)
{
    char dir[300];
    make_dir(dir, sizeof(dir));
    enum { N = 100 };
    static rec keep[N + 2];
    slot_rlog_open_info info;
    int rc;
    slot_rlog *log = open_log(dir, 0, &info, &rc);
    ASSERT(rc == 0 && log);
    ASSERT_EQ(info.records, 0);
    ASSERT_EQ(info.segments, 0);
    uint64_t e, s;
    slot_rlog_last(log, &e, &s);
    ASSERT(e == 0 && s == 0);
    ASSERT_EQ(slot_rlog_epoch_of(log, 0, &e), -ENOENT);
    const uint8_t *p;
    size_t n;
    ASSERT_EQ(slot_rlog_read(log, 1, &p, &n), -ENOENT);
    ASSERT_EQ(append_range(log, keep, 1, N, 20, 300), 0);
    ASSERT_EQ(slot_rlog_sync(log), 0);
    ASSERT_EQ(slot_rlog_count(log), N);
    ASSERT_EQ(slot_rlog_first(log), 1);
    for (uint64_t q = 1; q <= N; q++)
        ASSERT(read_equals(log, q, &keep[q]));
    slot_rlog_close(log);

    log = open_log(dir, 0, &info, &rc);
    ASSERT(rc == 0 && log);
    ASSERT_EQ(info.records, N);
    ASSERT_EQ(info.segments, 1);
    ASSERT_EQ(info.truncated_bytes, 0);
    slot_rlog_last(log, &e, &s);
    ASSERT(e == 5 && s == N);
    for (uint64_t q = N; q >= 1; q--) /* backwards too */
        ASSERT(read_equals(log, q, &keep[q]));
    for (uint64_t q = 0; q <= N; q++) {
        ASSERT_EQ(slot_rlog_epoch_of(log, q, &e), 0);
        ASSERT_EQ(e, q == 0 ? 0 : epoch_at(q));
    }
    ASSERT_EQ(slot_rlog_epoch_of(log, N + 1, &e), -ENOENT);
    ASSERT_EQ(slot_rlog_read(log, N + 1, &p, &n), -ENOENT);
    ASSERT_EQ(slot_rlog_read(log, 0, &p, &n), -ENOENT);
    /* Appending goes on after a reopen. */
    ASSERT_EQ(append_range(log, keep, N + 1, N + 1, 3, 10), 0);
    ASSERT(read_equals(log, N + 1, &keep[N + 1]));
    slot_rlog_close(log);
    free_recs(keep, N + 2);
    memset(keep, 0, sizeof(keep));
    rm_dir(dir);
}

TEST_IMPL(rlog_append_rules)
{
    char dir[300], path[400];
    make_dir(dir, sizeof(dir));
    int rc;
    slot_rlog *log = open_log(dir, 0, NULL, &rc);
    ASSERT(rc == 0 && log);
    /* An empty, new log takes any start seq. */
    rec r5 = make_rec(5, 2, 1, 3, 20);
    ASSERT_EQ(slot_rlog_append(log, r5.b, r5.len), 0);
    ASSERT_EQ(slot_rlog_first(log), 5);
    uint64_t e;
    ASSERT_EQ(slot_rlog_epoch_of(log, 4, &e), 0);
    ASSERT_EQ(e, 1);
    seg_path(path, sizeof(path), dir, 5);
    off_t size = file_size(path);
    rec r7 = make_rec(7, 3, 3, 3, 20), r4 = make_rec(4, 2, 1, 3, 20);
    rec r6bad = make_rec(6, 3, 1, 3, 20), r6 = make_rec(6, 3, 2, 3, 20);
    ASSERT_EQ(slot_rlog_append(log, r7.b, r7.len), SLOT_RLOG_E_SEQ);         /* a gap */
    ASSERT_EQ(slot_rlog_append(log, r5.b, r5.len), SLOT_RLOG_E_SEQ);         /* again */
    ASSERT_EQ(slot_rlog_append(log, r4.b, r4.len), SLOT_RLOG_E_SEQ);         /* backwards */
    ASSERT_EQ(slot_rlog_append(log, r6bad.b, r6bad.len), SLOT_RLOG_E_EPOCH); /* prevLogTerm */
    uint8_t *junk = malloc(r6.len + 1);
    memcpy(junk, r6.b, r6.len);
    junk[r6.len] = 0;
    ASSERT_EQ(slot_rlog_append(log, junk, r6.len + 1), SLOT_WSET_E_TRAILING);
    junk[20] ^= 0x40;
    ASSERT_EQ(slot_rlog_append(log, junk, r6.len), SLOT_WSET_E_CRC);
    ASSERT_EQ(slot_rlog_append(log, junk, 10), SLOT_WSET_E_TRUNCATED_HEADER);
    ASSERT_EQ(file_size(path), size); /* nothing written */
    ASSERT_EQ(slot_rlog_count(log), 1);
    ASSERT_EQ(slot_rlog_append(log, r6.b, r6.len), 0);
    ASSERT_EQ(slot_rlog_append(log, r7.b, r7.len), 0);
    uint64_t s;
    slot_rlog_last(log, &e, &s);
    ASSERT(e == 3 && s == 7);
    slot_rlog_close(log);
    free(junk);
    free(r4.b), free(r5.b), free(r6.b), free(r6bad.b), free(r7.b);
    rm_dir(dir);
}

/* Build a log of 5 records in one segment; return the segment's bytes and
 * the offset where record 5 starts. */
static uint8_t *five_records(const char *dir, rec *keep, size_t *seg_len, size_t *last_off)
{
    int rc;
    slot_rlog *log = open_log(dir, 0, NULL, &rc);
    if (rc || append_range(log, keep, 1, 5, 6, 40) || slot_rlog_sync(log))
        abort();
    slot_rlog_close(log);
    char path[400];
    seg_path(path, sizeof(path), dir, 1);
    uint8_t *b = read_file(path, seg_len);
    *last_off = *seg_len - keep[5].len;
    return b;
}

TEST_IMPL(rlog_torn_tail_every_offset)
{
    char dir[300], path[400];
    make_dir(dir, sizeof(dir));
    rec keep[7] = {{0}};
    size_t seg_len, last_off;
    uint8_t *seg = five_records(dir, keep, &seg_len, &last_off);
    seg_path(path, sizeof(path), dir, 1);
    int bad = 0;
    for (size_t cut = last_off; cut < seg_len; cut++) {
        write_file(path, seg, cut);
        slot_rlog_open_info info;
        int rc;
        slot_rlog *log = open_log(dir, 0, &info, &rc);
        if (rc || !log) {
            fprintf(stderr, "  cut at %zu: open: %s\n", cut, slot_strerror(rc));
            bad++;
            continue;
        }
        uint64_t e, s;
        slot_rlog_last(log, &e, &s);
        if (s != 4 || info.records != 4 || info.truncated_bytes != cut - last_off || file_size(path) != (off_t)last_off)
            bad++;
        /* Appending works again, and the log reopens clean with it. */
        if (slot_rlog_append(log, keep[5].b, keep[5].len) || slot_rlog_sync(log) || !read_equals(log, 5, &keep[5]))
            bad++;
        slot_rlog_close(log);
        log = open_log(dir, 0, &info, &rc);
        if (rc || info.records != 5 || info.truncated_bytes != 0)
            bad++;
        slot_rlog_close(log);
    }
    ASSERT_EQ(bad, 0);
    /* Zeros after the last record (a file grown but not written) are a torn tail too. */
    uint8_t *z = calloc(1, seg_len + 100);
    memcpy(z, seg, seg_len);
    write_file(path, z, seg_len + 100);
    slot_rlog_open_info info;
    int rc;
    slot_rlog *log = open_log(dir, 0, &info, &rc);
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(info.records, 5);
    ASSERT_EQ(info.truncated_bytes, 100);
    slot_rlog_close(log);
    free(z);
    free(seg);
    free_recs(keep, 7);
    rm_dir(dir);
}

TEST_IMPL(rlog_torn_segment_header)
{
    char dir[300], path[400];
    make_dir(dir, sizeof(dir));
    rec keep[8] = {{0}};
    int rc;
    /* Records of 219 bytes in 256-byte segments: one record each. */
    slot_rlog *log = open_log(dir, 256, NULL, &rc);
    ASSERT(rc == 0);
    for (uint64_t q = 1; q <= 4; q++) {
        keep[q] = make_fixed(q, 1, q > 1, 150);
        ASSERT_EQ(slot_rlog_append(log, keep[q].b, keep[q].len), 0);
    }
    ASSERT_EQ(slot_rlog_sync(log), 0);
    slot_rlog_close(log);
    int segs = count_files(dir, ".seg");
    ASSERT(segs == 4);
    /* The last segment as a crash during its creation could leave it. */
    seg_path(path, sizeof(path), dir, 4);
    size_t len;
    uint8_t *b = read_file(path, &len);
    int bad = 0;
    for (size_t cut = 0; cut < SLOT_RLOG_SEG_HEADER_BYTES; cut++) {
        write_file(path, b, cut);
        slot_rlog_open_info info;
        log = open_log(dir, 256, &info, &rc);
        uint64_t s = 0;
        if (log)
            slot_rlog_last(log, NULL, &s);
        if (rc || s != 3 || info.removed_files != 1 || count_files(dir, ".seg") != 3)
            bad++;
        if (log && (slot_rlog_append(log, keep[4].b, keep[4].len) || slot_rlog_sync(log)))
            bad++;
        slot_rlog_close(log);
    }
    ASSERT_EQ(bad, 0);
    /* An empty segment with a whole header is just an empty active segment. */
    write_file(path, b, SLOT_RLOG_SEG_HEADER_BYTES);
    slot_rlog_open_info info;
    log = open_log(dir, 256, &info, &rc);
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(info.records, 3);
    ASSERT_EQ(info.segments, 4);
    ASSERT_EQ(slot_rlog_append(log, keep[4].b, keep[4].len), 0);
    ASSERT(read_equals(log, 4, &keep[4]));
    slot_rlog_close(log);
    /* A torn header on an older segment is corruption. */
    seg_path(path, sizeof(path), dir, 2);
    size_t l2;
    uint8_t *b2 = read_file(path, &l2);
    write_file(path, b2, 10);
    log = open_log(dir, 256, &info, &rc);
    ASSERT_EQ(rc, SLOT_RLOG_E_CORRUPT);
    ASSERT(log == NULL);
    write_file(path, b2, l2);
    free(b2);
    free(b);
    free_recs(keep, 8);
    rm_dir(dir);
}

TEST_IMPL(rlog_corrupt_middle)
{
    char dir[300], path[400];
    make_dir(dir, sizeof(dir));
    rec keep[7] = {{0}};
    size_t seg_len, last_off;
    uint8_t *seg = five_records(dir, keep, &seg_len, &last_off);
    seg_path(path, sizeof(path), dir, 1);
    size_t mid_off = SLOT_RLOG_SEG_HEADER_BYTES + keep[1].len + keep[2].len;
    uint8_t *c = malloc(seg_len);
    int bad = 0;
    /* Every byte of record 3 in turn (and of 4, which has a good record after it too). */
    for (size_t i = mid_off; i < last_off; i++) {
        memcpy(c, seg, seg_len);
        c[i] ^= 0x20;
        write_file(path, c, seg_len);
        int rc;
        slot_rlog *log = open_log(dir, 0, NULL, &rc);
        if (rc != SLOT_RLOG_E_CORRUPT || log) {
            fprintf(stderr, "  flip at %zu: open gave %d (%s)\n", i, rc, slot_strerror(rc));
            bad++;
        }
        slot_rlog_close(log);
        /* Refused means untouched. */
        size_t n;
        uint8_t *now = read_file(path, &n);
        if (n != seg_len || memcmp(now, c, n) != 0)
            bad++;
        free(now);
    }
    ASSERT_EQ(bad, 0);
    /* A record with a good crc but the wrong seq in the middle: corrupt. */
    memcpy(c, seg, seg_len);
    uint8_t *r3 = c + mid_off;
    set_le64(r3 + 24, 9);
    reseal(r3, keep[3].len);
    write_file(path, c, seg_len);
    int rc;
    slot_rlog *log = open_log(dir, 0, NULL, &rc);
    ASSERT_EQ(rc, SLOT_RLOG_E_CORRUPT);
    /* The same as the last record (no torn write makes a valid record): corrupt. */
    memcpy(c, seg, seg_len);
    set_le64(c + last_off + 24, 6);
    reseal(c + last_off, keep[5].len);
    write_file(path, c, seg_len);
    log = open_log(dir, 0, NULL, &rc);
    ASSERT_EQ(rc, SLOT_RLOG_E_CORRUPT);
    /* A wrong prev_epoch chain: corrupt. */
    memcpy(c, seg, seg_len);
    set_le64(r3 + 32, 0);
    set_le64(r3 + 16, 7);
    reseal(r3, keep[3].len);
    write_file(path, c, seg_len);
    log = open_log(dir, 0, NULL, &rc);
    ASSERT_EQ(rc, SLOT_RLOG_E_CORRUPT);
    /* Restored, it opens. */
    write_file(path, seg, seg_len);
    log = open_log(dir, 0, NULL, &rc);
    ASSERT_EQ(rc, 0);
    slot_rlog_close(log);
    free(c);
    free(seg);
    free_recs(keep, 7);
    rm_dir(dir);
}

TEST_IMPL(rlog_rollover)
{
    char dir[300], path[400];
    make_dir(dir, sizeof(dir));
    enum { N = 40 };
    static rec keep[N + 2];
    int rc;
    slot_rlog_open_info info;
    slot_rlog *log = open_log(dir, 700, &info, &rc);
    ASSERT(rc == 0);
    ASSERT_EQ(append_range(log, keep, 1, N, 4, 60), 0);
    ASSERT_EQ(slot_rlog_sync(log), 0);
    int segs = count_files(dir, ".seg");
    ASSERT(segs > 3);
    /* Every segment is within its size unless it holds one record only. */
    uint64_t first = 1, total = 0;
    int nseg = 0;
    while (first <= N) {
        seg_path(path, sizeof(path), dir, first);
        off_t sz = file_size(path);
        ASSERT(sz > 0);
        uint64_t q = first, bytes = SLOT_RLOG_SEG_HEADER_BYTES;
        while (q <= N && bytes + keep[q].len <= (uint64_t)sz)
            bytes += keep[q++].len;
        ASSERT_EQ(bytes, (uint64_t)sz);
        ASSERT(sz <= 700 || q == first + 1);
        total += q - first;
        first = q;
        nseg++;
    }
    ASSERT_EQ(total, N);
    ASSERT_EQ(nseg, segs);
    /* A record larger than a segment gets one of its own. */
    rec big = make_fixed(N + 1, 5, epoch_at(N), 2000);
    ASSERT_EQ(slot_rlog_append(log, big.b, big.len), 0);
    keep[N + 1] = big;
    ASSERT_EQ(count_files(dir, ".seg"), segs + 1);
    ASSERT_EQ(slot_rlog_sync(log), 0);
    for (uint64_t q = 1; q <= N + 1; q++)
        ASSERT(read_equals(log, q, &keep[q]));
    slot_rlog_close(log);
    log = open_log(dir, 700, &info, &rc);
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(info.records, N + 1);
    ASSERT_EQ(info.segments, (uint64_t)segs + 1);
    for (uint64_t q = 1; q <= N + 1; q++)
        ASSERT(read_equals(log, q, &keep[q]));
    slot_rlog_close(log);
    /* A missing middle segment is a gap: corrupt, and nothing is removed. */
    uint64_t second = 2;
    for (; second <= N; second++) {
        seg_path(path, sizeof(path), dir, second);
        if (file_size(path) >= 0)
            break;
    }
    ASSERT(second <= N);
    seg_path(path, sizeof(path), dir, second);
    size_t l2;
    uint8_t *s2 = read_file(path, &l2);
    unlink(path);
    log = open_log(dir, 700, &info, &rc);
    ASSERT_EQ(rc, SLOT_RLOG_E_CORRUPT);
    ASSERT_EQ(count_files(dir, ".seg"), segs);
    write_file(path, s2, l2);
    /* A segment whose name disagrees with its header: corrupt. */
    seg_path(path, sizeof(path), dir, 1);
    char moved[400];
    seg_path(moved, sizeof(moved), dir, 0x100);
    rename(path, moved);
    log = open_log(dir, 700, &info, &rc);
    ASSERT_EQ(rc, SLOT_RLOG_E_CORRUPT);
    rename(moved, path);
    log = open_log(dir, 700, &info, &rc);
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(info.records, N + 1);
    slot_rlog_close(log);
    free(s2);
    free_recs(keep, N + 2);
    memset(keep, 0, sizeof(keep));
    rm_dir(dir);
}

TEST_IMPL(rlog_truncate_after)
{
    char dir[300];
    make_dir(dir, sizeof(dir));
    enum { N = 40 };
    static rec keep[N + 20];
    int rc;
    slot_rlog *log = open_log(dir, 600, NULL, &rc);
    ASSERT(rc == 0);
    ASSERT_EQ(append_range(log, keep, 1, N, 4, 60), 0);
    int segs = count_files(dir, ".seg");
    ASSERT(segs > 4);
    ASSERT_EQ(slot_rlog_truncate_after(log, N), 0); /* nothing after the last */
    ASSERT_EQ(slot_rlog_truncate_after(log, N + 5), 0);
    ASSERT_EQ(slot_rlog_count(log), N);
    /* Across segments, into the middle of one. */
    ASSERT_EQ(slot_rlog_truncate_after(log, 33), 0);
    uint64_t e, s;
    slot_rlog_last(log, &e, &s);
    ASSERT(s == 33 && e == epoch_at(33));
    const uint8_t *p;
    size_t n;
    ASSERT_EQ(slot_rlog_read(log, 34, &p, &n), -ENOENT);
    ASSERT_EQ(slot_rlog_epoch_of(log, 34, &e), -ENOENT);
    ASSERT(count_files(dir, ".seg") < segs);
    /* A divergent new tail in another epoch. */
    for (uint64_t q = 34; q <= 45; q++) {
        rec r = make_rec(q, 9, q == 34 ? epoch_at(33) : 9, 4, 60);
        ASSERT_EQ(slot_rlog_append(log, r.b, r.len), 0);
        free(keep[q].b);
        keep[q] = r;
    }
    ASSERT_EQ(slot_rlog_sync(log), 0);
    slot_rlog_close(log);
    slot_rlog_open_info info;
    log = open_log(dir, 600, &info, &rc);
    ASSERT(rc == 0);
    ASSERT_EQ(info.records, 45);
    for (uint64_t q = 1; q <= 45; q++)
        ASSERT(read_equals(log, q, &keep[q]));
    ASSERT_EQ(slot_rlog_epoch_of(log, 34, &e), 0);
    ASSERT_EQ(e, 9);
    ASSERT_EQ(slot_rlog_epoch_of(log, 33, &e), 0);
    ASSERT_EQ(e, epoch_at(33));
    /* At a segment boundary: find a seq that starts a segment. */
    char path[400];
    uint64_t b = 2;
    for (; b <= 45; b++) {
        seg_path(path, sizeof(path), dir, b);
        if (file_size(path) >= 0)
            break;
    }
    ASSERT(b <= 45);
    ASSERT_EQ(slot_rlog_truncate_after(log, b - 1), 0);
    ASSERT_EQ(file_size(path), -1); /* the segment that started at b is gone */
    slot_rlog_last(log, NULL, &s);
    ASSERT_EQ(s, b - 1);
    ASSERT(read_equals(log, b - 1, &keep[b - 1]));
    ASSERT_EQ(append_range(log, keep, b, b + 2, 4, 60), 0);
    ASSERT(read_equals(log, b + 2, &keep[b + 2]));
    /* Everything: an empty log that keeps its base. */
    ASSERT_EQ(slot_rlog_truncate_after(log, 0), 0);
    ASSERT_EQ(slot_rlog_count(log), 0);
    slot_rlog_last(log, &e, &s);
    ASSERT(e == 0 && s == 0);
    ASSERT_EQ(slot_rlog_first(log), 1);
    ASSERT_EQ(count_files(dir, ".seg"), 1);
    rec r2 = make_rec(2, 1, 1, 2, 10);
    ASSERT_EQ(slot_rlog_append(log, r2.b, r2.len), SLOT_RLOG_E_SEQ);
    ASSERT_EQ(append_range(log, keep, 1, 3, 4, 60), 0);
    slot_rlog_close(log);
    log = open_log(dir, 600, &info, &rc);
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(info.records, 3);
    ASSERT(read_equals(log, 3, &keep[3]));
    slot_rlog_close(log);
    free(r2.b);
    free_recs(keep, N + 20);
    memset(keep, 0, sizeof(keep));
    rm_dir(dir);
}

TEST_IMPL(rlog_trim_before)
{
    char dir[300];
    make_dir(dir, sizeof(dir));
    enum { N = 60 };
    static rec keep[N + 2];
    int rc;
    slot_rlog *log = open_log(dir, 600, NULL, &rc);
    ASSERT(rc == 0);
    ASSERT_EQ(append_range(log, keep, 1, N, 4, 60), 0);
    int segs = count_files(dir, ".seg");
    ASSERT_EQ(slot_rlog_trim_before(log, 1), 0);
    ASSERT_EQ(count_files(dir, ".seg"), segs);
    ASSERT_EQ(slot_rlog_trim_before(log, 35), 0);
    uint64_t first = slot_rlog_first(log);
    ASSERT(first > 1 && first <= 35);
    ASSERT(count_files(dir, ".seg") < segs);
    const uint8_t *p;
    size_t n;
    ASSERT_EQ(slot_rlog_read(log, first - 1, &p, &n), -ENOENT);
    for (uint64_t q = first; q <= N; q++)
        ASSERT(read_equals(log, q, &keep[q]));
    uint64_t e;
    ASSERT_EQ(slot_rlog_epoch_of(log, first - 1, &e), 0); /* from the segment header */
    ASSERT_EQ(e, epoch_at(first - 1));
    for (uint64_t q = first; q <= N; q++) {
        ASSERT_EQ(slot_rlog_epoch_of(log, q, &e), 0);
        ASSERT_EQ(e, epoch_at(q));
    }
    ASSERT_EQ(slot_rlog_count(log), N - first + 1);
    slot_rlog_close(log);
    slot_rlog_open_info info;
    log = open_log(dir, 600, &info, &rc);
    ASSERT(rc == 0);
    ASSERT_EQ(slot_rlog_first(log), first);
    ASSERT_EQ(info.records, N - first + 1);
    ASSERT_EQ(slot_rlog_epoch_of(log, first - 1, &e), 0);
    ASSERT_EQ(e, epoch_at(first - 1));
    /* Past the end: only the active segment stays, and appends go on. */
    ASSERT_EQ(slot_rlog_trim_before(log, 1000), 0);
    ASSERT_EQ(count_files(dir, ".seg"), 1);
    uint64_t s;
    slot_rlog_last(log, &e, &s);
    ASSERT(s == N && e == epoch_at(N));
    ASSERT_EQ(append_range(log, keep, N + 1, N + 1, 4, 60), 0);
    ASSERT(read_equals(log, N + 1, &keep[N + 1]));
    ASSERT(read_equals(log, slot_rlog_first(log), &keep[slot_rlog_first(log)]));
    slot_rlog_close(log);
    free_recs(keep, N + 2);
    memset(keep, 0, sizeof(keep));
    rm_dir(dir);
}

TEST_IMPL(rlog_reset)
{
    char dir[300], path[400];
    make_dir(dir, sizeof(dir));
    rec keep[40] = {{0}};
    int rc;
    slot_rlog *log = open_log(dir, 600, NULL, &rc);
    ASSERT(rc == 0);
    ASSERT_EQ(append_range(log, keep, 1, 30, 4, 60), 0);
    ASSERT_EQ(slot_rlog_reset(log, 0, 1), -EINVAL);
    ASSERT_EQ(slot_rlog_reset(log, 1000, 7), 0);
    ASSERT_EQ(count_files(dir, ".seg"), 1);
    ASSERT_EQ(count_files(dir, ".tmp"), 0);
    ASSERT_EQ(slot_rlog_count(log), 0);
    ASSERT_EQ(slot_rlog_first(log), 1000);
    uint64_t e, s;
    slot_rlog_last(log, &e, &s);
    ASSERT(e == 7 && s == 999);
    ASSERT_EQ(slot_rlog_epoch_of(log, 999, &e), 0);
    ASSERT_EQ(e, 7);
    const uint8_t *p;
    size_t n;
    ASSERT_EQ(slot_rlog_read(log, 5, &p, &n), -ENOENT);
    rec a = make_rec(1, 1, 0, 2, 10), b = make_rec(1000, 8, 6, 2, 10), c = make_rec(1000, 8, 7, 2, 10);
    ASSERT_EQ(slot_rlog_append(log, a.b, a.len), SLOT_RLOG_E_SEQ);
    ASSERT_EQ(slot_rlog_append(log, b.b, b.len), SLOT_RLOG_E_EPOCH);
    slot_rlog_close(log);
    /* The base survives a reopen; a leftover temporary is removed. */
    snprintf(path, sizeof(path), "%s/00000000000003e8.seg.tmp", dir);
    write_file(path, (const uint8_t *)"x", 1);
    snprintf(path, sizeof(path), "%s/notes.txt", dir);
    write_file(path, (const uint8_t *)"not a segment", 13);
    slot_rlog_open_info info;
    log = open_log(dir, 600, &info, &rc);
    ASSERT(rc == 0);
    ASSERT_EQ(info.removed_files, 1);
    ASSERT_EQ(count_files(dir, ".tmp"), 0);
    ASSERT_EQ(file_size(path), 13); /* other files are left alone */
    slot_rlog_last(log, &e, &s);
    ASSERT(e == 7 && s == 999);
    ASSERT_EQ(slot_rlog_append(log, c.b, c.len), 0);
    ASSERT_EQ(slot_rlog_sync(log), 0);
    rec keep2 = c;
    ASSERT(read_equals(log, 1000, &keep2));
    /* Reset to a lower seq works as well (a replica starting over). */
    ASSERT_EQ(slot_rlog_reset(log, 3, 0), 0);
    ASSERT_EQ(slot_rlog_first(log), 3);
    slot_rlog_close(log);
    log = open_log(dir, 600, &info, &rc);
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(slot_rlog_first(log), 3);
    ASSERT_EQ(info.records, 0);
    slot_rlog_close(log);
    free(a.b), free(b.b), free(c.b);
    free_recs(keep, 40);
    rm_dir(dir);
}

/* A write that fails part-way (here: past RLIMIT_FSIZE, EFBIG; ENOSPC takes
 * the same path) leaves the log as it was, and the error comes back as -errno. */
TEST_IMPL(rlog_failed_write)
{
    char dir[300], path[400];
    make_dir(dir, sizeof(dir));
    rec keep[10] = {{0}};
    int rc;
    slot_rlog *log = open_log(dir, 0, NULL, &rc);
    ASSERT(rc == 0);
    ASSERT_EQ(append_range(log, keep, 1, 3, 4, 60), 0);
    seg_path(path, sizeof(path), dir, 1);
    off_t size = file_size(path);
    rec big = make_rec(4, epoch_at(4), epoch_at(3), 20, 400);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = (rlim_t)size + big.len / 2;
    ASSERT(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    ASSERT_EQ(slot_rlog_append(log, big.b, big.len), -EFBIG);
    setrlimit(RLIMIT_FSIZE, &old);
    ASSERT_EQ(file_size(path), size);
    ASSERT_EQ(slot_rlog_count(log), 3);
    ASSERT_EQ(slot_rlog_append(log, big.b, big.len), 0);
    ASSERT(read_equals(log, 4, &big));
    slot_rlog_close(log);
    log = open_log(dir, 0, NULL, &rc);
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(slot_rlog_count(log), 4);
    slot_rlog_close(log);
    free(big.b);
    free_recs(keep, 10);
    rm_dir(dir);
}

TEST_IMPL(rlog_bad_options)
{
    char dir[300];
    make_dir(dir, sizeof(dir));
    slot_rlog *log = (slot_rlog *)1;
    slot_rlog_opts o = {.segment_bytes = SLOT_RLOG_SEGMENT_BYTES_MIN - 1};
    ASSERT_EQ(slot_rlog_open(dir, &o, &log, NULL), -EINVAL);
    ASSERT(log == NULL);
    o.segment_bytes = (uint64_t)SLOT_RLOG_SEGMENT_BYTES_MAX + 1;
    ASSERT_EQ(slot_rlog_open(dir, &o, &log, NULL), -EINVAL);
    ASSERT_EQ(slot_rlog_open("", NULL, &log, NULL), -EINVAL);
    ASSERT_EQ(slot_rlog_open("/proc/no/such/dir", NULL, &log, NULL), -ENOENT);
    ASSERT_EQ(slot_rlog_open(dir, NULL, &log, NULL), 0); /* created */
    slot_rlog_close(log);
    slot_rlog_close(NULL);
    rm_dir(dir);
}

/* Random appends, truncations, trims, resets and reopens on tiny segments,
 * against a model: after every step the log holds exactly the model's
 * records, with the model's epochs. */
TEST_IMPL(rlog_random_model)
{
    enum { STEPS = 1500, MAXSEQ = 4000 };
    static rec m[MAXSEQ + 2]; /* m[seq]: the record the log must hold */
    static uint64_t ep[MAXSEQ + 2];
    char dir[300];
    make_dir(dir, sizeof(dir));
    int rc;
    slot_rlog *log = open_log(dir, 300, NULL, &rc);
    ASSERT(rc == 0);
    uint64_t first = 1, last = 0, epoch = 1; /* model: records first..last */
    uint64_t base_epoch = 0;
    int bad = 0;
    for (int step = 0; step < STEPS && !bad; step++) {
        uint64_t roll = rnd_below(100);
        if (roll < 60 && last < MAXSEQ) {
            if (rnd_below(10) == 0)
                epoch++;
            uint64_t prev = last >= first ? ep[last] : base_epoch;
            uint64_t seq = last + 1;
            rec r = make_rec(seq, epoch, prev, 3, 80);
            if ((rc = slot_rlog_append(log, r.b, r.len)) != 0) {
                fprintf(stderr, "  step %d: append %" PRIu64 ": %s\n", step, seq, slot_strerror(rc));
                bad++;
            }
            free(m[seq].b);
            m[seq] = r;
            ep[seq] = epoch;
            last = seq;
        } else if (roll < 70) {
            uint64_t to = first - 1 + rnd_below(last - first + 3);
            if ((rc = slot_rlog_truncate_after(log, to)) != 0)
                bad++;
            if (to < last)
                last = to;
        } else if (roll < 78) {
            uint64_t below = first + rnd_below(last - first + 3);
            if ((rc = slot_rlog_trim_before(log, below)) != 0)
                bad++;
            uint64_t nf = slot_rlog_first(log);
            if (nf < first || nf > below || nf > last + 1)
                bad++;
            if (nf > first)
                base_epoch = ep[nf - 1];
            first = nf;
        } else if (roll < 80) {
            uint64_t start = 1 + rnd_below(MAXSEQ / 2);
            base_epoch = epoch;
            if ((rc = slot_rlog_reset(log, start, base_epoch)) != 0)
                bad++;
            first = start;
            last = start - 1;
        } else if (roll < 88) {
            if (slot_rlog_sync(log) != 0)
                bad++;
            slot_rlog_close(log);
            slot_rlog_open_info info;
            log = open_log(dir, 300, &info, &rc);
            if (rc != 0 || !log || info.truncated_bytes != 0) {
                fprintf(stderr, "  step %d: reopen: %s\n", step, slot_strerror(rc));
                bad++;
                break;
            }
        } else {
            if (last >= first) {
                uint64_t q = first + rnd_below(last - first + 1);
                if (!read_equals(log, q, &m[q]))
                    bad++;
            }
        }
        uint64_t le, ls;
        slot_rlog_last(log, &le, &ls);
        uint64_t want_e = last >= first ? ep[last] : base_epoch;
        if (ls != last || le != want_e || slot_rlog_first(log) != first || slot_rlog_count(log) != last + 1 - first) {
            fprintf(stderr,
                    "  step %d: log first %" PRIu64 " last (%" PRIu64 ", %" PRIu64 "), model first %" PRIu64
                    " last (%" PRIu64 ", %" PRIu64 ")\n",
                    step, slot_rlog_first(log), le, ls, first, want_e, last);
            bad++;
        }
    }
    /* Finally every record, and every epoch. */
    for (uint64_t q = first; q <= last && !bad; q++) {
        uint64_t e;
        if (!read_equals(log, q, &m[q]) || slot_rlog_epoch_of(log, q, &e) != 0 || e != ep[q])
            bad++;
    }
    ASSERT_EQ(bad, 0);
    slot_rlog_close(log);
    free_recs(m, MAXSEQ + 2);
    memset(m, 0, sizeof(m));
    rm_dir(dir);
}

/*
 * Several records appended between two flushes, and a power cut that kept
 * some of their pages (docs/design.md, "A torn tail with holes"): record 2
 * zeroed, 3 and 4 whole after it. Their commit_seq is 1 (written before 2
 * was known durable), so the open cuts the tail at 2 and keeps 1. When 4
 * says commit_seq 2, record 2 had been flushed: the same damage is
 * corruption, refused with the files untouched.
 */
TEST_IMPL(rlog_torn_tail_with_holes)
{
    for (int durable_after = 0; durable_after < 2; durable_after++) {
        char dir[300], path[400];
        make_dir(dir, sizeof(dir));
        int rc;
        slot_rlog *log = open_log(dir, 0, NULL, &rc);
        ASSERT_EQ(rc, 0);
        rec r[5];
        size_t off[5], at = SLOT_RLOG_SEG_HEADER_BYTES;
        for (uint64_t q = 1; q <= 4; q++) {
            r[q] = make_fixed(q, 1, q == 1 ? 0 : 1, 100);
            set_le64(r[q].b + 40, q == 1 ? 0 : durable_after && q == 4 ? 2 : 1); /* commit_seq */
            reseal(r[q].b, r[q].len);
            ASSERT_EQ(slot_rlog_append(log, r[q].b, r[q].len), 0);
            off[q] = at;
            at += r[q].len;
        }
        ASSERT_EQ(slot_rlog_sync(log), 0);
        slot_rlog_close(log);
        seg_path(path, sizeof(path), dir, 1);
        size_t n;
        uint8_t *b = read_file(path, &n);
        ASSERT_EQ(n, at);
        memset(b + off[2], 0, r[2].len); /* the hole: record 2's page never written */
        write_file(path, b, n);
        slot_rlog_open_info info;
        log = open_log(dir, 0, &info, &rc);
        if (durable_after) {
            ASSERT_EQ(rc, SLOT_RLOG_E_CORRUPT);
            ASSERT(log == NULL);
            size_t n2;
            uint8_t *now = read_file(path, &n2);
            ASSERT(n2 == n && memcmp(now, b, n) == 0); /* refused means untouched */
            free(now);
        } else {
            ASSERT_EQ(rc, 0);
            uint64_t last = 0;
            slot_rlog_last(log, NULL, &last);
            ASSERT_EQ(last, 1);
            ASSERT_EQ(info.truncated_bytes, at - off[2]);
            ASSERT_EQ(slot_rlog_append(log, r[2].b, r[2].len), 0); /* the log goes on from 2 */
            slot_rlog_close(log);
        }
        free(b);
        for (int q = 1; q <= 4; q++)
            free(r[q].b);
        slot_test_rmdir(dir);
    }
}
