/*
 * place.c — the allocator's side of placement (docs/design.md, "Moving an
 * event"; docs/protocol.md, "Placement"): the fence every op passes, and the
 * internal ops a move is made of (place_state, place_export, place_stage,
 * place_relinquish, place_own, place_done, place_abort, place_reclaim,
 * place_purge). The record they read and write is slot/store.h's
 * slot_place_rec; the mac that authenticates them is checked before they are
 * queued (src/cluster/placement.c). The commit thread (writes) or a read
 * transaction's thread (reads), like every op.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_int.h"
#include "slot/assert.h"
#include "slot/proto.h"

typedef slot__alloc_ctx ctx;

static const char *const state_names[] = {"absent", "owned", "staged", "relinquished", "gone", "aborted"};

/* res->fields := the fragment fmt makes (heap). ENOMEM when it cannot be had. */
static int fields_set(slot_res *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fields_set(slot_res *res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!b)
        return ENOMEM;
    va_start(ap, fmt);
    vsnprintf(b, (size_t)n + 1, fmt, ap);
    va_end(ap);
    free(res->fields);
    res->fields = b;
    res->fields_len = (size_t)n;
    return 0;
}

/* E's record, ABSENT (zeroed) when there is none. */
static int rec_get(ctx *c, slot_place_rec *r)
{
    int rc = slot_store_place_get(c->st, c->txn, c->ev, c->ev_len, r);
    if (rc == MDB_NOTFOUND) {
        memset(r, 0, sizeof(*r));
        rc = 0;
    }
    return rc;
}

static int rec_put(ctx *c, uint8_t state, uint64_t gen, const char *peer, size_t peer_len)
{
    slot_place_rec r = {.state = state, .gen = gen, .peer_len = (uint8_t)peer_len};
    SLOT_ASSERT(peer_len <= SLOT_CLUSTER_NAME_BYTES_MAX);
    memcpy(r.peer, peer, peer_len);
    return slot_store_place_put(c->st, c->txn, c->ev, c->ev_len, &r);
}

/* wrong_set naming set peer at gen (the placement layer adds the primary). */
static int wrong_set(ctx *c, slot_res *res, const char *peer, uint64_t gen)
{
    slot_res_error(res, SLOT_E_WRONG_SET, "event \"%s\" is placed on replica set \"%s\"", c->ev, peer);
    int rc = fields_set(res, ",\"event\":\"%s\",\"set\":\"%s\",\"gen\":%" PRIu64, c->ev, peer, gen);
    return rc ? rc : SLOT__ANSWERED;
}

static int moving(ctx *c, slot_res *res)
{
    slot_res_error(res, SLOT_E_MOVING, "event \"%s\" is being moved to another replica set", c->ev);
    res->retry_after_ms = SLOT_PLACE_MOVING_RETRY_MS;
    return SLOT__ANSWERED;
}

int slot__place_fence(ctx *c, bool writes, slot_res *res)
{
    slot_place_rec r;
    int rc = rec_get(c, &r);
    if (rc != 0)
        return rc;
    switch (r.state) {
    case SLOT_PLACE_ABSENT:
    case SLOT_PLACE_OWNED:
        return 0;
    case SLOT_PLACE_RELINQUISHED:
        return writes ? moving(c, res) : 0; /* the source serves reads in the cut-over */
    case SLOT_PLACE_STAGED:
        return moving(c, res);
    case SLOT_PLACE_GONE:
        return wrong_set(c, res, r.peer, r.gen);
    case SLOT_PLACE_ABORTED: /* the undo moved the source to this gen (op_reclaim) */
        return wrong_set(c, res, r.peer, r.gen);
    default:
        return MDB_CORRUPTED;
    }
}

int slot__place_cart_fence(slot_alloc *a, MDB_txn *txn, const slot_req *req, uint64_t now_ms, slot_res *res)
{
    uint8_t st[SLOT_CART_ITEMS_MAX];
    slot_place_rec recs[SLOT_CART_ITEMS_MAX];
    bool elsewhere = false;
    for (uint8_t i = 0; i < req->nitems; i++) {
        ctx c = {a, a->store, txn, req->items[i].event, req->items[i].event_len, now_ms};
        int rc = rec_get(&c, &recs[i]);
        if (rc != 0)
            return rc;
        st[i] = recs[i].state;
        if (st[i] == SLOT_PLACE_STAGED || st[i] == SLOT_PLACE_RELINQUISHED) {
            snprintf(res->item_event, sizeof res->item_event, "%s", req->items[i].event);
            return moving(&c, res);
        }
        elsewhere |= st[i] == SLOT_PLACE_GONE || st[i] == SLOT_PLACE_ABORTED;
    }
    if (!elsewhere)
        return 0;
    /* The set of the first item: this one, or the one its record names. */
    bool first_here = st[0] != SLOT_PLACE_GONE && st[0] != SLOT_PLACE_ABORTED;
    const char *first_set = first_here ? "" : recs[0].peer;
    char list[SLOT_CART_ITEMS_MAX * (SLOT_EVENT_BYTES_MAX + 3) + 3];
    size_t n = 0;
    bool all_there = !first_here;
    list[n++] = '[';
    for (uint8_t i = 1; i < req->nitems; i++) {
        bool here = st[i] != SLOT_PLACE_GONE && st[i] != SLOT_PLACE_ABORTED;
        bool same = first_here ? here : (!here && strcmp(recs[i].peer, first_set) == 0);
        if (same)
            continue;
        all_there = false;
        n += (size_t)snprintf(list + n, sizeof list - n, "%s\"%s\"", n > 1 ? "," : "", req->items[i].event);
    }
    list[n++] = ']';
    list[n] = 0;
    if (all_there) { /* every item is on the first item's other set */
        ctx c = {a, a->store, txn, req->items[0].event, req->items[0].event_len, now_ms};
        return wrong_set(&c, res, recs[0].peer, recs[0].gen);
    }
    slot_res_error(res, SLOT_E_CROSS_SET, NULL);
    int rc = fields_set(res, ",\"events\":%s", list);
    return rc ? rc : SLOT__ANSWERED;
}

/* ---- the expiry index of E's held holds (deleted at relinquish, made at own and reclaim) */

typedef struct held_list {
    uint64_t n, cap;
    struct {
        uint64_t seq, at;
    } *v;
} held_list;

static int held_collect(void *p, const slot_hold_rec *h)
{
    held_list *l = p;
    if (h->status != SLOT_HOLD_HELD)
        return 0;
    if (l->n == l->cap) {
        uint64_t cap = l->cap ? l->cap * 2 : 256;
        void *v = realloc(l->v, cap * sizeof(*l->v));
        if (!v)
            return ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].seq = h->seq;
    l->v[l->n].at = h->expires_at_ms;
    l->n++;
    return 0;
}

/* Collected first, written after: no cursor walks a database being written. */
static int expiry_index(ctx *c, bool make)
{
    held_list l = {0, 0, NULL};
    int rc = slot_store_holds_scan(c->st, c->txn, c->ev, c->ev_len, held_collect, &l);
    for (uint64_t i = 0; rc == 0 && i < l.n; i++) {
        rc = make ? slot_store_expiry_put(c->st, c->txn, l.v[i].at, c->ev, c->ev_len, l.v[i].seq)
                  : slot_store_expiry_del(c->st, c->txn, l.v[i].at, c->ev, c->ev_len, l.v[i].seq);
        if (!make && rc == MDB_NOTFOUND)
            rc = MDB_CORRUPTED; /* the index names every held hold */
    }
    free(l.v);
    return rc;
}

static int place_feed(ctx *c, slot_feed_type type, const char *set, size_t set_len, uint64_t gen,
                      const slot_event_rec *e)
{
    slot_feed_entry f;
    memset(&f, 0, offsetof(slot_feed_entry, seats));
    f.type = type;
    f.at_ms = c->now_ms;
    f.event_len = (uint8_t)c->ev_len;
    memcpy(f.event, c->ev, c->ev_len);
    if (e)
        slot__view_fill(&f.view, c->ev, c->ev_len, e);
    f.place_set_len = (uint8_t)set_len;
    memcpy(f.place_set, set, set_len);
    f.place_gen = gen;
    return slot_feed_append(c->st, c->txn, &f);
}

/* ---- the ops */

static int bad(slot_res *res, const char *what, const char *ev, const slot_place_rec *r)
{
    slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "%s: event \"%s\" is %s here at gen %" PRIu64, what, ev,
                   state_names[r->state], r->gen ? r->gen : 1);
    return 0;
}

/* Whether the record says owned at gen (no record: gen 1, when the event exists). */
static bool owned_at(ctx *c, const slot_place_rec *r, uint64_t gen, bool *exists, int *rc)
{
    slot_event_rec e;
    *rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, &e);
    *exists = *rc == 0;
    if (*rc == MDB_NOTFOUND)
        *rc = 0;
    if (r->state == SLOT_PLACE_ABSENT)
        return *exists && gen == 1;
    return r->state == SLOT_PLACE_OWNED && r->gen == gen;
}

static int op_state(ctx *c, slot_res *res)
{
    slot_place_rec r;
    slot_event_rec e;
    int rc = rec_get(c, &r);
    if (rc != 0)
        return rc;
    rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, &e);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return rc;
    bool exists = rc == 0;
    const char *state = r.state == SLOT_PLACE_ABSENT && exists ? "owned" : state_names[r.state];
    return fields_set(res, ",\"event\":\"%s\",\"state\":\"%s\",\"gen\":%" PRIu64 ",\"peer\":\"%s\",\"exists\":%s",
                      c->ev, state, r.state == SLOT_PLACE_ABSENT ? (exists ? 1 : 0) : r.gen, r.peer,
                      exists ? "true" : "false");
}

static int op_export(ctx *c, const slot_place_args *p, slot_res *res)
{
    slot_place_rec r;
    bool exists;
    int rc = rec_get(c, &r);
    if (rc != 0)
        return rc;
    bool ok = owned_at(c, &r, p->gen, &exists, &rc) || (r.state == SLOT_PLACE_RELINQUISHED && r.gen == p->gen);
    if (rc != 0)
        return rc;
    if (!ok)
        return bad(res, "place_export", c->ev, &r);
    uint8_t *raw = malloc(SLOT_PLACE_CHUNK_BYTES);
    char *text = malloc(SLOT_PLACE_CHUNK_BYTES / 3 * 4 + 8 + SLOT_PLACE_CURSOR_BYTES * 2 + 200);
    uint8_t next[SLOT_PLACE_CURSOR_BYTES];
    size_t used = 0, next_len = 0;
    uint32_t count = 0;
    if (!raw || !text) {
        free(raw);
        free(text);
        return ENOMEM;
    }
    rc = slot_store_place_export(c->st, c->txn, c->ev, c->ev_len, p->cursor, p->cursor_len, raw,
                                 SLOT_PLACE_CHUNK_BYTES, &used, &count, next, &next_len);
    if (rc == EINVAL) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "cursor: not a cursor of this event");
        rc = 0;
    } else if (rc == 0) {
        size_t n = (size_t)snprintf(text, 64, ",\"event\":\"%s\",\"count\":%" PRIu32 ",\"data\":\"", c->ev, count);
        n += slot_place_b64_encode(raw, used, text + n, SLOT_PLACE_CHUNK_BYTES / 3 * 4 + 8);
        text[n++] = '"';
        if (next_len > 0) {
            memcpy(text + n, ",\"cursor\":\"", 11);
            n += 11;
            n += slot_place_b64_encode(next, next_len, text + n, SLOT_PLACE_CURSOR_BYTES * 2);
            text[n++] = '"';
        }
        text[n] = 0;
        free(res->fields);
        res->fields = text;
        res->fields_len = n;
        text = NULL;
    }
    free(raw);
    free(text);
    return rc;
}

static int op_stage(ctx *c, const slot_place_args *p, slot_res *res)
{
    slot_place_rec r;
    int rc = rec_get(c, &r);
    if (rc != 0)
        return rc;
    bool same = r.state == SLOT_PLACE_STAGED && r.gen == p->gen && strcmp(r.peer, p->set) == 0;
    if (p->first) {
        /* A name free here: no record, or one of an earlier gen that is gone or
         * aborted, or this stage again (the mover began anew); no keys left. */
        bool free_name = same || r.state == SLOT_PLACE_ABSENT ||
                         ((r.state == SLOT_PLACE_GONE || r.state == SLOT_PLACE_ABORTED) && r.gen < p->gen);
        bool any = false;
        if (free_name && (rc = slot_store_place_any(c->st, c->txn, c->ev, c->ev_len, &any)) != 0)
            return rc;
        if (!free_name)
            return bad(res, "place_stage", c->ev, &r);
        if (any) {
            slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "place_stage: event \"%s\" has keys here; purge first",
                           c->ev);
            return 0;
        }
    } else if (!same) {
        return bad(res, "place_stage", c->ev, &r);
    }
    /* Every record is checked before the first write: a bad chunk changes nothing. */
    uint32_t count = 0;
    rc = slot_store_place_apply(c->st, c->txn, c->ev, c->ev_len, p->data, p->data_len, &count);
    if (rc == EINVAL) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "data: malformed records, or keys of another event");
        return 0;
    }
    if (rc == 0 && p->first)
        rc = rec_put(c, SLOT_PLACE_STAGED, p->gen, p->set, p->set_len);
    if (rc != 0)
        return rc;
    return fields_set(res, ",\"event\":\"%s\",\"count\":%" PRIu32, c->ev, count);
}

static int op_relinquish(ctx *c, const slot_place_args *p, slot_res *res)
{
    slot_place_rec r;
    bool exists;
    int rc = rec_get(c, &r);
    if (rc != 0)
        return rc;
    if (r.state == SLOT_PLACE_RELINQUISHED && r.gen == p->gen && strcmp(r.peer, p->set) == 0)
        return fields_set(res, ",\"event\":\"%s\",\"gen\":%" PRIu64, c->ev, p->gen); /* again: as before */
    bool ok = owned_at(c, &r, p->gen, &exists, &rc);
    if (rc != 0)
        return rc;
    if (!ok)
        return bad(res, "place_relinquish", c->ev, &r);
    if ((rc = rec_put(c, SLOT_PLACE_RELINQUISHED, p->gen, p->set, p->set_len)) != 0 || (rc = expiry_index(c, false)) != 0 ||
        (rc = place_feed(c, SLOT_FEED_EVENT_MOVED, p->set, p->set_len, p->gen + 1, NULL)) != 0)
        return rc;
    return fields_set(res, ",\"event\":\"%s\",\"gen\":%" PRIu64, c->ev, p->gen);
}

static int op_own(ctx *c, const slot_place_args *p, slot_res *res)
{
    slot_place_rec r;
    int rc = rec_get(c, &r);
    if (rc != 0)
        return rc;
    if (r.state == SLOT_PLACE_OWNED && r.gen == p->gen)
        return fields_set(res, ",\"event\":\"%s\",\"gen\":%" PRIu64, c->ev, p->gen);
    if (r.state == SLOT_PLACE_ABORTED && r.gen == p->gen)
        return wrong_set(c, res, r.peer, r.gen);
    if (r.state != SLOT_PLACE_STAGED || r.gen != p->gen)
        return bad(res, "place_own", c->ev, &r);
    slot_event_rec e;
    rc = slot_store_event_get(c->st, c->txn, c->ev, c->ev_len, &e);
    if (rc == MDB_NOTFOUND) {
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "place_own: the stage of \"%s\" has no event record", c->ev);
        return 0;
    }
    char from[SLOT_CLUSTER_NAME_BYTES_MAX + 1];
    memcpy(from, r.peer, sizeof from);
    if (rc != 0 || (rc = rec_put(c, SLOT_PLACE_OWNED, p->gen, from, r.peer_len)) != 0 ||
        (rc = expiry_index(c, true)) != 0 ||
        (rc = place_feed(c, SLOT_FEED_EVENT_ARRIVED, from, r.peer_len, p->gen, &e)) != 0)
        return rc;
    /* Its idempotency keys arrived with its holds: loaded before the first
     * request that needs them, as a cold event's are (cold.c). */
    if (c->a->idem && slot__idem_cold_add(c->a->idem, c->ev, c->ev_len) != 0)
        return ENOMEM;
    return fields_set(res, ",\"event\":\"%s\",\"gen\":%" PRIu64, c->ev, p->gen);
}

static int op_done(ctx *c, const slot_place_args *p, slot_res *res)
{
    slot_place_rec r;
    int rc = rec_get(c, &r);
    if (rc != 0)
        return rc;
    if (r.state == SLOT_PLACE_GONE && r.gen == p->gen)
        return fields_set(res, ",\"event\":\"%s\",\"gen\":%" PRIu64, c->ev, p->gen);
    if (r.state != SLOT_PLACE_RELINQUISHED || r.gen + 1 != p->gen)
        return bad(res, "place_done", c->ev, &r);
    char to[SLOT_CLUSTER_NAME_BYTES_MAX + 1];
    memcpy(to, r.peer, sizeof to);
    if ((rc = rec_put(c, SLOT_PLACE_GONE, p->gen, to, r.peer_len)) != 0)
        return rc;
    return fields_set(res, ",\"event\":\"%s\",\"gen\":%" PRIu64, c->ev, p->gen);
}

static int op_abort(ctx *c, const slot_place_args *p, slot_res *res)
{
    slot_place_rec r;
    bool exists;
    int rc = rec_get(c, &r);
    if (rc != 0)
        return rc;
    if (r.state == SLOT_PLACE_ABORTED && r.gen == p->gen)
        return fields_set(res, ",\"event\":\"%s\",\"gen\":%" PRIu64, c->ev, p->gen);
    bool owned = owned_at(c, &r, p->gen, &exists, &rc);
    if (rc != 0)
        return rc;
    bool staged = r.state == SLOT_PLACE_STAGED && r.gen == p->gen;
    bool never = (r.state == SLOT_PLACE_ABSENT && !exists) ||
                 ((r.state == SLOT_PLACE_GONE || r.state == SLOT_PLACE_ABORTED) && r.gen < p->gen);
    if (owned || !(staged || never))
        return bad(res, "place_abort", c->ev, &r);
    if ((rc = rec_put(c, SLOT_PLACE_ABORTED, p->gen, p->set, p->set_len)) != 0)
        return rc;
    return fields_set(res, ",\"event\":\"%s\",\"gen\":%" PRIu64, c->ev, p->gen);
}

/* place_reclaim at G+1: the undo of a move of gen G. The source owns E again,
 * at G+1, from relinquished or still owned at G (T's abort at G+1 came first,
 * so nothing else can own E at G+1); again at owned G+1 answers as before.
 * The new gen is what lets a later move stage on T (aborted at G+1) at G+2
 * while a stale mover's late place_own at G+1 stays refused there. */
static int op_reclaim(ctx *c, const slot_place_args *p, slot_res *res)
{
    slot_place_rec r;
    bool exists;
    int rc = rec_get(c, &r);
    if (rc != 0)
        return rc;
    if (p->gen < 2)
        return bad(res, "place_reclaim", c->ev, &r);
    if (r.state == SLOT_PLACE_OWNED && r.gen == p->gen)
        return fields_set(res, ",\"event\":\"%s\",\"gen\":%" PRIu64, c->ev, p->gen);
    bool owned = owned_at(c, &r, p->gen - 1, &exists, &rc);
    if (rc != 0)
        return rc;
    bool relinquished = r.state == SLOT_PLACE_RELINQUISHED && r.gen + 1 == p->gen;
    if (!owned && !relinquished)
        return bad(res, "place_reclaim", c->ev, &r);
    char peer[SLOT_CLUSTER_NAME_BYTES_MAX + 1];
    memcpy(peer, r.peer, sizeof peer);
    if ((rc = rec_put(c, SLOT_PLACE_OWNED, p->gen, peer, r.peer_len)) != 0)
        return rc;
    if (relinquished) { /* relinquish deleted the expiry index and may have left the keys cold */
        if ((rc = expiry_index(c, true)) != 0)
            return rc;
        if (c->a->idem && slot__idem_cold_add(c->a->idem, c->ev, c->ev_len) != 0)
            return ENOMEM; /* a start in between left its keys out (cold.c): loaded on need */
    }
    return fields_set(res, ",\"event\":\"%s\",\"gen\":%" PRIu64, c->ev, p->gen);
}

static int op_purge(ctx *c, const slot_place_args *p, slot_res *res)
{
    slot_place_rec r;
    bool exists;
    int rc = rec_get(c, &r);
    if (rc != 0)
        return rc;
    (void)owned_at(c, &r, p->gen, &exists, &rc);
    if (rc != 0)
        return rc;
    if (!(r.state == SLOT_PLACE_GONE || r.state == SLOT_PLACE_ABORTED || r.state == SLOT_PLACE_STAGED ||
          (r.state == SLOT_PLACE_ABSENT && !exists)))
        return bad(res, "place_purge", c->ev, &r);
    uint32_t n = 0;
    bool more = false;
    rc = slot_store_place_purge(c->st, c->txn, c->ev, c->ev_len, SLOT_PLACE_PURGE_KEYS, &n, &more);
    if (rc != 0)
        return rc;
    return fields_set(res, ",\"event\":\"%s\",\"count\":%" PRIu32 ",\"more\":%s", c->ev, n, more ? "true" : "false");
}

int slot__op_place(ctx *c, const slot_req *req, slot_res *res)
{
    const slot_place_args *p = req->place;
    if (!p) {
        slot_res_error(res, SLOT_E_INTERNAL, "op %s without its fields", slot_op_name(req->op));
        return 0;
    }
    int rc;
    switch (req->op) {
    case SLOT_OP_PLACE_STATE:
        rc = op_state(c, res);
        break;
    case SLOT_OP_PLACE_EXPORT:
        rc = op_export(c, p, res);
        break;
    case SLOT_OP_PLACE_STAGE:
        rc = op_stage(c, p, res);
        break;
    case SLOT_OP_PLACE_RELINQUISH:
        rc = op_relinquish(c, p, res);
        break;
    case SLOT_OP_PLACE_OWN:
        rc = op_own(c, p, res);
        break;
    case SLOT_OP_PLACE_DONE:
        rc = op_done(c, p, res);
        break;
    case SLOT_OP_PLACE_ABORT:
        rc = op_abort(c, p, res);
        break;
    case SLOT_OP_PLACE_RECLAIM:
        rc = op_reclaim(c, p, res);
        break;
    case SLOT_OP_PLACE_PURGE:
        rc = op_purge(c, p, res);
        break;
    default:
        SLOT_ASSERT(!"slot__op_place: not a placement op");
        return 0;
    }
    return slot__answered_ok(rc);
}
