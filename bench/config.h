/*
 * bench/config.h — what a slot-bench run was asked to do: the scenarios,
 * the target, and the command line that fills bench_config (options.c).
 * Ranges and defaults are in limits.h. Single-threaded.
 */
#ifndef SLOT_BENCH_CONFIG_H
#define SLOT_BENCH_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "limits.h"

typedef enum bench_scenario {
    BENCH_HOT_RELEASE,
    BENCH_OPEN_LOOP,
    BENCH_CHURN,
    BENCH_SOLD_OUT,
    BENCH_MULTI_EVENT,
    BENCH_WAITLIST,
    BENCH_PING, /* the round-trip ceiling: PING (redis), hello (slotd); no events */
    BENCH_WAITING_ROOM, /* a crowd joins a waiting room, is admitted, holds with its grant (room.c) */
} bench_scenario;

/* hot-release --seated: how a buyer asks for seats (0: an unseated run). */
typedef enum bench_seat_mode { BENCH_SEAT_NONE, BENCH_SEAT_ADJACENT, BENCH_SEAT_NAMED } bench_seat_mode;

typedef enum bench_target_kind { BENCH_TARGET_SLOTD, BENCH_TARGET_REDIS } bench_target_kind;

/* --peer: which Lua script answers holds on the redis target (bench/peers/). */
typedef enum bench_peer { BENCH_PEER_FULL, BENCH_PEER_MIN } bench_peer;

/* --qty: a fixed quantity or a small distribution "1:70,2:20,4:10" (qty:weight). */
typedef struct bench_qty {
    uint32_t n; /* choices, 1..BENCH_QTY_CHOICES_MAX */
    uint32_t qty[BENCH_QTY_CHOICES_MAX];
    uint32_t cum[BENCH_QTY_CHOICES_MAX]; /* running sum of weights */
    uint32_t min, max;
    char text[BENCH_QTY_TEXT_BYTES_MAX + 1]; /* as given */
} bench_qty;

/* Everything a run was asked to do; filled by bench_config_parse, then read-only. */
typedef struct bench_config {
    bench_scenario scenario;
    const char *name; /* the subcommand */
    bench_target_kind target;
    char host[BENCH_HOST_BYTES_MAX + 1]; /* the first --host (its host part) */
    uint16_t port;
    /* Every --host / --cluster-members entry as "H:P" (the port of --port where none was given). */
    char hosts[BENCH_HOSTS_MAX][BENCH_HOST_BYTES_MAX + 9];
    uint32_t nhosts; /* 1..BENCH_HOSTS_MAX */
    const char *token;
    bool allow_remote;
    /* multi-event --placement: the --host members are of replica sets sharing one placement;
     * events are created round-robin over the sets, each connection sells one set's events on
     * that set's primary (docs/protocol.md, "Clients routing by the placement") */
    bool placement;
    char event[SLOT_EVENT_BYTES_MAX + 1]; /* base name; multi-event appends "-<i>" */
    uint32_t connections, pipeline;
    uint32_t threads; /* event loops, each with its share of the connections; 1..BENCH_THREADS_MAX */
    bench_peer peer;  /* redis: the script that answers holds */
    bench_qty qty;
    uint64_t capacity; /* per event */
    uint32_t shards;
    uint64_t max_per_user, users; /* users: pool size; 0 = every hold a new user */
    uint32_t duration_ms;
    uint64_t requests; /* bound on requests sent in the measured phase */
    uint64_t seed;
    uint32_t warmup_ms;
    uint64_t tail;        /* hot-release, multi-event: sold_out answers after the sell-out */
    uint32_t opens_in_ms; /* hot-release: the event's sale opens this long after it is made; 0 = now */
    double rate_per_s;    /* open-loop: requests per second */
    uint32_t confirm_pct, release_pct, abandon_pct;
    /* churn, v1.1 (docs/protocol.md, "extend", "Partial confirm", "Reacquire"): shares in percent.
     * extend: of the buyers who confirm on time or release; partial, late: of the confirms (disjoint). */
    uint32_t extend_pct, partial_pct, late_pct;
    uint32_t think_min_ms, think_max_ms;
    uint32_t hold_ttl_ms; /* churn, waitlist; 0 = long enough that nothing expires during the run */
    uint32_t waiters;     /* waitlist: buyers who join the sold-out event's waitlist */
    uint32_t poll_ms;     /* waitlist: a waiter asks for its entry's state this often (and less far back) */
    uint32_t events;      /* hot-release: --cart (one event per cart item) */
    uint32_t cart;        /* hot-release: events per cart, 1..SLOT_CART_ITEMS_MAX; 1 = plain holds */
    uint32_t types;       /* hot-release: N ticket types (children of a 3-level family) sharing --capacity; 0 = none */
    /* hot-release --allocation: units of the event set aside in block BENCH_BLOCK_NAME (0 = none,
     * else 1..capacity); --presale-share: percent of the connections whose holds take from it;
     * presale_conns: connections 0..presale_conns-1 are those (derived by options_check.c). */
    uint64_t allocation;
    uint32_t presale_pct, presale_conns;
    /* waiting-room (docs/protocol.md, "Admission"): entries, the room's admit_per_s, lottery (else queue) */
    uint32_t crowd, admit_per_s;
    bool lottery;
    double zipf_exponent; /* multi-event: popularity of event i is 1/(i+1)^zipf_exponent */
    /* hot-release --seated FILE (options_seated.c; docs/protocol.md, "Seated events"): the seat
     * map's path, how buyers ask (--adjacent: qty N adjacent; --named: N consecutive seat ids of
     * one row), and the map itself, loaded once the options are checked (owned by the run: freed
     * by bench_seated_config_free; NULL without --seated). qty_given, capacity_given: those
     * options were on the command line (--seated derives them otherwise). */
    const char *seated_path;
    uint8_t seat_mode; /* bench_seat_mode */
    bool qty_given, capacity_given;
    struct bench_seats *seats;
    const char *json_path, *csv_path, *svg_path;
} bench_config;

/*
 * bench_config_parse — parse a scenario's command line (argv[0] is its name)
 * into cfg; cfg borrows strings of argv (token, file paths), which must
 * outlive it. Returns -1 when the run should go ahead (cfg filled), else an
 * exit status: 0 after --help (printed to stdout), BENCH_EXIT_USAGE after a
 * message on stderr.
 */
int bench_config_parse(bench_config *cfg, bench_scenario scenario, int argc, char **argv);
/* bench_usage — the --help text of a scenario on f: every option with its range and default. */
void bench_usage(FILE *f, bench_scenario scenario);
/* bench_scenario_name / _summary — static strings. */
const char *bench_scenario_name(bench_scenario s);
const char *bench_scenario_summary(bench_scenario s);
/* bench_scenario_sells_out — true for the scenarios that run until their events are sold out. */
bool bench_scenario_sells_out(bench_scenario s);
/* bench_config_json — the configuration as a new JSON object (caller owns the reference); NULL when out of memory. */
json_t *bench_config_json(const bench_config *cfg);
/* bench_qty_pick — a quantity drawn from the distribution with the random value r. */
uint32_t bench_qty_pick(const bench_qty *q, uint64_t r);

#endif
