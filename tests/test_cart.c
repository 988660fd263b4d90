/*
 * test_cart.c — hold_many, a cart of several events (docs/protocol.md,
 * "hold_many" and "Clarifications of v1.1"), on the allocator with real
 * LMDB transactions: all held or none, the decision order and the item each
 * answer names, replays in any item order, and the key's one space per
 * (event, user). Every commit is followed by a clean slot_check.
 */
#include <string.h>

#include "alloc_fixture.h"

TEST_DECLARE(cart_all_held)
TEST_DECLARE(cart_one_sold_out_holds_nothing)
TEST_DECLARE(cart_errors_name_the_item)
TEST_DECLARE(cart_replay_in_any_order)
TEST_DECLARE(cart_key_conflicts)
TEST_DECLARE(cart_holds_are_ordinary_holds)
TEST_DECLARE(cart_waiting_event_is_sold_out)
TEST_DECLARE(cart_replay_expires_child_and_parent)

TEST_LIST_START
TEST_ENTRY(cart_all_held)
TEST_ENTRY(cart_one_sold_out_holds_nothing)
TEST_ENTRY(cart_errors_name_the_item)
TEST_ENTRY(cart_replay_in_any_order)
TEST_ENTRY(cart_key_conflicts)
TEST_ENTRY(cart_holds_are_ordinary_holds)
TEST_ENTRY(cart_waiting_event_is_sold_out)
TEST_ENTRY(cart_replay_expires_child_and_parent)
TEST_LIST_END

/* A cart of n (event, qty) items for (user, request). */
static slot_req req_cart(const char *user, const char *request, int n, const char *const *evs, const uint32_t *qty)
{
    slot_req q = slot_test_req(SLOT_OP_HOLD_MANY, NULL);
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, user);
    slot_test_set_name(q.request, &q.request_len, sizeof q.request, request);
    for (int i = 0; i < n; i++) {
        slot_test_set_name(q.items[i].event, &q.items[i].event_len, sizeof q.items[i].event, evs[i]);
        q.items[i].qty = (uint16_t)qty[i];
    }
    q.nitems = (uint8_t)n;
    return q;
}

static void cart(fx *f, const char *user, const char *request, int n, const char *const *evs, const uint32_t *qty,
                 slot_res *r)
{
    slot_req q = req_cart(user, request, n, evs, qty);
    run(f, &q, r);
}

TEST_IMPL(cart_all_held)
{
    fx f;
    fx_open(&f);
    create(&f, "a", 10, 4);
    create(&f, "b", 5, 2);
    create(&f, "c", 1, 1);
    static const char *const evs[] = {"a", "b", "c"};
    static const uint32_t qty[] = {3, 5, 1};
    slot_res r = {0};
    cart(&f, "u", "k", 3, evs, qty, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.sold_out);
    ASSERT_EQ(r.ncart, 3);
    for (int i = 0; i < 3; i++) {
        ASSERT_STR_EQ(r.cart[i].event, evs[i]);
        ASSERT_EQ(r.cart[i].qty, qty[i]);
        ASSERT_EQ(r.cart[i].status, SLOT_HOLD_HELD);
        ASSERT_U64_EQ(r.cart[i].expires_at_ms, f.now + TTL_DEFAULT);
        slot_hold_rec h;
        hold_rec(&f, evs[i], r.cart[i].hold, &h);
        ASSERT_EQ(h.kind, SLOT_HOLD_KIND_CART);
    }
    expect_counts(&f, "a", 7, 3, 0);
    expect_counts(&f, "b", 0, 5, 0);
    expect_counts(&f, "c", 0, 1, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(cart_one_sold_out_holds_nothing)
{
    fx f;
    fx_open(&f);
    create(&f, "a", 10, 4);
    create(&f, "b", 1, 1);
    create(&f, "c", 0, 1);
    static const char *const evs[] = {"a", "b", "c"};
    static const uint32_t qty[] = {2, 2, 1};
    slot_res r = {0};
    cart(&f, "u", "k", 3, evs, qty, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.sold_out);
    ASSERT_STR_EQ(r.item_event, "b"); /* the first item, in request order, that cannot be met */
    ASSERT_EQ(r.available, 1);
    ASSERT_EQ(r.ncart, 0);
    fx_commit(&f);
    expect_counts(&f, "a", 10, 0, 0);
    expect_counts(&f, "b", 1, 0, 0);
    /* Sold out is not remembered: the same key may succeed once units are there. */
    static const uint32_t fit[] = {2, 1, 1};
    slot_req cap = slot_test_req(SLOT_OP_SET_CAPACITY, "c");
    cap.capacity = 1;
    run(&f, &cap, &r);
    expect_err(&r, SLOT_E_OK);
    cart(&f, "u", "k", 3, evs, fit, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.sold_out);
    ASSERT_EQ(r.ncart, 3);
    expect_counts(&f, "b", 0, 1, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(cart_errors_name_the_item)
{
    fx f;
    fx_open(&f);
    create(&f, "a", 10, 2);
    create_full(&f, "lim", 10, 2, 2, 3, TTL_DEFAULT); /* max_per_user 2, max_per_request 3 */
    create(&f, "shut", 10, 2);
    set_status(&f, "shut", SLOT_EVENT_CLOSED);
    slot_res r = {0};

    static const char *const unknown[] = {"a", "nope", "zzz"};
    static const uint32_t one3[] = {1, 1, 1};
    cart(&f, "u", "k1", 3, unknown, one3, &r);
    expect_err(&r, SLOT_E_UNKNOWN_EVENT);
    ASSERT_STR_EQ(r.item_event, "nope");

    static const char *const closed[] = {"a", "shut"};
    static const uint32_t one2[] = {1, 1};
    cart(&f, "u", "k2", 2, closed, one2, &r);
    expect_err(&r, SLOT_E_NOT_ON_SALE);
    ASSERT_STR_EQ(r.item_event, "shut");

    static const char *const lim[] = {"a", "lim"};
    static const uint32_t big[] = {1, 4};
    cart(&f, "u", "k3", 2, lim, big, &r);
    expect_err(&r, SLOT_E_INVALID_ARGUMENT); /* over lim's max_per_request */
    ASSERT_STR_EQ(r.item_event, "lim");

    static const uint32_t over[] = {1, 3};
    cart(&f, "u", "k4", 2, lim, over, &r);
    expect_err(&r, SLOT_E_USER_LIMIT);
    ASSERT_STR_EQ(r.item_event, "lim");

    /* max_per_request is decided before not_on_sale, per item in request order. */
    static const char *const order[] = {"shut", "lim"};
    cart(&f, "u", "k5", 2, order, big, &r);
    expect_err(&r, SLOT_E_NOT_ON_SALE);
    ASSERT_STR_EQ(r.item_event, "shut");
    fx_commit(&f);
    expect_counts(&f, "a", 10, 0, 0);
    expect_counts(&f, "lim", 10, 0, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(cart_replay_in_any_order)
{
    fx f;
    fx_open(&f);
    create(&f, "a", 10, 4);
    create(&f, "b", 10, 4);
    static const char *const ab[] = {"a", "b"}, *const ba[] = {"b", "a"};
    static const uint32_t q12[] = {1, 2}, q21[] = {2, 1};
    slot_res r = {0}, again = {0};
    cart(&f, "u", "k", 2, ab, q12, &r);
    expect_err(&r, SLOT_E_OK);
    fx_commit(&f);
    cart(&f, "u", "k", 2, ba, q21, &again);
    expect_err(&again, SLOT_E_OK);
    ASSERT(again.replay);
    ASSERT_EQ(again.ncart, 2);
    ASSERT_STR_EQ(again.cart[0].hold, r.cart[1].hold); /* in the replay's order */
    ASSERT_STR_EQ(again.cart[1].hold, r.cart[0].hold);
    expect_counts(&f, "a", 9, 1, 0);
    expect_counts(&f, "b", 8, 2, 0);
    /* A replay shows the current status: release one, expire the other. */
    slot_res x = {0};
    on(&f, SLOT_OP_RELEASE, "a", r.cart[0].hold, "u", &x);
    ASSERT(x.done);
    f.now += TTL_DEFAULT;
    cart(&f, "u", "k", 2, ab, q12, &again);
    ASSERT(again.replay);
    ASSERT_EQ(again.cart[0].status, SLOT_HOLD_RELEASED);
    ASSERT_EQ(again.cart[1].status, SLOT_HOLD_EXPIRED);
    expect_counts(&f, "b", 10, 0, 0);
    slot_res_clear(&x);
    slot_res_clear(&r);
    slot_res_clear(&again);
    fx_close(&f);
}

TEST_IMPL(cart_key_conflicts)
{
    fx f;
    fx_open(&f);
    create(&f, "a", 10, 4);
    create(&f, "b", 10, 4);
    create(&f, "c", 10, 4);
    static const char *const ab[] = {"a", "b"}, *const abc[] = {"a", "b", "c"}, *const bc[] = {"b", "c"};
    static const char *const cc[] = {"c"};
    static const uint32_t q11[] = {1, 1}, q12[] = {1, 2}, q111[] = {1, 1, 1};
    slot_res r = {0};
    cart(&f, "u", "k", 2, ab, q11, &r);
    expect_err(&r, SLOT_E_OK);
    cart(&f, "u", "k", 2, ab, q12, &r); /* other quantities */
    expect_err(&r, SLOT_E_IDEMPOTENCY_CONFLICT);
    cart(&f, "u", "k", 3, abc, q111, &r); /* more items */
    expect_err(&r, SLOT_E_IDEMPOTENCY_CONFLICT);
    cart(&f, "u", "k", 2, bc, q11, &r); /* shares b */
    expect_err(&r, SLOT_E_IDEMPOTENCY_CONFLICT);
    hold_err(&f, "a", "u", "k", 1, SLOT_E_IDEMPOTENCY_CONFLICT); /* a plain hold with the cart's key */
    hold_ok(&f, "c", "u", "k", 1, NULL);                         /* no event shared: new */
    cart(&f, "u", "k", 1, cc, q11, &r);                          /* the plain hold's key */
    expect_err(&r, SLOT_E_IDEMPOTENCY_CONFLICT);
    cart(&f, "v", "k", 2, ab, q11, &r); /* another user: another key space */
    expect_err(&r, SLOT_E_OK);
    ASSERT(!r.replay);
    /* One cart's holds replayed item by item through the index rebuilt from the holds. */
    fx_commit(&f);
    slot_alloc_close(&f.a);
    ASSERT_EQ(slot_alloc_init(&f.a, f.st), 0);
    cart(&f, "u", "k", 2, ab, q11, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.replay);
    hold_err(&f, "b", "u", "k", 1, SLOT_E_IDEMPOTENCY_CONFLICT);
    expect_counts(&f, "a", 8, 2, 0);
    expect_counts(&f, "b", 8, 2, 0);
    expect_counts(&f, "c", 9, 1, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(cart_holds_are_ordinary_holds)
{
    fx f;
    fx_open(&f);
    create(&f, "a", 4, 2);
    create(&f, "b", 4, 2);
    static const char *const ab[] = {"a", "b"};
    static const uint32_t q[] = {3, 2};
    slot_res r = {0}, x = {0};
    cart(&f, "u", "k", 2, ab, q, &r);
    expect_err(&r, SLOT_E_OK);
    slot_req c = req_on(SLOT_OP_CONFIRM, "a", r.cart[0].hold, "u");
    c.qty = 1;
    c.has |= SLOT_HAS_QTY;
    run(&f, &c, &x);
    expect_err(&x, SLOT_E_OK);
    ASSERT_EQ(x.returned, 2);
    on(&f, SLOT_OP_CANCEL, "b", r.cart[1].hold, NULL, &x);
    ASSERT(x.done);
    expect_counts(&f, "a", 3, 0, 1);
    expect_counts(&f, "b", 4, 0, 0);
    slot_res_clear(&x);
    slot_res_clear(&r);
    fx_close(&f);
}

TEST_IMPL(cart_waiting_event_is_sold_out)
{
    fx f;
    fx_open(&f);
    create(&f, "a", 4, 2);
    slot_req q = req_create("w", 2);
    q.waitlist_max = 5;
    slot_res r = {0};
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    char h[SLOT_HOLD_ID_BYTES + 1];
    hold_ok(&f, "w", "x", "k", 1, h);
    slot_req j = req_hold("w", "y", "j", 2);
    j.op = SLOT_OP_WAITLIST_JOIN;
    run(&f, &j, &r);
    ASSERT_EQ(r.wait_state, SLOT_WAIT_WAITING); /* 1 free, y wants 2 */
    /* One unit is free, but y waits: the cart's item of w is sold_out, and nothing is held. */
    static const char *const aw[] = {"a", "w"};
    static const uint32_t q11[] = {1, 1};
    cart(&f, "u", "k", 2, aw, q11, &r);
    ASSERT(r.sold_out);
    ASSERT_STR_EQ(r.item_event, "w");
    ASSERT_EQ(r.available, 1);
    expect_counts(&f, "a", 4, 0, 0);
    on(&f, SLOT_OP_RELEASE, "w", h, "x", &r); /* the two units go to y */
    expect_counts(&f, "w", 0, 2, 0);
    slot_res_clear(&r);
    fx_close(&f);
}

/* A replay that expires a child's item and its parent's item (docs/protocol.md, "Ticket
 * types": units come back to C and every ancestor once each, in one commit): the parent's
 * held drops by both items, not only by its own (the model's seed 1796130001708083929). */
TEST_IMPL(cart_replay_expires_child_and_parent)
{
    fx f;
    fx_open(&f);
    create(&f, "p", 10, 2);
    slot_req q = req_create("p.c", 10);
    slot_test_set_name(q.parent, &q.parent_len, sizeof q.parent, "p");
    q.has |= SLOT_HAS_PARENT;
    slot_res r = {0};
    run(&f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    slot_res_clear(&r);
    fx_commit(&f);
    static const char *const cp[] = {"p.c", "p"};
    static const uint32_t q22[] = {2, 2};
    cart(&f, "u", "k", 2, cp, q22, &r);
    expect_err(&r, SLOT_E_OK);
    fx_commit(&f);
    expect_counts(&f, "p", 6, 4, 0);
    expect_counts(&f, "p.c", 8, 2, 0);
    f.now += TTL_DEFAULT;
    slot_res again = {0};
    cart(&f, "u", "k", 2, cp, q22, &again);
    expect_err(&again, SLOT_E_OK);
    ASSERT(again.replay);
    ASSERT_EQ(again.cart[0].status, SLOT_HOLD_EXPIRED);
    ASSERT_EQ(again.cart[1].status, SLOT_HOLD_EXPIRED);
    fx_commit(&f);
    expect_counts(&f, "p", 10, 0, 0);
    expect_counts(&f, "p.c", 10, 0, 0);
    slot_res_clear(&r);
    slot_res_clear(&again);
    fx_close(&f);
}
