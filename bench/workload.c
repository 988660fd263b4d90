/*
 * workload.c — what each phase sends and what each answer means.
 *
 *   hold workloads (hot-release, open-loop, sold-out, multi-event, warm-up,
 *   prefill): every request is a hold of a new request key, for a new user
 *   or one of the --users pool; held answers go into the ledger.
 *   churn: sessions hold, think, then confirm / release / abandon; some extend
 *   first, some confirm fewer units than held, some pay late with reacquire.
 *   waitlist: its phases are in workload_wait.c (the prefill is the one here);
 *   verification's get_hold of every hold is in workload_check.c.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "exit.h"
#include "ledger.h"
#include "limits.h"
#include "seated.h"
#include "util.h"
#include "wire.h"
#include "workload.h"
#include "slot/assert.h"

static uint32_t measured_events(const bench_run *run)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < run->nevents; i++)
        n += run->events[i].measured;
    return n;
}

/* An error answer: counted by code; one nobody expected ends the phase. */
void bench_count_error(bench_run *run, const bench_result *r)
{
    unsigned code = (unsigned)r->err <= SLOT_E__COUNT ? (unsigned)r->err : SLOT_E__COUNT;
    if (r->err == SLOT_E_NOT_ON_SALE && run->opens_at_ms > 0) {
        run->n.not_on_sale++; /* sent a moment before the opening: counted apart, the buyer tries again */
        return;
    }
    run->n.errors[code]++;
    bool expected = r->err == SLOT_E_OVERLOADED || (r->err == SLOT_E_USER_LIMIT && run->cfg->max_per_user > 0);
    if (expected)
        return;
    if (run->first_error[0] == 0)
        snprintf(run->first_error, sizeof(run->first_error), "%s: %s",
                 code < SLOT_E__COUNT ? slot_err_name((slot_err)code) : "(unknown code)", r->text);
    bench_stop(run, "an error answer nobody expected (see errors)");
}

/* Zipf: event i (0-based) has weight 1/(i+1)^s; zipf_cum holds the running sums, normalized. */
static uint16_t pick_event(const bench_run *run, bench_conn *c)
{
    const bench_phase *ph = run->phase;
    double u = (double)(bench_rand(&c->rng) >> 11) * 0x1.0p-53;
    uint32_t lo = 0, hi = ph->event_count - 1u;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (run->zipf_cum[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (run->nsets > 1) { /* --placement: the nearest event of this connection's set */
        uint32_t set = c->index % run->nsets;
        lo = lo - lo % run->nsets + set;
        if (lo >= ph->event_count)
            lo -= run->nsets; /* there is one: the driver checked events >= sets */
    }
    return (uint16_t)(ph->event_first + lo);
}

static void new_hold(bench_run *run, bench_conn *c, bench_ticket *t)
{
    const bench_phase *ph = run->phase;
    const bench_config *cfg = run->cfg;
    memset(t, 0, sizeof(*t));
    t->op = BENCH_OP_HOLD;
    t->session = UINT32_MAX;
    t->event = ph->zipf ? pick_event(run, c)
               : cfg->types && ph->measure && ph->event_count > 1
                   ? (uint16_t)(ph->event_first + bench_rand(&c->rng) % ph->event_count)
               : cfg->allocation && ph->measure && c->index < cfg->presale_conns
                   ? (uint16_t)(ph->event_first + 1) /* --allocation: this buyer is in the presale */
                   : ph->event_first;
    t->qty = ph->unit_holds ? 1 : (uint16_t)bench_qty_pick(&cfg->qty, bench_rand(&c->rng));
    t->user = cfg->users > 0 && !ph->unique_users ? bench_rand(&c->rng) % cfg->users : run->next_user++;
    t->key = run->next_key++;
    t->cart = ph->cart > 1 ? ph->cart : 0;
    if (run->seated)
        bench_seated_ticket(run, c, t); /* --seated: adjacent, or the seats it names */
}

static bool hold_next(bench_run *run, bench_conn *c, bench_ticket *t)
{
    new_hold(run, c, t);
    return true;
}

/* After a held answer: has the event (and with it every measured event) sold out?
 * Not asked in churn, where units come back and "sold out" is only a moment. */
static void event_sold(bench_run *run, bench_event *e, uint64_t now_ns)
{
    if (e->sellout_ns || !e->measured)
        return;
    e->sellout_ns = now_ns;
    if (++run->events_sold == measured_events(run))
        run->n.sellout_ns = now_ns;
}

static void sellout_check_one(bench_run *run, bench_event *e, uint64_t now_ns)
{
    uint64_t used = e->out_units + e->confirmed_units;
    uint32_t qty_min = run->phase->unit_holds ? 1 : run->cfg->qty.min;
    if (run->cfg->scenario == BENCH_CHURN || (used < e->capacity && e->capacity - used >= qty_min))
        return;
    event_sold(run, e, now_ns);
}

/* --allocation: both parts (the public units, the block) are asked, so that one which could
 * never sell a hold (fewer units than the smallest qty from the start, or no buyer of its own)
 * counts as sold out at the first answer. */
static void sellout_check(bench_run *run, bench_event *e, uint64_t now_ns)
{
    if (!run->cfg->allocation || !run->phase->measure) {
        sellout_check_one(run, e, now_ns);
        return;
    }
    for (uint32_t i = 0; i < 2; i++)
        sellout_check_one(run, &run->events[i], now_ns);
}

static void sold_out_answer(bench_run *run, const bench_ticket *t, const bench_result *r, uint64_t now_ns)
{
    bench_counters *n = &run->n;
    bench_event *e = &run->events[t->event];
    if (n->sold_out++ == 0)
        n->first_sold_out_ns = now_ns;
    n->last_sold_out_ns = now_ns;
    e->sold_out++;
    if (run->seated) /* --seated: a sold_out names max_adjacent, below qty (free seats may be apart) */
        bench_seated_sold_out(run, t, r);
    else if (r->available >= t->qty)
        n->bad_sold_out++; /* invariant 5, as the client sees it */
    if (run->seated && r->has_max_adjacent && r->max_adjacent < run->cfg->qty.min)
        event_sold(run, e, now_ns); /* no buyer's run is free: the seats are sold out */
    if (run->cfg->allocation) {
        /* A block's sold_out names its "remaining", below qty; a public one names none. */
        bool block = e->allocation[0] != 0;
        if (block != r->has_remaining || (block && r->remaining >= t->qty))
            n->bad_block_sold_out++;
        if (run->phase->measure)
            sellout_check(run, e, now_ns);
    }
    /* --threads: a loop's tallies hold only its own answers, so the target's word that fewer units
     * than the smallest qty are left is what says the event sold out (no units come back here). */
    if ((run->cfg->threads > 1 || run->cfg->types) && t->cart <= 1 && r->available < run->cfg->qty.min)
        event_sold(run, &run->events[t->event], now_ns);
    if (run->events_sold == measured_events(run) && ++n->tail_seen >= run->phase->tail)
        bench_stop(run, "sold out, and the tail of sold_out answers came back");
}

/* A held answer: tallies, the ledger. Returns the ledger index, -1 when not kept. */
static long held_answer(bench_run *run, const bench_ticket *t, const bench_result *r, uint64_t now_ns)
{
    bench_event *e = &run->events[t->event];
    run->n.holds++;
    run->n.held_units += t->qty;
    e->holds++;
    e->held_units += t->qty;
    e->out_units += t->qty;
    long idx = -1;
    if (run->phase->ledger && (idx = bench_ledger_add(&run->ledger, t, r)) < 0)
        bench_fail(run, BENCH_EXIT_FAILED, "the ledger is full (%u holds) or out of memory: use a smaller run",
                   BENCH_LEDGER_MAX);
    if (run->seated)
        bench_seated_held(run, idx, t, r);
    sellout_check(run, e, now_ns);
    if (run->events_sold == measured_events(run) && run->phase->tail == 0)
        bench_stop(run, "sold out");
    return idx;
}

/* A held cart: every item held, in request order, on the ticket's events with its qty;
 * each item's hold into the ledger (consecutive entries), tallied as a hold of its event. */
static void cart_answer(bench_run *run, const bench_ticket *t, const bench_result *r, uint64_t now_ns)
{
    bool whole = r->ncart == t->cart;
    for (uint32_t i = 0; whole && i < r->ncart; i++)
        whole = r->cart[i].held && r->cart[i].qty == t->qty;
    if (!whole) {
        run->n.unexpected++;
        return;
    }
    run->n.carts++;
    for (uint32_t i = 0; i < r->ncart; i++) {
        const bench_cart_item *it = &r->cart[i];
        bench_ticket item = *t;
        item.event = (uint16_t)(t->event + i);
        item.cart = 0;
        bench_event *e = &run->events[item.event];
        run->n.holds++;
        run->n.held_units += t->qty;
        e->holds++;
        e->held_units += t->qty;
        e->out_units += t->qty;
        if (run->phase->ledger && bench_ledger_add_hold(&run->ledger, it->hold, it->hold_len, t->user, item.event,
                                                        t->qty, SLOT_HOLD_HELD, it->expires_at_ms) < 0)
            bench_fail(run, BENCH_EXIT_FAILED, "the ledger is full (%u holds) or out of memory: use a smaller run",
                       BENCH_LEDGER_MAX);
        sellout_check(run, e, now_ns);
    }
    if (run->events_sold == measured_events(run) && run->phase->tail == 0)
        bench_stop(run, "sold out");
}

/* Classify a hold answer. Returns 1 held, 0 sold_out, -1 anything else (counted). */
static int hold_answer(bench_run *run, const bench_ticket *t, const bench_result *r, uint64_t now_ns, long *idx)
{
    if (!r->ok) {
        bench_count_error(run, r);
        return -1;
    }
    if (r->replay && t->tries == 0) {
        run->n.replays++; /* every key is new: no replay should come, but for a request sent again */
        return -1;
    }
    if (r->sold_out) {
        sold_out_answer(run, t, r, now_ns);
        return 0;
    }
    if (r->taken && run->seated) { /* --named: a seat asked for is not free; nothing changed */
        bench_seated_taken(run, t, r);
        if (run->events_sold == measured_events(run) && ++run->n.tail_seen >= run->phase->tail)
            bench_stop(run, "sold out, and the tail of refusals came back");
        return 0;
    }
    if (t->cart > 1) {
        cart_answer(run, t, r, now_ns);
        *idx = -1;
        return 1;
    }
    if (!r->has_status || r->status != SLOT_HOLD_HELD || r->qty != t->qty || r->hold_len == 0) {
        run->n.unexpected++;
        return -1;
    }
    *idx = held_answer(run, t, r, now_ns);
    return 1;
}

static void hold_on_result(bench_run *run, bench_conn *c, const bench_ticket *t, const bench_result *r, uint64_t now_ns)
{
    (void)c;
    long idx;
    hold_answer(run, t, r, now_ns, &idx);
}

/* ---------------------------------------------------------------- ping */

static bool ping_next(bench_run *run, bench_conn *c, bench_ticket *t)
{
    (void)run;
    (void)c;
    memset(t, 0, sizeof(*t));
    t->op = BENCH_OP_PING;
    t->session = UINT32_MAX;
    return true;
}

/* A ping's answer: ok (PONG, or hello's ok), or an error counted like any other. */
static void ping_on_result(bench_run *run, bench_conn *c, const bench_ticket *t, const bench_result *r, uint64_t now_ns)
{
    (void)c;
    (void)t;
    (void)now_ns;
    if (!r->ok)
        bench_count_error(run, r);
}

/* ---------------------------------------------------------------- churn */

int bench_sessions_init(bench_run *run)
{
    const bench_config *cfg = run->cfg;
    run->nsessions = cfg->connections * cfg->pipeline;
    run->sessions = calloc(run->nsessions, sizeof(bench_session));
    run->heap = calloc(run->nsessions, sizeof(bench_heap_item));
    if (!run->sessions || !run->heap)
        return -1;
    for (uint32_t i = 0; i < cfg->connections; i++) {
        bench_conn *c = &run->conns[i];
        if (!(c->ready = calloc(cfg->pipeline, sizeof(uint32_t))))
            return -1;
        for (uint32_t k = 0; k < cfg->pipeline; k++) {
            uint32_t s = i * cfg->pipeline + k;
            run->sessions[s] = (bench_session){.conn = i, .state = BENCH_SESSION_READY, .next_op = BENCH_OP_HOLD};
            c->ready[c->nready++] = s;
        }
    }
    return 0;
}

static uint32_t think_ms(const bench_config *cfg, bench_conn *c)
{
    uint32_t span = cfg->think_max_ms - cfg->think_min_ms;
    return cfg->think_min_ms + (span ? (uint32_t)(bench_rand(&c->rng) % (span + 1u)) : 0);
}

static bool churn_next(bench_run *run, bench_conn *c, bench_ticket *t)
{
    if (c->nready == 0)
        return false;
    uint32_t s = c->ready[--c->nready];
    bench_session *ss = &run->sessions[s];
    SLOT_ASSERT(ss->state == BENCH_SESSION_READY);
    ss->state = BENCH_SESSION_WAITING;
    if (ss->next_op == BENCH_OP_HOLD) {
        new_hold(run, c, t);
    } else {
        const bench_hold *h = &run->ledger.holds[ss->hold];
        memset(t, 0, sizeof(*t));
        t->op = ss->next_op;
        t->key = ss->hold;
        t->user = h->user;
        t->event = h->event;
        t->qty = h->qty;
        if (t->op == BENCH_OP_CONFIRM) {
            t->flags = ss->plan;
            if ((t->flags & BENCH_TICKET_PARTIAL) && h->qty >= 2)
                t->qty = (uint16_t)(1u + bench_rand(&c->rng) % (h->qty - 1u)); /* 1..qty-1 */
            else
                t->flags &= (uint8_t)~BENCH_TICKET_PARTIAL; /* one unit: confirmed whole */
        }
    }
    t->session = s;
    return true;
}

/* A roll in 0..99, or 100 (no share can match) when every share it decides is 0: runs
 * without the v1.1 shares draw the same random numbers as before them. */
static uint32_t roll_pct(bench_conn *c, uint32_t shares)
{
    return shares ? (uint32_t)(bench_rand(&c->rng) % 100) : 100;
}

/* What the session does with a hold it got: decided when it is granted. Fates: confirm
 * (on time, whole or partial, or late with reacquire), release, abandon; the buyers who
 * confirm on time or release may first extend (once, or a second time past the limit). */
static void churn_fate(bench_run *run, bench_conn *c, uint32_t s, long idx)
{
    const bench_config *cfg = run->cfg;
    bench_session *ss = &run->sessions[s];
    uint32_t roll = (uint32_t)(bench_rand(&c->rng) % 100);
    ss->hold = (uint32_t)idx;
    ss->plan = 0;
    ss->extends_left = 0;
    if (roll < cfg->confirm_pct) {
        ss->fate = BENCH_OP_CONFIRM;
        uint32_t how = roll_pct(c, cfg->late_pct + cfg->partial_pct);
        if (how < cfg->late_pct)
            ss->plan = BENCH_TICKET_REACQUIRE;
        else if (how < cfg->late_pct + cfg->partial_pct)
            ss->plan = BENCH_TICKET_PARTIAL;
    } else if (roll < cfg->confirm_pct + cfg->release_pct) {
        ss->fate = BENCH_OP_RELEASE;
    } else {
        run->n.abandoned++;
        ss->fate = ss->next_op = BENCH_OP_HOLD;
        if (run->nabandoned == run->abandoned_cap) {
            size_t cap = run->abandoned_cap ? run->abandoned_cap * 2 : 4096;
            uint32_t *a = realloc(run->abandoned, cap * sizeof(uint32_t));
            if (!a) {
                bench_fail(run, BENCH_EXIT_FAILED, "out of memory for abandoned holds");
                return;
            }
            run->abandoned = a;
            run->abandoned_cap = cap;
        }
        run->abandoned[run->nabandoned++] = (uint32_t)idx;
        return;
    }
    if (!(ss->plan & BENCH_TICKET_REACQUIRE) && roll_pct(c, cfg->extend_pct) < cfg->extend_pct)
        ss->extends_left = roll_pct(c, cfg->extend_pct) < cfg->extend_pct ? 2 : 1;
    ss->next_op = ss->extends_left ? BENCH_OP_EXTEND : ss->fate;
}

/* Hold idx left our hands (confirmed, released or expired): its status for the ledger
 * check and its units in the tallies. A confirm names the units it confirmed (the
 * hold's qty, or fewer: the rest went back); count: add it to the churn counters
 * (a late payment's expiry is counted as a late payment instead). */
static void hold_settled(bench_run *run, uint32_t idx, slot_hold_status st, uint32_t confirmed_qty, bool count)
{
    bench_hold *h = &run->ledger.holds[idx];
    bench_event *e = &run->events[h->event];
    h->expect = (uint8_t)st;
    e->out_units -= h->qty <= e->out_units ? h->qty : e->out_units;
    if (st == SLOT_HOLD_CONFIRMED) {
        run->n.confirmed += count;
        e->confirmed_units += confirmed_qty;
        if (confirmed_qty < h->qty) {
            h->returned = (uint16_t)(h->qty - confirmed_qty);
            h->qty = (uint16_t)confirmed_qty;
            run->n.partial++;
            run->n.returned_units += h->returned;
            e->returned_units += h->returned;
        }
    } else if (st == SLOT_HOLD_RELEASED) {
        run->n.released += count;
        e->released_units += h->qty;
    } else {
        run->n.expired += count;
        e->expired_units += h->qty;
    }
}

/* A late payment got a fresh hold, confirmed: the new hold into the ledger, both linked. */
static void reacquired(bench_run *run, const bench_ticket *t, const bench_result *r)
{
    bench_ledger *l = &run->ledger;
    const bench_hold *old = &l->holds[t->key];
    if (!bench_ledger_id_is(l, t->key, r->replaces, strlen(r->replaces)) || r->hold_len == 0 ||
        bench_ledger_id_is(l, t->key, r->hold, r->hold_len) || r->qty != t->qty || r->returned != 0) {
        run->n.unexpected++; /* not the reacquire asked for: the ledger check shows what the target did */
        return;
    }
    uint16_t event = old->event;
    long ni = bench_ledger_add_hold(l, r->hold, r->hold_len, old->user, event, (uint16_t)r->qty, SLOT_HOLD_CONFIRMED,
                                    0);
    if (ni < 0) {
        bench_fail(run, BENCH_EXIT_FAILED, "the ledger is full (%u holds) or out of memory: use a smaller run",
                   BENCH_LEDGER_MAX);
        return;
    }
    bench_hold *o = &l->holds[t->key], *nh = &l->holds[ni]; /* the add may have moved the array */
    o->link = (uint32_t)ni;
    o->flags |= BENCH_HOLD_REPLACED;
    nh->link = (uint32_t)t->key;
    nh->flags |= BENCH_HOLD_REPLACES;
    hold_settled(run, (uint32_t)t->key, SLOT_HOLD_EXPIRED, 0, false);
    run->events[event].confirmed_units += r->qty;
    run->n.late_reacquired++;
    run->n.late_units += r->qty;
}

/* A confirm's answer: whole, partial, or (late, with reacquire) a fresh hold or sold_out. */
void bench_confirm_answer(bench_run *run, const bench_ticket *t, const bench_result *r)
{
    const bench_hold *h = &run->ledger.holds[t->key];
    bool late = t->flags & BENCH_TICKET_REACQUIRE, again = t->tries > 0;
    bool expired = r->has_status && r->status == SLOT_HOLD_EXPIRED;
    run->n.late += late;
    if (late && r->ok && r->sold_out) {
        hold_settled(run, (uint32_t)t->key, SLOT_HOLD_EXPIRED, 0, false);
        run->n.late_sold_out++;
    } else if (r->ok && r->has_status && r->status == SLOT_HOLD_CONFIRMED && (!r->replay || again)) {
        if (late && r->replaces[0]) {
            reacquired(run, t, r);
            return;
        }
        /* The hold itself confirmed: r->qty units, the rest given back. */
        if (r->replaces[0] || !bench_ledger_id_is(&run->ledger, t->key, r->hold, r->hold_len) || r->qty < 1 ||
            r->qty > h->qty || r->returned != h->qty - r->qty) {
            run->n.unexpected++;
            return;
        }
        if (r->qty != t->qty)
            run->n.unexpected++;  /* confirmed, but not the quantity asked: the ledger keeps what the target said */
        run->n.late_held += late; /* paid late, yet the hold had not expired: an ordinary confirm */
        hold_settled(run, (uint32_t)t->key, SLOT_HOLD_CONFIRMED, r->qty, true);
    } else if (!late && !r->ok && r->err == SLOT_E_HOLD_NOT_ACTIVE && expired) {
        hold_settled(run, (uint32_t)t->key, SLOT_HOLD_EXPIRED, 0, true);
    } else if (late && !r->ok && r->err == SLOT_E_USER_LIMIT) {
        hold_settled(run, (uint32_t)t->key, SLOT_HOLD_EXPIRED, 0, false); /* no fresh units for this user */
        run->n.late_user_limit++;
        bench_count_error(run, r);
    } else if (!r->ok) {
        bench_count_error(run, r);
    } else {
        run->n.unexpected++;
    }
}

/* An extend's answer. Returns false when the hold is gone (expired first, or an error):
 * the session then moves on to the next buyer. */
static bool extend_answer(bench_run *run, const bench_ticket *t, const bench_result *r)
{
    bench_hold *h = &run->ledger.holds[t->key];
    if (r->ok && r->has_status && r->status == SLOT_HOLD_HELD && r->expires_at_ms > 0 && r->extensions > 0) {
        h->expires_at_ms = r->expires_at_ms;
        h->extensions = (uint8_t)(r->extensions < UINT8_MAX ? r->extensions : UINT8_MAX);
        run->n.extends++;
        return true;
    }
    if (!r->ok && r->err == SLOT_E_EXTEND_LIMIT) {
        run->n.extend_limit++; /* nothing changed, unless a first send of this request had committed */
        if (t->tries > 0 && !(h->flags & BENCH_HOLD_EXT_UNKNOWN)) {
            h->flags |= BENCH_HOLD_EXT_UNKNOWN;
            h->expires_at_ms += run->cfg->hold_ttl_ms; /* the latest it may be: verification waits for it */
        }
        return true;
    }
    if (!r->ok && r->err == SLOT_E_HOLD_NOT_ACTIVE && r->has_status && r->status == SLOT_HOLD_EXPIRED) {
        hold_settled(run, (uint32_t)t->key, SLOT_HOLD_EXPIRED, 0, true);
        return false;
    }
    if (!r->ok)
        bench_count_error(run, r);
    else
        run->n.unexpected++;
    return false;
}

/* release answers: released, or (think time past the TTL) expired. */
void bench_release_answer(bench_run *run, const bench_ticket *t, const bench_result *r)
{
    bool expired = r->has_status && r->status == SLOT_HOLD_EXPIRED;
    /* A request sent again (following the primary) whose first send had committed
     * finds the hold released already. */
    bool again = t->tries > 0;
    uint32_t idx = (uint32_t)t->key;
    if (r->ok && !r->released && again && r->has_status && r->status == SLOT_HOLD_RELEASED)
        hold_settled(run, idx, SLOT_HOLD_RELEASED, 0, true);
    else if (r->ok && r->released)
        hold_settled(run, idx, SLOT_HOLD_RELEASED, 0, true);
    else if (r->ok && !r->released && expired)
        hold_settled(run, idx, SLOT_HOLD_EXPIRED, 0, true);
    else if (!r->ok)
        bench_count_error(run, r);
    else
        run->n.unexpected++;
}

static void churn_on_result(bench_run *run, bench_conn *c, const bench_ticket *t, const bench_result *r,
                            uint64_t now_ns)
{
    uint32_t s = t->session;
    bench_session *ss = &run->sessions[s];
    SLOT_ASSERT(s < run->nsessions && ss->state == BENCH_SESSION_WAITING);
    if (t->op == BENCH_OP_EXTEND) {
        bool still = extend_answer(run, t, r);
        if (still && ss->extends_left > 0)
            ss->extends_left--;
        ss->next_op = !still ? BENCH_OP_HOLD : ss->extends_left ? BENCH_OP_EXTEND : ss->fate;
        bench_think(run, s, still ? think_ms(run->cfg, c) : 0);
        return;
    }
    if (t->op != BENCH_OP_HOLD) {
        if (t->op == BENCH_OP_CONFIRM)
            bench_confirm_answer(run, t, r);
        else
            bench_release_answer(run, t, r);
        ss->next_op = BENCH_OP_HOLD; /* a new buyer takes the place at once */
        bench_think(run, s, 0);
        return;
    }
    long idx = -1;
    int rc = hold_answer(run, t, r, now_ns, &idx);
    ss->next_op = BENCH_OP_HOLD;
    ss->plan = 0;
    if (rc == 1 && idx >= 0)
        churn_fate(run, c, s, idx);
    uint32_t delay_ms = think_ms(run->cfg, c);
    /* A late payer pays after the hold's expires_at: the answer came after its commit,
     * whose time is created_at, so hold_ttl_ms and a margin from now are past it, on
     * any clock. */
    if (ss->plan & BENCH_TICKET_REACQUIRE)
        delay_ms += run->cfg->hold_ttl_ms + BENCH_LATE_MARGIN_MS;
    bench_think(run, s, delay_ms);
}

/* ---------------------------------------------------------------- phases */

bench_phase bench_workload_phase(const bench_run *run)
{
    const bench_config *cfg = run->cfg;
    if (cfg->scenario == BENCH_WAITLIST)
        return bench_wl_phase(run);
    bool churn = cfg->scenario == BENCH_CHURN, ping = cfg->scenario == BENCH_PING;
    bool sells = bench_scenario_sells_out(cfg->scenario);
    return (bench_phase){
        .name = cfg->name,
        .conns = cfg->connections,
        .pipeline = cfg->pipeline,
        .rate_per_s = cfg->scenario == BENCH_OPEN_LOOP ? cfg->rate_per_s : 0,
        .requests_max = cfg->requests,
        .duration_ms = cfg->duration_ms,
        .measure = true,
        .event_first = 0,
        .event_count = (uint16_t)cfg->events,
        .zipf = cfg->scenario == BENCH_MULTI_EVENT,
        .ledger = true,
        .cart = cfg->scenario == BENCH_HOT_RELEASE && cfg->cart > 1 ? (uint8_t)cfg->cart : 0,
        .tail = sells ? cfg->tail : UINT64_MAX,
        .next = ping    ? ping_next
                : churn ? churn_next
                        : hold_next,
        .on_result = ping    ? ping_on_result
                     : churn ? churn_on_result
                             : hold_on_result,
    };
}

bench_phase bench_warmup_phase(const bench_run *run)
{
    const bench_config *cfg = run->cfg;
    return (bench_phase){
        .name = "warm-up",
        .conns = cfg->connections,
        .pipeline = cfg->pipeline,
        .rate_per_s = cfg->scenario == BENCH_OPEN_LOOP ? cfg->rate_per_s : 0,
        .requests_max = cfg->requests,
        .duration_ms = cfg->warmup_ms,
        .event_first = (uint16_t)(run->nevents - 1),
        .event_count = 1,
        .tail = UINT64_MAX,
        .next = hold_next,
        .on_result = hold_on_result,
    };
}

bench_phase bench_prefill_phase(const bench_run *run)
{
    const bench_config *cfg = run->cfg;
    return (bench_phase){
        .name = "prefill",
        .conns = cfg->connections,
        .pipeline = cfg->pipeline > BENCH_PREFILL_PIPELINE_MIN ? cfg->pipeline : BENCH_PREFILL_PIPELINE_MIN,
        /* not the measured phase: --requests does not bound it; it ends at the sell-out or after an hour */
        .requests_max = BENCH_REQUESTS_MAX,
        .duration_ms = BENCH_DURATION_MS_MAX,
        .event_first = 0,
        .event_count = 1,
        .ledger = true,
        .unique_users = true,
        .tail = 0,
        .unit_holds = cfg->scenario == BENCH_WAITLIST,
        .next = hold_next,
        .on_result = hold_on_result,
    };
}
