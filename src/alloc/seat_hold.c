/*
 * seat_hold.c — a hold's side of a seated event (seat_int.h;
 * docs/protocol.md, "Seated events" and the Seats clarification): resolving
 * the seat ids and filters a hold names, choosing the seats (named all or
 * none, N adjacent with the orphan rule, best available), taking them,
 * giving them back or confirming them, a partial confirm's kept seats, and
 * the seats of replies. Internal to libslot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seat_int.h"
#include "slot/assert.h"

typedef slot__alloc_ctx ctx;

/* ---- seat ids */

static bool alnum(unsigned char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

/* Splits "SECTION-ROW-NUMBER": *rowname_len := bytes of "SECTION-ROW", *num := NUMBER.
 * false when it does not have that shape (then it names no seat). */
static bool id_split(const char *id, size_t len, size_t *rowname_len, uint32_t *num)
{
    size_t dash[2], nd = 0;
    for (size_t i = 0; i < len; i++) {
        if (id[i] == '-') {
            if (nd == 2)
                return false;
            dash[nd++] = i;
        } else if (!alnum((unsigned char)id[i])) {
            return false;
        }
    }
    if (nd != 2 || dash[0] == 0 || dash[1] == dash[0] + 1 || dash[1] + 1 == len)
        return false;
    const char *n = id + dash[1] + 1;
    size_t nlen = len - dash[1] - 1;
    if (nlen > 5 || n[0] == '0')
        return false;
    uint32_t v = 0;
    for (size_t i = 0; i < nlen; i++) {
        if (n[i] < '0' || n[i] > '9')
            return false;
        v = v * 10u + (uint32_t)(n[i] - '0');
    }
    *rowname_len = dash[1];
    *num = v;
    return v >= 1 && v <= SLOT_SEAT_NUMBER_MAX;
}

/* The seat named id into *ref: MDB_NOTFOUND when the event has none. r is scratch. */
static int id_find(ctx *c, const char *id, size_t len, slot__seat_ref *ref, slot__seat_row *r)
{
    size_t rl = 0;
    uint32_t num = 0;
    if (!id_split(id, len, &rl, &num) || rl > 2 * SLOT_SEAT_NAME_BYTES_MAX + 1)
        return MDB_NOTFOUND;
    uint8_t v[4];
    size_t vlen = 0;
    int rc = slot_store_seat_get(c->st, c->txn, c->ev, c->ev_len, 'N', id, rl, v, sizeof v, &vlen);
    if (rc != 0)
        return rc;
    uint32_t idx = (uint32_t)v[0] << 24 | (uint32_t)v[1] << 16 | (uint32_t)v[2] << 8 | v[3];
    if (vlen != 4 || idx == UINT32_MAX)
        return MDB_NOTFOUND;
    rc = slot__seat_row_get(c, idx, r);
    if (rc == MDB_NOTFOUND)
        return MDB_CORRUPTED; /* the index names only rows that exist */
    if (rc == 0 && (num < r->from || num > r->to))
        return MDB_NOTFOUND;
    ref->row = idx;
    ref->num = num;
    return rc;
}

/* The request's ids into l (request order), each known, none twice; else invalid_argument. */
static int ids_resolve(ctx *c, const slot_req *req, slot__seat_list *l, slot__seat_row *r, slot_res *res)
{
    const char *id = req->seat_ids.ids;
    l->n = 0;
    for (uint16_t i = 0; i < req->seat_ids.n; i++) {
        size_t len = strlen(id);
        slot__seat_ref ref;
        int rc = id_find(c, id, len, &ref, r);
        if (rc == MDB_NOTFOUND) {
            slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "seats: event \"%.*s\" has no seat \"%s\"", (int)c->ev_len,
                           c->ev, id);
            return SLOT__ANSWERED;
        }
        if (rc != 0)
            return rc;
        for (uint16_t k = 0; k < l->n; k++) {
            if (l->s[k].row == ref.row && l->s[k].num == ref.num) {
                slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "seats: \"%s\" is named twice", id);
                return SLOT__ANSWERED;
            }
        }
        l->s[l->n++] = ref;
        id += len + 1;
    }
    return 0;
}

int slot__seat_resolve(ctx *c, const slot_req *req, const slot_event_rec *e, slot__seat_ask *ask, slot_res *res)
{
    ask->mode = SLOT__SEAT_NONE;
    ask->cat = 0;
    ask->sec_len = 0;
    ask->named.n = 0;
    uint32_t seat_fields = SLOT_HAS_SEATS | SLOT_HAS_ADJACENT | SLOT_HAS_CATEGORY | SLOT_HAS_SECTION;
    if (!e->seated) {
        if (req->has & seat_fields) {
            slot_res_error(res, SLOT_E_INVALID_ARGUMENT,
                           "seats: event \"%.*s\" has no seat map (seats, adjacent, category and section need one)",
                           (int)c->ev_len, c->ev);
            return SLOT__ANSWERED;
        }
        return 0;
    }
    slot__seat_row *r = malloc(sizeof *r);
    slot__seat_hdr *h = malloc(sizeof *h);
    int rc = r && h ? 0 : ENOMEM;
    if (rc == 0 && (req->has & SLOT_HAS_SEATS)) {
        ask->mode = SLOT__SEAT_NAMED;
        rc = ids_resolve(c, req, &ask->named, r, res);
    } else if (rc == 0) {
        ask->mode = (req->has & SLOT_HAS_ADJACENT) ? SLOT__SEAT_ADJACENT : SLOT__SEAT_ANY;
        rc = slot__seat_hdr_get(c, h);
        if (rc == 0 && req->category_len > 0) {
            for (uint8_t i = 0; i < h->ncats && ask->cat == 0; i++)
                if (h->cats[i].len == req->category_len && memcmp(h->cats[i].name, req->category, h->cats[i].len) == 0)
                    ask->cat = (uint8_t)(i + 1);
            if (ask->cat == 0) {
                slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "category: event \"%.*s\" has no category \"%s\"",
                               (int)c->ev_len, c->ev, req->category);
                rc = SLOT__ANSWERED;
            }
        }
        if (rc == 0 && req->section_len > 0) {
            uint8_t v[4];
            size_t vlen = 0;
            rc = slot_store_seat_get(c->st, c->txn, c->ev, c->ev_len, 'N', req->section, req->section_len, v, sizeof v,
                                     &vlen);
            if (rc == MDB_NOTFOUND) {
                slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "section: event \"%.*s\" has no section \"%s\"",
                               (int)c->ev_len, c->ev, req->section);
                rc = SLOT__ANSWERED;
            }
            ask->sec_len = req->section_len;
            memcpy(ask->sec, req->section, req->section_len + 1u);
        }
        if (rc == 0 && ask->mode == SLOT__SEAT_ADJACENT && req->qty > h->row_max) {
            slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "qty: %u adjacent seats, but the longest row has %u",
                           (unsigned)req->qty, (unsigned)h->row_max);
            rc = SLOT__ANSWERED;
        }
    }
    free(r);
    free(h);
    return rc;
}

/* ---- choosing */

static int pick_named(ctx *c, const slot__seat_ask *ask, slot__seat_list *out, slot__seat_row *r, slot_res *res)
{
    char *taken = NULL;
    size_t tlen = 0;
    int rc = 0;
    uint32_t cur = UINT32_MAX;
    for (uint16_t i = 0; rc == 0 && i < ask->named.n; i++) {
        const slot__seat_ref *s = &ask->named.s[i];
        if (s->row != cur && (rc = slot__seat_row_get(c, s->row, r)) != 0)
            break;
        cur = s->row;
        if (r->st[s->num - r->from] == SLOT__SEAT_FREE)
            continue;
        char id[SLOT_SEAT_ID_BYTES_MAX + 1];
        size_t n = slot__seat_id(r, s->num, id);
        char *p = realloc(taken, tlen + n + 4);
        if (!p) {
            rc = ENOMEM;
            break;
        }
        taken = p;
        tlen += (size_t)sprintf(taken + tlen, "%s\"%s\"", tlen ? "," : "", id);
    }
    if (rc == 0 && taken) {
        char *body = malloc(tlen + 16);
        rc = body ? 0 : ENOMEM;
        if (rc == 0) {
            int n = sprintf(body, "\"taken\":[%s]", taken);
            rc = slot__seat_extra(res, body, (size_t)n);
        }
        free(body);
        if (rc == 0) {
            res->taken = true;
            rc = SLOT__ANSWERED;
        }
    }
    free(taken);
    if (rc == 0)
        *out = ask->named;
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

/* The first qty-run of row r at or after index p0 that leaves no single
 * free seat on either side; *first gets the first run of all (any). */
static bool row_runs(const slot__seat_row *r, uint32_t qty, bool *have_first, uint32_t *first, uint32_t *clean)
{
    uint32_t n = r->to - r->from + 1u;
    for (uint32_t a = 0; a < n;) {
        if (r->st[a] != SLOT__SEAT_FREE) {
            a++;
            continue;
        }
        uint32_t b = a;
        while (b + 1 < n && r->st[b + 1] == SLOT__SEAT_FREE)
            b++;
        for (uint32_t p = a; b >= a && p + qty <= b + 1u; p++) {
            if (!*have_first) {
                *have_first = true;
                *first = p;
            }
            uint32_t left = p - a, right = b - (p + qty - 1u);
            if (left != 1 && right != 1) { /* the orphan rule */
                *clean = p;
                return true;
            }
        }
        a = b + 1;
    }
    return false;
}

/* Rows are visited through the shard's summary: only those whose entry says
 * they can serve are read (the same rows, in the same order, as reading
 * every row would choose from; docs/design.md, "Seats"). */
static int pick_adjacent(ctx *c, const slot_event_rec *e, const slot__seat_ask *ask, uint32_t qty, slot__seat_list *out,
                         slot__seat_row *r, slot_res *res)
{
    slot__seat_hdr h;
    int rc = slot__seat_hdr_get(c, &h);
    uint32_t n = e->shards, start = (uint32_t)(slot__rng_next(c->a) % n);
    uint16_t hash = slot__seat_sec_hash(ask->sec, ask->sec_len);
    slot__seat_sum_ent *sum = rc == 0 ? malloc(((size_t)h.nrows / n + 1) * sizeof *sum) : NULL;
    if (rc == 0 && !sum)
        rc = ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        uint32_t s = (start + i) % n, cnt = 0;
        bool have = false;
        uint32_t first_row = 0, first = 0, clean = 0;
        rc = slot__seat_sum_load(c, h.nrows, n, s, sum, r);
        if (rc == 0)
            cnt = slot__seat_sum_rows(h.nrows, n, s);
        for (uint32_t j = 0; rc == 0 && j < cnt; j++) {
            uint32_t row = s + j * n;
            if (sum[j].longest < qty || !slot__seat_sum_may_fit(ask, hash, &sum[j]))
                continue; /* its record would say the same */
            rc = slot__seat_row_get(c, row, r);
            if (rc == 0 && (r->longest != sum[j].longest || r->cat != sum[j].cat))
                rc = MDB_CORRUPTED; /* the summary disagrees with the row (check says which) */
            if (rc != 0 || !slot__seat_row_fits(ask, r))
                continue;
            bool had = have;
            if (row_runs(r, qty, &have, &first, &clean)) {
                first_row = row;
                first = clean;
                have = true;
                break;
            }
            if (have && !had)
                first_row = row;
        }
        if (rc == 0 && have) { /* the first shard (in turn) with qty adjacent */
            free(sum);
            out->n = (uint16_t)qty;
            for (uint32_t k = 0; k < qty; k++) {
                out->s[k].row = first_row;
                out->s[k].num = 0;
            }
            rc = slot__seat_row_get(c, first_row, r);
            for (uint32_t k = 0; rc == 0 && k < qty; k++)
                out->s[k].num = r->from + first + k;
            return rc;
        }
    }
    free(sum);
    if (rc != 0)
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    return res ? slot__seat_sold_out(c, e, ask, res) : SLOT__ANSWERED;
}

typedef struct row_free {
    uint32_t row, free;
} row_free;

static int by_most_free(const void *x, const void *y)
{
    const row_free *a = x, *b = y;
    if (a->free != b->free)
        return a->free > b->free ? -1 : 1;
    return a->row < b->row ? -1 : a->row > b->row;
}

static int pick_any(ctx *c, const slot_event_rec *e, const slot__seat_ask *ask, uint32_t qty, slot__seat_list *out,
                    slot__seat_row *r, slot_res *res)
{
    slot__seat_hdr h;
    int rc = slot__seat_hdr_get(c, &h);
    uint32_t n = e->shards, start = (uint32_t)(slot__rng_next(c->a) % n);
    uint16_t hash = slot__seat_sec_hash(ask->sec, ask->sec_len);
    row_free *rows = rc == 0 ? malloc(((size_t)h.nrows / n + 1) * sizeof *rows) : NULL;
    slot__seat_sum_ent *sum = rc == 0 ? malloc(((size_t)h.nrows / n + 1) * sizeof *sum) : NULL;
    if (rc == 0 && (!rows || !sum))
        rc = ENOMEM;
    out->n = 0;
    for (uint32_t i = 0; rc == 0 && i < n && out->n < qty; i++) {
        uint32_t s = (start + i) % n, nr = 0;
        rc = slot__seat_sum_load(c, h.nrows, n, s, sum, r); /* the rows with free seats, unread */
        for (uint32_t j = 0; rc == 0 && j < slot__seat_sum_rows(h.nrows, n, s); j++) {
            if (sum[j].free == 0 || !slot__seat_sum_may_fit(ask, hash, &sum[j]))
                continue;
            if (ask->sec_len > 0 && (rc = slot__seat_row_get(c, s + j * n, r)) == 0 && !slot__seat_row_fits(ask, r))
                continue; /* the section's hash matched, its name does not */
            rows[nr++] = (row_free){s + j * n, sum[j].free};
        }
        qsort(rows, nr, sizeof *rows, by_most_free);
        for (uint32_t k = 0; rc == 0 && k < nr && out->n < qty; k++) {
            rc = slot__seat_row_get(c, rows[k].row, r);
            uint32_t len = r->to - r->from + 1u;
            if (rc == 0 && r->free != rows[k].free)
                rc = MDB_CORRUPTED; /* the summary disagrees with the row (check says which) */
            for (uint32_t p = 0; rc == 0 && p < len && out->n < qty; p++)
                if (r->st[p] == SLOT__SEAT_FREE)
                    out->s[out->n++] = (slot__seat_ref){rows[k].row, r->from + p};
        }
    }
    free(rows);
    free(sum);
    if (rc != 0)
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    if (out->n == qty)
        return 0;
    return res ? slot__seat_sold_out(c, e, ask, res) : SLOT__ANSWERED;
}

int slot__seat_pick(ctx *c, const slot_event_rec *e, const slot__seat_ask *ask, uint32_t qty, slot__seat_list *out,
                    slot_res *res)
{
    SLOT_ASSERT(e->seated && ask->mode != SLOT__SEAT_NONE);
    SLOT_ASSERT(qty >= 1 && qty <= SLOT_MAX_PER_REQUEST_MAX);
    slot__seat_row *r = malloc(sizeof *r);
    if (!r)
        return ENOMEM;
    int rc = ask->mode == SLOT__SEAT_NAMED      ? pick_named(c, ask, out, r, res)
             : ask->mode == SLOT__SEAT_ADJACENT ? pick_adjacent(c, e, ask, qty, out, r, res)
                                                : pick_any(c, e, ask, qty, out, r, res);
    free(r);
    return rc;
}

/* ---- taking and giving back */

/* Rows changed one at a time: the current row is loaded once and written when the next seat is in another. */
typedef struct row_cursor {
    slot__seat_row *r;
    bool loaded;
    uint32_t nrows, shards; /* the header's rows, the event's shards: for the rows' summary */
} row_cursor;

static int cursor_at(ctx *c, row_cursor *k, uint32_t row)
{
    if (k->loaded && k->r->idx == row)
        return 0;
    int rc = 0;
    if (k->loaded) {
        slot__seat_row_fix(k->r);
        rc = slot__seat_row_put(c, k->r, k->nrows, k->shards);
    }
    k->loaded = false;
    if (rc == 0)
        rc = slot__seat_row_get(c, row, k->r);
    k->loaded = rc == 0;
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

static int cursor_done(ctx *c, row_cursor *k)
{
    int rc = 0;
    if (k->loaded) {
        slot__seat_row_fix(k->r);
        rc = slot__seat_row_put(c, k->r, k->nrows, k->shards);
    }
    free(k->r);
    return rc;
}

/* units move on shard s by delta (take: negative). */
static int shard_move(ctx *c, uint16_t s, int64_t delta)
{
    uint64_t f;
    int rc = slot_store_shard_get(c->st, c->txn, c->ev, c->ev_len, s, &f);
    if (rc == MDB_NOTFOUND)
        return MDB_CORRUPTED;
    if (rc == 0 && delta < 0 && f < (uint64_t)-delta)
        return MDB_CORRUPTED;
    return rc == 0 ? slot_store_shard_put(c->st, c->txn, c->ev, c->ev_len, s, (uint64_t)((int64_t)f + delta)) : rc;
}

int slot__seat_take(ctx *c, const slot_event_rec *e, slot_hold_rec *h, slot_hold_status as)
{
    SLOT_ASSERT(as == SLOT_HOLD_HELD || as == SLOT_HOLD_CONFIRMED);
    slot__seat_list best, *l = c->seats;
    int rc = 0;
    if (!l) { /* best available: a cart's item, a waitlist's offer, a reacquire */
        slot__seat_ask any = {.mode = SLOT__SEAT_ANY};
        rc = slot__seat_pick(c, e, &any, h->qty, &best, NULL);
        if (rc == SLOT__ANSWERED)
            return MDB_CORRUPTED; /* the event's free count said there were that many */
        l = &best;
    }
    if (rc != 0)
        return rc;
    SLOT_ASSERT(l->n == h->qty);
    slot__seat_hdr hd;
    rc = slot__seat_hdr_get(c, &hd);
    row_cursor k = {malloc(sizeof(slot__seat_row)), false, hd.nrows, e->shards};
    if (!k.r)
        return ENOMEM;
    h->nparts = 0;
    for (uint16_t i = 0; rc == 0 && i < l->n; i++) {
        rc = cursor_at(c, &k, l->s[i].row);
        char *st = rc == 0 ? &k.r->st[l->s[i].num - k.r->from] : NULL;
        if (rc == 0 && *st != SLOT__SEAT_FREE)
            rc = MDB_CORRUPTED; /* the caller chose free seats */
        if (rc != 0)
            break;
        *st = as == SLOT_HOLD_HELD ? SLOT__SEAT_HELD : SLOT__SEAT_CONFIRMED;
        if (k.r->cat && as == SLOT_HOLD_HELD)
            hd.cats[k.r->cat - 1].held++;
        else if (k.r->cat)
            hd.cats[k.r->cat - 1].confirmed++;
        uint16_t s = (uint16_t)(l->s[i].row % e->shards), p = 0;
        while (p < h->nparts && h->parts[p].shard != s)
            p++;
        if (p == h->nparts)
            h->parts[h->nparts++] = (slot_hold_part){s, 0};
        h->parts[p].qty++;
    }
    int rc2 = cursor_done(c, &k);
    if (rc == 0)
        rc = rc2;
    for (uint16_t p = 0; rc == 0 && p < h->nparts; p++)
        rc = shard_move(c, h->parts[p].shard, -(int64_t)h->parts[p].qty);
    if (rc == 0)
        rc = slot__seat_hdr_put(c, &hd);
    if (rc == 0)
        rc = slot__seat_list_put(c, h->seq, l);
    return rc;
}

int slot__seat_move(ctx *c, const slot_event_rec *e, const slot_hold_rec *h, slot_hold_status from, slot_hold_status to,
                    uint16_t first, uint16_t count)
{
    SLOT_ASSERT(from == SLOT_HOLD_HELD || from == SLOT_HOLD_CONFIRMED);
    slot__seat_list l;
    slot__seat_hdr hd;
    int rc = slot__seat_list_get(c, h->seq, &l);
    if (rc == MDB_NOTFOUND)
        return MDB_CORRUPTED; /* every hold of a seated event has its list */
    if (rc == 0)
        rc = slot__seat_hdr_get(c, &hd);
    if (rc == 0 && (uint32_t)first + count > l.n)
        rc = MDB_CORRUPTED; /* the list has every seat of the hold */
    if (rc != 0)
        return rc;
    row_cursor k = {malloc(sizeof(slot__seat_row)), false, hd.nrows, e->shards};
    if (!k.r)
        return ENOMEM;
    char was = from == SLOT_HOLD_HELD ? SLOT__SEAT_HELD : SLOT__SEAT_CONFIRMED;
    uint32_t *back = calloc(e->shards, sizeof *back);
    if (!back)
        rc = ENOMEM;
    for (uint16_t i = first; rc == 0 && i < first + count; i++) {
        rc = cursor_at(c, &k, l.s[i].row);
        char *st = rc == 0 ? &k.r->st[l.s[i].num - k.r->from] : NULL;
        if (rc == 0 && *st != was)
            rc = MDB_CORRUPTED;
        if (rc != 0)
            break;
        slot__seat_cat *g = k.r->cat ? &hd.cats[k.r->cat - 1] : NULL;
        if (g) {
            uint64_t *cn = from == SLOT_HOLD_HELD ? &g->held : &g->confirmed;
            SLOT_ASSERT(*cn > 0);
            (*cn)--;
        }
        if (to == SLOT_HOLD_CONFIRMED) {
            *st = SLOT__SEAT_CONFIRMED;
            if (g)
                g->confirmed++;
        } else {
            *st = SLOT__SEAT_FREE;
            back[l.s[i].row % e->shards]++;
        }
    }
    int rc2 = cursor_done(c, &k);
    if (rc == 0)
        rc = rc2;
    for (uint32_t s = 0; rc == 0 && s < e->shards; s++)
        if (back[s])
            rc = shard_move(c, (uint16_t)s, back[s]);
    free(back);
    return rc == 0 ? slot__seat_hdr_put(c, &hd) : rc;
}

int slot__seat_keep(ctx *c, const slot_req *req, const slot_hold_rec *h, uint32_t *keep, slot_res *res)
{
    *keep = (req->has & SLOT_HAS_QTY) ? req->qty : h->qty;
    if (!(req->has & SLOT_HAS_SEATS))
        return 0; /* with qty: the first qty of the list */
    slot__seat_list l, want, out;
    slot__seat_row *r = malloc(sizeof *r);
    if (!r)
        return ENOMEM;
    int rc = slot__seat_list_get(c, h->seq, &l);
    if (rc == 0)
        rc = ids_resolve(c, req, &want, r, res);
    free(r);
    if (rc != 0)
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    if ((req->has & SLOT_HAS_QTY) && req->qty != want.n) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "qty: %u, but seats names %u", (unsigned)req->qty,
                       (unsigned)want.n);
        return SLOT__ANSWERED;
    }
    bool in[SLOT_MAX_PER_REQUEST_MAX] = {false};
    for (uint16_t w = 0; w < want.n; w++) {
        uint16_t i = 0;
        while (i < l.n && (l.s[i].row != want.s[w].row || l.s[i].num != want.s[w].num))
            i++;
        if (i == l.n) {
            slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "seats: seat %u of the list is not one of the hold's",
                           (unsigned)w + 1u);
            return SLOT__ANSWERED;
        }
        in[i] = true;
    }
    out.n = 0;
    for (int pass = 1; pass >= 0; pass--) /* kept seats first, in the hold's order, then the rest */
        for (uint16_t i = 0; i < l.n; i++)
            if (in[i] == (pass == 1))
                out.s[out.n++] = l.s[i];
    *keep = want.n;
    return slot__seat_list_put(c, h->seq, &out);
}

int slot__seat_feed(ctx *c, const slot_hold_rec *h, char *out, uint32_t *len)
{
    slot__seat_list l;
    *len = 0;
    int rc = slot__seat_list_get(c, h->seq, &l);
    if (rc == MDB_NOTFOUND)
        return MDB_CORRUPTED;
    if (rc != 0)
        return rc;
    if (l.n > h->qty)
        l.n = h->qty; /* after a partial confirm: the kept seats, first in the list */
    slot__seat_row *r = malloc(sizeof *r);
    if (!r)
        return ENOMEM;
    uint32_t cur = UINT32_MAX, n = 0;
    for (uint16_t i = 0; i < l.n; i++) {
        if (l.s[i].row != cur && (rc = slot__seat_row_get(c, l.s[i].row, r)) != 0)
            break;
        cur = l.s[i].row;
        char id[SLOT_SEAT_ID_BYTES_MAX + 1];
        size_t k = slot__seat_id(r, l.s[i].num, id);
        SLOT_ASSERT(n + (i ? 1u : 0u) + k <= SLOT_FEED_SEATS_BYTES_MAX); /* l.n <= SLOT_MAX_PER_REQUEST_MAX */
        if (i)
            out[n++] = ',';
        memcpy(out + n, id, k);
        n += (uint32_t)k;
    }
    free(r);
    *len = rc == 0 ? n : 0;
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

int slot__seat_res(ctx *c, const slot_hold_rec *h, slot_res *res)
{
    /* The ids as the feed has them (one walk of the list), then quoted: "seats":["A-1-2",...] */
    char *ids = malloc(SLOT_FEED_SEATS_BYTES_MAX);
    char *buf = malloc(16 + 3 * (size_t)SLOT_FEED_SEATS_BYTES_MAX);
    uint32_t len = 0;
    int rc = ids && buf ? slot__seat_feed(c, h, ids, &len) : ENOMEM;
    size_t n = 0;
    if (rc == 0) {
        n = (size_t)sprintf(buf, "\"seats\":[\"");
        for (uint32_t k = 0; k < len; k++) {
            if (ids[k] == ',') {
                memcpy(buf + n, "\",\"", 3);
                n += 3;
            } else {
                buf[n++] = ids[k];
            }
        }
        if (len == 0)
            n--; /* no seats: [] */
        else
            buf[n++] = '"';
        buf[n++] = ']';
        rc = slot__seat_extra(res, buf, n);
    }
    free(ids);
    free(buf);
    return rc;
}

int slot__seat_same(ctx *c, const slot_req *req, const slot_hold_rec *h, bool *same)
{
    *same = false;
    slot__seat_list l;
    int rc = slot__seat_list_get(c, h->seq, &l);
    if (rc != 0)
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    if (l.n != req->seat_ids.n)
        return 0;
    /* after a partial confirm the kept seats moved to the front: the same seats, in any order */
    bool any_order = h->returned > 0;
    slot__seat_row *r = malloc(sizeof *r);
    if (!r)
        return ENOMEM;
    const char *id = req->seat_ids.ids;
    bool eq = true;
    for (uint16_t i = 0; rc == 0 && eq && i < l.n; i++) {
        size_t len = strlen(id);
        slot__seat_ref ref;
        rc = id_find(c, id, len, &ref, r);
        if (rc == MDB_NOTFOUND) {
            rc = 0;
            eq = false;
        }
        if (eq && any_order) {
            bool found = false;
            for (uint16_t k = 0; k < l.n && !found; k++)
                found = ref.row == l.s[k].row && ref.num == l.s[k].num;
            eq = found;
        } else {
            eq = eq && ref.row == l.s[i].row && ref.num == l.s[i].num;
        }
        id += len + 1;
    }
    free(r);
    *same = rc == 0 && eq;
    return rc;
}
