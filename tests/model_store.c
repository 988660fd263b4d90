/* tests/model_store.c — the store under test (model.h): opening and closing it,
 * running one request on it, and every comparison of its answers, views,
 * stored holds, users records and waitlists with the model; batches. */
#include "model.h"

#include <stdlib.h>
#include <string.h>

/* ---- the store under test */

void store_open(model *m)
{
    slot_store_opts o = {.dir = m->dir, .nosync = true};
    char err[256];
    int rc = slot_store_open(&o, &m->st, err, sizeof err);
    if (rc != 0)
        T_FAIL_("slot_store_open: %d %s", rc, err);
    ASSERT_EQ(slot_alloc_init(&m->a, m->st), 0);
    /* Seeded, so a failing seed repeats: shard choices and hold tags too. */
    slot_alloc_seed(&m->a, m->seed ^ m->op);
    m->alloc_open = true;
}

void store_close(model *m)
{
    ASSERT(m->txn == NULL);
    if (m->alloc_open)
        slot_alloc_close(&m->a);
    m->alloc_open = false;
    slot_store_close(m->st);
    m->st = NULL;
}

MDB_txn *txn(model *m)
{
    if (!m->txn)
        ASSERT_EQ(mdb_txn_begin(slot_store_env(m->st), NULL, 0, &m->txn), 0);
    return m->txn;
}

/* Runs q on the batch (or on `on` when not NULL). Returns false when the map
 * is full: the batch must be aborted and nothing of res means anything. */
bool run_on(model *m, MDB_txn *on, const slot_req *q, slot_res *res)
{
    slot_res_clear(res);
    int rc = slot_alloc_run(&m->a, on ? on : txn(m), q, m->now, res);
    if (rc == MDB_MAP_FULL) {
        m->map_full = true;
        return false;
    }
    if (rc != 0)
        T_FAIL_("slot_alloc_run(%s): %d %s", slot_op_name(q->op), rc, mdb_strerror(rc));
    return true;
}

const mhold *m_holds; /* the model's holds, for the links expect_hold_fields names */

void expect_err(const slot_res *r, slot_err want, const char *what)
{
    if (r->err != want)
        T_FAIL_("%s: error %s, model says %s (message \"%s\")", what, slot_err_name(r->err), slot_err_name(want),
                r->message);
}

/* The answer about a hold (hold, confirm, release, cancel, get_hold, and
 * hold_not_active) against the model's hold. */
void expect_hold_fields(const slot_res *r, const mres *want, const char *what)
{
    char id[SLOT_HOLD_ID_BYTES + 1];
    hold_id(id, want->h);
    if (r->hold_status != want->st)
        T_FAIL_("%s: status %s, model says %s", what, slot_hold_status_name(r->hold_status),
                slot_hold_status_name(want->st));
    ASSERT_STR_EQ(r->hold, id);
    ASSERT_EQ(r->qty, want->h->qty);
    ASSERT_EQ(r->expires_at_ms, want->h->exp);
    ASSERT_EQ(r->created_at_ms, want->h->created);
    ASSERT_STR_EQ(r->user, users[want->h->user]);
    ASSERT_EQ(r->returned, want->h->returned);
    ASSERT_EQ(r->extensions, want->h->ext);
    if (want->h->replaces)
        hold_id(id, &m_holds[want->h->replaces - 1]);
    ASSERT_STR_EQ(r->replaces, want->h->replaces ? id : "");
    if (want->h->replaced_by)
        hold_id(id, &m_holds[want->h->replaced_by - 1]);
    ASSERT_STR_EQ(r->replaced_by, want->h->replaced_by ? id : "");
}

void expect_res(const slot_res *r, const mres *want, const char *what)
{
    expect_err(r, want->err, what);
    if (want->err == SLOT_E_NOT_ON_SALE)
        ASSERT_STR_EQ(r->sale_event, want->sale_ev ? want->sale_ev : "");
    if (want->err != SLOT_E_OK && want->err != SLOT_E_HOLD_NOT_ACTIVE)
        return;
    ASSERT_EQ(r->sold_out, want->sold_out);
    ASSERT_EQ(r->replay, want->replay);
    ASSERT_EQ(r->done, want->done);
    if (want->sold_out) {
        ASSERT_EQ(r->available, want->available);
        ASSERT_STR_EQ(r->short_event, want->short_ev ? want->short_ev : ""); /* v1.2: the chain's short event */
    } else if (want->h)
        expect_hold_fields(r, want, what);
}

/* The event view and the shards' free units against the model. */
void expect_event_on(model *m, MDB_txn *on, uint32_t ev)
{
    const mevent *e = &m->ev[ev];
    slot_req q = slot_test_req(SLOT_OP_EVENT, e->name);
    slot_res r = {0};
    if (!run_on(m, on, &q, &r))
        return;
    expect_err(&r, SLOT_E_OK, "event");
    ASSERT_STR_EQ(r.view.event, e->name);
    ASSERT_EQ(r.view.status, e->status);
    ASSERT_EQ(r.view.capacity, e->cap);
    ASSERT_EQ(r.view.held, e->held);
    ASSERT_EQ(r.view.confirmed, e->confirmed);
    ASSERT_EQ(r.view.available, m_free(e));
    ASSERT_U64_EQ(r.view.allocated, e->allocated); /* v1.2: unused units of its and its descendants' blocks */
    uint32_t open = 0;
    for (uint32_t b = 0; b < M_BLOCKS; b++) {
        if (!e->blk[b].exists || e->blk[b].closed)
            continue;
        ASSERT_LT(open, r.view.nblocks);
        char name[4] = {'b', (char)('0' + b), 0, 0};
        ASSERT_STR_EQ(r.view.blocks[open].name, name);
        ASSERT_U64_EQ(r.view.blocks[open].qty, e->blk[b].qty);
        ASSERT_U64_EQ(r.view.blocks[open].remaining, e->blk[b].remaining);
        ASSERT_U64_EQ(r.view.blocks[open].held, e->blk[b].held);
        ASSERT_U64_EQ(r.view.blocks[open].confirmed, e->blk[b].confirmed);
        open++;
    }
    ASSERT_EQ(r.view.nblocks, open);
    for (uint32_t b = 0; b < M_BLOCKS; b++) { /* every block row, closed ones too */
        char name[4] = {'b', (char)('0' + b), 0, 0};
        slot_block_rec br;
        int brc = slot_store_block_get(m->st, on ? on : m->txn, e->name, strlen(e->name), name, 2, &br);
        if (!e->blk[b].exists) {
            ASSERT_EQ(brc, MDB_NOTFOUND);
            continue;
        }
        ASSERT_EQ(brc, 0);
        if (br.closed != e->blk[b].closed || br.qty != e->blk[b].qty || br.held != e->blk[b].held ||
            br.confirmed != e->blk[b].confirmed || br.remaining != e->blk[b].remaining)
            T_FAIL_(
                "%s block %s: stored closed %d qty %llu held %llu confirmed %llu remaining %llu; model %d %llu %llu "
                "%llu %llu",
                e->name, name, br.closed, (unsigned long long)br.qty, (unsigned long long)br.held,
                (unsigned long long)br.confirmed, (unsigned long long)br.remaining, e->blk[b].closed,
                (unsigned long long)e->blk[b].qty, (unsigned long long)e->blk[b].held,
                (unsigned long long)e->blk[b].confirmed, (unsigned long long)e->blk[b].remaining);
    }
    ASSERT_EQ(r.view.shards, e->shards);
    ASSERT_EQ(r.view.hold_ttl_ms, e->ttl);
    ASSERT_EQ(r.view.max_per_user, e->mpu);
    ASSERT_EQ(r.view.max_per_request, e->mpr);
    ASSERT_U64_EQ(r.view.opens_at_ms, e->opens);
    ASSERT_U64_EQ(r.view.closes_at_ms, e->closes);
    ASSERT_EQ(r.view.max_extensions, e->mx);
    ASSERT_U64_EQ(r.view.max_hold_ms, e->mh);
    ASSERT_EQ(r.view.waitlist_max, e->wmax);
    ASSERT_U64_EQ(r.view.waiting, e->waiting);
    ASSERT_U64_EQ(r.view.waiting_qty, e->waiting_qty);
    ASSERT_STR_EQ(r.view.parent, e->parent ? m->ev[e->parent - 1].name : "");
    ASSERT_EQ(r.view.children, e->children);
    if (e->parent) /* v1.2: the least available over the chain */
        ASSERT_U64_EQ(r.view.effective_available, m_chain_free(m, ev));
    q.op = SLOT_OP_SHARDS;
    if (!run_on(m, on, &q, &r))
        return;
    expect_err(&r, SLOT_E_OK, "shards");
    ASSERT_EQ(r.nshards, e->shards);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < r.nshards; i++)
        sum += r.shard_free[i];
    ASSERT_EQ(sum, m_free(e));
    slot_res_clear(&r);
}

/* After set_capacity and reshard: free units spread evenly (largest minus
 * smallest at most 1). */
void expect_even(model *m, uint32_t ev)
{
    slot_req q = slot_test_req(SLOT_OP_SHARDS, m->ev[ev].name);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < r.nshards; i++) {
        lo = r.shard_free[i] < lo ? r.shard_free[i] : lo;
        hi = r.shard_free[i] > hi ? r.shard_free[i] : hi;
    }
    ASSERT_LE(hi - lo, 1);
    slot_res_clear(&r);
}

void expect_touched(model *m)
{
    if (m->touched_all) {
        for (uint32_t ev = 0; ev < m->nev && !m->map_full; ev++)
            expect_event_on(m, NULL, ev);
    } else {
        for (uint32_t i = 0; i < m->ntouched && !m->map_full; i++)
            expect_event_on(m, NULL, m->touched[i]);
    }
    m->ntouched = 0;
    m->touched_all = false;
}

/* slot_check: no violations (of one event, or all when ev is NULL). */
void expect_clean(model *m, MDB_txn *on, const char *ev)
{
    slot_res r = {0};
    int rc = slot_check(m->a.store, on, ev, ev ? strlen(ev) : 0, &r);
    if (rc != 0)
        T_FAIL_("slot_check: %d %s", rc, mdb_strerror(rc));
    expect_err(&r, SLOT_E_OK, "check");
    for (uint32_t i = 0; i < r.nviolations && i < SLOT_CHECK_VIOLATIONS_MAX; i++)
        fprintf(stderr, "  violation %d in \"%s\": %s\n", r.violations[i].invariant, r.violations[i].event,
                r.violations[i].detail);
    ASSERT_EQ(r.nviolations, 0);
    m->n.checks++;
    slot_res_clear(&r);
}

/* ---- every stored hold against the model (after a reopen, and at the end) */

typedef struct hold_cmp {
    const model *m;
    const uint32_t *ix; /* the model's holds of the event, in sequence order */
    uint32_t n, at;
} hold_cmp;

int cmp_hold(void *p, const slot_hold_rec *rec)
{
    hold_cmp *c = p;
    if (c->at >= c->n)
        T_FAIL_("hold seq %llu is in the store, not in the model", (unsigned long long)rec->seq);
    const mhold *h = &c->m->h[c->ix[c->at++]];
    char k[16];
    key_name(k, h->key);
    ASSERT_EQ(rec->seq, h->seq);
    ASSERT_EQ(rec->tag, h->tag);
    if (rec->status != h->st)
        T_FAIL_("hold seq %llu: stored %s, model %s", (unsigned long long)h->seq, slot_hold_status_name(rec->status),
                slot_hold_status_name((slot_hold_status)h->st));
    ASSERT_EQ(rec->qty, h->qty);
    ASSERT_EQ(rec->created_at_ms, h->created);
    ASSERT_EQ(rec->expires_at_ms, h->exp);
    ASSERT_STR_EQ(rec->user, users[h->user]);
    ASSERT_STR_EQ(rec->request, k);
    ASSERT_EQ(rec->returned, h->returned);
    ASSERT_EQ(rec->extensions, h->ext);
    ASSERT_EQ(rec->replaced_by_seq, h->replaced_by ? c->m->h[h->replaced_by - 1].seq : 0);
    ASSERT_EQ(rec->replaces_seq, h->replaces ? c->m->h[h->replaces - 1].seq : 0);
    ASSERT_EQ(rec->kind, h->cart ? SLOT_HOLD_KIND_CART : h->wl ? SLOT_HOLD_KIND_WAITLIST : SLOT_HOLD_KIND_PLAIN);
    if (h->wl)
        ASSERT_EQ(rec->origin, h->went ? c->m->w[h->went - 1].join : 0);
    return 0;
}

/* The stored waiting list against the model's, in join order. */
typedef struct wait_cmp {
    const model *m;
    uint32_t at; /* the model's next entry to look at (index + 1) */
    uint64_t seen;
} wait_cmp;

int cmp_waiting(void *p, const slot_wait_rec *rec)
{
    wait_cmp *c = p;
    while (c->at && c->m->w[c->at - 1].state != SLOT_WAIT_WAITING)
        c->at = c->m->w[c->at - 1].next;
    if (!c->at)
        T_FAIL_("waiting entry join %llu is in the store, not in the model", (unsigned long long)rec->join);
    const mwait *w = &c->m->w[c->at - 1];
    char k[16];
    key_name(k, w->key);
    ASSERT_U64_EQ(rec->join, w->join);
    ASSERT_EQ(rec->state, SLOT_WAIT_WAITING);
    ASSERT_EQ(rec->qty, w->qty);
    ASSERT_U64_EQ(rec->joined_at_ms, w->joined);
    ASSERT_U64_EQ(rec->order, w->order); /* the family's one join order */
    ASSERT_STR_EQ(rec->user, users[w->user]);
    ASSERT_STR_EQ(rec->request, k);
    c->at = w->next;
    c->seen++;
    return 0;
}

/* The event's waitlist: the waiting entries in order, and every key's entry (state, join
 * seq, qty, the offered hold). */
void expect_waitlist(model *m, MDB_txn *ro, const mevent *e)
{
    wait_cmp c = {m, e->whead, 0};
    ASSERT_EQ(slot_store_wait_scan(m->st, ro, e->name, strlen(e->name), 0, cmp_waiting, &c), 0);
    ASSERT_U64_EQ(c.seen, e->waiting);
    for (uint32_t i = e->wfirst; i; i = m->w[i - 1].next) {
        const mwait *w = &m->w[i - 1];
        char k[16];
        key_name(k, w->key);
        slot_wait_rec rec;
        ASSERT_EQ(slot_store_wait_key_get(m->st, ro, e->name, strlen(e->name), users[w->user], strlen(users[w->user]),
                                          k, strlen(k), &rec),
                  0);
        if (rec.state != w->state)
            T_FAIL_("entry join %llu: stored %s, model %s", (unsigned long long)w->join,
                    slot_wait_state_name(rec.state), slot_wait_state_name((slot_wait_state)w->state));
        ASSERT_U64_EQ(rec.join, w->join);
        ASSERT_EQ(rec.qty, w->qty);
        if (w->state == SLOT_WAIT_OFFERED) {
            ASSERT_U64_EQ(rec.hold_seq, m->h[w->hold - 1].seq);
            ASSERT_U64_EQ(rec.hold_tag, m->h[w->hold - 1].tag);
        }
    }
}

/* Holds grouped by event (a counting sort keeps each event's holds in
 * creation order, which is sequence order), then one scan per event. Also
 * the users records of events with max_per_user. O(holds + events). */
void expect_store(model *m, MDB_txn *ro)
{
    uint32_t *start = calloc(m->nev + 1u, sizeof(uint32_t));
    uint32_t *ix = malloc((m->nh + 1u) * sizeof(uint32_t));
    ASSERT(start != NULL && ix != NULL);
    for (uint32_t i = 0; i < m->nh; i++)
        start[m->h[i].ev + 1]++;
    for (uint32_t ev = 0; ev < m->nev; ev++)
        start[ev + 1] += start[ev];
    uint32_t *fill = calloc(m->nev + 1u, sizeof(uint32_t));
    ASSERT(fill != NULL);
    for (uint32_t i = 0; i < m->nh; i++)
        ix[start[m->h[i].ev] + fill[m->h[i].ev]++] = i;
    for (uint32_t ev = 0; ev < m->nev; ev++) {
        const mevent *e = &m->ev[ev];
        hold_cmp c = {m, ix + start[ev], start[ev + 1] - start[ev], 0};
        ASSERT_EQ(slot_store_holds_scan(m->st, ro, e->name, strlen(e->name), cmp_hold, &c), 0);
        ASSERT_EQ(c.at, c.n);
        for (uint32_t u = 0; e->mpu > 0 && u < M_USERS; u++) {
            uint64_t q = 0;
            ASSERT_EQ(slot_store_user_get(m->st, ro, e->name, strlen(e->name), users[u], strlen(users[u]), &q), 0);
            ASSERT_EQ(q, e->user_qty[u]);
        }
        expect_waitlist(m, ro, e);
        expect_event_on(m, ro, ev);
    }
    free(fill);
    free(ix);
    free(start);
}

/* Closes the store and opens it again with a new allocator: everything
 * committed is there, and replays keep working (the allocator's idempotency
 * index is rebuilt from the store: at once, as slotd does at start, or by
 * the first hold). */
void reopen(model *m)
{
    store_close(m);
    store_open(m);
    MDB_txn *ro;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(m->st), NULL, MDB_RDONLY, &ro), 0);
    if (chance(m, 500))
        ASSERT_EQ(slot_alloc_load(&m->a, ro), 0);
    expect_clean(m, ro, NULL);
    expect_store(m, ro);
    mdb_txn_abort(ro);
    m->n.reopens++;
}

/* ---- batches */

/* Ends the batch: commit (or, now and then, abort and roll the model back).
 * A full map aborts the batch too, and grows the map. */
void batch_end(model *m, bool abort_it)
{
    if (!m->txn)
        return;
    if (!m->map_full && !abort_it) {
        int rc = mdb_txn_commit(m->txn);
        m->txn = NULL;
        if (rc == 0) {
            u_forget(m);
            m->n.commits++;
            return;
        }
        ASSERT_EQ(rc, MDB_MAP_FULL); /* a failed commit has freed the transaction */
        m->map_full = true;
    } else {
        mdb_txn_abort(m->txn);
        m->txn = NULL;
    }
    u_rollback(m);
    m->ntouched = 0;
    m->touched_all = false;
    if (m->map_full) {
        ASSERT_EQ(slot_store_grow(m->st), 0);
        m->map_full = false;
        m->n.map_full++;
    } else {
        m->n.aborts++;
    }
}

/* The committed state on a read transaction: the live events' views,
 * get_hold of a recent hold and the waitlist op of a recent entry (the server
 * answers reads this way). */
void expect_committed(model *m)
{
    MDB_txn *ro;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(m->st), NULL, MDB_RDONLY, &ro), 0);
    for (uint32_t i = 0; i < M_LIVE; i++)
        expect_event_on(m, ro, m->live[i]);
    mhold *h = pick_hold(m);
    if (h) {
        char id[SLOT_HOLD_ID_BYTES + 1];
        hold_id(id, h);
        slot_req q = slot_test_req(SLOT_OP_GET_HOLD, m->ev[h->ev].name);
        slot_test_set_name(q.hold, &q.hold_len, sizeof q.hold, id);
        slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[h->user]);
        mres want = m_on_hold(m, SLOT_OP_GET_HOLD, h);
        slot_res r = {0};
        ASSERT(run_on(m, ro, &q, &r));
        expect_res(&r, &want, "get_hold (read txn)");
        slot_res_clear(&r);
    }
    if (m->nw > 0)
        wait_state_on(m, ro);
    expect_clean(m, ro, m->ev[m->live[below(m, M_LIVE)]].name);
    mdb_txn_abort(ro);
}
