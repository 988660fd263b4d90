/*
 * slot/check.h — the invariant scan behind the admin "check" op
 * (docs/protocol.md, "Invariants"), implemented by src/alloc/check.c. It only
 * reads: any transaction will do, and it changes nothing.
 */
#ifndef SLOT_CHECK_H
#define SLOT_CHECK_H

#include <lmdb.h>
#include <stddef.h>

#include "slot/ops.h"
#include "slot/store.h"

/*
 * slot_check — full scan of the seven invariants (docs/protocol.md,
 * "Invariants"; 5 and 6 are about answers and are checked by tests, the scan
 * checks the state they leave: 1, 2, 3, 4, 7 and the expiry index), and
 * the feed's agreement with the holds (slot_feed_check_holds, reported as
 * invariant 8; a scan of the whole feed, so only when event is NULL), and
 * for a seated event the seat invariant (docs/protocol.md, "Seated events":
 * every seat in exactly one state, its counts those of the event, each shard
 * and each category; reported as invariant 9).
 *   event/event_len: one event, or NULL/0 for all.
 * Fills res->events_checked, holds_checked, nviolations, violations.
 * Cost: O(holds + shards + users) of the scanned events; runs on a read txn.
 * Returns 0, or an LMDB error. A missing event is res->err = unknown_event.
 */
int slot_check(slot_store *st, MDB_txn *txn, const char *event, size_t event_len, slot_res *res);

/*
 * slot_check_backup_copy — slot_check of every event on a backup's copy,
 * in the shape of slot_backup_inspect_fn (slot/backup.h), for
 * slot_backup_verify: res is a slot_res (zeroed by the caller, which frees
 * it with slot_res_clear). Returns slot_check's result. Thread: the
 * caller's; copy and txn are borrowed for the call.
 */
int slot_check_backup_copy(slot_store *copy, MDB_txn *txn, void *res);

#endif
