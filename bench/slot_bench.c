/*
 * slot-bench — load generator for slotd over TCP (docs/protocol.md), and for the
 * Redis+Lua peer of bench/peers/ with --target redis://.
 *
 * Scenarios are subcommands, listed in one table (`scenarios` below); each
 * runs through bench_run_scenario (scenario.c) and returns the exit status:
 *   0 the run completed and its verification passed; 1 the verification
 *   failed (or the target refused the setup); 2 the target could not be
 *   reached or a connection broke; 64 a usage error.
 *
 * The pieces: options.c (command line), engine.c (libuv loop, connections,
 * timers), workload.c (what each phase sends), drv_slotd.c / drv_redis.c
 * (targets), verify.c + ledger.c (verification), report.c + svg.c (output).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "exit.h"
#include "scenario.h"
#include "slot_config.h"

static const bench_scenario scenarios[] = {
    BENCH_HOT_RELEASE, BENCH_OPEN_LOOP, BENCH_CHURN, BENCH_SOLD_OUT, BENCH_MULTI_EVENT, BENCH_WAITLIST, BENCH_PING,
    BENCH_WAITING_ROOM,
};

#define SCENARIOS_N (sizeof(scenarios) / sizeof(scenarios[0]))

static void usage(FILE *f)
{
    fprintf(f,
            "usage: slot-bench SCENARIO [OPTIONS]   (slot-bench SCENARIO --help for its options)\n"
            "       slot-bench --help | --version\n\n"
            "Load generator for slotd (127.0.0.1:%d unless told otherwise; --target redis://H:P runs\n"
            "the same scenario against Redis with the Lua peer). Every run is bounded in time and in\n"
            "requests, and verified afterwards. Scenarios:\n",
            SLOT_PORT_DEFAULT);
    for (size_t i = 0; i < SCENARIOS_N; i++)
        fprintf(f, "  %-14s %s\n", bench_scenario_name(scenarios[i]), bench_scenario_summary(scenarios[i]));
    fprintf(f, "\nExit status: 0 verification passed; 1 it failed (or the target refused the setup);\n"
               "2 connection error; 64 usage error.\n");
}

static void version(void)
{
    printf("slot-bench %s\ntargets: slotd%s\n", SLOT_VERSION,
#ifdef BENCH_HAVE_REDIS
           " redis"
#else
           ""
#endif
    );
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN); /* libuv writes with write(2): a closed peer must be an error, not a death */
    if (argc < 2) {
        usage(stderr);
        return BENCH_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        for (size_t i = 0; argc > 2 && i < SCENARIOS_N; i++)
            if (strcmp(argv[2], bench_scenario_name(scenarios[i])) == 0) {
                bench_usage(stdout, scenarios[i]);
                return 0;
            }
        usage(stdout);
        return 0;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
        version();
        return 0;
    }
    for (size_t i = 0; i < SCENARIOS_N; i++)
        if (strcmp(name, bench_scenario_name(scenarios[i])) == 0)
            return bench_run_scenario(scenarios[i], argc - 1, argv + 1);
    fprintf(stderr, "slot-bench: unknown scenario '%s' (see 'slot-bench --help')\n", name);
    return BENCH_EXIT_USAGE;
}
