/*
 * bench/options.h — what options.c (the option table and the parsing loop)
 * and options_check.c (the value parsers and the checks between options)
 * share; not used elsewhere (config.h is the command line's interface).
 * Single-threaded, as the parsing.
 */
#ifndef SLOT_BENCH_OPTIONS_H
#define SLOT_BENCH_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/*
 * bench_usage_error — prints "slot-bench: SCENARIO: " + the printf-style
 * message + where the help is, to stderr. Returns BENCH_EXIT_USAGE.
 */
int bench_usage_error(const bench_config *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* bench_parse_num — s as a decimal integer in [min, max] (the whole string, digits only) into *out; false if not. */
bool bench_parse_num(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* bench_parse_real — s as a decimal number in [min, max] (the whole string, no sign) into *out; false if not. */
bool bench_parse_real(const char *s, double min, double max, double *out);

/* bench_parse_seconds_ms — seconds with up to 3 decimals ("2", "0.5") into ms in [min_ms, max_ms]; false if not. */
bool bench_parse_seconds_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint32_t *out);

/*
 * bench_parse_qty — --qty: "N" or "q:w,q:w,..." (1..SLOT_MAX_PER_REQUEST_MAX
 * units, weights 1..BENCH_QTY_WEIGHT_MAX, at most BENCH_QTY_CHOICES_MAX
 * choices) into *q; false (q unchanged) if not.
 */
bool bench_parse_qty(const char *s, bench_qty *q);

/* bench_parse_think — --think: "A" or "A:B" ms (0..BENCH_THINK_MS_MAX, A <= B) into *lo, *hi; false if not. */
bool bench_parse_think(const char *s, uint32_t *lo, uint32_t *hi);

/*
 * bench_parse_target — --target: "redis://H[:P]" or "slotd://H[:P]" (H may
 * be [v6]) into c->target, c->host and, with a port, c->port and
 * *port_given = true. False if not.
 */
bool bench_parse_target(const char *s, bench_config *c, bool *port_given);

/* bench_parse_peer — --peer: "full" or "min" into *p; false if neither. */
bool bench_parse_peer(const char *s, bench_peer *p);

/*
 * bench_hosts_normalize — each --host / --cluster-members entry of c->hosts
 * as "H:P" ("[v6]:P"), with --port where it has none; the first one's host
 * and port into c->host, c->port. Without --host: c->hosts[0] from c->host.
 * Returns 0, or BENCH_EXIT_USAGE after a message.
 */
int bench_hosts_normalize(bench_config *c);

/*
 * bench_cross_checks — the relations between options, once all are read
 * (scenario against target, sums of shares, loopback-only hosts, report
 * folders writable); sets the values a scenario derives (hot-release's
 * events, ping's none, the redis churn's v1.1 shares). v11_given: bits 0, 1,
 * 2 when --extend, --partial, --late were given; peer_given: --peer was.
 * Returns 0, or BENCH_EXIT_USAGE after a message.
 */
int bench_cross_checks(bench_config *c, uint32_t v11_given, bool peer_given);

/* bench_scenario_text — each scenario's paragraph of --help (options_text.c); static strings. */
extern const char *const bench_scenario_text[];

/* hot-release --seated FILE, --adjacent, --named (options_seated.c; docs/protocol.md, "Seated
 * events"): the help lines of the option table, */
#define BENCH_SEATED_HELP                                                                                    \
    "a seated event: create it from the seat map in FILE (create_event's \"seats\" object, at most 16 MiB; " \
    "--capacity is its seat count) and sell seats, as --adjacent or --named says; verified: no seat in two " \
    "holds, the holds' seats against seat_map, every sold_out when no such run was free; reported: single "  \
    "free seats left, and those of an offline first-fit without the orphan rule"
#define BENCH_ADJACENT_HELP                                                                        \
    "with --seated: each buyer asks for --qty seats together (\"qty\":N,\"adjacent\":true; --qty " \
    "default " BENCH_SEAT_QTY_DEFAULT ", at most 16)"
#define BENCH_NAMED_HELP                                                                                    \
    "with --seated: each buyer asks for --qty seats by id (\"seats\":[...]), consecutive seats of one row " \
    "picked at random; a seat not free is answered taken"

/*
 * bench_seated_option — one of them, as the parsing loop reads it: mode 0 is --seated (path, borrowed
 * from argv), else BENCH_SEAT_ADJACENT or BENCH_SEAT_NAMED (path unused). Returns -1 to go on, or
 * BENCH_EXIT_USAGE after a message (--seated twice).
 */
int bench_seated_option(bench_config *c, int mode, const char *path);
/*
 * bench_seated_checks — once every option is read: --adjacent or --named needs --seated and
 * --seated one of them (not both); --seated takes plain holds on slotd on one thread (no --cart,
 * --types, --allocation, --threads, --warmup, redis); --qty within 1..BENCH_SEAT_QTY_MAX (its
 * default BENCH_SEAT_QTY_DEFAULT when not given). Without --seated nothing. 0 or BENCH_EXIT_USAGE.
 */
int bench_seated_checks(bench_config *c);
/*
 * bench_seated_load — the last check: load the map of --seated (bench_seats_load) into a new
 * c->seats, and derive c->capacity from it (a --capacity that differs is an error), check
 * --named's --qty against the longest row. 0 (also without --seated), or BENCH_EXIT_USAGE after a
 * message naming the file (c->seats then NULL).
 */
int bench_seated_load(bench_config *c);

#endif
