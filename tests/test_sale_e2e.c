/*
 * test_sale_e2e.c — the v1.1 sale ops over a real slotd (ephemeral
 * loopback port, its own data folder), through the client library: hello's
 * features, a window's not_on_sale, extend and partial confirm on the wire,
 * and late payers (reacquire) racing fresh buyers for the last units.
 */
#include <pthread.h>
#include <string.h>

#include "harness.h"
#include "slot/client.h"

TEST_DECLARE(sale_e2e_features_window_extend_partial)
TEST_DECLARE(sale_e2e_reacquire_races_buyers_for_the_last_units)

TEST_LIST_START
TEST_ENTRY(sale_e2e_features_window_extend_partial)
TEST_ENTRY(sale_e2e_reacquire_races_buyers_for_the_last_units)
TEST_LIST_END

#define TIMEOUT_MS 10000

static slot_test_server srv;

/* The event view after a clean check (harness.h): these counts. */
static void expect_clean(slot_client *c, const char *ev, uint64_t available, uint64_t held, uint64_t confirmed)
{
    slot_reply r = slot_test_view_checked(c, ev);
    ASSERT_EQ(r.available, available);
    ASSERT_EQ(r.held, held);
    ASSERT_EQ(r.confirmed, confirmed);
    slot_reply_clear(&r);
}

TEST_IMPL(sale_e2e_features_window_extend_partial)
{
    slot_test_start(&srv, NULL);
    slot_client *c = slot_test_dial(&srv);
    slot_req q;
    slot_reply r;
    slot_req_init(&q, SLOT_OP_HELLO);
    slot_test_call(c, &q, &r);
    ASSERT_STR_EQ(r.features, "windows,extend,partial_confirm,reacquire,hold_many,waitlist,feed,types,allocations,"
                              "admission,client_limits,seats");
    slot_reply_clear(&r);
    /* A window an hour ahead: not_on_sale with both times; set_sale_window opens it. */
    uint64_t opens = slot_test_now_ms() + 3600000;
    slot_test_create_event(c, "w", 5, &(slot_event_settings){.shards = 4, .opens_at_ms = opens}, &r);
    ASSERT_U64_EQ(r.opens_at_ms, opens);
    ASSERT_EQ(r.max_extensions, 1);
    slot_reply_clear(&r);
    slot_req_hold(&q, "w", "u", "k", 1);
    slot_test_call(c, &q, &r);
    ASSERT_STR_EQ(r.error, "not_on_sale");
    ASSERT_U64_EQ(r.opens_at_ms, opens);
    ASSERT(strstr(r.line, "\"closes_at\":0") != NULL);
    slot_reply_clear(&r);
    ASSERT_EQ(slot_req_sale_window(&q, "w", 0, 0), 0);
    slot_test_call(c, &q, &r);
    ASSERT(r.ok);
    slot_reply_clear(&r);
    /* extend, once (the default), then extend_limit. */
    slot_req_hold(&q, "w", "u", "k", 3);
    slot_test_call(c, &q, &r);
    ASSERT_STR_EQ(r.status, "held");
    char h[SLOT_HOLD_ARG_BYTES_MAX + 1];
    strcpy(h, r.hold);
    uint64_t exp = r.expires_at_ms;
    slot_reply_clear(&r);
    ASSERT_EQ(slot_req_extend(&q, "w", h, "u", 60000), 0);
    slot_test_call(c, &q, &r);
    ASSERT_STR_EQ(r.status, "held");
    ASSERT_U64_EQ(r.expires_at_ms, exp + 60000);
    ASSERT_EQ(r.extensions, 1);
    slot_reply_clear(&r);
    slot_test_call(c, &q, &r);
    ASSERT_STR_EQ(r.error, "extend_limit");
    ASSERT_EQ(r.err, SLOT_E_EXTEND_LIMIT);
    slot_reply_clear(&r);
    /* Partial confirm of 2 of 3, then its replay with another qty. */
    ASSERT_EQ(slot_req_hold_op(&q, SLOT_OP_CONFIRM, "w", h, "u"), 0);
    slot_req_set_confirm_qty(&q, 2);
    slot_test_call(c, &q, &r);
    ASSERT_STR_EQ(r.status, "confirmed");
    ASSERT_EQ(r.qty, 2);
    ASSERT_EQ(r.returned, 1);
    slot_reply_clear(&r);
    slot_req_set_confirm_qty(&q, 3);
    slot_test_call(c, &q, &r);
    ASSERT(r.replay);
    ASSERT_EQ(r.qty, 2);
    slot_reply_clear(&r);
    ASSERT_EQ(slot_req_hold_op(&q, SLOT_OP_GET_HOLD, "w", h, "u"), 0);
    slot_test_call(c, &q, &r);
    ASSERT_EQ(r.qty, 2);
    ASSERT_EQ(r.returned, 1);
    slot_reply_clear(&r);
    expect_clean(c, "w", 3, 0, 2);
    slot_client_close(c);
    slot_test_stop(&srv);
}

/* ---- late payers (reacquire of their released holds) and fresh buyers race for the last units */

#define LATE 32
#define FRESH 32
#define CAP 6

typedef struct racer {
    pthread_barrier_t *go;
    slot_client *c;
    slot_req q;
    slot_reply r;
} racer;

static void *race_one(void *p)
{
    racer *x = p;
    pthread_barrier_wait(x->go);
    if (slot_client_call(x->c, &x->q, &x->r, TIMEOUT_MS) != 0)
        x->r.ok = false;
    return NULL;
}

TEST_IMPL(sale_e2e_reacquire_races_buyers_for_the_last_units)
{
    slot_test_start(&srv, NULL);
    slot_client *admin = slot_test_dial(&srv);
    static racer rs[LATE + FRESH];
    for (int round = 0; round < 5; round++) {
        char ev[16];
        snprintf(ev, sizeof ev, "late%d", round);
        slot_reply made;
        slot_test_create_event(admin, ev, CAP, &(slot_event_settings){.shards = 4}, &made);
        ASSERT_EQ(made.max_extensions, 1);
        slot_reply_clear(&made);
        /* Every late payer held a unit and lost it (released: the payment failed, then came through). */
        for (int i = 0; i < LATE; i++) {
            char user[16];
            snprintf(user, sizeof user, "late%d", i);
            slot_req q;
            slot_reply r;
            slot_req_hold(&q, ev, user, "k", 1);
            slot_test_call(admin, &q, &r);
            ASSERT_STR_EQ(r.status, "held");
            ASSERT_EQ(slot_req_hold_op(&rs[i].q, SLOT_OP_CONFIRM, ev, r.hold, user), 0);
            slot_req_set_reacquire(&rs[i].q, true);
            ASSERT_EQ(slot_req_hold_op(&q, SLOT_OP_RELEASE, ev, r.hold, user), 0);
            slot_reply_clear(&r);
            slot_test_call(admin, &q, &r);
            ASSERT(r.released);
            slot_reply_clear(&r);
        }
        for (int i = 0; i < FRESH; i++) {
            char user[16];
            snprintf(user, sizeof user, "fresh%d", i);
            slot_req_hold(&rs[LATE + i].q, ev, user, "k", 1);
        }
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, LATE + FRESH);
        pthread_t th[LATE + FRESH];
        for (int i = 0; i < LATE + FRESH; i++) {
            rs[i].go = &go;
            if (round == 0)
                rs[i].c = slot_test_dial(&srv);
            pthread_create(&th[i], NULL, race_one, &rs[i]);
        }
        int confirmed = 0, held = 0, sold = 0;
        for (int i = 0; i < LATE + FRESH; i++) {
            pthread_join(th[i], NULL);
            ASSERT(rs[i].r.ok);
            if (strcmp(rs[i].r.status, "confirmed") == 0) {
                ASSERT(i < LATE);
                ASSERT(rs[i].r.replaces[0] != 0);
                confirmed++;
            } else if (strcmp(rs[i].r.status, "held") == 0) {
                held++;
            } else {
                ASSERT_STR_EQ(rs[i].r.status, "sold_out");
                sold++;
            }
            slot_reply_clear(&rs[i].r);
        }
        pthread_barrier_destroy(&go);
        ASSERT_EQ(confirmed + held, CAP); /* exactly capacity winners */
        ASSERT_EQ(sold, LATE + FRESH - CAP);
        expect_clean(admin, ev, 0, (uint64_t)held, (uint64_t)confirmed);
    }
    for (int i = 0; i < LATE + FRESH; i++)
        slot_client_close(rs[i].c);
    slot_client_close(admin);
    slot_test_stop(&srv);
}
