/*
 * slot/feed.h — the feed: a durable outbox of every change (docs/protocol.md,
 * "Feed"), and the consumers' positions. Both are databases of the store
 * (slot/store.h), written through its one put and one delete, so they travel
 * in write sets and are part of the digest.
 *
 *   db         key                 value
 *   feed       u64 seq             packed entry (below), appended (MDB_APPEND)
 *   consumers  name(consumer)      u64 acked, u64 updated_at_ms
 *
 * An entry is written in the same write transaction as the change it records,
 * so an aborted batch leaves none, and seq has no gaps (1, 2, 3, ...). The
 * newest entry is never trimmed, so seq never starts again after a trim.
 *
 * Packed entry: u8 record version (SLOT_RECORD_VERSION, 3; 2 is still read), u8 type, u64
 * at_ms, name(event), then for hold.*: u64 hold seq, u64 hold tag,
 * name(user), u16 qty, u64 expires_at_ms, name(request), u16 returned, u64
 * replaces seq, u64 replaces tag (0 and 0: none); for event.*: u8 status, u16
 * shards, u16 max_per_request, u32 hold_ttl_ms, u64 capacity, available,
 * held, confirmed, max_per_user, opens_at_ms, closes_at_ms, u16
 * max_extensions, u64 max_hold_ms, and from version 3 u32 waitlist_max, u64
 * waiting, u64 waiting_qty. Every integer big-endian.
 *
 * Functions that run on an LMDB transaction return 0 or an LMDB error (or
 * an errno value), as slot/error.h says; nothing returned points into the
 * map after the call.
 */
#ifndef SLOT_FEED_H
#define SLOT_FEED_H

#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slot/limits.h"
#include "slot/ops.h"
#include "slot/store.h"

/* The entry types of docs/protocol.md, "Feed": X(NAME, wire type). */
#define SLOT_FEED_TYPE_MAP(X)           \
    X(HOLD_HELD, "hold.held")           \
    X(HOLD_CONFIRMED, "hold.confirmed") \
    X(HOLD_RELEASED, "hold.released")   \
    X(HOLD_EXPIRED, "hold.expired")     \
    X(HOLD_CANCELLED, "hold.cancelled") \
    X(HOLD_EXTENDED, "hold.extended")   \
    X(HOLD_OFFERED, "hold.offered")     \
    X(EVENT_CREATED, "event.created")   \
    X(EVENT_CHANGED, "event.changed")   \
    X(EVENT_MOVED, "event.moved")       \
    X(EVENT_ARRIVED, "event.arrived")

typedef enum slot_feed_type {
#define SLOT__FT_ENUM(name, wire) SLOT_FEED_##name,
    SLOT_FEED_TYPE_MAP(SLOT__FT_ENUM)
#undef SLOT__FT_ENUM
        SLOT_FEED__COUNT
} slot_feed_type;

/* slot_feed_type_name — the wire type ("hold.held", ...); static; "?" out of range. */
const char *slot_feed_type_name(slot_feed_type t);

/* slot_feed_type_of_status — the entry a hold's move into status s makes
 * (held -> hold.held, ...). */
slot_feed_type slot_feed_type_of_status(slot_hold_status s);

/* One entry, decoded. Strings are NUL-terminated, lengths beside them. */
typedef struct slot_feed_entry {
    uint64_t seq; /* 1.. ; set by slot_feed_append */
    slot_feed_type type;
    uint64_t at_ms; /* ms since the Unix epoch, the commit's clock */
    uint8_t event_len, user_len, request_len;
    char event[SLOT_EVENT_BYTES_MAX + 1];
    /* hold.* */
    uint64_t hold_seq, hold_tag; /* the hold id is hex(seq) + hex(tag) */
    char user[SLOT_USER_BYTES_MAX + 1];
    char request[SLOT_REQUEST_BYTES_MAX + 1];
    uint32_t qty, returned;
    uint64_t expires_at_ms;
    uint64_t replaces_seq, replaces_tag; /* hold.confirmed of a reacquire; 0, 0: none */
    /* record version 4: the hold's ancestors, parent first ("chain" is the
     * event, then these; docs/protocol.md, "Ticket types"), and its block */
    uint8_t nchain;
    uint8_t chain_len[SLOT_ANCESTORS_MAX];
    char chain[SLOT_ANCESTORS_MAX][SLOT_EVENT_BYTES_MAX + 1];
    uint8_t alloc_len; /* 0 = not from a block */
    char alloc[SLOT_EVENT_BYTES_MAX + 1];
    /* event.* */
    slot_event_view view;
    /* record version 7: event.moved's target set ("to") and event.arrived's
     * source ("from"), and the gen the event has there (docs/protocol.md,
     * "Placement"); event.arrived also carries the view */
    uint8_t place_set_len;
    char place_set[SLOT_CLUSTER_NAME_BYTES_MAX + 1];
    uint64_t place_gen;
    /* record version 6: a seated hold's seats (docs/protocol.md, "Seated
     * events": feed entries carry "seats"), ids comma-separated, 0 = none.
     * Last, so that a memset up to `seats` clears all the rest. */
    uint32_t seats_len;
    char seats[SLOT_FEED_SEATS_BYTES_MAX];
} slot_feed_entry;

/*
 * slot_feed_append — append e to the feed in the write transaction txn, as
 * seq = the last seq + 1 (1 for the first), stored into e->seq. Appended with
 * MDB_APPEND (the key is always the last), through the store's one put.
 * Returns 0 or an LMDB error (abort the transaction). Thread: txn's.
 */
int slot_feed_append(slot_store *st, MDB_txn *txn, slot_feed_entry *e);

/*
 * slot_feed_bounds — the oldest seq kept and the head (newest) seq as txn
 * sees them; both 0 while the feed has never had an entry. Any transaction.
 */
int slot_feed_bounds(slot_store *st, MDB_txn *txn, uint64_t *oldest, uint64_t *head);

/* slot_feed_get — entry seq into out; MDB_NOTFOUND when it is not kept,
 * MDB_CORRUPTED for a record that does not decode. Any transaction. */
int slot_feed_get(slot_store *st, MDB_txn *txn, uint64_t seq, slot_feed_entry *out);

/* Called once per entry in seq order; a non-zero return stops the scan and is returned. */
typedef int (*slot_feed_fn)(void *ctx, const slot_feed_entry *e);

/* slot_feed_scan — entries from seq `from` (inclusive) in order, at most `limit`
 * (0: no limit). Any transaction. */
int slot_feed_scan(slot_store *st, MDB_txn *txn, uint64_t from, uint64_t limit, slot_feed_fn fn, void *ctx);

/*
 * slot_feed_encode — e as the push line of docs/protocol.md, "Feed" (src/proto/proto_view.c):
 * {"feed":SEQ,"type":...,"at":...,<the type's fields>}\n.
 *   buf/cap: out. Returns the length with the "\n"; when it is >= cap the
 *   line did not fit and nothing usable is in buf (retry with the returned
 *   size + 1), as slot_proto_encode. Any thread.
 */
size_t slot_feed_encode(const slot_feed_entry *e, char *buf, size_t cap);

/* ---- consumers (positions) */

/* slot_feed_consumer_get — the consumer's acked seq into *acked; MDB_NOTFOUND when not known. */
int slot_feed_consumer_get(slot_store *st, MDB_txn *txn, const char *name, size_t len, uint64_t *acked);
/* slot_feed_consumer_put — store acked for the consumer (the caller keeps it from moving back). */
int slot_feed_consumer_put(slot_store *st, MDB_txn *txn, const char *name, size_t len, uint64_t acked, uint64_t now_ms);
/* slot_feed_consumer_del — forget the consumer; MDB_NOTFOUND when not known. */
int slot_feed_consumer_del(slot_store *st, MDB_txn *txn, const char *name, size_t len);

typedef int (*slot_feed_consumer_fn)(void *ctx, const char *name, size_t len, uint64_t acked);
/* slot_feed_consumers_scan — every known consumer in name order. Any transaction. */
int slot_feed_consumers_scan(slot_store *st, MDB_txn *txn, slot_feed_consumer_fn fn, void *ctx);

/* ---- retention (docs/protocol.md, "Feed": kept until acked by every known
 *      consumer AND older than --feed-retention-ms) */

/*
 * slot_feed_trim — delete at most `limit` (1..SLOT_FEED_TRIM_BATCH_MAX) of the
 * oldest entries that every known consumer acked and whose at_ms is at most
 * now_ms - retention_ms; never the newest entry. *trimmed gets the count.
 * Write transaction. O(limit + consumers).
 */
int slot_feed_trim(slot_store *st, MDB_txn *txn, uint64_t now_ms, uint64_t retention_ms, uint64_t limit,
                   uint64_t *trimmed);

/* slot_feed_trim_due — true when slot_feed_trim would delete at least one
 * entry now (a read transaction is enough); false on a storage error. */
bool slot_feed_trim_due(slot_store *st, MDB_txn *txn, uint64_t now_ms, uint64_t retention_ms);

/*
 * slot_feed_run — the feed ops of a request on txn (docs/protocol.md, "Feed"):
 * subscribe (a write: the consumer becomes known, positioned before `from`),
 * ack (a write: the position moves forward, never back), feed_forget (a
 * write), feed_consumers (a read). unsubscribe never reaches here (the
 * server answers it). The connection-side checks (not_subscribed, an ack past
 * what was delivered) are the server's, made before the request is queued.
 * Returns 0 with the answer in res (res->feed_* and, for feed_consumers, res->consumers), or an LMDB
 * error (abort). Thread: txn's.
 */
int slot_feed_run(slot_store *st, MDB_txn *txn, const slot_req *req, uint64_t now_ms, slot_res *res);

/*
 * slot_feed_check_holds — the feed part of check: for every hold whose
 * hold.held (or hold.offered) entry is kept, the type of its newest entry must
 * agree with its status in the holds database, and an entry must never name a
 * hold that does not exist. Each disagreement is reported to fn (invariant 8).
 * Per event only the entries after its last event.moved or event.arrived
 * count: a moved event's holds are another set's, an arrived one's came as
 * the source left them.
 * ev/ev_len: only that event's holds (NULL: every event). O(entries) time,
 * O(holds in the feed) memory. Any transaction.
 */
typedef void (*slot_feed_violation_fn)(void *ctx, const char *ev, const char *detail);
int slot_feed_check_holds(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_feed_violation_fn fn,
                          void *ctx);

#endif
