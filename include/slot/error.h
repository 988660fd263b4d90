/*
 * slot/error.h — the one list of slotd error codes.
 *
 * Two kinds of error, never mixed:
 *
 * Wire errors — every error a client can see on the wire (docs/protocol.md,
 * "Error codes") comes from SLOT_ERR_MAP below; the enum, the wire names and
 * the default messages are all generated from it, in the manner of libuv's
 * UV_ERRNO_MAP. They never travel as return values: they are put into a
 * slot_res, and only the boundary — the commit thread and the loop's read
 * path — turns an internal error into one (MDB_MAP_FULL, ENOSPC, EDQUOT ->
 * storage_full; the rest -> internal). LMDB and libuv errors never leak to a
 * client as raw numbers.
 *
 * Internal errors — what a function of libslot or slotd that can fail
 * returns: an int, 0 on success, else exactly one of
 *   - an errno value: positive (ENOMEM, EIO, EINVAL, ...: LMDB's convention,
 *     kept by the code that runs on an LMDB transaction) or negated (-ENOENT:
 *     libuv's, kept by the open-time, I/O and client-library calls; their doc
 *     comments say "-errno"). Either sign is within 1..4095.
 *   - an MDB_* code of LMDB's (MDB_NOTFOUND, MDB_MAP_FULL, ...: -30799..-30780).
 *   - a code of the registry SLOT_RC_MAP below: slotd's own conditions
 *     (a damaged record, a log gap, a refused backup, an etcd timeout, ...),
 *     -20001..-29999, each wing in its own range of SLOT_RC_WING_MAP.
 * The three sets are disjoint, so one number means one thing anywhere, and
 * slot_strerror (below) names any of them: the replica-set layer can log what
 * a batch log, a store apply or LMDB returned through one call.
 *
 * A new internal code goes into its wing's range in SLOT_RC_MAP (a new wing
 * takes the next free range, below the last); src/base/error.c checks with
 * _Static_assert that every code lies in its wing's range and that the ranges
 * are disjoint, and tests/test_errors.c that no number is used twice. None of
 * these numbers is written to disk or sent to a peer (the replication
 * channel's REFUSE reasons are wire codes of slot/repl.h, a list of their own),
 * so a code may be renumbered; the names are what code uses.
 */
#ifndef SLOT_ERROR_H
#define SLOT_ERROR_H

/* X(NAME, wire code, default human message) */
#define SLOT_ERR_MAP(X)                                                                                      \
    X(OK, "ok", "success")                                                                                   \
    X(BAD_JSON, "bad_json", "the line is not one valid JSON object")                                         \
    X(LINE_TOO_LONG, "line_too_long", "line longer than the server's --max-line")                            \
    X(UNKNOWN_OP, "unknown_op", "op missing or not known")                                                   \
    X(INVALID_ARGUMENT, "invalid_argument", "a field is missing, of the wrong type or out of range")         \
    X(UNAUTHENTICATED, "unauthenticated", "send a valid hello first")                                        \
    X(FORBIDDEN, "forbidden", "this connection's role may not run this op")                                  \
    X(UNKNOWN_EVENT, "unknown_event", "no such event")                                                       \
    X(EVENT_EXISTS, "event_exists", "the event exists with different settings")                              \
    X(NOT_ON_SALE, "not_on_sale", "the event is closed")                                                     \
    X(UNKNOWN_HOLD, "unknown_hold", "no such hold for this user")                                            \
    X(HOLD_NOT_ACTIVE, "hold_not_active", "the hold is not held any more")                                   \
    X(IDEMPOTENCY_CONFLICT, "idempotency_conflict", "this request key was used with a different qty")        \
    X(USER_LIMIT, "user_limit", "the user's held and confirmed quantity would pass max_per_user")            \
    X(ADMISSION_REQUIRED, "admission_required", "the event has a waiting room: join and hold with a grant")  \
    X(RATE_LIMITED, "rate_limited", "the client key is over the event's client limits; nothing was changed") \
    X(EXTEND_LIMIT, "extend_limit", "the extension would pass max_extensions or max_hold_ms")                \
    X(CAPACITY_BELOW_ALLOCATED, "capacity_below_allocated", "capacity below held + confirmed")               \
    X(STORAGE_FULL, "storage_full", "the database could not grow; nothing was changed")                      \
    X(OVERLOADED, "overloaded", "the server's request queue is full; nothing was changed, retry later")      \
    X(SHUTTING_DOWN, "shutting_down", "the server is stopping; nothing was changed")                         \
    X(NOT_PRIMARY, "not_primary", "this node is not the primary; nothing was changed")                       \
    X(UNAVAILABLE, "unavailable",                                                                            \
      "the write could not be made durable on the replica set in time; "                                     \
      "the outcome is unknown: retry with the same request key")                                             \
    X(FEED_TRUNCATED, "feed_truncated", "the feed no longer keeps that position")                            \
    X(NOT_SUBSCRIBED, "not_subscribed", "this connection is not subscribed as that consumer")                \
    X(BUSY, "busy", "another backup is running; retry when it ends")                                         \
    X(BACKUP_FAILED, "backup_failed", "the backup could not be written; the store is unchanged")             \
    X(WRONG_SET, "wrong_set", "the event is placed on another replica set; nothing was changed")            \
    X(CROSS_SET, "cross_set", "the cart's events are placed on more than one replica set; nothing was held") \
    X(MOVING, "moving", "the event is being moved to another replica set; nothing was changed, retry after retry_after_ms") \
    X(INTERNAL, "internal", "internal error; nothing was changed")

typedef enum slot_err {
#define SLOT__ERR_ENUM(name, code, msg) SLOT_E_##name,
    SLOT_ERR_MAP(SLOT__ERR_ENUM)
#undef SLOT__ERR_ENUM
        SLOT_E__COUNT
} slot_err;

/*
 * Wire names of the placement's answers (docs/protocol.md, "Placement"), kept
 * for the clients that compare names: wrong_set is SLOT_E_WRONG_SET and moving
 * SLOT_E_MOVING (slotd sends both with --placement); the C client's follower
 * retries them (src/client/client_follow.c; the rule is clients/fixtures/README.md's).
 */
#define SLOT_ERR_WIRE_WRONG_SET "wrong_set"
#define SLOT_ERR_WIRE_MOVING "moving"

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

/*
 * The wings that own internal codes, from the top down: X(WING, hi, lo, who).
 * Each range is hi..lo (hi > lo, both negative); a range starts below the one
 * before it. A wing with no codes has no range.
 */
#define SLOT_RC_WING_MAP(X)                                                             \
    X(WSET, -20001, -20100, "the write set and replication record codec (slot/wset.h)") \
    X(RLOG, -20101, -20200, "the batch log (slot/rlog.h)")                              \
    X(STORE, -20201, -20300, "the store's replication apply (slot/store.h)")            \
    X(ALLOC, -20301, -20400, "the allocator's op helpers (src/alloc/alloc_int.h)")      \
    X(ETCD, -20401, -20500, "the etcd client (slot/etcd.h)")                            \
    X(BACKUP, -21001, -21100, "backups and restores (slot/backup.h)")                   \
    X(SERVER, -21101, -21200, "the server's commit paths (src/server/commit.h)")

#define SLOT_RC_HI (-20001) /* the registry's codes are within SLOT_RC_HI..SLOT_RC_LO */
#define SLOT_RC_LO (-29999) /* above LMDB's MDB_KEYEXIST (-30799) and far below -errno (> -4096) */

/*
 * The registry of internal codes: X(WING, NAME, value, message). NAME is the
 * constant's full name as code spells it (SLOT_RLOG_E_SEQ; the wing's header
 * says which of its functions return it); the message is what slot_strerror
 * returns for it.
 */
#define SLOT_RC_MAP(X)                                                                                                \
    X(WSET, SLOT_WSET_E_TRUNCATED_HEADER, -20001, "record shorter than its fixed header")                             \
    X(WSET, SLOT_WSET_E_MAGIC, -20002, "bad record magic")                                                            \
    X(WSET, SLOT_WSET_E_VERSION, -20003, "unknown record version")                                                    \
    X(WSET, SLOT_WSET_E_FLAGS, -20004, "unknown record flags")                                                        \
    X(WSET, SLOT_WSET_E_TOO_BIG, -20005, "payload_bytes out of range")                                                \
    X(WSET, SLOT_WSET_E_TRUNCATED_PAYLOAD, -20006, "record shorter than header + payload_bytes")                      \
    X(WSET, SLOT_WSET_E_CRC, -20007, "record checksum mismatch")                                                      \
    X(WSET, SLOT_WSET_E_SEQ, -20008, "seq is 0 or commit_seq is above seq")                                           \
    X(WSET, SLOT_WSET_E_EPOCH, -20009, "prev_epoch is above epoch")                                                   \
    X(WSET, SLOT_WSET_E_OP_TRUNCATED, -20010, "an operation runs past the end of the payload")                        \
    X(WSET, SLOT_WSET_E_OP_TYPE, -20011, "unknown operation type")                                                    \
    X(WSET, SLOT_WSET_E_DB_ID, -20012, "database id out of range")                                                    \
    X(WSET, SLOT_WSET_E_KEY_LEN, -20013, "key length 0 or above SLOT_WSET_KEY_BYTES_MAX")                             \
    X(WSET, SLOT_WSET_E_VAL_LEN, -20014, "a delete with a value")                                                     \
    X(WSET, SLOT_WSET_E_TRAILING, -20015, "bytes after the last operation")                                           \
    X(WSET, SLOT_WSET_E_FULL, -20016, "the write set would pass its size limit")                                      \
    X(RLOG, SLOT_RLOG_E_CORRUPT, -20101, "the log is damaged before its tail (a bad record, a gap or a bad segment)") \
    X(RLOG, SLOT_RLOG_E_SEQ, -20102, "the record's seq is not the log's last seq + 1")                                \
    X(RLOG, SLOT_RLOG_E_EPOCH, -20103, "the record's prev_epoch is not the epoch of the record before it")            \
    X(RLOG, SLOT_RLOG_E_BROKEN, -20104, "a failed write could not be undone; reopen the log")                         \
    X(STORE, SLOT_STORE_E_SEQ, -20201, "record seq is not the store's seq + 1")                                       \
    X(STORE, SLOT_STORE_E_DB, -20202, "record names a database that is not replicated state")                         \
    X(ALLOC, SLOT_ALLOC_E_ANSWERED, -20301, "the op's answer (a wire error) is in its result; nothing was written")   \
    X(ETCD, SLOT_ETCD_ETIMEDOUT, -20401, "etcd did not answer within the request timeout")                            \
    X(ETCD, SLOT_ETCD_ECONNECT, -20402, "could not connect to any etcd endpoint")                                     \
    X(ETCD, SLOT_ETCD_EDISCONNECT, -20403, "the connection to etcd was lost")                                         \
    X(ETCD, SLOT_ETCD_EPROTO, -20404,                                                                                 \
      "etcd's response is not what the v3 JSON gateway sends (bad JSON, field or base64)")                            \
    X(ETCD, SLOT_ETCD_ESERVER, -20405, "etcd answered with an error")                                                 \
    X(ETCD, SLOT_ETCD_ENOTFOUND, -20406, "no such lease")                                                             \
    X(ETCD, SLOT_ETCD_ECOMPACTED, -20407, "the watch's start revision has been compacted away")                       \
    X(ETCD, SLOT_ETCD_ECANCELLED, -20408, "cancelled: the client was closed or the watch cancelled")                  \
    X(ETCD, SLOT_ETCD_EFULL, -20409, "too many requests in flight; nothing was sent")                                 \
    X(ETCD, SLOT_ETCD_EINVAL, -20410, "invalid argument")                                                             \
    X(ETCD, SLOT_ETCD_ETOOBIG, -20411, "etcd's response is larger than the client's bound")                           \
    X(ETCD, SLOT_ETCD_ENOMEM, -20412, "out of memory")                                                                \
    X(BACKUP, SLOT_BACKUP_E_MAGIC, -21001, "not a slotd backup")                                                      \
    X(BACKUP, SLOT_BACKUP_E_VERSION, -21002, "a backup of a newer format")                                            \
    X(BACKUP, SLOT_BACKUP_E_HEADER, -21003, "the backup's header is damaged")                                         \
    X(BACKUP, SLOT_BACKUP_E_LENGTH, -21004, "the backup is truncated or has extra bytes")                             \
    X(BACKUP, SLOT_BACKUP_E_CHECKSUM, -21005, "the backup's data does not match its SHA-256")                         \
    X(BACKUP, SLOT_BACKUP_E_DIGEST, -21006, "the backup's data is not the seq, epoch and digest its header names")    \
    X(BACKUP, SLOT_BACKUP_E_NOT_EMPTY, -21007, "the data folder is not empty")                                        \
    X(BACKUP, SLOT_BACKUP_E_IN_USE, -21008, "the data folder is in use by a slotd")                                   \
    X(BACKUP, SLOT_BACKUP_E_SHORT, -21009, "the file ended early")                                                    \
    X(SERVER, SLOT_SERVER_E_NOT_SELLING, -21101, "this node stopped being primary: the batch did not run")

/* Each wing's bounds: SLOT_RC_<WING>_HI and SLOT_RC_<WING>_LO. */
enum {
#define SLOT__RC_WING_ENUM(wing, hi, lo, who) SLOT_RC_##wing##_HI = (hi), SLOT_RC_##wing##_LO = (lo),
    SLOT_RC_WING_MAP(SLOT__RC_WING_ENUM)
#undef SLOT__RC_WING_ENUM
};

/* The codes themselves. */
enum {
#define SLOT__RC_ENUM(wing, name, value, msg) name = (value),
    SLOT_RC_MAP(SLOT__RC_ENUM)
#undef SLOT__RC_ENUM
};

/*
 * slot_strerror — a message for any internal error (above): "success" for 0;
 * the registry's message for a SLOT_RC_MAP code; strerror's text for an errno
 * value of either sign (1..4095 and -4095..-1); LMDB's own text (that of
 * mdb_strerror, "MDB_NOTFOUND: No matching key/data pair found") for an MDB_*
 * code; and "unknown error N" for any other number.
 *   Returns a static string, never NULL, except the "unknown error N" text,
 *   which is in a buffer of the calling thread's, valid until that thread's
 *   next call. Any thread.
 */
const char *slot_strerror(int rc);

#endif
