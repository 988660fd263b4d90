/*
 * seat_int.h — seated events inside the allocator (docs/protocol.md,
 * "Seated events"; docs/design.md, "Seats"). seat.c owns the seat map's
 * records (the header, the rows, the name index, a hold's seat list) and the
 * event-level ops (create, view, seat_map, reshard, check); seat_hold.c the
 * hold's side (resolving ids, choosing seats, taking and giving them back);
 * seat_sum.c each shard's row summary, which lets the choosing skip rows
 * that cannot serve without reading them, and sold_out.
 * All three sit at the level of hold.c: they call the store and the random
 * numbers, never an op file. Internal to libslot.
 *
 * A seat's state is one byte of its row's record, the very character
 * seat_map shows: '.' free, 'h' held, 'c' confirmed ('x', an allocation, is
 * not made by this server: allocate on a seated event is refused). Row i of
 * the map (map order) is in shard i mod shards; the shard's free count is
 * the number of free seats of its rows, so the counted machinery (shards,
 * held, confirmed, check's invariant 1) stays true for a seated event.
 */
#ifndef SLOT_SEAT_INT_H
#define SLOT_SEAT_INT_H

#include "alloc_int.h"

#define SLOT__SEAT_FREE '.'
#define SLOT__SEAT_HELD 'h'
#define SLOT__SEAT_CONFIRMED 'c'

/* One row's record, decoded. */
typedef struct slot__seat_row {
    uint32_t idx; /* its place in map order, 0.. */
    uint8_t sec_len, name_len;
    uint8_t cat; /* 0: none; else 1 + index into the header's cats */
    char sec[SLOT_SEAT_NAME_BYTES_MAX + 1];
    char name[SLOT_SEAT_NAME_BYTES_MAX + 1];
    uint32_t from, to;                /* seat numbers */
    uint32_t free;                    /* '.' seats */
    uint32_t longest;                 /* the longest run of '.' */
    char st[SLOT_SEAT_ROW_SEATS_MAX]; /* st[n - from]: seat n's state */
} slot__seat_row;

/* A category's counters in the header. */
typedef struct slot__seat_cat {
    uint8_t len;
    char name[SLOT_SEAT_CATEGORY_BYTES_MAX + 1];
    uint64_t capacity, held, confirmed;
} slot__seat_cat;

/* The map's header. */
typedef struct slot__seat_hdr {
    uint32_t nrows, nsections, row_max;
    uint8_t ncats;
    slot__seat_cat cats[SLOT_SEAT_CATEGORIES_MAX];
} slot__seat_hdr;

/* One seat: its row and number. */
typedef struct slot__seat_ref {
    uint32_t row, num;
} slot__seat_ref;

/* A hold's seats, in its order (the order asked for, or chosen). */
typedef struct slot__seat_list {
    uint16_t n;
    slot__seat_ref s[SLOT_MAX_PER_REQUEST_MAX];
} slot__seat_list;

/* ---- seat.c: the records */

/* Row idx / the header / the hold's list into out. 0, MDB_NOTFOUND, MDB_CORRUPTED (bad bytes) or an LMDB error. */
int slot__seat_row_get(slot__alloc_ctx *c, uint32_t idx, slot__seat_row *out);
/* slot__seat_row_put — write row r (its free and longest fixed) and its
 * entry in its shard's summary (slot__seat_sum_note): nrows the header's
 * rows, shards the event's (1..SLOT_SHARDS_MAX). Both in c's write
 * transaction. 0, ENOMEM or an LMDB error. */
int slot__seat_row_put(slot__alloc_ctx *c, const slot__seat_row *r, uint32_t nrows, uint32_t shards);
int slot__seat_hdr_get(slot__alloc_ctx *c, slot__seat_hdr *out);
int slot__seat_hdr_put(slot__alloc_ctx *c, const slot__seat_hdr *h);
int slot__seat_list_get(slot__alloc_ctx *c, uint64_t seq, slot__seat_list *out);
int slot__seat_list_put(slot__alloc_ctx *c, uint64_t seq, const slot__seat_list *l);

/* slot__seat_row_fix — r's free and longest from its states. O(seats of the row). */
void slot__seat_row_fix(slot__seat_row *r);

/* slot__seat_id — "SECTION-ROW-NUMBER" of seat num of r into out (NUL-ended); its length. */
size_t slot__seat_id(const slot__seat_row *r, uint32_t num, char out[SLOT_SEAT_ID_BYTES_MAX + 1]);

/* slot__seat_extra — append raw JSON text (len bytes) to res->extra, a
 * comma first when it is not empty. 0 or ENOMEM. */
int slot__seat_extra(slot_res *res, const char *text, size_t len);

/* ---- seat.c: the event's side */

/*
 * slot__seat_create — write the seat map m of new event e (c's event; its
 * shards set): the header, every row (all free), the name index, and each
 * shard's free count (row i in shard i mod shards). e->capacity must be
 * m->seats. O(seats). 0 or an LMDB error.
 */
int slot__seat_create(slot__alloc_ctx *c, const slot_event_rec *e, const slot_seat_map *m);

/* slot__seat_view — append the view's "categories" (seated e only) to res->extra. 0, ENOMEM or an LMDB error. */
int slot__seat_view(slot__alloc_ctx *c, const slot_event_rec *e, slot_res *res);

/* slot__seat_map_op — the seat_map op: "rows" of c's event into res->extra
 * (invalid_argument on an unseated event). O(seats). 0 or an LMDB error. */
int slot__seat_map_op(slot__alloc_ctx *c, slot_res *res);

/* slot__seat_reshard — after reshard wrote e->shards shards (old_shards
 * before): each shard's free count := the free seats of its rows (rows
 * regroup by i mod shards), and the shards' summaries rebuilt (those of the
 * old layout not rewritten deleted). O(rows). 0, ENOMEM or an LMDB error. */
int slot__seat_reshard(slot__alloc_ctx *c, const slot_event_rec *e, uint32_t old_shards);

/*
 * slot__seat_check — check's seat invariant (docs/protocol.md, "Seated
 * events"): every seat in exactly one state, the states' counts equal the
 * event's free/held/confirmed, each shard's free count that of its rows, and
 * each category's counters those of its seats. Appends a description of the
 * first mismatch to detail (detail[0] stays 0 when all holds).
 * 0 or an LMDB error.
 */
int slot__seat_check(slot__alloc_ctx *c, const slot_event_rec *e, char *detail, size_t detail_len);

/* ---- seat_hold.c: the hold's side */

/* What a hold asked of a seated event, after slot__seat_resolve. */
typedef enum slot__seat_mode {
    SLOT__SEAT_NONE = 0,
    SLOT__SEAT_NAMED,
    SLOT__SEAT_ADJACENT,
    SLOT__SEAT_ANY
} slot__seat_mode;

typedef struct slot__seat_ask {
    slot__seat_mode mode;
    uint8_t cat;     /* 0: any category; else 1 + index */
    uint8_t sec_len; /* 0: any section */
    char sec[SLOT_SEAT_NAME_BYTES_MAX + 1];
    slot__seat_list named; /* NAMED: the seats, request order */
} slot__seat_ask;

/*
 * slot__seat_resolve — the seat fields of a hold on c's event (record e):
 * seat fields on an unseated event, an unknown or repeated seat id, an
 * unknown category or section, and adjacent with a qty longer than every
 * row are invalid_argument (SLOT__ANSWERED, res set). ask->mode is NONE for
 * an unseated event. Decision order: after the replay, before
 * max_per_request ("Clarifications of v1.2"). 0, SLOT__ANSWERED or an LMDB error.
 */
int slot__seat_resolve(slot__alloc_ctx *c, const slot_req *req, const slot_event_rec *e, slot__seat_ask *ask,
                       slot_res *res);

/*
 * slot__seat_pick — choose qty seats for ask (docs/protocol.md, "Seated
 * events"; "Clarifications of v1.2", Seats) into out: NAMED all or none
 * ("taken" lists those not free); ADJACENT one row, random shard then the
 * others in turn, the first clean choice (no single free seat left beside
 * it) in row then seat order within the first shard that has qty adjacent,
 * else that shard's first choice; ANY rows with the most free seats first,
 * lowest numbers first, the shard chosen then the others. None: sold_out
 * with available and max_adjacent (of the filter). 0 (out filled),
 * SLOT__ANSWERED (taken or sold_out in res) or an LMDB error.
 */
int slot__seat_pick(slot__alloc_ctx *c, const slot_event_rec *e, const slot__seat_ask *ask, uint32_t qty,
                    slot__seat_list *out, slot_res *res);


/*
 * slot__seat_take — the seats of c->seats (or best available of h->qty when
 * NULL: a cart item, a waitlist offer, a reacquire) become h's, in state
 * `as` (held, or confirmed for a reacquire's hold): their
 * states, the rows' shards' free counts, h's parts (one per shard), the
 * categories' held, and h's seat list record. The caller checked the seats
 * are free. 0 or an LMDB error (MDB_CORRUPTED: the counts disagree).
 */
int slot__seat_take(slot__alloc_ctx *c, const slot_event_rec *e, slot_hold_rec *h, slot_hold_status as);

/*
 * slot__seat_move — seats first..first+count-1 of h's list leave `from`
 * (held or confirmed): into confirmed they become 'c'; otherwise free, each
 * back to the shard its row is in now (a reshard regroups rows). Categories
 * follow. The list is kept whole (a partial confirm's kept seats are its
 * first h->qty). 0 or an LMDB error (MDB_CORRUPTED: a seat not in `from`).
 */
int slot__seat_move(slot__alloc_ctx *c, const slot_event_rec *e, const slot_hold_rec *h, slot_hold_status from,
                    slot_hold_status to, uint16_t first, uint16_t count);

/*
 * slot__seat_keep — a partial confirm of seated hold h: req's "seats" (a
 * subset of h's, kept in h's order) and/or qty decide the kept seats,
 * which move to the front of h's list; *keep := their number. Not a subset,
 * or seats and qty that disagree: invalid_argument (SLOT__ANSWERED).
 * 0, SLOT__ANSWERED or an LMDB error.
 */
int slot__seat_keep(slot__alloc_ctx *c, const slot_req *req, const slot_hold_rec *h, uint32_t *keep, slot_res *res);

/* slot__seat_res — append h's "seats":[...] (its first h->qty: after a partial
 * confirm the kept ones) to res->extra. 0, ENOMEM or an LMDB error. */
int slot__seat_res(slot__alloc_ctx *c, const slot_hold_rec *h, slot_res *res);

/* slot__seat_feed — h's seat ids (its first h->qty, as slot__seat_res) into
 * out, comma-separated, *len their bytes (at most SLOT_FEED_SEATS_BYTES_MAX).
 * 0, ENOMEM, MDB_CORRUPTED (no seat list) or an LMDB error. */
int slot__seat_feed(slot__alloc_ctx *c, const slot_hold_rec *h, char *out, uint32_t *len);

/* slot__seat_same — *same := true when req names the very seats of hold h
 * in the same order (a replay's test; after a partial confirm, which moved
 * the kept seats first, the same seats in any order). 0 or an LMDB error. */
int slot__seat_same(slot__alloc_ctx *c, const slot_req *req, const slot_hold_rec *h, bool *same);

/* ---- seat_sum.c: each shard's row summary (docs/design.md, "Seats") */

/* One row's entry: what its record says of it, for skipping rows unread. */
typedef struct slot__seat_sum_ent {
    uint16_t free, longest; /* the row record's free and longest (0..SLOT_SEAT_ROW_SEATS_MAX) */
    uint8_t cat;            /* the row's category (0: none) */
    uint16_t sec;           /* slot__seat_sec_hash of its section's name */
} slot__seat_sum_ent;

/* slot__seat_sec_hash — a 16-bit hash of section name sec (len bytes): equal
 * names hash equal; a match is confirmed with the row's own name. Pure. */
uint16_t slot__seat_sec_hash(const char *sec, size_t len);

/* slot__seat_sum_rows — how many of nrows rows shard s (< shards, 1..) has:
 * rows s, s+shards, ... (its positions 0..). Pure. */
uint32_t slot__seat_sum_rows(uint32_t nrows, uint32_t shards, uint32_t s);

/*
 * slot__seat_sum_load — shard s's entries, position j (row s + j*shards)
 * into out[j], out sized for slot__seat_sum_rows(nrows, shards, s); nrows
 * the header's. A block missing or not of this layout is rebuilt from the
 * row records in memory (nothing written; r is scratch). Reads c's
 * transaction (either kind). 0, ENOMEM, MDB_CORRUPTED (a row missing) or an LMDB error.
 */
int slot__seat_sum_load(slot__alloc_ctx *c, uint32_t nrows, uint32_t shards, uint32_t s, slot__seat_sum_ent *out,
                        slot__seat_row *r);

/* slot__seat_sum_note — row r (already written) into its shard's summary:
 * one get and one put of its block; a block missing or not of this layout
 * (a store from before the summary) is built from the rows and written.
 * c's write transaction. 0, ENOMEM or an LMDB error. */
int slot__seat_sum_note(slot__alloc_ctx *c, uint32_t nrows, uint32_t shards, const slot__seat_row *r);

/* slot__seat_sum_build — every shard's summary from the rows (create_event,
 * reshard), deleting old_shards' (0: none) blocks the new layout does not
 * rewrite. O(rows). c's write transaction. 0, ENOMEM or an LMDB error. */
int slot__seat_sum_build(slot__alloc_ctx *c, uint32_t nrows, uint32_t shards, uint32_t old_shards);

/* slot__seat_sum_check — check's part: every summary block present is of
 * this layout and each entry equals its row record (a missing one is
 * allowed: it is built on the next write). The first mismatch described in
 * detail (detail_len bytes; left as it is when all holds, and not looked at
 * when detail is already set). 0 or an LMDB error. */
int slot__seat_sum_check(slot__alloc_ctx *c, uint32_t nrows, uint32_t shards, char *detail, size_t detail_len);

/* slot__seat_row_fits — whether row r is of ask's category and section. Pure. */
bool slot__seat_row_fits(const slot__seat_ask *ask, const slot__seat_row *r);

/* slot__seat_sum_may_fit — false when entry x cannot be of ask's category
 * and section (sec_hash: slot__seat_sec_hash of ask's section); true:
 * it may (the section then confirmed with slot__seat_row_fits). Pure. */
bool slot__seat_sum_may_fit(const slot__seat_ask *ask, uint16_t sec_hash, const slot__seat_sum_ent *x);

/* slot__seat_sold_out — res := sold_out for ask on e with available and
 * max_adjacent of its filter (the counted check found too few free, or no
 * choice was found), from the shards' summaries. SLOT__ANSWERED, ENOMEM or
 * an LMDB error. O(rows / SLOT_SEAT_SUM_ROWS_MAX + the section's rows). */
int slot__seat_sold_out(slot__alloc_ctx *c, const slot_event_rec *e, const slot__seat_ask *ask, slot_res *res);

#endif
