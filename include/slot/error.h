/*
 * slot/error.h — the one list of slotd error codes.
 *
 * Every error a client can see on the wire (docs/protocol.md, "Error codes") comes
 * from SLOT_ERR_MAP below; the enum, the wire names and the default messages
 * are all generated from it, in the manner of libuv's UV_ERRNO_MAP. LMDB and
 * libuv errors are mapped to these codes at the boundary and never leak as raw
 * numbers.
 *
 * Internal errors — one convention for every function of libslot and slotd
 * that can fail (LMDB's): an int that is 0 on success, else a positive errno
 * value (ENOMEM, EIO, EINVAL, ...) or an MDB_* code (MDB_NOTFOUND,
 * MDB_MAP_FULL, MDB_CORRUPTED, ...). A function whose doc comment says
 * "-errno" (the open-time and client-library calls) returns the negated errno
 * instead; nothing else does. Wire errors (slot_err) never travel as return
 * values: they are put into a slot_res, and only the boundary — the commit
 * thread and the loop's read path — turns an internal error into one
 * (MDB_MAP_FULL, ENOSPC, EDQUOT -> storage_full; the rest -> internal).
 * The allocator's op helpers add one value, SLOT__ANSWERED (src/alloc/alloc_int.h):
 * "res holds a wire error, stop here, nothing was written".
 */
#ifndef SLOT_ERROR_H
#define SLOT_ERROR_H

/* X(NAME, wire code, default human message) */
#define SLOT_ERR_MAP(X)                                                                  \
    X(OK, "ok", "success")                                                               \
    X(BAD_JSON, "bad_json", "the line is not one valid JSON object")                     \
    X(LINE_TOO_LONG, "line_too_long", "line longer than the server's --max-line")        \
    X(UNKNOWN_OP, "unknown_op", "op missing or not known")                               \
    X(INVALID_ARGUMENT, "invalid_argument", "a field is missing, of the wrong type or out of range") \
    X(UNAUTHENTICATED, "unauthenticated", "send a valid hello first")                    \
    X(FORBIDDEN, "forbidden", "this connection's role may not run this op")              \
    X(UNKNOWN_EVENT, "unknown_event", "no such event")                                   \
    X(EVENT_EXISTS, "event_exists", "the event exists with different settings")          \
    X(NOT_ON_SALE, "not_on_sale", "the event is closed")                                 \
    X(UNKNOWN_HOLD, "unknown_hold", "no such hold for this user")                        \
    X(HOLD_NOT_ACTIVE, "hold_not_active", "the hold is not held any more")               \
    X(IDEMPOTENCY_CONFLICT, "idempotency_conflict", "this request key was used with a different qty") \
    X(USER_LIMIT, "user_limit", "the user's held and confirmed quantity would pass max_per_user") \
    X(EXTEND_LIMIT, "extend_limit", "the extension would pass max_extensions or max_hold_ms") \
    X(CAPACITY_BELOW_ALLOCATED, "capacity_below_allocated", "capacity below held + confirmed") \
    X(STORAGE_FULL, "storage_full", "the database could not grow; nothing was changed")  \
    X(OVERLOADED, "overloaded", "the server's request queue is full; nothing was changed, retry later") \
    X(SHUTTING_DOWN, "shutting_down", "the server is stopping; nothing was changed")     \
    X(NOT_PRIMARY, "not_primary", "this node is not the primary; nothing was changed")   \
    X(UNAVAILABLE, "unavailable", "the write could not be made durable on the replica set in time; " \
      "the outcome is unknown: retry with the same request key")                         \
    X(FEED_TRUNCATED, "feed_truncated", "the feed no longer keeps that position")        \
    X(NOT_SUBSCRIBED, "not_subscribed", "this connection is not subscribed as that consumer") \
    X(BUSY, "busy", "another backup is running; retry when it ends")                      \
    X(BACKUP_FAILED, "backup_failed", "the backup could not be written; the store is unchanged") \
    X(INTERNAL, "internal", "internal error; nothing was changed")

typedef enum slot_err {
#define SLOT__ERR_ENUM(name, code, msg) SLOT_E_##name,
    SLOT_ERR_MAP(SLOT__ERR_ENUM)
#undef SLOT__ERR_ENUM
    SLOT_E__COUNT
} slot_err;

/*
 * slot_err_name — the wire code of an error ("sold_out" is not an error).
 *   err: any slot_err; a value outside the enum yields "internal".
 *   Returns a static string; never NULL. Any thread.
 */
const char *slot_err_name(slot_err err);

/*
 * slot_err_message — the default human message for an error.
 *   Returns a static string; never NULL. Any thread.
 */
const char *slot_err_message(slot_err err);

/*
 * slot_err_from_name — the error whose wire code is `name` (NUL-terminated).
 *   Returns the code, or SLOT_E__COUNT when the name is not in the list.
 */
slot_err slot_err_from_name(const char *name);

#endif
