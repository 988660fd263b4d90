/*
 * tests/test_cluster.c — replica sets end to end (docs/design.md, "Replica
 * sets"): a private etcd (tests/etcd_fixture.c) and three slotd nodes on
 * ephemeral loopback ports with temporary folders, stopped by PID. Every wait
 * is bounded by count and time; nothing asserts a duration.
 */
#include <lmdb.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster_fixture.h"

TEST_DECLARE(cluster_hot_release)
TEST_DECLARE(cluster_kill9_primary)
TEST_DECLARE(cluster_sigstop_primary)
TEST_DECLARE(cluster_tenure_record_reaches_members_joining_during_promote)
TEST_DECLARE(cluster_promote_under_load)
TEST_DECLARE(cluster_remove_and_add_replica)
TEST_DECLARE(cluster_family_survives_failover)
TEST_DECLARE(cluster_room_survives_failover)

TEST_LIST_START
TEST_ENTRY(cluster_hot_release)
TEST_ENTRY(cluster_kill9_primary)
TEST_ENTRY(cluster_sigstop_primary)
TEST_ENTRY(cluster_tenure_record_reaches_members_joining_during_promote)
TEST_ENTRY(cluster_promote_under_load)
TEST_ENTRY(cluster_remove_and_add_replica)
TEST_ENTRY(cluster_family_survives_failover)
TEST_ENTRY(cluster_room_survives_failover)
TEST_LIST_END

/* ---- cases */

TEST_IMPL(cluster_hot_release)
{
    set_start();
    int p = find_primary(WAIT_LONG_MS);
    ASSERT(p >= 0);
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    create_event(p, 100000);
    json_t *h = call1(p, "{\"op\":\"hello\"}"); /* one "features", "cluster" in it */
    ASSERT(h && jok(h));
    json_t *f = json_object_get(h, "features");
    ASSERT_EQ(json_array_size(f), 13u);
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 7)), "types");
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 8)), "allocations");
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 9)), "admission");
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 10)), "client_limits");
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 11)), "seats");
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 12)), "cluster");
    json_decref(h);
    atomic_store(&primary_node, p);
    loader ls[6];
    load_start(ls, 6, 500, 0);
    load_join(ls, 6);
    ASSERT_EQ(atomic_load(&nacks), 3000);
    char digest[80];
    ASSERT(wait_converged(WAIT_LONG_MS, digest));
    for (int i = 0; i < NODES; i++) {
        assert_invariants(i, 100000);
        assert_holds_on(i);
    }
    for (int i = 0; i < NODES; i++) { /* a write to a replica: not_primary, naming the primary */
        if (i == p)
            continue;
        json_t *j = call1(i, "{\"op\":\"hold\",\"event\":\"" EVENT "\",\"user\":\"x\",\"request\":\"x\",\"qty\":1}");
        ASSERT(j && !jok(j));
        ASSERT_STR_EQ(jstr(j, "error"), "not_primary");
        char want[32];
        snprintf(want, sizeof(want), "127.0.0.1:%u", nodes[p].srv.port);
        ASSERT_STR_EQ(jstr(j, "primary"), want);
        json_decref(j);
    }
    /* The sold-out read path on a primary (docs/design.md, "The sold-out read path"): a new key
     * on a sold-out event is sold_out, from the read snapshot once its state is acknowledged;
     * the held key still replays held; a replica answers not_primary, never sold_out. */
    json_t *so = call1(p, "{\"op\":\"create_event\",\"event\":\"so\",\"capacity\":1,\"shards\":1}");
    ASSERT(so && jok(so));
    json_decref(so);
    so = call1(p, "{\"op\":\"hold\",\"event\":\"so\",\"user\":\"a\",\"request\":\"k\",\"qty\":1}");
    ASSERT(so && jok(so));
    ASSERT_STR_EQ(jstr(so, "status"), "held");
    json_decref(so);
    for (int k = 0; k < 20; k++) {
        so = call1(p, "{\"op\":\"hold\",\"event\":\"so\",\"user\":\"b\",\"request\":\"n\",\"qty\":1}");
        ASSERT(so && jok(so));
        ASSERT_STR_EQ(jstr(so, "status"), "sold_out");
        json_decref(so);
        so = call1(p, "{\"op\":\"hold\",\"event\":\"so\",\"user\":\"a\",\"request\":\"k\",\"qty\":1}");
        ASSERT(so && jok(so));
        ASSERT_STR_EQ(jstr(so, "status"), "held");
        ASSERT(json_is_true(json_object_get(so, "replay")));
        json_decref(so);
    }
    so = call1(p, "{\"op\":\"stats\"}");
    ASSERT(so && jok(so));
    ASSERT(ju64(so, "sold_out_fast") > 0);
    ASSERT(ju64(so, "sold_out_fast") <= ju64(so, "sold_out"));
    json_decref(so);
    for (int i = 0; i < NODES; i++) {
        if (i == p)
            continue;
        so = call1(i, "{\"op\":\"hold\",\"event\":\"so\",\"user\":\"b\",\"request\":\"n\",\"qty\":1}");
        ASSERT(so && !jok(so));
        ASSERT_STR_EQ(jstr(so, "error"), "not_primary");
        json_decref(so);
        so = call1(i, "{\"op\":\"stats\"}");
        ASSERT(so && jok(so));
        ASSERT_EQ(ju64(so, "sold_out_fast"), 0);
        json_decref(so);
    }
    for (int i = 0; i < NODES; i++) { /* the metrics say each node's role; the primary, its members' lag */
        json_t *j = call1(i, "{\"op\":\"metrics\"}");
        ASSERT(j && jok(j));
        const char *text = jstr(j, "text");
        ASSERT(strstr(text, i == p ? "slotd_cluster_role{role=\"primary\"} 1\n"
                                   : "slotd_cluster_role{role=\"replica\"} 1\n"));
        ASSERT(strstr(text, "slotd_cluster_role{role=\"standalone\"} 0\n"));
        ASSERT(!strstr(text, "slotd_cluster_epoch 0\n"));
        int members = 0;
        for (const char *q = text; (q = strstr(q, "slotd_cluster_member_lag_records{node=\"")); q++)
            members++;
        ASSERT_EQ(members, i == p ? NODES - 1 : 0);
        json_decref(j);
    }
    for (int i = 0; i < NODES; i++) /* no log line holds the cluster secret */
        ASSERT(!node_log_has(i, "a-cluster-secret-of-some-length", NULL));
    set_end();
}

/* Kill -9 (or SIGSTOP, stop = true) the primary `rounds` times under load. */
static void failover_rounds(int rounds, bool stop)
{
    set_start();
    int p = find_primary(WAIT_LONG_MS);
    ASSERT(p >= 0);
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    const uint64_t capacity = 1000000;
    create_event(p, capacity);
    atomic_store(&primary_node, p);
    loader ls[4];
    load_start(ls, 4, HOLDS_MAX / 4, 2);
    unsigned seed = (unsigned)slot_test_now_ms();
    for (int round = 0; round < rounds; round++) {
        sleep_ms(100 + (int)(rand_r(&seed) % 400));
        int old = p;
        if (stop) {
            ASSERT_EQ(kill(nodes[old].srv.pid, SIGSTOP), 0);
            nodes[old].stopped = true;
        } else {
            slot_test_server_kill9(&nodes[old].srv);
            nodes[old].up = false;
        }
        p = find_primary(WAIT_LONG_MS);
        if (p < 0)
            T_FAIL_("round %d: no new primary after %s of %s", round, stop ? "SIGSTOP" : "kill -9", nodes[old].id);
        ASSERT(p != old);
        atomic_store(&primary_node, p);
        assert_holds_on(p);
        assert_invariants(p, capacity);
        if (stop) {
            ASSERT_EQ(kill(nodes[old].srv.pid, SIGCONT), 0);
            nodes[old].stopped = false;
            /* The old primary acknowledges nothing now: a write is refused, never held. */
            json_t *j = call1(old, "{\"op\":\"hold\",\"event\":\"" EVENT
                                   "\",\"user\":\"old\",\"request\":\"old\",\"qty\":1}");
            if (j && jok(j))
                T_FAIL_("round %d: the old primary answered a write: %s", round, json_dumps(j, JSON_COMPACT));
            json_decref(j);
        } else {
            node_start(&nodes[old]);
        }
        if (!wait_members(NODES, WAIT_LONG_MS))
            T_FAIL_("round %d: %s did not rejoin", round, nodes[old].id);
    }
    atomic_store(&load_stop, true);
    load_join(ls, 4);
    ASSERT(atomic_load(&nacks) > 0);
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    for (int i = 0; i < NODES; i++) {
        assert_invariants(i, capacity);
        assert_holds_on(i);
    }
    fprintf(stderr, "%d rounds: %d holds acknowledged, %d retries\n", rounds, atomic_load(&nacks),
            atomic_load(&load_retries));
    set_end();
}

TEST_IMPL(cluster_kill9_primary)
{
    failover_rounds(20, false);
}

TEST_IMPL(cluster_sigstop_primary)
{
    failover_rounds(5, true);
}

/* The member's seq in node i's cluster answer (0 when absent); the answer's role into role_out. */
static uint64_t member_seq(int i, const char *member, char *role_out, size_t role_cap)
{
    json_t *j = call1(i, "{\"op\":\"cluster\"}");
    snprintf(role_out, role_cap, "%s", j ? jstr(j, "role") : "");
    uint64_t seq = 0;
    json_t *m = j ? json_object_get(j, "members") : NULL;
    for (size_t k = 0; k < json_array_size(m); k++) {
        json_t *e = json_array_get(m, k);
        if (strcmp(jstr(e, "node"), member) == 0)
            seq = ju64(e, "seq");
    }
    json_decref(j);
    return seq;
}

/*
 * A new primary sends its tenure record to members that connect while its
 * promote job runs. The job is held up for certain: the test takes LMDB's
 * writer lock of n2's store (another process may, LMDB's lock is shared)
 * before n1, the primary, is killed; n3 never campaigns (a failover timeout
 * longer than the case), so n2 takes over and its promote job waits in
 * mdb_txn_begin. Once n2's cluster answer shows n3 connected (its seq, the
 * position n3 announced when its stream became ready, is no longer 0) the
 * lock is let go. The job then appends the first record of n2's tenure,
 * which must reach n3: n2 becomes a primary that takes writes, and n3 holds
 * the same records. Before the fix n3 was never sent the record, and n2
 * stayed unavailable.
 */
TEST_IMPL(cluster_tenure_record_reaches_members_joining_during_promote)
{
    failover_ms[2] = "600000";
    set_start();
    int p = find_primary(WAIT_LONG_MS);
    ASSERT_EQ(p, 0); /* n1 founded the set */
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    create_event(p, 1000);
    for (int k = 0; k < 20; k++) {
        char line[256];
        snprintf(line, sizeof(line),
                 "{\"op\":\"hold\",\"event\":\"" EVENT "\",\"user\":\"u%d\",\"request\":\"r%d\",\"qty\":1}", k, k);
        json_t *j = call1(p, line);
        ASSERT(j && jok(j));
        json_decref(j);
    }
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    /* n2 answers a read only once the commit point it heard covers its state:
     * then it knows a commit point above 0, and n3's seq can show below. */
    bool read_ok = false;
    uint64_t end = slot_test_now_ms() + WAIT_LONG_MS;
    while (!read_ok && slot_test_now_ms() < end) {
        json_t *r = call1(1, "{\"op\":\"event\",\"event\":\"" EVENT "\"}");
        read_ok = r && jok(r);
        json_decref(r);
        if (!read_ok)
            sleep_ms(50);
    }
    ASSERT(read_ok);
    char role[32];

    MDB_env *env = NULL;
    MDB_txn *lock = NULL;
    ASSERT_EQ(mdb_env_create(&env), 0);
    ASSERT_EQ(mdb_env_open(env, nodes[1].dir, MDB_NOTLS | MDB_NORDAHEAD, 0600), 0);
    ASSERT_EQ(mdb_txn_begin(env, NULL, 0, &lock), 0); /* n2's writer lock, until the abort below */

    slot_test_server_kill9(&nodes[0].srv);
    nodes[0].up = false;
    bool joined = false;
    end = slot_test_now_ms() + WAIT_LONG_MS;
    while (!joined && slot_test_now_ms() < end) {
        uint64_t seq = member_seq(1, "n3", role, sizeof(role));
        joined = strcmp(role, "primary") == 0 && seq > 0; /* taking over ("primary"), n3's stream ready */
        if (!joined)
            sleep_ms(50);
    }
    mdb_txn_abort(lock);
    mdb_env_close(env);
    if (!joined)
        T_FAIL_("%s did not take over with n3 connected while its promote job waited", nodes[1].id);

    p = find_primary(WAIT_LONG_MS);
    if (p != 1)
        T_FAIL_("no primary that takes writes after n2's promote job (found %d)", p);
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    assert_invariants(1, 1000);
    assert_invariants(2, 1000);
    set_end();
    failover_ms[2] = "600";
}

/* ---- planned changes (cluster_change; docs/design.md, "Planned changes") */

/* A cluster_change of node `id` sent to node i (30 s for its answer). */
static json_t *change(int i, const char *what, const char *id)
{
    char line[160];
    snprintf(line, sizeof(line), "{\"op\":\"cluster_change\",\"change\":\"%s\",\"node\":\"%s\"}", what, id);
    line_conn c;
    if (lc_open(&c, i) != 0)
        return NULL;
    json_t *j = lc_call(&c, line, 30000);
    lc_close(&c);
    return j;
}

/* Node i's cluster answer lists `want` members and names node p primary (its address). */
static bool shows(int i, int want, int p)
{
    json_t *j = call1(i, "{\"op\":\"cluster\"}");
    char addr[64];
    snprintf(addr, sizeof(addr), "%s:%u", nodes[p].host, nodes[p].srv.port);
    bool ok = j && (int)json_array_size(json_object_get(j, "members")) == want && strcmp(jstr(j, "primary"), addr) == 0;
    json_decref(j);
    return ok;
}

/* Switch the primary to `to` under the loaders' load; the longest time without an
 * acknowledged hold around it is printed (measured, not asserted). */
static void switch_to(int from, int to)
{
    uint64_t t0 = slot_test_now_ms();
    json_t *j = change(from, "promote", nodes[to].id);
    uint64_t t1 = slot_test_now_ms();
    if (!j || !jok(j))
        T_FAIL_("promote %s on %s: %s", nodes[to].id, nodes[from].id, j ? json_dumps(j, JSON_COMPACT) : "(no answer)");
    json_decref(j);
    atomic_store(&primary_node, to);
    ASSERT_EQ(find_primary(WAIT_LONG_MS), to);
    sleep_ms(500); /* load goes on on the new primary */
    fprintf(stderr, "switchover %s -> %s: answered in %llu ms; longest gap between acknowledged holds %llu ms\n",
            nodes[from].id, nodes[to].id, (unsigned long long)(t1 - t0),
            (unsigned long long)ack_gap_ms(t0 - 100, t1 + 500));
}

TEST_IMPL(cluster_promote_under_load)
{
    set_start();
    int p = find_primary(WAIT_LONG_MS);
    ASSERT(p >= 0);
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    const uint64_t capacity = 1000000;
    create_event(p, capacity);
    atomic_store(&primary_node, p);
    atomic_store(&load_follow, true);
    loader ls[4];
    load_start(ls, 4, HOLDS_MAX / 4, 1);
    sleep_ms(1000);
    int q = (p + 1) % NODES;
    switch_to(p, q);
    for (int i = 0; i < NODES; i++)
        ASSERT(shows(i, NODES, q) || i == p);      /* the old primary may still be reconnecting */
    json_t *j = change(q, "promote", nodes[q].id); /* already primary: nothing to do */
    ASSERT(j && jok(j));
    json_decref(j);
    j = change(p, "promote", nodes[q].id); /* to a replica: not_primary, naming the primary */
    ASSERT(j && !jok(j));
    ASSERT_STR_EQ(jstr(j, "error"), "not_primary");
    json_decref(j);
    switch_to(q, p); /* and back */
    atomic_store(&load_stop, true);
    load_join(ls, 4);
    atomic_store(&load_follow, false);
    int n = atomic_load(&nacks);
    ASSERT(n > 0);
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    assert_holds_on(p);
    for (int i = 0; i < NODES; i++)
        assert_invariants(i, capacity);
    /* No hold twice: each loader makes one hold per request key and waits for it, so at
     * most one hold per loader (its last, when the stop came) has no recorded answer. */
    j = call1(p, "{\"op\":\"event\",\"event\":\"" EVENT "\"}");
    ASSERT(j && jok(j));
    uint64_t held = ju64(j, "held");
    json_decref(j);
    if (held < (uint64_t)n || held > (uint64_t)n + 4)
        T_FAIL_("%llu units held for %d acknowledged holds", (unsigned long long)held, n);
    fprintf(stderr, "%d holds acknowledged, %d retries\n", n, atomic_load(&load_retries));
    set_end();
}

/* A replica removed on purpose leaves the configuration and is not added back by
 * itself; the primary and the last replica (min-replicas 1) cannot be removed;
 * `slotctl cluster add` brings the removed one back to an equal digest. */
TEST_IMPL(cluster_remove_and_add_replica)
{
    set_start();
    int p = find_primary(WAIT_LONG_MS);
    ASSERT(p >= 0);
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    const uint64_t capacity = 100000;
    create_event(p, capacity);
    atomic_store(&primary_node, p);
    loader ls[2];
    load_start(ls, 2, 200, 0);
    load_join(ls, 2);
    int r = (p + 1) % NODES, other = (p + 2) % NODES;
    json_t *j = change(p, "remove", nodes[r].id);
    if (!j || !jok(j))
        T_FAIL_("remove %s: %s", nodes[r].id, j ? json_dumps(j, JSON_COMPACT) : "(no answer)");
    ASSERT_EQ(json_array_size(json_object_get(j, "members")), 2u);
    json_decref(j);
    j = change(p, "remove", nodes[p].id);
    ASSERT(j && !jok(j));
    ASSERT_STR_EQ(jstr(j, "error"), "invalid_argument");
    json_decref(j);
    j = change(p, "remove", nodes[other].id); /* one replica would be left: --min-replicas is 1 */
    ASSERT(j && !jok(j));
    ASSERT_STR_EQ(jstr(j, "error"), "invalid_argument");
    json_decref(j);
    /* Sales go on without it, and it stays out. */
    load_start(ls, 2, 400, 0);
    load_join(ls, 2);
    ASSERT_EQ(atomic_load(&nacks), 1200);
    sleep_ms(1000); /* several primary ticks: a removed node is not dialled nor added back */
    ASSERT(shows(p, 2, p));
    ASSERT(shows(other, 2, p));
    j = call1(r, "{\"op\":\"cluster\"}");
    ASSERT(j);
    ASSERT_STR_EQ(jstr(j, "role"), "joining");
    json_decref(j);
    /* slotctl, given the removed node first: it follows not_primary to the primary. */
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "%s --host 127.0.0.1:%u,127.0.0.1:%u,127.0.0.1:%u cluster add %s >/dev/null",
             getenv("SLOTCTL"), nodes[r].srv.port, nodes[other].srv.port, nodes[p].srv.port, nodes[r].id);
    int st = system(cmd);
    ASSERT(WIFEXITED(st));
    ASSERT_EQ(WEXITSTATUS(st), 0);
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    for (int i = 0; i < NODES; i++) {
        assert_invariants(i, capacity);
        assert_holds_on(i);
    }
    set_end();
}

/* One request on node i that must succeed; its reply (the caller frees it). */
static json_t *must(int i, const char *line)
{
    json_t *j = call1(i, line);
    if (!j || !jok(j))
        T_FAIL_("%s: %s", line, j ? json_dumps(j, JSON_COMPACT) : "no reply");
    return j;
}

/* held, confirmed, available of event ev on node i, as "h/c/a" into out. */
static void counts_of(int i, const char *ev, char *out, size_t cap)
{
    char line[160];
    snprintf(line, sizeof line, "{\"op\":\"event\",\"event\":\"%s\"}", ev);
    json_t *j = must(i, line);
    snprintf(out, cap, "%llu/%llu/%llu/%llu", (unsigned long long)ju64(j, "held"),
             (unsigned long long)ju64(j, "confirmed"), (unsigned long long)ju64(j, "available"),
             (unsigned long long)ju64(j, "effective_available"));
    json_decref(j);
}

/*
 * Ticket types on a replica set (docs/protocol.md, "Ticket types"): a family's
 * records are write sets like any other, so a replica has the family's counts
 * and the parts each hold took from every ancestor. A venue of 30 with two
 * areas; holds through both and on the venue; kill -9 of the primary: the new
 * primary shows the same counts, its check is clean, a hold through an area
 * is sold_out naming the venue, a release returns along the chain there, and
 * every node converges to one digest with a clean check. A block of another
 * event (allocations: a hold from it and a join waiting on it) keeps its
 * view across the failover, and its hold's release there serves the waiter
 * from the block; a seated event keeps its seat map (held and confirmed
 * seats), and a named hold of a held seat there is taken.
 */
TEST_IMPL(cluster_family_survives_failover)
{
    set_start();
    int p = find_primary(WAIT_LONG_MS);
    ASSERT(p >= 0);
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    json_decref(must(p, "{\"op\":\"create_event\",\"event\":\"venue\",\"capacity\":30,\"shards\":4}"));
    json_decref(must(p, "{\"op\":\"create_event\",\"event\":\"floor\",\"capacity\":20,\"parent\":\"venue\"}"));
    json_decref(must(p, "{\"op\":\"create_event\",\"event\":\"stand\",\"capacity\":20,\"parent\":\"venue\"}"));
    char first[40] = "";
    for (int k = 0; k < 9; k++) {
        char line[200];
        snprintf(line, sizeof line, "{\"op\":\"hold\",\"event\":\"%s\",\"user\":\"u%d\",\"request\":\"k\",\"qty\":3}",
                 k % 3 == 0   ? "venue"
                 : k % 3 == 1 ? "floor"
                              : "stand",
                 k);
        json_t *j = must(p, line);
        ASSERT_STR_EQ(jstr(j, "status"), "held");
        if (k == 1)
            snprintf(first, sizeof first, "%s", jstr(j, "hold"));
        json_decref(j);
    }
    char before[3][64];
    const char *evs[3] = {"venue", "floor", "stand"};
    for (int e = 0; e < 3; e++)
        counts_of(p, evs[e], before[e], sizeof before[e]);
    ASSERT_STR_EQ(before[0], "27/0/3/0"); /* the venue counts its areas' units */
    ASSERT_STR_EQ(before[1], "9/0/11/3");
    /* A block (docs/protocol.md, "Allocations"): units set aside, a hold from it, and a join
     * waiting on it; the event's view (allocated, its blocks, waiting) must survive as it is. */
    json_decref(must(p, "{\"op\":\"create_event\",\"event\":\"club\",\"capacity\":10,\"waitlist_max\":5}"));
    json_decref(must(p, "{\"op\":\"allocate\",\"event\":\"club\",\"allocation\":\"fans\",\"qty\":4}"));
    json_t *bh = must(p, "{\"op\":\"hold\",\"event\":\"club\",\"user\":\"f1\",\"request\":\"k\",\"qty\":4,"
                         "\"allocation\":\"fans\"}");
    char block_hold[40];
    snprintf(block_hold, sizeof block_hold, "%s", jstr(bh, "hold"));
    json_decref(bh);
    bh = must(p, "{\"op\":\"waitlist_join\",\"event\":\"club\",\"user\":\"f2\",\"request\":\"j\",\"qty\":2,"
                 "\"allocation\":\"fans\"}");
    ASSERT_STR_EQ(jstr(bh, "status"), "waiting");
    json_decref(bh);
    json_t *club = must(p, "{\"op\":\"event\",\"event\":\"club\"}");
    char *club_before = json_dumps(club, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(club);
    ASSERT(strstr(club_before, "\"fans\":{\"confirmed\":0,\"held\":4,\"qty\":4,\"remaining\":0}") != NULL);
    /* A seated event (docs/protocol.md, "Seated events"): named seats held and confirmed; its
     * seat map must survive as it is. */
    json_decref(must(p, "{\"op\":\"create_event\",\"event\":\"hall\",\"seats\":{\"sections\":[{\"name\":\"A\","
                        "\"rows\":[{\"name\":\"1\",\"from\":1,\"to\":6}]}]}}"));
    bh = must(p,
              "{\"op\":\"hold\",\"event\":\"hall\",\"user\":\"s1\",\"request\":\"k\",\"seats\":[\"A-1-2\",\"A-1-3\"]}");
    ASSERT_STR_EQ(jstr(bh, "status"), "held");
    char seat_line[300];
    snprintf(seat_line, sizeof seat_line,
             "{\"op\":\"confirm\",\"event\":\"hall\",\"user\":\"s1\",\"hold\":\"%s\",\"request\":\"c\","
             "\"seats\":[\"A-1-3\"]}",
             jstr(bh, "hold"));
    json_decref(bh);
    json_decref(must(p, seat_line));
    json_decref(
        must(p, "{\"op\":\"hold\",\"event\":\"hall\",\"user\":\"s2\",\"request\":\"k\",\"seats\":[\"A-1-5\"]}"));
    json_t *sm = must(p, "{\"op\":\"seat_map\",\"event\":\"hall\"}");
    ASSERT_STR_EQ(jstr(json_object_get(sm, "rows"), "A-1"), "..c.h.");
    json_decref(sm);
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    int old = p;
    slot_test_server_kill9(&nodes[old].srv);
    nodes[old].up = false;
    p = find_primary(WAIT_LONG_MS);
    ASSERT(p >= 0 && p != old);
    for (int e = 0; e < 3; e++) {
        char now[64];
        counts_of(p, evs[e], now, sizeof now);
        ASSERT_STR_EQ(now, before[e]);
    }
    club = must(p, "{\"op\":\"event\",\"event\":\"club\"}");
    char *club_after = json_dumps(club, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(club);
    ASSERT_STR_EQ(club_after, club_before); /* the block's counts and its waiter, as acknowledged */
    sm = must(p, "{\"op\":\"seat_map\",\"event\":\"hall\"}");
    ASSERT_STR_EQ(jstr(json_object_get(sm, "rows"), "A-1"), "..c.h."); /* the seats, as acknowledged */
    json_decref(sm);
    sm = must(p,
              "{\"op\":\"hold\",\"event\":\"hall\",\"user\":\"s3\",\"request\":\"k\",\"seats\":[\"A-1-4\",\"A-1-5\"]}");
    ASSERT_STR_EQ(jstr(sm, "status"), "taken"); /* A-1-5 is still s2's on the new primary */
    json_decref(sm);
    free(club_after);
    free(club_before);
    /* The block's hold released on the new primary: its units go back to the block and serve
     * the join waiting on it. */
    char brel[200];
    snprintf(brel, sizeof brel, "{\"op\":\"release\",\"event\":\"club\",\"hold\":\"%s\",\"user\":\"f1\"}", block_hold);
    json_decref(must(p, brel));
    bh = must(p, "{\"op\":\"waitlist\",\"event\":\"club\",\"user\":\"f2\",\"request\":\"j\"}");
    ASSERT_STR_EQ(jstr(bh, "status"), "offered");
    json_decref(bh);
    json_t *j = must(p, "{\"op\":\"check\"}");
    ASSERT_EQ(json_array_size(json_object_get(j, "violations")), 0u);
    json_decref(j);
    j = must(p, "{\"op\":\"hold\",\"event\":\"stand\",\"user\":\"late\",\"request\":\"k\",\"qty\":4}");
    ASSERT_STR_EQ(jstr(j, "status"), "sold_out");
    ASSERT_STR_EQ(jstr(j, "short"), "venue");
    json_decref(j);
    char rel[200];
    snprintf(rel, sizeof rel, "{\"op\":\"release\",\"event\":\"floor\",\"hold\":\"%s\",\"user\":\"u1\"}", first);
    json_decref(must(p, rel));
    char now[64];
    counts_of(p, "venue", now, sizeof now);
    ASSERT_STR_EQ(now, "24/0/6/0"); /* the release went back along the chain on the new primary */
    node_start(&nodes[old]);
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    for (int i = 0; i < NODES; i++) {
        j = must(i, "{\"op\":\"check\"}");
        ASSERT_EQ(json_array_size(json_object_get(j, "violations")), 0u);
        json_decref(j);
    }
    set_end();
}

/*
 * The waiting room on a replica set (docs/protocol.md, "Admission"):
 * admissions are the primary's committed writes, so a failover goes on at
 * the same place. 10 units, 30 joins, a fast rate: the stop rule halts
 * admissions at 10 open grants, a stable state that every member has; kill
 * -9 of the primary: the new primary shows the same 10 admitted, each with
 * the same grant expiry (none admitted again), and nobody else admitted
 * (none skipped). Five of them hold and release: admission goes on there,
 * the next five in join order exactly.
 */
#define ROOM_JOINS 30

/* Entry k's admission state on node i: "waiting" or "admitted", its grant's expiry into *exp. */
static const char *room_state(int i, const char *ticket, uint64_t *exp, char *buf, size_t cap)
{
    char line[300];
    snprintf(line, sizeof line, "{\"op\":\"admission\",\"event\":\"room\",\"ticket\":\"%s\"}", ticket);
    json_t *j = must(i, line);
    snprintf(buf, cap, "%s", jstr(j, "status"));
    *exp = ju64(j, "expires_at");
    json_decref(j);
    return buf;
}

/* Polls node i (bounded) until `want` entries are admitted; returns how many are. */
static int room_wait_admitted(int i, int want)
{
    uint64_t until = slot_test_now_ms() + WAIT_LONG_MS;
    int n = 0;
    while (slot_test_now_ms() < until) {
        json_t *j = must(i, "{\"op\":\"event\",\"event\":\"room\"}");
        n = (int)ju64(json_object_get(j, "room"), "admitted");
        json_decref(j);
        if (n >= want)
            break;
        usleep(20 * 1000);
    }
    return n;
}

TEST_IMPL(cluster_room_survives_failover)
{
    set_start();
    int p = find_primary(WAIT_LONG_MS);
    ASSERT(p >= 0);
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    char line[400];
    snprintf(line, sizeof line,
             "{\"op\":\"create_event\",\"event\":\"room\",\"capacity\":10,\"admission\":\"queue\","
             "\"admit_per_s\":200,\"opens_at\":%llu}",
             (unsigned long long)(slot_test_now_ms() + 300));
    json_decref(must(p, line));
    static char tickets[ROOM_JOINS][128];
    for (int k = 0; k < ROOM_JOINS; k++) {
        snprintf(line, sizeof line, "{\"op\":\"join\",\"event\":\"room\",\"user\":\"r%d\",\"request\":\"j\"}", k);
        json_t *j = must(p, line);
        ASSERT_EQ(ju64(j, "position"), (uint64_t)k + 1);
        snprintf(tickets[k], sizeof tickets[k], "%s", jstr(j, "ticket"));
        json_decref(j);
    }
    ASSERT_EQ(room_wait_admitted(p, 10), 10); /* then the stop rule: 10 open grants, 10 units */
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    uint64_t before[ROOM_JOINS];
    char st[32];
    for (int k = 0; k < ROOM_JOINS; k++)
        ASSERT_STR_EQ(room_state(p, tickets[k], &before[k], st, sizeof st), k < 10 ? "admitted" : "waiting");
    int old = p;
    slot_test_server_kill9(&nodes[old].srv);
    nodes[old].up = false;
    p = find_primary(WAIT_LONG_MS);
    ASSERT(p >= 0 && p != old);
    for (int k = 0; k < ROOM_JOINS; k++) { /* none admitted again, none skipped */
        uint64_t exp = 0;
        ASSERT_STR_EQ(room_state(p, tickets[k], &exp, st, sizeof st), k < 10 ? "admitted" : "waiting");
        if (k < 10)
            ASSERT_U64_EQ(exp, before[k]);
    }
    /* Five grants used and their holds released: 5 open grants, 10 free units: the next five. */
    for (int k = 0; k < 5; k++) {
        snprintf(line, sizeof line, "{\"op\":\"admission\",\"event\":\"room\",\"ticket\":\"%s\"}", tickets[k]);
        json_t *adm = must(p, line);
        char grant[256];
        snprintf(grant, sizeof grant, "%s", jstr(adm, "grant"));
        json_decref(adm);
        snprintf(line, sizeof line,
                 "{\"op\":\"hold\",\"event\":\"room\",\"user\":\"r%d\",\"request\":\"h\",\"qty\":1,\"grant\":\"%s\"}",
                 k, grant);
        json_t *h = must(p, line);
        ASSERT_STR_EQ(jstr(h, "status"), "held");
        snprintf(line, sizeof line, "{\"op\":\"release\",\"event\":\"room\",\"hold\":\"%s\",\"user\":\"r%d\"}",
                 jstr(h, "hold"), k);
        json_decref(h);
        json_decref(must(p, line));
    }
    ASSERT_EQ(room_wait_admitted(p, 15), 15);
    usleep(200 * 1000); /* a 16th admission would come within this at 200/s: the stop rule holds it back */
    for (int k = 0; k < ROOM_JOINS; k++) {
        uint64_t exp = 0;
        ASSERT_STR_EQ(room_state(p, tickets[k], &exp, st, sizeof st), k < 15 ? "admitted" : "waiting");
    }
    node_start(&nodes[old]);
    ASSERT(wait_members(NODES, WAIT_LONG_MS));
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    for (int i = 0; i < NODES; i++) {
        json_t *j = must(i, "{\"op\":\"check\"}");
        ASSERT_EQ(json_array_size(json_object_get(j, "violations")), 0u);
        json_decref(j);
    }
    set_end();
}
