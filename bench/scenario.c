/*
 * scenario.c — one run from start to end: parse, create the events, open the
 * connections, warm up, (sold-out) sell the event out, measure, verify,
 * report. Every scenario goes through here; they differ in their options,
 * their measured phase (workload.c) and what verification expects.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "driver.h"
#include "drv_redis.h"
#include "drv_slotd.h"
#include "engine.h"
#include "exit.h"
#include "limits.h"
#include "report.h"
#include "room.h"
#include "scenario.h"
#include "seated.h"
#include "util.h"
#include "verify.h"
#include "workload.h"
#include "slot/client.h"

static const bench_driver *driver_of(const bench_config *cfg)
{
#ifdef BENCH_HAVE_REDIS
    if (cfg->target == BENCH_TARGET_REDIS)
        return &bench_driver_redis;
#endif
    (void)cfg;
    return &bench_driver_slotd;
}

/* Zipf popularity of the measured events: running sums of 1/(i+1)^s, normalized. */
static int zipf_init(bench_run *run)
{
    uint32_t n = run->cfg->events;
    if (!(run->zipf_cum = calloc(n, sizeof(double))))
        return -ENOMEM;
    double sum = 0;
    for (uint32_t i = 0; i < n; i++)
        run->zipf_cum[i] = (sum += pow((double)(i + 1), -run->cfg->zipf_exponent));
    for (uint32_t i = 0; i < n; i++)
        run->zipf_cum[i] /= sum;
    run->zipf_cum[n - 1] = 1.0;
    return 0;
}

/* Create one event; it must be new (a replay of the same settings with nothing sold is fine). */
static int create_one(bench_run *run, const bench_event *e, uint32_t ttl_ms, const char *parent, char *err,
                      size_t errlen)
{
    const bench_config *cfg = run->cfg;
    bench_event_spec spec = {
        .parent = parent,
        .name = e->name,
        .capacity = e->capacity,
        .max_per_user = cfg->max_per_user,
        .shards = cfg->shards,
        .hold_ttl_ms = ttl_ms,
        .max_per_request = cfg->qty.max > SLOT_MAX_PER_REQUEST_DEFAULT ? cfg->qty.max : SLOT_MAX_PER_REQUEST_DEFAULT,
        .opens_at_ms = e->measured ? run->opens_at_ms : 0,
        .waitlist_max = cfg->scenario == BENCH_WAITLIST && e->measured ? cfg->waiters : 0,
        .seats = cfg->seats && e->measured ? cfg->seats->def : NULL, /* --seated: the map file's object */
    };
    bench_view v = {0};
    int rc = run->drv->create_event(run->admin, &spec, &v, err, errlen);
    if (rc)
        return rc;
    if (v.held != 0 || v.confirmed != 0 || (v.available != e->capacity && !parent)) {
        snprintf(err, errlen, "event %s exists and already sold %" PRIu64 " units: use a new --event", e->name,
                 v.held + v.confirmed);
        return BENCH_EXIT_FAILED;
    }
    if (v.opens_at_ms != spec.opens_at_ms) {
        snprintf(err, errlen, "event %s opens at %" PRIu64 ", not at %" PRIu64 ": use a new --event", e->name,
                 v.opens_at_ms, spec.opens_at_ms);
        return BENCH_EXIT_FAILED;
    }
    if (v.waitlist_max != spec.waitlist_max || v.waiting != 0) {
        snprintf(err, errlen,
                 "event %s has waitlist_max %" PRIu64 " and %" PRIu64 " waiting, not %" PRIu32
                 " and none: use a new --event",
                 e->name, v.waitlist_max, v.waiting, spec.waitlist_max);
        return BENCH_EXIT_FAILED;
    }
    if (strcmp(v.status, "on_sale") != 0) {
        snprintf(err, errlen, "event %s is %s, not on_sale", e->name, v.status);
        return BENCH_EXIT_FAILED;
    }
    return 0;
}

/* hot-release --allocation N (docs/protocol.md, "Allocations"): N of the new event's units
 * into block BENCH_BLOCK_NAME; then events[0] stands for the public units (capacity - N) and
 * events[1] for the block (N), both holds on the one event. The reply must name a new block of
 * N units, all unused. 0 or an exit status with err. */
static int setup_block(bench_run *run, char *err, size_t errlen)
{
    const bench_config *cfg = run->cfg;
    bench_event *pub = &run->events[0], *blk = &run->events[1];
    if (!run->drv->allocate) {
        snprintf(err, errlen, "--allocation: the %s target has no allocations", run->drv->name);
        return BENCH_EXIT_USAGE;
    }
    uint64_t total = 0, remaining = 0;
    int rc = run->drv->allocate(run->admin, pub->name, BENCH_BLOCK_NAME, cfg->allocation, &total, &remaining, err,
                                errlen);
    if (rc)
        return rc;
    if (total != cfg->allocation || remaining != cfg->allocation) {
        snprintf(err, errlen,
                 "allocate %" PRIu64 " to %s of %s: the block has %" PRIu64 " units, %" PRIu64
                 " unused: use a new --event",
                 cfg->allocation, BENCH_BLOCK_NAME, pub->name, total, remaining);
        return BENCH_EXIT_FAILED;
    }
    snprintf(blk->name, sizeof(blk->name), "%s", pub->name);
    snprintf(blk->allocation, sizeof(blk->allocation), "%s", BENCH_BLOCK_NAME);
    blk->capacity = cfg->allocation;
    pub->capacity = cfg->capacity - cfg->allocation;
    return 0;
}

/* The measured events, then (with --warmup) the warm-up event, all created on the target. */
static int setup_events(bench_run *run, char *err, size_t errlen)
{
    const bench_config *cfg = run->cfg;
    uint32_t n = cfg->events + (cfg->warmup_ms > 0);
    if (!(run->events = calloc(n, sizeof(bench_event))) || zipf_init(run) < 0) {
        snprintf(err, errlen, "out of memory");
        return BENCH_EXIT_FAILED;
    }
    run->nevents = n;
    if (cfg->opens_in_ms > 0)
        run->opens_at_ms = bench_wall_ms() + cfg->opens_in_ms;
    char area[SLOT_EVENT_BYTES_MAX + 1];
    if (cfg->types) { /* --types: the venue NAME and its area NAME-area, of --capacity each, not measured */
        bench_event top = {.capacity = cfg->capacity};
        snprintf(top.name, sizeof(top.name), "%s", cfg->event);
        snprintf(area, sizeof(area), "%.*s-area", BENCH_EVENT_BYTES_MAX, cfg->event);
        int rc = create_one(run, &top, SLOT_HOLD_TTL_MS_MAX, NULL, err, errlen);
        snprintf(top.name, sizeof(top.name), "%s", area);
        if (rc == 0)
            rc = create_one(run, &top, SLOT_HOLD_TTL_MS_MAX, cfg->event, err, errlen);
        if (rc)
            return rc;
    }
    for (uint32_t i = 0; i < n; i++) {
        bench_event *e = &run->events[i];
        bool warm = i == cfg->events;
        if (warm)
            snprintf(e->name, sizeof(e->name), "%.*s-warmup", BENCH_EVENT_BYTES_MAX, cfg->event);
        else if (cfg->scenario == BENCH_MULTI_EVENT || cfg->cart > 1 || cfg->types)
            snprintf(e->name, sizeof(e->name), "%.*s-%u", BENCH_EVENT_BYTES_MAX, cfg->event, (unsigned)(uint16_t)i);
        else
            snprintf(e->name, sizeof(e->name), "%s", cfg->event);
        e->capacity = warm ? SLOT_CAPACITY_MAX : cfg->capacity;
        if (cfg->types && !warm) /* the types' capacities add up to twice the venue's */
            e->capacity = 2 * cfg->capacity / cfg->types + 1;
        e->measured = !warm;
        if (cfg->allocation && i == 1) /* the block: allocated below, on event 0 of the same name */
            continue;
        /* Churn's and the waitlist's holds expire by design; nothing else may expire before verification counted it. */
        bool expiring = cfg->scenario == BENCH_CHURN || cfg->scenario == BENCH_WAITLIST;
        uint32_t ttl_ms = expiring && !warm ? cfg->hold_ttl_ms : SLOT_HOLD_TTL_MS_MAX;
        int rc = create_one(run, e, ttl_ms, cfg->types && !warm ? area : NULL, err, errlen);
        if (rc)
            return rc;
    }
    return cfg->allocation ? setup_block(run, err, errlen) : 0;
}

/* Stats of the target (slotd: the stats op), and into node (cap bytes) the node
 * that answered ("" when the driver does not say). Failure is reported, not fatal. */
static json_t *stats_now(bench_run *run, char *node, size_t cap)
{
    json_t *s = NULL;
    char err[512];
    if (run->drv->stats(run->admin, &s, err, sizeof(err)) != 0)
        fprintf(stderr, "slot-bench: %s\n", err);
    snprintf(node, cap, "%s", run->drv->node ? run->drv->node(run->admin) : "");
    return s;
}

/* Waitlist: the waiters join the sold-out event (in order, on one connection), then every
 * waiter and prefill hold gets its session. 0 or an exit status (run->fatal set). */
static int waitlist_setup(bench_run *run)
{
    if (bench_wl_init(run) < 0) {
        bench_fail(run, BENCH_EXIT_FAILED, "out of memory for %u waiters", run->cfg->waiters);
        return run->fatal_exit;
    }
    bench_phase join = bench_wl_join_phase(run);
    int rc = bench_engine_phase(run, &join);
    if (rc == 0 && bench_wl_sessions_init(run) < 0)
        bench_fail(run, BENCH_EXIT_FAILED, "out of memory for %u sessions", run->cfg->waiters + run->wl.nprefill);
    return run->fatal[0] ? run->fatal_exit : rc;
}

/* Warm-up, prefill, the measured phase; then (several --host values) the admin
 * connection moves to the primary, for the 'after' stats and verification.
 * *nodes_differ: before and after stats came from different nodes. 0 or an exit status. */
static int load(bench_run *run, json_t **before, json_t **after, bool *nodes_differ, const char **stopped)
{
    const bench_config *cfg = run->cfg;
    int rc = bench_engine_open(run);
    if (rc == 0 && cfg->scenario == BENCH_CHURN && bench_sessions_init(run) < 0)
        bench_fail(run, BENCH_EXIT_FAILED, "out of memory for %u sessions", cfg->connections * cfg->pipeline);
    bench_phase warm = bench_warmup_phase(run), prefill = bench_prefill_phase(run), main = bench_workload_phase(run);
    if (rc == 0 && cfg->warmup_ms > 0)
        rc = bench_engine_phase(run, &warm);
    if (rc == 0 && (cfg->scenario == BENCH_SOLD_OUT || cfg->scenario == BENCH_WAITLIST)) {
        rc = bench_engine_phase(run, &prefill);
        if (rc == 0 && run->events_sold == 0)
            bench_fail(run, BENCH_EXIT_FAILED, "the prefill could not sell the event out (stopped: %s)",
                       run->stop_reason ? run->stop_reason : "-");
    }
    if (rc == 0 && !run->fatal[0] && cfg->scenario == BENCH_WAITLIST)
        rc = waitlist_setup(run);
    if (run->fatal[0])
        return run->fatal_exit;
    char node_before[SLOT_CLIENT_ADDR_BYTES_MAX + 1], node_after[SLOT_CLIENT_ADDR_BYTES_MAX + 1];
    *before = stats_now(run, node_before, sizeof(node_before));
    if (run->opens_at_ms > 0)
        bench_sleep_until_wall_ms(run->opens_at_ms); /* every connection's first hold goes at the opening */
    if (run->opens_at_ms > 0)
        run->opening_lag_ms = bench_wall_ms() - run->opens_at_ms;
    run->wl.start_ms = bench_wall_ms();
    rc = bench_engine_phase(run, &main);
    char err[512];
    int prc = run->drv->to_primary && !run->fatal[0] ? run->drv->to_primary(run->admin, err, sizeof(err)) : 0;
    if (prc) {
        bench_fail(run, prc, "before verification: %s", err);
        rc = rc ? rc : prc;
    }
    *stopped = run->fatal[0] ? run->fatal : run->stop_reason ? run->stop_reason : "-";
    *after = stats_now(run, node_after, sizeof(node_after));
    *nodes_differ = strcmp(node_before, node_after) != 0;
    return rc;
}

/* Reports on stdout and into the files asked for. 0, or BENCH_EXIT_FAILED when a file could not be written. */
static int report(bench_report *rep)
{
    const bench_config *cfg = rep->run->cfg;
    bench_report_numbers(rep);
    bench_report_print(rep, stdout);
    fflush(stdout);
    int bad = 0;
    if (cfg->json_path && bench_report_json(rep, cfg->json_path) < 0)
        bad = 1;
    if (cfg->csv_path && bench_report_csv(rep, cfg->csv_path) < 0)
        bad = 1;
    if (cfg->svg_path && bench_report_svg(rep, cfg->svg_path) < 0)
        bad = 1;
    return bad ? BENCH_EXIT_FAILED : 0;
}

/* Load, verify, report; the run and its admin connection are set up. */
static int run_and_report(bench_run *run, json_t *server)
{
    json_t *before = NULL, *after = NULL;
    const char *stopped = "-";
    bench_verdict *verdict = calloc(1, sizeof(*verdict));
    if (!verdict)
        return BENCH_EXIT_FAILED;
    bool nodes_differ = false;
    int rc = load(run, &before, &after, &nodes_differ, &stopped);
    bench_counters measured = run->n;
    char stop_copy[sizeof(run->fatal)];
    snprintf(stop_copy, sizeof(stop_copy), "%s", stopped);
    int vrc = rc == 0 ? bench_verify(run, verdict) : rc;
    if (vrc == 0 && verdict->nproblems)
        vrc = BENCH_EXIT_FAILED;
    run->n = measured;
    bench_report rep = {.run = run,
                        .n = &measured,
                        .verdict = verdict,
                        .server = server,
                        .stats_before = before,
                        .stats_after = after,
                        .stats_nodes_differ = nodes_differ,
                        .stopped = stop_copy};
    int wrc = report(&rep);
    if (run->fatal[0])
        fprintf(stderr, "slot-bench: %s: %s\n", run->cfg->name, run->fatal);
    if (!verdict->ran)
        printf("verification: not run: %s\n", run->fatal[0] ? run->fatal : "the load did not complete");
    else if (run->fatal[0])
        printf("verification: not completed: %s\n", run->fatal);
    else
        printf("verification: %s%s\n", verdict->nproblems ? "FAILED: " : "passed", verdict->problems);
    json_decref(before);
    json_decref(after);
    free(verdict);
    return vrc ? vrc : wrc;
}

int bench_run_scenario(bench_scenario scenario, int argc, char **argv)
{
    bench_config cfg;
    int rc = bench_config_parse(&cfg, scenario, argc, argv);
    if (rc >= 0)
        return rc;
    if (scenario == BENCH_WAITING_ROOM)
        return bench_room_run(&cfg); /* its own flow (room.c): joins, admissions, holds with grants */
    bench_run *run = calloc(1, sizeof(*run));
    if (!run)
        return BENCH_EXIT_FAILED;
    run->cfg = &cfg;
    run->drv = driver_of(&cfg);
    run->next_user = cfg.users; /* the pool is u0..u<users-1>; new users come after it */
    char err[512] = "";
    json_t *server = NULL;
    if (bench_seated_open(run) < 0) {
        bench_seated_free(run, &cfg);
        free(run);
        fprintf(stderr, "slot-bench: %s: out of memory for the seats\n", cfg.name);
        return BENCH_EXIT_FAILED;
    }
    if ((rc = run->drv->admin_open(&cfg, &run->admin, err, sizeof(err))) == 0 &&
        (rc = run->drv->server_info(run->admin, &server, err, sizeof(err))) == 0 && scenario != BENCH_PING)
        rc = setup_events(run, err, sizeof(err)); /* ping makes no event */
    if (rc) {
        fprintf(stderr, "slot-bench: %s: %s\n", cfg.name, err);
    } else {
        rc = run_and_report(run, server);
        bench_engine_close(run);
    }
    json_decref(server);
    run->drv->admin_close(run->admin);
    free(run->events);
    free(run->zipf_cum);
    bench_seated_free(run, &cfg);
    free(run);
    return rc;
}
