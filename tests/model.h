/*
 * tests/model.h — the reference model of docs/protocol.md that test_model.c
 * holds the allocator to (see test_model.c for what it models and how the
 * runs check it): its bounds and types (this file), the model itself and its
 * transitions (model.c), the store under test and every comparison of it with
 * the model (model_store.c), and the random driver that makes one op, asks
 * the model and the store and compares the answers (model_ops.c). One model
 * per process, on one thread; every comparison fails the case (harness.h).
 */
#ifndef SLOT_TEST_MODEL_H
#define SLOT_TEST_MODEL_H

#include <lmdb.h>

#include "harness.h"
#include "slot/alloc.h"
#include "slot/check.h"
#include "slot/store.h"

#define T0 UINT64_C(1764500000000)      /* the virtual clock starts here, ms */
#define M_OPS_DEFAULT 600000            /* the random seed's ops: under 10 s with carts and waitlists */
#define M_USERS 12                      /* per event; few, so max_per_user bites */
#define M_LIVE 4                        /* events selling at once */
#define M_CAP_MAX 240                   /* capacity bound, so an event's held holds fit a fixed list */
#define M_NEW_EVENT_EVERY 2500          /* mean ops between replacing a live event by a new one */
#define M_REOPEN_EVERY 50000            /* mean ops between closing and opening the store */
#define M_CHECK_EVERY 100000            /* ops between full slot_check scans */
#define M_BATCH_MAX 64                  /* ops per write transaction: 1..this */
#define M_CART_ITEMS 3                  /* items of a cart the driver makes: 1..this */
#define M_CART_KEY0 (UINT32_C(1) << 23) /* carts' request keys start here, apart from plain holds' */
#define M_RECENT 50                     /* ops on holds mostly pick among the newest this many */
#define M_BLOCKS 2                      /* v1.2 allocations: blocks "b0", "b1" of an event */
#define M_WAIT_MAX 24                   /* an event's waitlist_max: 0 (none) or 1..this, so the list fills up */

_Static_assert(M_CAP_MAX <= UINT16_MAX, "held-list positions are 16-bit");

/* ---- the model */

typedef struct mhold {
    uint64_t seq, tag, created, exp;
    uint32_t ev, key; /* event index; request key "r<key>" */
    uint16_t user, qty;
    uint16_t pos;                   /* index in its event's held list while stored held */
    uint8_t st;                     /* stored status: a held hold may be due */
    uint16_t returned, ext;         /* v1.1: units a partial confirm gave back; extensions taken */
    uint32_t replaced_by, replaces; /* v1.1 reacquire links: hold index + 1, 0 = none */
    bool cart;                      /* an item of a hold_many; print: the cart's items */
    uint8_t blk;                    /* v1.2: from block index + 1; 0 = the free shards */
    bool wl;                        /* kind waitlist: a join held at once, or an offer (went) */
    bool tag_unknown;               /* an offer: made inside another op, its tag is read from the store */
    uint32_t went;                  /* an offer: its waitlist entry's index + 1 */
    uint64_t print;
} mhold;

/* A waitlist entry (docs/protocol.md, "Waitlist"): one per key that joined and waited. An
 * event's entries form a chain in join order (next: index + 1, 0 = the last). */
typedef struct mwait {
    uint64_t join, joined; /* join seq; joined_at ms */
    uint64_t order;        /* the family's join order (the root's fam_next when it joined) */
    uint32_t ev, key, next;
    uint32_t hold; /* offered: the hold's index + 1 */
    uint16_t user, qty;
    uint8_t state; /* slot_wait_state */
    uint8_t blk;   /* v1.2: the block it waits on, index + 1 (0: the free units) */
} mwait;

typedef struct mevent {
    char name[24]; /* "e%05u", or another event's name and ".<index>" */
    uint8_t status;
    uint32_t shards, ttl, mpr, mx; /* mx: max_extensions */
    uint64_t cap, mpu, held, confirmed, next_seq;
    uint64_t opens, closes, mh; /* the sale window (0 = none); max_hold_ms */
    uint64_t user_qty[M_USERS]; /* stored held + confirmed per user (what users[] keeps) */
    uint32_t next_key[M_USERS]; /* driver: the user's next fresh request key */
    uint32_t nheld;
    uint32_t held_ix[M_CAP_MAX]; /* holds stored held; a held hold has qty >= 1 */
    /* the waitlist: waiting entries and their units, entries offered so far, the next join seq;
     * the chain of entries (first, last) and the first that may still wait (index + 1) */
    uint32_t wmax;
    uint64_t waiting, waiting_qty, served, next_join;
    uint32_t wfirst, wlast, whead;
    /* v1.2 ticket types: the parent (index + 1, 0 = a root), children; a root's family join
     * order and entries waiting in its family. held and confirmed count the descendants'. */
    uint32_t parent, children;
    uint64_t fam_next, fam_waiting;
    /* v1.2 allocations: unused block units of the event and its descendants, and its blocks (a
     * closed one was deallocated while its holds were active: its row stays until they end) */
    uint64_t allocated;
    struct {
        bool exists, closed;
        uint64_t qty, remaining, held, confirmed, mpu;
        uint64_t user[M_USERS];
    } blk[M_BLOCKS];
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
    const mhold *h; /* the hold the answer is about, or NULL */
    slot_hold_status st;
    /* waitlist_join, waitlist: the entry's state, position and qty; waitlist_full */
    slot_wait_state ws;
    uint64_t pos;
    uint32_t wqty;
    bool full;
    const char *short_ev; /* sold_out over a chain: the nearest event that lacked; NULL = none */
    const char *sale_ev;  /* not_on_sale of an ancestor: its name; NULL = the event's own */
} mres;

typedef struct stats {
    uint64_t held, sold_out, replay, conflict, user_limit, not_on_sale, too_big, unknown_hold, unknown_event;
    uint64_t confirmed, released, cancelled, not_active, expired, aborts, map_full, reopens, checks, commits;
    uint64_t reshards, capacity, below, exists, events;
    uint64_t extended, extend_limit, partial, reacquired, reacquire_replay, reacquire_sold_out, windows;
    uint64_t carts, cart_replay, cart_sold_out, cart_refused;
    uint64_t joins, join_waiting, join_held, join_full, join_replay, join_refused, leaves, leave_none;
    uint64_t offers, blocked, wstates;
    uint64_t block_joins, block_offers, block_items;
        /* block_items: cart items from a block held */ /* v1.2: joins naming a block; offers made from a block */
    uint64_t children, short_parent, family_serves, family_carts;          /* v1.2 ticket types */
    uint64_t allocs, alloc_sold_out, deallocs, block_holds, block_refused; /* v1.2 allocations */
} stats;

/* The driver's memory of a user's last cart, to replay it in another order. */
typedef struct mcart {
    int n;
    uint32_t key, ev[M_CART_ITEMS], qty[M_CART_ITEMS];
    uint32_t blk[M_CART_ITEMS]; /* v1.2: an item's block, index + 1 (0: the free shards) */
} mcart;

typedef struct model {
    uint64_t seed, rng, op, ops;
    mevent *ev;
    uint32_t nev, cap_ev;
    uint32_t live[M_LIVE];
    mhold *h;
    uint32_t nh, cap_h;
    uint64_t *kt_key; /* (event, user, key) -> hold index + 1, open addressing */
    uint32_t *kt_val;
    uint64_t kt_mask;
    mwait *w; /* every waitlist entry; index above nw: forgotten by a rollback */
    uint32_t nw, cap_w;
    uint64_t *wt_key; /* (event, user, key) -> entry index + 1, as kt_ */
    uint32_t *wt_val;
    undo *log;
    size_t nlog, cap_log;
    unsigned char *arena;
    size_t arena_used, arena_cap;
    uint32_t touched[8]; /* events whose view the current op may have changed */
    uint32_t ntouched;
    bool touched_all;
    /* the store under test */
    char *dir;
    slot_store *st;
    slot_alloc a;
    bool alloc_open;
    MDB_txn *txn;
    uint64_t now;
    bool map_full; /* the running batch hit MDB_MAP_FULL */
    bool strict;   /* every event after every op; full scans after every batch */
    stats n;
    bool small_sale;            /* driver: the next new event is a small sale with a waitlist */
    uint32_t req_blk;           /* the hold m_hold decides is from block index + 1 (0: the free shards) */
    uint32_t cart_key[M_USERS]; /* driver: the user's next fresh cart key (above M_CART_KEY0) */
    mcart last_cart[M_USERS];
} model;

/* The users of every event (M_USERS names; one is not ASCII). */
extern const char *const users[M_USERS];
/* The model's holds, for the links expect_hold_fields names (model_init sets it). */
extern const mhold *m_holds;

/* U_SET(m, lvalue, value) — every change to the model: the old bytes of lvalue
 * go to m's undo log (u_save), so an aborted batch can put them back. */
#define U_SET(m, lvalue, value)                 \
    do {                                        \
        u_save((m), &(lvalue), sizeof(lvalue)); \
        (lvalue) = (value);                     \
    } while (0)

/* ---- model.c: the model, its undo log, its indexes and its transitions */

uint64_t rnd(model *m);
uint32_t below(model *m, uint32_t n);
bool chance(model *m, uint32_t per_mille);
void u_save(model *m, void *p, size_t len);
void u_rollback(model *m);
void u_forget(model *m);
uint64_t kt_pack(uint32_t ev, uint32_t user, uint32_t key);
uint64_t tab_slot(const uint64_t *keys, const uint32_t *vals, uint64_t mask, uint64_t k);
uint64_t kt_slot(const model *m, uint64_t k);
/* The hold a key names, or NULL. */
mhold *kt_get(model *m, uint32_t ev, uint32_t user, uint32_t key);
/* Inserts only: keys are never removed, so linear probing stays valid, and
 * undoing inserts in reverse order empties exactly the slots they filled. */
void kt_put(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t hold_ix);
/* The waitlist's key table (the same key space; the table is as large as kt's). */
mwait *wt_get(model *m, uint32_t ev, uint32_t user, uint32_t key);
void wt_put(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t entry_ix);
void touch(model *m, uint32_t ev);
/* The chain of ev: ev, then its parent, then its parent's parent (1..SLOT_FAMILY_DEPTH_MAX). */
uint32_t m_chain(const model *m, uint32_t ev, uint32_t out[SLOT_FAMILY_DEPTH_MAX]);
/* An event's free units; the least over its chain (its effective_available). */
uint64_t m_free(const mevent *e);
uint64_t m_chain_free(const model *m, uint32_t ev);
/* The user's quantity on every ancestor of ev += delta (a waitlist join's units). */
void m_chain_users(model *m, uint32_t ev, uint32_t user, int64_t delta);
/* Whether ev is in a family (has a parent or children). */
bool m_family(const model *m, uint32_t ev);
uint32_t hold_index(const model *m, const mhold *h);
bool due(const model *m, const mhold *h);
/* A hold leaves "held" or "confirmed" (the state machine of store.h): units
 * move between the event's counters and the free units, the user's quantity
 * drops when the units go back, and a hold that leaves "held" leaves the
 * event's held list (swap with the last). */
void m_finish(model *m, mhold *h, slot_hold_status to);
/* A partial confirm: the units above `keep` go back first, then the rest is confirmed. */
void m_confirm(model *m, mhold *h, uint32_t keep);
/* Every op that touches a due hold expires it first (docs/protocol.md, "confirm"). */
void m_settle(model *m, mhold *h);
/* Expires every due hold of one event (the sold-out and user-limit paths of
 * hold, set_capacity, reshard). Returns how many. */
uint64_t m_expire_event(model *m, uint32_t ev);
/* A new held hold; counted: the user's quantity already has its units (an offer: the join
 * counted them). */
mhold *m_new_hold_(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty, bool counted);
mhold *m_new_hold(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty);
/* The first entry still waiting (the head hint moves past the others), or NULL. */
mwait *m_wait_head(model *m, mevent *e);
/* A waiting entry's position: 1 + the entries waiting before it. */
uint64_t m_position(const model *m, const mevent *e, const mwait *w);
/* The hand-out: while the head's qty can be met, it is offered a held hold with the event's
 * TTL (its units were counted for the user at the join); a head that cannot be met blocks
 * those behind it. */
void m_serve(model *m, uint32_t ev);
/* A new waiting entry at the tail; the user's quantity counts its units. */
mwait *m_wait_append(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty);
/* hold, in docs/protocol.md's order of decisions. */
mres m_hold(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty);
/* allocate and deallocate (docs/protocol.md, "Allocations"); qty 0 on deallocate: all that remains. */
mres m_allocate(model *m, uint32_t ev, uint32_t b, uint64_t qty, bool has_mpu, uint64_t mpu);
mres m_deallocate(model *m, uint32_t ev, uint32_t b, uint64_t qty);
/* The checks a new hold and a reacquire share after max_per_request:
 * not_on_sale (status, then the window), user_limit, sold_out. */
bool m_admit(model *m, uint32_t ev, uint32_t user, uint32_t qty, mres *rp);
bool m_admit_(model *m, mevent *e, uint32_t ev, uint32_t user, uint32_t qty, mres *rp);
/* confirm, release, cancel and get_hold of a hold the request names rightly. */
mres m_on_hold(model *m, slot_op op, mhold *h);
/* A reacquire's new hold: confirmed at once, in no held list and not in the
 * key table (the request key stays the replaced hold's). */
mhold *m_new_confirmed(model *m, mhold *old, uint32_t qty);
/* confirm with its v1.1 fields (docs/protocol.md, "Partial confirm", "Reacquire"):
 * qty 0 means none given. */
mres m_confirm_req(model *m, mhold *h, uint32_t qty, bool reacquire);
/* extend (docs/protocol.md, "extend" and its decision order). */
mres m_extend(model *m, mhold *h, uint32_t by_ms);
/* waitlist_join, in docs/protocol.md's order of decisions: replay (of the key's hold, of a
 * waiting entry, of a key that left) or idempotency_conflict -> max_per_request -> not_on_sale
 * -> user_limit (the waiting units count) -> a hold when units are free and nobody waits ->
 * waiting at the tail -> sold_out with waitlist_full when the list is full (or the event has none). */
mres m_join(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty);
/* waitlist_leave: a waiting entry leaves (the user's quantity drops by its units) and the
 * hand-out runs, since the head may have left. Returns "left". */
bool m_leave(model *m, uint32_t ev, uint32_t user, uint32_t key);
/* The waitlist op (a read): the key's entry state; an offered hold shows its status, a due
 * one as expired without a write. */
mres m_wstate(model *m, uint32_t ev, uint32_t user, uint32_t key);
/* The expiry index's key order: expires_at, then the event name as the
 * store writes it (its length byte, then its bytes), then the sequence. */
int due_cmp(const void *x, const void *y);
/* The sweeper: at most `limit` due holds of all events, oldest first in the
 * expiry index's order (due_cmp). Returns how many. */
uint64_t m_expire_due(model *m, uint64_t limit);
/* The model's fingerprint of a cart: same items in any order, same print. */
uint64_t m_print(int n, const uint32_t *ev, const uint32_t *qty, const uint32_t *blk);
/* hold_many, in the order of decisions of docs/protocol.md ("Clarifications
 * of v1.1"): replay or idempotency_conflict -> per item max_per_request,
 * not_on_sale, user_limit -> the first item sold out -> all held. *item is
 * the item the answer names (-1: none); hs[] the cart's holds. */
mres m_cart(model *m, uint32_t user, uint32_t key, int n, const uint32_t *ev, const uint32_t *qty, const uint32_t *blk,
            int *item, mhold **hs);

/* ---- model_store.c: the store under test, and the model's view of it */

void store_open(model *m);
void store_close(model *m);
MDB_txn *txn(model *m);
/* Runs q on the batch (or on `on` when not NULL). Returns false when the map
 * is full: the batch must be aborted and nothing of res means anything. */
bool run_on(model *m, MDB_txn *on, const slot_req *q, slot_res *res);
void expect_err(const slot_res *r, slot_err want, const char *what);
/* The answer about a hold (hold, confirm, release, cancel, get_hold, and
 * hold_not_active) against the model's hold. */
void expect_hold_fields(const slot_res *r, const mres *want, const char *what);
void expect_res(const slot_res *r, const mres *want, const char *what);
/* The event view and the shards' free units against the model. */
void expect_event_on(model *m, MDB_txn *on, uint32_t ev);
/* After set_capacity and reshard: free units spread evenly (largest minus
 * smallest at most 1). */
void expect_even(model *m, uint32_t ev);
void expect_touched(model *m);
/* slot_check: no violations (of one event, or all when ev is NULL). */
void expect_clean(model *m, MDB_txn *on, const char *ev);
int cmp_hold(void *p, const slot_hold_rec *rec);
int cmp_waiting(void *p, const slot_wait_rec *rec);
/* The event's waitlist: the waiting entries in order, and every key's entry (state, join
 * seq, qty, the offered hold). */
void expect_waitlist(model *m, MDB_txn *ro, const mevent *e);
/* Holds grouped by event (a counting sort keeps each event's holds in
 * creation order, which is sequence order), then one scan per event. Also
 * the users records of events with max_per_user. O(holds + events). */
void expect_store(model *m, MDB_txn *ro);
/* Closes the store and opens it again with a new allocator: everything
 * committed is there, and replays keep working (the allocator's idempotency
 * index is rebuilt from the store: at once, as slotd does at start, or by
 * the first hold). */
void reopen(model *m);
/* Ends the batch: commit (or, now and then, abort and roll the model back).
 * A full map aborts the batch too, and grows the map. */
void batch_end(model *m, bool abort_it);
/* The committed state on a read transaction: the live events' views,
 * get_hold of a recent hold and the waitlist op of a recent entry (the server
 * answers reads this way). */
void expect_committed(model *m);

/* ---- model_ops.c: the driver, one random op at a time */

void hold_id(char out[SLOT_HOLD_ID_BYTES + 1], const mhold *h);
void key_name(char out[16], uint32_t key);
/* An event for an op: mostly a live one, now and then an older one (closed
 * or still selling, its holds still there). */
uint32_t pick_event(model *m);
/* A request key for (event, user): mostly fresh, else one used before (a
 * replay or, with another qty, a conflict; or a retry after sold_out). */
uint32_t pick_key(model *m, mevent *e, uint32_t user);
void op_hold(model *m);
/* A hold to act on: mostly a recent one, where the action is. */
mhold *pick_hold(model *m);
/* The ways to name a hold that is not the caller's or does not exist; each
 * must be unknown_hold (docs/protocol.md: the two are not told apart). */
void wrong_hold(model *m, const mhold *h, slot_op op, char id[SLOT_HOLD_ID_BYTES + 1], uint32_t *user);
/* confirm, release, cancel or get_hold of a random hold, rightly named or not. */
void op_on_hold(model *m, slot_op op);
/* The sweeper: all due holds (the admin op) or a few (a bounded sweep). */
void op_expire(model *m);
slot_req req_create_of(const model *m, const mevent *e);
/* A new event, replacing a live one (whose holds stay in the store). */
void op_new_event(model *m, uint32_t slot);
/* create_event of an existing event: its current settings are a replay, any
 * other is event_exists. */
void op_create_again(model *m);
/* reshard, set_capacity, set_status. The first two expire the event's due
 * holds before anything else, so those neither block a capacity cut nor get
 * spread as held units; that happens even when the cut is refused. */
void op_edit(model *m, slot_op op);
/* extend of a random hold, rightly named or not. */
void op_extend(model *m);
/* set_sale_window: mostly none, now and then a window around now. */
void op_window(model *m);
/* Any op on an event that does not exist: unknown_event, before anything else. */
void op_unknown_event(model *m);
/* A cart of 1..M_CART_ITEMS distinct events: mostly a fresh key, now and then
 * the user's last cart again in reverse order (a replay), a recent cart key
 * with other items, or a plain hold's key (conflicts). */
void op_cart(model *m);
/* The answer to waitlist_join or waitlist against the model's. */
void expect_wait_res(const slot_res *r, const mres *want, const char *what);
/* A key for the waitlist ops that name an entry: mostly a recent entry's, else any key of
 * an event (mostly none). */
void pick_entry(model *m, uint32_t *ev, uint32_t *user, uint32_t *key);
slot_req req_wait(model *m, slot_op op, uint32_t ev, uint32_t user, uint32_t key);
/* waitlist_join with a fresh key (mostly), a key used before (a replay, a conflict with a
 * hold's or a cart's key, another qty), now and then above max_per_request. */
void op_join(model *m);
void op_leave(model *m);
/* The waitlist op on the batch or on a read transaction (on). */
void wait_state_on(model *m, MDB_txn *on);
/* Offers are made inside other ops (a release, an expiry, ...), whose answers do not name
 * them: their random tags are read from the store, on the batch. */
void learn_offer_tags(model *m, uint32_t from);
/* One op, picked by weight (per mille). */
void one_op(model *m);

/* ---- model_room.c: the waiting room's model (queue and lottery rooms, joins, admissions, grants) */

/* ops random ops of seed on rooms, each reply and every batch's room views against the model;
 * *op_now: the op running (printed on failure). */
void room_model_run(uint64_t seed, uint64_t ops, volatile uint64_t *op_now);

#endif
