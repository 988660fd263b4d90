/*
 * engine_threads.c — slot-bench --threads N: N event loops, each a bench_run
 * of its own on its own thread with its share of the connections.
 *
 * The run (loop 0) makes loops 1..N-1 when it opens: each gets a copy of the
 * configuration (its share of --connections; its own seed), a copy of the
 * events (names and capacities; tallies of its own answers), and its own
 * ranges of user and request-key numbers (loop i starts at i x 2^40), so no
 * two loops ever send the same key. They borrow the run's driver, admin
 * connection (read-only after setup) and Zipf table.
 *
 * A phase runs on every loop at once, each with its share of the phase's
 * connections, request bound and tail; the run's thread runs loop 0 and
 * waits for the others. Then everything the loops counted is merged into the
 * run — counters, latency histograms, the events' tallies, the ledger, the
 * time series — and the loops' additive tallies start again from zero, so
 * the run's report and its verification see one run. Verification
 * (bench_phase.one_loop) goes on loop 0's connections only.
 *
 * While a phase runs, each loop touches only its own run: nothing is shared
 * but what is read-only. A loop's tallies see only its own answers, so a
 * sell-out is seen from the target's sold_out answers (workload.c).
 */
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "engine.h"
#include "exit.h"
#include "ledger.h"

/* Share i of total over n parts, the first (total % n) one larger. */
static uint64_t share(uint64_t total, uint32_t n, uint32_t i)
{
    return total / n + (i < total % n);
}

int bench__loops_open(bench_run *run)
{
    const bench_config *cfg = run->cfg;
    uint32_t n = cfg->threads;
    if (!(run->loops = calloc(n - 1, sizeof(bench_run *)))) {
        bench_fail(run, BENCH_EXIT_FAILED, "out of memory for %u loops", n);
        return run->fatal_exit;
    }
    for (uint32_t i = 1; i < n; i++) {
        bench_run *l = calloc(1, sizeof(*l));
        bench_config *lc = malloc(sizeof(*lc));
        bench_event *ev = calloc(run->nevents ? run->nevents : 1, sizeof(bench_event));
        if (!l || !lc || !ev) {
            free(l);
            free(lc);
            free(ev);
            bench_fail(run, BENCH_EXIT_FAILED, "out of memory for loop %u", i);
            return run->fatal_exit;
        }
        *lc = *cfg;
        lc->connections = (uint32_t)share(cfg->connections, n, i);
        lc->seed = cfg->seed ^ ((uint64_t)i * 0x9E3779B97F4A7C15ull);
        for (uint32_t e = 0; e < run->nevents; e++) {
            memcpy(ev[e].name, run->events[e].name, sizeof(ev[e].name));
            ev[e].capacity = run->events[e].capacity;
            ev[e].measured = run->events[e].measured;
            memcpy(ev[e].allocation, run->events[e].allocation, sizeof(ev[e].allocation));
        }
        l->cfg = l->loop_cfg = lc;
        l->drv = run->drv;
        l->admin = run->admin;
        l->events = ev;
        l->nevents = run->nevents;
        l->zipf_cum = run->zipf_cum;
        l->opens_at_ms = run->opens_at_ms;
        l->loop_index = i;
        l->next_user = run->next_user + ((uint64_t)i << 40);
        l->next_key = (uint64_t)i << 40;
        l->rng = lc->seed;
        run->loops[run->nloops++] = l;
        int rc = bench_engine_open(l);
        if (rc) {
            bench_fail(run, rc, "loop %u: %.480s", i, l->fatal);
            return rc;
        }
    }
    return 0;
}

void bench__loops_close(bench_run *run)
{
    for (uint32_t i = 0; i < run->nloops; i++) {
        bench_run *l = run->loops[i];
        bench_engine_close(l);
        free(l->events);
        free(l->loop_cfg);
        free(l);
    }
    free(run->loops);
    run->loops = NULL;
    run->nloops = 0;
}

typedef struct loop_job {
    bench_run *run;
    bench_phase ph;
    bool skip; /* no connection or no request of the phase falls to this loop */
    int rc;
    uv_thread_t tid;
} loop_job;

static void loop_main(void *arg)
{
    loop_job *j = arg;
    j->rc = bench__phase_one(j->run, &j->ph);
}

static uint64_t min_nonzero(uint64_t a, uint64_t b)
{
    return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static void merge_counters(bench_counters *d, const bench_counters *s)
{
    d->scheduled += s->scheduled;
    d->sent += s->sent;
    d->answered += s->answered;
    d->carts += s->carts;
    d->holds += s->holds;
    d->held_units += s->held_units;
    d->sold_out += s->sold_out;
    d->confirmed += s->confirmed;
    d->released += s->released;
    d->expired += s->expired;
    d->abandoned += s->abandoned;
    d->replays += s->replays;
    d->unexpected += s->unexpected;
    d->bad_sold_out += s->bad_sold_out;
    d->bad_block_sold_out += s->bad_block_sold_out;
    d->tail_seen += s->tail_seen;
    for (unsigned e = 0; e <= SLOT_E__COUNT; e++)
        d->errors[e] += s->errors[e];
    d->first_send_ns = min_nonzero(d->first_send_ns, s->first_send_ns);
    d->first_sold_out_ns = min_nonzero(d->first_sold_out_ns, s->first_sold_out_ns);
    d->last_reply_ns = max_u64(d->last_reply_ns, s->last_reply_ns);
    d->last_sold_out_ns = max_u64(d->last_sold_out_ns, s->last_sold_out_ns);
    d->backlog_max = max_u64(d->backlog_max, s->backlog_max);
    d->not_on_sale += s->not_on_sale;
    d->extends += s->extends;
    d->extend_limit += s->extend_limit;
    d->partial += s->partial;
    d->returned_units += s->returned_units;
    d->late += s->late;
    d->late_reacquired += s->late_reacquired;
    d->late_units += s->late_units;
    d->late_sold_out += s->late_sold_out;
    d->late_user_limit += s->late_user_limit;
    d->late_held += s->late_held;
}

/* The events' tallies of loop l into run's; l's additive tallies start again from zero
 * (its sell-out marks stay: they steer its next phase). */
static void merge_events(bench_run *run, bench_run *l)
{
    for (uint32_t i = 0; i < run->nevents; i++) {
        bench_event *d = &run->events[i], *s = &l->events[i];
        d->holds += s->holds;
        d->held_units += s->held_units;
        d->out_units += s->out_units;
        d->confirmed_units += s->confirmed_units;
        d->released_units += s->released_units;
        d->expired_units += s->expired_units;
        d->returned_units += s->returned_units;
        d->sold_out += s->sold_out;
        d->sellout_ns = max_u64(d->sellout_ns, s->sellout_ns);
        s->holds = s->held_units = s->out_units = s->confirmed_units = 0;
        s->released_units = s->expired_units = s->returned_units = s->sold_out = 0;
    }
}

/* l's ledger appended to run's, then emptied. false: the run's ledger is full or out of memory. */
static bool merge_ledger(bench_run *run, bench_run *l)
{
    bench_ledger *s = &l->ledger;
    bool ok = true;
    for (size_t i = 0; ok && i < s->n; i++) {
        const bench_hold *h = &s->holds[i];
        ok = bench_ledger_add_hold(&run->ledger, bench_ledger_id(s, i), h->id_len, h->user, h->event, h->qty, h->expect,
                                   h->expires_at_ms) >= 0;
    }
    bench_ledger_free(s);
    return ok;
}

/* The time series, sample by sample (each loop samples every BENCH_SAMPLE_MS from its own start). */
static void merge_series(bench_run *run, const bench_run *l)
{
    size_t n = run->nseries < l->nseries ? run->nseries : l->nseries;
    for (size_t i = 0; i < n; i++) {
        bench_sample *d = &run->series[i];
        const bench_sample *s = &l->series[i];
        d->sent += s->sent;
        d->answered += s->answered;
        d->held += s->held;
        d->sold_out += s->sold_out;
        d->errors += s->errors;
        d->p99_ms = d->p99_ms > s->p99_ms ? d->p99_ms : s->p99_ms;
    }
}

static void merge_loop(bench_run *run, bench_run *l, const bench_phase *ph)
{
    merge_counters(&run->n, &l->n);
    if (ph->measure) {
        slot_hist_merge(run->lat_ns, l->lat_ns);
        slot_hist_merge(run->first_ns, l->first_ns);
        merge_series(run, l);
    }
    merge_events(run, l);
    if (!merge_ledger(run, l))
        bench_fail(run, BENCH_EXIT_FAILED, "the ledger is full (%u holds) or out of memory: use a smaller run",
                   BENCH_LEDGER_MAX);
    if (!run->first_error[0] && l->first_error[0])
        memcpy(run->first_error, l->first_error, sizeof(run->first_error));
    if (!run->stop_reason)
        run->stop_reason = l->stop_reason;
    run->stopped_at_bound |= l->stopped_at_bound;
    run->inflight_total += l->inflight_total;
    run->failovers += l->failovers;
    run->retries += l->retries;
    run->ack_gap_max_ns = max_u64(run->ack_gap_max_ns, l->ack_gap_max_ns);
    run->last_ack_ns = max_u64(run->last_ack_ns, l->last_ack_ns);
    if (l->fatal[0] && !run->fatal[0]) {
        snprintf(run->fatal, sizeof(run->fatal), "loop %u: %.480s", l->loop_index, l->fatal);
        run->fatal_exit = l->fatal_exit;
    }
}

int bench__loops_phase(bench_run *run, const bench_phase *ph)
{
    uint32_t n = run->nloops + 1;
    loop_job *jobs = calloc(n, sizeof(*jobs));
    if (!jobs) {
        bench_fail(run, BENCH_EXIT_FAILED, "out of memory");
        return run->fatal_exit;
    }
    for (uint32_t i = 0; i < n; i++) {
        loop_job *j = &jobs[i];
        j->run = i == 0 ? run : run->loops[i - 1];
        j->ph = *ph;
        /* the whole run's connections: every one of the loop's; fewer: the loop's share of them */
        uint64_t conns = ph->conns >= run->cfg->connections ? j->run->nconns : share(ph->conns, n, i);
        j->ph.conns = (uint32_t)(conns < j->run->nconns ? conns : j->run->nconns);
        j->ph.requests_max = share(ph->requests_max, n, i);
        if (ph->tail != UINT64_MAX)
            j->ph.tail = share(ph->tail, n, i);
        j->skip = j->ph.conns == 0 || j->ph.requests_max == 0;
    }
    int rc = 0;
    for (uint32_t i = 1; i < n && rc == 0; i++)
        if (!jobs[i].skip && (rc = uv_thread_create(&jobs[i].tid, loop_main, &jobs[i])) < 0) {
            bench_fail(run, BENCH_EXIT_FAILED, "loop %u: cannot start its thread: %s", i, uv_strerror(rc));
            jobs[i].skip = true;
        }
    /* loop 0 runs here, even when it has nothing to do: the run's phase state must be reset */
    jobs[0].rc = bench__phase_one(run, &jobs[0].ph);
    for (uint32_t i = 1; i < n; i++)
        if (!jobs[i].skip)
            uv_thread_join(&jobs[i].tid);
    uint64_t sellout_ns = run->n.sellout_ns;
    for (uint32_t i = 1; i < n; i++)
        if (!jobs[i].skip) {
            sellout_ns = max_u64(sellout_ns, jobs[i].run->n.sellout_ns);
            merge_loop(run, jobs[i].run, ph);
        }
    run->n.sellout_ns = 0;
    run->events_sold = 0;
    uint32_t measured = 0;
    for (uint32_t e = 0; e < run->nevents; e++) {
        measured += run->events[e].measured;
        run->events_sold += run->events[e].measured && run->events[e].sellout_ns != 0;
    }
    if (measured > 0 && run->events_sold == measured)
        run->n.sellout_ns = sellout_ns; /* the last loop to see the sell-out */
    for (uint32_t i = 0; i < n && rc == 0; i++)
        rc = jobs[i].skip ? 0 : jobs[i].rc;
    if (rc == 0 && run->fatal[0])
        rc = run->fatal_exit;
    free(jobs);
    return rc;
}
