/*
 * seat.c — a seated event's records and its event-level ops (seat_int.h;
 * docs/protocol.md, "Seated events"; docs/design.md, "Seats"): the map's
 * header with each category's counters, one record per row (a state byte a
 * seat, its free count and longest free run), the "SECTION-ROW" name index,
 * a hold's seat list; create_event's seats, the view's categories, the
 * seat_map op, reshard's regrouping and check's seat invariant.
 * Internal to libslot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seat_int.h"
#include "slot/assert.h"

typedef slot__alloc_ctx ctx;

#define SEAT_REC_VERSION 1
#define ROW_REC_BYTES_MAX (1 + 2 * (1 + SLOT_SEAT_NAME_BYTES_MAX) + 1 + 4 * 4 + SLOT_SEAT_ROW_SEATS_MAX)
#define HDR_REC_BYTES_MAX (1 + 3 * 4 + 1 + SLOT_SEAT_CATEGORIES_MAX * (1 + SLOT_SEAT_CATEGORY_BYTES_MAX + 3 * 8))
#define LIST_REC_BYTES_MAX (1 + 2 + SLOT_MAX_PER_REQUEST_MAX * 6)

/* ---- byte packing (big-endian, as the store's records) */

typedef struct pk {
    uint8_t *p;
    size_t len, cap;
    bool bad;
} pk;

static void pk_be(pk *b, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--) {
        if (b->len >= b->cap) {
            b->bad = true;
            return;
        }
        b->p[b->len++] = (uint8_t)(v >> (8 * i));
    }
}

static void pk_bytes(pk *b, const void *s, size_t n)
{
    if (b->len + n > b->cap) {
        b->bad = true;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static uint64_t uk_be(pk *b, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) {
        if (b->len >= b->cap) {
            b->bad = true;
            return 0;
        }
        v = (v << 8) | b->p[b->len++];
    }
    return v;
}

static uint8_t uk_name(pk *b, char *out, size_t max)
{
    size_t n = (size_t)uk_be(b, 1);
    if (b->bad || n > max || b->len + n > b->cap) {
        b->bad = true;
        return 0;
    }
    memcpy(out, b->p + b->len, n);
    out[n] = 0;
    b->len += n;
    return (uint8_t)n;
}

static void row_sub(uint8_t sub[4], uint32_t idx)
{
    for (int i = 0; i < 4; i++)
        sub[i] = (uint8_t)(idx >> (8 * (3 - i)));
}

/* ---- the records */

int slot__seat_row_get(ctx *c, uint32_t idx, slot__seat_row *out)
{
    uint8_t raw[ROW_REC_BYTES_MAX], sub[4];
    size_t len = 0;
    row_sub(sub, idx);
    int rc = slot_store_seat_get(c->st, c->txn, c->ev, c->ev_len, 'R', sub, 4, raw, sizeof raw, &len);
    if (rc != 0)
        return rc;
    pk b = {raw, 0, len, false};
    if (uk_be(&b, 1) != SEAT_REC_VERSION)
        return MDB_CORRUPTED;
    out->idx = idx;
    out->sec_len = uk_name(&b, out->sec, SLOT_SEAT_NAME_BYTES_MAX);
    out->name_len = uk_name(&b, out->name, SLOT_SEAT_NAME_BYTES_MAX);
    out->cat = (uint8_t)uk_be(&b, 1);
    out->from = (uint32_t)uk_be(&b, 4);
    out->to = (uint32_t)uk_be(&b, 4);
    out->free = (uint32_t)uk_be(&b, 4);
    out->longest = (uint32_t)uk_be(&b, 4);
    size_t n = out->to >= out->from ? out->to - out->from + 1u : 0;
    if (b.bad || n == 0 || n > SLOT_SEAT_ROW_SEATS_MAX || b.len + n != len)
        return MDB_CORRUPTED;
    memcpy(out->st, raw + b.len, n);
    return 0;
}

/* The row record alone (create_event writes the summaries after all rows). */
static int row_rec_put(ctx *c, const slot__seat_row *r)
{
    uint8_t raw[ROW_REC_BYTES_MAX], sub[4];
    pk b = {raw, 0, sizeof raw, false};
    size_t n = r->to - r->from + 1u;
    SLOT_ASSERT(r->to >= r->from && n <= SLOT_SEAT_ROW_SEATS_MAX);
    SLOT_ASSERT(r->free <= n && r->longest <= r->free);
    pk_be(&b, SEAT_REC_VERSION, 1);
    pk_be(&b, r->sec_len, 1);
    pk_bytes(&b, r->sec, r->sec_len);
    pk_be(&b, r->name_len, 1);
    pk_bytes(&b, r->name, r->name_len);
    pk_be(&b, r->cat, 1);
    pk_be(&b, r->from, 4);
    pk_be(&b, r->to, 4);
    pk_be(&b, r->free, 4);
    pk_be(&b, r->longest, 4);
    pk_bytes(&b, r->st, n);
    SLOT_ASSERT(!b.bad);
    row_sub(sub, r->idx);
    return slot_store_seat_put(c->st, c->txn, c->ev, c->ev_len, 'R', sub, 4, raw, b.len);
}

int slot__seat_row_put(ctx *c, const slot__seat_row *r, uint32_t nrows, uint32_t shards)
{
    int rc = row_rec_put(c, r);
    return rc == 0 ? slot__seat_sum_note(c, nrows, shards, r) : rc;
}

int slot__seat_hdr_get(ctx *c, slot__seat_hdr *out)
{
    uint8_t raw[HDR_REC_BYTES_MAX];
    size_t len = 0;
    int rc = slot_store_seat_get(c->st, c->txn, c->ev, c->ev_len, 'M', NULL, 0, raw, sizeof raw, &len);
    if (rc != 0)
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc; /* a seated event always has its header */
    pk b = {raw, 0, len, false};
    if (uk_be(&b, 1) != SEAT_REC_VERSION)
        return MDB_CORRUPTED;
    out->nrows = (uint32_t)uk_be(&b, 4);
    out->nsections = (uint32_t)uk_be(&b, 4);
    out->row_max = (uint32_t)uk_be(&b, 4);
    out->ncats = (uint8_t)uk_be(&b, 1);
    if (out->ncats > SLOT_SEAT_CATEGORIES_MAX)
        return MDB_CORRUPTED;
    for (uint8_t i = 0; i < out->ncats; i++) {
        slot__seat_cat *k = &out->cats[i];
        k->len = uk_name(&b, k->name, SLOT_SEAT_CATEGORY_BYTES_MAX);
        k->capacity = uk_be(&b, 8);
        k->held = uk_be(&b, 8);
        k->confirmed = uk_be(&b, 8);
    }
    return b.bad || b.len != len ? MDB_CORRUPTED : 0;
}

int slot__seat_hdr_put(ctx *c, const slot__seat_hdr *h)
{
    uint8_t raw[HDR_REC_BYTES_MAX];
    pk b = {raw, 0, sizeof raw, false};
    pk_be(&b, SEAT_REC_VERSION, 1);
    pk_be(&b, h->nrows, 4);
    pk_be(&b, h->nsections, 4);
    pk_be(&b, h->row_max, 4);
    pk_be(&b, h->ncats, 1);
    for (uint8_t i = 0; i < h->ncats; i++) {
        const slot__seat_cat *k = &h->cats[i];
        SLOT_ASSERT(k->held + k->confirmed <= k->capacity);
        pk_be(&b, k->len, 1);
        pk_bytes(&b, k->name, k->len);
        pk_be(&b, k->capacity, 8);
        pk_be(&b, k->held, 8);
        pk_be(&b, k->confirmed, 8);
    }
    SLOT_ASSERT(!b.bad);
    return slot_store_seat_put(c->st, c->txn, c->ev, c->ev_len, 'M', NULL, 0, raw, b.len);
}

static void seq_sub(uint8_t sub[8], uint64_t seq)
{
    for (int i = 0; i < 8; i++)
        sub[i] = (uint8_t)(seq >> (8 * (7 - i)));
}

int slot__seat_list_get(ctx *c, uint64_t seq, slot__seat_list *out)
{
    uint8_t raw[LIST_REC_BYTES_MAX], sub[8];
    size_t len = 0;
    seq_sub(sub, seq);
    int rc = slot_store_seat_get(c->st, c->txn, c->ev, c->ev_len, 'S', sub, 8, raw, sizeof raw, &len);
    if (rc != 0)
        return rc;
    pk b = {raw, 0, len, false};
    if (uk_be(&b, 1) != SEAT_REC_VERSION)
        return MDB_CORRUPTED;
    out->n = (uint16_t)uk_be(&b, 2);
    if (out->n > SLOT_MAX_PER_REQUEST_MAX)
        return MDB_CORRUPTED;
    for (uint16_t i = 0; i < out->n; i++) {
        out->s[i].row = (uint32_t)uk_be(&b, 4);
        out->s[i].num = (uint32_t)uk_be(&b, 2);
    }
    return b.bad || b.len != len ? MDB_CORRUPTED : 0;
}

int slot__seat_list_put(ctx *c, uint64_t seq, const slot__seat_list *l)
{
    uint8_t raw[LIST_REC_BYTES_MAX], sub[8];
    pk b = {raw, 0, sizeof raw, false};
    SLOT_ASSERT(l->n <= SLOT_MAX_PER_REQUEST_MAX);
    pk_be(&b, SEAT_REC_VERSION, 1);
    pk_be(&b, l->n, 2);
    for (uint16_t i = 0; i < l->n; i++) {
        pk_be(&b, l->s[i].row, 4);
        pk_be(&b, l->s[i].num, 2);
    }
    SLOT_ASSERT(!b.bad);
    seq_sub(sub, seq);
    return slot_store_seat_put(c->st, c->txn, c->ev, c->ev_len, 'S', sub, 8, raw, b.len);
}

void slot__seat_row_fix(slot__seat_row *r)
{
    uint32_t n = r->to - r->from + 1u, run = 0;
    r->free = r->longest = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (r->st[i] == SLOT__SEAT_FREE) {
            r->free++;
            if (++run > r->longest)
                r->longest = run;
        } else {
            run = 0;
        }
    }
}

size_t slot__seat_id(const slot__seat_row *r, uint32_t num, char out[SLOT_SEAT_ID_BYTES_MAX + 1])
{
    int n = snprintf(out, SLOT_SEAT_ID_BYTES_MAX + 1, "%s-%s-%u", r->sec, r->name, (unsigned)num);
    SLOT_ASSERT(n > 0 && n <= SLOT_SEAT_ID_BYTES_MAX);
    return (size_t)n;
}

int slot__seat_extra(slot_res *res, const char *text, size_t len)
{
    size_t need = res->extra_len + (res->extra_len ? 1 : 0) + len + 1;
    char *p = realloc(res->extra, need);
    if (!p)
        return ENOMEM;
    res->extra = p;
    if (res->extra_len)
        p[res->extra_len++] = ',';
    memcpy(p + res->extra_len, text, len);
    res->extra_len += len;
    p[res->extra_len] = 0;
    return 0;
}

/* ---- the event's side */

static int name_put(ctx *c, const char *name, size_t len, uint32_t val)
{
    uint8_t v[4];
    row_sub(v, val);
    return slot_store_seat_put(c->st, c->txn, c->ev, c->ev_len, 'N', name, len, v, 4);
}

int slot__seat_create(ctx *c, const slot_event_rec *e, const slot_seat_map *m)
{
    SLOT_ASSERT(e->capacity == m->seats);
    SLOT_ASSERT(m->nrows >= 1 && m->nrows <= SLOT_SEAT_ROWS_MAX);
    uint64_t *shard_free = calloc(e->shards, sizeof *shard_free);
    slot__seat_row *r = malloc(sizeof *r);
    slot__seat_hdr *h = calloc(1, sizeof *h);
    int rc = shard_free && r && h ? 0 : ENOMEM;
    if (rc == 0) {
        h->nrows = m->nrows;
        h->nsections = m->nsections;
        h->row_max = m->row_max;
        h->ncats = m->ncats;
        for (uint8_t i = 0; i < m->ncats; i++) {
            h->cats[i].len = m->cat_len[i];
            memcpy(h->cats[i].name, m->cats[i], m->cat_len[i] + 1u);
        }
    }
    for (uint32_t i = 0; rc == 0 && i < m->nrows; i++) {
        const slot_seat_row_def *d = &m->rows[i];
        r->idx = i;
        r->sec_len = d->section_len;
        memcpy(r->sec, d->section, d->section_len + 1u);
        r->name_len = d->name_len;
        memcpy(r->name, d->name, d->name_len + 1u);
        r->cat = d->category;
        r->from = d->from;
        r->to = d->to;
        memset(r->st, SLOT__SEAT_FREE, d->to - d->from + 1u);
        slot__seat_row_fix(r);
        shard_free[i % e->shards] += r->free;
        if (d->category)
            h->cats[d->category - 1].capacity += r->free;
        rc = row_rec_put(c, r);
        char nm[2 * SLOT_SEAT_NAME_BYTES_MAX + 2];
        int n = snprintf(nm, sizeof nm, "%s-%s", d->section, d->name);
        if (rc == 0)
            rc = name_put(c, nm, (size_t)n, i);
        if (rc == 0 && (i == 0 || strcmp(m->rows[i - 1].section, d->section) != 0))
            rc = name_put(c, d->section, d->section_len, UINT32_MAX); /* the section's marker */
    }
    for (uint32_t s = 0; rc == 0 && s < e->shards; s++)
        rc = slot_store_shard_put(c->st, c->txn, c->ev, c->ev_len, (uint16_t)s, shard_free[s]);
    if (rc == 0)
        rc = slot__seat_hdr_put(c, h);
    if (rc == 0) /* each shard's row summary, from the rows just written */
        rc = slot__seat_sum_build(c, m->nrows, e->shards, 0);
    free(shard_free);
    free(r);
    free(h);
    return rc;
}

int slot__seat_view(ctx *c, const slot_event_rec *e, slot_res *res)
{
    if (!e->seated)
        return 0;
    slot__seat_hdr *h = malloc(sizeof *h);
    if (!h)
        return ENOMEM;
    int rc = slot__seat_hdr_get(c, h);
    char *buf = NULL;
    if (rc == 0 && !(buf = malloc(32 + (size_t)h->ncats * (SLOT_SEAT_CATEGORY_BYTES_MAX + 160))))
        rc = ENOMEM;
    if (rc == 0) {
        size_t n = (size_t)sprintf(buf, "\"categories\":{");
        for (uint8_t i = 0; i < h->ncats; i++) {
            const slot__seat_cat *k = &h->cats[i];
            n += (size_t)sprintf(buf + n,
                                 "%s\"%s\":{\"capacity\":%llu,\"available\":%llu,\"held\":%llu,\"confirmed\":%llu,"
                                 "\"allocated\":0}",
                                 i ? "," : "", k->name, (unsigned long long)k->capacity,
                                 (unsigned long long)(k->capacity - k->held - k->confirmed),
                                 (unsigned long long)k->held, (unsigned long long)k->confirmed);
        }
        buf[n++] = '}';
        rc = slot__seat_extra(res, buf, n);
    }
    free(buf);
    free(h);
    return rc;
}

int slot__seat_map_op(ctx *c, slot_res *res)
{
    slot_event_rec e;
    int rc = slot__event_load(c, &e, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    if (!e.seated) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "event: \"%.*s\" is not a seated event", (int)c->ev_len, c->ev);
        return 0;
    }
    slot__seat_hdr h;
    rc = slot__seat_hdr_get(c, &h);
    if (rc != 0)
        return rc;
    /* each row: "SEC-ROW":"states", quotes, colon and comma: 2 names + 7 bytes besides its seats */
    size_t cap = 16 + (size_t)h.nrows * (2 * SLOT_SEAT_NAME_BYTES_MAX + 8) + e.capacity, n = 0;
    char *buf = malloc(cap);
    slot__seat_row *r = malloc(sizeof *r);
    if (!buf || !r)
        rc = ENOMEM;
    if (rc == 0)
        n = (size_t)sprintf(buf, "\"rows\":{");
    for (uint32_t i = 0; rc == 0 && i < h.nrows; i++) {
        rc = slot__seat_row_get(c, i, r);
        if (rc == MDB_NOTFOUND)
            rc = MDB_CORRUPTED;
        if (rc != 0)
            break;
        uint32_t len = r->to - r->from + 1u;
        SLOT_ASSERT(n + 2 * SLOT_SEAT_NAME_BYTES_MAX + 8 + len <= cap);
        n += (size_t)sprintf(buf + n, "%s\"%s-%s\":\"", i ? "," : "", r->sec, r->name);
        memcpy(buf + n, r->st, len);
        n += len;
        buf[n++] = '"';
    }
    if (rc == 0) {
        buf[n++] = '}';
        rc = slot__seat_extra(res, buf, n);
    }
    free(buf);
    free(r);
    return rc;
}

int slot__seat_reshard(ctx *c, const slot_event_rec *e, uint32_t old_shards)
{
    slot__seat_hdr h;
    int rc = slot__seat_hdr_get(c, &h);
    uint64_t *shard_free = calloc(e->shards, sizeof *shard_free);
    slot__seat_row *r = malloc(sizeof *r);
    if (rc == 0 && (!shard_free || !r))
        rc = ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < h.nrows; i++) {
        rc = slot__seat_row_get(c, i, r);
        if (rc == 0)
            shard_free[i % e->shards] += r->free;
    }
    for (uint32_t s = 0; rc == 0 && s < e->shards; s++)
        rc = slot_store_shard_put(c->st, c->txn, c->ev, c->ev_len, (uint16_t)s, shard_free[s]);
    if (rc == 0) /* the rows regrouped: every shard's summary anew */
        rc = slot__seat_sum_build(c, h.nrows, e->shards, old_shards);
    free(shard_free);
    free(r);
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

int slot__seat_check(ctx *c, const slot_event_rec *e, char *detail, size_t detail_len)
{
    detail[0] = 0;
    if (!e->seated)
        return 0;
    slot__seat_hdr *h = malloc(sizeof *h);
    slot__seat_row *r = malloc(sizeof *r);
    uint64_t *shard_free = calloc(e->shards, sizeof *shard_free);
    uint64_t cat_n[SLOT_SEAT_CATEGORIES_MAX][3] = {{0}};
    uint64_t nf = 0, nh = 0, nc = 0, other = 0;
    int rc = h && r && shard_free ? slot__seat_hdr_get(c, h) : ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < h->nrows; i++) {
        rc = slot__seat_row_get(c, i, r);
        if (rc != 0)
            break;
        uint32_t len = r->to - r->from + 1u, f = 0;
        for (uint32_t k = 0; k < len; k++) {
            char st = r->st[k];
            int which = st == SLOT__SEAT_FREE ? 0 : st == SLOT__SEAT_HELD ? 1 : st == SLOT__SEAT_CONFIRMED ? 2 : 3;
            if (which == 3) {
                other++;
                continue;
            }
            nf += which == 0;
            nh += which == 1;
            nc += which == 2;
            f += which == 0;
            if (r->cat)
                cat_n[r->cat - 1][which]++;
        }
        uint32_t longest = r->longest, fr = r->free;
        slot__seat_row_fix(r);
        if (!detail[0] && (fr != f || longest != r->longest))
            snprintf(detail, detail_len, "row %s-%s: free %u longest %u recorded, %u and %u counted", r->sec, r->name,
                     fr, longest, r->free, r->longest);
        shard_free[i % e->shards] += f;
    }
    if (rc == 0 && !detail[0] && other > 0)
        snprintf(detail, detail_len, "%llu seats in no known state", (unsigned long long)other);
    if (rc == 0 && !detail[0] && (nh != e->held || nc != e->confirmed || nf != slot__free_units(e)))
        snprintf(detail, detail_len, "seats free/held/confirmed %llu/%llu/%llu, event counts %llu/%llu/%llu",
                 (unsigned long long)nf, (unsigned long long)nh, (unsigned long long)nc,
                 (unsigned long long)slot__free_units(e), (unsigned long long)e->held,
                 (unsigned long long)e->confirmed);
    for (uint32_t s = 0; rc == 0 && !detail[0] && s < e->shards; s++) {
        uint64_t f = 0;
        rc = slot_store_shard_get(c->st, c->txn, c->ev, c->ev_len, (uint16_t)s, &f);
        if (rc == 0 && f != shard_free[s])
            snprintf(detail, detail_len, "shard %u: %llu free recorded, its rows have %llu", (unsigned)s,
                     (unsigned long long)f, (unsigned long long)shard_free[s]);
    }
    for (uint8_t k = 0; rc == 0 && !detail[0] && k < h->ncats; k++) {
        const slot__seat_cat *g = &h->cats[k];
        if (g->held != cat_n[k][1] || g->confirmed != cat_n[k][2] || g->capacity != cat_n[k][0] + cat_n[k][1] + cat_n[k][2])
            snprintf(detail, detail_len, "category %s: counters disagree with its seats", g->name);
    }
    if (rc == 0 && !detail[0]) /* each row's summary entry equals its record */
        rc = slot__seat_sum_check(c, h->nrows, e->shards, detail, detail_len);
    free(h);
    free(r);
    free(shard_free);
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}
