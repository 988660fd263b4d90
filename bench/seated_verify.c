/*
 * seated_verify.c — hot-release --seated after the ledger check (seated.h):
 *
 *   (a) every acknowledged hold's seats, as get_hold names them, are its held
 *       answer's (seated.c, bench_seated_got) and no seat is in two holds;
 *   (b) seat_map shows exactly those seats held, nothing confirmed, every seat
 *       a taken answer named held by someone;
 *   (c) every sold_out answer was possible: see sold_out_checks;
 *   (d) the single free seats left (a free seat between two taken ones, or a
 *       taken one and the row's end), and — since the protocol has no setting
 *       that turns the orphan rule off — the singles an offline first-fit
 *       model without the rule leaves when it is given the same acknowledged
 *       requests (model below). The model is the bench's, not the server's.
 *
 * Single-threaded: the scenario's thread, after the load.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exit.h"
#include "limits.h"
#include "seated.h"
#include "verify.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The first free run of qty seats in row (of st: 0 free, 1 taken), its first index; -1 none. */
static long first_fit(const bench_seats *m, const uint8_t *st, uint32_t row, uint32_t qty)
{
    const bench_seat_row *r = &m->rows[row];
    uint32_t len = (uint32_t)(r->to - r->from + 1u), run = 0;
    for (uint32_t i = 0; i < len; i++) {
        run = st[r->base + i] ? 0 : run + 1;
        if (run == qty)
            return (long)(r->base + i + 1 - qty);
    }
    return -1;
}

/*
 * The offline model of (d): the acknowledged adjacent holds in ledger order (the order their
 * answers came: one loop, so that is the order the bench saw them committed), each its qty,
 * placed by first-fit with no orphan rule: the server's search (src/alloc/seat_hold.c,
 * pick_adjacent: shards in turn from a start, each shard's rows in map order, the first run of
 * qty) with "the first choice" always taken. The start is the shard of the row the server gave
 * that hold (the server's random start is not in its answer; when the server moved past empty
 * shards this start is later than its own). A hold the model cannot place counts as refused.
 * The bench's requests name no category or section, so none is modelled.
 */
static void model(bench_seated *s, const bench_ledger *l)
{
    const bench_seats *m = s->map;
    uint8_t *st = calloc(m->nseats, 1);
    uint32_t *row_free = calloc(m->nrows, sizeof(uint32_t));
    uint32_t shards = s->shards ? s->shards : 1;
    if (!st || !row_free) {
        free(st);
        free(row_free);
        s->model_refused = UINT64_MAX;
        return;
    }
    for (uint32_t i = 0; i < m->nrows; i++)
        row_free[i] = (uint32_t)(m->rows[i].to - m->rows[i].from + 1u);
    for (size_t h = 0; h < l->n && h < s->holds_cap; h++) {
        uint32_t qty = s->nof[h];
        if (qty == 0)
            continue;
        uint32_t start = bench_seats_row_of(m, s->seat_of[s->first[h]]) % shards;
        long at = -1;
        uint32_t row = 0;
        for (uint32_t k = 0; at < 0 && k < shards; k++)
            for (row = (start + k) % shards; row < m->nrows; row += shards)
                if (row_free[row] >= qty && (at = first_fit(m, st, row, qty)) >= 0)
                    break;
        if (at < 0) {
            s->model_refused++;
            continue;
        }
        memset(st + at, 1, qty);
        row_free[row] -= qty;
    }
    for (uint32_t i = 0; i < m->nrows; i++) {
        const bench_seat_row *r = &m->rows[i];
        uint32_t len = (uint32_t)(r->to - r->from + 1u), run = 0;
        for (uint32_t k = 0; k <= len; k++) {
            if (k < len && !st[r->base + k]) {
                run++;
                s->model_free++;
                continue;
            }
            s->model_singles += run == 1 && len > 1;
            if (run > s->model_longest)
                s->model_longest = run;
            run = 0;
        }
    }
    free(st);
    free(row_free);
}

/*
 * (c) Every sold_out answer came when no free run of its qty existed. The bench cannot see the
 * map at the moment of the answer, only at the end, so the argument is this: in hot-release
 * nothing ever comes back — the bench never confirms, releases or cancels, and the event's
 * holds live SLOT_HOLD_TTL_MS_MAX (24 h), far past the run; the ledger check has just seen
 * every acknowledged hold still held. So the taken seats only grew during the run, the final
 * free seats are a subset of the free seats at any sold_out, and a free run at the end was
 * free (and a run) at every earlier moment. Hence, for a sold_out of qty N with available F and
 * max_adjacent M (the event's longest free run then; the requests name no category or section):
 * the final longest free run L must be < N, <= M, and the final free seats <= F. A final L >= N
 * proves that sold_out wrong. (The converse does not hold: a wrong sold_out whose run was taken
 * later by another hold is not seen — the answer's own max_adjacent < N is checked for each
 * answer as it comes, seated.c.) Checked against the smallest N, M and F over all answers,
 * which implies every answer's.
 */
static void sold_out_checks(const bench_seated *s, bench_verdict *v)
{
    const bench_seat_tally *t = &s->tally;
    if (s->sold_out_min_qty && t->longest_free >= s->sold_out_min_qty)
        bench_problem(v,
                      "a sold_out answered a hold of %u adjacent seats, yet the final seat_map has a free run of "
                      "%" PRIu64 " (nothing came back during the run, so it was free then)",
                      s->sold_out_min_qty, t->longest_free);
    if (s->sold_out_min_adjacent != UINT64_MAX && t->longest_free > s->sold_out_min_adjacent)
        bench_problem(v, "a sold_out said max_adjacent %" PRIu64 ", the final seat_map has a free run of %" PRIu64,
                      s->sold_out_min_adjacent, t->longest_free);
    if (s->sold_out_min_available != UINT64_MAX && t->map_free > s->sold_out_min_available)
        bench_problem(v, "a sold_out said available %" PRIu64 ", the final seat_map has %" PRIu64 " free seats",
                      s->sold_out_min_available, t->map_free);
}

/* The answers' and get_hold's checks, (a) and (b). */
static void seat_checks(const bench_run *run, const bench_seated *s, bench_verdict *v)
{
    const bench_seat_tally *t = &s->tally;
    const bench_event *e = &run->events[0];
    if (s->bad_held || s->bad_taken || s->bad_sold_out || s->got_differs)
        bench_problem(v,
                      "seats: %" PRIu64 " held answers, %" PRIu64 " taken answers, %" PRIu64
                      " sold_out answers did not fit the request, %" PRIu64
                      " holds' get_hold seats differ from their answers' (first: %s)",
                      s->bad_held, s->bad_taken, s->bad_sold_out, s->got_differs, s->first_bad);
    if (s->got != run->ledger.n)
        bench_problem(v, "seats: get_hold named the seats of %" PRIu64 " of %zu holds", s->got, run->ledger.n);
    if (t->duplicates)
        bench_problem(v, "%" PRIu64 " seats are held by two acknowledged holds (first: %s)", t->duplicates, t->first);
    uint64_t off = t->held_not_owned + t->owned_not_held + t->taken_not_held + t->bad_rows + t->map_confirmed;
    if (off && !t->duplicates)
        bench_problem(v,
                      "seat_map differs from the holds: %" PRIu64 " held seats no hold has, %" PRIu64
                      " seats of holds not held, %" PRIu64 " taken seats nobody holds, %" PRIu64 " bad rows, %" PRIu64
                      " confirmed (first: %s)",
                      t->held_not_owned, t->owned_not_held, t->taken_not_held, t->bad_rows, t->map_confirmed, t->first);
    if (t->owned != e->held_units || t->map_held != e->held_units)
        bench_problem(v,
                      "seats: the holds have %" PRIu64 " seats, seat_map shows %" PRIu64
                      " held, the answers held %" PRIu64,
                      t->owned, t->map_held, e->held_units);
}

int bench_seated_verify(bench_run *run, bench_verdict *v)
{
    bench_seated *s = run->seated;
    const bench_event *e = &run->events[0];
    char err[512];
    if (!run->drv->seat_map) {
        bench_problem(v, "seats: the %s target has no seat_map", run->drv->name);
        return 0;
    }
    if (!s->owner && !(s->owner = malloc((size_t)s->map->nseats * sizeof(uint32_t)))) {
        bench_problem(v, "seats: out of memory");
        return 0;
    }
    if (s->got == 0) /* no get_hold answer made the owner array: nobody holds anything */
        for (uint32_t i = 0; i < s->map->nseats; i++)
            s->owner[i] = BENCH_SEAT_NOBODY;
    json_t *rows = NULL;
    double t0 = now_ms();
    int rc = run->drv->seat_map(run->admin, e->name, &rows, &s->map_bytes, err, sizeof(err));
    s->map_ms = now_ms() - t0;
    if (rc == BENCH_EXIT_CONNECTION)
        return rc;
    if (rc) {
        bench_problem(v, "%s", err);
        return 0;
    }
    bench_seats_compare(s->map, s->owner, s->taken_seen, rows, &s->tally);
    json_decref(rows);
    s->mapped = true;
    seat_checks(run, s, v);
    if (s->mode == BENCH_SEAT_ADJACENT) {
        sold_out_checks(s, v);
        model(s, &run->ledger);
    }
    return 0;
}

void bench_seated_print(const bench_run *run, FILE *f)
{
    const bench_seated *s = run->seated;
    if (!s)
        return;
    const bench_seat_tally *t = &s->tally;
    fprintf(f,
            "  seats             %s, %u seats in %u rows of %u sections; %" PRIu64 " taken answers (%" PRIu64
            " seats)\n",
            s->mode == BENCH_SEAT_ADJACENT ? "adjacent" : "named", s->map->nseats, s->map->nrows, s->map->nsections,
            s->taken, s->taken_seats);
    if (s->mode == BENCH_SEAT_ADJACENT) {
        fprintf(f, "  sold_out by qty  ");
        for (uint32_t q = 1; q <= BENCH_SEAT_QTY_MAX; q++)
            if (s->sold_out_by_qty[q])
                fprintf(f, " %u:%" PRIu64, q, s->sold_out_by_qty[q]);
        fprintf(f, "%s\n", s->sold_out_min_qty ? "" : " none");
    }
    if (!s->mapped)
        return;
    fprintf(f,
            "  seat checks       %" PRIu64 " holds' seats by get_hold (%" PRIu64 " differ from the answers), %" PRIu64
            " in two holds; seat_map: %" PRIu64 " held, %" PRIu64 " free, %" PRIu64 " off\n",
            s->got, s->got_differs, t->duplicates, t->map_held, t->map_free,
            t->held_not_owned + t->owned_not_held + t->taken_not_held + t->bad_rows + t->map_confirmed);
    fprintf(f, "  free seats left   %" PRIu64 " single (%s), longest free run %" PRIu64 "\n", t->singles,
            s->mode == BENCH_SEAT_ADJACENT ? "the server, orphan rule on" : "named holds: the buyers chose them",
            t->longest_free);
    if (s->mode == BENCH_SEAT_ADJACENT)
        fprintf(f,
                "  without the rule  %" PRIu64 " single, longest free run %" PRIu64 ", %" PRIu64
                " refused (an offline first-fit in the bench, the same acknowledged requests; the server has no "
                "setting to turn the rule off)\n",
                s->model_singles, s->model_longest, s->model_refused);
    fprintf(f, "  seat_map          %zu bytes in %.1f ms\n", s->map_bytes, s->map_ms);
}

json_t *bench_seated_json(const bench_run *run)
{
    const bench_seated *s = run->seated;
    const bench_seat_tally *t = &s->tally;
    json_t *by = json_object();
    for (uint32_t q = 1; by && q <= BENCH_SEAT_QTY_MAX; q++)
        if (s->sold_out_by_qty[q]) {
            char k[8];
            snprintf(k, sizeof(k), "%u", q);
            json_object_set_new(by, k, json_integer((json_int_t)s->sold_out_by_qty[q]));
        }
    json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:o}", "mode",
                          s->mode == BENCH_SEAT_ADJACENT ? "adjacent" : "named", "seats", (int)s->map->nseats, "rows",
                          (int)s->map->nrows, "sections", (int)s->map->nsections, "taken", (json_int_t)s->taken,
                          "taken_seats", (json_int_t)s->taken_seats, "bad_held", (json_int_t)s->bad_held, "bad_taken",
                          (json_int_t)s->bad_taken, "bad_sold_out", (json_int_t)s->bad_sold_out, "sold_out_by_qty",
                          by ? by : json_null());
    if (!o)
        return NULL;
    if (s->mapped) {
        json_object_set_new(o, "checks",
                            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "get_hold", (json_int_t)s->got,
                                      "get_hold_differ", (json_int_t)s->got_differs, "duplicates",
                                      (json_int_t)t->duplicates, "map_held", (json_int_t)t->map_held, "map_free",
                                      (json_int_t)t->map_free, "held_not_owned", (json_int_t)t->held_not_owned,
                                      "owned_not_held", (json_int_t)t->owned_not_held, "taken_not_held",
                                      (json_int_t)t->taken_not_held));
        json_object_set_new(o, "singles", json_integer((json_int_t)t->singles));
        json_object_set_new(o, "longest_free", json_integer((json_int_t)t->longest_free));
        json_object_set_new(o, "seat_map", json_pack("{s:I, s:f}", "bytes", (json_int_t)s->map_bytes, "ms", s->map_ms));
    }
    if (s->mapped && s->mode == BENCH_SEAT_ADJACENT)
        json_object_set_new(o, "without_orphan_rule",
                            json_pack("{s:s, s:I, s:I, s:I}", "source", "bench offline first-fit model", "singles",
                                      (json_int_t)s->model_singles, "longest_free", (json_int_t)s->model_longest,
                                      "refused", (json_int_t)s->model_refused));
    return o;
}
