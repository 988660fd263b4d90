/* bench/scenario.h — one slot-bench run from start to end (scenario.c). */
#ifndef SLOT_BENCH_SCENARIO_H
#define SLOT_BENCH_SCENARIO_H

#include "config.h"

/* bench_run_scenario — parse argv (argv[0]: the scenario's name), set up, run,
 * verify, report. Returns the exit status (exit.h). */
int bench_run_scenario(bench_scenario scenario, int argc, char **argv);

#endif
