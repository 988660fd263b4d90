/*
 * micro_waitlist.c — what a waitlist costs (docs/design.md, "Carts and
 * waitlists"), on the allocator with no server:
 *
 *   micro_waitlist N DIR
 *
 * makes an event of one unit in a new store in DIR (nosync), fills its
 * waitlist with N entries, and prints the store bytes per waiting entry and
 * the time of 2,000 releases, each of which hands the unit to the head of
 * the list in the same transaction (the released buyer joins again at the
 * tail, so the list keeps its length N). Run it with N = 10 and N = 1000000
 * to compare: the hand-out is O(entries served), not O(entries waiting).
 * It reports; it asserts nothing about time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "slot/alloc.h"
#include "slot/store.h"

#define T0_MS UINT64_C(1764500000000)
#define CYCLES 2000
#define JOINS_PER_TXN 10000

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void set_name(char *dst, uint8_t *len, const char *s)
{
    *len = (uint8_t)strlen(s);
    memcpy(dst, s, *len + 1u);
}

static slot_req req(slot_op op, const char *user, const char *request)
{
    slot_req q;
    memset(&q, 0, sizeof q);
    q.op = op;
    set_name(q.event, &q.event_len, "e");
    if (user)
        set_name(q.user, &q.user_len, user);
    if (request)
        set_name(q.request, &q.request_len, request);
    q.qty = 1;
    return q;
}

/* Runs q; exits on an LMDB error or a wire error. */
static void run(slot_alloc *a, MDB_txn *t, const slot_req *q, slot_res *r)
{
    slot_res_clear(r);
    int rc = slot_alloc_run(a, t, q, T0_MS, r);
    if (rc != 0 || r->err != SLOT_E_OK) {
        fprintf(stderr, "micro_waitlist: %s: %d %s\n", slot_op_name(q->op), rc, r->message);
        exit(1);
    }
}

/* N joins, JOINS_PER_TXN a transaction; the map grows when full. */
static void fill(slot_store *st, slot_alloc *a, long n)
{
    char user[32];
    slot_res r = {0};
    for (long i = 0; i < n;) {
        long first = i;
        MDB_txn *t;
        int rc = mdb_txn_begin(slot_store_env(st), NULL, 0, &t);
        for (long j = 0; rc == 0 && j < JOINS_PER_TXN && i < n; j++, i++) {
            snprintf(user, sizeof user, "user%ld", i);
            slot_req q = req(SLOT_OP_WAITLIST_JOIN, user, "w");
            slot_res_clear(&r);
            rc = slot_alloc_run(a, t, &q, T0_MS, &r);
        }
        if (rc == 0) {
            if ((rc = mdb_txn_commit(t)) == 0) /* a failed commit frees t too */
                continue;
        } else {
            mdb_txn_abort(t);
        }
        if (rc != MDB_MAP_FULL || slot_store_grow(st) != 0) {
            fprintf(stderr, "micro_waitlist: join: %s\n", mdb_strerror(rc));
            exit(1);
        }
        i = first;
    }
    slot_res_clear(&r);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: micro_waitlist N DIR\n");
        return 64;
    }
    long n = atol(argv[1]);
    char err[256];
    slot_store_opts o = {.dir = argv[2], .nosync = true, .map_bytes_max = 16ull << 30};
    slot_store *st;
    slot_alloc a;
    if (n < 1 || slot_store_open(&o, &st, err, sizeof err) != 0 || slot_alloc_init(&a, st) != 0) {
        fprintf(stderr, "micro_waitlist: N must be >= 1, DIR a new folder (%s)\n", err);
        return 1;
    }
    MDB_txn *t;
    slot_res r = {0};
    mdb_txn_begin(slot_store_env(st), NULL, 0, &t);
    slot_req c = req(SLOT_OP_CREATE_EVENT, NULL, NULL);
    c.capacity = 1;
    c.shards = 1;
    c.hold_ttl_ms = SLOT_HOLD_TTL_MS_DEFAULT;
    c.max_per_request = SLOT_MAX_PER_REQUEST_DEFAULT;
    c.waitlist_max = SLOT_WAITLIST_MAX_MAX;
    run(&a, t, &c, &r);
    slot_req h = req(SLOT_OP_HOLD, "seller", "k");
    run(&a, t, &h, &r);
    char hold[SLOT_HOLD_ID_BYTES + 1], user[SLOT_USER_BYTES_MAX + 1] = "seller";
    char head_user[SLOT_USER_BYTES_MAX + 1], head_req[SLOT_REQUEST_BYTES_MAX + 1];
    memcpy(hold, r.hold, sizeof hold);
    mdb_txn_commit(t);
    uint64_t used0 = slot_store_used_bytes(st);
    fill(st, &a, n);
    printf("%ld waiting: %.1f store bytes per waiting entry\n", n,
           (double)(slot_store_used_bytes(st) - used0) / (double)n);

    uint64_t total_ns = 0;
    for (int k = 0; k < CYCLES; k++) {
        mdb_txn_begin(slot_store_env(st), NULL, 0, &t);
        slot_req show = req(SLOT_OP_WAITLIST_ENTRIES, NULL, NULL);
        show.limit = 1;
        run(&a, t, &show, &r);
        memcpy(head_user, r.entries[0].user, sizeof head_user);
        memcpy(head_req, r.entries[0].request, sizeof head_req);
        slot_req rel = req(SLOT_OP_RELEASE, user, NULL);
        set_name(rel.hold, &rel.hold_len, hold);
        uint64_t t0 = now_ns();
        run(&a, t, &rel, &r); /* the unit comes back and goes to the head */
        total_ns += now_ns() - t0;
        char again[32];
        snprintf(again, sizeof again, "again%d", k);
        slot_req rejoin = req(SLOT_OP_WAITLIST_JOIN, user, again);
        run(&a, t, &rejoin, &r);
        slot_req st_q = req(SLOT_OP_WAITLIST, head_user, head_req);
        run(&a, t, &st_q, &r);
        if (r.wait_state != SLOT_WAIT_OFFERED) {
            fprintf(stderr, "micro_waitlist: the head was not offered the unit\n");
            return 1;
        }
        memcpy(hold, r.hold, sizeof hold);
        memcpy(user, head_user, sizeof user);
        mdb_txn_commit(t);
    }
    printf("%ld waiting: release + hand-out %.2f us each (%d releases)\n", n, (double)total_ns / CYCLES / 1000.0,
           CYCLES);
    slot_res_clear(&r);
    slot_alloc_close(&a);
    slot_store_close(st);
    return 0;
}
