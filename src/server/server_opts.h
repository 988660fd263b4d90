/*
 * server_opts.h — the daemon's options, as slotd.c parses them from its flags
 * (docs/operations.md, "Flags"). Types only: server.h (what slotd.c calls) and
 * server_int.h (what the server's modules share) both include it, so neither
 * depends on the other.
 */
#ifndef SLOT_SERVER_OPTS_H
#define SLOT_SERVER_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct slot__server_opts {
    const char *data_dir;       /* --data */
    char host[64];              /* --listen HOST:PORT */
    uint16_t port;              /* 0: any free port */
    bool nosync;                /* --durability nosync */
    bool pipelined;             /* --durability pipelined: the batch log is the durability point */
    uint32_t line_bytes_max;    /* --max-line, bytes without \n */
    uint64_t map_bytes_max;     /* --map-size-max, bytes */
    uint32_t sweep_interval_ms; /* --sweep-interval-ms */
    uint32_t queue_max;         /* --max-queue: queued write requests before overloaded */
    uint32_t conn_inflight_max; /* --max-inflight: per connection, before reading pauses */
    uint32_t conns_max;         /* --max-connections: accept pauses at this many */
    uint32_t out_bytes_max;     /* --max-output: unsent reply bytes before reading pauses */
    uint32_t idle_timeout_ms;   /* --idle-timeout-ms: close a connection silent this long (0: never) */
    uint32_t line_timeout_ms;   /* --line-timeout-ms: close when a started line stays unfinished this long */
    uint32_t write_timeout_ms;  /* --write-timeout-ms: drop a client whose replies make no progress this long */
    bool http;                  /* --http HOST:PORT given */
    char http_host[64];         /* --http's host */
    uint16_t http_port;         /* 0: any free port */
    const char *token_file;     /* --token-file, or NULL */
    bool insecure;              /* --insecure: allow a non-loopback listen address without tokens */
    uint64_t feed_retention_ms; /* --feed-retention-ms: feed entries acked by all are kept this long */
    bool no_read_path;          /* --no-read-path: every hold takes the write path (tests) */
    bool no_cold_park;          /* --no-cold-park: a cold event's keys load at once, in the batch (tests) */
    uint32_t cold_load_keys;    /* --cold-load-keys: holds a batch's slice of a cold event walks */
    uint32_t slow_commit_ms;    /* --slow-commit-ms: a batch this slow is logged (0: never) */
    /* replica sets (docs/design.md, "Replica sets"); cluster NULL: standalone */
    const char *cluster;     /* --cluster NAME */
    const char *node_id;     /* --node ID */
    const char *etcd;        /* --etcd URL[,URL] */
    const char *secret_file; /* --cluster-secret-file */
    const char *placement;   /* --placement NAME: the sets sharing this name share events (NULL: none) */
    char adv_host[64];       /* --advertise HOST:PORT; adv_port 0: the bound --listen address */
    uint16_t adv_port;
    char repl_host[64]; /* --repl-listen HOST:PORT; "" : --listen's host, port 0 */
    uint16_t repl_port;
    uint32_t heartbeat_ms;        /* --heartbeat-ms */
    uint32_t failover_timeout_ms; /* --failover-timeout-ms */
    uint32_t repl_timeout_ms;     /* --repl-timeout-ms */
    uint32_t min_replicas;        /* --min-replicas */
    uint64_t log_keep_records;    /* --log-keep-records */
    uint64_t log_segment_bytes;   /* --log-segment-bytes */
} slot__server_opts;

#endif
