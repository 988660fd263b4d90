/*
 * test_cart_e2e.c — carts and waitlists over a real slotd on a loopback port:
 * 64 carts racing for the last units of two events (never one held without
 * the other, exactly the capacity sold), and slotd killed with SIGKILL
 * between a release and the waitlist's hand-out (the kill_before_handout
 * failpoint of $SLOTD_FP): the two are one commit, so after the restart
 * either both happened or neither did.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TEST_DECLARE(cart_e2e_64_carts_race_for_the_last_units)
TEST_DECLARE(cart_e2e_kill9_between_release_and_hand_out)

TEST_LIST_START
TEST_ENTRY(cart_e2e_64_carts_race_for_the_last_units)
TEST_ENTRY(cart_e2e_kill9_between_release_and_hand_out)
TEST_LIST_END

#define CARTS 64
#define LAST_UNITS 10 /* each event has this many left when the carts start */
#define TIMEOUT_MS 10000

static slot_test_server srv;

/* The event view after a clean check (harness.h): these counts. */
static void expect_clean(slot_client *c, const char *ev, uint64_t available, uint64_t held, uint64_t waiting)
{
    slot_reply r = slot_test_view_checked(c, ev);
    ASSERT_U64_EQ(r.available, available);
    ASSERT_U64_EQ(r.held, held);
    ASSERT_U64_EQ(r.waiting, waiting);
    slot_reply_clear(&r);
}

/* ---- the race */

typedef struct racer {
    int ix;
    pthread_barrier_t *go;
    slot_client *c;
    bool held;
    char hold_a[SLOT_HOLD_ID_BYTES + 1], hold_b[SLOT_HOLD_ID_BYTES + 1];
    char fail[160];
} racer;

/* The hold id of the cart hold of event ev in a hold_many reply line. */
static void cart_hold(const char *line, const char *ev, char out[SLOT_HOLD_ID_BYTES + 1])
{
    char pat[80];
    snprintf(pat, sizeof pat, "{\"event\":\"%s\",\"hold\":\"", ev);
    const char *p = strstr(line, pat);
    out[0] = 0;
    if (p) {
        memcpy(out, p + strlen(pat), SLOT_HOLD_ID_BYTES);
        out[SLOT_HOLD_ID_BYTES] = 0;
    }
}

static void *race(void *p)
{
    racer *r = p;
    char user[16];
    snprintf(user, sizeof user, "buyer%d", r->ix);
    slot_req q;
    slot_req_hold_many(&q, user, "cart");
    /* Half list the items the other way round: the order must not matter. */
    slot_req_cart_add(&q, r->ix % 2 ? "race.a" : "race.b", 1);
    slot_req_cart_add(&q, r->ix % 2 ? "race.b" : "race.a", 1);
    slot_reply rep;
    pthread_barrier_wait(r->go);
    int rc = slot_client_call(r->c, &q, &rep, TIMEOUT_MS);
    if (rc != 0) {
        snprintf(r->fail, sizeof r->fail, "call: %d", rc);
        return NULL;
    }
    if (!rep.ok || (strcmp(rep.status, "held") != 0 && strcmp(rep.status, "sold_out") != 0))
        snprintf(r->fail, sizeof r->fail, "%.150s", rep.line);
    r->held = strcmp(rep.status, "held") == 0;
    if (r->held) {
        if (rep.nholds != 2)
            snprintf(r->fail, sizeof r->fail, "held with %u holds", rep.nholds);
        cart_hold(rep.line, "race.a", r->hold_a);
        cart_hold(rep.line, "race.b", r->hold_b);
    }
    slot_reply_clear(&rep);
    return NULL;
}

/* The hold must be held (get_hold), by user. */
static void expect_held(slot_client *c, const char *ev, const char *hold, const char *user)
{
    slot_req q;
    slot_reply r;
    slot_req_hold_op(&q, SLOT_OP_GET_HOLD, ev, hold, user);
    slot_test_call(c, &q, &r);
    if (!r.ok || strcmp(r.status, "held") != 0)
        T_FAIL_("%s hold %s of %s: %s", ev, hold, user, r.line);
    slot_reply_clear(&r);
}

TEST_IMPL(cart_e2e_64_carts_race_for_the_last_units)
{
    slot_test_start(&srv, NULL);
    slot_client *c = slot_test_dial(&srv);
    slot_test_create_event(c, "race.a", LAST_UNITS + 5, &(slot_event_settings){.shards = 4}, NULL);
    slot_test_create_event(c, "race.b", LAST_UNITS + 3, &(slot_event_settings){.shards = 4}, NULL);
    slot_req q;
    slot_reply r;
    slot_req_hold(&q, "race.a", "early", "k", 5); /* the other units are taken before */
    slot_test_call(c, &q, &r);
    ASSERT_STR_EQ(r.status, "held");
    slot_reply_clear(&r);
    slot_req_hold(&q, "race.b", "early", "k", 3);
    slot_test_call(c, &q, &r);
    ASSERT_STR_EQ(r.status, "held");
    slot_reply_clear(&r);

    static racer rs[CARTS];
    pthread_t th[CARTS];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, CARTS);
    for (int i = 0; i < CARTS; i++) {
        rs[i] = (racer){.ix = i, .go = &go, .c = slot_test_dial(&srv)};
        ASSERT_EQ(pthread_create(&th[i], NULL, race, &rs[i]), 0);
    }
    int held = 0;
    for (int i = 0; i < CARTS; i++) {
        pthread_join(th[i], NULL);
        if (rs[i].fail[0])
            T_FAIL_("cart %d: %s", i, rs[i].fail);
        held += rs[i].held;
    }
    pthread_barrier_destroy(&go);
    ASSERT_EQ(held, LAST_UNITS); /* exactly the capacity sold */
    for (int i = 0; i < CARTS; i++) {
        char user[16];
        snprintf(user, sizeof user, "buyer%d", i);
        if (rs[i].held) { /* never one held without the other */
            expect_held(c, "race.a", rs[i].hold_a, user);
            expect_held(c, "race.b", rs[i].hold_b, user);
        }
        slot_client_close(rs[i].c);
    }
    expect_clean(c, "race.a", 0, LAST_UNITS + 5, 0);
    expect_clean(c, "race.b", 0, LAST_UNITS + 3, 0);
    slot_client_close(c);
    slot_test_stop(&srv);
}

/* ---- kill -9 between a release and the hand-out */

/* The waitlist op's status for (ev, user, "k"), into status (16 bytes). */
static void wait_status(slot_client *c, const char *user, char status[16])
{
    slot_req q;
    slot_reply r;
    slot_req_waitlist(&q, SLOT_OP_WAITLIST, "wl", user, "k", 0);
    slot_test_call(c, &q, &r);
    ASSERT(r.ok);
    memcpy(status, r.status, 16);
    slot_reply_clear(&r);
}

static void hold_status(slot_client *c, const char *hold, const char *user, const char *want)
{
    slot_req q;
    slot_reply r;
    slot_req_hold_op(&q, SLOT_OP_GET_HOLD, "wl", hold, user);
    slot_test_call(c, &q, &r);
    if (strcmp(r.status, want) != 0)
        T_FAIL_("hold of %s: %s, want %s", user, r.line, want);
    slot_reply_clear(&r);
}

TEST_IMPL(cart_e2e_kill9_between_release_and_hand_out)
{
    const char *fp = getenv("SLOTD_FP"), *plain = getenv("SLOTD");
    ASSERT_NOT_NULL(fp);
    ASSERT_NOT_NULL(plain);
    char *dir = slot_test_tmpdir();
    char *plain_copy = strdup(plain);
    setenv("SLOTD", fp, 1);
    setenv("SLOT_FAILPOINTS", "kill_before_handout", 1);
    memset(&srv, 0, sizeof srv);
    slot_test_server_start(&srv, dir, NULL);
    unsetenv("SLOT_FAILPOINTS");
    setenv("SLOTD", plain_copy, 1);
    slot_client *c = slot_test_dial(&srv);
    slot_test_create_event(c, "wl", 1, &(slot_event_settings){.shards = 4, .waitlist_max = 10}, NULL);
    slot_req q;
    slot_reply r;
    slot_req_hold(&q, "wl", "a", "k", 1);
    slot_test_call(c, &q, &r);
    ASSERT_STR_EQ(r.status, "held");
    char hold[SLOT_HOLD_ID_BYTES + 1];
    memcpy(hold, r.hold, sizeof hold);
    slot_reply_clear(&r);
    slot_req_waitlist(&q, SLOT_OP_WAITLIST_JOIN, "wl", "b", "k", 1);
    slot_test_call(c, &q, &r);
    ASSERT_STR_EQ(r.status, "waiting");
    slot_reply_clear(&r);
    /* The release returns the unit, and slotd dies before the hand-out: no answer. */
    slot_req_hold_op(&q, SLOT_OP_RELEASE, "wl", hold, "a");
    ASSERT(slot_client_call(c, &q, &r, TIMEOUT_MS) != 0);
    slot_client_close(c);
    slot_test_server_kill9(&srv); /* reaps it (already dead of SIGKILL) */

    /* Neither happened: a's hold is held, b waits. */
    slot_test_server_start(&srv, dir, NULL);
    c = slot_test_dial(&srv);
    char st[16];
    hold_status(c, hold, "a", "held");
    wait_status(c, "b", st);
    ASSERT_STR_EQ(st, "waiting");
    expect_clean(c, "wl", 0, 1, 1);
    /* Without the failpoint: both, and both survive kill -9. */
    slot_test_call(c, &q, &r);
    ASSERT(r.released);
    slot_reply_clear(&r);
    slot_client_close(c);
    slot_test_server_kill9(&srv);
    slot_test_server_start(&srv, dir, NULL);
    c = slot_test_dial(&srv);
    hold_status(c, hold, "a", "released");
    wait_status(c, "b", st);
    ASSERT_STR_EQ(st, "offered");
    expect_clean(c, "wl", 0, 1, 0);
    slot_client_close(c);
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    slot_test_rmdir(dir);
    free(dir);
    free(plain_copy);
}
