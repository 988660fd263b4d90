/*
 * test_seats.c — seated events on the allocator (docs/protocol.md, "Seated
 * events"), with real LMDB transactions and the clock in the test's hands:
 *
 * seats_model: a reference of every seat's state, checked against seat_map
 *   after every batch, under random named holds (all or none; "taken" lists
 *   exactly the seats the reference has taken, in request order), adjacent
 *   holds (one row, consecutive, free; within the shard of the row chosen, the
 *   first choice in row then seat order that leaves no single free seat, else
 *   the shard's first choice: the orphan rule), best-available holds, releases,
 *   expiries, partial confirms naming the seats kept, and reshards. A
 *   sold_out is checked against the reference: no run of qty free seats
 *   anywhere (the fallback over shards), available and max_adjacent exact.
 *   check is clean after every batch. Fixed seeds.
 *   SLOT_SEATS_SEEDS=N runs seeds 1..N instead.
 * seats_bad_input: bad seat maps and bad seat fields answer invalid_argument
 *   and change nothing (the store's digest is the same before and after).
 * seats_summary_doctored: a shard's row summary written wrong through the
 *   store (one entry's longest run, then a short record) is found by check's
 *   seat invariant (invariant 9), and a correct one put back is clean.
 * seats_summary_absent: the model run with every row summary deleted after
 *   create_event and after every batch (a store from before the summary):
 *   the same choices as the reference, check clean, and the summaries the
 *   write path rebuilds equal to the rows.
 * seats_summary_placed: placement's export of a seated event (confirmed
 *   seats) carries its summaries ('P' keys) and, applied to another store,
 *   gives the same bytes, a clean check and adjacent holds that sell; a
 *   reshard to one shard leaves one summary of every row, the others deleted.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_fixture.h"
#include "slot/proto.h"

TEST_DECLARE(seats_model)
TEST_DECLARE(seats_bad_input)
TEST_DECLARE(seats_summary_doctored)
TEST_DECLARE(seats_summary_absent)
TEST_DECLARE(seats_summary_placed)

TEST_LIST_START
TEST_ENTRY(seats_model)
TEST_ENTRY(seats_bad_input)
TEST_ENTRY(seats_summary_doctored)
TEST_ENTRY(seats_summary_absent)
TEST_ENTRY(seats_summary_placed)
TEST_LIST_END

#define NROWS 9
#define MAXLEN 14
#define SHARDS0 3
#define TTL 5000
#define STEPS 3000
#define BATCH 7

static const int row_len[NROWS] = {6, 9, 14, 4, 11, 8, 13, 5, 10};
static const char *const row_sec[NROWS] = {"A", "A", "A", "B", "B", "B", "C", "C", "C"};
static const char *const row_name[NROWS] = {"1", "2", "3", "1", "2", "3", "1", "2", "3"};

/* The reference: a state a seat ('.' free, 'h' held, 'c' confirmed), and the holds. */
typedef struct mhold {
    char id[SLOT_HOLD_ID_BYTES + 1];
    int n, row[8], num[8]; /* num from 1 */
    char st;               /* 'h', 'c', or 0 when over */
    uint64_t expires;
} mhold;

typedef struct model {
    char st[NROWS][MAXLEN + 1];
    mhold holds[STEPS];
    int nholds;
    uint32_t shards;
} model;

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

/* Parses the request line (as the server does) and runs it; the seat map's heap is freed. */
static void jrun(fx *f, const char *line, slot_res *r)
{
    static slot_req q;
    char msg[256];
    slot_err err = slot_proto_parse(line, strlen(line), &q, msg, sizeof msg);
    if (err != SLOT_E_OK) {
        slot_res_clear(r);
        slot_res_error(r, err, "%s", msg);
        return;
    }
    run(f, &q, r);
    slot_req_clear(&q);
}

/* The reply's extra members as a JSON object (caller decrefs). */
static json_t *extra_of(const slot_res *r)
{
    char *buf = malloc(r->extra_len + 3);
    ASSERT(buf != NULL);
    snprintf(buf, r->extra_len + 3, "{%s}", r->extra ? r->extra : "");
    json_t *o = json_loads(buf, 0, NULL);
    free(buf);
    ASSERT(o != NULL);
    return o;
}

static void seat_of(const char *id, int *row, int *num)
{
    char sec[8], rn[8];
    ASSERT(sscanf(id, "%7[A-Z]-%7[0-9]-%d", sec, rn, num) == 3);
    for (int i = 0; i < NROWS; i++)
        if (strcmp(row_sec[i], sec) == 0 && strcmp(row_name[i], rn) == 0)
            *row = i;
}

static void create_map(fx *f, const char *ev)
{
    char line[4096];
    int n = snprintf(line, sizeof line, "{\"op\":\"create_event\",\"event\":\"%s\",\"shards\":%d,\"hold_ttl_ms\":%d,"
                                        "\"max_per_request\":20,\"seats\":{\"sections\":[", ev, SHARDS0, TTL);
    for (int i = 0; i < NROWS; i++) {
        bool first_of_sec = i == 0 || strcmp(row_sec[i - 1], row_sec[i]) != 0;
        bool last_of_sec = i == NROWS - 1 || strcmp(row_sec[i + 1], row_sec[i]) != 0;
        if (first_of_sec)
            n += snprintf(line + n, sizeof line - n, "%s{\"name\":\"%s\",\"rows\":[", i ? "," : "", row_sec[i]);
        else
            n += snprintf(line + n, sizeof line - n, ",");
        n += snprintf(line + n, sizeof line - n, "{\"name\":\"%s\",\"from\":1,\"to\":%d,\"category\":\"%s\"}",
                      row_name[i], row_len[i], i < 6 ? "stalls" : "balcony");
        if (last_of_sec)
            n += snprintf(line + n, sizeof line - n, "]}");
    }
    snprintf(line + n, sizeof line - n, "]}}");
    slot_res r = {0};
    jrun(f, line, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_U64_EQ(r.view.capacity, 80);
    slot_res_clear(&r);
}

/* seat_map equals the reference, and check is clean. */
static void compare(fx *f, const model *m)
{
    slot_res r = {0};
    jrun(f, "{\"op\":\"seat_map\",\"event\":\"show\"}", &r);
    expect_err(&r, SLOT_E_OK);
    json_t *o = extra_of(&r), *rows = json_object_get(o, "rows");
    for (int i = 0; i < NROWS; i++) {
        char key[16];
        snprintf(key, sizeof key, "%s-%s", row_sec[i], row_name[i]);
        const char *got = json_string_value(json_object_get(rows, key));
        ASSERT(got != NULL);
        if (strcmp(got, m->st[i]) != 0)
            T_FAIL_("row %s: server %s, reference %s", key, got, m->st[i]);
    }
    json_decref(o);
    slot_res_clear(&r);
    check_clean_on(f, fx_txn(f));
}

/* The reference's first qty-run of row i that leaves no single free seat
 * (clean), and its first qty-run of all; -1 when none. */
static void runs_of(const model *m, int i, int qty, int *clean, int *first)
{
    *clean = *first = -1;
    int n = row_len[i];
    for (int a = 0; a < n;) {
        if (m->st[i][a] != '.') {
            a++;
            continue;
        }
        int b = a;
        while (b + 1 < n && m->st[i][b + 1] == '.')
            b++;
        for (int p = a; p + qty <= b + 1; p++) {
            if (*first < 0)
                *first = p;
            if (*clean < 0 && p - a != 1 && b - (p + qty - 1) != 1)
                *clean = p;
        }
        a = b + 1;
    }
}

static void seats_into(model *m, mhold *h, json_t *seats, char st)
{
    h->n = (int)json_array_size(seats);
    for (int k = 0; k < h->n; k++) {
        seat_of(json_string_value(json_array_get(seats, (size_t)k)), &h->row[k], &h->num[k]);
        m->st[h->row[k]][h->num[k] - 1] = st;
    }
}

static void step_named(fx *f, model *m, int step)
{
    int n = 1 + (int)rnd(3), row[3], num[3];
    for (int k = 0; k < n; k++) {
        bool dup;
        do {
            row[k] = (int)rnd(NROWS);
            num[k] = 1 + (int)rnd((uint32_t)row_len[row[k]]);
            dup = false;
            for (int j = 0; j < k; j++)
                dup = dup || (row[j] == row[k] && num[j] == num[k]);
        } while (dup);
    }
    char line[512], want_taken[256] = "";
    int len = snprintf(line, sizeof line, "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u%d\",\"request\":\"r%d\","
                                          "\"seats\":[", step % 5, step);
    bool all_free = true;
    for (int k = 0; k < n; k++) {
        len += snprintf(line + len, sizeof line - len, "%s\"%s-%s-%d\"", k ? "," : "", row_sec[row[k]],
                        row_name[row[k]], num[k]);
        if (m->st[row[k]][num[k] - 1] != '.') {
            all_free = false;
            snprintf(want_taken + strlen(want_taken), sizeof want_taken - strlen(want_taken), "%s-%s-%d,",
                     row_sec[row[k]], row_name[row[k]], num[k]);
        }
    }
    snprintf(line + len, sizeof line - len, "]}");
    slot_res r = {0};
    jrun(f, line, &r);
    expect_err(&r, SLOT_E_OK);
    json_t *o = extra_of(&r);
    if (!all_free) {
        ASSERT(r.taken);
        char got[256] = "";
        json_t *t = json_object_get(o, "taken");
        for (size_t k = 0; k < json_array_size(t); k++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s,", json_string_value(json_array_get(t, k)));
        ASSERT_STR_EQ(got, want_taken);
    } else {
        ASSERT(!r.taken && !r.sold_out);
        mhold *h = &m->holds[m->nholds++];
        memcpy(h->id, r.hold, sizeof h->id);
        h->st = 'h';
        h->expires = r.expires_at_ms;
        seats_into(m, h, json_object_get(o, "seats"), 'h');
        for (int k = 0; k < n; k++) /* the very seats, in request order */
            ASSERT(h->row[k] == row[k] && h->num[k] == num[k]);
    }
    json_decref(o);
    slot_res_clear(&r);
}

static void expect_sold_out(const model *m, const slot_res *r, int qty, bool adjacent)
{
    uint64_t avail = 0, longest = 0;
    for (int i = 0; i < NROWS; i++) {
        int clean, first, run = 0;
        runs_of(m, i, qty, &clean, &first);
        if (adjacent && first >= 0)
            T_FAIL_("sold_out for %d adjacent, but row %d has a run at %d (the fallback over shards)", qty, i, first);
        for (int k = 0; k < row_len[i]; k++) {
            run = m->st[i][k] == '.' ? run + 1 : 0;
            avail += m->st[i][k] == '.';
            if ((uint64_t)run > longest)
                longest = (uint64_t)run;
        }
    }
    if (!adjacent)
        ASSERT(avail < (uint64_t)qty);
    ASSERT_U64_EQ(r->available, avail);
    ASSERT(r->seated);
    ASSERT_U64_EQ(r->max_adjacent, longest);
}

static void step_pick(fx *f, model *m, int step, bool adjacent)
{
    int qty = 1 + (int)rnd(adjacent ? 5 : 7);
    char line[256];
    snprintf(line, sizeof line, "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u%d\",\"request\":\"r%d\",\"qty\":%d%s}",
             step % 5, step, qty, adjacent ? ",\"adjacent\":true" : "");
    slot_res r = {0};
    jrun(f, line, &r);
    expect_err(&r, SLOT_E_OK);
    if (r.sold_out) {
        expect_sold_out(m, &r, qty, adjacent);
        slot_res_clear(&r);
        return;
    }
    json_t *o = extra_of(&r), *seats = json_object_get(o, "seats");
    ASSERT_EQ((int)json_array_size(seats), qty);
    mhold *h = &m->holds[m->nholds++];
    memcpy(h->id, r.hold, sizeof h->id);
    h->st = 'h';
    h->expires = r.expires_at_ms;
    h->n = qty;
    for (int k = 0; k < qty; k++) {
        seat_of(json_string_value(json_array_get(seats, (size_t)k)), &h->row[k], &h->num[k]);
        if (m->st[h->row[k]][h->num[k] - 1] != '.')
            T_FAIL_("step %d: seat %d of row %d given but the reference has it '%c'", step, h->num[k], h->row[k],
                    m->st[h->row[k]][h->num[k] - 1]);
    }
    if (adjacent) {
        int row = h->row[0];
        for (int k = 1; k < qty; k++)
            ASSERT(h->row[k] == row && h->num[k] == h->num[0] + k);
        /* the orphan rule within the chosen row's shard: its first clean choice in row then seat order, else its first */
        int want_row = -1, want_at = -1, any_row = -1, any_at = -1;
        for (int i = row % (int)m->shards; i < NROWS; i += (int)m->shards) {
            int clean, first;
            runs_of(m, i, qty, &clean, &first);
            if (want_row < 0 && clean >= 0) {
                want_row = i;
                want_at = clean;
            }
            if (any_row < 0 && first >= 0) {
                any_row = i;
                any_at = first;
            }
        }
        if (want_row < 0) {
            want_row = any_row;
            want_at = any_at;
        }
        if (row != want_row || h->num[0] - 1 != want_at)
            T_FAIL_("step %d: %d adjacent at row %d seat %d; the orphan rule picks row %d seat %d", step, qty, row,
                    h->num[0], want_row, want_at + 1);
    }
    for (int k = 0; k < qty; k++)
        m->st[h->row[k]][h->num[k] - 1] = 'h';
    json_decref(o);
    slot_res_clear(&r);
}

static mhold *some_held(model *m)
{
    int n = 0;
    for (int i = 0; i < m->nholds; i++)
        n += m->holds[i].st == 'h';
    if (n == 0)
        return NULL;
    int k = (int)rnd((uint32_t)n);
    for (int i = 0; i < m->nholds; i++)
        if (m->holds[i].st == 'h' && k-- == 0)
            return &m->holds[i];
    return NULL;
}

static void free_hold(model *m, mhold *h)
{
    for (int k = 0; k < h->n; k++)
        m->st[h->row[k]][h->num[k] - 1] = '.';
    h->st = 0;
}

static void step_release(fx *f, model *m)
{
    mhold *h = some_held(m);
    if (!h)
        return;
    char line[256];
    snprintf(line, sizeof line, "{\"op\":\"release\",\"event\":\"show\",\"hold\":\"%s\",\"user\":\"any\"}", h->id);
    slot_res r = {0};
    slot_req q = req_on(SLOT_OP_RELEASE, "show", h->id, NULL);
    q.user_len = 0;
    slot_hold_rec rec;
    hold_rec(f, "show", h->id, &rec);
    slot_test_set_name(q.user, &q.user_len, sizeof q.user, rec.user);
    run(f, &q, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT(r.done);
    free_hold(m, h);
    slot_res_clear(&r);
}

static void step_partial(fx *f, model *m)
{
    mhold *h = some_held(m);
    if (!h || h->n < 2)
        return;
    int keep = 1 + (int)rnd((uint32_t)h->n - 1); /* keep the seats of odd index first, then others: a subset */
    bool kept[8] = {false};
    char line[512], ids[256] = "";
    int step = h->n % 3 == 0 ? 1 : 3; /* coprime with n, so every index comes round */
    for (int k = 0, got = 0; got < keep; k = (k + step) % h->n)
        if (!kept[k]) {
            kept[k] = true;
            got++;
            snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s\"%s-%s-%d\"", got > 1 ? "," : "",
                     row_sec[h->row[k]], row_name[h->row[k]], h->num[k]);
        }
    slot_hold_rec rec;
    hold_rec(f, "show", h->id, &rec);
    snprintf(line, sizeof line, "{\"op\":\"confirm\",\"event\":\"show\",\"hold\":\"%s\",\"user\":\"%s\",\"seats\":[%s]}",
             h->id, rec.user, ids);
    slot_res r = {0};
    jrun(f, line, &r);
    expect_err(&r, SLOT_E_OK);
    ASSERT_EQ(r.qty, (uint32_t)keep);
    ASSERT_EQ(r.returned, (uint32_t)(h->n - keep));
    json_t *o = extra_of(&r), *seats = json_object_get(o, "seats");
    ASSERT_EQ((int)json_array_size(seats), keep);
    int at = 0;
    for (int k = 0; k < h->n; k++) { /* kept seats in the hold's order */
        if (kept[k]) {
            int row, num;
            seat_of(json_string_value(json_array_get(seats, (size_t)at++)), &row, &num);
            ASSERT(row == h->row[k] && num == h->num[k]);
            m->st[h->row[k]][h->num[k] - 1] = 'c';
        } else {
            m->st[h->row[k]][h->num[k] - 1] = '.';
        }
    }
    h->st = 'c';
    json_decref(o);
    slot_res_clear(&r);
}

static void step_expire(fx *f, model *m)
{
    f->now += TTL / 2 + rnd(TTL);
    slot_res r = {0};
    jrun(f, "{\"op\":\"expire\"}", &r);
    expect_err(&r, SLOT_E_OK);
    uint64_t n = 0;
    for (int i = 0; i < m->nholds; i++)
        if (m->holds[i].st == 'h' && m->holds[i].expires <= f->now) {
            free_hold(m, &m->holds[i]);
            n++;
        }
    ASSERT_U64_EQ(r.expired, n);
    slot_res_clear(&r);
}

static void step_reshard(fx *f, model *m)
{
    m->shards = 1 + rnd(4);
    char line[128];
    snprintf(line, sizeof line, "{\"op\":\"reshard\",\"event\":\"show\",\"shards\":%u}", m->shards);
    slot_res r = {0};
    jrun(f, line, &r);
    expect_err(&r, SLOT_E_OK);
    slot_res_clear(&r);
}

/* Deletes every row summary of "show" (shards 1..4 of at most 9 rows: block 0 of each). */
static void drop_summaries(fx *f)
{
    for (uint32_t s = 0; s < 4; s++) {
        uint8_t sub[4] = {0, (uint8_t)s, 0, 0};
        int rc = slot_store_seat_del(f->st, fx_txn(f), "show", 4, 'P', sub, 4);
        ASSERT(rc == 0 || rc == MDB_NOTFOUND);
    }
}

static void model_run(uint64_t seed, bool drop)
{
    fx f;
    fx_open(&f);
    slot_alloc_seed(&f.a, seed);
    rng_state = seed * 2654435761u + 1;
    static model m;
    memset(&m, 0, sizeof m);
    m.shards = SHARDS0;
    for (int i = 0; i < NROWS; i++)
        memset(m.st[i], '.', (size_t)row_len[i]);
    create_map(&f, "show");
    if (drop)
        drop_summaries(&f);
    fx_commit(&f);
    for (int step = 0; step < STEPS; step++) {
        uint32_t k = rnd(100);
        if (k < 30)
            step_named(&f, &m, step);
        else if (k < 55)
            step_pick(&f, &m, step, true);
        else if (k < 65)
            step_pick(&f, &m, step, false);
        else if (k < 80)
            step_release(&f, &m);
        else if (k < 88)
            step_partial(&f, &m);
        else if (k < 97)
            step_expire(&f, &m);
        else
            step_reshard(&f, &m);
        if (step % BATCH == BATCH - 1) {
            compare(&f, &m);
            if (drop && step % (2 * BATCH) == BATCH - 1)
                drop_summaries(&f); /* every other batch starts without them */
            fx_commit(&f);
        }
    }
    compare(&f, &m);
    fx_commit(&f);
    fx_close(&f);
}

TEST_IMPL(seats_model)
{
    static const uint64_t seeds[] = {1, 2, 3, 4, 5, 6, 7, 8};
    const char *env = getenv("SLOT_SEATS_SEEDS");
    if (env && atoi(env) > 0) {
        for (uint64_t seed = 1; seed <= (uint64_t)atoi(env); seed++)
            model_run(seed, false);
        return;
    }
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        model_run(seeds[i], false);
}

TEST_IMPL(seats_summary_absent)
{
    for (uint64_t seed = 11; seed <= 13; seed++)
        model_run(seed, true);
}

/* check's violations of invariant 9 on f's write txn (0 when clean); the first detail into detail. */
static uint32_t seat_violations(fx *f, char *detail, size_t len)
{
    slot_res r = {0};
    ASSERT_EQ(slot_check(f->a.store, fx_txn(f), NULL, 0, &r), 0);
    ASSERT_EQ(r.err, SLOT_E_OK);
    uint32_t n = 0;
    detail[0] = 0;
    for (uint32_t i = 0; i < r.nviolations && i < SLOT_CHECK_VIOLATIONS_MAX; i++) {
        if (r.violations[i].invariant == 9 && n++ == 0)
            snprintf(detail, len, "%s", r.violations[i].detail);
    }
    slot_res_clear(&r);
    return n;
}

TEST_IMPL(seats_summary_doctored)
{
    fx f;
    fx_open(&f);
    create_map(&f, "show");
    slot_res r = {0};
    jrun(&f, "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"d1\",\"qty\":3,\"adjacent\":true}", &r);
    expect_err(&r, SLOT_E_OK);
    slot_res_clear(&r);
    fx_commit(&f);
    /* shard 0 (rows 0, 3, 6): its record, then row 3's entry (the second) with a longest run of 1 */
    uint8_t sub[4] = {0, 0, 0, 0}, raw[64], good[64];
    size_t len = 0;
    ASSERT_EQ(slot_store_seat_get(f.st, fx_txn(&f), "show", 4, 'P', sub, 4, raw, sizeof raw, &len), 0);
    ASSERT_EQ(len, 9 + 3 * 7);
    memcpy(good, raw, len);
    char detail[200];
    ASSERT_EQ(seat_violations(&f, detail, sizeof detail), 0);
    size_t at = 9 + 7 + 2; /* entry 1's longest */
    ASSERT(raw[at] == 0 && raw[at + 1] == 4); /* row B-1: 4 seats, all free */
    raw[at + 1] = 1;
    ASSERT_EQ(slot_store_seat_put(f.st, fx_txn(&f), "show", 4, 'P', sub, 4, raw, len), 0);
    ASSERT(seat_violations(&f, detail, sizeof detail) >= 1);
    fprintf(stderr, "  doctored entry: %s\n", detail);
    ASSERT(strstr(detail, "row B-1: summary") != NULL);
    /* a short record (one entry missing) */
    ASSERT_EQ(slot_store_seat_put(f.st, fx_txn(&f), "show", 4, 'P', sub, 4, good, len - 7), 0);
    ASSERT(seat_violations(&f, detail, sizeof detail) >= 1);
    fprintf(stderr, "  short record: %s\n", detail);
    ASSERT(strstr(detail, "row summary") != NULL);
    /* the right one back: clean */
    ASSERT_EQ(slot_store_seat_put(f.st, fx_txn(&f), "show", 4, 'P', sub, 4, good, len), 0);
    ASSERT_EQ(seat_violations(&f, detail, sizeof detail), 0);
    fx_commit(&f);
    fx_close(&f);
}

static void digest_of(fx *f, char out[SLOT_DIGEST_HEX_BYTES + 1])
{
    uint64_t seq;
    ASSERT_EQ(slot_store_digest(f->st, fx_txn(f), &seq, out), 0);
}

TEST_IMPL(seats_bad_input)
{
    fx f;
    fx_open(&f);
    create_map(&f, "show");
    create_map(&f, "other");
    create(&f, "plain", 10, 2);
    fx_commit(&f);
    static const char *const bad[] = {
        /* seat ids */
        "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b1\",\"seats\":[\"A-1-99\"]}",
        "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b1\",\"seats\":[\"Z-1-1\"]}",
        "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b1\",\"seats\":[\"A-1\"]}",
        "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b1\",\"seats\":[\"A-1-01\"]}",
        "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b1\",\"seats\":[\"A-1-2\",\"A-1-2\"]}",
        "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b1\",\"seats\":[]}",
        "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b1\",\"seats\":[\"A-1-2\"],\"qty\":2}",
        "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b1\",\"seats\":[\"A-1-2\"],\"adjacent\":true}",
        "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b1\",\"seats\":[\"A-1-2\"],\"category\":\"stalls\"}",
        "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b1\",\"seats\":[\"A-1-2\"],\"section\":\"A\"}",
        "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b1\",\"qty\":15,\"adjacent\":true}",
        "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b1\",\"qty\":2,\"category\":\"nope\"}",
        "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b1\",\"qty\":2,\"section\":\"Q\"}",
        "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b1\",\"qty\":2,\"adjacent\":1}",
        /* seat fields on an unseated event, seat_map of one, set_capacity of a seated one */
        "{\"op\":\"hold\",\"event\":\"plain\",\"user\":\"u\",\"request\":\"b1\",\"seats\":[\"A-1-2\"]}",
        "{\"op\":\"hold\",\"event\":\"plain\",\"user\":\"u\",\"request\":\"b1\",\"qty\":2,\"adjacent\":true}",
        "{\"op\":\"hold\",\"event\":\"plain\",\"user\":\"u\",\"request\":\"b1\",\"qty\":2,\"category\":\"x\"}",
        "{\"op\":\"seat_map\",\"event\":\"plain\"}",
        "{\"op\":\"set_capacity\",\"event\":\"show\",\"capacity\":10}",
        "{\"op\":\"create_event\",\"event\":\"kid\",\"capacity\":5,\"parent\":\"show\"}",
        /* bad seat maps */
        "{\"op\":\"create_event\",\"event\":\"m\",\"seats\":{\"sections\":[{\"name\":\"A\",\"rows\":[{\"name\":\"1\","
        "\"from\":1,\"to\":5},{\"name\":\"1\",\"from\":6,\"to\":9}]}]}}",
        "{\"op\":\"create_event\",\"event\":\"m\",\"seats\":{\"sections\":[{\"name\":\"A\",\"rows\":[{\"name\":\"1\","
        "\"from\":1,\"to\":5}]},{\"name\":\"A\",\"rows\":[{\"name\":\"2\",\"from\":1,\"to\":5}]}]}}",
        "{\"op\":\"create_event\",\"event\":\"m\",\"seats\":{\"sections\":[{\"name\":\"A\",\"rows\":[{\"name\":\"1\","
        "\"from\":5,\"to\":4}]}]}}",
        "{\"op\":\"create_event\",\"event\":\"m\",\"seats\":{\"sections\":[{\"name\":\"A-B\",\"rows\":[{\"name\":\"1\","
        "\"from\":1,\"to\":4}]}]}}",
        "{\"op\":\"create_event\",\"event\":\"m\",\"seats\":{\"sections\":[{\"name\":\"A\",\"rows\":[{\"name\":"
        "\"12345678901234567\",\"from\":1,\"to\":4}]}]}}",
        "{\"op\":\"create_event\",\"event\":\"m\",\"capacity\":5,\"seats\":{\"sections\":[{\"name\":\"A\",\"rows\":[{"
        "\"name\":\"1\",\"from\":1,\"to\":4}]}]}}",
        "{\"op\":\"create_event\",\"event\":\"m\",\"seats\":{\"sections\":[]}}",
        "{\"op\":\"create_event\",\"event\":\"m\",\"seats\":{\"sections\":[{\"name\":\"A\",\"rows\":[{\"name\":\"1\","
        "\"from\":1,\"to\":4,\"category\":\"\"}]}]}}",
    };
    char before[SLOT_DIGEST_HEX_BYTES + 1], after[SLOT_DIGEST_HEX_BYTES + 1];
    digest_of(&f, before);
    slot_res r = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        jrun(&f, bad[i], &r);
        if (r.err != SLOT_E_INVALID_ARGUMENT)
            T_FAIL_("case %zu: %s, want invalid_argument: %s", i, slot_err_name(r.err), bad[i]);
        ASSERT(r.message[0] != 0);
    }
    /* a map over SLOT_SEATS_MAX seats: 245 rows of 4096 */
    size_t cap = 1u << 16, n = 0;
    char *big = malloc(cap);
    ASSERT(big != NULL);
    n += (size_t)snprintf(big + n, cap - n, "{\"op\":\"create_event\",\"event\":\"m\",\"seats\":{\"sections\":[{\"name\":"
                                            "\"A\",\"rows\":[");
    for (int i = 0; i < 245; i++)
        n += (size_t)snprintf(big + n, cap - n, "%s{\"name\":\"%d\",\"from\":1,\"to\":4096}", i ? "," : "", i);
    snprintf(big + n, cap - n, "]}]}}");
    jrun(&f, big, &r);
    expect_err(&r, SLOT_E_INVALID_ARGUMENT);
    ASSERT(strstr(r.message, "1000000") != NULL);
    free(big);
    fx_commit(&f);
    digest_of(&f, after);
    ASSERT_STR_EQ(after, before); /* nothing changed */
    /* ids of another event are looked up in the event held: a row the other has, a number it lacks */
    jrun(&f, "{\"op\":\"hold\",\"event\":\"other\",\"user\":\"u\",\"request\":\"b1\",\"seats\":[\"A-1-2\"]}", &r);
    expect_err(&r, SLOT_E_OK);
    jrun(&f, "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"b2\",\"seats\":[\"A-1-2\"]}", &r);
    expect_err(&r, SLOT_E_OK); /* the same id on another event is another seat: free here */
    ASSERT(!r.taken);
    slot_res_clear(&r);
    fx_commit(&f);
    fx_close(&f);
}

TEST_IMPL(seats_summary_placed)
{
    fx f, g;
    fx_open(&f);
    fx_open(&g);
    create_map(&f, "show");
    slot_res r = {0};
    jrun(&f, "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"u\",\"request\":\"p1\",\"qty\":4,\"adjacent\":true}", &r);
    expect_err(&r, SLOT_E_OK);
    char line[256];
    snprintf(line, sizeof line, "{\"op\":\"confirm\",\"event\":\"show\",\"hold\":\"%s\",\"user\":\"u\"}", r.hold);
    jrun(&f, line, &r);
    expect_err(&r, SLOT_E_OK);
    slot_res_clear(&r);
    fx_commit(&f);
    uint8_t *chunk = malloc(SLOT_PLACE_CHUNK_BYTES), cur[SLOT_PLACE_CURSOR_BYTES], next[SLOT_PLACE_CURSOR_BYTES];
    ASSERT(chunk != NULL);
    size_t cur_len = 0, next_len = 0, used = 0;
    uint32_t count = 0, applied = 0, sums = 0;
    do {
        ASSERT_EQ(slot_store_place_export(f.st, fx_txn(&f), "show", 4, cur, cur_len, chunk, SLOT_PLACE_CHUNK_BYTES,
                                          &used, &count, next, &next_len),
                  0);
        for (size_t at = 0; at < used;) { /* u8 db, u16 klen, key, u32 vlen, value; key = u8 4 "show" type ... */
            size_t klen = (size_t)chunk[at + 1] << 8 | chunk[at + 2];
            const uint8_t *k = chunk + at + 3;
            size_t vlen = (size_t)k[klen] << 24 | (size_t)k[klen + 1] << 16 | (size_t)k[klen + 2] << 8 | k[klen + 3];
            if (klen == 1 + 4 + 1 + 4 && memcmp(k + 1, "show", 4) == 0 && k[5] == 'P')
                sums++;
            at += 3 + klen + 4 + vlen;
        }
        ASSERT_EQ(slot_store_place_apply(g.st, fx_txn(&g), "show", 4, chunk, used, &applied), 0);
        ASSERT_EQ(applied, count);
        memcpy(cur, next, next_len);
        cur_len = next_len;
    } while (next_len > 0);
    free(chunk);
    ASSERT_EQ(sums, SHARDS0); /* one block a shard */
    fx_commit(&g);
    for (uint8_t s = 0; s < SHARDS0; s++) {
        uint8_t sub[4] = {0, s, 0, 0}, a[64], b[64];
        size_t alen = 0, blen = 0;
        ASSERT_EQ(slot_store_seat_get(f.st, fx_txn(&f), "show", 4, 'P', sub, 4, a, sizeof a, &alen), 0);
        ASSERT_EQ(slot_store_seat_get(g.st, fx_txn(&g), "show", 4, 'P', sub, 4, b, sizeof b, &blen), 0);
        ASSERT(alen == blen && memcmp(a, b, alen) == 0);
    }
    for (int i = 0; i < 6; i++) {
        snprintf(line, sizeof line,
                 "{\"op\":\"hold\",\"event\":\"show\",\"user\":\"v%d\",\"request\":\"q%d\",\"qty\":3,\"adjacent\":true}", i, i);
        jrun(&g, line, &r);
        expect_err(&r, SLOT_E_OK);
        ASSERT(!r.sold_out);
        slot_res_clear(&r);
    }
    fx_commit(&g);
    /* a reshard to one shard: its one summary has all 9 rows, the old shards' are gone */
    jrun(&g, "{\"op\":\"reshard\",\"event\":\"show\",\"shards\":1}", &r);
    expect_err(&r, SLOT_E_OK);
    slot_res_clear(&r);
    uint8_t buf[128];
    size_t blen = 0;
    for (uint8_t s = 0; s < SHARDS0; s++) {
        uint8_t sub[4] = {0, s, 0, 0};
        int rc = slot_store_seat_get(g.st, fx_txn(&g), "show", 4, 'P', sub, 4, buf, sizeof buf, &blen);
        ASSERT_EQ(rc, s == 0 ? 0 : MDB_NOTFOUND);
        if (s == 0)
            ASSERT_EQ(blen, 9 + NROWS * 7);
    }
    fx_commit(&g);
    fx_close(&g);
    fx_close(&f);
}
