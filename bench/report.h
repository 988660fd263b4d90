/*
 * bench/report.h — what a run shows: the summary table, --json and --csv
 * (report.c), --svg (svg.c). Single-threaded.
 */
#ifndef SLOT_BENCH_REPORT_H
#define SLOT_BENCH_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "engine.h"
#include "verify.h"

/* Everything the reports show. */
typedef struct bench_report {
    const bench_run *run;
    const bench_counters *n; /* the measured phase */
    const bench_verdict *verdict;
    json_t *server;                     /* hello / INFO facts; borrowed */
    json_t *stats_before, *stats_after; /* borrowed; may be NULL */
    bool stats_nodes_differ;            /* before and after came from different nodes (the primary changed) */
    const char *stopped;
    double run_s, sellout_s, requests_per_s, holds_per_s, sold_out_per_s;
    double p50_ms, p90_ms, p99_ms, p999_ms, max_ms, mean_ms;
    double first_p50_ms, first_p99_ms, first_max_ms; /* answers to requests sent in the first second */
} bench_report;

/* bench_report_numbers — fill the derived numbers of rep from its counters. */
void bench_report_numbers(bench_report *rep);
/* bench_report_print — the summary table on f. */
void bench_report_print(const bench_report *rep, FILE *f);
/* bench_report_json / _csv / _svg — write the file at path; 0, or -errno (message printed on stderr). */
int bench_report_json(const bench_report *rep, const char *path);
int bench_report_csv(const bench_report *rep, const char *path);
int bench_report_svg(const bench_report *rep, const char *path);
/* bench_machine_json — nproc, memory, kernel, CPU model: a new object (caller owns it). */
json_t *bench_machine_json(void);

#endif
