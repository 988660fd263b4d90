/*
 * bench/seated.h — hot-release --seated FILE --adjacent | --named as a run
 * sees it (seated.c, seated_verify.c; docs/protocol.md, "Seated events"):
 * the seats of every acknowledged hold as its answer named them (the seat
 * ledger, beside bench_ledger), what the taken and sold_out answers said,
 * and the checks after the run: get_hold's seats against the answers', no
 * seat in two holds, seat_map against the holds, every sold_out possible,
 * single free seats left — and those an offline first-fit without the
 * orphan rule leaves for the same acknowledged requests.
 *
 * The map is the configuration's (options_seated.c loads it); the rest is
 * owned by the run (bench_seated_free). Single-threaded: --seated runs on one
 * loop (options_seated.c refuses --threads), the scenario's thread.
 */
#ifndef SLOT_BENCH_SEATED_H
#define SLOT_BENCH_SEATED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "engine.h"
#include "seats.h"
#include "wire.h"

struct bench_verdict;

typedef struct bench_seated {
    const bench_seats *map; /* the configuration's (borrowed) */
    uint8_t mode;           /* BENCH_SEAT_ADJACENT or BENCH_SEAT_NAMED */
    uint32_t shards;        /* the event's (the model's shard order) */
    /* the seat ledger: ledger entry i's answer named nof[i] seats, seat_of[first[i]..] in its order */
    uint32_t *seat_of;
    size_t nseat_of, seat_cap;
    uint32_t *first;
    uint8_t *nof;
    size_t holds_cap;
    uint8_t *taken_seen; /* nseats: some taken answer named the seat */
    /* the answers */
    uint64_t taken, taken_seats;
    uint64_t bad_taken;    /* taken answers naming a seat the request did not, none, or an unknown id */
    uint64_t bad_held;     /* held answers whose seats are not qty, not adjacent, not the named ones, unknown */
    uint64_t bad_sold_out; /* sold_out without max_adjacent, or with max_adjacent >= qty; any for --named */
    uint64_t sold_out_by_qty[BENCH_SEAT_QTY_MAX + 1];
    uint64_t sold_out_min_available, sold_out_min_adjacent; /* over the sold_out answers (UINT64_MAX: none) */
    uint32_t sold_out_min_qty;                              /* the smallest qty answered sold_out (0: none) */
    /* verification */
    uint64_t got, got_differs; /* get_hold answers read; those whose seats differ from the held answer's */
    char first_bad[300];       /* the first answer that did not fit, in words */
    bench_seat_tally tally;    /* owner checks and seat_map's (bench_seats_own, bench_seats_compare) */
    uint32_t *owner;           /* nseats, the verification's */
    bool mapped;               /* seat_map was read and compared */
    size_t map_bytes;          /* its reply's length */
    double map_ms;             /* how long it took */
    /* the offline model: first-fit without the orphan rule, the same acknowledged (qty) in answer order */
    uint64_t model_singles, model_longest, model_free, model_refused;
} bench_seated;

/*
 * bench_seated_open — run->seated for a --seated run (cfg->seats set), else nothing: the seat
 * ledger's and taken_seen's memory. 0, or -1 out of memory. Freed by bench_seated_free.
 */
int bench_seated_open(bench_run *run);
/* bench_seated_free — free run->seated and cfg->seats (the configuration's map: the run is its last user). */
void bench_seated_free(bench_run *run, bench_config *cfg);

/* bench_seated_ticket — a new hold t of the measured event: the flag of the run's mode, and for
 * --named its first seat (bench_seats_pick of t->qty with a random value of c's stream). */
void bench_seated_ticket(bench_run *run, bench_conn *c, bench_ticket *t);
/* bench_seated_held — the held answer r to t, kept as ledger entry idx (the last one): its seats
 * into the seat ledger, checked (qty of them, known ids, adjacent, the named ones). */
void bench_seated_held(bench_run *run, long idx, const bench_ticket *t, const bench_result *r);
/* bench_seated_taken — a taken answer r to t: its seats into taken_seen (each must be one t named). */
void bench_seated_taken(bench_run *run, const bench_ticket *t, const bench_result *r);
/* bench_seated_sold_out — a sold_out answer r to t: tallied by qty; false when it does not fit
 * (counted in bad_sold_out). */
bool bench_seated_sold_out(bench_run *run, const bench_ticket *t, const bench_result *r);
/* bench_seated_got — verification: get_hold's answer r for ledger entry idx; its seats must be
 * the held answer's, in order; then they go to the owner check (bench_seats_own). */
void bench_seated_got(bench_run *run, size_t idx, const bench_result *r);

/*
 * bench_seated_verify (seated_verify.c) — after the ledger check: seat_map of the event against
 * the holds' seats, the sold_out answers against the final map, the offline model; every
 * difference a problem in v. 0, or an exit status when the target could not be asked.
 */
int bench_seated_verify(bench_run *run, struct bench_verdict *v);
/* bench_seated_print / bench_seated_json — the report's seat lines on f, and the same as a new
 * JSON object (the caller's reference; NULL out of memory). */
void bench_seated_print(const bench_run *run, FILE *f);
json_t *bench_seated_json(const bench_run *run);

#endif
