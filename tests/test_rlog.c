/*
 * test_rlog.c — the replication record codec (slot/wset.h) and the batch log
 * on disk (slot/rlog.h).
 *
 * The cases run under the shared harness (harness.h). Randomness comes from a
 * fixed seed, so a failure reproduces; SLOT_TEST_SEED (a nonzero integer)
 * picks another. Every case starts from the same seed (each runs in its own
 * process), so one case run alone sees what it sees in the whole run.
 */
#include "harness.h"
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

TEST_DECLARE(wset_roundtrip)
TEST_DECLARE(wset_empty_set)
TEST_DECLARE(wset_builder_errors)
TEST_DECLARE(wset_size_bound)
TEST_DECLARE(wset_decode_flip_every_byte)
TEST_DECLARE(wset_decode_error_classes)
TEST_DECLARE(rlog_append_read_reopen)
TEST_DECLARE(rlog_append_rules)
TEST_DECLARE(rlog_torn_tail_every_offset)
TEST_DECLARE(rlog_torn_segment_header)
TEST_DECLARE(rlog_corrupt_middle)
TEST_DECLARE(rlog_rollover)
TEST_DECLARE(rlog_truncate_after)
TEST_DECLARE(rlog_trim_before)
TEST_DECLARE(rlog_reset)
TEST_DECLARE(rlog_failed_write)
TEST_DECLARE(rlog_bad_options)
TEST_DECLARE(rlog_random_model)

TEST_LIST_START
    TEST_ENTRY(wset_roundtrip)
    TEST_ENTRY(wset_empty_set)
    TEST_ENTRY(wset_builder_errors)
    TEST_ENTRY(wset_size_bound)
    TEST_ENTRY(wset_decode_flip_every_byte)
    TEST_ENTRY(wset_decode_error_classes)
    TEST_ENTRY(rlog_append_read_reopen)
    TEST_ENTRY(rlog_append_rules)
    TEST_ENTRY(rlog_torn_tail_every_offset)
    TEST_ENTRY(rlog_torn_segment_header)
    TEST_ENTRY(rlog_corrupt_middle)
    TEST_ENTRY(rlog_rollover)
    TEST_ENTRY(rlog_truncate_after)
    TEST_ENTRY(rlog_trim_before)
    TEST_ENTRY(rlog_reset)
    TEST_ENTRY(rlog_failed_write)
    TEST_ENTRY(rlog_bad_options)
    TEST_ENTRY(rlog_random_model)
TEST_LIST_END

/* ---- helpers ----------------------------------------------------------- */

/* xorshift64; seeded on first use in each case's process (SLOT_TEST_SEED,
 * a nonzero integer, or the fixed default). */
static uint64_t rng_state;
static uint64_t rnd(void)
{
    if (rng_state == 0) {
        const char *seed = getenv("SLOT_TEST_SEED");
        uint64_t v = seed ? strtoull(seed, NULL, 0) : 0;
        rng_state = v ? v : 0x9e3779b97f4a7c15ull;
    }
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static uint64_t rnd_below(uint64_t n) { return n ? rnd() % n : 0; }

static void rnd_bytes(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rnd();
}

/* A record in a malloc'd buffer. */
typedef struct rec {
    uint8_t *b;
    size_t len;
} rec;

/* A random write set of up to max_ops ops, values up to max_val bytes, sealed. */
static rec make_rec(uint64_t seq, uint64_t epoch, uint64_t prev_epoch, unsigned max_ops, size_t max_val)
{
    slot_wset ws;
    rec r = {0};
    if (slot_wset_init(&ws, 0) != 0)
        abort();
    unsigned n = (unsigned)rnd_below(max_ops + 1);
    uint8_t key[SLOT_WSET_KEY_BYTES_MAX], *val = malloc(max_val + 1);
    for (unsigned i = 0; i < n; i++) {
        size_t klen = 1 + rnd_below(rnd_below(4) ? 40 : SLOT_WSET_KEY_BYTES_MAX);
        size_t vlen = rnd_below(max_val + 1);
        rnd_bytes(key, klen);
        rnd_bytes(val, vlen);
        uint8_t db = (uint8_t)rnd_below(SLOT_WSET_DBS_MAX);
        int rc = rnd_below(4) ? slot_wset_put(&ws, db, key, klen, val, vlen) : slot_wset_del(&ws, db, key, klen);
        if (rc)
            abort();
    }
    slot_wset_hdr h = {.epoch = epoch, .seq = seq, .prev_epoch = prev_epoch,
                       .commit_seq = seq - 1, .timestamp_ms = 1700000000000ull + seq};
    const uint8_t *p;
    if (slot_wset_finish(&ws, &h, &p, &r.len) != 0)
        abort();
    r.b = malloc(r.len);
    memcpy(r.b, p, r.len);
    slot_wset_free(&ws);
    free(val);
    return r;
}

/* A record of one put with a vlen-byte value: 69 + vlen bytes. */
static rec make_fixed(uint64_t seq, uint64_t epoch, uint64_t prev_epoch, size_t vlen)
{
    slot_wset ws;
    rec r = {0};
    uint8_t *v = calloc(1, vlen + 1);
    const uint8_t *p;
    slot_wset_hdr h = {.epoch = epoch, .seq = seq, .prev_epoch = prev_epoch, .commit_seq = seq - 1};
    if (slot_wset_init(&ws, 0) || slot_wset_put(&ws, 2, "k", 1, v, vlen) ||
        slot_wset_finish(&ws, &h, &p, &r.len))
        abort();
    r.b = malloc(r.len);
    memcpy(r.b, p, r.len);
    slot_wset_free(&ws);
    free(v);
    return r;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static void set_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void set_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void set_le64(uint8_t *p, uint64_t v)
{
    set_le32(p, (uint32_t)v);
    set_le32(p + 4, (uint32_t)(v >> 32));
}

/* The crc as the layout in slot/wset.h defines it, computed independently. */
static uint32_t layout_crc(const uint8_t *b, size_t len)
{
    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, b, 12);
    c = crc32(c, b + 16, (uInt)(len - 16));
    return (uint32_t)c;
}
static void reseal(uint8_t *b, size_t len) { set_le32(b + 12, layout_crc(b, len)); }

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
static uint64_t epoch_at(uint64_t seq) { return seq <= 30 ? 1 : seq <= 70 ? 2 : 5; }

static int append_range(slot_rlog *log, rec *keep, uint64_t from, uint64_t to, unsigned max_ops,
                        size_t max_val)
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

/* ---- codec ------------------------------------------------------------- */

typedef struct model_op {
    uint8_t type, db;
    size_t klen, vlen;
    uint8_t key[SLOT_WSET_KEY_BYTES_MAX];
    uint8_t *val;
} model_op;

TEST_IMPL(wset_roundtrip)
{
    enum { ROUNDS = 300, OPS = 60 };
    static model_op m[OPS];
    slot_wset ws;
    ASSERT(slot_wset_init(&ws, 0) == 0);
    for (int round = 0; round < ROUNDS; round++) {
        slot_wset_clear(&ws);
        unsigned n = (unsigned)rnd_below(OPS + 1);
        for (unsigned i = 0; i < n; i++) {
            model_op *o = &m[i];
            o->type = rnd_below(3) ? SLOT_WSET_PUT : SLOT_WSET_DEL;
            o->db = (uint8_t)rnd_below(SLOT_WSET_DBS_MAX);
            o->klen = 1 + rnd_below(rnd_below(8) ? 32 : SLOT_WSET_KEY_BYTES_MAX);
            o->vlen = o->type == SLOT_WSET_PUT ? rnd_below(rnd_below(8) ? 64 : 5000) : 0;
            rnd_bytes(o->key, o->klen);
            o->val = malloc(o->vlen + 1);
            rnd_bytes(o->val, o->vlen);
            int rc = o->type == SLOT_WSET_PUT
                         ? slot_wset_put(&ws, o->db, o->key, o->klen, o->vlen ? o->val : NULL, o->vlen)
                         : slot_wset_del(&ws, o->db, o->key, o->klen);
            ASSERT_EQ(rc, 0);
        }
        ASSERT_EQ(slot_wset_ops(&ws), n);
        slot_wset_hdr h = {.epoch = rnd() | 1, .seq = 1 + rnd_below(UINT64_MAX - 1),
                           .timestamp_ms = rnd()};
        h.prev_epoch = rnd_below(h.epoch + 1);
        h.commit_seq = rnd_below(h.seq + 1);
        const uint8_t *p;
        size_t len;
        ASSERT_EQ(slot_wset_finish(&ws, &h, &p, &len), 0);
        /* The layout, read independently of the decoder. */
        ASSERT(memcmp(p, "SLWS", 4) == 0);
        ASSERT_EQ(p[4] | p[5] << 8, SLOT_WSET_VERSION);
        ASSERT_EQ(le32(p + 8), len - SLOT_WSET_HEADER_BYTES);
        ASSERT_EQ(le32(p + 12), layout_crc(p, len));
        ASSERT_EQ(le32(p + SLOT_WSET_HEADER_BYTES), n);
        /* Decode from a buffer with bytes after the record: they are not looked at. */
        uint8_t *buf = malloc(len + 7);
        memcpy(buf, p, len);
        memset(buf + len, 0xAB, 7);
        slot_wset_rec r;
        ASSERT_EQ(slot_wset_decode(buf, len + 7, &r), 0);
        ASSERT_EQ(r.record_bytes, len);
        ASSERT(r.hdr.epoch == h.epoch && r.hdr.seq == h.seq && r.hdr.prev_epoch == h.prev_epoch);
        ASSERT(r.hdr.commit_seq == h.commit_seq && r.hdr.timestamp_ms == h.timestamp_ms);
        ASSERT_EQ(r.op_count, n);
        slot_wset_iter it;
        slot_wset_op op;
        slot_wset_iter_init(&it, &r);
        unsigned i = 0;
        while (slot_wset_next(&it, &op) == 1) {
            ASSERT_LT(i, n); /* no more ops than were added */
            const model_op *o = &m[i++];
            ASSERT(op.type == o->type && op.db_id == o->db && op.klen == o->klen && op.vlen == o->vlen);
            ASSERT(memcmp(op.key, o->key, o->klen) == 0);
            ASSERT(o->vlen == 0 || memcmp(op.val, o->val, o->vlen) == 0);
            /* Without copying: the op points into the caller's buffer. */
            ASSERT(op.key > buf && op.key < buf + len);
        }
        ASSERT_EQ(i, n);
        free(buf);
        for (unsigned j = 0; j < n; j++)
            free(m[j].val);
    }
    slot_wset_free(&ws);
}

TEST_IMPL(wset_empty_set)
{
    slot_wset ws;
    ASSERT(slot_wset_init(&ws, 0) == 0);
    slot_wset_hdr h = {.epoch = 3, .seq = 9, .prev_epoch = 3, .commit_seq = 9};
    const uint8_t *p;
    size_t len;
    ASSERT_EQ(slot_wset_finish(&ws, &h, &p, &len), 0);
    ASSERT_EQ(len, SLOT_WSET_HEADER_BYTES + SLOT_WSET_PAYLOAD_MIN_BYTES);
    slot_wset_rec r;
    ASSERT_EQ(slot_wset_decode(p, len, &r), 0);
    ASSERT_EQ(r.op_count, 0);
    slot_wset_iter it;
    slot_wset_op op;
    slot_wset_iter_init(&it, &r);
    ASSERT_EQ(slot_wset_next(&it, &op), 0);
    /* Finishing again with other fields re-seals the same buffer. */
    h.seq = 10;
    ASSERT_EQ(slot_wset_finish(&ws, &h, &p, &len), 0);
    ASSERT_EQ(slot_wset_decode(p, len, &r), 0);
    ASSERT_EQ(r.hdr.seq, 10);
    slot_wset_free(&ws);
}

TEST_IMPL(wset_builder_errors)
{
    slot_wset ws;
    ASSERT(slot_wset_init(&ws, 0) == 0);
    uint8_t key[SLOT_WSET_KEY_BYTES_MAX + 1] = {1, 2, 3};
    ASSERT_EQ(slot_wset_put(&ws, 0, key, 3, "v", 1), 0);
    ASSERT_EQ(slot_wset_put(&ws, SLOT_WSET_DBS_MAX, key, 3, "v", 1), SLOT_WSET_E_DB_ID);
    ASSERT_EQ(slot_wset_del(&ws, 255, key, 3), SLOT_WSET_E_DB_ID);
    ASSERT_EQ(slot_wset_put(&ws, 1, key, 0, "v", 1), SLOT_WSET_E_KEY_LEN);
    ASSERT_EQ(slot_wset_del(&ws, 1, key, SLOT_WSET_KEY_BYTES_MAX + 1), SLOT_WSET_E_KEY_LEN);
    ASSERT_EQ(slot_wset_put(&ws, 1, NULL, 3, "v", 1), SLOT_WSET_E_KEY_LEN);
    ASSERT_EQ(slot_wset_put(&ws, 1, key, 3, NULL, 4), -EINVAL);
    ASSERT_EQ(slot_wset_del(&ws, SLOT_WSET_DBS_MAX - 1, key, SLOT_WSET_KEY_BYTES_MAX), 0);
    ASSERT_EQ(slot_wset_put(&ws, 2, key, 1, NULL, 0), 0); /* an empty value is a value */
    ASSERT_EQ(slot_wset_ops(&ws), 3);                    /* the refused ones left no trace */
    const uint8_t *p;
    size_t len;
    slot_wset_hdr h = {.epoch = 2, .seq = 5, .prev_epoch = 2, .commit_seq = 4};
    ASSERT_EQ(slot_wset_finish(&ws, &h, &p, &len), 0);
    ASSERT_EQ(len, SLOT_WSET_HEADER_BYTES + 4 + (8 + 3 + 1) + (8 + SLOT_WSET_KEY_BYTES_MAX) + (8 + 1));
    slot_wset_hdr bad = h;
    bad.seq = 0;
    bad.commit_seq = 0;
    ASSERT_EQ(slot_wset_finish(&ws, &bad, &p, &len), SLOT_WSET_E_SEQ);
    bad = h;
    bad.commit_seq = 6;
    ASSERT_EQ(slot_wset_finish(&ws, &bad, &p, &len), SLOT_WSET_E_SEQ);
    bad = h;
    bad.prev_epoch = 3;
    ASSERT_EQ(slot_wset_finish(&ws, &bad, &p, &len), SLOT_WSET_E_EPOCH);
    slot_wset_free(&ws);
    /* The bound on init. */
    ASSERT_EQ(slot_wset_init(&ws, 3), -EINVAL);
    ASSERT_EQ(slot_wset_init(&ws, (size_t)SLOT_WSET_BYTES_MAX + 1), -EINVAL);
    ASSERT_EQ(slot_wset_init(&ws, 0), 0);
    ASSERT_EQ(ws.payload_max, SLOT_WSET_BYTES_MAX);
    slot_wset_free(&ws);
}

TEST_IMPL(wset_size_bound)
{
    enum { MAX = 200 };
    slot_wset ws;
    ASSERT(slot_wset_init(&ws, MAX) == 0);
    uint8_t k[16] = {7}, v[64] = {9};
    size_t used = SLOT_WSET_PAYLOAD_MIN_BYTES;
    int rc;
    while ((rc = slot_wset_put(&ws, 1, k, sizeof(k), v, sizeof(v))) == 0)
        used += 8 + sizeof(k) + sizeof(v);
    ASSERT_EQ(rc, SLOT_WSET_E_FULL);
    ASSERT_EQ(slot_wset_ops(&ws), 2); /* 4 + 2*88 = 180; a third would be 268 */
    /* Exactly filling the bound is allowed: 200 - 180 = 20 = 8 + 12. */
    ASSERT_EQ(slot_wset_put(&ws, 1, k, 12, v, 1), SLOT_WSET_E_FULL);
    ASSERT_EQ(slot_wset_del(&ws, 1, k, 12), 0);
    ASSERT_EQ(slot_wset_del(&ws, 1, k, 1), SLOT_WSET_E_FULL);
    /* A length near SIZE_MAX must not wrap the bound check. */
    ASSERT_EQ(slot_wset_put(&ws, 1, k, 1, v, SIZE_MAX - 4), SLOT_WSET_E_FULL);
    const uint8_t *p;
    size_t len;
    slot_wset_hdr h = {.epoch = 1, .seq = 1};
    ASSERT_EQ(slot_wset_finish(&ws, &h, &p, &len), 0);
    ASSERT_EQ(len, SLOT_WSET_HEADER_BYTES + MAX);
    (void)used;
    slot_wset_rec r;
    ASSERT_EQ(slot_wset_decode(p, len, &r), 0);
    ASSERT_EQ(r.op_count, 3);
    slot_wset_free(&ws);

    /* The global bound: one value of 64 MiB does not fit with its headers. */
    ASSERT(slot_wset_init(&ws, 0) == 0);
    uint8_t *big = calloc(1, SLOT_WSET_BYTES_MAX);
    ASSERT(big != NULL);
    ASSERT_EQ(slot_wset_put(&ws, 0, k, 1, big, SLOT_WSET_BYTES_MAX), SLOT_WSET_E_FULL);
    size_t fit = SLOT_WSET_BYTES_MAX - SLOT_WSET_PAYLOAD_MIN_BYTES - SLOT_WSET_OP_HEADER_BYTES - 1;
    ASSERT_EQ(slot_wset_put(&ws, 0, k, 1, big, fit), 0);
    ASSERT_EQ(slot_wset_finish(&ws, &h, &p, &len), 0);
    ASSERT_EQ(len, SLOT_WSET_RECORD_BYTES_MAX);
    ASSERT_EQ(slot_wset_decode(p, len, &r), 0);
    free(big);
    slot_wset_free(&ws);
}

/* A small record of three ops: put, delete, put. */
static rec small_record(void)
{
    slot_wset ws;
    rec r = {0};
    if (slot_wset_init(&ws, 0))
        abort();
    if (slot_wset_put(&ws, 1, "k1", 2, "value", 5) || slot_wset_del(&ws, 3, "\x00\xff", 2) ||
        slot_wset_put(&ws, 5, "key3", 4, "", 0))
        abort();
    slot_wset_hdr h = {.epoch = 4, .seq = 77, .prev_epoch = 3, .commit_seq = 70, .timestamp_ms = 12345};
    const uint8_t *p;
    if (slot_wset_finish(&ws, &h, &p, &r.len))
        abort();
    r.b = malloc(r.len);
    memcpy(r.b, p, r.len);
    slot_wset_free(&ws);
    return r;
}

TEST_IMPL(wset_decode_flip_every_byte)
{
    rec r = small_record();
    slot_wset_rec d;
    ASSERT(slot_wset_decode(r.b, r.len, &d) == 0);
    static const uint8_t masks[] = {0x01, 0x02, 0x10, 0x80, 0xff};
    uint8_t *c = malloc(r.len);
    int undetected = 0;
    for (size_t i = 0; i < r.len; i++) {
        for (size_t m = 0; m < sizeof(masks); m++) {
            memcpy(c, r.b, r.len);
            c[i] ^= masks[m];
            int rc = slot_wset_decode(c, r.len, &d);
            if (rc == 0) {
                fprintf(stderr, "  flip of byte %zu by %02x not detected\n", i, masks[m]);
                undetected++;
            }
        }
    }
    ASSERT_EQ(undetected, 0);
    /* Every prefix is refused, with the class its length deserves. */
    for (size_t n = 0; n < r.len; n++) {
        int rc = slot_wset_decode(r.b, n, &d);
        ASSERT_EQ(rc, n < SLOT_WSET_HEADER_BYTES ? SLOT_WSET_E_TRUNCATED_HEADER : SLOT_WSET_E_TRUNCATED_PAYLOAD);
    }
    free(c);
    free(r.b);
}

/* Decode a copy of r changed by fn (and resealed when asked). */
static int decode_changed(const rec *r, void (*fn)(uint8_t *b, size_t *len), bool seal)
{
    uint8_t *c = malloc(r->len + 64);
    memcpy(c, r->b, r->len);
    memset(c + r->len, 0, 64);
    size_t len = r->len;
    fn(c, &len);
    if (seal)
        reseal(c, len);
    slot_wset_rec d;
    int rc = slot_wset_decode(c, len, &d);
    free(c);
    return rc;
}

/* Offsets in small_record's payload: ops start at 60; op 1 (put k1=value) is
 * 8+2+5 = 15 bytes, op 2 (del \0\xff) 8+2 = 10, op 3 (put key3="") 8+4 = 12. */
enum { OP1 = 60, OP2 = 75, OP3 = 85, SMALL_END = 97 };
static void ch_magic(uint8_t *b, size_t *l) { (void)l, b[0] = 'X'; }
static void ch_version(uint8_t *b, size_t *l) { (void)l, set_le16(b + 4, 2); }
static void ch_flags(uint8_t *b, size_t *l) { (void)l, set_le16(b + 6, 1); }
static void ch_payload_small(uint8_t *b, size_t *l) { (void)l, set_le32(b + 8, 3); }
static void ch_payload_huge(uint8_t *b, size_t *l) { (void)l, set_le32(b + 8, SLOT_WSET_BYTES_MAX + 1); }
static void ch_payload_longer(uint8_t *b, size_t *l) { (void)l, set_le32(b + 8, le32(b + 8) + 1); }
static void ch_crc(uint8_t *b, size_t *l) { (void)l, b[12] ^= 1; }
static void ch_seq0(uint8_t *b, size_t *l) { (void)l, set_le64(b + 24, 0), set_le64(b + 40, 0); }
static void ch_commit(uint8_t *b, size_t *l) { (void)l, set_le64(b + 40, 78); }
static void ch_epoch(uint8_t *b, size_t *l) { (void)l, set_le64(b + 32, 5); }
static void ch_count_more(uint8_t *b, size_t *l) { (void)l, set_le32(b + 56, 4); }
static void ch_count_less(uint8_t *b, size_t *l) { (void)l, set_le32(b + 56, 2); }
static void ch_type0(uint8_t *b, size_t *l) { (void)l, b[OP2] = 0; }
static void ch_type3(uint8_t *b, size_t *l) { (void)l, b[OP3] = 3; }
static void ch_db(uint8_t *b, size_t *l) { (void)l, b[OP1 + 1] = SLOT_WSET_DBS_MAX; }
static void ch_klen0(uint8_t *b, size_t *l) { (void)l, set_le16(b + OP2 + 2, 0); }
static void ch_klen512(uint8_t *b, size_t *l) { (void)l, set_le16(b + OP3 + 2, 512); }
static void ch_klen_past(uint8_t *b, size_t *l) { (void)l, set_le16(b + OP3 + 2, 5); }
static void ch_vlen_past(uint8_t *b, size_t *l) { (void)l, set_le32(b + OP1 + 4, 0xffffffffu); }
static void ch_del_val(uint8_t *b, size_t *l) { (void)l, set_le32(b + OP2 + 4, 1); }
static void ch_op_hdr_cut(uint8_t *b, size_t *l)
{
    /* Drop op 3's body and half its header: 4 bytes of an op remain. */
    *l = OP3 + 4;
    set_le32(b + 8, (uint32_t)(*l - SLOT_WSET_HEADER_BYTES));
}
static void ch_trailing(uint8_t *b, size_t *l)
{
    b[*l] = 0;
    *l += 1;
    set_le32(b + 8, (uint32_t)(*l - SLOT_WSET_HEADER_BYTES));
}

TEST_IMPL(wset_decode_error_classes)
{
    rec r = small_record();
    ASSERT(r.len == SMALL_END);
    ASSERT_EQ(decode_changed(&r, ch_magic, false), SLOT_WSET_E_MAGIC);
    ASSERT_EQ(decode_changed(&r, ch_version, false), SLOT_WSET_E_VERSION);
    ASSERT_EQ(decode_changed(&r, ch_flags, false), SLOT_WSET_E_FLAGS);
    ASSERT_EQ(decode_changed(&r, ch_payload_small, false), SLOT_WSET_E_TOO_BIG);
    ASSERT_EQ(decode_changed(&r, ch_payload_huge, false), SLOT_WSET_E_TOO_BIG);
    ASSERT_EQ(decode_changed(&r, ch_payload_longer, false), SLOT_WSET_E_TRUNCATED_PAYLOAD);
    ASSERT_EQ(decode_changed(&r, ch_crc, false), SLOT_WSET_E_CRC);
    ASSERT_EQ(decode_changed(&r, ch_seq0, false), SLOT_WSET_E_CRC); /* crc first */
    ASSERT_EQ(decode_changed(&r, ch_seq0, true), SLOT_WSET_E_SEQ);
    ASSERT_EQ(decode_changed(&r, ch_commit, true), SLOT_WSET_E_SEQ);
    ASSERT_EQ(decode_changed(&r, ch_epoch, true), SLOT_WSET_E_EPOCH);
    ASSERT_EQ(decode_changed(&r, ch_count_more, true), SLOT_WSET_E_OP_TRUNCATED);
    ASSERT_EQ(decode_changed(&r, ch_count_less, true), SLOT_WSET_E_TRAILING);
    ASSERT_EQ(decode_changed(&r, ch_type0, true), SLOT_WSET_E_OP_TYPE);
    ASSERT_EQ(decode_changed(&r, ch_type3, true), SLOT_WSET_E_OP_TYPE);
    ASSERT_EQ(decode_changed(&r, ch_db, true), SLOT_WSET_E_DB_ID);
    ASSERT_EQ(decode_changed(&r, ch_klen0, true), SLOT_WSET_E_KEY_LEN);
    ASSERT_EQ(decode_changed(&r, ch_klen512, true), SLOT_WSET_E_KEY_LEN);
    ASSERT_EQ(decode_changed(&r, ch_klen_past, true), SLOT_WSET_E_OP_TRUNCATED);
    ASSERT_EQ(decode_changed(&r, ch_vlen_past, true), SLOT_WSET_E_OP_TRUNCATED);
    ASSERT_EQ(decode_changed(&r, ch_del_val, true), SLOT_WSET_E_VAL_LEN);
    ASSERT_EQ(decode_changed(&r, ch_op_hdr_cut, true), SLOT_WSET_E_OP_TRUNCATED);
    ASSERT_EQ(decode_changed(&r, ch_trailing, true), SLOT_WSET_E_TRAILING);
    size_t rb = 0;
    ASSERT_EQ(slot_wset_peek(r.b, r.len, &rb), 0);
    ASSERT_EQ(rb, r.len);
    ASSERT_EQ(slot_wset_peek(r.b, 10, &rb), SLOT_WSET_E_TRUNCATED_HEADER);
    /* Every code of the codec and the log (slot/error.h's WSET and RLOG
     * ranges) has its own message. */
    int codes[64];
    size_t n = 0;
#define SLOT__CODE(wing, name, value, msg)                                                       \
    if (SLOT_RC_##wing##_HI == SLOT_RC_WSET_HI || SLOT_RC_##wing##_HI == SLOT_RC_RLOG_HI) {      \
        ASSERT(n < sizeof(codes) / sizeof(codes[0]));                                            \
        codes[n++] = (value);                                                                    \
    }
    SLOT_RC_MAP(SLOT__CODE)
#undef SLOT__CODE
    ASSERT(n > 0);
    for (size_t i = 0; i < n; i++) {
        ASSERT(codes[i] < -4095);
        ASSERT(strncmp(slot_strerror(codes[i]), "unknown error", 13) != 0);
        for (size_t j = i + 1; j < n; j++) {
            ASSERT(codes[i] != codes[j]);
            ASSERT(strcmp(slot_strerror(codes[i]), slot_strerror(codes[j])) != 0);
        }
    }
    ASSERT(strcmp(slot_strerror(-ENOSPC), strerror(ENOSPC)) == 0);
    free(r.b);
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
    ASSERT_EQ(slot_rlog_append(log, r7.b, r7.len), SLOT_RLOG_E_SEQ);       /* a gap */
    ASSERT_EQ(slot_rlog_append(log, r5.b, r5.len), SLOT_RLOG_E_SEQ);       /* again */
    ASSERT_EQ(slot_rlog_append(log, r4.b, r4.len), SLOT_RLOG_E_SEQ);       /* backwards */
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
        if (s != 4 || info.records != 4 || info.truncated_bytes != cut - last_off ||
            file_size(path) != (off_t)last_off)
            bad++;
        /* Appending works again, and the log reopens clean with it. */
        if (slot_rlog_append(log, keep[5].b, keep[5].len) || slot_rlog_sync(log) ||
            !read_equals(log, 5, &keep[5]))
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
    static rec m[MAXSEQ + 2];   /* m[seq]: the record the log must hold */
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
        if (ls != last || le != want_e || slot_rlog_first(log) != first ||
            slot_rlog_count(log) != last + 1 - first) {
            fprintf(stderr, "  step %d: log first %" PRIu64 " last (%" PRIu64 ", %" PRIu64
                    "), model first %" PRIu64 " last (%" PRIu64 ", %" PRIu64 ")\n", step,
                    slot_rlog_first(log), le, ls, first, want_e, last);
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
