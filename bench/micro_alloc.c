/*
 * micro_alloc — the allocator alone: holds/s on a temporary LMDB environment
 * through slot/alloc.h and slot/store.h, no network, no JSON.
 *
 * For each durability (nosync, sync) and batch size (1, 16, 256, 4096): a new
 * environment and event, then batches of holds, each batch in ONE write
 * transaction that is committed (sync: one fsync per commit, as slotd's group
 * commit does). Each configuration is bounded by --seconds and --max-holds.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ftw.h>

#include "micro.h"
#include "slot/alloc.h"
#include "slot/client.h"
#include "slot/store.h"

#define MICRO_BATCHES_N 4
#define MICRO_GROW_RETRIES 16             /* map growths per batch before giving up */
#define MICRO_ALLOC_SECONDS_DEFAULT 2.0   /* --seconds: per configuration */
#define MICRO_HOLDS_DEFAULT 2000000u      /* --max-holds: per configuration */
#define MICRO_HOLDS_MAX SLOT_CAPACITY_MAX /* the event never sells out */
#define MICRO_MAP_BYTES_MAX (64ull << 30) /* the environment's map may grow to this */
#define MICRO_SEED 42                     /* the allocator's shard choice: the same in every run */

static const uint32_t batch_sizes[MICRO_BATCHES_N] = {1, 16, 256, 4096};

typedef struct micro_result {
    const char *mode;
    uint32_t batch;
    uint64_t holds, commits;
    double seconds;
} micro_result;

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* One op on txn; the caller checks res. 0 or an LMDB error. */
static int run_op(slot_alloc *a, MDB_txn *txn, const slot_req *req, slot_res *res)
{
    memset(res, 0, sizeof(*res));
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now_ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    return slot_alloc_run(a, txn, req, now_ms, res);
}

static int create_event(slot_store *st, slot_alloc *a)
{
    slot_req req;
    slot_res res;
    slot_req_event(&req, SLOT_OP_CREATE_EVENT, "micro");
    req.capacity = SLOT_CAPACITY_MAX; /* never sells out: every hold takes the write path */
    req.shards = SLOT_SHARDS_DEFAULT; /* the defaults proto fills in for a create_event line */
    req.hold_ttl_ms = SLOT_HOLD_TTL_MS_DEFAULT;
    req.max_per_request = SLOT_MAX_PER_REQUEST_DEFAULT;
    MDB_txn *txn = NULL;
    int rc = mdb_txn_begin(slot_store_env(st), NULL, 0, &txn);
    if (rc == 0 && (rc = run_op(a, txn, &req, &res)) == 0 && res.err != SLOT_E_OK)
        rc = EINVAL;
    slot_res_clear(&res);
    if (rc == 0)
        return mdb_txn_commit(txn);
    if (txn)
        mdb_txn_abort(txn);
    return rc;
}

/* One batch of n holds in one write transaction, committed. 0 or an error. */
static int one_batch(slot_store *st, slot_alloc *a, uint64_t first, uint32_t n)
{
    for (int attempt = 0; attempt < MICRO_GROW_RETRIES; attempt++) {
        MDB_txn *txn = NULL;
        int rc = mdb_txn_begin(slot_store_env(st), NULL, 0, &txn);
        for (uint32_t i = 0; rc == 0 && i < n; i++) {
            char user[32], key[32];
            snprintf(user, sizeof(user), "u%" PRIu64, first + i);
            snprintf(key, sizeof(key), "r%" PRIx64, first + i);
            slot_req req;
            slot_res res;
            slot_req_hold(&req, "micro", user, key, 1);
            rc = run_op(a, txn, &req, &res);
            if (rc == 0 && (res.err != SLOT_E_OK || res.sold_out))
                rc = EINVAL; /* a hold on an event of 2^40 units must succeed */
            slot_res_clear(&res);
        }
        if (rc == 0)
            rc = mdb_txn_commit(txn);
        else if (txn)
            mdb_txn_abort(txn);
        if (rc != MDB_MAP_FULL)
            return rc;
        if ((rc = slot_store_grow(st)) != 0)
            return rc;
    }
    return MDB_MAP_FULL;
}

/* One configuration on a new environment. 0 or an error (message printed). */
static int measure(bool nosync, uint32_t batch, double seconds, uint64_t max_holds, micro_result *out)
{
    char dir[] = "/tmp/micro-alloc-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("micro_alloc: mkdtemp");
        return -1;
    }
    slot_store_opts opts = {.dir = dir, .nosync = nosync, .map_bytes_max = MICRO_MAP_BYTES_MAX};
    slot_store *st = NULL;
    slot_alloc a;
    bool inited = false;
    char err[256] = "";
    int rc = slot_store_open(&opts, &st, err, sizeof(err));
    if (rc == 0 && (rc = slot_alloc_init(&a, st)) == 0) {
        inited = true;
        slot_alloc_seed(&a, MICRO_SEED);
        rc = create_event(st, &a);
    }
    *out = (micro_result){.mode = nosync ? "nosync" : "sync", .batch = batch};
    double t0 = micro_now_s(), t = t0;
    while (rc == 0 && t - t0 < seconds && out->holds < max_holds) {
        rc = one_batch(st, &a, out->holds, batch);
        out->holds += rc == 0 ? batch : 0;
        out->commits += rc == 0;
        t = micro_now_s();
    }
    out->seconds = t - t0;
    if (rc)
        fprintf(stderr, "micro_alloc: %s batch %u: %s%s\n", out->mode, batch, err[0] ? err : "",
                err[0] ? "" : (rc > 0 ? mdb_strerror(rc) : strerror(-rc)));
    if (inited)
        slot_alloc_close(&a); /* its idempotency index */
    slot_store_close(st);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: micro_alloc [--seconds S] [--max-holds N] [--json FILE]\n\n"
            "Holds/s of the allocator alone on a temporary LMDB environment, batch sizes 1, 16,\n"
            "256 and 4096 holds per write transaction, nosync and sync (one fsync per commit).\n\n"
            "  --seconds S      each configuration runs at most S seconds (more than 0, at most %.0f;\n"
            "                   fractions allowed; default %.0f)\n"
            "  --max-holds N    ... and at most N holds (1..%llu, default %u)\n"
            "  --json FILE      write the results as JSON\n\n"
            "Exit status: 0 ok; 1 an allocator or storage error; 64 usage error.\n",
            MICRO_SECONDS_MAX, MICRO_ALLOC_SECONDS_DEFAULT, (unsigned long long)MICRO_HOLDS_MAX, MICRO_HOLDS_DEFAULT);
}

static void print_json(FILE *f, const micro_result *r, size_t n)
{
    fprintf(f, "{\"benchmark\":\"micro_alloc\",\"results\":[");
    for (size_t i = 0; i < n; i++)
        fprintf(f,
                "%s{\"mode\":\"%s\",\"batch\":%u,\"holds\":%" PRIu64 ",\"commits\":%" PRIu64
                ",\"seconds\":%.6f,\"holds_per_s\":%.1f}",
                i ? "," : "", r[i].mode, r[i].batch, r[i].holds, r[i].commits, r[i].seconds,
                r[i].seconds > 0 ? (double)r[i].holds / r[i].seconds : 0.0);
    fprintf(f, "]}\n");
}

int main(int argc, char **argv)
{
    micro_opts o = {.count_flag = "max-holds",
                    .seconds = MICRO_ALLOC_SECONDS_DEFAULT,
                    .count = MICRO_HOLDS_DEFAULT,
                    .count_max = MICRO_HOLDS_MAX,
                    .has_json = true,
                    .usage = usage};
    int prc = micro_parse(argc, argv, &o);
    if (prc >= 0)
        return prc;
    double seconds = o.seconds;
    uint64_t max_holds = o.count;
    const char *json = o.json;
    micro_result res[2 * MICRO_BATCHES_N];
    size_t n = 0;
    printf("%-7s %6s %10s %9s %12s %10s %11s\n", "mode", "batch", "holds", "seconds", "holds/s", "us/hold",
           "commits/s");
    for (int sync = 0; sync < 2; sync++)
        for (int b = 0; b < MICRO_BATCHES_N; b++) {
            micro_result *r = &res[n++];
            if (measure(sync == 0, batch_sizes[b], seconds, max_holds, r) != 0)
                return 1;
            printf("%-7s %6u %10" PRIu64 " %9.3f %12.0f %10.2f %11.0f\n", r->mode, r->batch, r->holds, r->seconds,
                   (double)r->holds / r->seconds, r->seconds * 1e6 / (double)r->holds, (double)r->commits / r->seconds);
            fflush(stdout);
        }
    FILE *f = json ? fopen(json, "w") : NULL;
    if (json && !f) {
        fprintf(stderr, "micro_alloc: --json %s: %s\n", json, strerror(errno));
        return 1;
    }
    if (f) {
        print_json(f, res, n);
        fclose(f);
    }
    return 0;
}
