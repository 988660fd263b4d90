/* report.c — the summary table, --json and --csv, and the machine facts. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "engine.h"
#include "report.h"
#include "seated.h"
#include "verify.h"
#include "workload.h"
#include "slot_config.h"

static double ns_s(uint64_t ns)
{
    return (double)ns / 1e9;
}

static double pct_ms(const slot_hist *h, double pct)
{
    return h->count ? (double)slot_hist_percentile(h, pct) / 1e6 : 0;
}

void bench_report_numbers(bench_report *r)
{
    const bench_counters *n = r->n;
    const slot_hist *h = r->run->lat_ns;
    r->run_s = n->last_reply_ns > n->first_send_ns ? ns_s(n->last_reply_ns - n->first_send_ns) : 0;
    r->sellout_s = n->sellout_ns > n->first_send_ns ? ns_s(n->sellout_ns - n->first_send_ns) : 0;
    r->requests_per_s = r->run_s > 0 ? (double)n->answered / r->run_s : 0;
    double hold_s = r->sellout_s > 0 ? r->sellout_s : r->run_s;
    r->holds_per_s = hold_s > 0 ? (double)n->holds / hold_s : 0;
    double so_s = n->last_sold_out_ns > n->first_sold_out_ns ? ns_s(n->last_sold_out_ns - n->first_sold_out_ns) : 0;
    r->sold_out_per_s = so_s > 0 ? (double)n->sold_out / so_s : 0;
    r->p50_ms = pct_ms(h, 50);
    r->p90_ms = pct_ms(h, 90);
    r->p99_ms = pct_ms(h, 99);
    r->p999_ms = pct_ms(h, 99.9);
    r->max_ms = pct_ms(h, 100);
    r->mean_ms = slot_hist_mean(h) / 1e6;
    r->first_p50_ms = pct_ms(r->run->first_ns, 50);
    r->first_p99_ms = pct_ms(r->run->first_ns, 99);
    r->first_max_ms = pct_ms(r->run->first_ns, 100);
}

/* ---------------------------------------------------------------- the summary table */

/* hot-release --allocation: the holds/s of one part (events[0] the public units, events[1]
 * the block) until it sold out, or over the run when it did not; its sell-out time into *sell_s
 * (0: not sold out). */
static double part_rate(const bench_report *r, const bench_event *e, double *sell_s)
{
    uint64_t t0 = r->n->first_send_ns;
    *sell_s = e->sellout_ns > t0 ? ns_s(e->sellout_ns - t0) : 0;
    double s = *sell_s > 0 ? *sell_s : r->run_s;
    return s > 0 ? (double)e->holds / s : 0;
}

static void print_parts(const bench_report *r, FILE *f)
{
    const bench_config *c = r->run->cfg;
    for (uint32_t i = 0; i < 2; i++) {
        const bench_event *e = &r->run->events[i];
        double sell_s, rate = part_rate(r, e, &sell_s);
        fprintf(f, "  %-17s %" PRIu64 " holds (%" PRIu64 " of %" PRIu64 " units), %" PRIu64 " sold_out: %.0f holds/s",
                i ? "presale block" : "public sale", e->holds, e->held_units, e->capacity, e->sold_out, rate);
        if (sell_s > 0)
            fprintf(f, " until its sell-out at %.3f s", sell_s);
        if (i)
            fprintf(f, "; %u of %u connections, block \"%s\"", c->presale_conns, c->connections, e->allocation);
        fprintf(f, "\n");
    }
}

static const char *jstr(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "?";
}

static void print_head(const bench_report *r, FILE *f)
{
    const bench_config *c = r->run->cfg;
    fprintf(f, "slot-bench %s %s -> %s %s at %s:%u\n", c->name, SLOT_VERSION, r->run->drv->name,
            jstr(r->server, "version"), c->host, (unsigned)c->port);
    if (c->scenario == BENCH_PING)
        fprintf(f, "  setup             %s, %u connections x pipeline %u, %u thread%s\n",
                c->target == BENCH_TARGET_REDIS ? "PING" : "hello (slotd has no ping op)", c->connections, c->pipeline,
                c->threads, c->threads == 1 ? "" : "s");
    else
        fprintf(f,
                "  setup             %s%s, capacity %" PRIu64
                "%s, %u shards, qty %s, %u connections x pipeline %u, seed %" PRIu64 "\n",
                c->scenario == BENCH_MULTI_EVENT || c->cart > 1 ? "events " : "event ", c->event, c->capacity,
                c->scenario == BENCH_MULTI_EVENT || c->cart > 1 ? " each" : "", c->shards, c->qty.text, c->connections,
                c->pipeline, c->seed);
    if (c->scenario == BENCH_MULTI_EVENT)
        fprintf(f, "                    %u events, Zipf s=%.2f\n", c->events, c->zipf_exponent);
    if (c->max_per_user || c->users)
        fprintf(f, "                    max_per_user %" PRIu64 ", user pool %" PRIu64 "\n", c->max_per_user, c->users);
    fprintf(f, "  stopped           %s\n", r->stopped);
}

/* Waitlist: the waits of the first, median and last waiter offered a hold, in join order
 * (wait[0..2], ms; positions in pos[0..2], 0 when none was), their count, and offers/s. */
static uint32_t waitlist_numbers(const bench_run *run, uint64_t wait[3], uint32_t pos[3], double *offers_per_s)
{
    const bench_wl *wl = &run->wl;
    uint32_t served = 0;
    for (uint32_t i = 0; i < wl->n; i++)
        served += wl->w[i].hold != BENCH_LINK_NONE;
    uint32_t want[3] = {0, served > 0 ? (served - 1) / 2 : 0, served > 0 ? served - 1 : 0}, k = 0;
    memset(pos, 0, 3 * sizeof(pos[0]));
    memset(wait, 0, 3 * sizeof(wait[0]));
    for (uint32_t i = 0; i < wl->n && served > 0; i++) {
        const bench_waiter *w = &wl->w[i];
        if (w->hold == BENCH_LINK_NONE)
            continue;
        for (int j = 0; j < 3; j++)
            if (k == want[j]) {
                wait[j] = bench_wl_wait_ms(w);
                pos[j] = i + 1;
            }
        k++;
    }
    uint64_t span_ms = wl->last_offer_ms > wl->start_ms ? wl->last_offer_ms - wl->start_ms : 1;
    *offers_per_s = (double)wl->offered * 1000.0 / (double)span_ms;
    return served;
}

static void print_waitlist(const bench_report *r, FILE *f)
{
    const bench_wl *wl = &r->run->wl;
    uint64_t wait[3];
    uint32_t pos[3];
    double per_s;
    uint32_t served = waitlist_numbers(r->run, wait, pos, &per_s);
    fprintf(f,
            "  waitlist          %" PRIu32 " of %" PRIu32 " waiters joined (positions %s in join order), %" PRIu32
            " held at once, %" PRIu32 " refused\n",
            wl->joined, wl->n, wl->positions_exact ? "1..K" : "checked", wl->at_once,
            wl->full + wl->join_errors + wl->join_unexpected);
    fprintf(f,
            "  offers            %" PRIu32
            " offered: %.0f offers/s (from the churn's start to the last offer); %" PRIu64 " left waiting at the end\n",
            wl->offered, per_s, wl->left);
    fprintf(f,
            "  waited ms         first %" PRIu64 "  median %" PRIu64 "  last %" PRIu64
            "  (join answer to the offer's commit; waiters %" PRIu32 ", %" PRIu32 ", %" PRIu32 " of %" PRIu32
            " served, in join order)\n",
            wait[0], wait[1], wait[2], pos[0], pos[1], pos[2], served);
    fprintf(f,
            "  waitlist churn    prefill holds %" PRIu64 " released, %" PRIu64 " confirmed, %" PRIu64
            " left to expire; offers %" PRIu64 " released, %" PRIu64 " confirmed, %" PRIu64 " left to expire, %" PRIu64
            " expired before the waiter asked; %" PRIu64 " polls\n",
            wl->prefill_released, wl->prefill_confirmed, wl->prefill_abandoned, wl->offer_released, wl->offer_confirmed,
            wl->offer_abandoned, wl->offer_expired_first, wl->polls);
    if (r->verdict->ran)
        fprintf(f, "  join order        %s\n",
                wl->order_violations ? "offers out of join order (see verification)" : "every offer in join order");
}

static void print_counts(const bench_report *r, FILE *f)
{
    const bench_counters *n = r->n;
    const bench_config *c = r->run->cfg;
    if (c->scenario == BENCH_OPEN_LOOP)
        fprintf(f,
                "  schedule          %.0f/s: %" PRIu64 " due, %" PRIu64
                " sent (most waiting in the bench at once: %" PRIu64 ")%s\n",
                c->rate_per_s, n->scheduled, n->sent, n->backlog_max,
                n->scheduled > n->sent ? ": the target fell behind the schedule" : "");
    fprintf(f, "  requests          %" PRIu64 " answered of %" PRIu64 " sent in %.3f s: %.0f requests/s\n", n->answered,
            n->sent, r->run_s, r->requests_per_s);
    fprintf(f, "  bench cpu         %.2f us per answer (%.3f s user+system, %u thread%s)\n",
            n->answered ? r->run->cpu_s * 1e6 / (double)n->answered : 0.0, r->run->cpu_s, c->threads,
            c->threads == 1 ? "" : "s");
    if (c->scenario != BENCH_PING)
        fprintf(f, "  holds             %" PRIu64 " (%" PRIu64 " units): %.0f holds/s%s\n", n->holds, n->held_units,
                r->holds_per_s, r->sellout_s > 0 ? " until the sell-out" : "");
    if (c->scenario == BENCH_HOT_RELEASE && c->cart > 1)
        fprintf(f, "  carts             %" PRIu64 " of %u events each (%" PRIu64 " holds): %.0f carts/s\n", n->carts,
                c->cart, n->carts * c->cart, r->holds_per_s / c->cart);
    if (c->scenario != BENCH_PING)
        fprintf(f, "  sold_out          %" PRIu64 ": %.0f answers/s\n", n->sold_out, r->sold_out_per_s);
    if (c->allocation)
        print_parts(r, f);
    if (r->sellout_s > 0)
        fprintf(f, "  time to sell out  %.3f s\n", r->sellout_s);
    if (r->run->opens_at_ms > 0) {
        fprintf(f,
                "  opening           opens_at %" PRIu64 "; first holds sent %" PRIu64 " ms after it; %" PRIu64
                " not_on_sale answers before it\n",
                r->run->opens_at_ms, r->run->opening_lag_ms, n->not_on_sale);
        if (r->sellout_s > 0)
            fprintf(f, "  opening to sold out %.3f s\n", r->sellout_s + (double)r->run->opening_lag_ms / 1e3);
    }
    if (c->scenario == BENCH_CHURN)
        fprintf(f,
                "  churn             %" PRIu64 " confirmed, %" PRIu64 " released, %" PRIu64 " abandoned, %" PRIu64
                " expired before the buyer acted\n",
                n->confirmed, n->released, n->abandoned, n->expired);
    if (c->scenario == BENCH_CHURN) {
        fprintf(f, "  extend            %" PRIu64 " extended, %" PRIu64 " extend_limit answers\n", n->extends,
                n->extend_limit);
        fprintf(f, "  partial confirm   %" PRIu64 " confirms of fewer units than held, %" PRIu64 " units returned\n",
                n->partial, n->returned_units);
        fprintf(f, "  late payment      %" PRIu64 ": %" PRIu64 " reacquired (%" PRIu64 " units), %" PRIu64 " sold out",
                n->late, n->late_reacquired, n->late_units, n->late_sold_out);
        if (n->late_user_limit)
            fprintf(f, ", %" PRIu64 " refused by max_per_user", n->late_user_limit);
        if (n->late_held)
            fprintf(f, ", %" PRIu64 " found the hold still held (confirmed as usual)", n->late_held);
        fprintf(f, "\n");
    }
    if (c->scenario == BENCH_WAITLIST)
        print_waitlist(r, f);
    fprintf(f, "  errors           ");
    bool any = false;
    for (unsigned e = 0; e <= SLOT_E__COUNT; e++)
        if (n->errors[e]) {
            fprintf(f, " %s %" PRIu64, e < SLOT_E__COUNT ? slot_err_name((slot_err)e) : "(unknown code)", n->errors[e]);
            any = true;
        }
    fprintf(f, "%s\n", any ? "" : " none");
    if (n->replays || n->unexpected)
        fprintf(f, "  unexpected        %" PRIu64 " replays, %" PRIu64 " other answers\n", n->replays, n->unexpected);
    fprintf(f,
            "  following         %" PRIu64 " failover%s seen, %" PRIu64 " request%s sent again, longest without an "
            "acknowledged write %.1f ms\n",
            r->run->failovers, r->run->failovers == 1 ? "" : "s", r->run->retries, r->run->retries == 1 ? "" : "s",
            (double)r->run->ack_gap_max_ns / 1e6);
    fprintf(f,
            "  latency ms        p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  (mean %.3f, %" PRIu64
            " answers)\n",
            r->p50_ms, r->p90_ms, r->p99_ms, r->p999_ms, r->max_ms, r->mean_ms, r->run->lat_ns->count);
    fprintf(f, "  first second ms   p50 %.3f  p99 %.3f  max %.3f  (%" PRIu64 " answers to requests sent in it)\n",
            r->first_p50_ms, r->first_p99_ms, r->first_max_ms, r->run->first_ns->count);
}

static json_int_t jint(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* The server's batch sizes (since it started) and the commits of the run,
 * from its stats after (a) and before (b) the run; bs is a's batch_size. */
static void print_batches(json_t *a, json_t *b, json_t *bs, FILE *f)
{
    json_int_t commits = jint(a, "commits", NULL) - jint(b, "commits", NULL);
    json_int_t writes = 0;
    static const char *const write_ops[] = {"hold", "confirm", "release", "extend"};
    for (size_t i = 0; i < sizeof(write_ops) / sizeof(write_ops[0]); i++)
        writes += jint(a, "requests", write_ops[i]) - jint(b, "requests", write_ops[i]);
    fprintf(f,
            "  server batches    mean %.1f  p50 %" JSON_INTEGER_FORMAT "  p99 %" JSON_INTEGER_FORMAT
            "  max %" JSON_INTEGER_FORMAT " requests (since the server started)\n",
            json_real_value(json_object_get(bs, "mean")) + (double)jint(bs, "mean", NULL), jint(a, "batch_size", "p50"),
            jint(a, "batch_size", "p99"), jint(a, "batch_size", "max"));
    fprintf(f,
            "  server commits    %" JSON_INTEGER_FORMAT
            " during the run (%.1f hold/confirm/release/extend requests per commit)\n",
            commits, commits > 0 ? (double)writes / (double)commits : 0.0);
}

/* The server's own rows. ping's hellos and PINGs are no writes: they run in
 * no batch and no commit, so its report has no batch and commit rows, only
 * the server's latency where the target keeps one. */
static void print_server(const bench_report *r, FILE *f)
{
    json_t *a = r->stats_after, *b = r->stats_before;
    json_t *bs = json_object_get(a, "batch_size");
    bool writes_rows = r->run->cfg->scenario != BENCH_PING;
    if (!a || !bs) {
        if (writes_rows)
            fprintf(f, "  server batches    n/a (%s has no group commit stats)\n", r->run->drv->name);
        return;
    }
    if (r->stats_nodes_differ) { /* a difference of two nodes' counters means nothing */
        if (writes_rows) {
            fprintf(f, "  server batches    n/a (the primary changed during the run)\n");
            fprintf(f, "  server commits    n/a (the primary changed during the run)\n");
        }
        fprintf(f, "  server latency us n/a (the primary changed during the run)\n");
        return;
    }
    if (writes_rows)
        print_batches(a, b, bs, f);
    fprintf(f,
            "  server latency us p50 %" JSON_INTEGER_FORMAT "  p99 %" JSON_INTEGER_FORMAT
            "  p99.9 %" JSON_INTEGER_FORMAT "  max %" JSON_INTEGER_FORMAT " (in the server, since it started)\n",
            jint(a, "latency_us", "p50"), jint(a, "latency_us", "p99"), jint(a, "latency_us", "p999"),
            jint(a, "latency_us", "max"));
}

void bench_report_print(const bench_report *r, FILE *f)
{
    print_head(r, f);
    print_counts(r, f);
    print_server(r, f);
    const bench_ledger *l = &r->run->ledger;
    if (r->verdict->ran)
        fprintf(f, "  ledger            %zu holds asked with get_hold, %" PRIu64 " differ\n", l->n, l->mismatches);
    bench_seated_print(r->run, f);
}

/* ---------------------------------------------------------------- machine facts */

static void cpu_model(char *buf, size_t n)
{
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            colon++;
            colon += strspn(colon, " \t");
            colon[strcspn(colon, "\n")] = 0;
            snprintf(buf, n, "%s", colon);
            break;
        }
    }
    fclose(f);
}

json_t *bench_machine_json(void)
{
    struct utsname u;
    char kernel[300] = "unknown", cpu[256];
    if (uname(&u) == 0)
        snprintf(kernel, sizeof(kernel), "%s %s %s", u.sysname, u.release, u.machine);
    cpu_model(cpu, sizeof(cpu));
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return json_pack("{s:i, s:I, s:s, s:s}", "nproc", (int)sysconf(_SC_NPROCESSORS_ONLN), "memory_bytes",
                     (json_int_t)(pages > 0 && page > 0 ? pages * page : 0), "kernel", kernel, "cpu_model", cpu);
}

/* ---------------------------------------------------------------- --json */

/* hot-release --allocation: the public sale's and the block's holds, units, sold_out answers,
 * holds/s and sell-out apart; the block's remaining as the event showed it after the run. */
static json_t *parts_json(const bench_report *r)
{
    const bench_config *c = r->run->cfg;
    json_t *o = json_pack("{s:s, s:I, s:i, s:I}", "block", BENCH_BLOCK_NAME, "qty", (json_int_t)c->allocation,
                          "presale_connections", (int)c->presale_conns, "bad_sold_out",
                          (json_int_t)r->n->bad_block_sold_out);
    for (uint32_t i = 0; o && i < 2; i++) {
        const bench_event *e = &r->run->events[i];
        double sell_s, rate = part_rate(r, e, &sell_s);
        json_object_set_new(o, i ? "presale" : "public",
                            json_pack("{s:I, s:I, s:I, s:I, s:f, s:f}", "capacity", (json_int_t)e->capacity, "holds",
                                      (json_int_t)e->holds, "held_units", (json_int_t)e->held_units, "sold_out",
                                      (json_int_t)e->sold_out, "holds_per_s", rate, "sellout_s", sell_s));
    }
    if (o && r->verdict->ran)
        json_object_set_new(json_object_get(o, "presale"), "remaining",
                            json_integer((json_int_t)r->verdict->views[0].block_remaining));
    return o;
}

static json_t *counters_json_base(const bench_report *r)
{
    const bench_counters *n = r->n;
    json_t *errors = json_object();
    for (unsigned e = 0; e <= SLOT_E__COUNT; e++)
        if (n->errors[e])
            json_object_set_new(errors, e < SLOT_E__COUNT ? slot_err_name((slot_err)e) : "unknown",
                                json_integer((json_int_t)n->errors[e]));
    json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:I,"
                          " s:f, s:f, s:f, s:f, s:f, s:f,"
                          " s:{s:f, s:f, s:f, s:f, s:f, s:f, s:I}}",
                          "scheduled", (json_int_t)n->scheduled, "sent", (json_int_t)n->sent, "answered",
                          (json_int_t)n->answered, "holds", (json_int_t)n->holds, "held_units",
                          (json_int_t)n->held_units, "sold_out", (json_int_t)n->sold_out, "confirmed",
                          (json_int_t)n->confirmed, "released", (json_int_t)n->released, "expired",
                          (json_int_t)n->expired, "abandoned", (json_int_t)n->abandoned, "replays",
                          (json_int_t)n->replays, "unexpected", (json_int_t)n->unexpected, "bad_sold_out",
                          (json_int_t)n->bad_sold_out, "errors", errors, "backlog_max", (json_int_t)n->backlog_max,
                          "run_s", r->run_s, "requests_per_s", r->requests_per_s, "holds_per_s", r->holds_per_s,
                          "sold_out_per_s", r->sold_out_per_s, "sellout_s", r->sellout_s, "units_left",
                          (double)bench_units_left(r->run), "latency_ms", "p50", r->p50_ms, "p90", r->p90_ms, "p99",
                          r->p99_ms, "p99_9", r->p999_ms, "max", r->max_ms, "mean", r->mean_ms, "count",
                          (json_int_t)r->run->lat_ns->count);
    if (o)
        json_object_set_new(o, "first_second_ms",
                            json_pack("{s:f, s:f, s:f, s:I}", "p50", r->first_p50_ms, "p99", r->first_p99_ms, "max",
                                      r->first_max_ms, "count", (json_int_t)r->run->first_ns->count));
    if (o)
        json_object_set_new(o, "bench_cpu",
                            json_pack("{s:f, s:f, s:i}", "seconds", r->run->cpu_s, "us_per_answer",
                                      n->answered ? r->run->cpu_s * 1e6 / (double)n->answered : 0.0, "threads",
                                      (int)r->run->cfg->threads));
    if (o && r->run->cfg->scenario == BENCH_HOT_RELEASE && r->run->cfg->cart > 1)
        json_object_set_new(o, "carts",
                            json_pack("{s:I, s:i}", "held", (json_int_t)n->carts, "items", (int)r->run->cfg->cart));
    if (o && r->run->cfg->scenario == BENCH_CHURN)
        json_object_set_new(o, "churn",
                            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "extends",
                                      (json_int_t)n->extends, "extend_limit", (json_int_t)n->extend_limit,
                                      "partial_confirms", (json_int_t)n->partial, "returned_units",
                                      (json_int_t)n->returned_units, "late", (json_int_t)n->late, "late_reacquired",
                                      (json_int_t)n->late_reacquired, "late_units", (json_int_t)n->late_units,
                                      "late_sold_out", (json_int_t)n->late_sold_out, "late_user_limit",
                                      (json_int_t)n->late_user_limit, "late_still_held", (json_int_t)n->late_held));
    if (o && r->run->cfg->scenario == BENCH_WAITLIST) {
        const bench_wl *wl = &r->run->wl;
        uint64_t wait[3];
        uint32_t pos[3];
        double per_s;
        uint32_t served = waitlist_numbers(r->run, wait, pos, &per_s);
        json_object_set_new(
            o, "waitlist",
            json_pack("{s:i, s:i, s:i, s:i, s:i, s:b, s:i, s:I, s:I, s:f, s:{s:I, s:I, s:I}, s:[i, i, i],"
                      " s:i, s:b}",
                      "waiters", (int)wl->n, "joined", (int)wl->joined, "held_at_once", (int)wl->at_once, "refused",
                      (int)(wl->full + wl->join_errors + wl->join_unexpected), "offered", (int)wl->offered,
                      "positions_exact", wl->positions_exact, "served", (int)served, "left", (json_int_t)wl->left,
                      "polls", (json_int_t)wl->polls, "offers_per_s", per_s, "wait_ms", "first", (json_int_t)wait[0],
                      "median", (json_int_t)wait[1], "last", (json_int_t)wait[2], "wait_waiters", (int)pos[0],
                      (int)pos[1], (int)pos[2], "order_violations", (int)wl->order_violations, "in_order",
                      wl->order_violations == 0));
    }
    if (o && r->run->cfg->allocation)
        json_object_set_new(o, "allocation", parts_json(r));
    if (o && r->run->seated)
        json_object_set_new(o, "seats", bench_seated_json(r->run));
    if (o && r->run->opens_at_ms > 0)
        json_object_set_new(o, "opening",
                            json_pack("{s:I, s:I, s:I}", "opens_at", (json_int_t)r->run->opens_at_ms, "lag_ms",
                                      (json_int_t)r->run->opening_lag_ms, "not_on_sale", (json_int_t)n->not_on_sale));
    return o;
}

static json_t *counters_json(const bench_report *r)
{
    json_t *o = counters_json_base(r);
    if (o) { /* following the primary: over the whole run */
        json_object_set_new(o, "failovers", json_integer((json_int_t)r->run->failovers));
        json_object_set_new(o, "retries", json_integer((json_int_t)r->run->retries));
        json_object_set_new(o, "ack_gap_max_ms", json_real((double)r->run->ack_gap_max_ns / 1e6));
    }
    return o;
}

static json_t *events_json(const bench_run *run, const bench_verdict *v)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < run->nevents; i++) {
        const bench_event *e = &run->events[i];
        uint64_t sell_ns = e->sellout_ns > run->n.first_send_ns ? e->sellout_ns - run->n.first_send_ns : 0;
        json_t *o = json_pack("{s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "event", e->name, "measured",
                              e->measured, "capacity", (json_int_t)e->capacity, "holds", (json_int_t)e->holds,
                              "held_units", (json_int_t)e->held_units, "confirmed_units",
                              (json_int_t)e->confirmed_units, "released_units", (json_int_t)e->released_units,
                              "expired_units", (json_int_t)e->expired_units, "sellout_s", ns_s(sell_ns));
        if (o && run->cfg->scenario == BENCH_CHURN)
            json_object_set_new(o, "returned_units", json_integer((json_int_t)e->returned_units));
        if (o && run->cfg->allocation && i < 2) {
            json_object_set_new(o, "allocation", json_string(e->allocation));
            json_object_set_new(o, "sold_out", json_integer((json_int_t)e->sold_out));
        }
        if (v->ran)
            json_object_set_new(o, "server",
                                json_pack("{s:I, s:I, s:I, s:I, s:s}", "capacity", (json_int_t)v->views[i].capacity,
                                          "available", (json_int_t)v->views[i].available, "held",
                                          (json_int_t)v->views[i].held, "confirmed", (json_int_t)v->views[i].confirmed,
                                          "status", v->views[i].status));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *series_json(const bench_run *run)
{
    json_t *a = json_array();
    for (size_t i = 0; i < run->nseries; i++) {
        const bench_sample *s = &run->series[i];
        json_array_append_new(a, json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "t_ms", (int)s->t_ms, "sent",
                                           (json_int_t)s->sent, "answered", (json_int_t)s->answered, "held",
                                           (json_int_t)s->held, "sold_out", (json_int_t)s->sold_out, "errors",
                                           (json_int_t)s->errors, "units_left", (json_int_t)s->units_left, "p99_ms",
                                           s->p99_ms));
    }
    return a;
}

static json_t *verification_json(const bench_report *r)
{
    const bench_verdict *v = r->verdict;
    const bench_ledger *l = &r->run->ledger;
    const char *status = !v->ran ? "not run" : r->run->fatal[0] ? "not completed" : v->nproblems ? "failed" : "passed";
    return json_pack("{s:s, s:b, s:s, s:{s:I, s:I, s:I, s:I, s:s}}", "status", status, "passed",
                     v->ran && !r->run->fatal[0] && v->nproblems == 0, "problems", v->ran ? v->problems : r->run->fatal,
                     "ledger", "holds", (json_int_t)l->n, "checked", (json_int_t)l->checked, "mismatches",
                     (json_int_t)l->mismatches, "errors", (json_int_t)l->errors, "first_mismatch", l->first_mismatch);
}

static json_t *report_json(const bench_report *r)
{
    char started[32];
    time_t now = time(NULL);
    strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    json_t *root = json_pack("{s:s, s:s, s:s, s:o, s:{s:s, s:s, s:i, s:O}, s:o, s:s, s:o, s:o, s:o, s:o}", "tool",
                             "slot-bench", "version", SLOT_VERSION, "finished_at", started, "config",
                             bench_config_json(r->run->cfg), "target", "kind", r->run->drv->name, "host",
                             r->run->cfg->host, "port", (int)r->run->cfg->port, "server",
                             r->server ? r->server : json_null(), "machine", bench_machine_json(), "stopped",
                             r->stopped, "results", counters_json(r), "events", events_json(r->run, r->verdict),
                             "verification", verification_json(r), "series", series_json(r->run));
    if (root)
        json_object_set_new(root, "server_stats",
                            json_pack("{s:O?, s:O?}", "before", r->stats_before, "after", r->stats_after));
    if (root && r->stats_nodes_differ) /* before and after are two nodes' counters */
        json_object_set_new(json_object_get(root, "server_stats"), "primary_changed", json_true());
    return root;
}

int bench_report_json(const bench_report *r, const char *path)
{
    json_t *root = report_json(r);
    int rc = root ? json_dump_file(root, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9)) : -1;
    if (rc != 0)
        fprintf(stderr, "slot-bench: --json %s: %s\n", path, root ? strerror(errno) : "cannot build the report");
    json_decref(root);
    return rc == 0 ? 0 : -EIO;
}

/* ---------------------------------------------------------------- --csv */

int bench_report_csv(const bench_report *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "slot-bench: --csv %s: %s\n", path, strerror(errno));
        return -errno;
    }
    fprintf(f, "t_ms,sent,held,sold_out,errors,units_left,p99_ms\n");
    for (size_t i = 0; i < r->run->nseries; i++) {
        const bench_sample *s = &r->run->series[i];
        fprintf(f, "%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f\n", s->t_ms, s->sent, s->held,
                s->sold_out, s->errors, s->units_left, s->p99_ms);
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "slot-bench: --csv %s: write failed\n", path);
        return -EIO;
    }
    return 0;
}
