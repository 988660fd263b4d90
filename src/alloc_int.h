/*
 * alloc_int.h — what the allocator's two files share (alloc.c: the ops;
 * hold.c: the hold state machine's writer and expiry). Internal to libslot.
 * Errors follow slot/error.h's internal convention; SLOT__ANSWERED below is
 * the one extra value the op helpers use.
 */
#ifndef SLOT_ALLOC_INT_H
#define SLOT_ALLOC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slot/alloc.h"
#include "slot/feed.h"

/*
 * SLOT__ANSWERED — returned by an op's helper (event_load, hold_load, ...)
 * when it has put a wire error into res and the op stops there, having
 * written nothing. Not 0 (the helper did not succeed), not an errno (all
 * positive) and not an MDB_* code (all below -30000). slot_alloc_run turns it
 * into 0 with slot__answered_ok.
 */
#define SLOT__ANSWERED (-1)

/* slot__answered_ok — 0 for SLOT__ANSWERED (res holds the answer), else rc. */
static inline int slot__answered_ok(int rc)
{
    return rc == SLOT__ANSWERED ? 0 : rc;
}

/* One op's view: the allocator, its store, the transaction, the event the
 * op is about (ev/ev_len, not NUL-terminated here) and the server clock. */
typedef struct slot__alloc_ctx {
    slot_alloc *a;
    slot_store *st;
    MDB_txn *txn;
    const char *ev;
    size_t ev_len;
    uint64_t now_ms;        /* ms since the Unix epoch */
} slot__alloc_ctx;

/* slot__hold_due — true when h is held and its expires_at_ms <= now_ms. */
bool slot__hold_due(const slot_hold_rec *h, uint64_t now_ms);

/*
 * slot__hold_finish — the one place a hold changes state (held ->
 * confirmed | released | expired | cancelled, confirmed -> cancelled; any
 * other edge is a programmer error and asserts). Moves the units, fixes the
 * event's and the user's counters, drops the expiry entry when the hold
 * leaves held, writes the hold and the event (e, h updated in place), and
 * appends the move's feed entry (slot__hold_feed).
 * Returns 0 or an LMDB error (MDB_CORRUPTED when a counter would go below 0).
 */
int slot__hold_finish(slot__alloc_ctx *c, slot_event_rec *e, slot_hold_rec *h, slot_hold_status to);

/*
 * slot__hold_feed — append the feed entry of type `type` for hold h (its
 * fields as h has them now) in c's transaction; slot__event_feed — the
 * event.created / event.changed entry carrying view v. The one writer above
 * calls slot__hold_feed for every move, op_hold for a new hold. 0 or an
 * LMDB error (abort). docs/protocol.md, "Feed".
 */
int slot__hold_feed(slot__alloc_ctx *c, const slot_hold_rec *h, slot_feed_type type);
int slot__event_feed(slot__alloc_ctx *c, const slot_event_view *v, slot_feed_type type);

/*
 * slot__expire_due — expire at most `limit` due holds (expires_at_ms <=
 * now_ms) of event ev/ev_len, or of every event when ev is NULL, oldest
 * first; *expired receives how many. Returns 0 or an LMDB error.
 */
int slot__expire_due(slot_alloc *a, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t now_ms, uint64_t limit,
                     uint64_t *expired);

#endif
