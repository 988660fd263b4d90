/*
 * room_verify.c — the waiting-room scenario's verification and report
 * (room.h): admission order against join order (queue: exactly; lottery: a
 * chi-square test of join decile against admission decile), every entry
 * admitted once, holds without a valid grant refused, the stop rule in
 * every view, the event's counters, check. Single-threaded.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exit.h"
#include "limits.h"
#include "room.h"
#include "util.h"

#define CHI_BINS 10

typedef struct verdict {
    char text[1024];
    uint32_t n;
} verdict;

static void fail(verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(verdict *v, const char *fmt, ...)
{
    size_t used = strlen(v->text);
    if (v->n++ && used + 2 < sizeof(v->text))
        used += (size_t)snprintf(v->text + used, sizeof(v->text) - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    if (used < sizeof(v->text))
        vsnprintf(v->text + used, sizeof(v->text) - used, fmt, ap);
    va_end(ap);
}

static const room_entry *base;
static uint64_t *tiekey;
/* The server's admitted_at order; in one tick (the same admitted_at), by tiekey: the join rank in a
 * queue (the order inside a tick is not seen, only whether a tick's entries come in join order), a
 * random key in a lottery (place_group puts the entries whose position told their rank there). */
static int by_admission(const void *a, const void *b)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    if (base[i].admitted_at_ms != base[j].admitted_at_ms)
        return base[i].admitted_at_ms < base[j].admitted_at_ms ? -1 : 1;
    return tiekey[i] < tiekey[j] ? -1 : tiekey[i] > tiekey[j];
}

/* adm[lo..hi): one tick's entries. Those whose exact rank falls in it go to that slot, the others
 * fill the free slots in their order; tmp: hi - lo scratch. Returns the exact ranks outside the tick. */
static uint64_t place_group(uint32_t *adm, uint32_t lo, uint32_t hi, uint32_t *tmp)
{
    uint64_t outside = 0;
    uint32_t m = hi - lo;
    for (uint32_t s = 0; s < m; s++)
        tmp[s] = UINT32_MAX;
    for (uint32_t s = lo; s < hi; s++) {
        const room_entry *e = &base[adm[s]];
        if (e->rank_known && e->rank >= lo && e->rank < hi && tmp[e->rank - lo] == UINT32_MAX)
            tmp[e->rank - lo] = adm[s];
        else if (e->rank_known)
            outside++;
    }
    uint32_t free_slot = 0;
    for (uint32_t s = lo; s < hi; s++) {
        const room_entry *e = &base[adm[s]];
        if (e->rank_known && e->rank >= lo && e->rank < hi && tmp[e->rank - lo] == adm[s])
            continue;
        while (tmp[free_slot] != UINT32_MAX)
            free_slot++;
        tmp[free_slot] = adm[s];
    }
    memcpy(adm + lo, tmp, m * sizeof(uint32_t));
    return outside;
}

static int u64cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Wilson-Hilferty: P(X > chi2) for df degrees of freedom. */
static double chi2_p(double chi2, double df)
{
    double z = (pow(chi2 / df, 1.0 / 3) - (1 - 2 / (9 * df))) / sqrt(2 / (9 * df));
    return 0.5 * erfc(z / sqrt(2));
}

int bench_room_verify_report(room_run *r)
{
    const bench_config *cfg = r->cfg;
    verdict v = {.text = "", .n = 0};
    uint32_t n = r->n, na = 0;
    uint32_t *adm = calloc(n ? n : 1, sizeof(uint32_t));
    uint64_t *w_client = calloc(n ? n : 1, sizeof(uint64_t)), *w_server = calloc(n ? n : 1, sizeof(uint64_t));
    tiekey = calloc(n ? n : 1, sizeof(uint64_t));
    if (!adm || !w_client || !w_server || !tiekey) {
        free(adm), free(w_client), free(w_server), free(tiekey);
        fprintf(stderr, "slot-bench: waiting-room: out of memory for the verification\n");
        return BENCH_EXIT_FAILED;
    }
    uint64_t rng = cfg->seed ^ 0x9e3779b97f4a7c15ull, twice = 0, exact = 0;
    for (uint32_t i = 0; i < n; i++) {
        tiekey[i] = cfg->lottery ? bench_rand(&rng) : r->e[i].seq;
        if (r->e[i].grants_seen)
            adm[na++] = i;
        twice += r->e[i].grants_seen > 1;
        exact += r->e[i].rank_known;
    }
    base = r->e;
    qsort(adm, na, sizeof(uint32_t), by_admission);
    /* A run cut short by --duration saw only some of the admissions the
     * server made: the order is checked over the admissions of the queue's
     * first entries, up to the first one the bench did not see. */
    uint32_t checked = na;
    if (r->stopped_by_duration && !cfg->lottery) {
        uint8_t *seen = calloc(n ? n : 1, 1);
        for (uint32_t i = 0; seen && i < n; i++)
            if (r->e[i].grants_seen && r->e[i].seq >= 1 && r->e[i].seq <= n)
                seen[r->e[i].seq - 1] = 1;
        checked = 0;
        while (seen && checked < n && seen[checked])
            checked++;
        free(seen);
    }
    /* admission rank k = index in adm; join rank = seq - 1 */
    uint64_t order_breaks = 0, rank_breaks = 0;
    uint32_t *tmp = (uint32_t *)w_client; /* scratch before the waits are filled in */
    for (uint32_t lo = 0, hi; lo < na; lo = hi) {
        for (hi = lo + 1; hi < na && r->e[adm[hi]].admitted_at_ms == r->e[adm[lo]].admitted_at_ms; hi++)
            ;
        if (hi <= checked || !r->stopped_by_duration)
            rank_breaks += place_group(adm, lo, hi, tmp); /* a position's rank outside its tick's ranks */
    }
    for (uint32_t k = 0; k < na; k++) {
        const room_entry *e = &r->e[adm[k]];
        if (!cfg->lottery && k < checked && e->seq != (uint64_t)k + 1)
            order_breaks++;
        w_client[k] = e->seen_ms > r->opens_at_ms ? e->seen_ms - r->opens_at_ms : 0;
        w_server[k] = e->admitted_at_ms > r->opens_at_ms ? e->admitted_at_ms - r->opens_at_ms : 0;
    }
    double chi2 = 0, p = 1;
    if (cfg->lottery && na == n) {
        double table[CHI_BINS][CHI_BINS] = {{0}};
        for (uint32_t k = 0; k < na; k++)
            table[(r->e[adm[k]].seq - 1) * CHI_BINS / n][(uint64_t)k * CHI_BINS / n] += 1;
        double exp = (double)n / (CHI_BINS * CHI_BINS);
        for (int a = 0; a < CHI_BINS; a++)
            for (int b = 0; b < CHI_BINS; b++)
                chi2 += (table[a][b] - exp) * (table[a][b] - exp) / exp;
        p = chi2_p(chi2, (CHI_BINS - 1) * (CHI_BINS - 1));
    }
    /* the checks */
    if (r->joins_ok != n)
        fail(&v, "%" PRIu64 " of %u joins answered waiting (%" PRIu64 " refused)", r->joins_ok, n, r->join_errors);
    if (r->joins_late)
        fail(&v, "a join was answered after the opening: raise --opens-in");
    if (r->pos_mismatch)
        fail(&v, "%" PRIu64 " queue positions did not match the join order", r->pos_mismatch);
    if (!r->stopped_by_duration && na != n)
        fail(&v, "%u of %u entries admitted", na, n);
    if (twice)
        fail(&v, "%" PRIu64 " entries admitted with two different grants", twice);
    if (!cfg->lottery && order_breaks)
        fail(&v, "queue: %" PRIu64 " admissions out of join order", order_breaks);
    if (rank_breaks)
        fail(&v, "%" PRIu64 " positions disagree with the order of admitted_at", rank_breaks);
    if (cfg->lottery && na == n && p < BENCH_ROOM_CHI2_P)
        fail(&v, "lottery: chi-square %.1f, p %.2g: the admission order is not uniform", chi2, p);
    if (r->nogrant_sent != BENCH_ROOM_NOGRANT_TRIES || r->nogrant_refused != r->nogrant_sent)
        fail(&v, "holds without a valid grant: %" PRIu64 " of %" PRIu64 " refused admission_required (%u sent wanted)",
             r->nogrant_refused, r->nogrant_sent, BENCH_ROOM_NOGRANT_TRIES);
    if (r->stop_rule_views == 0 || r->stop_rule_violations)
        fail(&v, "the stop rule: %" PRIu64 " of %" PRIu64 " views with open_grants > available", r->stop_rule_violations,
             r->stop_rule_views);
    if (r->unexpected)
        fail(&v, "%" PRIu64 " unexpected answers, the first: %s", r->unexpected, r->first_problem);
    /* The rate: by t ms after the opening, at most the bucket (admit_per_s) and what it
     * refilled (admit_per_s per second) are admitted; +1 ms and +1 entry for the clock's
     * rounding. A room that admits faster than its rate fails here. */
    uint64_t ahead = 0, ahead_k = 0;
    for (uint32_t k = 0; k < na; k++) {
        uint64_t allowed = cfg->admit_per_s + (uint64_t)cfg->admit_per_s * (w_server[k] + 1) / 1000 + 1;
        if ((uint64_t)k + 1 > allowed && ahead++ == 0)
            ahead_k = k;
    }
    if (ahead)
        fail(&v, "the rate: %" PRIu64 " admissions ahead of admit_per_s's bucket (the %" PRIu64 "-th at %" PRIu64 " ms)",
             ahead, ahead_k + 1, w_server[ahead_k]);
    /* cut short, the server may have admitted entries the bench had not seen yet */
    bool admitted_ok = r->stopped_by_duration ? r->v_admitted >= na : r->v_admitted == na;
    if (r->v_joined != n || !admitted_ok || r->v_confirmed != r->confirmed ||
        r->v_held != r->held - r->confirmed - r->released ||
        r->v_available != r->capacity - r->v_confirmed - r->v_held)
        fail(&v,
             "the event shows joined %" PRIu64 " admitted %" PRIu64 " confirmed %" PRIu64 " held %" PRIu64
             " available %" PRIu64 "; the bench saw %u, %u, %" PRIu64 ", %" PRIu64,
             r->v_joined, r->v_admitted, r->v_confirmed, r->v_held, r->v_available, n, na, r->confirmed,
             r->held - r->confirmed - r->released);
    if (r->check_violations)
        fail(&v, "check: %s", r->check_detail);
    /* the report */
    double join_s = (double)(r->join_end_ms - r->join_start_ms) / 1000.0;
    double joins_per_s = join_s > 0 ? (double)r->joins_ok / join_s : 0;
    uint64_t last = na ? w_server[na - 1] : 0, first = na ? w_server[0] : 0;
    /* The room's bucket is full at opens_at (one second's worth, admit_per_s entries: docs/
     * protocol.md, "Admission"), and it goes out in the first batches at once. The steady
     * rate counts the entries after it, over the time from the last of it to the last one. */
    uint32_t burst = na < cfg->admit_per_s ? na : cfg->admit_per_s;
    uint64_t burst_end = burst ? w_server[burst - 1] : first;
    double rate_all = last > 0 ? (double)na * 1000.0 / (double)last : 0;
    double rate_steady = last > burst_end && na > burst ? (double)(na - burst) * 1000.0 / (double)(last - burst_end) : 0;
    qsort(w_client, na, sizeof(uint64_t), u64cmp);
    printf("slot-bench waiting-room: event %s, %s, crowd %u, admit_per_s %u, %u connections x %u in flight\n",
           cfg->event, cfg->lottery ? "lottery" : "queue", n, cfg->admit_per_s, cfg->connections, cfg->pipeline);
    printf("joins: %" PRIu64 " in %.3f s = %.0f joins/s (%" PRIu64 " refused)\n", r->joins_ok, join_s, joins_per_s,
           r->join_errors);
    uint64_t earliest = na > cfg->admit_per_s ? (uint64_t)(na - cfg->admit_per_s) * 1000 / cfg->admit_per_s : 0;
    printf("admissions: %u of %u; %.1f/s from the opening to the last (target %u), %.1f/s after the opening's bucket "
           "of %u (one second's worth); the last at %" PRIu64 " ms, the bucket allows %" PRIu64 " ms at the earliest%s\n",
           na, n, rate_all, cfg->admit_per_s, rate_steady, burst, last, earliest,
           r->stopped_by_duration ? " (stopped by --duration)" : "");
    if (na)
        printf("wait from the opening, ms (server admitted_at / client first saw): first %" PRIu64 " / %" PRIu64
               ", median %" PRIu64 " / %" PRIu64 ", last %" PRIu64 " / %" PRIu64 "\n",
               w_server[0], w_client[0], w_server[na / 2], w_client[na / 2], w_server[na - 1], w_client[na - 1]);
    printf("buyers: held %" PRIu64 ", confirmed %" PRIu64 ", released %" PRIu64 "; polls %" PRIu64 ", views %" PRIu64
           " (%" PRIu64 " batches between moving views)\n",
           r->held, r->confirmed, r->released, r->polls, r->views, r->unstable_batches);
    printf("order: %" PRIu64 " ranks from positions, %" PRIu64 " from admitted_at (ties in a tick in random order)\n",
           exact, exact < na ? (uint64_t)na - exact : 0);
    if (cfg->lottery)
        printf("lottery: chi-square %.1f, df %d, p %.3g (%s at %g)\n", chi2, (CHI_BINS - 1) * (CHI_BINS - 1), p,
               na != n ? "not computed" : p < BENCH_ROOM_CHI2_P ? "REJECTED" : "not rejected", BENCH_ROOM_CHI2_P);
    printf("stop rule: %" PRIu64 " views, %" PRIu64 " with open_grants > available; holds without a valid grant: %" PRIu64
           " of %" PRIu64 " admission_required\n",
           r->stop_rule_views, r->stop_rule_violations, r->nogrant_refused, r->nogrant_sent);
    int rc = v.n ? BENCH_EXIT_FAILED : 0;
    if (cfg->json_path) {
        json_t *o = bench_config_json(cfg);
        json_t *res = json_pack("{s:I,s:f,s:f,s:I,s:f,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:s}", "joins",
                                (json_int_t)r->joins_ok, "join_seconds", join_s, "joins_per_s", joins_per_s, "admitted",
                                (json_int_t)na, "admissions_per_s", rate_all, "admissions_per_s_after_burst",
                                rate_steady, "wait_first_ms", (json_int_t)(na ? w_server[0] : 0), "wait_median_ms",
                                (json_int_t)(na ? w_server[na / 2] : 0), "wait_last_ms", (json_int_t)last, "confirmed",
                                (json_int_t)r->confirmed, "released", (json_int_t)r->released, "polls",
                                (json_int_t)r->polls, "stop_rule_views", (json_int_t)r->stop_rule_views, "passed",
                                v.n == 0, "problems", v.text);
        if (cfg->lottery && res)
            json_object_set_new(res, "chi2", json_real(chi2)), json_object_set_new(res, "chi2_p", json_real(p));
        if (o && res)
            json_object_set_new(o, "waiting_room", res);
        if (!o || json_dump_file(o, cfg->json_path, JSON_INDENT(2)) != 0) {
            fprintf(stderr, "slot-bench: waiting-room: cannot write %s\n", cfg->json_path);
            rc = BENCH_EXIT_FAILED;
        }
        json_decref(o);
    }
    printf("verification: %s%s\n", v.n ? "FAILED: " : "passed", v.text);
    free(adm), free(w_client), free(w_server), free(tiekey);
    tiekey = NULL;
    return rc;
}
