/*
 * bench/limits.h — every bound and default of slot-bench, with its unit.
 * The command line (options.c) parses against these and --help prints them,
 * so a range in the help cannot drift from the one enforced. The server's own
 * limits (slot/limits.h) are used where the bench must stay inside them.
 */
#ifndef SLOT_BENCH_LIMITS_H
#define SLOT_BENCH_LIMITS_H

#include <stdint.h>

#include "slot/limits.h"

/* ---------------------------------------------------------------- command-line ranges */

#define BENCH_PORT_MAX 65535u
#define BENCH_HOST_BYTES_MAX 255
#define BENCH_HOSTS_MAX 16         /* --host given several times: a replica set's members (slot_follow's bound) */
#define BENCH_EVENT_SUFFIX_BYTES 7 /* "-warmup" and multi-event's "-<i>" (i < 2^16) */
#define BENCH_EVENT_BYTES_MAX (SLOT_EVENT_BYTES_MAX - BENCH_EVENT_SUFFIX_BYTES) /* --event */
#define BENCH_CONNS_MAX 10000                                                   /* each is a file descriptor */
#define BENCH_THREADS_MAX 64                          /* --threads: event loops (threads) of the load */
#define BENCH_PIPELINE_MAX SLOT_CONN_INFLIGHT_DEFAULT /* slotd stops reading above this many per connection */
#define BENCH_QTY_CHOICES_MAX 16                      /* entries of a --qty distribution */
#define BENCH_QTY_WEIGHT_MAX 1000000u                 /* the weight of one --qty entry */
#define BENCH_QTY_TEXT_BYTES_MAX 127                  /* --qty as given */
#define BENCH_USERS_MAX (UINT64_C(1) << 40)           /* --users pool */
#define BENCH_DURATION_MS_MIN 1u
#define BENCH_DURATION_MS_MAX (3600u * 1000u) /* one hour: every run is bounded in time */
#define BENCH_REQUESTS_MAX (UINT64_MAX / 2)   /* --requests */
#define BENCH_SEED_MAX ((uint64_t)INT64_MAX)  /* reports carry the seed as a JSON integer */
#define BENCH_TAIL_MAX UINT32_MAX             /* --tail: sold_out answers */
#define BENCH_RATE_PER_S_MIN 1.0              /* open loop: requests/s */
#define BENCH_RATE_PER_S_MAX 10000000.0
#define BENCH_OPENS_IN_MS_MAX (3600u * 1000u) /* hot-release --opens-in: at most an hour ahead */
#define BENCH_PCT_MAX 100u                    /* --confirm, --release, --abandon, --extend, --partial, --late */
#define BENCH_THINK_MS_MAX 600000u            /* churn: one think time */
#define BENCH_EXPIRE_WAIT_MS_MAX 70000u       /* churn: how long verification waits for holds to expire */
#define BENCH_EXPIRE_SLACK_MS 10000u          /* ... of which this is kept for the sweep after the TTL */
#define BENCH_HOLD_TTL_MS_MAX (BENCH_EXPIRE_WAIT_MS_MAX - BENCH_EXPIRE_SLACK_MS) /* churn: --hold-ttl-ms */
#define BENCH_SETS_MAX 8 /* --placement: replica sets the events are spread over (<= BENCH_VERIFY_CONNS) */
#define BENCH_EVENTS_MAX 1024                                                    /* multi-event: events at once */
#define BENCH_ZIPF_EXPONENT_MAX 10.0                                             /* --zipf */
#define BENCH_WAITERS_MAX 1000000u           /* waitlist --waiters (the server's list takes SLOT_WAITLIST_MAX_MAX) */
#define BENCH_WAITLIST_CAPACITY_MAX 1000000u /* waitlist --capacity: one prefill hold, and one session, per unit */
#define BENCH_POLL_MS_MIN 1u                 /* waitlist --poll-ms */
#define BENCH_POLL_MS_MAX 10000u

/* ---------------------------------------------------------------- command-line defaults */

#define BENCH_HOST_DEFAULT "127.0.0.1"
#define BENCH_REDIS_PORT_DEFAULT 6379
#define BENCH_CONNS_DEFAULT 256
#define BENCH_PIPELINE_DEFAULT 1
#define BENCH_PIPELINE_OPEN_LOOP_DEFAULT 64
#define BENCH_CAPACITY_DEFAULT 100000u /* hot-release, churn */
#define BENCH_CAPACITY_OPEN_LOOP_DEFAULT 1000000u
#define BENCH_CAPACITY_SOLD_OUT_DEFAULT 1000u
#define BENCH_CAPACITY_MULTI_EVENT_DEFAULT 10000u /* per event */
#define BENCH_DURATION_MS_DEFAULT 10000u          /* open-loop, churn, sold-out */
#define BENCH_DURATION_SELL_MS_DEFAULT 120000u    /* hot-release, multi-event: they end at the sell-out */
#define BENCH_REQUESTS_DEFAULT 100000000ull       /* the count bound when --requests is not given */
#define BENCH_TAIL_DEFAULT 10000u
#define BENCH_RATE_PER_S_DEFAULT 10000.0
#define BENCH_CONFIRM_PCT_DEFAULT 20u
#define BENCH_RELEASE_PCT_DEFAULT 40u
#define BENCH_ABANDON_PCT_DEFAULT 40u
#define BENCH_EXTEND_PCT_DEFAULT 10u             /* churn: of the buyers who confirm on time or release */
#define BENCH_PARTIAL_PCT_DEFAULT 10u            /* churn: of the confirms */
#define BENCH_LATE_PCT_DEFAULT 5u                /* churn: of the confirms */
#define BENCH_QTY_CHURN_DEFAULT "1:60,2:30,4:10" /* churn: holds of several units, so that partial confirms happen */
#define BENCH_THINK_MIN_MS_DEFAULT 10u
#define BENCH_THINK_MAX_MS_DEFAULT 100u
#define BENCH_HOLD_TTL_MS_CHURN_DEFAULT 2000u
#define BENCH_EVENTS_DEFAULT 16u
#define BENCH_ZIPF_EXPONENT_DEFAULT 1.0
#define BENCH_WAITERS_DEFAULT 1000u          /* waitlist */
#define BENCH_CAPACITY_WAITLIST_DEFAULT 100u /* waitlist: ten waiters per unit by default */
#define BENCH_POLL_MS_DEFAULT 20u            /* waitlist */
#define BENCH_POLL_SPREAD_MAX 8u /* waitlist: a waiter at position p polls every poll_ms x min(8, ceil(p / capacity)) */
#define BENCH_CONFIRM_PCT_WAITLIST_DEFAULT \
    0u /* waitlist: confirmed units never come back; by default every unit circulates */
#define BENCH_RELEASE_PCT_WAITLIST_DEFAULT 70u
#define BENCH_ABANDON_PCT_WAITLIST_DEFAULT 30u
#define BENCH_THINK_MAX_MS_WAITLIST_DEFAULT 20u  /* waitlist: think times 0..20 ms */
#define BENCH_HOLD_TTL_MS_WAITLIST_DEFAULT 1000u /* waitlist: abandoned holds come back after 1 s (and the sweep) */

/* ---------------------------------------------------------------- the run's own bounds */

#define BENCH_SAMPLE_MS 100   /* time series: one sample per 100 ms */
#define BENCH_PROGRESS_MS 500 /* the live line on stderr */
#define BENCH_DRAIN_MS 10000  /* after the last send: replies must be in by then */
#define BENCH_CONNECT_TIMEOUT_MS 5000
#define BENCH_CALL_TIMEOUT_MS 120000              /* admin calls: check scans every hold */
#define BENCH_OPEN_TICK_MS 1                      /* open loop: the schedule is served every 1 ms */
#define BENCH_BACKLOG_MIN 1024                    /* open loop: requests due per connection the bench holds back */
#define BENCH_BACKLOG_MAX 65536                   /* ... at most (rate x 1 s / connections in between) */
#define BENCH_PREFILL_PIPELINE_MIN 16             /* sold-out's prefill: requests in flight per connection */
#define BENCH_VERIFY_CONNS 8                      /* the ledger check: connections ... */
#define BENCH_VERIFY_PIPELINE 128                 /* ... and get_hold requests in flight on each */
#define BENCH_JOIN_PIPELINE BENCH_VERIFY_PIPELINE /* waitlist: joins (and leaves) in flight on their one connection */
/* waiting-room (room.c): --crowd, --admit-per-s, --confirm-share; polling and samples */
#define BENCH_CROWD_MIN 10u
#define BENCH_CROWD_MAX 1000000u
#define BENCH_CROWD_DEFAULT 10000u
#define BENCH_ADMIT_PER_S_MAX 1000000u /* the server's admit_per_s range */
#define BENCH_ADMIT_PER_S_DEFAULT 1000u
#define BENCH_ROOM_CONFIRM_PCT_DEFAULT 50u
#define BENCH_ROOM_CONNS_DEFAULT 4
#define BENCH_ROOM_PIPELINE_DEFAULT 16
#define BENCH_ROOM_POLL_MS 50u          /* an entry asks for its admission at most this often */
#define BENCH_ROOM_LOOKAHEAD_MS 250u    /* entries polled: the next admit_per_s x this in admission order */
#define BENCH_ROOM_OPEN_DELAY_MS 500u   /* --opens-in 0: the sale opens this long after the last join */
#define BENCH_ROOM_HOLD_OFF_MS (3600u * 1000u) /* --opens-in 0: opens_at until the joins are done */
#define BENCH_ROOM_GRANT_TTL_MS (3u * 3600u * 1000u) /* above --duration's bound: no grant expires in a run */
#define BENCH_ROOM_NOGRANT_TRIES 3      /* holds without a valid grant, each must be admission_required */
#define BENCH_ROOM_IDLE_SLEEP_MS 2      /* a round with nothing due */
#define BENCH_ROOM_CHI2_P 0.001         /* the lottery's uniformity test rejects below this */
#define BENCH_LEDGER_MAX (64u << 20)              /* holds remembered for the ledger check */
#define BENCH_EXPIRE_ROUNDS_MAX 64 /* admin expire calls after a churn run (each bounded by the server) */
#define BENCH_EXPIRE_MARGIN_MS 50  /* churn: wait this long past the last expires_at */
#define BENCH_LATE_MARGIN_MS 100   /* churn: a late payer pays this long (plus a think time) after hold_ttl_ms */
#define BENCH_REQ_BYTES 512        /* one encoded request; get_hold is the longest ... */
#define BENCH_CART_REQ_BYTES (96 + SLOT_CART_ITEMS_MAX * (SLOT_EVENT_BYTES_MAX + 32)) /* ... but for a hold_many */
#define BENCH_CART_DEFAULT 1 /* hot-release --cart: events per cart; 1 = plain holds */
/* hot-release --allocation N (docs/protocol.md, "Allocations"): the block the bench allocates N
 * units to, and the share of the connections (percent, 1..99) whose holds take from it. */
#define BENCH_BLOCK_NAME "presale"
#define BENCH_PRESALE_PCT_DEFAULT 25u
#define BENCH_PRESALE_PCT_MIN 1u
#define BENCH_PRESALE_PCT_MAX 99u
/* hot-release --seated FILE (seats.c; docs/protocol.md, "Seated events"): the file's size (it is
 * sent whole in one create_event line, which slotd's --max-line bounds first: 64 KiB by default),
 * and the seats of one hold the bench follows (--qty with --seated: a buyer's 1..6 and room over). */
#define BENCH_SEAT_MAP_BYTES_MAX (16 << 20)
#define BENCH_SEAT_QTY_MAX 16u
#define BENCH_SEAT_QTY_DEFAULT "1:15,2:40,3:10,4:25,5:5,6:5" /* --seated without --qty: parties of 1..6 */
#define BENCH_SEAT_REQ_BYTES (160 + SLOT_EVENT_BYTES_MAX + BENCH_SEAT_QTY_MAX * (SLOT_SEAT_ID_BYTES_MAX + 3)) /* a named hold */
/* Following the primary (drv_slotd.c): a connection whose request met not_primary,
 * unavailable, a close or silence is opened again (on the primary, or the next
 * host) and its requests in flight are sent again with the same keys. */
#define BENCH_FOLLOW_REPLY_MS 2000          /* requests in flight and no reply this long: the node is gone */
#define BENCH_FOLLOW_TICK_MS 100            /* how often silence is looked for */
#define BENCH_FOLLOW_BACKOFF_MS 20          /* first pause before a reconnect, doubling ... */
#define BENCH_FOLLOW_BACKOFF_MAX_MS 500     /* ... up to this */
#define BENCH_FOLLOW_ATTEMPTS_MAX 64        /* reconnects of one connection without an answer in between */
#define BENCH_FOLLOW_DEADLINE_MS 30000      /* ... and for at most this long: then the run fails */
#define BENCH_FOLLOW_ADMIN_SENDS_PER_HOST 6 /* an admin call: sends per --host (slot_follow's bound) */
/* Before verification and the 'after' stats (several --host values): the admin
 * connection moves to the node whose cluster op says primary (drv_slotd_admin.c). */
#define BENCH_ADMIN_PRIMARY_WAIT_MS 5000 /* a failover takes about 1 s; a new primary may be catching up */
#define BENCH_ADMIN_PRIMARY_PAUSE_MS 100 /* between cluster asks that found no primary */

_Static_assert(BENCH_VERIFY_PIPELINE <= BENCH_PIPELINE_MAX, "verification pipeline above the server's bound");
_Static_assert(BENCH_SEAT_REQ_BYTES >= BENCH_REQ_BYTES, "a named hold's line room below any other's");
_Static_assert(BENCH_SEAT_QTY_MAX <= SLOT_MAX_PER_REQUEST_MAX, "--seated --qty above the server's max_per_request");
_Static_assert(BENCH_HOLD_TTL_MS_MAX >= SLOT_HOLD_TTL_MS_MIN, "--hold-ttl-ms has an empty range");

#endif
