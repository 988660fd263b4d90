/*
 * hold.c — the hold's life: its birth (slot__hold_make, the one writer of a
 * new held hold, for a plain hold, a cart's item and a waitlist join or
 * offer), the state machine's one writer (slot__hold_finish), the partial
 * confirm and extend, the feed entries of each move, the hand-out of
 * returned units to those waiting (slot__waitlist_serve) and the expiry of
 * due holds (the sweeper and the "expire" op). It calls only the random
 * numbers (alloc_rng.c), the idempotency index (alloc_int.h, cold.c) and the
 * store, never an op file or alloc_core.c. Internal to libslot; see alloc_int.h.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "alloc_int.h"
#include "seat_int.h"
#include "slot/assert.h"
#include "slot/failpoint.h"
#include "slot/feed.h"

typedef slot__alloc_ctx ctx;

bool slot__hold_due(const slot_hold_rec *h, uint64_t now_ms)
{
    return h->status == SLOT_HOLD_HELD && now_ms >= h->expires_at_ms;
}

static int shard_add(ctx *c, const char *ev, size_t ev_len, uint16_t shard, uint64_t units)
{
    uint64_t f;
    int rc = slot_store_shard_get(c->st, c->txn, ev, ev_len, shard, &f);
    if (rc == 0)
        rc = slot_store_shard_put(c->st, c->txn, ev, ev_len, shard, f + units);
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

/* Gives units back to event ev (record e): each part to the shard it came
 * from when that shard still exists, the rest spread over the current shards
 * starting at one picked by the hold's sequence number (docs/protocol.md,
 * "reshard"). */
static int units_return(ctx *c, const char *ev, size_t ev_len, const slot_event_rec *e, const slot_hold_part *parts,
                        uint16_t nparts, uint64_t seq)
{
    uint64_t leftover = 0;
    for (uint16_t i = 0; i < nparts; i++) {
        if (parts[i].shard < e->shards) {
            int rc = shard_add(c, ev, ev_len, parts[i].shard, parts[i].qty);
            if (rc != 0)
                return rc;
        } else {
            leftover += parts[i].qty;
        }
    }
    uint32_t n = e->shards;
    for (uint32_t i = 0; leftover > 0 && i < n; i++) {
        uint64_t share = leftover / (n - i) + (leftover % (n - i) ? 1 : 0);
        int rc = shard_add(c, ev, ev_len, (uint16_t)((seq + i) % n), share);
        if (rc != 0)
            return rc;
        leftover -= share;
    }
    return 0;
}

/* Where a block hold's units go back (docs/protocol.md, "Allocations"): to
 * its block while the block exists (*alive), else to the free shards. The
 * block's counters move here: `from` (held or confirmed) loses qty; into
 * confirmed it gains it, else remaining does, and the user's row drops. */
static int block_back(ctx *c, const slot_hold_rec *h, uint32_t qty, slot_hold_status from, slot_hold_status to,
                      bool *alive)
{
    *alive = false;
    if (h->alloc_len == 0)
        return 0;
    slot_block_rec b;
    int rc = slot_store_block_get(c->st, c->txn, c->ev, c->ev_len, h->alloc, h->alloc_len, &b);
    if (rc == MDB_NOTFOUND)
        return 0; /* deallocated: the units come back to the free shards */
    if (rc != 0)
        return rc;
    *alive = !b.closed; /* a closed block's units come back to the free shards */
    uint64_t *counter = from == SLOT_HOLD_HELD ? &b.held : &b.confirmed;
    if (*counter < qty)
        return MDB_CORRUPTED;
    *counter -= qty;
    if (to == SLOT_HOLD_CONFIRMED)
        b.confirmed += qty;
    else if (!b.closed)
        b.remaining += qty;
    else
        b.qty -= qty;
    if (b.closed && b.held + b.confirmed == 0)
        rc = slot_store_block_del(c->st, c->txn, c->ev, c->ev_len, b.name, b.name_len); /* its last hold ended */
    else
        rc = slot_store_block_put(c->st, c->txn, c->ev, c->ev_len, &b);
    if (rc == 0 && to != SLOT_HOLD_CONFIRMED) { /* kept for every block: its max_per_user may be set later */
        uint64_t u = 0;
        rc = slot_store_block_user_get(c->st, c->txn, c->ev, c->ev_len, h->alloc, h->alloc_len, h->user, h->user_len,
                                       &u);
        if (rc == 0 && u < qty)
            rc = MDB_CORRUPTED;
        if (rc == 0)
            rc = slot_store_block_user_put(c->st, c->txn, c->ev, c->ev_len, h->alloc, h->alloc_len, h->user,
                                           h->user_len, u - qty);
    }
    return rc;
}

/* Units going back to event ev (record e, written by the caller): into the
 * block's count (allocated) while it is alive, else to the shards, each part
 * to its own shard; a block hold's units (no parts) are spread. */
static int give_back(ctx *c, const char *ev, size_t ev_len, slot_event_rec *e, const slot_hold_part *parts,
                     uint16_t nparts, uint64_t seq, uint32_t qty, bool to_block)
{
    if (to_block) {
        e->allocated += qty;
        return 0;
    }
    if (nparts == 0 && qty > 0) {
        slot_hold_part spread = {UINT16_MAX, (uint16_t)qty}; /* no such shard: spread over the shards */
        return units_return(c, ev, ev_len, e, &spread, 1, seq);
    }
    return units_return(c, ev, ev_len, e, parts, nparts, seq);
}

/* ---- the chain: a hold's event's ancestors (docs/protocol.md, "Ticket types") */

int slot__chain_load(ctx *c, const slot_event_rec *e, slot__chain *ch)
{
    ch->n = 0;
    const slot_event_rec *at = e;
    while (at->parent_len > 0) {
        if (ch->n == SLOT_ANCESTORS_MAX)
            return MDB_CORRUPTED; /* create_event refuses a 4th level */
        slot__anc *an = &ch->anc[ch->n];
        an->len = at->parent_len;
        memcpy(an->name, at->parent, at->parent_len);
        an->name[an->len] = 0;
        int rc = slot_store_event_get(c->st, c->txn, an->name, an->len, &an->rec);
        if (rc != 0)
            return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc; /* a parent is never removed */
        ch->n++;
        at = &an->rec;
    }
    return 0;
}

uint64_t slot__free_units(const slot_event_rec *e)
{
    return e->capacity - e->held - e->confirmed - e->allocated;
}

int slot__chain_free(ctx *c, const slot_event_rec *e, uint32_t qty, uint64_t *avail,
                     char short_ev[SLOT_EVENT_BYTES_MAX + 1])
{
    *avail = slot__free_units(e);
    if (short_ev)
        short_ev[0] = 0;
    if (short_ev && *avail < qty && e->parent_len > 0) { /* "short" names an event of a chain: a child's */
        memcpy(short_ev, c->ev, c->ev_len);
        short_ev[c->ev_len] = 0;
    }
    if (e->parent_len == 0)
        return 0;
    slot__chain ch;
    int rc = slot__chain_load(c, e, &ch);
    for (uint8_t i = 0; rc == 0 && i < ch.n; i++) {
        uint64_t f = slot__free_units(&ch.anc[i].rec);
        if (short_ev && f < qty && short_ev[0] == 0) /* the nearest event that lacked */
            memcpy(short_ev, ch.anc[i].name, ch.anc[i].len + 1u);
        if (f < *avail)
            *avail = f;
    }
    return rc;
}

int slot__chain_users(ctx *c, const slot_event_rec *e, const char *user, size_t user_len, uint64_t add, uint64_t sub)
{
    if (e->parent_len == 0)
        return 0;
    slot__chain ch;
    int rc = slot__chain_load(c, e, &ch);
    for (uint8_t i = 0; rc == 0 && i < ch.n; i++) {
        if (ch.anc[i].rec.max_per_user == 0)
            continue;
        uint64_t u = 0;
        rc = slot_store_user_get(c->st, c->txn, ch.anc[i].name, ch.anc[i].len, user, user_len, &u);
        if (rc == 0 && u + add < sub)
            rc = MDB_CORRUPTED;
        if (rc == 0)
            rc = slot_store_user_put(c->st, c->txn, ch.anc[i].name, ch.anc[i].len, user, user_len, u + add - sub);
    }
    return rc;
}

/* The user's row on an ancestor (its max_per_user counts the units held
 * through all its descendants): += add, -= sub. No row without a limit. */
static int anc_user_move(ctx *c, const slot__anc *an, const slot_hold_rec *h, uint64_t add, uint64_t sub)
{
    if (an->rec.max_per_user == 0)
        return 0;
    uint64_t u;
    int rc = slot_store_user_get(c->st, c->txn, an->name, an->len, h->user, h->user_len, &u);
    if (rc == 0 && u + add < sub)
        return MDB_CORRUPTED;
    if (rc == 0)
        rc = slot_store_user_put(c->st, c->txn, an->name, an->len, h->user, h->user_len, u + add - sub);
    return rc;
}

/* Takes qty units from event ev's shards: random start shard, then the
 * others in turn (docs/design.md, "The allocation rule"); parts filled. The
 * caller has checked that the event's free units (equal to the sum over
 * shards by invariant 1) are at least qty. */
static int shards_take(ctx *c, const char *ev, size_t ev_len, const slot_event_rec *e, uint32_t qty,
                       slot_hold_part *parts, uint16_t *nparts)
{
    uint32_t n = e->shards;
    uint32_t start = (uint32_t)(slot__rng_next(c->a) % n);
    uint32_t taken = 0;
    *nparts = 0;
    for (uint32_t i = 0; i < n && taken < qty; i++) {
        uint16_t s = (uint16_t)((start + i) % n);
        uint64_t f;
        int rc = slot_store_shard_get(c->st, c->txn, ev, ev_len, s, &f);
        if (rc != 0)
            return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
        if (f == 0)
            continue;
        uint32_t want = qty - taken;
        uint32_t take = f < want ? (uint32_t)f : want;
        rc = slot_store_shard_put(c->st, c->txn, ev, ev_len, s, f - take);
        if (rc != 0)
            return rc;
        parts[*nparts].shard = s;
        parts[*nparts].qty = (uint16_t)take;
        (*nparts)++;
        taken += take;
    }
    return taken == qty ? 0 : MDB_CORRUPTED; /* shards held fewer than the counters said */
}

/* The ancestors' side of a hold's move: each ancestor's counter `from`
 * (held or confirmed) loses qty; into confirmed it gains it, else the units
 * go back to that ancestor's shards (its own parts of the hold) and the
 * user's row there drops. Each ancestor is written once. */
static int chain_finish(ctx *c, const slot_event_rec *e, const slot_hold_rec *h, slot_hold_status from,
                        slot_hold_status to, bool to_block)
{
    if (e->parent_len == 0)
        return 0;
    slot__chain ch;
    int rc = slot__chain_load(c, e, &ch);
    if (rc == 0 && ch.n != h->nanc)
        rc = MDB_CORRUPTED; /* a hold took from every ancestor of its event */
    for (uint8_t i = 0; rc == 0 && i < ch.n; i++) {
        slot__anc *an = &ch.anc[i];
        uint64_t *counter = from == SLOT_HOLD_HELD ? &an->rec.held : &an->rec.confirmed;
        if (*counter < h->qty)
            return MDB_CORRUPTED;
        *counter -= h->qty;
        if (to == SLOT_HOLD_CONFIRMED) {
            an->rec.confirmed += h->qty;
        } else {
            rc = give_back(c, an->name, an->len, &an->rec, h->anc[i].parts, h->anc[i].nparts, h->seq, h->qty, to_block);
            if (rc == 0)
                rc = anc_user_move(c, an, h, 0, h->qty);
        }
        if (rc == 0)
            rc = slot_store_event_put(c->st, c->txn, an->name, an->len, &an->rec);
    }
    return rc;
}

/* The client key's count of units held (docs/protocol.md, "Client limits")
 * moves by delta; below 0 means a corrupt store. */
static int client_units(ctx *c, const slot_hold_rec *h, int64_t delta)
{
    uint64_t n = 0;
    int rc = slot_store_client_get(c->st, c->txn, c->ev, c->ev_len, h->client, h->client_len, &n);
    if (rc == 0 && delta < 0 && n < (uint64_t)-delta)
        return MDB_CORRUPTED;
    if (rc == 0)
        rc = slot_store_client_put(c->st, c->txn, c->ev, c->ev_len, h->client, h->client_len,
                                   (uint64_t)((int64_t)n + delta));
    return rc;
}

/* A held hold of a client key comes (delta > 0) or goes: its units and its
 * 'd' row (the key's held holds, for retry_after_ms). */
static int client_move(ctx *c, const slot_hold_rec *h, int64_t delta)
{
    int rc = client_units(c, h, delta);
    if (rc == 0 && delta > 0)
        rc = slot_store_client_hold_add(c->st, c->txn, c->ev, c->ev_len, h->client, h->client_len, h->seq);
    if (rc == 0 && delta < 0) {
        rc = slot_store_client_hold_del(c->st, c->txn, c->ev, c->ev_len, h->client, h->client_len, h->seq);
        if (rc == MDB_NOTFOUND)
            rc = MDB_CORRUPTED;
    }
    return rc;
}

/*
 * hold_finish — the one place a hold changes state. Moves the hold's units
 * (back to the shards, or from held to confirmed) on its event and on every
 * ancestor, fixes the event and user counters, drops the expiry entry when it
 * leaves "held", and writes the hold and the event. Counters that would go
 * negative mean the store is corrupt: MDB_CORRUPTED, and the batch is aborted.
 */
int slot__hold_finish(ctx *c, slot_event_rec *e, slot_hold_rec *h, slot_hold_status to)
{
    SLOT_ASSERT(slot_hold_transition_ok(h->status, to));
    slot_hold_status from = h->status;
    uint64_t *counter = from == SLOT_HOLD_HELD ? &e->held : &e->confirmed;
    if (*counter < h->qty)
        return MDB_CORRUPTED;
    *counter -= h->qty;
    bool to_block = false;
    int rc = block_back(c, h, h->qty, from, to, &to_block);
    if (rc != 0) {
    } else if (to == SLOT_HOLD_CONFIRMED) {
        e->confirmed += h->qty;
        if (e->seated) /* the seats become confirmed (seat_int.h) */
            rc = slot__seat_move(c, e, h, from, to, 0, h->qty);
    } else {
        rc = e->seated ? slot__seat_move(c, e, h, from, to, 0, h->qty) /* each seat back to its row's shard */
                       : give_back(c, c->ev, c->ev_len, e, h->parts, h->nparts, h->seq, h->qty, to_block);
        if (rc == 0 && e->max_per_user > 0) {
            uint64_t u;
            rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, h->user, h->user_len, &u);
            if (rc == 0 && u < h->qty)
                rc = MDB_CORRUPTED;
            if (rc == 0)
                rc = slot_store_user_put(c->st, c->txn, c->ev, c->ev_len, h->user, h->user_len, u - h->qty);
        }
    }
    if (rc == 0)
        rc = chain_finish(c, e, h, from, to, to_block);
    if (rc == 0 && from == SLOT_HOLD_HELD && h->client_len > 0)
        rc = client_move(c, h, -(int64_t)h->qty);
    if (rc == 0 && from == SLOT_HOLD_HELD) {
        rc = slot_store_expiry_del(c->st, c->txn, h->expires_at_ms, c->ev, c->ev_len, h->seq);
        if (rc == MDB_NOTFOUND)
            rc = MDB_CORRUPTED;
    }
    h->status = to;
    if (rc == 0)
        rc = slot_store_hold_put(c->st, c->txn, c->ev, c->ev_len, h);
    if (rc == 0)
        rc = slot__hold_feed_seated(c, h, slot_feed_type_of_status(to), e->seated);
    /* The units that came back go to those waiting, in this commit; their
     * hold.offered entries follow the move that freed the units. */
    if (rc == 0 && to != SLOT_HOLD_CONFIRMED)
        rc = slot__waitlist_serve(c, e);
    if (rc == 0)
        rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, e);
    return rc;
}

/*
 * The partial confirm (docs/protocol.md, "Partial confirm"): the last parts
 * of the hold give back qty - keep units to their shards, the user's total
 * and the event's held count drop by as much, and the kept part moves from
 * held to confirmed through slot__hold_finish, all in the caller's
 * transaction. The hold's parts then add up to its (confirmed) qty, and
 * `returned` records what went back, so a replay tells the first outcome.
 */
/* Moves the last `back` units of parts (nparts of them) into give (which
 * starts empty); parts shrink by as much. */
static void parts_give_back(slot_hold_part *parts, uint16_t *nparts, uint32_t back, slot_hold_part *give,
                            uint16_t *ngive)
{
    *ngive = 0;
    for (uint32_t need = back; need > 0;) {
        SLOT_ASSERT(*nparts > 0); /* the parts add up to qty (invariant 3) */
        slot_hold_part *p = &parts[*nparts - 1];
        uint16_t take = p->qty <= need ? p->qty : (uint16_t)need;
        give[*ngive].shard = p->shard;
        give[(*ngive)++].qty = take;
        p->qty = (uint16_t)(p->qty - take);
        if (p->qty == 0)
            (*nparts)--;
        need -= take;
    }
}

/* A partial confirm's give-back on every ancestor: the last `back` units of
 * its own parts go back to its shards, its held and the user's row there
 * drop by as much; each ancestor written once. */
static int chain_give_back(ctx *c, const slot_event_rec *e, slot_hold_rec *h, uint32_t back, bool to_block)
{
    if (e->parent_len == 0)
        return 0;
    slot__chain ch;
    int rc = slot__chain_load(c, e, &ch);
    if (rc == 0 && ch.n != h->nanc)
        rc = MDB_CORRUPTED;
    for (uint8_t i = 0; rc == 0 && i < ch.n; i++) {
        slot__anc *an = &ch.anc[i];
        slot_hold_part give[SLOT_PARTS_MAX];
        uint16_t ngive = 0;
        if (h->alloc_len == 0)
            parts_give_back(h->anc[i].parts, &h->anc[i].nparts, back, give, &ngive);
        if (an->rec.held < back)
            return MDB_CORRUPTED;
        an->rec.held -= back;
        rc = give_back(c, an->name, an->len, &an->rec, give, ngive, h->seq, back, to_block);
        if (rc == 0)
            rc = anc_user_move(c, an, h, 0, back);
        if (rc == 0)
            rc = slot_store_event_put(c->st, c->txn, an->name, an->len, &an->rec);
    }
    return rc;
}

/*
 * The partial confirm (docs/protocol.md, "Partial confirm"): the last parts
 * of the hold give back qty - keep units to their shards (on its event and on
 * every ancestor), the user's totals and the held counts drop by as much, and
 * the kept part moves from held to confirmed through slot__hold_finish, all in
 * the caller's transaction. The hold's parts then add up to its (confirmed)
 * qty, and `returned` records what went back, so a replay tells the first
 * outcome.
 */
int slot__hold_confirm(ctx *c, slot_event_rec *e, slot_hold_rec *h, uint32_t keep)
{
    SLOT_ASSERT(h->status == SLOT_HOLD_HELD);
    SLOT_ASSERT(keep >= 1 && keep <= h->qty);
    uint32_t back = h->qty - keep;
    if (back > 0) {
        slot_hold_part give[SLOT_PARTS_MAX];
        uint16_t ngive = 0;
        if (h->alloc_len == 0)
            parts_give_back(h->parts, &h->nparts, back, give, &ngive);
        if (e->held < back)
            return MDB_CORRUPTED;
        e->held -= back;
        bool to_block = false;
        int rc = block_back(c, h, back, SLOT_HOLD_HELD, SLOT_HOLD_RELEASED, &to_block);
        if (rc == 0 && e->seated) /* the seats after the kept ones (slot__seat_keep put those first) */
            rc = slot__seat_move(c, e, h, SLOT_HOLD_HELD, SLOT_HOLD_RELEASED, (uint16_t)keep, (uint16_t)back);
        else if (rc == 0)
            rc = give_back(c, c->ev, c->ev_len, e, give, ngive, h->seq, back, to_block);
        if (rc == 0 && e->max_per_user > 0) {
            uint64_t u;
            rc = slot_store_user_get(c->st, c->txn, c->ev, c->ev_len, h->user, h->user_len, &u);
            if (rc == 0 && u < back)
                rc = MDB_CORRUPTED;
            if (rc == 0)
                rc = slot_store_user_put(c->st, c->txn, c->ev, c->ev_len, h->user, h->user_len, u - back);
        }
        if (rc == 0)
            rc = chain_give_back(c, e, h, back, to_block);
        if (rc == 0 && h->client_len > 0)
            rc = client_units(c, h, -(int64_t)back);
        if (rc != 0)
            return rc;
        h->qty = (uint16_t)keep;
        h->returned = (uint16_t)back;
    }
    int rc = slot__hold_finish(c, e, h, SLOT_HOLD_CONFIRMED);
    /* The units given back go to those waiting, after the hold.confirmed entry. */
    if (rc == 0 && back > 0) {
        rc = slot__waitlist_serve(c, e);
        if (rc == 0)
            rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, e);
    }
    return rc;
}

int slot__hold_extend(ctx *c, slot_hold_rec *h, uint64_t by_ms)
{
    SLOT_ASSERT(h->status == SLOT_HOLD_HELD);
    int rc = slot_store_expiry_del(c->st, c->txn, h->expires_at_ms, c->ev, c->ev_len, h->seq);
    if (rc == MDB_NOTFOUND)
        return MDB_CORRUPTED; /* every held hold has its expiry entry */
    h->expires_at_ms += by_ms;
    h->extensions++;
    if (rc == 0)
        rc = slot_store_expiry_put(c->st, c->txn, h->expires_at_ms, c->ev, c->ev_len, h->seq);
    if (rc == 0)
        rc = slot_store_hold_put(c->st, c->txn, c->ev, c->ev_len, h);
    slot_event_rec e; /* extends are rare: whether the event is seated is read here */
    if (rc == 0)
        rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, &e);
    if (rc == 0)
        rc = slot__hold_feed_seated(c, h, SLOT_FEED_HOLD_EXTENDED, e.seated);
    return rc;
}

/* ---- a new held hold */

/* Takes h->qty units from c's event's shards and from every ancestor's
 * (each by its own random pick and fallback, docs/protocol.md, "Ticket
 * types"), filling h's parts and ancestors' parts; each ancestor's `as`
 * counter (held or confirmed) and the user's row there (with max_per_user)
 * grow by qty and the ancestor is written. The caller checked the units are
 * free on the whole chain and updates e's counters itself. */
/* A block hold's units come out of the block (docs/protocol.md,
 * "Allocations"): remaining -= qty, held (or confirmed) += qty, and the
 * user's row of the block. The caller checked remaining. */
static int block_take(ctx *c, const slot_hold_rec *h, slot_hold_status as)
{
    slot_block_rec b;
    int rc = slot_store_block_get(c->st, c->txn, c->ev, c->ev_len, h->alloc, h->alloc_len, &b);
    if (rc == 0 && b.remaining < h->qty)
        rc = MDB_CORRUPTED;
    if (rc != 0)
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    b.remaining -= h->qty;
    if (as == SLOT_HOLD_HELD)
        b.held += h->qty;
    else
        b.confirmed += h->qty;
    rc = slot_store_block_put(c->st, c->txn, c->ev, c->ev_len, &b);
    if (rc == 0) { /* the user's row of the block, whether or not it has a max_per_user (allocate may set one) */
        uint64_t u = 0;
        rc = slot_store_block_user_get(c->st, c->txn, c->ev, c->ev_len, h->alloc, h->alloc_len, h->user, h->user_len,
                                       &u);
        if (rc == 0)
            rc = slot_store_block_user_put(c->st, c->txn, c->ev, c->ev_len, h->alloc, h->alloc_len, h->user,
                                           h->user_len, u + h->qty);
    }
    return rc;
}

int slot__units_take(ctx *c, const slot_event_rec *e, slot_hold_rec *h, slot_hold_status as)
{
    SLOT_ASSERT(as == SLOT_HOLD_HELD || as == SLOT_HOLD_CONFIRMED);
    bool blk = h->alloc_len > 0;
    int rc = blk         ? block_take(c, h, as)
             : e->seated ? slot__seat_take(c, e, h, as) /* the seats chosen (c->seats), or best available */
                         : shards_take(c, c->ev, c->ev_len, e, h->qty, h->parts, &h->nparts);
    if (blk)
        h->nparts = 0;
    h->nanc = 0;
    if (rc != 0 || e->parent_len == 0)
        return rc;
    slot__chain ch;
    rc = slot__chain_load(c, e, &ch);
    for (uint8_t i = 0; rc == 0 && i < ch.n; i++) {
        slot__anc *an = &ch.anc[i];
        if (blk) { /* the block's units are counted in each ancestor's allocated: they move to held */
            if (an->rec.allocated < h->qty)
                return MDB_CORRUPTED;
            an->rec.allocated -= h->qty;
            h->anc[i].nparts = 0;
        } else if (slot__free_units(&an->rec) < h->qty) {
            return MDB_CORRUPTED; /* the caller checked the chain */
        } else {
            rc = shards_take(c, an->name, an->len, &an->rec, h->qty, h->anc[i].parts, &h->anc[i].nparts);
        }
        if (as == SLOT_HOLD_HELD)
            an->rec.held += h->qty;
        else
            an->rec.confirmed += h->qty;
        if (rc == 0)
            rc = h->kind == SLOT_HOLD_KIND_WAITLIST && h->origin != 0
                     ? 0 /* an offer: its join counted the units on every ancestor */
                     : anc_user_move(c, an, h, h->qty, 0);
        if (rc == 0)
            rc = slot_store_event_put(c->st, c->txn, an->name, an->len, &an->rec);
        h->nanc = (uint8_t)(i + 1);
    }
    return rc;
}

void slot__hold_new(slot_hold_rec *h, const char *user, size_t user_len, const char *request, size_t request_len,
                    uint32_t qty)
{
    h->seq = h->tag = h->origin = 0;
    h->nparts = h->extensions = h->returned = 0;
    h->replaced_by_seq = h->replaced_by_tag = h->replaces_seq = h->replaces_tag = 0;
    h->status = SLOT_HOLD_HELD;
    h->qty = (uint16_t)qty;
    h->user_len = (uint8_t)user_len;
    memcpy(h->user, user, user_len);
    h->user[user_len] = 0;
    h->request_len = (uint8_t)request_len;
    memcpy(h->request, request, request_len);
    h->request[request_len] = 0;
    h->kind = SLOT_HOLD_KIND_PLAIN;
    h->nanc = 0;
    h->alloc_len = 0;
    h->alloc[0] = 0;
    h->client_len = 0;
    h->client[0] = 0;
}

/* The writes of a new held hold (docs/design.md, "The allocation rule"): its
 * seq, tag and times, the shards, the hold, the idempotency entry, the expiry
 * entry, the user's total (user_total: the new total, with max_per_user;
 * UINT64_MAX leaves the row alone) and e's counters. The caller writes e. */
int slot__hold_make(ctx *c, slot_event_rec *e, slot_hold_rec *h, uint64_t user_total)
{
    h->seq = e->next_seq++;
    h->tag = slot__rng_next(c->a);
    h->created_at_ms = c->now_ms;
    h->expires_at_ms = c->now_ms + e->hold_ttl_ms;
    int rc = slot__units_take(c, e, h, SLOT_HOLD_HELD);
    e->held += h->qty;
    if (h->alloc_len > 0) { /* the block's unused units were counted in allocated */
        SLOT_ASSERT(e->allocated >= h->qty);
        e->allocated -= h->qty;
    }
    if (rc == 0 && SLOT_FAIL(AFTER_SHARD_UPDATE))
        rc = EIO;
    if (rc == 0)
        rc = slot_store_hold_add(c->st, c->txn, c->ev, c->ev_len, h);
    if (rc == 0 && SLOT_FAIL(AFTER_HOLD_INSERT))
        rc = EIO;
    /* The caller's slot__request_find found no entry for this key (or dropped
     * a stale one), and nothing since added one: add without looking again. */
    bool offer = h->kind == SLOT_HOLD_KIND_WAITLIST && h->origin != 0; /* its key was never looked up here */
    SLOT_ASSERT(!slot__idem_cold(c->a->idem, c->ev, c->ev_len));       /* slot__idem_event_ready ran */
    if (rc == 0 && (offer ? slot__idem_put : slot__idem_add)(c->a->idem, c->ev, c->ev_len, h->user, h->user_len,
                                                             h->request, h->request_len, h->seq) != 0)
        rc = ENOMEM; /* the batch aborts; the entry, if any, is dropped as stale later */
    if (rc == 0 && SLOT_FAIL(AFTER_IDEMPOTENCY_INSERT))
        rc = EIO; /* leaves a stale index entry: slot__request_find must see through it */
    if (rc == 0 && SLOT_FAIL(MAP_FULL))
        rc = MDB_MAP_FULL;
    if (rc == 0)
        rc = slot_store_expiry_put(c->st, c->txn, h->expires_at_ms, c->ev, c->ev_len, h->seq);
    if (rc == 0 && e->max_per_user > 0 && user_total != UINT64_MAX)
        rc = slot_store_user_put(c->st, c->txn, c->ev, c->ev_len, h->user, h->user_len, user_total);
    if (rc == 0 && h->client_len > 0) /* docs/protocol.md, "Client limits": the key's units held */
        rc = client_move(c, h, (int64_t)h->qty);
    if (rc == 0 && !offer) /* an offer's entry is hold.offered, written by the waitlist */
        rc = slot__hold_feed_seated(c, h, SLOT_FEED_HOLD_HELD, e->seated);
    return rc;
}

/* ---- the feed's entries (slot/feed.h), in the change's own transaction */

int slot__hold_feed(ctx *c, const slot_hold_rec *h, slot_feed_type type)
{
    return slot__hold_feed_seated(c, h, type, false);
}

int slot__hold_feed_seated(ctx *c, const slot_hold_rec *h, slot_feed_type type, bool seated)
{
    slot_feed_entry f; /* ~50 KiB with room for the seats; only the fixed part is cleared */
    memset(&f, 0, offsetof(slot_feed_entry, view));
    f.type = type;
    f.at_ms = c->now_ms;
    f.event_len = (uint8_t)c->ev_len;
    memcpy(f.event, c->ev, c->ev_len);
    f.hold_seq = h->seq;
    f.hold_tag = h->tag;
    f.user_len = h->user_len;
    memcpy(f.user, h->user, h->user_len);
    f.request_len = h->request_len;
    memcpy(f.request, h->request, h->request_len);
    f.qty = h->qty; /* after a partial confirm: the confirmed part */
    f.expires_at_ms = h->expires_at_ms;
    f.returned = h->returned;
    f.replaces_seq = h->replaces_seq; /* a reacquire's hold: the hold it replaced */
    f.replaces_tag = h->replaces_tag;
    f.alloc_len = h->alloc_len;
    memcpy(f.alloc, h->alloc, h->alloc_len + 1u);
    if (h->nanc > 0) { /* a family's hold: its chain (docs/protocol.md, "Ticket types") */
        slot_event_rec e;
        slot__chain ch;
        int rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, &e);
        if (rc == 0)
            rc = slot__chain_load(c, &e, &ch);
        if (rc != 0)
            return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
        f.nchain = ch.n;
        for (uint8_t i = 0; i < ch.n; i++) {
            f.chain_len[i] = ch.anc[i].len;
            memcpy(f.chain[i], ch.anc[i].name, ch.anc[i].len + 1u);
        }
    }
    f.seats_len = 0;
    if (seated) { /* docs/protocol.md, "Seated events": feed entries carry "seats" */
        int rc = slot__seat_feed(c, h, f.seats, &f.seats_len);
        if (rc != 0)
            return rc;
    }
    return slot_feed_append(c->st, c->txn, &f);
}

int slot__event_feed(ctx *c, const slot_event_view *v, slot_feed_type type)
{
    slot_feed_entry f;
    memset(&f, 0, offsetof(slot_feed_entry, seats)); /* an event entry has no seats (seats_len 0) */
    f.type = type;
    f.at_ms = c->now_ms;
    f.event_len = (uint8_t)c->ev_len;
    memcpy(f.event, c->ev, c->ev_len);
    f.view = *v;
    return slot_feed_append(c->st, c->txn, &f);
}

/* ---- expiry */

typedef struct due {
    uint64_t at, seq;
    uint8_t ev_len;
    char ev[SLOT_EVENT_BYTES_MAX + 1];
} due;

typedef struct due_list {
    due items[SLOT_EXPIRE_CHUNK];
    size_t n;
    const char *only_ev; /* NULL: every event */
    size_t only_len;
} due_list;

static int due_collect(void *p, uint64_t at, const char *ev, size_t ev_len, uint64_t seq)
{
    due_list *l = p;
    if (l->only_ev && (ev_len != l->only_len || memcmp(ev, l->only_ev, ev_len) != 0))
        return 0;
    due *d = &l->items[l->n++];
    d->at = at;
    d->seq = seq;
    d->ev_len = (uint8_t)ev_len;
    memcpy(d->ev, ev, ev_len);
    d->ev[ev_len] = 0;
    return l->n == SLOT_EXPIRE_CHUNK ? 1 : 0; /* 1 stops the scan: the chunk is full */
}

/* Expires one due hold named by the expiry index. */
static int expire_one(slot_alloc *a, MDB_txn *txn, const due *d, uint64_t now_ms)
{
    slot__alloc_ctx c = {a, a->store, txn, d->ev, d->ev_len, now_ms};
    slot_event_rec e;
    slot_hold_rec hold, *h = &hold;
    int rc = slot_store_event_get(c.st, txn, d->ev, d->ev_len, &e);
    if (rc == 0)
        rc = slot_store_hold_get(c.st, txn, d->ev, d->ev_len, d->seq, h);
    if (rc == 0 && (h->status != SLOT_HOLD_HELD || h->expires_at_ms != d->at))
        rc = MDB_CORRUPTED; /* the index names only held holds, at their expiry */
    if (rc == 0)
        rc = slot__hold_finish(&c, &e, h, SLOT_HOLD_EXPIRED);
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

/* Expires due holds (of one event, or all when ev is NULL), oldest first, at
 * most `limit`, in chunks of SLOT_EXPIRE_CHUNK. Each chunk is collected before it
 * is changed, so no cursor walks a database being written. */
int slot__expire_due(slot_alloc *a, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t now_ms, uint64_t limit,
                     uint64_t *expired)
{
    due_list list, *l = &list;
    int rc = 0;
    *expired = 0;
    while (*expired < limit) {
        l->n = 0;
        l->only_ev = ev;
        l->only_len = ev_len;
        rc = slot_store_expiry_scan(a->store, txn, now_ms, due_collect, l);
        if (rc == 1)
            rc = 0;
        for (size_t i = 0; rc == 0 && i < l->n && *expired < limit; i++) {
            rc = expire_one(a, txn, &l->items[i], now_ms);
            if (rc == 0)
                (*expired)++;
        }
        if (rc != 0 || l->n < SLOT_EXPIRE_CHUNK)
            break;
    }
    return rc;
}

int slot_alloc_expire_due(slot_alloc *a, MDB_txn *txn, uint64_t now_ms, uint64_t limit, uint64_t *expired)
{
    return slot__expire_due(a, txn, NULL, 0, now_ms, limit, expired);
}
