/* tests/rlog_util.c — see rlog_util.h. */
#include "rlog_util.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "slot/wset.h"

/* xorshift64; seeded on first use in each case's process (SLOT_TEST_SEED,
 * a nonzero integer, or the fixed default). */
uint64_t rng_state;
uint64_t rnd(void)
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
uint64_t rnd_below(uint64_t n)
{
    return n ? rnd() % n : 0;
}

void rnd_bytes(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rnd();
}

/* A random write set of up to max_ops ops, values up to max_val bytes, sealed. */
rec make_rec(uint64_t seq, uint64_t epoch, uint64_t prev_epoch, unsigned max_ops, size_t max_val)
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
    slot_wset_hdr h = {.epoch = epoch,
                       .seq = seq,
                       .prev_epoch = prev_epoch,
                       .commit_seq = seq - 1,
                       .timestamp_ms = 1700000000000ull + seq};
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
rec make_fixed(uint64_t seq, uint64_t epoch, uint64_t prev_epoch, size_t vlen)
{
    slot_wset ws;
    rec r = {0};
    uint8_t *v = calloc(1, vlen + 1);
    const uint8_t *p;
    slot_wset_hdr h = {.epoch = epoch, .seq = seq, .prev_epoch = prev_epoch, .commit_seq = seq - 1};
    if (slot_wset_init(&ws, 0) || slot_wset_put(&ws, 2, "k", 1, v, vlen) || slot_wset_finish(&ws, &h, &p, &r.len))
        abort();
    r.b = malloc(r.len);
    memcpy(r.b, p, r.len);
    slot_wset_free(&ws);
    free(v);
    return r;
}

uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
void set_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
void set_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
void set_le64(uint8_t *p, uint64_t v)
{
    set_le32(p, (uint32_t)v);
    set_le32(p + 4, (uint32_t)(v >> 32));
}

/* The crc as the layout in slot/wset.h defines it, computed independently. */
uint32_t layout_crc(const uint8_t *b, size_t len)
{
    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, b, 12);
    c = crc32(c, b + 16, (uInt)(len - 16));
    return (uint32_t)c;
}
void reseal(uint8_t *b, size_t len)
{
    set_le32(b + 12, layout_crc(b, len));
}
