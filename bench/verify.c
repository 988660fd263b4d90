/*
 * verify.c — after the measured phase: did the target do what it said, and
 * does it say what it did? Four layers, each naming what differed:
 *   1. the answers themselves (errors nobody expected, replays, sold_out
 *      while enough units were free, requests never answered);
 *   2. the scenario's outcome (sold out exactly; nothing held on a sold-out event);
 *   3. the target's own invariant check and each event's counters against the tallies;
 *   4. the ledger: get_hold for every hold the bench was told it has, and the
 *      totals of what get_hold says against the event's counters.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "exit.h"
#include "ledger.h"
#include "limits.h"
#include "seated.h"
#include "util.h"
#include "verify.h"
#include "workload.h"

void bench_problem(bench_verdict *v, const char *fmt, ...)
{
    size_t n = strlen(v->problems);
    if (n > 0 && n + 2 < sizeof(v->problems)) {
        strcpy(v->problems + n, "; ");
        n += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->problems + n, sizeof(v->problems) - n, fmt, ap);
    va_end(ap);
    v->nproblems++;
}

static void answers_consistent(const bench_run *run, const bench_counters *n, bench_verdict *v)
{
    uint64_t bad = 0;
    for (unsigned e = 0; e <= SLOT_E__COUNT; e++)
        if (e != SLOT_E_OVERLOADED && !(e == SLOT_E_USER_LIMIT && run->cfg->max_per_user > 0))
            bad += n->errors[e];
    if (bad)
        bench_problem(v, "%" PRIu64 " error answers (first: %s)", bad, run->first_error);
    if (n->replays)
        bench_problem(v, "%" PRIu64 " replays for request keys never used before", n->replays);
    if (n->unexpected)
        bench_problem(v, "%" PRIu64 " answers neither held, sold_out, confirmed, released, expired nor an error",
                      n->unexpected);
    if (n->bad_sold_out)
        bench_problem(v, "%" PRIu64 " sold_out answers said at least qty units were available", n->bad_sold_out);
    if (n->bad_block_sold_out)
        bench_problem(v,
                      "%" PRIu64 " sold_out answers did not fit the block: a presale hold's without \"remaining\" "
                      "or with remaining >= qty, or a public hold's with it",
                      n->bad_block_sold_out);
    if (run->inflight_total)
        bench_problem(v, "%" PRIu64 " requests never answered", run->inflight_total);
}

/* Sold-out must grant nothing. Hot-release and multi-event must never
 * oversell, and must sell out unless their --duration or --requests bound
 * stopped them first: then the rest of verification checks what they did. */
static void outcome(const bench_run *run, const bench_counters *n, bench_verdict *v)
{
    const bench_config *cfg = run->cfg;
    if (cfg->scenario == BENCH_SOLD_OUT && n->holds)
        bench_problem(v, "%" PRIu64 " holds were granted on a sold-out event", n->holds);
    if (!bench_scenario_sells_out(cfg->scenario))
        return;
    for (uint32_t i = 0; i < run->nevents; i++) {
        const bench_event *e = &run->events[i];
        if (!e->measured)
            continue;
        if (e->held_units > e->capacity)
            bench_problem(v, "%s: %" PRIu64 " units held for capacity %" PRIu64 " (oversold)", e->name, e->held_units,
                          e->capacity);
        else if (cfg->types) /* a ticket type sells out when the venue does (family_checks) */
            continue;
        else if (e->capacity - e->held_units >= cfg->qty.min && !run->stopped_at_bound &&
                 !(run->seated && e->sellout_ns)) /* --adjacent: sold out when no buyer's run is free */
            bench_problem(v, "%s: %" PRIu64 " units held for capacity %" PRIu64 ": not sold out (stopped: %s)", e->name,
                          e->held_units, e->capacity, run->stop_reason ? run->stop_reason : "-");
    }
}

/* Churn: wait until every hold still held by us has expired, then have the
 * target sweep them, so the state to check is settled. */
static int settle_expiry(bench_run *run, bench_verdict *v)
{
    bench_ledger *l = &run->ledger;
    uint64_t last_ms = 0; /* the last expires_at of a hold still ours */
    for (size_t i = 0; i < l->n; i++)
        if (l->holds[i].expect == SLOT_HOLD_HELD && l->holds[i].expires_at_ms > last_ms)
            last_ms = l->holds[i].expires_at_ms;
    uint64_t now_ms = bench_wall_ms();
    if (last_ms + BENCH_EXPIRE_MARGIN_MS > now_ms) {
        uint64_t wait_ms = last_ms + BENCH_EXPIRE_MARGIN_MS - now_ms;
        if (wait_ms > BENCH_EXPIRE_WAIT_MS_MAX)
            wait_ms = BENCH_EXPIRE_WAIT_MS_MAX;
        struct timespec ts = {(time_t)(wait_ms / 1000), (long)(wait_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    char err[512];
    uint64_t expired = 0;
    for (int round = 0; round < BENCH_EXPIRE_ROUNDS_MAX; round++) {
        int rc = run->drv->expire(run->admin, run->events[0].name, &expired, err, sizeof(err));
        if (rc == BENCH_EXIT_CONNECTION)
            return rc;
        if (rc) {
            bench_problem(v, "%s", err);
            break;
        }
        if (expired < 1000)
            break;
    }
    for (size_t i = 0; i < l->n; i++)
        if (l->holds[i].expect == SLOT_HOLD_HELD)
            l->holds[i].expect = SLOT_HOLD_EXPIRED;
    return 0;
}

/* The counters an event should show, from the tallies. */
static void expected_view(const bench_run *run, const bench_event *e, bench_view *x)
{
    memset(x, 0, sizeof(*x));
    x->capacity = e->capacity;
    if ((run->cfg->scenario == BENCH_CHURN || run->cfg->scenario == BENCH_WAITLIST) && e->measured) {
        x->confirmed = e->confirmed_units;
        x->held = 0;
    } else {
        x->held = e->held_units;
    }
    uint64_t used = x->held + x->confirmed;
    x->available = used < e->capacity ? e->capacity - used : 0;
}

/* hot-release --allocation (docs/protocol.md, "Allocations"): the one event's view (views[0])
 * against the tallies of its public units (events[0]) and its block (events[1]): held is both
 * parts' held units, the block shows the presale's held units and the rest of its N remaining,
 * allocated is that rest, and free + held + confirmed + allocated is the capacity. views[1]
 * is the block as a view of its own (capacity its qty, available its remaining). */
static int block_checks(bench_run *run, bench_verdict *v)
{
    const bench_config *cfg = run->cfg;
    const bench_event *pub = &run->events[0], *blk = &run->events[1];
    const bench_view *got = &v->views[0];
    uint64_t held = pub->held_units + blk->held_units;
    uint64_t rest = blk->held_units < cfg->allocation ? cfg->allocation - blk->held_units : 0;
    uint64_t free_want = cfg->capacity >= held + rest ? cfg->capacity - held - rest : 0;
    if (got->available + got->held + got->confirmed + got->allocated != got->capacity)
        bench_problem(v,
                      "%s: free %" PRIu64 " + held %" PRIu64 " + confirmed %" PRIu64 " + allocated %" PRIu64
                      " is not capacity %" PRIu64,
                      pub->name, got->available, got->held, got->confirmed, got->allocated, got->capacity);
    if (got->capacity != cfg->capacity || got->held != held || got->confirmed != 0 || got->available != free_want ||
        got->allocated != rest)
        bench_problem(v,
                      "%s shows capacity %" PRIu64 ", free %" PRIu64 ", held %" PRIu64 ", confirmed %" PRIu64
                      ", allocated %" PRIu64 "; the answers say %" PRIu64 ", %" PRIu64 ", %" PRIu64 " (%" PRIu64
                      " public + %" PRIu64 " presale), 0, %" PRIu64,
                      pub->name, got->capacity, got->available, got->held, got->confirmed, got->allocated,
                      cfg->capacity, free_want, held, pub->held_units, blk->held_units, rest);
    if (!got->has_block)
        bench_problem(v, "%s shows no block %s in its allocations", pub->name, BENCH_BLOCK_NAME);
    else if (got->block_qty != cfg->allocation || got->block_held != blk->held_units || got->block_confirmed != 0 ||
             got->block_remaining != rest)
        bench_problem(v,
                      "%s's block %s shows qty %" PRIu64 ", held %" PRIu64 ", confirmed %" PRIu64 ", remaining %" PRIu64
                      "; the answers say %" PRIu64 ", %" PRIu64 ", 0, %" PRIu64,
                      pub->name, BENCH_BLOCK_NAME, got->block_qty, got->block_held, got->block_confirmed,
                      got->block_remaining, cfg->allocation, blk->held_units, rest);
    v->views[1] = (bench_view){.capacity = got->block_qty,
                               .available = got->block_remaining,
                               .held = got->block_held,
                               .confirmed = got->block_confirmed};
    snprintf(v->views[1].status, sizeof(v->views[1].status), "%s", got->status);
    return 0;
}

static int event_checks(bench_run *run, uint32_t i, bench_verdict *v)
{
    if (run->cfg->allocation && i == 1)
        return 0; /* the block: block_checks, with event 0 */
    const bench_event *e = &run->events[i];
    char detail[600];
    uint32_t violations = 0;
    int rc = run->drv->check(run->admin, e->name, &violations, detail, sizeof(detail));
    if (rc == BENCH_EXIT_CONNECTION)
        return rc;
    if (rc)
        bench_problem(v, "%s", detail);
    else if (violations)
        bench_problem(v, "check %s: %" PRIu32 " violations: %.300s", e->name, violations, detail);
    bench_view *got = &v->views[i], want;
    if ((rc = run->drv->event(run->admin, e->name, got, detail, sizeof(detail))) == BENCH_EXIT_CONNECTION)
        return rc;
    if (rc) {
        bench_problem(v, "%s", detail);
        return 0;
    }
    if (run->cfg->allocation)
        return block_checks(run, v);
    if (got->available + got->held + got->confirmed != got->capacity) /* invariant 1, as the event shows it */
        bench_problem(v,
                      "%s: available %" PRIu64 " + held %" PRIu64 " + confirmed %" PRIu64 " is not capacity %" PRIu64,
                      e->name, got->available, got->held, got->confirmed, got->capacity);
    expected_view(run, e, &want);
    if (got->capacity != want.capacity || got->available != want.available || got->held != want.held ||
        got->confirmed != want.confirmed)
        bench_problem(v,
                      "%s shows capacity %" PRIu64 ", available %" PRIu64 ", held %" PRIu64 ", confirmed %" PRIu64
                      "; the answers say %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64,
                      e->name, got->capacity, got->available, got->held, got->confirmed, want.capacity, want.available,
                      want.held, want.confirmed);
    return 0;
}

/* --types (docs/protocol.md, "Ticket types"): the types' held units add up to
 * at most the venue's capacity (and to all of it, less a remainder below the
 * smallest qty, when the run sold out), and the venue and its area show them. */
static int family_checks(bench_run *run, bench_verdict *v)
{
    const bench_config *cfg = run->cfg;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < run->nevents; i++)
        sum += run->events[i].measured ? run->events[i].held_units : 0;
    if (sum > cfg->capacity)
        bench_problem(v, "the types hold %" PRIu64 " units, the venue has %" PRIu64 " (oversold)", sum, cfg->capacity);
    else if (cfg->capacity - sum >= cfg->qty.min && !run->stopped_at_bound)
        bench_problem(v, "the types hold %" PRIu64 " of the venue's %" PRIu64 ": not sold out", sum, cfg->capacity);
    char name[SLOT_EVENT_BYTES_MAX + 1], detail[600];
    for (int k = 0; k < 2; k++) {
        snprintf(name, sizeof(name), k ? "%.*s-area" : "%.*s", BENCH_EVENT_BYTES_MAX, cfg->event);
        bench_view got;
        int rc = run->drv->event(run->admin, name, &got, detail, sizeof(detail));
        if (rc == BENCH_EXIT_CONNECTION)
            return rc;
        if (rc)
            bench_problem(v, "%s", detail);
        else if (got.held != sum || got.confirmed != 0 ||
                 got.available != cfg->capacity - (sum < cfg->capacity ? sum : cfg->capacity))
            bench_problem(v, "%s shows held %" PRIu64 ", available %" PRIu64 "; its types hold %" PRIu64, name,
                          got.held, got.available, sum);
    }
    return 0;
}

/* What get_hold said, summed per event, against the event's counters. One
 * pass over the ledger: O(holds + events). */
static void ledger_totals(const bench_run *run, bench_verdict *v)
{
    const bench_ledger *l = &run->ledger;
    uint64_t *sums = calloc((size_t)run->nevents * 3, sizeof(uint64_t)); /* held, confirmed, entries */
    if (!sums) {
        bench_problem(v, "out of memory for the ledger totals");
        return;
    }
    for (size_t k = 0; k < l->n; k++) {
        const bench_hold *h = &l->holds[k];
        uint64_t *s = &sums[(size_t)h->event * 3];
        s[0] += h->seen == SLOT_HOLD_HELD ? h->qty : 0;
        s[1] += h->seen == SLOT_HOLD_CONFIRMED ? h->qty : 0;
        s[2]++;
    }
    for (uint32_t i = 0; i < run->nevents; i++) {
        const uint64_t *s = &sums[(size_t)i * 3];
        const bench_view *got = &v->views[i];
        /* --allocation: event 0's view counts the block's units too; the public holds are the rest */
        bool pub = run->cfg->allocation && i == 0;
        uint64_t held = pub ? got->held - (v->views[1].held < got->held ? v->views[1].held : got->held) : got->held;
        uint64_t confirmed = pub ? got->confirmed -
                                       (v->views[1].confirmed < got->confirmed ? v->views[1].confirmed : got->confirmed)
                                 : got->confirmed;
        if (s[2] > 0 && (s[0] != held || s[1] != confirmed))
            bench_problem(v,
                          "%s%s%s: get_hold shows %" PRIu64 " units held and %" PRIu64 " confirmed, the event %" PRIu64
                          " and %" PRIu64,
                          run->events[i].name, run->events[i].allocation[0] ? " block " : "", run->events[i].allocation,
                          s[0], s[1], held, confirmed);
    }
    free(sums);
}

/* hot-release --cart: every acknowledged cart's holds (K consecutive ledger entries, events
 * 0..K-1) all held, and every event showing the same units held: all or nothing. */
static void carts_whole(const bench_run *run, const bench_counters *n, bench_verdict *v)
{
    uint32_t k = run->cfg->cart;
    if (run->cfg->scenario != BENCH_HOT_RELEASE || k < 2)
        return;
    const bench_ledger *l = &run->ledger;
    if (l->n != n->carts * k) {
        bench_problem(v, "the ledger has %zu holds for %" PRIu64 " carts of %u", l->n, n->carts, k);
        return;
    }
    uint64_t broken = 0;
    for (size_t c = 0; c < n->carts; c++) {
        uint32_t held = 0;
        for (uint32_t i = 0; i < k; i++) {
            const bench_hold *h = &l->holds[c * k + i];
            held += h->event == i && h->seen == SLOT_HOLD_HELD;
        }
        broken += held != k;
    }
    if (broken)
        bench_problem(v, "%" PRIu64 " of %" PRIu64 " carts are not held whole (get_hold)", broken, n->carts);
    for (uint32_t i = 1; i < k; i++)
        if (v->views[i].held != v->views[0].held)
            bench_problem(v, "%s shows %" PRIu64 " units held, %s %" PRIu64 ": a cart held in part",
                          run->events[i].name, v->views[i].held, run->events[0].name, v->views[0].held);
}

/* Waitlist, before the expiries are settled: the waiters still waiting leave (the last joiner
 * first), then every waiter's final state; 0 or an exit status. */
static int waitlist_final(bench_run *run)
{
    run->wl.cursor = run->wl.n;
    bench_phase leave = bench_wl_leave_phase(run);
    int rc = run->wl.waiting > 0 ? bench_engine_phase(run, &leave) : 0;
    run->wl.cursor = 0;
    bench_phase status = bench_wl_status_phase(run);
    return rc ? rc : bench_engine_phase(run, &status);
}

/* Waitlist: the joins, the final states, offers in join order, and the event's list. */
static void waitlist_checks(bench_run *run, bench_verdict *v)
{
    bench_wl *wl = &run->wl;
    const bench_view *got = &v->views[0];
    if (wl->full)
        bench_problem(v,
                      "%" PRIu32 " of %" PRIu32 " joins answered sold_out (waitlist_full) with waitlist_max %" PRIu32,
                      wl->full, wl->n, run->cfg->waiters);
    if (wl->join_errors || wl->join_unexpected)
        bench_problem(v,
                      "%" PRIu32 " joins answered with an error, %" PRIu32
                      " neither waiting nor held (first error: %s)",
                      wl->join_errors, wl->join_unexpected, run->first_error[0] ? run->first_error : "-");
    uint32_t answered = wl->joined + wl->full + wl->join_errors + wl->join_unexpected;
    if (answered < wl->n)
        bench_problem(v, "only %" PRIu32 " of %" PRIu32 " joins were answered", answered, wl->n);
    if (wl->bad_positions)
        bench_problem(v, "%" PRIu32 " join answers named a position more than one past the previous join's",
                      wl->bad_positions);
    if (wl->status_errors || wl->status_unexpected)
        bench_problem(v, "%" PRIu64 " waitlist or waitlist_leave answers were errors, %" PRIu64 " named no entry state",
                      wl->status_errors, wl->status_unexpected);
    bench_wl_order(run);
    if (wl->order_violations)
        bench_problem(v, "%" PRIu32 " offers out of join order (first: %s)", wl->order_violations, wl->first_violation);
    uint32_t served = wl->offered + wl->at_once;
    if (served < wl->joined && !run->stopped_at_bound && !wl->exhausted)
        bench_problem(v, "only %" PRIu32 " of %" PRIu32 " waiters were offered a hold (stopped: %s)", served,
                      wl->joined, run->stop_reason ? run->stop_reason : "-");
    if (got->waiting != 0 || got->waiting_qty != 0 || got->waitlist_max != run->cfg->waiters)
        bench_problem(v,
                      "%s shows waitlist_max %" PRIu64 ", waiting %" PRIu64 " (%" PRIu64 " units) after every waiter "
                      "left or was offered; expected %" PRIu32 ", 0 (0)",
                      run->events[0].name, got->waitlist_max, got->waiting, got->waiting_qty, run->cfg->waiters);
}

int bench_verify(bench_run *run, bench_verdict *v)
{
    bench_counters n = run->n; /* the measured phase's; the ledger phase resets run->n */
    bool waitlist = run->cfg->scenario == BENCH_WAITLIST;
    bool stopped_at_bound = run->stopped_at_bound;
    const char *stop_reason = run->stop_reason;
    v->ran = true;
    answers_consistent(run, &n, v);
    outcome(run, &n, v);
    int rc = waitlist ? waitlist_final(run) : 0;
    run->n = n;
    run->stopped_at_bound = stopped_at_bound;
    run->stop_reason = stop_reason;
    if (rc == 0 && (run->cfg->scenario == BENCH_CHURN || waitlist))
        rc = settle_expiry(run, v);
    for (uint32_t i = 0; rc == 0 && i < run->nevents; i++)
        rc = event_checks(run, i, v);
    if (rc == 0 && run->cfg->types)
        rc = family_checks(run, v);
    if (rc)
        return rc;
    bench_phase ph = bench_verify_phase(run);
    rc = bench_engine_phase(run, &ph);
    run->n = n;
    if (rc)
        return rc;
    const bench_ledger *l = &run->ledger;
    if (l->checked != l->n)
        bench_problem(v, "the ledger check asked about %" PRIu64 " of %zu holds", l->checked, l->n);
    if (l->mismatches)
        bench_problem(v, "%" PRIu64 " of %zu holds differ (first: %s)", l->mismatches, l->n, l->first_mismatch);
    ledger_totals(run, v);
    carts_whole(run, &n, v);
    if (run->seated && (rc = bench_seated_verify(run, v)) != 0)
        return rc;
    if (waitlist) {
        run->stopped_at_bound = stopped_at_bound;
        run->stop_reason = stop_reason;
        waitlist_checks(run, v);
    }
    return 0;
}
