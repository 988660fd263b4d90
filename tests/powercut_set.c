/*
 * tests/powercut_set.c — the power-cut test's replica set (tests/test_powercut.c
 * says what the test does and holds its cases): three members on a private etcd
 * (tests/cluster_fixture.c), each under the library, one cut of all of them at
 * once, the set restarted on the rebuilt folders and verified. Declarations:
 * tests/powercut_int.h.
 */
#include <signal.h>
#include <sys/stat.h>

#include "cluster_fixture.h"
#include "harness.h"
#include "powercut_int.h"

#define CAPACITY 100000000u

static void set_stop_all(void)
{
    for (int i = 0; i < NODES; i++)
        if (nodes[i].up) {
            ASSERT_EQ(slot_test_server_stop(&nodes[i].srv), 0);
            nodes[i].up = false;
        }
}

int set_run(int cuts)
{
    etcd_start(&etcd); /* skips without /usr/bin/etcd */
    char *d = slot_test_tmpdir();
    char *real = realpath(d, NULL);
    free(d);
    snprintf(base_dir, sizeof base_dir, "%s", real);
    free(real);
    snprintf(secret_path, sizeof secret_path, "%s/secret", base_dir);
    FILE *f = fopen(secret_path, "w");
    ASSERT_NOT_NULL(f);
    fputs("a-cluster-secret-of-some-length\n", f);
    fclose(f);
    ASSERT_EQ(chmod(secret_path, 0600), 0);
    for (int i = 0; i < NODES; i++) {
        snprintf(nodes[i].id, sizeof nodes[i].id, "n%d", i + 1);
        snprintf(nodes[i].dir, sizeof nodes[i].dir, "%s/%s", base_dir, nodes[i].id);
        snprintf(nodes[i].host, sizeof nodes[i].host, "127.0.0.1");
        nodes[i].extra[0] = "--durability"; /* after the fixture's nosync: the later one wins */
        const char *dur = getenv("SLOT_TEST_DURABILITY");
        nodes[i].extra[1] = dur && *dur ? dur : "sync";
        nodes[i].extra[2] = NULL;
        node_start(&nodes[i]);
        nodes[i].up = true;
        if (i == 0)
            sleep_ms(300);
    }
    printf("  --durability %s\n", nodes[0].extra[1]);
    int p = find_primary(WAIT_LONG_MS);
    ASSERT_GE(p, 0);
    ASSERT(wait_members(3, WAIT_LONG_MS));
    create_event(p, CAPACITY);
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    set_stop_all();
    clients_reset(0);
    int bad = 0;
    for (round_no = 1; round_no <= cuts && !(planted && bad); round_no++) {
        char copy[NODES][PATHB + 8], journal[NODES][PATHB + 16];
        for (int i = 0; i < NODES; i++) {
            snprintf(copy[i], sizeof copy[i], "%s.round", nodes[i].dir);
            snprintf(journal[i], sizeof journal[i], "%s.journal", nodes[i].dir);
            sh("rm -rf %s %s", copy[i], "");
            sh("cp -a %s %s", nodes[i].dir, copy[i]);
            preload_env(true, nodes[i].dir, journal[i]);
            node_start(&nodes[i]);
            nodes[i].up = true;
            preload_env(false, NULL, NULL);
        }
        p = find_primary(WAIT_LONG_MS);
        ASSERT_GE(p, 0);
        ASSERT(wait_members(3, WAIT_LONG_MS));
        for (int i = 0; i < CLIENTS; i++)
            clients[i].node = p;
        int run_ms = RUN_MS_MIN + (int)(rnd() % RUN_MS_SPAN);
        load_round(run_ms);
        for (int i = 0; i < NODES; i++) /* one cut, all at once */
            kill(nodes[i].srv.pid, SIGKILL);
        for (int i = 0; i < NODES; i++) {
            slot_test_server_kill9(&nodes[i].srv);
            nodes[i].up = false;
        }
        load_end();
        uint64_t told = told_total();
        replay st = {0};
        for (int i = 0; i < NODES; i++) {
            const char *why = cut_folder(nodes[i].dir, copy[i], journal[i], &st);
            if (why)
                T_FAIL_("cut %d, %s: %s", round_no, nodes[i].id, why);
        }
        printf("  cut %d after %d ms (primary n%d): %" PRIu64 " answers; pieces: %" PRIu64 " flushed, %" PRIu64
               " kept, %" PRIu64 " lost\n",
               round_no, run_ms, p + 1, told, st.durable_pieces, st.kept_pieces, st.lost_pieces);
        fflush(stdout);
        int refused = 0;
        slot_test_start_soft = true;
        for (int i = 0; i < NODES; i++) {
            node_start(&nodes[i]);
            nodes[i].up = nodes[i].srv.port != 0;
            if (!nodes[i].up)
                printf("  cut %d: %s does not start on its rebuilt folder\n", round_no, nodes[i].id), refused++;
        }
        slot_test_start_soft = false;
        p = refused ? -1 : find_primary(WAIT_LONG_MS);
        if (p < 0 || !wait_converged(WAIT_LONG_MS, NULL)) {
            printf("  cut %d: the set did not come back (primary %d)\n", round_no, p);
            bad++;
            round_no++;
            break;
        }
        bad += verify(p, round_no == cuts, planted);
        set_stop_all();
    }
    for (int i = 0; i < NODES; i++)
        nodes[i].up = nodes[i].up && nodes[i].srv.pid > 0;
    const char *keep = getenv("SLOT_POWERCUT_KEEP");
    if (bad && keep && *keep) {
        printf("  kept %s\n", base_dir);
        base_dir[0] = 0;
    }
    if (base_dir[0])
        set_end();
    else
        etcd_end(&etcd);
    return bad;
}
