/*
 * bench/engine.h — slot-bench's load engine (engine.c) and the state of a run.
 *
 * slot-bench is one libuv loop driving K connections to a target (slotd, or
 * Redis with the Lua peer of bench/peers/) through a driver, in phases:
 *
 *   config (options.c) ─▶ setup (scenario.c: events, admin calls)
 *     ─▶ engine (engine.c: connections, tickets, timers; one phase at a time)
 *          ├─ workload (workload.c: which request next, what an answer means)
 *          └─ driver (driver.h; drv_slotd.c, drv_redis.c: bytes on the wire <-> results)
 *     ─▶ verification (verify.c, ledger.c) ─▶ reports (report.c, svg.c)
 *
 * Every request in flight is a ticket in its connection's ring; both targets
 * answer in request order per connection, so the answer always belongs to the
 * ring's head. Single-threaded: everything here runs on the loop's thread.
 */
#ifndef SLOT_BENCH_ENGINE_H
#define SLOT_BENCH_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "driver.h"
#include "ledger.h"
#include "slot/error.h"
#include "slot/hist.h"
#include "wire.h"

/* A connection of the engine; the driver keeps its own state behind drv. */
struct bench_conn {
    bench_run *run;
    uint32_t index;
    void *drv;
    bool up;            /* connected (and, with a token, authenticated) */
    bool dirty;         /* has unsent requests queued: flush at the end of this turn */
    bench_ticket *ring; /* [head, head+inflight) sent; then `backlog` due, not sent */
    uint32_t ring_cap, head, inflight, backlog;
    uint32_t *ready; /* churn: sessions of this connection ready to send */
    uint32_t nready;
    uint64_t rng;
};

/* Per-event tallies from the answers (what the bench was told). */
typedef struct bench_event {
    char name[SLOT_EVENT_BYTES_MAX + 1];
    uint64_t capacity;
    uint64_t holds, held_units; /* held answers and their units, cumulative */
    uint64_t out_units;         /* churn: held by us now (not confirmed/released/expired) */
    uint64_t confirmed_units, released_units, expired_units;
    uint64_t returned_units; /* churn: given back by partial confirms */
    uint64_t sellout_ns;     /* when units left fell below the smallest qty; 0 = not yet */
    bool measured;           /* false: the warm-up event */
    uint64_t sold_out;       /* sold_out answers to its holds, cumulative */
    /* hot-release --allocation: "" the event's public units; else the block its holds take from
     * (docs/protocol.md, "Allocations"), on the event of the same name, capacity the block's units. */
    char allocation[SLOT_EVENT_BYTES_MAX + 1];
    uint8_t set; /* --placement: the replica set (index of the driver's sets) that owns it */
} bench_event;

/* Counters of one phase. */
typedef struct bench_counters {
    uint64_t scheduled, sent, answered;
    uint64_t carts; /* hot-release --cart: held carts (holds counts each item's hold) */
    uint64_t holds, held_units, sold_out, confirmed, released, expired, abandoned;
    uint64_t replays, unexpected, bad_sold_out; /* bad_sold_out: sold_out with available >= qty */
    uint64_t tail_seen;                         /* sold_out answers after the sell-out */
    /* --allocation: sold_out answers whose "remaining" (docs/protocol.md, "Allocations") does not fit:
     * a block hold's without it or with remaining >= qty, a public hold's with it */
    uint64_t bad_block_sold_out;
    uint64_t errors[SLOT_E__COUNT + 1];
    uint64_t first_send_ns, last_reply_ns, first_sold_out_ns, last_sold_out_ns, sellout_ns;
    uint64_t backlog_max; /* open loop: most requests due but not sent at once */
    uint64_t not_on_sale; /* hot-release --opens-in: answers before the sale opened (not errors) */
    /* churn, v1.1: extend answers that extended a hold, and extend_limit answers (not errors);
     * confirms of fewer units than held, and the units they gave back; late payments (confirms
     * with reacquire after the hold expired): a fresh hold confirmed (and its units), sold_out,
     * user_limit (--max-per-user), or the hold still held after all (an ordinary confirm,
     * counted in confirmed as well). */
    uint64_t extends, extend_limit, partial, returned_units;
    uint64_t late, late_reacquired, late_units, late_sold_out, late_user_limit, late_held;
} bench_counters;

/* One sample of the time series (every BENCH_SAMPLE_MS). */
typedef struct bench_sample {
    uint32_t t_ms;
    uint64_t sent, answered, held, sold_out, errors, units_left;
    double p99_ms; /* of the answers in this interval; 0 when there were none */
} bench_sample;

/* A phase: what to send, how long, and what answers mean. */
typedef struct bench_phase {
    const char *name;
    uint32_t conns;    /* uses connections 0..conns-1 */
    uint32_t pipeline; /* in flight per connection */
    double rate_per_s; /* > 0: open loop at this many requests/s */
    uint64_t requests_max;
    uint32_t duration_ms;
    bool measure;  /* latency, time series, progress line */
    bool one_loop; /* --threads: on the run's own loop only (verification), not spread */
    uint16_t event_first, event_count;
    bool zipf;         /* pick events by popularity (else event_first) */
    bool ledger;       /* remember held answers for the ledger check */
    bool unique_users; /* a new user for every hold even with --users */
    uint8_t cart;      /* > 1: every hold is a cart of events event_first..+cart-1 (hold_many) */
    uint64_t tail;     /* stop after the sell-out and this many sold_out answers; UINT64_MAX: never */
    bool unit_holds;   /* every hold of one unit, whatever --qty (waitlist's prefill: sells every unit) */
    /* closed loop: the next request for c (false: none now). */
    bool (*next)(bench_run *run, bench_conn *c, bench_ticket *t);
    void (*on_result)(bench_run *run, bench_conn *c, const bench_ticket *t, const bench_result *r, uint64_t now_ns);
} bench_phase;

/* Churn: one simulated buyer; waitlist: a waiter, or the holder of a prefill hold. */
/* DONE: waitlist, a session with nothing more to send. */
typedef enum bench_session_state {
    BENCH_SESSION_READY,
    BENCH_SESSION_WAITING,
    BENCH_SESSION_THINKING,
    BENCH_SESSION_DONE
} bench_session_state;

typedef struct bench_session {
    uint32_t conn;
    uint8_t state;        /* bench_session_state */
    uint8_t next_op;      /* bench_op to send when ready */
    uint8_t fate;         /* BENCH_OP_CONFIRM / BENCH_OP_RELEASE, or BENCH_OP_HOLD = abandon */
    uint8_t extends_left; /* extend requests still to send before the fate (0..2) */
    uint32_t hold;        /* ledger index of its current hold */
    uint8_t plan;         /* a confirm's BENCH_TICKET_* flags: partial, or late (reacquire) */
} bench_session;

/* Waitlist: one buyer in the sold-out event's waitlist, in join order (its index). */
typedef enum bench_waiter_state {
    BENCH_WAITER_NEW,     /* its join is not answered yet */
    BENCH_WAITER_WAITING, /* joined, polls for its entry's state */
    BENCH_WAITER_OFFERED, /* the bench knows its offered hold (or its join was held at once) */
    BENCH_WAITER_FAILED,  /* its join was refused or answered unexpectedly */
} bench_waiter_state;

typedef struct bench_waiter {
    uint64_t key; /* its request key "r<key>"; its user is "u<user>" */
    uint64_t user;
    uint64_t ack_ms;        /* wall clock when the join's answer came */
    uint64_t offer_ms;      /* the offered hold's created_at (its expires_at - hold_ttl_ms); 0: none known */
    uint64_t hold_seq;      /* the offered hold's seq (the first 16 hex digits of its id) */
    uint32_t position;      /* the join answer's; 0: held at once */
    uint32_t last_position; /* the latest poll's */
    uint32_t hold;          /* ledger index of its offered hold; BENCH_LINK_NONE */
    uint16_t qty;
    uint8_t state;     /* bench_waiter_state */
    uint8_t final;     /* slot_wait_state the last status phase saw */
    bool at_once;      /* the join was held at once: no entry, the hold is the join's */
    bool learned_late; /* its offer was first seen after the measured phase */
} bench_waiter;

/* Waitlist: what the join, measured, leave and status phases saw (the join phase's
 * counters are kept here: run->n is reset by every phase). */
typedef struct bench_wl {
    bench_waiter *w;
    uint32_t n;      /* --waiters */
    uint32_t cursor; /* join, leave, status phases: the next waiter */
    uint32_t head;   /* measured phase: no waiter before it still waits */
    uint32_t joined, at_once, full, join_errors, join_unexpected, bad_positions;
    bool positions_exact;   /* the join answers' positions were 1..n in join order */
    uint64_t prev_position; /* join phase: the previous waiting answer's position (0: none, or held at once) */
    uint32_t offered;       /* waiters whose offer the bench knows */
    uint32_t acting;        /* sessions with a release or confirm still to answer */
    uint32_t waiting;       /* waiters still polling */
    uint64_t start_ms;      /* wall clock at the measured phase's start */
    uint64_t last_offer_ms;
    uint64_t prefill_released, prefill_confirmed, prefill_abandoned;
    uint64_t offer_released, offer_confirmed, offer_abandoned, offer_expired_first;
    uint64_t polls, left, leave_missed, status_errors, status_unexpected, learned_late;
    uint32_t nprefill; /* ledger entries 0..nprefill-1: the prefill's holds */
    bool exhausted;    /* the measured phase stopped: the units not confirmed cannot meet a waiter */
    uint32_t order_violations;
    char first_violation[300];
} bench_wl;

/* A min-heap of (due time, session) for think times. */
typedef struct bench_heap_item {
    uint64_t due_ns;
    uint32_t session;
} bench_heap_item;

struct bench_run {
    const bench_config *cfg;
    const bench_driver *drv;
    uv_loop_t loop;
    uv_timer_t bound_timer, drain_timer, sample_timer, progress_timer, think_timer, tick_timer;
    bench_conn *conns;
    uint32_t nconns, nup;
    uint32_t *dirty; /* connections with requests queued this turn */
    uint32_t ndirty;
    void *drv_state;              /* the driver's run-wide state */
    struct sockaddr_storage addr; /* where the target is */
    bench_admin *admin;

    const bench_phase *phase;
    bool stop_sending, phase_over, in_phase;
    const char *stop_reason;
    bool stopped_at_bound; /* the phase was stopped by its time or request bound (stop_reason says which) */
    uint64_t inflight_total, backlog_total, phase_start_ns;
    char fatal[512]; /* the run broke off: why; fatal_exit: how to exit */
    int fatal_exit;

    bench_counters n;           /* the current phase */
    slot_hist *lat_ns, *win_ns; /* whole measured phase; since the last sample */
    slot_hist *first_ns;        /* answers to requests sent in the phase's first second */
    uint64_t opens_at_ms;       /* hot-release --opens-in: the sale's opening (ms since the epoch); 0 = none */
    uint64_t opening_lag_ms;    /* how late after the opening the bench woke to send (wall clock, ms) */
    bench_event *events;
    uint32_t nevents; /* measured events, then (with --warmup) the warm-up event */
    /* --placement: replica sets the events are spread over (0 or 1: no routing); connection i
     * sells the events of set i % nsets, and checks their holds (set_cursor: the ledger check's
     * next entry to look at, per set) */
    uint32_t nsets;
    size_t set_cursor[BENCH_SETS_MAX];
    double *zipf_cum; /* multi-event: cumulative popularity */
    uint64_t next_user, next_key;
    uint64_t rng;

    uint32_t events_sold;  /* measured events sold out in this phase */
    char first_error[200]; /* the first error answer nobody expected: code and message */
    bench_ledger ledger;
    bench_session *sessions;
    uint32_t nsessions;
    bench_heap_item *heap;
    uint32_t heap_n;
    uint64_t think_due_ns; /* when think_timer fires; 0 = not armed */
    bench_wl wl;           /* the waitlist scenario */
    struct bench_seated *seated; /* hot-release --seated (seated.h); NULL otherwise */
    uint32_t *abandoned;   /* churn: ledger indices of abandoned holds, in answer order */
    size_t nabandoned, abandoned_head, abandoned_cap;

    /* Following the primary (drv_slotd.c counts, the engine times), over the whole run. */
    uint64_t failovers;      /* the node acknowledging writes changed */
    uint64_t retries;        /* requests sent again with the same key */
    uint64_t last_ack_ns;    /* measured phases: the last acknowledged write (0: none yet) */
    uint64_t ack_gap_max_ns; /* ... the longest time without one */

    bench_sample *series;
    size_t nseries, series_cap;

    /* --threads N > 1 (engine_threads.c): this run is loop 0; loops[0..nloops-1] are loops 1..N-1,
     * runs of their own on their own threads, each with its share of the connections, merged into
     * this one after every phase. A loop borrows the run's driver, admin and zipf_cum, and has its
     * own copy of the configuration (loop_cfg) and of the events. */
    bench_run **loops;
    uint32_t nloops;
    uint32_t loop_index;    /* 0: the run; i: loop i */
    bench_config *loop_cfg; /* a loop's own configuration (NULL: the run's cfg is its own) */
    uint32_t conns_own;     /* connections of this loop (0: cfg->connections) */
    /* The bench's own cost in the last measured phase: user + system CPU of the whole process
     * (getrusage RUSAGE_SELF, every loop's thread) in seconds. */
    double cpu_s;
    uint64_t open_t0_ns, open_next; /* open loop: schedule start, next request number */
    bool progress_tty;
    uint64_t last_progress_answered, last_progress_ns;
};

/*
 * bench_engine_open — start the loop, connect cfg->connections connections
 * through the driver (plus hello when there is a token) and wait until all
 * are up (at most 2 x BENCH_CONNECT_TIMEOUT_MS). Returns 0, or an exit
 * status with run->fatal set.
 */
int bench_engine_open(bench_run *run);
/*
 * bench_engine_phase — run one phase to its end: its bounds (time, count) or
 * bench_stop, then every answer in (or BENCH_DRAIN_MS). Counters are reset at
 * its start. phase is borrowed for the call. Returns 0, or run->fatal_exit
 * when the run broke off.
 */
int bench_engine_phase(bench_run *run, const bench_phase *phase);
/* bench_engine_close — close every connection and handle, free the engine's memory. */
void bench_engine_close(bench_run *run);
/* bench_stop — send no more in this phase (reason: static string, for the report; the first one stays). */
void bench_stop(bench_run *run, const char *reason);
/* bench_fail — the run cannot go on: record why (first call wins) and stop the loop. */
void bench_fail(bench_run *run, int exit_code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Driver callbacks: a connection is up; an answer arrived for the head of c's ring. */
void bench_conn_up(bench_conn *c);
void bench_deliver(bench_conn *c, const bench_result *r, uint64_t now_ns);
/* bench_send — queue t on c (closed loop: now; the engine flushes at the end of the turn). false: fatal. */
bool bench_send(bench_conn *c, const bench_ticket *t);
/* bench_think — session s sends its next request after delay_ms (0: at once). */
void bench_think(bench_run *run, uint32_t s, uint32_t delay_ms);
/* bench_turn_end — push out what was queued during this loop turn (drivers call it at the end of a read). */
void bench_turn_end(bench_run *run);
/* bench_units_left — units not held or confirmed, summed over the measured events, from the answers. */
uint64_t bench_units_left(const bench_run *run);

/* engine_threads.c (--threads N > 1), called by the engine on the run's thread:
 * bench__loops_open — make loops 1..N-1 with their share of the connections and bring them up
 *   (the run itself, loop 0, is open). 0, or an exit status with run->fatal set.
 * bench__loops_phase — run ph on every loop at once (loop 0 on this thread), each with its share
 *   of ph's connections, requests and tail, wait for all, and merge their counters, latencies,
 *   events' tallies, ledgers and time series into run. 0, or the exit status of a loop that broke off.
 * bench__loops_close — close and free loops 1..N-1.
 * bench__phase_one — one phase on run's own loop (what bench_engine_phase does without threads). */
int bench__loops_open(bench_run *run);
int bench__loops_phase(bench_run *run, const bench_phase *ph);
void bench__loops_close(bench_run *run);
int bench__phase_one(bench_run *run, const bench_phase *ph);

#endif
