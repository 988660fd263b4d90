/*
 * test_model.c — the allocator held to a reference model of docs/protocol.md for
 * 600,000 operations (SLOT_MODEL_OPS; seed SLOT_MODEL_SEED, printed).
 *
 * The model keeps what the store keeps — every event's counters and every
 * hold's stored status — and follows the protocol's rules for when a due hold
 * is expired in the store (an op that touches it, the sold-out and user-limit
 * paths of hold, set_capacity and reshard, the sweeper), so that it can
 * predict not only each reply but every counter of the event view and the
 * free sum of the shards, exactly. Ops run in batches of random size on one
 * write transaction (group commit, MDB_NOSYNC for speed); some batches abort
 * and the model rolls back through an undo log; a full map aborts the batch
 * and grows the map; now and then the store is closed and opened again (with
 * a new allocator, which rebuilds its in-memory idempotency index), after
 * which every stored hold is compared with the model.
 *
 * Carts (hold_many) and waitlists are modelled too. The model keeps each
 * event's waitlist (waitlist_max, the entries in join order, every key's
 * entry: waiting, offered with its hold, or left) and hands returned units
 * out as the protocol says, inside the op that returns them (release,
 * expiry by any path, cancel, a partial confirm, a capacity increase, a
 * leave): strictly in join order, a head whose qty cannot be met blocking
 * those behind it; an entry naming a block (v1.2) is met from its block
 * while the block is open. Joins (held at once, waiting with their position,
 * waitlist_full, replays, conflicts with hold and cart keys, user_limit
 * counting waiting units), leaves and the waitlist op are checked reply by
 * reply; the event views carry waiting and waiting_qty; after a reopen (and
 * in strict runs after every batch) the stored waiting list, every key's
 * entry and every offered hold (kind, origin) are compared with the model.
 * Offers are made inside other ops, whose answers do not name them: their
 * random tags are read from the store right after the op.
 *
 * Two cases run it. model_fixed_seeds: seeds 1, 2, 3 and 0x5eed, 2,500 ops
 * each (SLOT_MODEL_STRICT_SEED, SLOT_MODEL_STRICT_OPS), strict: after every
 * op the view and shards of every event, after every batch a full
 * slot_check and every stored hold, users record and waitlist. model_random_seed:
 * 600,000 ops of a new seed (about 8 s), checking what each op touched, and the full
 * scans now and then. Event names differ in length and some are a prefix of
 * another ("e00003" and "e00003.17"), as keys that share a prefix must not
 * mix.
 *
 * model_found_seeds: seeds a random run once failed with, each to just past
 * the op it failed at, so the bug it found stays found.
 *
 * model_rooms: the waiting room (docs/protocol.md, "Admission") against its own
 * model (model_room.c, which says what it covers), 40,000 ops of a new seed
 * (SLOT_MODEL_ROOM_SEED repeats one, SLOT_MODEL_ROOM_OPS sets the length) on a
 * store of its own.
 */
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "model.h"

TEST_DECLARE(model_fixed_seeds)
TEST_DECLARE(model_random_seed)
TEST_DECLARE(model_rooms)
TEST_DECLARE(model_found_seeds)

TEST_LIST_START
TEST_ENTRY(model_fixed_seeds)
TEST_ENTRY(model_random_seed)
TEST_ENTRY(model_found_seeds)
TEST_ENTRY(model_rooms)
TEST_LIST_END

static volatile uint64_t g_seed, g_op; /* printed when the test fails */
static volatile bool g_strict, g_rooms;

static void on_abort(int sig)
{
    char msg[160];
    int len = snprintf(msg, sizeof msg, "model test failed at op %llu with seed %llu (%s=%llu)\n",
                       (unsigned long long)g_op, (unsigned long long)g_seed,
                       g_rooms    ? "SLOT_MODEL_ROOM_SEED"
                       : g_strict ? "SLOT_MODEL_STRICT_SEED"
                                  : "SLOT_MODEL_SEED",
                       (unsigned long long)g_seed);
    if (len > 0 && write(STDERR_FILENO, msg, (size_t)len) < 0) {
        /* nothing more to do while failing */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *s = getenv(name);
    return s && *s ? strtoull(s, NULL, 0) : dflt;
}

static void model_init(model *m, uint64_t seed, uint64_t ops)
{
    memset(m, 0, sizeof *m);
    m->seed = m->rng = seed;
    m->ops = ops;
    m->cap_h = (uint32_t)ops * M_CART_ITEMS + 16; /* a cart makes up to M_CART_ITEMS holds */
    m->h = malloc(m->cap_h * sizeof(mhold));
    m_holds = m->h;
    m->cap_ev = (uint32_t)(ops / M_NEW_EVENT_EVERY) * 2 + M_LIVE + 16;
    m->ev = malloc(m->cap_ev * sizeof(mevent));
    uint64_t slots = 1024;
    while (slots < 2 * (uint64_t)m->cap_h)
        slots *= 2;
    m->kt_mask = slots - 1;
    m->kt_key = calloc(slots, sizeof(uint64_t));
    m->kt_val = calloc(slots, sizeof(uint32_t));
    m->cap_w = (uint32_t)ops + 16; /* a join makes one entry at most */
    m->w = malloc(m->cap_w * sizeof(mwait));
    m->wt_key = calloc(slots, sizeof(uint64_t));
    m->wt_val = calloc(slots, sizeof(uint32_t));
    ASSERT(m->h && m->ev && m->kt_key && m->kt_val && m->w && m->wt_key && m->wt_val);
    m->dir = slot_test_tmpdir();
    m->now = T0;
    store_open(m);
}

static void model_free(model *m)
{
    store_close(m);
    slot_test_rmdir(m->dir);
    free(m->dir);
    free(m->h);
    free(m->ev);
    free(m->kt_key);
    free(m->kt_val);
    free(m->w);
    free(m->wt_key);
    free(m->wt_val);
    free(m->log);
    free(m->arena);
}

/* The virtual clock: small steps, now and then a jump past many holds'
 * expiry, and now and then to the very ms a hold expires (or one before):
 * expiry is at now >= expires_at, an edge worth landing on. */
static void clock_step(model *m)
{
    m->now += below(m, 20);
    if (chance(m, 2))
        m->now += 500 + below(m, 4000);
    const mhold *h = pick_hold(m);
    if (h && chance(m, 20) && h->exp > m->now)
        m->now = h->exp - below(m, 2);
}

/* Every path was taken: a model test that stopped reaching one would pass
 * without testing it. */
static void expect_coverage(const stats *n, uint64_t ops)
{
    if (ops < 100000)
        return;
    ASSERT_GT(n->held, 1000);
    ASSERT_GT(n->sold_out, 100);
    ASSERT_GT(n->replay, 100);
    ASSERT_GT(n->conflict, 100);
    ASSERT_GT(n->user_limit, 100);
    ASSERT_GT(n->not_on_sale, 100);
    ASSERT_GT(n->too_big, 100);
    ASSERT_GT(n->unknown_hold, 100);
    ASSERT_GT(n->confirmed, 1000);
    ASSERT_GT(n->released, 1000);
    ASSERT_GT(n->cancelled, 100);
    ASSERT_GT(n->not_active, 100);
    ASSERT_GT(n->expired, 1000);
    ASSERT_GT(n->aborts, 10);
    ASSERT_GT(n->reopens, 1);
    ASSERT_GT(n->below, 10);
    ASSERT_GT(n->extended, 100);
    ASSERT_GT(n->extend_limit, 100);
    ASSERT_GT(n->partial, 100);
    ASSERT_GT(n->reacquired, 100);
    ASSERT_GT(n->reacquire_replay, 10);
    ASSERT_GT(n->reacquire_sold_out, 10);
    ASSERT_GT(n->windows, 100);
    ASSERT_GT(n->join_waiting, 1000);
    ASSERT_GT(n->join_held, 100);
    ASSERT_GT(n->join_full, 100);
    ASSERT_GT(n->join_replay, 100);
    ASSERT_GT(n->join_refused, 100);
    ASSERT_GT(n->leaves, 100);
    ASSERT_GT(n->leave_none, 100);
    ASSERT_GT(n->offers, 1000);
    ASSERT_GT(n->blocked, 10);
    ASSERT_GT(n->wstates, 1000);
    ASSERT_GT(n->block_joins, 1000); /* v1.2: waitlist_join from a block, and offers made from one */
    ASSERT_GT(n->block_offers, 10);
    ASSERT_GT(n->block_items, 10);
}

static void stats_print(const stats *n, uint64_t seed, uint64_t ops)
{
    printf("model: seed %llu, %llu ops, %llu commits, %llu aborts, %llu map growths, %llu reopens, %llu checks, "
           "%llu events\n"
           "  holds %llu held, %llu sold_out, %llu replays, %llu conflicts, %llu user_limit, %llu not_on_sale, "
           "%llu over max_per_request\n"
           "  %llu confirmed, %llu released, %llu cancelled, %llu expired, %llu unknown_hold, %llu hold_not_active, "
           "%llu unknown_event\n"
           "  %llu reshards, %llu set_capacity (%llu below allocated), %llu event_exists\n"
           "  v1.1: %llu extended, %llu extend_limit, %llu partial confirms, %llu reacquired (%llu repeated, "
           "%llu sold_out), %llu set_sale_window\n",
           (unsigned long long)seed, (unsigned long long)ops, (unsigned long long)n->commits,
           (unsigned long long)n->aborts, (unsigned long long)n->map_full, (unsigned long long)n->reopens,
           (unsigned long long)n->checks, (unsigned long long)n->events, (unsigned long long)n->held,
           (unsigned long long)n->sold_out, (unsigned long long)n->replay, (unsigned long long)n->conflict,
           (unsigned long long)n->user_limit, (unsigned long long)n->not_on_sale, (unsigned long long)n->too_big,
           (unsigned long long)n->confirmed, (unsigned long long)n->released, (unsigned long long)n->cancelled,
           (unsigned long long)n->expired, (unsigned long long)n->unknown_hold, (unsigned long long)n->not_active,
           (unsigned long long)n->unknown_event, (unsigned long long)n->reshards, (unsigned long long)n->capacity,
           (unsigned long long)n->below, (unsigned long long)n->exists, (unsigned long long)n->extended,
           (unsigned long long)n->extend_limit, (unsigned long long)n->partial, (unsigned long long)n->reacquired,
           (unsigned long long)n->reacquire_replay, (unsigned long long)n->reacquire_sold_out,
           (unsigned long long)n->windows);
    printf("  carts: %llu held, %llu replays, %llu sold_out, %llu refused (errors and conflicts)\n",
           (unsigned long long)n->carts, (unsigned long long)n->cart_replay, (unsigned long long)n->cart_sold_out,
           (unsigned long long)n->cart_refused);
    printf("  waitlists: %llu joins (%llu waiting, %llu held at once, %llu waitlist_full, %llu replays, %llu refused), "
           "%llu left (%llu left:false), %llu offers, %llu heads blocking someone who could be met, %llu states\n",
           (unsigned long long)n->joins, (unsigned long long)n->join_waiting, (unsigned long long)n->join_held,
           (unsigned long long)n->join_full, (unsigned long long)n->join_replay, (unsigned long long)n->join_refused,
           (unsigned long long)n->leaves, (unsigned long long)n->leave_none, (unsigned long long)n->offers,
           (unsigned long long)n->blocked, (unsigned long long)n->wstates);
    printf("  v1.2 types: %llu children, %llu sold_out short on an ancestor, %llu family hand-outs, %llu carts "
           "refused over a shared event\n",
           (unsigned long long)n->children, (unsigned long long)n->short_parent, (unsigned long long)n->family_serves,
           (unsigned long long)n->family_carts);
    printf("  v1.2 allocations: %llu allocate (%llu sold_out), %llu deallocate, %llu holds from blocks, %llu refused "
           "by a block, %llu joins naming a block, %llu offers from a block, %llu cart items from a block\n",
           (unsigned long long)n->allocs, (unsigned long long)n->alloc_sold_out, (unsigned long long)n->deallocs,
           (unsigned long long)n->block_holds, (unsigned long long)n->block_refused, (unsigned long long)n->block_joins,
           (unsigned long long)n->block_offers, (unsigned long long)n->block_items);
    fflush(stdout);
}

/* Strict runs, after every batch: a full slot_check, and every stored
 * hold, users record and event view against the model, on a read txn. */
static void expect_all_committed(model *m)
{
    MDB_txn *ro;
    ASSERT_EQ(mdb_txn_begin(slot_store_env(m->st), NULL, MDB_RDONLY, &ro), 0);
    expect_clean(m, ro, NULL);
    expect_store(m, ro);
    mdb_txn_abort(ro);
}

static void model_run(uint64_t seed, uint64_t ops, bool strict)
{
    g_seed = seed;
    g_strict = strict;
    signal(SIGABRT, on_abort);
    model *m = calloc(1, sizeof *m);
    ASSERT(m != NULL);
    model_init(m, seed, ops);
    m->strict = strict;
    m->small_sale = true;
    for (uint32_t i = 0; i < M_LIVE; i++)
        op_new_event(m, i);
    batch_end(m, false);
    uint32_t batch = 0, batch_len = 1 + below(m, M_BATCH_MAX);
    uint64_t next_reopen = 1 + below(m, 2 * M_REOPEN_EVERY), next_check = M_CHECK_EVERY;
    for (m->op = 0; m->op < ops; m->op++) {
        g_op = m->op;
        clock_step(m);
        uint32_t nh0 = m->nh;
        if (below(m, M_NEW_EVENT_EVERY) == 0)
            op_new_event(m, below(m, M_LIVE));
        else
            one_op(m);
        learn_offer_tags(m, nh0);
        if (!m->map_full) {
            if (m->strict)
                m->touched_all = true; /* every event, touched or not */
            expect_touched(m);
        }
        if (!m->map_full && ++batch < batch_len)
            continue;
        batch_end(m, chance(m, 20));
        expect_committed(m);
        if (m->strict)
            expect_all_committed(m);
        batch = 0;
        batch_len = 1 + below(m, M_BATCH_MAX);
        if (m->op >= next_reopen) {
            reopen(m);
            next_reopen = m->op + 1 + below(m, 2 * M_REOPEN_EVERY);
        } else if (m->op >= next_check) {
            next_check += M_CHECK_EVERY;
            MDB_txn *ro;
            ASSERT_EQ(mdb_txn_begin(slot_store_env(m->st), NULL, MDB_RDONLY, &ro), 0);
            expect_clean(m, ro, NULL);
            mdb_txn_abort(ro);
        }
    }
    batch_end(m, false);
    reopen(m);
    stats_print(&m->n, seed, ops);
    expect_coverage(&m->n, ops);
    model_free(m);
    free(m);
}

/* SLOT_MODEL_SEED repeats a run (the seed is printed at the start and on
 * failure); without it each run takes a new seed, so CI keeps exploring. */
TEST_IMPL(model_random_seed)
{
    uint64_t seed = env_u64("SLOT_MODEL_SEED", 0);
    if (seed == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    }
    uint64_t ops = env_u64("SLOT_MODEL_OPS", M_OPS_DEFAULT);
    printf("model: seed %llu (SLOT_MODEL_SEED=%llu to repeat), %llu ops\n", (unsigned long long)seed,
           (unsigned long long)seed, (unsigned long long)ops);
    fflush(stdout);
    model_run(seed, ops, false);
}

/* Fixed seeds, so every run repeats the same ops, each checked strictly;
 * SLOT_MODEL_STRICT_SEED runs one other seed, SLOT_MODEL_STRICT_OPS sets
 * the ops per seed. */
TEST_IMPL(model_fixed_seeds)
{
    static const uint64_t seeds[] = {1, 2, 3, 0x5eed};
    uint64_t ops = env_u64("SLOT_MODEL_STRICT_OPS", 2500);
    uint64_t one = env_u64("SLOT_MODEL_STRICT_SEED", 0);
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        uint64_t seed = one ? one : seeds[i];
        model_run(seed, ops, true);
        if (one)
            break;
    }
}

/* Seeds model_random_seed failed with, each run to a little past the op it
 * failed at (below 100,000 ops, so no coverage counts are asked of it). */
TEST_IMPL(model_found_seeds)
{
    static const struct {
        uint64_t seed, ops;
        const char *what;
    } found[] = {
        /* op 71,228: a deallocate of part of a block whose waiting entries it then
         * met answered the block's remaining from before the hand-out (4, not 2). */
        {UINT64_C(1796283277713573550), 72000, "deallocate's remaining after the hand-out"},
    };
    for (size_t i = 0; i < sizeof found / sizeof found[0]; i++) {
        printf("model: found seed %llu, %llu ops (%s)\n", (unsigned long long)found[i].seed,
               (unsigned long long)found[i].ops, found[i].what);
        fflush(stdout);
        model_run(found[i].seed, found[i].ops, false);
    }
}

/* The waiting room against its model (model_room.c): a new seed each run
 * (SLOT_MODEL_ROOM_SEED repeats one), SLOT_MODEL_ROOM_OPS ops (40,000). */
TEST_IMPL(model_rooms)
{
    uint64_t seed = env_u64("SLOT_MODEL_ROOM_SEED", 0);
    if (seed == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    }
    uint64_t ops = env_u64("SLOT_MODEL_ROOM_OPS", 40000);
    printf("model rooms: seed %llu (SLOT_MODEL_ROOM_SEED=%llu to repeat), %llu ops\n", (unsigned long long)seed,
           (unsigned long long)seed, (unsigned long long)ops);
    fflush(stdout);
    g_seed = seed;
    g_rooms = true;
    signal(SIGABRT, on_abort);
    room_model_run(seed, ops, &g_op);
}
