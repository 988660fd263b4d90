/*
 * test_model.c — the allocator held to a reference model of docs/protocol.md for
 * 600,000 operations (SLOT_MODEL_OPS; seed SLOT_MODEL_SEED, printed).
 *
 * The model keeps what the store keeps — every event's counters and every
 * hold's stored status — and follows the protocol's rules for when a due hold
 * is expired in the store (an op that touches it, the sold-out and user-limit
 * paths of hold, set_capacity and reshard, the sweeper), so that it can
 * predict not only each reply but every counter of the event view and the
 * free sum of the shards, exactly. Ops run in batches of random size on one
 * write transaction (group commit, MDB_NOSYNC for speed); some batches abort
 * and the model rolls back through an undo log; a full map aborts the batch
 * and grows the map; now and then the store is closed and opened again (with
 * a new allocator, which rebuilds its in-memory idempotency index), after
 * which every stored hold is compared with the model.
 *
 * Carts (hold_many) and waitlists are modelled too. The model keeps each
 * event's waitlist (waitlist_max, the entries in join order, every key's
 * entry: waiting, offered with its hold, or left) and hands returned units
 * out as the protocol says, inside the op that returns them (release,
 * expiry by any path, cancel, a partial confirm, a capacity increase, a
 * leave): strictly in join order, a head whose qty cannot be met blocking
 * those behind it. Joins (held at once, waiting with their position,
 * waitlist_full, replays, conflicts with hold and cart keys, user_limit
 * counting waiting units), leaves and the waitlist op are checked reply by
 * reply; the event views carry waiting and waiting_qty; after a reopen (and
 * in strict runs after every batch) the stored waiting list, every key's
 * entry and every offered hold (kind, origin) are compared with the model.
 * Offers are made inside other ops, whose answers do not name them: their
 * random tags are read from the store right after the op.
 *
 * Two cases run it. model_fixed_seeds: seeds 1, 2, 3 and 0x5eed, 2,500 ops
 * each (SLOT_MODEL_STRICT_SEED, SLOT_MODEL_STRICT_OPS), strict: after every
 * op the view and shards of every event, after every batch a full
 * slot_check and every stored hold, users record and waitlist. model_random_seed:
 * 600,000 ops of a new seed (about 8 s), checking what each op touched, and the full
 * scans now and then. Event names differ in length and some are a prefix of
 * another ("e00003" and "e00003.17"), as keys that share a prefix must not
 * mix.
 */
#include <lmdb.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "slot/alloc.h"
#include "slot/check.h"
#include "slot/store.h"

TEST_DECLARE(model_fixed_seeds)
TEST_DECLARE(model_random_seed)

TEST_LIST_START
    TEST_ENTRY(model_fixed_seeds)
    TEST_ENTRY(model_random_seed)
TEST_LIST_END


#define T0 UINT64_C(1764500000000) /* the virtual clock starts here, ms */
#define M_OPS_DEFAULT 600000      /* the random seed's ops: under 10 s with carts and waitlists */
#define M_USERS 12                 /* per event; few, so max_per_user bites */
#define M_LIVE 4                   /* events selling at once */
#define M_CAP_MAX 240              /* capacity bound, so an event's held holds fit a fixed list */
#define M_NEW_EVENT_EVERY 2500     /* mean ops between replacing a live event by a new one */
#define M_REOPEN_EVERY 50000       /* mean ops between closing and opening the store */
#define M_CHECK_EVERY 100000       /* ops between full slot_check scans */
#define M_BATCH_MAX 64             /* ops per write transaction: 1..this */
#define M_CART_ITEMS 3             /* items of a cart the driver makes: 1..this */
#define M_CART_KEY0 (UINT32_C(1) << 23) /* carts' request keys start here, apart from plain holds' */
#define M_RECENT 50                /* ops on holds mostly pick among the newest this many */
#define M_WAIT_MAX 24              /* an event's waitlist_max: 0 (none) or 1..this, so the list fills up */

_Static_assert(M_CAP_MAX <= UINT16_MAX, "held-list positions are 16-bit");

/* ---- the model */

typedef struct mhold {
    uint64_t seq, tag, created, exp;
    uint32_t ev, key;              /* event index; request key "r<key>" */
    uint16_t user, qty;
    uint16_t pos;                  /* index in its event's held list while stored held */
    uint8_t st;                    /* stored status: a held hold may be due */
    uint16_t returned, ext;        /* v1.1: units a partial confirm gave back; extensions taken */
    uint32_t replaced_by, replaces; /* v1.1 reacquire links: hold index + 1, 0 = none */
    bool cart;                     /* an item of a hold_many; print: the cart's items */
    bool wl;                       /* kind waitlist: a join held at once, or an offer (went) */
    bool tag_unknown;              /* an offer: made inside another op, its tag is read from the store */
    uint32_t went;                 /* an offer: its waitlist entry's index + 1 */
    uint64_t print;
} mhold;

/* A waitlist entry (docs/protocol.md, "Waitlist"): one per key that joined and waited. An
 * event's entries form a chain in join order (next: index + 1, 0 = the last). */
typedef struct mwait {
    uint64_t join, joined;         /* join seq; joined_at ms */
    uint32_t ev, key, next;
    uint32_t hold;                 /* offered: the hold's index + 1 */
    uint16_t user, qty;
    uint8_t state;                 /* slot_wait_state */
} mwait;

typedef struct mevent {
    char name[24];                 /* "e%05u", or another event's name and ".<index>" */
    uint8_t status;
    uint32_t shards, ttl, mpr, mx;   /* mx: max_extensions */
    uint64_t cap, mpu, held, confirmed, next_seq;
    uint64_t opens, closes, mh;    /* the sale window (0 = none); max_hold_ms */
    uint64_t user_qty[M_USERS];    /* stored held + confirmed per user (what users[] keeps) */
    uint32_t next_key[M_USERS];    /* driver: the user's next fresh request key */
    uint32_t nheld;
    uint32_t held_ix[M_CAP_MAX];   /* holds stored held; a held hold has qty >= 1 */
    /* the waitlist: waiting entries and their units, entries offered so far, the next join seq;
     * the chain of entries (first, last) and the first that may still wait (index + 1) */
    uint32_t wmax;
    uint64_t waiting, waiting_qty, served, next_join;
    uint32_t wfirst, wlast, whead;
} mevent;

/* One saved value: `len` bytes at p, the old ones at arena offset off. */
typedef struct undo {
    void *p;
    size_t len, off;
} undo;

/* What the model says a request answers. */
typedef struct mres {
    slot_err err;
    bool sold_out, replay, done;
    uint64_t available, expired;
    const mhold *h;                /* the hold the answer is about, or NULL */
    slot_hold_status st;
    /* waitlist_join, waitlist: the entry's state, position and qty; waitlist_full */
    slot_wait_state ws;
    uint64_t pos;
    uint32_t wqty;
    bool full;
} mres;

typedef struct stats {
    uint64_t held, sold_out, replay, conflict, user_limit, not_on_sale, too_big, unknown_hold, unknown_event;
    uint64_t confirmed, released, cancelled, not_active, expired, aborts, map_full, reopens, checks, commits;
    uint64_t reshards, capacity, below, exists, events;
    uint64_t extended, extend_limit, partial, reacquired, reacquire_replay, reacquire_sold_out, windows;
    uint64_t carts, cart_replay, cart_sold_out, cart_refused;
    uint64_t joins, join_waiting, join_held, join_full, join_replay, join_refused, leaves, leave_none;
    uint64_t offers, blocked, wstates;
} stats;

/* The driver's memory of a user's last cart, to replay it in another order. */
typedef struct mcart {
    int n;
    uint32_t key, ev[M_CART_ITEMS], qty[M_CART_ITEMS];
} mcart;

typedef struct model {
    uint64_t seed, rng, op, ops;
    mevent *ev;
    uint32_t nev, cap_ev;
    uint32_t live[M_LIVE];
    mhold *h;
    uint32_t nh, cap_h;
    uint64_t *kt_key;              /* (event, user, key) -> hold index + 1, open addressing */
    uint32_t *kt_val;
    uint64_t kt_mask;
    mwait *w;                      /* every waitlist entry; index above nw: forgotten by a rollback */
    uint32_t nw, cap_w;
    uint64_t *wt_key;              /* (event, user, key) -> entry index + 1, as kt_ */
    uint32_t *wt_val;
    undo *log;
    size_t nlog, cap_log;
    unsigned char *arena;
    size_t arena_used, arena_cap;
    uint32_t touched[8];           /* events whose view the current op may have changed */
    uint32_t ntouched;
    bool touched_all;
    /* the store under test */
    char *dir;
    slot_store *st;
    slot_alloc a;
    bool alloc_open;
    MDB_txn *txn;
    uint64_t now;
    bool map_full;                 /* the running batch hit MDB_MAP_FULL */
    bool strict;                   /* every event after every op; full scans after every batch */
    stats n;
    bool small_sale;               /* driver: the next new event is a small sale with a waitlist */
    uint32_t cart_key[M_USERS];    /* driver: the user's next fresh cart key (above M_CART_KEY0) */
    mcart last_cart[M_USERS];
} model;

static volatile uint64_t g_seed, g_op; /* printed when the test fails */
static volatile bool g_strict;

static void on_abort(int sig)
{
    char msg[160];
    int len = snprintf(msg, sizeof msg, "model test failed at op %llu with seed %llu (%s=%llu)\n",
                       (unsigned long long)g_op, (unsigned long long)g_seed,
                       g_strict ? "SLOT_MODEL_STRICT_SEED" : "SLOT_MODEL_SEED", (unsigned long long)g_seed);
    if (len > 0 && write(STDERR_FILENO, msg, (size_t)len) < 0) {
        /* nothing more to do while failing */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static uint64_t rnd(model *m)
{
    uint64_t z = (m->rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint32_t below(model *m, uint32_t n)
{
    return n ? (uint32_t)(rnd(m) % n) : 0;
}

static bool chance(model *m, uint32_t per_mille)
{
    return below(m, 1000) < per_mille;
}

static const char *const users[M_USERS] = {"alice", "bob",   "carol", "dave",  "\xc3\xa9ve", "frank",
                                           "grace", "heidi", "ivan",  "judy",  "mallory",    "\xe2\x82\xac"};

/* ---- undo log: every change to the model goes through U_SET, so an aborted
 *      batch can put the model back as it was at the batch's start. */

static void u_save(model *m, void *p, size_t len)
{
    if (m->nlog == m->cap_log) {
        m->cap_log = m->cap_log ? m->cap_log * 2 : 4096;
        m->log = realloc(m->log, m->cap_log * sizeof(undo));
        ASSERT(m->log != NULL);
    }
    if (m->arena_used + len > m->arena_cap) {
        m->arena_cap = m->arena_cap ? m->arena_cap * 2 : 65536;
        m->arena = realloc(m->arena, m->arena_cap);
        ASSERT(m->arena != NULL);
    }
    m->log[m->nlog++] = (undo){p, len, m->arena_used};
    memcpy(m->arena + m->arena_used, p, len);
    m->arena_used += len;
}

#define U_SET(m, lvalue, value)                       \
    do {                                              \
        u_save((m), &(lvalue), sizeof(lvalue));       \
        (lvalue) = (value);                           \
    } while (0)

static void u_rollback(model *m)
{
    while (m->nlog > 0) {
        const undo *u = &m->log[--m->nlog];
        memcpy(u->p, m->arena + u->off, u->len);
    }
    m->arena_used = 0;
}

static void u_forget(model *m)
{
    m->nlog = 0;
    m->arena_used = 0;
}

/* ---- the idempotency index of the model: (event, user, key) -> hold */

static uint64_t kt_pack(uint32_t ev, uint32_t user, uint32_t key)
{
    ASSERT_LT(key, UINT32_C(1) << 24);
    return ((uint64_t)ev << 32) | ((uint64_t)user << 24) | key;
}

static uint64_t tab_slot(const uint64_t *keys, const uint32_t *vals, uint64_t mask, uint64_t k)
{
    uint64_t z = (k + 1) * UINT64_C(0x9e3779b97f4a7c15);
    size_t i = (size_t)((z ^ (z >> 31)) & mask);
    while (vals[i] != 0 && keys[i] != k)
        i = (i + 1) & mask;
    return i;
}

static uint64_t kt_slot(const model *m, uint64_t k)
{
    return tab_slot(m->kt_key, m->kt_val, m->kt_mask, k);
}

/* The hold a key names, or NULL. */
static mhold *kt_get(model *m, uint32_t ev, uint32_t user, uint32_t key)
{
    uint64_t i = kt_slot(m, kt_pack(ev, user, key));
    return m->kt_val[i] ? &m->h[m->kt_val[i] - 1] : NULL;
}

/* Inserts only: keys are never removed, so linear probing stays valid, and
 * undoing inserts in reverse order empties exactly the slots they filled. */
static void kt_put(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t hold_ix)
{
    uint64_t k = kt_pack(ev, user, key);
    uint64_t i = kt_slot(m, k);
    ASSERT_EQ(m->kt_val[i], 0);
    U_SET(m, m->kt_key[i], k);
    U_SET(m, m->kt_val[i], hold_ix + 1);
}

/* The waitlist's key table (the same key space; the table is as large as kt's). */
static mwait *wt_get(model *m, uint32_t ev, uint32_t user, uint32_t key)
{
    uint64_t i = tab_slot(m->wt_key, m->wt_val, m->kt_mask, kt_pack(ev, user, key));
    return m->wt_val[i] ? &m->w[m->wt_val[i] - 1] : NULL;
}

static void wt_put(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t entry_ix)
{
    uint64_t k = kt_pack(ev, user, key);
    uint64_t i = tab_slot(m->wt_key, m->wt_val, m->kt_mask, k);
    ASSERT_EQ(m->wt_val[i], 0);
    U_SET(m, m->wt_key[i], k);
    U_SET(m, m->wt_val[i], entry_ix + 1);
}

/* ---- the model's transitions: what the allocator does to the store */

static void touch(model *m, uint32_t ev)
{
    for (uint32_t i = 0; i < m->ntouched; i++)
        if (m->touched[i] == ev)
            return;
    if (m->ntouched < sizeof m->touched / sizeof m->touched[0])
        m->touched[m->ntouched++] = ev;
    else
        m->touched_all = true;
}

static uint32_t hold_index(const model *m, const mhold *h)
{
    return (uint32_t)(h - m->h);
}

static bool due(const model *m, const mhold *h)
{
    return h->st == SLOT_HOLD_HELD && m->now >= h->exp;
}

static void m_serve(model *m, uint32_t ev);

/* A hold leaves "held" or "confirmed" (the state machine of store.h): units
 * move between the event's counters and the free units, the user's quantity
 * drops when the units go back, and a hold that leaves "held" leaves the
 * event's held list (swap with the last). */
static void m_finish(model *m, mhold *h, slot_hold_status to)
{
    mevent *e = &m->ev[h->ev];
    ASSERT(slot_hold_transition_ok((slot_hold_status)h->st, to));
    if (h->st == SLOT_HOLD_HELD) {
        U_SET(m, e->held, e->held - h->qty);
        uint32_t last = e->held_ix[e->nheld - 1];
        ASSERT_EQ(e->held_ix[h->pos], hold_index(m, h));
        U_SET(m, e->held_ix[h->pos], last);
        U_SET(m, m->h[last].pos, h->pos);
        U_SET(m, e->nheld, e->nheld - 1);
    } else {
        U_SET(m, e->confirmed, e->confirmed - h->qty);
    }
    if (to == SLOT_HOLD_CONFIRMED)
        U_SET(m, e->confirmed, e->confirmed + h->qty);
    else
        U_SET(m, e->user_qty[h->user], e->user_qty[h->user] - h->qty);
    U_SET(m, h->st, (uint8_t)to);
    touch(m, h->ev);
    if (to != SLOT_HOLD_CONFIRMED)
        m_serve(m, h->ev); /* the units that came back go to those waiting, in this commit */
}

/* A partial confirm: the units above `keep` go back first, then the rest is confirmed. */
static void m_confirm(model *m, mhold *h, uint32_t keep)
{
    mevent *e = &m->ev[h->ev];
    uint32_t back = h->qty - keep;
    if (back > 0) {
        U_SET(m, e->held, e->held - back);
        U_SET(m, e->user_qty[h->user], e->user_qty[h->user] - back);
        U_SET(m, h->qty, (uint16_t)keep);
        U_SET(m, h->returned, (uint16_t)back);
    }
    m_finish(m, h, SLOT_HOLD_CONFIRMED);
    if (back > 0)
        m_serve(m, h->ev); /* the units given back go to those waiting */
}

/* Every op that touches a due hold expires it first (docs/protocol.md, "confirm"). */
static void m_settle(model *m, mhold *h)
{
    if (due(m, h))
        m_finish(m, h, SLOT_HOLD_EXPIRED);
}

/* Expires every due hold of one event (the sold-out and user-limit paths of
 * hold, set_capacity, reshard). Returns how many. */
static uint64_t m_expire_event(model *m, uint32_t ev)
{
    mevent *e = &m->ev[ev];
    uint64_t n = 0;
    for (uint32_t i = 0; i < e->nheld;) {
        mhold *h = &m->h[e->held_ix[i]];
        if (due(m, h)) {
            m_finish(m, h, SLOT_HOLD_EXPIRED); /* the last one moved to i */
            n++;
        } else {
            i++;
        }
    }
    return n;
}

/* A new held hold; counted: the user's quantity already has its units (an offer: the join
 * counted them). */
static mhold *m_new_hold_(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty, bool counted)
{
    mevent *e = &m->ev[ev];
    ASSERT_LT(m->nh, m->cap_h);
    ASSERT_LT(e->nheld, M_CAP_MAX);
    uint32_t ix = m->nh;
    U_SET(m, m->nh, m->nh + 1);
    mhold *h = &m->h[ix]; /* above the old nh: a rollback forgets it without a save */
    *h = (mhold){.seq = e->next_seq, .created = m->now, .exp = m->now + e->ttl, .ev = ev, .key = key,
                 .user = (uint16_t)user, .qty = (uint16_t)qty, .pos = (uint16_t)e->nheld, .st = SLOT_HOLD_HELD};
    U_SET(m, e->next_seq, e->next_seq + 1);
    U_SET(m, e->held_ix[e->nheld], ix);
    U_SET(m, e->nheld, e->nheld + 1);
    U_SET(m, e->held, e->held + qty);
    if (!counted)
        U_SET(m, e->user_qty[user], e->user_qty[user] + qty);
    kt_put(m, ev, user, key, ix);
    touch(m, ev);
    return h;
}

static mhold *m_new_hold(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty)
{
    return m_new_hold_(m, ev, user, key, qty, false);
}

/* ---- the waitlist's transitions */

/* The first entry still waiting (the head hint moves past the others), or NULL. */
static mwait *m_wait_head(model *m, mevent *e)
{
    while (e->whead && m->w[e->whead - 1].state != SLOT_WAIT_WAITING)
        U_SET(m, e->whead, m->w[e->whead - 1].next);
    return e->whead ? &m->w[e->whead - 1] : NULL;
}

/* A waiting entry's position: 1 + the entries waiting before it. */
static uint64_t m_position(const model *m, const mevent *e, const mwait *w)
{
    uint64_t pos = 0;
    for (uint32_t i = e->whead; i; i = m->w[i - 1].next) {
        pos += m->w[i - 1].state == SLOT_WAIT_WAITING;
        if (&m->w[i - 1] == w)
            return pos;
    }
    T_FAIL_("waitlist entry join %llu is not in its event's list", (unsigned long long)w->join);
}

/* The hand-out: while the head's qty can be met, it is offered a held hold with the event's
 * TTL (its units were counted for the user at the join); a head that cannot be met blocks
 * those behind it. */
static void m_serve(model *m, uint32_t ev)
{
    mevent *e = &m->ev[ev];
    while (e->waiting > 0) {
        mwait *w = m_wait_head(m, e);
        ASSERT(w != NULL);
        uint64_t free_units = e->cap - e->held - e->confirmed;
        if (w->qty > free_units) {
            for (uint32_t i = w->next; i; i = m->w[i - 1].next)
                if (m->w[i - 1].state == SLOT_WAIT_WAITING && m->w[i - 1].qty <= free_units) {
                    m->n.blocked++; /* someone behind it could be met: it waits all the same */
                    break;
                }
            return;
        }
        mhold *h = m_new_hold_(m, ev, w->user, w->key, w->qty, true);
        h->wl = true; /* above the old nh: a rollback forgets it */
        h->tag_unknown = true;
        h->went = (uint32_t)(w - m->w) + 1;
        U_SET(m, w->state, (uint8_t)SLOT_WAIT_OFFERED);
        U_SET(m, w->hold, hold_index(m, h) + 1);
        U_SET(m, e->waiting, e->waiting - 1);
        U_SET(m, e->waiting_qty, e->waiting_qty - w->qty);
        U_SET(m, e->served, e->served + 1);
        m->n.offers++;
    }
}

/* A new waiting entry at the tail; the user's quantity counts its units. */
static mwait *m_wait_append(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty)
{
    mevent *e = &m->ev[ev];
    ASSERT_LT(m->nw, m->cap_w);
    uint32_t ix = m->nw;
    U_SET(m, m->nw, m->nw + 1);
    mwait *w = &m->w[ix];
    *w = (mwait){.join = e->next_join, .joined = m->now, .ev = ev, .key = key, .user = (uint16_t)user,
                 .qty = (uint16_t)qty, .state = SLOT_WAIT_WAITING};
    U_SET(m, e->next_join, e->next_join + 1);
    if (e->wlast)
        U_SET(m, m->w[e->wlast - 1].next, ix + 1);
    else
        U_SET(m, e->wfirst, ix + 1);
    U_SET(m, e->wlast, ix + 1);
    if (!e->whead)
        U_SET(m, e->whead, ix + 1);
    U_SET(m, e->waiting, e->waiting + 1);
    U_SET(m, e->waiting_qty, e->waiting_qty + qty);
    U_SET(m, e->user_qty[user], e->user_qty[user] + qty);
    wt_put(m, ev, user, key, ix);
    touch(m, ev);
    return w;
}

static bool m_admit(model *m, uint32_t ev, uint32_t user, uint32_t qty, mres *rp);
static bool m_admit_(model *m, mevent *e, uint32_t ev, uint32_t user, uint32_t qty, mres *rp);

/* hold, in docs/protocol.md's order of decisions. */
static mres m_hold(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty)
{
    mevent *e = &m->ev[ev];
    mres r = {.err = SLOT_E_OK};
    mhold *h = kt_get(m, ev, user, key);
    if ((h && (h->cart || h->wl)) || (!h && e->wmax > 0 && wt_get(m, ev, user, key))) {
        r.err = SLOT_E_IDEMPOTENCY_CONFLICT; /* one key space per (event, user): a cart's or a waitlist's key */
        return r;
    }
    if (h && (uint32_t)h->qty + h->returned != qty) { /* a partial confirm keeps the qty first asked */
        r.err = SLOT_E_IDEMPOTENCY_CONFLICT;
        return r;
    }
    if (h) {
        m_settle(m, h);
        r.replay = true;
        r.h = h;
        r.st = (slot_hold_status)h->st;
        return r;
    }
    if (qty > e->mpr) {
        r.err = SLOT_E_INVALID_ARGUMENT;
        return r;
    }
    if (!m_admit(m, ev, user, qty, &r))
        return r;
    r.h = m_new_hold(m, ev, user, key, qty);
    r.st = SLOT_HOLD_HELD;
    return r;
}

/* The checks a new hold and a reacquire share after max_per_request:
 * not_on_sale (status, then the window), user_limit, sold_out. */
static bool m_admit(model *m, uint32_t ev, uint32_t user, uint32_t qty, mres *rp)
{
    mevent *e = &m->ev[ev];
    mres r = {.err = SLOT_E_OK};
    bool ok = m_admit_(m, e, ev, user, qty, &r);
    *rp = r;
    return ok;
}

static bool m_admit_(model *m, mevent *e, uint32_t ev, uint32_t user, uint32_t qty, mres *rp)
{
    mres r = *rp;
    if (e->status != SLOT_EVENT_ON_SALE || (e->opens && m->now < e->opens) || (e->closes && m->now >= e->closes)) {
        rp->err = SLOT_E_NOT_ON_SALE;
        return false;
    }
    bool settled = false;
    if (e->mpu > 0 && e->user_qty[user] + qty > e->mpu) {
        settled = true;
        m_expire_event(m, ev);
        if (e->user_qty[user] + qty > e->mpu) {
            rp->err = SLOT_E_USER_LIMIT;
            return false;
        }
    }
    /* While people wait, units go to them first: sold_out, after due holds were expired
     * (which may serve the whole list). */
    if ((e->cap - e->held - e->confirmed < qty || e->waiting > 0) && !settled)
        m_expire_event(m, ev);
    if (e->cap - e->held - e->confirmed < qty || e->waiting > 0) {
        r.sold_out = true;
        r.available = e->cap - e->held - e->confirmed;
        *rp = r;
        return false;
    }
    return true;
}

/* confirm, release, cancel and get_hold of a hold the request names rightly. */
static mres m_on_hold(model *m, slot_op op, mhold *h)
{
    mres r = {.err = SLOT_E_OK, .h = h};
    if (op == SLOT_OP_GET_HOLD) {
        r.st = due(m, h) ? SLOT_HOLD_EXPIRED : (slot_hold_status)h->st; /* a read: nothing written */
        return r;
    }
    m_settle(m, h);
    slot_hold_status st = (slot_hold_status)h->st;
    if (op == SLOT_OP_CONFIRM) {
        if (st == SLOT_HOLD_CONFIRMED)
            r.replay = true;
        else if (st == SLOT_HOLD_HELD)
            m_finish(m, h, SLOT_HOLD_CONFIRMED);
        else
            r.err = SLOT_E_HOLD_NOT_ACTIVE;
    } else {
        bool cancel = op == SLOT_OP_CANCEL;
        r.done = st == SLOT_HOLD_HELD || (cancel && st == SLOT_HOLD_CONFIRMED);
        if (r.done)
            m_finish(m, h, cancel ? SLOT_HOLD_CANCELLED : SLOT_HOLD_RELEASED);
    }
    r.st = (slot_hold_status)h->st;
    return r;
}

/* A reacquire's new hold: confirmed at once, in no held list and not in the
 * key table (the request key stays the replaced hold's). */
static mhold *m_new_confirmed(model *m, mhold *old, uint32_t qty)
{
    mevent *e = &m->ev[old->ev];
    ASSERT_LT(m->nh, m->cap_h);
    uint32_t ix = m->nh;
    U_SET(m, m->nh, m->nh + 1);
    mhold *h = &m->h[ix];
    *h = (mhold){.seq = e->next_seq, .created = m->now, .exp = m->now + e->ttl, .ev = old->ev, .key = old->key,
                 .user = old->user, .qty = (uint16_t)qty, .st = SLOT_HOLD_CONFIRMED,
                 .replaces = hold_index(m, old) + 1};
    U_SET(m, e->next_seq, e->next_seq + 1);
    U_SET(m, e->confirmed, e->confirmed + qty);
    U_SET(m, e->user_qty[old->user], e->user_qty[old->user] + qty);
    U_SET(m, old->replaced_by, ix + 1);
    touch(m, old->ev);
    return h;
}

/* confirm with its v1.1 fields (docs/protocol.md, "Partial confirm", "Reacquire"):
 * qty 0 means none given. */
static mres m_confirm_req(model *m, mhold *h, uint32_t qty, bool reacquire)
{
    mres r = {.err = SLOT_E_OK, .h = h};
    mevent *e = &m->ev[h->ev];
    m_settle(m, h);
    if (h->st == SLOT_HOLD_CONFIRMED) {
        r.replay = true;
    } else if (h->st == SLOT_HOLD_HELD) {
        uint32_t keep = qty ? qty : h->qty;
        if (keep > h->qty)
            r.err = SLOT_E_INVALID_ARGUMENT;
        else
            m_confirm(m, h, keep);
    } else if (reacquire && (h->st == SLOT_HOLD_EXPIRED || h->st == SLOT_HOLD_RELEASED)) {
        if (h->replaced_by) {
            r.h = &m->h[h->replaced_by - 1];
            r.replay = true;
            r.st = (slot_hold_status)r.h->st;
            return r;
        }
        uint32_t take = qty ? qty : h->qty;
        if (take > e->mpr) {
            r.err = SLOT_E_INVALID_ARGUMENT;
            return r;
        }
        mres a;
        if (!m_admit(m, h->ev, h->user, take, &a))
            return a;
        r.h = m_new_confirmed(m, h, take);
    } else {
        r.err = SLOT_E_HOLD_NOT_ACTIVE;
    }
    r.st = (slot_hold_status)r.h->st;
    return r;
}

/* extend (docs/protocol.md, "extend" and its decision order). */
static mres m_extend(model *m, mhold *h, uint32_t by_ms)
{
    mres r = {.err = SLOT_E_OK, .h = h};
    const mevent *e = &m->ev[h->ev];
    m_settle(m, h);
    if (h->st != SLOT_HOLD_HELD)
        r.err = SLOT_E_HOLD_NOT_ACTIVE;
    else if ((uint32_t)h->ext + 1 > e->mx || h->exp + by_ms > h->created + e->mh)
        r.err = SLOT_E_EXTEND_LIMIT;
    else {
        U_SET(m, h->exp, h->exp + by_ms);
        U_SET(m, h->ext, (uint16_t)(h->ext + 1));
    }
    r.st = (slot_hold_status)h->st;
    return r;
}

/* waitlist_join, in docs/protocol.md's order of decisions: replay (of the key's hold, of a
 * waiting entry, of a key that left) or idempotency_conflict -> max_per_request -> not_on_sale
 * -> user_limit (the waiting units count) -> a hold when units are free and nobody waits ->
 * waiting at the tail -> sold_out with waitlist_full when the list is full (or the event has none). */
static mres m_join(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty)
{
    mevent *e = &m->ev[ev];
    mres r = {.err = SLOT_E_OK};
    mhold *h = kt_get(m, ev, user, key);
    if (h) {
        if (!h->wl || (uint32_t)h->qty + h->returned != qty) {
            r.err = SLOT_E_IDEMPOTENCY_CONFLICT;
            return r;
        }
        m_settle(m, h);
        r.replay = true;
        r.h = h;
        r.st = (slot_hold_status)h->st;
        r.ws = h->went ? SLOT_WAIT_OFFERED : SLOT_WAIT_NONE;
        return r;
    }
    const mwait *w = wt_get(m, ev, user, key);
    if (w && w->state == SLOT_WAIT_LEFT) { /* the key is spent */
        r.ws = SLOT_WAIT_LEFT;
        r.replay = true;
        return r;
    }
    if (w && w->qty != qty) {
        r.err = SLOT_E_IDEMPOTENCY_CONFLICT;
        return r;
    }
    if (w) { /* an offered entry's key names its hold: found above */
        ASSERT_EQ(w->state, SLOT_WAIT_WAITING);
        r.ws = SLOT_WAIT_WAITING;
        r.pos = m_position(m, e, w);
        r.wqty = w->qty;
        r.replay = true;
        return r;
    }
    if (qty > e->mpr) {
        r.err = SLOT_E_INVALID_ARGUMENT;
        return r;
    }
    if (!m_admit(m, ev, user, qty, &r)) {
        if (r.err != SLOT_E_OK)
            return r;
        if (e->waiting >= e->wmax) { /* answered like a hold, nothing queued */
            r.full = true;
            return r;
        }
        r.sold_out = false;
        r.available = 0;
        const mwait *nw = m_wait_append(m, ev, user, key, qty);
        r.ws = SLOT_WAIT_WAITING;
        r.pos = e->waiting; /* the tail */
        r.wqty = nw->qty;
        return r;
    }
    mhold *nh = m_new_hold(m, ev, user, key, qty);
    nh->wl = true; /* above the old nh: a rollback forgets it */
    r.h = nh;
    r.st = SLOT_HOLD_HELD;
    return r;
}

/* waitlist_leave: a waiting entry leaves (the user's quantity drops by its units) and the
 * hand-out runs, since the head may have left. Returns "left". */
static bool m_leave(model *m, uint32_t ev, uint32_t user, uint32_t key)
{
    mevent *e = &m->ev[ev];
    mwait *w = wt_get(m, ev, user, key);
    if (!w || w->state != SLOT_WAIT_WAITING)
        return false;
    U_SET(m, w->state, (uint8_t)SLOT_WAIT_LEFT);
    U_SET(m, e->waiting, e->waiting - 1);
    U_SET(m, e->waiting_qty, e->waiting_qty - w->qty);
    U_SET(m, e->user_qty[user], e->user_qty[user] - w->qty);
    touch(m, ev);
    m_serve(m, ev);
    return true;
}

/* The waitlist op (a read): the key's entry state; an offered hold shows its status, a due
 * one as expired without a write. */
static mres m_wstate(model *m, uint32_t ev, uint32_t user, uint32_t key)
{
    mres r = {.err = SLOT_E_OK};
    const mwait *w = wt_get(m, ev, user, key);
    if (!w)
        return r; /* none (also a join held at once) */
    r.ws = (slot_wait_state)w->state;
    if (w->state == SLOT_WAIT_WAITING) {
        r.pos = m_position(m, &m->ev[ev], w);
        r.wqty = w->qty;
    } else if (w->state == SLOT_WAIT_OFFERED) {
        r.h = &m->h[w->hold - 1];
        r.st = due(m, r.h) ? SLOT_HOLD_EXPIRED : (slot_hold_status)r.h->st;
    }
    return r;
}

typedef struct due_ref {
    uint64_t exp, seq;
    const char *name;              /* the hold's event */
    uint32_t ix;
} due_ref;

/* The expiry index's key order: expires_at, then the event name as the
 * store writes it (its length byte, then its bytes), then the sequence. */
static int due_cmp(const void *x, const void *y)
{
    const due_ref *a = x, *b = y;
    if (a->exp != b->exp)
        return a->exp < b->exp ? -1 : 1;
    size_t la = strlen(a->name), lb = strlen(b->name);
    if (la != lb)
        return la < lb ? -1 : 1;
    int c = memcmp(a->name, b->name, la);
    if (c != 0)
        return c;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The sweeper: at most `limit` due holds of all events, oldest first in the
 * expiry index's order (due_cmp). Returns how many. */
static uint64_t m_expire_due(model *m, uint64_t limit)
{
    size_t n = 0, cap = 256;
    due_ref *d = malloc(cap * sizeof *d);
    ASSERT(d != NULL);
    for (uint32_t ev = 0; ev < m->nev; ev++) {
        const mevent *e = &m->ev[ev];
        for (uint32_t i = 0; i < e->nheld; i++) {
            const mhold *h = &m->h[e->held_ix[i]];
            if (!due(m, h))
                continue;
            if (n == cap) {
                cap *= 2;
                d = realloc(d, cap * sizeof *d);
                ASSERT(d != NULL);
            }
            d[n++] = (due_ref){h->exp, h->seq, e->name, e->held_ix[i]};
        }
    }
    qsort(d, n, sizeof *d, due_cmp);
    uint64_t done = 0;
    for (size_t i = 0; i < n && done < limit; i++, done++)
        m_finish(m, &m->h[d[i].ix], SLOT_HOLD_EXPIRED);
    free(d);
    return done;
}

/* ---- requests, filled the way proto fills them */

static void hold_id(char out[SLOT_HOLD_ID_BYTES + 1], const mhold *h)
{
    snprintf(out, SLOT_HOLD_ID_BYTES + 1, "%016llx%016llx", (unsigned long long)h->seq, (unsigned long long)h->tag);
}

static void key_name(char out[16], uint32_t key)
{
    snprintf(out, 16, "r%u", (unsigned)key);
}

/* ---- the store under test */

static void store_open(model *m)
{
    slot_store_opts o = {.dir = m->dir, .nosync = true};
    char err[256];
    int rc = slot_store_open(&o, &m->st, err, sizeof err);
    if (rc != 0)
        T_FAIL_("slot_store_open: %d %s", rc, err);
    ASSERT_EQ(slot_alloc_init(&m->a, m->st), 0);
    /* Seeded, so a failing seed repeats: shard choices and hold tags too. */
    slot_alloc_seed(&m->a, m->seed ^ m->op);
    m->alloc_open = true;
}

static void store_close(model *m)
{
    ASSERT(m->txn == NULL);
    if (m->alloc_open)
        slot_alloc_close(&m->a);
    m->alloc_open = false;
    slot_store_close(m->st);
    m->st = NULL;
}

static MDB_txn *txn(model *m)
{
    if (!m->txn)
        ASSERT_EQ(mdb_txn_begin(slot_store_env(m->st), NULL, 0, &m->txn), 0);
    return m->txn;
}

/* Runs q on the batch (or on `on` when not NULL). Returns false when the map
 * is full: the batch must be aborted and nothing of res means anything. */
static bool run_on(model *m, MDB_txn *on, const slot_req *q, slot_res *res)
{
    slot_res_clear(res);
    int rc = slot_alloc_run(&m->a, on ? on : txn(m), q, m->now, res);
    if (rc == MDB_MAP_FULL) {
        m->map_full = true;
        return false;
    }
    if (rc != 0)
        T_FAIL_("slot_alloc_run(%s): %d %s", slot_op_name(q->op), rc, mdb_strerror(rc));
    return true;
}

static const mhold *m_holds; /* the model's holds, for the links expect_hold_fields names */

static void expect_err(const slot_res *r, slot_err want, const char *what)
{
    if (r->err != want)
        T_FAIL_("%s: error %s, model says %s (message \"%s\")", what, slot_err_name(r->err), slot_err_name(want),
                r->message);
}

/* The answer about a hold (hold, confirm, release, cancel, get_hold, and
 * hold_not_active) against the model's hold. */
static void expect_hold_fields(const slot_res *r, const mres *want, const char *what)
{
    char id[SLOT_HOLD_ID_BYTES + 1];
    hold_id(id, want->h);
    if (r->hold_status != want->st)
        T_FAIL_("%s: status %s, model says %s", what, slot_hold_status_name(r->hold_status),
                slot_hold_status_name(want->st));
    ASSERT_STR_EQ(r->hold, id);
    ASSERT_EQ(r->qty, want->h->qty);
    ASSERT_EQ(r->expires_at_ms, want->h->exp);
    ASSERT_EQ(r->created_at_ms, want->h->created);
    ASSERT_STR_EQ(r->user, users[want->h->user]);
    ASSERT_EQ(r->returned, want->h->returned);
    ASSERT_EQ(r->extensions, want->h->ext);
    if (want->h->replaces)
        hold_id(id, &m_holds[want->h->replaces - 1]);
    ASSERT_STR_EQ(r->replaces, want->h->replaces ? id : "");
    if (want->h->replaced_by)
        hold_id(id, &m_holds[want->h->replaced_by - 1]);
    ASSERT_STR_EQ(r->replaced_by, want->h->replaced_by ? id : "");
}

static void expect_res(const slot_res *r, const mres *want, const char *what)
{
    expect_err(r, want->err, what);
    if (want->err != SLOT_E_OK && want->err != SLOT_E_HOLD_NOT_ACTIVE)
        return;
    ASSERT_EQ(r->sold_out, want->sold_out);
    ASSERT_EQ(r->replay, want->replay);
    ASSERT_EQ(r->done, want->done);
    if (want->sold_out)
        ASSERT_EQ(r->available, want->available);
    else if (want->h)
        expect_hold_fields(r, want, what);
}

/* The event view and the shards' free units against the model. */
static void expect_event_on(model *m, MDB_txn *on, uint32_t ev)
{
    const mevent *e = &m->ev[ev];
    slot_req q = slot_test_req(SLOT_OP_EVENT, e->name);
    slot_res r = {0};
    if (!run_on(m, on, &q, &r))
        return;
    expect_err(&r, SLOT_E_OK, "event");
    ASSERT_STR_EQ(r.view.event, e->name);
    ASSERT_EQ(r.view.status, e->status);
    ASSERT_EQ(r.view.capacity, e->cap);
    ASSERT_EQ(r.view.held, e->held);
    ASSERT_EQ(r.view.confirmed, e->confirmed);
    ASSERT_EQ(r.view.available, e->cap - e->held - e->confirmed);
    ASSERT_EQ(r.view.shards, e->shards);
    ASSERT_EQ(r.view.hold_ttl_ms, e->ttl);
    ASSERT_EQ(r.view.max_per_user, e->mpu);
    ASSERT_EQ(r.view.max_per_request, e->mpr);
    ASSERT_U64_EQ(r.view.opens_at_ms, e->opens);
    ASSERT_U64_EQ(r.view.closes_at_ms, e->closes);
    ASSERT_EQ(r.view.max_extensions, e->mx);
    ASSERT_U64_EQ(r.view.max_hold_ms, e->mh);
    ASSERT_EQ(r.view.waitlist_max, e->wmax);
    ASSERT_U64_EQ(r.view.waiting, e->waiting);
    ASSERT_U64_EQ(r.view.waiting_qty, e->waiting_qty);
    q.op = SLOT_OP_SHARDS;
    if (!run_on(m, on, &q, &r))
        return;
    expect_err(&r, SLOT_E_OK, "shards");
    ASSERT_EQ(r.nshards, e->shards);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < r.nshards; i++)
        sum += r.shard_free[i];
    ASSERT_EQ(sum, e->cap - e->held - e->confirmed);
    slot_res_clear(&r);
}

/* After set_capacity and reshard: free units spread evenly (largest minus
 * smallest at most 1). */
static void expect_even(model *m, uint32_t ev)
{
    slot_req q = slot_test_req(SLOT_OP_SHARDS, m->ev[ev].name);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < r.nshards; i++) {
        lo = r.shard_free[i] < lo ? r.shard_free[i] : lo;
        hi = r.shard_free[i] > hi ? r.shard_free[i] : hi;
    }
    ASSERT_LE(hi - lo, 1);
    slot_res_clear(&r);
}

static void expect_touched(model *m)
{
    if (m->touched_all) {
        for (uint32_t ev = 0; ev < m->nev && !m->map_full; ev++)
            expect_event_on(m, NULL, ev);
    } else {
        for (uint32_t i = 0; i < m->ntouched && !m->map_full; i++)
            expect_event_on(m, NULL, m->touched[i]);
    }
    m->ntouched = 0;
    m->touched_all = false;
}

/* slot_check: no violations (of one event, or all when ev is NULL). */
static void expect_clean(model *m, MDB_txn *on, const char *ev)
{
    slot_res r = {0};
    int rc = slot_check(m->a.store, on, ev, ev ? strlen(ev) : 0, &r);
    if (rc != 0)
        T_FAIL_("slot_check: %d %s", rc, mdb_strerror(rc));
    expect_err(&r, SLOT_E_OK, "check");
    for (uint32_t i = 0; i < r.nviolations && i < SLOT_CHECK_VIOLATIONS_MAX; i++)
        fprintf(stderr, "  violation %d in \"%s\": %s\n", r.violations[i].invariant, r.violations[i].event,
                r.violations[i].detail);
    ASSERT_EQ(r.nviolations, 0);
    m->n.checks++;
    slot_res_clear(&r);
}

/* ---- the driver: one random op, its model answer, the store's answer */

/* An event for an op: mostly a live one, now and then an older one (closed
 * or still selling, its holds still there). */
static uint32_t pick_event(model *m)
{
    if (m->nev > M_LIVE && chance(m, 20))
        return below(m, m->nev);
    return m->live[below(m, M_LIVE)];
}

/* A request key for (event, user): mostly fresh, else one used before (a
 * replay or, with another qty, a conflict; or a retry after sold_out). */
static uint32_t pick_key(model *m, mevent *e, uint32_t user)
{
    uint32_t next = e->next_key[user];
    uint32_t dice = below(m, 100);
    if (next == 0 || dice < 65)
        return e->next_key[user]++;
    if (dice < 88)
        return next - 1 - below(m, next < 8 ? next : 8);
    return below(m, next);
}

static void op_hold(model *m)
{
    uint32_t ev = pick_event(m), user = below(m, M_USERS);
    mevent *e = &m->ev[ev];
    uint32_t key = pick_key(m, e, user);
    const mhold *old = kt_get(m, ev, user, key);
    uint32_t qty = 1 + below(m, e->mpr < 4 ? e->mpr : 4);
    if (chance(m, 60))
        qty = 1 + below(m, e->mpr + 3); /* now and then above max_per_request */
    if (old && chance(m, 800))
        qty = old->qty;
    char k[16];
    key_name(k, key);
    slot_req q = slot_test_req(SLOT_OP_HOLD, e->name);
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[user]);
    slot_test_set_name(q.request, &q.request_len, sizeof q.request, k);
    q.qty = qty;
    mres want = m_hold(m, ev, user, key, qty);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    if (want.err == SLOT_E_OK && !want.sold_out && !want.replay) {
        /* A new hold: the id carries the event's next sequence number and a
         * random tag the model learns here. */
        ASSERT_EQ(strlen(r.hold), SLOT_HOLD_ID_BYTES);
        mhold *h = &m->h[hold_index(m, want.h)];
        ASSERT_EQ(sscanf(r.hold + 16, "%16" SCNx64, &h->tag), 1);
        m->n.held++;
    }
    expect_res(&r, &want, "hold");
    m->n.sold_out += want.sold_out;
    m->n.replay += want.replay;
    m->n.conflict += want.err == SLOT_E_IDEMPOTENCY_CONFLICT;
    m->n.user_limit += want.err == SLOT_E_USER_LIMIT;
    m->n.not_on_sale += want.err == SLOT_E_NOT_ON_SALE;
    m->n.too_big += want.err == SLOT_E_INVALID_ARGUMENT;
    slot_res_clear(&r);
}

/* A hold to act on: mostly a recent one, where the action is. */
static mhold *pick_hold(model *m)
{
    if (m->nh == 0)
        return NULL;
    uint32_t span = m->nh < M_RECENT ? m->nh : M_RECENT;
    if (chance(m, 900))
        return &m->h[m->nh - 1 - below(m, span)];
    return &m->h[below(m, m->nh)];
}

/* The ways to name a hold that is not the caller's or does not exist; each
 * must be unknown_hold (docs/protocol.md: the two are not told apart). */
static void wrong_hold(model *m, const mhold *h, slot_op op, char id[SLOT_HOLD_ID_BYTES + 1], uint32_t *user)
{
    static const char hex[] = "0123456789abcdef";
    hold_id(id, h);
    switch (below(m, op == SLOT_OP_CANCEL ? 4 : 5)) {
    case 0: { /* one hex digit of the random tag changed */
        uint32_t i = 16 + below(m, 16);
        id[i] = hex[(strchr(hex, id[i]) - hex + 1 + below(m, 15)) % 16];
        break;
    }
    case 1: /* the sequence number of a hold that does not exist yet */
        snprintf(id, SLOT_HOLD_ID_BYTES + 1, "%016llx%016llx", (unsigned long long)(m->ev[h->ev].next_seq + below(m, 3)),
                 (unsigned long long)h->tag);
        break;
    case 2: /* not an id at all */
        snprintf(id, SLOT_HOLD_ID_BYTES + 1, "%s", below(m, 2) ? "x" : "0000000000000001000000000000000G");
        break;
    case 3: /* upper case hex is another string */
        for (int i = 0; i < SLOT_HOLD_ID_BYTES; i++)
            id[i] = (char)(id[i] >= 'a' ? id[i] - 'a' + 'A' : id[i]);
        if (strpbrk(id, "ABCDEF") == NULL)
            id[0] = 'Z';
        break;
    default: /* another user's hold */
        *user = (h->user + 1 + below(m, M_USERS - 1)) % M_USERS;
        break;
    }
}

/* confirm, release, cancel or get_hold of a random hold, rightly named or not. */
static void op_on_hold(model *m, slot_op op)
{
    mhold *h = pick_hold(m);
    if (!h)
        return;
    uint32_t user = h->user;
    char id[SLOT_HOLD_ID_BYTES + 1];
    bool wrong = chance(m, 80);
    if (wrong)
        wrong_hold(m, h, op, id, &user);
    else
        hold_id(id, h);
    slot_req q = slot_test_req(op, m->ev[h->ev].name);
    slot_test_set_name(q.hold, &q.hold_len, sizeof q.hold, id);
    if (op != SLOT_OP_CANCEL || chance(m, 500))
        slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[user]); /* cancel ignores the user */
    uint32_t qty = 0;
    if (op == SLOT_OP_CONFIRM) {
        q.reacquire = chance(m, 300);
        if (chance(m, 300)) /* a partial confirm, now and then above the hold's qty, or a reacquire's qty */
            qty = 1 + below(m, q.reacquire ? m->ev[h->ev].mpr + 1 : (uint32_t)h->qty + 1);
        if (qty) {
            q.qty = qty;
            q.has |= SLOT_HAS_QTY;
        }
    }
    mres want = {.err = SLOT_E_UNKNOWN_HOLD};
    uint32_t nh_before = m->nh;
    if (!wrong)
        want = op == SLOT_OP_CONFIRM ? m_confirm_req(m, h, qty, q.reacquire) : m_on_hold(m, op, h);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    /* A reacquire made a hold (offers the op made are other new holds): learn its random tag. */
    bool made = want.h && hold_index(m, want.h) >= nh_before;
    if (made && r.err == SLOT_E_OK && !r.sold_out) {
        ASSERT_EQ(strlen(r.hold), SLOT_HOLD_ID_BYTES);
        ASSERT_EQ(sscanf(r.hold + 16, "%16" SCNx64, &m->h[hold_index(m, want.h)].tag), 1);
        m->n.reacquired++;
    }
    expect_res(&r, &want, slot_op_name(op));
    m->n.partial += op == SLOT_OP_CONFIRM && want.err == SLOT_E_OK && !want.replay && want.h && want.h->returned > 0 &&
                    !made;
    m->n.reacquire_replay += q.reacquire && want.replay && want.h != h;
    m->n.reacquire_sold_out += q.reacquire && want.sold_out;
    m->n.unknown_hold += wrong;
    m->n.not_active += want.err == SLOT_E_HOLD_NOT_ACTIVE;
    m->n.confirmed += op == SLOT_OP_CONFIRM && want.err == SLOT_E_OK && !want.replay;
    m->n.released += op == SLOT_OP_RELEASE && want.done;
    m->n.cancelled += op == SLOT_OP_CANCEL && want.done;
    slot_res_clear(&r);
}

/* The sweeper: all due holds (the admin op) or a few (a bounded sweep). */
static void op_expire(model *m)
{
    uint64_t n = 0;
    if (chance(m, 500)) {
        slot_req q = slot_test_req(SLOT_OP_EXPIRE, NULL);
        slot_res r = {0};
        uint64_t want = m_expire_due(m, SLOT_EXPIRE_OP_MAX);
        if (!run_on(m, NULL, &q, &r))
            return;
        expect_err(&r, SLOT_E_OK, "expire");
        n = r.expired;
        ASSERT_EQ(n, want);
    } else {
        uint64_t limit = chance(m, 100) ? SLOT_EXPIRE_OP_MAX : 1 + below(m, 6);
        uint64_t want = m_expire_due(m, limit);
        int rc = slot_alloc_expire_due(&m->a, txn(m), m->now, limit, &n);
        if (rc == MDB_MAP_FULL) {
            m->map_full = true;
            return;
        }
        ASSERT_EQ(rc, 0);
        ASSERT_EQ(n, want);
    }
    m->n.expired += n;
}

static slot_req req_create_of(const mevent *e)
{
    slot_req q = slot_test_req(SLOT_OP_CREATE_EVENT, e->name);
    q.capacity = e->cap;
    q.shards = e->shards;
    q.hold_ttl_ms = e->ttl;
    q.max_per_user = e->mpu;
    q.max_per_request = e->mpr;
    q.opens_at_ms = e->opens;
    q.closes_at_ms = e->closes;
    q.max_extensions = e->mx;
    q.max_hold_ms = e->mh == 2ull * e->ttl ? 0 : e->mh; /* 0: the default, as proto leaves it */
    q.waitlist_max = e->wmax;
    q.has |= SLOT_HAS_SHARDS | SLOT_HAS_HOLD_TTL | SLOT_HAS_MAX_PER_USER | SLOT_HAS_MAX_PER_REQUEST;
    if (e->wmax)
        q.has |= SLOT_HAS_WAITLIST_MAX;
    return q;
}

/* A new event, replacing a live one (whose holds stay in the store). */
static void op_new_event(model *m, uint32_t slot)
{
    if (m->nev == m->cap_ev)
        return;
    uint32_t ev = m->nev;
    mevent *e = &m->ev[ev];
    memset(e, 0, sizeof *e);
    /* The second event's name has the first's as a prefix; later ones now and then. */
    const mevent *parent = ev == 1 ? &m->ev[0] : ev > 1 && chance(m, 250) ? &m->ev[below(m, ev)] : NULL;
    if (parent && strchr(parent->name, '.') == NULL) /* a prefix of the new name */
        snprintf(e->name, sizeof e->name, "%.8s.%u", parent->name, (unsigned)ev);
    else
        snprintf(e->name, sizeof e->name, "e%05u", (unsigned)ev);
    e->status = SLOT_EVENT_ON_SALE;
    e->cap = chance(m, 30) ? below(m, 4) : 20 + below(m, M_CAP_MAX - 19);
    e->shards = chance(m, 100) ? 1 : 1 + below(m, 24);
    e->ttl = SLOT_HOLD_TTL_MS_MIN + below(m, 5000);
    e->mpu = chance(m, 400) ? 0 : 4 + below(m, 60);
    e->mpr = 1 + below(m, 8);
    e->mx = chance(m, 200) ? 0 : 1 + below(m, 4);
    e->mh = chance(m, 500) ? 2ull * e->ttl : SLOT_MAX_HOLD_MS_MIN + below(m, 3 * e->ttl);
    if (chance(m, 100)) { /* opening a little ahead, or closing a little ahead */
        e->opens = chance(m, 500) ? m->now + below(m, 3000) : 0;
        e->closes = m->now + e->opens % 7 + 1 + below(m, 20000);
        if (e->opens && e->closes <= e->opens)
            e->closes = e->opens + 1;
    }
    e->next_seq = 1;
    e->next_join = 1;
    e->wmax = chance(m, 400) ? 0 : 1 + below(m, M_WAIT_MAX); /* mostly a waitlist, small enough to fill */
    if (e->wmax > 0 && chance(m, 400))
        e->cap = 1 + below(m, 12); /* a small sale: it sells out, and people wait */
    if (m->small_sale) { /* the first live event: a small sale with a waitlist, also in short runs */
        m->small_sale = false;
        e->wmax = 8 + below(m, M_WAIT_MAX - 7);
        e->cap = 1 + below(m, 12);
        e->opens = e->closes = 0;
    }
    slot_req q = req_create_of(e);
    U_SET(m, m->nev, m->nev + 1);
    U_SET(m, m->live[slot], ev);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, SLOT_E_OK, "create_event");
    ASSERT(!r.replay);
    touch(m, ev);
    m->n.events++;
    slot_res_clear(&r);
}

/* create_event of an existing event: its current settings are a replay, any
 * other is event_exists. */
static void op_create_again(model *m)
{
    uint32_t ev = pick_event(m);
    mevent *e = &m->ev[ev];
    slot_req q = req_create_of(e);
    bool same = chance(m, 500);
    if (!same) {
        switch (below(m, 9)) {
        case 7: q.waitlist_max = e->wmax % M_WAIT_MAX + 1; break;
        case 0: q.capacity = e->cap + 1; break;
        case 1: q.shards = e->shards % SLOT_SHARDS_MAX + 1; break;
        case 2: q.hold_ttl_ms = e->ttl + 1; break;
        case 3: q.max_per_user = e->mpu + 1; break;
        case 4: q.closes_at_ms = e->closes + 1; break;
        case 5: q.max_extensions = e->mx % SLOT_MAX_EXTENSIONS_MAX + 1; break;
        case 6: q.max_hold_ms = e->mh + 1; break;
        default: q.max_per_request = e->mpr % SLOT_MAX_PER_REQUEST_MAX + 1; break;
        }
    }
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, same ? SLOT_E_OK : SLOT_E_EVENT_EXISTS, "create_event again");
    if (same) {
        ASSERT(r.replay);
        ASSERT_EQ(r.view.capacity, e->cap);
        ASSERT_EQ(r.view.held, e->held);
    }
    m->n.exists += !same;
    slot_res_clear(&r);
}

/* reshard, set_capacity, set_status. The first two expire the event's due
 * holds before anything else, so those neither block a capacity cut nor get
 * spread as held units; that happens even when the cut is refused. */
static void op_edit(model *m, slot_op op)
{
    uint32_t ev = pick_event(m);
    mevent *e = &m->ev[ev];
    slot_req q = slot_test_req(op, e->name);
    mres want = {.err = SLOT_E_OK};
    bool offered = false;
    if (op == SLOT_OP_SET_STATUS) {
        /* Mostly on sale: a closed event answers every new hold alike. */
        q.status = e->status == SLOT_EVENT_CLOSED || chance(m, 850) ? SLOT_EVENT_ON_SALE : SLOT_EVENT_CLOSED;
        U_SET(m, e->status, (uint8_t)q.status);
    } else {
        m_expire_event(m, ev);
    }
    uint64_t allocated = e->held + e->confirmed;
    if (op == SLOT_OP_RESHARD) {
        q.shards = chance(m, 20) ? SLOT_SHARDS_MAX - below(m, 8) : 1 + below(m, 24);
        U_SET(m, e->shards, q.shards);
        m->n.reshards++;
    } else if (op == SLOT_OP_SET_CAPACITY) {
        uint64_t c = allocated + below(m, 100);
        q.capacity = c > M_CAP_MAX ? M_CAP_MAX : c;
        if (allocated > 0 && chance(m, 100))
            q.capacity = allocated - 1 - below(m, allocated < 5 ? (uint32_t)allocated : 5);
        if (q.capacity < allocated) {
            want.err = SLOT_E_CAPACITY_BELOW_ALLOCATED;
        } else {
            U_SET(m, e->cap, q.capacity);
            uint32_t nh0 = m->nh;
            m_serve(m, ev); /* a capacity increase hands out to those waiting, after the spread */
            offered = m->nh > nh0;
        }
        m->n.capacity++;
        m->n.below += want.err != SLOT_E_OK;
    }
    touch(m, ev);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, want.err, slot_op_name(op));
    if (want.err == SLOT_E_OK) {
        ASSERT_EQ(r.view.shards, e->shards);
        ASSERT_EQ(r.view.capacity, e->cap);
        ASSERT_EQ(r.view.status, e->status);
        if (op != SLOT_OP_SET_STATUS && !offered) /* offers take units after the spread */
            expect_even(m, ev);
    }
    slot_res_clear(&r);
}

/* extend of a random hold, rightly named or not. */
static void op_extend(model *m)
{
    mhold *h = pick_hold(m);
    if (!h)
        return;
    uint32_t user = h->user;
    char id[SLOT_HOLD_ID_BYTES + 1];
    bool wrong = chance(m, 60);
    if (wrong)
        wrong_hold(m, h, SLOT_OP_EXTEND, id, &user);
    else
        hold_id(id, h);
    slot_req q = slot_test_req(SLOT_OP_EXTEND, m->ev[h->ev].name);
    slot_test_set_name(q.hold, &q.hold_len, sizeof q.hold, id);
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[user]);
    q.by_ms = SLOT_EXTEND_BY_MS_MIN + below(m, 3000);
    mres want = {.err = SLOT_E_UNKNOWN_HOLD};
    if (!wrong)
        want = m_extend(m, h, q.by_ms);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, want.err, "extend");
    if (want.err == SLOT_E_OK) {
        ASSERT_EQ(r.hold_status, SLOT_HOLD_HELD);
        ASSERT_U64_EQ(r.expires_at_ms, h->exp);
        ASSERT_EQ(r.extensions, h->ext);
    } else if (want.err == SLOT_E_HOLD_NOT_ACTIVE) {
        ASSERT_EQ(r.hold_status, want.st);
    }
    m->n.extended += want.err == SLOT_E_OK;
    m->n.extend_limit += want.err == SLOT_E_EXTEND_LIMIT;
    m->n.unknown_hold += wrong;
    slot_res_clear(&r);
}

/* set_sale_window: mostly none, now and then a window around now. */
static void op_window(model *m)
{
    uint32_t ev = pick_event(m);
    mevent *e = &m->ev[ev];
    slot_req q = slot_test_req(SLOT_OP_SET_SALE_WINDOW, e->name);
    if (chance(m, 400)) {
        q.opens_at_ms = chance(m, 500) ? m->now - 100 + below(m, 200) : 0;
        q.closes_at_ms = chance(m, 700) ? m->now + below(m, 3000) : 0;
        if (q.opens_at_ms && q.closes_at_ms && q.closes_at_ms <= q.opens_at_ms)
            q.closes_at_ms = q.opens_at_ms + 1;
    }
    U_SET(m, e->opens, q.opens_at_ms);
    U_SET(m, e->closes, q.closes_at_ms);
    touch(m, ev);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, SLOT_E_OK, "set_sale_window");
    ASSERT_U64_EQ(r.view.opens_at_ms, e->opens);
    ASSERT_U64_EQ(r.view.closes_at_ms, e->closes);
    m->n.windows++;
    slot_res_clear(&r);
}

/* Any op on an event that does not exist: unknown_event, before anything else. */
static void op_unknown_event(model *m)
{
    static const slot_op ops[] = {SLOT_OP_HOLD,  SLOT_OP_CONFIRM, SLOT_OP_RELEASE,      SLOT_OP_GET_HOLD,
                                  SLOT_OP_EVENT, SLOT_OP_RESHARD, SLOT_OP_SET_CAPACITY, SLOT_OP_SHARDS,
                                  SLOT_OP_EXTEND, SLOT_OP_SET_SALE_WINDOW, SLOT_OP_WAITLIST_JOIN,
                                  SLOT_OP_WAITLIST_LEAVE, SLOT_OP_WAITLIST};
    slot_req q = slot_test_req(ops[below(m, sizeof ops / sizeof ops[0])], "e99999x");
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[0]);
    slot_test_set_name(q.request, &q.request_len, sizeof q.request, "r0");
    slot_test_set_name(q.hold, &q.hold_len, sizeof q.hold, "00000000000000010000000000000001");
    q.qty = 1;
    q.shards = 1;
    q.by_ms = SLOT_EXTEND_BY_MS_MIN;
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, SLOT_E_UNKNOWN_EVENT, slot_op_name(q.op));
    m->n.unknown_event++;
    slot_res_clear(&r);
}

/* ---- every stored hold against the model (after a reopen, and at the end) */

typedef struct hold_cmp {
    const model *m;
    const uint32_t *ix;            /* the model's holds of the event, in sequence order */
    uint32_t n, at;
} hold_cmp;

static int cmp_hold(void *p, const slot_hold_rec *rec)
{
    hold_cmp *c = p;
    if (c->at >= c->n)
        T_FAIL_("hold seq %llu is in the store, not in the model", (unsigned long long)rec->seq);
    const mhold *h = &c->m->h[c->ix[c->at++]];
    char k[16];
    key_name(k, h->key);
    ASSERT_EQ(rec->seq, h->seq);
    ASSERT_EQ(rec->tag, h->tag);
    if (rec->status != h->st)
        T_FAIL_("hold seq %llu: stored %s, model %s", (unsigned long long)h->seq, slot_hold_status_name(rec->status),
                slot_hold_status_name((slot_hold_status)h->st));
    ASSERT_EQ(rec->qty, h->qty);
    ASSERT_EQ(rec->created_at_ms, h->created);
    ASSERT_EQ(rec->expires_at_ms, h->exp);
    ASSERT_STR_EQ(rec->user, users[h->user]);
    ASSERT_STR_EQ(rec->request, k);
    ASSERT_EQ(rec->returned, h->returned);
    ASSERT_EQ(rec->extensions, h->ext);
    ASSERT_EQ(rec->replaced_by_seq, h->replaced_by ? c->m->h[h->replaced_by - 1].seq : 0);
    ASSERT_EQ(rec->replaces_seq, h->replaces ? c->m->h[h->replaces - 1].seq : 0);
    ASSERT_EQ(rec->kind, h->cart ? SLOT_HOLD_KIND_CART : h->wl ? SLOT_HOLD_KIND_WAITLIST : SLOT_HOLD_KIND_PLAIN);
    if (h->wl)
        ASSERT_EQ(rec->origin, h->went ? c->m->w[h->went - 1].join : 0);
    return 0;
}

/* The stored waiting list against the model's, in join order. */
typedef struct wait_cmp {
    const model *m;
    uint32_t at;                   /* the model's next entry to look at (index + 1) */
    uint64_t seen;
} wait_cmp;

static int cmp_waiting(void *p, const slot_wait_rec *rec)
{
    wait_cmp *c = p;
    while (c->at && c->m->w[c->at - 1].state != SLOT_WAIT_WAITING)
        c->at = c->m->w[c->at - 1].next;
    if (!c->at)
        T_FAIL_("waiting entry join %llu is in the store, not in the model", (unsigned long long)rec->join);
    const mwait *w = &c->m->w[c->at - 1];
    char k[16];
    key_name(k, w->key);
    ASSERT_U64_EQ(rec->join, w->join);
    ASSERT_EQ(rec->state, SLOT_WAIT_WAITING);
    ASSERT_EQ(rec->qty, w->qty);
    ASSERT_U64_EQ(rec->joined_at_ms, w->joined);
    ASSERT_STR_EQ(rec->user, users[w->user]);
    ASSERT_STR_EQ(rec->request, k);
    c->at = w->next;
    c->seen++;
    return 0;
}

/* The event's waitlist: the waiting entries in order, and every key's entry (state, join
 * seq, qty, the offered hold). */
static void expect_waitlist(model *m, MDB_txn *ro, const mevent *e)
{
    wait_cmp c = {m, e->whead, 0};
    ASSERT_EQ(slot_store_wait_scan(m->st, ro, e->name, strlen(e->name), 0, cmp_waiting, &c), 0);
    ASSERT_U64_EQ(c.seen, e->waiting);
    for (uint32_t i = e->wfirst; i; i = m->w[i - 1].next) {
        const mwait *w = &m->w[i - 1];
        char k[16];
        key_name(k, w->key);
        slot_wait_rec rec;
        ASSERT_EQ(slot_store_wait_key_get(m->st, ro, e->name, strlen(e->name), users[w->user], strlen(users[w->user]), k,
                                          strlen(k), &rec),
                  0);
        if (rec.state != w->state)
            T_FAIL_("entry join %llu: stored %s, model %s", (unsigned long long)w->join, slot_wait_state_name(rec.state),
                    slot_wait_state_name((slot_wait_state)w->state));
        ASSERT_U64_EQ(rec.join, w->join);
        ASSERT_EQ(rec.qty, w->qty);
        if (w->state == SLOT_WAIT_OFFERED) {
            ASSERT_U64_EQ(rec.hold_seq, m->h[w->hold - 1].seq);
            ASSERT_U64_EQ(rec.hold_tag, m->h[w->hold - 1].tag);
        }
    }
}

/* Holds grouped by event (a counting sort keeps each event's holds in
 * creation order, which is sequence order), then one scan per event. Also
 * the users records of events with max_per_user. O(holds + events). */
static void expect_store(model *m, MDB_txn *ro)
{
    uint32_t *start = calloc(m->nev + 1u, sizeof(uint32_t));
    uint32_t *ix = malloc((m->nh + 1u) * sizeof(uint32_t));
    ASSERT(start != NULL && ix != NULL);
    for (uint32_t i = 0; i < m->nh; i++)
        start[m->h[i].ev + 1]++;
    for (uint32_t ev = 0; ev < m->nev; ev++)
        start[ev + 1] += start[ev];
    uint32_t *fill = calloc(m->nev + 1u, sizeof(uint32_t));
    ASSERT(fill != NULL);
    for (uint32_t i = 0; i < m->nh; i++)
        ix[start[m->h[i].ev] + fill[m->h[i].ev]++] = i;
    for (uint32_t ev = 0; ev < m->nev; ev++) {
        const mevent *e = &m->ev[ev];
        hold_cmp c = {m, ix + start[ev], start[ev + 1] - start[ev], 0};
        ASSERT_EQ(slot_store_holds_scan(m->st, ro, e->name, strlen(e->name), cmp_hold, &c), 0);
        ASSERT_EQ(c.at, c.n);
        for (uint32_t u = 0; e->mpu > 0 && u < M_USERS; u++) {
            uint64_t q = 0;
            ASSERT_EQ(slot_store_user_get(m->st, ro, e->name, strlen(e->name), users[u], strlen(users[u]), &q), 0);
            ASSERT_EQ(q, e->user_qty[u]);
        }
        expect_waitlist(m, ro, e);
        expect_event_on(m, ro, ev);
    }
    free(fill);
    free(ix);
    free(start);
}

/* Closes the store and opens it again with a new allocator: everything
 * committed is there, and replays keep working (the allocator's idempotency
 * index is rebuilt from the store: at once, as slotd does at start, or by
 * the first hold). */
static void reopen(model *m)
{
    store_close(m);
    store_open(m);
    MDB_txn *ro;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(m->st), NULL, MDB_RDONLY, &ro), 0);
    if (chance(m, 500))
        ASSERT_EQ(slot_alloc_load(&m->a, ro), 0);
    expect_clean(m, ro, NULL);
    expect_store(m, ro);
    mdb_txn_abort(ro);
    m->n.reopens++;
}

/* ---- batches */

/* Ends the batch: commit (or, now and then, abort and roll the model back).
 * A full map aborts the batch too, and grows the map. */
static void batch_end(model *m, bool abort_it)
{
    if (!m->txn)
        return;
    if (!m->map_full && !abort_it) {
        int rc = mdb_txn_commit(m->txn);
        m->txn = NULL;
        if (rc == 0) {
            u_forget(m);
            m->n.commits++;
            return;
        }
        ASSERT_EQ(rc, MDB_MAP_FULL); /* a failed commit has freed the transaction */
        m->map_full = true;
    } else {
        mdb_txn_abort(m->txn);
        m->txn = NULL;
    }
    u_rollback(m);
    m->ntouched = 0;
    m->touched_all = false;
    if (m->map_full) {
        ASSERT_EQ(slot_store_grow(m->st), 0);
        m->map_full = false;
        m->n.map_full++;
    } else {
        m->n.aborts++;
    }
}

static void wait_state_on(model *m, MDB_txn *on);

/* The committed state on a read transaction: the live events' views,
 * get_hold of a recent hold and the waitlist op of a recent entry (the server
 * answers reads this way). */
static void expect_committed(model *m)
{
    MDB_txn *ro;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(m->st), NULL, MDB_RDONLY, &ro), 0);
    for (uint32_t i = 0; i < M_LIVE; i++)
        expect_event_on(m, ro, m->live[i]);
    mhold *h = pick_hold(m);
    if (h) {
        char id[SLOT_HOLD_ID_BYTES + 1];
        hold_id(id, h);
        slot_req q = slot_test_req(SLOT_OP_GET_HOLD, m->ev[h->ev].name);
        slot_test_set_name(q.hold, &q.hold_len, sizeof q.hold, id);
        slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[h->user]);
        mres want = m_on_hold(m, SLOT_OP_GET_HOLD, h);
        slot_res r = {0};
        ASSERT(run_on(m, ro, &q, &r));
        expect_res(&r, &want, "get_hold (read txn)");
        slot_res_clear(&r);
    }
    if (m->nw > 0)
        wait_state_on(m, ro);
    expect_clean(m, ro, m->ev[m->live[below(m, M_LIVE)]].name);
    mdb_txn_abort(ro);
}

/* ---- hold_many */

/* The model's fingerprint of a cart: same items in any order, same print. */
static uint64_t m_print(int n, const uint32_t *ev, const uint32_t *qty)
{
    uint64_t sum = (uint64_t)n;
    for (int i = 0; i < n; i++) {
        uint64_t z = ((uint64_t)ev[i] << 20 | qty[i]) * UINT64_C(0x9e3779b97f4a7c15);
        sum += z ^ (z >> 29);
    }
    return sum;
}

/* hold_many, in the order of decisions of docs/protocol.md ("Clarifications
 * of v1.1"): replay or idempotency_conflict -> per item max_per_request,
 * not_on_sale, user_limit -> the first item sold out -> all held. *item is
 * the item the answer names (-1: none); hs[] the cart's holds. */
static mres m_cart(model *m, uint32_t user, uint32_t key, int n, const uint32_t *ev, const uint32_t *qty, int *item,
                   mhold **hs)
{
    mres r = {.err = SLOT_E_OK};
    uint64_t print = m_print(n, ev, qty);
    int found = 0;
    *item = -1;
    for (int i = 0; i < n; i++) {
        hs[i] = kt_get(m, ev[i], user, key);
        if ((hs[i] && (!hs[i]->cart || hs[i]->print != print)) ||
            (!hs[i] && m->ev[ev[i]].wmax > 0 && wt_get(m, ev[i], user, key))) {
            r.err = SLOT_E_IDEMPOTENCY_CONFLICT;
            *item = i;
            return r;
        }
        found += hs[i] != NULL;
    }
    if (found == n) {
        for (int i = 0; i < n; i++)
            m_settle(m, hs[i]);
        r.replay = true;
        return r;
    }
    if (found > 0) {
        r.err = SLOT_E_IDEMPOTENCY_CONFLICT;
        return r;
    }
    int sold = -1;
    for (int i = 0; i < n; i++) {
        mevent *e = &m->ev[ev[i]];
        mres t = {.err = SLOT_E_OK};
        if (qty[i] > e->mpr)
            t.err = SLOT_E_INVALID_ARGUMENT;
        else if (!m_admit_(m, e, ev[i], user, qty[i], &t) && t.err == SLOT_E_OK && sold < 0) {
            sold = i;
            r.available = t.available;
        }
        if (t.err != SLOT_E_OK) {
            r.err = t.err;
            *item = i;
            return r;
        }
    }
    if (sold >= 0) {
        r.sold_out = true;
        *item = sold;
        return r;
    }
    for (int i = 0; i < n; i++) {
        hs[i] = m_new_hold(m, ev[i], user, key, qty[i]);
        hs[i]->cart = true; /* above the old nh: a rollback forgets it */
        hs[i]->print = print;
    }
    return r;
}

/* A cart of 1..M_CART_ITEMS distinct events: mostly a fresh key, now and then
 * the user's last cart again in reverse order (a replay), a recent cart key
 * with other items, or a plain hold's key (conflicts). */
static void op_cart(model *m)
{
    uint32_t user = below(m, M_USERS);
    mcart c = {.n = 1 + (int)below(m, M_CART_ITEMS)};
    uint32_t dice = below(m, 100);
    mcart *last = &m->last_cart[user];
    if (dice < 25 && last->n > 0) {
        c.n = last->n;
        c.key = last->key;
        for (int i = 0; i < c.n; i++) {
            c.ev[i] = last->ev[c.n - 1 - i];
            c.qty[i] = last->qty[c.n - 1 - i];
        }
    } else {
        int got = 0;
        for (int tries = 0; got < c.n && tries < 16; tries++) {
            uint32_t ev = pick_event(m);
            bool dup = false;
            for (int j = 0; j < got; j++)
                dup |= c.ev[j] == ev;
            if (dup)
                continue;
            c.ev[got] = ev;
            c.qty[got] = 1 + below(m, chance(m, 40) ? m->ev[ev].mpr + 3 : 3);
            got++;
        }
        c.n = got;
        if (dice < 80 || m->cart_key[user] == 0)
            c.key = M_CART_KEY0 + m->cart_key[user]++;
        else if (dice < 92)
            c.key = M_CART_KEY0 + m->cart_key[user] - 1 - below(m, m->cart_key[user] < 4 ? m->cart_key[user] : 4);
        else
            c.key = pick_key(m, &m->ev[c.ev[0]], user);
    }
    char k[16];
    key_name(k, c.key);
    slot_req q = slot_test_req(SLOT_OP_HOLD_MANY, NULL);
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[user]);
    slot_test_set_name(q.request, &q.request_len, sizeof q.request, k);
    for (int i = 0; i < c.n; i++) {
        slot_test_set_name(q.items[i].event, &q.items[i].event_len, sizeof q.items[i].event, m->ev[c.ev[i]].name);
        q.items[i].qty = (uint16_t)c.qty[i];
    }
    q.nitems = (uint8_t)c.n;
    int item;
    mhold *hs[M_CART_ITEMS];
    mres want = m_cart(m, user, c.key, c.n, c.ev, c.qty, &item, hs);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, want.err, "hold_many");
    ASSERT_STR_EQ(r.item_event, item >= 0 ? m->ev[c.ev[item]].name : "");
    ASSERT_EQ(r.sold_out, want.sold_out);
    if (want.sold_out)
        ASSERT_EQ(r.available, want.available);
    if (want.err == SLOT_E_OK && !want.sold_out) {
        ASSERT_EQ(r.replay, want.replay);
        ASSERT_EQ(r.ncart, (uint32_t)c.n);
        for (int i = 0; i < c.n; i++) {
            mhold *h = &m->h[hold_index(m, hs[i])];
            if (!want.replay)
                ASSERT_EQ(sscanf(r.cart[i].hold + 16, "%16" SCNx64, &h->tag), 1);
            char id[SLOT_HOLD_ID_BYTES + 1];
            hold_id(id, h);
            ASSERT_STR_EQ(r.cart[i].hold, id);
            ASSERT_STR_EQ(r.cart[i].event, m->ev[c.ev[i]].name);
            ASSERT_EQ(r.cart[i].status, (slot_hold_status)h->st);
            ASSERT_EQ(r.cart[i].qty, h->qty);
        }
        if (!want.replay) { /* undone with the batch: an aborted batch may also undo its items' events */
            u_save(m, last, sizeof *last);
            *last = c;
        }
    }
    m->n.carts += want.err == SLOT_E_OK && !want.sold_out && !want.replay;
    m->n.cart_replay += want.replay;
    m->n.cart_sold_out += want.sold_out;
    m->n.cart_refused += want.err != SLOT_E_OK;
    slot_res_clear(&r);
}

/* ---- waitlists */

/* The answer to waitlist_join or waitlist against the model's. */
static void expect_wait_res(const slot_res *r, const mres *want, const char *what)
{
    expect_err(r, want->err, what);
    if (want->err != SLOT_E_OK)
        return;
    ASSERT_EQ(r->sold_out, want->sold_out);
    ASSERT_EQ(r->waitlist_full, want->full);
    if (want->sold_out)
        ASSERT_EQ(r->available, want->available);
    ASSERT_EQ(r->replay, want->replay);
    if (r->wait_state != want->ws)
        T_FAIL_("%s: entry %s, model says %s", what, slot_wait_state_name(r->wait_state), slot_wait_state_name(want->ws));
    if (want->ws == SLOT_WAIT_WAITING) {
        ASSERT_U64_EQ(r->position, want->pos);
        ASSERT_EQ(r->qty, want->wqty);
    }
    if (want->h)
        expect_hold_fields(r, want, what);
}

/* A key for the waitlist ops that name an entry: mostly a recent entry's, else any key of
 * an event (mostly none). */
static void pick_entry(model *m, uint32_t *ev, uint32_t *user, uint32_t *key)
{
    const mevent *l = &m->ev[m->live[below(m, M_LIVE)]];
    if (l->waiting > 0 && chance(m, 500)) { /* someone waiting: the k-th of them */
        uint64_t k = below(m, (uint32_t)l->waiting);
        for (uint32_t i = l->whead; i; i = m->w[i - 1].next) {
            const mwait *w = &m->w[i - 1];
            if (w->state == SLOT_WAIT_WAITING && k-- == 0) {
                *ev = w->ev;
                *user = w->user;
                *key = w->key;
                return;
            }
        }
    }
    if (m->nw > 0 && chance(m, 850)) {
        uint32_t span = m->nw < M_RECENT ? m->nw : M_RECENT;
        const mwait *w = &m->w[m->nw - 1 - below(m, span)];
        *ev = w->ev;
        *user = w->user;
        *key = w->key;
        return;
    }
    *ev = pick_event(m);
    *user = below(m, M_USERS);
    *key = pick_key(m, &m->ev[*ev], *user);
}

static slot_req req_wait(model *m, slot_op op, uint32_t ev, uint32_t user, uint32_t key)
{
    char k[16];
    key_name(k, key);
    slot_req q = slot_test_req(op, m->ev[ev].name);
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[user]);
    slot_test_set_name(q.request, &q.request_len, sizeof q.request, k);
    return q;
}

/* waitlist_join with a fresh key (mostly), a key used before (a replay, a conflict with a
 * hold's or a cart's key, another qty), now and then above max_per_request. */
static void op_join(model *m)
{
    uint32_t ev = pick_event(m), user = below(m, M_USERS);
    if (chance(m, 700)) { /* mostly the live event with a waitlist nearest to sold out: it sells out, then people wait */
        uint64_t least = UINT64_MAX;
        for (uint32_t i = 0; i < M_LIVE; i++) {
            const mevent *l = &m->ev[m->live[i]];
            if (l->wmax > 0 && l->status == SLOT_EVENT_ON_SALE && l->cap - l->held - l->confirmed < least) {
                least = l->cap - l->held - l->confirmed;
                ev = m->live[i];
            }
        }
    }
    mevent *e = &m->ev[ev];
    uint32_t key = pick_key(m, e, user);
    if (chance(m, 200) && m->nw > 0) { /* a recent entry's key again */
        const mwait *w = &m->w[m->nw - 1 - below(m, m->nw < M_RECENT ? m->nw : M_RECENT)];
        ev = w->ev;
        user = w->user;
        key = w->key;
        e = &m->ev[ev];
    }
    const mhold *oh = kt_get(m, ev, user, key);
    const mwait *ow = wt_get(m, ev, user, key);
    uint32_t qty = 1 + below(m, e->mpr < 4 ? e->mpr : 4);
    if (chance(m, 50))
        qty = 1 + below(m, e->mpr + 3);
    if ((oh || ow) && chance(m, 850))
        qty = oh ? (uint32_t)oh->qty + oh->returned : ow->qty;
    slot_req q = req_wait(m, SLOT_OP_WAITLIST_JOIN, ev, user, key);
    q.qty = qty;
    mres want = m_join(m, ev, user, key, qty);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    if (want.err == SLOT_E_OK && want.h && !want.replay) { /* held at once: learn the new hold's tag */
        ASSERT_EQ(strlen(r.hold), SLOT_HOLD_ID_BYTES);
        ASSERT_EQ(sscanf(r.hold + 16, "%16" SCNx64, &m->h[hold_index(m, want.h)].tag), 1);
    }
    expect_wait_res(&r, &want, "waitlist_join");
    m->n.joins++;
    m->n.join_waiting += want.ws == SLOT_WAIT_WAITING && !want.replay;
    m->n.join_held += want.h && !want.replay;
    m->n.join_full += want.full;
    m->n.join_replay += want.replay;
    m->n.join_refused += want.err != SLOT_E_OK;
    slot_res_clear(&r);
}

static void op_leave(model *m)
{
    uint32_t ev, user, key;
    pick_entry(m, &ev, &user, &key);
    slot_req q = req_wait(m, SLOT_OP_WAITLIST_LEAVE, ev, user, key);
    bool want = m_leave(m, ev, user, key);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, SLOT_E_OK, "waitlist_leave");
    ASSERT_EQ(r.done, want);
    m->n.leaves += want;
    m->n.leave_none += !want;
    slot_res_clear(&r);
}

/* The waitlist op on the batch or on a read transaction (on). */
static void wait_state_on(model *m, MDB_txn *on)
{
    uint32_t ev, user, key;
    pick_entry(m, &ev, &user, &key);
    slot_req q = req_wait(m, SLOT_OP_WAITLIST, ev, user, key);
    mres want = m_wstate(m, ev, user, key);
    slot_res r = {0};
    if (!run_on(m, on, &q, &r))
        return;
    expect_wait_res(&r, &want, "waitlist");
    m->n.wstates++;
    slot_res_clear(&r);
}

/* Offers are made inside other ops (a release, an expiry, ...), whose answers do not name
 * them: their random tags are read from the store, on the batch. */
static void learn_offer_tags(model *m, uint32_t from)
{
    for (uint32_t i = from; i < m->nh && !m->map_full; i++) {
        mhold *h = &m->h[i];
        if (!h->tag_unknown)
            continue;
        const mevent *e = &m->ev[h->ev];
        slot_hold_rec rec;
        ASSERT_EQ(slot_store_hold_get(m->st, txn(m), e->name, strlen(e->name), h->seq, &rec), 0);
        ASSERT_EQ(rec.kind, SLOT_HOLD_KIND_WAITLIST);
        ASSERT_EQ(rec.origin, m->w[h->went - 1].join);
        h->tag = rec.tag;
        h->tag_unknown = false;
    }
}

/* One op, picked by weight (per mille). */
static void one_op(model *m)
{
    uint32_t dice = below(m, 1000);
    if (dice < 410)
        op_hold(m);
    else if (dice < 550)
        op_on_hold(m, SLOT_OP_CONFIRM);
    else if (dice < 660)
        op_on_hold(m, SLOT_OP_RELEASE);
    else if (dice < 700)
        op_on_hold(m, SLOT_OP_CANCEL);
    else if (dice < 770)
        op_on_hold(m, SLOT_OP_GET_HOLD);
    else if (dice < 800)
        op_expire(m);
    else if (dice < 810)
        op_edit(m, SLOT_OP_RESHARD);
    else if (dice < 825)
        op_edit(m, SLOT_OP_SET_CAPACITY);
    else if (dice < 835)
        op_edit(m, SLOT_OP_SET_STATUS);
    else if (dice < 840)
        op_create_again(m);
    else if (dice < 845)
        op_unknown_event(m);
    else if (dice < 870)
        op_extend(m);
    else if (dice < 875)
        op_window(m);
    else if (dice < 920)
        op_cart(m);
    else if (dice < 975)
        op_join(m);
    else if (dice < 985)
        op_leave(m);
    else if (dice < 995)
        wait_state_on(m, NULL);
    else
        op_hold(m);
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *s = getenv(name);
    return s && *s ? strtoull(s, NULL, 0) : dflt;
}

static void model_init(model *m, uint64_t seed, uint64_t ops)
{
    memset(m, 0, sizeof *m);
    m->seed = m->rng = seed;
    m->ops = ops;
    m->cap_h = (uint32_t)ops * M_CART_ITEMS + 16; /* a cart makes up to M_CART_ITEMS holds */
    m->h = malloc(m->cap_h * sizeof(mhold));
    m_holds = m->h;
    m->cap_ev = (uint32_t)(ops / M_NEW_EVENT_EVERY) * 2 + M_LIVE + 16;
    m->ev = malloc(m->cap_ev * sizeof(mevent));
    uint64_t slots = 1024;
    while (slots < 2 * (uint64_t)m->cap_h)
        slots *= 2;
    m->kt_mask = slots - 1;
    m->kt_key = calloc(slots, sizeof(uint64_t));
    m->kt_val = calloc(slots, sizeof(uint32_t));
    m->cap_w = (uint32_t)ops + 16; /* a join makes one entry at most */
    m->w = malloc(m->cap_w * sizeof(mwait));
    m->wt_key = calloc(slots, sizeof(uint64_t));
    m->wt_val = calloc(slots, sizeof(uint32_t));
    ASSERT(m->h && m->ev && m->kt_key && m->kt_val && m->w && m->wt_key && m->wt_val);
    m->dir = slot_test_tmpdir();
    m->now = T0;
    store_open(m);
}

static void model_free(model *m)
{
    store_close(m);
    slot_test_rmdir(m->dir);
    free(m->dir);
    free(m->h);
    free(m->ev);
    free(m->kt_key);
    free(m->kt_val);
    free(m->w);
    free(m->wt_key);
    free(m->wt_val);
    free(m->log);
    free(m->arena);
}

/* The virtual clock: small steps, now and then a jump past many holds'
 * expiry, and now and then to the very ms a hold expires (or one before):
 * expiry is at now >= expires_at, an edge worth landing on. */
static void clock_step(model *m)
{
    m->now += below(m, 20);
    if (chance(m, 2))
        m->now += 500 + below(m, 4000);
    const mhold *h = pick_hold(m);
    if (h && chance(m, 20) && h->exp > m->now)
        m->now = h->exp - below(m, 2);
}

/* Every path was taken: a model test that stopped reaching one would pass
 * without testing it. */
static void expect_coverage(const stats *n, uint64_t ops)
{
    if (ops < 100000)
        return;
    ASSERT_GT(n->held, 1000);
    ASSERT_GT(n->sold_out, 100);
    ASSERT_GT(n->replay, 100);
    ASSERT_GT(n->conflict, 100);
    ASSERT_GT(n->user_limit, 100);
    ASSERT_GT(n->not_on_sale, 100);
    ASSERT_GT(n->too_big, 100);
    ASSERT_GT(n->unknown_hold, 100);
    ASSERT_GT(n->confirmed, 1000);
    ASSERT_GT(n->released, 1000);
    ASSERT_GT(n->cancelled, 100);
    ASSERT_GT(n->not_active, 100);
    ASSERT_GT(n->expired, 1000);
    ASSERT_GT(n->aborts, 10);
    ASSERT_GT(n->reopens, 1);
    ASSERT_GT(n->below, 10);
    ASSERT_GT(n->extended, 100);
    ASSERT_GT(n->extend_limit, 100);
    ASSERT_GT(n->partial, 100);
    ASSERT_GT(n->reacquired, 100);
    ASSERT_GT(n->reacquire_replay, 10);
    ASSERT_GT(n->reacquire_sold_out, 10);
    ASSERT_GT(n->windows, 100);
    ASSERT_GT(n->join_waiting, 1000);
    ASSERT_GT(n->join_held, 100);
    ASSERT_GT(n->join_full, 100);
    ASSERT_GT(n->join_replay, 100);
    ASSERT_GT(n->join_refused, 100);
    ASSERT_GT(n->leaves, 100);
    ASSERT_GT(n->leave_none, 100);
    ASSERT_GT(n->offers, 1000);
    ASSERT_GT(n->blocked, 10);
    ASSERT_GT(n->wstates, 1000);
}

static void stats_print(const stats *n, uint64_t seed, uint64_t ops)
{
    printf("model: seed %llu, %llu ops, %llu commits, %llu aborts, %llu map growths, %llu reopens, %llu checks, "
           "%llu events\n"
           "  holds %llu held, %llu sold_out, %llu replays, %llu conflicts, %llu user_limit, %llu not_on_sale, "
           "%llu over max_per_request\n"
           "  %llu confirmed, %llu released, %llu cancelled, %llu expired, %llu unknown_hold, %llu hold_not_active, "
           "%llu unknown_event\n"
           "  %llu reshards, %llu set_capacity (%llu below allocated), %llu event_exists\n"
           "  v1.1: %llu extended, %llu extend_limit, %llu partial confirms, %llu reacquired (%llu repeated, "
           "%llu sold_out), %llu set_sale_window\n",
           (unsigned long long)seed, (unsigned long long)ops, (unsigned long long)n->commits,
           (unsigned long long)n->aborts, (unsigned long long)n->map_full, (unsigned long long)n->reopens,
           (unsigned long long)n->checks, (unsigned long long)n->events, (unsigned long long)n->held,
           (unsigned long long)n->sold_out, (unsigned long long)n->replay, (unsigned long long)n->conflict,
           (unsigned long long)n->user_limit, (unsigned long long)n->not_on_sale, (unsigned long long)n->too_big,
           (unsigned long long)n->confirmed, (unsigned long long)n->released, (unsigned long long)n->cancelled,
           (unsigned long long)n->expired, (unsigned long long)n->unknown_hold, (unsigned long long)n->not_active,
           (unsigned long long)n->unknown_event, (unsigned long long)n->reshards, (unsigned long long)n->capacity,
           (unsigned long long)n->below, (unsigned long long)n->exists, (unsigned long long)n->extended,
           (unsigned long long)n->extend_limit, (unsigned long long)n->partial, (unsigned long long)n->reacquired,
           (unsigned long long)n->reacquire_replay, (unsigned long long)n->reacquire_sold_out,
           (unsigned long long)n->windows);
    printf("  carts: %llu held, %llu replays, %llu sold_out, %llu refused (errors and conflicts)\n",
           (unsigned long long)n->carts, (unsigned long long)n->cart_replay, (unsigned long long)n->cart_sold_out,
           (unsigned long long)n->cart_refused);
    printf("  waitlists: %llu joins (%llu waiting, %llu held at once, %llu waitlist_full, %llu replays, %llu refused), "
           "%llu left (%llu left:false), %llu offers, %llu heads blocking someone who could be met, %llu states\n",
           (unsigned long long)n->joins, (unsigned long long)n->join_waiting, (unsigned long long)n->join_held,
           (unsigned long long)n->join_full, (unsigned long long)n->join_replay, (unsigned long long)n->join_refused,
           (unsigned long long)n->leaves, (unsigned long long)n->leave_none, (unsigned long long)n->offers,
           (unsigned long long)n->blocked, (unsigned long long)n->wstates);
    fflush(stdout);
}

/* Strict runs, after every batch: a full slot_check, and every stored
 * hold, users record and event view against the model, on a read txn. */
static void expect_all_committed(model *m)
{
    MDB_txn *ro;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(m->st), NULL, MDB_RDONLY, &ro), 0);
    expect_clean(m, ro, NULL);
    expect_store(m, ro);
    mdb_txn_abort(ro);
}

static void model_run(uint64_t seed, uint64_t ops, bool strict)
{
    g_seed = seed;
    g_strict = strict;
    signal(SIGABRT, on_abort);
    model *m = calloc(1, sizeof *m);
    ASSERT(m != NULL);
    model_init(m, seed, ops);
    m->strict = strict;
    m->small_sale = true;
    for (uint32_t i = 0; i < M_LIVE; i++)
        op_new_event(m, i);
    batch_end(m, false);
    uint32_t batch = 0, batch_len = 1 + below(m, M_BATCH_MAX);
    uint64_t next_reopen = 1 + below(m, 2 * M_REOPEN_EVERY), next_check = M_CHECK_EVERY;
    for (m->op = 0; m->op < ops; m->op++) {
        g_op = m->op;
        clock_step(m);
        uint32_t nh0 = m->nh;
        if (below(m, M_NEW_EVENT_EVERY) == 0)
            op_new_event(m, below(m, M_LIVE));
        else
            one_op(m);
        learn_offer_tags(m, nh0);
        if (!m->map_full) {
            if (m->strict)
                m->touched_all = true; /* every event, touched or not */
            expect_touched(m);
        }
        if (!m->map_full && ++batch < batch_len)
            continue;
        batch_end(m, chance(m, 20));
        expect_committed(m);
        if (m->strict)
            expect_all_committed(m);
        batch = 0;
        batch_len = 1 + below(m, M_BATCH_MAX);
        if (m->op >= next_reopen) {
            reopen(m);
            next_reopen = m->op + 1 + below(m, 2 * M_REOPEN_EVERY);
        } else if (m->op >= next_check) {
            next_check += M_CHECK_EVERY;
            MDB_txn *ro;
            ASSERT_EQ(mdb_txn_begin(slot_store_env(m->st), NULL, MDB_RDONLY, &ro), 0);
            expect_clean(m, ro, NULL);
            mdb_txn_abort(ro);
        }
    }
    batch_end(m, false);
    reopen(m);
    stats_print(&m->n, seed, ops);
    expect_coverage(&m->n, ops);
    model_free(m);
    free(m);
}

/* SLOT_MODEL_SEED repeats a run (the seed is printed at the start and on
 * failure); without it each run takes a new seed, so CI keeps exploring. */
TEST_IMPL(model_random_seed)
{
    uint64_t seed = env_u64("SLOT_MODEL_SEED", 0);
    if (seed == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    }
    uint64_t ops = env_u64("SLOT_MODEL_OPS", M_OPS_DEFAULT);
    printf("model: seed %llu (SLOT_MODEL_SEED=%llu to repeat), %llu ops\n", (unsigned long long)seed,
           (unsigned long long)seed, (unsigned long long)ops);
    fflush(stdout);
    model_run(seed, ops, false);
}

/* Fixed seeds, so every run repeats the same ops, each checked strictly;
 * SLOT_MODEL_STRICT_SEED runs one other seed, SLOT_MODEL_STRICT_OPS sets
 * the ops per seed. */
TEST_IMPL(model_fixed_seeds)
{
    static const uint64_t seeds[] = {1, 2, 3, 0x5eed};
    uint64_t ops = env_u64("SLOT_MODEL_STRICT_OPS", 2500);
    uint64_t one = env_u64("SLOT_MODEL_STRICT_SEED", 0);
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        uint64_t seed = one ? one : seeds[i];
        model_run(seed, ops, true);
        if (one)
            break;
    }
}


