/*
 * cart.c — hold_many, a cart of several events held all or nothing
 * (docs/protocol.md, "hold_many" and "Clarifications of v1.1"). Internal to
 * libslot; see alloc_int.h.
 *
 * Every item is checked as a hold of its event would be, and only when all
 * pass is anything written, so a cart that fails changes nothing (apart from
 * the expiry of due holds, which a hold's checks also do). The request key is
 * recorded for every item's event: each item's hold carries kind "cart" and
 * the cart's fingerprint (a hash of its events and quantities that does not
 * depend on their order), which is how a replay tells "the same cart, in
 * another order" from "the key used with other items".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_int.h"
#include "slot/assert.h"

typedef slot__alloc_ctx ctx;

/* The cart's state while it is decided: one context, event and hold per item. */
typedef struct cart {
    const slot_req *req;
    uint32_t n;
    uint64_t print; /* the fingerprint */
    ctx c[SLOT_CART_ITEMS_MAX];
    slot_event_rec e[SLOT_CART_ITEMS_MAX];
    slot_hold_rec h[SLOT_CART_ITEMS_MAX];
    uint64_t grant_seq[SLOT_CART_ITEMS_MAX]; /* each item's grant entry (0: no room) */
    uint64_t user_qty[SLOT_CART_ITEMS_MAX];
} cart;

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* A sum of one hash per (event, qty): the items' order does not change it;
 * never 0, so a cart hold always carries one. */
static uint64_t fingerprint(const slot_req *req)
{
    uint64_t sum = req->nitems;
    for (uint32_t i = 0; i < req->nitems; i++) {
        uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a over the name, then the qty */
        for (uint32_t j = 0; j < req->items[i].event_len; j++)
            h = (h ^ (uint8_t)req->items[i].event[j]) * UINT64_C(0x100000001b3);
        h = (h ^ 0xffu) * UINT64_C(0x100000001b3); /* then the item's block, if any */
        for (uint32_t j = 0; j < req->items[i].alloc_len; j++)
            h = (h ^ (uint8_t)req->items[i].alloc[j]) * UINT64_C(0x100000001b3);
        sum += mix(h ^ ((uint64_t)req->items[i].qty << 32));
    }
    return sum ? sum : 1;
}

/* The item an answer is about: its event is named in the reply. */
static void name_item(slot_res *res, const cart *k, uint32_t i)
{
    memcpy(res->item_event, k->req->items[i].event, k->req->items[i].event_len + 1u);
    (void)k;
}

static int res_cart(slot_res *res, cart *k)
{
    res->cart = calloc(k->n, sizeof(*res->cart));
    if (!res->cart)
        return ENOMEM;
    res->ncart = k->n;
    for (uint32_t i = 0; i < k->n; i++) {
        slot_cart_hold *o = &res->cart[i];
        const slot_hold_rec *h = &k->h[i];
        memcpy(o->event, k->req->items[i].event, k->req->items[i].event_len + 1u);
        slot__hold_id_format(o->hold, h->seq, h->tag);
        o->status = h->status;
        o->qty = h->qty;
        o->expires_at_ms = h->expires_at_ms;
    }
    return 0;
}

/*
 * The key's earlier uses on the items' events: MDB_NOTFOUND when it has none
 * (a new cart), 0 with res = the replay when every item's event holds this
 * cart's hold, SLOT__ANSWERED with idempotency_conflict when the key was used
 * with other items, by a plain hold or a waitlist entry, or an LMDB error.
 */
static int cart_known(cart *k, slot_res *res)
{
    const slot_req *req = k->req;
    uint32_t found = 0;
    for (uint32_t i = 0; i < k->n; i++) {
        ctx *c = &k->c[i];
        int rc = slot__request_find(c, req->user, req->user_len, req->request, req->request_len, &k->h[i]);
        if (rc == 0 && (k->h[i].kind != SLOT_HOLD_KIND_CART || k->h[i].origin != k->print)) {
            slot__key_conflict(res, req->request, c->ev);
            name_item(res, k, i);
            return SLOT__ANSWERED;
        }
        if (rc == MDB_NOTFOUND && k->e[i].waitlist_max > 0) {
            rc = slot__waitlist_key_used(c, req->user, req->user_len, req->request, req->request_len);
            if (rc == 0) {
                slot__key_conflict(res, req->request, c->ev);
                name_item(res, k, i);
                return SLOT__ANSWERED;
            }
        }
        if (rc == 0)
            found++;
        else if (rc != MDB_NOTFOUND)
            return rc;
    }
    if (found == 0)
        return MDB_NOTFOUND;
    if (found < k->n) { /* some of its events know the key, others not: other items */
        slot__key_conflict(res, req->request, "(some of the cart's)");
        return SLOT__ANSWERED;
    }
    for (uint32_t i = 0; i < k->n; i++) {
        ctx *c = &k->c[i];
        int rc = 0;
        /* an earlier item's expiry returned units to its ancestors, which may be this item's
         * event ("Ticket types": once each, in the same commit): read it again, never settle
         * on a stale copy that would write the ancestor's old held back */
        if (i > 0)
            rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, &k->e[i]);
        if (rc == 0)
            rc = slot__hold_settle(c, &k->e[i], &k->h[i]);
        if (rc != 0)
            return rc;
    }
    res->replay = true;
    return res_cart(res, k);
}

/* The checks of each item as its own hold, in request order: max_per_request,
 * not_on_sale, user_limit; then the first item that cannot be met is sold_out.
 * Returns 0 with res untouched when every item may be held. */
static int cart_admit(cart *k, slot_res *res)
{
    int sold = -1;
    uint64_t sold_avail = 0, sold_remaining = 0;
    bool sold_block = false; /* the item short is from a block: the reply carries "remaining" */
    char sold_short[SLOT_EVENT_BYTES_MAX + 1] = "";
    for (uint32_t i = 0; i < k->n; i++) {
        ctx *c = &k->c[i];
        slot_req one = *k->req;
        one.qty = k->req->items[i].qty;
        one.alloc_len = k->req->items[i].alloc_len;
        memcpy(one.alloc, k->req->items[i].alloc, one.alloc_len + 1u);
        /* an unknown block comes before max_per_request ("Clarifications of v1.2", Hold decision order) */
        int known = one.alloc_len > 0 ? slot__block_known(c, &one, res) : 0;
        if (known != 0) {
            if (known == SLOT__ANSWERED)
                name_item(res, k, i);
            return slot__answered_ok(known);
        }
        if (one.qty > k->e[i].max_per_request) {
            slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "items[%u].qty: %u is above event \"%s\"'s max_per_request %u",
                           (unsigned)i, (unsigned)one.qty, c->ev, (unsigned)k->e[i].max_per_request);
            name_item(res, k, i);
            return 0;
        }
        if (!slot__on_sale(c, &k->e[i], res)) {
            name_item(res, k, i);
            return 0;
        }
        const char *grant = k->req->items[i].grant[0] ? k->req->items[i].grant : k->req->grant;
        int grc = slot__grant_check(c, &one, grant, &k->e[i], &k->grant_seq[i], res);
        if (grc != 0 || res->err != SLOT_E_OK) { /* each item needs a grant: the cart's */
            if (grc == 0)
                name_item(res, k, i);
            return grc;
        }
        slot_res r;
        memset(&r, 0, sizeof(r));
        int rc = 0;
        if (i > 0) /* an earlier item's checks may have expired this event's holds (a family's expire all) */
            rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, &k->e[i]);
        if (rc == 0)
            rc = slot__hold_admit(c, &one, &k->e[i], &k->user_qty[i], &r);
        if (rc != 0)
            return rc;
        if (r.err != SLOT_E_OK) {
            *res = r; /* user_limit; r has no heap parts */
            name_item(res, k, i);
            return 0;
        }
        if (r.sold_out && sold < 0) {
            sold = (int)i;
            sold_avail = r.available;
            sold_block = r.block;
            sold_remaining = r.block_remaining;
            memcpy(sold_short, r.short_event, sizeof(sold_short));
        }
    }
    if (sold >= 0) {
        res->sold_out = true;
        res->available = sold_avail;
        res->block = sold_block;
        res->block_remaining = sold_remaining;
        memcpy(res->short_event, sold_short, sizeof(sold_short));
        name_item(res, k, (uint32_t)sold);
    }
    return 0;
}

/* One event of the cart's chains (docs/protocol.md, "Ticket types": "the
 * family's shared units are counted once per item"): what the items need of
 * it, and the first item whose chain it is on. */
typedef struct shared {
    const char *ev;
    uint8_t len;
    uint32_t item, items;
    uint64_t need, need_free, free, max_per_user; /* need_free: of need, what is not from a block */
} shared;

static shared *shared_add(shared *t, uint32_t *n, const char *ev, uint8_t len, const slot_event_rec *e, uint32_t item,
                          uint32_t qty, bool block)
{
    for (uint32_t j = 0; j < *n; j++)
        if (t[j].len == len && memcmp(t[j].ev, ev, len) == 0) {
            t[j].need += qty;
            t[j].need_free += block ? 0 : qty;
            t[j].items++;
            return &t[j];
        }
    shared *x = &t[(*n)++];
    *x = (shared){ev, len, item, 1, qty, block ? 0 : qty, slot__free_units(e), e->max_per_user};
    return x;
}

/* The cart's items of one family counted together against each shared
 * event's free units and max_per_user (after each item passed alone):
 * user_limit, then sold_out naming the first item on that event's chain.
 * Returns 0 with res untouched when the cart may be held. */
static int cart_family(cart *k, slot_res *res)
{
    shared t[SLOT_CART_ITEMS_MAX * SLOT_FAMILY_DEPTH_MAX];
    slot__chain ch[SLOT_CART_ITEMS_MAX]; /* ancestors' names stay here while t points at them */
    uint32_t n = 0;
    bool family = false;
    for (uint32_t i = 0; i < k->n; i++) {
        family = family || k->e[i].parent_len > 0 || k->e[i].children > 0;
        ch[i].n = 0;
    }
    if (!family)
        return 0;
    for (uint32_t i = 0; i < k->n; i++) {
        uint32_t qty = k->req->items[i].qty;
        /* a later item's checks may have expired holds (a family's are all expired): read again */
        int rc = slot_store_event_get(k->c[i].st, k->c[i].txn, k->c[i].ev, k->c[i].ev_len, &k->e[i]);
        if (rc != 0)
            return rc;
        bool block = k->req->items[i].alloc_len > 0; /* takes from its block, not the free shards */
        shared_add(t, &n, k->c[i].ev, (uint8_t)k->c[i].ev_len, &k->e[i], i, qty, block);
        rc = slot__chain_load(&k->c[i], &k->e[i], &ch[i]);
        if (rc != 0)
            return rc;
        for (uint8_t a = 0; a < ch[i].n; a++)
            shared_add(t, &n, ch[i].anc[a].name, ch[i].anc[a].len, &ch[i].anc[a].rec, i, qty, block);
    }
    for (uint32_t j = 0; j < n; j++) {
        if (t[j].items < 2 || t[j].max_per_user == 0)
            continue;
        uint64_t u = 0;
        int rc = slot_store_user_get(k->c[0].st, k->c[0].txn, t[j].ev, t[j].len, k->req->user, k->req->user_len, &u);
        if (rc != 0)
            return rc;
        if (u + t[j].need > t[j].max_per_user) {
            slot_res_error(res, SLOT_E_USER_LIMIT,
                           "user has %llu of event \"%.*s\"'s max_per_user %llu; the cart adds %llu",
                           (unsigned long long)u, (int)t[j].len, t[j].ev, (unsigned long long)t[j].max_per_user,
                           (unsigned long long)t[j].need);
            name_item(res, k, t[j].item);
            return 0;
        }
    }
    for (uint32_t j = 0; j < n; j++) {
        if (t[j].items >= 2 && t[j].free < t[j].need_free) {
            res->sold_out = true;
            res->available = t[j].free;
            memcpy(res->short_event, t[j].ev, t[j].len);
            res->short_event[t[j].len] = 0;
            name_item(res, k, t[j].item);
            return 0;
        }
    }
    return 0;
}

/*
 * hold_many. Decision order (docs/protocol.md, "Clarifications of v1.1"):
 * syntax of the whole request (proto: 1..16 items, distinct events) ->
 * unknown_event (the first unknown item) -> replay or idempotency_conflict ->
 * per item max_per_request, not_on_sale, user_limit -> sold_out (the first
 * item that cannot be met) -> every item held, in one transaction.
 */
int slot__op_hold_many(slot_alloc *a, MDB_txn *txn, const slot_req *req, uint64_t now_ms, slot_res *res)
{
    SLOT_ASSERT(req->nitems >= 1 && req->nitems <= SLOT_CART_ITEMS_MAX);
    cart *k = malloc(sizeof(*k)); /* ~150 KiB of hold records: not on the commit thread's stack */
    if (!k)
        return ENOMEM;
    k->req = req;
    k->n = req->nitems;
    k->print = fingerprint(req);
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < k->n; i++) {
        k->c[i] = (ctx){a, a->store, txn, req->items[i].event, req->items[i].event_len, now_ms};
        k->c[i].rate_defer = true; /* the items' tokens are spent only when the cart is held or sold_out */
        rc = slot__event_load(&k->c[i], &k->e[i], res);
        if (rc == SLOT__ANSWERED)
            name_item(res, k, i);
    }
    if (rc == 0)
        rc = cart_known(k, res);
    if (rc == MDB_NOTFOUND) {
        rc = cart_admit(k, res);
        if (rc == 0 && res->err == SLOT_E_OK && !res->sold_out)
            rc = cart_family(k, res);
        for (uint32_t i = 0; rc == 0 && res->err == SLOT_E_OK && !res->sold_out && i < k->n; i++) {
            ctx *c = &k->c[i];
            slot_hold_rec *h = &k->h[i];
            slot__hold_new(h, req->user, req->user_len, req->request, req->request_len, req->items[i].qty);
            h->kind = SLOT_HOLD_KIND_CART;
            h->origin = k->print;
            slot__client_note(h, req, &k->e[i]);
            h->alloc_len = req->items[i].alloc_len; /* an item from a block takes from it (block_take) */
            memcpy(h->alloc, req->items[i].alloc, h->alloc_len + 1u);
            /* an earlier item of the family changed this event's counters: read it again */
            rc = slot_store_event_get(c->st, txn, c->ev, c->ev_len, &k->e[i]);
            if (rc == 0 && k->e[i].max_per_user > 0)
                rc = slot_store_user_get(c->st, txn, c->ev, c->ev_len, req->user, req->user_len, &k->user_qty[i]);
            if (rc == 0)
                rc = slot__hold_make(c, &k->e[i], h, k->user_qty[i] + h->qty);
            if (rc == 0)
                rc = slot_store_event_put(c->st, txn, c->ev, c->ev_len, &k->e[i]);
            if (rc == 0)
                rc = slot__grant_use(c, k->grant_seq[i]);
        }
        /* "Clarifications of v1.2", Client limits: a cart answered held or sold_out takes a
         * token for each item's event; one refused with another error takes none. */
        for (uint32_t i = 0; rc == 0 && res->err == SLOT_E_OK && i < k->n; i++)
            rc = slot__client_spend(&k->c[i], req);
        if (rc == 0 && res->err == SLOT_E_OK && !res->sold_out)
            rc = res_cart(res, k);
    }
    free(k);
    return slot__answered_ok(rc);
}
