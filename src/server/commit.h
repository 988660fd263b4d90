/*
 * commit.h — the commit thread: it takes the batch the loop collected, runs
 * it in ONE write transaction, commits (one fsync) and hands it back to the
 * loop through s->async (docs/design.md, "Group commit"). While it commits
 * batch N the loop collects batch N+1.
 */
#ifndef SLOT_COMMIT_H
#define SLOT_COMMIT_H

#include "server_int.h"

/* slot__commit_start — start the commit thread. Returns 0 or an errno. Loop thread, once. */
int slot__commit_start(server *s);

/* slot__commit_stop — stop and join the commit thread (after the batch it
 * runs, if any). A thread never started is fine. Loop thread, once. */
void slot__commit_stop(server *s);

/* slot__batch_complete — s->async's callback: the loop's side of a finished
 * batch (results become answers; the next batch goes; connections with new
 * answers are flushed). Loop thread. */
void slot__batch_complete(uv_async_t *h);

/* slot__batch_finish — the rest of a batch's completion, once its acks are
 * in (or at once, standalone): results become answers (every one replaced
 * by err with message why when err is not SLOT_E_OK: the replica-set layer
 * answers unavailable that way), the next batch goes, connections are
 * flushed, reads that waited for the commit point run. Loop thread. */
void slot__batch_finish(server *s, slot_err err, const char *why);

/* slot__job_dispatch — hand the commit thread the replica-set layer's job
 * (s->clu_up->job_run; job_done when it is back) when it is idle. Returns
 * false when a batch or job is in flight (try again after it). Loop thread. */
bool slot__job_dispatch(server *s);

/* ---- --durability pipelined (docs/design.md, "Pipelined group commit") */

/*
 * slot__pipe_replay — at start, before the writer's index is built and
 * before listening: opens DATA/rlog and applies its records above the
 * store's seq (one transaction, flushed). keep: the server runs pipelined,
 * the log stays open for it (s->pipe, s->batch.wset set); otherwise (sync
 * or nosync) the log is replayed only if the folder has one and is closed.
 * Refuses (logs why, returns -1) a log with a gap above the store's seq or
 * one of a replica set (epoch above 0). Returns 0 or -1. Main thread, once.
 */
int slot__pipe_replay(server *s, bool keep);

/* slot__pipe_start — the loop's wake-up handle and the flusher thread (after
 * slot__pipe_replay kept the log). Returns 0 or an errno. Loop thread, once. */
int slot__pipe_start(server *s);

/* slot__pipe_quiesce — before the loop closes its handles: the flusher and
 * the commit thread stop waking it. No-op when not pipelined. Loop thread. */
void slot__pipe_quiesce(server *s);

/* slot__pipe_free — after slot__commit_stop (which committed the open state):
 * stops the flusher (after its last flush), closes the log. NULL-safe on a
 * server that is not pipelined. Main thread. */
void slot__pipe_free(server *s);

/* slot__pipe_fresh — true when not pipelined or LMDB's last commit (as the
 * loop last heard) holds every batch answered so far; else false, and the
 * commit thread is asked to commit the open state now (a backup waits for
 * it). Loop thread. */
bool slot__pipe_fresh(server *s);

/* slot__pipe_read_gate — a read on rtxn may run (SLOT__READ_GO) only when
 * that snapshot holds every batch answered so far; else SLOT__READ_WAIT and
 * the commit thread is asked to commit the open state now. Loop thread. */
slot__read_gate slot__pipe_read_gate(server *s, MDB_txn *rtxn);

/* ---- pipelined on a replica set's primary (docs/design.md, "On a replica set's primary") */

/* slot__pipe_attach_set — at start, on a --cluster node run with --durability
 * pipelined: s->pipe on the cluster's batch log (borrowed: rlog and rlog_mu
 * stay the cluster's and outlive s->pipe), inactive until slot__pipe_reset.
 * Returns 0 or -1 (out of memory). Main thread, once, before slot__pipe_start. */
int slot__pipe_attach_set(server *s, slot_rlog *rlog, pthread_mutex_t *rlog_mu);

/* slot__pipe_reset — the node starts selling as primary: its log ends at
 * seq (durable: the promote job synced it), LMDB holds seq, the commit point
 * is commit_seq (<= seq). Loop thread, with the commit thread idle. */
void slot__pipe_reset(server *s, uint64_t seq, uint64_t commit_seq);

/* slot__pipe_set_point — the loop publishes the commit point c (it only
 * rises, and c <= slot__pipe_durable): LMDB may commit the open state up to
 * it. Loop thread. */
void slot__pipe_set_point(server *s, uint64_t c);

/* slot__pipe_point — the commit point as published (what a record's header
 * may name as commit_seq). Any thread. */
uint64_t slot__pipe_point(server *s);

/* slot__pipe_durable — every record of the log up to it is flushed. Any thread. */
uint64_t slot__pipe_durable(server *s);

/* slot__pipe_lmdb — the seq of LMDB's last commit (on a set, with a full
 * flush: what a restart starts from; the log keeps every record above it).
 * Any thread. */
uint64_t slot__pipe_lmdb(server *s);

/* slot__pipe_drop — the node stops selling (step-down, stop): the commit
 * thread aborts the open state before its next batch or job (or in a commit
 * that waits for the commit point), so LMDB keeps only committed batches.
 * Returns LMDB's seq as last published (LMDB holds at least that and at
 * most the commit point). Held batches must be answered first
 * (slot__pipe_fail_held). Loop thread. */
uint64_t slot__pipe_drop(server *s);

/* slot__pipe_release — answers the held batches whose tag the release point
 * reached (standalone: durable; set: the commit point published), then
 * dispatches, flushes, pumps the feed after an LMDB commit. Loop thread. */
void slot__pipe_release(server *s);

/* slot__pipe_fail_held — answers every held batch err (why: its message):
 * each read the oldest one's writes, which may never commit. Loop thread. */
void slot__pipe_fail_held(server *s, slot_err err, const char *why);

/* slot__pipe_before — commit thread, before a batch or a job: an asked drop
 * aborts the open state; a due commit (set) or any open state before a job
 * is committed (waiting for the commit point). job: a job follows. */
void slot__pipe_before(server *s, bool job);

/* Shared by the batch loop (commit.c) and the pipelined path (commit_pipe.c); every one on
 * the commit thread unless it says otherwise (docs/design.md, "Pipelined group commit").
 *
 * slot__batch_ops — runs the batch's entries against txn at now_ms (ms since the epoch);
 *   0 or an LMDB error, which aborts the batch.
 * slot__pipe_attempt — one batch on the pipelined path: its record appended, its replies held;
 *   0 or an error as slot__batch_ops.
 * slot__pipe_commit — commits the open state to LMDB (in_batch: called inside batch_run).
 * slot__pipe_hold — holds the finished batch's replies until the log's flush reaches tag.
 * slot__pipe_idle_wait — waits, bounded, for the flusher or the next commit when idle.
 * slot__entries_finish — answers n entries with err/why (loop thread); sets *sweep_again and
 *   *parked.
 * slot__flush_dirty — writes the connections' buffered replies (loop thread). */
int slot__batch_ops(server *s, MDB_txn *txn, uint64_t now_ms);
int slot__pipe_attempt(server *s, uint64_t now_ms); /* also SLOT_SERVER_E_NOT_SELLING (a set's node that stepped down) */
void slot__pipe_commit(server *s, bool in_batch);
void slot__pipe_hold(server *s, uint64_t tag);
void slot__pipe_idle_wait(server *s);
void slot__entries_finish(server *s, entry **items, size_t n, slot_err err, const char *why, bool *sweep_again,
                          bool *parked);
void slot__flush_dirty(server *s);

#endif
