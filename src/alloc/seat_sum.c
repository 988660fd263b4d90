/*
 * seat_sum.c — each shard's row summary (seat_int.h; docs/design.md,
 * "Seats"): for every row of a shard, the free count and longest free run
 * its row record holds, its category and a hash of its section's name, so
 * the pickers and sold_out visit only the rows that can serve instead of
 * reading (mdb_get + decode) every row record of the shard.
 *
 * The records, in the waitlist database beside the rows (slot/store.h,
 * "Seat maps"), so placement's export and stage, write sets, the digest and
 * backups carry them as every event-prefixed key:
 *
 *   ev + 'P' + u16 shard + u16 block
 *     u8 version (1), u16 shards, u32 nrows, u16 count, then count entries of
 *     u16 free, u16 longest, u8 category (0: none), u16 section hash
 *
 * Block b of shard s holds the shard's rows at positions b*SUM .. b*SUM+count-1
 * (SUM = SLOT_SEAT_SUM_ROWS_MAX), the row at position j being s + j*shards.
 * A record whose shards, nrows or count are not the event's now, or that is
 * missing (a store written before the summary), is never trusted: a reader
 * rebuilds that block from the rows in memory, the write path
 * (slot__seat_sum_note) from the rows in the store, and writes it.
 * Internal to libslot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seat_int.h"
#include "slot/assert.h"

typedef slot__alloc_ctx ctx;

#define SUM_REC_VERSION 1
#define SUM_HDR_BYTES (1 + 2 + 4 + 2)
#define SUM_ENT_BYTES 7
#define SUM_REC_BYTES_MAX (SUM_HDR_BYTES + SUM_ENT_BYTES * SLOT_SEAT_SUM_ROWS_MAX)

_Static_assert(SUM_REC_BYTES_MAX + 512 <= SLOT_PLACE_CHUNK_BYTES, "a summary record fits one placement chunk");
_Static_assert(SLOT_SEAT_ROW_SEATS_MAX <= 65535, "a row's free and longest fit 16 bits");
_Static_assert(SLOT_SEAT_CATEGORIES_MAX < 255, "a category fits a byte");

uint16_t slot__seat_sec_hash(const char *sec, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)sec[i];
        h *= 16777619u;
    }
    return (uint16_t)((h >> 16) ^ (h & 0xFFFFu));
}

uint32_t slot__seat_sum_rows(uint32_t nrows, uint32_t shards, uint32_t s)
{
    SLOT_ASSERT(shards >= 1 && s < shards);
    return s < nrows ? (nrows - s + shards - 1) / shards : 0;
}

/* Blocks of shard s, and the entries of its block b. */
static uint32_t sum_blocks(uint32_t nrows, uint32_t shards, uint32_t s)
{
    return (slot__seat_sum_rows(nrows, shards, s) + SLOT_SEAT_SUM_ROWS_MAX - 1) / SLOT_SEAT_SUM_ROWS_MAX;
}

static uint32_t block_count(uint32_t nrows, uint32_t shards, uint32_t s, uint32_t b)
{
    uint32_t cnt = slot__seat_sum_rows(nrows, shards, s), from = b * SLOT_SEAT_SUM_ROWS_MAX;
    SLOT_ASSERT(from < cnt);
    return cnt - from < SLOT_SEAT_SUM_ROWS_MAX ? cnt - from : SLOT_SEAT_SUM_ROWS_MAX;
}

static void sum_sub(uint8_t sub[4], uint32_t s, uint32_t b)
{
    SLOT_ASSERT(s <= 0xFFFFu && b <= 0xFFFFu);
    sub[0] = (uint8_t)(s >> 8);
    sub[1] = (uint8_t)s;
    sub[2] = (uint8_t)(b >> 8);
    sub[3] = (uint8_t)b;
}

static uint32_t be(const uint8_t *p, int n)
{
    uint32_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static void put_be16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static slot__seat_sum_ent ent_of(const slot__seat_row *r)
{
    SLOT_ASSERT(r->longest <= r->free && r->free <= SLOT_SEAT_ROW_SEATS_MAX);
    return (slot__seat_sum_ent){(uint16_t)r->free, (uint16_t)r->longest, r->cat,
                                slot__seat_sec_hash(r->sec, r->sec_len)};
}

static bool ent_eq(const slot__seat_sum_ent *a, const slot__seat_sum_ent *b)
{
    return a->free == b->free && a->longest == b->longest && a->cat == b->cat && a->sec == b->sec;
}

static void ent_pack(uint8_t *p, const slot__seat_sum_ent *x)
{
    put_be16(p, x->free);
    put_be16(p + 2, x->longest);
    p[4] = x->cat;
    put_be16(p + 5, x->sec);
}

static slot__seat_sum_ent ent_unpack(const uint8_t *p)
{
    return (slot__seat_sum_ent){(uint16_t)be(p, 2), (uint16_t)be(p + 2, 2), p[4], (uint16_t)be(p + 5, 2)};
}

/* Block (s, b)'s raw record into raw (*len its bytes): MDB_NOTFOUND when it is
 * missing or not for this layout (then it must not be trusted), 0 or an LMDB error. */
static int block_get(ctx *c, uint32_t nrows, uint32_t shards, uint32_t s, uint32_t b, uint8_t *raw, size_t *len)
{
    uint8_t sub[4];
    sum_sub(sub, s, b);
    int rc = slot_store_seat_get(c->st, c->txn, c->ev, c->ev_len, 'P', sub, 4, raw, SUM_REC_BYTES_MAX, len);
    if (rc == MDB_CORRUPTED)
        return MDB_NOTFOUND; /* longer than any block: rebuilt */
    if (rc != 0)
        return rc;
    uint32_t count = block_count(nrows, shards, s, b);
    if (*len != SUM_HDR_BYTES + (size_t)count * SUM_ENT_BYTES || raw[0] != SUM_REC_VERSION ||
        be(raw + 1, 2) != shards || be(raw + 3, 4) != nrows || be(raw + 7, 2) != count)
        return MDB_NOTFOUND;
    return 0;
}

/* Block (s, b) from the row records into out[0..count-1]. r is scratch. */
static int block_from_rows(ctx *c, uint32_t shards, uint32_t s, uint32_t b, uint32_t count, slot__seat_sum_ent *out,
                           slot__seat_row *r)
{
    for (uint32_t k = 0; k < count; k++) {
        uint32_t row = s + (b * SLOT_SEAT_SUM_ROWS_MAX + k) * shards;
        int rc = slot__seat_row_get(c, row, r);
        if (rc != 0)
            return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc; /* every row of the header exists */
        out[k] = ent_of(r);
    }
    return 0;
}

/* Writes block (s, b) of count entries x. raw is scratch of SUM_REC_BYTES_MAX. */
static int block_put(ctx *c, uint32_t nrows, uint32_t shards, uint32_t s, uint32_t b, uint32_t count,
                     const slot__seat_sum_ent *x, uint8_t *raw)
{
    SLOT_ASSERT(count >= 1 && count <= SLOT_SEAT_SUM_ROWS_MAX);
    raw[0] = SUM_REC_VERSION;
    put_be16(raw + 1, shards);
    for (int i = 0; i < 4; i++)
        raw[3 + i] = (uint8_t)(nrows >> (8 * (3 - i)));
    put_be16(raw + 7, count);
    for (uint32_t k = 0; k < count; k++)
        ent_pack(raw + SUM_HDR_BYTES + (size_t)k * SUM_ENT_BYTES, &x[k]);
    uint8_t sub[4];
    sum_sub(sub, s, b);
    return slot_store_seat_put(c->st, c->txn, c->ev, c->ev_len, 'P', sub, 4, raw,
                               SUM_HDR_BYTES + (size_t)count * SUM_ENT_BYTES);
}

int slot__seat_sum_load(ctx *c, uint32_t nrows, uint32_t shards, uint32_t s, slot__seat_sum_ent *out,
                        slot__seat_row *r)
{
    uint8_t *raw = malloc(SUM_REC_BYTES_MAX);
    if (!raw)
        return ENOMEM;
    int rc = 0;
    for (uint32_t b = 0; rc == 0 && b < sum_blocks(nrows, shards, s); b++) {
        uint32_t count = block_count(nrows, shards, s, b);
        size_t len = 0;
        slot__seat_sum_ent *x = out + (size_t)b * SLOT_SEAT_SUM_ROWS_MAX;
        rc = block_get(c, nrows, shards, s, b, raw, &len);
        if (rc == MDB_NOTFOUND) { /* absent or not this layout: from the rows (the write path stores it) */
            rc = block_from_rows(c, shards, s, b, count, x, r);
            continue;
        }
        for (uint32_t k = 0; rc == 0 && k < count; k++)
            x[k] = ent_unpack(raw + SUM_HDR_BYTES + (size_t)k * SUM_ENT_BYTES);
    }
    free(raw);
    return rc;
}

int slot__seat_sum_note(ctx *c, uint32_t nrows, uint32_t shards, const slot__seat_row *r)
{
    SLOT_ASSERT(r->idx < nrows);
    uint32_t s = r->idx % shards, j = r->idx / shards, b = j / SLOT_SEAT_SUM_ROWS_MAX, k = j % SLOT_SEAT_SUM_ROWS_MAX;
    uint8_t *raw = malloc(SUM_REC_BYTES_MAX);
    if (!raw)
        return ENOMEM;
    size_t len = 0;
    int rc = block_get(c, nrows, shards, s, b, raw, &len);
    if (rc == 0) { /* one entry changes: its 7 bytes, the record put back */
        slot__seat_sum_ent x = ent_of(r);
        ent_pack(raw + SUM_HDR_BYTES + (size_t)k * SUM_ENT_BYTES, &x);
        uint8_t sub[4];
        sum_sub(sub, s, b);
        rc = slot_store_seat_put(c->st, c->txn, c->ev, c->ev_len, 'P', sub, 4, raw, len);
    } else if (rc == MDB_NOTFOUND) { /* a store from before the summary: the block from its rows (r's is written) */
        uint32_t count = block_count(nrows, shards, s, b);
        slot__seat_sum_ent *x = malloc((size_t)count * sizeof *x);
        slot__seat_row *scratch = malloc(sizeof *scratch);
        rc = x && scratch ? block_from_rows(c, shards, s, b, count, x, scratch) : ENOMEM;
        if (rc == 0) {
            SLOT_ASSERT(x[k].free == r->free && x[k].longest == r->longest); /* the caller put r first */
            rc = block_put(c, nrows, shards, s, b, count, x, raw);
        }
        free(x);
        free(scratch);
    }
    free(raw);
    return rc;
}

int slot__seat_sum_build(ctx *c, uint32_t nrows, uint32_t shards, uint32_t old_shards)
{
    uint8_t *raw = malloc(SUM_REC_BYTES_MAX);
    slot__seat_sum_ent *x = malloc(SLOT_SEAT_SUM_ROWS_MAX * sizeof *x);
    slot__seat_row *r = malloc(sizeof *r);
    int rc = raw && x && r ? 0 : ENOMEM;
    /* the old layout's blocks that the new one does not rewrite go */
    for (uint32_t s = 0; rc == 0 && s < old_shards; s++) {
        uint32_t keep = s < shards ? sum_blocks(nrows, shards, s) : 0;
        for (uint32_t b = keep; rc == 0 && b < sum_blocks(nrows, old_shards, s); b++) {
            uint8_t sub[4];
            sum_sub(sub, s, b);
            rc = slot_store_seat_del(c->st, c->txn, c->ev, c->ev_len, 'P', sub, 4);
            if (rc == MDB_NOTFOUND)
                rc = 0;
        }
    }
    for (uint32_t s = 0; rc == 0 && s < shards; s++) {
        for (uint32_t b = 0; rc == 0 && b < sum_blocks(nrows, shards, s); b++) {
            uint32_t count = block_count(nrows, shards, s, b);
            rc = block_from_rows(c, shards, s, b, count, x, r);
            if (rc == 0)
                rc = block_put(c, nrows, shards, s, b, count, x, raw);
        }
    }
    free(raw);
    free(x);
    free(r);
    return rc;
}

int slot__seat_sum_check(ctx *c, uint32_t nrows, uint32_t shards, char *detail, size_t detail_len)
{
    uint8_t *raw = malloc(SUM_REC_BYTES_MAX);
    slot__seat_row *r = malloc(sizeof *r);
    int rc = raw && r ? 0 : ENOMEM;
    for (uint32_t s = 0; rc == 0 && !detail[0] && s < shards; s++) {
        for (uint32_t b = 0; rc == 0 && !detail[0] && b < sum_blocks(nrows, shards, s); b++) {
            uint8_t sub[4];
            size_t len = 0;
            sum_sub(sub, s, b);
            rc = slot_store_seat_get(c->st, c->txn, c->ev, c->ev_len, 'P', sub, 4, raw, SUM_REC_BYTES_MAX, &len);
            if (rc == MDB_NOTFOUND) { /* not yet written (a store from before it): readers use the rows */
                rc = 0;
                continue;
            }
            /* present: it must be of this layout (block_get reads it again and judges it) */
            if (rc == MDB_CORRUPTED || (rc == 0 && (rc = block_get(c, nrows, shards, s, b, raw, &len)) == MDB_NOTFOUND)) {
                snprintf(detail, detail_len, "shard %u: row summary %u is not of the map's %u rows in %u shards",
                         (unsigned)s, (unsigned)b, (unsigned)nrows, (unsigned)shards);
                rc = 0;
                break;
            }
            for (uint32_t k = 0; rc == 0 && !detail[0] && k < block_count(nrows, shards, s, b); k++) {
                rc = slot__seat_row_get(c, s + (b * SLOT_SEAT_SUM_ROWS_MAX + k) * shards, r);
                slot__seat_sum_ent got = ent_unpack(raw + SUM_HDR_BYTES + (size_t)k * SUM_ENT_BYTES), want;
                if (rc == 0)
                    want = ent_of(r);
                if (rc == 0 && !ent_eq(&got, &want))
                    snprintf(detail, detail_len,
                             "row %s-%s: summary free %u longest %u category %u section %04x, its record %u %u %u %04x",
                             r->sec, r->name, got.free, got.longest, got.cat, got.sec, want.free, want.longest,
                             want.cat, want.sec);
            }
        }
    }
    free(raw);
    free(r);
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

bool slot__seat_row_fits(const slot__seat_ask *ask, const slot__seat_row *r)
{
    if (ask->cat != 0 && r->cat != ask->cat)
        return false;
    return ask->sec_len == 0 || (r->sec_len == ask->sec_len && memcmp(r->sec, ask->sec, ask->sec_len) == 0);
}

bool slot__seat_sum_may_fit(const slot__seat_ask *ask, uint16_t sec_hash, const slot__seat_sum_ent *x)
{
    if (ask->cat != 0 && x->cat != ask->cat)
        return false;
    return ask->sec_len == 0 || x->sec == sec_hash;
}

int slot__seat_sold_out(ctx *c, const slot_event_rec *e, const slot__seat_ask *ask, slot_res *res)
{
    slot__seat_hdr h;
    int rc = slot__seat_hdr_get(c, &h);
    if (rc != 0)
        return rc;
    uint32_t n = e->shards;
    uint16_t hash = slot__seat_sec_hash(ask->sec, ask->sec_len);
    slot__seat_sum_ent *sum = malloc(((size_t)h.nrows / n + 1) * sizeof *sum);
    slot__seat_row *r = malloc(sizeof *r);
    rc = sum && r ? 0 : ENOMEM;
    uint64_t avail = 0, longest = 0;
    for (uint32_t s = 0; rc == 0 && s < n; s++) {
        rc = slot__seat_sum_load(c, h.nrows, n, s, sum, r);
        for (uint32_t j = 0; rc == 0 && j < slot__seat_sum_rows(h.nrows, n, s); j++) {
            if (sum[j].free == 0 || !slot__seat_sum_may_fit(ask, hash, &sum[j]))
                continue; /* adds nothing */
            if (ask->sec_len > 0) { /* the hash matched: the row's own name decides */
                rc = slot__seat_row_get(c, s + j * n, r);
                if (rc != 0 || !slot__seat_row_fits(ask, r))
                    continue;
            }
            avail += sum[j].free;
            if (sum[j].longest > longest)
                longest = sum[j].longest;
        }
    }
    free(sum);
    free(r);
    if (rc != 0)
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    res->sold_out = true;
    res->seated = true;
    res->available = avail;
    res->max_adjacent = longest;
    return SLOT__ANSWERED;
}
