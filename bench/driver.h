/*
 * bench/driver.h — what the engine asks of a target (slotd, or Redis with
 * the Lua peer): an interface only. The drivers (drv_slotd.c, drv_redis.c)
 * implement it and call back into the engine (engine.h); the engine sees
 * them only through a bench_driver, so neither includes the other's header
 * and the include graph has no cycle. Single-threaded: the loop's thread.
 */
#ifndef SLOT_BENCH_DRIVER_H
#define SLOT_BENCH_DRIVER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "wire.h"

typedef struct bench_run bench_run;
typedef struct bench_conn bench_conn;
/* A target's administration connection; each driver defines its own. */
typedef struct bench_admin bench_admin;

/* An event as the target shows it. */
typedef struct bench_view {
    uint64_t capacity, available, held, confirmed;
    char status[16];
    uint64_t opens_at_ms;                        /* the sale window's opening; 0 = none (or a target without windows) */
    uint64_t waitlist_max, waiting, waiting_qty; /* the waitlist (0 for a target without one) */
    /* docs/protocol.md, "Allocations" (slotd; 0 and false elsewhere): the unused units of the
     * event's blocks, and its block BENCH_BLOCK_NAME as "allocations" shows it (has_block: it does). */
    uint64_t allocated;
    bool has_block;
    uint64_t block_qty, block_remaining, block_held, block_confirmed;
} bench_view;

/* What a run asks of the target's events. */
typedef struct bench_event_spec {
    const char *name;
    uint64_t capacity, max_per_user;
    uint32_t shards, hold_ttl_ms, max_per_request;
    uint64_t opens_at_ms;  /* the sale opens then (ms since the epoch); 0 = now */
    uint32_t waitlist_max; /* entries of its waitlist (slotd only); 0 = none */
    const char *parent;    /* its parent (slotd only, docs/protocol.md "Ticket types"); NULL = none */
    json_t *seats;         /* a seated event's map, create_event's "seats" (slotd only; borrowed); NULL = none */
} bench_event_spec;

typedef struct bench_driver {
    const char *name; /* "slotd", "redis" */
    /* async side: open every connection of the run (bench_conn_up is called
     * for each), queue one request (0, or -1 when it does not fit), push
     * queued requests out, close all. */
    int (*open)(bench_run *run);
    int (*send)(bench_conn *c, const bench_ticket *t);
    void (*flush)(bench_conn *c);
    void (*close)(bench_run *run);
    /* admin side (blocking); each returns 0 or an exit status with a message in err. */
    int (*admin_open)(const bench_config *cfg, bench_admin **out, char *err, size_t errlen);
    void (*admin_close)(bench_admin *a);
    int (*server_info)(bench_admin *a, json_t **info, char *err, size_t errlen);
    int (*create_event)(bench_admin *a, const bench_event_spec *spec, bench_view *v, char *err, size_t errlen);
    int (*event)(bench_admin *a, const char *event, bench_view *v, char *err, size_t errlen);
    int (*check)(bench_admin *a, const char *event, uint32_t *violations, char *detail, size_t detlen);
    int (*expire)(bench_admin *a, const char *event, uint64_t *expired, char *err, size_t errlen);
    int (*stats)(bench_admin *a, json_t **stats, char *err, size_t errlen);
    /* optional (NULL: the target has no allocations): allocate qty free units of event to block
     * (admin); *total and *remaining from the reply. Fewer free units is an error (sold_out). */
    int (*allocate)(bench_admin *a, const char *event, const char *block, uint64_t qty, uint64_t *total,
                    uint64_t *remaining, char *err, size_t errlen);
    /* optional (NULL: a target of one node): move the admin connection to the
     * primary before verification; and "H:P" of the node it is on (borrowed). */
    int (*to_primary)(bench_admin *a, char *err, size_t errlen);
    const char *(*node)(const bench_admin *a);
    /* optional (NULL: the target has no seated events): seat_map of event, its "rows" object into
     * *rows (a new reference) and the reply's bytes into *bytes (may be NULL). */
    int (*seat_map)(bench_admin *a, const char *event, json_t **rows, size_t *bytes, char *err, size_t errlen);
} bench_driver;

#endif
