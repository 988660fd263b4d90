/*
 * tests/test_cluster_partitions.c — a replica set finds its way back once the
 * network does (docs/design.md, "Partitions"). Links between the network
 * namespaces of a three-node set (tests/netns_fixture.c) are cut under load by
 * dropping packets on arrival, so senders see only timeouts, then healed;
 * after every heal:
 *
 *   - a write is acknowledged again within 10 s,
 *   - all three members are back (every node lists three members, the
 *     primary sees none of them joining) within 15 s,
 *   - the digests are equal, every acknowledged hold is held on every node,
 *     check is clean and the units add up,
 *   - (sequence) the partition made at most 3 new epochs, and the set sold
 *     again in the second half of each cut (two members always reach each
 *     other and etcd).
 *
 * Cases: the primary cut from one replica, then from etcd, then from both
 * replicas (each cut SLOT_PARTITION_CUT_MS, default 8000, healed in between;
 * SLOT_PARTITION_ROUNDS rounds, default 2); random flapping cuts of node
 * pairs and etcd links switched every 0.3-2 s (SLOT_FLAP_MS, default 30000,
 * SLOT_FLAP_ROUNDS rounds, default 1; SLOT_FLAP_SEED repeats one run). The
 * batch log keeps only 16 records in 4 KiB segments, so a deposed primary
 * must come back by snapshot, as in the wedge these tests were written for.
 * Each prints the time from each heal to the first acknowledged write.
 *
 * A CAS in doubt: the primary's add of a member lands in etcd while etcd's
 * answers to the primary are lost; the member is cut off again. The primary
 * may not commit without it (found by cluster_partition_flapping, seed 20033:
 * the primary committed with the other replica alone, the re-added member
 * took over in the epoch that named it, and acknowledged holds were lost).
 *
 * A staggered cut: the primary is cut from one replica, drops it (it still
 * hears the other), and only then from the other replica. The configuration
 * is the primary and a replica that cannot reach each other; that replica
 * must take over with the dropped node's help (found by
 * cluster_partition_sequence, whose two cuts of "both replicas" are not
 * simultaneous: the set sold nothing until the heal).
 *
 * And, without namespaces: a wiped member restarted while --min-replicas 2
 * keeps it needed is sent a snapshot of a state beyond the commit point (the
 * record it must ack is in it), and the set sells again.
 *
 * Root, `ip netns`, nft and etcd are needed; the cases skip otherwise. Every
 * wait is bounded by count and time; the set is stopped by PID.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_fixture.h"
#include "netns_fixture.h"

TEST_DECLARE(cluster_partition_sequence)
TEST_DECLARE(cluster_partition_flapping)
TEST_DECLARE(cluster_member_snapshot_beyond_commit)
TEST_DECLARE(cluster_partition_add_in_doubt)
TEST_DECLARE(cluster_partition_staggered_cut)

TEST_LIST_START
TEST_ENTRY(cluster_partition_sequence)
TEST_ENTRY(cluster_partition_flapping)
TEST_ENTRY(cluster_member_snapshot_beyond_commit)
TEST_ENTRY(cluster_partition_add_in_doubt)
TEST_ENTRY(cluster_partition_staggered_cut)
TEST_LIST_END

#define CAPACITY 1000000u
#define LOADERS 4
#define HEAL_WRITE_MS 10000  /* a write acknowledged within this of a heal */
#define HEAL_BACK_MS 15000   /* every member back within this of a heal */
#define EPOCHS_PER_CUT_MAX 3 /* new epochs one partition may make */
#define HEALS_MAX 64

static int env_int(const char *name, int def, int lo, int hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long x = strtol(v, &end, 10);
    ASSERT(*end == 0 && x >= lo && x <= hi);
    return (int)x;
}

/* ---- where the load goes: the node that says primary in the highest epoch */

static atomic_bool router_stop;
static pthread_t router_t;

static void *router_main(void *arg)
{
    (void)arg;
    for (int k = 0; k < 100000 && !atomic_load(&router_stop); k++) {
        uint64_t best = 0;
        int at = -1;
        for (int i = 0; i < NODES; i++) {
            json_t *j = call1(i, "{\"op\":\"cluster\"}");
            if (j && strcmp(jstr(j, "role"), "primary") == 0 && ju64(j, "epoch") >= best) {
                best = ju64(j, "epoch");
                at = i;
            }
            json_decref(j);
        }
        if (at >= 0)
            atomic_store(&primary_node, at);
        sleep_ms(100);
    }
    return NULL;
}

static uint64_t epoch_max(void)
{
    uint64_t e = 0;
    for (int i = 0; i < NODES; i++) {
        json_t *j = call1(i, "{\"op\":\"cluster\"}");
        if (j && ju64(j, "epoch") > e)
            e = ju64(j, "epoch");
        json_decref(j);
    }
    return e;
}

/* The node that says primary in the highest epoch and takes a write; -1 after max_ms. */
static int primary_now(int max_ms)
{
    uint64_t end = slot_test_now_ms() + (uint64_t)max_ms;
    while (slot_test_now_ms() < end) {
        int p = find_primary(1000);
        if (p >= 0)
            return p;
    }
    return -1;
}

/* Every node lists three members and is primary or replica, and the primary
 * sees every member connected and caught up (none "joining"). */
static bool all_back(int max_ms)
{
    uint64_t end = slot_test_now_ms() + (uint64_t)max_ms;
    while (slot_test_now_ms() < end) {
        bool ok = true;
        for (int i = 0; i < NODES && ok; i++) {
            json_t *j = call1(i, "{\"op\":\"cluster\"}");
            json_t *m = j ? json_object_get(j, "members") : NULL;
            const char *role = j ? jstr(j, "role") : "";
            ok = m && json_array_size(m) == NODES && (strcmp(role, "primary") == 0 || strcmp(role, "replica") == 0);
            for (size_t k = 0; ok && strcmp(role, "primary") == 0 && k < json_array_size(m); k++)
                ok = strcmp(jstr(json_array_get(m, k), "role"), "joining") != 0;
            json_decref(j);
        }
        if (ok)
            return true;
        sleep_ms(100);
    }
    return false;
}

static bool wait_more_acks(int from, int max_ms)
{
    uint64_t end = slot_test_now_ms() + (uint64_t)max_ms;
    while (slot_test_now_ms() < end) {
        if (atomic_load(&nacks) > from)
            return true;
        sleep_ms(10);
    }
    return false;
}

static loader ls[LOADERS];
static int load_gen; /* loader ids of each start differ, so do their users */

static void load_go(void)
{
    atomic_store(&load_stop, false);
    for (int i = 0; i < LOADERS; i++) {
        ls[i].id = load_gen * LOADERS + i;
        ls[i].holds_max = 20000;
        ls[i].pause_ms = 5;
        ASSERT_EQ(pthread_create(&ls[i].t, NULL, load_main, &ls[i]), 0);
    }
    load_gen++;
}

static void load_halt(void)
{
    atomic_store(&load_stop, true);
    load_join(ls, LOADERS);
}

static uint64_t heal_ms[HEALS_MAX];
static int nheals;

/*
 * After a heal at t_heal: the checks of the file's comment. epoch_before: the
 * highest epoch before the cut (0: not bounded). The load runs again after.
 */
static void after_heal(const char *what, uint64_t t_cut, uint64_t t_heal, uint64_t epoch_before)
{
    int at = atomic_load(&nacks);
    if (!wait_more_acks(at, HEAL_WRITE_MS))
        T_FAIL_("%s: no write acknowledged within %d ms of the heal", what, HEAL_WRITE_MS);
    uint64_t first = slot_test_now_ms() - t_heal;
    pthread_mutex_lock(&acks_mu);
    for (int k = at; k < atomic_load(&nacks); k++)
        if (acks[k].at_ms >= t_heal && acks[k].at_ms - t_heal < first)
            first = acks[k].at_ms - t_heal;
    pthread_mutex_unlock(&acks_mu);
    if (nheals < HEALS_MAX)
        heal_ms[nheals++] = first;
    if (!all_back(HEAL_BACK_MS))
        T_FAIL_("%s: the three members were not back within %d ms of the heal", what, HEAL_BACK_MS);
    uint64_t back = slot_test_now_ms() - t_heal;
    uint64_t e = epoch_max();
    fprintf(stderr,
            "%s: first write %" PRIu64 " ms after the heal, all back after %" PRIu64 " ms, epoch %" PRIu64
            " (was %" PRIu64 "); longest time without an acknowledged write from the cut on: %" PRIu64 " ms\n",
            what, first, back, e, epoch_before, ack_gap_ms(t_cut, slot_test_now_ms()));
    if (epoch_before && e > epoch_before + EPOCHS_PER_CUT_MAX)
        T_FAIL_("%s: %" PRIu64 " new epochs (at most %d)", what, e - epoch_before, EPOCHS_PER_CUT_MAX);
    load_halt();
    if (!wait_converged(HEAL_BACK_MS, NULL))
        T_FAIL_("%s: the digests did not agree", what);
    for (int i = 0; i < NODES; i++) {
        assert_invariants(i, CAPACITY);
        assert_holds_on(i);
    }
    load_go();
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void report_heals(void)
{
    if (!nheals)
        return;
    qsort(heal_ms, (size_t)nheals, sizeof(heal_ms[0]), cmp_u64);
    fprintf(stderr,
            "%d heals: first write after the heal median %" PRIu64 " ms, max %" PRIu64 " ms; %d holds acknowledged\n",
            nheals, heal_ms[nheals / 2], heal_ms[nheals - 1], atomic_load(&nacks));
}

static const char *small_log[] = {"--log-keep-records", "16", "--log-segment-bytes", "4096", NULL};

/* Namespaces, nft chains, etcd in the hub, the set with a small batch log, a sale, load and router. */
static void partition_start(void)
{
    ns_setup();
    if (!ns_cut_available()) {
        ns_cleanup();
        SLOT_TEST_SKIP("nft does not work here (install nftables)");
    }
    ns_enter_hub_and_start_etcd();
    for (int i = 0; i < NODES; i++)
        for (int k = 0; small_log[k]; k++)
            nodes[i].extra[3 + k] = small_log[k];
    set_start();
    int p = find_primary(WAIT_LONG_MS);
    ASSERT(p >= 0);
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    create_event(p, CAPACITY);
    atomic_store(&primary_node, p);
    atomic_store(&load_follow, true);
    atomic_store(&router_stop, false);
    ASSERT_EQ(pthread_create(&router_t, NULL, router_main, NULL), 0);
    load_go();
    ASSERT(wait_more_acks(100, WAIT_LONG_MS));
}

static void partition_end(void)
{
    load_halt();
    atomic_store(&router_stop, true);
    pthread_join(router_t, NULL);
    report_heals();
    set_end();
    ns_cleanup();
}

/* Acknowledged holds whose answers came in [from_ms, to_ms). */
static int acks_between(uint64_t from_ms, uint64_t to_ms)
{
    int n = 0;
    pthread_mutex_lock(&acks_mu);
    for (int k = 0; k < atomic_load(&nacks); k++)
        n += acks[k].at_ms >= from_ms && acks[k].at_ms < to_ms;
    pthread_mutex_unlock(&acks_mu);
    return n;
}

/*
 * Cuts the links from node p to each node of to[] (NS_ETCD for etcd) for
 * cut_ms, heals, checks. In every such cut two members still reach each
 * other and etcd, so the set must sell again before the heal (in the cut's
 * second half).
 */
static void cut_and_heal(const char *what, int p, const int *to, int nto, int cut_ms)
{
    uint64_t e0 = epoch_max();
    uint64_t t_cut = slot_test_now_ms();
    ns_cut_from(p, to, nto);
    fprintf(stderr, "%s: cut %s\n", what, ns_cut_desc());
    sleep_ms(cut_ms);
    int during = acks_between(t_cut + (uint64_t)cut_ms / 2, slot_test_now_ms());
    ns_heal_all();
    if (during == 0)
        T_FAIL_("%s: nothing was acknowledged in the second half of the cut (the other two members reach each other)",
                what);
    after_heal(what, t_cut, slot_test_now_ms(), e0);
}

TEST_IMPL(cluster_partition_sequence)
{
    int rounds = env_int("SLOT_PARTITION_ROUNDS", 2, 1, 1000);
    int cut_ms = env_int("SLOT_PARTITION_CUT_MS", 8000, 100, 600000);
    partition_start();
    for (int r = 0; r < rounds; r++) {
        char what[96];
        int p = primary_now(WAIT_LONG_MS);
        ASSERT(p >= 0);
        int one[1] = {(p + 1) % NODES};
        snprintf(what, sizeof(what), "round %d: primary %s cut from %s", r, nodes[p].id, nodes[one[0]].id);
        cut_and_heal(what, p, one, 1, cut_ms);

        p = primary_now(WAIT_LONG_MS);
        ASSERT(p >= 0);
        int etcd_only[1] = {NS_ETCD};
        snprintf(what, sizeof(what), "round %d: primary %s cut from etcd", r, nodes[p].id);
        cut_and_heal(what, p, etcd_only, 1, cut_ms);

        p = primary_now(WAIT_LONG_MS);
        ASSERT(p >= 0);
        int both[2] = {(p + 1) % NODES, (p + 2) % NODES};
        snprintf(what, sizeof(what), "round %d: primary %s cut from both replicas", r, nodes[p].id);
        cut_and_heal(what, p, both, 2, cut_ms);
    }
    partition_end();
}

/* The six links a flap may cut: the three node pairs and each node's etcd link. */
static const int flap_links[6][2] = {{0, 1}, {0, 2}, {1, 2}, {0, NS_ETCD}, {1, NS_ETCD}, {2, NS_ETCD}};

TEST_IMPL(cluster_partition_flapping)
{
    int rounds = env_int("SLOT_FLAP_ROUNDS", 1, 1, 1000);
    int flap_ms = env_int("SLOT_FLAP_MS", 30000, 1000, 3600000);
    unsigned seed = (unsigned)env_int("SLOT_FLAP_SEED", (int)(getpid() % 100000), 0, 1 << 30);
    fprintf(stderr, "flapping: SLOT_FLAP_SEED=%u\n", seed);
    srand(seed);
    partition_start();
    for (int r = 0; r < rounds; r++) {
        uint64_t t_cut = slot_test_now_ms();
        uint64_t end = t_cut + (uint64_t)flap_ms;
        for (int k = 0; k < 10000 && slot_test_now_ms() < end; k++) {
            ns_heal_all();
            int ncut = 1 + rand() % 2;
            for (int c = 0; c < ncut; c++) {
                const int *l = flap_links[rand() % 6];
                ns_cut(l[0], l[1], true);
            }
            int hold = 300 + rand() % 1701;
            fprintf(stderr, "round %d flap %d: %s for %d ms\n", r, k, ns_cut_desc(), hold);
            sleep_ms(hold);
        }
        ns_heal_all();
        char what[64];
        snprintf(what, sizeof(what), "round %d: after %d ms of flapping", r, flap_ms);
        after_heal(what, t_cut, slot_test_now_ms(), 0);
    }
    partition_end();
}

/* The members of the configuration node i knows (the cluster op's members). */
static size_t members_on(int i)
{
    json_t *j = call1(i, "{\"op\":\"cluster\"}");
    json_t *m = j ? json_object_get(j, "members") : NULL;
    size_t n = m ? json_array_size(m) : 0;
    json_decref(j);
    return n;
}

static bool wait_members_on(int i, size_t want, int max_ms)
{
    uint64_t end = slot_test_now_ms() + (uint64_t)max_ms;
    while (slot_test_now_ms() < end) {
        if (members_on(i) == want)
            return true;
        sleep_ms(50);
    }
    return false;
}

/*
 * The primary p drops replica r (cut from it), then hears no answer from
 * etcd (its requests still arrive there: its lease lives, its CASes apply).
 * Healed from r, p re-adds r by a CAS that etcd applies and whose answer p
 * never gets: p does not know whether r is a member. Then r is cut from p
 * again. r, a member in etcd's configuration, may take over with b's
 * pre-vote; so p must not acknowledge a write that r does not have.
 */
TEST_IMPL(cluster_partition_add_in_doubt)
{
    partition_start();
    int p = primary_now(WAIT_LONG_MS);
    ASSERT(p >= 0);
    int r = (p + 1) % NODES, b = (p + 2) % NODES;
    uint64_t t_cut = slot_test_now_ms();
    ns_cut(p, r, true);
    fprintf(stderr, "in doubt: cut %s\n", ns_cut_desc());
    if (!wait_members_on(b, NODES - 1, WAIT_LONG_MS))
        T_FAIL_("%s was not dropped from the configuration", nodes[r].id);
    ns_drop_from(p, NS_ETCD, true);
    ns_cut(p, r, false);
    fprintf(stderr, "in doubt: cut %s\n", ns_cut_desc());
    if (!wait_members_on(b, NODES, WAIT_LONG_MS))
        T_FAIL_("%s was not added back while %s heard no answer from etcd", nodes[r].id, nodes[p].id);
    int at = atomic_load(&nacks);
    ns_cut(p, r, true);
    fprintf(stderr, "in doubt: %s re-added in etcd; cut %s\n", nodes[r].id, ns_cut_desc());
    sleep_ms(6000);
    fprintf(stderr, "in doubt: %d holds acknowledged during the cut\n", atomic_load(&nacks) - at);
    ns_heal_all();
    after_heal("in doubt", t_cut, slot_test_now_ms(), 0);
    partition_end();
}

/*
 * The primary p is cut from replica b and drops it; then p is cut from r too.
 * r (a member, with every acknowledged record) and b (outside the
 * configuration, reachable) reach each other and etcd: the set must sell
 * again before the heal.
 */
TEST_IMPL(cluster_partition_staggered_cut)
{
    int cut_ms = env_int("SLOT_PARTITION_CUT_MS", 8000, 100, 600000);
    partition_start();
    int p = primary_now(WAIT_LONG_MS);
    ASSERT(p >= 0);
    int r = (p + 1) % NODES, b = (p + 2) % NODES;
    uint64_t t0 = slot_test_now_ms();
    ns_cut(p, b, true);
    fprintf(stderr, "staggered: cut %s\n", ns_cut_desc());
    if (!wait_members_on(r, NODES - 1, WAIT_LONG_MS))
        T_FAIL_("%s was not dropped from the configuration", nodes[b].id);
    ns_cut(p, r, true);
    fprintf(stderr, "staggered: %s dropped; cut %s\n", nodes[b].id, ns_cut_desc());
    uint64_t t_cut = slot_test_now_ms();
    sleep_ms(cut_ms);
    int during = acks_between(t_cut + (uint64_t)cut_ms / 2, slot_test_now_ms());
    fprintf(stderr, "staggered: %d holds acknowledged in the second half of the cut\n", during);
    ns_heal_all();
    if (during == 0)
        T_FAIL_("staggered: nothing was acknowledged in the second half of the cut (%s and %s reach each other)",
                nodes[r].id, nodes[b].id);
    after_heal("staggered", t0, slot_test_now_ms(), 0);
    partition_end();
}

/*
 * A wiped member that is still needed. With --min-replicas 2 no member may be
 * dropped, so when replica r is killed the primary's pending record waits for
 * it (unavailable). r restarts with an empty data folder: it must be sent a
 * snapshot, and the snapshot (the primary's store as it is) holds the pending
 * record, beyond the commit point. Waiting for the commit point to reach the
 * copy, as a joiner's snapshot does, would wait for r's own ack: the set would
 * never sell again. Sent at once, r installs it, acks, and sales resume.
 */
TEST_IMPL(cluster_member_snapshot_beyond_commit)
{
    static const char *flags[] = {"--min-replicas", "2", NULL};
    for (int i = 0; i < NODES; i++)
        for (int k = 0; flags[k]; k++)
            nodes[i].extra[k] = flags[k];
    set_start();
    int p = find_primary(WAIT_LONG_MS);
    ASSERT(p >= 0);
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    create_event(p, CAPACITY);
    atomic_store(&primary_node, p);
    load_go();
    ASSERT(wait_more_acks(200, WAIT_LONG_MS));
    int r = (p + 1) % NODES;
    slot_test_server_kill9(&nodes[r].srv);
    nodes[r].up = false;
    sleep_ms(1500); /* past --repl-timeout-ms: the pending record waits for r, writes are unavailable */
    int at = atomic_load(&nacks);
    sleep_ms(500);
    ASSERT_EQ(atomic_load(&nacks), at); /* nothing acknowledged without r */
    slot_test_rmdir(nodes[r].dir);
    uint64_t t0 = slot_test_now_ms();
    node_start(&nodes[r]);
    if (!wait_more_acks(at, HEAL_WRITE_MS))
        T_FAIL_(
            "no write acknowledged within %d ms of the wiped member's restart (the snapshot waited for its own ack)",
            HEAL_WRITE_MS);
    fprintf(stderr, "first write %" PRIu64 " ms after the wiped member's restart\n", slot_test_now_ms() - t0);
    json_t *j = call1(r, "{\"op\":\"cluster\"}");
    ASSERT(j && ju64(j, "snapshots_installed") >= 1);
    json_decref(j);
    ASSERT(wait_more_acks(atomic_load(&nacks) + 100, WAIT_LONG_MS));
    load_halt();
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    for (int i = 0; i < NODES; i++) {
        assert_invariants(i, CAPACITY);
        assert_holds_on(i);
    }
    set_end();
}
