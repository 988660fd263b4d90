/*
 * bench/seats.h — hot-release --seated FILE (seats.c): the seat map of a
 * seated event (docs/protocol.md, "Seated events"), read from FILE in
 * create_event's "seats" format, as the bench needs it: every seat by an
 * index 0..nseats-1 (rows in map order, seats in number order), its id
 * "SECTION-ROW-NUMBER", and the checks of the end of a run: every seat held
 * by at most one acknowledged hold, those seats and seat_map agreeing, single
 * free seats left between taken ones, the longest free run.
 *
 * The map is read once before the run and is read-only afterwards; the
 * checks work on arrays the caller owns. Nothing here talks to the target or
 * knows the engine, so tests/test_bench_seats.c runs it on its own.
 * Single-threaded: the thread that runs the scenario.
 */
#ifndef SLOT_BENCH_SEATS_H
#define SLOT_BENCH_SEATS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "limits.h"

#define BENCH_SEAT_NOBODY UINT32_MAX /* an owner array's entry: no hold has the seat */

/* One row: "SECTION-ROW", its numbers from..to, and the index of its first seat. */
typedef struct bench_seat_row {
    char name[2 * SLOT_SEAT_NAME_BYTES_MAX + 2];
    uint8_t name_len;
    uint16_t from, to;
    uint32_t base;
} bench_seat_row;

typedef struct bench_seats {
    json_t *def;          /* the file's object: create_event's "seats" as it is sent (owned) */
    bench_seat_row *rows; /* nrows, in map order */
    uint32_t *by_name;    /* row indices sorted by name: the lookup of an id */
    uint32_t nrows, nsections;
    uint32_t row_max; /* the longest row's seats */
    uint32_t nseats;  /* 1..SLOT_SEATS_MAX */
} bench_seats;

/*
 * bench_seats_load — read the seat map in FILE (path; at most
 * BENCH_SEAT_MAP_BYTES_MAX bytes of JSON: {"sections":[{"name":..,"rows":
 * [{"name":..,"from":..,"to":..,"category":..}]}]}) into *m, checking what
 * the server checks of names, ranges, duplicates and counts (so the bench's
 * seat numbering is the server's). Returns 0, or -1 with a sentence naming
 * the file and the bad member in err (errlen bytes); *m is then empty.
 * m's memory is owned by m until bench_seats_free.
 */
int bench_seats_load(const char *path, bench_seats *m, char *err, size_t errlen);
/* bench_seats_free — free m's memory (a zeroed or freed m is fine); m is empty afterwards. */
void bench_seats_free(bench_seats *m);

/* bench_seats_row_of — the row (index into m->rows) of seat 0..nseats-1. O(log rows). */
uint32_t bench_seats_row_of(const bench_seats *m, uint32_t seat);
/* bench_seats_id — seat's id "SECTION-ROW-NUMBER" into buf (cap bytes, NUL-ended, cut to fit);
 * returns its length without the NUL. */
size_t bench_seats_id(const bench_seats *m, uint32_t seat, char *buf, size_t cap);
/* bench_seats_find — the index of the seat whose id is id (len bytes, not NUL-ended), or -1
 * for an id not of this map. O(log rows). */
long bench_seats_find(const bench_seats *m, const char *id, size_t len);
/*
 * bench_seats_pick — --named: the first seat of qty (1..row_max) seats next to each other in
 * one row, from the random value r: a seat drawn uniformly, then the run that starts there,
 * moved back to fit in its row; a row shorter than qty passes the draw on to the next row that
 * is long enough (one exists: qty <= row_max).
 */
uint32_t bench_seats_pick(const bench_seats *m, uint32_t qty, uint64_t r);
/* bench_seats_adjacent — the n seats (indices, in the order given) follow each other in one row. */
bool bench_seats_adjacent(const bench_seats *m, const uint32_t *seats, uint32_t n);

/* What the end of a run found (bench_seats_own, bench_seats_compare add to it; zero it first). */
typedef struct bench_seat_tally {
    uint64_t owned;                   /* seats of acknowledged holds, as get_hold named them, counted once */
    uint64_t duplicates;              /* seats named by a second hold */
    uint64_t map_free, map_held, map_confirmed;
    uint64_t held_not_owned;          /* seat_map shows them held; no acknowledged hold has them */
    uint64_t owned_not_held;          /* an acknowledged hold has them; seat_map shows them otherwise */
    uint64_t taken_not_held;          /* a taken answer named them; at the end nobody holds them */
    uint64_t bad_rows;                /* rows seat_map lacks, or shows with the wrong length or state letters */
    uint64_t singles;                 /* free runs of exactly one seat, in rows of more than one seat */
    uint64_t longest_free;            /* the longest run of free seats in a row */
    char first[300];                  /* the first difference found, in words ("" when none) */
} bench_seat_tally;

/*
 * bench_seats_own — hold (its index, not BENCH_SEAT_NOBODY) has the n seats (indices < nseats):
 * each goes into owner[] (nseats entries, BENCH_SEAT_NOBODY for none; the caller's); a seat
 * already owned by another hold counts as a duplicate in t (the first named in t->first with
 * both holds' numbers), otherwise as owned.
 */
void bench_seats_own(const bench_seats *m, uint32_t *owner, uint32_t hold, const uint32_t *seats, uint32_t n,
                     bench_seat_tally *t);
/*
 * bench_seats_compare — seat_map's "rows" object (rows: borrowed; {"SEC-ROW":"..hhc.."}) against
 * owner[] (from bench_seats_own) and, when not NULL, taken_seen[] (nseats bytes, non-zero for the
 * seats some taken answer named): held letters for exactly the owned seats, no confirmed seat,
 * every seat named taken held by someone; and the map's free seats, single free seats and longest
 * free run into t. Rows missing, of the wrong length or with other letters are bad_rows.
 */
void bench_seats_compare(const bench_seats *m, const uint32_t *owner, const uint8_t *taken_seen, json_t *rows,
                         bench_seat_tally *t);

#endif
