/*
 * bench/micro.h — what the micro-benchmarks (micro_alloc.c, micro_proto.c, micro_idem.c)
 * share: the clock and their command line (--seconds S, a count bound, and
 * for some --json FILE). Single-threaded.
 */
#ifndef SLOT_BENCH_MICRO_H
#define SLOT_BENCH_MICRO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define MICRO_SECONDS_MAX 3600.0 /* --seconds: more than 0, at most an hour per measurement */
#define MICRO_EXIT_USAGE 64      /* sysexits.h EX_USAGE */

/* The command line of one micro-benchmark: defaults in, values out. */
typedef struct micro_opts {
    const char *count_flag;    /* the count bound's flag without "--": "max-holds", "max-ops" */
    double seconds;            /* --seconds: per measurement, (0, MICRO_SECONDS_MAX] */
    uint64_t count, count_max; /* the count bound: 1..count_max */
    bool has_json;             /* --json FILE is an option */
    const char *json;          /* --json: borrowed from argv; NULL when not given */
    void (*usage)(FILE *f);    /* the --help text */
} micro_opts;

/* micro_now_s — CLOCK_MONOTONIC, seconds. */
double micro_now_s(void);

/*
 * micro_parse — read argv into o. Returns -1 when the run should go ahead,
 * 0 after --help (usage on stdout), MICRO_EXIT_USAGE after a bad value or
 * option (a message and the usage on stderr).
 */
int micro_parse(int argc, char **argv, micro_opts *o);

#endif
