/*
 * room.c — the waiting room (docs/protocol.md, "Admission"; docs/design.md,
 * "Admission"): join, admission, set_admission, the primary's admission tick
 * and the grants a hold must carry on a room's event.
 *
 * Entries are rows keyed by join seq (1, 2, ...); the user's row names its
 * entry; admissions take ranks 0, 1, ... and rank k admits the entry
 * seq_of(k): k + 1 in a queue, and in a lottery P(k) + 1 for the k < n
 * entries of the draw (P a keyed Feistel permutation of 0..n-1 with
 * cycle-walking, key committed once at the draw), k + 1 after them. A
 * waiting entry's position is rank_of(seq) - admitted + 1 (P inverted), so
 * join, admission and each admission cost O(1) rows: nothing scans the
 * room. The admit clock (a token bucket of one second's worth) is committed
 * in the event record with each admission batch. Open grants are counted:
 * +1 per admission, -1 when a grant is used or when the expiry cursor
 * (admission rank order, which is expiry order) passes an unused one.
 * Internal to libslot; see alloc_int.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_int.h"
#include "slot/assert.h"

typedef slot__alloc_ctx ctx;

/* ---- the lottery's permutation */

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

#define FEISTEL_ROUNDS 6

/* half: bits of each half; the domain is 0..2^(2 half)-1, at least 4 n. */
static unsigned half_bits(uint64_t n)
{
    unsigned b = 1;
    while (b < 32 && (UINT64_C(1) << (2 * b)) < n)
        b++;
    return b;
}

static uint64_t feistel(uint64_t key, unsigned half, uint64_t x, bool inverse)
{
    uint64_t mask = (UINT64_C(1) << half) - 1, l = (x >> half) & mask, r = x & mask;
    for (int i = 0; i < FEISTEL_ROUNDS; i++) {
        int round = inverse ? FEISTEL_ROUNDS - 1 - i : i;
        if (!inverse) {
            uint64_t t = l ^ (mix(key ^ ((uint64_t)round << 56) ^ r) & mask);
            l = r;
            r = t;
        } else {
            uint64_t t = r ^ (mix(key ^ ((uint64_t)round << 56) ^ l) & mask);
            r = l;
            l = t;
        }
    }
    return (l << half) | r;
}

/* P(x) or its inverse over 0..n-1 (x < n), by cycle-walking the Feistel
 * network's larger domain: a bijection of 0..n-1. Expected walks < 4. */
uint64_t slot__room_perm(uint64_t key, uint64_t n, uint64_t x, bool inverse)
{
    SLOT_ASSERT(x < n);
    unsigned half = half_bits(n);
    uint64_t y = x;
    do
        y = feistel(key, half, y, inverse);
    while (y >= n);
    return y;
}

static bool lottery_on(const slot_event_rec *e)
{
    return e->admission == SLOT_ADMISSION_LOTTERY && e->drawn && e->lottery_n > 0;
}

static uint64_t seq_of_rank(const slot_event_rec *e, uint64_t k)
{
    if (lottery_on(e) && k < e->lottery_n)
        return slot__room_perm(e->lottery_key, e->lottery_n, k, false) + 1;
    return k + 1;
}

static uint64_t rank_of_seq(const slot_event_rec *e, uint64_t seq)
{
    if (lottery_on(e) && seq <= e->lottery_n)
        return slot__room_perm(e->lottery_key, e->lottery_n, seq - 1, true);
    return seq - 1;
}

/* ---- ids: hex(seq) + hex(tag), as a hold id */

static bool id_parse(const char *s, uint64_t *seq, uint64_t *tag)
{
    if (strlen(s) != SLOT_HOLD_ID_BYTES)
        return false;
    uint64_t v[2] = {0, 0};
    for (int i = 0; i < SLOT_HOLD_ID_BYTES; i++) {
        char ch = s[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        if (d < 0)
            return false;
        v[i / 16] = (v[i / 16] << 4) | (uint64_t)d;
    }
    *seq = v[0];
    *tag = v[1];
    return *seq > 0;
}

/* ---- the room's state */

static int effective_avail(ctx *c, const slot_event_rec *e, uint64_t *avail)
{
    *avail = slot__free_units(e);
    if (e->parent_len == 0)
        return 0;
    return slot__chain_free(c, e, 0, avail, NULL);
}

/* The room is sold_out while no unit is free and none is held ("Admission"). */
static int room_sold_out(ctx *c, const slot_event_rec *e, bool *sold)
{
    uint64_t avail = 0;
    int rc = effective_avail(c, e, &avail);
    *sold = rc == 0 && avail == 0 && e->held == 0;
    return rc;
}

/* The draw (lottery) and the admit clock's start, once, at opens_at. */
static void room_start(ctx *c, slot_event_rec *e)
{
    if (e->drawn || (e->opens_at_ms && c->now_ms < e->opens_at_ms))
        return;
    e->drawn = 1;
    e->admit_milli = 1000ull * e->admit_per_s; /* the bucket is full at opens_at */
    e->admit_at_ms = c->now_ms;
    if (e->admission == SLOT_ADMISSION_LOTTERY && e->opens_at_ms) { /* opens_at 0: as a queue */
        e->lottery_key = slot__rng_next(c->a);
        e->lottery_n = e->room_joined;
    }
}

/* The answer for entry r as it stands. */
static int entry_answer(ctx *c, const slot_event_rec *e, const slot_room_entry *r, slot_res *res)
{
    slot__hold_id_format(res->ticket, r->seq, r->tag);
    if (r->state != 0) {
        uint64_t exp = r->admitted_at_ms + e->grant_ttl_ms;
        if (r->state == 1 && exp <= c->now_ms) {
            res->room_status = SLOT_ROOM_EXPIRED;
            res->expires_at_ms = exp;
            return 0;
        }
        res->room_status = SLOT_ROOM_ADMITTED;
        slot__hold_id_format(res->grant, r->seq, r->grant);
        res->expires_at_ms = exp;
        return 0;
    }
    bool sold = false;
    int rc = room_sold_out(c, e, &sold);
    if (rc != 0)
        return rc;
    if (sold) {
        res->room_status = SLOT_ROOM_SOLD_OUT;
        return 0;
    }
    res->room_status = SLOT_ROOM_WAITING;
    if (e->admission == SLOT_ADMISSION_LOTTERY && !e->drawn && e->opens_at_ms) {
        res->position_null = true;
        res->draw_at_ms = e->opens_at_ms;
        return 0;
    }
    uint64_t rank = rank_of_seq(e, r->seq);
    res->position = rank >= e->room_admitted ? rank - e->room_admitted + 1 : 1;
    return 0;
}

static int room_event(ctx *c, slot_event_rec *e, slot_res *res)
{
    int rc = slot__event_load(c, e, res);
    if (rc != 0)
        return rc;
    if (e->admission == SLOT_ADMISSION_NONE) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "event \"%s\" has no waiting room (admission none)", c->ev);
        return SLOT__ANSWERED;
    }
    return 0;
}

int slot__op_join(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    int rc = room_event(c, &e, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    uint64_t seq = 0;
    rc = slot_store_room_user_get(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, &seq);
    if (rc == 0) { /* one place per user: the existing entry */
        slot_room_entry r;
        rc = slot_store_room_get(c->st, c->txn, c->ev, c->ev_len, seq, &r);
        if (rc == 0) {
            res->replay = true;
            rc = entry_answer(c, &e, &r, res);
        }
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    }
    if (rc != MDB_NOTFOUND)
        return rc;
    if (e.status != SLOT_EVENT_ON_SALE || (e.closes_at_ms && c->now_ms >= e.closes_at_ms) ||
        (e.queue_opens_at_ms && c->now_ms < e.queue_opens_at_ms)) {
        slot_res_error(res, SLOT_E_NOT_ON_SALE, "event \"%s\" takes no joins now (queue_opens_at %llu)", c->ev,
                       (unsigned long long)e.queue_opens_at_ms);
        res->opens_at_ms = e.opens_at_ms;
        res->closes_at_ms = e.closes_at_ms;
        res->draw_at_ms = e.queue_opens_at_ms; /* written as queue_opens_at */
        return 0;
    }
    bool sold = false;
    rc = room_sold_out(c, &e, &sold);
    if (rc != 0)
        return rc;
    if (sold || e.room_joined >= SLOT_ROOM_ENTRIES_MAX) {
        res->room_status = SLOT_ROOM_SOLD_OUT;
        return 0;
    }
    room_start(c, &e); /* a join at or after opens_at comes after the draw */
    slot_room_entry r;
    memset(&r, 0, sizeof(r));
    r.seq = ++e.room_joined;
    r.tag = slot__rng_next(c->a);
    r.joined_at_ms = c->now_ms;
    r.user_len = req->user_len;
    memcpy(r.user, req->user, req->user_len + 1u);
    r.request_len = req->request_len;
    memcpy(r.request, req->request, req->request_len + 1u);
    rc = slot_store_room_put(c->st, c->txn, c->ev, c->ev_len, &r);
    if (rc == 0)
        rc = slot_store_room_user_put(c->st, c->txn, c->ev, c->ev_len, req->user, req->user_len, r.seq);
    if (rc == 0)
        rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, &e);
    if (rc == 0)
        rc = entry_answer(c, &e, &r, res);
    return rc;
}

int slot__op_admission(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    int rc = room_event(c, &e, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    uint64_t seq = 0, tag = 0;
    slot_room_entry r;
    rc = id_parse(req->ticket, &seq, &tag) ? slot_store_room_get(c->st, c->txn, c->ev, c->ev_len, seq, &r)
                                           : MDB_NOTFOUND;
    if (rc == MDB_NOTFOUND || (rc == 0 && r.tag != tag)) {
        slot_res_error(res, SLOT_E_UNKNOWN_HOLD, "no such ticket in event \"%s\"'s room", c->ev);
        return 0;
    }
    if (rc == 0)
        rc = entry_answer(c, &e, &r, res);
    return rc;
}

int slot__op_set_admission(ctx *c, const slot_req *req, slot_res *res)
{
    slot_event_rec e;
    int rc = slot__event_load(c, &e, res);
    if (rc != 0)
        return slot__answered_ok(rc);
    if (e.admission != SLOT_ADMISSION_NONE && req->admission != e.admission && e.room_joined > 0) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "admission: the room has entries; its mode stays \"%s\"",
                       e.admission == SLOT_ADMISSION_QUEUE ? "queue" : "lottery");
        return 0;
    }
    e.admission = req->admission;
    e.admit_per_s = req->admit_per_s;
    e.grant_ttl_ms = req->grant_ttl_ms;
    e.queue_opens_at_ms = req->queue_opens_at_ms;
    if (e.admit_milli > 1000ull * e.admit_per_s)
        e.admit_milli = 1000ull * e.admit_per_s;
    rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, &e);
    if (rc == 0) {
        slot__view_fill(&res->view, c->ev, c->ev_len, &e);
        rc = slot__view_family(c, &res->view, &e);
    }
    return rc;
}

/* ---- admitting: one room's batch */

static int room_tick(ctx *c, slot_event_rec *e, uint64_t *admitted)
{
    bool was_drawn = e->drawn;
    room_start(c, e);
    if (!e->drawn)
        return 0;
    bool dirty = !was_drawn;
    int rc = 0;
    /* grants expire in admission order: the cursor passes the expired ones */
    for (uint32_t i = 0; rc == 0 && i < SLOT_ROOM_BATCH_MAX && e->room_exp_k < e->room_admitted; i++) {
        uint64_t seq = 0;
        slot_room_entry r;
        rc = slot_store_room_rank_get(c->st, c->txn, c->ev, c->ev_len, e->room_exp_k, &seq);
        if (rc == 0)
            rc = slot_store_room_get(c->st, c->txn, c->ev, c->ev_len, seq, &r);
        if (rc != 0 || r.admitted_at_ms + e->grant_ttl_ms > c->now_ms)
            break;
        if (r.state == 1) {
            if (e->room_open == 0)
                return MDB_CORRUPTED;
            e->room_open--;
        }
        e->room_exp_k++;
        dirty = true;
    }
    if (rc != 0)
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    uint64_t burst = 1000ull * e->admit_per_s;
    if (c->now_ms > e->admit_at_ms) {
        uint64_t dt = c->now_ms - e->admit_at_ms;
        uint64_t add = dt >= 1000 ? burst : dt * e->admit_per_s;
        e->admit_milli = e->admit_milli + add > burst ? burst : e->admit_milli + add;
        e->admit_at_ms = c->now_ms;
    }
    uint64_t avail = 0;
    rc = effective_avail(c, e, &avail);
    for (uint32_t i = 0; rc == 0 && i < SLOT_ROOM_BATCH_MAX && e->admit_milli >= 1000 &&
                         e->room_admitted < e->room_joined && e->room_open < avail;
         i++) {
        /* the stop rule: no admission while open grants >= effective_available */
        uint64_t k = e->room_admitted, seq = seq_of_rank(e, k);
        slot_room_entry r;
        rc = slot_store_room_get(c->st, c->txn, c->ev, c->ev_len, seq, &r);
        if (rc == 0 && r.state != 0)
            rc = MDB_CORRUPTED; /* rank k's entry is admitted once, at rank k */
        if (rc != 0)
            break;
        r.state = 1;
        r.rank = k;
        r.admitted_at_ms = c->now_ms;
        r.grant = slot__rng_next(c->a);
        rc = slot_store_room_put(c->st, c->txn, c->ev, c->ev_len, &r);
        if (rc == 0)
            rc = slot_store_room_rank_put(c->st, c->txn, c->ev, c->ev_len, k, seq);
        e->room_admitted++;
        e->room_open++;
        e->admit_milli -= 1000;
        (*admitted)++;
        dirty = true;
    }
    SLOT_ASSERT(rc != 0 || e->room_admitted <= e->room_joined);
    if (rc == 0 && dirty) /* the admit clock is committed with its batch */
        rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, e);
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

typedef struct rooms {
    uint32_t n;
    uint8_t len[SLOT_ROOMS_TICK_MAX];
    char name[SLOT_ROOMS_TICK_MAX][SLOT_EVENT_BYTES_MAX + 1];
    uint64_t now_ms;
} rooms;

static bool room_due(const slot_event_rec *rec, uint64_t now_ms)
{
    if (rec->admission == SLOT_ADMISSION_NONE || (rec->opens_at_ms && now_ms < rec->opens_at_ms))
        return false;
    return !rec->drawn || rec->room_admitted < rec->room_joined || rec->room_exp_k < rec->room_admitted;
}

static int rooms_collect(void *p, const char *ev, size_t ev_len, const slot_event_rec *rec)
{
    rooms *l = p;
    if (!room_due(rec, l->now_ms))
        return 0;
    memcpy(l->name[l->n], ev, ev_len);
    l->name[l->n][ev_len] = 0;
    l->len[l->n++] = (uint8_t)ev_len;
    return l->n == SLOT_ROOMS_TICK_MAX ? 1 : 0;
}

int slot_alloc_admit_due(slot_alloc *a, MDB_txn *txn, uint64_t now_ms, uint64_t *admitted)
{
    rooms *l = calloc(1, sizeof(*l));
    if (!l)
        return ENOMEM;
    l->now_ms = now_ms;
    *admitted = 0;
    int rc = slot_store_events_scan(a->store, txn, rooms_collect, l);
    if (rc == 1)
        rc = 0;
    for (uint32_t i = 0; rc == 0 && i < l->n; i++) {
        ctx c = {a, a->store, txn, l->name[i], l->len[i], now_ms};
        slot_event_rec e;
        rc = slot_store_event_get(a->store, txn, l->name[i], l->len[i], &e);
        if (rc == 0)
            rc = room_tick(&c, &e, admitted);
    }
    free(l);
    return rc;
}

static int rooms_any(void *p, const char *ev, size_t ev_len, const slot_event_rec *rec)
{
    (void)ev;
    (void)ev_len;
    return room_due(rec, *(const uint64_t *)p) ? 1 : 0;
}

bool slot_alloc_admit_pending(slot_store *st, MDB_txn *rtxn, uint64_t now_ms)
{
    int rc = slot_store_events_scan(st, rtxn, rooms_any, &now_ms);
    return rc != 0; /* 1: a room is due; an error: let the write path report it */
}

/* ---- grants */

int slot__grant_check(ctx *c, const slot_req *req, const char *grant, const slot_event_rec *e, uint64_t *seq,
                      slot_res *res)
{
    *seq = 0;
    if (e->admission == SLOT_ADMISSION_NONE)
        return 0;
    uint64_t gseq = 0, tag = 0;
    slot_room_entry r;
    int rc = grant && id_parse(grant, &gseq, &tag) ? slot_store_room_get(c->st, c->txn, c->ev, c->ev_len, gseq, &r)
                                                   : MDB_NOTFOUND;
    if (rc != 0 && rc != MDB_NOTFOUND)
        return rc;
    if (rc == MDB_NOTFOUND || r.state == 0 || r.grant != tag || r.user_len != req->user_len ||
        memcmp(r.user, req->user, r.user_len) != 0 || r.admitted_at_ms + e->grant_ttl_ms <= c->now_ms) {
        slot_res_error(res, SLOT_E_ADMISSION_REQUIRED,
                       "event \"%s\" has a waiting room: hold with a grant of this user that has not expired", c->ev);
        return 0;
    }
    *seq = gseq;
    return 0;
}

int slot__grant_use(ctx *c, uint64_t seq)
{
    if (seq == 0)
        return 0;
    slot_room_entry r;
    slot_event_rec e;
    int rc = slot_store_room_get(c->st, c->txn, c->ev, c->ev_len, seq, &r);
    if (rc != 0 || r.state != 1)
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc; /* used already: nothing to count */
    rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, &e);
    if (rc == 0 && r.rank >= e.room_exp_k) { /* the cursor has not counted it out */
        if (e.room_open == 0)
            return MDB_CORRUPTED;
        e.room_open--;
        rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, &e);
    }
    r.state = 2;
    if (rc == 0)
        rc = slot_store_room_put(c->st, c->txn, c->ev, c->ev_len, &r);
    return rc;
}
