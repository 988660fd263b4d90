/*
 * idem.h — the idempotency index: (event, user, request key) -> hold
 * sequence number, kept in memory by the allocator that writes.
 *
 * Why in memory: a durable index keyed by client-chosen names is written in
 * random order, so every hold dirtied one more random LMDB page, and each
 * fsynced random page cost about 40 us on the reference machine — a ceiling
 * of ~17,000 durable holds/s whatever the batch size (measured at 256
 * connections; docs/performance.md). The holds database already records
 * each hold's user and request key and is written in sequence order, so it
 * is the durable truth: the index is rebuilt from it — by slotd at start
 * (slot_alloc_load, so restart time includes it; closed, settled events on
 * first use, see "cold" below), or on the first hold for
 * other users of the library — and every hit is verified against the hold record (an entry left
 * by an aborted transaction is dropped), so the index can only ever be
 * a faster way to find what the holds database says.
 *
 * Growth is incremental (idem.c: two tables while a doubling runs, a few
 * buckets moved per call), so no single call costs O(entries).
 *
 * Events whose keys are not loaded: the caller may leave an event's keys
 * out (slot_alloc_load does so for closed, settled events) and marks it
 * "cold" here; it must load the event's keys (and clear the mark) before it
 * looks up, adds or deletes a key of that event (cold.c's
 * slot__idem_event_ready). A lookup here never says "not found" for a
 * cold event's key on its own authority.
 *
 * Internal to libslot; one index per writing allocator; not thread-safe.
 */
#ifndef SLOT_IDEM_H
#define SLOT_IDEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct slot__idem slot__idem;

/* slot__idem_new — an empty index; NULL when out of memory. */
slot__idem *slot__idem_new(void);
/* slot__idem_free — frees the index and every entry. NULL is fine. */
void slot__idem_free(slot__idem *ix);
/*
 * slot__idem_put — remember key -> seq (replacing an older entry for key).
 *   ev/user/req: the names (not NUL-terminated), each at most 255 bytes.
 * Returns 0, or -ENOMEM (nothing added). O(1) per call, also while the
 * table grows: each call moves at most SLOT_IDEM_MOVE_BUCKETS buckets of a
 * doubling (slot/limits.h); no allocation per call (entries come from arena
 * blocks of SLOT_IDEM_BLOCK_BYTES; a doubling's table is one calloc). When
 * the larger table cannot be had the index keeps working with longer chains.
 */
int slot__idem_put(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len, const char *req,
                   size_t req_len, uint64_t seq);
/*
 * slot__idem_put_deferred — slot__idem_put for a bulk load (building the
 * index from the holds database): the put waits in a short queue (8) with
 * its bucket prefetched and is applied in order by a later call, so the
 * result is that of plain puts. Every other call here applies the queue
 * first; slot__idem_count does not count what waits.
 * Returns 0, or -ENOMEM when an earlier deferred put failed (sticky until
 * slot__idem_flush).
 */
int slot__idem_put_deferred(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len,
                            const char *req, size_t req_len, uint64_t seq);
/* slot__idem_flush — apply the deferred puts. 0, or -ENOMEM when one failed
 * since the last flush (the others were applied). */
int slot__idem_flush(slot__idem *ix);
/*
 * slot__idem_add — slot__idem_put for a key the caller has just looked up
 * and not found (slot__idem_get returned -1, or the entry was deleted as
 * stale) with nothing added since: skips put's lookup. Adding a key that is
 * present leaves two entries for it — a caller's bug.
 * Returns 0, or -ENOMEM.
 */
int slot__idem_add(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len, const char *req,
                   size_t req_len, uint64_t seq);
/* slot__idem_get — 0 and *seq when the key is known, -1 when not (*seq untouched). */
int slot__idem_get(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len, const char *req,
                   size_t req_len, uint64_t *seq);
/*
 * slot__idem_peek — a lookup that changes nothing (no deferred put applied,
 * no rehash step), for a thread that reads the index while its owner is
 * known to be idle (the server's loop between batches, docs/design.md,
 * "The sold-out read path"): the caller must have a happens-before edge
 * from the owner's last change (slotd: the batch hand-back's mutex).
 * Returns 0 when the key is in the index, -1 when it is not and the index
 * may say so (the event is not cold, no deferred put waits), 1 when it
 * cannot say (cold event or deferred puts waiting).
 */
int slot__idem_peek(const slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len,
                    const char *req, size_t req_len);
/* slot__idem_del — forget key (a stale entry). */
void slot__idem_del(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len, const char *req,
                    size_t req_len);
/* slot__idem_count — keys held; slot__idem_bytes — memory held (arena
 * blocks and bucket tables), bytes. */
size_t slot__idem_count(const slot__idem *ix);
size_t slot__idem_bytes(const slot__idem *ix);
/*
 * slot__idem_reserve — size a new, empty index for `keys` keys (one table
 * of at least that many buckets, mapped, zero pages until touched), so that
 * a load of that many keys never doubles. Does nothing on an index that has
 * a table already. Returns 0, or -ENOMEM (the index stays as it was).
 */
int slot__idem_reserve(slot__idem *ix, size_t keys);
/* slot__idem_doublings — table doublings begun since new; slot__idem_rehashing
 * — true while one is under way (for tests and the micro benchmark). */
size_t slot__idem_doublings(const slot__idem *ix);
bool slot__idem_rehashing(const slot__idem *ix);

/*
 * Cold events (event name ev, 1..255 bytes, not NUL-terminated): events
 * whose keys are not in the index.
 * slot__idem_cold_add — mark ev cold (again is fine). 0 or -ENOMEM.
 * slot__idem_cold — true when ev is marked; O(1), one compare when none is.
 * slot__idem_cold_del — unmark ev (after its keys were put). Not marked is fine.
 * slot__idem_cold_count — events marked.
 */
int slot__idem_cold_add(slot__idem *ix, const char *ev, size_t ev_len);
bool slot__idem_cold(slot__idem *ix, const char *ev, size_t ev_len);
void slot__idem_cold_del(slot__idem *ix, const char *ev, size_t ev_len);
size_t slot__idem_cold_count(const slot__idem *ix);

#endif
