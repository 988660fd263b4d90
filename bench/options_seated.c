/*
 * options_seated.c — hot-release --seated FILE with --adjacent or --named
 * (options.h; docs/protocol.md, "Seated events"): the three options as the
 * parsing loop reads them, their relations to the other options, and the
 * seat map loaded as the last check (so that a bad file is a usage error,
 * exit 64, before anything is sent). Single-threaded, as the parsing.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "exit.h"
#include "limits.h"
#include "options.h"
#include "seats.h"
#include "slot/assert.h"

int bench_seated_option(bench_config *c, int mode, const char *path)
{
    if (mode == 0) {
        if (c->seated_path)
            return bench_usage_error(c, "%s", "--seated is given twice");
        c->seated_path = path;
        return -1;
    }
    if (c->seat_mode != BENCH_SEAT_NONE && c->seat_mode != (uint8_t)mode)
        return bench_usage_error(c, "%s", "--adjacent and --named: a buyer asks one way; give one of them");
    c->seat_mode = (uint8_t)mode;
    return -1;
}

int bench_seated_checks(bench_config *c)
{
    if (!c->seated_path && c->seat_mode != BENCH_SEAT_NONE)
        return bench_usage_error(c, "--%s needs --seated FILE (the seat map)",
                                 c->seat_mode == BENCH_SEAT_ADJACENT ? "adjacent" : "named");
    if (!c->seated_path)
        return 0;
    if (c->seat_mode == BENCH_SEAT_NONE)
        return bench_usage_error(c, "%s", "--seated: give --adjacent or --named (how the buyers ask for seats)");
    if (c->cart > 1 || c->types || c->allocation || c->threads > 1 || c->warmup_ms > 0 ||
        c->target == BENCH_TARGET_REDIS)
        return bench_usage_error(c, "%s",
                                 "--seated takes plain holds on slotd, on one thread (no --cart, --types, "
                                 "--allocation, --threads, --warmup, redis)");
    if (!c->qty_given) {
        bool parsed = bench_parse_qty(BENCH_SEAT_QTY_DEFAULT, &c->qty);
        SLOT_ASSERT(parsed);
    }
    if (c->qty.max > BENCH_SEAT_QTY_MAX)
        return bench_usage_error(c, "--qty up to %u with --seated: a buyer asks for at most %u seats", c->qty.max,
                                 BENCH_SEAT_QTY_MAX);
    if (c->max_per_user > 0 && c->qty.max > c->max_per_user)
        return bench_usage_error(c, "--qty up to %u is above --max-per-user %" PRIu64, c->qty.max, c->max_per_user);
    return 0;
}

int bench_seated_load(bench_config *c)
{
    if (!c->seated_path)
        return 0;
    bench_seats *m = calloc(1, sizeof(*m));
    char err[400];
    if (!m)
        return bench_usage_error(c, "--seated %s: out of memory", c->seated_path);
    if (bench_seats_load(c->seated_path, m, err, sizeof(err)) < 0) {
        free(m);
        return bench_usage_error(c, "--seated: %s", err);
    }
    int rc = 0;
    if (c->capacity_given && c->capacity != m->nseats)
        rc = bench_usage_error(c, "--capacity %" PRIu64 ": the seat map %s has %u seats (leave --capacity out)",
                               c->capacity, c->seated_path, m->nseats);
    else if (c->seat_mode == BENCH_SEAT_NAMED && c->qty.max > m->row_max)
        rc = bench_usage_error(c, "--qty up to %u with --named: the longest row of %s has %u seats", c->qty.max,
                               c->seated_path, m->row_max);
    if (rc) {
        bench_seats_free(m);
        free(m);
        return rc;
    }
    c->capacity = m->nseats;
    c->seats = m;
    return 0;
}
