/*
 * fuzz_rlog.c — libFuzzer target for the batch log's reader (slot/rlog.h):
 * what slot_rlog_open finds in a directory after a crash, a damaged disk or
 * a tampered file.
 *
 * Input: byte 0 holds options (bit 0: fix up the CRC-32 of every segment
 * header and every record whose length fits, so that inputs get past the
 * checksums to the checks behind them; bit 1: name each segment by the
 * first_seq its header says rather than 1, 2, 3...; bit 2: add a leftover
 * "*.seg.tmp"; bit 3: add a file of another name; bits 4-5: the log's
 * segment_bytes); then up to four segment files, each a u16 length
 * (little-endian) and its bytes. Whatever they hold, nothing may crash,
 * leak or trip a sanitizer, and:
 *   - open either refuses (SLOT_RLOG_E_CORRUPT) and every file in the
 *     directory is byte for byte as it was, or opens;
 *   - an opened log reads every record from first to last: each decodes,
 *     CRC included, has its seq, and its prev_epoch is the epoch of the one
 *     before (epoch_of); count and info.records agree with first and last;
 *   - what open changed is only what slot/rlog.h lets it: the last segment
 *     cut to a prefix of itself, an empty torn last segment and the
 *     *.seg.tmp removed (as many as info.removed_files says); every other
 *     file is as it was;
 *   - the log takes the next record (seq last + 1, prev_epoch its last
 *     epoch), and after a close opens again clean (nothing cut, nothing
 *     removed) with that record in it.
 * Built and run by tests/fuzz/run.sh. The log lives on /dev/shm when there
 * is one (open syncs what it repairs).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "slot/rlog.h"
#include "slot/wset.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "fuzz_rlog: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

#define SEGS_MAX 4
#define FILES_MAX (SEGS_MAX + 2)

typedef struct file {
    char name[64];
    uint8_t *bytes;
    size_t len;
    bool seg, tmp;
} file;

static char dir[256];

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* The CRC-32s that slot/rlog.h and slot/wset.h lay out, made right. */
static void fix_crcs(uint8_t *p, size_t n)
{
    if (n < SLOT_RLOG_SEG_HEADER_BYTES)
        return;
    put32(p + 28, (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, 28));
    for (size_t off = SLOT_RLOG_SEG_HEADER_BYTES; n - off >= SLOT_WSET_HEADER_BYTES;) {
        uint64_t len = SLOT_WSET_HEADER_BYTES + (uint64_t)get32(p + off + 8);
        if (len > n - off)
            break;
        uLong c = crc32(crc32(0L, Z_NULL, 0), p + off, 12);
        c = crc32(c, p + off + 16, (uInt)(len - 16));
        put32(p + off + 12, (uint32_t)c);
        off += (size_t)len;
    }
}

static void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static void write_file(const file *f)
{
    char p[400];
    path_of(p, sizeof p, f->name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    CHECK(write(fd, f->bytes, f->len) == (ssize_t)f->len);
    CHECK(close(fd) == 0);
}

/* The file's bytes now (NULL when it is gone). */
static uint8_t *read_file(const char *name, size_t *len)
{
    char p[400];
    path_of(p, sizeof p, name);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        CHECK(errno == ENOENT);
        return NULL;
    }
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    uint8_t *b = malloc((size_t)st.st_size + 1);
    CHECK(b != NULL);
    CHECK(read(fd, b, (size_t)st.st_size) == (ssize_t)st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return b;
}

static void empty_dir(void)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char p[400];
        path_of(p, sizeof p, de->d_name);
        CHECK(unlink(p) == 0);
    }
    closedir(d);
}

static size_t count_dir(void)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void on_log(void *ctx, const char *msg)
{
    (void)ctx;
    CHECK(msg != NULL && strlen(msg) < 4096);
}

/* Every record from first to last reads back and chains. */
static void check_records(slot_rlog *log, const slot_rlog_open_info *info)
{
    uint64_t first = slot_rlog_first(log), last = 0, last_epoch = 0;
    slot_rlog_last(log, &last_epoch, &last);
    uint64_t count = slot_rlog_count(log);
    CHECK(count == (last >= first ? last - first + 1 : 0));
    CHECK(info->records == count);
    uint64_t before = 0;
    if (first > 1 || count > 0) {
        int rc = slot_rlog_epoch_of(log, first - 1, &before);
        CHECK(rc == 0 || (rc == -ENOENT && first == 1));
    }
    for (uint64_t i = 0; i < count; i++) { /* by index: seq may end at UINT64_MAX */
        uint64_t seq = first + i;
        const uint8_t *rec;
        size_t n;
        CHECK(slot_rlog_read(log, seq, &rec, &n) == 0);
        slot_wset_rec d;
        CHECK(slot_wset_decode(rec, n, &d) == 0 && d.record_bytes == n);
        CHECK(d.hdr.seq == seq && d.hdr.prev_epoch == before);
        uint64_t e;
        CHECK(slot_rlog_epoch_of(log, seq, &e) == 0 && e == d.hdr.epoch);
        before = d.hdr.epoch;
    }
    if (count > 0)
        CHECK(before == last_epoch);
    const uint8_t *rec;
    size_t n;
    CHECK(slot_rlog_read(log, last + 1, &rec, &n) == -ENOENT);
}

/* The next record, taken; then a clean reopen with it. Closes log. */
static void check_append_reopen(slot_rlog *log, const slot_rlog_opts *o)
{
    uint64_t last = 0, epoch = 0;
    slot_rlog_last(log, &epoch, &last);
    uint64_t count = slot_rlog_count(log);
    if (last == UINT64_MAX || epoch == UINT64_MAX) { /* no next record to take */
        slot_rlog_close(log);
        return;
    }
    slot_wset ws;
    CHECK(slot_wset_init(&ws, 0) == 0);
    CHECK(slot_wset_put(&ws, 1, "k", 1, "v", 1) == 0);
    slot_wset_hdr h = {.epoch = epoch + 1, .seq = last + 1, .prev_epoch = epoch, .commit_seq = last};
    const uint8_t *rec;
    size_t n;
    CHECK(slot_wset_finish(&ws, &h, &rec, &n) == 0);
    int rc = slot_rlog_append(log, rec, n);
    if (rc != 0) {
        fprintf(stderr, "fuzz_rlog: the opened log refused its next record (seq %llu): %s\n", (unsigned long long)h.seq,
                slot_strerror(rc));
        abort();
    }
    CHECK(slot_rlog_sync(log) == 0);
    slot_rlog_close(log);
    slot_wset_free(&ws);
    slot_rlog_open_info info;
    slot_rlog *again = NULL;
    rc = slot_rlog_open(dir, o, &again, &info);
    if (rc != 0) {
        fprintf(stderr, "fuzz_rlog: a log open repaired does not open again: %s\n", slot_strerror(rc));
        abort();
    }
    CHECK(info.truncated_bytes == 0 && info.removed_files == 0);
    CHECK(slot_rlog_count(again) == count + 1);
    uint64_t l2 = 0, e2 = 0;
    slot_rlog_last(again, &e2, &l2);
    CHECK(l2 == last + 1 && e2 == epoch + 1);
    check_records(again, &info);
    slot_rlog_close(again);
}

/* At exit: the folder removed. */
static void remove_dir(void)
{
    empty_dir();
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct stat st;
    const char *base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/slot-fuzz-rlog-XXXXXX", base && *base ? base : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    atexit(remove_dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    uint8_t opt = data[0];
    static const uint64_t seg_bytes[4] = {SLOT_RLOG_SEGMENT_BYTES_MIN, 256, 4096, 0};
    slot_rlog_opts o = {.segment_bytes = seg_bytes[(opt >> 4) & 3], .log = on_log};
    file files[FILES_MAX];
    size_t nf = 0;
    size_t at = 1;
    uint64_t next_seq = 1;
    while (nf < SEGS_MAX && size - at >= 2) {
        size_t len = (size_t)data[at] | (size_t)data[at + 1] << 8;
        at += 2;
        if (len > size - at)
            len = size - at;
        file *f = &files[nf];
        f->bytes = malloc(len + 1);
        CHECK(f->bytes != NULL);
        memcpy(f->bytes, data + at, len);
        f->len = len;
        at += len;
        if (opt & 1)
            fix_crcs(f->bytes, len);
        uint64_t first = (opt & 2) && len >= 16 ? get64(f->bytes + 8) : next_seq;
        next_seq = first + 1;
        snprintf(f->name, sizeof f->name, "%016llx.seg", (unsigned long long)first);
        f->seg = true;
        f->tmp = false;
        bool dup = false;
        for (size_t i = 0; i < nf; i++)
            dup |= strcmp(files[i].name, f->name) == 0;
        if (dup) {
            free(f->bytes);
            continue;
        }
        nf++;
    }
    const char *extra[2] = {"0000000000000001.seg.tmp", "notes.txt"};
    for (int k = 0; k < 2; k++) {
        if (!(opt & (4 << k)))
            continue;
        file *f = &files[nf++];
        snprintf(f->name, sizeof f->name, "%s", extra[k]);
        f->len = 5;
        f->bytes = malloc(5);
        CHECK(f->bytes != NULL);
        memcpy(f->bytes, "left\n", 5);
        f->seg = false;
        f->tmp = k == 0;
    }
    for (size_t i = 0; i < nf; i++)
        write_file(&files[i]);

    slot_rlog *log = NULL;
    slot_rlog_open_info info;
    memset(&info, 0xa5, sizeof info);
    int rc = slot_rlog_open(dir, &o, &log, &info);
    if (rc != 0) {
        if (rc != SLOT_RLOG_E_CORRUPT) {
            fprintf(stderr, "fuzz_rlog: open refused with %d (%s), not as corrupt\n", rc, slot_strerror(rc));
            abort();
        }
        CHECK(log == NULL);
        CHECK(count_dir() == nf);
        for (size_t i = 0; i < nf; i++) { /* byte for byte as they were */
            size_t len = 0;
            uint8_t *now = read_file(files[i].name, &len);
            CHECK(now != NULL && len == files[i].len && memcmp(now, files[i].bytes, len) == 0);
            free(now);
        }
    } else {
        CHECK(log != NULL);
        /* Only the last segment (by name) may be cut or removed; the *.seg.tmp goes. */
        const char *last_seg = NULL;
        for (size_t i = 0; i < nf; i++)
            if (files[i].seg && (!last_seg || strcmp(files[i].name, last_seg) > 0))
                last_seg = files[i].name;
        uint64_t removed = 0;
        for (size_t i = 0; i < nf; i++) {
            size_t len = 0;
            uint8_t *now = read_file(files[i].name, &len);
            bool is_last = last_seg && strcmp(files[i].name, last_seg) == 0;
            if (!now) {
                CHECK(files[i].tmp || (is_last && files[i].len <= SLOT_RLOG_SEG_HEADER_BYTES));
                removed++;
                continue;
            }
            CHECK(!files[i].tmp);
            if (is_last)
                CHECK(len <= files[i].len && memcmp(now, files[i].bytes, len) == 0 &&
                      info.truncated_bytes == files[i].len - len);
            else
                CHECK(len == files[i].len && memcmp(now, files[i].bytes, len) == 0);
            free(now);
        }
        CHECK(info.removed_files == removed);
        check_records(log, &info);
        check_append_reopen(log, &o);
    }
    for (size_t i = 0; i < nf; i++)
        free(files[i].bytes);
    empty_dir();
    return 0;
}
