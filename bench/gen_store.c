/*
 * gen_store — write a large store for restart and memory measurements:
 * E events of N / E holds each, all confirmed; the first K events stay on
 * sale (with as many units again still free), the others are closed — the
 * closed, settled events of a store after many sales (issue: restart of a
 * 10,000,000-hold store within 1 s).
 *
 * Written through slot/store.h directly, in large transactions (MDB_NOSYNC,
 * one sync at the end): the events are made by the allocator's
 * create_event (so shards and defaults are what slotd writes), then each
 * hold record is appended and the shard and event counters written once per
 * event. No feed entries, no expiry entries (no hold is held): slot_check
 * of a written event is clean, which the tool checks for two events at the
 * end.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "micro.h"
#include "slot/alloc.h"
#include "slot/check.h"
#include "slot/client.h"
#include "slot/store.h"

#define GEN_HOLDS_DEFAULT 10000000ull
#define GEN_HOLDS_MAX 1000000000ull
#define GEN_EVENTS_DEFAULT 100u
#define GEN_EVENTS_MAX 100000u
#define GEN_BATCH_DEFAULT 200000u /* holds per write transaction */
#define GEN_BATCH_MAX 10000000u
#define GEN_SHARDS 16u
#define GEN_MAP_BYTES_MAX (1ull << 40)
#define GEN_BYTES_PER_HOLD 400u /* map room to reserve up front, per hold (the record and B-tree share) */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gen_store --data DIR [--holds N] [--events E] [--on-sale K] [--batch B]\n\n"
            "Writes a new store in DIR (which must not hold one yet): E events named ev-00000...,\n"
            "N holds spread evenly over them, every hold confirmed; the first K events are on\n"
            "sale with as many units again free, the rest closed and settled.\n\n"
            "  --holds N    holds in all (1..%llu; default %llu)\n"
            "  --events E   events (1..%u; default %u)\n"
            "  --on-sale K  events left on sale (0..E; default 1)\n"
            "  --batch B    holds per write transaction (1..%u; default %u)\n\n"
            "Exit status: 0 written and checked; 1 a store error; 64 usage error.\n",
            GEN_HOLDS_MAX, GEN_HOLDS_DEFAULT, GEN_EVENTS_MAX, GEN_EVENTS_DEFAULT, GEN_BATCH_MAX, GEN_BATCH_DEFAULT);
}

static bool num_ok(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = (s[0] >= '0' && s[0] <= '9') ? strtoull(s, &end, 10) : 0;
    if (end == NULL || end == s || *end != 0 || errno == ERANGE || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* create_event through the allocator, as slotd would: 0 or an error. */
static int create_event(slot_store *st, slot_alloc *a, const char *ev, uint64_t capacity)
{
    slot_req req;
    slot_res res;
    memset(&res, 0, sizeof(res));
    slot_req_event(&req, SLOT_OP_CREATE_EVENT, ev);
    req.capacity = capacity;
    req.shards = GEN_SHARDS;
    req.hold_ttl_ms = SLOT_HOLD_TTL_MS_DEFAULT;
    req.max_per_request = SLOT_MAX_PER_REQUEST_DEFAULT;
    req.max_extensions = SLOT_MAX_EXTENSIONS_DEFAULT;
    MDB_txn *txn = NULL;
    int rc = mdb_txn_begin(slot_store_env(st), NULL, 0, &txn);
    if (rc == 0 && (rc = slot_alloc_run(a, txn, &req, now_ms(), &res)) == 0 && res.err != SLOT_E_OK) {
        fprintf(stderr, "gen_store: create_event %s: %s\n", ev, res.message);
        rc = EINVAL;
    }
    slot_res_clear(&res);
    if (rc == 0)
        return mdb_txn_commit(txn);
    if (txn)
        mdb_txn_abort(txn);
    return rc;
}

/* Holds [from, to) of event ev (seqs from+1..), confirmed, on txn. */
static int write_holds(slot_store *st, MDB_txn *txn, const char *ev, uint32_t evi, uint64_t from, uint64_t to,
                       uint64_t created_ms, uint64_t shard_taken[GEN_SHARDS])
{
    slot_hold_rec h;
    memset(&h, 0, sizeof(h));
    h.status = SLOT_HOLD_CONFIRMED;
    h.qty = 1;
    h.nparts = 1;
    h.kind = SLOT_HOLD_KIND_PLAIN;
    h.created_at_ms = created_ms;
    h.expires_at_ms = created_ms + SLOT_HOLD_TTL_MS_DEFAULT;
    for (uint64_t j = from; j < to; j++) {
        uint64_t x = (j + 1) * UINT64_C(0x9e3779b97f4a7c15) ^ ((uint64_t)evi << 40);
        h.seq = j + 1;
        h.tag = x ^ (x >> 31);
        h.user_len = (uint8_t)snprintf(h.user, sizeof(h.user), "u%" PRIu64, j);
        h.request_len = (uint8_t)snprintf(h.request, sizeof(h.request), "r-%016" PRIx64, x ^ (x >> 29));
        h.parts[0].shard = (uint16_t)(j % GEN_SHARDS);
        h.parts[0].qty = 1;
        shard_taken[j % GEN_SHARDS]++;
        int rc = slot_store_hold_add(st, txn, ev, strlen(ev), &h);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The event's counters and shards after its holds, on txn. */
static int finish_event(slot_store *st, MDB_txn *txn, const char *ev, uint64_t holds, bool on_sale,
                        const uint64_t shard_taken[GEN_SHARDS])
{
    size_t el = strlen(ev);
    slot_event_rec e;
    int rc = slot_store_event_get(st, txn, ev, el, &e);
    for (uint16_t s = 0; rc == 0 && s < e.shards; s++) {
        uint64_t free_units = 0;
        rc = slot_store_shard_get(st, txn, ev, el, s, &free_units);
        if (rc == 0 && free_units < shard_taken[s])
            rc = MDB_CORRUPTED;
        if (rc == 0)
            rc = slot_store_shard_put(st, txn, ev, el, s, free_units - shard_taken[s]);
    }
    if (rc != 0)
        return rc;
    e.confirmed += holds;
    e.next_seq = holds + 1;
    e.status = on_sale ? SLOT_EVENT_ON_SALE : SLOT_EVENT_CLOSED;
    return slot_store_event_put(st, txn, ev, el, &e);
}

static int check_event(slot_store *st, const char *ev)
{
    MDB_txn *txn = NULL;
    slot_res res;
    memset(&res, 0, sizeof(res));
    int rc = mdb_txn_begin(slot_store_env(st), NULL, MDB_RDONLY, &txn);
    if (rc == 0)
        rc = slot_check(st, txn, ev, strlen(ev), &res);
    if (rc == 0 && (res.err != SLOT_E_OK || res.nviolations != 0)) {
        fprintf(stderr, "gen_store: check of %s: %u violations\n", ev, (unsigned)res.nviolations);
        rc = MDB_CORRUPTED;
    }
    if (rc == 0)
        printf("check %s: %" PRIu64 " holds, clean\n", ev, (uint64_t)res.holds_checked);
    slot_res_clear(&res);
    if (txn)
        mdb_txn_abort(txn);
    return rc;
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    uint64_t holds = GEN_HOLDS_DEFAULT, events = GEN_EVENTS_DEFAULT, on_sale = 1, batch = GEN_BATCH_DEFAULT;
    struct option opts[] = {{"data", required_argument, NULL, 'd'},
                            {"holds", required_argument, NULL, 'n'},
                            {"events", required_argument, NULL, 'e'},
                            {"on-sale", required_argument, NULL, 'k'},
                            {"batch", required_argument, NULL, 'b'},
                            {"help", no_argument, NULL, 'h'},
                            {0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        bool ok = true;
        if (opt == 'd')
            dir = optarg;
        else if (opt == 'n')
            ok = num_ok(optarg, 1, GEN_HOLDS_MAX, &holds);
        else if (opt == 'e')
            ok = num_ok(optarg, 1, GEN_EVENTS_MAX, &events);
        else if (opt == 'k')
            ok = num_ok(optarg, 0, GEN_EVENTS_MAX, &on_sale);
        else if (opt == 'b')
            ok = num_ok(optarg, 1, GEN_BATCH_MAX, &batch);
        else if (opt == 'h') {
            usage(stdout);
            return 0;
        } else
            ok = false;
        if (!ok) {
            if (opt != '?')
                fprintf(stderr, "gen_store: bad value '%s'\n", optarg);
            usage(stderr);
            return MICRO_EXIT_USAGE;
        }
    }
    if (!dir || optind < argc || on_sale > events) {
        fprintf(stderr, "gen_store: %s\n", !dir ? "--data DIR is required" : "bad arguments");
        usage(stderr);
        return MICRO_EXIT_USAGE;
    }
    slot_store_opts so = {.dir = dir, .nosync = true, .map_bytes_max = GEN_MAP_BYTES_MAX};
    slot_store *st = NULL;
    char err[256];
    int rc = slot_store_open(&so, &st, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "gen_store: open %s: %s\n", dir, err);
        return 1;
    }
    slot_alloc a;
    if (slot_alloc_init(&a, st) != 0) {
        fprintf(stderr, "gen_store: getrandom failed\n");
        return 1;
    }
    while (rc == 0 && slot_store_map_bytes(st) < holds * GEN_BYTES_PER_HOLD)
        rc = slot_store_grow(st);
    double t0 = micro_now_s();
    uint64_t created = now_ms() - 86400000u, per = holds / events, written = 0;
    char ev[32], first_closed[32] = "";
    for (uint64_t i = 0; rc == 0 && i < events; i++) {
        snprintf(ev, sizeof(ev), "ev-%05" PRIu64, i);
        uint64_t n = per + (i < holds % events); /* the remainder to the first events */
        bool sale = i < on_sale;
        if (!sale && !first_closed[0])
            snprintf(first_closed, sizeof(first_closed), "%s", ev);
        rc = create_event(st, &a, ev, sale ? 2 * n : n);
        uint64_t taken[GEN_SHARDS] = {0};
        for (uint64_t from = 0; rc == 0 && from < n; from += batch) {
            uint64_t to = from + batch < n ? from + batch : n;
            MDB_txn *txn = NULL;
            rc = mdb_txn_begin(slot_store_env(st), NULL, 0, &txn);
            if (rc == 0)
                rc = write_holds(st, txn, ev, (uint32_t)i, from, to, created, taken);
            if (rc == 0 && to == n)
                rc = finish_event(st, txn, ev, n, sale, taken);
            if (rc == 0)
                rc = mdb_txn_commit(txn);
            else if (txn)
                mdb_txn_abort(txn);
            if (rc == 0)
                written += to - from;
        }
        if (rc == 0 && n == 0) { /* fewer holds than events: the event's status still */
            MDB_txn *txn = NULL;
            rc = mdb_txn_begin(slot_store_env(st), NULL, 0, &txn);
            if (rc == 0)
                rc = finish_event(st, txn, ev, 0, sale, taken);
            if (rc == 0)
                rc = mdb_txn_commit(txn);
            else if (txn)
                mdb_txn_abort(txn);
        }
    }
    if (rc == 0)
        rc = slot_store_sync(st);
    if (rc != 0) {
        fprintf(stderr, "gen_store: %s after %" PRIu64 " holds\n", mdb_strerror(rc), written);
        slot_alloc_close(&a);
        slot_store_close(st);
        return 1;
    }
    printf("gen_store: %" PRIu64 " holds over %" PRIu64 " events (%" PRIu64 " on sale) in %.1f s, %" PRIu64
           " MiB used\n",
           written, events, on_sale, micro_now_s() - t0, slot_store_used_bytes(st) >> 20);
    snprintf(ev, sizeof(ev), "ev-%05u", 0u);
    rc = check_event(st, ev);
    if (rc == 0 && first_closed[0] && strcmp(first_closed, ev) != 0)
        rc = check_event(st, first_closed);
    slot_alloc_close(&a);
    slot_store_close(st);
    return rc == 0 ? 0 : 1;
}
