/* wset.c — write sets and their replication records; see slot/wset.h. */
#include "slot/wset.h"

#include "slot/assert.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Header field offsets (slot/wset.h, "Record layout"). */
enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 4,
    OFF_FLAGS = 6,
    OFF_PAYLOAD = 8,
    OFF_CRC = 12,
    OFF_EPOCH = 16,
    OFF_SEQ = 24,
    OFF_PREV_EPOCH = 32,
    OFF_COMMIT_SEQ = 40,
    OFF_TIMESTAMP = 48,
};
_Static_assert(OFF_TIMESTAMP + 8 == SLOT_WSET_HEADER_BYTES, "header layout");

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | ((uint64_t)get32(p + 4) << 32);
}
static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}
static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* Every byte of the record but the crc field. len >= SLOT_WSET_HEADER_BYTES
 * and <= SLOT_WSET_RECORD_BYTES_MAX, so it fits zlib's 32-bit lengths. */
static uint32_t record_crc(const uint8_t *rec, size_t len)
{
    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, rec, OFF_CRC);
    c = crc32(c, rec + OFF_CRC + 4, (uInt)(len - OFF_CRC - 4));
    return (uint32_t)c;
}

int slot_wset_init(slot_wset *ws, size_t payload_max_bytes)
{
    memset(ws, 0, sizeof(*ws));
    if (payload_max_bytes == 0)
        payload_max_bytes = SLOT_WSET_BYTES_MAX;
    if (payload_max_bytes < SLOT_WSET_PAYLOAD_MIN_BYTES || payload_max_bytes > SLOT_WSET_BYTES_MAX)
        return -EINVAL;
    ws->payload_max = payload_max_bytes;
    ws->len = SLOT_WSET_HEADER_BYTES + SLOT_WSET_PAYLOAD_MIN_BYTES;
    return 0;
}

void slot_wset_free(slot_wset *ws)
{
    free(ws->buf);
    ws->buf = NULL;
    ws->cap = 0;
    ws->ops = 0;
    ws->len = SLOT_WSET_HEADER_BYTES + SLOT_WSET_PAYLOAD_MIN_BYTES;
}

void slot_wset_clear(slot_wset *ws)
{
    ws->ops = 0;
    ws->len = SLOT_WSET_HEADER_BYTES + SLOT_WSET_PAYLOAD_MIN_BYTES;
}

uint32_t slot_wset_ops(const slot_wset *ws)
{
    return ws->ops;
}

/* Make room for `need` bytes in all (header + payload). Doubling, capped at
 * the bound, so a batch costs O(log) reallocations at most, none once grown. */
static int reserve(slot_wset *ws, size_t need)
{
    if (need <= ws->cap)
        return 0;
    size_t cap = ws->cap ? ws->cap : 4096;
    while (cap < need)
        cap *= 2;
    if (cap > SLOT_WSET_HEADER_BYTES + ws->payload_max)
        cap = SLOT_WSET_HEADER_BYTES + ws->payload_max;
    SLOT_ASSERT(cap >= need);
    uint8_t *b = realloc(ws->buf, cap);
    if (!b)
        return -ENOMEM;
    ws->buf = b;
    ws->cap = cap;
    return 0;
}

static int add_op(slot_wset *ws, uint8_t type, uint8_t db_id, const void *key, size_t klen, const void *val,
                  size_t vlen)
{
    SLOT_ASSERT(ws->payload_max >= SLOT_WSET_PAYLOAD_MIN_BYTES);
    if (db_id >= SLOT_WSET_DBS_MAX)
        return SLOT_WSET_E_DB_ID;
    if (klen == 0 || klen > SLOT_WSET_KEY_BYTES_MAX || key == NULL)
        return SLOT_WSET_E_KEY_LEN;
    size_t payload = ws->len - SLOT_WSET_HEADER_BYTES;
    size_t room = ws->payload_max - payload;
    /* Compared piece by piece so a huge vlen cannot overflow the sum. */
    if (room < SLOT_WSET_OP_HEADER_BYTES || room - SLOT_WSET_OP_HEADER_BYTES < klen ||
        room - SLOT_WSET_OP_HEADER_BYTES - klen < vlen || ws->ops == UINT32_MAX)
        return SLOT_WSET_E_FULL;
    size_t op_bytes = SLOT_WSET_OP_HEADER_BYTES + klen + vlen;
    int rc = reserve(ws, ws->len + op_bytes);
    if (rc)
        return rc;
    uint8_t *p = ws->buf + ws->len;
    p[0] = type;
    p[1] = db_id;
    put16(p + 2, (uint16_t)klen);
    put32(p + 4, (uint32_t)vlen);
    memcpy(p + SLOT_WSET_OP_HEADER_BYTES, key, klen);
    if (vlen)
        memcpy(p + SLOT_WSET_OP_HEADER_BYTES + klen, val, vlen);
    ws->len += op_bytes;
    ws->ops++;
    return 0;
}

int slot_wset_put(slot_wset *ws, uint8_t db_id, const void *key, size_t klen, const void *val, size_t vlen)
{
    if (vlen && val == NULL)
        return -EINVAL;
    return add_op(ws, SLOT_WSET_PUT, db_id, key, klen, val, vlen);
}

int slot_wset_del(slot_wset *ws, uint8_t db_id, const void *key, size_t klen)
{
    return add_op(ws, SLOT_WSET_DEL, db_id, key, klen, NULL, 0);
}

static int check_hdr(const slot_wset_hdr *h)
{
    if (h->seq == 0 || h->commit_seq > h->seq)
        return SLOT_WSET_E_SEQ;
    if (h->prev_epoch > h->epoch)
        return SLOT_WSET_E_EPOCH;
    return 0;
}

int slot_wset_finish(slot_wset *ws, const slot_wset_hdr *hdr, const uint8_t **rec, size_t *rec_bytes)
{
    int rc = check_hdr(hdr);
    if (rc)
        return rc;
    if ((rc = reserve(ws, ws->len)))
        return rc;
    uint8_t *b = ws->buf;
    size_t payload = ws->len - SLOT_WSET_HEADER_BYTES;
    SLOT_ASSERT(payload >= SLOT_WSET_PAYLOAD_MIN_BYTES && payload <= ws->payload_max);
    put32(b + OFF_MAGIC, SLOT_WSET_MAGIC);
    put16(b + OFF_VERSION, SLOT_WSET_VERSION);
    put16(b + OFF_FLAGS, 0);
    put32(b + OFF_PAYLOAD, (uint32_t)payload);
    put64(b + OFF_EPOCH, hdr->epoch);
    put64(b + OFF_SEQ, hdr->seq);
    put64(b + OFF_PREV_EPOCH, hdr->prev_epoch);
    put64(b + OFF_COMMIT_SEQ, hdr->commit_seq);
    put64(b + OFF_TIMESTAMP, hdr->timestamp_ms);
    put32(b + SLOT_WSET_HEADER_BYTES, ws->ops);
    put32(b + OFF_CRC, record_crc(b, ws->len));
    *rec = b;
    *rec_bytes = ws->len;
    return 0;
}

int slot_wset_peek(const void *buf, size_t len, size_t *record_bytes)
{
    const uint8_t *b = buf;
    if (len < SLOT_WSET_HEADER_BYTES)
        return SLOT_WSET_E_TRUNCATED_HEADER;
    if (get32(b + OFF_MAGIC) != SLOT_WSET_MAGIC)
        return SLOT_WSET_E_MAGIC;
    if (get16(b + OFF_VERSION) != SLOT_WSET_VERSION)
        return SLOT_WSET_E_VERSION;
    if (get16(b + OFF_FLAGS) != 0)
        return SLOT_WSET_E_FLAGS;
    uint32_t payload = get32(b + OFF_PAYLOAD);
    if (payload < SLOT_WSET_PAYLOAD_MIN_BYTES || payload > SLOT_WSET_BYTES_MAX)
        return SLOT_WSET_E_TOO_BIG;
    *record_bytes = SLOT_WSET_HEADER_BYTES + (size_t)payload;
    return 0;
}

/* Walk the ops once, checking each length against what remains. */
static int check_ops(const uint8_t *p, const uint8_t *end, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        size_t left = (size_t)(end - p);
        if (left < SLOT_WSET_OP_HEADER_BYTES)
            return SLOT_WSET_E_OP_TRUNCATED;
        uint8_t type = p[0], db = p[1];
        uint16_t klen = get16(p + 2);
        uint32_t vlen = get32(p + 4);
        if (type != SLOT_WSET_PUT && type != SLOT_WSET_DEL)
            return SLOT_WSET_E_OP_TYPE;
        if (db >= SLOT_WSET_DBS_MAX)
            return SLOT_WSET_E_DB_ID;
        if (klen == 0 || klen > SLOT_WSET_KEY_BYTES_MAX)
            return SLOT_WSET_E_KEY_LEN;
        if (type == SLOT_WSET_DEL && vlen != 0)
            return SLOT_WSET_E_VAL_LEN;
        left -= SLOT_WSET_OP_HEADER_BYTES;
        if (left < klen || left - klen < vlen)
            return SLOT_WSET_E_OP_TRUNCATED;
        p += SLOT_WSET_OP_HEADER_BYTES + klen + (size_t)vlen;
    }
    return p == end ? 0 : SLOT_WSET_E_TRAILING;
}

int slot_wset_decode(const void *buf, size_t len, slot_wset_rec *out)
{
    const uint8_t *b = buf;
    size_t rec_bytes;
    int rc = slot_wset_peek(buf, len, &rec_bytes);
    if (rc)
        return rc;
    if (len < rec_bytes)
        return SLOT_WSET_E_TRUNCATED_PAYLOAD;
    if (get32(b + OFF_CRC) != record_crc(b, rec_bytes))
        return SLOT_WSET_E_CRC;
    slot_wset_rec r;
    memset(&r, 0, sizeof(r));
    r.hdr.epoch = get64(b + OFF_EPOCH);
    r.hdr.seq = get64(b + OFF_SEQ);
    r.hdr.prev_epoch = get64(b + OFF_PREV_EPOCH);
    r.hdr.commit_seq = get64(b + OFF_COMMIT_SEQ);
    r.hdr.timestamp_ms = get64(b + OFF_TIMESTAMP);
    if ((rc = check_hdr(&r.hdr)))
        return rc;
    r.version = get16(b + OFF_VERSION);
    r.flags = get16(b + OFF_FLAGS);
    r.op_count = get32(b + SLOT_WSET_HEADER_BYTES);
    r.ops = b + SLOT_WSET_HEADER_BYTES + SLOT_WSET_PAYLOAD_MIN_BYTES;
    r.ops_bytes = rec_bytes - SLOT_WSET_HEADER_BYTES - SLOT_WSET_PAYLOAD_MIN_BYTES;
    r.record_bytes = rec_bytes;
    if ((rc = check_ops(r.ops, r.ops + r.ops_bytes, r.op_count)))
        return rc;
    *out = r;
    return 0;
}

void slot_wset_iter_init(slot_wset_iter *it, const slot_wset_rec *rec)
{
    it->p = rec->ops;
    it->end = rec->ops + rec->ops_bytes;
    it->left = rec->op_count;
}

int slot_wset_next(slot_wset_iter *it, slot_wset_op *op)
{
    if (it->left == 0) {
        SLOT_ASSERT(it->p == it->end);
        return 0;
    }
    SLOT_ASSERT((size_t)(it->end - it->p) >= SLOT_WSET_OP_HEADER_BYTES);
    const uint8_t *p = it->p;
    op->type = p[0];
    op->db_id = p[1];
    op->klen = get16(p + 2);
    op->vlen = get32(p + 4);
    size_t body = (size_t)op->klen + op->vlen;
    SLOT_ASSERT((size_t)(it->end - p) - SLOT_WSET_OP_HEADER_BYTES >= body);
    op->key = p + SLOT_WSET_OP_HEADER_BYTES;
    op->val = op->key + op->klen;
    it->p = p + SLOT_WSET_OP_HEADER_BYTES + body;
    it->left--;
    return 1;
}
