/* tests/model_ops.c — the model's random driver (model.h): each op_* makes one
 * request (holds, carts, ops on holds, edits, windows, waitlists), asks the
 * model for its answer and compares the store's; one_op picks one. */
#include "model.h"

#include <stdlib.h>
#include <string.h>

/* ---- requests, filled the way proto fills them */

void hold_id(char out[SLOT_HOLD_ID_BYTES + 1], const mhold *h)
{
    snprintf(out, SLOT_HOLD_ID_BYTES + 1, "%016llx%016llx", (unsigned long long)h->seq, (unsigned long long)h->tag);
}

void key_name(char out[16], uint32_t key)
{
    snprintf(out, 16, "r%u", (unsigned)key);
}

/* ---- the driver: one random op, its model answer, the store's answer */

/* An event for an op: mostly a live one, now and then an older one (closed
 * or still selling, its holds still there). */
uint32_t pick_event(model *m)
{
    if (m->nev > M_LIVE && chance(m, 20))
        return below(m, m->nev);
    return m->live[below(m, M_LIVE)];
}

/* A request key for (event, user): mostly fresh, else one used before (a
 * replay or, with another qty, a conflict; or a retry after sold_out). */
uint32_t pick_key(model *m, mevent *e, uint32_t user)
{
    uint32_t next = e->next_key[user];
    uint32_t dice = below(m, 100);
    if (next == 0 || dice < 65)
        return e->next_key[user]++;
    if (dice < 88)
        return next - 1 - below(m, next < 8 ? next : 8);
    return below(m, next);
}

void op_hold(model *m)
{
    uint32_t ev = pick_event(m), user = below(m, M_USERS);
    mevent *e = &m->ev[ev];
    uint32_t key = pick_key(m, e, user);
    const mhold *old = kt_get(m, ev, user, key);
    uint32_t qty = 1 + below(m, e->mpr < 4 ? e->mpr : 4);
    if (chance(m, 60))
        qty = 1 + below(m, e->mpr + 3); /* now and then above max_per_request */
    if (old && chance(m, 800))
        qty = old->qty;
    char k[16];
    key_name(k, key);
    slot_req q = slot_test_req(SLOT_OP_HOLD, e->name);
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[user]);
    slot_test_set_name(q.request, &q.request_len, sizeof q.request, k);
    q.qty = qty;
    m->req_blk = 0;
    if (chance(m, 200)) { /* v1.2: from a block (now and then one that is not there) */
        uint32_t b = below(m, M_BLOCKS);
        char name[4] = {'b', (char)('0' + b), 0, 0};
        slot_test_set_name(q.alloc, &q.alloc_len, sizeof q.alloc, name);
        q.has |= SLOT_HAS_ALLOCATION;
        m->req_blk = b + 1;
    }
    mres want = m_hold(m, ev, user, key, qty);
    m->req_blk = 0;
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    if (want.err == SLOT_E_OK && !want.sold_out && !want.replay) {
        /* A new hold: the id carries the event's next sequence number and a
         * random tag the model learns here. */
        ASSERT_EQ(strlen(r.hold), SLOT_HOLD_ID_BYTES);
        mhold *h = &m->h[hold_index(m, want.h)];
        ASSERT_EQ(sscanf(r.hold + 16, "%16" SCNx64, &h->tag), 1);
        m->n.held++;
    }
    expect_res(&r, &want, "hold");
    m->n.sold_out += want.sold_out;
    m->n.replay += want.replay;
    m->n.conflict += want.err == SLOT_E_IDEMPOTENCY_CONFLICT;
    m->n.user_limit += want.err == SLOT_E_USER_LIMIT;
    m->n.not_on_sale += want.err == SLOT_E_NOT_ON_SALE;
    m->n.too_big += want.err == SLOT_E_INVALID_ARGUMENT;
    slot_res_clear(&r);
}

/* A hold to act on: mostly a recent one, where the action is. */
mhold *pick_hold(model *m)
{
    if (m->nh == 0)
        return NULL;
    uint32_t span = m->nh < M_RECENT ? m->nh : M_RECENT;
    if (chance(m, 900))
        return &m->h[m->nh - 1 - below(m, span)];
    return &m->h[below(m, m->nh)];
}

/* The ways to name a hold that is not the caller's or does not exist; each
 * must be unknown_hold (docs/protocol.md: the two are not told apart). */
void wrong_hold(model *m, const mhold *h, slot_op op, char id[SLOT_HOLD_ID_BYTES + 1], uint32_t *user)
{
    static const char hex[] = "0123456789abcdef";
    hold_id(id, h);
    switch (below(m, op == SLOT_OP_CANCEL ? 4 : 5)) {
    case 0: { /* one hex digit of the random tag changed */
        uint32_t i = 16 + below(m, 16);
        id[i] = hex[(strchr(hex, id[i]) - hex + 1 + below(m, 15)) % 16];
        break;
    }
    case 1: /* the sequence number of a hold that does not exist yet */
        snprintf(id, SLOT_HOLD_ID_BYTES + 1, "%016llx%016llx",
                 (unsigned long long)(m->ev[h->ev].next_seq + below(m, 3)), (unsigned long long)h->tag);
        break;
    case 2: /* not an id at all */
        snprintf(id, SLOT_HOLD_ID_BYTES + 1, "%s", below(m, 2) ? "x" : "0000000000000001000000000000000G");
        break;
    case 3: /* upper case hex is another string */
        for (int i = 0; i < SLOT_HOLD_ID_BYTES; i++)
            id[i] = (char)(id[i] >= 'a' ? id[i] - 'a' + 'A' : id[i]);
        if (strpbrk(id, "ABCDEF") == NULL)
            id[0] = 'Z';
        break;
    default: /* another user's hold */
        *user = (h->user + 1 + below(m, M_USERS - 1)) % M_USERS;
        break;
    }
}

/* confirm, release, cancel or get_hold of a random hold, rightly named or not. */
void op_on_hold(model *m, slot_op op)
{
    mhold *h = pick_hold(m);
    if (!h)
        return;
    uint32_t user = h->user;
    char id[SLOT_HOLD_ID_BYTES + 1];
    bool wrong = chance(m, 80);
    if (wrong)
        wrong_hold(m, h, op, id, &user);
    else
        hold_id(id, h);
    slot_req q = slot_test_req(op, m->ev[h->ev].name);
    slot_test_set_name(q.hold, &q.hold_len, sizeof q.hold, id);
    if (op != SLOT_OP_CANCEL || chance(m, 500))
        slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[user]); /* cancel ignores the user */
    uint32_t qty = 0;
    if (op == SLOT_OP_CONFIRM) {
        q.reacquire = chance(m, 300);
        if (chance(m, 300)) /* a partial confirm, now and then above the hold's qty, or a reacquire's qty */
            qty = 1 + below(m, q.reacquire ? m->ev[h->ev].mpr + 1 : (uint32_t)h->qty + 1);
        if (qty) {
            q.qty = qty;
            q.has |= SLOT_HAS_QTY;
        }
    }
    mres want = {.err = SLOT_E_UNKNOWN_HOLD};
    uint32_t nh_before = m->nh;
    if (!wrong)
        want = op == SLOT_OP_CONFIRM ? m_confirm_req(m, h, qty, q.reacquire) : m_on_hold(m, op, h);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    /* A reacquire made a hold (offers the op made are other new holds): learn its random tag. */
    bool made = want.h && hold_index(m, want.h) >= nh_before;
    if (made && r.err == SLOT_E_OK && !r.sold_out) {
        ASSERT_EQ(strlen(r.hold), SLOT_HOLD_ID_BYTES);
        ASSERT_EQ(sscanf(r.hold + 16, "%16" SCNx64, &m->h[hold_index(m, want.h)].tag), 1);
        m->n.reacquired++;
    }
    expect_res(&r, &want, slot_op_name(op));
    m->n.partial += op == SLOT_OP_CONFIRM && want.err == SLOT_E_OK && !want.replay && want.h && want.h->returned > 0 &&
                    !made;
    m->n.reacquire_replay += q.reacquire && want.replay && want.h != h;
    m->n.reacquire_sold_out += q.reacquire && want.sold_out;
    m->n.unknown_hold += wrong;
    m->n.not_active += want.err == SLOT_E_HOLD_NOT_ACTIVE;
    m->n.confirmed += op == SLOT_OP_CONFIRM && want.err == SLOT_E_OK && !want.replay;
    m->n.released += op == SLOT_OP_RELEASE && want.done;
    m->n.cancelled += op == SLOT_OP_CANCEL && want.done;
    slot_res_clear(&r);
}

/* The sweeper: all due holds (the admin op) or a few (a bounded sweep). */
void op_expire(model *m)
{
    uint64_t n = 0;
    if (chance(m, 500)) {
        slot_req q = slot_test_req(SLOT_OP_EXPIRE, NULL);
        slot_res r = {0};
        uint64_t want = m_expire_due(m, SLOT_EXPIRE_OP_MAX);
        if (!run_on(m, NULL, &q, &r))
            return;
        expect_err(&r, SLOT_E_OK, "expire");
        n = r.expired;
        ASSERT_EQ(n, want);
    } else {
        uint64_t limit = chance(m, 100) ? SLOT_EXPIRE_OP_MAX : 1 + below(m, 6);
        uint64_t want = m_expire_due(m, limit);
        int rc = slot_alloc_expire_due(&m->a, txn(m), m->now, limit, &n);
        if (rc == MDB_MAP_FULL) {
            m->map_full = true;
            return;
        }
        ASSERT_EQ(rc, 0);
        ASSERT_EQ(n, want);
    }
    m->n.expired += n;
}

slot_req req_create_of(const model *m, const mevent *e)
{
    slot_req q = slot_test_req(SLOT_OP_CREATE_EVENT, e->name);
    q.capacity = e->cap;
    q.shards = e->shards;
    q.hold_ttl_ms = e->ttl;
    q.max_per_user = e->mpu;
    q.max_per_request = e->mpr;
    q.opens_at_ms = e->opens;
    q.closes_at_ms = e->closes;
    q.max_extensions = e->mx;
    q.max_hold_ms = e->mh == 2ull * e->ttl ? 0 : e->mh; /* 0: the default, as proto leaves it */
    q.waitlist_max = e->wmax;
    q.has |= SLOT_HAS_SHARDS | SLOT_HAS_HOLD_TTL | SLOT_HAS_MAX_PER_USER | SLOT_HAS_MAX_PER_REQUEST;
    if (e->wmax)
        q.has |= SLOT_HAS_WAITLIST_MAX;
    if (e->parent) { /* v1.2 ticket types */
        slot_test_set_name(q.parent, &q.parent_len, sizeof q.parent, m->ev[e->parent - 1].name);
        q.has |= SLOT_HAS_PARENT;
    }
    return q;
}

/* A new event, replacing a live one (whose holds stay in the store). */
void op_new_event(model *m, uint32_t slot)
{
    if (m->nev == m->cap_ev)
        return;
    uint32_t ev = m->nev;
    mevent *e = &m->ev[ev];
    memset(e, 0, sizeof *e);
    /* The second event's name has the first's as a prefix; later ones now and then. */
    const mevent *parent = ev == 1 ? &m->ev[0] : ev > 1 && chance(m, 250) ? &m->ev[below(m, ev)] : NULL;
    if (parent && strchr(parent->name, '.') == NULL) /* a prefix of the new name */
        snprintf(e->name, sizeof e->name, "%.8s.%u", parent->name, (unsigned)ev);
    else
        snprintf(e->name, sizeof e->name, "e%05u", (unsigned)ev);
    e->status = SLOT_EVENT_ON_SALE;
    e->cap = chance(m, 30) ? below(m, 4) : 20 + below(m, M_CAP_MAX - 19);
    e->shards = chance(m, 100) ? 1 : 1 + below(m, 24);
    e->ttl = SLOT_HOLD_TTL_MS_MIN + below(m, 5000);
    e->mpu = chance(m, 400) ? 0 : 4 + below(m, 60);
    e->mpr = 1 + below(m, 8);
    e->mx = chance(m, 200) ? 0 : 1 + below(m, 4);
    e->mh = chance(m, 500) ? 2ull * e->ttl : SLOT_MAX_HOLD_MS_MIN + below(m, 3 * e->ttl);
    if (chance(m, 100)) { /* opening a little ahead, or closing a little ahead */
        e->opens = chance(m, 500) ? m->now + below(m, 3000) : 0;
        e->closes = m->now + e->opens % 7 + 1 + below(m, 20000);
        if (e->opens && e->closes <= e->opens)
            e->closes = e->opens + 1;
    }
    e->next_seq = 1;
    e->next_join = 1;
    e->wmax = chance(m, 400) ? 0 : 1 + below(m, M_WAIT_MAX); /* mostly a waitlist, small enough to fill */
    if (e->wmax > 0 && chance(m, 400))
        e->cap = 1 + below(m, 12); /* a small sale: it sells out, and people wait */
    if (m->small_sale) {           /* the first live event: a small sale with a waitlist, also in short runs */
        m->small_sale = false;
        e->wmax = 8 + below(m, M_WAIT_MAX - 7);
        e->cap = 1 + below(m, 12);
        e->opens = e->closes = 0;
    }
    /* v1.2 ticket types: now and then a child of a live event (3 levels at most) */
    uint32_t pe = m->live[below(m, M_LIVE)], depth[SLOT_FAMILY_DEPTH_MAX];
    if (ev > 0 && chance(m, 400) && m_chain(m, pe, depth) < SLOT_FAMILY_DEPTH_MAX &&
        m->ev[pe].children < SLOT_CHILDREN_MAX) {
        e->parent = pe + 1;
        U_SET(m, m->ev[pe].children, m->ev[pe].children + 1);
        touch(m, pe);
        m->n.children++;
    }
    e->fam_next = 1;
    slot_req q = req_create_of(m, e);
    U_SET(m, m->nev, m->nev + 1);
    U_SET(m, m->live[slot], ev);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, SLOT_E_OK, "create_event");
    ASSERT(!r.replay);
    touch(m, ev);
    m->n.events++;
    slot_res_clear(&r);
}

/* create_event of an existing event: its current settings are a replay, any
 * other is event_exists. */
void op_create_again(model *m)
{
    uint32_t ev = pick_event(m);
    mevent *e = &m->ev[ev];
    slot_req q = req_create_of(m, e);
    bool same = chance(m, 500);
    if (!same) {
        switch (below(m, 9)) {
        case 7:
            q.waitlist_max = e->wmax % M_WAIT_MAX + 1;
            break;
        case 0:
            q.capacity = e->cap + 1;
            break;
        case 1:
            q.shards = e->shards % SLOT_SHARDS_MAX + 1;
            break;
        case 2:
            q.hold_ttl_ms = e->ttl + 1;
            break;
        case 3:
            q.max_per_user = e->mpu + 1;
            break;
        case 4:
            q.closes_at_ms = e->closes + 1;
            break;
        case 5:
            q.max_extensions = e->mx % SLOT_MAX_EXTENSIONS_MAX + 1;
            break;
        case 6:
            q.max_hold_ms = e->mh + 1;
            break;
        default:
            q.max_per_request = e->mpr % SLOT_MAX_PER_REQUEST_MAX + 1;
            break;
        }
    }
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, same ? SLOT_E_OK : SLOT_E_EVENT_EXISTS, "create_event again");
    if (same) {
        ASSERT(r.replay);
        ASSERT_EQ(r.view.capacity, e->cap);
        ASSERT_EQ(r.view.held, e->held);
    }
    m->n.exists += !same;
    slot_res_clear(&r);
}

/* reshard, set_capacity, set_status. The first two expire the event's due
 * holds before anything else, so those neither block a capacity cut nor get
 * spread as held units; that happens even when the cut is refused. */
void op_edit(model *m, slot_op op)
{
    uint32_t ev = pick_event(m);
    mevent *e = &m->ev[ev];
    slot_req q = slot_test_req(op, e->name);
    mres want = {.err = SLOT_E_OK};
    bool offered = false;
    if (op == SLOT_OP_SET_STATUS) {
        /* Mostly on sale: a closed event answers every new hold alike. */
        q.status = e->status == SLOT_EVENT_CLOSED || chance(m, 850) ? SLOT_EVENT_ON_SALE : SLOT_EVENT_CLOSED;
        U_SET(m, e->status, (uint8_t)q.status);
    } else {
        m_expire_event(m, ev);
    }
    uint64_t allocated = e->held + e->confirmed + e->allocated; /* v1.2: the unused block units too */
    if (op == SLOT_OP_RESHARD) {
        q.shards = chance(m, 20) ? SLOT_SHARDS_MAX - below(m, 8) : 1 + below(m, 24);
        U_SET(m, e->shards, q.shards);
        m->n.reshards++;
    } else if (op == SLOT_OP_SET_CAPACITY) {
        uint64_t c = allocated + below(m, 100);
        q.capacity = c > M_CAP_MAX ? M_CAP_MAX : c;
        if (allocated > 0 && chance(m, 100))
            q.capacity = allocated - 1 - below(m, allocated < 5 ? (uint32_t)allocated : 5);
        if (q.capacity < allocated) {
            want.err = SLOT_E_CAPACITY_BELOW_ALLOCATED;
        } else {
            U_SET(m, e->cap, q.capacity);
            uint32_t nh0 = m->nh;
            m_serve(m, ev); /* a capacity increase hands out to those waiting, after the spread */
            offered = m->nh > nh0;
        }
        m->n.capacity++;
        m->n.below += want.err != SLOT_E_OK;
    }
    touch(m, ev);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, want.err, slot_op_name(op));
    if (want.err == SLOT_E_OK) {
        ASSERT_EQ(r.view.shards, e->shards);
        ASSERT_EQ(r.view.capacity, e->cap);
        ASSERT_EQ(r.view.status, e->status);
        if (op != SLOT_OP_SET_STATUS && !offered) /* offers take units after the spread */
            expect_even(m, ev);
    }
    slot_res_clear(&r);
}

/* extend of a random hold, rightly named or not. */
void op_extend(model *m)
{
    mhold *h = pick_hold(m);
    if (!h)
        return;
    uint32_t user = h->user;
    char id[SLOT_HOLD_ID_BYTES + 1];
    bool wrong = chance(m, 60);
    if (wrong)
        wrong_hold(m, h, SLOT_OP_EXTEND, id, &user);
    else
        hold_id(id, h);
    slot_req q = slot_test_req(SLOT_OP_EXTEND, m->ev[h->ev].name);
    slot_test_set_name(q.hold, &q.hold_len, sizeof q.hold, id);
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[user]);
    q.by_ms = SLOT_EXTEND_BY_MS_MIN + below(m, 3000);
    mres want = {.err = SLOT_E_UNKNOWN_HOLD};
    if (!wrong)
        want = m_extend(m, h, q.by_ms);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, want.err, "extend");
    if (want.err == SLOT_E_OK) {
        ASSERT_EQ(r.hold_status, SLOT_HOLD_HELD);
        ASSERT_U64_EQ(r.expires_at_ms, h->exp);
        ASSERT_EQ(r.extensions, h->ext);
    } else if (want.err == SLOT_E_HOLD_NOT_ACTIVE) {
        ASSERT_EQ(r.hold_status, want.st);
    }
    m->n.extended += want.err == SLOT_E_OK;
    m->n.extend_limit += want.err == SLOT_E_EXTEND_LIMIT;
    m->n.unknown_hold += wrong;
    slot_res_clear(&r);
}

/* set_sale_window: mostly none, now and then a window around now. */
void op_window(model *m)
{
    uint32_t ev = pick_event(m);
    mevent *e = &m->ev[ev];
    slot_req q = slot_test_req(SLOT_OP_SET_SALE_WINDOW, e->name);
    if (chance(m, 400)) {
        q.opens_at_ms = chance(m, 500) ? m->now - 100 + below(m, 200) : 0;
        q.closes_at_ms = chance(m, 700) ? m->now + below(m, 3000) : 0;
        if (q.opens_at_ms && q.closes_at_ms && q.closes_at_ms <= q.opens_at_ms)
            q.closes_at_ms = q.opens_at_ms + 1;
    }
    U_SET(m, e->opens, q.opens_at_ms);
    U_SET(m, e->closes, q.closes_at_ms);
    touch(m, ev);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, SLOT_E_OK, "set_sale_window");
    ASSERT_U64_EQ(r.view.opens_at_ms, e->opens);
    ASSERT_U64_EQ(r.view.closes_at_ms, e->closes);
    m->n.windows++;
    slot_res_clear(&r);
}

/* Any op on an event that does not exist: unknown_event, before anything else. */
void op_unknown_event(model *m)
{
    static const slot_op ops[] = {
        SLOT_OP_HOLD,          SLOT_OP_CONFIRM,        SLOT_OP_RELEASE, SLOT_OP_GET_HOLD, SLOT_OP_EVENT,
        SLOT_OP_RESHARD,       SLOT_OP_SET_CAPACITY,   SLOT_OP_SHARDS,  SLOT_OP_EXTEND,   SLOT_OP_SET_SALE_WINDOW,
        SLOT_OP_WAITLIST_JOIN, SLOT_OP_WAITLIST_LEAVE, SLOT_OP_WAITLIST};
    slot_req q = slot_test_req(ops[below(m, sizeof ops / sizeof ops[0])], "e99999x");
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[0]);
    slot_test_set_name(q.request, &q.request_len, sizeof q.request, "r0");
    slot_test_set_name(q.hold, &q.hold_len, sizeof q.hold, "00000000000000010000000000000001");
    q.qty = 1;
    q.shards = 1;
    q.by_ms = SLOT_EXTEND_BY_MS_MIN;
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, SLOT_E_UNKNOWN_EVENT, slot_op_name(q.op));
    m->n.unknown_event++;
    slot_res_clear(&r);
}

/* A cart of 1..M_CART_ITEMS distinct events: mostly a fresh key, now and then
 * the user's last cart again in reverse order (a replay), a recent cart key
 * with other items, or a plain hold's key (conflicts). */
void op_cart(model *m)
{
    uint32_t user = below(m, M_USERS);
    mcart c = {.n = 1 + (int)below(m, M_CART_ITEMS)};
    uint32_t dice = below(m, 100);
    mcart *last = &m->last_cart[user];
    if (dice < 25 && last->n > 0) {
        c.n = last->n;
        c.key = last->key;
        for (int i = 0; i < c.n; i++) {
            c.ev[i] = last->ev[c.n - 1 - i];
            c.qty[i] = last->qty[c.n - 1 - i];
            c.blk[i] = last->blk[c.n - 1 - i];
        }
    } else {
        int got = 0;
        for (int tries = 0; got < c.n && tries < 16; tries++) {
            uint32_t ev = pick_event(m);
            bool dup = false;
            for (int j = 0; j < got; j++)
                dup |= c.ev[j] == ev;
            if (dup)
                continue;
            c.ev[got] = ev;
            c.qty[got] = 1 + below(m, chance(m, 40) ? m->ev[ev].mpr + 3 : 3);
            c.blk[got] = chance(m, 150) ? 1 + below(m, M_BLOCKS) : 0; /* v1.2: an item from a block */
            got++;
        }
        c.n = got;
        if (dice < 80 || m->cart_key[user] == 0)
            c.key = M_CART_KEY0 + m->cart_key[user]++;
        else if (dice < 92)
            c.key = M_CART_KEY0 + m->cart_key[user] - 1 - below(m, m->cart_key[user] < 4 ? m->cart_key[user] : 4);
        else
            c.key = pick_key(m, &m->ev[c.ev[0]], user);
    }
    char k[16];
    key_name(k, c.key);
    slot_req q = slot_test_req(SLOT_OP_HOLD_MANY, NULL);
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[user]);
    slot_test_set_name(q.request, &q.request_len, sizeof q.request, k);
    for (int i = 0; i < c.n; i++) {
        slot_test_set_name(q.items[i].event, &q.items[i].event_len, sizeof q.items[i].event, m->ev[c.ev[i]].name);
        q.items[i].qty = (uint16_t)c.qty[i];
        if (c.blk[i]) {
            char name[4] = {'b', (char)('0' + c.blk[i] - 1), 0, 0};
            slot_test_set_name(q.items[i].alloc, &q.items[i].alloc_len, sizeof q.items[i].alloc, name);
        }
    }
    q.nitems = (uint8_t)c.n;
    int item;
    mhold *hs[M_CART_ITEMS];
    mres want = m_cart(m, user, c.key, c.n, c.ev, c.qty, c.blk, &item, hs);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, want.err, "hold_many");
    ASSERT_STR_EQ(r.item_event, item >= 0 ? m->ev[c.ev[item]].name : "");
    ASSERT_EQ(r.sold_out, want.sold_out);
    if (want.sold_out) {
        ASSERT_EQ(r.available, want.available);
        ASSERT_STR_EQ(r.short_event, want.short_ev ? want.short_ev : ""); /* v1.2 */
    }
    if (want.err == SLOT_E_OK && !want.sold_out) {
        ASSERT_EQ(r.replay, want.replay);
        ASSERT_EQ(r.ncart, (uint32_t)c.n);
        for (int i = 0; i < c.n; i++) {
            mhold *h = &m->h[hold_index(m, hs[i])];
            if (!want.replay)
                ASSERT_EQ(sscanf(r.cart[i].hold + 16, "%16" SCNx64, &h->tag), 1);
            char id[SLOT_HOLD_ID_BYTES + 1];
            hold_id(id, h);
            ASSERT_STR_EQ(r.cart[i].hold, id);
            ASSERT_STR_EQ(r.cart[i].event, m->ev[c.ev[i]].name);
            ASSERT_EQ(r.cart[i].status, (slot_hold_status)h->st);
            ASSERT_EQ(r.cart[i].qty, h->qty);
        }
        if (!want.replay) { /* undone with the batch: an aborted batch may also undo its items' events */
            u_save(m, last, sizeof *last);
            *last = c;
        }
    }
    m->n.carts += want.err == SLOT_E_OK && !want.sold_out && !want.replay;
    m->n.cart_replay += want.replay;
    m->n.cart_sold_out += want.sold_out;
    m->n.cart_refused += want.err != SLOT_E_OK;
    slot_res_clear(&r);
}

/* ---- waitlists */

/* The answer to waitlist_join or waitlist against the model's. */
void expect_wait_res(const slot_res *r, const mres *want, const char *what)
{
    expect_err(r, want->err, what);
    if (want->err != SLOT_E_OK)
        return;
    ASSERT_EQ(r->sold_out, want->sold_out);
    ASSERT_EQ(r->waitlist_full, want->full);
    if (want->sold_out)
        ASSERT_EQ(r->available, want->available);
    ASSERT_EQ(r->replay, want->replay);
    if (r->wait_state != want->ws)
        T_FAIL_("%s: entry %s, model says %s", what, slot_wait_state_name(r->wait_state),
                slot_wait_state_name(want->ws));
    if (want->ws == SLOT_WAIT_WAITING) {
        ASSERT_U64_EQ(r->position, want->pos);
        ASSERT_EQ(r->qty, want->wqty);
    }
    if (want->h)
        expect_hold_fields(r, want, what);
}

/* A key for the waitlist ops that name an entry: mostly a recent entry's, else any key of
 * an event (mostly none). */
void pick_entry(model *m, uint32_t *ev, uint32_t *user, uint32_t *key)
{
    const mevent *l = &m->ev[m->live[below(m, M_LIVE)]];
    if (l->waiting > 0 && chance(m, 500)) { /* someone waiting: the k-th of them */
        uint64_t k = below(m, (uint32_t)l->waiting);
        for (uint32_t i = l->whead; i; i = m->w[i - 1].next) {
            const mwait *w = &m->w[i - 1];
            if (w->state == SLOT_WAIT_WAITING && k-- == 0) {
                *ev = w->ev;
                *user = w->user;
                *key = w->key;
                return;
            }
        }
    }
    if (m->nw > 0 && chance(m, 850)) {
        uint32_t span = m->nw < M_RECENT ? m->nw : M_RECENT;
        const mwait *w = &m->w[m->nw - 1 - below(m, span)];
        *ev = w->ev;
        *user = w->user;
        *key = w->key;
        return;
    }
    *ev = pick_event(m);
    *user = below(m, M_USERS);
    *key = pick_key(m, &m->ev[*ev], *user);
}

slot_req req_wait(model *m, slot_op op, uint32_t ev, uint32_t user, uint32_t key)
{
    char k[16];
    key_name(k, key);
    slot_req q = slot_test_req(op, m->ev[ev].name);
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, users[user]);
    slot_test_set_name(q.request, &q.request_len, sizeof q.request, k);
    return q;
}

/* waitlist_join with a fresh key (mostly), a key used before (a replay, a conflict with a
 * hold's or a cart's key, another qty), now and then above max_per_request. */
void op_join(model *m)
{
    uint32_t ev = pick_event(m), user = below(m, M_USERS);
    if (chance(m,
               700)) { /* mostly the live event with a waitlist nearest to sold out: it sells out, then people wait */
        uint64_t least = UINT64_MAX;
        for (uint32_t i = 0; i < M_LIVE; i++) {
            const mevent *l = &m->ev[m->live[i]];
            if (l->wmax > 0 && l->status == SLOT_EVENT_ON_SALE && l->cap - l->held - l->confirmed < least) {
                least = l->cap - l->held - l->confirmed;
                ev = m->live[i];
            }
        }
    }
    mevent *e = &m->ev[ev];
    uint32_t key = pick_key(m, e, user);
    if (chance(m, 200) && m->nw > 0) { /* a recent entry's key again */
        const mwait *w = &m->w[m->nw - 1 - below(m, m->nw < M_RECENT ? m->nw : M_RECENT)];
        ev = w->ev;
        user = w->user;
        key = w->key;
        e = &m->ev[ev];
    }
    const mhold *oh = kt_get(m, ev, user, key);
    const mwait *ow = wt_get(m, ev, user, key);
    uint32_t qty = 1 + below(m, e->mpr < 4 ? e->mpr : 4);
    if (chance(m, 50))
        qty = 1 + below(m, e->mpr + 3);
    if ((oh || ow) && chance(m, 850))
        qty = oh ? (uint32_t)oh->qty + oh->returned : ow->qty;
    slot_req q = req_wait(m, SLOT_OP_WAITLIST_JOIN, ev, user, key);
    q.qty = qty;
    m->req_blk = 0;
    if (chance(m, 250)) { /* v1.2: waiting on a block (now and then one that is not there) */
        uint32_t b = below(m, M_BLOCKS);
        char name[4] = {'b', (char)('0' + b), 0, 0};
        slot_test_set_name(q.alloc, &q.alloc_len, sizeof q.alloc, name);
        q.has |= SLOT_HAS_ALLOCATION;
        m->req_blk = b + 1;
        m->n.block_joins++;
    }
    mres want = m_join(m, ev, user, key, qty);
    m->req_blk = 0;
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    if (want.err == SLOT_E_OK && want.h && !want.replay) { /* held at once: learn the new hold's tag */
        ASSERT_EQ(strlen(r.hold), SLOT_HOLD_ID_BYTES);
        ASSERT_EQ(sscanf(r.hold + 16, "%16" SCNx64, &m->h[hold_index(m, want.h)].tag), 1);
    }
    expect_wait_res(&r, &want, "waitlist_join");
    m->n.joins++;
    m->n.join_waiting += want.ws == SLOT_WAIT_WAITING && !want.replay;
    m->n.join_held += want.h && !want.replay;
    m->n.join_full += want.full;
    m->n.join_replay += want.replay;
    m->n.join_refused += want.err != SLOT_E_OK;
    slot_res_clear(&r);
}

void op_leave(model *m)
{
    uint32_t ev, user, key;
    pick_entry(m, &ev, &user, &key);
    slot_req q = req_wait(m, SLOT_OP_WAITLIST_LEAVE, ev, user, key);
    bool want = m_leave(m, ev, user, key);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, SLOT_E_OK, "waitlist_leave");
    ASSERT_EQ(r.done, want);
    m->n.leaves += want;
    m->n.leave_none += !want;
    slot_res_clear(&r);
}

/* The waitlist op on the batch or on a read transaction (on). */
void wait_state_on(model *m, MDB_txn *on)
{
    uint32_t ev, user, key;
    pick_entry(m, &ev, &user, &key);
    slot_req q = req_wait(m, SLOT_OP_WAITLIST, ev, user, key);
    mres want = m_wstate(m, ev, user, key);
    slot_res r = {0};
    if (!run_on(m, on, &q, &r))
        return;
    expect_wait_res(&r, &want, "waitlist");
    m->n.wstates++;
    slot_res_clear(&r);
}

/* Offers are made inside other ops (a release, an expiry, ...), whose answers do not name
 * them: their random tags are read from the store, on the batch. */
void learn_offer_tags(model *m, uint32_t from)
{
    for (uint32_t i = from; i < m->nh && !m->map_full; i++) {
        mhold *h = &m->h[i];
        if (!h->tag_unknown)
            continue;
        const mevent *e = &m->ev[h->ev];
        slot_hold_rec rec;
        ASSERT_EQ(slot_store_hold_get(m->st, txn(m), e->name, strlen(e->name), h->seq, &rec), 0);
        ASSERT_EQ(rec.kind, SLOT_HOLD_KIND_WAITLIST);
        ASSERT_EQ(rec.origin, m->w[h->went - 1].join);
        h->tag = rec.tag;
        h->tag_unknown = false;
    }
}

/* One op, picked by weight (per mille). */
/* allocate or deallocate (docs/protocol.md, "Allocations") on a random event's block. */
static void op_alloc(model *m)
{
    uint32_t ev = pick_event(m), b = below(m, M_BLOCKS);
    mevent *e = &m->ev[ev];
    char name[4] = {'b', (char)('0' + b), 0, 0};
    bool alloc = chance(m, 600);
    slot_req q = slot_test_req(alloc ? SLOT_OP_ALLOCATE : SLOT_OP_DEALLOCATE, e->name);
    slot_test_set_name(q.alloc, &q.alloc_len, sizeof q.alloc, name);
    q.has |= SLOT_HAS_ALLOCATION;
    mres want;
    if (alloc) {
        q.alloc_qty = 1 + below(m, chance(m, 100) ? M_CAP_MAX : 8);
        q.has |= SLOT_HAS_ALLOC_QTY;
        bool has_mpu = chance(m, 300);
        if (has_mpu) {
            q.max_per_user = below(m, 5);
            q.has |= SLOT_HAS_MAX_PER_USER;
        }
        want = m_allocate(m, ev, b, q.alloc_qty, has_mpu, q.max_per_user);
    } else {
        q.alloc_qty = chance(m, 500) ? 0 : 1 + below(m, 4);
        if (q.alloc_qty)
            q.has |= SLOT_HAS_ALLOC_QTY;
        want = m_deallocate(m, ev, b, q.alloc_qty);
    }
    touch(m, ev);
    slot_res r = {0};
    if (!run_on(m, NULL, &q, &r))
        return;
    expect_err(&r, want.err, slot_op_name(q.op));
    ASSERT_EQ(r.sold_out, want.sold_out);
    if (want.sold_out)
        ASSERT_EQ(r.available, want.available);
    else if (want.err == SLOT_E_OK) {
        ASSERT_U64_EQ(r.block_qty, e->blk[b].exists ? e->blk[b].qty : 0);
        ASSERT_U64_EQ(r.block_remaining, e->blk[b].remaining);
    }
    slot_res_clear(&r);
}

void one_op(model *m)
{
    uint32_t dice = below(m, 1000);
    if (dice < 410)
        op_hold(m);
    else if (dice < 550)
        op_on_hold(m, SLOT_OP_CONFIRM);
    else if (dice < 660)
        op_on_hold(m, SLOT_OP_RELEASE);
    else if (dice < 700)
        op_on_hold(m, SLOT_OP_CANCEL);
    else if (dice < 770)
        op_on_hold(m, SLOT_OP_GET_HOLD);
    else if (dice < 800)
        op_expire(m);
    else if (dice < 810)
        op_edit(m, SLOT_OP_RESHARD);
    else if (dice < 825)
        op_edit(m, SLOT_OP_SET_CAPACITY);
    else if (dice < 835)
        op_edit(m, SLOT_OP_SET_STATUS);
    else if (dice < 840)
        op_create_again(m);
    else if (dice < 845)
        op_unknown_event(m);
    else if (dice < 870)
        op_extend(m);
    else if (dice < 875)
        op_window(m);
    else if (dice < 920)
        op_cart(m);
    else if (dice < 975)
        op_join(m);
    else if (dice < 985)
        op_leave(m);
    else if (dice < 995)
        wait_state_on(m, NULL);
    else
        op_alloc(m);
}
