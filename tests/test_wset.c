/*
 * test_wset.c — the replication record codec (slot/wset.h): round trips,
 * builder errors and bounds, every flipped byte and every class of bad
 * record refused with its own code. The batch log on disk: test_rlog.c.
 *
 * Randomness comes from a fixed seed (rlog_util.h), so a failure reproduces;
 * SLOT_TEST_SEED (a nonzero integer) picks another.
 */
#include "harness.h"
#include "rlog_util.h"
#include "slot/rlog.h"
#include "slot/wset.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST_DECLARE(wset_roundtrip)
TEST_DECLARE(wset_empty_set)
TEST_DECLARE(wset_builder_errors)
TEST_DECLARE(wset_size_bound)
TEST_DECLARE(wset_decode_flip_every_byte)
TEST_DECLARE(wset_decode_error_classes)

TEST_LIST_START
TEST_ENTRY(wset_roundtrip)
TEST_ENTRY(wset_empty_set)
TEST_ENTRY(wset_builder_errors)
TEST_ENTRY(wset_size_bound)
TEST_ENTRY(wset_decode_flip_every_byte)
TEST_ENTRY(wset_decode_error_classes)
TEST_LIST_END

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
        slot_wset_hdr h = {.epoch = rnd() | 1, .seq = 1 + rnd_below(UINT64_MAX - 1), .timestamp_ms = rnd()};
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
    ASSERT_EQ(slot_wset_ops(&ws), 3);                     /* the refused ones left no trace */
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
static void ch_magic(uint8_t *b, size_t *l)
{
    (void)l, b[0] = 'X';
}
static void ch_version(uint8_t *b, size_t *l)
{
    (void)l, set_le16(b + 4, 2);
}
static void ch_flags(uint8_t *b, size_t *l)
{
    (void)l, set_le16(b + 6, 1);
}
static void ch_payload_small(uint8_t *b, size_t *l)
{
    (void)l, set_le32(b + 8, 3);
}
static void ch_payload_huge(uint8_t *b, size_t *l)
{
    (void)l, set_le32(b + 8, SLOT_WSET_BYTES_MAX + 1);
}
static void ch_payload_longer(uint8_t *b, size_t *l)
{
    (void)l, set_le32(b + 8, le32(b + 8) + 1);
}
static void ch_crc(uint8_t *b, size_t *l)
{
    (void)l, b[12] ^= 1;
}
static void ch_seq0(uint8_t *b, size_t *l)
{
    (void)l, set_le64(b + 24, 0), set_le64(b + 40, 0);
}
static void ch_commit(uint8_t *b, size_t *l)
{
    (void)l, set_le64(b + 40, 78);
}
static void ch_epoch(uint8_t *b, size_t *l)
{
    (void)l, set_le64(b + 32, 5);
}
static void ch_count_more(uint8_t *b, size_t *l)
{
    (void)l, set_le32(b + 56, 4);
}
static void ch_count_less(uint8_t *b, size_t *l)
{
    (void)l, set_le32(b + 56, 2);
}
static void ch_type0(uint8_t *b, size_t *l)
{
    (void)l, b[OP2] = 0;
}
static void ch_type3(uint8_t *b, size_t *l)
{
    (void)l, b[OP3] = 3;
}
static void ch_db(uint8_t *b, size_t *l)
{
    (void)l, b[OP1 + 1] = SLOT_WSET_DBS_MAX;
}
static void ch_klen0(uint8_t *b, size_t *l)
{
    (void)l, set_le16(b + OP2 + 2, 0);
}
static void ch_klen512(uint8_t *b, size_t *l)
{
    (void)l, set_le16(b + OP3 + 2, 512);
}
static void ch_klen_past(uint8_t *b, size_t *l)
{
    (void)l, set_le16(b + OP3 + 2, 5);
}
static void ch_vlen_past(uint8_t *b, size_t *l)
{
    (void)l, set_le32(b + OP1 + 4, 0xffffffffu);
}
static void ch_del_val(uint8_t *b, size_t *l)
{
    (void)l, set_le32(b + OP2 + 4, 1);
}
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
#define SLOT__CODE(wing, name, value, msg)                                                  \
    if (SLOT_RC_##wing##_HI == SLOT_RC_WSET_HI || SLOT_RC_##wing##_HI == SLOT_RC_RLOG_HI) { \
        ASSERT(n < sizeof(codes) / sizeof(codes[0]));                                       \
        codes[n++] = (value);                                                               \
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
