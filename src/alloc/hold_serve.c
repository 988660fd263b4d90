/*
 * hold_serve.c — the waitlist's hand-out, part of the hold's life (beside
 * hold.c, whose writers it calls): when units come back, those waiting are
 * offered held holds in join order, an event of a family in the family's one
 * join order (docs/protocol.md, "Waitlist", "Ticket types"). Calls hold.c,
 * the idempotency index and the store, never an op file or alloc_core.c.
 * Internal to libslot; see alloc_int.h.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_int.h"
#include "slot/assert.h"
#include "slot/failpoint.h"

typedef slot__alloc_ctx ctx;

/* ---- the waitlist's hand-out */

int slot__family_note(ctx *c, slot_event_rec *e, int delta, uint64_t *order)
{
    slot_event_rec *root = e;
    slot__chain ch;
    if (e->parent_len > 0) {
        int rc = slot__chain_load(c, e, &ch);
        if (rc != 0)
            return rc;
        root = &ch.anc[ch.n - 1].rec;
    }
    if (delta < 0 && root->fam_waiting < (uint64_t)-delta)
        return MDB_CORRUPTED;
    root->fam_waiting = (uint64_t)((int64_t)root->fam_waiting + delta);
    if (order)
        *order = root->fam_next_join++;
    if (root == e)
        return 0; /* the caller writes e */
    return slot_store_event_put(c->st, c->txn, ch.anc[ch.n - 1].name, ch.anc[ch.n - 1].len, root);
}

/* Offers the hold to the first entry w: a held hold with the event's TTL,
 * kind waitlist, origin its join seq. The user's row already counts the
 * waiting units (a join counts them), so it stays. */
static int offer(ctx *c, slot_event_rec *e, slot_wait_rec *w)
{
    slot_hold_rec hold, *h = &hold;
    slot__hold_new(h, w->user, w->user_len, w->request, w->request_len, w->qty);
    h->kind = SLOT_HOLD_KIND_WAITLIST;
    h->origin = w->join;
    if (w->alloc_len > 0 && !w->alloc_public) { /* from its block (head_fits saw its units there) */
        h->alloc_len = w->alloc_len;
        memcpy(h->alloc, w->alloc, w->alloc_len + 1u);
    }
    int rc = slot__hold_make(c, e, h, UINT64_MAX);
    if (rc == 0) /* docs/protocol.md, "Feed": an offer is hold.offered, never hold.held */
        rc = slot__hold_feed_seated(c, h, SLOT_FEED_HOLD_OFFERED, e->seated);
    if (rc == 0 && (e->waiting == 0 || e->waiting_qty < w->qty))
        rc = MDB_CORRUPTED;
    if (rc != 0)
        return rc;
    e->waiting--;
    e->waiting_qty -= w->qty;
    e->served++;
    rc = slot__family_note(c, e, -1, NULL);
    if (rc == 0)
        rc = slot_store_wait_del(c->st, c->txn, c->ev, c->ev_len, w->join);
    w->state = SLOT_WAIT_OFFERED;
    w->hold_seq = h->seq;
    w->hold_tag = h->tag;
    if (rc == 0)
        rc = slot_store_wait_key_put(c->st, c->txn, c->ev, c->ev_len, w);
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

/* Whether the head entry w of c's event (record e) can be served now: its
 * qty free on the event and on every ancestor; for an entry of a block, its
 * qty left in the block (docs/protocol.md, "Allocations": a waitlist entry
 * with allocation is served from its block). A block removed by deallocate
 * (gone, or closed) gave its units back to the free shards, and so do its
 * holds' units: its entries are served from the free units from then on
 * (w->alloc_public). */
static int head_fits(ctx *c, const slot_event_rec *e, slot_wait_rec *w, bool *fits)
{
    uint64_t avail = 0;
    *fits = false;
    w->alloc_public = false;
    if (w->alloc_len > 0) {
        slot_block_rec b;
        int rc = slot_store_block_get(c->st, c->txn, c->ev, c->ev_len, w->alloc, w->alloc_len, &b);
        if (rc != 0 && rc != MDB_NOTFOUND)
            return rc;
        if (rc == 0 && !b.closed) {
            *fits = w->qty <= b.remaining;
            return 0;
        }
        w->alloc_public = true;
    }
    if (w->qty > slot__free_units(e))
        return 0;
    int rc = slot__chain_free(c, e, w->qty, &avail, NULL);
    *fits = rc == 0 && w->qty <= avail;
    return rc;
}

/* The one event's hand-out: while its head fits, it is offered. */
static int serve_one(ctx *c, slot_event_rec *e)
{
    int rc = slot__idem_event_ready(c); /* the offers' keys go into the index */
    /* Bounded by e->waiting: every turn serves one entry or stops. */
    while (rc == 0 && e->waiting > 0) {
        slot_wait_rec w;
        rc = slot_store_wait_first(c->st, c->txn, c->ev, c->ev_len, &w);
        if (rc == MDB_NOTFOUND)
            return MDB_CORRUPTED; /* the counter says someone waits */
        bool fits = false;
        if (rc == 0)
            rc = head_fits(c, e, &w, &fits);
        if (rc != 0 || !fits)
            break; /* the head cannot be met yet: nobody behind it goes first */
        if (SLOT_FAIL(KILL_BEFORE_HANDOUT))
            raise(SIGKILL);
        rc = offer(c, e, &w);
    }
    return rc;
}

/* A member of the family being served: its name, and its head entry. */
typedef struct member {
    uint8_t len;
    char name[SLOT_EVENT_BYTES_MAX + 1];
    bool blocked, head_known;
    slot_wait_rec head;
} member;

typedef struct family {
    ctx *c;
    const char *root;
    uint8_t root_len;
    member *m;
    uint32_t n;
    int err;
} family;

/* events_scan's callback: an event of the root's family with someone waiting joins the list. */
static int family_collect(void *p, const char *ev, size_t ev_len, const slot_event_rec *rec)
{
    family *f = p;
    if (rec->waiting == 0)
        return 0;
    bool in = ev_len == f->root_len && memcmp(ev, f->root, ev_len) == 0;
    if (!in && rec->parent_len > 0) {
        slot__alloc_ctx pc = *f->c;
        pc.ev = ev;
        pc.ev_len = ev_len;
        slot__chain ch;
        int rc = slot__chain_load(&pc, rec, &ch);
        if (rc != 0)
            return rc;
        in = ch.anc[ch.n - 1].len == f->root_len && memcmp(ch.anc[ch.n - 1].name, f->root, f->root_len) == 0;
    }
    if (!in)
        return 0;
    if (f->n == SLOT_FAMILY_EVENTS_MAX)
        return MDB_CORRUPTED; /* create_event bounds a family's size */
    member *m = &f->m[f->n++];
    m->len = (uint8_t)ev_len;
    memcpy(m->name, ev, ev_len);
    m->name[ev_len] = 0;
    m->blocked = m->head_known = false;
    return 0;
}

/*
 * The family's hand-out (docs/protocol.md, "Ticket types", Waitlists): the
 * entries of every event of the family are served in one order, that of
 * joining across the family (their `order`); an entry that cannot be met
 * (its event or an ancestor lacks) blocks only the entries of its own event
 * behind it. O(members x entries served) reads, bounded by the family's size
 * (SLOT_FAMILY_EVENTS_MAX) and the entries waiting.
 */
static int serve_family(ctx *c, const char *root, uint8_t root_len)
{
    family f = {c, root, root_len, calloc(SLOT_FAMILY_EVENTS_MAX, sizeof(member)), 0, 0};
    if (!f.m)
        return ENOMEM;
    int rc = slot_store_events_scan(c->st, c->txn, family_collect, &f);
    while (rc == 0) {
        member *best = NULL;
        for (uint32_t i = 0; rc == 0 && i < f.n; i++) {
            member *m = &f.m[i];
            if (m->blocked)
                continue;
            if (!m->head_known) {
                rc = slot_store_wait_first(c->st, c->txn, m->name, m->len, &m->head);
                if (rc == MDB_NOTFOUND) {
                    m->blocked = true; /* nobody waits there any more */
                    rc = 0;
                    continue;
                }
                m->head_known = true;
            }
            if (!best || m->head.order < best->head.order)
                best = m;
        }
        if (rc != 0 || !best)
            break;
        ctx mc = *c;
        mc.ev = best->name;
        mc.ev_len = best->len;
        slot_event_rec me;
        rc = slot_store_event_get(c->st, c->txn, best->name, best->len, &me);
        bool fits = false;
        if (rc == 0)
            rc = head_fits(&mc, &me, &best->head, &fits);
        if (rc != 0)
            break;
        if (!fits) {
            best->blocked = true; /* blocks only its own event's entries */
            continue;
        }
        rc = slot__idem_event_ready(&mc);
        if (rc == 0 && SLOT_FAIL(KILL_BEFORE_HANDOUT))
            raise(SIGKILL);
        if (rc == 0)
            rc = offer(&mc, &me, &best->head);
        if (rc == 0)
            rc = slot_store_event_put(c->st, c->txn, best->name, best->len, &me);
        best->head_known = false;
    }
    free(f.m);
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
}

int slot__waitlist_serve(ctx *c, slot_event_rec *e)
{
    if (e->parent_len == 0 && e->children == 0) {
        if (e->waiting == 0)
            return 0;
        return serve_one(c, e);
    }
    /* A family: anyone waiting anywhere in it (the root's count)? */
    const char *root = c->ev;
    uint8_t root_len = (uint8_t)c->ev_len;
    uint64_t waiting = e->fam_waiting;
    slot__chain ch;
    if (e->parent_len > 0) {
        int rc = slot__chain_load(c, e, &ch);
        if (rc != 0)
            return rc;
        root = ch.anc[ch.n - 1].name;
        root_len = ch.anc[ch.n - 1].len;
        waiting = ch.anc[ch.n - 1].rec.fam_waiting;
    }
    if (waiting == 0)
        return 0;
    /* e as the caller has it goes to the transaction first; the hand-out
     * reads and writes every member itself; e is read back after. */
    int rc = slot_store_event_put(c->st, c->txn, c->ev, c->ev_len, e);
    if (rc == 0)
        rc = serve_family(c, root, root_len);
    if (rc == 0)
        rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, e);
    return rc;
}
