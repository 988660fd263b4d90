/*
 * alloc_int.h — what the allocator's files share, in layers, each calling
 * only those below it: alloc.c (slot_alloc_run, the dispatcher, and the
 * event ops and the plain hold) -> the op files (block.c, cart.c, confirm.c,
 * waitlist.c) -> alloc_core.c (the ops' shared helpers) -> hold.c and hold_serve.c (the hold's
 * life) -> alloc_idem.c, cold.c, idem.c (the idempotency index) and
 * alloc_rng.c (random numbers). Internal to libslot.
 * Errors follow slot/error.h's internal convention; SLOT__ANSWERED below is
 * the registry code the op helpers add (SLOT_RC_MAP's ALLOC range).
 */
#ifndef SLOT_ALLOC_INT_H
#define SLOT_ALLOC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slot/alloc.h"
#include "slot/feed.h"

/* ==== from alloc_int.h ======================================================= */
/*
 * SLOT__ANSWERED — returned by an op's helper (event_load, hold_load, ...)
 * when it has put a wire error into res and the op stops there, having
 * written nothing. Not 0 (the helper did not succeed), not an errno and not
 * an MDB_* code: SLOT_ALLOC_E_ANSWERED of slot/error.h's registry, so
 * slot_strerror names it if it ever reaches a log. slot_alloc_run turns it
 * into 0 with slot__answered_ok.
 */
#define SLOT__ANSWERED SLOT_ALLOC_E_ANSWERED

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
    uint64_t now_ms;               /* ms since the Unix epoch */
    struct slot__seat_list *seats; /* a seat hold's chosen seats for slot__units_take (seat_int.h); NULL: none */
    /* A cart item's client_rate token (client.c): with rate_defer the bucket is
     * only checked and rate_due set; the cart spends the token once it is
     * answered held or sold_out (an item refused later leaves it unspent). */
    bool rate_defer, rate_due;
} slot__alloc_ctx;

/* ---- alloc_rng.c: the random numbers (called by hold.c and confirm.c) */

/* slot__rng_next — the allocator's next random number (xoshiro256**). */
uint64_t slot__rng_next(slot_alloc *a);

/* slot__rng_init — seed a's generator from getrandom(2) (slot_alloc_init).
 * 0, or -errno (-EIO on a short read). */
int slot__rng_init(slot_alloc *a);

/* ---- cold.c and alloc_idem.c: the idempotency index glue */

/* slot__idem_ensure — the idempotency index, built now when it is not yet
 * (O(holds), once per allocator; events settled at c->now_ms are left cold,
 * alloc_int.h). 0, ENOMEM or an LMDB error. */
int slot__idem_ensure(slot__alloc_ctx *c);

/* slot__idem_event_ready — slot__idem_ensure, and c's event's keys loaded
 * when it was cold (O(holds of that event), once). Call before any index
 * lookup, add or delete of c's event. 0, ENOMEM or an LMDB error. */
int slot__idem_event_ready(slot__alloc_ctx *c);

/* slot__cold_free — free the allocator's load queue of cold events (cold.c;
 * slot_alloc_close calls it). a->cold may be NULL. */
void slot__cold_free(slot_alloc *a);

/*
 * slot__request_find — the hold made earlier for (c's event, user, request)
 * into h, through the idempotency index, checked against the hold record.
 * Returns 0 (found), MDB_NOTFOUND, or an LMDB error.
 */
int slot__request_find(slot__alloc_ctx *c, const char *user, size_t user_len, const char *request, size_t request_len,
                       slot_hold_rec *h);

/* ---- hold.c: the hold's life (birth, moves, feed entries, expiry); hold_serve.c: the hand-out */

/* slot__hold_due — true when h is held and its expires_at_ms <= now_ms. */
bool slot__hold_due(const slot_hold_rec *h, uint64_t now_ms);

/* One ancestor of an event (docs/protocol.md, "Ticket types"): its name and
 * its record as the transaction had it when loaded. */
typedef struct slot__anc {
    uint8_t len;
    char name[SLOT_EVENT_BYTES_MAX + 1];
    slot_event_rec rec;
} slot__anc;

/* An event's ancestors, parent first (0..SLOT_ANCESTORS_MAX). */
typedef struct slot__chain {
    uint8_t n;
    slot__anc anc[SLOT_ANCESTORS_MAX];
} slot__chain;

/* slot__chain_load — the ancestors of event record e (parent first) into
 * ch, read from c's transaction. A copy: a write to an ancestor after this
 * makes ch stale (load again). 0, MDB_CORRUPTED (a parent missing or a chain
 * deeper than SLOT_FAMILY_DEPTH_MAX) or an LMDB error. */
int slot__chain_load(slot__alloc_ctx *c, const slot_event_rec *e, slot__chain *ch);

/* slot__free_units — e's free units: capacity - held - confirmed - allocated
 * (held and confirmed count descendants, allocated unused block units). */
uint64_t slot__free_units(const slot_event_rec *e);

/* slot__chain_free — *avail := the least free units over c's event (record
 * e) and its ancestors; short_ev (may be NULL) := the nearest event of that
 * chain with fewer than qty free, "" when none lacks. 0 or an LMDB error. */
int slot__chain_free(slot__alloc_ctx *c, const slot_event_rec *e, uint32_t qty, uint64_t *avail,
                     char short_ev[SLOT_EVENT_BYTES_MAX + 1]);

/* slot__chain_users — the user's row on every ancestor of c's event (record
 * e) that has a max_per_user: += add, -= sub (a waitlist join counts its
 * units there as on its own event, a leave gives them back). 0,
 * MDB_CORRUPTED (a row would go below 0) or an LMDB error. */
int slot__chain_users(slot__alloc_ctx *c, const slot_event_rec *e, const char *user, size_t user_len, uint64_t add,
                      uint64_t sub);

/* slot__units_take — h->qty units from c's event's shards and from every
 * ancestor's, each by a random start then the others in turn (docs/design.md,
 * "The allocation rule"); fills h's parts and ancestors' parts; each
 * ancestor's `as` counter (SLOT_HOLD_HELD: held, SLOT_HOLD_CONFIRMED:
 * confirmed) and its user row grow by qty and the ancestor is written. The
 * caller checked the chain has that many free, and updates e itself.
 * 0 or an LMDB error. */
int slot__units_take(slot__alloc_ctx *c, const slot_event_rec *e, slot_hold_rec *h, slot_hold_status as);

/* slot__hold_new — h = a held hold of qty units for (user, request), kind
 * plain, no parts yet; slot__hold_make fills the rest. */
void slot__hold_new(slot_hold_rec *h, const char *user, size_t user_len, const char *request, size_t request_len,
                    uint32_t qty);

/*
 * slot__hold_make — write the new held hold h (from slot__hold_new, kind and
 * origin set) on c's event: seq, tag, times, units from the shards, the
 * hold, its idempotency entry (slot__idem_event_ready must have run), its expiry
 * entry, the user's row := user_total (with max_per_user; UINT64_MAX leaves
 * it) and e's counters. The caller checked the units are free and writes e.
 * Returns 0 or an LMDB error.
 */
int slot__hold_make(slot__alloc_ctx *c, slot_event_rec *e, slot_hold_rec *h, uint64_t user_total);

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
 * slot__hold_confirm — held -> confirmed keeping `keep` units (1..h->qty):
 * the rest goes back to the shards in the same transaction, exactly once
 * (docs/protocol.md, "Partial confirm"); h->qty becomes keep and
 * h->returned what went back. Returns 0 or an LMDB error.
 */
int slot__hold_confirm(slot__alloc_ctx *c, slot_event_rec *e, slot_hold_rec *h, uint32_t keep);

/*
 * slot__hold_extend — a held hold's expires_at_ms += by_ms and one more
 * extension; its expiry index entry moves with it, so the sweeper and lazy
 * expiry see the new time (docs/protocol.md, "extend"). The caller checked
 * the limits. Returns 0 or an LMDB error.
 */
int slot__hold_extend(slot__alloc_ctx *c, slot_hold_rec *h, uint64_t by_ms);

/*
 * slot__waitlist_serve — the hand-out (docs/protocol.md, "Waitlist"): while
 * people wait on c's event and the first entry's qty is free (on the event
 * and every ancestor), that entry is offered a held hold (the event's TTL),
 * in join order, in the caller's transaction; an entry that cannot be met
 * stops it (nobody behind it goes first). For an event of a family with
 * someone waiting (the root's fam_waiting), every event of the family is
 * served in the family's one join order ("Ticket types"): e is written
 * first and read back after. Called wherever units come back. e is updated;
 * the caller writes it. O(entries served + 1), a family's O(members x
 * served). Returns 0 or an LMDB error.
 */
int slot__waitlist_serve(slot__alloc_ctx *c, slot_event_rec *e);

/*
 * slot__family_note — the family's waitlist bookkeeping on its root (e
 * itself when it has no parent, else the top of its chain, written here):
 * fam_waiting += delta (a join +1, an offer or a leave -1) and, with order
 * non-NULL, *order := the family's next join order (fam_next_join++). The
 * caller writes e. 0, MDB_CORRUPTED (the count would go below 0) or an LMDB
 * error.
 */
int slot__family_note(slot__alloc_ctx *c, slot_event_rec *e, int delta, uint64_t *order);

/*
 * slot__hold_feed — append the feed entry of type `type` for hold h (its
 * fields as h has them now) in c's transaction; slot__event_feed — the
 * event.created / event.changed entry carrying view v. The one writer above
 * calls slot__hold_feed for every move, op_hold for a new hold. 0 or an
 * LMDB error (abort). docs/protocol.md, "Feed".
 */
int slot__hold_feed(slot__alloc_ctx *c, const slot_hold_rec *h, slot_feed_type type);
/* slot__hold_feed_seated — the same, with the hold's seats when `seated`
 * (its event has a seat map: docs/protocol.md, "Seated events"). */
int slot__hold_feed_seated(slot__alloc_ctx *c, const slot_hold_rec *h, slot_feed_type type, bool seated);
int slot__event_feed(slot__alloc_ctx *c, const slot_event_view *v, slot_feed_type type);

/*
 * slot__expire_due — expire at most `limit` due holds (expires_at_ms <=
 * now_ms) of event ev/ev_len, or of every event when ev is NULL, oldest
 * first; *expired receives how many. Returns 0 or an LMDB error.
 */
int slot__expire_due(slot_alloc *a, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t now_ms, uint64_t limit,
                     uint64_t *expired);

/* ---- alloc_core.c: what the ops share (calls hold.c, never an op file) */

/* slot__hold_id_format — the wire id of hold (seq, tag): 32 lowercase hex digits and a NUL. */
void slot__hold_id_format(char out[SLOT_HOLD_ID_BYTES + 1], uint64_t seq, uint64_t tag);

/* slot__event_load — c's event into e; SLOT__ANSWERED with unknown_event in res when missing. */
int slot__event_load(slot__alloc_ctx *c, slot_event_rec *e, slot_res *res);

/*
 * slot__hold_open — the event and the hold req names (user NULL: any
 * user's); with settle (the write path) a due hold is expired first.
 * Returns 0, SLOT__ANSWERED (unknown_event / unknown_hold in res) or an LMDB error.
 */
int slot__hold_open(slot__alloc_ctx *c, const slot_req *req, const char *user, bool settle, slot_event_rec *e,
                    slot_hold_rec *h, slot_res *res);

/* slot__hold_settle — a due hold is expired now (its units return); else nothing. 0 or an LMDB error. */
int slot__hold_settle(slot__alloc_ctx *c, slot_event_rec *e, slot_hold_rec *h);

/* slot__res_hold — a hold's fields into res, with status `status`. */
void slot__res_hold(slot_res *res, const slot_hold_rec *h, slot_hold_status status);

/* slot__view_fill — v = the view of event ev/ev_len (ev_len <= SLOT_EVENT_BYTES_MAX) from record e. */
void slot__view_fill(slot_event_view *v, const char *ev, size_t ev_len, const slot_event_rec *e);

/* slot__view_family — v's effective_available (the least available over the
 * event's chain) for an event with a parent; nothing for a root. 0 or an
 * LMDB error. */
int slot__view_family(slot__alloc_ctx *c, slot_event_view *v, const slot_event_rec *e);

/*
 * slot__on_sale — true when a new hold may be taken now: the event is
 * on_sale and c->now_ms is in [opens_at, closes_at) where they are set
 * (docs/protocol.md, "Sale windows"). Else res = not_on_sale with both times.
 */
bool slot__on_sale(slot__alloc_ctx *c, const slot_event_rec *e, slot_res *res);

/* slot__expire_event_due — expire up to SLOT_EXPIRE_OP_MAX due holds of c's
 * event and reread e when any were. 0 or an LMDB error. */
int slot__expire_event_due(slot__alloc_ctx *c, slot_event_rec *e);

/*
 * slot__hold_admit — not_on_sale of an ancestor, user_limit (the event's, then
 * each ancestor's) and sold_out over the event's chain (res->available the
 * least free over it, res->short_event the nearest event that lacked) for
 * req->qty units of req->user, after expiring due holds when that could
 * change the answer.
 * *user_qty receives the user's current total. Returns 0 with res->err
 * still OK and res->sold_out false when the hold may go on; else res holds
 * the answer. LMDB error otherwise.
 */
int slot__hold_admit(slot__alloc_ctx *c, const slot_req *req, slot_event_rec *e, uint64_t *user_qty, slot_res *res);

/*
 * ---- client.c: the client limits of a new hold (docs/protocol.md, "Client
 * limits"; "Clarifications of v1.2": after user_limit, before sold_out).
 * slot__client_admit — for a hold or a cart item (req->op HOLD or HOLD_MANY)
 * with a client key: max_active_per_client from the key's stored count
 * (after expiring due holds when over), then client_rate's bucket (the
 * allocator's, in memory), which gives up one token when the hold may go on.
 * Over a limit: res = rate_limited with res->limit and retry_after_ms
 * (max_active: until the key's first held hold expires). 0, ENOMEM or an
 * LMDB error. e may be re-read (expiry). The writing allocator's thread.
 * slot__client_buckets_free — free the buckets (slot_alloc_close).
 * slot__client_note — h (new, held) carries req's client key when e has
 * max_active_per_client, so slot__hold_make and slot__hold_finish keep
 * the key's rows.
 */
int slot__client_admit(slot__alloc_ctx *c, const slot_req *req, slot_event_rec *e, slot_res *res);
/* slot__client_spend — a cart's deferred token (c->rate_due, set by
 * slot__client_admit under c->rate_defer): the key's bucket of c's event
 * gives it up now. 0 or ENOMEM. The writing allocator's thread. */
int slot__client_spend(slot__alloc_ctx *c, const slot_req *req);
void slot__client_buckets_free(slot_alloc *a);
void slot__client_note(slot_hold_rec *h, const slot_req *req, const slot_event_rec *e);

/*
 * ---- room.c: the waiting room (docs/protocol.md, "Admission").
 * slot__op_join, slot__op_admission, slot__op_set_admission — the ops; 0 or an LMDB error.
 * slot__grant_check — on an event with a room, grant (a NUL-terminated
 * string, NULL or "" = none) must be req->user's grant on c's event, not
 * expired: else res = admission_required. *seq := the grant's entry (0: no
 * room). 0 or an LMDB error.
 * slot__grant_use — the entry seq's grant was used by a new hold: it stops
 * counting as open (reads and writes c's event record: call it after the
 * caller wrote its copy). 0 or an LMDB error.
 * slot__room_perm — the lottery's permutation of 0..n-1 under key (or its inverse).
 */
int slot__op_join(slot__alloc_ctx *c, const slot_req *req, slot_res *res);
int slot__op_admission(slot__alloc_ctx *c, const slot_req *req, slot_res *res);
int slot__op_set_admission(slot__alloc_ctx *c, const slot_req *req, slot_res *res);
int slot__grant_check(slot__alloc_ctx *c, const slot_req *req, const char *grant, const slot_event_rec *e,
                      uint64_t *seq, slot_res *res);
int slot__grant_use(slot__alloc_ctx *c, uint64_t seq);
uint64_t slot__room_perm(uint64_t key, uint64_t n, uint64_t x, bool inverse);

/* slot__key_conflict — res = idempotency_conflict for a key used another way on event ev. */
void slot__key_conflict(slot_res *res, const char *request, const char *ev);

/* slot__waitlist_key_used — 0 when (user, request) has a waitlist entry on
 * c's event (any state), MDB_NOTFOUND when not, or an LMDB error. */
int slot__waitlist_key_used(slot__alloc_ctx *c, const char *user, size_t user_len, const char *request,
                            size_t request_len);

/* ---- the op files, called only by alloc.c's dispatcher (slot_alloc_run) */

/* slot__op_hold_many — hold_many, a cart of several events (cart.c). 0 or an LMDB error. */
int slot__op_hold_many(slot_alloc *a, MDB_txn *txn, const slot_req *req, uint64_t now_ms, slot_res *res);

/* slot__op_confirm — confirm, also partial and reacquire (confirm.c). 0 or an LMDB error. */
int slot__op_confirm(slot__alloc_ctx *c, const slot_req *req, slot_res *res);

/* slot__op_extend — extend (confirm.c). 0 or an LMDB error. */
int slot__op_extend(slot__alloc_ctx *c, const slot_req *req, slot_res *res);

/* slot__op_allocate, slot__op_deallocate — allocate and deallocate (block.c;
 * docs/protocol.md, "Allocations"). 0 or an LMDB error. */
int slot__op_allocate(slot__alloc_ctx *c, const slot_req *req, slot_res *res);
int slot__op_deallocate(slot__alloc_ctx *c, const slot_req *req, slot_res *res);

/* slot__view_blocks — v's "allocations": the blocks of c's event, in name order (block.c). 0 or an LMDB error. */
int slot__view_blocks(slot__alloc_ctx *c, slot_event_view *v);

/* slot__block_known — 0 when c's event has the block req->alloc names; else
 * SLOT__ANSWERED with invalid_argument naming allocation (block.c), or an LMDB error. */
int slot__block_known(slot__alloc_ctx *c, const slot_req *req, slot_res *res);

/* slot__op_waitlist — waitlist_join, waitlist_leave, waitlist, waitlist_entries (waitlist.c). */
int slot__op_waitlist(slot__alloc_ctx *c, const slot_req *req, slot_res *res);

/* ==== from idem.h ============================================================ */
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

/* ---- place.c: placement (docs/design.md, "Moving an event") */

/*
 * slot__place_fence — whether c's event is served here (its placement
 * record, slot/store.h): 0 yes; SLOT__ANSWERED with res = moving
 * (retry_after_ms; a write of an event relinquished here, or any op of one
 * staged here) or wrong_set (res->fields: event, set, gen; an event gone from
 * here or whose move here was undone). writes: the op writes (a relinquished
 * event's reads are served). Or an LMDB error. The caller's transaction.
 */
int slot__place_fence(slot__alloc_ctx *c, bool writes, slot_res *res);
/* slot__place_cart_fence — the same for every item of a hold_many: moving
 * for an item in a cut-over; wrong_set when every item is on the first
 * item's other set; cross_set (res->fields: the events not on the first
 * item's set, request order) when the items are on more than one set. */
int slot__place_cart_fence(slot_alloc *a, MDB_txn *txn, const slot_req *req, uint64_t now_ms, slot_res *res);
/* slot__op_place — runs one of the internal ops (req->op place_*, req->place
 * set; their rules: docs/design.md, "Moving an event"). Each refuses a state
 * it does not move from with invalid_argument and writes nothing then. */
int slot__op_place(slot__alloc_ctx *c, const slot_req *req, slot_res *res);

#endif
