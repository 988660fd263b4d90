/*
 * bench/bench.h — what the files of slot-bench share.
 *
 * slot-bench is one libuv loop driving K connections to a target (slotd, or
 * Redis with the Lua peer of bench/peers/) through a driver, in phases:
 *
 *   config (options.c) ─▶ setup (scenario.c: events, admin calls)
 *     ─▶ engine (engine.c: connections, tickets, timers; one phase at a time)
 *          ├─ workload (workload.c: which request next, what an answer means)
 *          └─ driver (drv_slotd.c, drv_redis.c: bytes on the wire <-> results)
 *     ─▶ verification (verify.c, ledger.c) ─▶ reports (report.c, svg.c)
 *
 * Every request in flight is a ticket in its connection's ring; both targets
 * answer in request order per connection, so the answer always belongs to the
 * ring's head. Single-threaded: everything here runs on the loop's thread.
 */
#ifndef SLOT_BENCH_H
#define SLOT_BENCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "slot/error.h"
#include "slot/hist.h"
#include "slot/limits.h"
#include "slot/store.h"

/* Exit statuses (documented in every --help). */
#define BENCH_EXIT_OK 0
#define BENCH_EXIT_FAILED 1         /* verification failed, or the server refused the setup */
#define BENCH_EXIT_CONNECTION 2     /* the target could not be reached, or a connection broke */
#define BENCH_EXIT_USAGE 64         /* sysexits.h EX_USAGE */

#define BENCH_CONNS_MAX 10000                      /* each is a file descriptor */
#define BENCH_PIPELINE_MAX SLOT_CONN_INFLIGHT_DEFAULT /* slotd stops reading above this many per connection */
#define BENCH_DURATION_MS_MAX (3600u * 1000u)      /* one hour: every run is bounded in time */
#define BENCH_QTY_CHOICES_MAX 16                   /* entries of a --qty distribution */
#define BENCH_EVENTS_MAX 1024                      /* multi-event: events at once */
#define BENCH_HOST_BYTES_MAX 255
#define BENCH_SAMPLE_MS 100                        /* time series: one sample per 100 ms */
#define BENCH_PROGRESS_MS 500                      /* the live line on stderr */
#define BENCH_DRAIN_MS 10000                       /* after the last send: replies must be in by then */
#define BENCH_CONNECT_TIMEOUT_MS 5000
#define BENCH_CALL_TIMEOUT_MS 120000               /* admin calls: check scans every hold */
#define BENCH_VERIFY_CONNS 8                       /* the ledger check: connections ... */
#define BENCH_VERIFY_PIPELINE 128                  /* ... and get_hold requests in flight on each */
#define BENCH_LEDGER_MAX (64u << 20)               /* holds remembered for the ledger check */
#define BENCH_EXPIRE_WAIT_MS_MAX 70000             /* churn: how long verification waits for holds to expire */
#define BENCH_OPEN_TICK_MS 1                       /* open loop: the schedule is served every 1 ms */
#define BENCH_REQ_BYTES 512                        /* one encoded request; get_hold is the longest */

_Static_assert(BENCH_VERIFY_PIPELINE <= BENCH_PIPELINE_MAX, "verification pipeline above the server's bound");

/* ---------------------------------------------------------------- configuration */

typedef enum bench_scenario {
    BENCH_HOT_RELEASE,
    BENCH_OPEN_LOOP,
    BENCH_CHURN,
    BENCH_SOLD_OUT,
    BENCH_MULTI_EVENT,
} bench_scenario;

typedef enum bench_target_kind { BENCH_TARGET_SLOTD, BENCH_TARGET_REDIS } bench_target_kind;

/* --qty: a fixed quantity or a small distribution "1:70,2:20,4:10" (qty:weight). */
typedef struct bench_qty {
    uint32_t n;                                /* choices, 1..BENCH_QTY_CHOICES_MAX */
    uint32_t qty[BENCH_QTY_CHOICES_MAX];
    uint32_t cum[BENCH_QTY_CHOICES_MAX];       /* running sum of weights */
    uint32_t min, max;
    char text[128];                            /* as given */
} bench_qty;

/* Everything a run was asked to do; filled by bench_config_parse, then read-only. */
typedef struct bench_config {
    bench_scenario scenario;
    const char *name;                          /* the subcommand */
    bench_target_kind target;
    char host[BENCH_HOST_BYTES_MAX + 1];
    uint16_t port;
    const char *token;
    bool allow_remote;
    char event[SLOT_EVENT_BYTES_MAX + 1];      /* base name; multi-event appends "-<i>" */
    uint32_t connections, pipeline;
    bench_qty qty;
    uint64_t capacity;                         /* per event */
    uint32_t shards;
    uint64_t max_per_user, users;              /* users: pool size; 0 = every hold a new user */
    uint32_t duration_ms;
    uint64_t requests;                         /* bound on requests sent in the measured phase */
    uint64_t seed;
    uint32_t warmup_ms;
    uint64_t tail;                             /* hot-release, multi-event: sold_out answers after the sell-out */
    double rate;                               /* open-loop: requests per second */
    uint32_t confirm_pct, release_pct, abandon_pct;
    uint32_t think_min_ms, think_max_ms;
    uint32_t hold_ttl_ms;                      /* 0 = long enough that nothing expires during the run */
    uint32_t events;
    double zipf_s;
    const char *json_path, *csv_path, *svg_path;
} bench_config;

/*
 * bench_config_parse — parse a scenario's command line (argv[0] is its name).
 * Returns -1 when the run should go ahead (cfg filled), else an exit status:
 * 0 after --help (printed to stdout), BENCH_EXIT_USAGE after a message on stderr.
 */
int bench_config_parse(bench_config *cfg, bench_scenario scenario, int argc, char **argv);
/* bench_usage — the --help text of a scenario. */
void bench_usage(FILE *f, bench_scenario scenario);
/* bench_scenario_name / _summary — static strings. */
const char *bench_scenario_name(bench_scenario s);
const char *bench_scenario_summary(bench_scenario s);
/* bench_config_json — the configuration as a new JSON object (caller owns the reference). */
json_t *bench_config_json(const bench_config *cfg);
/* bench_qty_pick — a quantity drawn from the distribution with the random value r. */
uint32_t bench_qty_pick(const bench_qty *q, uint64_t r);

/* splitmix64 — the bench's random numbers: fast, seedable, one state per stream. */
uint64_t bench_rand(uint64_t *state);

/* ---------------------------------------------------------------- what goes over the wire */

typedef enum bench_op { BENCH_OP_HOLD, BENCH_OP_CONFIRM, BENCH_OP_RELEASE, BENCH_OP_GET_HOLD } bench_op;

/* One request in flight (or, open loop, due but not sent yet). */
typedef struct bench_ticket {
    uint64_t t_ns;          /* when it was due: the send time, or (open loop) the intended send time */
    uint64_t user;          /* user number: the name is "u<user>" */
    uint64_t key;           /* hold: request key number ("r<key>"); other ops: ledger index */
    uint32_t session;       /* churn: the session it belongs to; else UINT32_MAX */
    uint16_t event;         /* index into run->events */
    uint16_t qty;
    uint8_t op;             /* bench_op */
} bench_ticket;

/* An answer, whichever target gave it. */
typedef struct bench_result {
    bool ok;
    slot_err err;                   /* !ok: the code (SLOT_E__COUNT: a code this build does not know) */
    bool sold_out, replay, released;
    bool has_status;
    slot_hold_status status;        /* held/confirmed/...: hold, confirm, release, get_hold, hold_not_active */
    uint32_t qty;
    uint64_t available, expires_at_ms;
    char hold[SLOT_HOLD_ARG_BYTES_MAX + 1];
    uint32_t hold_len;
    char text[160];                 /* !ok: the server's message (for reports) */
} bench_result;

/* ---------------------------------------------------------------- the run */

typedef struct bench_run bench_run;
typedef struct bench_conn bench_conn;

/* A connection of the engine; the driver keeps its own state behind drv. */
struct bench_conn {
    bench_run *run;
    uint32_t index;
    void *drv;
    bool up;                        /* connected (and, with a token, authenticated) */
    bool dirty;                     /* has unsent requests queued: flush at the end of this turn */
    bench_ticket *ring;             /* [head, head+inflight) sent; then `backlog` due, not sent */
    uint32_t ring_cap, head, inflight, backlog;
    uint32_t *ready;                /* churn: sessions of this connection ready to send */
    uint32_t nready;
    uint64_t rng;
};

/* A target: how to talk to it (async, on the loop) and how to administer it (blocking). */
typedef struct bench_admin bench_admin;

/* An event as the target shows it. */
typedef struct bench_view {
    uint64_t capacity, available, held, confirmed;
    char status[16];
} bench_view;

/* What a run asks of the target's events. */
typedef struct bench_event_spec {
    const char *name;
    uint64_t capacity, max_per_user;
    uint32_t shards, hold_ttl_ms, max_per_request;
} bench_event_spec;

typedef struct bench_driver {
    const char *name;               /* "slotd", "redis" */
    /* async side: open every connection of the run (bench_conn_up is called
     * for each), queue one request, push queued requests out, close all. */
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
} bench_driver;

extern const bench_driver bench_driver_slotd;
#ifdef BENCH_HAVE_REDIS
extern const bench_driver bench_driver_redis;
#endif

/* Per-event tallies from the answers (what the bench was told). */
typedef struct bench_event {
    char name[SLOT_EVENT_BYTES_MAX + 1];
    uint64_t capacity;
    uint64_t holds, held_units;     /* held answers and their units, cumulative */
    uint64_t out_units;             /* churn: held by us now (not confirmed/released/expired) */
    uint64_t confirmed_units, released_units, expired_units;
    uint64_t sellout_ns;            /* when units left fell below the smallest qty; 0 = not yet */
    bool measured;                  /* false: the warm-up event */
} bench_event;

/* Counters of one phase. */
typedef struct bench_counters {
    uint64_t scheduled, sent, answered;
    uint64_t holds, held_units, sold_out, confirmed, released, expired, abandoned;
    uint64_t replays, unexpected, bad_sold_out;  /* bad_sold_out: sold_out with available >= qty */
    uint64_t tail_seen;             /* sold_out answers after the sell-out */
    uint64_t errors[SLOT_E__COUNT + 1];
    uint64_t first_send_ns, last_reply_ns, first_sold_out_ns, last_sold_out_ns, sellout_ns;
    uint64_t backlog_max;           /* open loop: most requests due but not sent at once */
} bench_counters;

/* One sample of the time series (every BENCH_SAMPLE_MS). */
typedef struct bench_sample {
    uint32_t t_ms;
    uint64_t sent, answered, held, sold_out, errors, units_left;
    double p99_ms;                  /* of the answers in this interval; 0 when there were none */
} bench_sample;

/* A phase: what to send, how long, and what answers mean. */
typedef struct bench_phase {
    const char *name;
    uint32_t conns;                 /* uses connections 0..conns-1 */
    uint32_t pipeline;              /* in flight per connection */
    double rate;                    /* > 0: open loop at this many requests/s */
    uint64_t requests_max;
    uint32_t duration_ms;
    bool measure;                   /* latency, time series, progress line */
    uint16_t event_first, event_count;
    bool zipf;                      /* pick events by popularity (else event_first) */
    bool ledger;                    /* remember held answers for the ledger check */
    bool unique_users;              /* a new user for every hold even with --users */
    uint64_t tail;                  /* stop after the sell-out and this many sold_out answers; UINT64_MAX: never */
    /* closed loop: the next request for c (false: none now). */
    bool (*next)(bench_run *run, bench_conn *c, bench_ticket *t);
    void (*on_result)(bench_run *run, bench_conn *c, const bench_ticket *t, const bench_result *r, uint64_t now_ns);
} bench_phase;

/* A remembered hold (ledger.c). */
typedef struct bench_hold {
    uint64_t user;
    uint64_t expires_at_ms;
    uint32_t id_off;                /* into the ledger's id arena */
    uint16_t event, qty;
    uint8_t id_len;
    uint8_t expect;                 /* slot_hold_status the server should show */
    uint8_t seen;                   /* what get_hold said (SLOT_HOLD__COUNT: nothing yet / error) */
    uint8_t pad;
} bench_hold;

typedef struct bench_ledger {
    bench_hold *holds;
    size_t n, cap;
    char *ids;
    size_t ids_len, ids_cap;
    size_t cursor;                  /* verification: next hold to ask about */
    uint64_t checked, mismatches, errors;
    char first_mismatch[400];
} bench_ledger;

/* Churn: one simulated buyer. */
typedef enum bench_session_state { BENCH_SESSION_READY, BENCH_SESSION_WAITING, BENCH_SESSION_THINKING } bench_session_state;

typedef struct bench_session {
    uint32_t conn;
    uint8_t state;                  /* bench_session_state */
    uint8_t next_op;                /* bench_op to send when ready */
    uint8_t fate;                   /* BENCH_OP_CONFIRM / BENCH_OP_RELEASE, or BENCH_OP_HOLD = abandon */
    uint32_t hold;                  /* ledger index of its current hold */
} bench_session;

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
    uint32_t *dirty;                /* connections with requests queued this turn */
    uint32_t ndirty;
    void *drv_state;                /* the driver's run-wide state */
    struct sockaddr_storage addr;   /* where the target is */
    bench_admin *admin;

    const bench_phase *phase;
    bool stop_sending, phase_over, in_phase;
    const char *stop_reason;
    uint64_t inflight_total, backlog_total, phase_start_ns;
    char fatal[512];                /* the run broke off: why; fatal_exit: how to exit */
    int fatal_exit;

    bench_counters n;               /* the current phase */
    slot_hist *lat_ns, *win_ns;     /* whole measured phase; since the last sample */
    bench_event *events;
    uint32_t nevents;               /* measured events, then (with --warmup) the warm-up event */
    double *zipf_cum;               /* multi-event: cumulative popularity */
    uint64_t next_user, next_key;
    uint64_t rng;

    uint32_t events_sold;           /* measured events sold out in this phase */
    char first_error[200];          /* the first error answer nobody expected: code and message */
    bench_ledger ledger;
    bench_session *sessions;
    uint32_t nsessions;
    bench_heap_item *heap;
    uint32_t heap_n;
    uint64_t think_due_ns;          /* when think_timer fires; 0 = not armed */
    uint32_t *abandoned;            /* churn: ledger indices of abandoned holds, in answer order */
    size_t nabandoned, abandoned_head, abandoned_cap;

    bench_sample *series;
    size_t nseries, series_cap;
    uint64_t open_t0_ns, open_next;  /* open loop: schedule start, next request number */
    bool progress_tty;
    uint64_t last_progress_answered, last_progress_ns;
};

/* ---------------------------------------------------------------- engine.c */

/*
 * bench_engine_open — start the loop, connect cfg->connections connections
 * through the driver (plus hello when there is a token) and wait until all
 * are up. Returns 0, or an exit status with run->fatal set.
 */
int bench_engine_open(bench_run *run);
/*
 * bench_engine_phase — run one phase to its end: its bounds (time, count) or
 * bench_stop, then every answer in (or BENCH_DRAIN_MS). Counters are reset at
 * its start. Returns 0, or run->fatal_exit when the run broke off.
 */
int bench_engine_phase(bench_run *run, const bench_phase *phase);
/* bench_engine_close — close every connection and handle, free the engine's memory. */
void bench_engine_close(bench_run *run);
/* bench_stop — send no more in this phase (reason: static string, for the report). */
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
/* bench_wall_ms — the wall clock, ms since the Unix epoch (the servers' clock for expires_at). */
uint64_t bench_wall_ms(void);
/* bench_units_left — units not held or confirmed, summed over the measured events, from the answers. */
uint64_t bench_units_left(const bench_run *run);

/* ---------------------------------------------------------------- workload.c */

/* bench_workload_phase — the measured phase of cfg's scenario. */
bench_phase bench_workload_phase(const bench_run *run);
/* bench_warmup_phase / bench_prefill_phase — the warm-up (events[nevents-1]), and
 * sold-out's prefill that sells the event out before measuring. */
bench_phase bench_warmup_phase(const bench_run *run);
bench_phase bench_prefill_phase(const bench_run *run);
/* bench_verify_phase — get_hold for every ledger entry. */
bench_phase bench_verify_phase(const bench_run *run);
/* bench_sessions_init — churn: pipeline sessions per connection. 0 or -ENOMEM. */
int bench_sessions_init(bench_run *run);
/* bench_user_name / bench_key_name — "u<n>", "r<hex n>" into buf; returns the length. */
size_t bench_user_name(uint64_t n, char *buf, size_t cap);
size_t bench_key_name(uint64_t n, char *buf, size_t cap);

/* ---------------------------------------------------------------- ledger.c */

/* bench_ledger_add — remember a held answer; returns its index, or -1 when full (BENCH_LEDGER_MAX) or out of memory. */
long bench_ledger_add(bench_ledger *l, const bench_ticket *t, const bench_result *r);
/* bench_ledger_id — the hold id of entry i (not NUL-terminated; length in the entry). Borrowed. */
const char *bench_ledger_id(const bench_ledger *l, size_t i);
void bench_ledger_free(bench_ledger *l);

/* ---------------------------------------------------------------- reply parsing (drv_slotd.c) */

/*
 * bench_parse_slotd_reply — one slotd reply line (without "\n") into r: a
 * fast scan of flat replies, falling back to slot_reply_parse for anything
 * else. Returns 0, or -1 when the line is not a reply.
 */
int bench_parse_slotd_reply(const char *line, size_t len, bench_result *r);

/* ---------------------------------------------------------------- verify.c */

/* The outcome of verification: problems, one sentence each. */
typedef struct bench_verdict {
    bool ran;
    char problems[2048];
    uint32_t nproblems;
    bench_view views[BENCH_EVENTS_MAX];
} bench_verdict;

/* bench_problem — add one problem (printf-style). */
void bench_problem(bench_verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * bench_verify — after the measured phase: the answers' own consistency, the
 * target's check, each event's view against the tallies, then the ledger
 * (get_hold for every hold, through the engine) and the totals. Returns 0, or
 * an exit status when the target could not be asked.
 */
int bench_verify(bench_run *run, bench_verdict *v);

/* ---------------------------------------------------------------- report.c, svg.c */

/* Everything the reports show. */
typedef struct bench_report {
    const bench_run *run;
    const bench_counters *n;        /* the measured phase */
    const bench_verdict *verdict;
    json_t *server;                 /* hello / INFO facts; borrowed */
    json_t *stats_before, *stats_after; /* borrowed; may be NULL */
    const char *stopped;
    double run_s, sellout_s, requests_per_s, holds_per_s, sold_out_per_s;
    double p50_ms, p90_ms, p99_ms, p999_ms, max_ms, mean_ms;
} bench_report;

/* bench_report_numbers — fill the derived numbers of rep from its counters. */
void bench_report_numbers(bench_report *rep);
/* bench_report_print — the summary table on f. */
void bench_report_print(const bench_report *rep, FILE *f);
/* bench_report_json / _csv / _svg — write the file; 0, or -errno (message printed). */
int bench_report_json(const bench_report *rep, const char *path);
int bench_report_csv(const bench_report *rep, const char *path);
int bench_report_svg(const bench_report *rep, const char *path);
/* bench_machine_json — nproc, memory, kernel, CPU model: a new object. */
json_t *bench_machine_json(void);

/* ---------------------------------------------------------------- scenario.c */

/* bench_run_scenario — parse, set up, run, verify, report. Returns the exit status. */
int bench_run_scenario(bench_scenario scenario, int argc, char **argv);

#endif
