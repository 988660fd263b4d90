/*
 * slot/failpoint.h — fault injection at each step of the write path, compiled
 * only where SLOT_FAILPOINTS is defined: meson builds the library and slotd
 * a second time that way (libslot-fp, slotd-failpoints) for the tests; in
 * the slotd that is installed every SLOT_FAIL() below is the constant false.
 *
 * A failpoint that fires makes its step fail as the storage would: the
 * allocator returns an LMDB-style error, the whole batch is rolled back and
 * every request in it is answered internal (or storage_full for map_full
 * when the map cannot grow). Tests arm failpoints through the environment of
 * the slotd they start:
 *
 *   SLOT_FAILPOINTS="NAME[@SKIP][*TIMES],..."   e.g. "after_hold_insert@3*1"
 *
 * fires NAME after SKIP passes, TIMES times (default 0 and 1). A kill_*
 * failpoint does not fail its step: it kills slotd there with SIGKILL, as
 * kill -9 would (kill_before_handout: units came back in the transaction and
 * the waitlist's hand-out is next, so the crash tests see that the two
 * commit together or not at all). slow_handback does not fail either: the
 * commit thread sleeps SLOT_FP_SLOW_HANDBACK_MS after a batch committed and
 * before handing it back to the loop (a replica-set test pauses and deposes a
 * primary in that window: docs/design.md, "What a deposed primary cuts").
 * cas_lost is not on the write path: slot_etcd_cas (slot/etcd.h) compares a
 * revision the key never had, so etcd refuses that CAS as it refuses one that
 * another node's write overtook (a replica-set test sees a lost CAS logged).
 * no_flush is the planted fault of the power-cut test (tests/test_powercut.c):
 * while it is armed (SLOT_ARMED, not counted) LMDB is opened MDB_NOSYNC and
 * the batch log's syncs flush nothing, so an answer goes out with its write
 * only in the page cache; that test must see the loss. early_reply, armed
 * the same way, is the pipelined path's: a batch's answers go out when it
 * ran, not when the log's flush reached it (docs/design.md, "Pipelined
 * group commit"), which the same test must catch. kill_move_before_relinquish,
 * kill_move_after_relinquish and kill_move_after_own are the mover's
 * (src/cluster/mover_steps.c): they kill slotd between a move's steps, so
 * tests/test_placement_move.py sees recovery undo or finish the move.
 * pause_move_before_relinquish, pause_move_after_relinquish and
 * pause_move_after_own make the mover stand still there for
 * SLOT_FP_PAUSE_MOVE_MS (its loop turning: the lock is kept alive while etcd
 * answers), so tests/test_placement_partition.py cuts the source from etcd
 * in that step.
 */
#ifndef SLOT_FAILPOINT_H
#define SLOT_FAILPOINT_H

#include <stdbool.h>

/* X(NAME, spelling) — in write-path order. */
#define SLOT_FAILPOINT_MAP(X)                               \
    X(AFTER_SHARD_UPDATE, "after_shard_update")             \
    X(AFTER_HOLD_INSERT, "after_hold_insert")               \
    X(AFTER_IDEMPOTENCY_INSERT, "after_idempotency_insert") \
    X(BEFORE_COMMIT, "before_commit")                       \
    X(COMMIT_FAIL, "commit_fail")                           \
    X(MAP_FULL, "map_full")                                 \
    X(KILL_BEFORE_HANDOUT, "kill_before_handout")           \
    X(SLOW_HANDBACK, "slow_handback")                       \
    X(CAS_LOST, "cas_lost")                                 \
    X(NO_FLUSH, "no_flush")                                 \
    X(EARLY_REPLY, "early_reply")                           \
    X(KILL_MOVE_BEFORE_RELINQUISH, "kill_move_before_relinquish") \
    X(KILL_MOVE_AFTER_RELINQUISH, "kill_move_after_relinquish")   \
    X(KILL_MOVE_AFTER_OWN, "kill_move_after_own")                 \
    X(PAUSE_MOVE_BEFORE_RELINQUISH, "pause_move_before_relinquish") \
    X(PAUSE_MOVE_AFTER_RELINQUISH, "pause_move_after_relinquish")   \
    X(PAUSE_MOVE_AFTER_OWN, "pause_move_after_own")

#define SLOT_FP_SLOW_HANDBACK_MS 10000 /* slow_handback's sleep */
#define SLOT_FP_PAUSE_MOVE_MS 4000     /* pause_move_*'s stand-still */

typedef enum slot_failpoint {
#define SLOT__FP_ENUM(name, spelling) SLOT_FP_##name,
    SLOT_FAILPOINT_MAP(SLOT__FP_ENUM)
#undef SLOT__FP_ENUM
        SLOT_FP__COUNT
} slot_failpoint;

#ifdef SLOT_FAILPOINTS
/*
 * slot_failpoints_parse — arm failpoints from a spec (see above); NULL or ""
 * arms none. Returns 0, or -1 with a message in err (errlen bytes) naming
 * the bad part. Call once at start, before other threads run.
 */
int slot_failpoints_parse(const char *spec, char *err, unsigned errlen);
/* slot_failpoint_hit — true when fp fires now (counts its passes). Thread:
 * the commit thread (the only one that runs the write path); cas_lost's only
 * on the loop thread of its etcd client; the kill_move_* ones on the mover
 * thread. Each failpoint's count is touched by
 * one thread only. */
bool slot_failpoint_hit(slot_failpoint fp);
#define SLOT_FAIL(fp) slot_failpoint_hit(SLOT_FP_##fp)
/* slot_failpoint_armed — whether fp was armed at start (a standing fault:
 * counts nothing, prints nothing). Any thread: the arming is done before
 * other threads run and never changes. */
bool slot_failpoint_armed(slot_failpoint fp);
#define SLOT_ARMED(fp) slot_failpoint_armed(SLOT_FP_##fp)
#else
#define SLOT_FAIL(fp) false
#define SLOT_ARMED(fp) false
#endif

#endif
