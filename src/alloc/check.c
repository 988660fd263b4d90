/*
 * check.c — the invariant scan (slot/check.h): reads every record of the
 * scanned events and reports what breaks docs/protocol.md's invariants.
 */
#include "slot/check.h"

#include "seat_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slot/feed.h"
#include "slot/store.h"

/* ---- check: the invariants of docs/protocol.md as a full scan */

typedef struct user_sum {
    char user[SLOT_USER_BYTES_MAX + 1];
    uint64_t qty;
} user_sum;

typedef struct check_ctx {
    slot_store *st;
    MDB_txn *txn;
    slot_res *res;
    const char *ev;
    size_t ev_len;
    const slot_event_rec *e;
    uint64_t held, confirmed, holds, held_holds;
    user_sum *users; /* active holds' (user, qty), for invariant 4 */
    size_t nusers, capusers;
    size_t users_matched;
    int err;
    uint64_t waiting, waiting_qty, head_qty, offered, left, key_waiting; /* the waitlist's scan */
    slot_wait_rec head;    /* the first waiting entry (when waiting > 0) */
    uint8_t depth;         /* the event's ancestors */
    uint64_t anc_free;     /* the least free units over the ancestors (UINT64_MAX: none) */
    uint64_t desc_waiting; /* entries waiting on the descendants */
    uint64_t block_units;  /* unused units of the blocks of the event and its descendants */
    uint32_t nblocks;      /* the event's own blocks, and what its holds say of each */
    struct {
        slot_block_rec rec;
        uint64_t held, confirmed;
    } blocks[2 * SLOT_BLOCKS_MAX]; /* open and closed ones */
    const char *desc_ev;           /* the descendant whose holds are summed now (family_sums) */
    size_t desc_len;
} check_ctx;

static void violation(check_ctx *k, int inv, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void violation(check_ctx *k, int inv, const char *fmt, ...)
{
    slot_res *res = k->res;
    if (res->nviolations < SLOT_CHECK_VIOLATIONS_MAX) {
        if (!res->violations)
            res->violations = calloc(SLOT_CHECK_VIOLATIONS_MAX, sizeof(slot_violation));
        if (res->violations) {
            slot_violation *v = &res->violations[res->nviolations];
            v->invariant = inv;
            memcpy(v->event, k->ev, k->ev_len);
            v->event[k->ev_len] = 0;
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(v->detail, sizeof(v->detail), fmt, ap);
            va_end(ap);
        }
    }
    res->nviolations++;
}

/* A reacquire's two links (docs/protocol.md, "Reacquire"): a replaced hold is
 * expired or released, and names a hold that replaces it; a hold that
 * replaces another is named back by it. Invariant 7: a hold's units came
 * back once, and the new hold took fresh ones. */
static int check_links(check_ctx *k, const slot_hold_rec *h)
{
    slot_hold_rec o;
    if (h->replaced_by_seq != 0) {
        if (h->status != SLOT_HOLD_EXPIRED && h->status != SLOT_HOLD_RELEASED)
            violation(k, 7, "hold seq %llu was replaced but is %s", (unsigned long long)h->seq,
                      slot_hold_status_name(h->status));
        int rc = slot_store_hold_get(k->st, k->txn, k->ev, k->ev_len, h->replaced_by_seq, &o);
        if (rc != 0 && rc != MDB_NOTFOUND)
            return rc;
        if (rc == MDB_NOTFOUND || o.tag != h->replaced_by_tag || o.replaces_seq != h->seq)
            violation(k, 7, "hold seq %llu: replaced_by seq %llu does not name it back", (unsigned long long)h->seq,
                      (unsigned long long)h->replaced_by_seq);
    }
    if (h->replaces_seq != 0) {
        int rc = slot_store_hold_get(k->st, k->txn, k->ev, k->ev_len, h->replaces_seq, &o);
        if (rc != 0 && rc != MDB_NOTFOUND)
            return rc;
        if (rc == MDB_NOTFOUND || o.tag != h->replaces_tag || o.replaced_by_seq != h->seq)
            violation(k, 7, "hold seq %llu: replaces seq %llu does not name it back", (unsigned long long)h->seq,
                      (unsigned long long)h->replaces_seq);
    }
    return 0;
}

static int user_add(check_ctx *k, const char *user, size_t user_len, uint64_t qty);

/* A hold of a block: counted against the block's held or confirmed (a
 * deallocated block's holds are the shards' now). */
static void block_hold(check_ctx *k, const slot_hold_rec *h)
{
    for (uint32_t i = 0; i < k->nblocks; i++) {
        if (k->blocks[i].rec.name_len != h->alloc_len || memcmp(k->blocks[i].rec.name, h->alloc, h->alloc_len) != 0)
            continue;
        if (h->status == SLOT_HOLD_HELD)
            k->blocks[i].held += h->qty;
        else if (h->status == SLOT_HOLD_CONFIRMED)
            k->blocks[i].confirmed += h->qty;
    }
}

static int own_block(void *p, const slot_block_rec *b)
{
    check_ctx *k = p;
    k->block_units += b->remaining;
    if (k->nblocks == 2 * SLOT_BLOCKS_MAX) {
        violation(k, 1, "more than %d blocks", SLOT_BLOCKS_MAX);
        return 0;
    }
    k->blocks[k->nblocks].rec = *b;
    k->blocks[k->nblocks].held = k->blocks[k->nblocks].confirmed = 0;
    k->nblocks++;
    return 0;
}

static int desc_block(void *p, const slot_block_rec *b)
{
    ((check_ctx *)p)->block_units += b->remaining;
    return 0;
}

static int check_hold(void *p, const slot_hold_rec *h)
{
    check_ctx *k = p;
    k->holds++;
    uint64_t parts = 0;
    for (uint16_t i = 0; i < h->nparts; i++)
        parts += h->parts[i].qty;
    bool from_block = h->alloc_len > 0; /* a block's hold has no shard parts ("Clarifications of v1.2") */
    if (parts != (from_block ? 0u : h->qty))
        violation(k, 3, "hold seq %llu: parts add up to %llu, qty %u", (unsigned long long)h->seq,
                  (unsigned long long)parts, (unsigned)h->qty);
    /* A family's hold took its units from every ancestor too (docs/protocol.md, "Ticket types"). */
    if (h->nanc != k->depth)
        violation(k, 3, "hold seq %llu took from %u ancestors; the event has %u", (unsigned long long)h->seq,
                  (unsigned)h->nanc, (unsigned)k->depth);
    for (uint8_t a = 0; a < h->nanc && a < SLOT_ANCESTORS_MAX; a++) {
        uint64_t ap = 0;
        for (uint16_t i = 0; i < h->anc[a].nparts; i++)
            ap += h->anc[a].parts[i].qty;
        if (ap != (from_block ? 0u : h->qty))
            violation(k, 3, "hold seq %llu: its parts of ancestor %u add up to %llu, qty %u",
                      (unsigned long long)h->seq, (unsigned)a + 1u, (unsigned long long)ap, (unsigned)h->qty);
    }
    if (h->returned > 0 && h->status != SLOT_HOLD_CONFIRMED && h->status != SLOT_HOLD_CANCELLED)
        violation(k, 3, "hold seq %llu gave back %u units by a partial confirm but is %s", (unsigned long long)h->seq,
                  (unsigned)h->returned, slot_hold_status_name(h->status));
    int rc = check_links(k, h);
    if (rc != 0)
        return rc;
    if (from_block)
        block_hold(k, h);
    bool active = h->status == SLOT_HOLD_HELD || h->status == SLOT_HOLD_CONFIRMED;
    if (h->status == SLOT_HOLD_HELD) {
        k->held += h->qty;
        k->held_holds++;
        rc = slot_store_expiry_has(k->st, k->txn, h->expires_at_ms, k->ev, k->ev_len, h->seq);
        if (rc == MDB_NOTFOUND)
            violation(k, 7, "held hold seq %llu has no expiry entry", (unsigned long long)h->seq);
        else if (rc != 0)
            return rc;
    } else if (h->status == SLOT_HOLD_CONFIRMED) {
        k->confirmed += h->qty;
    }
    if (active && k->e->max_per_user > 0)
        return user_add(k, h->user, h->user_len, h->qty);
    return 0;
}

/* One (user, qty) for invariant 4: active holds and waiting entries count. */
static int user_add(check_ctx *k, const char *user, size_t user_len, uint64_t qty)
{
    if (k->nusers == k->capusers) {
        size_t cap = k->capusers ? k->capusers * 2 : 64;
        user_sum *u = realloc(k->users, cap * sizeof(*u));
        if (!u)
            return ENOMEM;
        k->users = u;
        k->capusers = cap;
    }
    user_sum *u = &k->users[k->nusers++];
    memcpy(u->user, user, user_len);
    u->user[user_len] = 0;
    u->qty = qty;
    return 0;
}

#define POSITIONS_CHECKED 10000 /* positions recomputed from the tree of leaves for the first entries */

/* A waiting entry: in join order (the key order), its key's entry says
 * waiting at that join seq, and its position is its rank. */
static int check_wait_row(void *p, const slot_wait_rec *w)
{
    check_ctx *k = p;
    if (k->waiting == 0) {
        k->head_qty = w->qty;
        k->head = *w;
    }
    k->waiting++;
    k->waiting_qty += w->qty;
    if (w->join >= k->e->next_join)
        violation(k, 2, "waiting entry %llu is past the next join seq %llu", (unsigned long long)w->join,
                  (unsigned long long)k->e->next_join);
    slot_wait_rec key;
    int rc = slot_store_wait_key_get(k->st, k->txn, k->ev, k->ev_len, w->user, w->user_len, w->request, w->request_len,
                                     &key);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return rc;
    if (rc == MDB_NOTFOUND || key.state != SLOT_WAIT_WAITING || key.join != w->join || key.qty != w->qty)
        violation(k, 2, "waiting entry %llu: its key's entry is %s", (unsigned long long)w->join,
                  rc == MDB_NOTFOUND ? "missing" : slot_wait_state_name(key.state));
    if (k->waiting <= POSITIONS_CHECKED) {
        uint64_t left = 0;
        rc = slot_store_wait_left_count(k->st, k->txn, k->ev, k->ev_len, w->join - 1, &left);
        if (rc != 0)
            return rc;
        if (w->join - k->e->served - left != k->waiting)
            violation(k, 2, "waiting entry %llu: position %lld, rank %llu", (unsigned long long)w->join,
                      (long long)(w->join - k->e->served - left), (unsigned long long)k->waiting);
    }
    return k->e->max_per_user > 0 ? user_add(k, w->user, w->user_len, w->qty) : 0;
}

/* A key's entry: an offered one names its hold (kind waitlist, origin its
 * join seq) and is no longer waiting; the counts are compared after. */
static int check_wait_key(void *p, const slot_wait_rec *w)
{
    check_ctx *k = p;
    if (w->state == SLOT_WAIT_WAITING) {
        k->key_waiting++;
        return 0;
    }
    if (w->state == SLOT_WAIT_LEFT) {
        k->left++;
        return 0;
    }
    k->offered++;
    slot_hold_rec h;
    int rc = slot_store_hold_get(k->st, k->txn, k->ev, k->ev_len, w->hold_seq, &h);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return rc;
    if (rc == MDB_NOTFOUND || h.tag != w->hold_tag || h.kind != SLOT_HOLD_KIND_WAITLIST || h.origin != w->join ||
        h.user_len != w->user_len || memcmp(h.user, w->user, h.user_len) != 0)
        violation(k, 7, "offered entry %llu does not name its hold", (unsigned long long)w->join);
    return 0;
}

/* The waitlist: entries in order, counts equal to the view's waiting and
 * waiting_qty, no entry both waiting and offered, and (invariant 5 refined)
 * nobody left waiting whom the free units could serve. */
static int check_waitlist(check_ctx *k, uint64_t free_units)
{
    const slot_event_rec *e = k->e;
    k->waiting = k->waiting_qty = k->head_qty = k->offered = k->left = k->key_waiting = 0;
    int rc = slot_store_wait_scan(k->st, k->txn, k->ev, k->ev_len, 0, check_wait_row, k);
    if (rc == 0)
        rc = slot_store_wait_keys_scan(k->st, k->txn, k->ev, k->ev_len, check_wait_key, k);
    uint64_t tree_left = 0;
    if (rc == 0)
        rc = slot_store_wait_left_count(k->st, k->txn, k->ev, k->ev_len, e->next_join - 1, &tree_left);
    if (rc != 0)
        return rc;
    if (k->waiting != e->waiting || k->waiting_qty != e->waiting_qty)
        violation(k, 2, "waiting %llu (%llu units), the list has %llu (%llu units)", (unsigned long long)e->waiting,
                  (unsigned long long)e->waiting_qty, (unsigned long long)k->waiting,
                  (unsigned long long)k->waiting_qty);
    if (k->key_waiting != k->waiting || k->offered != e->served || tree_left != k->left)
        violation(k, 2, "keys: %llu waiting, %llu offered (served %llu), %llu left (tree %llu); list %llu",
                  (unsigned long long)k->key_waiting, (unsigned long long)k->offered, (unsigned long long)e->served,
                  (unsigned long long)k->left, (unsigned long long)tree_left, (unsigned long long)k->waiting);
    if (k->waiting > e->waitlist_max)
        violation(k, 2, "%llu waiting, waitlist_max %u", (unsigned long long)k->waiting, (unsigned)e->waitlist_max);
    if (k->waiting > 0 && k->head.alloc_len > 0) { /* a block's entry: its block's units are what it waits for */
        slot_block_rec b;
        rc = slot_store_block_get(k->st, k->txn, k->ev, k->ev_len, k->head.alloc, k->head.alloc_len, &b);
        if (rc != 0 && rc != MDB_NOTFOUND)
            return rc;
        bool open = rc == 0 && !b.closed; /* else it waits for the free units (a removed block) */
        rc = 0;
        if (open) {
            if (b.remaining >= k->head_qty)
                violation(k, 5, "%llu units left in block \"%s\" while the first entry waits on it for %llu",
                          (unsigned long long)b.remaining, b.name, (unsigned long long)k->head_qty);
            return 0;
        }
    }
    if (k->waiting > 0 && free_units >= k->head_qty)
        violation(k, 5, "%llu units free while the first entry waits for %llu", (unsigned long long)free_units,
                  (unsigned long long)k->head_qty);
    return 0;
}

static int user_cmp(const void *x, const void *y)
{
    return strcmp(((const user_sum *)x)->user, ((const user_sum *)y)->user);
}

static int check_user_row(void *p, const char *user, size_t user_len, uint64_t qty)
{
    check_ctx *k = p;
    user_sum key;
    memcpy(key.user, user, user_len);
    key.user[user_len] = 0;
    /* No active holds: users may be NULL, which bsearch must not get. */
    user_sum *u = k->nusers ? bsearch(&key, k->users, k->nusers, sizeof(user_sum), user_cmp) : NULL;
    uint64_t want = u ? u->qty : 0;
    if (u)
        k->users_matched++;
    if (want != qty)
        violation(k, 4, "user \"%s\": users record says %llu, holds say %llu", key.user, (unsigned long long)qty,
                  (unsigned long long)want);
    if (qty > k->e->max_per_user)
        violation(k, 4, "user \"%s\" has %llu, max_per_user %llu", key.user, (unsigned long long)qty,
                  (unsigned long long)k->e->max_per_user);
    return 0;
}

/* Sorts the active (user, qty) pairs and sums each user's into one entry. */
static void users_fold(check_ctx *k)
{
    if (k->nusers == 0)
        return;
    qsort(k->users, k->nusers, sizeof(user_sum), user_cmp);
    size_t w = 0;
    for (size_t r = 1; r < k->nusers; r++) {
        if (strcmp(k->users[r].user, k->users[w].user) == 0)
            k->users[w].qty += k->users[r].qty;
        else
            k->users[++w] = k->users[r];
    }
    k->nusers = w + 1;
}

/* A descendant's hold: counted in the ancestor's held / confirmed and, with
 * the ancestor's max_per_user, in the user's total there. */
static int desc_hold(void *p, const slot_hold_rec *h)
{
    check_ctx *k = p;
    bool active = h->status == SLOT_HOLD_HELD || h->status == SLOT_HOLD_CONFIRMED;
    if (h->status == SLOT_HOLD_HELD)
        k->held += h->qty;
    else if (h->status == SLOT_HOLD_CONFIRMED)
        k->confirmed += h->qty;
    if (h->nanc == 0)
        violation(k, 3, "hold seq %llu of descendant \"%.*s\" took nothing from its ancestors",
                  (unsigned long long)h->seq, (int)k->desc_len, k->desc_ev);
    if (active && k->e->max_per_user > 0)
        return user_add(k, h->user, h->user_len, h->qty);
    return 0;
}

/* Whether event rec (of name ev) descends from k's event: its parent, or its
 * parent's parent, is k's event. */
static int descends(check_ctx *k, const slot_event_rec *rec, bool *yes)
{
    *yes = false;
    if (rec->parent_len == 0)
        return 0;
    if (rec->parent_len == k->ev_len && memcmp(rec->parent, k->ev, k->ev_len) == 0) {
        *yes = true;
        return 0;
    }
    slot_event_rec up;
    int rc = slot_store_event_get(k->st, k->txn, rec->parent, rec->parent_len, &up);
    if (rc == MDB_NOTFOUND) {
        violation(k, 1, "an event's parent \"%s\" does not exist", rec->parent);
        return 0;
    }
    if (rc == 0 && up.parent_len == k->ev_len && memcmp(up.parent, k->ev, k->ev_len) == 0)
        *yes = true;
    return rc;
}

/* A descendant's waiting entry: its units count in the ancestor's user totals (a join counts them). */
static int desc_wait(void *p, const slot_wait_rec *w)
{
    check_ctx *k = p;
    return k->e->max_per_user > 0 ? user_add(k, w->user, w->user_len, w->qty) : 0;
}

static int family_event(void *p, const char *ev, size_t ev_len, const slot_event_rec *rec)
{
    check_ctx *k = p;
    bool yes = false;
    int rc = descends(k, rec, &yes);
    if (rc != 0 || !yes)
        return rc;
    k->desc_ev = ev;
    k->desc_len = ev_len;
    k->desc_waiting += rec->waiting;
    int brc = slot_store_blocks_scan(k->st, k->txn, ev, ev_len, desc_block, k);
    if (brc == 0 && rec->waiting > 0)
        brc = slot_store_wait_scan(k->st, k->txn, ev, ev_len, 0, desc_wait, k);
    if (brc != 0)
        return brc;
    return slot_store_holds_scan(k->st, k->txn, ev, ev_len, desc_hold, k);
}

/* The event's depth (ancestors, 0..SLOT_ANCESTORS_MAX) and, with children,
 * the units its descendants hold and have confirmed added to k's sums (the
 * family invariant of docs/protocol.md, "Ticket types"). */
static int family_sums(check_ctx *k, const slot_event_rec *e)
{
    k->depth = 0;
    k->anc_free = UINT64_MAX;
    slot_event_rec up = *e;
    while (up.parent_len > 0) {
        if (k->depth == SLOT_ANCESTORS_MAX) {
            violation(k, 1, "the family is deeper than %d levels", SLOT_FAMILY_DEPTH_MAX);
            break;
        }
        char name[SLOT_EVENT_BYTES_MAX + 1];
        uint8_t len = up.parent_len;
        memcpy(name, up.parent, len + 1u);
        int rc = slot_store_event_get(k->st, k->txn, name, len, &up);
        if (rc == MDB_NOTFOUND) {
            violation(k, 1, "parent \"%s\" does not exist", name);
            break;
        }
        if (rc != 0)
            return rc;
        k->depth++;
        uint64_t f = up.capacity - up.held - up.confirmed - up.allocated;
        if (f < k->anc_free)
            k->anc_free = f;
    }
    k->desc_waiting = 0;
    int rc = e->children == 0 ? 0 : slot_store_events_scan(k->st, k->txn, family_event, k);
    if (rc == 0 && e->parent_len == 0 && e->fam_waiting != e->waiting + k->desc_waiting)
        violation(k, 2, "the family's waiting count %llu; its events have %llu", (unsigned long long)e->fam_waiting,
                  (unsigned long long)(e->waiting + k->desc_waiting));
    return rc;
}

static int check_event(void *p, const char *ev, size_t ev_len, const slot_event_rec *e)
{
    check_ctx *k = p;
    k->ev = ev;
    k->ev_len = ev_len;
    k->e = e;
    k->held = k->confirmed = k->held_holds = 0;
    k->nusers = k->users_matched = 0;
    k->res->events_checked++;
    uint64_t free_sum = 0;
    uint32_t records = 0;
    int rc = slot_store_shards_count(k->st, k->txn, ev, ev_len, &records);
    for (uint16_t s = 0; rc == 0 && s < e->shards; s++) {
        uint64_t f = 0;
        rc = slot_store_shard_get(k->st, k->txn, ev, ev_len, s, &f);
        if (rc == MDB_NOTFOUND) {
            violation(k, 1, "shard %u is missing", (unsigned)s);
            rc = 0;
        }
        free_sum += f;
    }
    if (rc != 0)
        return rc;
    if (records != e->shards)
        violation(k, 1, "%u shard records for %u shards", records, (unsigned)e->shards);
    if (free_sum + e->held + e->confirmed + e->allocated != e->capacity ||
        e->held + e->confirmed + e->allocated > e->capacity)
        violation(k, 1, "free %llu + held %llu + confirmed %llu + allocated %llu != capacity %llu",
                  (unsigned long long)free_sum, (unsigned long long)e->held, (unsigned long long)e->confirmed,
                  (unsigned long long)e->allocated, (unsigned long long)e->capacity);
    k->block_units = 0;
    k->nblocks = 0;
    rc = slot_store_blocks_scan(k->st, k->txn, ev, ev_len, own_block, k);
    if (rc == 0)
        rc = family_sums(k, e);
    if (rc == 0)
        rc = slot_store_holds_scan(k->st, k->txn, ev, ev_len, check_hold, k);
    if (rc != 0)
        return rc;
    /* Allocations (docs/protocol.md): allocated is the unused units of the blocks of the
     * event and its descendants; a block's held and confirmed are those of its holds. */
    if (k->block_units != e->allocated)
        violation(k, 1, "allocated %llu, the blocks have %llu unused", (unsigned long long)e->allocated,
                  (unsigned long long)k->block_units);
    for (uint32_t i = 0; i < k->nblocks; i++)
        if (k->blocks[i].held != k->blocks[i].rec.held || k->blocks[i].confirmed != k->blocks[i].rec.confirmed ||
            k->blocks[i].rec.remaining + k->blocks[i].rec.held + k->blocks[i].rec.confirmed != k->blocks[i].rec.qty)
            violation(k, 2,
                      "block \"%s\": held %llu confirmed %llu (its holds say %llu and %llu), remaining %llu, qty %llu",
                      k->blocks[i].rec.name, (unsigned long long)k->blocks[i].rec.held,
                      (unsigned long long)k->blocks[i].rec.confirmed, (unsigned long long)k->blocks[i].held,
                      (unsigned long long)k->blocks[i].confirmed, (unsigned long long)k->blocks[i].rec.remaining,
                      (unsigned long long)k->blocks[i].rec.qty);
    if (k->held != e->held || k->confirmed != e->confirmed)
        violation(k, 2, "counters held %llu confirmed %llu, holds say %llu and %llu", (unsigned long long)e->held,
                  (unsigned long long)e->confirmed, (unsigned long long)k->held, (unsigned long long)k->confirmed);
    if (e->seated) { /* seated events (invariant 9): every seat in one state, the counts those of the seats */
        slot__alloc_ctx sc = {NULL, k->st, k->txn, ev, ev_len, 0, NULL};
        char detail[160];
        rc = slot__seat_check(&sc, e, detail, sizeof detail);
        if (rc != 0)
            return rc;
        if (detail[0])
            violation(k, 9, "%s", detail);
    }
    /* a family's entry is served when its event and every ancestor have the units */
    rc = check_waitlist(k, free_sum < k->anc_free ? free_sum : k->anc_free);
    if (rc == 0 && e->max_per_user > 0) {
        users_fold(k);
        rc = slot_store_users_scan(k->st, k->txn, ev, ev_len, check_user_row, k);
        if (rc == 0 && k->users_matched != k->nusers)
            violation(k, 4, "%zu users with active holds have no users record", k->nusers - k->users_matched);
    }
    return rc;
}

/* Every expiry entry must name a held hold with that expires_at (invariant 7:
 * a hold that left "held" can never be expired later). */
typedef struct expiry_check {
    check_ctx *k;
    const char *only;
    size_t only_len;
} expiry_check;

static int check_expiry_row(void *p, uint64_t at, const char *ev, size_t ev_len, uint64_t seq)
{
    expiry_check *x = p;
    if (x->only && (ev_len != x->only_len || memcmp(ev, x->only, ev_len) != 0))
        return 0;
    slot_hold_rec h;
    int rc = slot_store_hold_get(x->k->st, x->k->txn, ev, ev_len, seq, &h);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return rc;
    if (rc == MDB_NOTFOUND || h.status != SLOT_HOLD_HELD || h.expires_at_ms != at) {
        x->k->ev = ev;
        x->k->ev_len = ev_len;
        violation(x->k, 7, "expiry entry for seq %llu names a hold that is not held at that time",
                  (unsigned long long)seq);
    }
    return 0;
}

/* The feed's part (slot/feed.h): a hold whose history disagrees with its status. */
static void feed_violation(void *p, const char *ev, const char *detail)
{
    check_ctx *k = p;
    k->ev = ev;
    k->ev_len = strlen(ev);
    violation(k, 8, "%s", detail);
}

int slot_check(slot_store *st, MDB_txn *txn, const char *event, size_t event_len, slot_res *res)
{
    check_ctx k = {.st = st, .txn = txn, .res = res};
    int rc;
    res->err = SLOT_E_OK;
    if (event) {
        slot_event_rec e;
        rc = slot_store_event_get(st, txn, event, event_len, &e);
        if (rc == MDB_NOTFOUND) {
            slot_res_error(res, SLOT_E_UNKNOWN_EVENT, "no event \"%.*s\"", (int)event_len, event);
            return 0;
        }
        if (rc == 0)
            rc = check_event(&k, event, event_len, &e);
    } else {
        rc = slot_store_events_scan(st, txn, check_event, &k);
    }
    if (rc == 0) {
        expiry_check x = {&k, event, event_len};
        rc = slot_store_expiry_scan(st, txn, UINT64_MAX, check_expiry_row, &x);
    }
    /* The feed's part is a scan of the whole feed: only the full check runs it. */
    if (rc == 0 && !event)
        rc = slot_feed_check_holds(st, txn, NULL, 0, feed_violation, &k);
    res->holds_checked = k.holds;
    free(k.users);
    return rc;
}

int slot_check_backup_copy(slot_store *copy, MDB_txn *txn, void *res)
{
    return slot_check(copy, txn, NULL, 0, (slot_res *)res);
}
