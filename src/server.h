/*
 * server.h — what slotd.c needs of the server: its options and the call
 * that runs it (docs/design.md, "Threads"; server_int.h maps the modules).
 * Internal to the daemon; slotd.c parses flags and calls slot__server_run.
 */
#ifndef SLOT_SERVER_H
#define SLOT_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct slot__server_opts {
    const char *data_dir;          /* --data */
    char host[64];                 /* --listen HOST:PORT */
    uint16_t port;                 /* 0: any free port */
    bool nosync;                   /* --durability nosync */
    uint32_t line_bytes_max;             /* --max-line, bytes without \n */
    uint64_t map_bytes_max;         /* --map-size-max, bytes */
    uint32_t sweep_interval_ms;    /* --sweep-interval-ms */
    uint32_t queue_max;            /* --max-queue: queued write requests before overloaded */
    uint32_t conn_inflight_max;    /* --max-inflight: per connection, before reading pauses */
    uint32_t conns_max;            /* --max-connections: accept pauses at this many */
    uint32_t out_bytes_max;        /* --max-output: unsent reply bytes before reading pauses */
    uint32_t idle_timeout_ms;      /* --idle-timeout-ms: close a connection silent this long (0: never) */
    uint32_t line_timeout_ms;      /* --line-timeout-ms: close when a started line stays unfinished this long */
    uint32_t write_timeout_ms;     /* --write-timeout-ms: drop a client whose replies make no progress this long */
    const char *token_file;        /* --token-file, or NULL */
    bool insecure;                 /* --insecure: allow a non-loopback listen address without tokens */
} slot__server_opts;

/*
 * slot__server_run — open the store, listen, print "listening on HOST:PORT"
 * on stdout, and serve until SIGINT or SIGTERM; then stop accepting, finish
 * the batch in flight, answer what is queued with shutting_down, and close
 * the store. Returns the process exit status (0 after a clean stop).
 */
int slot__server_run(const slot__server_opts *opts);

#endif
