/* tests/model.c — the reference model (model.h): a seeded random source, the
 * undo log every change goes through (an aborted batch rolls back), the
 * idempotency and waitlist indexes, and the transitions the allocator makes
 * to the store: expiry, confirm, release, holds, waitlists, carts. */
#include "model.h"

#include <stdlib.h>
#include <string.h>

uint64_t rnd(model *m)
{
    uint64_t z = (m->rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint32_t below(model *m, uint32_t n)
{
    return n ? (uint32_t)(rnd(m) % n) : 0;
}

bool chance(model *m, uint32_t per_mille)
{
    return below(m, 1000) < per_mille;
}

const char *const users[M_USERS] = {"alice", "bob",   "carol", "dave", "\xc3\xa9ve", "frank",
                                    "grace", "heidi", "ivan",  "judy", "mallory",    "\xe2\x82\xac"};

/* ---- undo log: every change to the model goes through U_SET, so an aborted
 *      batch can put the model back as it was at the batch's start. */

void u_save(model *m, void *p, size_t len)
{
    if (m->nlog == m->cap_log) {
        m->cap_log = m->cap_log ? m->cap_log * 2 : 4096;
        m->log = realloc(m->log, m->cap_log * sizeof(undo));
        ASSERT(m->log != NULL);
    }
    if (m->arena_used + len > m->arena_cap) {
        m->arena_cap = m->arena_cap ? m->arena_cap * 2 : 65536;
        m->arena = realloc(m->arena, m->arena_cap);
        ASSERT(m->arena != NULL);
    }
    m->log[m->nlog++] = (undo){p, len, m->arena_used};
    memcpy(m->arena + m->arena_used, p, len);
    m->arena_used += len;
}

void u_rollback(model *m)
{
    while (m->nlog > 0) {
        const undo *u = &m->log[--m->nlog];
        memcpy(u->p, m->arena + u->off, u->len);
    }
    m->arena_used = 0;
}

void u_forget(model *m)
{
    m->nlog = 0;
    m->arena_used = 0;
}

/* ---- the idempotency index of the model: (event, user, key) -> hold */

uint64_t kt_pack(uint32_t ev, uint32_t user, uint32_t key)
{
    ASSERT_LT(key, UINT32_C(1) << 24);
    return ((uint64_t)ev << 32) | ((uint64_t)user << 24) | key;
}

uint64_t tab_slot(const uint64_t *keys, const uint32_t *vals, uint64_t mask, uint64_t k)
{
    uint64_t z = (k + 1) * UINT64_C(0x9e3779b97f4a7c15);
    size_t i = (size_t)((z ^ (z >> 31)) & mask);
    while (vals[i] != 0 && keys[i] != k)
        i = (i + 1) & mask;
    return i;
}

uint64_t kt_slot(const model *m, uint64_t k)
{
    return tab_slot(m->kt_key, m->kt_val, m->kt_mask, k);
}

/* The hold a key names, or NULL. */
mhold *kt_get(model *m, uint32_t ev, uint32_t user, uint32_t key)
{
    uint64_t i = kt_slot(m, kt_pack(ev, user, key));
    return m->kt_val[i] ? &m->h[m->kt_val[i] - 1] : NULL;
}

/* Inserts only: keys are never removed, so linear probing stays valid, and
 * undoing inserts in reverse order empties exactly the slots they filled. */
void kt_put(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t hold_ix)
{
    uint64_t k = kt_pack(ev, user, key);
    uint64_t i = kt_slot(m, k);
    ASSERT_EQ(m->kt_val[i], 0);
    U_SET(m, m->kt_key[i], k);
    U_SET(m, m->kt_val[i], hold_ix + 1);
}

/* The waitlist's key table (the same key space; the table is as large as kt's). */
mwait *wt_get(model *m, uint32_t ev, uint32_t user, uint32_t key)
{
    uint64_t i = tab_slot(m->wt_key, m->wt_val, m->kt_mask, kt_pack(ev, user, key));
    return m->wt_val[i] ? &m->w[m->wt_val[i] - 1] : NULL;
}

void wt_put(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t entry_ix)
{
    uint64_t k = kt_pack(ev, user, key);
    uint64_t i = tab_slot(m->wt_key, m->wt_val, m->kt_mask, k);
    ASSERT_EQ(m->wt_val[i], 0);
    U_SET(m, m->wt_key[i], k);
    U_SET(m, m->wt_val[i], entry_ix + 1);
}

/* ---- the model's transitions: what the allocator does to the store */

void touch(model *m, uint32_t ev)
{
    for (uint32_t i = 0; i < m->ntouched; i++)
        if (m->touched[i] == ev)
            return;
    if (m->ntouched < sizeof m->touched / sizeof m->touched[0])
        m->touched[m->ntouched++] = ev;
    else
        m->touched_all = true;
}

uint32_t m_chain(const model *m, uint32_t ev, uint32_t out[SLOT_FAMILY_DEPTH_MAX])
{
    uint32_t n = 0;
    for (uint32_t at = ev + 1; at && n < SLOT_FAMILY_DEPTH_MAX; at = m->ev[at - 1].parent)
        out[n++] = at - 1;
    return n;
}

uint64_t m_free(const mevent *e)
{
    return e->cap - e->held - e->confirmed - e->allocated;
}

/* allocated += delta on ev and every ancestor (units into or out of blocks). */
static void m_alloc_chain(model *m, uint32_t ev, int64_t delta)
{
    uint32_t ch[SLOT_FAMILY_DEPTH_MAX];
    uint32_t n = m_chain(m, ev, ch);
    for (uint32_t i = 0; i < n; i++) {
        mevent *a = &m->ev[ch[i]];
        U_SET(m, a->allocated, (uint64_t)((int64_t)a->allocated + delta));
        touch(m, ch[i]);
    }
}

/* A block hold's qty units coming back from `from` (1 held, 2 confirmed), into confirmed
 * (to_confirmed) or out: to the block while it is open (true), else to the free units. */
static bool m_block_back(model *m, mhold *h, uint32_t qty, int from, bool to_confirmed)
{
    if (!h->blk)
        return false;
    mevent *e = &m->ev[h->ev];
    uint32_t b = h->blk - 1u;
    if (!e->blk[b].exists)
        return false;
    bool open = !e->blk[b].closed;
    if (from == 1)
        U_SET(m, e->blk[b].held, e->blk[b].held - qty);
    else
        U_SET(m, e->blk[b].confirmed, e->blk[b].confirmed - qty);
    if (to_confirmed) {
        U_SET(m, e->blk[b].confirmed, e->blk[b].confirmed + qty);
        return false;
    }
    U_SET(m, e->blk[b].user[h->user], e->blk[b].user[h->user] - qty);
    if (open) {
        U_SET(m, e->blk[b].remaining, e->blk[b].remaining + qty);
        m_alloc_chain(m, h->ev, (int64_t)qty);
    } else {
        U_SET(m, e->blk[b].qty, e->blk[b].qty - qty);
        if (e->blk[b].held + e->blk[b].confirmed == 0)
            U_SET(m, e->blk[b].exists, false); /* its last hold ended */
    }
    return open;
}

uint64_t m_chain_free(const model *m, uint32_t ev)
{
    uint32_t ch[SLOT_FAMILY_DEPTH_MAX];
    uint32_t n = m_chain(m, ev, ch);
    uint64_t f = UINT64_MAX;
    for (uint32_t i = 0; i < n; i++)
        f = m_free(&m->ev[ch[i]]) < f ? m_free(&m->ev[ch[i]]) : f;
    return f;
}

bool m_family(const model *m, uint32_t ev)
{
    return m->ev[ev].parent || m->ev[ev].children;
}

/* The ancestors' side of a move of qty units of a hold of ev by user: their `from` counter
 * (1 held, 2 confirmed, 0 none) loses qty, their `to` counter gains it (0: the units go back
 * to their free units and the user's quantity there drops). */
static void m_chain_move(model *m, uint32_t ev, uint32_t user, uint32_t qty, int from, int to)
{
    uint32_t ch[SLOT_FAMILY_DEPTH_MAX];
    uint32_t n = m_chain(m, ev, ch);
    for (uint32_t i = 1; i < n; i++) {
        mevent *a = &m->ev[ch[i]];
        if (from == 1)
            U_SET(m, a->held, a->held - qty);
        else if (from == 2)
            U_SET(m, a->confirmed, a->confirmed - qty);
        if (to == 1)
            U_SET(m, a->held, a->held + qty);
        else if (to == 2)
            U_SET(m, a->confirmed, a->confirmed + qty);
        if (from == 0)
            U_SET(m, a->user_qty[user], a->user_qty[user] + qty);
        if (to == 0)
            U_SET(m, a->user_qty[user], a->user_qty[user] - qty);
        touch(m, ch[i]);
    }
}

void m_chain_users(model *m, uint32_t ev, uint32_t user, int64_t delta)
{
    uint32_t ch[SLOT_FAMILY_DEPTH_MAX];
    uint32_t n = m_chain(m, ev, ch);
    for (uint32_t i = 1; i < n; i++) {
        mevent *a = &m->ev[ch[i]];
        U_SET(m, a->user_qty[user], (uint64_t)((int64_t)a->user_qty[user] + delta));
    }
}

uint32_t hold_index(const model *m, const mhold *h)
{
    return (uint32_t)(h - m->h);
}

bool due(const model *m, const mhold *h)
{
    return h->st == SLOT_HOLD_HELD && m->now >= h->exp;
}

/* A hold leaves "held" or "confirmed" (the state machine of store.h): units
 * move between the event's counters and the free units, the user's quantity
 * drops when the units go back, and a hold that leaves "held" leaves the
 * event's held list (swap with the last). */
void m_finish(model *m, mhold *h, slot_hold_status to)
{
    mevent *e = &m->ev[h->ev];
    ASSERT(slot_hold_transition_ok((slot_hold_status)h->st, to));
    if (h->st == SLOT_HOLD_HELD) {
        U_SET(m, e->held, e->held - h->qty);
        uint32_t last = e->held_ix[e->nheld - 1];
        ASSERT_EQ(e->held_ix[h->pos], hold_index(m, h));
        U_SET(m, e->held_ix[h->pos], last);
        U_SET(m, m->h[last].pos, h->pos);
        U_SET(m, e->nheld, e->nheld - 1);
    } else {
        U_SET(m, e->confirmed, e->confirmed - h->qty);
    }
    m_block_back(m, h, h->qty, h->st == SLOT_HOLD_HELD ? 1 : 2, to == SLOT_HOLD_CONFIRMED);
    if (to == SLOT_HOLD_CONFIRMED)
        U_SET(m, e->confirmed, e->confirmed + h->qty);
    else
        U_SET(m, e->user_qty[h->user], e->user_qty[h->user] - h->qty);
    m_chain_move(m, h->ev, h->user, h->qty, h->st == SLOT_HOLD_HELD ? 1 : 2, to == SLOT_HOLD_CONFIRMED ? 2 : 0);
    U_SET(m, h->st, (uint8_t)to);
    touch(m, h->ev);
    if (to != SLOT_HOLD_CONFIRMED)
        m_serve(m, h->ev); /* the units that came back go to those waiting, in this commit */
}

/* A partial confirm: the units above `keep` go back first, then the rest is confirmed. */
void m_confirm(model *m, mhold *h, uint32_t keep)
{
    mevent *e = &m->ev[h->ev];
    uint32_t back = h->qty - keep;
    if (back > 0) {
        U_SET(m, e->held, e->held - back);
        U_SET(m, e->user_qty[h->user], e->user_qty[h->user] - back);
        m_chain_move(m, h->ev, h->user, back, 1, 0);
        m_block_back(m, h, back, 1, false);
        U_SET(m, h->qty, (uint16_t)keep);
        U_SET(m, h->returned, (uint16_t)back);
    }
    m_finish(m, h, SLOT_HOLD_CONFIRMED);
    if (back > 0)
        m_serve(m, h->ev); /* the units given back go to those waiting */
}

/* Every op that touches a due hold expires it first (docs/protocol.md, "confirm"). */
void m_settle(model *m, mhold *h)
{
    if (due(m, h))
        m_finish(m, h, SLOT_HOLD_EXPIRED);
}

/* Expires every due hold of one event (the sold-out and user-limit paths of
 * hold, set_capacity, reshard). Returns how many. */
uint64_t m_expire_event(model *m, uint32_t ev)
{
    if (m_family(m, ev)) /* a family's event expires every due hold: a sibling's units are shared */
        return m_expire_due(m, SLOT_EXPIRE_OP_MAX);
    mevent *e = &m->ev[ev];
    uint64_t n = 0;
    for (uint32_t i = 0; i < e->nheld;) {
        mhold *h = &m->h[e->held_ix[i]];
        if (due(m, h)) {
            m_finish(m, h, SLOT_HOLD_EXPIRED); /* the last one moved to i */
            n++;
        } else {
            i++;
        }
    }
    return n;
}

/* A new held hold; counted: the user's quantity already has its units (an offer: the join
 * counted them). */
mhold *m_new_hold_(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty, bool counted)
{
    mevent *e = &m->ev[ev];
    ASSERT_LT(m->nh, m->cap_h);
    ASSERT_LT(e->nheld, M_CAP_MAX);
    uint32_t ix = m->nh;
    U_SET(m, m->nh, m->nh + 1);
    mhold *h = &m->h[ix]; /* above the old nh: a rollback forgets it without a save */
    *h = (mhold){.seq = e->next_seq,
                 .created = m->now,
                 .exp = m->now + e->ttl,
                 .ev = ev,
                 .key = key,
                 .user = (uint16_t)user,
                 .qty = (uint16_t)qty,
                 .pos = (uint16_t)e->nheld,
                 .st = SLOT_HOLD_HELD};
    U_SET(m, e->next_seq, e->next_seq + 1);
    U_SET(m, e->held_ix[e->nheld], ix);
    U_SET(m, e->nheld, e->nheld + 1);
    U_SET(m, e->held, e->held + qty);
    if (!counted)
        U_SET(m, e->user_qty[user], e->user_qty[user] + qty);
    m_chain_move(m, ev, user, qty, 0, 1);
    if (counted) /* an offer: the join counted its units on the ancestors too */
        m_chain_users(m, ev, user, -(int64_t)qty);
    kt_put(m, ev, user, key, ix);
    touch(m, ev);
    return h;
}

mhold *m_new_hold(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty)
{
    return m_new_hold_(m, ev, user, key, qty, false);
}

/* ---- the waitlist's transitions */

/* The first entry still waiting (the head hint moves past the others), or NULL. */
mwait *m_wait_head(model *m, mevent *e)
{
    while (e->whead && m->w[e->whead - 1].state != SLOT_WAIT_WAITING)
        U_SET(m, e->whead, m->w[e->whead - 1].next);
    return e->whead ? &m->w[e->whead - 1] : NULL;
}

/* A waiting entry's position: 1 + the entries waiting before it. */
uint64_t m_position(const model *m, const mevent *e, const mwait *w)
{
    uint64_t pos = 0;
    for (uint32_t i = e->whead; i; i = m->w[i - 1].next) {
        pos += m->w[i - 1].state == SLOT_WAIT_WAITING;
        if (&m->w[i - 1] == w)
            return pos;
    }
    T_FAIL_("waitlist entry join %llu is not in its event's list", (unsigned long long)w->join);
}

/* The hand-out: while the head's qty can be met, it is offered a held hold with the event's
 * TTL (its units were counted for the user at the join); a head that cannot be met blocks
 * those behind it. */
/* v1.2, "Allocations": whether w waits on a block that is still open (a removed block's
 * entries wait for the free units, as its holds' units go back to the free shards). */
static bool m_wait_block_open(const model *m, const mwait *w)
{
    const mevent *e = &m->ev[w->ev];
    return w->blk && e->blk[w->blk - 1].exists && !e->blk[w->blk - 1].closed;
}

/* A new hold h of ev made from block b (an entry's or the request's; index + 1): its units move from the
 * block's remaining to held, out of allocated along the chain. */
static void m_block_take_(model *m, uint32_t ev, mhold *h, uint32_t b, uint32_t user, uint32_t qty)
{
    mevent *e = &m->ev[ev];
    h->blk = (uint8_t)b; /* above the old nh: a rollback forgets it */
    U_SET(m, e->blk[b - 1].remaining, e->blk[b - 1].remaining - qty);
    U_SET(m, e->blk[b - 1].held, e->blk[b - 1].held + qty);
    U_SET(m, e->blk[b - 1].user[user], e->blk[b - 1].user[user] + qty);
    m_alloc_chain(m, ev, -(int64_t)qty);
}

/* Whether the waiting entry w can be met now: its block's remaining, or the free units of
 * its event and every ancestor. */
static bool m_wait_fits(model *m, const mwait *w)
{
    if (m_wait_block_open(m, w))
        return w->qty <= m->ev[w->ev].blk[w->blk - 1].remaining;
    return w->qty <= m_chain_free(m, w->ev);
}

/* Offers the head w of ev its hold. */
static void m_offer(model *m, uint32_t ev, mwait *w)
{
    mevent *e = &m->ev[ev];
    mhold *h = m_new_hold_(m, ev, w->user, w->key, w->qty, true);
    h->wl = true; /* above the old nh: a rollback forgets it */
    h->tag_unknown = true;
    if (m_wait_block_open(m, w)) { /* an entry of a block: the offer is a hold from it */
        m_block_take_(m, ev, h, w->blk, w->user, w->qty);
        m->n.block_offers++;
    }
    h->went = (uint32_t)(w - m->w) + 1;
    U_SET(m, w->state, (uint8_t)SLOT_WAIT_OFFERED);
    U_SET(m, w->hold, hold_index(m, h) + 1);
    U_SET(m, e->waiting, e->waiting - 1);
    U_SET(m, e->waiting_qty, e->waiting_qty - w->qty);
    U_SET(m, e->served, e->served + 1);
    uint32_t ch[SLOT_FAMILY_DEPTH_MAX];
    mevent *root = &m->ev[ch[m_chain(m, ev, ch) - 1]];
    U_SET(m, root->fam_waiting, root->fam_waiting - 1);
    m->n.offers++;
}

/* A family's hand-out ("Ticket types", Waitlists): the heads of its events in the family's
 * one join order; a head that cannot be met (its event or an ancestor lacks) blocks only its
 * own event. */
static void m_serve_family(model *m, uint32_t root)
{
    bool *blocked = calloc(m->nev, sizeof(bool));
    ASSERT(blocked != NULL);
    for (;;) {
        mwait *best = NULL;
        uint32_t best_ev = 0;
        for (uint32_t ev = 0; ev < m->nev; ev++) {
            uint32_t ch[SLOT_FAMILY_DEPTH_MAX];
            if (blocked[ev] || m->ev[ev].waiting == 0 || ch[m_chain(m, ev, ch) - 1] != root)
                continue;
            mwait *w = m_wait_head(m, &m->ev[ev]);
            ASSERT(w != NULL);
            if (!best || w->order < best->order) {
                best = w;
                best_ev = ev;
            }
        }
        if (!best)
            break;
        if (!m_wait_fits(m, best)) {
            blocked[best_ev] = true;
            continue;
        }
        m_offer(m, best_ev, best);
        m->n.family_serves++;
    }
    free(blocked);
}

/* The hand-out: while the head's qty can be met, it is offered a held hold with the event's
 * TTL (its units were counted for the user at the join); a head that cannot be met blocks
 * those behind it. */
void m_serve(model *m, uint32_t ev)
{
    mevent *e = &m->ev[ev];
    if (m_family(m, ev)) {
        uint32_t ch[SLOT_FAMILY_DEPTH_MAX];
        uint32_t root = ch[m_chain(m, ev, ch) - 1];
        if (m->ev[root].fam_waiting > 0)
            m_serve_family(m, root);
        return;
    }
    while (e->waiting > 0) {
        mwait *w = m_wait_head(m, e);
        ASSERT(w != NULL);
        if (!m_wait_fits(m, w)) {
            for (uint32_t i = w->next; i; i = m->w[i - 1].next)
                if (m->w[i - 1].state == SLOT_WAIT_WAITING && m_wait_fits(m, &m->w[i - 1])) {
                    m->n.blocked++; /* someone behind it could be met: it waits all the same */
                    break;
                }
            return;
        }
        m_offer(m, ev, w);
    }
}

/* A new waiting entry at the tail; the user's quantity counts its units. */
mwait *m_wait_append(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty)
{
    mevent *e = &m->ev[ev];
    ASSERT_LT(m->nw, m->cap_w);
    uint32_t ix = m->nw;
    U_SET(m, m->nw, m->nw + 1);
    mwait *w = &m->w[ix];
    *w = (mwait){.join = e->next_join,
                 .joined = m->now,
                 .ev = ev,
                 .key = key,
                 .user = (uint16_t)user,
                 .qty = (uint16_t)qty,
                 .state = SLOT_WAIT_WAITING};
    U_SET(m, e->next_join, e->next_join + 1);
    uint32_t ch[SLOT_FAMILY_DEPTH_MAX];
    mevent *root = &m->ev[ch[m_chain(m, ev, ch) - 1]];
    w->order = root->fam_next;
    U_SET(m, root->fam_next, root->fam_next + 1);
    U_SET(m, root->fam_waiting, root->fam_waiting + 1);
    if (e->wlast)
        U_SET(m, m->w[e->wlast - 1].next, ix + 1);
    else
        U_SET(m, e->wfirst, ix + 1);
    U_SET(m, e->wlast, ix + 1);
    if (!e->whead)
        U_SET(m, e->whead, ix + 1);
    U_SET(m, e->waiting, e->waiting + 1);
    U_SET(m, e->waiting_qty, e->waiting_qty + qty);
    U_SET(m, e->user_qty[user], e->user_qty[user] + qty);
    m_chain_users(m, ev, user, (int64_t)qty); /* the ancestors' max_per_user counts waiting units too */
    wt_put(m, ev, user, key, ix);
    touch(m, ev);
    return w;
}

/* hold, in docs/protocol.md's order of decisions. */
mres m_hold(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty)
{
    mevent *e = &m->ev[ev];
    mres r = {.err = SLOT_E_OK};
    mhold *h = kt_get(m, ev, user, key);
    if ((h && (h->cart || h->wl)) || (!h && e->wmax > 0 && wt_get(m, ev, user, key))) {
        r.err = SLOT_E_IDEMPOTENCY_CONFLICT; /* one key space per (event, user): a cart's or a waitlist's key */
        return r;
    }
    if (h && (uint32_t)h->qty + h->returned != qty) { /* a partial confirm keeps the qty first asked */
        r.err = SLOT_E_IDEMPOTENCY_CONFLICT;
        return r;
    }
    if (h) {
        m_settle(m, h);
        r.replay = true;
        r.h = h;
        r.st = (slot_hold_status)h->st;
        return r;
    }
    uint32_t b = m->req_blk;
    if (b && (!e->blk[b - 1].exists || e->blk[b - 1].closed)) { /* an unknown block, before max_per_request */
        r.err = SLOT_E_INVALID_ARGUMENT;
        return r;
    }
    if (qty > e->mpr) {
        r.err = SLOT_E_INVALID_ARGUMENT;
        return r;
    }
    if (!m_admit(m, ev, user, qty, &r))
        return r;
    r.h = m_new_hold(m, ev, user, key, qty);
    if (b) { /* the block's units move to held, out of allocated along the chain */
        m_block_take_(m, ev, &m->h[hold_index(m, r.h)], b, user, qty);
        m->n.block_holds++;
    }
    r.st = SLOT_HOLD_HELD;
    return r;
}

/* The checks a new hold and a reacquire share after max_per_request:
 * not_on_sale (status, then the window), user_limit, sold_out. */
bool m_admit(model *m, uint32_t ev, uint32_t user, uint32_t qty, mres *rp)
{
    mevent *e = &m->ev[ev];
    mres r = {.err = SLOT_E_OK};
    bool ok = m_admit_(m, e, ev, user, qty, &r);
    *rp = r;
    return ok;
}

bool m_admit_(model *m, mevent *e, uint32_t ev, uint32_t user, uint32_t qty, mres *rp)
{
    mres r = *rp;
    if (e->status != SLOT_EVENT_ON_SALE || (e->opens && m->now < e->opens) || (e->closes && m->now >= e->closes)) {
        rp->err = SLOT_E_NOT_ON_SALE;
        return false;
    }
    bool settled = false;
    if (e->mpu > 0 && e->user_qty[user] + qty > e->mpu) {
        settled = true;
        m_expire_event(m, ev);
    }
    /* the ancestors (docs/protocol.md, "Ticket types"): on sale, then their max_per_user */
    uint32_t ch[SLOT_FAMILY_DEPTH_MAX];
    uint32_t n = m_chain(m, ev, ch);
    for (uint32_t i = 1; i < n; i++) {
        const mevent *a = &m->ev[ch[i]];
        if (a->status != SLOT_EVENT_ON_SALE || (a->opens && m->now < a->opens) || (a->closes && m->now >= a->closes)) {
            rp->err = SLOT_E_NOT_ON_SALE;
            rp->sale_ev = a->name;
            return false;
        }
    }
    if (e->mpu > 0 && e->user_qty[user] + qty > e->mpu) {
        rp->err = SLOT_E_USER_LIMIT;
        return false;
    }
    for (uint32_t i = 1; i < n; i++) {
        const mevent *a = &m->ev[ch[i]];
        if (a->mpu > 0 && a->user_qty[user] + qty > a->mpu)
            m_expire_event(m, ev); /* the store expires before each ancestor's user_limit */
        if (a->mpu > 0 && a->user_qty[user] + qty > a->mpu) {
            rp->err = SLOT_E_USER_LIMIT;
            return false;
        }
    }
    if (m->req_blk) { /* a hold from a block: its max_per_user, then its remaining */
        uint32_t b = m->req_blk - 1u;
        for (int pass = 0; pass < 2; pass++) {
            bool over = e->blk[b].mpu > 0 && e->blk[b].user[user] + qty > e->blk[b].mpu;
            if (!over && e->blk[b].remaining >= qty)
                return true;
            if (pass == 1) {
                if (over) {
                    rp->err = SLOT_E_USER_LIMIT;
                } else {
                    r.sold_out = true;
                    r.available = e->blk[b].remaining;
                    *rp = r;
                }
                m->n.block_refused++;
                return false;
            }
            m_expire_event(m, ev);
        }
    }
    /* While people wait, units go to them first: sold_out, after due holds were expired
     * (which may serve the whole list). */
    if ((m_chain_free(m, ev) < qty || e->waiting > 0) && !settled)
        m_expire_event(m, ev);
    if (m_chain_free(m, ev) < qty || e->waiting > 0) {
        r.sold_out = true;
        r.available = m_chain_free(m, ev);
        for (uint32_t i = 0; n > 1 && i < n && m_chain_free(m, ev) < qty; i++) /* a chain's: a child's */
            if (m_free(&m->ev[ch[i]]) < qty) {
                r.short_ev = m->ev[ch[i]].name;
                m->n.short_parent += i > 0;
                break;
            }
        *rp = r;
        return false;
    }
    return true;
}

/* confirm, release, cancel and get_hold of a hold the request names rightly. */
mres m_on_hold(model *m, slot_op op, mhold *h)
{
    mres r = {.err = SLOT_E_OK, .h = h};
    if (op == SLOT_OP_GET_HOLD) {
        r.st = due(m, h) ? SLOT_HOLD_EXPIRED : (slot_hold_status)h->st; /* a read: nothing written */
        return r;
    }
    m_settle(m, h);
    slot_hold_status st = (slot_hold_status)h->st;
    if (op == SLOT_OP_CONFIRM) {
        if (st == SLOT_HOLD_CONFIRMED)
            r.replay = true;
        else if (st == SLOT_HOLD_HELD)
            m_finish(m, h, SLOT_HOLD_CONFIRMED);
        else
            r.err = SLOT_E_HOLD_NOT_ACTIVE;
    } else {
        bool cancel = op == SLOT_OP_CANCEL;
        r.done = st == SLOT_HOLD_HELD || (cancel && st == SLOT_HOLD_CONFIRMED);
        if (r.done)
            m_finish(m, h, cancel ? SLOT_HOLD_CANCELLED : SLOT_HOLD_RELEASED);
    }
    r.st = (slot_hold_status)h->st;
    return r;
}

/* A reacquire's new hold: confirmed at once, in no held list and not in the
 * key table (the request key stays the replaced hold's). */
mhold *m_new_confirmed(model *m, mhold *old, uint32_t qty)
{
    mevent *e = &m->ev[old->ev];
    ASSERT_LT(m->nh, m->cap_h);
    uint32_t ix = m->nh;
    U_SET(m, m->nh, m->nh + 1);
    mhold *h = &m->h[ix];
    *h = (mhold){.seq = e->next_seq,
                 .created = m->now,
                 .exp = m->now + e->ttl,
                 .ev = old->ev,
                 .key = old->key,
                 .user = old->user,
                 .qty = (uint16_t)qty,
                 .st = SLOT_HOLD_CONFIRMED,
                 .replaces = hold_index(m, old) + 1};
    U_SET(m, e->next_seq, e->next_seq + 1);
    U_SET(m, e->confirmed, e->confirmed + qty);
    U_SET(m, e->user_qty[old->user], e->user_qty[old->user] + qty);
    m_chain_move(m, old->ev, old->user, qty, 0, 2);
    U_SET(m, old->replaced_by, ix + 1);
    touch(m, old->ev);
    return h;
}

/* confirm with its v1.1 fields (docs/protocol.md, "Partial confirm", "Reacquire"):
 * qty 0 means none given. */
mres m_confirm_req(model *m, mhold *h, uint32_t qty, bool reacquire)
{
    mres r = {.err = SLOT_E_OK, .h = h};
    mevent *e = &m->ev[h->ev];
    m_settle(m, h);
    if (h->st == SLOT_HOLD_CONFIRMED) {
        r.replay = true;
    } else if (h->st == SLOT_HOLD_HELD) {
        uint32_t keep = qty ? qty : h->qty;
        if (keep > h->qty)
            r.err = SLOT_E_INVALID_ARGUMENT;
        else
            m_confirm(m, h, keep);
    } else if (reacquire && (h->st == SLOT_HOLD_EXPIRED || h->st == SLOT_HOLD_RELEASED)) {
        if (h->replaced_by) {
            r.h = &m->h[h->replaced_by - 1];
            r.replay = true;
            r.st = (slot_hold_status)r.h->st;
            return r;
        }
        uint32_t take = qty ? qty : h->qty;
        if (take > e->mpr) {
            r.err = SLOT_E_INVALID_ARGUMENT;
            return r;
        }
        mres a;
        if (!m_admit(m, h->ev, h->user, take, &a))
            return a;
        r.h = m_new_confirmed(m, h, take);
    } else {
        r.err = SLOT_E_HOLD_NOT_ACTIVE;
    }
    r.st = (slot_hold_status)r.h->st;
    return r;
}

/* extend (docs/protocol.md, "extend" and its decision order). */
mres m_extend(model *m, mhold *h, uint32_t by_ms)
{
    mres r = {.err = SLOT_E_OK, .h = h};
    const mevent *e = &m->ev[h->ev];
    m_settle(m, h);
    if (h->st != SLOT_HOLD_HELD)
        r.err = SLOT_E_HOLD_NOT_ACTIVE;
    else if ((uint32_t)h->ext + 1 > e->mx || h->exp + by_ms > h->created + e->mh)
        r.err = SLOT_E_EXTEND_LIMIT;
    else {
        U_SET(m, h->exp, h->exp + by_ms);
        U_SET(m, h->ext, (uint16_t)(h->ext + 1));
    }
    r.st = (slot_hold_status)h->st;
    return r;
}

/* waitlist_join, in docs/protocol.md's order of decisions: replay (of the key's hold, of a
 * waiting entry, of a key that left) or idempotency_conflict -> max_per_request -> not_on_sale
 * -> user_limit (the waiting units count) -> a hold when units are free and nobody waits ->
 * waiting at the tail -> sold_out with waitlist_full when the list is full (or the event has none). */
mres m_join(model *m, uint32_t ev, uint32_t user, uint32_t key, uint32_t qty)
{
    mevent *e = &m->ev[ev];
    mres r = {.err = SLOT_E_OK};
    mhold *h = kt_get(m, ev, user, key);
    if (h) {
        if (!h->wl || (uint32_t)h->qty + h->returned != qty) {
            r.err = SLOT_E_IDEMPOTENCY_CONFLICT;
            return r;
        }
        m_settle(m, h);
        r.replay = true;
        r.h = h;
        r.st = (slot_hold_status)h->st;
        r.ws = h->went ? SLOT_WAIT_OFFERED : SLOT_WAIT_NONE;
        return r;
    }
    const mwait *w = wt_get(m, ev, user, key);
    if (w && w->state == SLOT_WAIT_LEFT) { /* the key is spent */
        r.ws = SLOT_WAIT_LEFT;
        r.replay = true;
        return r;
    }
    if (w && w->qty != qty) {
        r.err = SLOT_E_IDEMPOTENCY_CONFLICT;
        return r;
    }
    if (w) { /* an offered entry's key names its hold: found above */
        ASSERT_EQ(w->state, SLOT_WAIT_WAITING);
        r.ws = SLOT_WAIT_WAITING;
        r.pos = m_position(m, e, w);
        r.wqty = w->qty;
        r.replay = true;
        return r;
    }
    uint32_t b = m->req_blk;
    if (b && (!e->blk[b - 1].exists || e->blk[b - 1].closed)) { /* an unknown block, before max_per_request */
        r.err = SLOT_E_INVALID_ARGUMENT;
        return r;
    }
    if (qty > e->mpr) {
        r.err = SLOT_E_INVALID_ARGUMENT;
        return r;
    }
    if (!m_admit(m, ev, user, qty, &r)) {
        if (r.err != SLOT_E_OK)
            return r;
        if (e->waiting >= e->wmax) { /* answered like a hold, nothing queued */
            r.full = true;
            return r;
        }
        r.sold_out = false;
        r.available = 0;
        mwait *nw = m_wait_append(m, ev, user, key, qty);
        nw->blk = (uint8_t)b; /* above the old nw: a rollback forgets it */
        r.ws = SLOT_WAIT_WAITING;
        r.pos = e->waiting; /* the tail */
        r.wqty = nw->qty;
        return r;
    }
    mhold *nh = m_new_hold(m, ev, user, key, qty);
    nh->wl = true; /* above the old nh: a rollback forgets it */
    if (b)
        m_block_take_(m, ev, nh, b, user, qty);
    r.h = nh;
    r.st = SLOT_HOLD_HELD;
    return r;
}

/* waitlist_leave: a waiting entry leaves (the user's quantity drops by its units) and the
 * hand-out runs, since the head may have left. Returns "left". */
bool m_leave(model *m, uint32_t ev, uint32_t user, uint32_t key)
{
    mevent *e = &m->ev[ev];
    mwait *w = wt_get(m, ev, user, key);
    if (!w || w->state != SLOT_WAIT_WAITING)
        return false;
    U_SET(m, w->state, (uint8_t)SLOT_WAIT_LEFT);
    U_SET(m, e->waiting, e->waiting - 1);
    U_SET(m, e->waiting_qty, e->waiting_qty - w->qty);
    U_SET(m, e->user_qty[user], e->user_qty[user] - w->qty);
    m_chain_users(m, ev, user, -(int64_t)w->qty);
    uint32_t ch[SLOT_FAMILY_DEPTH_MAX];
    mevent *root = &m->ev[ch[m_chain(m, ev, ch) - 1]];
    U_SET(m, root->fam_waiting, root->fam_waiting - 1);
    touch(m, ev);
    m_serve(m, ev);
    return true;
}

/* The waitlist op (a read): the key's entry state; an offered hold shows its status, a due
 * one as expired without a write. */
mres m_wstate(model *m, uint32_t ev, uint32_t user, uint32_t key)
{
    mres r = {.err = SLOT_E_OK};
    const mwait *w = wt_get(m, ev, user, key);
    if (!w)
        return r; /* none (also a join held at once) */
    r.ws = (slot_wait_state)w->state;
    if (w->state == SLOT_WAIT_WAITING) {
        r.pos = m_position(m, &m->ev[ev], w);
        r.wqty = w->qty;
    } else if (w->state == SLOT_WAIT_OFFERED) {
        r.h = &m->h[w->hold - 1];
        r.st = due(m, r.h) ? SLOT_HOLD_EXPIRED : (slot_hold_status)r.h->st;
    }
    return r;
}

typedef struct due_ref {
    uint64_t exp, seq;
    const char *name; /* the hold's event */
    uint32_t ix;
} due_ref;

/* The expiry index's key order: expires_at, then the event name as the
 * store writes it (its length byte, then its bytes), then the sequence. */
int due_cmp(const void *x, const void *y)
{
    const due_ref *a = x, *b = y;
    if (a->exp != b->exp)
        return a->exp < b->exp ? -1 : 1;
    size_t la = strlen(a->name), lb = strlen(b->name);
    if (la != lb)
        return la < lb ? -1 : 1;
    int c = memcmp(a->name, b->name, la);
    if (c != 0)
        return c;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The sweeper: at most `limit` due holds of all events, oldest first in the
 * expiry index's order (due_cmp). Returns how many. */
uint64_t m_expire_due(model *m, uint64_t limit)
{
    size_t n = 0, cap = 256;
    due_ref *d = malloc(cap * sizeof *d);
    ASSERT(d != NULL);
    for (uint32_t ev = 0; ev < m->nev; ev++) {
        const mevent *e = &m->ev[ev];
        for (uint32_t i = 0; i < e->nheld; i++) {
            const mhold *h = &m->h[e->held_ix[i]];
            if (!due(m, h))
                continue;
            if (n == cap) {
                cap *= 2;
                d = realloc(d, cap * sizeof *d);
                ASSERT(d != NULL);
            }
            d[n++] = (due_ref){h->exp, h->seq, e->name, e->held_ix[i]};
        }
    }
    qsort(d, n, sizeof *d, due_cmp);
    uint64_t done = 0;
    for (size_t i = 0; i < n && done < limit; i++, done++)
        m_finish(m, &m->h[d[i].ix], SLOT_HOLD_EXPIRED);
    free(d);
    return done;
}

/* ---- allocations */

mres m_allocate(model *m, uint32_t ev, uint32_t b, uint64_t qty, bool has_mpu, uint64_t mpu)
{
    mevent *e = &m->ev[ev];
    mres r = {.err = SLOT_E_OK};
    if (m_chain_free(m, ev) < qty)
        m_expire_event(m, ev);
    if (m_chain_free(m, ev) < qty) {
        r.sold_out = true;
        r.available = m_chain_free(m, ev);
        m->n.alloc_sold_out++;
        return r;
    }
    if (!e->blk[b].exists || e->blk[b].closed) { /* new, or opened again (its max_per_user reset) */
        U_SET(m, e->blk[b].mpu, 0);
        U_SET(m, e->blk[b].closed, false);
        U_SET(m, e->blk[b].exists, true);
    }
    U_SET(m, e->blk[b].qty, e->blk[b].qty + qty);
    U_SET(m, e->blk[b].remaining, e->blk[b].remaining + qty);
    if (has_mpu)
        U_SET(m, e->blk[b].mpu, mpu);
    m_alloc_chain(m, ev, (int64_t)qty);
    m->n.allocs++;
    if (e->waiting > 0)
        m_serve(m, ev); /* entries waiting on the block may be met now */
    return r;
}

mres m_deallocate(model *m, uint32_t ev, uint32_t b, uint64_t qty)
{
    mevent *e = &m->ev[ev];
    mres r = {.err = SLOT_E_OK};
    if (!e->blk[b].exists || e->blk[b].closed || qty > e->blk[b].remaining) {
        r.err = SLOT_E_INVALID_ARGUMENT;
        return r;
    }
    uint64_t n = qty ? qty : e->blk[b].remaining;
    U_SET(m, e->blk[b].qty, e->blk[b].qty - n);
    U_SET(m, e->blk[b].remaining, e->blk[b].remaining - n);
    m_alloc_chain(m, ev, -(int64_t)n);
    if (!qty) {
        U_SET(m, e->blk[b].closed, true);
        if (e->blk[b].held + e->blk[b].confirmed == 0)
            U_SET(m, e->blk[b].exists, false);
    }
    if (n > 0 || !qty)  /* the units given back serve the waitlist as a release would; a removed */
        m_serve(m, ev); /* block's entries wait for the free units from now on */
    m->n.deallocs++;
    return r;
}

/* ---- hold_many */

/* The model's fingerprint of a cart: same items in any order, same print. */
uint64_t m_print(int n, const uint32_t *ev, const uint32_t *qty, const uint32_t *blk)
{
    uint64_t sum = (uint64_t)n;
    for (int i = 0; i < n; i++) {
        uint64_t z = ((uint64_t)blk[i] << 52 | (uint64_t)ev[i] << 20 | qty[i]) * UINT64_C(0x9e3779b97f4a7c15);
        sum += z ^ (z >> 29);
    }
    return sum;
}

/* hold_many, in the order of decisions of docs/protocol.md ("Clarifications
 * of v1.1"): replay or idempotency_conflict -> per item max_per_request,
 * not_on_sale, user_limit -> the first item sold out -> all held. *item is
 * the item the answer names (-1: none); hs[] the cart's holds. */
mres m_cart(model *m, uint32_t user, uint32_t key, int n, const uint32_t *ev, const uint32_t *qty, const uint32_t *blk,
            int *item, mhold **hs)
{
    mres r = {.err = SLOT_E_OK};
    uint64_t print = m_print(n, ev, qty, blk);
    int found = 0;
    *item = -1;
    for (int i = 0; i < n; i++) {
        hs[i] = kt_get(m, ev[i], user, key);
        if ((hs[i] && (!hs[i]->cart || hs[i]->print != print)) ||
            (!hs[i] && m->ev[ev[i]].wmax > 0 && wt_get(m, ev[i], user, key))) {
            r.err = SLOT_E_IDEMPOTENCY_CONFLICT;
            *item = i;
            return r;
        }
        found += hs[i] != NULL;
    }
    if (found == n) {
        for (int i = 0; i < n; i++)
            m_settle(m, hs[i]);
        r.replay = true;
        return r;
    }
    if (found > 0) {
        r.err = SLOT_E_IDEMPOTENCY_CONFLICT;
        return r;
    }
    int sold = -1;
    for (int i = 0; i < n; i++) {
        mevent *e = &m->ev[ev[i]];
        mres t = {.err = SLOT_E_OK};
        uint32_t b = blk[i];
        m->req_blk = b; /* m_admit_ asks the block ("Allocations": an item takes from it as a hold would) */
        if (b && (!e->blk[b - 1].exists || e->blk[b - 1].closed))
            t.err = SLOT_E_INVALID_ARGUMENT; /* an unknown block, before max_per_request */
        else if (qty[i] > e->mpr)
            t.err = SLOT_E_INVALID_ARGUMENT;
        else if (!m_admit_(m, e, ev[i], user, qty[i], &t) && t.err == SLOT_E_OK && sold < 0) {
            sold = i;
            r.available = t.available;
            r.short_ev = t.short_ev;
        }
        m->req_blk = 0;
        if (t.err != SLOT_E_OK) {
            r.err = t.err;
            *item = i;
            return r;
        }
    }
    if (sold >= 0) {
        r.sold_out = true;
        *item = sold;
        return r;
    }
    /* A family's shared units and max_per_user counted once per item ("Ticket types"):
     * the events on two or more items' chains, in the order first met. */
    uint32_t sev[M_CART_ITEMS * SLOT_FAMILY_DEPTH_MAX], sitems[M_CART_ITEMS * SLOT_FAMILY_DEPTH_MAX];
    uint64_t sneed[M_CART_ITEMS * SLOT_FAMILY_DEPTH_MAX], sneed_free[M_CART_ITEMS * SLOT_FAMILY_DEPTH_MAX];
    int sfirst[M_CART_ITEMS * SLOT_FAMILY_DEPTH_MAX];
    uint32_t ns = 0;
    for (int i = 0; i < n; i++) {
        uint32_t ch[SLOT_FAMILY_DEPTH_MAX];
        uint32_t c = m_chain(m, ev[i], ch);
        for (uint32_t j = 0; j < c; j++) {
            uint32_t s = 0;
            while (s < ns && sev[s] != ch[j])
                s++;
            if (s == ns) {
                sev[ns] = ch[j];
                sitems[ns] = 0;
                sneed[ns] = sneed_free[ns] = 0;
                sfirst[ns++] = i;
            }
            sitems[s]++;
            sneed[s] += qty[i];
            sneed_free[s] += blk[i] ? 0 : qty[i]; /* a block item needs none of the family's free units */
        }
    }
    for (uint32_t s = 0; s < ns; s++) {
        const mevent *e = &m->ev[sev[s]];
        if (sitems[s] >= 2 && e->mpu > 0 && e->user_qty[user] + sneed[s] > e->mpu) {
            r.err = SLOT_E_USER_LIMIT;
            *item = sfirst[s];
            m->n.family_carts++;
            return r;
        }
    }
    for (uint32_t s = 0; s < ns; s++) {
        const mevent *e = &m->ev[sev[s]];
        if (sitems[s] >= 2 && m_free(e) < sneed_free[s]) {
            r.sold_out = true;
            r.available = m_free(e);
            r.short_ev = e->name;
            *item = sfirst[s];
            m->n.family_carts++;
            return r;
        }
    }
    for (int i = 0; i < n; i++) {
        hs[i] = m_new_hold(m, ev[i], user, key, qty[i]);
        hs[i]->cart = true; /* above the old nh: a rollback forgets it */
        hs[i]->print = print;
        if (blk[i]) {
            m_block_take_(m, ev[i], hs[i], blk[i], user, qty[i]);
            m->n.block_items++;
        }
    }
    return r;
}
