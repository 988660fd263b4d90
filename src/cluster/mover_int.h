/*
 * mover_int.h — what the mover's files share (mover.c: the steps;
 * mover_io.c: etcd, the two connections, the macs and the record table;
 * mover_loop.c: the loop side). docs/design.md, "The mover".
 *
 * A job is made by the loop thread, handed whole to the mover thread (which
 * alone touches it until it sets `done` and signals `async`), then read and
 * freed by the loop thread. The thread never touches the server's state.
 */
#ifndef SLOT_CLUSTER_MOVER_INT_H
#define SLOT_CLUSTER_MOVER_INT_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "slot/client.h"
#include "slot/error.h"
#include "slot/etcd.h"
#include "slot/limits.h"
#include "slot/repl.h"

enum { MV_MOVE = 1, MV_RESOLVE = 2 };

/* One job of the mover thread, with its inputs (copied by the loop thread)
 * and its outcome (written by the thread). */
typedef struct mv_job {
    int mode;        /* MV_MOVE: move `event` to `to`; MV_RESOLVE: recovery's pass */
    bool check_done; /* resolve: also look for relinquished records whose move finished (a first pass) */
    char event[SLOT_EVENT_BYTES_MAX + 1];
    char to[SLOT_CLUSTER_NAME_BYTES];
    char set[SLOT_CLUSTER_NAME_BYTES];    /* this set */
    char node[SLOT_CLUSTER_NAME_BYTES];   /* this node, written into the lock */
    char prefix[SLOT_PLACE_PREFIX_BYTES]; /* /slotd/placement/NAME/ */
    char *endpoints;                      /* --etcd's list, heap */
    char self_host[64];                   /* this server's client port, over loopback */
    uint16_t self_port;
    slot_repl_secret secret;

    /* the outcome */
    slot_err err;
    char msg[240];
    char *fields; /* heap: the reply's fields (",\"k\":v..."), handed to the entry's res */
    size_t fields_len;
    uint64_t retry_after_ms;                         /* moving: when to try again */
    uint64_t start_ms, pause_start_ms, pause_end_ms; /* uv_hrtime in ms: the reply's total_ms and pause_ms */
    unsigned resolved;                               /* resolve: moves finished or undone by this pass */
    bool want_check;                                 /* a place_done could not be sent: look again on the next pass */
    atomic_bool done;
} mv_job;

/* ---- mover_io.c: the thread's I/O */

/* The thread's context: its loop, its etcd client, its lock. */
typedef struct mv_ctx {
    mv_job *job;
    uv_loop_t loop;
    slot_etcd *etcd;
    uv_timer_t keep; /* the lock lease's keep-alive */
    bool keep_on, keep_busy;
    int64_t lease;  /* the lock's lease (0: none) */
    bool lock_lost; /* a keep-alive found the lease gone, or none was answered for SLOT_PLACE_LOCK_TRUST_MS */
    uint64_t keep_sent_ms; /* monotonic ms: the send of the keep-alive in flight (or of the grant) */
    uint64_t lease_ok_ms;  /* monotonic ms: the send of the last grant or keep-alive etcd answered alive */
    char key_lock[SLOT_PLACE_KEY_BYTES];
} mv_ctx;

/* A blocking connection to a set's primary (this server, or the target). */
typedef struct mv_conn {
    slot_client *cl;
    char addr[SLOT_CLUSTER_ADDR_BYTES];
} mv_conn;

/* A value read from etcd (heap, NUL-terminated), with its mod_revision. */
typedef struct mv_kv {
    bool found;
    char *value;
    int64_t mod_rev;
} mv_kv;

/* mv_ctx_open — the thread's loop and etcd client (job->endpoints) for job
 * (borrowed for the thread's life). 0 or a SLOT_ETCD_E* code (nothing to close). */
int mv_ctx_open(mv_ctx *x, mv_job *job);
/* mv_ctx_close — releases the lock if held, closes the client, runs the loop dry. */
void mv_ctx_close(mv_ctx *x);
/* Runs the loop's ready work (the keep-alive) without waiting. */
void mv_pump(mv_ctx *x);

/* etcd, one call at a time, blocking on the thread's loop (each bounded by the
 * client's timeout per endpoint); 0 or a SLOT_ETCD_E* code. out's value is
 * heap (mv_kv_free). list: every key under prefix (at most SLOT_PLACE_LIST_MAX)
 * as {"rest of the key": "value"}, heap (json_decref). cas: *ok says whether
 * it applied (a retried CAS that etcd applied counts), current the value
 * found when it did not (may be NULL), new_rev the key's revision after it. */
int mv_etcd_get(mv_ctx *x, const char *key, mv_kv *out);
int mv_etcd_list(mv_ctx *x, const char *prefix, json_t **names_values); /* {"key-suffix": value-text} */
int mv_etcd_cas(mv_ctx *x, const char *key, int64_t expect_rev, const char *value, int64_t lease, bool *ok,
                mv_kv *current, int64_t *new_rev);
void mv_kv_free(mv_kv *kv);
/* The lock: lease + put-if-absent of P lock, keep-alive on the loop.
 * 0 taken; 1 held by another (holder gets its value, heap); or an etcd code. */
int mv_lock(mv_ctx *x, const char *event, const char *from, const char *to, uint64_t gen, char **holder);
/* mv_lock_trusted — whether the lock may still be held: no keep-alive found the
 * lease gone, and etcd answered one sent within SLOT_PLACE_LOCK_TRUST_MS (by this
 * thread's monotonic clock; a lease's holder cannot know etcd's, so it counts from
 * its own sends). Once false it stays false until the next mv_lock. Thread: the
 * mover's. */
bool mv_lock_trusted(mv_ctx *x);
void mv_unlock(mv_ctx *x);

/* Connections to a set's primary "H:P" (connect bounded by SLOT_PLACE_CONNECT_MS,
 * each reply by SLOT_PLACE_IO_MS): 0 or -errno (-EPROTO: not a JSON object). */
int mv_connect(mv_conn *k, const char *addr);
void mv_close(mv_conn *k);
/* Adds "mac" to req for op (the fields already in req). 0, or -1 (out of memory). */
int mv_sign(const mv_job *job, json_t *req);
int mv_send(mv_conn *k, json_t *req); /* req is not stolen */
/* The next reply, parsed (heap, *out); 0 or -errno / -EPROTO. */
int mv_recv(mv_conn *k, json_t **out);
/* send then recv */
int mv_call(mv_conn *k, json_t *req, json_t **out);
/* The reply's "error" ("" for ok:true). */
const char *mv_err(json_t *reply);

/* ---- the records sent in step 4, by (db, key): a hash of each value */

typedef struct mv_rec {
    uint64_t vhash; /* FNV-1a of the value; the slot is empty when key is NULL */
    uint8_t *key;   /* heap: the db byte then the key's bytes */
    uint32_t klen;  /* with the db byte */
    bool seen;      /* step 6: met again */
} mv_rec;

typedef struct mv_table {
    mv_rec *slots;
    size_t cap, n;
} mv_table;

void mv_table_free(mv_table *t);
/* The record for (db, key); add: make it (NULL: out of memory or past
 * SLOT_PLACE_MOVE_RECORDS_MAX). */
mv_rec *mv_table_get(mv_table *t, uint8_t db, const uint8_t *key, uint16_t klen, bool add);
uint64_t mv_hash(const uint8_t *b, size_t n);

#endif
