/*
 * workload_wait.c — the waitlist scenario's phases (docs/protocol.md,
 * "Waitlist"; workload.h says in which order they run).
 *
 *   join: every waiter sends waitlist_join, in waiter order, on one
 *     connection: slotd answers a connection's requests in order and decides
 *     them in that order, so the join order is the waiters' order, and each
 *     answer's position is checked against it (at most one more than the
 *     previous waiting answer's; exactly 1..K when no unit came back meanwhile).
 *   measured: a session per waiter polls its entry (the waitlist op) every
 *     --poll-ms, less often far back (x min(8, ceil(position / capacity))),
 *     and a session per prefill hold releases, confirms or abandons it after a
 *     think time. A waiter who learns of its offered hold does the same with
 *     it (--confirm, --release, --abandon). Released and expired units go to
 *     the next waiters in the server's commit. The phase ends when every
 *     waiter knows its offer and every release and confirm is answered (or at
 *     its bounds, or when the units not confirmed cannot meet a waiter's qty).
 *   leave: waiters still waiting leave, the last joiner first, on one
 *     connection: an earlier joiner never leaves while a later one waits, so
 *     a later joiner's offer can never be excused by an earlier one leaving.
 *   status: every waiter's final state (waitlist op): offered with its hold,
 *     left, or none (a join held at once).
 *   order: the waiters who got a hold form a prefix of the join order, and
 *     their holds' seqs (the first 16 hex digits of a hold id, taken from the
 *     event's counter in commit order) increase along it. Offers are made
 *     strictly in join order (a head whose qty cannot be met blocks those
 *     behind it), so any other outcome is an offer out of order.
 *
 * Waits are measured from the join's answer (bench wall clock) to the offer's
 * commit (the hold's created_at = expires_at - hold_ttl_ms, server clock on
 * the same machine: loopback), so the poll interval does not enter them.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "exit.h"
#include "ledger.h"
#include "limits.h"
#include "util.h"
#include "wire.h"
#include "workload.h"
#include "slot/assert.h"

static uint64_t hex_seq(const char *id, uint32_t len)
{
    uint64_t x = 0;
    for (uint32_t i = 0; i < 16 && i < len; i++) {
        char ch = id[i];
        unsigned d = ch >= '0' && ch <= '9'   ? (unsigned)(ch - '0')
                     : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10)
                                              : 16;
        if (d == 16)
            return 0;
        x = x << 4 | d;
    }
    return x;
}

uint64_t bench_wl_wait_ms(const bench_waiter *w)
{
    return w->hold != BENCH_LINK_NONE && w->offer_ms > w->ack_ms ? w->offer_ms - w->ack_ms : 0;
}

int bench_wl_init(bench_run *run)
{
    const bench_config *cfg = run->cfg;
    bench_wl *wl = &run->wl;
    wl->n = cfg->waiters;
    wl->nprefill = (uint32_t)run->ledger.n;
    wl->positions_exact = true;
    if (!(wl->w = calloc(wl->n, sizeof(bench_waiter))))
        return -1;
    uint64_t rng = cfg->seed ^ UINT64_C(0x7761697469c0ffee);
    for (uint32_t i = 0; i < wl->n; i++) {
        bench_waiter *w = &wl->w[i];
        w->user = run->next_user++;
        w->key = run->next_key++;
        w->qty = (uint16_t)bench_qty_pick(&cfg->qty, bench_rand(&rng));
        w->hold = BENCH_LINK_NONE;
    }
    return 0;
}

/* The hold of an answer (an offered entry, or a join held at once) for waiter w: into the
 * ledger (with the status it shows), the tallies and w. false when the ledger is full. */
static bool record_offer(bench_run *run, bench_waiter *w, const bench_result *r)
{
    bench_wl *wl = &run->wl;
    slot_hold_status st = r->has_status ? r->status : SLOT_HOLD_HELD;
    long idx = bench_ledger_add_hold(&run->ledger, r->hold, r->hold_len, w->user, 0, (uint16_t)r->qty, (uint8_t)st,
                                     r->expires_at_ms);
    if (idx < 0) {
        bench_fail(run, BENCH_EXIT_FAILED, "the ledger is full (%u holds) or out of memory: use a smaller run",
                   BENCH_LEDGER_MAX);
        return false;
    }
    bench_event *e = &run->events[0];
    w->hold = (uint32_t)idx;
    w->hold_seq = hex_seq(r->hold, r->hold_len);
    w->offer_ms = r->expires_at_ms > run->cfg->hold_ttl_ms ? r->expires_at_ms - run->cfg->hold_ttl_ms : 0;
    if (w->state == BENCH_WAITER_WAITING && wl->waiting > 0)
        wl->waiting--;
    w->state = BENCH_WAITER_OFFERED;
    if (!w->at_once)
        wl->offered++;
    if (w->offer_ms > wl->last_offer_ms)
        wl->last_offer_ms = w->offer_ms;
    e->holds++;
    e->held_units += r->qty;
    e->out_units += st == SLOT_HOLD_HELD ? r->qty : 0;
    run->n.holds++;
    run->n.held_units += r->qty;
    return true;
}

/* ---------------------------------------------------------------- join */

static bool join_next(bench_run *run, bench_conn *c, bench_ticket *t)
{
    (void)c;
    bench_wl *wl = &run->wl;
    if (wl->cursor >= wl->n)
        return false;
    const bench_waiter *w = &wl->w[wl->cursor];
    memset(t, 0, sizeof(*t));
    t->op = BENCH_OP_WAIT_JOIN;
    t->user = w->user;
    t->key = w->key;
    t->qty = w->qty;
    t->session = wl->cursor++;
    return true;
}

static void join_on_result(bench_run *run, bench_conn *c, const bench_ticket *t, const bench_result *r, uint64_t now_ns)
{
    (void)c;
    (void)now_ns;
    bench_wl *wl = &run->wl;
    bench_waiter *w = &wl->w[t->session];
    w->ack_ms = bench_wall_ms();
    w->state = BENCH_WAITER_FAILED;
    if (!r->ok) {
        wl->join_errors++;
        bench_count_error(run, r);
    } else if (r->replay && t->tries == 0) {
        wl->join_unexpected++; /* every key is new */
    } else if (r->has_wait && r->wait == SLOT_WAIT_WAITING && r->position >= 1 && r->qty == t->qty) {
        w->state = BENCH_WAITER_WAITING;
        w->position = w->last_position = r->position > UINT32_MAX ? UINT32_MAX : (uint32_t)r->position;
        wl->joined++;
        wl->waiting++;
        wl->bad_positions += r->position > wl->prev_position + 1; /* answers come in join order */
        wl->positions_exact &= r->position == (uint64_t)t->session + 1;
        wl->prev_position = r->position;
    } else if (!r->has_wait && r->has_status && r->status == SLOT_HOLD_HELD && r->hold_len > 0 && r->qty == t->qty) {
        w->at_once = true; /* units free and nobody waiting: a hold (docs/protocol.md, "Waitlist") */
        wl->joined++;
        wl->at_once++;
        wl->positions_exact = false;
        wl->prev_position = 0;
        record_offer(run, w, r);
    } else if (r->sold_out) {
        wl->full++; /* the list was sized for every waiter: waitlist_full is a failure */
    } else {
        wl->join_unexpected++;
    }
}

bench_phase bench_wl_join_phase(const bench_run *run)
{
    return (bench_phase){
        .name = "waitlist joins",
        .conns = 1,
        .pipeline = BENCH_JOIN_PIPELINE,
        .requests_max = run->wl.n > 0 ? run->wl.n : 1,
        .duration_ms = BENCH_DURATION_MS_MAX,
        .tail = UINT64_MAX,
        .next = join_next,
        .on_result = join_on_result,
    };
}

/* ---------------------------------------------------------------- the measured phase */

static uint32_t think_ms(const bench_config *cfg, uint64_t *rng)
{
    uint32_t span = cfg->think_max_ms - cfg->think_min_ms;
    return cfg->think_min_ms + (span ? (uint32_t)(bench_rand(rng) % (span + 1u)) : 0);
}

/* How long a waiter at position pos waits before it asks again. */
static uint32_t poll_delay_ms(const bench_run *run, uint64_t pos)
{
    uint64_t cap = run->cfg->capacity > 0 ? run->cfg->capacity : 1;
    uint64_t k = (pos + cap - 1) / cap;
    k = k < 1 ? 1 : k > BENCH_POLL_SPREAD_MAX ? BENCH_POLL_SPREAD_MAX : k;
    return (uint32_t)(run->cfg->poll_ms * k);
}

/* Session s holds ledger entry idx (held): it confirms, releases or abandons it (after a
 * think time) as --confirm / --release / --abandon say. prefill: a prefill hold (for the tallies). */
static void decide(bench_run *run, uint32_t s, uint32_t idx, bool prefill, uint64_t *rng)
{
    const bench_config *cfg = run->cfg;
    bench_wl *wl = &run->wl;
    bench_session *ss = &run->sessions[s];
    uint32_t roll = (uint32_t)(bench_rand(rng) % 100);
    ss->hold = idx;
    if (roll >= cfg->confirm_pct + cfg->release_pct) {
        ss->state = BENCH_SESSION_DONE; /* abandoned: it expires and its units go to the next waiters */
        *(prefill ? &wl->prefill_abandoned : &wl->offer_abandoned) += 1;
        return;
    }
    bool confirm = roll < cfg->confirm_pct;
    ss->next_op = confirm ? BENCH_OP_CONFIRM : BENCH_OP_RELEASE;
    *(prefill ? (confirm ? &wl->prefill_confirmed : &wl->prefill_released)
              : (confirm ? &wl->offer_confirmed : &wl->offer_released)) += 1;
    wl->acting++;
    bench_think(run, s, think_ms(cfg, rng));
}

int bench_wl_sessions_init(bench_run *run)
{
    const bench_config *cfg = run->cfg;
    bench_wl *wl = &run->wl;
    uint32_t conns = cfg->connections;
    run->nsessions = wl->n + wl->nprefill;
    run->sessions = calloc(run->nsessions ? run->nsessions : 1, sizeof(bench_session));
    run->heap = calloc(run->nsessions ? run->nsessions : 1, sizeof(bench_heap_item));
    if (!run->sessions || !run->heap)
        return -1;
    uint32_t per_conn = (run->nsessions + conns - 1) / conns;
    for (uint32_t i = 0; i < conns; i++)
        if (!(run->conns[i].ready = calloc(per_conn ? per_conn : 1, sizeof(uint32_t))))
            return -1;
    uint64_t rng = cfg->seed ^ UINT64_C(0x686f6c64657273);
    for (uint32_t s = 0; s < run->nsessions; s++) {
        bench_session *ss = &run->sessions[s];
        *ss = (bench_session){.conn = s % conns, .state = BENCH_SESSION_DONE, .hold = BENCH_LINK_NONE};
        if (s >= wl->n) { /* the holder of prefill hold s - n */
            decide(run, s, s - wl->n, true, &rng);
            continue;
        }
        const bench_waiter *w = &wl->w[s];
        if (w->state == BENCH_WAITER_WAITING) {
            ss->next_op = BENCH_OP_WAIT_STATUS;
            bench_think(run, s, poll_delay_ms(run, w->position)); /* far back, the first ask comes later */
        } else if (w->state == BENCH_WAITER_OFFERED && run->ledger.holds[w->hold].expect == SLOT_HOLD_HELD) {
            decide(run, s, w->hold, false, &rng); /* a join held at once */
        }
    }
    return 0;
}

/* The first waiter still waiting (as far as the bench knows), or NULL. */
static const bench_waiter *first_waiting(bench_wl *wl)
{
    while (wl->head < wl->n && wl->w[wl->head].state != BENCH_WAITER_WAITING)
        wl->head++; /* offers go in join order: an earlier waiter never waits again */
    for (uint32_t i = wl->head; i < wl->n; i++)
        if (wl->w[i].state == BENCH_WAITER_WAITING)
            return &wl->w[i];
    return NULL;
}

/* Every waiter knows its offer (or failed) and every release and confirm is answered; or the
 * units nobody confirmed cannot meet the first waiter's qty, so nobody can be offered more. */
static void maybe_done(bench_run *run)
{
    bench_wl *wl = &run->wl;
    const bench_event *e = &run->events[0];
    const bench_waiter *head = wl->waiting > 0 && wl->acting == 0 ? first_waiting(wl) : NULL;
    if (wl->waiting == 0 && wl->acting == 0) {
        bench_stop(run, "every waiter was offered a hold, and every release and confirm was answered");
    } else if (head && e->capacity - e->confirmed_units < head->qty) {
        wl->exhausted = true;
        bench_stop(run, "the units not confirmed cannot meet the first waiter's qty");
    }
}

static bool wl_next(bench_run *run, bench_conn *c, bench_ticket *t)
{
    if (c->nready == 0)
        return false;
    uint32_t s = c->ready[--c->nready];
    bench_session *ss = &run->sessions[s];
    SLOT_ASSERT(ss->state == BENCH_SESSION_READY);
    ss->state = BENCH_SESSION_WAITING;
    memset(t, 0, sizeof(*t));
    t->session = s;
    if (ss->next_op == BENCH_OP_WAIT_STATUS) {
        const bench_waiter *w = &run->wl.w[s];
        t->op = BENCH_OP_WAIT_STATUS;
        t->user = w->user;
        t->key = w->key;
        t->qty = w->qty;
        run->wl.polls++;
        return true;
    }
    const bench_hold *h = &run->ledger.holds[ss->hold];
    t->op = ss->next_op;
    t->key = ss->hold;
    t->user = h->user;
    t->event = h->event;
    t->qty = h->qty;
    return true;
}

static void wl_on_result(bench_run *run, bench_conn *c, const bench_ticket *t, const bench_result *r, uint64_t now_ns)
{
    (void)now_ns;
    bench_wl *wl = &run->wl;
    uint32_t s = t->session;
    bench_session *ss = &run->sessions[s];
    SLOT_ASSERT(s < run->nsessions && ss->state == BENCH_SESSION_WAITING);
    ss->state = BENCH_SESSION_DONE;
    if (t->op == BENCH_OP_CONFIRM || t->op == BENCH_OP_RELEASE) {
        if (t->op == BENCH_OP_CONFIRM)
            bench_confirm_answer(run, t, r);
        else
            bench_release_answer(run, t, r);
        wl->acting--;
        maybe_done(run);
        return;
    }
    bench_waiter *w = &wl->w[s];
    if (!r->ok) {
        wl->status_errors++;
        wl->waiting--; /* it stops asking: verification reports the error */
        bench_count_error(run, r);
    } else if (r->has_wait && r->wait == SLOT_WAIT_WAITING && r->position >= 1) {
        w->last_position = r->position > UINT32_MAX ? UINT32_MAX : (uint32_t)r->position;
        ss->next_op = BENCH_OP_WAIT_STATUS;
        bench_think(run, s, poll_delay_ms(run, r->position));
    } else if (r->has_wait && r->wait == SLOT_WAIT_OFFERED && r->has_status && r->hold_len > 0) {
        if (!record_offer(run, w, r))
            return;
        if (r->status == SLOT_HOLD_HELD)
            decide(run, s, w->hold, false, &c->rng);
        else
            wl->offer_expired_first++; /* it expired before the waiter asked: its units went on already */
    } else {
        wl->status_unexpected++;
        wl->waiting--;
        run->n.unexpected++;
    }
    maybe_done(run);
}

bench_phase bench_wl_phase(const bench_run *run)
{
    const bench_config *cfg = run->cfg;
    return (bench_phase){
        .name = cfg->name,
        .conns = cfg->connections,
        .pipeline = cfg->pipeline,
        .requests_max = cfg->requests,
        .duration_ms = cfg->duration_ms,
        .measure = true,
        .event_first = 0,
        .event_count = 1,
        .ledger = true,
        .tail = UINT64_MAX,
        .next = wl_next,
        .on_result = wl_on_result,
    };
}

/* ---------------------------------------------------------------- leave, status */

/* Leave: the waiters the bench still sees waiting, from the last joiner to the first. */
static bool leave_next(bench_run *run, bench_conn *c, bench_ticket *t)
{
    (void)c;
    bench_wl *wl = &run->wl;
    while (wl->cursor > 0 && wl->w[wl->cursor - 1].state != BENCH_WAITER_WAITING)
        wl->cursor--;
    if (wl->cursor == 0)
        return false;
    const bench_waiter *w = &wl->w[--wl->cursor];
    memset(t, 0, sizeof(*t));
    t->op = BENCH_OP_WAIT_LEAVE;
    t->user = w->user;
    t->key = w->key;
    t->qty = w->qty;
    t->session = wl->cursor;
    return true;
}

static void leave_on_result(bench_run *run, bench_conn *c, const bench_ticket *t, const bench_result *r,
                            uint64_t now_ns)
{
    (void)c;
    (void)now_ns;
    bench_wl *wl = &run->wl;
    if (!r->ok) {
        wl->status_errors++;
        bench_count_error(run, r);
    } else if (r->left) {
        wl->left++;
        wl->w[t->session].final = SLOT_WAIT_LEFT;
    } else {
        wl->leave_missed++; /* offered since the last ask: the status phase shows the hold */
    }
}

bench_phase bench_wl_leave_phase(const bench_run *run)
{
    return (bench_phase){
        .name = "waitlist leaves",
        .conns = 1,
        .pipeline = BENCH_JOIN_PIPELINE,
        .requests_max = run->wl.n > 0 ? run->wl.n : 1,
        .duration_ms = BENCH_DURATION_MS_MAX,
        .tail = UINT64_MAX,
        .next = leave_next,
        .on_result = leave_on_result,
    };
}

static bool status_next(bench_run *run, bench_conn *c, bench_ticket *t)
{
    (void)c;
    bench_wl *wl = &run->wl;
    while (wl->cursor < wl->n &&
           (wl->w[wl->cursor].state == BENCH_WAITER_FAILED || wl->w[wl->cursor].state == BENCH_WAITER_NEW))
        wl->cursor++; /* never in the list: refused, or the join phase stopped before it */
    if (wl->cursor >= wl->n)
        return false;
    const bench_waiter *w = &wl->w[wl->cursor];
    memset(t, 0, sizeof(*t));
    t->op = BENCH_OP_WAIT_STATUS;
    t->user = w->user;
    t->key = w->key;
    t->qty = w->qty;
    t->session = wl->cursor++;
    return true;
}

/* One problem of the final states, into the order verdict (the first one is kept). */
static void order_problem(bench_wl *wl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void order_problem(bench_wl *wl, const char *fmt, ...)
{
    if (wl->order_violations++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(wl->first_violation, sizeof(wl->first_violation), fmt, ap);
        va_end(ap);
    }
}

static void status_on_result(bench_run *run, bench_conn *c, const bench_ticket *t, const bench_result *r,
                             uint64_t now_ns)
{
    (void)c;
    (void)now_ns;
    bench_wl *wl = &run->wl;
    bench_waiter *w = &wl->w[t->session];
    if (!r->ok || !r->has_wait) {
        wl->status_errors += !r->ok;
        wl->status_unexpected += r->ok;
        if (!r->ok)
            bench_count_error(run, r);
        return;
    }
    w->final = (uint8_t)r->wait;
    if (r->wait == SLOT_WAIT_OFFERED && r->hold_len > 0) {
        if (w->hold == BENCH_LINK_NONE) { /* offered after the measured phase (before its leave) */
            w->learned_late = true;
            wl->learned_late++;
            record_offer(run, w, r);
        } else if (hex_seq(r->hold, r->hold_len) != w->hold_seq) {
            order_problem(wl, "waiter %" PRIu32 " was told of one offered hold, and the waitlist op now names another",
                          t->session + 1);
        }
    } else if (r->wait == SLOT_WAIT_NONE && !w->at_once) {
        order_problem(wl, "waiter %" PRIu32 " joined (position %" PRIu32 ") but its key has no entry", t->session + 1,
                      w->position);
    } else if (r->wait == SLOT_WAIT_WAITING) {
        order_problem(wl, "waiter %" PRIu32 " still waits (position %" PRIu64 ") after every waiter left",
                      t->session + 1, r->position);
    }
}

bench_phase bench_wl_status_phase(const bench_run *run)
{
    uint32_t conns = run->nconns < BENCH_VERIFY_CONNS ? run->nconns : BENCH_VERIFY_CONNS;
    return (bench_phase){
        .name = "waitlist states",
        .conns = conns,
        .pipeline = BENCH_VERIFY_PIPELINE,
        .requests_max = run->wl.n > 0 ? run->wl.n : 1,
        .duration_ms = BENCH_DURATION_MS_MAX,
        .tail = UINT64_MAX,
        .next = status_next,
        .on_result = status_on_result,
    };
}

/* ---------------------------------------------------------------- order */

void bench_wl_order(bench_run *run)
{
    bench_wl *wl = &run->wl;
    uint32_t gap = UINT32_MAX, prev = UINT32_MAX; /* the first waiter without a hold; the last one with */
    for (uint32_t i = 0; i < wl->n; i++) {
        const bench_waiter *w = &wl->w[i];
        if (w->state == BENCH_WAITER_FAILED || w->state == BENCH_WAITER_NEW)
            continue; /* never in the list */
        if (w->hold == BENCH_LINK_NONE) {
            gap = gap == UINT32_MAX ? i : gap;
            continue;
        }
        if (gap != UINT32_MAX)
            order_problem(wl,
                          "waiter %" PRIu32 " (join position %" PRIu32 ") was offered a hold, but waiter %" PRIu32
                          " (position %" PRIu32 "), who joined before it, never was",
                          i + 1, w->position, gap + 1, wl->w[gap].position);
        else if (prev != UINT32_MAX && w->hold_seq <= wl->w[prev].hold_seq)
            order_problem(wl,
                          "waiter %" PRIu32 " (join position %" PRIu32 ") was offered hold seq %" PRIu64
                          " before waiter %" PRIu32 " (position %" PRIu32 "), who joined before it, got seq %" PRIu64,
                          i + 1, w->position, w->hold_seq, prev + 1, wl->w[prev].position, wl->w[prev].hold_seq);
        prev = i;
    }
}
