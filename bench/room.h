/*
 * bench/room.h — the waiting-room scenario (docs/protocol.md, "Admission"):
 * its flow (room.c: the event, the joins, the polls, holds with grants) and
 * its verification and report (room_verify.c). It runs on its own blocking
 * connections, not on the engine: each round sends a batch on every
 * connection, then reads every answer (rounds are the pipelining). Single-threaded.
 */
#ifndef SLOT_BENCH_ROOM_H
#define SLOT_BENCH_ROOM_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

#define BENCH_ROOM_ID_BYTES 32 /* a ticket, grant or hold id: 32 hex digits */

typedef enum room_state {
    ROOM_NEW,      /* its join is not answered yet */
    ROOM_WAITING,  /* joined, polls its admission */
    ROOM_ADMITTED, /* has its grant: the hold is next */
    ROOM_HELD,     /* held with the grant: confirm or release next */
    ROOM_DONE,     /* confirmed or released */
    ROOM_FAILED,   /* an answer nobody expected (counted) */
} room_state;

/* One entry of the crowd: user "u<i>", join key "j<i>", hold key "h<i>". */
typedef struct room_entry {
    uint64_t seq;            /* the ticket's join seq (its first 16 hex digits): join rank + 1 */
    uint64_t join_pos;       /* the join answer's position (0: null, a lottery before the draw) */
    uint64_t rank;           /* its admission rank (0-based), valid when rank_known */
    uint64_t admitted_at_ms; /* the server's: the grant's expires_at - grant_ttl_ms */
    uint64_t seen_ms;        /* the client's: when a poll (or the join) first said admitted */
    uint64_t polled_ms;      /* its last poll was sent then */
    char ticket[BENCH_ROOM_ID_BYTES + 1], grant[BENCH_ROOM_ID_BYTES + 1], hold[BENCH_ROOM_ID_BYTES + 1];
    uint8_t state; /* room_state */
    bool rank_known, confirms;
    uint8_t grants_seen; /* 1 once admitted; a different grant later for the same ticket: 2 */
} room_entry;

/* What the run saw; room_verify.c reads it. */
typedef struct room_run {
    const bench_config *cfg;
    room_entry *e;
    uint32_t n;
    uint64_t capacity, opens_at_ms, created_ms;
    uint64_t join_start_ms, join_end_ms;
    uint64_t joins_ok, join_errors, pos_mismatch; /* queue: a join's or a stable position's rank != its join rank */
    uint64_t polls, views, unstable_batches, admitted, held, confirmed, released;
    uint64_t hold_errors, settle_errors, poll_errors, unexpected;
    uint64_t nogrant_sent, nogrant_refused; /* holds without a valid grant, and their admission_required answers */
    uint64_t stop_rule_views, stop_rule_violations; /* views with room; views with open_grants > available */
    char first_problem[240];
    bool stopped_by_duration, joins_late; /* --opens-in: a join answered after the opening */
    uint64_t end_ms;
    /* the final view and check */
    uint64_t v_admitted, v_joined, v_confirmed, v_held, v_available, v_open;
    uint32_t check_violations;
    char check_detail[240];
} room_run;

/* bench_room_run — the waiting-room scenario from start to end with cfg (parsed by
 * bench_config_parse): set up, join, admit, hold, verify, report. Returns the exit status (exit.h). */
int bench_room_run(const bench_config *cfg);

/* bench_room_verify_report — verification and the report of a finished run (room_verify.c):
 * prints the numbers and "verification: passed" or "verification: FAILED: ..." on stdout,
 * writes --json. Returns 0 or BENCH_EXIT_FAILED. */
int bench_room_verify_report(room_run *r);

#endif
