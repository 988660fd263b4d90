/*
 * test_powercut.c — power cuts against a disk that forgets (issue 24).
 *
 * slotd runs under tests/powercut_preload.c, which journals every write,
 * flush and name change in its data folder. Clients hold, confirm and
 * release and record what they were told; at a random moment slotd is killed
 * (SIGKILL). The test then builds what a disk could hold after a power cut at
 * that moment: the folder as it was when the round began, then the journal
 * replayed in order, where every write a flush covered (a file's fsync or
 * fdatasync that returned, a write on an O_DSYNC file) is kept and every
 * other write is kept or lost in 4 KiB pieces at random (a disk may write any
 * of the dirty pages, in any order), and every name change a folder fsync
 * covered is kept and of the others a random prefix. slotd is started on
 * that folder and must show every acknowledged hold, confirm and release
 * (held, confirmed, released; one sent but not answered may be either
 * outcome), a clean `check`, and a feed without a gap. Then the next round
 * goes on from that folder.
 *
 * The same replay keeping everything must give back the folder slotd left,
 * byte for byte: the journal saw every change (else the round fails as
 * "the journal does not model the folder").
 *
 * A planted fault proves the test can see: slotd-failpoints with no_flush
 * (LMDB MDB_NOSYNC, the batch log's syncs skipped) must lose an acknowledged
 * write, fail `check` or not start within PLANT_CUTS_MAX cuts.
 *
 * Cases: a standalone server; a replica set of three (every member under the
 * library, one cut of all of them at once, the set restarted on the rebuilt
 * folders; skipped without /usr/bin/etcd). Each with its planted variant.
 *
 * SLOT_POWERCUT_CUTS=N: N cuts per case (default CUTS_CI standalone and
 * SET_CUTS_CI for the set). SLOT_POWERCUT_SEED=S repeats the choices of the
 * rebuilds (the moment of each kill is the scheduler's). SLOT_POWERCUT_KEEP=1
 * keeps the folders of a failed case. The seed is printed first.
 *
 * Files: this one (the cases and the standalone rounds); powercut_rebuild.c
 * (the randomness, the planted fault, slotd under the library and the
 * rebuild of a folder after the cut); powercut_clients.c (the clients and
 * verify); powercut_set.c (the replica set's rounds); powercut_int.h (what
 * they share).
 */
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include "cluster_fixture.h"
#include "harness.h"
#include "powercut_int.h"

TEST_DECLARE(powercut_standalone)
TEST_DECLARE(powercut_standalone_planted_fault_is_caught)
TEST_DECLARE(powercut_pipelined_early_reply_is_caught)
TEST_DECLARE(powercut_set)
TEST_DECLARE(powercut_set_planted_fault_is_caught)
TEST_DECLARE(powercut_set_pipelined_early_reply_is_caught)

TEST_LIST_START
TEST_ENTRY(powercut_standalone)
TEST_ENTRY(powercut_standalone_planted_fault_is_caught)
TEST_ENTRY(powercut_pipelined_early_reply_is_caught)
TEST_ENTRY(powercut_set)
TEST_ENTRY(powercut_set_planted_fault_is_caught)
TEST_ENTRY(powercut_set_pipelined_early_reply_is_caught)
TEST_LIST_END

#define CUTS_CI 6             /* standalone cuts in CI */
#define SET_CUTS_CI 2         /* replica-set cuts in CI */
#define PLANT_CUTS_MAX 8      /* the planted fault must be caught within this many */
#define EARLY_CUTS_MAX 30     /* early_reply loses only what the flush had not reached: more tries */
#define SET_EARLY_CUTS_MAX 60 /* on a set, only what no member had flushed either (caught at cuts 1, 22, 26) */

static int cuts_of(int dflt)
{
    const char *s = getenv("SLOT_POWERCUT_CUTS");
    return s && atoi(s) > 0 ? atoi(s) : dflt;
}

/* ---- one server, under the library */

static char work[PATHB], journal_dir[PATHB];

/* A case on a path of its own: SLOT_TEST_DURABILITY set to d, and put back
 * as it was (unset, or the run's own) for the cases after it. */
static char durability_saved[32];
static bool durability_was_set;

static void durability_push(const char *d)
{
    const char *was = getenv("SLOT_TEST_DURABILITY");
    durability_was_set = was != NULL;
    snprintf(durability_saved, sizeof durability_saved, "%s", was ? was : "");
    setenv("SLOT_TEST_DURABILITY", d, 1);
}

static void durability_pop(void)
{
    if (durability_was_set)
        setenv("SLOT_TEST_DURABILITY", durability_saved, 1);
    else
        unsetenv("SLOT_TEST_DURABILITY");
}

/* Standalone rounds; returns the failures (planted: stops at the first cut
 * that shows one). */
static int standalone_run(int cuts)
{
    char *base = slot_test_tmpdir();
    char *real = realpath(base, NULL);
    free(base);
    snprintf(work, sizeof work, "%s/data", real);
    snprintf(journal_dir, sizeof journal_dir, "%s", real);
    char copy[PATHB + 8], journal[PATHB + 16];
    snprintf(copy, sizeof copy, "%s/round", real);
    snprintf(journal, sizeof journal, "%s/journal", real);
    const char *dur = getenv("SLOT_TEST_DURABILITY");
    const char *flags[] = {"--durability", dur && *dur ? dur : "sync", NULL};
    printf("  --durability %s\n", flags[1]);
    snprintf(nodes[0].host, sizeof nodes[0].host, "127.0.0.1");
    slot_test_server_start(&nodes[0].srv, work, flags);
    json_t *j = call1(0, "{\"op\":\"create_event\",\"event\":\"" EVENT
                         "\",\"capacity\":100000000,\"shards\":8,\"hold_ttl_ms\":3600000}");
    ASSERT(j && jok(j));
    json_decref(j);
    ASSERT_EQ(slot_test_server_stop(&nodes[0].srv), 0);
    clients_reset(0);
    int bad = 0;
    for (round_no = 1; round_no <= cuts && !(planted && bad); round_no++) {
        sh("rm -rf %s %s", copy, "");
        sh("cp -a %s %s", work, copy);
        preload_env(true, work, journal);
        slot_test_server_start(&nodes[0].srv, work, flags);
        preload_env(false, NULL, NULL);
        int run_ms = RUN_MS_MIN + (int)(rnd() % RUN_MS_SPAN);
        load_round(run_ms);
        slot_test_server_kill9(&nodes[0].srv);
        load_end();
        uint64_t told = told_total();
        replay st = {0};
        const char *why = cut_folder(work, copy, journal, &st);
        if (why)
            T_FAIL_("cut %d: %s", round_no, why);
        printf("  cut %d after %d ms: %" PRIu64 " answers; pieces: %" PRIu64 " flushed, %" PRIu64 " kept, %" PRIu64
               " lost\n",
               round_no, run_ms, told, st.durable_pieces, st.kept_pieces, st.lost_pieces);
        fflush(stdout);
        slot_test_server *s = &nodes[0].srv;
        memset(s, 0, sizeof *s);
        slot_test_start_soft = true; /* a folder slotd refuses is a loss too (the planted fault corrupts LMDB) */
        slot_test_server_start(s, work, flags);
        slot_test_start_soft = false;
        if (s->port == 0) {
            printf("  cut %d: slotd does not start on the rebuilt folder\n", round_no);
            bad++;
            round_no++;
            break;
        }
        bad += verify(0, round_no == cuts, planted);
        ASSERT_EQ(slot_test_server_stop(s), 0);
    }
    const char *keep = getenv("SLOT_POWERCUT_KEEP");
    if (bad && keep && *keep)
        printf("  kept %s\n", real);
    else
        slot_test_rmdir(real);
    free(real);
    return bad;
}

TEST_IMPL(powercut_standalone)
{
    signal(SIGPIPE, SIG_IGN);
    seed_once();
    int cuts = cuts_of(CUTS_CI);
    int bad = standalone_run(cuts);
    if (bad)
        T_FAIL_("%d acknowledged writes (or checks) lost over %d cuts", bad, cuts);
    printf("  %d cuts, every acknowledged hold, confirm and release kept, check clean, no feed gap\n", cuts);
}

TEST_IMPL(powercut_standalone_planted_fault_is_caught)
{
    signal(SIGPIPE, SIG_IGN);
    seed_once();
    const char *fp = getenv("SLOTD_FP");
    ASSERT_NOT_NULL(fp);
    setenv("SLOTD", fp, 1);
    planted = true;
    int bad = standalone_run(PLANT_CUTS_MAX);
    if (!bad)
        T_FAIL_("no_flush (no flush at all) lost nothing in %d cuts: the test cannot see a lost write", PLANT_CUTS_MAX);
    printf("  the planted fault was caught at cut %d (%d failures)\n", round_no - 1, bad);
}

TEST_IMPL(powercut_pipelined_early_reply_is_caught)
{
    signal(SIGPIPE, SIG_IGN);
    seed_once();
    const char *fp = getenv("SLOTD_FP");
    ASSERT_NOT_NULL(fp);
    setenv("SLOTD", fp, 1);
    durability_push("pipelined");
    planted = true;
    plant = "early_reply"; /* answers when the batch ran, before its record is flushed */
    int bad = standalone_run(EARLY_CUTS_MAX);
    durability_pop(); /* the cases after it run on their own path (sync by default) */
    if (!bad)
        T_FAIL_("early_reply lost nothing in %d cuts: the test cannot see answers sent before the flush",
                EARLY_CUTS_MAX);
    printf("  the planted fault was caught at cut %d (%d failures)\n", round_no - 1, bad);
}

/* ---- the replica set (its rounds: powercut_set.c) */

TEST_IMPL(powercut_set)
{
    signal(SIGPIPE, SIG_IGN);
    seed_once();
    int cuts = cuts_of(SET_CUTS_CI);
    int bad = set_run(cuts);
    if (bad)
        T_FAIL_("%d acknowledged writes (or checks) lost over %d cuts of the set", bad, cuts);
    printf("  %d cuts of every member at once, every acknowledged write kept, check clean, no feed gap\n", cuts);
}

TEST_IMPL(powercut_set_planted_fault_is_caught)
{
    signal(SIGPIPE, SIG_IGN);
    seed_once();
    const char *fp = getenv("SLOTD_FP");
    ASSERT_NOT_NULL(fp);
    setenv("SLOTD", fp, 1);
    planted = true;
    int bad = set_run(PLANT_CUTS_MAX);
    if (!bad)
        T_FAIL_("no_flush lost nothing in %d cuts of the set: the test cannot see a lost write", PLANT_CUTS_MAX);
    printf("  the planted fault was caught at cut %d (%d failures)\n", round_no - 1, bad);
}

/* The pipelined path on a set: early_reply answers a batch when it ran,
 * before its record is flushed here and acked by the members; a cut of all
 * of them at once must then lose an acknowledged write. */
TEST_IMPL(powercut_set_pipelined_early_reply_is_caught)
{
    signal(SIGPIPE, SIG_IGN);
    seed_once();
    const char *fp = getenv("SLOTD_FP");
    ASSERT_NOT_NULL(fp);
    setenv("SLOTD", fp, 1);
    durability_push("pipelined");
    planted = true;
    plant = "early_reply";
    int bad = set_run(SET_EARLY_CUTS_MAX);
    durability_pop();
    if (!bad)
        T_FAIL_("early_reply lost nothing in %d cuts of the set: the test cannot see answers sent before the "
                "flush and the acks",
                SET_EARLY_CUTS_MAX);
    printf("  the planted fault was caught at cut %d (%d failures)\n", round_no - 1, bad);
}
