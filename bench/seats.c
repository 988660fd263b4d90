/*
 * seats.c — hot-release --seated FILE: the seat map as the bench numbers it,
 * seat ids both ways, the --named buyers' picks, and the end-of-run checks of
 * the seats (seats.h). The rules of the map are docs/protocol.md's, "Seated
 * events": names 1..16 bytes of [A-Za-z0-9], numbers 1..65535, from <= to,
 * at most 4,096 seats a row, 65,536 rows and 1,000,000 seats; a seat's id is
 * SECTION-ROW-NUMBER; seats are adjacent when their numbers follow each other
 * in one row. Categories are left to the server (it refuses bad ones).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "seats.h"

static bool name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > SLOT_SEAT_NAME_BYTES_MAX)
        return false;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") == n;
}

static const bench_seats *sort_map; /* qsort has no context argument; the load is single-threaded */

static int by_name_cmp(const void *x, const void *y)
{
    const bench_seat_row *a = &sort_map->rows[*(const uint32_t *)x], *b = &sort_map->rows[*(const uint32_t *)y];
    return strcmp(a->name, b->name);
}

/* One row of section sec (its name s) into m->rows. 0, or -1 with err. */
static int load_row(bench_seats *m, const char *path, size_t si, const char *s, size_t ri, json_t *row, char *err,
                    size_t errlen)
{
    const char *rn = json_string_value(json_object_get(row, "name"));
    json_t *from = json_object_get(row, "from"), *to = json_object_get(row, "to");
    json_int_t f = json_integer_value(from), t = json_integer_value(to);
    if (!json_is_object(row) || !name_ok(rn)) {
        snprintf(err, errlen, "%s: sections[%zu].rows[%zu]: a row needs a name of 1..%d bytes of [A-Za-z0-9]", path,
                 si, ri, SLOT_SEAT_NAME_BYTES_MAX);
        return -1;
    }
    if (!json_is_integer(from) || !json_is_integer(to) || f < 1 || t > SLOT_SEAT_NUMBER_MAX || f > t ||
        t - f + 1 > SLOT_SEAT_ROW_SEATS_MAX) {
        snprintf(err, errlen,
                 "%s: row %s-%s: from and to must be numbers 1..%d with from <= to and at most %d seats a row", path,
                 s, rn, SLOT_SEAT_NUMBER_MAX, SLOT_SEAT_ROW_SEATS_MAX);
        return -1;
    }
    if (m->nrows >= SLOT_SEAT_ROWS_MAX || m->nseats + (uint64_t)(t - f + 1) > SLOT_SEATS_MAX) {
        snprintf(err, errlen, "%s: more than %d rows or %d seats (at row %s-%s)", path, SLOT_SEAT_ROWS_MAX,
                 SLOT_SEATS_MAX, s, rn);
        return -1;
    }
    bench_seat_row *r = &m->rows[m->nrows++];
    r->name_len = (uint8_t)snprintf(r->name, sizeof(r->name), "%s-%s", s, rn);
    r->from = (uint16_t)f;
    r->to = (uint16_t)t;
    r->base = m->nseats;
    m->nseats += (uint32_t)(t - f + 1);
    if ((uint32_t)(t - f + 1) > m->row_max)
        m->row_max = (uint32_t)(t - f + 1);
    return 0;
}

/* The sections of m->def into rows; then the lookup order and the duplicate check. 0 or -1 with err. */
static int load_rows(bench_seats *m, const char *path, char *err, size_t errlen)
{
    json_t *secs = json_object_get(m->def, "sections");
    size_t nsec = json_array_size(secs), nrows = 0;
    if (!json_is_array(secs) || nsec == 0 || nsec > SLOT_SEAT_SECTIONS_MAX) {
        snprintf(err, errlen, "%s: not a seat map: no \"sections\" array of 1..%d sections", path,
                 SLOT_SEAT_SECTIONS_MAX);
        return -1;
    }
    for (size_t i = 0; i < nsec; i++)
        nrows += json_array_size(json_object_get(json_array_get(secs, i), "rows"));
    if (nrows == 0 || nrows > SLOT_SEAT_ROWS_MAX) {
        snprintf(err, errlen, "%s: %zu rows (1..%d)", path, nrows, SLOT_SEAT_ROWS_MAX);
        return -1;
    }
    if (!(m->rows = calloc(nrows, sizeof(*m->rows))) || !(m->by_name = calloc(nrows, sizeof(uint32_t)))) {
        snprintf(err, errlen, "%s: out of memory for %zu rows", path, nrows);
        return -1;
    }
    for (size_t i = 0; i < nsec; i++) {
        json_t *sec = json_array_get(secs, i), *rows = json_object_get(sec, "rows");
        const char *s = json_string_value(json_object_get(sec, "name"));
        if (!name_ok(s) || !json_is_array(rows) || json_array_size(rows) == 0) {
            snprintf(err, errlen, "%s: sections[%zu]: a section needs a name of 1..%d bytes of [A-Za-z0-9] and rows",
                     path, i, SLOT_SEAT_NAME_BYTES_MAX);
            return -1;
        }
        for (size_t k = 0; k < json_array_size(rows); k++)
            if (load_row(m, path, i, s, k, json_array_get(rows, k), err, errlen) < 0)
                return -1;
    }
    m->nsections = (uint32_t)nsec;
    for (uint32_t i = 0; i < m->nrows; i++)
        m->by_name[i] = i;
    sort_map = m;
    qsort(m->by_name, m->nrows, sizeof(uint32_t), by_name_cmp);
    sort_map = NULL;
    for (uint32_t i = 1; i < m->nrows; i++)
        if (strcmp(m->rows[m->by_name[i - 1]].name, m->rows[m->by_name[i]].name) == 0) {
            snprintf(err, errlen, "%s: row %s is there twice (a duplicate section or row)", path,
                     m->rows[m->by_name[i]].name);
            return -1;
        }
    return 0;
}

int bench_seats_load(const char *path, bench_seats *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof(*m));
    struct stat st;
    if (stat(path, &st) < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (st.st_size > BENCH_SEAT_MAP_BYTES_MAX) {
        snprintf(err, errlen, "%s: %lld bytes, above the %d a seat map may have", path, (long long)st.st_size,
                 BENCH_SEAT_MAP_BYTES_MAX);
        return -1;
    }
    json_error_t je;
    if (!(m->def = json_load_file(path, JSON_REJECT_DUPLICATES, &je))) {
        snprintf(err, errlen, "%s: line %d: %s", path, je.line, je.text);
        return -1;
    }
    if (!json_is_object(m->def) || load_rows(m, path, err, errlen) < 0) {
        if (!json_is_object(m->def))
            snprintf(err, errlen, "%s: not a seat map: the file must be one JSON object with \"sections\"", path);
        bench_seats_free(m);
        return -1;
    }
    return 0;
}

void bench_seats_free(bench_seats *m)
{
    json_decref(m->def);
    free(m->rows);
    free(m->by_name);
    memset(m, 0, sizeof(*m));
}

uint32_t bench_seats_row_of(const bench_seats *m, uint32_t seat)
{
    uint32_t lo = 0, hi = m->nrows - 1;
    while (lo < hi) { /* the last row whose base is <= seat */
        uint32_t mid = (lo + hi + 1) / 2;
        if (m->rows[mid].base <= seat)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

size_t bench_seats_id(const bench_seats *m, uint32_t seat, char *buf, size_t cap)
{
    const bench_seat_row *r = &m->rows[bench_seats_row_of(m, seat)];
    int n = snprintf(buf, cap, "%s-%u", r->name, (unsigned)(r->from + (seat - r->base)));
    return n < 0 || cap == 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

long bench_seats_find(const bench_seats *m, const char *id, size_t len)
{
    size_t dash = len;
    while (dash > 0 && id[dash - 1] != '-')
        dash--;
    if (dash < 2 || dash == len || len - dash > 5) /* "S-R-" at least; a number of 1..5 digits */
        return -1;
    uint32_t num = 0;
    for (size_t i = dash; i < len; i++) {
        if (id[i] < '0' || id[i] > '9')
            return -1;
        num = num * 10 + (uint32_t)(id[i] - '0');
    }
    size_t rn = dash - 1;
    uint32_t lo = 0, hi = m->nrows;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        const bench_seat_row *r = &m->rows[m->by_name[mid]];
        int c = strncmp(r->name, id, rn);
        if (c == 0 && r->name_len != rn)
            c = r->name_len < rn ? -1 : 1;
        if (c == 0) {
            if (num < r->from || num > r->to)
                return -1;
            return (long)(r->base + (num - r->from));
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

uint32_t bench_seats_pick(const bench_seats *m, uint32_t qty, uint64_t r)
{
    uint32_t seat = (uint32_t)(r % m->nseats), row = bench_seats_row_of(m, seat);
    for (uint32_t k = 0; k < m->nrows; k++, row = (row + 1) % m->nrows) {
        const bench_seat_row *rw = &m->rows[row];
        uint32_t len = (uint32_t)(rw->to - rw->from + 1u);
        if (len < qty)
            continue;
        uint32_t at = k == 0 ? seat - rw->base : (uint32_t)((r >> 32) % len);
        if (at + qty > len)
            at = len - qty;
        return rw->base + at;
    }
    return 0; /* not reached: qty <= row_max */
}

bool bench_seats_adjacent(const bench_seats *m, const uint32_t *seats, uint32_t n)
{
    if (n == 0 || seats[0] >= m->nseats)
        return false;
    const bench_seat_row *r = &m->rows[bench_seats_row_of(m, seats[0])];
    for (uint32_t i = 1; i < n; i++)
        if (seats[i] != seats[0] + i)
            return false;
    return seats[0] + n - 1u < r->base + (uint32_t)(r->to - r->from + 1u);
}

void bench_seats_own(const bench_seats *m, uint32_t *owner, uint32_t hold, const uint32_t *seats, uint32_t n,
                     bench_seat_tally *t)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t s = seats[i];
        if (owner[s] == BENCH_SEAT_NOBODY) {
            owner[s] = hold;
            t->owned++;
            continue;
        }
        t->duplicates++;
        if (t->first[0] == 0) {
            char id[SLOT_SEAT_ID_BYTES_MAX + 1];
            bench_seats_id(m, s, id, sizeof(id));
            snprintf(t->first, sizeof(t->first), "seat %s is held by ledger holds %" PRIu32 " and %" PRIu32, id,
                     owner[s], hold);
        }
    }
}

/* One row of seat_map (its letters st, n bytes) against owner[] and taken_seen[]. */
static void compare_row(const bench_seats *m, const bench_seat_row *r, const char *st, size_t n, const uint32_t *owner,
                        const uint8_t *taken_seen, bench_seat_tally *t)
{
    uint32_t len = (uint32_t)(r->to - r->from + 1u), run = 0;
    if (n != len) {
        t->bad_rows++;
        if (t->first[0] == 0)
            snprintf(t->first, sizeof(t->first), "seat_map row %s has %zu seats, the map %u", r->name, n, len);
        return;
    }
    for (uint32_t i = 0; i <= len; i++) {
        char c = i < len ? st[i] : 'h'; /* the row's end closes its last run */
        if (c == '.') {
            run++;
        } else {
            t->singles += run == 1 && len > 1;
            if (run > t->longest_free)
                t->longest_free = run;
            run = 0;
        }
        if (i == len)
            break;
        uint32_t s = r->base + i;
        bool owned = owner[s] != BENCH_SEAT_NOBODY;
        const char *why = NULL;
        if (c == '.')
            t->map_free++;
        else if (c == 'h')
            t->map_held++;
        else if (c == 'c')
            t->map_confirmed++;
        else
            why = "a letter that is no seat state";
        if (c != '.' && c != 'h' && c != 'c')
            t->bad_rows++;
        else if (c == 'h' && !owned)
            t->held_not_owned++, why = "held, but no acknowledged hold has it";
        else if (c != 'h' && owned)
            t->owned_not_held++, why = "not held, but an acknowledged hold has it";
        if (!why && taken_seen && taken_seen[s] && !owned)
            t->taken_not_held++, why = "named in a taken answer, yet nobody holds it";
        if (why && t->first[0] == 0) {
            char id[SLOT_SEAT_ID_BYTES_MAX + 1];
            bench_seats_id(m, s, id, sizeof(id));
            snprintf(t->first, sizeof(t->first), "seat %s: seat_map shows '%c': %s", id, c, why);
        }
    }
}

void bench_seats_compare(const bench_seats *m, const uint32_t *owner, const uint8_t *taken_seen, json_t *rows,
                         bench_seat_tally *t)
{
    for (uint32_t i = 0; i < m->nrows; i++) {
        const bench_seat_row *r = &m->rows[i];
        json_t *v = json_object_get(rows, r->name);
        if (!json_is_string(v)) {
            t->bad_rows++;
            if (t->first[0] == 0)
                snprintf(t->first, sizeof(t->first), "seat_map has no row %s", r->name);
            continue;
        }
        compare_row(m, r, json_string_value(v), json_string_length(v), owner, taken_seen, t);
    }
    if (json_object_size(rows) != m->nrows) {
        t->bad_rows++;
        if (t->first[0] == 0)
            snprintf(t->first, sizeof(t->first), "seat_map shows %zu rows, the map has %u", json_object_size(rows),
                     m->nrows);
    }
}
