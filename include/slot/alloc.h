/*
 * slot/alloc.h — the allocator: every op of docs/protocol.md as pure logic on an
 * LMDB write (or read) transaction.
 *
 * The allocator never sees JSON or sockets. Its input is a typed request
 * (struct slot_req, filled by proto or by the client library) and its output a
 * typed result (struct slot_res). A request that fails changes nothing: every
 * op reads and validates first and writes only once it will succeed, so a
 * batch of many requests can share one write transaction (group commit).
 *
 * The rules come from docs/protocol.md ("hold", "confirm", ..., "Invariants") and
 * the allocation rule of docs/design.md.
 */
#ifndef SLOT_ALLOC_H
#define SLOT_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slot/error.h"
#include "slot/limits.h"
#include "slot/ops.h"
#include "slot/store.h"

/*
 * The allocator's per-thread state: the store it runs on and its random
 * generator (the start shard of each hold, the random tag of each hold id).
 * One per thread that runs ops; not shared.
 */
struct slot__idem;
struct slot__cold;
struct slot__buckets;

typedef struct slot_alloc {
    slot_store *store;
    uint64_t rng[4];               /* xoshiro256** state, seeded from getrandom() */
    struct slot__idem *idem;       /* idempotency index (src/alloc/idem.h); see slot_alloc_load */
    struct slot__cold *cold;       /* cold events queued for loading (src/alloc/cold.c); NULL: none yet */
    struct slot__buckets *buckets; /* client_rate's token buckets (src/alloc/client.c); NULL: none yet */
} slot_alloc;

/*
 * slot_alloc_init — bind an allocator to an open store and seed its random
 * generator from the kernel (getrandom). Returns 0, or -errno.
 * The allocator that runs holds keeps an in-memory idempotency index, built
 * from the holds database by slot_alloc_load (slotd calls it at start) or,
 * when nobody did, on its first hold (O(holds) once; a closed, settled
 * event's keys on the first request naming it), and kept up to date by
 * its own holds: so there must be ONE writing allocator per store
 * (the server's commit thread). Free with slot_alloc_close.
 */
int slot_alloc_init(slot_alloc *a, slot_store *store);

/*
 * slot_alloc_load — build the idempotency index now (slotd does, at start,
 * so restart time includes it; without this call the first hold does), from
 * the holds in the store as txn sees it (a read txn is fine), less those of
 * events that are closed (status, or closes_at past on the wall clock) with
 * nothing held or waiting: those are loaded by the first request that names
 * the event (O(holds of it), once), so replays stay exact (docs/design.md,
 * "The idempotency index").
 * O(holds of the other events). Returns 0 or an LMDB error / ENOMEM.
 */
int slot_alloc_load(slot_alloc *a, MDB_txn *txn);

/*
 * slot_alloc_cold_need — whether req must wait for the keys of a cold event
 * (a closed, settled event whose keys slot_alloc_load left on disk) before
 * it runs, so that no request loads a whole event's keys in the middle of a
 * batch (docs/design.md, "Cold events load in slices").
 *   req: a parsed request; only hold, hold_many (every item's event) and
 *        waitlist_join look keys up, every other op is *wait = false.
 *   now_ms: the server clock, ms since the Unix epoch (used only when the
 *        index is not built yet: it is built now, as the first hold would).
 *   *wait: true when an event req names is cold; that event is then queued
 *        for loading (once; slot_alloc_cold_step loads it), and the caller
 *        must not run req before slot_alloc_cold_need says false for it.
 * Returns 0; EBUSY when an event had to be queued but SLOT_COLD_LOADS_MAX
 * events are queued already (*wait is true: the caller answers overloaded);
 * ENOMEM or an LMDB error (building the index). Writes nothing to txn.
 * The writing allocator's thread (slotd: the commit thread, before each
 * request of a batch).
 */
int slot_alloc_cold_need(slot_alloc *a, MDB_txn *txn, const slot_req *req, uint64_t now_ms, bool *wait);

/*
 * slot_alloc_cold_step — load a slice of the queued cold events' keys: walk
 * at most holds_max holds (1..SLOT_COLD_LOAD_KEYS_MAX), the queue's first
 * event first, from where its last slice stopped, putting their keys into
 * the index; an event whose walk completes stops being cold and leaves the
 * queue (slot_alloc_cold_loaded counts it). *walked receives the holds
 * walked. O(holds_max) index puts; writes nothing to txn (it may be the
 * batch's write transaction). Returns 0, ENOMEM or an LMDB error; after an
 * error the slice is walked again by the next call (puts replace).
 * The writing allocator's thread, once per batch while slot_alloc_cold_loading
 * is not 0.
 */
int slot_alloc_cold_step(slot_alloc *a, MDB_txn *txn, uint32_t holds_max, uint32_t *walked);

/* slot_alloc_cold_loading — cold events queued for loading now (0..SLOT_COLD_LOADS_MAX).
 * slot_alloc_cold_loaded — events whose keys the queue loaded since slot_alloc_init
 * (only grows until slot_alloc_close). The writing allocator's thread. */
uint32_t slot_alloc_cold_loading(const slot_alloc *a);
uint64_t slot_alloc_cold_loaded(const slot_alloc *a);

/*
 * slot_alloc_close — free what the allocator holds (its idempotency index).
 * The store stays open. a may be zeroed already.
 */
void slot_alloc_close(slot_alloc *a);

/*
 * slot_alloc_seed — replace the random seed (tests and benchmarks that must
 * repeat). Hold ids stay unique (they carry a sequence number) but become
 * guessable, so the server never calls this.
 */
void slot_alloc_seed(slot_alloc *a, uint64_t seed);

/*
 * slot_alloc_run — run one request on a transaction.
 *   txn: a write transaction for ops where slot_op_writes() is true, or any
 *        transaction (a read-only one is fine) for the others.
 *   req: the request, syntax already checked (proto does that).
 *   now_ms: the server clock, ms since the Unix epoch; every hold whose
 *        expires_at_ms <= now_ms counts as expired (docs/protocol.md, "confirm").
 *   res: zeroed (or cleared) by the caller; filled here.
 * Returns 0 when res holds the answer (success or a wire error; on a wire
 * error nothing was written), or an LMDB error code (MDB_MAP_FULL, EIO, ...)
 * when the transaction is now unusable and must be aborted — the caller
 * aborts the whole batch and answers every request in it.
 * Thread: the one that owns txn.
 */
int slot_alloc_run(slot_alloc *a, MDB_txn *txn, const slot_req *req, uint64_t now_ms, slot_res *res);

/*
 * slot_alloc_expire_due — the sweeper: expire at most `limit` holds (all
 * events) whose expires_at_ms <= now_ms, oldest first, returning their units.
 *   limit: 1..SLOT_EXPIRE_OP_MAX.
 *   expired: out, how many were expired.
 * Returns 0 or an LMDB error (abort the transaction).
 */
int slot_alloc_expire_due(slot_alloc *a, MDB_txn *txn, uint64_t now_ms, uint64_t limit, uint64_t *expired);

/*
 * slot_alloc_admit_due — the waiting rooms' admissions (docs/protocol.md,
 * "Admission"): for each room whose sale has opened (at most
 * SLOT_ROOMS_TICK_MAX per call), the draw once, then its admit clock's
 * tokens admit waiting entries in order while open grants < the event's
 * effective_available (at most SLOT_ROOM_BATCH_MAX), the clock committed
 * in the event record with them. *admitted: entries admitted. 0, ENOMEM or
 * an LMDB error (abort). The writing allocator's thread (the primary's
 * commit thread, with the sweep).
 * slot_alloc_admit_pending — whether a room may admit now (a read txn; an
 * error counts as yes). Any thread with its own read transaction.
 */
int slot_alloc_admit_due(slot_alloc *a, MDB_txn *txn, uint64_t now_ms, uint64_t *admitted);
bool slot_alloc_admit_pending(slot_store *st, MDB_txn *rtxn, uint64_t now_ms);

/*
 * slot_alloc_sold_out_peek — the sold-out read path (docs/design.md, "The
 * sold-out read path"): whether the write path would answer this hold
 * `sold_out` with nothing written, decided from a read transaction, and if
 * so that answer into res (res->sold_out, res->available), exactly as
 * slot_alloc_run would write it.
 *   a: the WRITING allocator (its idempotency index is read, never changed);
 *      its owner thread must be idle now with a happens-before edge from its
 *      last change, and stay idle until this returns.
 *   rtxn: a read transaction that sees every commit made so far.
 *   req: a parsed SLOT_OP_HOLD (other ops: false).
 *   now_ms: the server clock, ms since the Unix epoch.
 *   res: zeroed by the caller; untouched when false is returned.
 * True only when every rule before sold_out in docs/protocol.md ("hold",
 * "Order of decisions") passes with certainty: the event exists, the key is
 * certainly unknown (not in the index, the event not cold, no waitlist entry
 * with it), qty within max_per_request, on sale inside its window, within
 * max_per_user, no held hold of any event due at now_ms (so the write path
 * would expire nothing), and then fewer than qty units free or people
 * waiting. False on any doubt or storage error: the caller takes the write
 * path, which answers exactly. Thread: rtxn's.
 */
bool slot_alloc_sold_out_peek(const slot_alloc *a, MDB_txn *rtxn, const slot_req *req, uint64_t now_ms, slot_res *res);

#endif
