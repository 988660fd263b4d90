/*
 * engine.c — slot-bench's load engine: one libuv loop, the connections and
 * their rings of tickets, and the timers of a phase (its time bound, the
 * drain after the last send, the 100 ms samples, the progress line, think
 * times, the open-loop schedule).
 *
 * Requests queued during a loop turn are pushed out once at its end
 * (flush_dirty), so a connection's pipeline goes out in one write.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "engine.h"
#include "exit.h"
#include "ledger.h"
#include "limits.h"
#include "util.h"
#include "slot/assert.h"

static void flush_dirty(bench_run *run);
static void phase_end(bench_run *run);
static void stop_at_bound(bench_run *run, const char *reason);
static void drain_cb(uv_timer_t *t);

#define RUN_TIMERS_N 6

/* The run's timers, for what is done to all of them. */
static void run_timers(bench_run *run, uv_timer_t *timers[RUN_TIMERS_N])
{
    uv_timer_t *all[RUN_TIMERS_N] = {&run->bound_timer,    &run->drain_timer, &run->sample_timer,
                                     &run->progress_timer, &run->think_timer, &run->tick_timer};
    memcpy(timers, all, sizeof(all));
}

void bench_fail(bench_run *run, int exit_code, const char *fmt, ...)
{
    if (run->fatal[0] == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(run->fatal, sizeof(run->fatal), fmt, ap);
        va_end(ap);
        run->fatal_exit = exit_code;
    }
    run->stop_sending = true;
    uv_stop(&run->loop);
}

/* ---------------------------------------------------------------- sending */

/* Send the ticket at the end of c's in-flight part of the ring. */
static bool send_slot(bench_conn *c)
{
    bench_run *run = c->run;
    bench_ticket *t = &c->ring[(c->head + c->inflight) % c->ring_cap];
    if (run->drv->send(c, t) < 0) {
        bench_fail(run, BENCH_EXIT_FAILED, "connection %u: a request did not fit its buffer", c->index);
        return false;
    }
    c->inflight++;
    run->inflight_total++;
    if (run->n.sent++ == 0)
        run->n.first_send_ns = uv_hrtime();
    if (!c->dirty) {
        c->dirty = true;
        run->dirty[run->ndirty++] = c->index;
    }
    if (run->n.sent >= run->phase->requests_max)
        stop_at_bound(run, "the request bound (--requests) was reached");
    return true;
}

bool bench_send(bench_conn *c, const bench_ticket *t)
{
    bench_run *run = c->run;
    uint32_t used = c->inflight + c->backlog;
    if (used >= c->ring_cap) {
        bench_stop(run, "the target fell behind the schedule by more than the bench's backlog");
        return false;
    }
    bench_ticket *slot = &c->ring[(c->head + used) % c->ring_cap];
    *slot = *t;
    if (c->backlog == 0 && c->inflight < run->phase->pipeline) {
        if (slot->t_ns == 0)
            slot->t_ns = uv_hrtime();
        return send_slot(c);
    }
    c->backlog++;
    run->backlog_total++;
    if (c->backlog > run->n.backlog_max)
        run->n.backlog_max = c->backlog;
    return true;
}

/* Closed loop: top c up to the phase's pipeline. Open loop: send what waits. */
static void pump(bench_conn *c)
{
    bench_run *run = c->run;
    const bench_phase *ph = run->phase;
    if (ph->rate_per_s > 0) {
        while (c->backlog > 0 && c->inflight < ph->pipeline && !run->stop_sending) {
            c->backlog--;
            run->backlog_total--;
            if (!send_slot(c))
                return;
        }
        return;
    }
    bench_ticket t;
    while (!run->stop_sending && c->inflight < ph->pipeline && ph->next(run, c, &t)) {
        t.t_ns = 0;
        if (!bench_send(c, &t))
            return;
    }
}

static void flush_dirty(bench_run *run)
{
    for (uint32_t i = 0; i < run->ndirty; i++) {
        bench_conn *c = &run->conns[run->dirty[i]];
        c->dirty = false;
        run->drv->flush(c);
    }
    run->ndirty = 0;
}

void bench_turn_end(bench_run *run)
{
    flush_dirty(run);
}

/* ---------------------------------------------------------------- answers */

void bench_deliver(bench_conn *c, const bench_result *r, uint64_t now_ns)
{
    bench_run *run = c->run;
    if (c->inflight == 0 || !run->in_phase) {
        bench_fail(run, BENCH_EXIT_FAILED, "connection %u: an answer to no request", c->index);
        return;
    }
    bench_ticket t = c->ring[c->head];
    c->head = (c->head + 1) % c->ring_cap;
    c->inflight--;
    run->inflight_total--;
    run->n.answered++;
    run->n.last_reply_ns = now_ns;
    if (run->phase->measure) {
        uint64_t lat = now_ns > t.t_ns ? now_ns - t.t_ns : 0;
        slot_hist_record(run->lat_ns, lat);
        slot_hist_record(run->win_ns, lat);
        if (t.t_ns < run->n.first_send_ns + UINT64_C(1000000000))
            slot_hist_record(run->first_ns, lat);
    }
    if (run->phase->measure && r->ok && !bench_op_is_read(t.op)) { /* an acknowledged write */
        uint64_t since = run->last_ack_ns ? run->last_ack_ns : run->phase_start_ns;
        if (now_ns > since && now_ns - since > run->ack_gap_max_ns)
            run->ack_gap_max_ns = now_ns - since;
        run->last_ack_ns = now_ns;
    }
    run->phase->on_result(run, c, &t, r, now_ns);
    if (run->fatal[0])
        return;
    pump(c);
    if (!run->stop_sending && run->phase->rate_per_s <= 0 && run->inflight_total == 0 && run->heap_n == 0)
        bench_stop(run, "nothing more to send"); /* the ledger check asked about every hold */
    if (run->stop_sending && run->inflight_total == 0)
        phase_end(run);
}

void bench_conn_up(bench_conn *c)
{
    bench_run *run = c->run;
    SLOT_ASSERT(!c->up);
    c->up = true;
    if (++run->nup == run->nconns)
        uv_stop(&run->loop);
}

/* ---------------------------------------------------------------- stopping */

void bench_stop(bench_run *run, const char *reason)
{
    if (!run->in_phase || run->phase_over)
        return;
    if (!run->stop_sending) {
        run->stop_sending = true;
        run->stop_reason = reason;
        uv_timer_stop(&run->bound_timer);
        uv_timer_stop(&run->tick_timer);
        for (uint32_t i = 0; i < run->nconns; i++)
            run->conns[i].backlog = 0; /* due, never sent: the report counts them (scheduled - sent) */
        run->backlog_total = 0;
        uv_timer_start(&run->drain_timer, drain_cb, BENCH_DRAIN_MS, 0);
    }
    if (run->inflight_total == 0)
        phase_end(run);
}

/* A stop by the phase's own bounds (time, request count): verification then
 * checks what was done and asks for no sell-out (verify.c). */
static void stop_at_bound(bench_run *run, const char *reason)
{
    if (run->in_phase && !run->phase_over && !run->stop_sending)
        run->stopped_at_bound = true;
    bench_stop(run, reason);
}

static void take_sample(bench_run *run, uint64_t now_ns);

static void phase_end(bench_run *run)
{
    if (run->phase_over)
        return;
    run->phase_over = true;
    if (run->phase->measure)
        take_sample(run, uv_hrtime());
    uv_timer_t *timers[RUN_TIMERS_N];
    run_timers(run, timers);
    for (size_t i = 0; i < RUN_TIMERS_N; i++)
        uv_timer_stop(timers[i]);
    run->think_due_ns = 0;
    run->heap_n = 0; /* sessions that were thinking are done: only the measured phase has them */
    uv_stop(&run->loop);
}

static void bound_cb(uv_timer_t *t)
{
    bench_run *run = t->data;
    stop_at_bound(run, run->phase->measure ? "the time bound (--duration) was reached" : "its time was up");
    flush_dirty(run);
}

static void drain_cb(uv_timer_t *t)
{
    bench_run *run = t->data;
    bench_fail(run, BENCH_EXIT_FAILED, "%" PRIu64 " requests were not answered %d s after the last send",
               run->inflight_total, BENCH_DRAIN_MS / 1000);
}

/* ---------------------------------------------------------------- samples and progress */

uint64_t bench_units_left(const bench_run *run)
{
    uint64_t left = 0;
    for (uint32_t i = 0; i < run->nevents; i++) {
        const bench_event *e = &run->events[i];
        uint64_t used = e->out_units + e->confirmed_units;
        if (e->measured)
            left += used < e->capacity ? e->capacity - used : 0;
    }
    return left;
}

/* Churn: abandoned holds whose expires_at passed no longer count as ours. */
static void expire_abandoned(bench_run *run)
{
    uint64_t now_ms = bench_wall_ms();
    while (run->abandoned_head < run->nabandoned) {
        const bench_hold *h = &run->ledger.holds[run->abandoned[run->abandoned_head]];
        if (h->expires_at_ms > now_ms)
            break;
        bench_event *e = &run->events[h->event];
        e->out_units -= h->qty <= e->out_units ? h->qty : e->out_units;
        run->abandoned_head++;
    }
}

static void take_sample(bench_run *run, uint64_t now_ns)
{
    expire_abandoned(run);
    if (run->nseries == run->series_cap) {
        size_t cap = run->series_cap ? run->series_cap * 2 : 1024;
        bench_sample *s = realloc(run->series, cap * sizeof(*s));
        if (!s)
            return; /* the series stops growing; the run goes on */
        run->series = s;
        run->series_cap = cap;
    }
    uint64_t errors = 0;
    for (unsigned e = 0; e <= SLOT_E__COUNT; e++)
        errors += run->n.errors[e];
    bench_sample *s = &run->series[run->nseries++];
    s->t_ms = (uint32_t)((now_ns - run->phase_start_ns) / 1000000u);
    s->sent = run->n.sent;
    s->answered = run->n.answered;
    s->held = run->n.holds;
    s->sold_out = run->n.sold_out;
    s->errors = errors;
    s->units_left = bench_units_left(run);
    s->p99_ms = run->win_ns->count ? (double)slot_hist_percentile(run->win_ns, 99) / 1e6 : 0;
    slot_hist_reset(run->win_ns);
}

static void sample_cb(uv_timer_t *t)
{
    take_sample(t->data, uv_hrtime());
}

static void progress_cb(uv_timer_t *t)
{
    bench_run *run = t->data;
    uint64_t now_ns = uv_hrtime();
    double dt_s = (double)(now_ns - run->last_progress_ns) / 1e9;
    double rps = dt_s > 0 ? (double)(run->n.answered - run->last_progress_answered) / dt_s : 0;
    run->last_progress_ns = now_ns;
    run->last_progress_answered = run->n.answered;
    uint64_t total = 0;
    for (uint32_t i = 0; i < run->nevents; i++)
        total += run->events[i].measured ? run->events[i].capacity : 0;
    uint64_t left = bench_units_left(run);
    double sold_pct = total ? 100.0 * (double)(total - left) / (double)total : 100.0;
    const bench_sample *s = run->nseries ? &run->series[run->nseries - 1] : NULL;
    fprintf(stderr, "\r\033[K%s %.1f s: %.1f%% sold, %.0f requests/s, p99 %.3f ms, %" PRIu64 " errors", run->cfg->name,
            (double)(now_ns - run->phase_start_ns) / 1e9, sold_pct, rps, s ? s->p99_ms : 0.0, s ? s->errors : 0);
}

/* ---------------------------------------------------------------- think times (a min-heap) */

static void heap_push(bench_run *run, uint64_t due_ns, uint32_t s)
{
    uint32_t i = run->heap_n++;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (run->heap[p].due_ns <= due_ns)
            break;
        run->heap[i] = run->heap[p];
        i = p;
    }
    run->heap[i] = (bench_heap_item){due_ns, s};
}

static bench_heap_item heap_pop(bench_run *run)
{
    bench_heap_item top = run->heap[0], last = run->heap[--run->heap_n];
    uint32_t i = 0;
    for (;;) {
        uint32_t l = 2 * i + 1, m = i;
        if (l < run->heap_n && run->heap[l].due_ns < last.due_ns)
            m = l;
        if (l + 1 < run->heap_n && run->heap[l + 1].due_ns < (m == i ? last.due_ns : run->heap[m].due_ns))
            m = l + 1;
        if (m == i)
            break;
        run->heap[i] = run->heap[m];
        i = m;
    }
    run->heap[i] = last;
    return top;
}

static void think_cb(uv_timer_t *t);

static void think_arm(bench_run *run)
{
    if (run->heap_n == 0 || run->phase_over)
        return;
    uint64_t due_ns = run->heap[0].due_ns;
    if (run->think_due_ns != 0 && run->think_due_ns <= due_ns)
        return;
    uint64_t now_ns = uv_hrtime();
    uint64_t delay_ms = due_ns > now_ns ? (due_ns - now_ns + 999999) / 1000000 : 0;
    run->think_due_ns = due_ns;
    uv_timer_start(&run->think_timer, think_cb, delay_ms, 0);
}

static void make_ready(bench_run *run, uint32_t s)
{
    bench_session *ss = &run->sessions[s];
    bench_conn *c = &run->conns[ss->conn];
    ss->state = BENCH_SESSION_READY;
    c->ready[c->nready++] = s;
}

void bench_think(bench_run *run, uint32_t s, uint32_t delay_ms)
{
    if (delay_ms == 0) {
        make_ready(run, s);
        return;
    }
    run->sessions[s].state = BENCH_SESSION_THINKING;
    heap_push(run, uv_hrtime() + (uint64_t)delay_ms * 1000000u, s);
    think_arm(run);
}

static void think_cb(uv_timer_t *t)
{
    bench_run *run = t->data;
    run->think_due_ns = 0;
    uint64_t now_ns = uv_hrtime() + 500000; /* within half a timer tick counts as due */
    while (run->heap_n > 0 && run->heap[0].due_ns <= now_ns) {
        uint32_t s = heap_pop(run).session;
        make_ready(run, s);
        pump(&run->conns[run->sessions[s].conn]);
    }
    think_arm(run);
    flush_dirty(run);
    if (run->stop_sending && run->inflight_total == 0)
        phase_end(run);
}

/* ---------------------------------------------------------------- open loop */

static void tick_cb(uv_timer_t *t)
{
    bench_run *run = t->data;
    const bench_phase *ph = run->phase;
    uint64_t now_ns = uv_hrtime();
    double per_ns = ph->rate_per_s / 1e9;
    uint64_t due = (uint64_t)((double)(now_ns - run->open_t0_ns) * per_ns) + 1; /* requests due by now */
    if (due > ph->requests_max)
        due = ph->requests_max;
    while (run->open_next < due && !run->stop_sending) {
        bench_conn *c = &run->conns[run->open_next % ph->conns];
        bench_ticket tk;
        if (!ph->next(run, c, &tk))
            break;
        tk.t_ns = run->open_t0_ns + (uint64_t)((double)run->open_next / per_ns);
        run->n.scheduled++;
        run->open_next++;
        if (!bench_send(c, &tk))
            break;
    }
    flush_dirty(run);
}

/* ---------------------------------------------------------------- phases */

static void start_timers(bench_run *run, const bench_phase *ph)
{
    uv_timer_start(&run->bound_timer, bound_cb, ph->duration_ms, 0);
    if (ph->measure) {
        uv_timer_start(&run->sample_timer, sample_cb, BENCH_SAMPLE_MS, BENCH_SAMPLE_MS);
        if (run->progress_tty)
            uv_timer_start(&run->progress_timer, progress_cb, BENCH_PROGRESS_MS, BENCH_PROGRESS_MS);
    }
    if (ph->rate_per_s > 0)
        uv_timer_start(&run->tick_timer, tick_cb, 0, BENCH_OPEN_TICK_MS);
}

int bench_engine_phase(bench_run *run, const bench_phase *ph)
{
    struct rusage before, after;
    bool cpu = ph->measure && run->loop_index == 0 && getrusage(RUSAGE_SELF, &before) == 0;
    int rc = run->nloops > 0 && !ph->one_loop ? bench__loops_phase(run, ph) : bench__phase_one(run, ph);
    if (cpu && getrusage(RUSAGE_SELF, &after) == 0)
        run->cpu_s = (double)(after.ru_utime.tv_sec - before.ru_utime.tv_sec + after.ru_stime.tv_sec -
                              before.ru_stime.tv_sec) +
                     (double)(after.ru_utime.tv_usec - before.ru_utime.tv_usec + after.ru_stime.tv_usec -
                              before.ru_stime.tv_usec) /
                         1e6;
    return rc;
}

int bench__phase_one(bench_run *run, const bench_phase *ph)
{
    SLOT_ASSERT(ph->conns >= 1 && ph->conns <= run->nconns);
    SLOT_ASSERT(ph->pipeline >= 1 && ph->pipeline <= run->conns[0].ring_cap);
    if (run->fatal[0])
        return run->fatal_exit;
    memset(&run->n, 0, sizeof(run->n));
    run->phase = ph;
    run->in_phase = true;
    run->stop_sending = run->phase_over = false;
    run->stop_reason = NULL;
    run->stopped_at_bound = false;
    run->phase_start_ns = run->last_progress_ns = uv_hrtime();
    run->open_t0_ns = run->phase_start_ns;
    run->open_next = 0;
    run->last_progress_answered = 0;
    if (ph->measure) {
        slot_hist_reset(run->lat_ns);
        slot_hist_reset(run->win_ns);
        slot_hist_reset(run->first_ns);
        run->nseries = 0;
        run->last_ack_ns = 0; /* the time without an acknowledged write counts from the phase's start */
    }
    start_timers(run, ph);
    run->think_due_ns = 0;
    think_arm(run); /* sessions may think already (waitlist: set up between phases) */
    for (uint32_t i = 0; ph->rate_per_s <= 0 && i < ph->conns && !run->stop_sending; i++)
        pump(&run->conns[i]);
    flush_dirty(run);
    if (ph->rate_per_s <= 0 && run->inflight_total == 0 && run->heap_n == 0)
        bench_stop(run, "nothing to send");
    if (!run->phase_over && !run->fatal[0])
        uv_run(&run->loop, UV_RUN_DEFAULT);
    if (run->progress_tty && ph->measure)
        fprintf(stderr, "\r\033[K");
    run->in_phase = false;
    return run->fatal[0] ? run->fatal_exit : 0;
}

/* ---------------------------------------------------------------- open and close */

static void open_timeout_cb(uv_timer_t *t)
{
    bench_run *run = t->data;
    bench_fail(run, BENCH_EXIT_CONNECTION, "only %u of %u connections came up within %d s", run->nup, run->nconns,
               BENCH_CONNECT_TIMEOUT_MS / 1000);
}

/* Rings: the pipeline (or the verification's) plus, open loop, the backlog. */
static uint32_t ring_cap_of(const bench_config *cfg)
{
    uint32_t cap = cfg->pipeline > BENCH_VERIFY_PIPELINE ? cfg->pipeline : BENCH_VERIFY_PIPELINE;
    if (cfg->scenario == BENCH_OPEN_LOOP) {
        double per_conn = cfg->rate_per_s / cfg->connections;
        uint32_t backlog = per_conn < BENCH_BACKLOG_MIN   ? BENCH_BACKLOG_MIN
                           : per_conn > BENCH_BACKLOG_MAX ? BENCH_BACKLOG_MAX
                                                          : (uint32_t)per_conn;
        cap += backlog;
    }
    return cap;
}

static int alloc_conns(bench_run *run)
{
    const bench_config *cfg = run->cfg;
    run->nconns = run->conns_own ? run->conns_own : cfg->connections;
    run->conns = calloc(run->nconns, sizeof(bench_conn));
    run->dirty = calloc(run->nconns, sizeof(uint32_t));
    run->lat_ns = malloc(sizeof(slot_hist));
    run->win_ns = malloc(sizeof(slot_hist));
    run->first_ns = malloc(sizeof(slot_hist));
    if (!run->conns || !run->dirty || !run->lat_ns || !run->win_ns || !run->first_ns)
        return -ENOMEM;
    uint32_t cap = ring_cap_of(cfg);
    for (uint32_t i = 0; i < run->nconns; i++) {
        bench_conn *c = &run->conns[i];
        c->run = run;
        c->index = i;
        c->ring_cap = cap;
        c->rng = cfg->seed ^ ((uint64_t)(i + 1) * 0xD1B54A32D192ED03ull);
        c->ring = calloc(cap, sizeof(bench_ticket));
        if (!c->ring)
            return -ENOMEM;
    }
    return 0;
}

static void init_timers(bench_run *run)
{
    uv_timer_t *timers[RUN_TIMERS_N];
    run_timers(run, timers);
    for (size_t i = 0; i < RUN_TIMERS_N; i++) {
        uv_timer_init(&run->loop, timers[i]);
        timers[i]->data = run;
    }
}

int bench_engine_open(bench_run *run)
{
    uv_loop_init(&run->loop);
    init_timers(run);
    run->progress_tty = run->loop_index == 0 && isatty(STDERR_FILENO) == 1;
    if (run->cfg->threads > 1 && run->loop_index == 0)
        run->conns_own = run->cfg->connections / run->cfg->threads + (run->cfg->connections % run->cfg->threads > 0);
    if (alloc_conns(run) < 0) {
        bench_fail(run, BENCH_EXIT_FAILED, "out of memory for %u connections", run->cfg->connections);
        return run->fatal_exit;
    }
    uv_timer_start(&run->bound_timer, open_timeout_cb, BENCH_CONNECT_TIMEOUT_MS * 2, 0);
    if (run->drv->open(run) == 0 && run->nup < run->nconns)
        uv_run(&run->loop, UV_RUN_DEFAULT);
    uv_timer_stop(&run->bound_timer);
    if (!run->fatal[0] && run->nup < run->nconns)
        bench_fail(run, BENCH_EXIT_CONNECTION, "the connections did not come up");
    if (!run->fatal[0] && run->cfg->threads > 1 && run->loop_index == 0)
        return bench__loops_open(run);
    return run->fatal[0] ? run->fatal_exit : 0;
}

void bench_engine_close(bench_run *run)
{
    bench__loops_close(run);
    if (run->conns)
        run->drv->close(run);
    uv_timer_t *timers[RUN_TIMERS_N];
    run_timers(run, timers);
    for (size_t i = 0; i < RUN_TIMERS_N; i++)
        uv_close((uv_handle_t *)timers[i], NULL);
    /* A uv_stop left over from the last phase (bench_stop, when that phase's loop had already
     * returned: the ping scenario's request bound) ends the first uv_run before the close
     * callbacks ran; the loop closes once they have (a bounded number of runs). */
    uv_run(&run->loop, UV_RUN_DEFAULT);
    for (int i = 0; i < 8 && uv_loop_close(&run->loop) == UV_EBUSY; i++)
        uv_run(&run->loop, UV_RUN_DEFAULT);
    for (uint32_t i = 0; run->conns && i < run->nconns; i++) {
        free(run->conns[i].ring);
        free(run->conns[i].ready);
    }
    free(run->conns);
    free(run->dirty);
    free(run->lat_ns);
    free(run->win_ns);
    free(run->first_ns);
    free(run->series);
    free(run->sessions);
    free(run->heap);
    free(run->abandoned);
    free(run->wl.w);
    bench_ledger_free(&run->ledger);
}
