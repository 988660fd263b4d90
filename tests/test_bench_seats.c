/*
 * test_bench_seats.c — slot-bench's seat map and seat checks (bench/seats.c)
 * on their own: bench/maps/arena.json reads as 20,000 seats in 40 sections,
 * ids go both ways, --named picks stay in one row, and the end-of-run checks
 * catch what they are for: a corrupted ledger (one seat in two holds), a
 * seat_map held seat no hold has, a hold's seat seat_map shows free, a seat a
 * taken answer named that nobody holds; single free seats are counted. And
 * the load's reply parser (bench/drv_slotd_parse.c) reads a seated answer's
 * seats, taken ids and max_adjacent on its fast path and on its slow one.
 * $SLOT_SOURCE_ROOT is the source tree.
 */
#include <stdlib.h>
#include <string.h>

#include "../bench/drv_slotd.h"
#include "../bench/seats.h"
#include "harness.h"

TEST_DECLARE(bench_seats_arena_map)
TEST_DECLARE(bench_seats_corrupted_ledger_fails)
TEST_DECLARE(bench_seats_replies)

TEST_LIST_START
TEST_ENTRY(bench_seats_arena_map)
TEST_ENTRY(bench_seats_corrupted_ledger_fails)
TEST_ENTRY(bench_seats_replies)
TEST_LIST_END

static void load_arena(bench_seats *m)
{
    const char *root = getenv("SLOT_SOURCE_ROOT");
    char path[1024], err[512];
    snprintf(path, sizeof(path), "%s/bench/maps/arena.json", root ? root : ".");
    if (bench_seats_load(path, m, err, sizeof(err)) < 0)
        T_FAIL_("%s", err);
}

TEST_IMPL(bench_seats_arena_map)
{
    bench_seats m;
    load_arena(&m);
    ASSERT_EQ(m.nseats, 20000);
    ASSERT_EQ(m.nsections, 40);
    ASSERT_EQ(m.nrows, 800);
    ASSERT_EQ(m.row_max, 30);
    char id[SLOT_SEAT_ID_BYTES_MAX + 1];
    for (uint32_t s = 0; s < m.nseats; s += 37) {
        size_t n = bench_seats_id(&m, s, id, sizeof(id));
        ASSERT_EQ(bench_seats_find(&m, id, n), (long)s);
    }
    ASSERT_EQ(bench_seats_find(&m, "S101-1-1", 8), 0);
    ASSERT_EQ(bench_seats_find(&m, "S101-1-21", 9), -1); /* row 1 has 20 seats */
    ASSERT_EQ(bench_seats_find(&m, "S999-1-1", 8), -1);
    ASSERT_EQ(bench_seats_find(&m, "S101-11", 7), -1);
    uint64_t r = 12345;
    for (int i = 0; i < 10000; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t qty = 1 + (uint32_t)(r >> 60) % 6, seats[6];
        uint32_t first = bench_seats_pick(&m, qty, r);
        for (uint32_t k = 0; k < qty; k++)
            seats[k] = first + k;
        ASSERT(bench_seats_adjacent(&m, seats, qty));
    }
    uint32_t across[2] = {19, 20}; /* S101-1-20 and S101-2-1 */
    ASSERT(!bench_seats_adjacent(&m, across, 2));
    bench_seats_free(&m);
}

/* Two holds of seats 0..2 and 2..3 (seat 2 twice: the ledger is corrupt), a seat_map built from
 * the first only with seat 10 held by nobody, and seat 30 named in a taken answer. */
TEST_IMPL(bench_seats_corrupted_ledger_fails)
{
    bench_seats m;
    load_arena(&m);
    uint32_t *owner = malloc(m.nseats * sizeof(uint32_t));
    uint8_t *taken = calloc(m.nseats, 1);
    ASSERT(owner && taken);
    for (uint32_t i = 0; i < m.nseats; i++)
        owner[i] = BENCH_SEAT_NOBODY;
    bench_seat_tally t;
    memset(&t, 0, sizeof(t));
    uint32_t a[3] = {0, 1, 2}, b[2] = {2, 3};
    bench_seats_own(&m, owner, 0, a, 3, &t);
    ASSERT_EQ(t.duplicates, 0);
    bench_seats_own(&m, owner, 1, b, 2, &t);
    ASSERT_EQ(t.duplicates, 1);
    ASSERT_EQ(t.owned, 4);
    ASSERT(strstr(t.first, "S101-1-3") != NULL);

    json_t *rows = json_object();
    for (uint32_t i = 0; i < m.nrows; i++) {
        uint32_t len = (uint32_t)(m.rows[i].to - m.rows[i].from + 1u);
        char st[SLOT_SEAT_ROW_SEATS_MAX + 1];
        memset(st, '.', len);
        st[len] = 0;
        if (i == 0) /* S101-1: hhh. (seat 3 of hold 1 shown free) ... h at seat 10 */
            memcpy(st, "hhh.......h", 11);
        json_object_set_new(rows, m.rows[i].name, json_string(st));
    }
    taken[30] = 1;
    memset(&t, 0, sizeof(t));
    bench_seats_compare(&m, owner, taken, rows, &t);
    ASSERT_EQ(t.held_not_owned, 1);
    ASSERT_EQ(t.owned_not_held, 1);
    ASSERT_EQ(t.taken_not_held, 1);
    ASSERT_EQ(t.bad_rows, 0);
    ASSERT_EQ(t.map_held, 4);
    ASSERT_EQ(t.map_free, m.nseats - 4);
    ASSERT_EQ(t.singles, 0);
    ASSERT_EQ(t.longest_free, 30);
    json_object_set_new(rows, "S101-2", json_string("h.h.................")); /* row 2: 20 seats, one single */
    memset(&t, 0, sizeof(t));
    bench_seats_compare(&m, owner, NULL, rows, &t);
    ASSERT_EQ(t.singles, 1);
    ASSERT_EQ(t.held_not_owned, 3);
    json_object_del(rows, "S140-20");
    memset(&t, 0, sizeof(t));
    bench_seats_compare(&m, owner, NULL, rows, &t);
    ASSERT_EQ(t.bad_rows, 2); /* the row missing, and the count of rows */
    json_decref(rows);
    free(owner);
    free(taken);
    bench_seats_free(&m);
}

/* Reply lines of the shapes slotd sends (docs/protocol.md, "Seated events"): a held answer with
 * its seats, a taken answer, a sold_out with max_adjacent; the same seats with an escaped id
 * (the slow path); more ids than the bench keeps (seats_cut); a bad member. */
TEST_IMPL(bench_seats_replies)
{
    static bench_result r;
    const char *held = "{\"ok\":true,\"status\":\"held\",\"hold\":\"00000000000000a1x\",\"qty\":3,"
                       "\"expires_at\":1764800000000,\"seats\":[\"S101-4-7\",\"S101-4-8\",\"S101-4-9\"]}";
    ASSERT_EQ(bench_parse_slotd_reply(held, strlen(held), &r), 0);
    ASSERT(r.ok && r.has_status && r.status == SLOT_HOLD_HELD && r.qty == 3 && !r.seats_cut);
    ASSERT_EQ(r.nseats, 3);
    ASSERT(strcmp(r.seat_text + r.seat_off[0], "S101-4-7") == 0);
    ASSERT(strcmp(r.seat_text + r.seat_off[2], "S101-4-9") == 0);
    ASSERT_EQ(r.hold_len, 17);

    const char *taken = "{\"ok\":true,\"status\":\"taken\",\"taken\":[\"A-1-2\"]}";
    ASSERT_EQ(bench_parse_slotd_reply(taken, strlen(taken), &r), 0);
    ASSERT(r.ok && r.taken && !r.sold_out);
    ASSERT_EQ(r.nseats, 1);
    ASSERT(strcmp(r.seat_text + r.seat_off[0], "A-1-2") == 0);

    const char *sold = "{\"ok\":true,\"status\":\"sold_out\",\"available\":12,\"max_adjacent\":1}";
    ASSERT_EQ(bench_parse_slotd_reply(sold, strlen(sold), &r), 0);
    ASSERT(r.sold_out && r.has_max_adjacent && r.max_adjacent == 1 && r.available == 12 && r.nseats == 0);

    const char *escaped = "{\"ok\":true,\"status\":\"held\",\"hold\":\"h1\",\"qty\":2,"
                          "\"seats\":[\"A-1-\\u0031\",\"A-1-2\"]}";
    ASSERT_EQ(bench_parse_slotd_reply(escaped, strlen(escaped), &r), 0);
    ASSERT_EQ(r.nseats, 2);
    ASSERT(strcmp(r.seat_text + r.seat_off[0], "A-1-1") == 0);

    char many[2048];
    size_t n = (size_t)snprintf(many, sizeof(many),
                                "{\"ok\":true,\"status\":\"held\",\"hold\":\"h2\",\"qty\":20,\"seats\":[");
    for (int i = 1; i <= 20; i++)
        n += (size_t)snprintf(many + n, sizeof(many) - n, "%s\"B-2-%d\"", i > 1 ? "," : "", i);
    n += (size_t)snprintf(many + n, sizeof(many) - n, "]}");
    ASSERT_EQ(bench_parse_slotd_reply(many, n, &r), 0);
    ASSERT(r.seats_cut);
    ASSERT_EQ(r.nseats, BENCH_SEAT_QTY_MAX);

    const char *bad = "{\"ok\":true,\"status\":\"held\",\"hold\":\"h3\",\"qty\":1,\"seats\":[7]}";
    ASSERT_EQ(bench_parse_slotd_reply(bad, strlen(bad), &r), -1);
}
