/*
 * loop.h — the loop thread's core: the entry pool, the write queue and its
 * dispatch to the commit thread, the read transaction, the sold-out read
 * path, the sweeper's timer and the counters (the read ops' answers are
 * reads.h's). Loop thread only.
 */
#ifndef SLOT_LOOP_H
#define SLOT_LOOP_H

#include "server_int.h"

/* slot__entry_get — an entry from the pool (or the heap), zeroed, counted in
 * s->pool.live; NULL when out of memory. */
entry *slot__entry_get(server *s);
/* slot__entry_put — clear e's result and return it to the pool. */
void slot__entry_put(server *s, entry *e);

/* slot__queue_push — append a write request to the queue the next batch is taken from. */
void slot__queue_push(server *s, entry *e);

/* slot__dispatch — hand the queued write requests (at most
 * SLOT_BATCH_REQUESTS_MAX) to the commit thread when it is idle. */
void slot__dispatch(server *s);

/* slot__queue_refuse — answer every queued write with the replica-set
 * layer's refusal (its write_gate; unavailable when it has none now), drop
 * queued sweeps, and flush the connections. */
void slot__queue_refuse(server *s);

/* slot__reads_resume — run the reads that waited for the commit point
 * (s->reads_waiting): flush every connection whose head waits. */
void slot__reads_resume(server *s);

/* slot__count_result — count an answered entry in the errors/holds/sold_out counters. */
void slot__count_result(server *s, const entry *e);

/* slot__count_error — count one error answer of code err in s->stats.errors and
 * s->stats.errors_by_code (every error answer is counted once, where it is made). */
void slot__count_error(server *s, slot_err err);

/* slot__count_reply — count e's reply, as it is written, in s->stats.replies by
 * op and outcome (conn.c, once per reply). */
void slot__count_reply(server *s, const entry *e);

/* slot__read_begin — renew the loop's read transaction s->rtxn (reused)
 * with map growth held off; 0 or an LMDB error. slot__read_end — reset it
 * (when the renew worked) and let growth go on. Every read_begin has its
 * read_end, on the same loop turn. */
int slot__read_begin(server *s);
void slot__read_end(server *s);

/* slot__hold_read — the sold-out read path (docs/design.md, "The sold-out
 * read path"): answers the parsed, admitted hold e now, from the loop's
 * read transaction, when the write path would certainly answer it sold_out
 * with nothing written; e becomes DONE, counted as the write path counts it.
 * Only while nothing is queued or with the commit thread (so no write in
 * flight can free units or record e's key, and the idempotency index may
 * be read), and, in a replica set, only on a primary that takes writes and
 * whose read gate says the snapshot is acknowledged. Returns false (e
 * untouched) otherwise, or with --no-read-path: queue it. Loop thread. */
bool slot__hold_read(server *s, entry *e);

/*
 * Parking (src/server/park.c, but slot__park_requeue, the queue's part, is
 * loop.c's; docs/design.md, "Cold events load in slices"): a write that
 * needs a cold event's keys does not run in its batch; it waits in s->park
 * (at most SLOT_COLD_PARKED_MAX) while the loader's entry walks a slice of
 * keys in every batch, and goes back to the front of the queue
 * when an event's keys are in. A connection with a parked write parks its
 * later writes behind it, so its writes run in the order sent; every other
 * connection's requests go on. Entries: QUEUED -> PARKED -> QUEUED.
 *
 * slot__park_push — e, a write of a batch the commit thread did not run
 * (e->cold_park), waits in the park list.
 * slot__park_admit — at admission, a write of a connection that has parked
 * writes parks behind them: true when e was parked or answered (overloaded,
 * the list is full), false when it may be queued as usual.
 * slot__park_after_batch — after a hand-back (parked: the batch parked some):
 * the queued writes of connections that now have parked ones follow them;
 * the parked writes go back to the queue when an event came in (or nothing
 * loads any more); the loader's entry is queued while events load.
 * slot__park_requeue — every parked write back to the front of the queue,
 * in order (stop and the replica-set layer's refusal answer the queue).
 * Loop thread.
 */
void slot__park_push(server *s, entry *e);
bool slot__park_admit(server *s, conn *c, entry *e);
void slot__park_after_batch(server *s, bool parked);
void slot__park_requeue(server *s);

/* slot__sweep_enqueue — queue the sweeper's "expire due holds" work once. */
void slot__sweep_enqueue(server *s);

/* slot__on_check — end of every loop turn: dispatch, and resume reading
 * paused for lack of entries once half are back. */
void slot__on_check(uv_check_t *h);

/* slot__on_sweep_timer — every --sweep-interval-ms: queue a sweep when a
 * held hold has expired, and reap connections past their time bounds. */
void slot__on_sweep_timer(uv_timer_t *t);
/* slot__on_room_timer — every SLOT_ROOM_TICK_MS: queue a sweep (which runs
 * the waiting rooms' admissions, slot_alloc_admit_due) when a room may admit
 * now (docs/protocol.md, "Admission"). The loop thread. */
void slot__on_room_timer(uv_timer_t *t);

#endif
