/*
 * tests/model_room.c — the waiting room (docs/protocol.md, "Admission") held to
 * a reference model, for test_model.c's model_rooms case.
 *
 * Rooms are created now and then, a queue or a lottery (capacity, admit_per_s,
 * grant_ttl_ms and an opens_at in the future or none drawn at random), R_LIVE
 * live at once. Random ops: join (one place per user: a second join of the
 * user, with the same key or another, answers the user's one entry with
 * replay), admission of a known or an unknown ticket, hold with the user's
 * valid grant, with none, with another user's grant or with an expired one
 * (admission_required), release and confirm of such holds (free units drive
 * the stop rule and sold_out), and the primary's admission timer
 * (slot_alloc_admit_due at the virtual now). The model keeps what room.c
 * keeps — the admit clock (a token bucket of one second's worth, full at
 * opens_at, started by the first tick or join at or after it), the lottery's
 * draw (the joins before it; its random key is read from the store after the
 * op that drew), admitted and open grants, the expiry cursor in admission
 * order and each entry's state — and predicts every reply (status, position
 * or null before the draw, grant's expires_at, replay) exactly; the clock now
 * and then lands on a grant's expires_at or the ms before. After every batch
 * (some are aborted: the model goes back to the last commit; now and then the
 * store is reopened with a new allocator) each live room's view (room counts,
 * held, confirmed, available) is compared with the model on a read txn.
 */
#include "model.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define R_LIVE 4             /* rooms live at once */
#define R_USERS M_USERS      /* users per room: at most this many entries */
#define R_HOLDS 32           /* a room's holds the model follows */
#define R_ROOMS_MAX 48       /* rooms per run: under SLOT_ROOMS_TICK_MAX, so each tick sees every due room */
#define R_NEW_ROOM_EVERY 400 /* mean ops between replacing a live room */

_Static_assert(R_ROOMS_MAX < SLOT_ROOMS_TICK_MAX, "a tick admits in every room");

typedef struct rentry {
    uint8_t state; /* 0 waiting, 1 admitted (grant unused), 2 grant used */
    uint16_t user;
    uint64_t admitted_at;
    char ticket[SLOT_HOLD_ID_BYTES + 1];
    char grant[SLOT_HOLD_ID_BYTES + 1]; /* learned from an answer; "" until then */
} rentry;

typedef struct rhold {
    char id[SLOT_HOLD_ID_BYTES + 1];
    uint16_t user, qty;
    bool held;
} rhold;

typedef struct rroom {
    char name[16];
    uint64_t cap, opens, qopens, held, confirmed; /* qopens: queue_opens_at (0: joins at once) */
    uint32_t per_s, gttl;
    bool drawn, lottery, keyed; /* keyed: the draw's key read from the store */
    uint64_t milli, admit_at;   /* the admit clock */
    uint64_t key, lot_n;        /* the lottery's draw: its key and the joins before it */
    uint64_t joined, admitted, open, exp_k;
    uint32_t user_seq[R_USERS]; /* the user's entry's seq, 0 = none */
    uint32_t next_key[R_USERS];
    rentry en[R_USERS]; /* by seq - 1 (rank k is seq k + 1, in a drawn lottery seq P(k) + 1 for k < lot_n) */
    rhold h[R_HOLDS];
    uint32_t nh;
} rroom;

typedef struct rstats {
    uint64_t rooms, joins, join_too_early, join_new, join_replay, join_replay_other_key, join_sold_out, join_early;
    uint64_t queries, q_waiting, q_admitted, q_expired, q_sold_out, q_unknown;
    uint64_t ticks, admitted, stopped, expired_out, not_on_sale, draws, drawn_entries, pos_null, out_of_order;
    uint64_t holds_granted, holds_regrant, holds_sold_out, no_grant, other_grant, expired_grant, used_out;
    uint64_t released, confirmed, edges, aborts, reopens;
} rstats;

typedef struct rmodel {
    model *m; /* the store under test, its clock and its rng */
    rroom r[R_ROOMS_MAX];
    uint32_t nr, live[R_LIVE];
    rstats n;
    /* the model as the last commit left it, for an aborted batch */
    rroom saved[R_ROOMS_MAX];
    uint32_t saved_nr, saved_live[R_LIVE];
} rmodel;

/* The lottery's permutation as docs/protocol.md describes it (a 6-round Feistel network over
 * the smallest even-bit domain of at least 4 n, cycle-walked into 0..n-1), written again here
 * with room.c's round function: the model checks the wiring (who is drawn, rank and seq both
 * ways, positions, the admission and expiry order), and that P is a bijection. */
static uint64_t r_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t r_perm(uint64_t key, uint64_t n, uint64_t x, bool inverse)
{
    unsigned half = 1;
    while (half < 32 && (UINT64_C(1) << (2 * half)) < n)
        half++;
    uint64_t mask = (UINT64_C(1) << half) - 1, y = x;
    do {
        uint64_t l = (y >> half) & mask, r = y & mask;
        for (int i = 0; i < 6; i++) {
            int round = inverse ? 5 - i : i;
            if (!inverse) {
                uint64_t t = l ^ (r_mix(key ^ ((uint64_t)round << 56) ^ r) & mask);
                l = r;
                r = t;
            } else {
                uint64_t t = r ^ (r_mix(key ^ ((uint64_t)round << 56) ^ l) & mask);
                r = l;
                l = t;
            }
        }
        y = (l << half) | r;
    } while (y >= n);
    return y;
}

static bool r_lottery_on(const rroom *r)
{
    return r->lottery && r->drawn && r->lot_n > 0;
}

/* The entry index (seq - 1) admitted at rank k, and an entry's rank. */
static uint64_t r_at_rank(const rroom *r, uint64_t k)
{
    return r_lottery_on(r) && k < r->lot_n ? r_perm(r->key, r->lot_n, k, false) : k;
}

static uint64_t r_rank(const rroom *r, uint64_t ix)
{
    return r_lottery_on(r) && ix < r->lot_n ? r_perm(r->key, r->lot_n, ix, true) : ix;
}

static uint64_t r_avail(const rroom *r)
{
    return r->cap - r->held - r->confirmed;
}

/* room_start: the admit clock starts, full, at the first tick or join at or after opens_at. */
static void r_start(rroom *r, uint64_t now)
{
    if (r->drawn || (r->opens && now < r->opens))
        return;
    r->drawn = true;
    r->milli = 1000ull * r->per_s;
    r->admit_at = now;
    if (r->lottery && r->opens) { /* opens_at 0: a lottery is a queue */
        r->lot_n = r->joined;
        r->keyed = false;
    }
}

/* After the op that drew: the key the store committed (random), and P checked a bijection. */
static void r_learn_key(rmodel *rm, rroom *r)
{
    if (!r->drawn || !r->lottery || !r->opens || r->keyed)
        return;
    slot_event_rec rec;
    ASSERT_EQ(slot_store_event_get(rm->m->st, txn(rm->m), r->name, strlen(r->name), &rec), 0);
    ASSERT(rec.drawn);
    ASSERT_U64_EQ(rec.lottery_n, r->lot_n);
    r->key = rec.lottery_key;
    r->keyed = true;
    bool seen[R_USERS] = {0};
    for (uint64_t k = 0; k < r->lot_n; k++) {
        uint64_t ix = r_perm(r->key, r->lot_n, k, false);
        ASSERT_LT(ix, r->lot_n);
        ASSERT(!seen[ix]);
        seen[ix] = true;
        ASSERT_U64_EQ(r_perm(r->key, r->lot_n, ix, true), k);
        if (ix != k)
            rm->n.out_of_order++;
    }
    rm->n.draws++;
    rm->n.drawn_entries += r->lot_n;
}

static void expect_answer(const rroom *r, const rentry *en, const slot_res *res, uint64_t now, bool replay,
                          const char *what)
{
    expect_err(res, SLOT_E_OK, what);
    ASSERT_EQ(res->replay, replay);
    ASSERT_STR_EQ(res->ticket, en->ticket);
    if (en->state != 0) {
        uint64_t exp = en->admitted_at + r->gttl;
        ASSERT_EQ(res->room_status, en->state == 1 && exp <= now ? SLOT_ROOM_EXPIRED : SLOT_ROOM_ADMITTED);
        ASSERT_EQ(res->expires_at_ms, exp);
        if (res->room_status == SLOT_ROOM_ADMITTED && en->grant[0])
            ASSERT_STR_EQ(res->grant, en->grant);
        return;
    }
    if (r_avail(r) == 0 && r->held == 0) {
        ASSERT_EQ(res->room_status, SLOT_ROOM_SOLD_OUT);
        return;
    }
    ASSERT_EQ(res->room_status, SLOT_ROOM_WAITING);
    if (r->lottery && r->opens && !r->drawn) { /* before the draw: no position yet */
        ASSERT(res->position_null);
        ASSERT_EQ(res->draw_at_ms, r->opens);
        return;
    }
    ASSERT(!res->position_null);
    uint64_t rank = r_rank(r, (uint64_t)(en - r->en));
    ASSERT_GE(rank, r->admitted);
    ASSERT_EQ(res->position, rank - r->admitted + 1);
}

static void count_answer(rmodel *rm, const slot_res *res)
{
    if (res->room_status == SLOT_ROOM_WAITING)
        rm->n.q_waiting++;
    else if (res->room_status == SLOT_ROOM_ADMITTED)
        rm->n.q_admitted++;
    else if (res->room_status == SLOT_ROOM_EXPIRED)
        rm->n.q_expired++;
    else if (res->room_status == SLOT_ROOM_SOLD_OUT)
        rm->n.q_sold_out++;
}

static void learn_grant(rentry *en, const slot_res *res)
{
    if (res->room_status == SLOT_ROOM_ADMITTED && !en->grant[0]) {
        ASSERT_EQ(strlen(res->grant), SLOT_HOLD_ID_BYTES);
        memcpy(en->grant, res->grant, sizeof en->grant);
    }
}

static void r_new_room(rmodel *rm, uint32_t slot)
{
    model *m = rm->m;
    if (rm->nr == R_ROOMS_MAX)
        return;
    rroom *r = &rm->r[rm->nr];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "r%05u", rm->nr);
    r->cap = 1 + below(m, 8);
    r->per_s = 1 + below(m, chance(m, 200) ? 200 : 10);
    r->gttl = SLOT_GRANT_TTL_MS_MIN + below(m, 8000);
    r->opens = chance(m, 500) ? m->now + below(m, 3000) : 0;
    r->lottery = chance(m, 500);
    if (r->lottery && !r->opens && chance(m, 800)) /* mostly a draw, with joins before it */
        r->opens = m->now + 1000 + below(m, 3000);
    r->qopens = chance(m, 300) ? m->now + below(m, 2000) : 0;
    slot_req q = slot_test_req(SLOT_OP_CREATE_EVENT, r->name);
    q.capacity = r->cap;
    q.shards = 1 + below(m, 3);
    q.hold_ttl_ms = SLOT_HOLD_TTL_MS_MAX; /* holds end by release or confirm, not by expiry */
    q.max_per_request = 2;
    q.opens_at_ms = r->opens;
    q.admission = r->lottery ? SLOT_ADMISSION_LOTTERY : SLOT_ADMISSION_QUEUE;
    q.admit_per_s = r->per_s;
    q.grant_ttl_ms = r->gttl;
    q.queue_opens_at_ms = r->qopens;
    q.has |= SLOT_HAS_SHARDS | SLOT_HAS_HOLD_TTL | SLOT_HAS_MAX_PER_REQUEST;
    slot_res res = {0};
    ASSERT(run_on(m, NULL, &q, &res));
    expect_err(&res, SLOT_E_OK, "create_event (room)");
    rm->live[slot] = rm->nr++;
    rm->n.rooms++;
}

static void r_join(rmodel *rm, rroom *r)
{
    model *m = rm->m;
    uint32_t u = below(m, R_USERS);
    bool again = r->user_seq[u] && chance(m, 500);
    uint32_t key = again ? (r->next_key[u] ? r->next_key[u] - 1 : 0) : r->next_key[u]++;
    char kname[16];
    snprintf(kname, sizeof kname, "j%u", key);
    slot_req q = slot_test_req(SLOT_OP_JOIN, r->name);
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[u]);
    slot_test_set_name(q.request, &q.request_len, sizeof q.request, kname);
    slot_res res = {0};
    ASSERT(run_on(m, NULL, &q, &res));
    rm->n.joins++;
    if (r->user_seq[u]) { /* one place per user, whatever the key */
        rentry *en = &r->en[r->user_seq[u] - 1];
        expect_answer(r, en, &res, m->now, true, "join (replay)");
        learn_grant(en, &res);
        if (again)
            rm->n.join_replay++;
        else
            rm->n.join_replay_other_key++;
        return;
    }
    if (r->qopens && m->now < r->qopens) { /* before queue_opens_at: no joins yet */
        expect_err(&res, SLOT_E_NOT_ON_SALE, "join (before queue_opens_at)");
        ASSERT_EQ(res.draw_at_ms, r->qopens); /* written as queue_opens_at */
        ASSERT_EQ(res.opens_at_ms, r->opens);
        rm->n.join_too_early++;
        return;
    }
    if (r_avail(r) == 0 && r->held == 0) {
        expect_err(&res, SLOT_E_OK, "join (sold_out)");
        ASSERT_EQ(res.room_status, SLOT_ROOM_SOLD_OUT);
        rm->n.join_sold_out++;
        return;
    }
    r_start(r, m->now); /* a join at or after opens_at comes after the draw */
    r_learn_key(rm, r);
    rentry *en = &r->en[r->joined];
    memset(en, 0, sizeof *en);
    en->user = (uint16_t)u;
    r->user_seq[u] = (uint32_t)++r->joined;
    ASSERT_EQ(strlen(res.ticket), SLOT_HOLD_ID_BYTES);
    memcpy(en->ticket, res.ticket, sizeof en->ticket);
    expect_answer(r, en, &res, m->now, false, "join");
    rm->n.join_new++;
    if (!r->drawn)
        rm->n.join_early++;
}

static void r_query(rmodel *rm, rroom *r)
{
    model *m = rm->m;
    slot_req q = slot_test_req(SLOT_OP_ADMISSION, r->name);
    slot_res res = {0};
    if (r->joined == 0 || chance(m, 100)) { /* a ticket of no entry: another tag, or none */
        char t[SLOT_HOLD_ID_BYTES + 1];
        if (r->joined)
            memcpy(t, r->en[0].ticket, sizeof t);
        else
            memcpy(t, "0000000000000001000000000000abcd", sizeof t);
        t[SLOT_HOLD_ID_BYTES - 1] = t[SLOT_HOLD_ID_BYTES - 1] == '0' ? '1' : '0';
        memcpy(q.ticket, t, sizeof t);
        ASSERT(run_on(m, NULL, &q, &res));
        expect_err(&res, SLOT_E_UNKNOWN_HOLD, "admission (unknown ticket)");
        rm->n.q_unknown++;
        return;
    }
    rentry *en = &r->en[below(m, (uint32_t)r->joined)];
    memcpy(q.ticket, en->ticket, sizeof q.ticket);
    ASSERT(run_on(m, NULL, &q, &res));
    expect_answer(r, en, &res, m->now, false, "admission");
    learn_grant(en, &res);
    rm->n.queries++;
    rm->n.pos_null += res.position_null;
    count_answer(rm, &res);
}

/* hold on a room's event: not_on_sale, then the grant (admission_required), then sold_out. */
static void r_hold(rmodel *rm, rroom *r)
{
    model *m = rm->m;
    uint32_t u = below(m, R_USERS);
    if (r->admitted && chance(m, 600)) /* mostly a user admitted lately, who has a grant */
        u = r->en[r->admitted - 1 - below(m, r->admitted < 3 ? (uint32_t)r->admitted : 3)].user;
    const rentry *mine = r->user_seq[u] ? &r->en[r->user_seq[u] - 1] : NULL;
    const char *grant = "";
    int kind = 0; /* 0 own grant, 1 none, 2 another user's */
    if (chance(m, 150))
        kind = 1;
    else if (chance(m, 150) || !mine || !mine->grant[0]) {
        kind = 2;
        for (uint32_t i = 0; i < r->joined; i++)
            if (r->en[i].user != u && r->en[i].grant[0])
                grant = r->en[i].grant;
        if (!grant[0])
            kind = 1;
    }
    if (kind == 0)
        grant = mine->grant;
    uint32_t qty = 1 + below(m, 2);
    char kname[16];
    snprintf(kname, sizeof kname, "h%u", r->next_key[u]++);
    slot_req q = slot_test_req(SLOT_OP_HOLD, r->name);
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[u]);
    slot_test_set_name(q.request, &q.request_len, sizeof q.request, kname);
    q.qty = qty;
    q.has |= SLOT_HAS_QTY;
    if (grant[0]) {
        memcpy(q.grant, grant, sizeof q.grant);
        q.has |= SLOT_HAS_GRANT;
    }
    slot_res res = {0};
    ASSERT(run_on(m, NULL, &q, &res));
    if (r->opens && m->now < r->opens) {
        expect_err(&res, SLOT_E_NOT_ON_SALE, "hold (room, before opens_at)");
        rm->n.not_on_sale++;
        return;
    }
    bool valid = kind == 0 && mine->state != 0 && mine->admitted_at + r->gttl > m->now;
    if (!valid) {
        expect_err(&res, SLOT_E_ADMISSION_REQUIRED, "hold (room, no valid grant)");
        if (kind == 1)
            rm->n.no_grant++;
        else if (kind == 2)
            rm->n.other_grant++;
        else
            rm->n.expired_grant++;
        return;
    }
    expect_err(&res, SLOT_E_OK, "hold (room, granted)");
    if (qty > r_avail(r)) {
        ASSERT(res.sold_out);
        ASSERT_EQ(res.available, r_avail(r));
        rm->n.holds_sold_out++;
        return;
    }
    ASSERT(!res.sold_out);
    ASSERT_EQ(res.hold_status, SLOT_HOLD_HELD);
    rentry *en = &r->en[r->user_seq[u] - 1];
    if (en->state == 1) { /* grant_use: an open grant the cursor has not passed is counted out */
        uint64_t rank = r_rank(r, (uint64_t)(en - r->en));
        if (rank >= r->exp_k) {
            ASSERT_GT(r->open, 0);
            r->open--;
            rm->n.used_out++;
        }
        en->state = 2;
        rm->n.holds_granted++;
    } else
        rm->n.holds_regrant++;
    r->held += qty;
    if (r->nh < R_HOLDS) {
        rhold *h = &r->h[r->nh++];
        memcpy(h->id, res.hold, sizeof h->id);
        h->user = (uint16_t)u;
        h->qty = (uint16_t)qty;
        h->held = true;
    }
}

static void r_end_hold(rmodel *rm, rroom *r)
{
    model *m = rm->m;
    if (r->nh == 0)
        return;
    rhold *h = &r->h[below(m, r->nh)];
    if (!h->held)
        return;
    bool conf = chance(m, 400);
    slot_req q = slot_test_req(conf ? SLOT_OP_CONFIRM : SLOT_OP_RELEASE, r->name);
    slot_test_set_name(q.hold, &q.hold_len, sizeof q.hold, h->id);
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[h->user]);
    slot_res res = {0};
    ASSERT(run_on(m, NULL, &q, &res));
    expect_err(&res, SLOT_E_OK, conf ? "confirm (room)" : "release (room)");
    ASSERT_EQ(res.hold_status, conf ? SLOT_HOLD_CONFIRMED : SLOT_HOLD_RELEASED);
    h->held = false;
    r->held -= h->qty;
    if (conf) {
        r->confirmed += h->qty;
        rm->n.confirmed++;
    } else
        rm->n.released++;
}

/* room_tick for one room, as the primary's timer runs it. */
static void r_tick_room(rmodel *rm, rroom *r)
{
    uint64_t now = rm->m->now;
    if (r->opens && now < r->opens)
        return;
    if (r->drawn && r->admitted >= r->joined && r->exp_k >= r->admitted)
        return; /* not due */
    r_start(r, now);
    r_learn_key(rm, r); /* the store's tick ran first: its draw is there */
    for (uint32_t i = 0; i < SLOT_ROOM_BATCH_MAX && r->exp_k < r->admitted; i++) {
        rentry *en = &r->en[r_at_rank(r, r->exp_k)];
        if (en->admitted_at + r->gttl > now)
            break;
        if (en->state == 1) {
            ASSERT_GT(r->open, 0);
            r->open--;
            rm->n.expired_out++;
        }
        r->exp_k++;
    }
    uint64_t burst = 1000ull * r->per_s;
    if (now > r->admit_at) {
        uint64_t dt = now - r->admit_at, add = dt >= 1000 ? burst : dt * r->per_s;
        r->milli = r->milli + add > burst ? burst : r->milli + add;
        r->admit_at = now;
    }
    uint64_t avail = r_avail(r);
    if (r->milli >= 1000 && r->admitted < r->joined && r->open >= avail)
        rm->n.stopped++; /* the stop rule holds admissions back */
    for (uint32_t i = 0; i < SLOT_ROOM_BATCH_MAX && r->milli >= 1000 && r->admitted < r->joined && r->open < avail;
         i++) {
        rentry *en = &r->en[r_at_rank(r, r->admitted)];
        ASSERT_EQ(en->state, 0);
        en->state = 1;
        en->admitted_at = now;
        r->admitted++;
        r->open++;
        r->milli -= 1000;
        rm->n.admitted++;
    }
}

static void r_tick(rmodel *rm)
{
    uint64_t before = rm->n.admitted, got = 0;
    ASSERT_EQ(slot_alloc_admit_due(&rm->m->a, txn(rm->m), rm->m->now, &got), 0);
    for (uint32_t i = 0; i < rm->nr; i++)
        r_tick_room(rm, &rm->r[i]);
    ASSERT_EQ(got, rm->n.admitted - before);
    rm->n.ticks++;
}

static void r_expect_view(rmodel *rm, MDB_txn *ro, const rroom *r)
{
    slot_req q = slot_test_req(SLOT_OP_EVENT, r->name);
    slot_res res = {0};
    ASSERT(run_on(rm->m, ro, &q, &res));
    expect_err(&res, SLOT_E_OK, "event (room)");
    ASSERT_EQ(res.view.admission, r->lottery ? SLOT_ADMISSION_LOTTERY : SLOT_ADMISSION_QUEUE);
    ASSERT_EQ(res.view.admit_per_s, r->per_s);
    ASSERT_EQ(res.view.grant_ttl_ms, r->gttl);
    ASSERT_U64_EQ(res.view.queue_opens_at_ms, r->qopens);
    ASSERT_U64_EQ(res.view.room_joined, r->joined);
    ASSERT_U64_EQ(res.view.room_admitted, r->admitted);
    ASSERT_U64_EQ(res.view.room_waiting, r->joined - r->admitted);
    ASSERT_U64_EQ(res.view.room_open, r->open);
    ASSERT_U64_EQ(res.view.held, r->held);
    ASSERT_U64_EQ(res.view.confirmed, r->confirmed);
    ASSERT_U64_EQ(res.view.available, r_avail(r));
}

/* Ends the batch: commit, or now and then abort it (the model goes back to the last commit);
 * then every live room's view on a read txn against the model. */
static void r_commit(rmodel *rm, bool abort_it)
{
    model *m = rm->m;
    if (m->txn && abort_it) {
        mdb_txn_abort(m->txn);
        m->txn = NULL;
        memcpy(rm->r, rm->saved, sizeof rm->r);
        rm->nr = rm->saved_nr;
        memcpy(rm->live, rm->saved_live, sizeof rm->live);
        rm->n.aborts++;
    } else if (m->txn) {
        ASSERT_EQ(mdb_txn_commit(m->txn), 0);
        m->txn = NULL;
    }
    memcpy(rm->saved, rm->r, sizeof rm->r);
    rm->saved_nr = rm->nr;
    memcpy(rm->saved_live, rm->live, sizeof rm->live);
    MDB_txn *ro;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(m->st), NULL, MDB_RDONLY, &ro), 0);
    for (uint32_t i = 0; i < R_LIVE; i++)
        r_expect_view(rm, ro, &rm->r[rm->live[i]]);
    mdb_txn_abort(ro);
}

static void r_stats(const rstats *n, uint64_t seed, uint64_t ops)
{
    printf("model rooms: seed %llu, %llu ops, %llu rooms; joins %llu (%llu new, %llu before the clock, %llu replays "
           "same key, %llu other key, %llu sold_out, %llu before queue_opens_at); admission %llu (%llu waiting, %llu "
           "admitted, %llu expired, "
           "%llu sold_out, %llu unknown); %llu ticks admitted %llu, %llu stopped by open grants >= available, "
           "%llu grants expired out; holds: %llu with a grant (%llu counted out), %llu again on a used grant, "
           "%llu sold_out, admission_required %llu none / %llu another's / %llu expired, %llu not_on_sale; "
           "%llu released, %llu confirmed; %llu clock steps to a grant's expiry; lottery: %llu draws of %llu entries "
           "(%llu drawn out of join order), %llu positions null before the draw; %llu aborted batches, %llu reopens\n",
           (unsigned long long)seed, (unsigned long long)ops, (unsigned long long)n->rooms,
           (unsigned long long)n->joins, (unsigned long long)n->join_new, (unsigned long long)n->join_early,
           (unsigned long long)n->join_replay, (unsigned long long)n->join_replay_other_key,
           (unsigned long long)n->join_sold_out, (unsigned long long)n->join_too_early, (unsigned long long)n->queries,
           (unsigned long long)n->q_waiting, (unsigned long long)n->q_admitted, (unsigned long long)n->q_expired,
           (unsigned long long)n->q_sold_out, (unsigned long long)n->q_unknown, (unsigned long long)n->ticks,
           (unsigned long long)n->admitted, (unsigned long long)n->stopped, (unsigned long long)n->expired_out,
           (unsigned long long)n->holds_granted, (unsigned long long)n->used_out, (unsigned long long)n->holds_regrant,
           (unsigned long long)n->holds_sold_out, (unsigned long long)n->no_grant, (unsigned long long)n->other_grant,
           (unsigned long long)n->expired_grant, (unsigned long long)n->not_on_sale, (unsigned long long)n->released,
           (unsigned long long)n->confirmed, (unsigned long long)n->edges, (unsigned long long)n->draws,
           (unsigned long long)n->drawn_entries, (unsigned long long)n->out_of_order, (unsigned long long)n->pos_null,
           (unsigned long long)n->aborts, (unsigned long long)n->reopens);
    fflush(stdout);
}

static void r_coverage(const rstats *n, uint64_t ops)
{
    if (ops < 20000)
        return;
    ASSERT_GT(n->rooms, 20);
    ASSERT_GT(n->join_new, 100);
    ASSERT_GT(n->join_early, 10);
    ASSERT_GT(n->join_replay, 100);
    ASSERT_GT(n->join_replay_other_key, 100);
    ASSERT_GT(n->join_sold_out, 5);
    ASSERT_GT(n->join_too_early, 3);
    ASSERT_GT(n->q_waiting, 100);
    ASSERT_GT(n->q_admitted, 100);
    ASSERT_GT(n->q_expired, 100);
    ASSERT_GT(n->q_sold_out, 10);
    ASSERT_GT(n->q_unknown, 10);
    ASSERT_GT(n->admitted, 100);
    ASSERT_GT(n->stopped, 100);
    ASSERT_GT(n->expired_out, 10);
    ASSERT_GT(n->holds_granted, 40);
    ASSERT_GT(n->used_out, 40);
    ASSERT_GT(n->holds_regrant, 10);
    ASSERT_GT(n->holds_sold_out, 10);
    ASSERT_GT(n->no_grant, 100);
    ASSERT_GT(n->other_grant, 100);
    ASSERT_GT(n->expired_grant, 10);
    ASSERT_GT(n->not_on_sale, 10);
    ASSERT_GT(n->edges, 15);
    ASSERT_GT(n->draws, 3);
    ASSERT_GT(n->out_of_order, 5);
    ASSERT_GT(n->pos_null, 10);
    ASSERT_GT(n->aborts, 5);
    ASSERT_GT(n->reopens, 1);
}

void room_model_run(uint64_t seed, uint64_t ops, volatile uint64_t *op_now)
{
    rmodel *rm = calloc(1, sizeof *rm);
    model *m = calloc(1, sizeof *m);
    ASSERT(rm && m);
    rm->m = m;
    m->seed = m->rng = seed;
    m->dir = slot_test_tmpdir();
    m->now = T0;
    store_open(m);
    for (uint32_t i = 0; i < R_LIVE; i++)
        r_new_room(rm, i);
    r_commit(rm, false);
    uint32_t batch = 0, batch_len = 1 + below(m, M_BATCH_MAX);
    for (m->op = 0; m->op < ops; m->op++) {
        *op_now = m->op;
        m->now += below(m, 12);
        if (chance(m, 2))
            m->now += 500 + below(m, 4000); /* past grants' expiry */
        rroom *r = &rm->r[rm->live[below(m, R_LIVE)]];
        if (r->admitted && chance(m, 60)) { /* to the very ms a grant expires, or one before: an edge */
            const rentry *en = &r->en[below(m, (uint32_t)r->admitted)];
            if (en->admitted_at + r->gttl > m->now + 1) {
                m->now = en->admitted_at + r->gttl - below(m, 2);
                rm->n.edges++;
            }
        }
        uint32_t p = below(m, 1000);
        if (below(m, R_NEW_ROOM_EVERY) == 0)
            r_new_room(rm, below(m, R_LIVE));
        else if (p < 150)
            r_join(rm, r);
        else if (p < 450)
            r_query(rm, r);
        else if (p < 700)
            r_hold(rm, r);
        else if (p < 850)
            r_end_hold(rm, r);
        else
            r_tick(rm);
        if (++batch < batch_len)
            continue;
        r_commit(rm, chance(m, 20));
        batch = 0;
        batch_len = 1 + below(m, M_BATCH_MAX);
        if (chance(m, 8)) { /* a new allocator on the reopened store: the rooms are as committed */
            store_close(m);
            store_open(m);
            rm->n.reopens++;
            r_commit(rm, false);
        }
    }
    r_commit(rm, false);
    r_stats(&rm->n, seed, ops);
    r_coverage(&rm->n, ops);
    store_close(m);
    slot_test_rmdir(m->dir);
    free(m->dir);
    free(m);
    free(rm);
}
