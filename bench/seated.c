/*
 * seated.c — hot-release --seated during the run (seated.h): the buyers'
 * requests (--adjacent: qty N together; --named: N consecutive ids of one
 * row drawn at random), and what each answer says about seats: a held
 * answer's seats go into the seat ledger, checked against what was asked;
 * a taken answer's seats are remembered (they must be held at the end); a
 * sold_out answer is tallied by its qty with its available and max_adjacent.
 * Verification's get_hold compares each hold's seats with its held answer's.
 * The checks after the run are in seated_verify.c.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "exit.h"
#include "limits.h"
#include "seated.h"
#include "util.h"

int bench_seated_open(bench_run *run)
{
    const bench_config *cfg = run->cfg;
    if (!cfg->seats)
        return 0;
    bench_seated *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    run->seated = s;
    s->map = cfg->seats;
    s->mode = cfg->seat_mode;
    s->shards = cfg->shards;
    s->sold_out_min_available = s->sold_out_min_adjacent = UINT64_MAX;
    if (!(s->taken_seen = calloc(s->map->nseats, 1)))
        return -1;
    return 0;
}

void bench_seated_free(bench_run *run, bench_config *cfg)
{
    bench_seated *s = run ? run->seated : NULL;
    if (s) {
        free(s->seat_of);
        free(s->first);
        free(s->nof);
        free(s->taken_seen);
        free(s->owner);
        free(s);
        run->seated = NULL;
    }
    if (cfg && cfg->seats) {
        bench_seats_free(cfg->seats);
        free(cfg->seats);
        cfg->seats = NULL;
    }
}

void bench_seated_ticket(bench_run *run, bench_conn *c, bench_ticket *t)
{
    bench_seated *s = run->seated;
    if (!run->events[t->event].measured)
        return;
    if (s->mode == BENCH_SEAT_ADJACENT) {
        t->flags |= BENCH_TICKET_ADJACENT;
        return;
    }
    t->flags |= BENCH_TICKET_NAMED;
    t->seat = bench_seats_pick(s->map, t->qty, bench_rand(&c->rng));
}

/* The first answer that did not fit, in words (printf-style), for the report. */
static void note(bench_seated *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(bench_seated *s, const char *fmt, ...)
{
    if (s->first_bad[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->first_bad, sizeof(s->first_bad), fmt, ap);
    va_end(ap);
}

/* The answer's seat ids as indices into out[] (at most BENCH_SEAT_QTY_MAX); their count, or -1
 * when one is not of the map or the answer named more than the bench keeps. */
static long seats_of(const bench_seated *s, const bench_result *r, uint32_t *out)
{
    if (r->seats_cut)
        return -1;
    for (uint32_t i = 0; i < r->nseats; i++) {
        const char *id = r->seat_text + r->seat_off[i];
        long k = bench_seats_find(s->map, id, strlen(id));
        if (k < 0)
            return -1;
        out[i] = (uint32_t)k;
    }
    return (long)r->nseats;
}

void bench_seated_held(bench_run *run, long idx, const bench_ticket *t, const bench_result *r)
{
    bench_seated *s = run->seated;
    if (idx < 0 || !run->events[t->event].measured)
        return;
    uint32_t seats[BENCH_SEAT_QTY_MAX];
    long n = seats_of(s, r, seats);
    bool fits = n == (long)t->qty;
    if (fits && s->mode == BENCH_SEAT_ADJACENT)
        fits = bench_seats_adjacent(s->map, seats, (uint32_t)n);
    for (long i = 0; fits && s->mode == BENCH_SEAT_NAMED && i < n; i++)
        fits = seats[i] == t->seat + (uint32_t)i;
    if (!fits) {
        s->bad_held++;
        note(s, "hold %.*s (qty %u): its answer named %" PRIu32 " seats%s, %s", (int)r->hold_len, r->hold,
             (unsigned)t->qty, r->nseats, r->seats_cut ? " (more than the bench keeps)" : "",
             n < 0                            ? "one not of the map"
             : s->mode == BENCH_SEAT_ADJACENT ? "not qty adjacent"
                                              : "not those asked");
        n = n < 0 ? 0 : n;
    }
    size_t old_cap = s->holds_cap;
    bool ok = bench_grow((void **)&s->first, &s->holds_cap, (size_t)idx + 1, sizeof(uint32_t));
    uint8_t *nof = ok && s->holds_cap != old_cap ? realloc(s->nof, s->holds_cap) : s->nof;
    if (nof)
        s->nof = nof;
    if (!ok || !nof || !bench_grow((void **)&s->seat_of, &s->seat_cap, s->nseat_of + (size_t)n, sizeof(uint32_t))) {
        bench_fail(run, BENCH_EXIT_FAILED, "out of memory for the seat ledger");
        return;
    }
    s->first[idx] = (uint32_t)s->nseat_of;
    s->nof[idx] = (uint8_t)n;
    memcpy(s->seat_of + s->nseat_of, seats, (size_t)n * sizeof(uint32_t));
    s->nseat_of += (size_t)n;
}

void bench_seated_taken(bench_run *run, const bench_ticket *t, const bench_result *r)
{
    bench_seated *s = run->seated;
    s->taken++;
    uint32_t seats[BENCH_SEAT_QTY_MAX];
    long n = seats_of(s, r, seats);
    bool fits = (t->flags & BENCH_TICKET_NAMED) && n > 0 && n <= (long)t->qty;
    for (long i = 0; fits && i < n; i++) {
        fits = seats[i] >= t->seat && seats[i] < t->seat + t->qty && (i == 0 || seats[i] > seats[i - 1]);
        s->taken_seen[seats[i]] = 1;
    }
    s->taken_seats += n > 0 ? (uint64_t)n : 0;
    if (!fits) {
        s->bad_taken++;
        note(s, "a taken answer named %" PRIu32 " seats%s for a %s hold of %u", r->nseats,
             n < 0 ? " (one not of the map)" : " not among those asked, in request order",
             (t->flags & BENCH_TICKET_NAMED) ? "named" : "adjacent", (unsigned)t->qty);
    }
}

bool bench_seated_sold_out(bench_run *run, const bench_ticket *t, const bench_result *r)
{
    bench_seated *s = run->seated;
    if (!run->events[t->event].measured)
        return true;
    s->sold_out_by_qty[t->qty <= BENCH_SEAT_QTY_MAX ? t->qty : 0]++;
    if (r->available < s->sold_out_min_available)
        s->sold_out_min_available = r->available;
    if (r->has_max_adjacent && r->max_adjacent < s->sold_out_min_adjacent)
        s->sold_out_min_adjacent = r->max_adjacent;
    if (s->sold_out_min_qty == 0 || t->qty < s->sold_out_min_qty)
        s->sold_out_min_qty = t->qty;
    /* --named is answered taken, never sold_out ("also when the event has no free seat at all") */
    bool fits = s->mode == BENCH_SEAT_ADJACENT && r->has_max_adjacent && r->max_adjacent < t->qty;
    if (!fits) {
        s->bad_sold_out++;
        note(s, "a sold_out answer to a %s hold of %u said max_adjacent %s%" PRIu64,
             s->mode == BENCH_SEAT_ADJACENT ? "adjacent" : "named", (unsigned)t->qty,
             r->has_max_adjacent ? "" : "(none) ", r->max_adjacent);
    }
    return fits;
}

void bench_seated_got(bench_run *run, size_t idx, const bench_result *r)
{
    bench_seated *s = run->seated;
    if (!r->ok || idx >= s->holds_cap || !run->events[run->ledger.holds[idx].event].measured)
        return;
    s->got++;
    if (!s->owner) {
        if (!(s->owner = malloc((size_t)s->map->nseats * sizeof(uint32_t)))) {
            bench_fail(run, BENCH_EXIT_FAILED, "out of memory for the seat owners");
            return;
        }
        for (uint32_t i = 0; i < s->map->nseats; i++)
            s->owner[i] = BENCH_SEAT_NOBODY;
    }
    uint32_t seats[BENCH_SEAT_QTY_MAX];
    long n = seats_of(s, r, seats);
    const uint32_t *want = s->seat_of + s->first[idx];
    bool same = n == (long)s->nof[idx] && memcmp(seats, want, (size_t)s->nof[idx] * sizeof(uint32_t)) == 0;
    if (!same) {
        s->got_differs++;
        note(s, "get_hold of ledger hold %zu named %" PRIu32 " seats%s, not the %u of its held answer", idx, r->nseats,
             n < 0 ? " (one not of the map)" : "", (unsigned)s->nof[idx]);
    }
    if (n > 0) /* what get_hold says the hold has is what the target keeps: those are checked */
        bench_seats_own(s->map, s->owner, (uint32_t)idx, seats, (uint32_t)n, &s->tally);
}
