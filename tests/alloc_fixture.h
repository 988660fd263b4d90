/*
 * tests/alloc_fixture.h — what the allocator's test programs (test_ops.c,
 * test_check.c) share: a store and an allocator on a temporary folder, the
 * batch's write transaction, a clock the test moves by hand, requests filled
 * the way proto fills them, and shortcuts that check every step's counters,
 * the shards' free sum and a clean slot_check.
 */
#ifndef SLOT_TEST_ALLOC_FIXTURE_H
#define SLOT_TEST_ALLOC_FIXTURE_H

#include <lmdb.h>

#include "harness.h"
#include "slot/alloc.h"
#include "slot/check.h"
#include "slot/store.h"

#define T0 UINT64_C(1764500000000) /* the tests' epoch, ms */
#define TTL_DEFAULT SLOT_HOLD_TTL_MS_DEFAULT

/* A store, an allocator, the open write txn, the clock. */
typedef struct fx {
    char *dir;
    slot_store *st;
    slot_alloc a;
    MDB_txn *txn; /* the batch being built, or NULL */
    uint64_t now;
} fx;

/* A new store (MDB_NOSYNC) on a temporary folder, its allocator seeded with 1, the clock at T0. */
void fx_open(fx *f);
/* The batch's write transaction, begun when there is none. */
MDB_txn *fx_txn(fx *f);
/* slot_check of every event on txn: no violations (they are printed). */
void check_clean_on(fx *f, MDB_txn *txn);
/* Commits the batch, then checks the committed state on a read txn. */
void fx_commit(fx *f);
/* Commits what is open (with its checks), closes everything, removes the folder. */
void fx_close(fx *f);
/* create_event with the defaults a parser fills in for absent fields. */
slot_req req_create(const char *ev, uint64_t capacity);
/* hold of qty units for (user, request key). */
slot_req req_hold(const char *ev, const char *user, const char *request, uint32_t qty);
/* confirm, release, get_hold, cancel: (event, hold, user). user NULL: none (cancel). */
slot_req req_on(slot_op op, const char *ev, const char *hold, const char *user);
/* Runs q on the batch (or on txn when given); res is cleared first. */
void run_on(fx *f, MDB_txn *txn, const slot_req *q, slot_res *res);
/* run_on the batch. */
void run(fx *f, const slot_req *q, slot_res *res);
/* r's error is want (else the case fails, naming both). */
void expect_err(const slot_res *r, slot_err want);
/* create_event with every setting given; must succeed, spread evenly. */
void create_full(fx *f, const char *ev, uint64_t cap, uint32_t shards, uint64_t mpu, uint32_t mpr, uint32_t ttl);
/* create_full with no max_per_user and the default max_per_request and TTL. */
void create(fx *f, const char *ev, uint64_t cap, uint32_t shards);
/* Per-shard free units (shards op) into out; returns the shard count. */
uint32_t shards_free(fx *f, MDB_txn *txn, const char *ev, uint64_t *out, uint32_t cap);
/* The sum of v[0..n). */
uint64_t sum_of(const uint64_t *v, uint32_t n);
/* Asserts that free units are spread evenly: largest minus smallest at most 1. */
void expect_even(fx *f, const char *ev);
/* The event's view, shards' free sum and a clean check, on the batch. */
void expect_counts(fx *f, const char *ev, uint64_t avail, uint64_t held, uint64_t confirmed);
/* A hold that must succeed; its id into id_out (may be NULL). Returns the result's expires_at. */
uint64_t hold_ok(fx *f, const char *ev, const char *user, const char *request, uint32_t qty,
                 char id_out[SLOT_HOLD_ID_BYTES + 1]);
/* A hold that must be answered sold_out with `available`. */
void hold_sold_out(fx *f, const char *ev, const char *user, const char *request, uint32_t qty, uint64_t available);
/* A hold that must be answered with the error want. */
void hold_err(fx *f, const char *ev, const char *user, const char *request, uint32_t qty, slot_err want);
/* confirm/release/cancel/get_hold; the result stays in *r (caller clears). */
void on(fx *f, slot_op op, const char *ev, const char *hold, const char *user, slot_res *r);
/* set_status that must succeed. */
void set_status(fx *f, const char *ev, slot_event_status s);
/* reshard to n shards that must succeed. */
void reshard(fx *f, const char *ev, uint32_t n);
/* The sequence number in a hold id (its first 16 hex digits). */
uint64_t seq_of(const char *hold);
/* The stored record of a hold, read on the batch. */
void hold_rec(fx *f, const char *ev, const char *hold, slot_hold_rec *out);
/* The stored users record (held + confirmed units) of (event, user), on the batch. */
uint64_t user_rec(fx *f, const char *ev, const char *user);
/* A hold of (ev, user, request, qty) that must be answered as a replay of hold id
 * (not sold out, the same qty) whose status is st. */
void expect_replay(fx *f, const char *ev, const char *user, const char *request, uint32_t qty, const char *id,
                   slot_hold_status st);

#endif
