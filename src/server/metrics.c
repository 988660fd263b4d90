/*
 * metrics.c — the Prometheus text (metrics.h). Every number comes from the
 * loop thread's counters, the same ones the stats op reports (loop.c), or
 * from the loop's read transaction; nothing here takes a lock beyond the
 * read transaction's hold on map growth.
 */
#include "metrics.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"
#include "slot/assert.h"
#include "slot/feed.h"
#include "slot/proto.h"
#include "slot_config.h"
#include "slot/limits.h"

/* ---- the output buffer: grows by doubling; after a failed allocation it
 * only records that (oom) and the text is given up. */

typedef struct mbuf {
    char *p;
    size_t len, cap;
    bool oom;
} mbuf;

static bool mb_reserve(mbuf *b, size_t more)
{
    if (b->oom)
        return false;
    if (b->len + more + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : SLOT_METRICS_TEXT_INITIAL_BYTES;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

static void mb_printf(mbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void mb_printf(mbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    SLOT_ASSERT(n >= 0);
    if (b->p && b->len + (size_t)n < b->cap) {
        b->len += (size_t)n;
        return;
    }
    if (!mb_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static void mb_put(mbuf *b, const char *s, size_t n)
{
    if (!mb_reserve(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

/* A label value as the text format writes it: \\, \" and \n escaped. The
 * names slotd labels with (ops, codes, events, consumers, nodes) are of
 * [A-Za-z0-9._:-] already; escaping keeps the output valid regardless. */
static void mb_label(mbuf *b, const char *v)
{
    for (;;) {
        size_t n = strcspn(v, "\\\"\n");
        mb_put(b, v, n);
        v += n;
        if (!*v)
            return;
        mb_put(b, *v == '\n' ? "\\n" : *v == '"' ? "\\\"" : "\\\\", 2);
        v++;
    }
}

static void family(mbuf *b, const char *name, const char *type, const char *help)
{
    mb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One family of a single sample without labels. */
static void one_u64(mbuf *b, const char *name, const char *type, const char *help, uint64_t v)
{
    family(b, name, type, help);
    mb_printf(b, "%s %" PRIu64 "\n", name, v);
}

/* name{key="value"} v */
static void labelled_u64(mbuf *b, const char *name, const char *key, const char *value, uint64_t v)
{
    mb_printf(b, "%s{%s=\"", name, key);
    mb_label(b, value);
    mb_printf(b, "\"} %" PRIu64 "\n", v);
}

/* name{key1="value1",key2="value2"} v */
static void labelled2_u64(mbuf *b, const char *name, const char *key1, const char *value1, const char *key2,
                          const char *value2, uint64_t v)
{
    mb_printf(b, "%s{%s=\"", name, key1);
    mb_label(b, value1);
    mb_printf(b, "\",%s=\"", key2);
    mb_label(b, value2);
    mb_printf(b, "\"} %" PRIu64 "\n", v);
}

/* ---- histograms: slot_hist's slots summed at fixed bounds (slot/hist.h) */

typedef struct bucket {
    uint64_t bound; /* in the histogram's unit */
    const char *le; /* the bound in the metric's unit, as text */
} bucket;

/* Request latency, in microseconds; le in seconds. */
static const bucket latency_buckets[] = {
    {50, "0.00005"}, {100, "0.0001"}, {250, "0.00025"}, {500, "0.0005"}, {1000, "0.001"},  {2500, "0.0025"},
    {5000, "0.005"}, {10000, "0.01"}, {25000, "0.025"}, {50000, "0.05"}, {100000, "0.1"},  {250000, "0.25"},
    {500000, "0.5"}, {1000000, "1"},  {2500000, "2.5"}, {5000000, "5"},  {10000000, "10"},
};

/* Commit and fsync times, in nanoseconds; le in seconds. */
static const bucket commit_buckets[] = {
    {50000, "0.00005"},  {100000, "0.0001"},   {250000, "0.00025"}, {500000, "0.0005"},  {1000000, "0.001"},
    {2500000, "0.0025"}, {5000000, "0.005"},   {10000000, "0.01"},  {25000000, "0.025"}, {50000000, "0.05"},
    {100000000, "0.1"},  {250000000, "0.25"},  {500000000, "0.5"},  {1000000000, "1"},   {2500000000u, "2.5"},
    {5000000000u, "5"},  {10000000000u, "10"},
};

/* Requests per batch: powers of two up to SLOT_BATCH_REQUESTS_MAX. */
static const bucket batch_buckets[] = {
    {1, "1"},     {2, "2"},     {4, "4"},     {8, "8"},       {16, "16"},     {32, "32"},     {64, "64"},
    {128, "128"}, {256, "256"}, {512, "512"}, {1024, "1024"}, {2048, "2048"}, {4096, "4096"},
};
_Static_assert(SLOT_BATCH_REQUESTS_MAX == 4096, "batch_buckets ends at the batch bound");

#define BUCKETS_MAX 17

/* A Prometheus histogram of h: cumulative _bucket lines, +Inf, _sum (the
 * recorded sum divided by `scale`, the unit's size in h's unit) and _count. */
static void histogram(mbuf *b, const char *name, const char *help, const slot_hist *h, const bucket *bk, size_t n,
                      double scale)
{
    SLOT_ASSERT(n <= BUCKETS_MAX);
    uint64_t bounds[BUCKETS_MAX], counts[BUCKETS_MAX];
    for (size_t i = 0; i < n; i++)
        bounds[i] = bk[i].bound;
    slot_hist_cumulative(h, bounds, n, counts);
    family(b, name, "histogram", help);
    for (size_t i = 0; i < n; i++)
        mb_printf(b, "%s_bucket{le=\"%s\"} %" PRIu64 "\n", name, bk[i].le, counts[i]);
    mb_printf(b, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, h->count);
    mb_printf(b, "%s_sum %.17g\n", name, h->sum / scale);
    mb_printf(b, "%s_count %" PRIu64 "\n", name, h->count);
}

/* ---- what the store holds: events on sale, their families and blocks, the feed */

typedef struct ev_sample {
    char name[SLOT_EVENT_BYTES_MAX + 1];
    char family[SLOT_EVENT_BYTES_MAX + 1]; /* the root of the event's family: itself for a root */
    uint64_t capacity, available, held, confirmed, allocated;
} ev_sample;

/* One block (an allocation, docs/protocol.md, "Allocations") of an event shown. */
typedef struct block_sample {
    uint32_t ev; /* index of its event in ev_scan.ev */
    char name[SLOT_EVENT_BYTES_MAX + 1];
    uint64_t remaining, held;
} block_sample;

/* An event's waiting room (docs/protocol.md, "Admission"). */
typedef struct room_sample {
    char name[SLOT_EVENT_BYTES_MAX + 1];
    uint64_t joined, admitted, open;
    bool have_wait;
    uint64_t last_wait_ms; /* the last admitted entry's wait: admitted_at - joined_at */
} room_sample;

typedef struct room_scan {
    slot_store *st;
    MDB_txn *txn;
    int rc;
    size_t n, known;
    room_sample r[SLOT_METRICS_ROOMS_MAX];
} room_scan;

/* An event with a room and status on_sale, whatever its window (a room fills
 * before the sale opens): its counts, and the wait of its last admission
 * (two reads: the rank's join seq, then the entry). */
static int on_room(void *ctx, const char *ev, size_t ev_len, const slot_event_rec *rec)
{
    room_scan *x = ctx;
    if (rec->admission == SLOT_ADMISSION_NONE || rec->status != SLOT_EVENT_ON_SALE)
        return 0;
    x->known++;
    if (x->n == SLOT_METRICS_ROOMS_MAX)
        return 0; /* counted, not shown */
    room_sample *r = &x->r[x->n++];
    size_t n = ev_len < SLOT_EVENT_BYTES_MAX ? ev_len : SLOT_EVENT_BYTES_MAX;
    memcpy(r->name, ev, n);
    r->name[n] = 0;
    r->joined = rec->room_joined;
    r->admitted = rec->room_admitted;
    r->open = rec->room_open;
    r->have_wait = false;
    if (rec->room_admitted == 0)
        return 0;
    uint64_t seq = 0;
    slot_room_entry ent;
    int rc = slot_store_room_rank_get(x->st, x->txn, ev, ev_len, rec->room_admitted - 1, &seq);
    if (rc == 0)
        rc = slot_store_room_get(x->st, x->txn, ev, ev_len, seq, &ent);
    if (rc == MDB_NOTFOUND)
        return 0; /* check's business; the counts are still shown */
    if (rc != 0) {
        x->rc = rc;
        return 1;
    }
    r->have_wait = true;
    r->last_wait_ms = ent.admitted_at_ms > ent.joined_at_ms ? ent.admitted_at_ms - ent.joined_at_ms : 0;
    return 0;
}

typedef struct ev_scan {
    slot_store *st;
    MDB_txn *txn;
    uint64_t now_ms;
    int rc; /* a storage error met inside the scan (0: none) */
    size_t n, nblocks;
    ev_sample ev[SLOT_METRICS_EVENTS_MAX];
    block_sample blocks[SLOT_METRICS_BLOCKS_MAX];
} ev_scan;

static void copy_name(char *dst, const char *src, size_t len)
{
    size_t n = len < SLOT_EVENT_BYTES_MAX ? len : SLOT_EVENT_BYTES_MAX;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* The root of rec's family into e->family: rec's own name for a root, else
 * up the parents. A family is at most SLOT_FAMILY_DEPTH_MAX levels
 * (create_event refuses a deeper one), so the parent is read only to see
 * whether it has a parent of its own: at most SLOT_ANCESTORS_MAX - 1 reads
 * (one) per event, in the scan's read transaction. 0 or an LMDB error. */
static int find_family(ev_scan *x, ev_sample *e, const slot_event_rec *rec)
{
    if (rec->parent_len == 0) {
        memcpy(e->family, e->name, sizeof e->family);
        return 0;
    }
    copy_name(e->family, rec->parent, rec->parent_len);
    for (int hop = 0; hop < SLOT_ANCESTORS_MAX - 1; hop++) {
        slot_event_rec up;
        int rc = slot_store_event_get(x->st, x->txn, e->family, strlen(e->family), &up);
        if (rc != 0)
            return rc;
        if (up.parent_len == 0)
            return 0;
        copy_name(e->family, up.parent, up.parent_len);
    }
    return 0;
}

/* On sale: status on_sale and inside its sale window, if it has one. */
static int on_event(void *ctx, const char *ev, size_t ev_len, const slot_event_rec *rec)
{
    ev_scan *x = ctx;
    bool open = rec->status == SLOT_EVENT_ON_SALE && (rec->opens_at_ms == 0 || rec->opens_at_ms <= x->now_ms) &&
                (rec->closes_at_ms == 0 || x->now_ms < rec->closes_at_ms);
    if (!open)
        return 0;
    SLOT_ASSERT(x->n < SLOT_METRICS_EVENTS_MAX); /* the scan stopped at the bound */
    ev_sample *e = &x->ev[x->n++];
    copy_name(e->name, ev, ev_len);
    e->capacity = rec->capacity;
    e->held = rec->held;
    e->confirmed = rec->confirmed;
    e->allocated = rec->allocated;
    /* free = capacity - held - confirmed - allocated (slot/store.h); never below 0 here */
    uint64_t used = rec->held + rec->confirmed + rec->allocated;
    e->available = used < rec->capacity ? rec->capacity - used : 0;
    int rc = find_family(x, e, rec);
    if (rc != 0) {
        x->rc = rc;
        return 1;
    }
    return x->n == SLOT_METRICS_EVENTS_MAX ? 1 : 0; /* 1: enough; the scan stops */
}

/* blocks_read's scan of one event's blocks: the event's index in x->ev. */
typedef struct block_ctx {
    ev_scan *x;
    uint32_t ev;
} block_ctx;

static int on_block(void *ctx, const slot_block_rec *rec)
{
    block_ctx *b = ctx;
    ev_scan *x = b->x;
    if (x->nblocks == SLOT_METRICS_BLOCKS_MAX)
        return 1; /* enough; the scan stops */
    block_sample *bs = &x->blocks[x->nblocks++];
    bs->ev = b->ev;
    copy_name(bs->name, rec->name, rec->name_len);
    bs->remaining = rec->remaining;
    bs->held = rec->held;
    return 0;
}

/* The blocks of the events shown, event by event in name order and each
 * event's in name order, up to SLOT_METRICS_BLOCKS_MAX in all: one cursor
 * seek per event shown. 0 or an LMDB error. */
static int blocks_read(ev_scan *x)
{
    for (size_t i = 0; i < x->n && x->nblocks < SLOT_METRICS_BLOCKS_MAX; i++) {
        block_ctx b = {.x = x, .ev = (uint32_t)i};
        int rc = slot_store_blocks_scan(x->st, x->txn, x->ev[i].name, strlen(x->ev[i].name), on_block, &b);
        if (rc != 0 && rc != 1)
            return rc;
    }
    return 0;
}

typedef struct consumer_sample {
    char name[SLOT_CONSUMER_BYTES_MAX + 1];
    uint64_t acked;
} consumer_sample;

typedef struct feed_scan {
    size_t known, n;
    consumer_sample c[SLOT_METRICS_CONSUMERS_MAX];
} feed_scan;

static int on_consumer(void *ctx, const char *name, size_t len, uint64_t acked)
{
    feed_scan *x = ctx;
    x->known++;
    if (x->n == SLOT_METRICS_CONSUMERS_MAX)
        return 0; /* counted, not shown */
    consumer_sample *c = &x->c[x->n++];
    size_t n = len < SLOT_CONSUMER_BYTES_MAX ? len : SLOT_CONSUMER_BYTES_MAX;
    memcpy(c->name, name, n);
    c->name[n] = 0;
    c->acked = acked;
    return 0;
}

typedef struct store_view {
    bool ok;
    uint64_t seq, feed_oldest, feed_head;
    ev_scan events;
    room_scan rooms;
    feed_scan feed;
} store_view;

/* Everything the text needs from the store, in one read transaction. */
static void store_read(server *s, store_view *v)
{
    v->events.now_ms = slot__wall_ms();
    int rc = slot__read_begin(s);
    if (rc == 0)
        rc = slot_store_seq_get(s->store, s->rtxn, &v->seq, NULL);
    v->events.st = s->store;
    v->events.txn = s->rtxn;
    if (rc == 0)
        rc = slot_store_events_scan(s->store, s->rtxn, on_event, &v->events);
    if (rc == 1)
        rc = v->events.rc;
    if (rc == 0)
        rc = blocks_read(&v->events);
    v->rooms.st = s->store;
    v->rooms.txn = s->rtxn;
    if (rc == 0)
        rc = slot_store_events_scan(s->store, s->rtxn, on_room, &v->rooms);
    if (rc == 1)
        rc = v->rooms.rc;
    if (rc == 0)
        rc = slot_feed_bounds(s->store, s->rtxn, &v->feed_oldest, &v->feed_head);
    if (rc == 0)
        rc = slot_feed_consumers_scan(s->store, s->rtxn, on_consumer, &v->feed);
    slot__read_end(s);
    v->ok = rc == 0;
}

/* ---- the families */

static void write_requests(mbuf *b, const server *s)
{
    family(b, "slotd_requests_total", "counter", "Requests parsed, by op (stats: requests).");
    for (int op = 0; op < SLOT_OP__COUNT; op++)
        labelled_u64(b, "slotd_requests_total", "op", slot_op_name((slot_op)op), s->stats.requests[op]);
    static const char *const outcomes[] = {
#define SLOT__OC_TEXT(name, text) text,
        SLOT__OUTCOME_MAP(SLOT__OC_TEXT)
#undef SLOT__OC_TEXT
    };
    family(b, "slotd_replies_total", "counter",
           "Replies written, by op and outcome (ok, sold_out, error); op \"invalid\": lines that did not parse.");
    for (int op = 0; op <= SLOT_OP__COUNT; op++) {
        const char *name = op < SLOT_OP__COUNT ? slot_op_name((slot_op)op) : "invalid";
        for (int o = 0; o < SLOT__OUTCOME_COUNT; o++) {
            if (o == SLOT__OUTCOME_SOLD_OUT && op != SLOT_OP_HOLD && op != SLOT_OP_HOLD_MANY &&
                op != SLOT_OP_WAITLIST_JOIN)
                continue; /* only these answer sold_out */
            if (op == SLOT_OP__COUNT && o != SLOT__OUTCOME_ERROR)
                continue; /* a line that did not parse is only ever an error */
            mb_printf(b, "slotd_replies_total{op=\"%s\",outcome=\"%s\"} %" PRIu64 "\n", name, outcomes[o],
                      s->stats.replies[op][o]);
        }
    }
    one_u64(b, "slotd_bad_lines_total", "counter", "Lines that failed to parse (stats: bad_lines).",
            s->stats.bad_lines);
    one_u64(b, "slotd_holds_total", "counter", "New holds granted, replays not counted (stats: holds).",
            s->stats.holds);
    one_u64(b, "slotd_sold_out_total", "counter", "sold_out answers (stats: sold_out).", s->stats.sold_out);
    one_u64(b, "slotd_sold_out_fast_total", "counter",
            "Of those, answered by the read path without a batch (stats: sold_out_fast).", s->stats.sold_out_fast);
    family(b, "slotd_errors_total", "counter", "Error replies, by code; they sum to stats' errors.");
    for (int e = 1; e < SLOT_E__COUNT; e++)
        labelled_u64(b, "slotd_errors_total", "code", slot_err_name((slot_err)e), s->stats.errors_by_code[e]);
}

static void write_connections(mbuf *b, const server *s)
{
    one_u64(b, "slotd_connections", "gauge", "Client connections open now (stats: connections).", s->nconns);
    one_u64(b, "slotd_connections_accepted_total", "counter", "Client connections accepted (stats: connections_total).",
            s->stats.conns_total);
    one_u64(b, "slotd_connections_timed_out_total", "counter",
            "Connections closed by the idle, line or write timeouts (stats: connections_timed_out).",
            s->stats.conns_timed_out);
    one_u64(b, "slotd_reads_paused_total", "counter", "Times reading from a connection paused (stats: reads_paused).",
            s->stats.reads_paused);
    one_u64(b, "slotd_accepts_paused_total", "counter",
            "Times accepting paused at --max-connections (stats: accepts_paused).", s->stats.accepts_paused);
    one_u64(b, "slotd_connections_max", "gauge", "--max-connections.", s->opts.conns_max);
}

static void write_commits(mbuf *b, const server *s)
{
    one_u64(b, "slotd_queue_requests", "gauge", "Write requests waiting for the next batch (stats: queue).",
            s->queue.len);
    one_u64(b, "slotd_queue_requests_max", "gauge", "--max-queue: beyond it writes are answered overloaded.",
            s->opts.queue_max);
    one_u64(b, "slotd_commits_total", "counter", "Batches the commit thread finished (stats: commits).",
            s->stats.commits);
    one_u64(b, "slotd_commit_failures_total", "counter", "Write transactions that failed (stats: commit_failures).",
            s->stats.commit_failures);
    histogram(b, "slotd_batch_size_requests", "Requests per group commit (stats: batch_size).", s->stats.batch_sizes,
              batch_buckets, sizeof batch_buckets / sizeof batch_buckets[0], 1.0);
    histogram(b, "slotd_request_duration_seconds",
              "From a request's arrival to its reply being encoded (stats: latency_us).", s->stats.latency_us,
              latency_buckets, sizeof latency_buckets / sizeof latency_buckets[0], 1e6);
    histogram(b, "slotd_commit_duration_seconds",
              "The commit thread's time per batch: its write transaction and commit (sum: stats' commit_busy_us).",
              s->stats.commit_ns, commit_buckets, sizeof commit_buckets / sizeof commit_buckets[0], 1e9);
    histogram(b, "slotd_commit_fsync_duration_seconds",
              "Per batch, the time in LMDB's commit: page writes and fsync (sum: stats' commit_sync_us).",
              s->stats.sync_ns, commit_buckets, sizeof commit_buckets / sizeof commit_buckets[0], 1e9);
}

static void write_rooms(mbuf *b, const room_scan *x);

static void write_store(mbuf *b, server *s, const store_view *v)
{
    one_u64(b, "slotd_metrics_store_up", "gauge",
            "1 when the store's series below could be read, 0 on a storage error.", v->ok);
    one_u64(b, "slotd_db_used_bytes", "gauge", "Bytes of the database in use (stats: db_bytes).",
            slot_store_used_bytes(s->store));
    one_u64(b, "slotd_map_size_bytes", "gauge", "The LMDB map's size now; it doubles when full (stats: map_bytes).",
            slot_store_map_bytes(s->store));
    one_u64(b, "slotd_map_size_max_bytes", "gauge", "--map-size-max: the map grows no further; then storage_full.",
            s->opts.map_bytes_max);
    one_u64(b, "slotd_sync_durability", "gauge", "1 with --durability sync, 0 with nosync.", !s->opts.nosync);
    if (!v->ok)
        return;
    one_u64(b, "slotd_feed_head_seq", "gauge", "The feed's newest entry (0: none yet).", v->feed_head);
    one_u64(b, "slotd_feed_oldest_seq", "gauge", "The feed's oldest entry kept (0: none yet).", v->feed_oldest);
    one_u64(b, "slotd_feed_consumers", "gauge", "Feed consumers the store knows.", v->feed.known);
    family(b, "slotd_feed_consumer_lag_entries", "gauge",
           "Feed entries past a consumer's acked position (the first 64 consumers by name).");
    for (size_t i = 0; i < v->feed.n; i++) {
        const consumer_sample *c = &v->feed.c[i];
        labelled_u64(b, "slotd_feed_consumer_lag_entries", "consumer", c->name,
                     v->feed_head > c->acked ? v->feed_head - c->acked : 0);
    }
    one_u64(b, "slotd_events_on_sale_shown", "gauge",
            "Events on sale with series below: the first 64 in name order that are on_sale and inside their window.",
            v->events.n);
    static const struct {
        const char *name, *help;
        size_t off;
    } per_event[] = {
        {"slotd_event_capacity_units", "An event's capacity (events on sale only).", offsetof(ev_sample, capacity)},
        {"slotd_event_available_units",
         "An event's free units: capacity - held - confirmed - allocated (events on sale only).",
         offsetof(ev_sample, available)},
        {"slotd_event_held_units", "An event's held units, its descendants' included (events on sale only).",
         offsetof(ev_sample, held)},
        {"slotd_event_confirmed_units", "An event's confirmed units, its descendants' included (events on sale only).",
         offsetof(ev_sample, confirmed)},
        {"slotd_event_allocated_units",
         "Unused units of the blocks of an event and its descendants (events on sale only).",
         offsetof(ev_sample, allocated)},
    };
    for (size_t k = 0; k < sizeof per_event / sizeof per_event[0]; k++) {
        family(b, per_event[k].name, "gauge", per_event[k].help);
        for (size_t i = 0; i < v->events.n; i++) {
            uint64_t val;
            memcpy(&val, (const char *)&v->events.ev[i] + per_event[k].off, sizeof val);
            labelled2_u64(b, per_event[k].name, "event", v->events.ev[i].name, "family", v->events.ev[i].family, val);
        }
    }
    _Static_assert(SLOT_METRICS_BLOCKS_MAX == 256, "slotd_allocation_blocks_shown's help says 256");
    one_u64(b, "slotd_allocation_blocks_shown", "gauge",
            "Blocks with series below: those of the events shown, in name order, at most 256.", v->events.nblocks);
    family(b, "slotd_allocation_remaining_units", "gauge", "A block's unused units (blocks of the events shown).");
    for (size_t i = 0; i < v->events.nblocks; i++) {
        const block_sample *bs = &v->events.blocks[i];
        labelled2_u64(b, "slotd_allocation_remaining_units", "event", v->events.ev[bs->ev].name, "allocation", bs->name,
                      bs->remaining);
    }
    family(b, "slotd_allocation_held_units", "gauge", "Units held from a block (blocks of the events shown).");
    for (size_t i = 0; i < v->events.nblocks; i++) {
        const block_sample *bs = &v->events.blocks[i];
        labelled2_u64(b, "slotd_allocation_held_units", "event", v->events.ev[bs->ev].name, "allocation", bs->name,
                      bs->held);
    }
    write_rooms(b, &v->rooms);
}

/* The waiting rooms (docs/protocol.md, "Admission"): joins and admissions
 * so far, those waiting, open grants, and the wait of the last admission. */
static void write_rooms(mbuf *b, const room_scan *x)
{
    _Static_assert(SLOT_METRICS_ROOMS_MAX == 64, "slotd_rooms_shown's help says 64");
    one_u64(b, "slotd_rooms_shown", "gauge",
            "Events with a waiting room and series below: the first 64 on_sale in name order (any window).", x->n);
    static const struct {
        const char *name, *type, *help;
    } fam[] = {
        {"slotd_room_joins_total", "counter", "Entries that joined the event's waiting room (the view's room.joined)."},
        {"slotd_room_admissions_total", "counter", "Entries admitted so far (room.admitted)."},
        {"slotd_room_waiting_entries", "gauge", "Entries not admitted yet (room.waiting)."},
        {"slotd_room_open_grants", "gauge", "Grants admitted, unused and not expired (room.open_grants)."},
    };
    for (size_t k = 0; k < sizeof fam / sizeof fam[0]; k++) {
        family(b, fam[k].name, fam[k].type, fam[k].help);
        for (size_t i = 0; i < x->n; i++) {
            const room_sample *r = &x->r[i];
            uint64_t val = k == 0 ? r->joined : k == 1 ? r->admitted : k == 2 ? r->joined - r->admitted : r->open;
            labelled_u64(b, fam[k].name, "event", r->name, val);
        }
    }
    family(b, "slotd_room_last_wait_seconds", "gauge",
           "The last admitted entry's wait in the room, from its join to its admission.");
    for (size_t i = 0; i < x->n; i++) {
        if (!x->r[i].have_wait)
            continue;
        mb_printf(b, "slotd_room_last_wait_seconds{event=\"");
        mb_label(b, x->r[i].name);
        mb_printf(b, "\"} %" PRIu64 ".%03" PRIu64 "\n", x->r[i].last_wait_ms / 1000, x->r[i].last_wait_ms % 1000);
    }
}

static void write_cluster(mbuf *b, server *s, const store_view *v)
{
    slot__clu_metrics m = {.role = "standalone", .applied = v->seq, .commit_seq = v->seq};
    if (s->clu && s->clu_up->metrics)
        s->clu_up->metrics(s, &m);
    static const char *const roles[] = {"standalone", "joining", "replica", "primary"};
    family(b, "slotd_cluster_role", "gauge",
           "1 for this node's role in its replica set (standalone without --cluster).");
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
        labelled_u64(b, "slotd_cluster_role", "role", roles[i], strcmp(m.role, roles[i]) == 0);
    one_u64(b, "slotd_cluster_epoch", "gauge", "The replica set's configuration epoch (0 standalone).", m.epoch);
    one_u64(b, "slotd_applied_seq", "gauge", "The store's seq: write batches applied.", m.applied);
    one_u64(b, "slotd_cluster_commit_seq", "gauge", "The commit point this node knows (standalone: its seq).",
            m.commit_seq);
    one_u64(b, "slotd_replica_lag_records", "gauge",
            "Records of the commit point this node has not applied yet (0 on a primary or standalone).",
            m.commit_seq > m.applied ? m.commit_seq - m.applied : 0);
    family(b, "slotd_cluster_member_lag_records", "gauge", "On a primary: records a member has not acked.");
    for (size_t i = 0; i < m.nmembers; i++)
        labelled_u64(b, "slotd_cluster_member_lag_records", "node", m.members[i].node, m.members[i].lag_records);
    family(b, "slotd_cluster_member_silence_seconds", "gauge",
           "On a primary: seconds since a member last acked or answered a heartbeat.");
    for (size_t i = 0; i < m.nmembers; i++) {
        mb_printf(b, "slotd_cluster_member_silence_seconds{node=\"");
        mb_label(b, m.members[i].node);
        mb_printf(b, "\"} %.3f\n", (double)m.members[i].silence_ms / 1000.0);
    }
}

char *slot__metrics_text(server *s, size_t *len_out)
{
    store_view *v = calloc(1, sizeof(*v)); /* a few KiB: off the loop's stack */
    if (!v)
        return NULL;
    store_read(s, v);
    mbuf b = {0};
    mb_reserve(&b, SLOT_METRICS_TEXT_INITIAL_BYTES - 1);
    family(&b, "slotd_build_info", "gauge", "Always 1; the labels say which slotd this is.");
    mb_printf(&b, "slotd_build_info{version=\"");
    mb_label(&b, SLOT_VERSION);
    mb_printf(&b, "\",protocol=\"%d\"} 1\n", SLOT_PROTOCOL_VERSION);
    family(&b, "slotd_start_time_seconds", "gauge", "When the server started, seconds since the Unix epoch.");
    mb_printf(&b, "slotd_start_time_seconds %.3f\n", (double)s->start_ms / 1000.0);
    write_requests(&b, s);
    write_connections(&b, s);
    write_commits(&b, s);
    write_store(&b, s, v);
    write_cluster(&b, s, v);
    free(v);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    if (len_out)
        *len_out = b.len;
    return b.p;
}
