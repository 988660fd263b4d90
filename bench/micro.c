/* micro.c — the micro-benchmarks' clock and command line (micro.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "micro.h"

double micro_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The whole string a decimal number in (0, MICRO_SECONDS_MAX]. */
static bool seconds_ok(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = (s[0] >= '0' && s[0] <= '9') ? strtod(s, &end) : -1;
    if (end == NULL || *end != 0 || errno == ERANGE || !(v > 0) || !(v <= MICRO_SECONDS_MAX))
        return false;
    *out = v;
    return true;
}

/* The whole string a decimal integer in 1..max. */
static bool count_ok(const char *s, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = (s[0] >= '0' && s[0] <= '9') ? strtoull(s, &end, 10) : 0;
    if (end == NULL || *end != 0 || errno == ERANGE || v < 1 || v > max)
        return false;
    *out = v;
    return true;
}

int micro_parse(int argc, char **argv, micro_opts *o)
{
    struct option opts[] = {{"seconds", required_argument, NULL, 's'},
                            {o->count_flag, required_argument, NULL, 'n'},
                            {"help", no_argument, NULL, 'h'},
                            {"json", required_argument, NULL, 'j'},
                            {0}};
    if (!o->has_json)
        opts[3] = (struct option){0};
    int opt;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (opt == 's' && !seconds_ok(optarg, &o->seconds)) {
            fprintf(stderr, "%s: --seconds: bad value '%s' (more than 0, at most %.0f)\n", argv[0], optarg,
                    MICRO_SECONDS_MAX);
            opt = '?';
        }
        if (opt == 'n' && !count_ok(optarg, o->count_max, &o->count)) {
            fprintf(stderr, "%s: --%s: bad value '%s' (1..%llu)\n", argv[0], o->count_flag, optarg,
                    (unsigned long long)o->count_max);
            opt = '?';
        }
        if (opt == 'j')
            o->json = optarg;
        if (opt == 'h' || opt == '?') {
            o->usage(opt == 'h' ? stdout : stderr);
            return opt == 'h' ? 0 : MICRO_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
        o->usage(stderr);
        return MICRO_EXIT_USAGE;
    }
    return -1;
}
