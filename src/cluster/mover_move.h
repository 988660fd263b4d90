/*
 * mover_move.h — one move's state and the step helpers that mover.c,
 * mover_steps.c and mover_recover.c share. Mover thread only.
 */
#ifndef SLOT_CLUSTER_MOVER_MOVE_H
#define SLOT_CLUSTER_MOVER_MOVE_H

#include "mover_int.h"

/* A map entry's value, parsed. */
typedef struct mv_entry {
    char set[SLOT_CLUSTER_NAME_BYTES];
    char to[SLOT_CLUSTER_NAME_BYTES]; /* moving: the target */
    char state[16];                   /* serving | moving */
    uint64_t gen;
} mv_entry;

/* A set's place_state answer. */
typedef struct mv_pstate {
    char state[16]; /* absent | owned | staged | relinquished | gone | aborted */
    char peer[SLOT_CLUSTER_NAME_BYTES];
    uint64_t gen;
    bool exists;
    char error[40]; /* the refusal's code, when it was refused */
} mv_pstate;

/* One move of j->event from j->set (gen `gen`) to j->to. */
typedef struct mv_move {
    mv_ctx *x;
    mv_job *j;
    mv_conn src, dst; /* this server over loopback; the target's primary */
    uint64_t gen;     /* G: the map's gen on this set; the move makes G+1 */
    int64_t map_rev;  /* the map entry's mod_revision after our last CAS */
    mv_table tab;     /* step 4's records */
    uint64_t records; /* of the last export */
    uint64_t tail_records;
    unsigned inflight; /* place_stage lines sent whose answers are not read */
    bool staged_any;   /* a place_stage line was sent to T (before: T can hold nothing of this move) */
    char why[200];     /* what failed */
} mv_move;

void mv_fail(mv_job *j, slot_err err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool mv_entry_parse(const char *text, mv_entry *out);
/* CAS of the event's map entry from revision expect: 0 done (new_rev), 1 it changed, or an etcd code. */
int mv_map_cas(mv_move *m, int64_t expect, const char *set, uint64_t gen, const char *state, const char *to,
               int64_t *new_rev);
int mv_set_addr(mv_ctx *x, const char *set, char *addr, size_t n);
/* An internal op's request: op, event, gen, and set when not NULL (heap; NULL: out of memory). */
json_t *mv_op(mv_move *m, const char *op, uint64_t gen, const char *set);
/* Signs and sends req (stolen) on k, reconnecting once when k is closed;
 * 0 ok:true, 1 refused (*out holds the answer), or -errno (no answer). */
int mv_place(mv_move *m, mv_conn *k, json_t *req, json_t **out);
int mv_state(mv_move *m, mv_conn *k, mv_pstate *st);
int mv_purge(mv_move *m, mv_conn *k, uint64_t gen);
int mv_stage_drain_one(mv_move *m);
int mv_copy(mv_move *m, bool tail);

/* mover_steps.c: the undo (before own) and the finish (after it). */
/* 0 undone; -1 left to recovery; 1 finished instead (own had committed). The job's error says what happened. */
int mv_undo(mv_move *m);
/* 0 finished; else left to recovery (the job's outcome says so). */
int mv_finish(mv_move *m);
/* The thread's entry for an MV_MOVE job. */
void mv_run_move(mv_ctx *x);
/* mover_recover.c: the thread's entry for an MV_RESOLVE job. */
void mv_run_resolve(mv_ctx *x);

#endif
